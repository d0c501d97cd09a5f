//! `EXTRACT` / `date_part` and `date_trunc` on dates, timestamps and
//! intervals.
//!
//! EXTRACT computes PostgreSQL's (≥ 14) numeric value exactly (`second`
//! with 6 decimals, `milliseconds` with 3, `epoch` of a timestamp or
//! interval with 6, the rest whole), then converts it to the expression's
//! type: `date_part` is float8, EXTRACT numeric at the scale
//! [`extract_scale`] gives (what the binder should choose to print as
//! PostgreSQL does). Weeks and `isoyear` are ISO 8601's; `dow` counts from
//! Sunday = 0; years BC are negative (year 0 does not exist).

use crate::error::{Result, SqlError, SqlState};
use crate::types::datetime::{
    US_PER_DAY, US_PER_HOUR, US_PER_MIN, US_PER_SEC, civil_from_days, date_to_timestamp, days_from_civil,
    split_timestamp,
};
use crate::types::ops::{CastMode, cast_value};
use crate::types::{DataType, Interval, Value};

/// The scale of PostgreSQL's numeric EXTRACT result for `field` of a value
/// of type `arg`.
pub fn extract_scale(field: &str, arg: &DataType) -> u8 {
    match (field.to_ascii_lowercase().as_str(), arg) {
        ("second", DataType::Timestamp | DataType::Interval) => 6,
        ("epoch", DataType::Timestamp | DataType::Interval) => 6,
        ("milliseconds", DataType::Timestamp | DataType::Interval) => 3,
        _ => 0,
    }
}

fn unknown_unit(field: &str, ty: &str) -> SqlError {
    SqlError::new(SqlState::INVALID_PARAMETER_VALUE, format!("unit \"{field}\" not recognized for type {ty}"))
}

/// ISO 8601 (year, week) of a day.
fn iso_week(days: i64) -> (i64, i64) {
    let dow_iso = |d: i64| (d + 3).rem_euclid(7) + 1; // 1970-01-01 was a Thursday (4)
    // Thursday of this week decides the ISO year.
    let thursday = days - dow_iso(days) + 4;
    let (iy, _, _) = civil_from_days(thursday);
    let jan1 = days_from_civil(iy, 1, 1);
    (iy, (thursday - jan1) / 7 + 1)
}

/// (value, scale) of `field` of a timestamp.
fn timestamp_field(field: &str, us: i64, is_date: bool) -> Result<(i128, u8)> {
    let (days, tod) = split_timestamp(us);
    let (y, m, d) = civil_from_days(days);
    let year = if y <= 0 { y - 1 } else { y };
    let sec_us = (tod % US_PER_MIN) as i128;
    let whole = |v: i64| Ok((v as i128, 0));
    let ty_name = if is_date { "date" } else { "timestamp without time zone" };
    match field {
        "microseconds" | "milliseconds" | "second" | "minute" | "hour" if is_date => {
            Err(SqlError::unsupported(format!("unit \"{field}\" not supported for type date")))
        }
        "microseconds" => Ok((sec_us, 0)),
        "milliseconds" => Ok((sec_us, 3)),
        "second" => Ok((sec_us, 6)),
        "minute" => whole(tod / US_PER_MIN % 60),
        "hour" => whole(tod / US_PER_HOUR),
        "day" => whole(d as i64),
        "month" => whole(m as i64),
        "quarter" => whole((m as i64 - 1) / 3 + 1),
        "year" => whole(year),
        "decade" => whole(y.div_euclid(10)),
        "century" => whole(if y > 0 { (y + 99) / 100 } else { -((99 - (y - 1)) / 100) }),
        "millennium" => whole(if y > 0 { (y + 999) / 1000 } else { -((999 - (y - 1)) / 1000) }),
        "dow" => whole((days + 4).rem_euclid(7)),
        "isodow" => whole((days + 3).rem_euclid(7) + 1),
        "doy" => whole(days - days_from_civil(y, 1, 1) + 1),
        "week" => whole(iso_week(days).1),
        "isoyear" => whole(iso_week(days).0),
        "julian" if is_date => whole(days + 2_440_588),
        "epoch" if is_date => whole(days * 86_400),
        "epoch" => Ok((us as i128, 6)),
        _ => Err(unknown_unit(field, ty_name)),
    }
}

fn interval_field(field: &str, iv: Interval) -> Result<(i128, u8)> {
    let whole = |v: i64| Ok((v as i128, 0));
    let sec_us = (iv.micros % US_PER_MIN) as i128;
    match field {
        "microseconds" => Ok((sec_us, 0)),
        "milliseconds" => Ok((sec_us, 3)),
        "second" => Ok((sec_us, 6)),
        "minute" => whole(iv.micros / US_PER_MIN % 60),
        "hour" => whole(iv.micros / US_PER_HOUR),
        "day" => whole(iv.days as i64),
        "month" => whole(iv.months as i64 % 12),
        "quarter" => whole(iv.months as i64 % 12 / 3 + 1),
        "year" => whole(iv.months as i64 / 12),
        "decade" => whole(iv.months as i64 / 120),
        "century" => whole(iv.months as i64 / 1200),
        "millennium" => whole(iv.months as i64 / 12_000),
        "epoch" => {
            // PostgreSQL: a year is 365.25 days, a month 30 days.
            let years = iv.months as i128 / 12;
            let months = iv.months as i128 % 12;
            let us = years * 36_525 * US_PER_DAY as i128 / 100
                + months * 30 * US_PER_DAY as i128
                + iv.days as i128 * US_PER_DAY as i128
                + iv.micros as i128;
            Ok((us, 6))
        }
        _ => Err(unknown_unit(field, "interval")),
    }
}

/// `EXTRACT(field FROM v)` as a value of `ty`.
pub(super) fn extract(field: &str, v: &Value, ty: &DataType) -> Result<Value> {
    let f = field.to_ascii_lowercase();
    let (value, scale) = match v {
        Value::Date(d) => timestamp_field(&f, date_to_timestamp(*d)?, true)?,
        Value::Timestamp(t) => timestamp_field(&f, *t, false)?,
        Value::Interval(iv) => interval_field(&f, *iv)?,
        other => return Err(SqlError::internal(format!("EXTRACT from {other:?}"))),
    };
    let num = Value::Numeric { value, scale };
    cast_value(&num, &num.data_type(), ty, CastMode::Explicit)
}

/// `date_trunc(field, v)`: a timestamp (an interval for an interval).
pub(super) fn date_trunc(field: &str, v: &Value) -> Result<Value> {
    let f = field.to_ascii_lowercase();
    let us = match v {
        Value::Date(d) => date_to_timestamp(*d)?,
        Value::Timestamp(t) => *t,
        Value::Interval(iv) => return trunc_interval(&f, *iv),
        other => return Err(SqlError::internal(format!("date_trunc of {other:?}"))),
    };
    let (days, tod) = split_timestamp(us);
    let (y, m, _) = civil_from_days(days);
    let day_start = |d: i64| Value::Timestamp(d * US_PER_DAY);
    let trunc_tod = |unit: i64| Value::Timestamp(days * US_PER_DAY + tod / unit * unit);
    let year_start = |years: i64| {
        // Decades, centuries, millennia start at years ending in 0 / 01 / 001.
        let y0 = if years == 10 { y.div_euclid(10) * 10 } else { (y - 1).div_euclid(years) * years + 1 };
        day_start(days_from_civil(y0, 1, 1))
    };
    Ok(match f.as_str() {
        "microseconds" => Value::Timestamp(us),
        "milliseconds" => trunc_tod(1000),
        "second" => trunc_tod(US_PER_SEC),
        "minute" => trunc_tod(US_PER_MIN),
        "hour" => trunc_tod(US_PER_HOUR),
        "day" => day_start(days),
        "week" => day_start(days - (days + 3).rem_euclid(7)),
        "month" => day_start(days_from_civil(y, m, 1)),
        "quarter" => day_start(days_from_civil(y, (m - 1) / 3 * 3 + 1, 1)),
        "year" => day_start(days_from_civil(y, 1, 1)),
        "decade" => year_start(10),
        "century" => year_start(100),
        "millennium" => year_start(1000),
        _ => return Err(unknown_unit(field, "timestamp without time zone")),
    })
}

fn trunc_interval(f: &str, iv: Interval) -> Result<Value> {
    let t = |unit: i64| Interval { micros: iv.micros / unit * unit, ..iv };
    Ok(Value::Interval(match f {
        "microseconds" => iv,
        "milliseconds" => t(1000),
        "second" => t(US_PER_SEC),
        "minute" => t(US_PER_MIN),
        "hour" => t(US_PER_HOUR),
        "day" => Interval { micros: 0, ..iv },
        "month" => Interval { months: iv.months, days: 0, micros: 0 },
        "quarter" => Interval { months: iv.months / 3 * 3, days: 0, micros: 0 },
        "year" => Interval { months: iv.months / 12 * 12, days: 0, micros: 0 },
        _ => return Err(unknown_unit(f, "interval")),
    }))
}
