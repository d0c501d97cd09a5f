//! PostgreSQL's text input of every type (`'42'::integer`, COPY fields,
//! the wire protocol's text parameters).
//!
//! [`parse_value`] reads text as the given type with PostgreSQL's rules
//! and errors: surrounding blanks are ignored for numbers, booleans, dates
//! and intervals; integers take no decimals (22P02) and report their range
//! (22003 `value "70000" is out of range for type smallint`); numerics take
//! exponents and round half away from zero to the type's scale; booleans
//! take `t/true/yes/on/1` and `f/false/no/off/0` and their unique prefixes;
//! dates are ISO (`1998-12-01`, `19981201`, `0001-12-31 BC`); timestamps
//! are a date and an optional `HH:MM[:SS[.ffffff]]` (blank or `T`
//! between); intervals are PostgreSQL's `postgres` style (`1 year 2 mons
//! -3 days 04:05:06.5`, `90 days`, `@ 1 day ago`, a bare number = seconds).
//!
//! Character types: `char(n)` pads with blanks, `varchar(n)`/`char(n)`
//! reject longer text whose excess is not all blanks (22001, the
//! assignment rule: an INSERT or COPY); explicit casts truncate instead
//! ([`crate::types::ops::cast_value`]).

use super::datetime::{US_PER_DAY, US_PER_HOUR, US_PER_MIN, US_PER_SEC, checked_date, days_from_civil, days_in_month};
use super::{DataType, Interval, Value, numeric};
use crate::error::{Result, SqlError, SqlState};

/// Reads `text` as a value of `ty` (PostgreSQL's input function).
pub fn parse_value(text: &str, ty: &DataType) -> Result<Value> {
    match ty {
        DataType::Bool => parse_bool(text).map(Value::Bool),
        DataType::Int16 => {
            parse_int(text, "smallint", i16::MIN as i64, i16::MAX as i64).map(|v| Value::Int16(v as i16))
        }
        DataType::Int32 => parse_int(text, "integer", i32::MIN as i64, i32::MAX as i64).map(|v| Value::Int32(v as i32)),
        DataType::Int64 => parse_int(text, "bigint", i64::MIN, i64::MAX).map(Value::Int64),
        DataType::Numeric { precision, scale } => {
            let (v, s) = parse_numeric(text)?;
            let v = match (numeric::rescale(v, s, *scale), precision) {
                (Ok(v), _) => v,
                (Err(_), Some(p)) => numeric::check_precision(i128::MAX, *p, *scale)?,
                (Err(e), None) => return Err(e),
            };
            let v = match precision {
                Some(p) => numeric::check_precision(v, *p, *scale)?,
                None => v,
            };
            Ok(Value::Numeric { value: v, scale: *scale })
        }
        DataType::Float64 => parse_float(text).map(Value::Float64),
        DataType::Date => parse_date(text).map(Value::Date),
        DataType::Timestamp => parse_timestamp(text).map(Value::Timestamp),
        DataType::Interval => parse_interval(text).map(Value::Interval),
        DataType::Char(n) => fit_char(text, *n, true, false).map(Value::Text),
        DataType::Varchar(Some(n)) => fit_char(text, *n, false, false).map(Value::Text),
        DataType::Varchar(None) | DataType::Text | DataType::Unknown => Ok(Value::Text(text.to_string())),
    }
}

fn invalid(type_name: &str, text: &str) -> SqlError {
    SqlError::new(
        SqlState::INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type {type_name}: \"{text}\""),
    )
}

fn invalid_datetime(type_name: &str, text: &str) -> SqlError {
    SqlError::new(SqlState::INVALID_DATETIME_FORMAT, format!("invalid input syntax for type {type_name}: \"{text}\""))
}

fn field_out_of_range(text: &str) -> SqlError {
    SqlError::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date/time field value out of range: \"{text}\""))
}

/// Fits text to `char(n)` (`pad`) or `varchar(n)`: longer text errors
/// (22001) unless the excess is blanks, or is cut when `truncate`.
pub fn fit_char(text: &str, n: u16, pad: bool, truncate: bool) -> Result<String> {
    let n = n as usize;
    let len = text.chars().count();
    if len > n {
        let cut: usize = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
        if !truncate && !text[cut..].chars().all(|c| c == ' ') {
            let ty = if pad { format!("character({n})") } else { format!("character varying({n})") };
            return Err(SqlError::new(SqlState::STRING_DATA_RIGHT_TRUNCATION, format!("value too long for type {ty}")));
        }
        return Ok(text[..cut].to_string());
    }
    if pad && len < n { Ok(format!("{text}{}", " ".repeat(n - len))) } else { Ok(text.to_string()) }
}

pub fn parse_bool(text: &str) -> Result<bool> {
    let t = text.trim().to_ascii_lowercase();
    let prefix_of = |word: &str, min: usize| t.len() >= min && word.starts_with(t.as_str());
    if t == "1" || prefix_of("true", 1) || prefix_of("yes", 1) || t == "on" {
        Ok(true)
    } else if t == "0" || prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2) {
        Ok(false)
    } else {
        Err(invalid("boolean", text))
    }
}

/// An integer of `[min, max]` named `type_name`.
pub fn parse_int(text: &str, type_name: &str, min: i64, max: i64) -> Result<i64> {
    let t = text.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(type_name, text));
    }
    let out_of_range = || {
        SqlError::new(
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("value \"{text}\" is out of range for type {type_name}"),
        )
    };
    let v: i128 = t.parse().map_err(|_| out_of_range())?;
    if v < min as i128 || v > max as i128 { Err(out_of_range()) } else { Ok(v as i64) }
}

/// Numeric text exactly: (value, scale written).
pub fn parse_numeric(text: &str) -> Result<(i128, u8)> {
    if text.trim().eq_ignore_ascii_case("nan") {
        return Err(SqlError::unsupported("numeric NaN is not supported").with_hint("use double precision for NaN"));
    }
    numeric::parse_exact(text).ok_or_else(|| invalid("numeric", text))
}

/// A numeric literal's value at the scale it is written with (at least 0),
/// for the binder: `1.50` → (150, 2).
pub fn numeric_literal(text: &str) -> Result<Value> {
    let (value, scale) = parse_numeric(text)?;
    Ok(Value::Numeric { value, scale })
}

pub fn parse_float(text: &str) -> Result<f64> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let special = match lower.trim_start_matches(['+', '-']) {
        "nan" => Some(f64::NAN),
        "inf" | "infinity" => Some(f64::INFINITY),
        _ => None,
    };
    if let Some(v) = special {
        return Ok(if lower.starts_with('-') { -v } else { v });
    }
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) {
        return Err(invalid("double precision", text));
    }
    let v: f64 = t.parse().map_err(|_| invalid("double precision", text))?;
    let underflow = v == 0.0 && t.bytes().any(|b| (b'1'..=b'9').contains(&b)) && !mantissa_is_zero(t);
    if v.is_infinite() || underflow {
        return Err(SqlError::new(
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("\"{text}\" is out of range for type double precision"),
        ));
    }
    Ok(v)
}

fn mantissa_is_zero(t: &str) -> bool {
    let m = t.split(['e', 'E']).next().unwrap_or("");
    !m.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

/// (days, rest of the text after the date and an optional ` BC`).
fn parse_date_part<'a>(t: &'a str, text: &str, type_name: &str) -> Result<(i64, &'a str)> {
    let bad = || invalid_datetime(type_name, text);
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(t.len());
    let (date, rest) = t.split_at(end);
    let (y, m, d) = if date.len() == 8 && !date.contains('-') {
        (&date[..4], &date[4..6], &date[6..])
    } else {
        let mut it = date.splitn(3, '-');
        (it.next().ok_or_else(bad)?, it.next().ok_or_else(bad)?, it.next().ok_or_else(bad)?)
    };
    let num = |s: &str| -> Result<i64> {
        if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
            Err(bad())
        } else {
            Ok(s.parse().unwrap_or(0))
        }
    };
    let (mut y, m, d) = (num(y)?, num(m)?, num(d)?);
    let (rest, bc) = match rest.trim_end().strip_suffix("BC").or_else(|| rest.trim_end().strip_suffix("bc")) {
        Some(r) => (r, true),
        None => (rest, false),
    };
    if y == 0 || !(1..=12).contains(&m) || d < 1 || d > days_in_month(if bc { 1 - y } else { y }, m as u32) as i64 {
        return Err(field_out_of_range(text));
    }
    if bc {
        y = 1 - y;
    }
    Ok((days_from_civil(y, m as u32, d as u32), rest))
}

pub fn parse_date(text: &str) -> Result<i32> {
    let (days, rest) = parse_date_part(text.trim(), text, "date")?;
    if !rest.trim().is_empty() {
        return Err(invalid_datetime("date", text));
    }
    checked_date(days)
        .map_err(|_| SqlError::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date out of range: \"{text}\"")))
}

/// `HH:MM[:SS[.ffffff]]` as microseconds (hours unbounded for intervals).
fn parse_time(t: &str, max_hour: i64) -> Option<i128> {
    let mut it = t.splitn(3, ':');
    let h: i64 = it.next()?.parse().ok()?;
    let mi_s = it.next()?;
    if mi_s.len() != 2 && mi_s.len() != 1 {
        return None;
    }
    let mi: i64 = mi_s.parse().ok()?;
    let sec_us = match it.next() {
        Some(s) => parse_seconds(s)?,
        None => 0,
    };
    if h < 0 || h > max_hour || mi > 59 || sec_us > 60 * US_PER_SEC {
        return None;
    }
    Some(h as i128 * US_PER_HOUR as i128 + (mi * US_PER_MIN + sec_us) as i128)
}

/// `SS[.ffffff]` as microseconds (fraction rounded to microseconds).
fn parse_seconds(s: &str) -> Option<i64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: i64 = int.parse().ok()?;
    let mut f: String = frac.chars().take(7).collect();
    while f.len() < 7 {
        f.push('0');
    }
    let tenths: i64 = f.parse().ok()?;
    secs.checked_mul(US_PER_SEC)?.checked_add((tenths + 5) / 10)
}

pub fn parse_timestamp(text: &str) -> Result<i64> {
    let t = text.trim();
    let (bc, t) = match t.strip_suffix(" BC").or_else(|| t.strip_suffix(" bc")) {
        Some(r) => (true, r),
        None => (false, t),
    };
    let (date, time) = match t.find([' ', 'T']) {
        Some(i) => (&t[..i], t[i + 1..].trim()),
        None => (t, ""),
    };
    let date = if bc { format!("{date} BC") } else { date.to_string() };
    let (days, rest) = parse_date_part(&date, text, "timestamp")?;
    if !rest.trim().is_empty() {
        return Err(invalid_datetime("timestamp", text));
    }
    let tod = if time.is_empty() {
        0
    } else {
        if !time.bytes().all(|b| b.is_ascii_digit() || b == b':' || b == b'.') || !time.contains(':') {
            return Err(invalid_datetime("timestamp", text));
        }
        match parse_time(time, 24) {
            Some(us) if us <= US_PER_DAY as i128 => us as i64,
            _ => return Err(field_out_of_range(text)),
        }
    };
    days.checked_mul(US_PER_DAY)
        .and_then(|d| d.checked_add(tod))
        .filter(|us| (super::datetime::TIMESTAMP_MIN_US..super::datetime::TIMESTAMP_END_US).contains(us))
        .ok_or_else(|| SqlError::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("timestamp out of range: \"{text}\"")))
}

/// An interval unit: (months, days, microseconds) per one.
fn interval_unit(word: &str) -> Option<(f64, f64, f64)> {
    let w = word.to_ascii_lowercase();
    Some(match w.as_str() {
        "millennium" | "millennia" | "millenniums" => (12_000.0, 0.0, 0.0),
        "century" | "centuries" => (1200.0, 0.0, 0.0),
        "decade" | "decades" => (120.0, 0.0, 0.0),
        "year" | "years" | "y" | "yr" | "yrs" => (12.0, 0.0, 0.0),
        "month" | "months" | "mon" | "mons" => (1.0, 0.0, 0.0),
        "week" | "weeks" | "w" => (0.0, 7.0, 0.0),
        "day" | "days" | "d" => (0.0, 1.0, 0.0),
        "hour" | "hours" | "h" | "hr" | "hrs" => (0.0, 0.0, US_PER_HOUR as f64),
        "minute" | "minutes" | "m" | "min" | "mins" => (0.0, 0.0, US_PER_MIN as f64),
        "second" | "seconds" | "s" | "sec" | "secs" => (0.0, 0.0, US_PER_SEC as f64),
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => (0.0, 0.0, 1000.0),
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" => (0.0, 0.0, 1.0),
        _ => return None,
    })
}

/// Accumulates an interval exactly; fractions cascade down as PostgreSQL's
/// `AdjustFractDays`/`AdjustFractSeconds` (1.5 months = 1 mon 15 days).
#[derive(Default)]
struct IntervalAcc {
    months: i128,
    days: i128,
    micros: i128,
}

impl IntervalAcc {
    /// Adds `n` (its text) of a unit worth (months, days, microseconds).
    fn add(&mut self, text: &str, (m, d, us): (f64, f64, f64)) -> Option<()> {
        if let Ok(i) = text.parse::<i64>() {
            self.months += i as i128 * m as i128;
            self.days += i as i128 * d as i128;
            self.micros += i as i128 * us as i128;
            return Some(());
        }
        let n: f64 = text.parse().ok().filter(|v: &f64| v.is_finite())?;
        let months = n * m;
        let whole_m = months.trunc();
        let days = n * d + (months - whole_m) * 30.0;
        let whole_d = days.trunc();
        let micros = n * us + (days - whole_d) * US_PER_DAY as f64;
        if whole_m.abs() > 1e12 || whole_d.abs() > 1e12 || micros.abs() > 1e20 {
            return None;
        }
        self.months += whole_m as i128;
        self.days += whole_d as i128;
        self.micros += micros.round() as i128;
        Some(())
    }

    fn finish(self, negate: bool, text: &str) -> Result<Interval> {
        let s = if negate { -1 } else { 1 };
        let out = || SqlError::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("interval out of range: \"{text}\""));
        Ok(Interval {
            months: i32::try_from(s * self.months).map_err(|_| out())?,
            days: i32::try_from(s * self.days).map_err(|_| out())?,
            micros: i64::try_from(s * self.micros).map_err(|_| out())?,
        })
    }
}

pub fn parse_interval(text: &str) -> Result<Interval> {
    let bad = || invalid_datetime("interval", text);
    let t = text.trim();
    let t = t.strip_prefix('@').unwrap_or(t).trim();
    let mut tokens: Vec<&str> = t.split_whitespace().collect();
    let ago = tokens.last().is_some_and(|w| w.eq_ignore_ascii_case("ago"));
    if ago {
        tokens.pop();
    }
    if tokens.is_empty() {
        return Err(bad());
    }
    let mut acc = IntervalAcc::default();
    let mut i = 0;
    while i < tokens.len() {
        let tok = tokens[i];
        if tok.contains(':') {
            let (neg, body) = match tok.as_bytes()[0] {
                b'-' => (true, &tok[1..]),
                b'+' => (false, &tok[1..]),
                _ => (false, tok),
            };
            let us = parse_time(body, i64::MAX / US_PER_HOUR).ok_or_else(bad)?;
            acc.micros += if neg { -us } else { us };
            i += 1;
            continue;
        }
        let (unit, step) = match tokens.get(i + 1).and_then(|w| interval_unit(w)) {
            Some(unit) => (unit, 2),
            // A number before a time is days (`1 2:03`).
            None if tokens.get(i + 1).is_some_and(|w| w.contains(':')) => ((0.0, 1.0, 0.0), 1),
            // A bare number is seconds, as in PostgreSQL.
            None if i + 1 == tokens.len() => ((0.0, 0.0, US_PER_SEC as f64), 1),
            None => return Err(bad()),
        };
        acc.add(tok, unit).ok_or_else(bad)?;
        i += step;
    }
    acc.finish(ago, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        let iv = |s| parse_interval(s).unwrap();
        assert_eq!(iv("1 year 2 mons"), Interval { months: 14, days: 0, micros: 0 });
        assert_eq!(iv("1.5 months"), Interval { months: 1, days: 15, micros: 0 });
        assert_eq!(
            iv("1 2:03"),
            Interval { months: 0, days: 0, micros: 0 }.clone_with(1, 2 * US_PER_HOUR + 3 * US_PER_MIN)
        );
        assert_eq!(iv("@ 1 day ago"), Interval { months: 0, days: -1, micros: 0 });
        assert_eq!(iv("10"), Interval { months: 0, days: 0, micros: 10 * US_PER_SEC });
        assert!(parse_interval("x").is_err());
    }

    impl Interval {
        fn clone_with(self, days: i32, micros: i64) -> Interval {
            Interval { days, micros, ..self }
        }
    }
}
