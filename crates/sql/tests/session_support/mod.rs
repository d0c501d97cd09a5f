//! Shared by the session-level tests (`session.rs`, `indexes.rs`): a small
//! database in a directory, statements that must succeed or fail, and rows
//! as psql prints them.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use ndpdb_sql::SqlError;
use ndpdb_sql::session::{Engine, EngineOptions, Session, StatementResult};
use ndpdb_sql::types::format::pg_text;

/// A 64 MiB database in `dir` (created if missing).
pub fn engine(dir: &Path) -> Arc<Engine> {
    let opts = EngineOptions { dir: dir.to_path_buf(), capacity_mib: Some(64), ..EngineOptions::default() };
    Engine::open(&opts).expect("open")
}

/// Runs `sql`, returning the last statement's result; panics on error.
pub fn ok(s: &mut Session, sql: &str) -> StatementResult {
    let mut rs = s.run(sql);
    let last = rs.pop().expect("a result");
    for r in rs {
        r.unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    last.unwrap_or_else(|e| panic!("{sql}: {e:?}"))
}

/// The first error `sql` gives; panics if it gives none.
pub fn err(s: &mut Session, sql: &str) -> SqlError {
    s.run(sql).into_iter().find_map(Result::err).unwrap_or_else(|| panic!("{sql}: expected an error"))
}

/// The rows as psql's text, one string per row, cells joined by `|`.
pub fn text(r: &StatementResult) -> Vec<String> {
    r.rows
        .iter()
        .map(|row| {
            row.iter().map(|v| if v.is_null() { "NULL".to_string() } else { pg_text(v) }).collect::<Vec<_>>().join("|")
        })
        .collect()
}
