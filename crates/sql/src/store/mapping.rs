//! SQL types over storage columns, and values between the two worlds.
//!
//! ```text
//!  SQL DataType            storage ColumnType   storage Value       Arrow
//!  boolean                 Bool                 Int(0 | 1)          Boolean
//!  smallint                Int32 (range 16)     Int                 Int16
//!  integer                 Int32                Int                 Int32
//!  bigint                  Int64                Int                 Int64
//!  numeric(p,s), p <= 18   Decimal{p,s}         Int(value·10^s)     Decimal128(38,s)
//!  double precision        Float64              Int(f64 bits)       Float64
//!  date                    Date                 Int(days)           Date32
//!  timestamp               Timestamp            Int(µs)             Timestamp(µs)
//!  char(n)                 Text(n)              Text (no padding)   Utf8 (no padding)
//!  varchar(n)              Varchar(n)           Text                Utf8
//!  varchar, text           Varchar(4096)        Text                Utf8
//! ```
//!
//! Decisions beyond `docs/sql.md`:
//! - `numeric` without a precision, and precisions above 18, are refused
//!   with 0A000 naming the column (the design's table): an i64 scaled by
//!   [`crate::types::NUMERIC_DEFAULT_SCALE`] would hold only |x| < 100.
//! - Text lengths: PostgreSQL counts characters, the store bytes. A value
//!   longer than `n` characters is 22001 with PostgreSQL's message (spaces
//!   beyond `n` are cut, as PostgreSQL does); a value of at most `n`
//!   characters but more bytes than the storage column holds (non-ASCII
//!   text) is 54000, saying what to declare instead.
//! - `char(n)` values are stored and read without their trailing blanks
//!   (the store pads the slot; reading strips it): comparisons then follow
//!   PostgreSQL's bpchar rules with plain string kernels, and output that
//!   must show the padding pads to `n` when it prints.
//!
//! Storage rows become Arrow arrays through [`BatchBuilder`]: one typed
//! builder per column, no intermediate SQL values. A host scan's morsel
//! arrives as raw tuples ([`BatchBuilder::push_tuples`], the hot path of
//! every scan): each projected column is decoded a column at a time from
//! its slot at the layout's fixed offset, with one match per column and
//! batch on (builder, storage type) and none per value; damaged bytes are
//! XX001 errors, never panics.

use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float64Builder, Int16Builder, Int32Builder,
    Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use ndpdb_format::schema::{self as fs, ColumnSlot, ColumnType, Layout, TEXT_MAX};
use ndpdb_storage::Tuples;

use crate::catalog::ColumnDef;
use crate::error::{Result, SqlError, SqlState};
use crate::types::{DataType, NUMERIC_MAX_PRECISION, Value};

/// Largest numeric precision the store holds (an i64 scaled).
pub const STORE_NUMERIC_PRECISION_MAX: u8 = 18;

/// The storage column type of a SQL column (the table in the module doc).
pub fn storage_type(col: &ColumnDef) -> Result<ColumnType> {
    let too_long = |n: u16| {
        SqlError::new(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            format!("column \"{}\": length {n} exceeds the limit of {TEXT_MAX}", col.name),
        )
        .with_hint(format!("declare at most {TEXT_MAX} characters"))
    };
    Ok(match col.ty {
        DataType::Bool => ColumnType::Bool,
        DataType::Int16 | DataType::Int32 => ColumnType::Int32,
        DataType::Int64 => ColumnType::Int64,
        DataType::Numeric { precision: Some(p), scale } if (1..=STORE_NUMERIC_PRECISION_MAX).contains(&p) => {
            ColumnType::Decimal { precision: p, scale }
        }
        DataType::Numeric { precision, .. } => {
            let what = precision.map_or("numeric without a precision".to_owned(), |p| format!("numeric({p},...)"));
            return Err(SqlError::unsupported(format!("column \"{}\": {what} is not supported yet", col.name))
                .with_hint(format!("declare numeric(p,s) with p <= {STORE_NUMERIC_PRECISION_MAX}")));
        }
        DataType::Float64 => ColumnType::Float64,
        DataType::Date => ColumnType::Date,
        DataType::Timestamp => ColumnType::Timestamp,
        DataType::Char(n) if n == 0 || n > TEXT_MAX => return Err(too_long(n)),
        DataType::Char(n) => ColumnType::Text(n),
        DataType::Varchar(Some(n)) if n == 0 || n > TEXT_MAX => return Err(too_long(n)),
        DataType::Varchar(Some(n)) => ColumnType::Varchar(n),
        DataType::Varchar(None) | DataType::Text => ColumnType::Varchar(TEXT_MAX),
        DataType::Interval | DataType::Unknown => {
            return Err(SqlError::unsupported(format!(
                "column \"{}\": type {} cannot be stored in a table yet",
                col.name, col.ty
            )));
        }
    })
}

/// The storage columns of a SQL table.
pub fn storage_columns(columns: &[ColumnDef]) -> Result<Vec<fs::Column>> {
    columns.iter().map(|c| Ok(fs::Column::new(&c.name, storage_type(c)?, !c.not_null))).collect()
}

/// A SQL value as column `col` (storage type `ty`) stores it, with
/// PostgreSQL's range and length checks. NULL checks are the writer's
/// (they name the relation).
pub fn to_storage(v: &Value, col: &ColumnDef, ty: ColumnType) -> Result<fs::Value> {
    let mismatch = || {
        SqlError::new(
            SqlState::DATATYPE_MISMATCH,
            format!("column \"{}\" is of type {} but the value is of type {}", col.name, col.ty, v.data_type()),
        )
    };
    let int = |x: i64| -> Result<fs::Value> {
        match col.ty {
            DataType::Int16 if i16::try_from(x).is_err() => Err(SqlError::overflow("smallint")),
            DataType::Int32 if i32::try_from(x).is_err() => Err(SqlError::overflow("integer")),
            DataType::Int16 | DataType::Int32 | DataType::Int64 => Ok(fs::Value::Int(x)),
            DataType::Numeric { .. } => numeric(i128::from(x), 0, ty),
            DataType::Float64 => Ok(fs::Value::float(x as f64)),
            _ => Err(mismatch()),
        }
    };
    match v {
        Value::Null => Ok(fs::Value::Null),
        Value::Bool(b) if ty == ColumnType::Bool => Ok(fs::Value::Int(i64::from(*b))),
        Value::Int16(x) => int(i64::from(*x)),
        Value::Int32(x) => int(i64::from(*x)),
        Value::Int64(x) => int(*x),
        Value::Numeric { value, scale } if matches!(ty, ColumnType::Decimal { .. }) => numeric(*value, *scale, ty),
        Value::Float64(f) if ty == ColumnType::Float64 => Ok(fs::Value::float(*f)),
        Value::Date(d) if ty == ColumnType::Date => Ok(fs::Value::Int(i64::from(*d))),
        Value::Timestamp(t) if ty == ColumnType::Timestamp => Ok(fs::Value::Int(*t)),
        Value::Text(s) => text(s, col, ty).map(fs::Value::Text),
        _ => Err(mismatch()),
    }
}

/// `value`·10^-`scale` at the column's scale (half away from zero, as
/// PostgreSQL rounds), checked against its precision.
fn numeric(value: i128, scale: u8, ty: ColumnType) -> Result<fs::Value> {
    let ColumnType::Decimal { precision, scale: to } = ty else { return Err(SqlError::internal("not a decimal")) };
    let overflow = || {
        let digits = precision - to;
        let bound = if digits == 0 { "1".to_owned() } else { format!("10^{digits}") };
        SqlError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow").with_detail(format!(
            "A field with precision {precision}, scale {to} must round to an absolute value less than {bound}."
        ))
    };
    let scaled = rescale(value, scale, to).ok_or_else(overflow)?;
    if scaled.unsigned_abs() >= 10u128.pow(u32::from(precision)) {
        return Err(overflow());
    }
    Ok(fs::Value::Int(scaled as i64))
}

/// `value` from scale `from` to scale `to`, rounding half away from zero;
/// None on overflow of i128.
pub fn rescale(value: i128, from: u8, to: u8) -> Option<i128> {
    if to >= from {
        return value.checked_mul(10i128.checked_pow(u32::from(to - from))?);
    }
    let d = 10i128.checked_pow(u32::from(from - to))?;
    let (q, r) = (value / d, value % d);
    Some(if r.abs() * 2 >= d { q + value.signum() } else { q })
}

/// A text value as column `col` stores it: cut trailing spaces beyond the
/// declared length (22001 if anything else is beyond it), then the byte
/// limit of the storage column (54000).
fn text(s: &str, col: &ColumnDef, ty: ColumnType) -> Result<Vec<u8>> {
    let declared = match col.ty {
        DataType::Char(n) | DataType::Varchar(Some(n)) => Some(usize::from(n)),
        DataType::Varchar(None) | DataType::Text => None,
        _ => {
            return Err(SqlError::new(
                SqlState::DATATYPE_MISMATCH,
                format!("column \"{}\" is of type {} but the value is of type text", col.name, col.ty),
            ));
        }
    };
    let mut s = s;
    if let Some(n) = declared
        && let Some((cut, _)) = s.char_indices().nth(n)
    {
        if s[cut..].bytes().any(|b| b != b' ') {
            return Err(SqlError::new(
                SqlState::STRING_DATA_RIGHT_TRUNCATION,
                format!("value too long for type {}", col.ty),
            ));
        }
        s = &s[..cut];
    }
    if matches!(col.ty, DataType::Char(_)) {
        s = s.trim_end_matches(' ');
    }
    let limit = match ty {
        ColumnType::Text(n) | ColumnType::Varchar(n) => usize::from(n),
        _ => return Err(SqlError::internal("text value for a non-text storage column")),
    };
    if s.len() > limit {
        return Err(SqlError::new(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            format!("value of column \"{}\" takes {} bytes; the column stores at most {limit}", col.name, s.len()),
        )
        .with_hint(format!(
            "ndpdb stores text as UTF-8 bytes, at most {TEXT_MAX} per value: declare a longer varchar, or shorten the value"
        )));
    }
    Ok(s.as_bytes().to_vec())
}

/// A stored value as SQL type `ty` sees it.
pub fn from_storage(v: &fs::Value, ty: DataType) -> Result<Value> {
    let bad = || SqlError::new(SqlState::DATA_CORRUPTED, format!("a stored value {v:?} is not a {ty}"));
    Ok(match (v, ty) {
        (fs::Value::Null, _) => Value::Null,
        (fs::Value::Int(x), DataType::Bool) => Value::Bool(*x != 0),
        (fs::Value::Int(x), DataType::Int16) => Value::Int16(i16::try_from(*x).map_err(|_| bad())?),
        (fs::Value::Int(x), DataType::Int32) => Value::Int32(i32::try_from(*x).map_err(|_| bad())?),
        (fs::Value::Int(x), DataType::Int64) => Value::Int64(*x),
        (fs::Value::Int(x), DataType::Numeric { scale, .. }) => Value::Numeric { value: i128::from(*x), scale },
        (fs::Value::Int(x), DataType::Float64) => Value::Float64(fs::Value::as_float(*x)),
        (fs::Value::Int(x), DataType::Date) => Value::Date(i32::try_from(*x).map_err(|_| bad())?),
        (fs::Value::Int(x), DataType::Timestamp) => Value::Timestamp(*x),
        (fs::Value::Text(t), DataType::Char(_) | DataType::Varchar(_) | DataType::Text) => {
            Value::Text(String::from_utf8(t.clone()).map_err(|_| bad())?)
        }
        _ => return Err(bad()),
    })
}

/// One column's Arrow builder.
enum Column {
    Bool(BooleanBuilder),
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Decimal(Decimal128Builder),
    Float64(Float64Builder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder),
    Utf8(StringBuilder),
}

impl Column {
    fn new(ty: DataType, rows: usize) -> Result<Column> {
        Ok(match ty {
            DataType::Bool => Column::Bool(BooleanBuilder::with_capacity(rows)),
            DataType::Int16 => Column::Int16(Int16Builder::with_capacity(rows)),
            DataType::Int32 => Column::Int32(Int32Builder::with_capacity(rows)),
            DataType::Int64 => Column::Int64(Int64Builder::with_capacity(rows)),
            DataType::Numeric { scale, .. } => Column::Decimal(
                Decimal128Builder::with_capacity(rows)
                    .with_precision_and_scale(NUMERIC_MAX_PRECISION, scale as i8)
                    .map_err(|e| SqlError::internal(e.to_string()))?,
            ),
            DataType::Float64 => Column::Float64(Float64Builder::with_capacity(rows)),
            DataType::Date => Column::Date(Date32Builder::with_capacity(rows)),
            DataType::Timestamp => Column::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows)),
            DataType::Char(_) | DataType::Varchar(_) | DataType::Text => {
                Column::Utf8(StringBuilder::with_capacity(rows, rows * 16))
            }
            DataType::Interval | DataType::Unknown => {
                return Err(SqlError::internal(format!("a stored column of type {ty}")));
            }
        })
    }

    /// Appends one stored value; None for NULL.
    #[inline]
    fn push(&mut self, v: &fs::Value) -> Result<()> {
        let corrupt = || SqlError::new(SqlState::DATA_CORRUPTED, format!("a stored value {v:?} has the wrong kind"));
        match (self, v) {
            (Column::Bool(b), fs::Value::Null) => b.append_null(),
            (Column::Int16(b), fs::Value::Null) => b.append_null(),
            (Column::Int32(b), fs::Value::Null) => b.append_null(),
            (Column::Int64(b), fs::Value::Null) => b.append_null(),
            (Column::Decimal(b), fs::Value::Null) => b.append_null(),
            (Column::Float64(b), fs::Value::Null) => b.append_null(),
            (Column::Date(b), fs::Value::Null) => b.append_null(),
            (Column::Timestamp(b), fs::Value::Null) => b.append_null(),
            (Column::Utf8(b), fs::Value::Null) => b.append_null(),
            (Column::Bool(b), fs::Value::Int(x)) => b.append_value(*x != 0),
            (Column::Int16(b), fs::Value::Int(x)) => b.append_value(i16::try_from(*x).map_err(|_| corrupt())?),
            (Column::Int32(b), fs::Value::Int(x)) => b.append_value(i32::try_from(*x).map_err(|_| corrupt())?),
            (Column::Int64(b), fs::Value::Int(x)) => b.append_value(*x),
            (Column::Decimal(b), fs::Value::Int(x)) => b.append_value(i128::from(*x)),
            (Column::Float64(b), fs::Value::Int(x)) => b.append_value(fs::Value::as_float(*x)),
            (Column::Date(b), fs::Value::Int(x)) => b.append_value(i32::try_from(*x).map_err(|_| corrupt())?),
            (Column::Timestamp(b), fs::Value::Int(x)) => b.append_value(*x),
            (Column::Utf8(b), fs::Value::Text(t)) => b.append_value(std::str::from_utf8(t).map_err(|_| corrupt())?),
            _ => return Err(corrupt()),
        }
        Ok(())
    }

    /// Appends column `column` (slot `slot` of `layout`) of every tuple,
    /// decoded from its bytes: one type dispatch per column and batch, not
    /// per value. The caller checked that every tuple holds the fixed area.
    fn push_slot(&mut self, layout: &Layout, column: usize, slot: &ColumnSlot, tuples: &Tuples) -> Result<()> {
        let r = SlotReader::new(layout, column, slot)?;
        macro_rules! each {
            ($b:expr, $t:ident => $v:expr) => {{
                for $t in tuples.iter() {
                    if r.null($t) { $b.append_null() } else { $b.append_value($v) }
                }
            }};
        }
        match (self, slot.ty) {
            (Column::Int32(b), ColumnType::Int32) => each!(b, t => r.i32(t)),
            (Column::Date(b), ColumnType::Date) => each!(b, t => r.i32(t)),
            (Column::Int64(b), ColumnType::Int64) => each!(b, t => r.i64(t)),
            (Column::Timestamp(b), ColumnType::Timestamp) => each!(b, t => r.i64(t)),
            (Column::Decimal(b), ColumnType::Decimal { .. }) => each!(b, t => i128::from(r.i64(t))),
            (Column::Float64(b), ColumnType::Float64) => each!(b, t => fs::Value::as_float(r.i64(t))),
            (Column::Int16(b), ColumnType::Int32) => {
                for t in tuples.iter() {
                    if r.null(t) {
                        b.append_null()
                    } else {
                        b.append_value(i16::try_from(r.i32(t)).map_err(|_| r.corrupt("not a smallint"))?)
                    }
                }
            }
            (Column::Bool(b), ColumnType::Bool) => {
                for t in tuples.iter() {
                    match (r.null(t), r.i32(t)) {
                        (true, _) => b.append_null(),
                        (false, v @ (0 | 1)) => b.append_value(v == 1),
                        (false, _) => return Err(r.corrupt("a boolean slot is neither 0 nor 1")),
                    }
                }
            }
            (Column::Utf8(b), ty @ (ColumnType::Text(_) | ColumnType::Varchar(_))) => push_text(b, &r, ty, tuples)?,
            (_, ty) => {
                return Err(SqlError::internal(format!("column {column}: storage type {ty:?} for its SQL type")));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Column::Bool(b) => Arc::new(b.finish()),
            Column::Int16(b) => Arc::new(b.finish()),
            Column::Int32(b) => Arc::new(b.finish()),
            Column::Int64(b) => Arc::new(b.finish()),
            Column::Decimal(b) => Arc::new(b.finish()),
            Column::Float64(b) => Arc::new(b.finish()),
            Column::Date(b) => Arc::new(b.finish()),
            Column::Timestamp(b) => Arc::new(b.finish()),
            Column::Utf8(b) => Arc::new(b.finish()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::Bool(b) => b.len(),
            Column::Int16(b) => b.len(),
            Column::Int32(b) => b.len(),
            Column::Int64(b) => b.len(),
            Column::Decimal(b) => b.len(),
            Column::Float64(b) => b.len(),
            Column::Date(b) => b.len(),
            Column::Timestamp(b) => b.len(),
            Column::Utf8(b) => b.len(),
        }
    }
}

/// Where column `column`'s value and NULL bit are in a tuple of its
/// layout; [`SlotReader::new`] checks that both lie in the fixed area, and
/// [`BatchBuilder::push_tuples`] that every tuple holds it, so the
/// accessors cannot go out of bounds.
struct SlotReader {
    column: usize,
    at: usize,
    width: usize,
    null_at: usize,
    mask: u8,
    fixed: usize,
}

impl SlotReader {
    fn new(layout: &Layout, column: usize, slot: &ColumnSlot) -> Result<SlotReader> {
        let (at, fixed) = (usize::from(slot.offset), usize::from(layout.fixed_bytes));
        let null_at = usize::from(layout.null_bitmap_offset) + column / 8;
        let width = match slot.ty {
            ColumnType::Int32 | ColumnType::Date | ColumnType::Bool | ColumnType::Varchar(_) => 4,
            ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp | ColumnType::Float64 => 8,
            ColumnType::Text(n) => usize::from(n),
        };
        if at + width > fixed || null_at >= fixed {
            return Err(SqlError::internal(format!(
                "column {column}: slot {at}+{width} outside the fixed area {fixed}"
            )));
        }
        Ok(SlotReader { column, at, width, null_at, mask: 1 << (column % 8), fixed })
    }

    #[inline]
    fn null(&self, t: &[u8]) -> bool {
        t[self.null_at] & self.mask != 0
    }

    #[inline]
    fn i32(&self, t: &[u8]) -> i32 {
        let a = self.at;
        i32::from_le_bytes([t[a], t[a + 1], t[a + 2], t[a + 3]])
    }

    #[inline]
    fn i64(&self, t: &[u8]) -> i64 {
        i64::from_le_bytes(t[self.at..self.at + 8].try_into().expect("8 bytes"))
    }

    fn corrupt(&self, what: &str) -> SqlError {
        SqlError::new(SqlState::DATA_CORRUPTED, format!("a stored value of column {}: {what}", self.column))
    }
}

/// A text column of `tuples` into `b`: char(n) without its padding,
/// varchar by its (offset, length) entry, checked to lie in its tuple.
fn push_text(b: &mut StringBuilder, r: &SlotReader, ty: ColumnType, tuples: &Tuples) -> Result<()> {
    for t in tuples.iter() {
        if r.null(t) {
            b.append_null();
            continue;
        }
        let v = match ty {
            ColumnType::Varchar(n) => {
                let (off, len) =
                    (u16::from_le_bytes([t[r.at], t[r.at + 1]]), u16::from_le_bytes([t[r.at + 2], t[r.at + 3]]));
                let (off, len) = (usize::from(off), usize::from(len));
                if len > usize::from(n) || off < r.fixed || off + len > t.len() {
                    return Err(r.corrupt("a varchar outside its tuple"));
                }
                &t[off..off + len]
            }
            _ => {
                let v = &t[r.at..r.at + r.width];
                &v[..v.iter().rposition(|&c| c != b' ').map_or(0, |p| p + 1)]
            }
        };
        b.append_value(std::str::from_utf8(v).map_err(|_| r.corrupt("not UTF-8"))?);
    }
    Ok(())
}

/// Builds record batches from stored rows: the projected columns, in
/// order, then the VID as Int64 (column `vid`) if asked. Every field is
/// nullable (the store enforces NOT NULL on write).
pub struct BatchBuilder {
    schema: SchemaRef,
    types: Vec<DataType>,
    columns: Vec<Column>,
    vid: Option<Int64Builder>,
    capacity: usize,
}

impl BatchBuilder {
    /// `columns`: (name, SQL type) of each projected column.
    pub fn new(columns: &[(String, DataType)], emit_vid: bool, capacity: usize) -> Result<BatchBuilder> {
        let mut fields: Vec<Field> = columns.iter().map(|(n, t)| Field::new(n, t.arrow(), true)).collect();
        if emit_vid {
            fields.push(Field::new("vid", arrow_schema::DataType::Int64, false));
        }
        let types: Vec<DataType> = columns.iter().map(|c| c.1).collect();
        Ok(BatchBuilder {
            schema: Arc::new(Schema::new(fields)),
            columns: types.iter().map(|&t| Column::new(t, capacity)).collect::<Result<_>>()?,
            types,
            vid: emit_vid.then(|| Int64Builder::with_capacity(capacity)),
            capacity,
        })
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows appended since the last batch.
    pub fn len(&self) -> usize {
        self.columns.first().map_or_else(|| self.vid.as_ref().map_or(0, |v| v.len()), Column::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends one stored row (the projected values, in order).
    #[inline]
    pub fn push(&mut self, vid: u64, values: &[fs::Value]) -> Result<()> {
        if values.len() != self.columns.len() {
            return Err(SqlError::internal(format!("{} values for {} columns", values.len(), self.columns.len())));
        }
        for (c, v) in self.columns.iter_mut().zip(values) {
            c.push(v)?;
        }
        if let Some(b) = &mut self.vid {
            b.append_value(vid as i64);
        }
        Ok(())
    }

    /// Appends stored tuples of `layout`, decoding the columns `projection`
    /// (in the builder's order) straight from their bytes, a column at a
    /// time (no [`fs::Value`] in between). Bytes are not trusted: a tuple
    /// shorter than the layout's fixed area, a varchar outside its tuple, a
    /// bad boolean or text that is not UTF-8 is XX001 (data corrupted).
    pub fn push_tuples(&mut self, layout: &Layout, projection: &[u16], tuples: &Tuples) -> Result<()> {
        if projection.len() != self.columns.len() {
            return Err(SqlError::internal(format!(
                "{} columns for {} builders",
                projection.len(),
                self.columns.len()
            )));
        }
        let fixed = usize::from(layout.fixed_bytes);
        if let Some((i, t)) = tuples.iter().enumerate().find(|(_, t)| t.len() < fixed) {
            return Err(SqlError::new(
                SqlState::DATA_CORRUPTED,
                format!(
                    "the stored tuple of VID {} has {} bytes; its table's tuples have at least {fixed}",
                    tuples.vids()[i],
                    t.len()
                ),
            ));
        }
        for (c, &p) in self.columns.iter_mut().zip(projection) {
            let slot = layout
                .slots
                .get(usize::from(p))
                .ok_or_else(|| SqlError::internal(format!("column {p} of {}", layout.slots.len())))?;
            c.push_slot(layout, usize::from(p), slot, tuples)?;
        }
        if let Some(b) = &mut self.vid {
            for &vid in tuples.vids() {
                b.append_value(vid as i64);
            }
        }
        Ok(())
    }

    /// The rows appended since the last batch, as one batch; the builder
    /// starts empty again.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let rows = self.len();
        let mut arrays: Vec<ArrayRef> = self.columns.iter_mut().map(Column::finish).collect();
        arrays.extend(self.vid.as_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
        // Builders keep no capacity after finish: give them some back.
        for (c, &t) in self.columns.iter_mut().zip(&self.types) {
            *c = Column::new(t, self.capacity)?;
        }
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(self.schema.clone(), arrays, &options)
            .map_err(|e| SqlError::internal(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, ty: DataType) -> ColumnDef {
        ColumnDef { name: name.into(), ty, not_null: false, default: None }
    }

    /// One column of every SQL type a table stores, and rows over them
    /// (with NULLs, padded and multi-byte text, negative numbers).
    fn all_types() -> (Vec<ColumnDef>, Vec<Vec<fs::Value>>) {
        let cols = vec![
            col("b", DataType::Bool),
            col("s", DataType::Int16),
            col("i", DataType::Int32),
            col("l", DataType::Int64),
            col("n", DataType::Numeric { precision: Some(15), scale: 2 }),
            col("f", DataType::Float64),
            col("d", DataType::Date),
            col("t", DataType::Timestamp),
            col("c", DataType::Char(5)),
            col("v", DataType::Varchar(Some(8))),
            col("x", DataType::Text),
        ];
        let text = |s: &str| fs::Value::Text(s.as_bytes().to_vec());
        let rows = (0..40i64)
            .map(|k| {
                let vals = vec![
                    fs::Value::Int(k % 2),
                    fs::Value::Int(-k * 300),
                    fs::Value::Int(k * 1_000_003 - 7),
                    fs::Value::Int(-k << 40),
                    fs::Value::Int(k * 12_345 - 99),
                    fs::Value::float(k as f64 / 3.0 - 1.5),
                    fs::Value::Int(k * 400 - 8000),
                    fs::Value::Int(k * 86_400_000_123),
                    text(["ab", "", "äb", "abcde"][k as usize % 4]),
                    text(["x", "", "día y", "12345678"][k as usize % 4]),
                    text(&"long text ".repeat(k as usize % 5)),
                ];
                // NULLs on a diagonal.
                vals.into_iter()
                    .enumerate()
                    .map(|(c, v)| if (k as usize + c).is_multiple_of(7) { fs::Value::Null } else { v })
                    .collect()
            })
            .collect();
        (cols, rows)
    }

    #[test]
    fn tuples_decode_to_the_batches_values_give() {
        let (cols, rows) = all_types();
        let layout = Layout::new(&storage_columns(&cols).unwrap()).unwrap();
        let mut tuples = Tuples::new();
        for (vid, r) in rows.iter().enumerate() {
            tuples.push(vid as u64 * 3, &layout.encode(r).unwrap());
        }
        // Every column, and a projection that reorders and repeats.
        for projection in [(0..cols.len() as u16).collect::<Vec<_>>(), vec![9, 0, 9, 4]] {
            let names: Vec<(String, DataType)> =
                projection.iter().map(|&c| (cols[usize::from(c)].name.clone(), cols[usize::from(c)].ty)).collect();
            let mut by_value = BatchBuilder::new(&names, true, 8).unwrap();
            for (vid, r) in rows.iter().enumerate() {
                let projected: Vec<fs::Value> = projection.iter().map(|&c| r[usize::from(c)].clone()).collect();
                by_value.push(vid as u64 * 3, &projected).unwrap();
            }
            let mut by_tuple = BatchBuilder::new(&names, true, 8).unwrap();
            by_tuple.push_tuples(&layout, &projection, &tuples).unwrap();
            assert_eq!(by_tuple.finish().unwrap(), by_value.finish().unwrap(), "projection {projection:?}");
        }
    }

    #[test]
    fn damaged_tuples_are_errors_never_panics() {
        let (cols, rows) = all_types();
        let layout = Layout::new(&storage_columns(&cols).unwrap()).unwrap();
        let names: Vec<(String, DataType)> = cols.iter().map(|c| (c.name.clone(), c.ty)).collect();
        let projection: Vec<u16> = (0..cols.len() as u16).collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut errors = 0;
        for round in 0..2000 {
            let mut t = layout.encode(&rows[round % rows.len()]).unwrap();
            match next() % 3 {
                0 => t.truncate(next() as usize % (t.len() + 1)),
                _ => {
                    for _ in 0..1 + next() % 4 {
                        let i = next() as usize % t.len();
                        t[i] = next() as u8;
                    }
                }
            }
            let mut tuples = Tuples::new();
            tuples.push(round as u64, &t);
            let mut b = BatchBuilder::new(&names, false, 1).unwrap();
            match b.push_tuples(&layout, &projection, &tuples) {
                Ok(()) => assert_eq!(b.finish().unwrap().num_rows(), 1),
                Err(e) => {
                    assert_eq!(e.code, SqlState::DATA_CORRUPTED, "{e:?}");
                    errors += 1;
                }
            }
        }
        assert!(errors > 100, "damage is found: {errors} errors");
    }

    #[test]
    fn every_sql_type_has_its_storage_type() {
        let st = |ty| storage_type(&col("c", ty));
        assert_eq!(st(DataType::Int16).unwrap(), ColumnType::Int32);
        assert_eq!(st(DataType::Text).unwrap(), ColumnType::Varchar(TEXT_MAX));
        assert_eq!(
            st(DataType::Numeric { precision: Some(15), scale: 2 }).unwrap(),
            ColumnType::Decimal { precision: 15, scale: 2 }
        );
        assert_eq!(st(DataType::Numeric { precision: None, scale: 16 }).unwrap_err().code, SqlState("0A000"));
        assert_eq!(st(DataType::Numeric { precision: Some(19), scale: 2 }).unwrap_err().code, SqlState("0A000"));
        assert_eq!(st(DataType::Varchar(Some(5000))).unwrap_err().code, SqlState("54000"));
    }

    #[test]
    fn values_are_checked_as_postgresql_does() {
        let small = col("s", DataType::Int16);
        assert_eq!(
            to_storage(&Value::Int32(40_000), &small, ColumnType::Int32).unwrap_err().message,
            "smallint out of range"
        );
        let n = col("n", DataType::Numeric { precision: Some(4), scale: 2 });
        let nt = ColumnType::Decimal { precision: 4, scale: 2 };
        assert_eq!(to_storage(&Value::Numeric { value: 12345, scale: 3 }, &n, nt).unwrap(), fs::Value::Int(1235));
        assert_eq!(to_storage(&Value::Numeric { value: -12345, scale: 3 }, &n, nt).unwrap(), fs::Value::Int(-1235));
        let e = to_storage(&Value::Int32(100), &n, nt).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (SqlState("22003"), "numeric field overflow"));
        assert_eq!(
            e.detail.as_deref(),
            Some("A field with precision 4, scale 2 must round to an absolute value less than 10^2.")
        );
        let v = col("v", DataType::Varchar(Some(3)));
        let vt = ColumnType::Varchar(3);
        assert_eq!(to_storage(&Value::Text("ab   ".into()), &v, vt).unwrap(), fs::Value::Text(b"ab ".to_vec()));
        let e = to_storage(&Value::Text("abcd".into()), &v, vt).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (SqlState("22001"), "value too long for type character varying(3)"));
        assert_eq!(to_storage(&Value::Text("äää".into()), &v, vt).unwrap_err().code, SqlState("54000"));
        let c = col("c", DataType::Char(4));
        assert_eq!(
            to_storage(&Value::Text("ab ".into()), &c, ColumnType::Text(4)).unwrap(),
            fs::Value::Text(b"ab".to_vec())
        );
    }
}
