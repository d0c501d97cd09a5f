//! SQL types and values, as PostgreSQL defines them.
//!
//! [`DataType`] is the type the binder gives every expression and column;
//! [`Value`] is one value of it, used where the engine handles single values
//! (literals, constant folding, DML rows, results handed to a client).
//! The executor works on Arrow arrays instead; [`DataType::arrow`] is the
//! one mapping between the two worlds:
//!
//! ```text
//!  SQL type              Value                      Arrow array
//!  boolean               Bool(bool)                 Boolean
//!  smallint/int/bigint   Int16/Int32/Int64          Int16/Int32/Int64
//!  numeric(p,s)          Numeric{value, scale}      Decimal128(38, s)
//!  double precision      Float64                    Float64
//!  date                  Date(days since 1970)      Date32
//!  timestamp             Timestamp(us since 1970)   Timestamp(us)
//!  interval              Interval{months,days,us}   Interval(MonthDayNano)
//!  char(n)/varchar/text  Text(String)               Utf8
//!  (untyped NULL)        Null                       Null
//! ```
//!
//! Submodules: [`format`](mod@format) (text output, [`pg_text`]), [`parse`] (text
//! input, [`parse_value`]), [`arrow`] (values ↔ arrays), [`ops`] (casts,
//! comparisons and arithmetic on single values: the reference semantics
//! the vectorized evaluator follows), [`numeric`] (fixed-point arithmetic
//! and the scale rules), [`datetime`] (calendar arithmetic).
//!
//! Numeric: a column or expression of type numeric has one scale (the
//! declared one, or the one PostgreSQL's rules give an expression), so a
//! Decimal128 array can hold it. Unconstrained `numeric` columns get scale
//! [`NUMERIC_DEFAULT_SCALE`]. PostgreSQL chooses the scale of a division
//! and of `avg` per value; ndpdb chooses it per expression (`docs/sql.md`,
//! "Differences from PostgreSQL").

pub mod arrow;
pub mod datetime;
pub mod format;
pub mod numeric;
pub mod ops;
pub mod parse;

use std::fmt;

pub use format::pg_text;
pub use parse::parse_value;

/// Scale given to `numeric` without a declared scale, and the smallest
/// scale of a numeric quotient or average.
pub const NUMERIC_DEFAULT_SCALE: u8 = 16;
/// Largest precision a numeric value may reach (Decimal128's).
pub const NUMERIC_MAX_PRECISION: u8 = 38;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    Bool,
    Int16,
    Int32,
    Int64,
    /// `numeric(p,s)`; `precision` None = unconstrained (`numeric`).
    Numeric {
        precision: Option<u8>,
        scale: u8,
    },
    /// `double precision` (also `real`, `float`).
    Float64,
    Date,
    Timestamp,
    Interval,
    /// `char(n)`: blank padded to n characters.
    Char(u16),
    /// `varchar(n)`; None = no limit (`varchar` alone).
    Varchar(Option<u16>),
    Text,
    /// The type of an untyped NULL literal (PostgreSQL's `unknown`).
    Unknown,
}

impl DataType {
    /// PostgreSQL's name of the type, as `format_type` prints it (the
    /// column headings of psql's `\d` and error messages use it).
    pub fn pg_name(&self) -> String {
        match self {
            DataType::Bool => "boolean".into(),
            DataType::Int16 => "smallint".into(),
            DataType::Int32 => "integer".into(),
            DataType::Int64 => "bigint".into(),
            DataType::Numeric { precision: Some(p), scale } => format!("numeric({p},{scale})"),
            DataType::Numeric { precision: None, .. } => "numeric".into(),
            DataType::Float64 => "double precision".into(),
            DataType::Date => "date".into(),
            DataType::Timestamp => "timestamp without time zone".into(),
            DataType::Interval => "interval".into(),
            DataType::Char(n) => format!("character({n})"),
            DataType::Varchar(Some(n)) => format!("character varying({n})"),
            DataType::Varchar(None) => "character varying".into(),
            DataType::Text => "text".into(),
            DataType::Unknown => "unknown".into(),
        }
    }

    /// PostgreSQL's type OID (pg_type.oid), for the wire protocol.
    pub fn pg_oid(&self) -> u32 {
        match self {
            DataType::Bool => 16,
            DataType::Int16 => 21,
            DataType::Int32 => 23,
            DataType::Int64 => 20,
            DataType::Numeric { .. } => 1700,
            DataType::Float64 => 701,
            DataType::Date => 1082,
            DataType::Timestamp => 1114,
            DataType::Interval => 1186,
            DataType::Char(_) => 1042,
            DataType::Varchar(_) => 1043,
            DataType::Text => 25,
            DataType::Unknown => 705,
        }
    }

    /// The Arrow type of arrays holding this type (the table in the
    /// module doc).
    pub fn arrow(&self) -> arrow_schema::DataType {
        use arrow_schema::{DataType as A, IntervalUnit, TimeUnit};
        match self {
            DataType::Bool => A::Boolean,
            DataType::Int16 => A::Int16,
            DataType::Int32 => A::Int32,
            DataType::Int64 => A::Int64,
            DataType::Numeric { scale, .. } => A::Decimal128(NUMERIC_MAX_PRECISION, *scale as i8),
            DataType::Float64 => A::Float64,
            DataType::Date => A::Date32,
            DataType::Timestamp => A::Timestamp(TimeUnit::Microsecond, None),
            DataType::Interval => A::Interval(IntervalUnit::MonthDayNano),
            DataType::Char(_) | DataType::Varchar(_) | DataType::Text => A::Utf8,
            DataType::Unknown => A::Null,
        }
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, DataType::Int16 | DataType::Int32 | DataType::Int64)
    }

    /// Integer, numeric or float.
    pub fn is_numeric(&self) -> bool {
        self.is_integer() || matches!(self, DataType::Numeric { .. } | DataType::Float64)
    }

    pub fn is_text(&self) -> bool {
        matches!(self, DataType::Char(_) | DataType::Varchar(_) | DataType::Text)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pg_name())
    }
}

/// PostgreSQL's interval: months, days and microseconds kept apart (a
/// month is not a fixed number of days).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// One SQL value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    /// `value` × 10^-`scale`.
    Numeric {
        value: i128,
        scale: u8,
    },
    Float64(f64),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01 00:00:00.
    Timestamp(i64),
    Interval(Interval),
    Text(String),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The type a value has on its own (a literal's type before coercion).
    pub fn data_type(&self) -> DataType {
        match self {
            Value::Null => DataType::Unknown,
            Value::Bool(_) => DataType::Bool,
            Value::Int16(_) => DataType::Int16,
            Value::Int32(_) => DataType::Int32,
            Value::Int64(_) => DataType::Int64,
            Value::Numeric { scale, .. } => DataType::Numeric { precision: None, scale: *scale },
            Value::Float64(_) => DataType::Float64,
            Value::Date(_) => DataType::Date,
            Value::Timestamp(_) => DataType::Timestamp,
            Value::Interval(_) => DataType::Interval,
            Value::Text(_) => DataType::Text,
        }
    }
}
