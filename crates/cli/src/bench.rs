//! `ndpdb bench ...`: each experiment's arguments, and the dispatch that
//! turns them into the experiment's configuration in `ndpdb_bench`, which
//! checks itself, runs and reports.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use ndpdb_bench::report::Report;
use ndpdb_bench::{cbm, crash, device_scaling, locks, locks_report, orderline, recovery, snapshot};
use ndpdb_device::profile::DEFAULT_PROFILE;
use ndpdb_device::{ClockKind, Profile};
use ndpdb_storage::Freshness;

/// How an experiment reports: table and JSON lines, and where its files go.
#[derive(Args)]
pub struct ReportArgs {
    /// Print JSON lines on stdout (the table goes to stderr)
    #[arg(long)]
    json: bool,
    /// Directory under which the run's results directory is made
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

impl ReportArgs {
    /// The results writer, once the results root is known to be writable.
    fn open(self) -> Result<Report> {
        Report::new(self.json, self.out)
    }
}

#[derive(Subcommand)]
pub enum BenchCmd {
    /// In-situ 4-byte transfers per second against PEs, beside neoDBMS Table I
    DeviceScaling(ScalingArgs),
    /// Load TPC-C ORDER_LINE, run update rounds, and SUM(ol_amount) at the newest and the
    /// oldest snapshot on the device's PEs (NDP) and on the host (block stack)
    OrderlineSum(OrderlineArgs),
    /// The neoDBMS demonstration: scenarios 1-3 (or your composer file) on ndpdb NDP,
    /// ndpdb host-only and PostgreSQL, with answers checked to agree
    Snapshot(SnapshotArgs),
    /// The shared lock table paper's experiments (ccSLT, EDBT'22): lock latency on host and device
    /// under contention, coherent vs PCIe transfers, and ndpdb's table vs a PostgreSQL-style lock manager
    Locks(LocksArgs),
    /// The crash harness: a mixed workload (host writes, update-NDP, aborts) in a child process,
    /// crashed at random points (SIGKILL, failed commands, torn page writes), then recovered,
    /// checked, and every acknowledged commit verified
    Crash(CrashArgs),
    /// Log volume per transaction and recovery time: load ORDER_LINE, run one-tuple update
    /// transactions, crash without a checkpoint, and time the recovery
    Recovery(RecoveryArgs),
    /// The cooperative buffer manager's YCSB experiment (CBM paper, Figs. 5-7): a B+-tree store on a
    /// `softssd` device with 16 KiB pages, an OLTP thread (reads and committed updates) beside an OLAP
    /// thread offloading point lookups, under Baseline, Flush, Shadow and CBM; freshness checked
    Cbm(CbmArgs),
    /// The 22 TPC-H queries (validation parameters) on ndpdb host-only, ndpdb NDP-auto, a private
    /// PostgreSQL and DuckDB, every ndpdb answer checked against PostgreSQL's; loads what it needs
    Tpch(crate::sqlbench::TpchArgs),
    /// The 113 JOB queries on generated JOB data: ndpdb host-only, ndpdb NDP-auto and PostgreSQL,
    /// answers checked, with ndpdb's optimizer time
    Job(crate::sqlbench::JobArgs),
    /// Primary-key point lookups through the embedded SQL API (prepared, one session, one thread)
    SqlLookup(crate::bench_lookup::LookupArgs),
    /// pgbench (TPC-B or select-only) against `ndpdb serve` and a private PostgreSQL with the same
    /// durability: tps, latency, failed transactions, the TPC-B invariants; table, JSON, plot
    Pgbench(crate::pgbench::PgbenchArgs),
    /// go-ycsb's PostgreSQL binding (workloads a-f, zipfian) against `ndpdb serve` and a private
    /// PostgreSQL; go-ycsb is built with Go on first use; ops/s, avg and p99 latency; table, JSON, plot
    Ycsb(crate::ycsb::YcsbArgs),
    /// The crash harness's worker (run by `ndpdb bench crash`)
    #[command(hide = true)]
    CrashWorker(CrashWorkerArgs),
}

#[derive(Args)]
#[command(
    after_help = "Load --keys pairs (24-byte YCSB keys, 1 KiB values; a bulk load in key order), then for every \
method x mix x distribution x update value size run an OLTP thread (YCSB reads and updates through the store, each \
update committed) beside an OLAP thread that offloads one-key lookups until --lookups completed. Each lookup's \
answer is checked against the values committed between its dispatch and its completion (freshness violations). \
On the virtual clock host and lookup times are each thread's model time (the modelled time of the device commands \
it waited for plus its CPU time; wall times are in the JSON too); on the real clock they are end to end. Methods: baseline (no synchronisation), flush (write back every \
dirty page before each lookup, holding the pool), shadow (ship a 128 KiB memtable of updated pairs), cbm (the \
device's mirror of the pool). \
--keys 2000000 --lookups 200000 is the paper's size. See docs/cbm-bench.md."
)]
pub struct CbmArgs {
    /// Methods, comma separated: baseline, flush, shadow, cbm
    #[arg(long, value_delimiter = ',', default_value = "baseline,flush,shadow,cbm")]
    methods: Vec<String>,
    /// OLTP mixes, comma separated: read-only, read-heavy (70/30), update-heavy (30/70), update-only
    #[arg(long, value_delimiter = ',', default_value = "read-only,read-heavy,update-heavy,update-only")]
    mixes: Vec<String>,
    /// Key distributions, comma separated: uniform, zipfian (YCSB's scrambled, theta 0.99)
    #[arg(long, value_delimiter = ',', default_value = "uniform,zipfian")]
    distributions: Vec<String>,
    /// Update value sizes in bytes, comma separated
    #[arg(long, value_delimiter = ',', default_value = "500,1024,2048")]
    value_bytes: Vec<usize>,
    /// Pairs loaded before the runs
    #[arg(long, default_value_t = 50_000)]
    keys: u64,
    /// Lookups the OLAP thread completes per cell
    #[arg(long, default_value_t = 1_000)]
    lookups: u64,
    /// OLTP operations per cell before the lookups start (the pool reaches its steady state of dirty pages)
    #[arg(long, default_value_t = 2_000)]
    warmup_ops: u64,
    /// Frames of the host buffer pool (16 KiB each). Default: as many as the store's file may reach,
    /// so no dirty page is ever evicted (the paper's setup); fewer (e.g. 512) make the pool write dirty
    /// pages back under the lookups
    #[arg(long)]
    frames: Option<usize>,
    /// A small grid for CI: all four methods, read-only and update-only, zipfian, 1024 B, 3,000 keys,
    /// 300 lookups after 2,000 warm-up operations, 32 frames (other grid and size flags are ignored)
    #[arg(long)]
    quick: bool,
    /// Profile name or path to a .toml file (its page size is set to 16 KiB)
    #[arg(long, default_value = "softssd")]
    profile: String,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    clock: ClockKind,
    /// Seed of the key choices
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args)]
pub struct CrashArgs {
    /// Crash points
    #[arg(long, default_value_t = 200)]
    points: u32,
    /// Tuples in the table before the first point
    #[arg(long, default_value_t = 2000)]
    rows: u64,
    /// Profile with a [coherent] section (the workload runs update-NDP)
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The store crashed: mvcc (transactions on the MVCC store) or kv (writes on the B+-tree store)
    #[arg(long, default_value = "mvcc", value_parser = ["mvcc", "kv"])]
    store: String,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args)]
pub struct RecoveryArgs {
    /// ORDER_LINE tuples loaded
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// One-tuple update transactions after the load
    #[arg(long, default_value_t = 100_000)]
    txns: u64,
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// Image capacity in MiB
    #[arg(long, default_value_t = 2048)]
    capacity_mib: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args)]
pub struct CrashWorkerArgs {
    #[arg(long)]
    db: PathBuf,
    #[arg(long)]
    profile: String,
    #[arg(long)]
    seed: u64,
    /// Fail this command (0-based, counted from opening) and every later one
    #[arg(long)]
    fail_from: Option<u64>,
    /// Tear this command if it is a page write (and fail it and every later one)
    #[arg(long)]
    torn_at: Option<u64>,
    /// Sectors of the torn write that reach the medium
    #[arg(long, default_value_t = 1)]
    torn_sectors: u32,
    #[arg(long, default_value = "mvcc", value_parser = ["mvcc", "kv"])]
    store: String,
}

#[derive(Args)]
#[command(
    after_help = "Exp. 1 (Fig. 4): host and device lock+unlock latency while c% of the measured side's requests \
go to keys the other side is requesting at the same time. Exp. 2 (Fig. 5): 64 B and 8 KiB over the coherent \
interconnect (modelled from the profile) and over PCIe (a MemoryRead on the device's virtual clock). Exp. 3 \
(Fig. 6): --requests lock+unlock pairs, sequential and random keys, on ndpdb's table at each --table-bytes, \
on the conventional lock manager (ndpdb's, built the way PostgreSQL's is) and on PostgreSQL's own lock manager \
(timed inside a private server; --no-postgres leaves it out); with more than one size it also plots latency against the table's size. \
See docs/locks-bench.md."
)]
pub struct LocksArgs {
    /// Experiments to run, comma separated (1: latency under contention, 2: coherent vs PCIe, 3: vs conventional)
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    experiments: Vec<u32>,
    /// Exp. 1: percentages of the measured side's requests on keys the other side requests, comma separated
    #[arg(long, value_delimiter = ',', default_value = "0,25,50,75,100")]
    contention: Vec<u32>,
    /// Exp. 1's device: a profile with a [coherent] section (u280-nvm, ideal) or a path to a .toml file
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// Exp. 2's profiles, comma separated [default: every shipped profile]
    #[arg(long, value_delimiter = ',')]
    profiles: Vec<String>,
    /// Lock+unlock pairs per measurement (Exp. 1: per side and contention level; Exp. 3: per table and access)
    #[arg(long, default_value_t = 1_000_000)]
    requests: u64,
    /// Host threads (Exp. 1: measuring or loading the host side; Exp. 3: measuring)
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Exp. 1: PEs on the device side (each PE is a host thread: keep --threads + --pes within your cores)
    #[arg(long, default_value_t = 1)]
    pes: u32,
    /// Exp. 1: keys in each side's window (fewer keys: more waits for the other side's locks)
    #[arg(long, default_value_t = 64)]
    keys: u64,
    /// Bytes of ndpdb's lock table, powers of two, comma separated (the default: neoDBMS's "few megabytes",
    /// 65,536 buckets). Exp. 1 uses the first only; Exp. 3 measures ndpdb's table at every size
    #[arg(long, value_delimiter = ',', default_values_t = [ndpdb_bench::locks::DEFAULT_TABLE_BYTES])]
    table_bytes: Vec<usize>,
    /// Exp. 3: leave out PostgreSQL's own lock manager (timed in a private server; needs PostgreSQL, its
    /// server headers and a C compiler)
    #[arg(long)]
    no_postgres: bool,
    /// Seed of the key generators
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args)]
pub struct SnapshotArgs {
    /// Scenarios to run, comma separated (1: data volume, 2: versions per tuple, 3: snapshot position)
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    scenarios: Vec<u32>,
    /// Run this composer file (TOML, see docs/composer.md) instead of the built-in scenarios
    #[arg(long)]
    workload: Option<PathBuf>,
    /// Print the built-in composer file of this scenario (with --rows/--rounds) and exit
    #[arg(long)]
    print_workload: Option<u32>,
    /// ORDER_LINE tuples (the largest volume of scenario 1)
    #[arg(long, default_value_t = 100_000)]
    rows: u64,
    /// Update rounds (scenario 2 runs 1..=rounds+1 versions; scenario 3 has rounds+1 snapshot positions)
    #[arg(long, default_value_t = 4)]
    rounds: u32,
    /// Scenario 3's snapshot positions, comma separated, as update rounds before the snapshot (0..=rounds; default: all)
    #[arg(long, value_delimiter = ',')]
    positions: Vec<u32>,
    /// The analytical operation: sum, count, count-star, min, max, avg (of ol_amount)
    #[arg(long, default_value = "sum")]
    op: String,
    /// Profile name or path to a .toml file
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    clock: ClockKind,
    /// PE counts for ndpdb NDP, comma separated
    #[arg(long, value_delimiter = ',', default_value = "16")]
    pes: Vec<u32>,
    /// Host worker counts for the ndpdb block stack, comma separated
    #[arg(long, value_delimiter = ',', default_value = "2")]
    workers: Vec<usize>,
    /// PostgreSQL parallel worker counts (max_parallel_workers_per_gather), comma separated
    #[arg(long, value_delimiter = ',', default_value = "0,2")]
    pg_workers: Vec<usize>,
    /// Leave PostgreSQL out
    #[arg(long)]
    no_postgres: bool,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Runs of each query on each engine; the table shows the median run, the JSON lists all (wall_s_runs)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// How ndpdb NDP calls get the host's shared state, comma separated: ship (the delta buffer with the call),
    /// flush (written first), cbm (read from host memory through the device's mirror); a row each
    #[arg(long, value_delimiter = ',', default_value = "ship", value_parser = parse_freshness)]
    freshness: Vec<Freshness>,
    #[command(flatten)]
    report: ReportArgs,
}

fn parse_freshness(s: &str) -> std::result::Result<Freshness, String> {
    Freshness::from_name(s).ok_or_else(|| format!("unknown freshness {s:?}: use ship, flush or cbm"))
}

#[derive(Args)]
pub struct OrderlineArgs {
    /// Profile name or path to a .toml file
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// ORDER_LINE tuples to load (TPC-C population rules)
    #[arg(long, default_value_t = 100_000)]
    rows: u64,
    /// Update rounds: each gives every tuple one more version
    #[arg(long, default_value_t = 4)]
    rounds: u32,
    /// PEs for the NDP side
    #[arg(long, default_value_t = 16)]
    pes: u32,
    /// Host worker threads for the block stack
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    clock: ClockKind,
    /// Seed of the tuple and update generators
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args)]
pub struct ScalingArgs {
    /// Profile name or path to a .toml file
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// PE counts to run, comma separated
    #[arg(long, value_delimiter = ',', default_value = "1,4,8,12,16")]
    pes: Vec<u32>,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    clock: ClockKind,
    /// Random transfers per PE
    #[arg(long, default_value_t = 2_000_000)]
    transfers: u64,
    /// Bytes of the medium the random addresses cover
    #[arg(long, default_value_t = 16 << 20)]
    span_bytes: u64,
    /// Seed of the address generator
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    report: ReportArgs,
}
pub fn run(cmd: BenchCmd) -> Result<()> {
    match cmd {
        BenchCmd::DeviceScaling(a) => scaling(a),
        BenchCmd::OrderlineSum(a) => orderline(a),
        BenchCmd::Snapshot(a) => snapshot(a),
        BenchCmd::Locks(a) => locks(a),
        BenchCmd::Crash(a) => {
            let report = a.report.open()?;
            let cfg = crash::Config {
                store: crash::StoreKind::parse(&a.store)?,
                ..crash::Config::new(a.points, a.rows, &a.profile, a.seed)?
            };
            cfg.run_and_report(&report).map(drop)
        }
        BenchCmd::Recovery(a) => {
            let report = a.report.open()?;
            let cfg = recovery::Config {
                rows: a.rows,
                txns: a.txns,
                profile: Profile::load(&a.profile)?,
                seed: a.seed,
                capacity_mib: a.capacity_mib,
            };
            cfg.run_and_report(&report).map(drop)
        }
        BenchCmd::Cbm(a) => cbm_bench(a),
        BenchCmd::Tpch(a) => crate::sqlbench::tpch(a),
        BenchCmd::Job(a) => crate::sqlbench::job(a),
        BenchCmd::SqlLookup(a) => crate::bench_lookup::run(a),
        BenchCmd::Pgbench(a) => crate::pgbench::run(a),
        BenchCmd::Ycsb(a) => crate::ycsb::run(a),
        BenchCmd::CrashWorker(a) => {
            let faults =
                ndpdb_device::Faults { fail_from: a.fail_from, torn_write: a.torn_at.map(|n| (n, a.torn_sectors)) };
            match crash::StoreKind::parse(&a.store)? {
                crash::StoreKind::Mvcc => crash::worker(&a.db, &a.profile, a.seed, faults),
                crash::StoreKind::Kv => crash::kv_worker(&a.db, &a.profile, a.seed, faults),
            }
        }
    }
}

fn scaling(a: ScalingArgs) -> Result<()> {
    let report = a.report.open()?;
    let cfg = device_scaling::Config {
        profile: Profile::load(&a.profile)?,
        clock: a.clock,
        pes: a.pes,
        transfers_per_pe: a.transfers,
        span_bytes: a.span_bytes,
        seed: a.seed,
    };
    cfg.run_and_report(&report).map(drop)
}

fn orderline(a: OrderlineArgs) -> Result<()> {
    let report = a.report.open()?;
    let cfg = orderline::Config {
        profile: Profile::load(&a.profile)?,
        clock: a.clock,
        rows: a.rows,
        rounds: a.rounds,
        pes: a.pes,
        workers: a.workers,
        seed: a.seed,
    };
    cfg.run_and_report(&report).map(drop)
}

fn snapshot(a: SnapshotArgs) -> Result<()> {
    let report = a.report.open()?;
    let scenarios =
        snapshot::Scenarios { list: a.scenarios, rows: a.rows, rounds: a.rounds, op: a.op, positions: a.positions };
    if let Some(n) = a.print_workload {
        return scenarios.print(n);
    }
    let cfg = snapshot::Config {
        profile: Profile::load(&a.profile)?,
        clock: a.clock,
        pes: a.pes,
        workers: a.workers,
        postgres_workers: if a.no_postgres { vec![] } else { a.pg_workers },
        seed: a.seed,
        repeat: a.repeat,
        freshness: a.freshness,
    };
    let points = match a.workload {
        Some(path) => snapshot::Points::File(path),
        None => snapshot::Points::Scenarios(scenarios),
    };
    cfg.run_and_report(&points, &report).map(drop)
}

fn locks(a: LocksArgs) -> Result<()> {
    let report = a.report.open()?;
    // Exp. 2's profiles are loaded (and refused) before Exp. 1's.
    let profiles = locks_report::profiles(&a.profiles)?;
    let cfg = locks::Config {
        experiments: a.experiments,
        contention_pct: a.contention,
        profile: Profile::load(&a.profile)?,
        profiles,
        requests: a.requests,
        threads: a.threads,
        pes: a.pes,
        keys: a.keys,
        table_bytes: a.table_bytes,
        postgres: !a.no_postgres,
        seed: a.seed,
    };
    locks_report::run_and_report(&cfg, &report).map(drop)
}

fn cbm_bench(a: CbmArgs) -> Result<()> {
    use ndpdb_workload::ycsb::{Distribution, Mix};
    let report = a.report.open()?;
    fn parse<T>(flag: &str, names: &[String], f: fn(&str) -> Option<T>, valid: &str) -> Result<Vec<T>> {
        names.iter().map(|n| f(n.trim()).ok_or_else(|| anyhow::anyhow!("{flag}: unknown `{n}`; use {valid}"))).collect()
    }
    let mut cfg = cbm::Config {
        profile: Profile::load(&a.profile)?,
        clock: a.clock,
        methods: parse("--methods", &a.methods, cbm::Method::parse, "baseline, flush, shadow, cbm")?,
        mixes: parse("--mixes", &a.mixes, Mix::parse, "read-only, read-heavy, update-heavy, update-only")?,
        distributions: parse("--distributions", &a.distributions, Distribution::parse, "uniform, zipfian")?,
        value_bytes: a.value_bytes,
        keys: a.keys,
        lookups: a.lookups,
        warmup_ops: a.warmup_ops,
        frames: a.frames,
        seed: a.seed,
    };
    if a.quick {
        cfg = cbm::Config { profile: cfg.profile, clock: cfg.clock, seed: cfg.seed, ..cbm::Config::quick() };
    }
    cfg.run_and_report(&report).map(drop)
}
