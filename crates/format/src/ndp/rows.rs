//! The output of a rows call (range 3): the visible, qualifying tuples,
//! projected. The host sizes range 3 as `P` equal shares; PE `p` uses
//! `share = range length / P` rounded down to a multiple of 8, at `p · share`:
//!
//! ```text
//! offset in share size field
//!               0    8 bytes_used  u64: bytes of the share in use, these 16 included
//!               8    8 rows        u64
//!              16    . rows, packed, in VID order: u64 vid, then per projected column
//!                      one value: tag 0 NULL; tag 1, i64; tag 2, u16 length, the bytes
//! ```
//!
//! The PE writes with [`RowsWriter`] (and fails the call when its rows
//! would overflow its share); the host reads with [`decode_rows`].

use crate::FormatError;
use crate::schema::{ColumnType, Value};

/// Bytes before the first row of a share.
pub const ROWS_HEADER_BYTES: usize = 16;
const TAG_NULL: u8 = 0;
const TAG_INT: u8 = 1;
const TAG_TEXT: u8 = 2;
const S: &str = "rows output";

/// A row as the host gets it: the VID, then the projected values.
pub type Row = (u64, Vec<Value>);

/// Builds one PE's share of a rows call's output.
#[derive(Debug)]
pub struct RowsWriter {
    out: Vec<u8>,
    rows: u64,
    columns: usize,
    /// Values written since the last row began.
    values: usize,
}

impl RowsWriter {
    /// A share for rows of `columns` projected values each.
    pub fn new(columns: usize) -> RowsWriter {
        RowsWriter { out: vec![0; ROWS_HEADER_BYTES], rows: 0, columns, values: 0 }
    }

    /// Begins the row of `vid`; its values follow with [`RowsWriter::value`].
    pub fn row(&mut self, vid: u64) {
        debug_assert!(self.rows == 0 || self.values == self.columns, "a row holds one value per projected column");
        self.out.extend_from_slice(&vid.to_le_bytes());
        self.rows += 1;
        self.values = 0;
    }

    /// The next projected value of the current row.
    pub fn value(&mut self, v: &Value) {
        debug_assert!(self.rows > 0 && self.values < self.columns, "a value outside a row");
        match v {
            Value::Null => self.out.push(TAG_NULL),
            Value::Int(i) => {
                self.out.push(TAG_INT);
                self.out.extend_from_slice(&i.to_le_bytes());
            }
            Value::Text(t) => {
                debug_assert!(t.len() <= usize::from(u16::MAX), "text values fit a u16 length");
                self.out.push(TAG_TEXT);
                self.out.extend_from_slice(&(t.len() as u16).to_le_bytes());
                self.out.extend_from_slice(t);
            }
        }
        self.values += 1;
    }

    /// Bytes of the share in use so far.
    pub fn bytes_used(&self) -> usize {
        self.out.len()
    }

    /// The share's bytes (its first `bytes_used`), header filled in.
    pub fn finish(mut self) -> Vec<u8> {
        debug_assert!(self.rows == 0 || self.values == self.columns, "the last row is whole");
        let used = self.out.len() as u64;
        self.out[0..8].copy_from_slice(&used.to_le_bytes());
        self.out[8..16].copy_from_slice(&self.rows.to_le_bytes());
        self.out
    }

    /// The most bytes a value of a column of type `ty` takes.
    pub fn value_bytes_max(ty: ColumnType) -> u64 {
        match ty {
            ColumnType::Text(n) | ColumnType::Varchar(n) => 3 + u64::from(n),
            _ => 9,
        }
    }

    /// Bytes of a share that holds `rows` rows of at most `row_bytes_max`
    /// bytes each (8 for the VID plus [`RowsWriter::value_bytes_max`] per
    /// column), rounded up to 8.
    pub fn share_bytes(rows: u64, row_bytes_max: u64) -> u64 {
        (rows * row_bytes_max + ROWS_HEADER_BYTES as u64).div_ceil(8) * 8
    }
}

/// Appends the rows of one PE's `share`, each of `columns` values, to `out`.
/// Checks `16 ≤ bytes_used ≤ share length`, that every value lies inside the
/// share, the tags, and that the rows end exactly at `bytes_used`.
pub fn decode_rows(share: &[u8], columns: usize, out: &mut Vec<Row>) -> Result<(), FormatError> {
    let get = |at: usize, n: usize| {
        share.get(at..at + n).ok_or(FormatError::Truncated { structure: S, needed: at + n, found: share.len() })
    };
    let word = |at: usize| get(at, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    let used = word(0)?;
    let rows = word(8)?;
    if used > share.len() as u64 || used < ROWS_HEADER_BYTES as u64 {
        return Err(invalid("bytes_used", format!("{used} bytes used in a {}-byte share", share.len())));
    }
    let mut at = ROWS_HEADER_BYTES;
    for _ in 0..rows {
        let vid = word(at)?;
        at += 8;
        let mut vals = Vec::with_capacity(columns);
        for _ in 0..columns {
            let tag = get(at, 1)?[0];
            at += 1;
            vals.push(match tag {
                TAG_NULL => Value::Null,
                TAG_INT => {
                    let v = word(at)? as i64;
                    at += 8;
                    Value::Int(v)
                }
                TAG_TEXT => {
                    let n = usize::from(u16::from_le_bytes(get(at, 2)?.try_into().expect("2 bytes")));
                    let t = get(at + 2, n)?.to_vec();
                    at += 2 + n;
                    Value::Text(t)
                }
                other => return Err(invalid("tag", format!("unknown value tag {other}"))),
            });
        }
        out.push((vid, vals));
    }
    if at as u64 != used {
        return Err(invalid("bytes_used", format!("rows end at byte {at}, the share says {used}")));
    }
    Ok(())
}

fn invalid(field: &'static str, reason: String) -> FormatError {
    FormatError::InvalidField { structure: S, field, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Int),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Text),
        ]
    }

    fn encode(rows: &[Row], columns: usize) -> Vec<u8> {
        let mut w = RowsWriter::new(columns);
        for (vid, vals) in rows {
            w.row(*vid);
            vals.iter().for_each(|v| w.value(v));
        }
        w.finish()
    }

    #[test]
    fn a_share_reads_back_and_its_bytes_follow_the_spec() {
        let rows = vec![(7, vec![Value::Int(-2), Value::Null, Value::Text(b"ab".to_vec())])];
        let b = encode(&rows, 3);
        let mut expect = vec![39, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0];
        expect.extend_from_slice(&[1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 2, 2, 0, b'a', b'b']);
        assert_eq!(b, expect);
        let mut share = b.clone();
        share.resize(64, 0xaa);
        let mut out = Vec::new();
        decode_rows(&share, 3, &mut out).unwrap();
        assert_eq!(out, rows);
        // The rows must end where the header says.
        share[0] = 38;
        assert!(decode_rows(&share, 3, &mut Vec::new()).unwrap_err().to_string().contains("rows end at byte 39"));
        assert!(decode_rows(&b[..38], 3, &mut Vec::new()).is_err(), "bytes_used beyond the share");
        assert!(decode_rows(&encode(&[], 2), 2, &mut out).is_ok());
    }

    proptest! {
        #[test]
        fn rows_roundtrip(
            columns in 0usize..4,
            seeds in proptest::collection::vec((any::<u64>(), proptest::collection::vec(value(), 4)), 0..20),
            slack in 0usize..16,
        ) {
            let rows: Vec<Row> = seeds.into_iter().map(|(vid, mut v)| { v.truncate(columns); (vid, v) }).collect();
            let mut share = encode(&rows, columns);
            share.resize(share.len() + slack, 0);
            let mut out = Vec::new();
            decode_rows(&share, columns, &mut out).unwrap();
            prop_assert_eq!(out, rows);
        }

        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200), columns in 0usize..5, at in 0usize..200, x in any::<u8>()) {
            let _ = decode_rows(&b, columns, &mut Vec::new());
            let rows = vec![(1, vec![Value::Text(b"xyz".to_vec()), Value::Int(5)]); 3];
            let mut good = encode(&rows, 2);
            let i = at % good.len();
            good[i] ^= x;
            let _ = decode_rows(&good, 2, &mut Vec::new());
        }
    }
}
