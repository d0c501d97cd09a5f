//! ndpdb's [`SqlError`] as PostgreSQL's ErrorResponse: severity, SQLSTATE,
//! message, detail and hint, so clients see the same fields psql prints.

use ndpdb_sql::SqlError;
use pgwire::error::{ErrorInfo, PgWireError};

/// The ErrorResponse fields of `e`. COPY's "COPY t, line 3, column b"
/// (the engine's detail) goes out as CONTEXT, where PostgreSQL puts it.
pub fn to_error_info(e: &SqlError) -> ErrorInfo {
    let mut info = ErrorInfo::new("ERROR".into(), e.code.0.into(), e.message.clone());
    match &e.detail {
        Some(d) if d.starts_with("COPY ") => info.where_context = Some(d.clone()),
        d => info.detail = d.clone(),
    }
    info.hint = e.hint.clone();
    info
}

/// `e` as the error pgwire sends (and, in the extended protocol, after
/// which it skips to the next Sync).
pub fn to_pgwire(e: &SqlError) -> PgWireError {
    PgWireError::UserError(Box::new(to_error_info(e)))
}

/// A FATAL error that ends the connection (PostgreSQL's "too many clients").
pub fn fatal(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new("FATAL".into(), code.into(), message.into())))
}
