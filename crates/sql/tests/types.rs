//! Text output and input of every SQL type: PostgreSQL's spellings, and
//! output → input round trips (property tests).

use ndpdb_sql::SqlState;
use ndpdb_sql::types::datetime::{DATE_END_DAYS, DATE_MIN_DAYS, TIMESTAMP_MIN_US};
use ndpdb_sql::types::{DataType, Interval, Value, parse_value, pg_text};
use proptest::prelude::*;

fn parse(text: &str, ty: DataType) -> Value {
    parse_value(text, &ty).unwrap_or_else(|e| panic!("{text:?} as {ty}: {e}"))
}

fn err(text: &str, ty: DataType) -> (SqlState, String) {
    let e = parse_value(text, &ty).expect_err(text);
    (e.code, e.message)
}

#[test]
fn output_spellings_are_postgresqls() {
    let cases: Vec<(Value, &str)> = vec![
        (Value::Bool(true), "t"),
        (Value::Bool(false), "f"),
        (Value::Numeric { value: 1250, scale: 2 }, "12.50"),
        (Value::Numeric { value: -5, scale: 3 }, "-0.005"),
        (Value::Float64(1e15), "1e+15"),
        (Value::Float64(1e14), "100000000000000"),
        (Value::Float64(123456789012345678.0), "1.2345678901234568e+17"),
        (Value::Float64(0.0001), "0.0001"),
        (Value::Float64(0.00001), "1e-05"),
        (Value::Float64(f64::NAN), "NaN"),
        (Value::Float64(f64::NEG_INFINITY), "-Infinity"),
        (Value::Float64(-0.0), "-0"),
        (Value::Float64(0.1 + 0.2), "0.30000000000000004"),
        (parse("1998-12-01", DataType::Date), "1998-12-01"),
        (parse("0001-12-31 BC", DataType::Date), "0001-12-31 BC"),
        (parse("1998-12-01 10:00:00.5", DataType::Timestamp), "1998-12-01 10:00:00.5"),
        (parse("1 year 2 mons", DataType::Interval), "1 year 2 mons"),
        (parse("-1 year", DataType::Interval), "-1 years"),
        (parse("-1 sec", DataType::Interval), "-00:00:01"),
        (parse("1.5 days", DataType::Interval), "1 day 12:00:00"),
        (parse("-1 days +02:00:00", DataType::Interval), "-1 days +02:00:00"),
        (parse("100000 hours", DataType::Interval), "100000:00:00"),
        (parse("0", DataType::Interval), "00:00:00"),
        (parse("3 month", DataType::Interval), "3 mons"),
        (parse("@ 1 day ago", DataType::Interval), "-1 days"),
        (parse("ab", DataType::Char(4)), "ab  "),
    ];
    for (v, want) in cases {
        assert_eq!(pg_text(&v), want, "{v:?}");
    }
}

#[test]
fn input_accepts_postgresqls_spellings() {
    for t in ["t", "TRUE", " yes ", "on", "1", "tr", "y"] {
        assert_eq!(parse(t, DataType::Bool), Value::Bool(true), "{t}");
    }
    for t in ["f", "false", "no", "off", "0", "of", "n"] {
        assert_eq!(parse(t, DataType::Bool), Value::Bool(false), "{t}");
    }
    assert_eq!(parse(" 12 ", DataType::Int32), Value::Int32(12));
    assert_eq!(parse("+5", DataType::Int16), Value::Int16(5));
    assert_eq!(
        parse("1.5e2", DataType::Numeric { precision: None, scale: 1 }),
        Value::Numeric { value: 1500, scale: 1 }
    );
    assert_eq!(
        parse("2.345", DataType::Numeric { precision: Some(5), scale: 2 }),
        Value::Numeric { value: 235, scale: 2 }
    );
    assert_eq!(
        parse("-2.345", DataType::Numeric { precision: Some(5), scale: 2 }),
        Value::Numeric { value: -235, scale: 2 }
    );
    assert_eq!(parse("19981201", DataType::Date), parse("1998-12-01", DataType::Date));
    assert_eq!(parse("1998-12-01T10:00:00", DataType::Timestamp), parse("1998-12-01 10:00", DataType::Timestamp));
    assert_eq!(parse("90 days", DataType::Interval), Value::Interval(Interval { months: 0, days: 90, micros: 0 }));
    assert_eq!(parse("1 week", DataType::Interval), Value::Interval(Interval { months: 0, days: 7, micros: 0 }));
    assert_eq!(parse("1.5 months", DataType::Interval), Value::Interval(Interval { months: 1, days: 15, micros: 0 }));
    assert_eq!(parse("Infinity", DataType::Float64), Value::Float64(f64::INFINITY));
    assert_eq!(parse("abc  ", DataType::Varchar(Some(3))), Value::Text("abc".into()));
}

#[test]
fn input_errors_are_postgresqls() {
    let cases: Vec<(&str, DataType, &str, &str)> = vec![
        ("abc", DataType::Int32, "22P02", "invalid input syntax for type integer: \"abc\""),
        ("1.5", DataType::Int32, "22P02", "invalid input syntax for type integer: \"1.5\""),
        ("70000", DataType::Int16, "22003", "value \"70000\" is out of range for type smallint"),
        ("99999999999", DataType::Int32, "22003", "value \"99999999999\" is out of range for type integer"),
        ("x", DataType::Bool, "22P02", "invalid input syntax for type boolean: \"x\""),
        ("x", DataType::Numeric { precision: None, scale: 0 }, "22P02", "invalid input syntax for type numeric: \"x\""),
        ("123.456", DataType::Numeric { precision: Some(4), scale: 2 }, "22003", "numeric field overflow"),
        ("x", DataType::Float64, "22P02", "invalid input syntax for type double precision: \"x\""),
        ("1e400", DataType::Float64, "22003", "\"1e400\" is out of range for type double precision"),
        ("x", DataType::Date, "22007", "invalid input syntax for type date: \"x\""),
        ("2020-13-01", DataType::Date, "22008", "date/time field value out of range: \"2020-13-01\""),
        ("2020-02-30", DataType::Date, "22008", "date/time field value out of range: \"2020-02-30\""),
        ("2020-01-01 25:00", DataType::Timestamp, "22008", "date/time field value out of range: \"2020-01-01 25:00\""),
        ("x", DataType::Timestamp, "22007", "invalid input syntax for type timestamp: \"x\""),
        ("x", DataType::Interval, "22007", "invalid input syntax for type interval: \"x\""),
        ("abcd", DataType::Varchar(Some(3)), "22001", "value too long for type character varying(3)"),
        ("abcd", DataType::Char(3), "22001", "value too long for type character(3)"),
    ];
    for (text, ty, code, msg) in cases {
        assert_eq!(err(text, ty), (SqlState(code), msg.to_string()), "{text:?} as {ty}");
    }
    let e = parse_value("123.456", &DataType::Numeric { precision: Some(4), scale: 2 }).unwrap_err();
    assert_eq!(
        e.detail.as_deref(),
        Some("A field with precision 4, scale 2 must round to an absolute value less than 10^2.")
    );
}

fn round_trip(v: &Value, ty: DataType) -> Result<(), TestCaseError> {
    let text = pg_text(v);
    let back = parse_value(&text, &ty).map_err(|e| TestCaseError::fail(format!("{text:?} as {ty}: {e}")))?;
    prop_assert_eq!(pg_text(&back), text.clone(), "{:?}", v);
    if !matches!(v, Value::Float64(f) if f.is_nan()) {
        prop_assert_eq!(&back, v, "{}", text);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn integers_round_trip(a: i16, b: i32, c: i64) {
        round_trip(&Value::Int16(a), DataType::Int16)?;
        round_trip(&Value::Int32(b), DataType::Int32)?;
        round_trip(&Value::Int64(c), DataType::Int64)?;
    }

    #[test]
    fn numerics_round_trip(v in -(10i128.pow(37))..10i128.pow(37), scale in 0u8..=20) {
        round_trip(&Value::Numeric { value: v, scale }, DataType::Numeric { precision: None, scale })?;
    }

    #[test]
    fn floats_round_trip(bits: u64) {
        round_trip(&Value::Float64(f64::from_bits(bits)), DataType::Float64)?;
    }

    #[test]
    fn bools_and_text_round_trip(b: bool, s in "\\PC{0,20}") {
        round_trip(&Value::Bool(b), DataType::Bool)?;
        round_trip(&Value::Text(s), DataType::Text)?;
    }

    #[test]
    fn dates_and_timestamps_round_trip(d in DATE_MIN_DAYS..DATE_END_DAYS, t in TIMESTAMP_MIN_US..i64::MAX) {
        round_trip(&Value::Date(d as i32), DataType::Date)?;
        round_trip(&Value::Timestamp(t), DataType::Timestamp)?;
    }

    #[test]
    fn intervals_round_trip(months: i32, days: i32, micros: i64) {
        round_trip(&Value::Interval(Interval { months, days, micros }), DataType::Interval)?;
    }
}

#[test]
fn extremes_round_trip() {
    let ivs = [
        Interval { months: i32::MIN, days: i32::MIN, micros: i64::MIN },
        Interval { months: i32::MAX, days: i32::MAX, micros: i64::MAX },
        Interval { months: -1, days: 1, micros: -1 },
    ];
    for iv in ivs {
        round_trip(&Value::Interval(iv), DataType::Interval).unwrap();
    }
    round_trip(&Value::Date(DATE_MIN_DAYS as i32), DataType::Date).unwrap();
    round_trip(&Value::Date((DATE_END_DAYS - 1) as i32), DataType::Date).unwrap();
    round_trip(&Value::Timestamp(TIMESTAMP_MIN_US), DataType::Timestamp).unwrap();
    round_trip(
        &Value::Numeric { value: 10i128.pow(38) - 1, scale: 38 },
        DataType::Numeric { precision: None, scale: 38 },
    )
    .unwrap();
}
