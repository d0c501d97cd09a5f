//! The engines a SQL benchmark runs its queries on, behind one trait: run a
//! statement, give back its rows as PostgreSQL's text output (so answers
//! compare cell by cell in `compare.rs`) and what the engine counted.
//!
//! * `ndpdb-host` and `ndpdb-ndp`: sessions on one embedded database with
//!   `SET ndp = off` and `SET ndp = auto`; modelled time, link bytes and
//!   the optimizer's time come from [`Session::last_stats`].
//! * `postgresql`: a connection to the private server (wire protocol),
//!   with `max_parallel_workers_per_gather` and `work_mem` set.
//! * `duckdb`: a `python3` process with the `duckdb` module (`duckdb.rs`).

use std::time::Instant;

use anyhow::{Result, anyhow};
use ndpdb_sql::session::Session;
use ndpdb_sql::types::format::pg_text;
use ndpdb_sqltest::SqlEngine;
use ndpdb_sqltest::pg::{PgAddress, PgConnection};

/// One statement's answer and measurements.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub columns: Vec<String>,
    /// Rows as text cells (None = NULL); empty for engines that only count.
    pub rows: Vec<Vec<Option<String>>>,
    pub row_count: u64,
    pub wall_s: f64,
    /// ndpdb only: the device counters of the plan's scans.
    pub modelled_s: Option<f64>,
    pub link_bytes_to_host: Option<u64>,
    pub link_bytes_to_device: Option<u64>,
    pub medium_bytes_read: Option<u64>,
    /// ndpdb only: the optimizer's time.
    pub plan_ms: Option<f64>,
}

/// An engine under benchmark.
pub trait BenchEngine {
    /// `ndpdb-host`, `ndpdb-ndp`, `postgresql`, `duckdb`.
    fn name(&self) -> &'static str;
    /// Runs one statement and returns its answer (the last result of the
    /// text, which holds one statement).
    fn run(&mut self, sql: &str) -> Result<Answer>;
}

/// An ndpdb session with `ndp` set.
pub struct Ndpdb {
    name: &'static str,
    session: Session,
}

impl Ndpdb {
    /// `ndp`: `off` (host-only, `ndpdb-host`) or `auto` (`ndpdb-ndp`).
    pub fn new(session: Session, ndp: &str) -> Result<Ndpdb> {
        let name = match ndp {
            "off" => "ndpdb-host",
            "auto" => "ndpdb-ndp",
            other => return Err(anyhow!("no ndpdb engine with ndp = {other}")),
        };
        let mut engine = Ndpdb { name, session };
        engine.run(&format!("SET ndp = {ndp}"))?;
        Ok(engine)
    }
}

impl BenchEngine for Ndpdb {
    fn name(&self) -> &'static str {
        self.name
    }

    fn run(&mut self, sql: &str) -> Result<Answer> {
        let t0 = Instant::now();
        let mut last = None;
        for r in self.session.run(sql) {
            last = Some(r.map_err(|e| anyhow!("{}: {} (SQLSTATE {})", self.name, e.message, e.code.0))?);
        }
        let wall_s = t0.elapsed().as_secs_f64();
        let r = last.ok_or_else(|| anyhow!("{}: no statement in {sql:?}", self.name))?;
        let stats = self.session.last_stats().unwrap_or_default();
        let rows: Vec<Vec<Option<String>>> =
            r.rows.iter().map(|row| row.iter().map(|v| (!v.is_null()).then(|| pg_text(v))).collect()).collect();
        Ok(Answer {
            columns: r.columns.iter().map(|c| c.name.clone()).collect(),
            row_count: rows.len() as u64,
            rows,
            wall_s,
            modelled_s: Some(stats.device.modelled_ps as f64 / 1e12),
            link_bytes_to_host: Some(stats.device.link_bytes_to_host),
            link_bytes_to_device: Some(stats.device.link_bytes_to_device),
            medium_bytes_read: Some(stats.device.medium_bytes_read),
            plan_ms: Some(stats.plan_s * 1e3),
        })
    }
}

/// `SET work_mem` to `value`, quoted.
pub fn set_work_mem(value: &str) -> String {
    format!("SET work_mem = '{}'", value.replace('\'', "''"))
}

/// A connection to the private PostgreSQL.
pub struct Postgres {
    conn: PgConnection,
}

impl Postgres {
    pub fn connect(address: &PgAddress, workers: u32, work_mem: &str) -> Result<Postgres> {
        let conn = PgConnection::connect(address).map_err(|e| anyhow!("PostgreSQL: {e}"))?;
        let mut pg = Postgres { conn };
        pg.run(&format!("SET max_parallel_workers_per_gather = {workers}"))?;
        pg.run(&set_work_mem(work_mem))?;
        Ok(pg)
    }
}

impl BenchEngine for Postgres {
    fn name(&self) -> &'static str {
        "postgresql"
    }

    fn run(&mut self, sql: &str) -> Result<Answer> {
        let t0 = Instant::now();
        let out = self.conn.run(sql).map_err(|e| anyhow!("PostgreSQL: {e}"))?;
        Ok(Answer {
            columns: out.columns.iter().map(|c| c.name.clone()).collect(),
            row_count: out.rows.len() as u64,
            rows: out.rows,
            wall_s: t0.elapsed().as_secs_f64(),
            ..Answer::default()
        })
    }
}
