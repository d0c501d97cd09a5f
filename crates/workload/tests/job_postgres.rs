//! The JOB generator checked against PostgreSQL: generate at a small scale,
//! load the CSVs into the private server with `schema.sql`, `fkindexes.sql`
//! and `COPY ... WITH (FORMAT csv)`, then every one of the 113 queries must
//! return a row whose MIN(...) columns are all non-NULL (at least one
//! joined tuple passes the WHERE), and every foreign key must join (no
//! orphans). Skips (with a note) without PostgreSQL unless
//! `NDPDB_REQUIRE_POSTGRES=1`.

use std::time::Instant;

use ndpdb_baseline::postgres::{PgServer, Session};
use ndpdb_baseline::require::skip_postgres;
use ndpdb_workload::job::{FOREIGN_KEYS, JobConfig, JobData, default_job_dir};

/// The CI scale; `NDPDB_JOB_TEST_SCALE` overrides it for a larger manual run.
const SCALE: f64 = 0.02;

fn scale() -> f64 {
    std::env::var("NDPDB_JOB_TEST_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(SCALE)
}

fn run_file(session: &mut Session, path: &std::path::Path) {
    let sql = std::fs::read_to_string(path).expect("read SQL file");
    for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        session.exec(statement).unwrap_or_else(|e| panic!("{}: {statement}: {e}", path.display()));
    }
}

#[test]
fn every_job_query_returns_rows_and_every_foreign_key_joins() {
    let started = Instant::now();
    let dir = default_job_dir().expect("the JOB directory (../shared/workloads/job or NDPDB_JOB_DIR) must exist");
    let data = JobData::prepare(JobConfig { scale: scale(), seed: 17, dir: dir.clone() }).expect("prepare");
    let out = tempfile::tempdir().expect("tempdir");
    let files = data.write(out.path(), &mut |_| {}).expect("write CSVs");
    let server = match PgServer::start() {
        Ok(s) => s,
        Err(e) => return skip_postgres("every_job_query_returns_rows_and_every_foreign_key_joins", &e),
    };
    let mut s = server.session().expect("psql session");
    run_file(&mut s, &dir.join("schema.sql"));
    run_file(&mut s, &dir.join("fkindexes.sql"));
    for f in &files {
        let text = std::fs::read_to_string(&f.path).expect("read CSV");
        s.copy_in(&format!("COPY {} FROM STDIN WITH (FORMAT csv)", f.table), text.lines().map(str::to_string))
            .unwrap_or_else(|e| panic!("COPY {}: {e}", f.table));
        let n: u64 = s.query(&format!("SELECT count(*) FROM {}", f.table)).unwrap().parse().unwrap();
        assert_eq!(n, f.rows, "{} rows loaded", f.table);
    }
    s.exec("ANALYZE").unwrap();
    s.exec("SET statement_timeout = '30s'").unwrap();
    let loaded = started.elapsed();

    let mut empty = Vec::new();
    let mut slowest = (String::new(), std::time::Duration::ZERO);
    for q in data.queries() {
        let body = q.sql.trim().trim_end_matches(';');
        let t = Instant::now();
        match s.query(&format!("SELECT r IS NOT NULL FROM ({body}) AS r")) {
            Ok(v) if v == "t" => {}
            Ok(_) => empty.push(format!("{}: a MIN(...) is NULL (no witness joined)", q.name)),
            Err(e) => empty.push(format!("{}: {e}", q.name)),
        }
        if t.elapsed() > slowest.1 {
            slowest = (q.name.clone(), t.elapsed());
        }
    }
    assert!(empty.is_empty(), "queries without rows: {empty:#?}");

    for (table, column, target) in FOREIGN_KEYS {
        let orphans = s
            .query(&format!(
                "SELECT count(*) FROM {table} c WHERE c.{column} IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM {target} p WHERE p.id = c.{column})"
            ))
            .unwrap();
        assert_eq!(orphans, "0", "{table}.{column} -> {target}: rows whose key names no {target} row");
    }
    eprintln!(
        "JOB at scale {}: {} rows ({} planted); generated and loaded in {:.1?}, 113 queries and {} foreign keys checked in {:.1?} (slowest query {} {:.1?})",
        scale(),
        data.total_rows(),
        data.planted_rows(),
        loaded,
        FOREIGN_KEYS.len(),
        started.elapsed() - loaded,
        slowest.0,
        slowest.1
    );
}
