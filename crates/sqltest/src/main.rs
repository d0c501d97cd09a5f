//! `ndpdb-sqltest [--complete] [FILE.slt ...]`: runs the `.slt` files (all
//! of `crates/sql/tests/slt` when none is named) against the private
//! PostgreSQL; `--complete` rewrites their expected results with
//! PostgreSQL's answers instead (`docs/testing-sql.md`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ndpdb_sqltest::{EngineError, TestDatabase, complete_files, run_files, slt_dir, slt_files, start_postgres};

fn main() -> ExitCode {
    let mut complete = false;
    let mut files = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--complete" => complete = true,
            "-h" | "--help" => {
                println!("usage: ndpdb-sqltest [--complete] [FILE.slt ...]");
                return ExitCode::SUCCESS;
            }
            _ => files.push(PathBuf::from(arg)),
        }
    }
    match run(complete, files) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn run(complete: bool, mut files: Vec<PathBuf>) -> Result<(), String> {
    if files.is_empty() {
        files = slt_files(&slt_dir()).map_err(|e| e.to_string())?;
    }
    let mut pg = start_postgres()?.ok_or("PostgreSQL is not installed (Debian: apt-get install postgresql)")?;
    let make = |_: &Path| -> Result<Box<dyn TestDatabase>, EngineError> { Ok(Box::new(pg.database()?)) };
    if complete {
        complete_files(make, &files, "postgresql").map_err(|e| e.to_string())?;
        println!("completed {} files from PostgreSQL", files.len());
    } else {
        run_files(make, &files, "postgresql").map_err(|e| e.to_string())?;
        println!("{} files passed on PostgreSQL", files.len());
    }
    Ok(())
}
