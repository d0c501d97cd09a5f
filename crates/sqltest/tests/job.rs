//! The 113 JOB queries on ndpdb, each answer checked against PostgreSQL's.
//!
//! Generates JOB-shaped data (`ndpdb_workload::job`, witnesses planted so
//! each query returns rows) at [`SCALE`], loads the same CSV files into an
//! embedded ndpdb (`schema.sql`, `COPY ... FROM 'file'`, `fkindexes.sql`,
//! `ANALYZE`) and into the private PostgreSQL (C collation, so MIN over
//! text is byte order on both), then runs every query on PostgreSQL and on
//! ndpdb twice, with `SET ndp = off` (host scans) and `SET ndp = on` (NDP
//! scans), comparing each answer with [`compare`]. It prints one line per
//! query (rows, plan time, outcome per mode) and fails on any mismatch or
//! error. Skips without PostgreSQL unless `NDPDB_REQUIRE_POSTGRES=1`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ndpdb_baseline::postgres::PgServer;
use ndpdb_baseline::require::skip_postgres;
use ndpdb_sql::session::{Engine, EngineOptions};
use ndpdb_sqltest::compare::{compare, order_by_columns};
use ndpdb_sqltest::job::{load_job, make_world_readable, run_script};
use ndpdb_sqltest::ndpdb::NdpdbSession;
use ndpdb_sqltest::pg::{PgConnection, PgTestServer};
use ndpdb_sqltest::{QueryOutput, SqlEngine};
use ndpdb_workload::job::{JobConfig, JobData, default_job_dir};

/// Scale of the generated data (`docs/job-data.md`): small enough that
/// loading and 4 × 113 queries stay well inside CI's budget on 2 cores.
/// `NDPDB_JOB_SCALE` overrides it for a run by hand.
const SCALE: f64 = 0.02;

fn scale() -> f64 {
    std::env::var("NDPDB_JOB_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(SCALE)
}

/// Per-query limit on either engine: a runaway plan fails, it does not hang.
const STATEMENT_TIMEOUT: &str = "60s";

/// An error that is not a wrong answer but a plan the executor cannot run
/// yet: index nested-loop joins, which the `index` branch of issue 17 makes
/// run. Tolerated (printed as `unsupported`) until that branch is merged;
/// then this list must become empty.
const NOT_EXECUTED_YET: &[&str] = &[];

/// One query's outcome in one ndpdb mode, with its wall and planning time.
struct Outcome {
    result: Result<(), String>,
    time: Duration,
    plan: Duration,
}

fn check(ndpdb: &mut NdpdbSession, sql: &str, expected: &QueryOutput, names: &[String]) -> Outcome {
    let t = Instant::now();
    let result = match ndpdb.run(sql) {
        Ok(out) => compare(&expected.rows, &out.rows, &order_by_columns(sql, names)),
        Err(e) => Err(format!("error {e}")),
    };
    let plan = ndpdb.0.last_planning_time().unwrap_or_default();
    Outcome { result, time: t.elapsed(), plan }
}

fn verdict(result: &Result<(), String>) -> &'static str {
    match result {
        Ok(()) => "ok",
        Err(e) if NOT_EXECUTED_YET.iter().any(|n| e.starts_with(&format!("error {n}"))) => "unsupported",
        Err(e) if e.starts_with("error") => "ERROR",
        Err(_) => "MISMATCH",
    }
}

/// Runs every query under each `SET ndp` mode, printing one line per query
/// and adding each mismatch or error to `failures`.
fn run_pass(
    ndpdb: &mut NdpdbSession,
    expected: &[(String, &str, QueryOutput)],
    pass: &str,
    modes: &[&str],
    failures: &mut Vec<String>,
) {
    eprintln!("-- {pass}");
    for (name, sql, expected) in expected {
        let names: Vec<String> = expected.columns.iter().map(|c| c.name.clone()).collect();
        let mut line = format!("{name:>4} rows={:<3}", expected.rows.len());
        for mode in modes {
            ndpdb.run(&format!("SET ndp = {mode}")).expect("SET ndp");
            let o = check(ndpdb, sql, expected, &names);
            let v = verdict(&o.result);
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            line.push_str(&format!("  ndp={mode}: {v:<11} {:>8.1} ms (plan {:>5.1})", ms(o.time), ms(o.plan)));
            if let (Err(e), "ERROR" | "MISMATCH") = (o.result, v) {
                failures.push(format!("{name} ({pass}, ndp = {mode}): {e}"));
            }
        }
        eprintln!("{line}");
    }
}

#[test]
fn all_113_job_queries_match_postgresql() {
    let started = Instant::now();
    let dir = default_job_dir().expect("the JOB directory (../shared/workloads/job or NDPDB_JOB_DIR) must exist");
    let data = JobData::prepare(JobConfig { scale: scale(), seed: 17, dir: dir.clone() }).expect("prepare");
    let out = tempfile::tempdir().expect("tempdir");
    let files = data.write(out.path(), &mut |_| {}).expect("write CSVs");
    make_world_readable(out.path(), &files).expect("chmod the CSV files");
    let server = match PgServer::start() {
        Ok(s) => s,
        Err(e) => return skip_postgres("all_113_job_queries_match_postgresql", &e),
    };
    let timeout = format!("SET statement_timeout = '{STATEMENT_TIMEOUT}'");
    let mut pg_server = PgTestServer::new(server).expect("connect to PostgreSQL");
    let pg_db = pg_server.database().expect("a C-collation database");
    let mut pg = PgConnection::connect(pg_db.address()).expect("connect");
    load_job(&mut pg, &dir, &files, true).expect("load PostgreSQL");
    pg.run(&timeout).expect("statement_timeout");
    let pg_loaded = started.elapsed();

    let db_dir = tempfile::tempdir().expect("tempdir");
    let opts = EngineOptions { dir: db_dir.path().to_path_buf(), capacity_mib: Some(1024), ..EngineOptions::default() };
    let engine: Arc<Engine> = Engine::open(&opts).expect("open ndpdb");
    let mut ndpdb = NdpdbSession(engine.session());
    load_job(&mut ndpdb, &dir, &files, false).expect("load ndpdb");
    ndpdb.run(&timeout).expect("statement_timeout");
    let loaded = started.elapsed();
    eprintln!(
        "JOB scale {}: {} rows; PostgreSQL loaded at {pg_loaded:.1?}, ndpdb at {loaded:.1?}",
        scale(),
        data.total_rows()
    );

    let expected: Vec<(String, &str, QueryOutput)> = data
        .queries()
        .iter()
        .map(|q| {
            let sql = q.sql.trim().trim_end_matches(';');
            (q.name.clone(), sql, pg.run(sql).unwrap_or_else(|e| panic!("{} on PostgreSQL: {e}", q.name)))
        })
        .collect();
    let mut failures = Vec::new();
    run_pass(&mut ndpdb, &expected, "no indexes", &["off", "on"], &mut failures);
    run_script(&mut ndpdb, &dir.join("fkindexes.sql")).expect("foreign-key indexes on ndpdb");
    run_pass(&mut ndpdb, &expected, "fk indexes", &["off", "auto"], &mut failures);
    eprintln!(
        "{} queries x 4 runs: {} failures, {:.1?} in all",
        data.queries().len(),
        failures.len(),
        started.elapsed()
    );
    assert_eq!(data.queries().len(), 113);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
