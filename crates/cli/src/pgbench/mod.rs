//! `ndpdb bench pgbench`: PostgreSQL's own load generator against ndpdb's
//! server and against a private PostgreSQL with the same durability
//! (issue 18).
//!
//! ```text
//!  for each engine (ndpdb, postgresql):
//!     start a private server ─► pgbench -i -s S ─► pgbench -c C -j J -T T -P 1 [-S]
//!        ─► TPC-B invariants with psql (sums of balances and deltas equal,
//!           history rows = transactions pgbench counted) ─► stop the server
//!  ──► table (tps, latency, failed), JSON lines, tps-over-time plot
//! ```
//!
//! ndpdb runs as `ndpdb serve` in a child process of this binary over a
//! fresh database in a temporary directory (`targets.rs`); its commits
//! wait for the log flush to the device image, so PostgreSQL runs with
//! `fsync` and `synchronous_commit` on. The figures are pgbench's own
//! (`run.rs` parses its summary). A run whose invariants fail, or whose
//! pgbench fails, makes the command exit 1 after the report.

mod run;
pub(crate) mod targets;

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;
use ndpdb_bench::errln;
use ndpdb_bench::output::{Plot, Series, table};
use serde::Serialize;

use run::{Invariants, RunFlags};
use targets::ServerBenchArgs;

#[derive(Args, Debug, Clone)]
#[command(after_help = "Needs pgbench and psql (Debian: postgresql-client) and PostgreSQL's server for the \
baseline (Debian: postgresql). Each engine gets a private server: ndpdb serve on a free loopback port over a \
temporary database, PostgreSQL in a temporary cluster with fsync and synchronous_commit on. See docs/server.md.")]
pub struct PgbenchArgs {
    /// pgbench's scale factor (-s): 100,000 accounts per unit
    #[arg(long, short = 's', default_value_t = 10)]
    pub scale: u32,
    /// Clients (-c)
    #[arg(long, short = 'c', default_value_t = 8)]
    pub clients: u32,
    /// pgbench worker threads (-j)
    #[arg(long, short = 'j', default_value_t = 2)]
    pub jobs: u32,
    /// Seconds of the timed run (-T)
    #[arg(long, short = 'T', default_value_t = 60)]
    pub time: u32,
    /// Run pgbench's select-only script (-S) instead of TPC-B
    #[arg(long, short = 'S')]
    pub select_only: bool,
    /// Tries of a transaction that fails with a serialization or deadlock error (pgbench's --max-tries)
    #[arg(long, default_value_t = 1)]
    pub max_tries: u32,
    #[command(flatten)]
    pub common: ServerBenchArgs,
}

/// One engine's run: pgbench's figures and the invariants' check.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub engine: String,
    pub script: &'static str,
    pub scale: u32,
    pub clients: u32,
    pub jobs: u32,
    pub seconds: u32,
    pub init_s: f64,
    pub transactions: u64,
    pub failed: u64,
    pub retried: u64,
    pub tps: f64,
    pub latency_avg_ms: f64,
    pub latency_stddev_ms: Option<f64>,
    /// TPC-B only: the sums and history's rows after the run.
    pub invariants: Option<Invariants>,
    pub invariants_hold: Option<bool>,
    pub progress: Vec<(f64, f64)>,
    /// ndpdb: its device profile and clock; PostgreSQL: "-".
    pub profile: String,
    pub clock: String,
    pub error: Option<String>,
}

pub fn run(a: PgbenchArgs) -> Result<()> {
    a.common.check_engines()?;
    if a.scale == 0 || a.clients == 0 || a.jobs == 0 || a.time == 0 || a.max_tries == 0 {
        bail!("--scale, --clients, --jobs, --time and --max-tries must be at least 1");
    }
    let mut rows = Vec::new();
    for engine in &a.common.engines {
        errln!("pgbench on {engine}: scale {}, {} clients, {} s ...", a.scale, a.clients, a.time);
        rows.push(engine_row(&a, engine));
    }
    a.common.publish("pgbench", &rows, &render(&rows), |dir| draw(&rows, dir))?;
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| r.error.is_some() || r.invariants_hold == Some(false))
        .map(|r| r.engine.clone())
        .collect();
    if !bad.is_empty() {
        bail!("pgbench failed or the TPC-B invariants do not hold on: {}", bad.join(", "));
    }
    Ok(())
}

/// Runs one engine; a failure becomes the row's `error`.
fn engine_row(a: &PgbenchArgs, engine: &str) -> Row {
    let (profile, clock) = a.common.profile_clock(engine);
    let mut row = Row {
        engine: engine.to_string(),
        script: if a.select_only { "select-only" } else { "tpcb" },
        scale: a.scale,
        clients: a.clients,
        jobs: a.jobs,
        seconds: a.time,
        init_s: 0.0,
        transactions: 0,
        failed: 0,
        retried: 0,
        tps: 0.0,
        latency_avg_ms: 0.0,
        latency_stddev_ms: None,
        invariants: None,
        invariants_hold: None,
        progress: vec![],
        profile,
        clock,
        error: None,
    };
    if let Err(e) = fill(a, engine, &mut row) {
        errln!("pgbench on {engine}: {e:#}");
        row.error = Some(format!("{e:#}"));
    }
    row
}

fn fill(a: &PgbenchArgs, engine: &str, row: &mut Row) -> Result<()> {
    let target = a.common.start(engine)?;
    let endpoint = target.endpoint().clone();
    row.init_s = run::init(&endpoint, a.scale)?;
    let flags = RunFlags {
        clients: a.clients,
        jobs: a.jobs,
        seconds: a.time,
        select_only: a.select_only,
        max_tries: a.max_tries,
    };
    let s = run::timed(&endpoint, &flags)?;
    (row.transactions, row.failed, row.retried) = (s.transactions, s.failed, s.retried);
    (row.tps, row.latency_avg_ms, row.latency_stddev_ms) = (s.tps, s.latency_avg_ms, s.latency_stddev_ms);
    row.progress = s.progress;
    if !a.select_only {
        let inv = run::invariants(&endpoint)?;
        row.invariants_hold = Some(inv.hold(s.transactions));
        row.invariants = Some(inv);
    }
    target.stop()
}

fn render(rows: &[Row]) -> String {
    let headers = [
        "engine",
        "script",
        "scale",
        "clients",
        "init s",
        "tps",
        "lat avg ms",
        "stddev ms",
        "txns",
        "failed",
        "retried",
        "invariants",
        "profile / clock",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.engine.clone(),
                r.script.to_string(),
                r.scale.to_string(),
                r.clients.to_string(),
                format!("{:.1}", r.init_s),
                format!("{:.1}", r.tps),
                format!("{:.3}", r.latency_avg_ms),
                r.latency_stddev_ms.map_or("-".into(), |v| format!("{v:.3}")),
                r.transactions.to_string(),
                r.failed.to_string(),
                r.retried.to_string(),
                match (r.invariants_hold, &r.error) {
                    (_, Some(_)) => "error".into(),
                    (Some(true), _) => "hold".into(),
                    (Some(false), _) => "VIOLATED".into(),
                    (None, _) => "-".into(),
                },
                format!("{} / {}", r.profile, r.clock),
            ]
        })
        .collect();
    table(&headers, &body)
}

/// tps per second of the run, one line per engine.
fn draw(rows: &[Row], dir: &Path) -> Result<Vec<PathBuf>> {
    let Some(first) = rows.first() else { return Ok(vec![]) };
    let ndpdb = rows.iter().find(|r| r.engine == "ndpdb").unwrap_or(first);
    let title = format!(
        "pgbench {} scale {}, {} clients, {} jobs (ndpdb: {}, {} clock)",
        first.script, first.scale, first.clients, first.jobs, ndpdb.profile, ndpdb.clock
    );
    let series = rows
        .iter()
        .filter(|r| !r.progress.is_empty())
        .map(|r| Series { name: r.engine.clone(), points: r.progress.clone(), reference: false })
        .collect();
    Plot { title: &title, x_label: "seconds", y_label: "transactions per second", series }.write(dir, "pgbench-tps")
}
