//! `ndpdb-sqltest [--complete] [FILE.slt ...]`: runs the `.slt` files (all
//! of `crates/sql/tests/slt` when none is named) against the private
//! PostgreSQL; `--complete` rewrites their expected results with
//! PostgreSQL's answers instead (`docs/testing-sql.md`).
//!
//! `ndpdb-sqltest fuzz --queries N --seed S [--tables T] [--rows R]
//! [--per-schema K] [--timeout-ms MS] [--no-minimize]`: the differential
//! fuzzer (`fuzz` module) against the private PostgreSQL; prints progress
//! and each mismatch with its query, both answers and a reduced query;
//! exits non-zero if it found any.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ndpdb_sqltest::fuzz::{FuzzOptions, FuzzReport};
use ndpdb_sqltest::{EngineError, TestDatabase, complete_files, run_files, slt_dir, slt_files, start_postgres};

const USAGE: &str = "usage: ndpdb-sqltest [--complete] [FILE.slt ...]\n       ndpdb-sqltest fuzz --queries N --seed S [--tables T] [--rows R] [--per-schema K] [--timeout-ms MS] [--no-minimize]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "fuzz") {
        return match fuzz_options(&args[1..]).and_then(|o| fuzz(&o)) {
            Ok(0) => ExitCode::SUCCESS,
            Ok(_) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        };
    }
    let mut complete = false;
    let mut files = Vec::new();
    for arg in args {
        match arg.as_str() {
            "--complete" => complete = true,
            "-h" | "--help" => {
                println!("{USAGE}");
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

fn fuzz_options(args: &[String]) -> Result<FuzzOptions, String> {
    let mut o = FuzzOptions::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--no-minimize" {
            o.minimize = false;
            continue;
        }
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.into());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let n: u64 = value.parse().map_err(|_| format!("{flag} {value}: not a number\n{USAGE}"))?;
        match flag.as_str() {
            "--queries" => o.queries = n,
            "--seed" => o.seed = n,
            "--tables" if (1..=8).contains(&n) => o.tables = n as usize,
            "--rows" if (1..=1000).contains(&n) => o.rows_max = n as usize,
            "--per-schema" if n > 0 => o.queries_per_schema = n,
            "--timeout-ms" if n > 0 => o.timeout = Duration::from_millis(n),
            "--tables" | "--rows" | "--per-schema" | "--timeout-ms" => {
                return Err(format!("{flag} {value}: out of range (tables 1-8, rows 1-1000, others > 0)"));
            }
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    Ok(o)
}

/// Runs the fuzzer; returns the number of mismatches.
fn fuzz(opts: &FuzzOptions) -> Result<usize, String> {
    let mut pg = start_postgres()?.ok_or("PostgreSQL is not installed (Debian: apt-get install postgresql)")?;
    let start = Instant::now();
    let line = |r: &FuzzReport| {
        format!(
            "{} queries ({} same rows, {} same errors, {} skipped), {} schemas, {} mismatches, {:.1} s",
            r.queries,
            r.same_rows,
            r.same_errors,
            r.skipped,
            r.schemas,
            r.findings.len(),
            start.elapsed().as_secs_f64()
        )
    };
    let mut progress = |r: &FuzzReport, finding: Option<&ndpdb_sqltest::fuzz::Finding>| match finding {
        Some(f) => println!("{f}"),
        None if r.queries.is_multiple_of(500) => println!("{}", line(r)),
        None => {}
    };
    let report = ndpdb_sqltest::fuzz::run(&mut pg, opts, &mut progress).map_err(|e| e.to_string())?;
    println!("seed {}: {}", opts.seed, line(&report));
    Ok(report.findings.len())
}
