//! Table schemas and the tuple layout both sides derive from them.
//!
//! A tuple is encoded with a fixed layout computed once from the schema, so
//! that the device's layout accessor can read one column of a version record
//! with a few aligned transfers, without parsing the others:
//!
//! ```text
//! tuple := fixed area | null bitmap | var area
//! fixed area: one slot per column, in schema order, each starting at a
//!             multiple of 4 (the NVM transfer granularity):
//!   int32        4 bytes  i32 LE
//!   int64        8 bytes  i64 LE
//!   decimal      8 bytes  i64 LE, the value times 10^scale
//!   timestamp    8 bytes  i64 LE, microseconds since 1970-01-01 UTC
//!   float64      8 bytes  f64 LE (IEEE-754 binary64)
//!   bool         4 bytes  byte 0: 0 false, 1 true; bytes 1..4 zero
//!   date         4 bytes  i32 LE, days since 1970-01-01
//!   text(n)      n bytes, space padded, then zero bytes up to a multiple of 4 (n <= 4096)
//!   varchar(n)   4 bytes  u16 LE offset from the tuple start, u16 LE length (n <= 4096)
//! null bitmap: ceil(columns / 8) bytes rounded up to 4; bit i set = column i NULL
//! var area:    varchar bytes, in column order
//! ```
//!
//! A NULL column's fixed slot is zero.
//!
//! Every column value is a [`Value::Int`] or a [`Value::Text`]: a float64
//! travels as its IEEE-754 bit pattern (`f64::to_bits` as i64, see
//! [`Value::float`]), a bool as 0 or 1, a date as its day number. So the
//! value type keeps `Eq`, `Ord` and `Hash`, and the integer columns the
//! device compares stay one kind; a float64's bit pattern does not order as
//! the numbers do, so the device never compares nor sums one
//! ([`ColumnType::is_numeric`] is false for it). The layout is shipped to the device as a
//! [`LayoutDescriptor`] (8 bytes per column) when a table is created.

use crate::{FormatError, u32_at};

/// Columns a table may have (a limit on everything).
pub const COLUMNS_MAX: usize = 256;
/// Longest text column.
pub const TEXT_MAX: u16 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Int32,
    Int64,
    /// Fixed-point: precision digits, `scale` of them after the point.
    Decimal {
        precision: u8,
        scale: u8,
    },
    Timestamp,
    /// Fixed-length text, space padded.
    Text(u16),
    /// Variable-length text of at most n bytes.
    Varchar(u16),
    /// IEEE-754 binary64, carried as its bit pattern in [`Value::Int`].
    Float64,
    /// 0 or 1.
    Bool,
    /// Days since 1970-01-01 (Arrow's Date32).
    Date,
}

impl ColumnType {
    fn code(self) -> u8 {
        match self {
            ColumnType::Int32 => 1,
            ColumnType::Int64 => 2,
            ColumnType::Decimal { .. } => 3,
            ColumnType::Timestamp => 4,
            ColumnType::Text(_) => 5,
            ColumnType::Varchar(_) => 6,
            ColumnType::Float64 => 7,
            ColumnType::Bool => 8,
            ColumnType::Date => 9,
        }
    }

    /// Bytes of the column's slot in the fixed area.
    pub fn slot_bytes(self) -> u16 {
        match self {
            ColumnType::Int32 | ColumnType::Varchar(_) | ColumnType::Bool | ColumnType::Date => 4,
            ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp | ColumnType::Float64 => 8,
            ColumnType::Text(n) => n.div_ceil(4) * 4,
        }
    }

    /// Whether the integer `v` (a decimal's value times 10^scale) is a value
    /// of this column type, as PostgreSQL decides: an `integer` within 32
    /// bits, a `numeric(p,s)` with at most `p` digits (else PostgreSQL's
    /// "numeric field overflow"). The reason names the type; `Err` for
    /// text types too, which hold no integers.
    pub fn check_int(self, v: i64) -> Result<(), String> {
        match self {
            ColumnType::Int32 if i32::try_from(v).is_err() => Err(format!("{v} does not fit integer")),
            ColumnType::Date if i32::try_from(v).is_err() => Err(format!("day {v} does not fit date")),
            ColumnType::Bool if v != 0 && v != 1 => Err(format!("{v} is not a boolean (0 or 1)")),
            ColumnType::Decimal { precision, scale } if v.unsigned_abs() >= 10u64.pow(u32::from(precision.min(19))) => {
                let d = 10u64.pow(u32::from(scale));
                let (int, frac) = (v.unsigned_abs() / d, v.unsigned_abs() % d);
                let sign = if v < 0 { "-" } else { "" };
                let shown = if scale == 0 {
                    format!("{sign}{int}")
                } else {
                    format!("{sign}{int}.{frac:0w$}", w = scale as usize)
                };
                Err(format!(
                    "numeric field overflow: {shown} does not fit {} (absolute values below 10^{})",
                    self.sql_name(),
                    precision - scale
                ))
            }
            ColumnType::Text(_) | ColumnType::Varchar(_) => Err(format!("{} holds no numbers", self.sql_name())),
            _ => Ok(()),
        }
    }

    /// Numeric columns can be summed, compared and aggregated on the device:
    /// those whose value is an integer (bool and date too). Not float64,
    /// whose bit pattern does not order as its numbers: its predicates and
    /// aggregates stay on the host.
    pub fn is_numeric(self) -> bool {
        !matches!(self, ColumnType::Text(_) | ColumnType::Varchar(_) | ColumnType::Float64)
    }

    /// Whether the slot holds 8 bytes (else 4) for a fixed-width value.
    pub fn is_wide(self) -> bool {
        matches!(self, ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp | ColumnType::Float64)
    }

    pub fn sql_name(self) -> String {
        match self {
            ColumnType::Int32 => "integer".into(),
            ColumnType::Int64 => "bigint".into(),
            ColumnType::Decimal { precision, scale } => format!("numeric({precision},{scale})"),
            ColumnType::Timestamp => "timestamp".into(),
            ColumnType::Text(n) => format!("char({n})"),
            ColumnType::Varchar(n) => format!("varchar({n})"),
            ColumnType::Float64 => "double precision".into(),
            ColumnType::Bool => "boolean".into(),
            ColumnType::Date => "date".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
    pub nullable: bool,
}

impl Column {
    pub fn new(name: &str, ty: ColumnType, nullable: bool) -> Column {
        Column { name: name.to_owned(), ty, nullable }
    }
}

/// A value of one column.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    Null,
    /// int32, int64, decimal (scaled) and timestamp values.
    Int(i64),
    Text(Vec<u8>),
}

impl Value {
    /// A float64 column's value: the bit pattern of `f` (module docs).
    pub fn float(f: f64) -> Value {
        Value::Int(f.to_bits() as i64)
    }

    /// The float a float64 column's [`Value::Int`] carries.
    pub fn as_float(bits: i64) -> f64 {
        f64::from_bits(bits as u64)
    }
}

/// Where one column lives in an encoded tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnSlot {
    pub ty: ColumnType,
    pub nullable: bool,
    /// Byte offset of the fixed slot from the tuple start (a multiple of 4).
    pub offset: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub slots: Vec<ColumnSlot>,
    pub null_bitmap_offset: u16,
    pub null_bitmap_bytes: u16,
    /// Fixed area plus null bitmap: the smallest tuple.
    pub fixed_bytes: u16,
}

const STRUCTURE: &str = "tuple";

impl Layout {
    /// Bytes of the longest tuple: the fixed area and every varchar full.
    pub fn max_tuple_bytes(&self) -> usize {
        let varchar: usize = self
            .slots
            .iter()
            .map(|s| match s.ty {
                ColumnType::Varchar(n) => usize::from(n),
                _ => 0,
            })
            .sum();
        usize::from(self.fixed_bytes) + varchar
    }

    /// Computes the layout of a schema; checks its limits.
    pub fn new(columns: &[Column]) -> Result<Layout, FormatError> {
        let invalid = |reason: String| FormatError::InvalidField { structure: "schema", field: "columns", reason };
        if columns.is_empty() || columns.len() > COLUMNS_MAX {
            return Err(invalid(format!("{} columns; a table has 1 to {COLUMNS_MAX}", columns.len())));
        }
        let mut offset: u32 = 0;
        let mut slots = Vec::with_capacity(columns.len());
        for c in columns {
            match c.ty {
                ColumnType::Text(n) | ColumnType::Varchar(n) if n == 0 || n > TEXT_MAX => {
                    return Err(invalid(format!("column {}: text length {n} is not in 1..={TEXT_MAX}", c.name)));
                }
                ColumnType::Decimal { precision, scale } if precision == 0 || precision > 18 || scale > precision => {
                    return Err(invalid(format!(
                        "column {}: numeric({precision},{scale}) needs 1 <= precision <= 18 and scale <= precision",
                        c.name
                    )));
                }
                _ => {}
            }
            debug_assert!(offset.is_multiple_of(4), "column slots are 4-aligned");
            slots.push(ColumnSlot { ty: c.ty, nullable: c.nullable, offset: offset as u16 });
            offset += u32::from(c.ty.slot_bytes());
        }
        let null_bitmap_bytes = (columns.len().div_ceil(8) as u32).div_ceil(4) * 4;
        let fixed = offset + null_bitmap_bytes;
        if fixed > 32_000 {
            return Err(invalid(format!("the fixed part of a tuple would take {fixed} bytes; at most 32000")));
        }
        Ok(Layout {
            slots,
            null_bitmap_offset: offset as u16,
            null_bitmap_bytes: null_bitmap_bytes as u16,
            fixed_bytes: fixed as u16,
        })
    }

    /// Encodes a row. `values` must match the schema (checked).
    pub fn encode(&self, values: &[Value]) -> Result<Vec<u8>, FormatError> {
        let invalid = |reason: String| FormatError::InvalidField { structure: STRUCTURE, field: "values", reason };
        if values.len() != self.slots.len() {
            return Err(invalid(format!("{} values for {} columns", values.len(), self.slots.len())));
        }
        let mut out = vec![0u8; usize::from(self.fixed_bytes)];
        for (i, (slot, v)) in self.slots.iter().zip(values).enumerate() {
            let at = usize::from(slot.offset);
            match (slot.ty, v) {
                (_, Value::Null) if slot.nullable => out[usize::from(self.null_bitmap_offset) + i / 8] |= 1 << (i % 8),
                (_, Value::Null) => return Err(invalid(format!("column {i} is NOT NULL"))),
                (ColumnType::Int32, Value::Int(x)) => {
                    let x = i32::try_from(*x).map_err(|_| invalid(format!("column {i}: {x} does not fit int32")))?;
                    out[at..at + 4].copy_from_slice(&x.to_le_bytes());
                }
                (ty @ (ColumnType::Bool | ColumnType::Date), Value::Int(x)) => {
                    ty.check_int(*x).map_err(|e| invalid(format!("column {i}: {e}")))?;
                    out[at..at + 4].copy_from_slice(&(*x as i32).to_le_bytes());
                }
                (ty @ ColumnType::Decimal { .. }, Value::Int(x)) => {
                    ty.check_int(*x).map_err(|e| invalid(format!("column {i}: {e}")))?;
                    out[at..at + 8].copy_from_slice(&x.to_le_bytes())
                }
                (ColumnType::Int64 | ColumnType::Timestamp | ColumnType::Float64, Value::Int(x)) => {
                    out[at..at + 8].copy_from_slice(&x.to_le_bytes())
                }
                (ColumnType::Text(n), Value::Text(t)) => {
                    if t.len() > usize::from(n) {
                        return Err(invalid(format!("column {i}: {} bytes for char({n})", t.len())));
                    }
                    out[at..at + t.len()].copy_from_slice(t);
                    out[at + t.len()..at + usize::from(n)].fill(b' ');
                }
                (ColumnType::Varchar(n), Value::Text(t)) => {
                    if t.len() > usize::from(n) {
                        return Err(invalid(format!("column {i}: {} bytes for varchar({n})", t.len())));
                    }
                    let off = out.len();
                    if off + t.len() > usize::from(u16::MAX) {
                        return Err(invalid("tuple longer than 65535 bytes".into()));
                    }
                    out[at..at + 2].copy_from_slice(&(off as u16).to_le_bytes());
                    out[at + 2..at + 4].copy_from_slice(&(t.len() as u16).to_le_bytes());
                    out.extend_from_slice(t);
                }
                (ty, v) => return Err(invalid(format!("column {i}: {v:?} is not a {}", ty.sql_name()))),
            }
        }
        Ok(out)
    }

    /// Decodes one column of an encoded tuple, checking every offset.
    pub fn column(&self, tuple: &[u8], i: usize) -> Result<Value, FormatError> {
        let slot = self.slots.get(i).ok_or_else(|| FormatError::InvalidField {
            structure: STRUCTURE,
            field: "column",
            reason: format!("column {i} of {}", self.slots.len()),
        })?;
        if tuple.len() < usize::from(self.fixed_bytes) {
            return Err(FormatError::Truncated {
                structure: STRUCTURE,
                needed: self.fixed_bytes.into(),
                found: tuple.len(),
            });
        }
        if tuple[usize::from(self.null_bitmap_offset) + i / 8] & (1 << (i % 8)) != 0 {
            return Ok(Value::Null);
        }
        let at = usize::from(slot.offset);
        Ok(match slot.ty {
            ColumnType::Int32 | ColumnType::Date => Value::Int(i64::from(u32_at(tuple, at) as i32)),
            ColumnType::Bool => match u32_at(tuple, at) {
                b @ (0 | 1) => Value::Int(i64::from(b)),
                other => {
                    return Err(FormatError::InvalidField {
                        structure: STRUCTURE,
                        field: "bool",
                        reason: format!("column {i}: slot {other:#x}, not 0 or 1"),
                    });
                }
            },
            ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp | ColumnType::Float64 => {
                Value::Int(i64::from_le_bytes(tuple[at..at + 8].try_into().expect("8 bytes")))
            }
            ColumnType::Text(n) => {
                let t = &tuple[at..at + usize::from(n)];
                let end = t.iter().rposition(|&b| b != b' ').map_or(0, |p| p + 1);
                Value::Text(t[..end].to_vec())
            }
            ColumnType::Varchar(n) => {
                let off = usize::from(u16::from_le_bytes([tuple[at], tuple[at + 1]]));
                let len = usize::from(u16::from_le_bytes([tuple[at + 2], tuple[at + 3]]));
                if len > usize::from(n) || off < usize::from(self.fixed_bytes) || off + len > tuple.len() {
                    return Err(FormatError::InvalidField {
                        structure: STRUCTURE,
                        field: "varchar",
                        reason: format!(
                            "column {i}: bytes {off}..{} outside the {}-byte tuple",
                            off + len,
                            tuple.len()
                        ),
                    });
                }
                Value::Text(tuple[off..off + len].to_vec())
            }
        })
    }

    pub fn decode(&self, tuple: &[u8]) -> Result<Vec<Value>, FormatError> {
        (0..self.slots.len()).map(|i| self.column(tuple, i)).collect()
    }

    /// Numeric column `i` of an encoded tuple, None for NULL.
    pub fn int_column(&self, tuple: &[u8], i: usize) -> Result<Option<i64>, FormatError> {
        match self.column(tuple, i)? {
            Value::Null => Ok(None),
            Value::Int(v) => Ok(Some(v)),
            Value::Text(_) => Err(not_numeric(i)),
        }
    }

    /// Sets numeric column `i` of an encoded tuple to `v` in place and clears
    /// its NULL bit; the tuple keeps its length. `v` must be a value of the
    /// column's type ([`ColumnType::check_int`]).
    pub fn set_int(&self, tuple: &mut [u8], i: usize, v: i64) -> Result<(), FormatError> {
        self.int_column(tuple, i)?;
        let slot = self.slots[i];
        slot.ty.check_int(v).map_err(|reason| FormatError::InvalidField {
            structure: STRUCTURE,
            field: "values",
            reason,
        })?;
        let at = usize::from(slot.offset);
        if slot.ty.is_wide() {
            tuple[at..at + 8].copy_from_slice(&v.to_le_bytes());
        } else {
            tuple[at..at + 4].copy_from_slice(&(v as i32).to_le_bytes());
        }
        tuple[usize::from(self.null_bitmap_offset) + i / 8] &= !(1 << (i % 8));
        Ok(())
    }
}

#[cold]
fn not_numeric(i: usize) -> FormatError {
    FormatError::InvalidField { structure: STRUCTURE, field: "column", reason: format!("column {i} is not numeric") }
}

/// The layout as the device receives it: 8 bytes of header, 8 per column.
///
/// ```text
/// 0  4 magic b"NDPL"
/// 4  2 columns u16
/// 6  2 fixed_bytes u16
/// then per column:
/// 0  1 type code (1 int32, 2 int64, 3 decimal, 4 timestamp, 5 text, 6 varchar,
///                 7 float64, 8 bool, 9 date)
/// 1  1 flags: bit 0 nullable
/// 2  2 offset u16
/// 4  2 length (text, varchar) or precision<<8|scale (decimal), else 0
/// 6  2 reserved 0
/// ```
pub struct LayoutDescriptor;

const LAYOUT_MAGIC: [u8; 4] = *b"NDPL";

impl LayoutDescriptor {
    pub fn encode(layout: &Layout) -> Vec<u8> {
        let mut b = Vec::with_capacity(8 + 8 * layout.slots.len());
        b.extend_from_slice(&LAYOUT_MAGIC);
        b.extend_from_slice(&(layout.slots.len() as u16).to_le_bytes());
        b.extend_from_slice(&layout.fixed_bytes.to_le_bytes());
        for s in &layout.slots {
            let extra: u16 = match s.ty {
                ColumnType::Text(n) | ColumnType::Varchar(n) => n,
                ColumnType::Decimal { precision, scale } => u16::from(precision) << 8 | u16::from(scale),
                _ => 0,
            };
            b.push(s.ty.code());
            b.push(u8::from(s.nullable));
            b.extend_from_slice(&s.offset.to_le_bytes());
            b.extend_from_slice(&extra.to_le_bytes());
            b.extend_from_slice(&[0, 0]);
        }
        b
    }

    /// Rebuilds the layout and checks that it is the one its columns imply.
    pub fn decode(b: &[u8]) -> Result<Layout, FormatError> {
        const S: &str = "layout descriptor";
        if b.len() < 8 {
            return Err(FormatError::Truncated { structure: S, needed: 8, found: b.len() });
        }
        if b[0..4] != LAYOUT_MAGIC {
            return Err(FormatError::BadMagic { structure: S, found: b[0..4].to_vec() });
        }
        let n = usize::from(u16::from_le_bytes([b[4], b[5]]));
        if b.len() < 8 + 8 * n {
            return Err(FormatError::Truncated { structure: S, needed: 8 + 8 * n, found: b.len() });
        }
        let mut columns = Vec::with_capacity(n);
        for i in 0..n {
            let c = &b[8 + 8 * i..16 + 8 * i];
            let extra = u16::from_le_bytes([c[4], c[5]]);
            let ty = match c[0] {
                1 => ColumnType::Int32,
                2 => ColumnType::Int64,
                3 => ColumnType::Decimal { precision: (extra >> 8) as u8, scale: extra as u8 },
                4 => ColumnType::Timestamp,
                5 => ColumnType::Text(extra),
                6 => ColumnType::Varchar(extra),
                7 => ColumnType::Float64,
                8 => ColumnType::Bool,
                9 => ColumnType::Date,
                other => {
                    return Err(FormatError::InvalidField {
                        structure: S,
                        field: "type",
                        reason: format!("column {i}: code {other}"),
                    });
                }
            };
            if c[1] > 1 {
                return Err(FormatError::InvalidField {
                    structure: S,
                    field: "flags",
                    reason: format!("column {i}: {:#x}", c[1]),
                });
            }
            columns.push(Column { name: format!("c{i}"), ty, nullable: c[1] == 1 });
        }
        let layout = Layout::new(&columns)?;
        let offsets_match = layout
            .slots
            .iter()
            .enumerate()
            .all(|(i, s)| u16::from_le_bytes([b[10 + 8 * i], b[11 + 8 * i]]) == s.offset);
        if !offsets_match || u16::from_le_bytes([b[6], b[7]]) != layout.fixed_bytes {
            return Err(FormatError::InvalidField {
                structure: S,
                field: "offset",
                reason: "offsets disagree with the column types".into(),
            });
        }
        Ok(layout)
    }
}

/// Microseconds in a day.
const DAY_US: i64 = 86_400_000_000;

/// A `timestamp` value (microseconds since 1970-01-01 00:00:00 UTC) as
/// PostgreSQL prints one: `YYYY-MM-DD HH:MM:SS`, then `.` and the fraction
/// of the second without trailing zeros when there is one.
pub fn format_timestamp(us: i64) -> String {
    let (days, in_day) = (us.div_euclid(DAY_US), us.rem_euclid(DAY_US));
    let (y, m, d) = civil_from_days(days);
    let (secs, frac) = (in_day / 1_000_000, in_day % 1_000_000);
    let mut out = format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        out.push_str(format!(".{frac:06}").trim_end_matches('0'));
    }
    out
}

/// Parses `YYYY-MM-DD`, optionally followed by ` HH:MM`, `:SS` and
/// `.ffffff` (or `T` for the space), as PostgreSQL reads a `timestamp`
/// literal without a time zone; years 1 to 9999. None if it is not one.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], s[i + 1..].trim()),
        None => (s, ""),
    };
    let num = |t: &str, digits: std::ops::RangeInclusive<usize>| -> Option<i64> {
        (digits.contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse().ok())?
    };
    let mut ymd = date.split('-');
    let (y, m, d) = (num(ymd.next()?, 4..=4)?, num(ymd.next()?, 1..=2)?, num(ymd.next()?, 1..=2)?);
    if ymd.next().is_some() || y == 0 || !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    let mut us = days_from_civil(y, m, d) * DAY_US;
    if !time.is_empty() {
        let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
        let mut parts = hms.split(':');
        let h = num(parts.next()?, 1..=2)?;
        let mi = num(parts.next()?, 1..=2)?;
        let sec = parts.next().map_or(Some(0), |p| num(p, 1..=2))?;
        if parts.next().is_some() || h > 23 || mi > 59 || sec > 59 || frac.len() > 6 {
            return None;
        }
        let f = if frac.is_empty() { 0 } else { num(frac, 1..=6)? * 10i64.pow(6 - frac.len() as u32) };
        us += ((h * 60 + mi) * 60 + sec) * 1_000_000 + f;
    }
    Some(us)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day counted from 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn order_line() -> Vec<Column> {
        vec![
            Column::new("ol_o_id", ColumnType::Int32, false),
            Column::new("ol_delivery_d", ColumnType::Timestamp, true),
            Column::new("ol_amount", ColumnType::Decimal { precision: 6, scale: 2 }, false),
            Column::new("ol_dist_info", ColumnType::Text(24), false),
            Column::new("note", ColumnType::Varchar(40), true),
        ]
    }

    #[test]
    fn offsets_are_aligned_and_roundtrip() {
        let layout = Layout::new(&order_line()).unwrap();
        assert!(layout.slots.iter().all(|s| s.offset % 4 == 0));
        let row = vec![
            Value::Int(7),
            Value::Null,
            Value::Int(12345),
            Value::Text(b"abc".to_vec()),
            Value::Text(b"hi".to_vec()),
        ];
        let t = layout.encode(&row).unwrap();
        assert_eq!(layout.decode(&t).unwrap(), row);
        assert_eq!(LayoutDescriptor::decode(&LayoutDescriptor::encode(&layout)).unwrap(), Layout { ..layout });
    }

    #[test]
    fn float_bool_and_date_roundtrip() {
        let cols = [
            Column::new("f", ColumnType::Float64, true),
            Column::new("b", ColumnType::Bool, true),
            Column::new("d", ColumnType::Date, false),
        ];
        let layout = Layout::new(&cols).unwrap();
        assert_eq!(layout.slots.iter().map(|s| s.offset).collect::<Vec<_>>(), [0, 8, 12]);
        let row = vec![Value::float(-2.5), Value::Int(1), Value::Int(-719_162)];
        let t = layout.encode(&row).unwrap();
        assert_eq!(&t[0..8], &(-2.5f64).to_le_bytes());
        assert_eq!(&t[8..12], &[1, 0, 0, 0]);
        assert_eq!(layout.decode(&t).unwrap(), row);
        assert_eq!(Value::as_float((-2.5f64).to_bits() as i64), -2.5);
        assert!(layout.encode(&[Value::Null, Value::Int(2), Value::Int(0)]).is_err(), "a bool is 0 or 1");
        assert!(layout.encode(&[Value::Null, Value::Null, Value::Int(1 << 40)]).is_err(), "a date is 32 bits");
        let mut bad = t.clone();
        bad[8] = 2;
        assert!(layout.column(&bad, 1).is_err(), "a bool slot holding 2 is corrupt");
        let desc = LayoutDescriptor::encode(&layout);
        assert_eq!(&desc[8..9], &[7]);
        assert_eq!(&desc[16..17], &[8]);
        assert_eq!(&desc[24..25], &[9]);
        assert_eq!(LayoutDescriptor::decode(&desc).unwrap(), layout);
        assert!(!ColumnType::Float64.is_numeric() && ColumnType::Bool.is_numeric() && ColumnType::Date.is_numeric());
    }

    #[test]
    fn numeric_columns_update_in_place() {
        let layout = Layout::new(&order_line()).unwrap();
        let row = [Value::Int(7), Value::Null, Value::Int(12345), Value::Text(b"abc".to_vec()), Value::Null];
        let mut t = layout.encode(&row).unwrap();
        assert_eq!(layout.int_column(&t, 1).unwrap(), None);
        layout.set_int(&mut t, 1, -5).unwrap();
        layout.set_int(&mut t, 0, -9).unwrap();
        assert_eq!(layout.int_column(&t, 1).unwrap(), Some(-5), "SET clears the NULL bit");
        let expect = [Value::Int(-9), Value::Int(-5), Value::Int(12345), Value::Text(b"abc".to_vec()), Value::Null];
        assert_eq!(layout.decode(&t).unwrap(), expect);
        assert!(layout.set_int(&mut t, 0, 1 << 40).is_err(), "an integer holds 32 bits");
        assert!(layout.set_int(&mut t, 3, 1).is_err() && layout.int_column(&t, 3).is_err(), "text");
        assert!(layout.set_int(&mut t[..8], 0, 1).is_err(), "a tuple shorter than its fixed part");
        assert_eq!(layout.decode(&t).unwrap(), expect, "failed updates leave the tuple alone");
    }

    #[test]
    fn schema_violations_are_errors() {
        let layout = Layout::new(&order_line()).unwrap();
        assert!(layout.encode(&[Value::Null, Value::Null, Value::Int(1), Value::Null, Value::Null]).is_err());
        assert!(
            layout
                .encode(&[Value::Int(1 << 40), Value::Null, Value::Int(1), Value::Text(vec![]), Value::Null])
                .is_err()
        );
        assert!(layout.encode(&[Value::Int(1)]).is_err());
        // numeric(6,2) holds -9999.99..=9999.99, as in PostgreSQL.
        let row = |amount| [Value::Int(1), Value::Null, Value::Int(amount), Value::Text(vec![]), Value::Null];
        assert!(layout.encode(&row(999_999)).is_ok());
        assert!(layout.encode(&row(-999_999)).is_ok());
        let e = layout.encode(&row(1_000_000)).unwrap_err().to_string();
        assert!(e.contains("numeric field overflow: 10000.00 does not fit numeric(6,2)"), "{e}");
        assert!(layout.encode(&row(-1_000_001)).unwrap_err().to_string().contains("-10000.01"));
        assert!(layout.encode(&row(i64::MIN)).is_err());
        assert!(Layout::new(&[]).is_err());
        assert!(Layout::new(&[Column::new("t", ColumnType::Text(0), false)]).is_err());
    }

    #[test]
    fn timestamps_read_and_print_as_postgresql_does() {
        assert_eq!(format_timestamp(0), "1970-01-01 00:00:00");
        assert_eq!(format_timestamp(1_700_000_000_000_000), "2023-11-14 22:13:20");
        assert_eq!(format_timestamp(1_700_000_000_500_000), "2023-11-14 22:13:20.5");
        assert_eq!(format_timestamp(-1), "1969-12-31 23:59:59.999999");
        assert_eq!(format_timestamp(951_782_400_000_000), "2000-02-29 00:00:00");
        assert_eq!(parse_timestamp("2023-11-14 22:13:20"), Some(1_700_000_000_000_000));
        assert_eq!(parse_timestamp("2023-11-14T22:13:20.5"), Some(1_700_000_000_500_000));
        assert_eq!(parse_timestamp("1970-01-01"), Some(0));
        assert_eq!(parse_timestamp("2000-02-29 00:00"), Some(951_782_400_000_000));
        for bad in
            ["2023-02-29", "2023-13-01", "2023-11-14 24:00", "2023-11-14 22:13:20.1234567", "0000-01-01", "5", ""]
        {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn timestamps_roundtrip(us in -62_135_596_800_000_000i64..253_402_300_800_000_000) {
            prop_assert_eq!(parse_timestamp(&format_timestamp(us)), Some(us));
        }

        #[test]
        fn timestamp_parse_never_panics(s in "\\PC{0,40}") {
            let _ = parse_timestamp(&s);
        }

        #[test]
        fn tuple_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), i in 0usize..6) {
            let layout = Layout::new(&order_line()).unwrap();
            let _ = layout.column(&bytes, i);
            let mut bytes = bytes;
            let _ = layout.set_int(&mut bytes, i, 3);
        }

        #[test]
        fn descriptor_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = LayoutDescriptor::decode(&bytes);
            let mut b = b"NDPL".to_vec();
            b.extend_from_slice(&bytes);
            let _ = LayoutDescriptor::decode(&b);
        }
    }
}
