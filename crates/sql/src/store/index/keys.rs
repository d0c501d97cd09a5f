//! Index entries as B+-tree keys, and an index range as a key range.
//!
//! ```text
//!  entry key = table id (4, BE) ‖ n (1) ‖ column positions (2 each, BE)   the index's prefix
//!              ‖ memcomparable key of the row's key columns (NULLS LAST) (format::keys)
//!              ‖ VID (8, BE)
//!  entry value = empty
//! ```
//!
//! The prefix names an index by what it holds, not by its name: two
//! indexes of one table on the same columns (a primary key and a
//! `CREATE INDEX` on its column) hold the same entries and share them.
//! Every entry ends with its VID, unique and non-unique indexes alike, so
//! an entry names one tuple and one key value and stays correct across
//! versions (`mod.rs`). Key columns are prefix-free, so the entries whose
//! first k columns equal some values are exactly the keys that begin with
//! those columns' encoding; a bound on a prefix of the key is a byte
//! range ([`KeyRange`]).

use ndpdb_format::keys::{KeyColumn, KeyType, KeyValue, Nulls, encode_key};

use ndpdb_format::schema as fs;

use crate::catalog::{IndexDef, TableDef};
use crate::error::{Result, SqlError, SqlState};
use crate::store::mapping::from_storage;
use crate::types::{DataType, Value};

/// Bytes of the VID that ends every entry.
pub const VID_BYTES: usize = 8;

/// The key column of a column of SQL type `ty`; None: not indexable.
pub fn key_column(ty: DataType) -> Option<KeyColumn> {
    let ty = match ty {
        DataType::Bool => KeyType::Boolean,
        DataType::Int16 => KeyType::SmallInt,
        DataType::Int32 => KeyType::Integer,
        DataType::Int64 => KeyType::BigInt,
        DataType::Numeric { scale, .. } => KeyType::Numeric { scale },
        DataType::Float64 => KeyType::Double,
        DataType::Date => KeyType::Date,
        DataType::Timestamp => KeyType::Timestamp,
        DataType::Char(n) => KeyType::Char(u32::from(n)),
        DataType::Varchar(Some(n)) => KeyType::Varchar(u32::from(n)),
        DataType::Varchar(None) | DataType::Text => KeyType::Text,
        DataType::Interval | DataType::Unknown => return None,
    };
    Some(KeyColumn { ty, nulls: Nulls::Last })
}

/// How an index's entries are laid out: its prefix and its key columns.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexKeys {
    pub prefix: Vec<u8>,
    pub columns: Vec<usize>,
    pub types: Vec<DataType>,
    pub key_columns: Vec<KeyColumn>,
}

impl IndexKeys {
    /// The layout of `index` on `table`; 0A000 for a column type an index
    /// cannot hold (interval).
    pub fn of(table: &TableDef, index: &IndexDef) -> Result<IndexKeys> {
        IndexKeys::on(table, &index.columns)
    }

    /// The layout of an index of `table` on `columns`.
    pub fn on(table: &TableDef, columns: &[usize]) -> Result<IndexKeys> {
        let mut prefix = table.id.to_be_bytes().to_vec();
        prefix.push(columns.len() as u8);
        let (mut types, mut key_columns) = (vec![], vec![]);
        for &c in columns {
            let col = table.columns.get(c).ok_or_else(|| {
                SqlError::internal(format!("index column {c} of table \"{}\" does not exist", table.name))
            })?;
            let kc = key_column(col.ty).ok_or_else(|| {
                SqlError::unsupported(format!("data type {} has no index support (column \"{}\")", col.ty, col.name))
                    .with_hint("Index columns of other types, or leave this column out of the index.")
            })?;
            prefix.extend_from_slice(&(c as u16).to_be_bytes());
            types.push(col.ty);
            key_columns.push(kc);
        }
        Ok(IndexKeys { prefix, columns: columns.to_vec(), types, key_columns })
    }

    /// The entry of a row (values in table order) at `vid`.
    pub fn entry(&self, row: &[Value], vid: u64) -> Result<Vec<u8>> {
        let values: Vec<&Value> = self.columns.iter().map(|&c| row.get(c).unwrap_or(&Value::Null)).collect();
        let mut out = self.key_of(&values)?.ok_or_else(|| {
            SqlError::internal("a stored value does not fit its own column's index key (catalog and store disagree)")
        })?;
        out.extend_from_slice(&vid.to_be_bytes());
        Ok(out)
    }

    /// The key (prefix ‖ key columns, no VID) of a stored row (values in
    /// table order, as the store holds them), and whether a key column is
    /// NULL.
    pub fn stored_key(&self, table: &TableDef, row: &[fs::Value]) -> Result<(Vec<u8>, bool)> {
        let mut values = Vec::with_capacity(self.columns.len());
        for &c in &self.columns {
            let ty = table.columns.get(c).map(|d| d.ty).ok_or_else(|| SqlError::internal("index column"))?;
            values.push(from_storage(row.get(c).unwrap_or(&fs::Value::Null), ty)?);
        }
        let has_null = values.iter().any(Value::is_null);
        let refs: Vec<&Value> = values.iter().collect();
        let key = self.key_of(&refs)?.ok_or_else(|| {
            SqlError::internal("a stored value does not fit its own column's index key (catalog and store disagree)")
        })?;
        Ok((key, has_null))
    }

    /// Prefix ‖ the encoding of `values` on the first `values.len()` key
    /// columns; None when a value cannot be represented exactly in its
    /// column's type (so no stored key equals it).
    pub fn key_of(&self, values: &[&Value]) -> Result<Option<Vec<u8>>> {
        let mut kv = Vec::with_capacity(values.len());
        for (v, &ty) in values.iter().zip(&self.types) {
            match key_value(v, ty) {
                Some(k) => kv.push(k),
                None => return Ok(None),
            }
        }
        let mut out = self.prefix.clone();
        encode_key(&self.key_columns[..kv.len()], &kv, &mut out)
            .map_err(|e| SqlError::internal(format!("index key: {e}")))?;
        Ok(Some(out))
    }

    /// The range of every entry of the index.
    pub fn all(&self) -> KeyRange {
        KeyRange { start: self.prefix.clone(), end: successor(&self.prefix) }
    }
}

/// `v` as a key value of a column of type `ty`, when exactly representable
/// (an integer 3 for a numeric column is 3.00; 1.5 for an integer is not).
pub fn key_value(v: &Value, ty: DataType) -> Option<KeyValue> {
    let int = match v {
        Value::Int16(x) => Some(i64::from(*x)),
        Value::Int32(x) => Some(i64::from(*x)),
        Value::Int64(x) => Some(*x),
        Value::Numeric { value, scale } => {
            let d = 10i128.checked_pow(u32::from(*scale))?;
            (value % d == 0).then(|| i64::try_from(value / d).ok()).flatten()
        }
        Value::Float64(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Some(*f as i64),
        _ => None,
    };
    Some(match (ty, v) {
        (_, Value::Null) => KeyValue::Null,
        (DataType::Int16, _) => KeyValue::SmallInt(i16::try_from(int?).ok()?),
        (DataType::Int32, _) => KeyValue::Integer(i32::try_from(int?).ok()?),
        (DataType::Int64, _) => KeyValue::BigInt(int?),
        (DataType::Numeric { scale, .. }, Value::Numeric { value, scale: from }) => {
            KeyValue::Numeric { unscaled: rescale_exact(*value, *from, scale)?, scale }
        }
        (DataType::Numeric { scale, .. }, _) => {
            KeyValue::Numeric { unscaled: rescale_exact(i128::from(int?), 0, scale)?, scale }
        }
        (DataType::Float64, Value::Float64(f)) => KeyValue::Double(*f),
        (DataType::Float64, Value::Numeric { value, scale }) => {
            KeyValue::Double(*value as f64 / 10f64.powi(i32::from(*scale)))
        }
        (DataType::Float64, _) => KeyValue::Double(int? as f64),
        (DataType::Bool, Value::Bool(b)) => KeyValue::Boolean(*b),
        (DataType::Date, Value::Date(d)) => KeyValue::Date(*d),
        (DataType::Timestamp, Value::Timestamp(t)) => KeyValue::Timestamp(*t),
        (DataType::Char(n), Value::Text(s)) => {
            let s = s.trim_end_matches(' ');
            (s.chars().count() <= usize::from(n)).then(|| KeyValue::Text(s.to_owned()))?
        }
        (DataType::Varchar(Some(n)), Value::Text(s)) => {
            (s.chars().count() <= usize::from(n)).then(|| KeyValue::Text(s.clone()))?
        }
        (DataType::Varchar(None) | DataType::Text, Value::Text(s)) => KeyValue::Text(s.clone()),
        _ => return None,
    })
}

fn rescale_exact(v: i128, from: u8, to: u8) -> Option<i128> {
    if to >= from {
        v.checked_mul(10i128.checked_pow(u32::from(to - from))?)
    } else {
        let d = 10i128.checked_pow(u32::from(from - to))?;
        (v % d == 0).then_some(v / d)
    }
}

/// The smallest byte string greater than every string that begins with
/// `p` (`p` with its last non-0xff byte incremented, the rest cut); an
/// empty result means "no end".
pub fn successor(p: &[u8]) -> Vec<u8> {
    let mut s = p.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return s;
        }
    }
    s
}

/// Entries with `start <= key < end` (an empty `end`: no end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
}

impl KeyRange {
    /// Whether `key` is past the range's end.
    pub fn past(&self, key: &[u8]) -> bool {
        !self.end.is_empty() && key >= self.end.as_slice()
    }

    /// The entries of one exact key value (all of the index's columns or a
    /// prefix of them): `key` is prefix ‖ encoding.
    pub fn exact(key: &[u8]) -> KeyRange {
        KeyRange { start: key.to_vec(), end: successor(key) }
    }

    /// The range of an index scan's bounds: entries whose key is at or
    /// after (inclusive) or after (exclusive) `lower` on its columns, and
    /// before or at `upper` on its columns (each a prefix of the key's
    /// columns; empty: unbounded). A bound value no stored key can equal
    /// (1.5 for an integer column) widens the bound to the columns before
    /// it: the range only grows, and the executor re-checks the whole
    /// filter on every row. NULLs sort last: an open upper end takes them
    /// in, and the filter drops them.
    pub fn between(
        keys: &IndexKeys,
        lower: &[Value],
        lower_inclusive: bool,
        upper: &[Value],
        upper_inclusive: bool,
    ) -> Result<KeyRange> {
        let start = match representable(keys, lower)? {
            (k, true) if !lower_inclusive && !lower.is_empty() => successor(&k),
            (k, _) => k,
        };
        let end = match representable(keys, upper)? {
            (k, true) if !upper_inclusive && !upper.is_empty() => k,
            (k, _) => successor(&k),
        };
        Ok(KeyRange { start, end })
    }
}

/// The key of the longest prefix of `values` whose values are all
/// representable, and whether that is all of them.
fn representable(keys: &IndexKeys, values: &[Value]) -> Result<(Vec<u8>, bool)> {
    let values = &values[..values.len().min(keys.types.len())];
    for n in (0..=values.len()).rev() {
        let refs: Vec<&Value> = values[..n].iter().collect();
        if let Some(k) = keys.key_of(&refs)? {
            return Ok((k, n == values.len()));
        }
    }
    Ok((keys.prefix.clone(), values.is_empty()))
}

/// The VID at the end of an entry.
pub fn entry_vid(entry: &[u8]) -> Result<u64> {
    let at = entry.len().checked_sub(VID_BYTES).ok_or_else(|| {
        SqlError::new(SqlState::DATA_CORRUPTED, format!("an index entry of {} bytes holds no VID", entry.len()))
            .with_hint("REINDEX is not supported yet: drop and create the index again.")
    })?;
    let mut b = [0u8; VID_BYTES];
    b.copy_from_slice(&entry[at..]);
    Ok(u64::from_be_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ColumnDef;

    fn table() -> TableDef {
        let col = |n: &str, ty| ColumnDef { name: n.into(), ty, not_null: false, default: None };
        TableDef {
            id: 7,
            name: "t".into(),
            columns: vec![col("a", DataType::Int32), col("b", DataType::Text), col("c", DataType::Interval)],
            primary_key: None,
            unique: vec![],
            indexes: vec![],
            stats: None,
        }
    }

    #[test]
    fn entries_sort_by_key_then_vid_and_ranges_hold_them() {
        let k = IndexKeys::on(&table(), &[0, 1]).unwrap();
        let row = |a: i32, b: &str| vec![Value::Int32(a), Value::Text(b.into()), Value::Null];
        let e1 = k.entry(&row(-5, "x"), 9).unwrap();
        let e2 = k.entry(&row(3, "a"), 1).unwrap();
        let e3 = k.entry(&row(3, "b"), 0).unwrap();
        assert!(e1 < e2 && e2 < e3);
        assert_eq!(entry_vid(&e3).unwrap(), 0);
        let b = |lo: &[Value], li, hi: &[Value], hu| KeyRange::between(&k, lo, li, hi, hu).unwrap();
        let three = [Value::Int64(3)];
        // a = 3: both 3s
        let r = b(&three, true, &three, true);
        assert!(e1 < r.start && e2 >= r.start && !r.past(&e3));
        // a = 3 AND b > 'a': only "b"
        let r = b(&[Value::Int32(3), Value::Text("a".into())], false, &three, true);
        assert!(e2 < r.start && e3 >= r.start && !r.past(&e3));
        // a < 3 ends before both 3s; a <= 3 after them; a >= 3 AND a < 3 is empty
        let r = b(&[], true, &three, false);
        assert!(r.past(&e2) && !r.past(&e1) && r.start <= e1);
        assert!(!b(&[], true, &three, true).past(&e3));
        let r = b(&three, true, &three, false);
        assert!(r.start >= r.end);
        // a = 1.5 and a > 1.5 widen to the whole index
        let half = [Value::Numeric { value: 15, scale: 1 }];
        assert_eq!(b(&half, true, &half, true), k.all());
        assert_eq!(b(&half, false, &[], true), k.all());
    }

    #[test]
    fn interval_columns_are_refused_and_other_tables_do_not_overlap() {
        assert_eq!(IndexKeys::on(&table(), &[2]).unwrap_err().code, SqlState::FEATURE_NOT_SUPPORTED);
        let mut other = table();
        other.id = 8;
        let a = IndexKeys::on(&table(), &[0]).unwrap().all();
        let b = IndexKeys::on(&other, &[0]).unwrap().all();
        assert!(a.end <= b.start);
        assert_eq!(successor(&[1, 0xff]), vec![2]);
        assert!(entry_vid(&[1, 2]).is_err());
    }
}
