//! Every `.slt` file against the private PostgreSQL: the expected outputs
//! in the files are PostgreSQL's. Skipped when PostgreSQL is not installed,
//! unless NDPDB_REQUIRE_POSTGRES=1.

use std::path::Path;

use ndpdb_sqltest::{EngineError, TestDatabase, run_files, slt_dir, slt_files, start_postgres};

#[test]
fn slt_files_pass_on_postgresql() {
    let Some(mut pg) = start_postgres().expect("starting PostgreSQL") else {
        eprintln!("PostgreSQL is not installed: skipping (set NDPDB_REQUIRE_POSTGRES=1 to fail instead)");
        return;
    };
    let files = slt_files(&slt_dir()).expect("listing the slt files");
    assert!(files.len() >= 15, "expected the slt files under {}, found {}", slt_dir().display(), files.len());
    let make = |_: &Path| -> Result<Box<dyn TestDatabase>, EngineError> { Ok(Box::new(pg.database()?)) };
    if let Err(e) = run_files(make, &files, "postgresql") {
        panic!("{e}");
    }
}
