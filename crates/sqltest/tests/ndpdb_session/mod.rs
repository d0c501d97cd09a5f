//! ndpdb's session as a [`SqlEngine`] for the JOB test and the
//! planning-time example: values in PostgreSQL's text output, errors as
//! SQLSTATE and message. (No result columns: callers take the names from
//! PostgreSQL's answer.)

use ndpdb_sql::session::Session;
use ndpdb_sql::types::format::pg_text;
use ndpdb_sqltest::{EngineError, QueryOutput, SqlEngine};

pub struct Ndpdb(pub Session);

impl SqlEngine for Ndpdb {
    fn run(&mut self, sql: &str) -> Result<QueryOutput, EngineError> {
        let mut results = self.0.run(sql);
        let last =
            results.pop().ok_or_else(|| EngineError { sqlstate: "XX000".into(), message: "no result".into() })?;
        for r in results {
            r.map_err(error)?;
        }
        let r = last.map_err(error)?;
        Ok(QueryOutput {
            columns: Vec::new(),
            rows: r.rows.iter().map(|row| row.iter().map(|v| (!v.is_null()).then(|| pg_text(v))).collect()).collect(),
            tag: r.tag,
        })
    }
}

fn error(e: ndpdb_sql::SqlError) -> EngineError {
    EngineError { sqlstate: e.code.0.to_string(), message: e.message }
}
