//! Generates JOB data at a scale, loads it into a private PostgreSQL and
//! runs the 113 queries, printing each one's time and whether it returned
//! its witness rows, then the orphans per foreign key. Exits 1 on any
//! failure.
//!
//! ```text
//! cargo run --release -p ndpdb-workload --example job_postgres -- [SCALE] [TIMEOUT_S]
//! ```

#[path = "../tests/job_check/mod.rs"]
mod job_check;

use std::time::{Duration, Instant};

use ndpdb_baseline::postgres::PgServer;
use ndpdb_workload::job::{JobConfig, JobData, default_job_dir};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let scale: f64 = args.next().map_or(Ok(0.1), |s| s.parse()).map_err(|_| "SCALE must be a number")?;
    let timeout_s: u64 = args.next().map_or(Ok(60), |s| s.parse()).map_err(|_| "TIMEOUT_S must be an integer")?;
    let dir = default_job_dir().ok_or("no JOB directory: set NDPDB_JOB_DIR")?;
    let t = Instant::now();
    let data = JobData::prepare(JobConfig { scale, seed: 1, dir: dir.clone() }).map_err(|e| e.to_string())?;
    let out = tempfile::tempdir().map_err(|e| e.to_string())?;
    let files = data.write(out.path(), &mut |_| {}).map_err(|e| e.to_string())?;
    println!(
        "scale {scale}: {} rows ({} planted), generated in {:.1?}",
        data.total_rows(),
        data.planted_rows(),
        t.elapsed()
    );
    let server = PgServer::start().map_err(|e| e.to_string())?;
    let report = job_check::load_and_check(&server, &dir, &data, &files, Duration::from_secs(timeout_s))?;
    println!("loaded in {:.1?}", report.load_time);
    for q in &report.queries {
        let status = match &q.result {
            Ok(()) => "ok".to_string(),
            Err(e) => e.clone(),
        };
        println!("{:<5} {:>10.3} s  {status}", q.name, q.time.as_secs_f64());
    }
    let total: Duration = report.queries.iter().map(|q| q.time).sum();
    println!("113 queries in {:.1} s", total.as_secs_f64());
    let failures = report.failures();
    for f in &failures {
        println!("FAILED {f}");
    }
    if failures.is_empty() { Ok(()) } else { Err(format!("{} failures", failures.len())) }
}
