//! Memcomparable keys: typed SQL values encoded so that comparing the bytes
//! (`memcmp`, as the B+-tree does) gives the SQL order. The SQL engine's
//! indexes are B+-trees over these keys (`docs/format/btree.md`, "Typed
//! keys").
//!
//! A key is the concatenation of its columns' encodings. Each column starts
//! with a marker byte that places NULL first or last, and every encoding is
//! prefix-free (fixed width, or terminated), so a composite key compares
//! column by column:
//!
//! ```text
//! marker    NULLS FIRST: NULL 0x00, value 0x01   NULLS LAST: value 0x01, NULL 0x02
//!           (NULL is the marker alone)
//! smallint  2 bytes big-endian, sign bit flipped      (i16)
//! integer   4 bytes big-endian, sign bit flipped      (i32)
//! bigint    8 bytes big-endian, sign bit flipped      (i64)
//! date      4 bytes as integer                        (days since 2000-01-01)
//! timestamp 8 bytes as bigint                         (µs since 2000-01-01)
//! numeric   16 bytes as a 128-bit integer: the value scaled to the column's
//!           scale (numeric(p, 2): 1.5 is 150)
//! double    8 bytes big-endian: positive (sign bit 0): sign bit flipped;
//!           negative: all bits flipped. -0 is stored as 0, and every NaN as
//!           the one NaN above +infinity (PostgreSQL's order)
//! boolean   1 byte: false 0x00, true 0x01
//! text      the UTF-8 bytes with 0x00 written 0x00 0xff, then 0x00 0x01
//!           (varchar(n) likewise; char(n) without its trailing blanks, which
//!           SQL does not compare). Byte order is code-point order: the "C"
//!           collation.
//! ```
//!
//! Only ascending keys are encoded; the tree scans forward.

use std::cmp::Ordering;

use crate::FormatError;

/// A key column's SQL type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    SmallInt,
    Integer,
    BigInt,
    /// `numeric(p, scale)`: values are scaled integers at this scale.
    Numeric {
        scale: u8,
    },
    Double,
    Boolean,
    Date,
    Timestamp,
    Text,
    /// `varchar(n)`: at most n characters.
    Varchar(u32),
    /// `char(n)`: at most n characters; trailing blanks do not count.
    Char(u32),
}

/// Where NULL sorts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nulls {
    First,
    Last,
}

/// One column of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyColumn {
    pub ty: KeyType,
    pub nulls: Nulls,
}

/// A typed value of a key column.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyValue {
    Null,
    SmallInt(i16),
    Integer(i32),
    BigInt(i64),
    /// `unscaled / 10^scale`.
    Numeric {
        unscaled: i128,
        scale: u8,
    },
    Double(f64),
    Boolean(bool),
    /// Days since 2000-01-01 (PostgreSQL's epoch).
    Date(i32),
    /// Microseconds since 2000-01-01.
    Timestamp(i64),
    Text(String),
}

/// Why a value cannot be encoded for a column: the caller's mistake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the key has {values} values for {columns} columns; give one value per key column")]
    Arity { columns: usize, values: usize },
    #[error("key column {column}: a {value} value for a {ty:?} column; convert it to the column's type first")]
    Type { column: usize, ty: KeyType, value: &'static str },
    #[error("key column {column}: {chars} characters for {ty:?}; shorten the value")]
    TooLong { column: usize, ty: KeyType, chars: usize },
    #[error(
        "key column {column}: numeric {unscaled}e-{scale} {reason} at the column's scale {column_scale}; round it first"
    )]
    Numeric { column: usize, unscaled: i128, scale: u8, column_scale: u8, reason: &'static str },
}

const MARK_NULL_FIRST: u8 = 0x00;
const MARK_VALUE: u8 = 0x01;
const MARK_NULL_LAST: u8 = 0x02;
const S: &str = "memcomparable key";
/// The largest scale: 10^38 still fits an i128.
pub const MAX_SCALE: u8 = 38;

/// Appends the encoding of `values` (one per column) to `out`.
pub fn encode_key(columns: &[KeyColumn], values: &[KeyValue], out: &mut Vec<u8>) -> Result<(), KeyError> {
    if columns.len() != values.len() {
        return Err(KeyError::Arity { columns: columns.len(), values: values.len() });
    }
    for (i, (c, v)) in columns.iter().zip(values).enumerate() {
        encode_column(i, c, v, out)?;
    }
    Ok(())
}

fn encode_column(column: usize, c: &KeyColumn, v: &KeyValue, out: &mut Vec<u8>) -> Result<(), KeyError> {
    if *v == KeyValue::Null {
        out.push(if c.nulls == Nulls::First { MARK_NULL_FIRST } else { MARK_NULL_LAST });
        return Ok(());
    }
    out.push(MARK_VALUE);
    let wrong = || KeyError::Type { column, ty: c.ty, value: value_name(v) };
    match (c.ty, v) {
        (KeyType::SmallInt, KeyValue::SmallInt(x)) => out.extend_from_slice(&((*x as u16) ^ 0x8000).to_be_bytes()),
        (KeyType::Integer, KeyValue::Integer(x)) | (KeyType::Date, KeyValue::Date(x)) => {
            out.extend_from_slice(&((*x as u32) ^ 0x8000_0000).to_be_bytes())
        }
        (KeyType::BigInt, KeyValue::BigInt(x)) | (KeyType::Timestamp, KeyValue::Timestamp(x)) => {
            out.extend_from_slice(&((*x as u64) ^ (1 << 63)).to_be_bytes())
        }
        (KeyType::Numeric { scale: to }, &KeyValue::Numeric { unscaled, scale }) => {
            let x = rescale(unscaled, scale, to).map_err(|reason| KeyError::Numeric {
                column,
                unscaled,
                scale,
                column_scale: to,
                reason,
            })?;
            out.extend_from_slice(&((x as u128) ^ (1 << 127)).to_be_bytes());
        }
        (KeyType::Double, KeyValue::Double(x)) => out.extend_from_slice(&double_bits(*x).to_be_bytes()),
        (KeyType::Boolean, KeyValue::Boolean(b)) => out.push(u8::from(*b)),
        (KeyType::Text | KeyType::Varchar(_) | KeyType::Char(_), KeyValue::Text(s)) => {
            let s = if matches!(c.ty, KeyType::Char(_)) { s.trim_end_matches(' ') } else { s };
            if let KeyType::Varchar(n) | KeyType::Char(n) = c.ty {
                let chars = s.chars().count();
                if chars > n as usize {
                    return Err(KeyError::TooLong { column, ty: c.ty, chars });
                }
            }
            for &b in s.as_bytes() {
                out.push(b);
                if b == 0 {
                    out.push(0xff);
                }
            }
            out.extend_from_slice(&[0x00, 0x01]);
        }
        _ => return Err(wrong()),
    }
    Ok(())
}

fn value_name(v: &KeyValue) -> &'static str {
    match v {
        KeyValue::Null => "NULL",
        KeyValue::SmallInt(_) => "smallint",
        KeyValue::Integer(_) => "integer",
        KeyValue::BigInt(_) => "bigint",
        KeyValue::Numeric { .. } => "numeric",
        KeyValue::Double(_) => "double",
        KeyValue::Boolean(_) => "boolean",
        KeyValue::Date(_) => "date",
        KeyValue::Timestamp(_) => "timestamp",
        KeyValue::Text(_) => "text",
    }
}

/// `unscaled / 10^from` as an integer at scale `to`, if exact and in range.
fn rescale(unscaled: i128, from: u8, to: u8) -> Result<i128, &'static str> {
    if from > MAX_SCALE || to > MAX_SCALE {
        return Err("has a scale above 38");
    }
    if to >= from {
        return unscaled.checked_mul(10i128.pow(u32::from(to - from))).ok_or("overflows");
    }
    let d = 10i128.pow(u32::from(from - to));
    if unscaled % d != 0 {
        return Err("has more fractional digits than fit");
    }
    Ok(unscaled / d)
}

/// A double's order-preserving bits (NaN above +infinity, -0 as 0).
fn double_bits(x: f64) -> u64 {
    let x = if x.is_nan() {
        f64::NAN
    } else if x == 0.0 {
        0.0
    } else {
        x
    };
    let b = x.to_bits();
    if b >> 63 == 0 { b | (1 << 63) } else { !b }
}

fn double_from_bits(b: u64) -> f64 {
    f64::from_bits(if b >> 63 == 1 { b & !(1 << 63) } else { !b })
}

/// Decodes a key of `columns` (every byte must belong to a column).
pub fn decode_key(columns: &[KeyColumn], mut b: &[u8]) -> Result<Vec<KeyValue>, FormatError> {
    let mut values = Vec::with_capacity(columns.len());
    for c in columns {
        let (&mark, rest) = b.split_first().ok_or(FormatError::Truncated { structure: S, needed: 1, found: 0 })?;
        b = rest;
        let null = if c.nulls == Nulls::First { MARK_NULL_FIRST } else { MARK_NULL_LAST };
        if mark == null {
            values.push(KeyValue::Null);
            continue;
        }
        if mark != MARK_VALUE {
            return Err(invalid("marker", format!("{mark:#04x}")));
        }
        let (v, used) = decode_value(c.ty, b)?;
        values.push(v);
        b = &b[used..];
    }
    if !b.is_empty() {
        return Err(invalid("length", format!("{} bytes after the last column", b.len())));
    }
    Ok(values)
}

fn invalid(field: &'static str, reason: String) -> FormatError {
    FormatError::InvalidField { structure: S, field, reason }
}

fn fixed<const N: usize>(b: &[u8]) -> Result<[u8; N], FormatError> {
    b.get(..N).map(|s| s.try_into().expect("N bytes")).ok_or(FormatError::Truncated {
        structure: S,
        needed: N,
        found: b.len(),
    })
}

/// One column's value (after its marker) and the bytes it took.
fn decode_value(ty: KeyType, b: &[u8]) -> Result<(KeyValue, usize), FormatError> {
    Ok(match ty {
        KeyType::SmallInt => (KeyValue::SmallInt((u16::from_be_bytes(fixed(b)?) ^ 0x8000) as i16), 2),
        KeyType::Integer => (KeyValue::Integer((u32::from_be_bytes(fixed(b)?) ^ 0x8000_0000) as i32), 4),
        KeyType::Date => (KeyValue::Date((u32::from_be_bytes(fixed(b)?) ^ 0x8000_0000) as i32), 4),
        KeyType::BigInt => (KeyValue::BigInt((u64::from_be_bytes(fixed(b)?) ^ (1 << 63)) as i64), 8),
        KeyType::Timestamp => (KeyValue::Timestamp((u64::from_be_bytes(fixed(b)?) ^ (1 << 63)) as i64), 8),
        KeyType::Numeric { scale } => {
            let unscaled = (u128::from_be_bytes(fixed(b)?) ^ (1 << 127)) as i128;
            (KeyValue::Numeric { unscaled, scale }, 16)
        }
        KeyType::Double => (KeyValue::Double(double_from_bits(u64::from_be_bytes(fixed(b)?))), 8),
        KeyType::Boolean => match fixed::<1>(b)?[0] {
            0 => (KeyValue::Boolean(false), 1),
            1 => (KeyValue::Boolean(true), 1),
            x => return Err(invalid("boolean", format!("{x:#04x}"))),
        },
        KeyType::Text | KeyType::Varchar(_) | KeyType::Char(_) => decode_text(b)?,
    })
}

fn decode_text(b: &[u8]) -> Result<(KeyValue, usize), FormatError> {
    let mut text = Vec::new();
    let mut i = 0;
    loop {
        match (b.get(i), b.get(i + 1)) {
            (Some(0), Some(0x01)) => break,
            (Some(0), Some(0xff)) => {
                text.push(0);
                i += 2;
            }
            (Some(0), Some(x)) => return Err(invalid("text", format!("escape 0x00 {x:#04x}"))),
            (Some(&x), _) if x != 0 => {
                text.push(x);
                i += 1;
            }
            _ => return Err(FormatError::Truncated { structure: S, needed: i + 2, found: b.len() }),
        }
    }
    let s = String::from_utf8(text).map_err(|_| invalid("text", "not UTF-8".into()))?;
    Ok((KeyValue::Text(s), i + 2))
}

/// The SQL order of two keys of `columns` (what the encoding preserves): NULL
/// per the column's [`Nulls`], numerics by value whatever their scale, doubles
/// with -0 = 0 and NaN above everything, text by bytes ("C" collation),
/// `char(n)` without trailing blanks. Values of the wrong type compare equal.
pub fn compare_keys(columns: &[KeyColumn], a: &[KeyValue], b: &[KeyValue]) -> Ordering {
    for (c, (x, y)) in columns.iter().zip(a.iter().zip(b)) {
        let o = match (x, y) {
            (KeyValue::Null, KeyValue::Null) => Ordering::Equal,
            (KeyValue::Null, _) => {
                if c.nulls == Nulls::First {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (_, KeyValue::Null) => {
                if c.nulls == Nulls::First {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            _ => compare_values(c.ty, x, y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn compare_values(ty: KeyType, x: &KeyValue, y: &KeyValue) -> Ordering {
    use KeyValue as V;
    match (x, y) {
        (V::SmallInt(a), V::SmallInt(b)) => a.cmp(b),
        (V::Integer(a), V::Integer(b)) | (V::Date(a), V::Date(b)) => a.cmp(b),
        (V::BigInt(a), V::BigInt(b)) | (V::Timestamp(a), V::Timestamp(b)) => a.cmp(b),
        (V::Boolean(a), V::Boolean(b)) => a.cmp(b),
        (V::Double(a), V::Double(b)) => match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => a.partial_cmp(b).expect("not NaN"),
        },
        (&V::Numeric { unscaled: a, scale: sa }, &V::Numeric { unscaled: b, scale: sb }) => {
            // Integer parts (floored), then the fractions at the common scale:
            // a fraction below 1 at scale ≤ 38 fits an i128.
            let (sa, sb) = (sa.min(MAX_SCALE), sb.min(MAX_SCALE));
            let (da, db) = (10i128.pow(u32::from(sa)), 10i128.pow(u32::from(sb)));
            let s = sa.max(sb);
            let fa = a.rem_euclid(da) * 10i128.pow(u32::from(s - sa));
            let fb = b.rem_euclid(db) * 10i128.pow(u32::from(s - sb));
            a.div_euclid(da).cmp(&b.div_euclid(db)).then(fa.cmp(&fb))
        }
        (V::Text(a), V::Text(b)) if matches!(ty, KeyType::Char(_)) => {
            a.trim_end_matches(' ').as_bytes().cmp(b.trim_end_matches(' ').as_bytes())
        }
        (V::Text(a), V::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
        _ => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn col(ty: KeyType, nulls: Nulls) -> KeyColumn {
        KeyColumn { ty, nulls }
    }

    fn key_type() -> impl Strategy<Value = KeyType> {
        prop_oneof![
            Just(KeyType::SmallInt),
            Just(KeyType::Integer),
            Just(KeyType::BigInt),
            (0u8..6).prop_map(|scale| KeyType::Numeric { scale }),
            Just(KeyType::Double),
            Just(KeyType::Boolean),
            Just(KeyType::Date),
            Just(KeyType::Timestamp),
            Just(KeyType::Text),
            Just(KeyType::Varchar(8)),
            Just(KeyType::Char(6)),
        ]
    }

    fn column() -> impl Strategy<Value = KeyColumn> {
        (key_type(), any::<bool>()).prop_map(|(ty, first)| col(ty, if first { Nulls::First } else { Nulls::Last }))
    }

    fn double() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            Just(0.0),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::NAN),
            Just(-f64::NAN),
            (-3i32..3).prop_map(f64::from),
        ]
    }

    /// Text from a small alphabet (with NUL, blanks and a multi-byte char),
    /// so equal prefixes and the escapes are common.
    fn text(max: usize) -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![Just('\0'), Just(' '), Just('a'), Just('b'), Just('é'), Just('\u{7f}')],
            0..max,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    /// A value that fits `ty` (or NULL).
    fn value(ty: KeyType) -> BoxedStrategy<KeyValue> {
        let v: BoxedStrategy<KeyValue> = match ty {
            KeyType::SmallInt => prop_oneof![any::<i16>(), -2i16..2].prop_map(KeyValue::SmallInt).boxed(),
            KeyType::Integer => prop_oneof![any::<i32>(), -2i32..2].prop_map(KeyValue::Integer).boxed(),
            KeyType::BigInt => prop_oneof![any::<i64>(), -2i64..2].prop_map(KeyValue::BigInt).boxed(),
            KeyType::Date => prop_oneof![any::<i32>(), -2i32..2].prop_map(KeyValue::Date).boxed(),
            KeyType::Timestamp => any::<i64>().prop_map(KeyValue::Timestamp).boxed(),
            KeyType::Numeric { scale } => (prop_oneof![-10i128.pow(20)..10i128.pow(20), -300i128..300], 0..=scale)
                .prop_map(|(u, s)| KeyValue::Numeric { unscaled: u, scale: s })
                .boxed(),
            KeyType::Double => double().prop_map(KeyValue::Double).boxed(),
            KeyType::Boolean => any::<bool>().prop_map(KeyValue::Boolean).boxed(),
            KeyType::Text => text(10).prop_map(KeyValue::Text).boxed(),
            KeyType::Varchar(n) | KeyType::Char(n) => text(n as usize).prop_map(KeyValue::Text).boxed(),
        };
        prop_oneof![1 => Just(KeyValue::Null), 6 => v].boxed()
    }

    /// Columns and two keys for them.
    fn two_keys() -> impl Strategy<Value = (Vec<KeyColumn>, Vec<KeyValue>, Vec<KeyValue>)> {
        proptest::collection::vec(column(), 1..4).prop_flat_map(|cols| {
            let vals: Vec<_> = cols.iter().map(|c| value(c.ty)).collect();
            (Just(cols), vals.clone(), vals)
        })
    }

    fn enc(cols: &[KeyColumn], v: &[KeyValue]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_key(cols, v, &mut out).unwrap();
        out
    }

    /// What decoding gives back for a value: its canonical form.
    fn canonical(c: &KeyColumn, v: &KeyValue) -> KeyValue {
        match (c.ty, v) {
            (KeyType::Numeric { scale }, &KeyValue::Numeric { unscaled, scale: s }) => {
                KeyValue::Numeric { unscaled: rescale(unscaled, s, scale).unwrap(), scale }
            }
            (KeyType::Char(_), KeyValue::Text(t)) => KeyValue::Text(t.trim_end_matches(' ').into()),
            (_, KeyValue::Double(x)) => KeyValue::Double(if *x == 0.0 { 0.0 } else { *x }),
            _ => v.clone(),
        }
    }

    fn same(a: &KeyValue, b: &KeyValue) -> bool {
        match (a, b) {
            (KeyValue::Double(x), KeyValue::Double(y)) => x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan(),
            _ => a == b,
        }
    }

    #[test]
    fn encodings_are_the_documented_bytes() {
        let f = |ty| col(ty, Nulls::First);
        let l = |ty| col(ty, Nulls::Last);
        assert_eq!(enc(&[f(KeyType::Integer)], &[KeyValue::Integer(-1)]), [1, 0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(enc(&[f(KeyType::SmallInt)], &[KeyValue::SmallInt(1)]), [1, 0x80, 0x01]);
        assert_eq!(enc(&[l(KeyType::BigInt)], &[KeyValue::Null]), [2]);
        assert_eq!(enc(&[f(KeyType::BigInt)], &[KeyValue::Null]), [0]);
        assert_eq!(enc(&[f(KeyType::Text)], &[KeyValue::Text("a\0b".into())]), [1, b'a', 0, 0xff, b'b', 0, 1]);
        assert_eq!(enc(&[f(KeyType::Char(4))], &[KeyValue::Text("ab  ".into())]), [1, b'a', b'b', 0, 1]);
        assert_eq!(enc(&[f(KeyType::Double)], &[KeyValue::Double(1.0)]), [1, 0xbf, 0xf0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(enc(&[f(KeyType::Double)], &[KeyValue::Double(-0.0)]), [1, 0x80, 0, 0, 0, 0, 0, 0, 0]);
        let n = enc(&[f(KeyType::Numeric { scale: 2 })], &[KeyValue::Numeric { unscaled: 15, scale: 1 }]);
        assert_eq!(n[..2], [1, 0x80]);
        assert_eq!(n[15..], [0, 150]);
        assert_eq!(
            enc(&[f(KeyType::Boolean), f(KeyType::Date)], &[KeyValue::Boolean(true), KeyValue::Date(0)]),
            [1, 1, 1, 0x80, 0, 0, 0]
        );
    }

    #[test]
    fn bad_values_are_refused_with_what_to_do() {
        let c = [col(KeyType::Numeric { scale: 1 }, Nulls::First)];
        let e = encode_key(&c, &[KeyValue::Numeric { unscaled: 155, scale: 2 }], &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("round it first"), "{e}");
        let c = [col(KeyType::Varchar(2), Nulls::First)];
        let e = encode_key(&c, &[KeyValue::Text("abc".into())], &mut Vec::new()).unwrap_err();
        assert_eq!(e, KeyError::TooLong { column: 0, ty: KeyType::Varchar(2), chars: 3 });
        let e = encode_key(&c, &[KeyValue::Integer(1)], &mut Vec::new()).unwrap_err();
        assert!(matches!(e, KeyError::Type { column: 0, .. }), "{e}");
        assert!(matches!(encode_key(&c, &[], &mut Vec::new()), Err(KeyError::Arity { columns: 1, values: 0 })));
        let c = [col(KeyType::Char(2), Nulls::First)];
        encode_key(&c, &[KeyValue::Text("ab    ".into())], &mut Vec::new()).unwrap();
    }

    proptest! {
        /// Byte order is SQL order, for single columns and composites.
        #[test]
        fn byte_order_is_sql_order((cols, a, b) in two_keys()) {
            let (ea, eb) = (enc(&cols, &a), enc(&cols, &b));
            prop_assert_eq!(ea.cmp(&eb), compare_keys(&cols, &a, &b), "{:?} {:?}", ea, eb);
        }

        #[test]
        fn decoding_roundtrips((cols, a, _b) in two_keys()) {
            let got = decode_key(&cols, &enc(&cols, &a)).unwrap();
            for ((c, v), g) in cols.iter().zip(&a).zip(&got) {
                prop_assert!(same(&canonical(c, v), g), "{:?} gave {:?}", v, g);
            }
        }

        #[test]
        fn decoding_garbage_never_panics(cols in proptest::collection::vec(column(), 1..4), b in proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xff), any::<u8>()], 0..40)) {
            let _ = decode_key(&cols, &b);
        }
    }
}
