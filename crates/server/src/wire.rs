//! Values on the wire: the type OIDs a client sees for ndpdb's types, and
//! the text and binary formats of values in both directions.
//!
//! Text is PostgreSQL's output format (`types::format::pg_text`) and input
//! syntax (`types::parse::parse_value`), so a text result is byte for byte
//! what PostgreSQL sends. Binary follows PostgreSQL's `*send`/`*recv`
//! functions:
//!
//! ```text
//!  type               binary value (big endian)
//!  bool               1 byte, 0 or 1
//!  int2 / int4 / int8 2 / 4 / 8 bytes, two's complement
//!  float8             8 bytes, IEEE 754
//!  date               int4, days since 2000-01-01
//!  timestamp          int8, microseconds since 2000-01-01 00:00:00
//!  interval           int8 microseconds, int4 days, int4 months
//!  numeric            int2 ndigits, int2 weight, int2 sign (0x0000 +,
//!                     0x4000 -), int2 dscale, ndigits × int2 base-10000
//!                     digits, most significant first
//!  text, varchar,     the UTF-8 bytes
//!  bpchar
//! ```
//!
//! Decoders never trust the client's bytes: a wrong length, invalid UTF-8
//! or a digit out of range is a `22P03` (invalid_binary_representation) or
//! the type's own `22P02`, never a panic.

use ndpdb_sql::error::{SqlError, SqlState};
use ndpdb_sql::types::format::pg_text;
use ndpdb_sql::types::parse::parse_value;
use ndpdb_sql::types::{DataType, Interval, Value};
use pgwire::api::Type;

/// Days from 1970-01-01 (ndpdb's epoch) to 2000-01-01 (PostgreSQL's).
const PG_EPOCH_DAYS: i64 = 10_957;
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS * 86_400_000_000;
const INVALID_BINARY: SqlState = SqlState("22P03");

/// The PostgreSQL type a column of `ty` is reported as.
pub fn pg_type(ty: &DataType) -> Type {
    match ty {
        DataType::Bool => Type::BOOL,
        DataType::Int16 => Type::INT2,
        DataType::Int32 => Type::INT4,
        DataType::Int64 => Type::INT8,
        DataType::Numeric { .. } => Type::NUMERIC,
        DataType::Float64 => Type::FLOAT8,
        DataType::Date => Type::DATE,
        DataType::Timestamp => Type::TIMESTAMP,
        DataType::Interval => Type::INTERVAL,
        DataType::Char(_) => Type::BPCHAR,
        DataType::Varchar(_) => Type::VARCHAR,
        DataType::Text | DataType::Unknown => Type::TEXT,
    }
}

/// The ndpdb type a client's declared parameter type names (None: a type
/// ndpdb has no column type for; the statement's own inference decides).
pub fn data_type_of(t: &Type) -> Option<DataType> {
    Some(match *t {
        Type::BOOL => DataType::Bool,
        Type::INT2 => DataType::Int16,
        Type::INT4 => DataType::Int32,
        Type::INT8 => DataType::Int64,
        Type::NUMERIC => DataType::Numeric { precision: None, scale: 0 },
        Type::FLOAT8 | Type::FLOAT4 => DataType::Float64,
        Type::DATE => DataType::Date,
        Type::TIMESTAMP => DataType::Timestamp,
        Type::INTERVAL => DataType::Interval,
        Type::BPCHAR => DataType::Char(1),
        Type::VARCHAR => DataType::Varchar(None),
        Type::TEXT => DataType::Text,
        _ => return None,
    })
}

/// One value in the text format (None: NULL).
pub fn text(v: &Value) -> Option<Vec<u8>> {
    if v.is_null() { None } else { Some(pg_text(v).into_bytes()) }
}

/// One value in the binary format (None: NULL).
pub fn binary(v: &Value) -> Option<Vec<u8>> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => vec![*b as u8],
        Value::Int16(x) => x.to_be_bytes().to_vec(),
        Value::Int32(x) => x.to_be_bytes().to_vec(),
        Value::Int64(x) => x.to_be_bytes().to_vec(),
        Value::Float64(f) => f.to_be_bytes().to_vec(),
        Value::Date(d) => ((*d as i64 - PG_EPOCH_DAYS) as i32).to_be_bytes().to_vec(),
        Value::Timestamp(us) => (us - PG_EPOCH_MICROS).to_be_bytes().to_vec(),
        Value::Interval(iv) => {
            let mut b = iv.micros.to_be_bytes().to_vec();
            b.extend_from_slice(&iv.days.to_be_bytes());
            b.extend_from_slice(&iv.months.to_be_bytes());
            b
        }
        Value::Numeric { value, scale } => numeric_send(*value, *scale),
        Value::Text(s) => s.as_bytes().to_vec(),
    })
}

/// PostgreSQL's numeric_send for `value` × 10^-`scale`.
fn numeric_send(value: i128, scale: u8) -> Vec<u8> {
    let negative = value < 0;
    let mut digits_text = value.unsigned_abs().to_string();
    // Pad the fraction to whole base-10000 groups and the integer part too.
    let scale = scale as usize;
    if digits_text.len() <= scale {
        digits_text = "0".repeat(scale + 1 - digits_text.len()) + &digits_text;
    }
    let (int_part, frac_part) = digits_text.split_at(digits_text.len() - scale);
    let int_pad = (4 - int_part.len() % 4) % 4;
    let frac_pad = (4 - frac_part.len() % 4) % 4;
    let int_s = "0".repeat(int_pad) + int_part;
    let frac_s = frac_part.to_string() + &"0".repeat(frac_pad);
    let mut digits: Vec<i16> = int_s
        .as_bytes()
        .chunks(4)
        .chain(frac_s.as_bytes().chunks(4))
        .map(|c| c.iter().fold(0i16, |a, d| a * 10 + (d - b'0') as i16))
        .collect();
    let mut weight = (int_s.len() / 4) as i16 - 1;
    while digits.first() == Some(&0) && !digits.is_empty() {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    let mut out = Vec::with_capacity(8 + 2 * digits.len());
    out.extend_from_slice(&(digits.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&(if negative && !digits.is_empty() { 0x4000u16 } else { 0 }).to_be_bytes());
    out.extend_from_slice(&(scale as i16).to_be_bytes());
    for d in digits {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out
}

/// A parameter sent in the text format, read as `ty`.
pub fn param_from_text(bytes: &[u8], ty: &DataType) -> Result<Value, SqlError> {
    let s = std::str::from_utf8(bytes).map_err(|_| {
        SqlError::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\" in a parameter")
            .with_hint("Send parameters as UTF-8 (client_encoding is UTF8).")
    })?;
    parse_value(s, ty)
}

/// A parameter sent in the binary format of `sent` (the type the client
/// declared, or `ty` when it declared none), read as `ty`.
pub fn param_from_binary(bytes: &[u8], sent: &Type, ty: &DataType) -> Result<Value, SqlError> {
    let sent_ty = data_type_of(sent).unwrap_or(*ty);
    let v = decode_binary(bytes, &sent_ty, sent)?;
    if std::mem::discriminant(&sent_ty) == std::mem::discriminant(ty) || v.is_null() {
        return Ok(v);
    }
    // A different declared type: go through the text form, as a cast would.
    parse_value(&pg_text(&v), ty)
}

fn fixed<const N: usize>(bytes: &[u8], type_name: &str) -> Result<[u8; N], SqlError> {
    bytes.try_into().map_err(|_| {
        SqlError::new(
            INVALID_BINARY,
            format!("incorrect binary data format in bind parameter: {type_name} needs {N} bytes, got {}", bytes.len()),
        )
    })
}

fn decode_binary(b: &[u8], ty: &DataType, sent: &Type) -> Result<Value, SqlError> {
    Ok(match ty {
        DataType::Bool => Value::Bool(fixed::<1>(b, "bool")?[0] != 0),
        DataType::Int16 => Value::Int16(i16::from_be_bytes(fixed(b, "int2")?)),
        DataType::Int32 => Value::Int32(i32::from_be_bytes(fixed(b, "int4")?)),
        DataType::Int64 => Value::Int64(i64::from_be_bytes(fixed(b, "int8")?)),
        DataType::Float64 if *sent == Type::FLOAT4 => Value::Float64(f32::from_be_bytes(fixed(b, "float4")?) as f64),
        DataType::Float64 => Value::Float64(f64::from_be_bytes(fixed(b, "float8")?)),
        DataType::Date => Value::Date((i32::from_be_bytes(fixed(b, "date")?) as i64 + PG_EPOCH_DAYS) as i32),
        DataType::Timestamp => Value::Timestamp(
            i64::from_be_bytes(fixed(b, "timestamp")?)
                .checked_add(PG_EPOCH_MICROS)
                .ok_or_else(|| SqlError::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range"))?,
        ),
        DataType::Interval => {
            let a: [u8; 16] = fixed(b, "interval")?;
            Value::Interval(Interval {
                micros: i64::from_be_bytes(a[0..8].try_into().unwrap_or_default()),
                days: i32::from_be_bytes(a[8..12].try_into().unwrap_or_default()),
                months: i32::from_be_bytes(a[12..16].try_into().unwrap_or_default()),
            })
        }
        DataType::Numeric { .. } => numeric_recv(b)?,
        DataType::Char(_) | DataType::Varchar(_) | DataType::Text | DataType::Unknown => {
            return param_from_text(b, ty);
        }
    })
}

/// PostgreSQL's numeric_recv, into a value of scale dscale.
fn numeric_recv(b: &[u8]) -> Result<Value, SqlError> {
    let bad = |what: &str| SqlError::new(INVALID_BINARY, format!("invalid numeric in bind parameter: {what}"));
    if b.len() < 8 {
        return Err(bad("shorter than its 8-byte header"));
    }
    let word = |i: usize| i16::from_be_bytes([b[i], b[i + 1]]);
    let (ndigits, weight, sign, dscale) = (word(0), word(2), word(4) as u16, word(6));
    if ndigits < 0 || b.len() != 8 + 2 * ndigits as usize {
        return Err(bad("length does not match its digit count"));
    }
    if sign == 0xC000 {
        return Err(SqlError::new(SqlState::FEATURE_NOT_SUPPORTED, "numeric NaN is not supported by ndpdb"));
    }
    if !(0..=38).contains(&dscale) || (sign != 0 && sign != 0x4000) {
        return Err(bad("sign or scale out of range"));
    }
    let mut text = String::new();
    for i in 0..ndigits as usize {
        let d = word(8 + 2 * i);
        if !(0..10_000).contains(&d) {
            return Err(bad("a digit is not in 0..9999"));
        }
        text.push_str(&format!("{d:04}"));
    }
    // The digits stand for d0 × 10000^weight + ...: place the decimal point.
    let int_digits = 4 * (weight as i64 + 1);
    let num = if int_digits <= 0 {
        format!("0.{}{}", "0".repeat((-int_digits) as usize), text)
    } else if int_digits as usize >= text.len() {
        format!("{}{}", text, "0".repeat(int_digits as usize - text.len()))
    } else {
        format!("{}.{}", &text[..int_digits as usize], &text[int_digits as usize..])
    };
    let num = if sign == 0x4000 { format!("-{num}") } else { num };
    let v = if text.is_empty() { "0".to_string() } else { num };
    parse_value(&v, &DataType::Numeric { precision: None, scale: dscale as u8 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(value: i128, scale: u8) -> Value {
        Value::Numeric { value, scale }
    }

    #[test]
    fn numeric_round_trips_through_the_binary_format() {
        for (v, s) in
            [(0, 0), (1, 0), (-1, 2), (123456789, 3), (10000, 0), (5, 4), (-99990001, 4), (i64::MAX as i128, 2)]
        {
            let bytes = binary(&num(v, s)).unwrap();
            assert_eq!(numeric_recv(&bytes).unwrap(), num(v, s), "{v} scale {s}");
        }
    }

    #[test]
    fn numeric_send_matches_postgresql_for_a_known_value() {
        // SELECT numeric_send(12345.678::numeric) = 0003 0001 0000 0003 0001 0929 1a7c
        let bytes = numeric_send(12_345_678, 3);
        assert_eq!(bytes, [0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]);
    }

    #[test]
    fn bad_binary_parameters_are_errors() {
        assert_eq!(param_from_binary(&[1, 2, 3], &Type::INT4, &DataType::Int32).unwrap_err().code.0, "22P03");
        assert!(numeric_recv(&[0, 9, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(numeric_recv(&[0, 1, 0, 0, 0, 0, 0, 0, 0x30, 0x39]).is_err());
        assert!(param_from_text(&[0xff], &DataType::Text).is_err());
    }

    #[test]
    fn dates_and_timestamps_use_postgresql_epoch() {
        let b = binary(&Value::Date(PG_EPOCH_DAYS as i32)).unwrap();
        assert_eq!(b, [0, 0, 0, 0]);
        let back = param_from_binary(&b, &Type::DATE, &DataType::Date).unwrap();
        assert_eq!(back, Value::Date(PG_EPOCH_DAYS as i32));
    }
}
