//! ndpdb's embedded session as a [`SqlEngine`]: the `.slt` runner, the JOB
//! test, the planning-time example and the fuzzer all drive it through
//! [`run_on`], so every one sees the same text values and errors.

use ndpdb_sql::session::Session;
use ndpdb_sql::types::format::pg_text;

use crate::{Column, EngineError, QueryOutput, SqlEngine};

/// A session of an embedded ndpdb.
pub struct NdpdbSession(pub Session);

impl SqlEngine for NdpdbSession {
    fn run(&mut self, sql: &str) -> Result<QueryOutput, EngineError> {
        run_on(&mut self.0, sql)
    }
}

/// Runs `sql` (one or more statements) on a session as PostgreSQL's simple
/// query protocol would: the last statement's result, or the first error.
/// Values are PostgreSQL's text output, NULL is None.
pub fn run_on(session: &mut Session, sql: &str) -> Result<QueryOutput, EngineError> {
    let mut results = session.run(sql);
    let last = results.pop().ok_or_else(|| EngineError { sqlstate: "XX000".into(), message: "no result".into() })?;
    for r in results {
        r.map_err(error)?;
    }
    let r = last.map_err(error)?;
    Ok(QueryOutput {
        columns: r.columns.iter().map(|c| Column { name: c.name.clone(), type_oid: c.ty.pg_oid() }).collect(),
        rows: r.rows.iter().map(|row| row.iter().map(|v| (!v.is_null()).then(|| pg_text(v))).collect()).collect(),
        tag: r.tag,
    })
}

/// An engine error as SQLSTATE and message.
pub fn error(e: ndpdb_sql::SqlError) -> EngineError {
    EngineError { sqlstate: e.code.0.to_string(), message: e.message }
}
