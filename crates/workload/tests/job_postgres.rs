//! The JOB generator checked against PostgreSQL: generate at a small scale,
//! load the CSVs into the private server with `schema.sql`, `fkindexes.sql`
//! and `COPY ... WITH (FORMAT csv)`, then every one of the 113 queries must
//! return a row whose MIN(...) columns are all non-NULL (at least one
//! joined tuple passes the WHERE), and every foreign key must join (no
//! orphans). Skips (with a note) without PostgreSQL unless
//! `NDPDB_REQUIRE_POSTGRES=1`. The example `job_postgres` runs the same
//! check at any scale and prints each query's time.

mod job_check;

use std::time::{Duration, Instant};

use ndpdb_baseline::postgres::PgServer;
use ndpdb_baseline::require::skip_postgres;
use ndpdb_workload::job::{JobConfig, JobData, default_job_dir};

const SCALE: f64 = 0.02;

#[test]
fn every_job_query_returns_rows_and_every_foreign_key_joins() {
    let started = Instant::now();
    let dir = default_job_dir().expect("the JOB directory (../shared/workloads/job or NDPDB_JOB_DIR) must exist");
    let data = JobData::prepare(JobConfig { scale: SCALE, seed: 17, dir: dir.clone() }).expect("prepare");
    let out = tempfile::tempdir().expect("tempdir");
    let files = data.write(out.path(), &mut |_| {}).expect("write CSVs");
    let server = match PgServer::start() {
        Ok(s) => s,
        Err(e) => return skip_postgres("every_job_query_returns_rows_and_every_foreign_key_joins", &e),
    };
    let report = job_check::load_and_check(&server, &dir, &data, &files, Duration::from_secs(30)).expect("load");
    assert_eq!(report.queries.len(), 113);
    assert_eq!(report.orphans.len(), 26);
    let failures = report.failures();
    assert!(failures.is_empty(), "{failures:#?}");
    let slowest = report.queries.iter().max_by_key(|q| q.time).expect("113 queries");
    eprintln!(
        "JOB at scale {SCALE}: {} rows ({} planted), loaded in {:.1?}; 113 queries (slowest {} {:.1?}) and 26 foreign keys checked, {:.1?} in all",
        data.total_rows(),
        data.planted_rows(),
        report.load_time,
        slowest.name,
        slowest.time,
        started.elapsed()
    );
}
