//! PostgreSQL's text output of every type (what psql prints, what the
//! wire protocol's text format sends, what the `.slt` files hold).
//!
//! ```text
//!  boolean    t / f                     numeric    12.50 (its scale)
//!  float8     shortest round trip       date       1998-12-01, 0001-12-31 BC
//!             (1e+15, 1e-05, NaN)       timestamp  1998-12-01 10:00:00.5
//!  interval   1 year 2 mons 3 days 01:00:00, -00:00:01, 00:00:00
//! ```
//!
//! float8 follows PostgreSQL >= 12 (`extra_float_digits = 1`): the
//! shortest digits that read back to the same double, printed like `%g`
//! with 15 as the precision that switches to exponent form
//! (`e+15` and above, `e-05` and below).

use super::datetime::{US_PER_HOUR, US_PER_MIN, US_PER_SEC, civil_from_days, split_timestamp};
use super::{Interval, Value, numeric};

/// The text PostgreSQL prints for a value (`NULL` prints as the empty
/// string here; clients show their own NULL marker).
pub fn pg_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(b) => (if *b { "t" } else { "f" }).into(),
        Value::Int16(v) => v.to_string(),
        Value::Int32(v) => v.to_string(),
        Value::Int64(v) => v.to_string(),
        Value::Numeric { value, scale } => numeric::format(*value, *scale),
        Value::Float64(f) => format_float8(*f),
        Value::Date(d) => format_date(*d as i64),
        Value::Timestamp(us) => format_timestamp(*us),
        Value::Interval(iv) => format_interval(*iv),
        Value::Text(s) => s.clone(),
    }
}

/// float8out: shortest round-trip digits, `%g`-style layout.
pub fn format_float8(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Rust's `{:e}` prints the shortest round-trip digits: d.ddddde±x.
    let sci = format!("{:e}", f);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-4..15).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}e{esign}{:02}", exp.abs());
    }
    if exp < 0 {
        return format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize));
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        format!("{sign}{digits}{}", "0".repeat(int_len - digits.len()))
    } else {
        let (int, frac) = digits.split_at(int_len);
        format!("{sign}{int}.{frac}")
    }
}

/// `YYYY-MM-DD`, years before 1 as `YYYY-MM-DD BC` (year 0 is 1 BC).
pub fn format_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    if y <= 0 { format!("{:04}-{m:02}-{d:02} BC", 1 - y) } else { format!("{y:04}-{m:02}-{d:02}") }
}

/// `HH:MM:SS[.ffffff]` with trailing zeros of the fraction dropped.
fn format_time(us: i64) -> String {
    let (h, rest) = (us / US_PER_HOUR, us % US_PER_HOUR);
    let (mi, rest) = (rest / US_PER_MIN, rest % US_PER_MIN);
    let (s, frac) = (rest / US_PER_SEC, rest % US_PER_SEC);
    let mut out = format!("{h:02}:{mi:02}:{s:02}");
    if frac != 0 {
        let f = format!(".{frac:06}");
        out.push_str(f.trim_end_matches('0'));
    }
    out
}

pub fn format_timestamp(us: i64) -> String {
    let (days, tod) = split_timestamp(us);
    let (y, m, d) = civil_from_days(days);
    let time = format_time(tod);
    if y <= 0 { format!("{:04}-{m:02}-{d:02} {time} BC", 1 - y) } else { format!("{y:04}-{m:02}-{d:02} {time}") }
}

/// PostgreSQL's `postgres` IntervalStyle: `1 year 2 mons 3 days 04:05:06`
/// (`EncodeInterval`: a positive field after a negative one gets a `+`).
pub fn format_interval(iv: Interval) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut is_before = false;
    let fields = [(iv.months as i64 / 12, "year"), (iv.months as i64 % 12, "mon"), (iv.days as i64, "day")];
    for (n, unit) in fields {
        if n != 0 {
            let plus = if is_before && n > 0 { "+" } else { "" };
            parts.push(format!("{plus}{n} {unit}{}", if n != 1 { "s" } else { "" }));
            is_before = n < 0;
        }
    }
    if iv.micros != 0 || parts.is_empty() {
        let sign = if iv.micros < 0 {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        parts.push(format!("{sign}{}", format_time_abs(iv.micros.unsigned_abs())));
    }
    parts.join(" ")
}

fn format_time_abs(us: u64) -> String {
    let h = us / US_PER_HOUR as u64;
    format!("{h:02}{}", &format_time((us % US_PER_HOUR as u64) as i64)[2..])
}
