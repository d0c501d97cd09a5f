//! The `.slt` files against ndpdb's engine: the expected outputs are
//! PostgreSQL's (`postgresql.rs` checks them there), so a file that passes
//! here gives PostgreSQL's answers, errors and messages.
//!
//! Files are listed in [`PASSING`] once ndpdb passes them whole; the test
//! fails if one of those fails, and prints how far each other file gets, so
//! the list only grows. (Issue 17 is done when every file is listed.)

use std::path::Path;
use std::sync::Arc;

use ndpdb_sql::session::{Engine, EngineOptions};
use ndpdb_sqltest::ndpdb::{NdpdbSession, error};
use ndpdb_sqltest::{EngineError, SqlEngine, TestDatabase, run_files, slt_dir, slt_files};

/// Files ndpdb passes whole.
const PASSING: &[&str] = &[
    "aggregates.slt",
    "casts.slt",
    "copy.slt",
    "dates.slt",
    "ddl.slt",
    "dml.slt",
    "errors.slt",
    "explain.slt",
    "expressions.slt",
    "fuzz.slt",
    "fuzz_decorrelate.slt",
    "fuzz_subqueries.slt",
    "indexes.slt",
    "joins.slt",
    "nulls.slt",
    "numerics.slt",
    "orfactor.slt",
    "pg_catalog.slt",
    "select.slt",
    "session.slt",
    "setops.slt",
    "strings.slt",
    "subqueries.slt",
    "transactions.slt",
    "views.slt",
];

struct NdpdbDatabase {
    engine: Arc<Engine>,
    _dir: tempfile::TempDir,
}

impl TestDatabase for NdpdbDatabase {
    fn connect(&self) -> Result<Box<dyn SqlEngine>, EngineError> {
        Ok(Box::new(NdpdbSession(self.engine.session())))
    }
}

fn database(_: &Path) -> Result<Box<dyn TestDatabase>, EngineError> {
    let dir = tempfile::tempdir().map_err(|e| EngineError { sqlstate: "58030".into(), message: e.to_string() })?;
    let opts = EngineOptions { dir: dir.path().to_path_buf(), capacity_mib: Some(64), ..EngineOptions::default() };
    let engine = Engine::open(&opts).map_err(error)?;
    Ok(Box::new(NdpdbDatabase { engine, _dir: dir }))
}

#[test]
fn slt_files_on_ndpdb() {
    let files = slt_files(&slt_dir()).expect("listing the slt files");
    let mut regressions = Vec::new();
    for file in &files {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let outcome = run_files(database, std::slice::from_ref(file), "ndpdb");
        match (&outcome, PASSING.contains(&name.as_str())) {
            (Ok(()), listed) => eprintln!("PASS {name}{}", if listed { "" } else { " (not listed yet: add it)" }),
            (Err(e), listed) => {
                let first = e.to_string().lines().take(6).collect::<Vec<_>>().join("\n    ");
                eprintln!("FAIL {name}:\n    {first}");
                if listed {
                    regressions.push(name);
                }
            }
        }
    }
    assert!(regressions.is_empty(), "slt files that passed before fail now: {regressions:?}");
}
