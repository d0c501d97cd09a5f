//! Bound expressions: names resolved to column positions, every node typed.
//!
//! The binder produces them; rules rewrite them; the executor evaluates
//! them over Arrow batches. A [`Expr::Column`] indexes the input schema of
//! the plan node that holds the expression (for a join's condition: the left
//! input's columns, then the right's). A correlated reference to a column of
//! an enclosing query is an [`Expr::Outer`] until decorrelation turns the
//! subquery into a join; the executor can also evaluate it directly by
//! running the subquery once per outer row (slow, but always correct).

use super::Plan;
use crate::types::{DataType, Value};

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Column `index` of the input.
    Column {
        index: usize,
        ty: DataType,
    },
    /// Column `index` of the input of the enclosing query `depth` levels
    /// out (1 = the query the subquery appears in).
    Outer {
        depth: usize,
        index: usize,
        ty: DataType,
    },
    /// `$n` of a prepared statement (0-based `index`).
    Param {
        index: usize,
        ty: DataType,
    },
    Literal {
        value: Value,
        ty: DataType,
    },
    Unary {
        op: UnaryOp,
        expr: Box<Expr>,
        ty: DataType,
    },
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
        ty: DataType,
    },
    Cast {
        expr: Box<Expr>,
        ty: DataType,
    },
    /// `CASE [operand] WHEN .. THEN .. ELSE .. END`; with an operand each
    /// `when` is compared to it for equality.
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        else_: Option<Box<Expr>>,
        ty: DataType,
    },
    /// `expr [NOT] LIKE/ILIKE pattern [ESCAPE c]`; type boolean.
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
        escape: Option<char>,
    },
    /// `expr [NOT] IN (list)`; type boolean, NULL as SQL says.
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    /// A scalar function (COALESCE, NULLIF, string and date functions).
    Function {
        func: Function,
        args: Vec<Expr>,
        ty: DataType,
    },
    /// A subquery inside an expression.
    Subquery {
        kind: SubqueryKind,
        plan: Box<Plan>,
        ty: DataType,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum SubqueryKind {
    /// `(SELECT x ...)`: one column, at most one row (21000 otherwise), NULL
    /// when empty.
    Scalar,
    /// `[NOT] EXISTS (...)`.
    Exists { negated: bool },
    /// `ARRAY(SELECT x ...)`: one column, its values in the subquery's row
    /// order as a PostgreSQL array in text form (`{a,"b c",NULL}`; `{}`
    /// when empty), as the system catalogs' array columns are held.
    Array,
    /// `expr [NOT] IN (SELECT ...)`.
    In { expr: Box<Expr>, negated: bool },
    /// `expr op ANY/ALL (SELECT ...)`.
    Quantified { expr: Box<Expr>, op: BinaryOp, all: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Not,
    IsNull,
    IsNotNull,
    IsTrue,
    IsNotTrue,
    IsFalse,
    IsNotFalse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    /// `IS DISTINCT FROM` (never NULL).
    IsDistinctFrom,
    IsNotDistinctFrom,
    And,
    Or,
    /// `||` on text.
    Concat,
}

impl BinaryOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Lt
                | BinaryOp::LtEq
                | BinaryOp::Gt
                | BinaryOp::GtEq
                | BinaryOp::IsDistinctFrom
                | BinaryOp::IsNotDistinctFrom
        )
    }

    /// The operator with its operands swapped: `a < b` is `b > a`
    /// (symmetric operators are their own).
    pub fn commuted(self) -> BinaryOp {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            other => other,
        }
    }

    /// The SQL spelling, for EXPLAIN and messages.
    pub fn sql(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::IsDistinctFrom => "IS DISTINCT FROM",
            BinaryOp::IsNotDistinctFrom => "IS NOT DISTINCT FROM",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Concat => "||",
        }
    }
}

/// Scalar functions. Argument types are checked by the binder; the executor
/// may assume them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    Coalesce,
    NullIf,
    Greatest,
    Least,
    // numbers
    Abs,
    Round,
    Trunc,
    Floor,
    Ceil,
    Sqrt,
    Power,
    // text
    Length,
    Lower,
    Upper,
    Substring,
    Position,
    Trim,
    Ltrim,
    Rtrim,
    Replace,
    Concat,
    Left,
    Right,
    Lpad,
    Rpad,
    StartsWith,
    Repeat,
    Reverse,
    /// `split_part(s, delimiter, n)`.
    SplitPart,
    /// `concat_ws(separator, a, ...)`.
    ConcatWs,
    /// Bytes of the text; of a `char(n)`, with its padding.
    OctetLength,
    Ascii,
    Chr,
    Initcap,
    /// `sign(x)`: -1, 0 or 1 in the argument's type.
    Sign,
    // date and time
    /// `EXTRACT(field FROM x)` / `date_part('field', x)`: args are a text
    /// literal with the field name, then the value.
    Extract,
    /// `date_trunc('field', x)`.
    DateTrunc,
    /// `now()`/`current_timestamp`: the statement's start time.
    Now,
    CurrentDate,
    // session
    Version,
    CurrentSchema,
    CurrentDatabase,
    // catalog functions (exec/expr/pgfunc.rs)
    /// `format_type(type oid, typmod)`.
    FormatType,
    /// `s ~ pattern`: args `[s, pattern, flags]`, flags `''` or `'i'` (`~*`).
    RegexMatch,
    /// `array_to_string(array text form, separator [, null string])`.
    ArrayToString,
    PgSizePretty,
    PgEncodingToChar,
    /// `x = ANY(array)`: args `[x as text, array text form]`; NULL when
    /// x or the array is NULL, or no element matches and one is NULL.
    ArrayContains,
}

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    BoolAnd,
    BoolOr,
}

/// One aggregate of an [`super::Node::Aggregate`]; `arg` is over the
/// aggregate's input (None only for `count(*)`).
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateExpr {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub distinct: bool,
    /// `FILTER (WHERE ...)`.
    pub filter: Option<Expr>,
    /// Result type (PostgreSQL's: count → bigint, sum(int) → bigint,
    /// sum(bigint) → numeric, avg(int) → numeric, ...).
    pub ty: DataType,
}

/// An ORDER BY key over the input of a Sort.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub expr: Expr,
    pub asc: bool,
    /// PostgreSQL's default: NULLS LAST for ASC, NULLS FIRST for DESC.
    pub nulls_first: bool,
}

impl Expr {
    /// The type of the value the expression produces.
    pub fn ty(&self) -> DataType {
        match self {
            Expr::Column { ty, .. }
            | Expr::Outer { ty, .. }
            | Expr::Param { ty, .. }
            | Expr::Literal { ty, .. }
            | Expr::Unary { ty, .. }
            | Expr::Binary { ty, .. }
            | Expr::Cast { ty, .. }
            | Expr::Case { ty, .. }
            | Expr::Function { ty, .. }
            | Expr::Subquery { ty, .. } => *ty,
            Expr::Like { .. } | Expr::InList { .. } => DataType::Bool,
        }
    }

    pub fn column(index: usize, ty: DataType) -> Expr {
        Expr::Column { index, ty }
    }

    pub fn literal(value: Value) -> Expr {
        let ty = value.data_type();
        Expr::Literal { value, ty }
    }

    pub fn binary(op: BinaryOp, left: Expr, right: Expr, ty: DataType) -> Expr {
        Expr::Binary { op, left: Box::new(left), right: Box::new(right), ty }
    }

    /// `a AND b`.
    pub fn and(left: Expr, right: Expr) -> Expr {
        Expr::binary(BinaryOp::And, left, right, DataType::Bool)
    }
}
