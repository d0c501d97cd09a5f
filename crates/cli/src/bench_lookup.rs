//! `ndpdb bench sql-lookup`: primary-key point lookups through the embedded
//! SQL API, one session on one thread (issue 17: at least 100,000 per
//! second on one core).
//!
//! ```text
//!  load:    CREATE TABLE lookup (id bigint PRIMARY KEY, v integer, name text)
//!           INSERT N rows (id = 0..N, v = id * 7 % 1000, name = 'r' || id),
//!           a transaction per 100,000 rows (one would outgrow the log)
//!  measure: prepare SELECT v, name FROM lookup WHERE id = $1
//!           M times: a random id (fixed seed) ─► execute_prepared ─► check the row
//!  compare: M/10 times the same text with the id as a literal ─► Session::run (parse,
//!           bind, optimize, execute each time) ─► check the row
//! ```
//!
//! Every answer is checked (a wrong or missing row fails the run), and the
//! plan must be an index scan of `lookup_pkey`. Time is wall time on the
//! host; the device's clock is virtual, so the index pages a lookup reads
//! from the index image cost no modelled waiting.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use clap::Args;
use ndpdb_sql::session::{Engine, EngineOptions, Session};
use ndpdb_sql::types::Value;

#[derive(Args, Debug, Clone)]
pub struct LookupArgs {
    /// Rows in the table
    #[arg(long, default_value_t = 100_000)]
    pub rows: u64,
    /// Point lookups to time
    #[arg(long, default_value_t = 200_000)]
    pub lookups: u64,
    /// Seed of the random keys
    #[arg(long, default_value_t = 17)]
    pub seed: u64,
    /// Database directory (default: a temporary one, removed afterwards)
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Print one JSON line on stdout
    #[arg(long)]
    pub json: bool,
}

/// What a run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct LookupReport {
    pub rows: u64,
    pub lookups: u64,
    pub load_s: f64,
    pub lookup_s: f64,
    /// Lookups through `Session::run` (the text with a literal), and their time.
    pub unprepared: u64,
    pub unprepared_s: f64,
    pub plan: String,
}

impl LookupReport {
    pub fn per_second(&self) -> f64 {
        self.lookups as f64 / self.lookup_s.max(1e-9)
    }

    pub fn unprepared_per_second(&self) -> f64 {
        self.unprepared as f64 / self.unprepared_s.max(1e-9)
    }
}

fn sql(session: &mut Session, text: &str) -> Result<Vec<ndpdb_sql::session::StatementResult>> {
    session.run(text).into_iter().map(|r| r.map_err(|e| anyhow::anyhow!("{text}: {e}"))).collect()
}

/// The keys of one run: xorshift64*, the same for every run of one seed.
struct Keys {
    x: u64,
    rows: u64,
}

impl Keys {
    fn new(seed: u64, rows: u64) -> Keys {
        Keys { x: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1, rows }
    }

    fn next(&mut self) -> i64 {
        self.x ^= self.x >> 12;
        self.x ^= self.x << 25;
        self.x ^= self.x >> 27;
        (self.x.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.rows) as i64
    }
}

/// Whether `rows` is the one row of `id`.
fn is_row_of(id: i64, rows: &[Vec<Value>]) -> bool {
    matches!(rows, [row] if row[0] == Value::Int32((id * 7 % 1000) as i32) && row[1] == Value::Text(format!("r{id}")))
}

/// Loads the table and times the lookups.
pub fn measure(args: &LookupArgs) -> Result<LookupReport> {
    ensure!(args.rows > 0, "--rows must be at least 1");
    let tmp = std::env::temp_dir().join(format!("ndpdb-sql-lookup-{}-{}", std::process::id(), args.seed));
    if args.db.is_none() && tmp.exists() {
        std::fs::remove_dir_all(&tmp).context("removing an old temporary database")?;
    }
    let dir = args.db.clone().unwrap_or_else(|| tmp.clone());
    let result = measure_in(args, dir);
    if args.db.is_none() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

fn measure_in(args: &LookupArgs, dir: PathBuf) -> Result<LookupReport> {
    // Room for the rows (about 60 bytes each with their versions' headers) and the log.
    let capacity_mib = ((args.rows * 200) >> 20).max(64);
    let opts = EngineOptions { dir, capacity_mib: Some(capacity_mib), ..EngineOptions::default() };
    let engine = Engine::open(&opts).map_err(|e| anyhow::anyhow!("opening the database: {e}"))?;
    let mut s = engine.session();
    sql(&mut s, "CREATE TABLE lookup (id bigint PRIMARY KEY, v integer, name text)")?;
    let t0 = Instant::now();
    let (chunk, per_txn) = (1000, 100_000);
    for start in (0..args.rows).step_by(chunk) {
        if start.is_multiple_of(per_txn) {
            sql(&mut s, "BEGIN")?;
        }
        let end = (start + chunk as u64).min(args.rows);
        let values: Vec<String> = (start..end).map(|i| format!("({i}, {}, 'r{i}')", i * 7 % 1000)).collect();
        sql(&mut s, &format!("INSERT INTO lookup VALUES {}", values.join(", ")))?;
        if end.is_multiple_of(per_txn) || end == args.rows {
            sql(&mut s, "COMMIT")?;
        }
    }
    let load_s = t0.elapsed().as_secs_f64();
    let plan = sql(&mut s, "EXPLAIN SELECT v, name FROM lookup WHERE id = 42")?
        .pop()
        .map(|r| r.rows.iter().map(|row| ndpdb_sql::types::format::pg_text(&row[0])).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default();
    ensure!(plan.contains("Index Scan using lookup_pkey"), "the lookup is not planned as an index scan:\n{plan}");
    let mut p = s.prepare("SELECT v, name FROM lookup WHERE id = $1").map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut keys = Keys::new(args.seed, args.rows);
    let t0 = Instant::now();
    for _ in 0..args.lookups {
        let id = keys.next();
        let r = s.execute_prepared(&mut p, &[Value::Int64(id)]).map_err(|e| anyhow::anyhow!("lookup {id}: {e}"))?;
        ensure!(is_row_of(id, &r.rows), "lookup of id {id} returned {:?}", r.rows);
    }
    let lookup_s = t0.elapsed().as_secs_f64();
    let unprepared = (args.lookups / 10).max(1);
    let t0 = Instant::now();
    for _ in 0..unprepared {
        let id = keys.next();
        let r = sql(&mut s, &format!("SELECT v, name FROM lookup WHERE id = {id}"))?;
        ensure!(r.len() == 1 && is_row_of(id, &r[0].rows), "unprepared lookup of id {id} returned {r:?}");
    }
    let unprepared_s = t0.elapsed().as_secs_f64();
    engine.close().map_err(|e| anyhow::anyhow!("closing the database: {e}"))?;
    Ok(LookupReport { rows: args.rows, lookups: args.lookups, load_s, lookup_s, unprepared, unprepared_s, plan })
}

pub fn run(args: LookupArgs) -> Result<()> {
    let r = measure(&args)?;
    let line = format!(
        "sql-lookup: {} rows loaded in {:.2} s; {} primary-key lookups in {:.3} s: {:.0} lookups/s ({:.2} µs each); \
         unprepared (Session::run): {:.0} lookups/s",
        r.rows,
        r.load_s,
        r.lookups,
        r.lookup_s,
        r.per_second(),
        r.lookup_s * 1e6 / r.lookups.max(1) as f64,
        r.unprepared_per_second()
    );
    if args.json {
        eprintln!("{line}");
        println!(
            "{{\"bench\":\"sql-lookup\",\"rows\":{},\"lookups\":{},\"load_s\":{:.6},\"lookup_s\":{:.6},\"lookups_per_s\":{:.1},\"unprepared_per_s\":{:.1}}}",
            r.rows,
            r.lookups,
            r.load_s,
            r.lookup_s,
            r.per_second(),
            r.unprepared_per_second()
        );
    } else {
        println!("{line}\nplan:\n{}", r.plan);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_find_every_row_through_the_primary_key() {
        let args = LookupArgs { rows: 3000, lookups: 2000, seed: 5, db: None, json: false };
        let r = measure(&args).unwrap();
        assert_eq!(r.lookups, 2000);
        assert_eq!(r.unprepared, 200);
        assert!(r.plan.contains("Index Cond"), "{}", r.plan);
    }
}
