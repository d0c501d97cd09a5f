//! The SQL benchmarks: `ndpdb load tpch`, `ndpdb bench tpch` and `ndpdb
//! bench job` (`docs/benchmarks-sql.md`). One harness runs a list of
//! queries on several engines, checks every ndpdb answer against
//! PostgreSQL's and reports a table, JSON lines and a plot.
//!
//! ```text
//!  generate CSV (tpchgen / JOB generator) ──► <out>/<workload>-sf<S>/csv/   (cached: `complete` marker)
//!        │                                         │
//!        ├──► ndpdb: CREATE TABLE, COPY per chunk, ANALYZE ──► <out>/<workload>-sf<S>/ndpdb/  (cached)
//!        ├──► private PostgreSQL (C collation, 2 parallel workers): COPY FROM STDIN, ANALYZE
//!        └──► DuckDB (python3 module, when installed): CREATE TABLE, COPY
//!
//!  for each query: for each engine: setup; warm-up runs; timed runs; teardown
//!        ndpdb-host (SET ndp = off) ─┐
//!        ndpdb-ndp  (SET ndp = auto) ├─► answer rows ──► compare.rs vs PostgreSQL's ──► matches_postgresql
//!        postgresql ─────────────────┘
//!        duckdb     (times and row counts only)
//!  ──► report: table (median wall, modelled time, link bytes, plan ms), JSON lines, grouped-bar plot
//! ```
//!
//! Times: every engine runs each query `--warmup` times untimed, then
//! `--runs` times; the row shows the median run. ndpdb's modelled time
//! and link bytes are the device counters of the plan's scans (what
//! `EXPLAIN ANALYZE`'s `Device:` line shows); its `plan_ms` is the
//! optimizer's time. A wrong answer is printed with its difference and
//! makes the command exit non-zero after the report.

mod duckdb;
mod engines;
mod load;
mod plot;
mod report;
mod run;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use ndpdb_device::ClockKind;
use ndpdb_device::profile::DEFAULT_PROFILE;

pub use run::{job, tpch};

#[derive(Subcommand)]
pub enum LoadCmd {
    /// Generate TPC-H at a scale factor (tpchgen) and load it into an ndpdb database: CREATE TABLE,
    /// COPY, ANALYZE; prints the rows per table and the time
    Tpch(LoadTpchArgs),
}

#[derive(Args)]
pub struct LoadTpchArgs {
    /// TPC-H scale factor (1 = 6 million lineitem rows, about 1 GB of CSV)
    #[arg(long, default_value_t = 0.1)]
    pub scale: f64,
    /// Database directory (created; must be empty unless --replace)
    #[arg(long, default_value = "ndpdb-data")]
    pub db: PathBuf,
    /// Remove the database in --db first, if there is one
    #[arg(long)]
    pub replace: bool,
    /// Profile name or .toml path of the new database
    #[arg(long, default_value = DEFAULT_PROFILE)]
    pub profile: String,
}

/// What the SQL benchmarks share: engines, repetitions, profile, output.
#[derive(Args, Clone)]
pub struct HarnessArgs {
    /// Scale factor of the generated data
    #[arg(long, default_value_t = 0.1)]
    pub scale: f64,
    /// Engines, comma separated: ndpdb-host, ndpdb-ndp, postgresql, duckdb (duckdb: when its Python
    /// module is installed; PostgreSQL is always run as the answers' reference)
    #[arg(long, value_delimiter = ',', default_value = "ndpdb-host,ndpdb-ndp,postgresql,duckdb")]
    pub engines: Vec<String>,
    /// Untimed runs of each query on each engine before the timed ones
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Timed runs of each query on each engine; the table shows the median, the JSON lists all
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Profile of ndpdb's device (name or .toml path): its costs give the modelled times
    #[arg(long, default_value = DEFAULT_PROFILE)]
    pub profile: String,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    pub clock: ClockKind,
    /// Parallel workers per gather for PostgreSQL (max_parallel_workers_per_gather)
    #[arg(long, default_value_t = 2)]
    pub pg_workers: u32,
    /// work_mem of ndpdb's and PostgreSQL's sessions (both spill sorts, hash joins and hash
    /// aggregates past it); DuckDB keeps its own memory limit
    #[arg(long, default_value = "64MB")]
    pub work_mem: String,
    /// Print JSON lines on stdout (the table goes to stderr)
    #[arg(long)]
    pub json: bool,
    /// Directory under which the run's results directory is made; the generated data and the loaded
    /// ndpdb database are cached under it too (`<out>/data/<workload>-sf<S>/`), reused when complete
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
}

#[derive(Args)]
#[command(after_help = "Loads what it needs by itself: the TPC-H CSV files and an ndpdb database at the scale \
factor are cached under <out>/data/tpch-sf<S>/ (reused when complete), PostgreSQL is a private server loaded from \
the CSV files, DuckDB runs through its Python module (pip install duckdb). Each query runs --warmup times untimed, \
then --runs times per engine; the median is shown. Every ndpdb answer is checked against PostgreSQL's (tolerant \
numerics, ORDER BY ties); a mismatch is printed and makes the command exit 1. See docs/benchmarks-sql.md.")]
pub struct TpchArgs {
    /// Queries to run, comma separated (1..=22)
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22")]
    pub queries: Vec<u8>,
    #[command(flatten)]
    pub harness: HarnessArgs,
}

#[derive(Args)]
#[command(after_help = "Generates JOB-shaped data for all 21 tables (ndpdb_workload::job, docs/job-data.md), \
loads ndpdb (cached under <out>/data/job-sf<S>/) and a private PostgreSQL (C collation), and runs the JOB queries \
read from the JOB directory at run time. Each JSON line also has `relations` (tables joined) and `plan_ms` \
(ndpdb's optimizer time). DuckDB is not run here. See docs/benchmarks-sql.md.")]
pub struct JobArgs {
    /// Queries to run by name, comma separated (1a,2b,...; default: all 113)
    #[arg(long, value_delimiter = ',')]
    pub queries: Vec<String>,
    /// The JOB directory (schema.sql, queries/); default: $NDPDB_JOB_DIR or ../shared/workloads/job
    #[arg(long)]
    pub job_dir: Option<PathBuf>,
    /// Seed of the JOB generator
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub harness: HarnessArgs,
}

pub fn run_load(cmd: LoadCmd) -> Result<()> {
    match cmd {
        LoadCmd::Tpch(a) => load::load_tpch_command(&a),
    }
}
