//! The sqllogictest harness: the same `.slt` files run against ndpdb's SQL
//! engine and against the private PostgreSQL, whose answers are the
//! expected outputs (`docs/testing-sql.md`).
//!
//! ```text
//!   crates/sql/tests/slt/*.slt ──► sqllogictest::Runner ──► SltConnection ──► dyn SqlEngine
//!                                   (conditions, rowsort,      (formats values,   ├─ pg::PgConnection (wire protocol)
//!                                    error matching)            maps errors)      └─ ndpdb's session (the lead's adapter)
//! ```
//!
//! An engine implements [`SqlEngine`]: run one statement, return its
//! columns, its rows as text (PostgreSQL's text output of each value,
//! `None` for NULL) and its command tag, or its SQLSTATE and message. A
//! [`TestDatabase`] is one empty database per file; `connect` opens a
//! session on it (a file's `connection name` records open more). Everything
//! engine-specific stays behind these two traits; this crate formats the
//! values, so both engines are compared in one text:
//!
//! * NULL is `NULL`, the empty string `(empty)`, booleans PostgreSQL's `t`/`f`;
//! * an error reads `SQLSTATE: message` (PostgreSQL's primary message), so an
//!   `.slt` file can expect both: `statement error 42P01: relation "t" does not exist`;
//! * a statement that returns rows (columns present) is a query; any other
//!   gives its row count from the tag (`INSERT 0 3` → 3) for `statement count`.
//!
//! Each run adds the engine's name as a label (`postgresql`, `ndpdb`), for
//! `skipif`/`onlyif` conditions, and sets the variable `SLT_DATA` to a
//! world-readable copy of `slt/data/` for `COPY ... FROM '$SLT_DATA/x.csv'`
//! (needs `control substitution on`; PostgreSQL reads the file as the
//! `postgres` user, hence the copy).

pub mod compare;
pub mod fuzz;
pub mod job;
pub mod ndpdb;
pub mod pg;

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sqllogictest::{DBOutput, DefaultColumnType, Runner};

/// One result column: its name and PostgreSQL type OID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub type_oid: u32,
}

/// What one statement returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryOutput {
    /// Empty for statements that return no rows (DDL, plain DML, SET, ...).
    pub columns: Vec<Column>,
    /// Each value as PostgreSQL's text output would print it; None = NULL.
    pub rows: Vec<Vec<Option<String>>>,
    /// The command tag: `SELECT 2`, `INSERT 0 3`, `CREATE TABLE`, ...
    pub tag: String,
}

/// A statement's error: SQLSTATE and primary message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    pub sqlstate: String,
    pub message: String,
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.sqlstate, self.message)
    }
}

impl std::error::Error for EngineError {}

/// One session of an engine under test.
pub trait SqlEngine: Send {
    fn run(&mut self, sql: &str) -> Result<QueryOutput, EngineError>;
}

/// One empty database of an engine under test (one per `.slt` file).
pub trait TestDatabase {
    /// A new session on this database.
    fn connect(&self) -> Result<Box<dyn SqlEngine>, EngineError>;
}

/// How a value appears in an `.slt` file.
pub fn format_value(value: Option<&str>) -> String {
    match value {
        None => "NULL".into(),
        Some("") => "(empty)".into(),
        Some(v) => v.to_string(),
    }
}

/// The sqllogictest column letter of a PostgreSQL type OID: integers `I`,
/// numeric and floating point `R`, everything else `T`.
pub fn type_letter(type_oid: u32) -> DefaultColumnType {
    match type_oid {
        20 | 21 | 23 => DefaultColumnType::Integer,
        700 | 701 | 1700 => DefaultColumnType::FloatingPoint,
        _ => DefaultColumnType::Text,
    }
}

/// The row count a command tag reports (its last number), 0 if none.
pub fn affected_rows(tag: &str) -> u64 {
    tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// sqllogictest's view of one session.
pub struct SltConnection {
    engine: Box<dyn SqlEngine>,
    engine_name: String,
}

impl sqllogictest::DB for SltConnection {
    type Error = EngineError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, EngineError> {
        let out = self.engine.run(sql)?;
        if out.columns.is_empty() {
            return Ok(DBOutput::StatementComplete(affected_rows(&out.tag)));
        }
        let types = out.columns.iter().map(|c| type_letter(c.type_oid)).collect();
        let rows = out.rows.iter().map(|r| r.iter().map(|v| format_value(v.as_deref())).collect()).collect();
        Ok(DBOutput::Rows { types, rows })
    }

    fn engine_name(&self) -> &str {
        &self.engine_name
    }

    fn error_sql_state(err: &EngineError) -> Option<String> {
        Some(err.sqlstate.clone())
    }
}

/// Why a run did not pass.
#[derive(Debug, thiserror::Error)]
pub enum SltError {
    #[error("{engine}: cannot make a database for {file}: {cause}")]
    Database { engine: String, file: PathBuf, cause: EngineError },
    #[error("{}: {} of {} .slt files failed:\n{}", .engine, .failures.len(), .files, .failures.join("\n"))]
    Failures { engine: String, files: usize, failures: Vec<String> },
    #[error("{path}: {cause}; check that the slt directory exists and is writable")]
    Io { path: PathBuf, cause: std::io::Error },
    #[error("completing {file}: {cause}")]
    Complete { file: PathBuf, cause: String },
}

/// The `.slt` files' directory (`crates/sql/tests/slt`).
pub fn slt_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sql/tests/slt")
}

/// Every `.slt` file of `dir`, sorted by name.
pub fn slt_files(dir: &Path) -> Result<Vec<PathBuf>, SltError> {
    let io = |cause| SltError::Io { path: dir.to_path_buf(), cause };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    Ok(files)
}

/// A world-readable copy of `slt/data/` (server-side COPY reads it as
/// another user); removed when dropped.
fn data_copy() -> Result<tempfile::TempDir, SltError> {
    let src = slt_dir().join("data");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| SltError::Io { path, cause }
    };
    let dir = tempfile::Builder::new().prefix("ndpdb-slt-data-").tempdir().map_err(io(&src))?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).map_err(io(dir.path()))?;
    for entry in std::fs::read_dir(&src).map_err(io(&src))?.flatten() {
        let to = dir.path().join(entry.file_name());
        std::fs::copy(entry.path(), &to).map_err(io(&to))?;
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).map_err(io(&to))?;
    }
    Ok(dir)
}

fn runner<'a>(
    db: &'a dyn TestDatabase,
    engine_name: &str,
    data: &Path,
) -> Runner<SltConnection, impl FnMut() -> std::future::Ready<Result<SltConnection, EngineError>> + 'a> {
    let name = engine_name.to_string();
    let mut runner = Runner::new(move || {
        std::future::ready(db.connect().map(|engine| SltConnection { engine, engine_name: name.clone() }))
    });
    runner.add_label(engine_name);
    runner.set_var("SLT_DATA".into(), data.display().to_string());
    runner
}

/// Runs each file on a fresh database from `make_db`; every failure is
/// collected (a file stops at its first failing record).
pub fn run_files<F>(mut make_db: F, files: &[PathBuf], engine_name: &str) -> Result<(), SltError>
where
    F: FnMut(&Path) -> Result<Box<dyn TestDatabase>, EngineError>,
{
    let data = data_copy()?;
    let mut failures = Vec::new();
    for file in files {
        let db = make_db(file).map_err(|cause| SltError::Database {
            engine: engine_name.into(),
            file: file.clone(),
            cause,
        })?;
        let mut runner = runner(db.as_ref(), engine_name, data.path());
        if let Err(e) = runner.run_file(file) {
            failures.push(format!("{}", e.display(false)));
        }
        runner.shutdown();
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(SltError::Failures { engine: engine_name.into(), files: files.len(), failures })
    }
}

/// Rewrites each file's expected results with what the engine returns
/// (sqllogictest's `update_test_file`): the completion mode, run against
/// PostgreSQL so that the files hold PostgreSQL's answers.
pub fn complete_files<F>(mut make_db: F, files: &[PathBuf], engine_name: &str) -> Result<(), SltError>
where
    F: FnMut(&Path) -> Result<Box<dyn TestDatabase>, EngineError>,
{
    let data = data_copy()?;
    for file in files {
        let db = make_db(file).map_err(|cause| SltError::Database {
            engine: engine_name.into(),
            file: file.clone(),
            cause,
        })?;
        let mut runner = runner(db.as_ref(), engine_name, data.path());
        let update = runner.update_test_file(
            file,
            " ",
            sqllogictest::default_validator,
            sqllogictest::default_normalizer,
            sqllogictest::default_column_validator,
        );
        block_on(update).map_err(|e| SltError::Complete { file: file.clone(), cause: e.to_string() })?;
        runner.shutdown();
    }
    Ok(())
}

/// Drives a future whose every await is synchronous underneath (the
/// runner over a [`sqllogictest::DB`]): poll until ready.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

/// Starts the private PostgreSQL for a run; `Ok(None)` when PostgreSQL is
/// not installed and `NDPDB_REQUIRE_POSTGRES` does not demand it.
pub fn start_postgres() -> Result<Option<pg::PgTestServer>, String> {
    let required = std::env::var("NDPDB_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
    match ndpdb_baseline::postgres::PgServer::start() {
        Ok(server) => pg::PgTestServer::new(server).map(Some).map_err(|e| e.to_string()),
        Err(ndpdb_baseline::postgres::PgError::NotInstalled) if !required => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_in_the_slt_files() {
        assert_eq!(format_value(None), "NULL");
        assert_eq!(format_value(Some("")), "(empty)");
        assert_eq!(format_value(Some("t")), "t");
        assert_eq!(format_value(Some("a b")), "a b");
    }

    #[test]
    fn command_tags_give_row_counts() {
        assert_eq!(affected_rows("INSERT 0 3"), 3);
        assert_eq!(affected_rows("UPDATE 12"), 12);
        assert_eq!(affected_rows("DELETE 0"), 0);
        assert_eq!(affected_rows("COPY 7"), 7);
        assert_eq!(affected_rows("CREATE TABLE"), 0);
        assert_eq!(affected_rows(""), 0);
    }

    #[test]
    fn errors_read_sqlstate_then_message() {
        let e = EngineError { sqlstate: "22012".into(), message: "division by zero".into() };
        assert_eq!(e.to_string(), "22012: division by zero");
        assert_eq!(type_letter(23), DefaultColumnType::Integer);
        assert_eq!(type_letter(1700), DefaultColumnType::FloatingPoint);
        assert_eq!(type_letter(1043), DefaultColumnType::Text);
    }
}
