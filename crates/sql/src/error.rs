//! Errors of the SQL engine: every one carries PostgreSQL's SQLSTATE.
//!
//! A user of psql or a driver reads the code (`42P01`, `22012`, ...) as much
//! as the message, and the server (issue 18) sends both; the embedded API
//! returns the same [`SqlError`]. Messages follow PostgreSQL's wording where
//! PostgreSQL has one (so the `.slt` files can hold PostgreSQL's text), and
//! a `hint` says what to change where the message alone does not.

use std::fmt;

/// A five-character SQLSTATE code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SqlState(pub &'static str);

impl SqlState {
    pub const SYNTAX_ERROR: SqlState = SqlState("42601");
    pub const UNDEFINED_TABLE: SqlState = SqlState("42P01");
    pub const UNDEFINED_COLUMN: SqlState = SqlState("42703");
    pub const UNDEFINED_FUNCTION: SqlState = SqlState("42883");
    pub const UNDEFINED_OBJECT: SqlState = SqlState("42704");
    pub const AMBIGUOUS_COLUMN: SqlState = SqlState("42702");
    pub const DUPLICATE_TABLE: SqlState = SqlState("42P07");
    pub const DUPLICATE_OBJECT: SqlState = SqlState("42710");
    pub const DUPLICATE_COLUMN: SqlState = SqlState("42701");
    pub const DATATYPE_MISMATCH: SqlState = SqlState("42804");
    pub const GROUPING_ERROR: SqlState = SqlState("42803");
    pub const INVALID_COLUMN_REFERENCE: SqlState = SqlState("42P10");
    pub const WRONG_OBJECT_TYPE: SqlState = SqlState("42809");
    pub const FEATURE_NOT_SUPPORTED: SqlState = SqlState("0A000");
    pub const NUMERIC_VALUE_OUT_OF_RANGE: SqlState = SqlState("22003");
    pub const DIVISION_BY_ZERO: SqlState = SqlState("22012");
    pub const INVALID_TEXT_REPRESENTATION: SqlState = SqlState("22P02");
    pub const INVALID_DATETIME_FORMAT: SqlState = SqlState("22007");
    pub const DATETIME_FIELD_OVERFLOW: SqlState = SqlState("22008");
    pub const STRING_DATA_RIGHT_TRUNCATION: SqlState = SqlState("22001");
    pub const INVALID_PARAMETER_VALUE: SqlState = SqlState("22023");
    pub const INVALID_ESCAPE_SEQUENCE: SqlState = SqlState("22025");
    pub const CARDINALITY_VIOLATION: SqlState = SqlState("21000");
    pub const NOT_NULL_VIOLATION: SqlState = SqlState("23502");
    pub const UNIQUE_VIOLATION: SqlState = SqlState("23505");
    pub const SERIALIZATION_FAILURE: SqlState = SqlState("40001");
    pub const DEADLOCK_DETECTED: SqlState = SqlState("40P01");
    pub const IN_FAILED_TRANSACTION: SqlState = SqlState("25P02");
    pub const ACTIVE_TRANSACTION: SqlState = SqlState("25001");
    pub const NO_ACTIVE_TRANSACTION: SqlState = SqlState("25P01");
    pub const QUERY_CANCELED: SqlState = SqlState("57014");
    pub const OUT_OF_MEMORY: SqlState = SqlState("53200");
    pub const DISK_FULL: SqlState = SqlState("53100");
    pub const PROGRAM_LIMIT_EXCEEDED: SqlState = SqlState("54000");
    pub const UNDEFINED_PARAMETER: SqlState = SqlState("42704");
    pub const CANT_CHANGE_RUNTIME_PARAM: SqlState = SqlState("55P02");
    pub const UNDEFINED_FILE: SqlState = SqlState("58P01");
    pub const IO_ERROR: SqlState = SqlState("58030");
    pub const DATA_CORRUPTED: SqlState = SqlState("XX001");
    pub const INTERNAL_ERROR: SqlState = SqlState("XX000");
}

impl fmt::Display for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// An error the engine reports to its caller: SQLSTATE, message and
/// optional detail and hint, as PostgreSQL's ErrorResponse carries them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SqlError {
    pub code: SqlState,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl SqlError {
    pub fn new(code: SqlState, message: impl Into<String>) -> SqlError {
        SqlError { code, message: message.into(), detail: None, hint: None }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> SqlError {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> SqlError {
        self.detail = Some(detail.into());
        self
    }

    pub fn syntax(message: impl Into<String>) -> SqlError {
        SqlError::new(SqlState::SYNTAX_ERROR, message)
    }

    pub fn unsupported(message: impl Into<String>) -> SqlError {
        SqlError::new(SqlState::FEATURE_NOT_SUPPORTED, message)
    }

    /// A broken invariant of the engine itself (never the user's input).
    pub fn internal(message: impl Into<String>) -> SqlError {
        SqlError::new(SqlState::INTERNAL_ERROR, message)
    }

    pub fn overflow(type_name: &str) -> SqlError {
        SqlError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, format!("{type_name} out of range"))
    }

    pub fn division_by_zero() -> SqlError {
        SqlError::new(SqlState::DIVISION_BY_ZERO, "division by zero")
    }
}

pub type Result<T, E = SqlError> = std::result::Result<T, E>;
