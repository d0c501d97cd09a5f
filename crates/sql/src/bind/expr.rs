//! Expressions: AST to typed [`Expr`] over a scope.
//!
//! [`Binder::expr`] is the one entry point; in aggregate mode it first
//! tries to map the whole expression onto a group key or an aggregate
//! (`select::AggContext`), and only then binds it structurally, so that
//! `a + sum(b)` with `GROUP BY a` becomes `key0 + agg0`.

use sqlparser::ast;

use super::scope::Scope;
use super::select::AggContext;
use super::types::{self, cast, common_pair, common_type, no_operator, numeric_result, promote_numeric};
use super::{Binder, ident};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{BinaryOp, Expr, SubqueryKind, UnaryOp};
use crate::types::{DataType, Value};

/// What an expression is bound against.
pub struct ExprCtx<'s> {
    /// The columns `Expr::Column` indexes (in aggregate mode: the
    /// Aggregate node's output, group keys only by name).
    pub scope: &'s Scope,
    /// Aggregate mode: group keys and the aggregates found so far.
    pub agg: Option<&'s mut AggContext>,
    /// The clause being bound, for "aggregate functions are not allowed
    /// in WHERE".
    pub clause: &'static str,
}

impl<'s> ExprCtx<'s> {
    pub fn new(scope: &'s Scope, clause: &'static str) -> ExprCtx<'s> {
        ExprCtx { scope, agg: None, clause }
    }
}

impl Binder<'_> {
    /// Binds an expression.
    pub fn expr(&mut self, e: &ast::Expr, ctx: &mut ExprCtx) -> Result<Expr> {
        if ctx.agg.is_some()
            && let Some(bound) = self.agg_expr(e, ctx)?
        {
            return Ok(bound);
        }
        self.expr_structural(e, ctx)
    }

    /// Binds a boolean condition (WHERE, ON, HAVING).
    pub fn condition(&mut self, e: &ast::Expr, ctx: &mut ExprCtx) -> Result<Expr> {
        let bound = self.expr(e, ctx)?;
        to_bool(bound, ctx.clause)
    }

    fn expr_structural(&mut self, e: &ast::Expr, ctx: &mut ExprCtx) -> Result<Expr> {
        use ast::Expr as A;
        match e {
            A::Identifier(id) => self.column_ref(None, &ident(id), ctx),
            A::CompoundIdentifier(parts) => match parts.as_slice() {
                [.., q, c] => self.column_ref(Some(&ident(q)), &ident(c), ctx),
                _ => Err(SqlError::syntax(format!("syntax error at or near \"{e}\""))),
            },
            A::Value(v) => self.value(&v.value),
            A::TypedString(ts) => typed_literal(&ts.data_type, &ts.value.value),
            A::Interval(iv) => interval_literal(iv),
            A::Nested(inner) => self.expr(inner, ctx),
            A::BinaryOp { left, op, right } => {
                let l = self.expr(left, ctx)?;
                let r = self.expr(right, ctx)?;
                self.binary(op, l, r)
            }
            A::UnaryOp { op, expr } => self.unary(op, expr, ctx),
            A::IsNull(x) => self.is(UnaryOp::IsNull, x, ctx),
            A::IsNotNull(x) => self.is(UnaryOp::IsNotNull, x, ctx),
            A::IsTrue(x) => self.is(UnaryOp::IsTrue, x, ctx),
            A::IsNotTrue(x) => self.is(UnaryOp::IsNotTrue, x, ctx),
            A::IsFalse(x) => self.is(UnaryOp::IsFalse, x, ctx),
            A::IsNotFalse(x) => self.is(UnaryOp::IsNotFalse, x, ctx),
            A::IsUnknown(x) => self.is_unknown(UnaryOp::IsNull, x, ctx),
            A::IsNotUnknown(x) => self.is_unknown(UnaryOp::IsNotNull, x, ctx),
            A::IsDistinctFrom(a, b) => self.distinct_from(BinaryOp::IsDistinctFrom, a, b, ctx),
            A::IsNotDistinctFrom(a, b) => self.distinct_from(BinaryOp::IsNotDistinctFrom, a, b, ctx),
            A::Between { expr, negated, low, high } => self.between(expr, *negated, low, high, ctx),
            A::In { expr, target, negated, .. } => self.in_expr(expr, target, *negated, ctx),
            A::Like { negated, expr, pattern, escape_char, any: false } => {
                self.like(expr, pattern, escape_char.as_deref(), *negated, false, ctx)
            }
            A::ILike { negated, expr, pattern, escape_char, any: false } => {
                self.like(expr, pattern, escape_char.as_deref(), *negated, true, ctx)
            }
            A::Cast { expr, data_type, .. } => self.cast_expr(expr, data_type, ctx),
            A::Case { operand, conditions, else_result, .. } => {
                self.case(operand.as_deref(), conditions, else_result.as_deref(), ctx)
            }
            A::Exists { subquery, negated } => self.subquery(subquery, SubqueryKind::Exists { negated: *negated }, ctx),
            A::Subquery(q) => self.subquery(q, SubqueryKind::Scalar, ctx),
            A::AnyOp { left, compare_op, right, .. } => self.quantified(left, compare_op, right, false, ctx),
            A::AllOp { left, compare_op, right } => self.quantified(left, compare_op, right, true, ctx),
            A::Function(f) => self.function(f, ctx),
            A::Extract { .. }
            | A::Ceil { .. }
            | A::Floor { .. }
            | A::Position { .. }
            | A::Substring { .. }
            | A::Trim { .. } => self.special_function(e, ctx),
            A::Collate { expr, collation } => self.collate(expr, collation, ctx),
            other => Err(SqlError::unsupported(format!("expression {other} is not supported"))),
        }
    }

    fn column_ref(&mut self, qualifier: Option<&str>, name: &str, ctx: &mut ExprCtx) -> Result<Expr> {
        let (resolved, ty) = self.resolve(ctx.scope, qualifier, name)?;
        Ok(self.column_expr(resolved, ty))
    }

    /// A literal of the AST; strings are `unknown` until context types them.
    fn value(&mut self, v: &ast::Value) -> Result<Expr> {
        use ast::Value as V;
        Ok(match v {
            V::Number(text, _) => number_literal(text)?,
            V::SingleQuotedString(s) | V::EscapedStringLiteral(s) | V::DoubleQuotedString(s) => {
                Expr::Literal { value: Value::Text(s.clone()), ty: DataType::Unknown }
            }
            V::DollarQuotedString(s) => Expr::Literal { value: Value::Text(s.value.clone()), ty: DataType::Unknown },
            V::Boolean(b) => Expr::literal(Value::Bool(*b)),
            V::Null => Expr::Literal { value: Value::Null, ty: DataType::Unknown },
            V::Placeholder(p) => self.param(p)?,
            other => return Err(SqlError::unsupported(format!("literal {other} is not supported"))),
        })
    }

    fn param(&mut self, p: &str) -> Result<Expr> {
        let n: usize = p
            .strip_prefix('$')
            .and_then(|d| d.parse().ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| SqlError::syntax(format!("syntax error at or near \"{p}\"")))?;
        if n > 65_535 {
            return Err(SqlError::new(SqlState("42P02"), format!("there is no parameter {p}")));
        }
        if self.params.len() < n {
            self.params.resize(n, DataType::Unknown);
        }
        Ok(Expr::Param { index: n - 1, ty: self.params[n - 1] })
    }

    /// Records a type a parameter received from its context.
    pub(crate) fn note_params(&mut self, e: &Expr) {
        if let Expr::Param { index, ty } = e
            && self.params.get(*index) == Some(&DataType::Unknown)
        {
            self.params[*index] = *ty;
        }
    }

    /// `cast` that also records inferred parameter types.
    pub(crate) fn coerce(&mut self, e: Expr, to: DataType) -> Result<Expr> {
        let out = cast(e, to)?;
        self.note_params(&out);
        Ok(out)
    }

    fn unary(&mut self, op: &ast::UnaryOperator, x: &ast::Expr, ctx: &mut ExprCtx) -> Result<Expr> {
        match op {
            ast::UnaryOperator::Minus => {
                // PostgreSQL's unary minus binds tighter than `^`, sqlparser's
                // looser: `-2 ^ 2` is `(-2) ^ 2` = 4.
                if let ast::Expr::BinaryOp { left, op: ast::BinaryOperator::PGExp, right } = x {
                    let negated = ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr: left.clone() };
                    let (l, r) = (self.expr(&negated, ctx)?, self.expr(right, ctx)?);
                    return self.scalar("power", vec![l, r]);
                }
                if let ast::Expr::Value(v) = x
                    && let ast::Value::Number(text, _) = &v.value
                {
                    return number_literal(&format!("-{text}"));
                }
                let e = self.expr(x, ctx)?;
                let e = if e.ty() == DataType::Unknown {
                    self.coerce(e, DataType::Numeric { precision: None, scale: 0 })?
                } else {
                    e
                };
                let ty = match e.ty() {
                    // An expression's numeric has no declared precision.
                    DataType::Numeric { scale, .. } => DataType::Numeric { precision: None, scale },
                    t if t.is_numeric() || t == DataType::Interval => t,
                    t => return Err(prefix_no_operator("-", t)),
                };
                Ok(Expr::Unary { op: UnaryOp::Neg, expr: Box::new(e), ty })
            }
            ast::UnaryOperator::Plus => self.expr(x, ctx),
            ast::UnaryOperator::Not => {
                let e = to_bool(self.expr(x, ctx)?, "NOT")?;
                Ok(Expr::Unary { op: UnaryOp::Not, expr: Box::new(e), ty: DataType::Bool })
            }
            other => Err(SqlError::unsupported(format!("operator {other} is not supported"))),
        }
    }

    fn is(&mut self, op: UnaryOp, x: &ast::Expr, ctx: &mut ExprCtx) -> Result<Expr> {
        let mut e = self.expr(x, ctx)?;
        if !matches!(op, UnaryOp::IsNull | UnaryOp::IsNotNull) {
            e = to_bool(e, "IS TRUE")?;
        } else if e.ty() == DataType::Unknown {
            // `'x' IS NULL`: an untyped literal is text (was read as NULL).
            e = self.coerce(e, DataType::Text)?;
        }
        Ok(Expr::Unary { op, expr: Box::new(e), ty: DataType::Bool })
    }

    /// `x IS [NOT] UNKNOWN`: a boolean's IS [NOT] NULL (PostgreSQL
    /// requires a boolean operand).
    fn is_unknown(&mut self, op: UnaryOp, x: &ast::Expr, ctx: &mut ExprCtx) -> Result<Expr> {
        let e = to_bool(self.expr(x, ctx)?, "IS UNKNOWN")?;
        Ok(Expr::Unary { op, expr: Box::new(e), ty: DataType::Bool })
    }

    fn distinct_from(&mut self, op: BinaryOp, a: &ast::Expr, b: &ast::Expr, ctx: &mut ExprCtx) -> Result<Expr> {
        let l = self.expr(a, ctx)?;
        let r = self.expr(b, ctx)?;
        self.comparison(op, l, r)
    }

    fn between(
        &mut self,
        x: &ast::Expr,
        negated: bool,
        low: &ast::Expr,
        high: &ast::Expr,
        ctx: &mut ExprCtx,
    ) -> Result<Expr> {
        let (low, symmetric) = match low {
            ast::Expr::Function(f) if f.name.to_string() == super::SYMMETRIC_MARKER => {
                match super::functions::call_args(f)?.as_slice() {
                    [Some(inner)] => (*inner, true),
                    _ => return Err(SqlError::syntax("syntax error at or near \"SYMMETRIC\"")),
                }
            }
            other => (other, false),
        };
        let e = self.expr(x, ctx)?;
        let lo = self.expr(low, ctx)?;
        let hi = self.expr(high, ctx)?;
        let mut range = |a: Expr, b: Expr| -> Result<Expr> {
            let ge = self.comparison(BinaryOp::GtEq, e.clone(), a)?;
            let le = self.comparison(BinaryOp::LtEq, e.clone(), b)?;
            Ok(Expr::and(ge, le))
        };
        // PostgreSQL expands SYMMETRIC into both orders of the bounds.
        let both = if symmetric {
            let forward = range(lo.clone(), hi.clone())?;
            let backward = range(hi, lo)?;
            Expr::binary(BinaryOp::Or, forward, backward, DataType::Bool)
        } else {
            range(lo, hi)?
        };
        Ok(if negated { Expr::Unary { op: UnaryOp::Not, expr: Box::new(both), ty: DataType::Bool } } else { both })
    }

    fn in_expr(&mut self, x: &ast::Expr, target: &ast::InTarget, negated: bool, ctx: &mut ExprCtx) -> Result<Expr> {
        match target {
            ast::InTarget::List(list) => {
                let e = self.expr(x, ctx)?;
                let items = list.iter().map(|i| self.expr(i, ctx)).collect::<Result<Vec<_>>>()?;
                let mut types = vec![e.ty()];
                types.extend(items.iter().map(Expr::ty));
                let ty = common_type(&types, "IN")?;
                let e = self.coerce(e, ty)?;
                let list = items.into_iter().map(|i| self.coerce(i, ty)).collect::<Result<Vec<_>>>()?;
                Ok(Expr::InList { expr: Box::new(e), list, negated })
            }
            ast::InTarget::Subquery(q) => {
                let e = self.expr(x, ctx)?;
                self.in_subquery(e, q, negated, ctx)
            }
            _ => Err(SqlError::unsupported("IN over UNNEST or a table is not supported")),
        }
    }

    fn like(
        &mut self,
        x: &ast::Expr,
        pattern: &ast::Expr,
        escape: Option<&ast::Expr>,
        negated: bool,
        case_insensitive: bool,
        ctx: &mut ExprCtx,
    ) -> Result<Expr> {
        let e = self.expr(x, ctx)?;
        let p = self.expr(pattern, ctx)?;
        let op = if case_insensitive { "~~*" } else { "~~" };
        let text = |b: &mut Self, e: Expr| -> Result<Expr> {
            match e.ty() {
                DataType::Unknown => b.coerce(e, DataType::Text),
                t if t.is_text() => Ok(e),
                _ => Err(no_operator(op, e.ty(), DataType::Text)),
            }
        };
        let (e, p) = (text(self, e)?, text(self, p)?);
        let escape = match escape {
            None => None,
            Some(ast::Expr::Value(v)) => match &v.value {
                ast::Value::SingleQuotedString(s) if s.chars().count() == 1 => s.chars().next(),
                ast::Value::SingleQuotedString(s) if s.is_empty() => None,
                _ => {
                    return Err(SqlError::new(SqlState::INVALID_ESCAPE_SEQUENCE, "invalid escape string")
                        .with_hint("Escape string must be empty or one character."));
                }
            },
            Some(_) => return Err(SqlError::unsupported("ESCAPE must be a string literal")),
        };
        Ok(Expr::Like { expr: Box::new(e), pattern: Box::new(p), negated, case_insensitive, escape })
    }

    fn cast_expr(&mut self, x: &ast::Expr, to: &ast::DataType, ctx: &mut ExprCtx) -> Result<Expr> {
        if let Some(e) = self.pg_cast(x, to, ctx)? {
            return Ok(e);
        }
        if let ast::Expr::Value(v) = x
            && let ast::Value::SingleQuotedString(_) = &v.value
        {
            return typed_literal(to, &v.value);
        }
        // A number cast to double precision is read as one, so literals
        // beyond numeric's range here (`1e300::float8`) still work.
        if let ast::Expr::Value(v) = x
            && let ast::Value::Number(text, _) = &v.value
            && types::data_type(to)? == DataType::Float64
            && let Ok(f) = text.parse::<f64>()
        {
            return Ok(Expr::literal(Value::Float64(f)));
        }
        let e = self.expr(x, ctx)?;
        let ty = match (to, e.ty()) {
            // `x::numeric` keeps x's scale (PostgreSQL keeps each value's);
            // an integer's is 0.
            (
                ast::DataType::Numeric(ast::ExactNumberInfo::None) | ast::DataType::Decimal(ast::ExactNumberInfo::None),
                t,
            ) if t.is_numeric() && t != DataType::Float64 => match t {
                DataType::Numeric { scale, .. } => DataType::Numeric { precision: None, scale },
                _ => DataType::Numeric { precision: None, scale: 0 },
            },
            _ => types::data_type(to)?,
        };
        self.coerce(e, ty)
    }

    fn case(
        &mut self,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&ast::Expr>,
        ctx: &mut ExprCtx,
    ) -> Result<Expr> {
        let operand = operand.map(|o| self.expr(o, ctx)).transpose()?;
        let mut whens = Vec::with_capacity(conditions.len());
        for cw in conditions {
            let cond = self.expr(&cw.condition, ctx)?;
            let cond = match &operand {
                // `CASE x WHEN v` is bound as `CASE WHEN x = v`.
                Some(op) => self.comparison(BinaryOp::Eq, op.clone(), cond)?,
                None => to_bool(cond, "CASE/WHEN")?,
            };
            whens.push((cond, self.expr(&cw.result, ctx)?));
        }
        let else_ = else_result.map(|e| self.expr(e, ctx)).transpose()?;
        // PostgreSQL puts the ELSE first (its 42804 message names it first).
        let mut tys: Vec<DataType> = else_.iter().map(Expr::ty).collect();
        tys.extend(whens.iter().map(|(_, r)| r.ty()));
        let ty = common_type(&tys, "CASE")?;
        let whens = whens.into_iter().map(|(c, r)| Ok((c, self.coerce(r, ty)?))).collect::<Result<Vec<_>>>()?;
        let else_ = else_.map(|e| self.coerce(e, ty)).transpose()?.map(Box::new);
        Ok(Expr::Case { operand: None, whens, else_, ty })
    }

    /// Binds an operator application.
    pub fn binary(&mut self, op: &ast::BinaryOperator, l: Expr, r: Expr) -> Result<Expr> {
        use ast::BinaryOperator as B;
        let bop = match op {
            B::Plus => BinaryOp::Add,
            B::Minus => BinaryOp::Sub,
            B::Multiply => BinaryOp::Mul,
            B::Divide => BinaryOp::Div,
            B::Modulo => BinaryOp::Mod,
            B::Eq => BinaryOp::Eq,
            B::NotEq => BinaryOp::NotEq,
            B::Lt => BinaryOp::Lt,
            B::LtEq => BinaryOp::LtEq,
            B::Gt => BinaryOp::Gt,
            B::GtEq => BinaryOp::GtEq,
            B::And => BinaryOp::And,
            B::Or => BinaryOp::Or,
            B::StringConcat => BinaryOp::Concat,
            // `^` is exponentiation in PostgreSQL: power(l, r).
            B::PGExp => return self.scalar("power", vec![l, r]),
            other => return self.pg_operator(other, l, r),
        };
        match bop {
            BinaryOp::And | BinaryOp::Or => {
                let name = bop.sql();
                Ok(Expr::binary(bop, to_bool(l, name)?, to_bool(r, name)?, DataType::Bool))
            }
            BinaryOp::Concat => self.concat(l, r),
            b if b.is_comparison() => self.comparison(b, l, r),
            b => self.arithmetic(b, l, r),
        }
    }

    /// A comparison with both operands cast to their common type.
    pub fn comparison(&mut self, op: BinaryOp, l: Expr, r: Expr) -> Result<Expr> {
        let (lt, rt) = (l.ty(), r.ty());
        let common = common_pair(lt, rt).ok_or_else(|| no_operator(op.sql(), lt, rt))?;
        // Two untyped literals compare as text, as PostgreSQL resolves them.
        let common = if common == DataType::Unknown { DataType::Text } else { common };
        let (l, r) = if types::category(common) == types::Category::Numeric {
            let l = if lt == DataType::Unknown { self.coerce(l, common)? } else { l };
            let r = if rt == DataType::Unknown { self.coerce(r, common)? } else { r };
            let (lt2, rt2) = (l.ty(), r.ty());
            (promote_numeric(l, rt2)?, promote_numeric(r, lt2)?)
        } else {
            (self.coerce_keep_char(l, common)?, self.coerce_keep_char(r, common)?)
        };
        self.note_params(&l);
        self.note_params(&r);
        Ok(Expr::binary(op, l, r, DataType::Bool))
    }

    /// Casts to `common`, but an unknown beside a char(n) becomes char(n)
    /// (PostgreSQL compares `c = 'R'` as bpchar).
    fn coerce_keep_char(&mut self, e: Expr, common: DataType) -> Result<Expr> {
        if e.ty() == common || (e.ty().is_text() && common.is_text() && common != DataType::Text) {
            return Ok(e);
        }
        self.coerce(e, common)
    }

    fn concat(&mut self, l: Expr, r: Expr) -> Result<Expr> {
        let (lt, rt) = (l.ty(), r.ty());
        let texty = |t: DataType| t.is_text() || t == DataType::Unknown;
        if !texty(lt) && !texty(rt) {
            return Err(no_operator("||", lt, rt));
        }
        let l = self.coerce(l, DataType::Text)?;
        let r = self.coerce(r, DataType::Text)?;
        Ok(Expr::binary(BinaryOp::Concat, l, r, DataType::Text))
    }

    pub(super) fn arithmetic(&mut self, op: BinaryOp, l: Expr, r: Expr) -> Result<Expr> {
        let (lt, rt) = (l.ty(), r.ty());
        // PostgreSQL: `date - 'x'` reads 'x' as a date, `date + 'x'` has
        // no unique operator.
        let r = match (op, lt, rt) {
            (BinaryOp::Sub, DataType::Date | DataType::Timestamp, DataType::Unknown) => self.coerce(r, lt)?,
            (BinaryOp::Add, DataType::Date, DataType::Unknown) => {
                return Err(SqlError::new(SqlState("42725"), "operator is not unique: date + unknown").with_hint(
                    "Could not choose a best candidate operator. You might need to add explicit type casts.",
                ));
            }
            _ => r,
        };
        let rt = r.ty();
        if let Some(ty) = datetime_result(op, lt, rt) {
            let l = if lt == DataType::Unknown { self.coerce(l, unknown_partner(rt))? } else { l };
            let r = if rt == DataType::Unknown { self.coerce(r, unknown_partner(lt))? } else { r };
            return Ok(Expr::binary(op, l, r, ty));
        }
        let numeric = |t: DataType| t.is_numeric() || t == DataType::Unknown;
        if !numeric(lt) || !numeric(rt) || (lt == DataType::Unknown && rt == DataType::Unknown) {
            return Err(no_operator(op.sql(), lt, rt));
        }
        let l = if lt == DataType::Unknown { self.coerce(l, rt)? } else { l };
        let r = if rt == DataType::Unknown { self.coerce(r, lt)? } else { r };
        let (lt, rt) = (l.ty(), r.ty());
        let (l, r) = (promote_numeric(l, rt)?, promote_numeric(r, lt)?);
        // PostgreSQL has no `%` for double precision.
        if op == BinaryOp::Mod && (lt == DataType::Float64 || rt == DataType::Float64) {
            return Err(no_operator(op.sql(), lt, rt));
        }
        let ty = numeric_result(op, l.ty(), r.ty());
        Ok(Expr::binary(op, l, r, ty))
    }
}

/// Result type of date and time arithmetic (None: not a date/time case).
fn datetime_result(op: BinaryOp, l: DataType, r: DataType) -> Option<DataType> {
    use DataType::{Date, Interval, Timestamp, Unknown};
    let int = |t: DataType| t.is_integer();
    match (op, l, r) {
        (BinaryOp::Add, Date, t) | (BinaryOp::Add, t, Date) if int(t) => Some(Date),
        (BinaryOp::Sub, Date, t) if int(t) => Some(Date),
        (BinaryOp::Sub, Date, Date) => Some(DataType::Int32),
        (BinaryOp::Add | BinaryOp::Sub, Date | Timestamp, Interval | Unknown) => Some(Timestamp),
        (BinaryOp::Add, Interval, Date | Timestamp) => Some(Timestamp),
        (BinaryOp::Sub, Timestamp, Timestamp | Date) | (BinaryOp::Sub, Date, Timestamp) => Some(Interval),
        (BinaryOp::Add | BinaryOp::Sub, Interval, Interval | Unknown) => Some(Interval),
        (BinaryOp::Mul, Interval, t) | (BinaryOp::Mul, t, Interval) if t.is_numeric() => Some(Interval),
        _ => None,
    }
}

/// The type an `unknown` operand of date arithmetic is read as.
fn unknown_partner(other: DataType) -> DataType {
    match other {
        DataType::Date | DataType::Timestamp => DataType::Interval,
        t => t,
    }
}

/// `e` as a boolean condition (an `unknown` literal is cast; anything else
/// not boolean is 42804).
pub fn to_bool(e: Expr, clause: &str) -> Result<Expr> {
    match e.ty() {
        DataType::Bool => Ok(e),
        DataType::Unknown => cast(e, DataType::Bool),
        t => Err(SqlError::new(
            SqlState::DATATYPE_MISMATCH,
            format!("argument of {clause} must be type boolean, not type {}", types::base_name(t)),
        )),
    }
}

fn prefix_no_operator(op: &str, ty: DataType) -> SqlError {
    SqlError::new(SqlState::UNDEFINED_FUNCTION, format!("operator does not exist: {op} {}", types::base_name(ty)))
        .with_hint("No operator matches the given name and argument type. You might need to add an explicit type cast.")
}

/// A numeric literal typed as PostgreSQL does: int4, int8 when too big for
/// int4, numeric beyond (and whenever it has a point or an exponent).
pub fn number_literal(text: &str) -> Result<Expr> {
    if let Ok(v) = text.parse::<i64>() {
        return Ok(match i32::try_from(v) {
            Ok(v) => Expr::literal(Value::Int32(v)),
            Err(_) => Expr::literal(Value::Int64(v)),
        });
    }
    let (value, scale) = parse_decimal(text).ok_or_else(|| match text.parse::<f64>() {
        Ok(_) => SqlError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
            .with_detail(format!("ndpdb's numeric holds 38 digits; \"{text}\" needs more"))
            .with_hint("Write it as a double precision value, e.g. '1e300'::double precision."),
        Err(_) => SqlError::syntax(format!("invalid number \"{text}\"")),
    })?;
    Ok(Expr::literal(Value::Numeric { value, scale }))
}

/// `[-]digits[.digits][e[+-]digits]` as value × 10^-scale.
pub fn parse_decimal(text: &str) -> Option<(i128, u8)> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], body[i + 1..].parse::<i32>().ok()?),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() || !(int.chars().chain(frac.chars())).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let digits: String = format!("{int}{frac}");
    let mut value: i128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    let mut scale = frac.len() as i32 - exp;
    while scale < 0 {
        value = value.checked_mul(10)?;
        scale += 1;
    }
    if scale > crate::types::NUMERIC_MAX_PRECISION as i32 {
        return None;
    }
    Some((if neg { -value } else { value }, scale as u8))
}

/// `date '1998-12-01'`, `numeric '1.5'`, `'x'::int`: a literal of the type
/// (read now by the type's input function, as PostgreSQL does).
pub fn typed_literal(ty: &ast::DataType, v: &ast::Value) -> Result<Expr> {
    let text = match v {
        ast::Value::SingleQuotedString(s) => s.clone(),
        other => return Err(SqlError::unsupported(format!("typed literal {other} is not supported"))),
    };
    let ty = types::data_type(ty)?;
    match ty {
        DataType::Interval => Ok(Expr::literal(Value::Interval(super::functions::parse_interval(&text, None)?))),
        _ => cast(Expr::Literal { value: Value::Text(text), ty: DataType::Unknown }, ty),
    }
}

fn interval_literal(iv: &ast::Interval) -> Result<Expr> {
    let text = match iv.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.clone(),
            _ => return Err(SqlError::unsupported("INTERVAL needs a literal")),
        },
        _ => return Err(SqlError::unsupported("INTERVAL needs a literal")),
    };
    let unit = iv.leading_field.as_ref().map(|f| f.to_string().to_lowercase());
    Ok(Expr::literal(Value::Interval(super::functions::parse_interval(&text, unit.as_deref())?)))
}
