//! Calendar arithmetic for `date`, `timestamp` and `interval`.
//!
//! Dates are days since 1970-01-01 in the proleptic Gregorian calendar
//! (PostgreSQL's too, year 0 being 1 BC); timestamps are microseconds since
//! 1970-01-01 00:00:00 without a time zone. The conversions are Howard
//! Hinnant's `days_from_civil` / `civil_from_days`, exact for every i32 day.
//!
//! Month arithmetic follows PostgreSQL's `timestamp_pl_interval`: add the
//! months to (year, month), clamp the day to the new month's length
//! (`2000-01-31 + 1 month = 2000-02-29`), then add the days, then the
//! microseconds.
//!
//! ```text
//!  ts + interval{months, days, us}
//!    = civil(ts) ─► (y, m + months, min(d, month_len)) ─► + days ─► + us
//! ```

use super::Interval;
use crate::error::{Result, SqlError, SqlState};

pub const US_PER_SEC: i64 = 1_000_000;
pub const US_PER_MIN: i64 = 60 * US_PER_SEC;
pub const US_PER_HOUR: i64 = 60 * US_PER_MIN;
pub const US_PER_DAY: i64 = 24 * US_PER_HOUR;

/// Days since 1970-01-01 of a civil date (`year` 0 = 1 BC).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month, day) of days since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

pub fn is_leap(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(year) => 29,
        _ => 28,
    }
}

/// A date as the timestamp of its midnight (22008 past the timestamp range,
/// which ends in the year 294276).
pub fn date_to_timestamp(days: i32) -> Result<i64> {
    (days as i64)
        .checked_mul(US_PER_DAY)
        .ok_or_else(|| SqlError::new(SqlState::DATETIME_FIELD_OVERFLOW, "date out of range for timestamp"))
}

/// Splits a timestamp into (days since 1970, microseconds into the day).
pub fn split_timestamp(us: i64) -> (i64, i64) {
    (us.div_euclid(US_PER_DAY), us.rem_euclid(US_PER_DAY))
}

/// The error of a date or timestamp outside the supported range.
pub fn out_of_range(type_name: &str) -> SqlError {
    SqlError::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("{type_name} out of range"))
}

/// `days + months` with the day clamped to the month's end.
fn add_months_to_days(days: i64, months: i64) -> i64 {
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + (m as i64 - 1) + months;
    let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    days_from_civil(ny, nm, d.min(days_in_month(ny, nm)))
}

/// `timestamp + interval` (PostgreSQL's `timestamp_pl_interval`).
pub fn timestamp_add_interval(ts: i64, iv: Interval) -> Result<i64> {
    let (days, tod) = split_timestamp(ts);
    let days = if iv.months != 0 { add_months_to_days(days, iv.months as i64) } else { days };
    let days = days + iv.days as i64;
    days.checked_mul(US_PER_DAY)
        .and_then(|d| d.checked_add(tod))
        .and_then(|t| t.checked_add(iv.micros))
        .filter(|t| (TIMESTAMP_MIN_US..TIMESTAMP_END_US).contains(t))
        .ok_or_else(|| out_of_range("timestamp"))
}

/// `-interval`.
pub fn interval_neg(iv: Interval) -> Result<Interval> {
    match (iv.months.checked_neg(), iv.days.checked_neg(), iv.micros.checked_neg()) {
        (Some(months), Some(days), Some(micros)) => Ok(Interval { months, days, micros }),
        _ => Err(SqlError::overflow("interval")),
    }
}

/// Field-wise `a + b`, as PostgreSQL's `interval_pl`.
pub fn interval_add(a: Interval, b: Interval) -> Result<Interval> {
    match (a.months.checked_add(b.months), a.days.checked_add(b.days), a.micros.checked_add(b.micros)) {
        (Some(months), Some(days), Some(micros)) => Ok(Interval { months, days, micros }),
        _ => Err(SqlError::overflow("interval")),
    }
}

/// The comparison key of an interval: PostgreSQL orders intervals by their
/// span with 30-day months and 24-hour days (`1 mon = 30 days`).
pub fn interval_span_us(iv: Interval) -> i128 {
    (iv.months as i128 * 30 + iv.days as i128) * US_PER_DAY as i128 + iv.micros as i128
}

/// `timestamp - timestamp` as PostgreSQL's `timestamp_mi`: days and time
/// (`interval_justify_hours`), never months.
pub fn timestamp_diff(a: i64, b: i64) -> Result<Interval> {
    let us = a.checked_sub(b).ok_or_else(|| SqlError::overflow("interval"))?;
    let mut days = us / US_PER_DAY;
    let mut micros = us % US_PER_DAY;
    if days > 0 && micros < 0 {
        micros += US_PER_DAY;
        days -= 1;
    } else if days < 0 && micros > 0 {
        micros -= US_PER_DAY;
        days += 1;
    }
    let days = i32::try_from(days).map_err(|_| SqlError::overflow("interval"))?;
    Ok(Interval { months: 0, days, micros })
}

/// Smallest timestamp: 4714-11-24 BC 00:00:00 (PostgreSQL's lower bound).
pub const TIMESTAMP_MIN_US: i64 = -210_866_803_200_000_000;
/// One past the largest timestamp. PostgreSQL's bound (294277-01-01) counts
/// from 2000 and lies beyond i64 when counted from 1970, so ours is i64's.
pub const TIMESTAMP_END_US: i64 = i64::MAX;
/// Smallest date (4714-11-24 BC) and one past the largest (5874898-01-01).
pub const DATE_MIN_DAYS: i64 = -2_440_588;
pub const DATE_END_DAYS: i64 = 2_145_042_906;

/// A date in days, checked against PostgreSQL's range.
pub fn checked_date(days: i64) -> Result<i32> {
    if (DATE_MIN_DAYS..DATE_END_DAYS).contains(&days) { Ok(days as i32) } else { Err(out_of_range("date")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trips() {
        for d in [-800_000i64, -719_468, -1, 0, 1, 10_957, 11_016, 2_000_000] {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn month_end_clamps() {
        let jan31 = days_from_civil(2000, 1, 31) * US_PER_DAY;
        let r = timestamp_add_interval(jan31, Interval { months: 1, days: 0, micros: 0 }).unwrap();
        assert_eq!(civil_from_days(r / US_PER_DAY), (2000, 2, 29));
        let mar31 = days_from_civil(2001, 3, 31) * US_PER_DAY;
        let r = timestamp_add_interval(mar31, Interval { months: -1, days: 0, micros: 0 }).unwrap();
        assert_eq!(civil_from_days(r / US_PER_DAY), (2001, 2, 28));
    }
}
