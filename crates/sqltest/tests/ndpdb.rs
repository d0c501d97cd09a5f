//! The `.slt` files against ndpdb's engine: the expected outputs are
//! PostgreSQL's (`postgresql.rs` checks them there), so a file that passes
//! here gives PostgreSQL's answers, errors and messages.
//!
//! Every file must pass whole. (While issue 17 was being built, files were
//! listed as they came to pass; all of them do now, so the list is gone and
//! a new file is held to PostgreSQL's answers from its first commit.)

use std::path::Path;
use std::sync::Arc;

use ndpdb_sql::session::{Engine, EngineOptions};
use ndpdb_sqltest::ndpdb::{NdpdbSession, error};
use ndpdb_sqltest::{EngineError, SqlEngine, TestDatabase, run_files, slt_dir, slt_files};

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
    let mut failed = Vec::new();
    for file in &files {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        match run_files(database, std::slice::from_ref(file), "ndpdb") {
            Ok(()) => eprintln!("PASS {name}"),
            Err(e) => {
                let first = e.to_string().lines().take(6).collect::<Vec<_>>().join("\n    ");
                eprintln!("FAIL {name}:\n    {first}");
                failed.push(name);
            }
        }
    }
    assert!(files.len() >= 29, "expected the slt files under {}, found {}", slt_dir().display(), files.len());
    assert!(failed.is_empty(), "slt files that fail on ndpdb: {failed:?}");
}
