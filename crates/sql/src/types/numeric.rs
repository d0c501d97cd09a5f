//! Fixed-point `numeric` arithmetic on scaled i128 values.
//!
//! A numeric value is `value × 10^-scale` (the [`Value::Numeric`] and
//! Decimal128 representation). Every expression of type numeric has one
//! scale, chosen by the binder; the evaluator computes each result exactly
//! (in 256 bits where a product or a quotient needs more than 128) and then
//! rounds it to the expression's scale, half away from zero as PostgreSQL's
//! `numeric` rounds:
//!
//! ```text
//!  a + b, a - b : exact at max(sa, sb), rounded to the result scale
//!  a * b        : exact at sa + sb (i256), rounded to the result scale
//!  a / b        : a·10^(s + sb - sa) / b in i256, rounded half away
//!  a % b        : exact at max(sa, sb) (sign of a, as PostgreSQL)
//! ```
//!
//! A result beyond 38 digits is error 22003 `value overflows numeric
//! format`; a cast to `numeric(p,s)` beyond `p - s` integer digits is 22003
//! `numeric field overflow` with PostgreSQL's detail.
//!
//! Scale rules. PostgreSQL's numeric carries a scale per value; ndpdb's one
//! per expression, which the binder sets. For results to print as
//! PostgreSQL's, the binder gives:
//!
//! ```text
//!  a + b, a - b, a % b      max(sa, sb)            = PostgreSQL
//!  a * b                    sa + sb (at most 38)   = PostgreSQL
//!  a / b                    max(16, sa, sb)        PostgreSQL: per value,
//!                                                  ≥ 16 significant digits
//!  avg(x)                   max(16, sx)            as division
//!  round/trunc(x, d)        max(d, 0)              = PostgreSQL
//!  floor, ceil, int → numeric   0                  = PostgreSQL
//!  EXTRACT(f FROM x)        exec::expr::extract_scale(f, type of x)
//!  literal 1.50             2 (as written)         = PostgreSQL
//! ```
//!
//! Only division and avg differ from PostgreSQL, and only in how many
//! decimals they print: `100/3` prints 33.3333333333333333 in both, but
//! `1e20/3` has 16 decimals here and none in PostgreSQL, which keeps about
//! 20 significant digits; a quotient that needs more than 22 integer digits
//! overflows here. The evaluator never
//! relies on these rules: it computes every result exactly and rounds to
//! whatever scale the expression's type says, half away from zero.
//!
//! [`Value::Numeric`]: super::Value::Numeric

use arrow_buffer::i256;

use super::NUMERIC_MAX_PRECISION;
use crate::error::{Result, SqlError, SqlState};

/// 10^exp for exp <= 38.
pub fn pow10(exp: u32) -> i128 {
    10i128.pow(exp)
}

fn pow10_256(exp: u32) -> Option<i256> {
    i256::from_i128(10).checked_pow(exp)
}

/// The overflow error of a numeric result beyond 38 digits.
pub fn overflow() -> SqlError {
    SqlError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
}

/// `num / den` rounded half away from zero (den != 0).
fn div_round_256(num: i256, den: i256) -> Option<i256> {
    let q = num.checked_div(den)?;
    let r = num.checked_rem(den)?;
    let twice = r.checked_mul(i256::from_i128(2))?.wrapping_abs();
    if twice >= den.wrapping_abs() {
        let away = if (num < i256::ZERO) != (den < i256::ZERO) { i256::MINUS_ONE } else { i256::ONE };
        q.checked_add(away)
    } else {
        Some(q)
    }
}

/// `num / den` rounded half away from zero in i128 (den != 0).
fn div_round_128(num: i128, den: i128) -> Option<i128> {
    let (q, r) = (num.checked_div(den)?, num.checked_rem(den)?);
    if r.unsigned_abs() >= den.unsigned_abs() - r.unsigned_abs() {
        q.checked_add(if (num < 0) != (den < 0) { -1 } else { 1 })
    } else {
        Some(q)
    }
}

const LIMIT: u128 = 10u128.pow(NUMERIC_MAX_PRECISION as u32);

/// Within 38 digits.
fn fits(v: i128) -> Option<i128> {
    (v.unsigned_abs() < LIMIT).then_some(v)
}

/// Narrows to i128 within 38 digits.
fn to_i128(v: i256) -> Result<i128> {
    let v = v.to_i128().ok_or_else(overflow)?;
    if v.unsigned_abs() >= pow10(NUMERIC_MAX_PRECISION as u32) as u128 { Err(overflow()) } else { Ok(v) }
}

/// `value` at scale `from`, rounded (half away from zero) to scale `to`.
pub fn rescale(value: i128, from: u8, to: u8) -> Result<i128> {
    if from == to {
        return Ok(value);
    }
    // i128 first (every value of ordinary magnitude), i256 when it overflows.
    let fast = if to > from {
        10i128.checked_pow((to - from) as u32).and_then(|p| value.checked_mul(p)).and_then(fits)
    } else {
        10i128.checked_pow((from - to) as u32).and_then(|p| div_round_128(value, p))
    };
    if let Some(v) = fast {
        return Ok(v);
    }
    let v = i256::from_i128(value);
    let out = if to > from {
        pow10_256((to - from) as u32).and_then(|p| v.checked_mul(p))
    } else {
        pow10_256((from - to) as u32).and_then(|p| div_round_256(v, p))
    };
    to_i128(out.ok_or_else(overflow)?)
}

/// Checks that `value` at `scale` fits `numeric(precision, scale)`.
pub fn check_precision(value: i128, precision: u8, scale: u8) -> Result<i128> {
    let limit = 10u128.checked_pow(precision as u32).unwrap_or(u128::MAX);
    if value.unsigned_abs() >= limit {
        let digits = precision as i32 - scale as i32;
        return Err(SqlError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow").with_detail(
            format!(
                "A field with precision {precision}, scale {scale} must round to an absolute value less than {}.",
                if digits == 0 { "1".to_string() } else { format!("10^{digits}") }
            ),
        ));
    }
    Ok(value)
}

pub fn add(a: (i128, u8), b: (i128, u8), out: u8) -> Result<i128> {
    if a.1 == out && b.1 == out {
        return a.0.checked_add(b.0).and_then(fits).ok_or_else(overflow);
    }
    let s = a.1.max(b.1);
    let (x, y) = (rescale(a.0, a.1, s)?, rescale(b.0, b.1, s)?);
    rescale(x.checked_add(y).ok_or_else(overflow)?, s, out)
}

pub fn sub(a: (i128, u8), b: (i128, u8), out: u8) -> Result<i128> {
    add(a, (b.0.checked_neg().ok_or_else(overflow)?, b.1), out)
}

pub fn mul(a: (i128, u8), b: (i128, u8), out: u8) -> Result<i128> {
    if let (Some(p), Some(s)) = (a.0.checked_mul(b.0).and_then(fits), a.1.checked_add(b.1)) {
        return rescale(p, s, out);
    }
    let p = i256::from_i128(a.0).checked_mul(i256::from_i128(b.0)).ok_or_else(overflow)?;
    let s = a.1 as u32 + b.1 as u32;
    let r = if out as u32 >= s {
        pow10_256(out as u32 - s).and_then(|m| p.checked_mul(m))
    } else {
        pow10_256(s - out as u32).and_then(|d| div_round_256(p, d))
    };
    to_i128(r.ok_or_else(overflow)?)
}

pub fn div(a: (i128, u8), b: (i128, u8), out: u8) -> Result<i128> {
    if b.0 == 0 {
        return Err(SqlError::division_by_zero());
    }
    // a/b at scale out = a.0 · 10^(out + sb - sa) / b.0
    let e = out as i32 + b.1 as i32 - a.1 as i32;
    if (0..=38).contains(&e)
        && let Some(q) = a.0.checked_mul(pow10(e as u32)).and_then(|num| div_round_128(num, b.0))
    {
        return fits(q).ok_or_else(overflow);
    }
    let (mut num, mut den) = (i256::from_i128(a.0), i256::from_i128(b.0));
    if e >= 0 {
        num = pow10_256(e as u32).and_then(|m| num.checked_mul(m)).ok_or_else(overflow)?;
    } else {
        den = pow10_256((-e) as u32).and_then(|m| den.checked_mul(m)).ok_or_else(overflow)?;
    }
    to_i128(div_round_256(num, den).ok_or_else(overflow)?)
}

pub fn rem(a: (i128, u8), b: (i128, u8), out: u8) -> Result<i128> {
    if b.0 == 0 {
        return Err(SqlError::division_by_zero());
    }
    let s = a.1.max(b.1);
    let (x, y) = (rescale(a.0, a.1, s)?, rescale(b.0, b.1, s)?);
    rescale(x % y, s, out)
}

/// Rounds `value` at `scale` to `digits` decimals (negative: left of the
/// point), keeping the scale: PostgreSQL's `round(numeric, int)`.
pub fn round_to(value: i128, scale: u8, digits: i32, truncate: bool) -> Result<i128> {
    let drop = (scale as i32).saturating_sub(digits);
    if drop <= 0 {
        return Ok(value);
    }
    if drop > NUMERIC_MAX_PRECISION as i32 {
        return Ok(0);
    }
    let p = pow10(drop as u32);
    let q = if truncate {
        value / p
    } else {
        div_round_256(i256::from_i128(value), i256::from_i128(p)).and_then(|v| v.to_i128()).ok_or_else(overflow)?
    };
    q.checked_mul(p).ok_or_else(overflow)
}

/// Floor (`ceil = false`) or ceiling of `value` at `scale`, at the same scale.
pub fn floor_ceil(value: i128, scale: u8, ceil: bool) -> Result<i128> {
    let p = 10i128.checked_pow(scale as u32).ok_or_else(overflow)?;
    let q = value.div_euclid(p);
    let q = if ceil && value.rem_euclid(p) != 0 { q + 1 } else { q };
    q.checked_mul(p).ok_or_else(overflow)
}

/// Decimal text of `value × 10^-scale` with exactly `scale` decimals.
pub fn format(value: i128, scale: u8) -> String {
    let digits = value.unsigned_abs().to_string();
    let sign = if value < 0 { "-" } else { "" };
    let scale = scale as usize;
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded =
        if digits.len() <= scale { format!("{}{digits}", "0".repeat(scale + 1 - digits.len())) } else { digits };
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// Parses numeric text (`-12.5`, `1e3`, ` .5 `) exactly: (digits, scale),
/// or None when the text is not a number. The scale is the number of
/// decimals written (after the exponent), at least 0.
pub fn parse_exact(text: &str) -> Option<(i128, u8)> {
    let s = text.trim();
    let (neg, s) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let all = format!("{int}{frac}");
    let all = all.trim_start_matches('0');
    let scale = (frac.len() as i32).checked_sub(exp)?;
    if all.len() > 60 || !(-40..=200).contains(&scale) {
        return None;
    }
    let mut v = i256::ZERO;
    for b in all.bytes() {
        v = v.checked_mul(i256::from_i128(10))?.checked_add(i256::from_i128((b - b'0') as i128))?;
    }
    let (v, scale) = if scale < 0 { (v.checked_mul(pow10_256((-scale) as u32)?)?, 0) } else { (v, scale) };
    // Drop decimals beyond 38 digits of scale by rounding (PostgreSQL keeps
    // up to 16383; ndpdb's numeric holds 38).
    let (v, scale) = if scale > NUMERIC_MAX_PRECISION as i32 {
        (div_round_256(v, pow10_256((scale - NUMERIC_MAX_PRECISION as i32) as u32)?)?, NUMERIC_MAX_PRECISION as i32)
    } else {
        (v, scale)
    };
    let v = v.to_i128()?;
    Some((if neg { -v } else { v }, scale as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(rescale(125, 2, 1).unwrap(), 13);
        assert_eq!(rescale(-125, 2, 1).unwrap(), -13);
        assert_eq!(rescale(124, 2, 1).unwrap(), 12);
        assert_eq!(div((1, 0), (3, 0), 4).unwrap(), 3333);
        assert_eq!(div((2, 0), (3, 0), 4).unwrap(), 6667);
        assert_eq!(div((-2, 0), (3, 0), 4).unwrap(), -6667);
        assert_eq!(mul((15, 1), (15, 1), 1).unwrap(), 23);
    }

    #[test]
    fn parse_and_format() {
        assert_eq!(parse_exact("-12.50"), Some((-1250, 2)));
        assert_eq!(parse_exact("1e3"), Some((1000, 0)));
        assert_eq!(parse_exact("1.5e-2"), Some((15, 3)));
        assert_eq!(parse_exact(".5"), Some((5, 1)));
        assert_eq!(parse_exact("abc"), None);
        assert_eq!(parse_exact("."), None);
        assert_eq!(format(-5, 2), "-0.05");
        assert_eq!(format(12345, 2), "123.45");
        assert_eq!(format(7, 0), "7");
    }
}
