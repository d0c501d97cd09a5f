//! `ndpdb bench ycsb`: go-ycsb's PostgreSQL binding against ndpdb's server
//! and against a private PostgreSQL with the same durability (issue 18).
//!
//! ```text
//!  go-ycsb (built on first use, cached: gobuild.rs)
//!  for each engine (ndpdb, postgresql):
//!     start a private server (pgbench's targets) ─► go-ycsb load pg ─► go-ycsb run pg
//!        (workload a..f, recordcount, operationcount, threadcount,
//!         requestdistribution=zipfian) ─► stop the server
//!  ──► table (ops/s, avg and p99 latency per operation), JSON lines,
//!      ops/s-over-time plot
//! ```
//!
//! The servers are the ones `bench pgbench` starts (`ndpdb serve` as a
//! child on a free loopback port over a fresh database; PostgreSQL in a
//! temporary cluster with `fsync` and `synchronous_commit` on, reached
//! through its Unix socket: lib/pq takes a socket directory from PGHOST).
//! go-ycsb's workload files say `requestdistribution=uniform` although
//! YCSB's workloads are zipfian, so the run passes
//! `requestdistribution=zipfian` explicitly (workload d keeps `latest`,
//! its definition). go-ycsb's pg binding creates its table with `CREATE
//! TABLE IF NOT EXISTS usertable (YCSB_KEY VARCHAR(64) PRIMARY KEY, FIELD0
//! VARCHAR(100), ...)` and prepares every operation (`$n` parameters,
//! values sent as bytes). The figures are go-ycsb's own (`run.rs`).

mod gobuild;
mod run;

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;
use ndpdb_bench::errln;
use ndpdb_bench::output::{Plot, Series, table};
use serde::Serialize;

use crate::pgbench::targets::ServerBenchArgs;
pub use run::OpStats;

#[derive(Args, Debug, Clone)]
#[command(after_help = "Needs the Go toolchain (go 1.21+) to build go-ycsb on first use (cached under \
<out>/cache), and PostgreSQL's server for the baseline (Debian: postgresql). See docs/server.md.")]
pub struct YcsbArgs {
    /// YCSB core workload: a (50/50 read/update), b (95/5), c (read only), d (read latest),
    /// e (short scans), f (read-modify-write)
    #[arg(long, short = 'w', default_value = "a", value_parser = ["a", "b", "c", "d", "e", "f"])]
    pub workload: String,
    /// Rows loaded (recordcount)
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Operations of the run (operationcount)
    #[arg(long, default_value_t = 100_000)]
    pub operations: u64,
    /// Client threads, one connection each (threadcount)
    #[arg(long, default_value_t = 8)]
    pub threads: u32,
    #[command(flatten)]
    pub common: ServerBenchArgs,
}

/// One engine's load and run.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub engine: String,
    pub workload: String,
    pub records: u64,
    pub operations: u64,
    pub threads: u32,
    pub distribution: &'static str,
    pub load_s: f64,
    pub load_ops_per_s: f64,
    /// The run's TOTAL line (or its one operation's).
    pub ops_per_s: f64,
    pub avg_us: f64,
    pub p99_us: f64,
    /// Each operation's figures (go-ycsb's summary lines, `*_ERROR` included).
    pub ops: Vec<OpStats>,
    /// Operations that failed (load and run).
    pub errors: u64,
    pub progress: Vec<(f64, f64)>,
    pub profile: String,
    pub clock: String,
    pub go_ycsb: &'static str,
    pub error: Option<String>,
}

pub fn run(a: YcsbArgs) -> Result<()> {
    a.common.check_engines()?;
    if a.records == 0 || a.operations == 0 || a.threads == 0 {
        bail!("--records, --operations and --threads must be at least 1");
    }
    let ycsb = gobuild::go_ycsb(&a.common.out.join("cache"))?;
    let mut rows = Vec::new();
    for engine in &a.common.engines {
        errln!(
            "ycsb workload {} on {engine}: {} records, {} operations, {} threads ...",
            a.workload,
            a.records,
            a.operations,
            a.threads
        );
        rows.push(engine_row(&a, &ycsb, engine));
    }
    a.common.publish("ycsb", &rows, &render(&rows), |dir| draw(&rows, dir))?;
    let bad: Vec<String> =
        rows.iter().filter(|r| r.error.is_some() || r.errors > 0).map(|r| r.engine.clone()).collect();
    if !bad.is_empty() {
        bail!("go-ycsb failed or reported failed operations on: {}", bad.join(", "));
    }
    Ok(())
}

fn distribution(workload: &str) -> &'static str {
    if workload == "d" { "latest" } else { "zipfian" }
}

/// Runs one engine; a failure becomes the row's `error`.
fn engine_row(a: &YcsbArgs, ycsb: &gobuild::GoYcsb, engine: &str) -> Row {
    let (profile, clock) = a.common.profile_clock(engine);
    let mut row = Row {
        engine: engine.to_string(),
        workload: a.workload.clone(),
        records: a.records,
        operations: a.operations,
        threads: a.threads,
        distribution: distribution(&a.workload),
        load_s: 0.0,
        load_ops_per_s: 0.0,
        ops_per_s: 0.0,
        avg_us: 0.0,
        p99_us: 0.0,
        ops: vec![],
        errors: 0,
        progress: vec![],
        profile,
        clock,
        go_ycsb: gobuild::VERSION,
        error: None,
    };
    if let Err(e) = fill(a, ycsb, engine, &mut row) {
        errln!("ycsb on {engine}: {e:#}");
        row.error = Some(format!("{e:#}"));
    }
    row
}

fn fill(a: &YcsbArgs, ycsb: &gobuild::GoYcsb, engine: &str, row: &mut Row) -> Result<()> {
    let target = a.common.start(engine)?;
    let e = target.endpoint().clone();
    let conn = run::Conn { host: &e.host, port: e.port, user: &e.user, database: &e.database };
    let props: Vec<(String, String)> = [
        ("recordcount", a.records.to_string()),
        ("operationcount", a.operations.to_string()),
        ("threadcount", a.threads.to_string()),
        ("requestdistribution", row.distribution.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let workload = ycsb.workloads.join(format!("workload{}", a.workload));
    let started = std::time::Instant::now();
    let load = run::parse(&run::phase(&ycsb.binary, "load", &workload, &conn, &props)?);
    row.load_s = started.elapsed().as_secs_f64();
    row.load_ops_per_s = load.total().map_or(0.0, |t| t.ops_per_s);
    let out = run::parse(&run::phase(&ycsb.binary, "run", &workload, &conn, &props)?);
    let Some(total) = out.total() else { bail!("go-ycsb's run printed no summary") };
    (row.ops_per_s, row.avg_us, row.p99_us) = (total.ops_per_s, total.avg_us, total.p99_us);
    row.errors = load.errors() + out.errors();
    row.progress = out.progress.clone();
    row.ops = out.ops;
    target.stop()
}

fn render(rows: &[Row]) -> String {
    let headers =
        ["engine", "workload", "operation", "count", "ops/s", "avg us", "p99 us", "load ops/s", "profile / clock"];
    let mut body = Vec::new();
    for r in rows {
        if let Some(e) = &r.error {
            let mut line = vec![r.engine.clone(), r.workload.clone(), "error".into()];
            line.extend(std::iter::repeat_n("-".to_string(), 5));
            line.push(e.lines().next().unwrap_or_default().to_string());
            body.push(line);
            continue;
        }
        for o in &r.ops {
            body.push(vec![
                r.engine.clone(),
                format!("{} ({})", r.workload, r.distribution),
                o.op.clone(),
                o.count.to_string(),
                format!("{:.1}", o.ops_per_s),
                format!("{:.0}", o.avg_us),
                if o.p99_us.is_nan() { "-".into() } else { format!("{:.0}", o.p99_us) },
                format!("{:.1}", r.load_ops_per_s),
                format!("{} / {}", r.profile, r.clock),
            ]);
        }
    }
    table(&headers, &body)
}

/// Ops/s per second of the run, one line per engine.
fn draw(rows: &[Row], dir: &Path) -> Result<Vec<PathBuf>> {
    let Some(first) = rows.first() else { return Ok(vec![]) };
    let ndpdb = rows.iter().find(|r| r.engine == "ndpdb").unwrap_or(first);
    let title = format!(
        "go-ycsb workload {} ({}), {} records, {} threads (ndpdb: {}, {} clock)",
        first.workload, first.distribution, first.records, first.threads, ndpdb.profile, ndpdb.clock
    );
    let series = rows
        .iter()
        .filter(|r| !r.progress.is_empty())
        .map(|r| Series { name: r.engine.clone(), points: r.progress.clone(), reference: false })
        .collect();
    Plot { title: &title, x_label: "seconds", y_label: "operations per second", series }.write(dir, "ycsb-ops")
}
