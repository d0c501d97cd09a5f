//! PostgreSQL's typing rules, in the small: SQL type names, implicit
//! casts, common types (`select_common_type`), operator result types and
//! which explicit casts exist.
//!
//! ```text
//!  category   types (implicit casts go rightwards)
//!  numeric    int2 → int4 → int8 → numeric → float8
//!  string     char(n), varchar(n) → text
//!  datetime   date → timestamp
//!  boolean, interval: on their own
//! ```

use sqlparser::ast;

use crate::error::{Result, SqlError, SqlState};
use crate::plan::{BinaryOp, Expr};
use crate::types::{DataType, NUMERIC_DEFAULT_SCALE, NUMERIC_MAX_PRECISION, Value};

/// The SQL type an AST type name denotes.
pub fn data_type(ty: &ast::DataType) -> Result<DataType> {
    use ast::DataType as A;
    Ok(match ty {
        A::SmallInt(_) | A::Int2(_) => DataType::Int16,
        A::Int(_) | A::Integer(_) | A::Int4(_) => DataType::Int32,
        A::BigInt(_) | A::Int8(_) => DataType::Int64,
        A::Numeric(info) | A::Decimal(info) | A::Dec(info) => numeric(info)?,
        A::Real | A::Float4 | A::Float8 | A::Double(_) | A::DoublePrecision | A::Float(_) => DataType::Float64,
        A::Bool | A::Boolean => DataType::Bool,
        A::Date => DataType::Date,
        A::Timestamp(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => DataType::Timestamp,
        A::Interval { .. } => DataType::Interval,
        A::Char(len) | A::Character(len) => DataType::Char(length(len)?.unwrap_or(1)),
        A::Varchar(len) | A::CharacterVarying(len) | A::CharVarying(len) => DataType::Varchar(length(len)?),
        A::Text => DataType::Text,
        A::Custom(name, _) if name.to_string().eq_ignore_ascii_case("bpchar") => DataType::Char(1),
        A::Custom(name, _) => {
            let name = name.to_string().trim_matches('"').to_string();
            return Err(SqlError::new(SqlState::UNDEFINED_OBJECT, format!("type \"{name}\" does not exist")));
        }
        other => return Err(SqlError::unsupported(format!("type {other} is not supported"))),
    })
}

fn numeric(info: &ast::ExactNumberInfo) -> Result<DataType> {
    let (precision, scale) = match info {
        ast::ExactNumberInfo::None => return Ok(DataType::Numeric { precision: None, scale: NUMERIC_DEFAULT_SCALE }),
        ast::ExactNumberInfo::Precision(p) => (*p, 0),
        ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
    };
    if precision < 1 || precision > NUMERIC_MAX_PRECISION as u64 {
        return Err(SqlError::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("NUMERIC precision {precision} must be between 1 and {NUMERIC_MAX_PRECISION}"),
        ));
    }
    if scale < 0 || scale > precision as i64 {
        return Err(SqlError::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("NUMERIC scale {scale} must be between 0 and precision {precision}"),
        ));
    }
    Ok(DataType::Numeric { precision: Some(precision as u8), scale: scale as u8 })
}

fn length(len: &Option<ast::CharacterLength>) -> Result<Option<u16>> {
    match len {
        None => Ok(None),
        Some(ast::CharacterLength::IntegerLength { length, .. }) if (1..=10_485_760).contains(length) => {
            Ok(Some((*length).min(u16::MAX as u64) as u16))
        }
        Some(ast::CharacterLength::IntegerLength { .. }) => Err(SqlError::new(
            SqlState::INVALID_PARAMETER_VALUE,
            "length for type varchar must be at least 1".to_string(),
        )),
        Some(ast::CharacterLength::Max) => Err(SqlError::unsupported("varchar(max) is not supported")),
    }
}

/// The type's name as PostgreSQL's messages print it (`format_type_be`:
/// no length, precision or scale).
pub fn base_name(ty: DataType) -> &'static str {
    match ty {
        DataType::Bool => "boolean",
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        DataType::Int64 => "bigint",
        DataType::Numeric { .. } => "numeric",
        DataType::Float64 => "double precision",
        DataType::Date => "date",
        DataType::Timestamp => "timestamp without time zone",
        DataType::Interval => "interval",
        DataType::Char(_) => "character",
        DataType::Varchar(_) => "character varying",
        DataType::Text => "text",
        DataType::Unknown => "unknown",
    }
}

/// PostgreSQL's type categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Numeric,
    String,
    DateTime,
    Bool,
    Interval,
    Unknown,
}

pub fn category(ty: DataType) -> Category {
    match ty {
        t if t.is_numeric() => Category::Numeric,
        t if t.is_text() => Category::String,
        DataType::Date | DataType::Timestamp => Category::DateTime,
        DataType::Bool => Category::Bool,
        DataType::Interval => Category::Interval,
        _ => Category::Unknown,
    }
}

/// Rank of a numeric type along int2 < int4 < int8 < numeric < float8.
fn numeric_rank(ty: DataType) -> u8 {
    match ty {
        DataType::Int16 => 0,
        DataType::Int32 => 1,
        DataType::Int64 => 2,
        DataType::Numeric { .. } => 3,
        _ => 4,
    }
}

/// The type two values of one category are compared or combined in; None
/// when no implicit cast joins them.
pub fn common_pair(a: DataType, b: DataType) -> Option<DataType> {
    if a == b {
        return Some(a);
    }
    match (category(a), category(b)) {
        (Category::Unknown, Category::Unknown) => Some(DataType::Text),
        // An unknown literal takes the other side's type without its
        // length, as PostgreSQL resolves types by OID without typmod:
        // `CAST(x AS varchar(2)) = 'bab'` does not cut the literal to 'ba'.
        (Category::Unknown, _) => Some(unbounded(b)),
        (_, Category::Unknown) => Some(unbounded(a)),
        (Category::Numeric, Category::Numeric) => Some(wider_numeric(a, b)),
        (Category::String, Category::String) => Some(DataType::Text),
        (Category::DateTime, Category::DateTime) => Some(DataType::Timestamp),
        _ => None,
    }
}

fn unbounded(t: DataType) -> DataType {
    if let DataType::Varchar(Some(_)) = t { DataType::Varchar(None) } else { t }
}

fn wider_numeric(a: DataType, b: DataType) -> DataType {
    match (a, b) {
        (DataType::Numeric { scale: s1, .. }, DataType::Numeric { scale: s2, .. }) => {
            DataType::Numeric { precision: None, scale: s1.max(s2) }
        }
        _ if numeric_rank(a) >= numeric_rank(b) => a,
        _ => b,
    }
}

/// PostgreSQL's `select_common_type` over the types of `exprs` (CASE
/// branches, UNION columns, COALESCE and IN-list arguments); `context`
/// names the construct in the 42804 message.
pub fn common_type(types: &[DataType], context: &str) -> Result<DataType> {
    let mut acc = DataType::Unknown;
    for &t in types {
        acc = match common_pair(acc, t) {
            Some(c) => c,
            None => {
                return Err(SqlError::new(
                    SqlState::DATATYPE_MISMATCH,
                    format!("{context} types {} and {} cannot be matched", base_name(acc), base_name(t)),
                ));
            }
        };
    }
    // One string type throughout keeps it (char(n) stays char(n)).
    if types.iter().all(|t| *t == types[0]) && !types.is_empty() && types[0] != DataType::Unknown {
        return Ok(types[0]);
    }
    Ok(if acc == DataType::Unknown { DataType::Text } else { acc })
}

/// Does an explicit CAST from `from` to `to` exist?
pub fn cast_exists(from: DataType, to: DataType) -> bool {
    use Category as C;
    match (category(from), category(to)) {
        (C::Unknown, _) | (_, C::Unknown) => true,
        (a, b) if a == b => true,
        (_, C::String) | (C::String, _) => true,
        (C::Bool, C::Numeric) | (C::Numeric, C::Bool) => from == DataType::Int32 || to == DataType::Int32,
        _ => false,
    }
}

/// `expr` as a value of `to`: unchanged when it already is one, a typed
/// literal for an `unknown` string or NULL, a Cast otherwise. Checks only
/// that the cast exists (42846); whether it is implicit is the caller's.
pub fn cast(expr: Expr, to: DataType) -> Result<Expr> {
    let from = expr.ty();
    if from == to || to == DataType::Unknown {
        return Ok(expr);
    }
    if !cast_exists(from, to) {
        return Err(SqlError::new(
            SqlState("42846"),
            format!("cannot cast type {} to {}", base_name(from), base_name(to)),
        ));
    }
    Ok(match expr {
        Expr::Literal { value: Value::Null, .. } => Expr::Literal { value: Value::Null, ty: to },
        // A quoted literal is text to the evaluator; the cast reads it.
        // A quoted literal gets its type's value now, as PostgreSQL reads an
        // unknown literal when its type is resolved: `CASE WHEN true THEN 1
        // ELSE 'x' END` fails even though the ELSE is never taken.
        Expr::Literal { value: Value::Text(s), ty: DataType::Unknown } => {
            let value = crate::types::ops::cast_value(
                &Value::Text(s),
                &DataType::Text,
                &to,
                crate::types::ops::CastMode::Explicit,
            )?;
            Expr::Literal { value, ty: to }
        }
        Expr::Param { index, ty: DataType::Unknown } => Expr::Param { index, ty: to },
        e => Expr::Cast { expr: Box::new(e), ty: to },
    })
}

/// Whether a value of `from` is implicitly (assignment-)castable to `to`,
/// as INSERT and UPDATE need: within a category, and anything to text.
pub fn assignable(from: DataType, to: DataType) -> bool {
    from == DataType::Unknown || category(from) == category(to) || to.is_text()
}

/// The 42883 error of an operator without a match.
pub fn no_operator(op: &str, left: DataType, right: DataType) -> SqlError {
    SqlError::new(
        SqlState::UNDEFINED_FUNCTION,
        format!("operator does not exist: {} {op} {}", base_name(left), base_name(right)),
    )
    .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

/// Result type of `+ - * / %` on two numbers (operands already promoted
/// to `common`): integers keep the wider type, numeric scales follow
/// PostgreSQL's (add/sub max, mul sum, div max(16, s1, s2)).
pub fn numeric_result(op: BinaryOp, left: DataType, right: DataType) -> DataType {
    match (left, right) {
        (DataType::Numeric { scale: s1, .. }, DataType::Numeric { scale: s2, .. }) => {
            let scale = match op {
                BinaryOp::Mul => s1.saturating_add(s2).min(NUMERIC_MAX_PRECISION),
                BinaryOp::Div => NUMERIC_DEFAULT_SCALE.max(s1).max(s2),
                _ => s1.max(s2),
            };
            DataType::Numeric { precision: None, scale }
        }
        _ => wider_numeric(left, right),
    }
}

/// A numeric operand as the common operand type: integers become
/// `numeric` with scale 0 beside a numeric, anything becomes float8
/// beside a float8; numerics keep their own scale.
pub fn promote_numeric(expr: Expr, other: DataType) -> Result<Expr> {
    let ty = expr.ty();
    let target = match (ty, other) {
        (_, DataType::Float64) => DataType::Float64,
        (DataType::Numeric { .. }, _) => return Ok(expr),
        (t, DataType::Numeric { .. }) if t.is_integer() => DataType::Numeric { precision: None, scale: 0 },
        _ => wider_numeric(ty, other),
    };
    cast(expr, target)
}
