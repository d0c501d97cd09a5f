//! Scalar operations on single [`Value`]s with PostgreSQL's semantics:
//! casts, comparisons, arithmetic.
//!
//! These are the reference semantics: the vectorized evaluator
//! (`exec::expr`) runs its Arrow kernels where their behaviour is
//! PostgreSQL's and falls back to these functions row by row elsewhere, and
//! the optimizer may call them to fold constants.
//!
//! Integer arithmetic is done in i64/i128 and checked against the result
//! type's range (22003 `integer out of range`); `/` truncates, `%` takes the
//! dividend's sign; float8 reports overflow and underflow as PostgreSQL's
//! `float_overflow_error`; numeric follows [`super::numeric`]. Casts
//! float → integer round half to even (`rint`), numeric → integer half away
//! from zero, float → numeric through 15 significant digits (`DBL_DIG`), as
//! PostgreSQL does.

use std::cmp::Ordering;

use super::datetime::{self, US_PER_DAY};
use super::format::{format_float8, pg_text};
use super::parse::{fit_char, parse_value};
use super::{DataType, Interval, Value, numeric};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::BinaryOp;

/// How a cast treats text longer than `char(n)`/`varchar(n)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastMode {
    /// `CAST(x AS varchar(3))`, `x::char(2)`: cut to length.
    Explicit,
    /// Storing into a column (INSERT, UPDATE, COPY): 22001 unless the
    /// excess is blanks.
    Assignment,
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int16(x) => Some(*x as i64),
        Value::Int32(x) => Some(*x as i64),
        Value::Int64(x) => Some(*x),
        _ => None,
    }
}

/// An i64 as a value of integer type `ty` (22003 when out of its range).
pub fn int_value(v: i64, ty: &DataType) -> Result<Value> {
    match ty {
        DataType::Int16 => i16::try_from(v).map(Value::Int16).map_err(|_| SqlError::overflow("smallint")),
        DataType::Int32 => i32::try_from(v).map(Value::Int32).map_err(|_| SqlError::overflow("integer")),
        _ => Ok(Value::Int64(v)),
    }
}

fn int_from_i128(v: i128, ty: &DataType) -> Result<Value> {
    let v = i64::try_from(v).map_err(|_| SqlError::overflow(&int_type_name(ty)))?;
    int_value(v, ty)
}

fn int_type_name(ty: &DataType) -> String {
    match ty {
        DataType::Int16 => "smallint".into(),
        DataType::Int32 => "integer".into(),
        _ => "bigint".into(),
    }
}

/// The numeric (value, scale) of an integer or numeric value.
fn as_numeric(v: &Value) -> Option<(i128, u8)> {
    match v {
        Value::Numeric { value, scale } => Some((*value, *scale)),
        other => int_of(other).map(|i| (i as i128, 0)),
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Float64(f) => Some(*f),
        Value::Numeric { value, scale } => numeric::format(*value, *scale).parse().ok(),
        other => int_of(other).map(|i| i as f64),
    }
}

fn numeric_value(v: i128, scale: u8, ty: &DataType) -> Result<Value> {
    match ty {
        DataType::Numeric { precision: Some(p), scale: s } => {
            let v = numeric::rescale(v, scale, *s)?;
            Ok(Value::Numeric { value: numeric::check_precision(v, *p, *s)?, scale: *s })
        }
        DataType::Numeric { scale: s, .. } => Ok(Value::Numeric { value: numeric::rescale(v, scale, *s)?, scale: *s }),
        _ => Err(SqlError::internal(format!("numeric result of type {ty}"))),
    }
}

/// Casts `v` (of type `from`) to `to`.
pub fn cast_value(v: &Value, from: &DataType, to: &DataType, mode: CastMode) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    if to.is_text() {
        let text = match (v, from) {
            (Value::Text(s), DataType::Char(_)) => s.trim_end_matches(' ').to_string(),
            (Value::Bool(b), _) => (if *b { "true" } else { "false" }).to_string(),
            _ => pg_text(v),
        };
        return match to {
            DataType::Char(n) => fit_char(&text, *n, true, mode == CastMode::Explicit).map(Value::Text),
            DataType::Varchar(Some(n)) => fit_char(&text, *n, false, mode == CastMode::Explicit).map(Value::Text),
            _ => Ok(Value::Text(text)),
        };
    }
    if let Value::Text(s) = v {
        return parse_value(s, to);
    }
    cast_non_text(v, from, to)
}

fn cannot_cast(from: &DataType, to: &DataType) -> SqlError {
    SqlError::new(SqlState::DATATYPE_MISMATCH, format!("cannot cast type {from} to {to}"))
}

fn cast_non_text(v: &Value, from: &DataType, to: &DataType) -> Result<Value> {
    match (v, to) {
        (_, DataType::Unknown) => Ok(v.clone()),
        (Value::Bool(b), t) if t.is_integer() => int_value(*b as i64, t),
        (Value::Bool(b), DataType::Bool) => Ok(Value::Bool(*b)),
        (_, DataType::Bool) => int_of(v).map(|i| Value::Bool(i != 0)).ok_or_else(|| cannot_cast(from, to)),
        (Value::Float64(f), t) if t.is_integer() => {
            let r = f.round_ties_even();
            if !r.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
                return Err(SqlError::overflow(&int_type_name(t)));
            }
            int_value(r as i64, t)
        }
        (Value::Numeric { value, scale }, t) if t.is_integer() => {
            int_from_i128(numeric::rescale(*value, *scale, 0)?, t)
        }
        (_, t) if t.is_integer() => int_of(v).ok_or_else(|| cannot_cast(from, to)).and_then(|i| int_value(i, t)),
        (Value::Float64(f), DataType::Numeric { .. }) => {
            if !f.is_finite() {
                return Err(SqlError::unsupported(format!("cannot convert {} to numeric", format_float8(*f))));
            }
            match numeric::parse_exact(&format!("{f:.14e}")) {
                Some((x, s)) => numeric_value(x, s, to),
                // Beyond 38 digits: a constrained target reports its own limit.
                None => match to {
                    DataType::Numeric { precision: Some(p), scale } => {
                        numeric::check_precision(i128::MAX, *p, *scale).map(|_| Value::Null)
                    }
                    _ => Err(numeric::overflow()),
                },
            }
        }
        (_, DataType::Numeric { .. }) => {
            let (x, s) = as_numeric(v).ok_or_else(|| cannot_cast(from, to))?;
            numeric_value(x, s, to)
        }
        (_, DataType::Float64) => as_f64(v).map(Value::Float64).ok_or_else(|| cannot_cast(from, to)),
        (Value::Date(d), DataType::Date) => Ok(Value::Date(*d)),
        (Value::Date(d), DataType::Timestamp) => datetime::date_to_timestamp(*d).map(Value::Timestamp),
        (Value::Timestamp(t), DataType::Timestamp) => Ok(Value::Timestamp(*t)),
        (Value::Timestamp(t), DataType::Date) => Ok(Value::Date(datetime::split_timestamp(*t).0 as i32)),
        (Value::Interval(iv), DataType::Interval) => Ok(Value::Interval(*iv)),
        _ => Err(cannot_cast(from, to)),
    }
}

/// PostgreSQL's float8 order: NaN equals NaN and sorts above everything.
pub fn cmp_f64(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

fn cmp_numeric(a: (i128, u8), b: (i128, u8)) -> Ordering {
    let s = a.1.max(b.1);
    match (numeric::rescale(a.0, a.1, s), numeric::rescale(b.0, b.1, s)) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        // Rescaling up only overflows for magnitudes beyond the other's.
        _ => as_f64(&Value::Numeric { value: a.0, scale: a.1 })
            .zip(as_f64(&Value::Numeric { value: b.0, scale: b.1 }))
            .map_or(Ordering::Equal, |(x, y)| cmp_f64(x, y)),
    }
}

/// Compares two non-NULL values of comparable types (None when either is
/// NULL or the kinds cannot be compared).
pub fn compare_values(a: &Value, b: &Value) -> Option<Ordering> {
    use Value as V;
    Some(match (a, b) {
        (V::Null, _) | (_, V::Null) => return None,
        (V::Bool(x), V::Bool(y)) => x.cmp(y),
        (V::Text(x), V::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (V::Date(x), V::Date(y)) => x.cmp(y),
        (V::Timestamp(x), V::Timestamp(y)) => x.cmp(y),
        (V::Date(x), V::Timestamp(y)) => (*x as i128 * US_PER_DAY as i128).cmp(&(*y as i128)),
        (V::Timestamp(x), V::Date(y)) => (*x as i128).cmp(&(*y as i128 * US_PER_DAY as i128)),
        (V::Interval(x), V::Interval(y)) => datetime::interval_span_us(*x).cmp(&datetime::interval_span_us(*y)),
        (V::Float64(_), _) | (_, V::Float64(_)) => cmp_f64(as_f64(a)?, as_f64(b)?),
        (V::Numeric { .. }, _) | (_, V::Numeric { .. }) => cmp_numeric(as_numeric(a)?, as_numeric(b)?),
        _ => int_of(a)?.cmp(&int_of(b)?),
    })
}

/// A comparison operator on two values: NULL when either is NULL, except
/// `IS [NOT] DISTINCT FROM`.
pub fn compare_op(op: BinaryOp, a: &Value, b: &Value) -> Result<Value> {
    let both_null = a.is_null() && b.is_null();
    let ord = compare_values(a, b);
    let r = match op {
        BinaryOp::IsDistinctFrom => return Ok(Value::Bool(!both_null && ord != Some(Ordering::Equal))),
        BinaryOp::IsNotDistinctFrom => return Ok(Value::Bool(both_null || ord == Some(Ordering::Equal))),
        _ => match ord {
            None if a.is_null() || b.is_null() => return Ok(Value::Null),
            None => return Err(SqlError::internal(format!("cannot compare {a:?} with {b:?}"))),
            Some(o) => o,
        },
    };
    Ok(Value::Bool(match op {
        BinaryOp::Eq => r == Ordering::Equal,
        BinaryOp::NotEq => r != Ordering::Equal,
        BinaryOp::Lt => r == Ordering::Less,
        BinaryOp::LtEq => r != Ordering::Greater,
        BinaryOp::Gt => r == Ordering::Greater,
        BinaryOp::GtEq => r != Ordering::Less,
        other => return Err(SqlError::internal(format!("{} is not a comparison", other.sql()))),
    }))
}

/// float8 result checks (`float_overflow_error` / `float_underflow_error`).
fn check_float(r: f64, a: f64, b: f64, zero_ok: bool) -> Result<Value> {
    if r.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(SqlError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow"));
    }
    if r == 0.0 && !zero_ok {
        return Err(SqlError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: underflow"));
    }
    Ok(Value::Float64(r))
}

fn float_arith(op: BinaryOp, a: f64, b: f64) -> Result<Value> {
    match op {
        BinaryOp::Add => check_float(a + b, a, b, true),
        BinaryOp::Sub => check_float(a - b, a, b, true),
        BinaryOp::Mul => check_float(a * b, a, b, a == 0.0 || b == 0.0),
        BinaryOp::Div if b == 0.0 && !a.is_nan() => Err(SqlError::division_by_zero()),
        BinaryOp::Div => check_float(a / b, a, b, a == 0.0 || b.is_infinite()),
        BinaryOp::Mod if b == 0.0 => Err(SqlError::division_by_zero()),
        BinaryOp::Mod => Ok(Value::Float64(a % b)),
        other => Err(SqlError::internal(format!("{} on double precision", other.sql()))),
    }
}

/// Integer arithmetic in i128, checked against `ty`'s range.
pub fn int_arith(op: BinaryOp, a: i64, b: i64, ty: &DataType) -> Result<Value> {
    let (x, y) = (a as i128, b as i128);
    let r = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div if y == 0 => return Err(SqlError::division_by_zero()),
        BinaryOp::Div => x / y,
        BinaryOp::Mod if y == 0 => return Err(SqlError::division_by_zero()),
        BinaryOp::Mod => x % y,
        other => return Err(SqlError::internal(format!("{} on integers", other.sql()))),
    };
    int_from_i128(r, ty)
}

fn numeric_arith(op: BinaryOp, a: (i128, u8), b: (i128, u8), ty: &DataType) -> Result<Value> {
    let DataType::Numeric { scale, .. } = ty else {
        return Err(SqlError::internal(format!("numeric arithmetic with result type {ty}")));
    };
    let r = match op {
        BinaryOp::Add => numeric::add(a, b, *scale)?,
        BinaryOp::Sub => numeric::sub(a, b, *scale)?,
        BinaryOp::Mul => numeric::mul(a, b, *scale)?,
        BinaryOp::Div => numeric::div(a, b, *scale)?,
        BinaryOp::Mod => numeric::rem(a, b, *scale)?,
        other => return Err(SqlError::internal(format!("{} on numeric", other.sql()))),
    };
    numeric_value(r, *scale, ty)
}

/// `a op b` for arithmetic and `||` with result type `ty`; NULL in, NULL out.
pub fn arith_values(op: BinaryOp, a: &Value, b: &Value, ty: &DataType) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    if op == BinaryOp::Concat {
        let text = |v: &Value| match v {
            Value::Text(s) => s.clone(),
            other => pg_text(other),
        };
        return Ok(Value::Text(text(a) + &text(b)));
    }
    if let Some(v) = datetime_arith(op, a, b)? {
        return Ok(v);
    }
    match ty {
        t if t.is_integer() => match (int_of(a), int_of(b)) {
            (Some(x), Some(y)) => int_arith(op, x, y, t),
            _ => Err(SqlError::internal(format!("integer {} of {a:?} and {b:?}", op.sql()))),
        },
        DataType::Float64 => match (as_f64(a), as_f64(b)) {
            (Some(x), Some(y)) => float_arith(op, x, y),
            _ => Err(SqlError::internal(format!("float {} of {a:?} and {b:?}", op.sql()))),
        },
        DataType::Numeric { .. } => match (as_numeric(a), as_numeric(b)) {
            (Some(x), Some(y)) => numeric_arith(op, x, y, ty),
            _ => Err(SqlError::internal(format!("numeric {} of {a:?} and {b:?}", op.sql()))),
        },
        _ => Err(SqlError::internal(format!("{} of {a:?} and {b:?} as {ty}", op.sql()))),
    }
}

/// Date, timestamp and interval arithmetic; None when neither side is one.
fn datetime_arith(op: BinaryOp, a: &Value, b: &Value) -> Result<Option<Value>> {
    use BinaryOp::{Add, Div, Mul, Sub};
    use Value as V;
    let date = |d: i64| datetime::checked_date(d).map(V::Date);
    let ts_iv = |t: i64, iv: Interval| datetime::timestamp_add_interval(t, iv).map(V::Timestamp);
    let day_us = datetime::date_to_timestamp;
    Ok(Some(match (op, a, b) {
        (Add, V::Date(d), i) | (Add, i, V::Date(d)) if int_of(i).is_some() => date(*d as i64 + int_of(i).unwrap_or(0))?,
        (Sub, V::Date(d), i) if int_of(i).is_some() => date(*d as i64 - int_of(i).unwrap_or(0))?,
        (Sub, V::Date(x), V::Date(y)) => int_value(*x as i64 - *y as i64, &DataType::Int32)?,
        (Add, V::Date(d), V::Interval(iv)) | (Add, V::Interval(iv), V::Date(d)) => ts_iv(day_us(*d)?, *iv)?,
        (Sub, V::Date(d), V::Interval(iv)) => ts_iv(day_us(*d)?, datetime::interval_neg(*iv)?)?,
        (Add, V::Timestamp(t), V::Interval(iv)) | (Add, V::Interval(iv), V::Timestamp(t)) => ts_iv(*t, *iv)?,
        (Sub, V::Timestamp(t), V::Interval(iv)) => ts_iv(*t, datetime::interval_neg(*iv)?)?,
        (Sub, V::Timestamp(x), V::Timestamp(y)) => V::Interval(datetime::timestamp_diff(*x, *y)?),
        (Sub, V::Timestamp(x), V::Date(y)) => V::Interval(datetime::timestamp_diff(*x, day_us(*y)?)?),
        (Sub, V::Date(x), V::Timestamp(y)) => V::Interval(datetime::timestamp_diff(day_us(*x)?, *y)?),
        (Add, V::Interval(x), V::Interval(y)) => V::Interval(datetime::interval_add(*x, *y)?),
        (Sub, V::Interval(x), V::Interval(y)) => V::Interval(datetime::interval_add(*x, datetime::interval_neg(*y)?)?),
        (Mul, V::Interval(iv), n) | (Mul, n, V::Interval(iv)) => V::Interval(interval_scale(*iv, as_f64(n), false)?),
        (Div, V::Interval(iv), n) => V::Interval(interval_scale(*iv, as_f64(n), true)?),
        _ => return Ok(None),
    }))
}

/// `interval * factor` or `interval / factor` as PostgreSQL's
/// `interval_mul`/`interval_div`, step for step (their float rounding
/// included): fractional months cascade into days (30 per month), rounded
/// to microseconds, fractional days into the time.
fn interval_scale(iv: Interval, factor: Option<f64>, divide: bool) -> Result<Interval> {
    let f = factor.ok_or_else(|| SqlError::internal("interval scaled by a non-number"))?;
    if divide && f == 0.0 {
        return Err(SqlError::division_by_zero());
    }
    let op = |x: f64| if divide { x / f } else { x * f };
    let tsround = |x: f64| (x * 1e6).round_ties_even() / 1e6;
    let overflow = || SqlError::overflow("interval");
    let (m, dd) = (op(iv.months as f64), op(iv.days as f64));
    if !m.is_finite() || !dd.is_finite() || m.abs() > i32::MAX as f64 || dd.abs() > i32::MAX as f64 {
        return Err(overflow());
    }
    let (months, mut days) = (m as i32, dd as i32);
    let month_rem_days = tsround((m - months as f64) * 30.0);
    let mut sec_rem = tsround((dd - days as f64 + month_rem_days - month_rem_days.trunc()) * 86_400.0);
    if sec_rem.abs() >= 86_400.0 {
        days = days.checked_add((sec_rem / 86_400.0) as i32).ok_or_else(overflow)?;
        sec_rem -= (sec_rem / 86_400.0).trunc() * 86_400.0;
    }
    days = days.checked_add(month_rem_days as i32).ok_or_else(overflow)?;
    let micros = (op(iv.micros as f64) + sec_rem * 1e6).round_ties_even();
    if !micros.is_finite() || micros.abs() > 9.2e18 {
        return Err(overflow());
    }
    Ok(Interval { months, days, micros: micros as i64 })
}

/// `-v` for numbers and intervals.
pub fn negate(v: &Value, ty: &DataType) -> Result<Value> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Float64(f) => Ok(Value::Float64(-f)),
        Value::Numeric { value, scale } => Ok(Value::Numeric { value: -value, scale: *scale }),
        Value::Interval(iv) => datetime::interval_neg(*iv).map(Value::Interval),
        other => match int_of(other) {
            Some(i) => int_from_i128(-(i as i128), ty),
            None => Err(SqlError::internal(format!("negation of {other:?}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_overflow_names_the_type() {
        let e = arith_values(BinaryOp::Add, &Value::Int32(i32::MAX), &Value::Int32(1), &DataType::Int32).unwrap_err();
        assert_eq!(e.message, "integer out of range");
        let e = arith_values(BinaryOp::Div, &Value::Int16(1), &Value::Int16(0), &DataType::Int16).unwrap_err();
        assert_eq!(e.code, SqlState::DIVISION_BY_ZERO);
        let r = arith_values(BinaryOp::Mod, &Value::Int32(i32::MIN), &Value::Int32(-1), &DataType::Int32).unwrap();
        assert_eq!(r, Value::Int32(0));
    }

    #[test]
    fn float_to_int_rounds_to_even() {
        let c = |f: f64| cast_value(&Value::Float64(f), &DataType::Float64, &DataType::Int32, CastMode::Explicit);
        assert_eq!(c(2.5).unwrap(), Value::Int32(2));
        assert_eq!(c(3.5).unwrap(), Value::Int32(4));
        assert_eq!(c(-2.5).unwrap(), Value::Int32(-2));
        let n = Value::Numeric { value: -25, scale: 1 };
        let r = cast_value(&n, &n.data_type(), &DataType::Int32, CastMode::Explicit).unwrap();
        assert_eq!(r, Value::Int32(-3));
    }
}
