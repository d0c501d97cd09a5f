//! Scalar functions (`plan::Function`), PostgreSQL's behaviour.
//!
//! Argument order (as the binder builds them):
//!
//! ```text
//!  coalesce(a, ...)  nullif(a, b)  greatest(a, ...)  least(a, ...)
//!  abs(x) round(x [, d]) trunc(x [, d]) floor(x) ceil(x) sqrt(x) power(x, y)
//!  length(s) lower(s) upper(s) substring(s, from [, count])
//!  position(needle, haystack) trim/ltrim/rtrim(s [, chars])
//!  replace(s, from, to) concat(a, ...) left(s, n) right(s, n)
//!  lpad/rpad(s, n [, fill]) starts_with(s, prefix)
//!  extract(field, x) date_trunc(field, x) now() current_date()
//!  version() current_schema() current_database()
//! ```
//!
//! COALESCE is lazy (logic.rs); the others are computed row by row on
//! [`Value`]s and NULL in gives NULL out (except concat, greatest, least,
//! which skip NULLs). A result is converted to the expression's type when
//! the binder chose another (e.g. `round(numeric, 2)` at scale 2). Text is
//! handled as Unicode characters; lower/upper fold ASCII only, as
//! PostgreSQL with the C collation.

use arrow_array::{ArrayRef, RecordBatch};

use super::{EvalContext, evaluate_with, map_rows};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Expr, Function};
use crate::types::format::pg_text;
use crate::types::ops::{CastMode, cast_value, compare_values};
use crate::types::{DataType, Value, numeric};

pub(super) fn call(
    func: Function,
    args: &[Expr],
    ty: &DataType,
    batch: &RecordBatch,
    ev: &EvalContext<'_>,
) -> Result<ArrayRef> {
    let n = batch.num_rows();
    if func == Function::Coalesce {
        return super::logic::coalesce(args, ty, batch, ev);
    }
    let arrays = args.iter().map(|a| evaluate_with(a, batch, ev)).collect::<Result<Vec<_>>>()?;
    let types: Vec<DataType> = args.iter().map(Expr::ty).collect();
    let refs: Vec<&ArrayRef> = arrays.iter().collect();
    let start_us = ev.exec.statement_start_us;
    map_rows(&refs, n, ty, |vals| {
        let v = scalar(func, vals, &types, ty, start_us)?;
        fit(v, ty)
    })
}

/// The result as a value of `ty` (when a function's natural result type
/// differs from the one the binder chose).
fn fit(v: Value, ty: &DataType) -> Result<Value> {
    let vt = v.data_type();
    let same = match (&vt, ty) {
        (DataType::Numeric { scale: a, .. }, DataType::Numeric { scale: b, precision: None }) => a == b,
        (a, b) if a.is_text() && b.is_text() => true,
        (a, b) => a == b,
    };
    if v.is_null() || same || *ty == DataType::Unknown { Ok(v) } else { cast_value(&v, &vt, ty, CastMode::Explicit) }
}

/// `s` as text, without the padding of `char(n)`.
fn text(v: &Value, t: &DataType) -> String {
    match (v, t) {
        (Value::Text(s), DataType::Char(_)) => s.trim_end_matches(' ').to_string(),
        (Value::Text(s), _) => s.clone(),
        (other, _) => pg_text(other),
    }
}

fn int(v: &Value) -> Result<i64> {
    match v {
        Value::Int16(x) => Ok(*x as i64),
        Value::Int32(x) => Ok(*x as i64),
        Value::Int64(x) => Ok(*x),
        other => Err(SqlError::internal(format!("integer argument expected, got {other:?}"))),
    }
}

/// One call on one row's values.
pub(super) fn scalar(
    func: Function,
    vals: &[Value],
    types: &[DataType],
    ty: &DataType,
    start_us: i64,
) -> Result<Value> {
    use Function as F;
    match func {
        F::Concat => {
            return Ok(Value::Text(
                vals.iter().zip(types).filter(|(v, _)| !v.is_null()).map(|(v, t)| text(v, t)).collect(),
            ));
        }
        F::Greatest | F::Least => return Ok(extreme(vals, func == F::Greatest)),
        F::ConcatWs => return Ok(concat_ws(vals, types)),
        F::NullIf => {
            return Ok(match compare_values(&vals[0], &vals[1]) {
                Some(std::cmp::Ordering::Equal) => Value::Null,
                _ => vals[0].clone(),
            });
        }
        F::Now => return Ok(Value::Timestamp(start_us)),
        F::CurrentDate => return Ok(Value::Date(crate::types::datetime::split_timestamp(start_us).0 as i32)),
        F::Version => return Ok(Value::Text(format!("PostgreSQL 15.0 (ndpdb {})", env!("CARGO_PKG_VERSION")))),
        F::CurrentSchema => return Ok(Value::Text("public".into())),
        F::CurrentDatabase => return Ok(Value::Text("ndpdb".into())),
        F::FormatType | F::RegexMatch | F::ArrayToString | F::PgSizePretty | F::PgEncodingToChar | F::ArrayContains => {
            return super::pgfunc::call(func, vals);
        }
        _ => {}
    }
    if vals.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    match func {
        F::Abs | F::Round | F::Trunc | F::Floor | F::Ceil | F::Sqrt | F::Power => math(func, vals, ty),
        F::Sign => sign(&vals[0]),
        F::Chr => chr(int(&vals[0])?),
        F::OctetLength => Ok(Value::Int32(octet_length(&vals[0], &types[0]))),
        F::Extract => super::datefunc::extract(&text(&vals[0], &types[0]), &vals[1], ty),
        F::DateTrunc => super::datefunc::date_trunc(&text(&vals[0], &types[0]), &vals[1]),
        _ => {
            let s: Vec<String> = vals.iter().zip(types).map(|(v, t)| text(v, t)).collect();
            string(func, &s, vals)
        }
    }
}

/// `concat_ws(sep, ...)`: NULL separator gives NULL; NULL arguments are skipped.
fn concat_ws(vals: &[Value], types: &[DataType]) -> Value {
    if vals[0].is_null() {
        return Value::Null;
    }
    let sep = text(&vals[0], &types[0]);
    let parts: Vec<String> =
        vals[1..].iter().zip(&types[1..]).filter(|(v, _)| !v.is_null()).map(|(v, t)| text(v, t)).collect();
    Value::Text(parts.join(&sep))
}

/// Bytes of the value's text; a `char(n)` counts its padding to n
/// characters whether or not the value carries it.
fn octet_length(v: &Value, t: &DataType) -> i32 {
    let s = match v {
        Value::Text(s) => s.clone(),
        other => pg_text(other),
    };
    let len = match t {
        DataType::Char(n) => {
            let trimmed = s.trim_end_matches(' ');
            trimmed.len() + (*n as usize).saturating_sub(trimmed.chars().count())
        }
        _ => s.len(),
    };
    i32::try_from(len).unwrap_or(i32::MAX)
}

fn sign(v: &Value) -> Result<Value> {
    Ok(match v {
        Value::Float64(f) if f.is_nan() => Value::Float64(*f),
        Value::Float64(f) => Value::Float64(if *f > 0.0 {
            1.0
        } else if *f < 0.0 {
            -1.0
        } else {
            0.0
        }),
        Value::Numeric { value, .. } => Value::Numeric { value: value.signum(), scale: 0 },
        other => crate::types::ops::int_value(int(other)?.signum(), &other.data_type())?,
    })
}

fn chr(code: i64) -> Result<Value> {
    let limit = |m: String| Err(SqlError::new(SqlState::PROGRAM_LIMIT_EXCEEDED, m));
    match u32::try_from(code).ok().and_then(char::from_u32) {
        _ if code == 0 => limit("null character not permitted".into()),
        Some(c) => Ok(Value::Text(c.to_string())),
        None => limit(format!("requested character too large for encoding: {code}")),
    }
}

fn extreme(vals: &[Value], greatest: bool) -> Value {
    let mut best: Option<&Value> = None;
    for v in vals.iter().filter(|v| !v.is_null()) {
        best = match best {
            None => Some(v),
            Some(b) => {
                let o = compare_values(v, b).unwrap_or(std::cmp::Ordering::Equal);
                if (greatest && o.is_gt()) || (!greatest && o.is_lt()) { Some(v) } else { Some(b) }
            }
        };
    }
    best.cloned().unwrap_or(Value::Null)
}

fn invalid_arg(msg: &str) -> SqlError {
    SqlError::new(crate::SqlState("2201F"), msg)
}

fn math(func: Function, vals: &[Value], ty: &DataType) -> Result<Value> {
    use Function as F;
    let digits = if vals.len() > 1 && matches!(func, F::Round | F::Trunc) { int(&vals[1])? as i32 } else { 0 };
    match (&vals[0], func) {
        (Value::Float64(f), _) => float_math(func, *f, vals.get(1)),
        (Value::Numeric { value, scale }, F::Abs) => Ok(Value::Numeric { value: value.abs(), scale: *scale }),
        (Value::Numeric { value, scale }, F::Round | F::Trunc) => {
            let v = numeric::round_to(*value, *scale, digits, func == F::Trunc)?;
            // The result's scale is max(d, 0), as PostgreSQL's.
            let s = digits.clamp(0, 38) as u8;
            Ok(Value::Numeric { value: numeric::rescale(v, *scale, s)?, scale: s })
        }
        (Value::Numeric { value, scale }, F::Floor | F::Ceil) => {
            let v = numeric::floor_ceil(*value, *scale, func == F::Ceil)?;
            Ok(Value::Numeric { value: numeric::rescale(v, *scale, 0)?, scale: 0 })
        }
        (Value::Numeric { .. }, F::Sqrt | F::Power) => {
            let f = |v: &Value| cast_value(v, &v.data_type(), &DataType::Float64, CastMode::Explicit);
            let x = f(&vals[0])?;
            let y = match vals.get(1) {
                Some(v) => Some(f(v)?),
                None => None,
            };
            let Value::Float64(x) = x else { return Err(SqlError::internal("numeric to float")) };
            let r = float_math(func, x, y.as_ref())?;
            cast_value(&r, &DataType::Float64, ty, CastMode::Explicit)
        }
        (v, F::Abs) => {
            let i = int(v)?;
            crate::types::ops::int_value(i.checked_abs().ok_or_else(|| SqlError::overflow("bigint"))?, &v.data_type())
        }
        (v, _) => {
            let as_num = Value::Numeric { value: int(v)? as i128, scale: 0 };
            let mut args = vals.to_vec();
            args[0] = as_num;
            math(func, &args, ty)
        }
    }
}

fn float_math(func: Function, x: f64, y: Option<&Value>) -> Result<Value> {
    use Function as F;
    let y = match y {
        Some(Value::Float64(f)) => *f,
        Some(other) => match cast_value(other, &other.data_type(), &DataType::Float64, CastMode::Explicit)? {
            Value::Float64(f) => f,
            _ => 0.0,
        },
        None => 0.0,
    };
    Ok(Value::Float64(match func {
        F::Abs => x.abs(),
        F::Round => x.round_ties_even(),
        F::Trunc => x.trunc(),
        F::Floor => x.floor(),
        F::Ceil => x.ceil(),
        F::Sqrt if x < 0.0 => return Err(invalid_arg("cannot take square root of a negative number")),
        F::Sqrt => x.sqrt(),
        F::Power if x == 0.0 && y < 0.0 => return Err(invalid_arg("zero raised to a negative power is undefined")),
        F::Power if x < 0.0 && y.fract() != 0.0 => {
            return Err(invalid_arg("a negative number raised to a non-integer power yields a complex result"));
        }
        F::Power => {
            let r = x.powf(y);
            if r.is_infinite() && x.is_finite() && y.is_finite() {
                return Err(SqlError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow"));
            }
            r
        }
        other => return Err(SqlError::internal(format!("{other:?} on double precision"))),
    }))
}

fn chars_of(s: &str) -> Vec<char> {
    s.chars().collect()
}

fn string(func: Function, s: &[String], vals: &[Value]) -> Result<Value> {
    use Function as F;
    let t = |x: String| Ok(Value::Text(x));
    match func {
        F::Length => Ok(Value::Int32(s[0].chars().count() as i32)),
        F::Lower => t(s[0].to_ascii_lowercase()),
        F::Upper => t(s[0].to_ascii_uppercase()),
        F::Substring => substring(&s[0], int(&vals[1])?, vals.get(2).map(int).transpose()?),
        F::Position => Ok(Value::Int32(match s[1].find(s[0].as_str()) {
            Some(b) => s[1][..b].chars().count() as i32 + 1,
            None => 0,
        })),
        F::Trim | F::Ltrim | F::Rtrim => {
            let set = chars_of(s.get(1).map_or(" ", |c| c.as_str()));
            let x = s[0].as_str();
            let x = if func != F::Rtrim { x.trim_start_matches(|c| set.contains(&c)) } else { x };
            let x = if func != F::Ltrim { x.trim_end_matches(|c| set.contains(&c)) } else { x };
            t(x.to_string())
        }
        F::Replace if s[1].is_empty() => t(s[0].clone()),
        F::Replace => t(s[0].replace(s[1].as_str(), &s[2])),
        F::Left | F::Right => {
            let c = chars_of(&s[0]);
            let k = int(&vals[1])?;
            let len = c.len() as i64;
            let keep = if k >= 0 { k.min(len) } else { len.saturating_add(k).max(0) } as usize;
            let out: String =
                if func == F::Left { c[..keep].iter().collect() } else { c[c.len() - keep..].iter().collect() };
            t(out)
        }
        F::Lpad | F::Rpad => pad(&s[0], int(&vals[1])?, s.get(2).map_or(" ", |f| f.as_str()), func == F::Lpad),
        F::StartsWith => Ok(Value::Bool(s[0].starts_with(s[1].as_str()))),
        F::Repeat => repeat(&s[0], int(&vals[1])?),
        F::Reverse => t(s[0].chars().rev().collect()),
        F::SplitPart => split_part(&s[0], &s[1], int(&vals[2])?),
        F::Ascii => Ok(Value::Int32(s[0].chars().next().map_or(0, |c| c as i32))),
        F::Initcap => t(initcap(&s[0])),
        other => Err(SqlError::unsupported(format!("function {other:?} is not supported here"))),
    }
}

fn repeat(s: &str, n: i64) -> Result<Value> {
    let n = n.max(0) as usize;
    if s.len().saturating_mul(n) > 1 << 30 {
        return Err(SqlError::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "requested length too large"));
    }
    Ok(Value::Text(s.repeat(n)))
}

/// PostgreSQL's split_part: fields counted from 1, negative from the end
/// (PostgreSQL 14+); an empty delimiter makes the whole string field 1.
fn split_part(s: &str, delim: &str, n: i64) -> Result<Value> {
    if n == 0 {
        return Err(SqlError::new(SqlState("22023"), "field position must not be zero"));
    }
    let fields: Vec<&str> = if delim.is_empty() { vec![s] } else { s.split(delim).collect() };
    let index = if n > 0 { (n - 1) as usize } else { fields.len().wrapping_sub(n.unsigned_abs() as usize) };
    Ok(Value::Text(if s.is_empty() { String::new() } else { fields.get(index).map_or("", |f| f).to_string() }))
}

/// Upper-cases the first letter of each alphanumeric run, lower-cases the rest (ASCII).
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        out.push(if in_word { c.to_ascii_lowercase() } else { c.to_ascii_uppercase() });
        in_word = c.is_alphanumeric();
    }
    out
}

fn substring(s: &str, from: i64, count: Option<i64>) -> Result<Value> {
    let c = chars_of(s);
    let end = match count {
        Some(k) if k < 0 => {
            return Err(SqlError::new(crate::SqlState("22011"), "negative substring length not allowed"));
        }
        Some(k) => from.saturating_add(k),
        None => i64::MAX,
    };
    let (lo, hi) = ((from.max(1) - 1) as usize, (end.max(1) - 1).min(c.len() as i64) as usize);
    Ok(Value::Text(if lo >= hi { String::new() } else { c[lo..hi].iter().collect() }))
}

fn pad(s: &str, len: i64, fill: &str, left: bool) -> Result<Value> {
    let c = chars_of(s);
    let len = len.max(0) as usize;
    if len > 10_000_000 {
        return Err(SqlError::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "requested length too large"));
    }
    if c.len() >= len || fill.is_empty() {
        return Ok(Value::Text(c[..len.min(c.len())].iter().collect()));
    }
    let padding: String = fill.chars().cycle().take(len - c.len()).collect();
    Ok(Value::Text(if left { format!("{padding}{s}") } else { format!("{s}{padding}") }))
}
