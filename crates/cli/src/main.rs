//! `ndpdb`: the command-line front end. Thin by design: each subcommand parses
//! its arguments, calls a library crate, and prints tables and JSON lines.

/// `println!` for the commands' output, which treats a closed stdout
/// (`ndpdb ... | head`) as the end of the reader's interest, not as an error:
/// the command goes on and finishes its work, so a database command still
/// closes its database. Any other failure to write (a full disk under a
/// redirection) is reported on stderr once and makes `ndpdb` exit 1.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::stdout_result({
            use std::io::Write;
            writeln!(std::io::stdout(), $($arg)*)
        })
    };
}

/// `print!` with [`outln!`]'s handling of a closed stdout.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout_result({
            use std::io::Write;
            write!(std::io::stdout(), $($arg)*)
        })
    };
}

mod db;
mod demo;

/// Set when writing to stdout failed for any reason but a closed pipe.
static STDOUT_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What [`outln!`] and [`out!`] do with a write's result.
fn stdout_result(r: std::io::Result<()>) {
    if let Err(e) = r
        && e.kind() != std::io::ErrorKind::BrokenPipe
        && !STDOUT_FAILED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        eprintln!("error: writing the output to stdout: {e}");
    }
}

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use ndpdb_bench::{device_scaling, output};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};

#[derive(Parser)]
#[command(name = "ndpdb", version, about = "A database engine for near-data processing on computational storage", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The neoDBMS demonstration in short: scenarios 1-3 beside PostgreSQL, then the device's scaling
    Demo(DemoArgs),
    /// List or print the hardware profiles that ship with ndpdb
    Profiles {
        #[command(subcommand)]
        command: ProfilesCmd,
    },
    /// Run the hardware profiler (hybridNDP 3.1) and write the hardware-model parameter file
    Profile(ProfileArgs),
    /// Run an experiment
    Bench {
        #[command(subcommand)]
        command: BenchCmd,
    },
    /// A database in a directory: create, load ORDER_LINE, update, pin snapshots, aggregate, gc
    Db {
        #[command(subcommand)]
        command: db::DbCmd,
    },
    /// Recover a database if it crashed, then check its integrity: every page decoded, every version
    /// chain and VID map entry walked; exits non-zero when anything is wrong
    Check {
        /// Database directory
        dir: PathBuf,
        /// Profile name or .toml path (default: the profile the image was created with)
        #[arg(long)]
        profile: Option<String>,
        /// Print one JSON object instead of text
        #[arg(long)]
        json: bool,
    },
    /// Create or inspect a device image in a database directory
    Device {
        #[command(subcommand)]
        command: DeviceCmd,
    },
}

#[derive(Args)]
struct DemoArgs {
    /// Directory under which the run's results directory is made
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

#[derive(Subcommand)]
enum ProfilesCmd {
    /// One line per shipped profile
    List,
    /// Print a profile's TOML (copy it, edit it, pass the file to --profile)
    Show {
        /// A shipped profile's name
        name: String,
    },
}

#[derive(Args)]
struct ProfileArgs {
    /// Profile name (see `ndpdb profiles list`) or path to a .toml file
    #[arg(long, default_value = "u280-nvm")]
    profile: String,
    /// `virtual`: the model's clock only (exact, fast); `real`: completions held to wall-clock time
    #[arg(long, default_value = "virtual")]
    clock: ClockKind,
    /// Where to write the hardware-model parameter file
    #[arg(long, default_value = "hardware-model.toml")]
    out: PathBuf,
    /// Fewer repetitions (for a first look)
    #[arg(long)]
    quick: bool,
    /// Print the comparison as JSON lines instead of a table
    #[arg(long)]
    json: bool,
}

/// How an experiment reports: table and JSON lines, and where its files go.
#[derive(Args)]
pub(crate) struct Report {
    /// Print JSON lines on stdout (the table goes to stderr)
    #[arg(long)]
    pub(crate) json: bool,
    /// Directory under which the run's results directory is made
    #[arg(long, default_value = "results")]
    pub(crate) out: PathBuf,
}

impl Report {
    /// Prints the table, and the rows as JSON lines when asked to.
    fn print<T: serde::Serialize>(&self, rows: &[T], table: &str) -> Result<()> {
        if self.json {
            for r in rows {
                outln!("{}", serde_json::to_string(r)?);
            }
            eprint!("{table}");
        } else {
            out!("{table}");
        }
        Ok(())
    }
}

#[derive(Subcommand)]
enum BenchCmd {
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
    /// The crash harness's worker (run by `ndpdb bench crash`)
    #[command(hide = true)]
    CrashWorker(CrashWorkerArgs),
}

#[derive(Args)]
struct CrashArgs {
    /// Crash points
    #[arg(long, default_value_t = 200)]
    points: u32,
    /// Tuples in the table before the first point
    #[arg(long, default_value_t = 2000)]
    rows: u64,
    /// Profile with a [coherent] section (the workload runs update-NDP)
    #[arg(long, default_value = "u280-nvm")]
    profile: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    report: Report,
}

#[derive(Args)]
struct RecoveryArgs {
    /// ORDER_LINE tuples loaded
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// One-tuple update transactions after the load
    #[arg(long, default_value_t = 100_000)]
    txns: u64,
    #[arg(long, default_value = "u280-nvm")]
    profile: String,
    /// Image capacity in MiB
    #[arg(long, default_value_t = 2048)]
    capacity_mib: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    report: Report,
}

#[derive(Args)]
struct CrashWorkerArgs {
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
struct LocksArgs {
    /// Experiments to run, comma separated (1: latency under contention, 2: coherent vs PCIe, 3: vs conventional)
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    experiments: Vec<u32>,
    /// Exp. 1: percentages of the measured side's requests on keys the other side requests, comma separated
    #[arg(long, value_delimiter = ',', default_value = "0,25,50,75,100")]
    contention: Vec<u32>,
    /// Exp. 1's device: a profile with a [coherent] section (u280-nvm, ideal) or a path to a .toml file
    #[arg(long, default_value = "u280-nvm")]
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
    report: Report,
}

#[derive(Args)]
pub(crate) struct SnapshotArgs {
    /// Scenarios to run, comma separated (1: data volume, 2: versions per tuple, 3: snapshot position)
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    pub(crate) scenarios: Vec<u32>,
    /// Run this composer file (TOML, see docs/composer.md) instead of the built-in scenarios
    #[arg(long)]
    pub(crate) workload: Option<PathBuf>,
    /// Print the built-in composer file of this scenario (with --rows/--rounds) and exit
    #[arg(long)]
    pub(crate) print_workload: Option<u32>,
    /// ORDER_LINE tuples (the largest volume of scenario 1)
    #[arg(long, default_value_t = 100_000)]
    pub(crate) rows: u64,
    /// Update rounds (scenario 2 runs 1..=rounds+1 versions; scenario 3 has rounds+1 snapshot positions)
    #[arg(long, default_value_t = 4)]
    pub(crate) rounds: u32,
    /// Scenario 3's snapshot positions, comma separated, as update rounds before the snapshot (0..=rounds; default: all)
    #[arg(long, value_delimiter = ',')]
    pub(crate) positions: Vec<u32>,
    /// The analytical operation: sum, count, count-star, min, max, avg (of ol_amount)
    #[arg(long, default_value = "sum")]
    pub(crate) op: String,
    /// Profile name or path to a .toml file
    #[arg(long, default_value = "u280-nvm")]
    pub(crate) profile: String,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    pub(crate) clock: ClockKind,
    /// PE counts for ndpdb NDP, comma separated
    #[arg(long, value_delimiter = ',', default_value = "16")]
    pub(crate) pes: Vec<u32>,
    /// Host worker counts for the ndpdb block stack, comma separated
    #[arg(long, value_delimiter = ',', default_value = "2")]
    pub(crate) workers: Vec<usize>,
    /// PostgreSQL parallel worker counts (max_parallel_workers_per_gather), comma separated
    #[arg(long, value_delimiter = ',', default_value = "0,2")]
    pub(crate) pg_workers: Vec<usize>,
    /// Leave PostgreSQL out
    #[arg(long)]
    pub(crate) no_postgres: bool,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Runs of each query on each engine; the table shows the median run, the JSON lists all (wall_s_runs)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) repeat: u32,
    #[command(flatten)]
    pub(crate) report: Report,
}

#[derive(Args)]
struct OrderlineArgs {
    /// Profile name or path to a .toml file
    #[arg(long, default_value = "u280-nvm")]
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
    report: Report,
}

#[derive(Args)]
struct ScalingArgs {
    /// Profile name or path to a .toml file
    #[arg(long, default_value = "u280-nvm")]
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
    report: Report,
}

#[derive(Subcommand)]
enum DeviceCmd {
    /// Create a device image in a database directory
    Create(DeviceCreateArgs),
    /// Open an existing image and print what the device says of itself
    Info(DeviceInfoArgs),
}

#[derive(Args)]
struct DeviceCreateArgs {
    /// Database directory
    #[arg(long, default_value = "ndpdb-data")]
    db: PathBuf,
    /// Profile name or path to a .toml file
    #[arg(long, default_value = "u280-nvm")]
    profile: String,
    /// Image capacity in MiB (default: the profile's capacity, at most 4096)
    #[arg(long)]
    capacity_mib: Option<u64>,
}

#[derive(Args)]
struct DeviceInfoArgs {
    /// Database directory
    #[arg(long, default_value = "ndpdb-data")]
    db: PathBuf,
    /// Profile name or path to a .toml file (default: the profile the image was created with)
    #[arg(long)]
    profile: Option<String>,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
    if STDOUT_FAILED.load(std::sync::atomic::Ordering::Relaxed) {
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Cmd::Demo(a) => {
            output::ResultsDir::check_root(&a.out)?;
            demo::run(&a.out)
        }
        Cmd::Db { command } => db::run(command),
        Cmd::Profiles { command: ProfilesCmd::List } => {
            out!("{}", profiles_table()?);
            Ok(())
        }
        Cmd::Profiles { command: ProfilesCmd::Show { name } } => match Profile::builtin_text(&name) {
            Some(text) => {
                out!("{text}");
                Ok(())
            }
            None => Err(Profile::load(&name)
                .err()
                .map(anyhow::Error::from)
                .unwrap_or_else(|| anyhow::anyhow!("`{name}` is a file, not a shipped profile; print it with cat"))),
        },
        Cmd::Profile(a) => profile_cmd(a),
        Cmd::Bench { command: BenchCmd::DeviceScaling(a) } => scaling_cmd(a),
        Cmd::Bench { command: BenchCmd::OrderlineSum(a) } => orderline_cmd(a),
        Cmd::Bench { command: BenchCmd::Snapshot(a) } => snapshot_cmd(a).map(|_| ()),
        Cmd::Bench { command: BenchCmd::Locks(a) } => locks_cmd(a),
        Cmd::Bench { command: BenchCmd::Crash(a) } => crash_cmd(a),
        Cmd::Bench { command: BenchCmd::Recovery(a) } => recovery_cmd(a),
        Cmd::Bench { command: BenchCmd::CrashWorker(a) } => {
            let faults =
                ndpdb_device::Faults { fail_from: a.fail_from, torn_write: a.torn_at.map(|n| (n, a.torn_sectors)) };
            ndpdb_bench::crash::worker(&a.db, &a.profile, a.seed, faults)
        }
        Cmd::Check { dir, profile, json } => db::check(&dir, profile.as_deref(), json),
        Cmd::Device { command: DeviceCmd::Create(a) } => {
            let profile = Profile::load(&a.profile)?;
            let capacity =
                match a.capacity_mib {
                    Some(m) => Some(m.checked_mul(1 << 20).filter(|b| *b <= 1 << 50).ok_or_else(|| {
                        anyhow::anyhow!("--capacity-mib {m} is too large: at most {} MiB", 1u64 << 30)
                    })?),
                    None => None,
                };
            let dev = Device::create(&a.db, profile, capacity, DeviceOptions::default())?;
            let info = dev.info();
            outln!(
                "created {} : {} MiB {} medium, profile {}",
                a.db.join(ndpdb_device::IMAGE_FILE).display(),
                info.capacity_bytes >> 20,
                info.medium_kind,
                info.profile
            );
            Ok(())
        }
        Cmd::Device { command: DeviceCmd::Info(a) } => {
            let name = match &a.profile {
                Some(p) => p.clone(),
                None => Device::image_profile(&a.db)?,
            };
            let profile = Profile::load(&name)
                .with_context(|| format!("loading profile `{name}` (pass --profile to choose another)"))?;
            let dev = Device::open(&a.db, profile, DeviceOptions::default())?;
            let mut qp = dev.queue_pair();
            let info = match qp.call(ndpdb_device::Command::Identify)? {
                ndpdb_device::Reply::Identify(i) => i,
                other => bail!("identify replied {other:?}"),
            };
            if a.json {
                outln!("{}", serde_json::to_string(&info)?);
            } else {
                outln!("{}", serde_json::to_string_pretty(&info)?);
                outln!("{}", dev.counters().render());
            }
            Ok(())
        }
    }
}

pub(crate) fn profiles_table() -> Result<String> {
    let mut rows = Vec::new();
    for (name, _) in ndpdb_device::profile::BUILTIN {
        let p = Profile::load(name)?;
        rows.push(vec![
            p.name.clone(),
            p.kind().name().to_string(),
            format!("{}x{}", p.channels(), p.chips_per_channel()),
            p.pe.count.to_string(),
            format!("{} MiB", p.dram.ndp_mib),
            p.link.name.clone(),
            p.coherent.as_ref().map(|c| c.name.clone()).unwrap_or_else(|| "-".into()),
        ]);
    }
    Ok(output::table(&["profile", "medium", "channels x chips", "PEs", "NDP DRAM", "link", "coherent"], &rows))
}

/// A scratch directory for an experiment's own image (removed afterwards),
/// so that experiments never write into a user's database.
pub(crate) fn scratch() -> Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix("ndpdb-scratch-").tempdir().context("creating a scratch directory")
}

pub(crate) fn run_profiler(profile: &Profile, clock: ClockKind, quick: bool) -> Result<ndpdb_profiler::HardwareModel> {
    let dir = scratch()?;
    let dev = Device::create(dir.path(), profile.clone(), Some(64 << 20), DeviceOptions::with_clock(clock))?;
    let effort = if quick { ndpdb_profiler::Effort::quick() } else { ndpdb_profiler::Effort::full() };
    Ok(ndpdb_profiler::profile(&dev, effort)?)
}

pub(crate) fn comparison_table(model: &ndpdb_profiler::HardwareModel, profile: &Profile) -> String {
    let fmt = |x: f64| if x.is_infinite() { "inf".to_string() } else { format!("{x:.3}") };
    let rows: Vec<Vec<String>> = ndpdb_profiler::compare(model, profile)
        .into_iter()
        .map(|c| {
            let dev = match c.profile {
                Some(p) if p.is_finite() && p != 0.0 => format!("{:+.1}%", (c.measured - p) / p * 100.0),
                _ => "-".into(),
            };
            vec![
                c.figure.to_string(),
                c.unit.to_string(),
                fmt(c.measured),
                c.profile.map(fmt).unwrap_or("-".into()),
                dev,
            ]
        })
        .collect();
    format!(
        "hardware profile of `{}` ({} clock)\n{}",
        profile.name,
        model.clock,
        output::table(&["figure", "unit", "measured", "profile", "dev"], &rows)
    )
}

fn profile_cmd(a: ProfileArgs) -> Result<()> {
    let profile = Profile::load(&a.profile)?;
    // Say so before the run, not after it.
    let dir = a.out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!("--out {}: the directory {} does not exist; create it first", a.out.display(), dir.display());
    }
    let model = run_profiler(&profile, a.clock, a.quick)?;
    std::fs::write(&a.out, model.to_toml()).with_context(|| format!("writing {}", a.out.display()))?;
    if a.json {
        for c in ndpdb_profiler::compare(&model, &profile) {
            outln!("{}", serde_json::to_string(&c)?);
        }
    } else {
        out!("{}", comparison_table(&model, &profile));
    }
    eprintln!("hardware model written to {}", a.out.display());
    Ok(())
}

fn scaling_cmd(a: ScalingArgs) -> Result<()> {
    output::ResultsDir::check_root(&a.report.out)?;
    let cfg = device_scaling::Config {
        profile: Profile::load(&a.profile)?,
        clock: a.clock,
        pes: a.pes,
        transfers_per_pe: a.transfers,
        span_bytes: a.span_bytes,
        seed: a.seed,
    };
    let rows = run_scaling(&cfg)?;
    let table = device_scaling::table(&rows);
    a.report.print(&rows, &table)?;
    let dir = write_scaling(&rows, &table, &a.report.out)?;
    eprintln!("results: {}", dir.display());
    Ok(())
}

pub(crate) fn run_scaling(cfg: &device_scaling::Config) -> Result<Vec<device_scaling::Row>> {
    let dir = scratch()?;
    let bar = indicatif::ProgressBar::new(cfg.pes.len() as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} PE counts").expect("template"));
    bar.set_message(format!("device scaling on {} ({} clock)", cfg.profile.name, cfg.clock.name()));
    let rows = device_scaling::run(cfg, dir.path(), |_| bar.inc(1))?;
    bar.finish_and_clear();
    Ok(rows)
}

pub(crate) fn write_scaling(rows: &[device_scaling::Row], table: &str, out: &Path) -> Result<PathBuf> {
    let dir = output::ResultsDir::create(out, "device-scaling")?;
    dir.write_jsonl("results.jsonl", rows)?;
    dir.write_text("table.txt", table)?;
    if let Err(e) = device_scaling::plot(rows, &dir.path) {
        eprintln!("no plot: {e:#}");
    }
    Ok(dir.path)
}

fn locks_cmd(a: LocksArgs) -> Result<()> {
    output::ResultsDir::check_root(&a.report.out)?;
    use ndpdb_bench::locks;
    let profiles = if a.profiles.is_empty() {
        ndpdb_device::profile::BUILTIN.iter().map(|(name, _)| Profile::load(name)).collect::<Result<Vec<_>, _>>()?
    } else {
        a.profiles.iter().map(|p| Profile::load(p)).collect::<Result<Vec<_>, _>>()?
    };
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
    cfg.validate()?;
    for w in cfg.warnings() {
        eprintln!("warning: {w}");
    }
    let outcome = run_locks(&cfg)?;
    let rows = outcome.rows;
    let mut table = locks::table(&rows);
    for n in &outcome.notes {
        table += &format!("note: {n}\n");
    }
    a.report.print(&rows, &table)?;
    let (dir, plots) = write_locks(&rows, &table, &a.report.out)?;
    eprintln!("results: {}", dir.display());
    for p in plots {
        eprintln!("  {}", p.display());
    }
    Ok(())
}

fn recovery_cmd(a: RecoveryArgs) -> Result<()> {
    output::ResultsDir::check_root(&a.report.out)?;
    use ndpdb_bench::recovery;
    let scratch = scratch()?;
    let cfg = recovery::Config {
        rows: a.rows,
        txns: a.txns,
        profile: Profile::load(&a.profile)?,
        seed: a.seed,
        capacity: a.capacity_mib.saturating_mul(1 << 20),
    };
    let bar = indicatif::ProgressBar::new(1);
    bar.set_style(indicatif::ProgressStyle::with_template("{msg:>8} [{bar:30}] {pos}/{len}").expect("template"));
    let row = recovery::run(&cfg, &scratch.path().join("db"), |what, done, of| {
        bar.set_length(of);
        bar.set_position(done);
        bar.set_message(what.to_string());
    })?;
    bar.finish_and_clear();
    let table = output::table(
        &[
            "rows",
            "update txns",
            "log B/tuple (load)",
            "log B/update txn",
            "updates/s",
            "log B at crash",
            "recovery s",
            "commits replayed",
            "integrity errors",
        ],
        &[vec![
            row.rows.to_string(),
            row.update_txns.to_string(),
            format!("{:.1}", row.load_log_bytes_per_tuple),
            format!("{:.1}", row.log_bytes_per_update_txn),
            format!("{:.0}", row.update_txns_per_s),
            row.log_bytes_at_crash.to_string(),
            format!("{:.3}", row.recovery_s),
            row.recovered_commits.to_string(),
            row.integrity_errors.to_string(),
        ]],
    );
    a.report.print(std::slice::from_ref(&row), &table)?;
    let dir = output::ResultsDir::create(&a.report.out, "recovery")?;
    dir.write_jsonl("recovery.jsonl", std::slice::from_ref(&row))?;
    eprintln!("profile {}, clock virtual (times are wall time on this machine)", row.profile);
    eprintln!("results: {}", dir.path.display());
    Ok(())
}

fn crash_cmd(a: CrashArgs) -> Result<()> {
    output::ResultsDir::check_root(&a.report.out)?;
    use ndpdb_bench::crash;
    let scratch = scratch()?;
    let cfg = crash::Config {
        points: a.points,
        seed: a.seed,
        profile: a.profile.clone(),
        rows: a.rows,
        exe: std::env::current_exe().context("finding the ndpdb binary for the workers")?,
        dir: scratch.path().join("db"),
    };
    let bar = indicatif::ProgressBar::new(u64::from(a.points));
    bar.set_style(
        indicatif::ProgressStyle::with_template("crash points [{bar:30}] {pos}/{len} ({msg})").expect("template"),
    );
    let mut points = Vec::new();
    let summary = crash::run(&cfg, |p| {
        bar.inc(1);
        bar.set_message(format!(
            "{} acknowledged commits so far",
            points.iter().map(|p: &crash::Point| p.acknowledged_commits).sum::<u64>() + p.acknowledged_commits
        ));
        if p.lost_commits > 0 || p.integrity_errors > 0 {
            bar.println(format!(
                "crash point {} ({} at {}): {} lost commits, {} integrity errors",
                p.point, p.crash, p.at, p.lost_commits, p.integrity_errors
            ));
        }
        points.push(p.clone());
    })?;
    bar.finish_and_clear();
    let dir = output::ResultsDir::create(&a.report.out, "crash")?;
    dir.write_jsonl("points.jsonl", &points)?;
    dir.write_jsonl("summary.jsonl", std::slice::from_ref(&summary))?;
    let rows: Vec<Vec<String>> = vec![vec![
        summary.crash_points.to_string(),
        format!("{}/{}/{}", summary.sigkill, summary.fail, summary.torn),
        summary.acknowledged_commits.to_string(),
        summary.lost_commits.to_string(),
        summary.integrity_errors.to_string(),
        summary.log_truncations.to_string(),
        format!("{:.3}", summary.recovery_s_mean),
        format!("{:.3}", summary.recovery_s_max),
    ]];
    let table = output::table(
        &[
            "crash points",
            "sigkill/fail/torn",
            "acknowledged",
            "lost",
            "integrity errors",
            "log tails cut",
            "recovery s mean",
            "recovery s max",
        ],
        &rows,
    );
    if a.report.json {
        for p in &points {
            outln!("{}", serde_json::to_string(p)?);
        }
        outln!("{}", serde_json::to_string(&summary)?);
        eprint!("{table}");
    } else {
        out!("{table}");
    }
    eprintln!("results: {}", dir.path.display());
    if summary.lost_commits > 0 || summary.integrity_errors > 0 {
        bail!("{} lost commits and {} integrity errors", summary.lost_commits, summary.integrity_errors);
    }
    Ok(())
}

pub(crate) fn run_locks(cfg: &ndpdb_bench::locks::Config) -> Result<ndpdb_bench::locks::Outcome> {
    let dir = scratch()?;
    let bar = indicatif::ProgressBar::new(cfg.steps() as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{msg:<40} [{bar:30}] {pos}/{len} steps").expect("template"));
    let rows = ndpdb_bench::locks::run(cfg, dir.path(), |done, _, label| {
        bar.set_position(done as u64);
        bar.set_message(label.to_string());
    })?;
    bar.finish_and_clear();
    Ok(rows)
}

/// Writes the run's JSON lines, table and plots; returns the results
/// directory and the plots it holds.
pub(crate) fn write_locks(
    rows: &[ndpdb_bench::locks::Row],
    table: &str,
    out: &Path,
) -> Result<(PathBuf, Vec<PathBuf>)> {
    let dir = output::ResultsDir::create(out, "locks")?;
    dir.write_jsonl("results.jsonl", rows)?;
    dir.write_text("table.txt", table)?;
    let plots = ndpdb_bench::locks::plot(rows, &dir.path).unwrap_or_else(|e| {
        eprintln!("no plot: {e:#}");
        Vec::new()
    });
    Ok((dir.path, plots))
}

fn orderline_cmd(a: OrderlineArgs) -> Result<()> {
    output::ResultsDir::check_root(&a.report.out)?;
    use ndpdb_bench::orderline;
    let cfg = orderline::Config {
        profile: Profile::load(&a.profile)?,
        clock: a.clock,
        rows: a.rows,
        rounds: a.rounds,
        pes: a.pes,
        workers: a.workers,
        seed: a.seed,
    };
    let dir = scratch()?;
    let bar = indicatif::ProgressBar::new(a.rows);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg:>16} [{bar:30}] {pos}/{len} tuples ({per_sec})")
            .expect("template"),
    );
    let rows = orderline::run(&cfg, dir.path(), |phase, n, total| {
        bar.set_length(total);
        if bar.message() != phase {
            bar.set_message(phase.to_string());
            bar.reset();
        }
        bar.set_position(n);
    })?;
    bar.finish_and_clear();
    let table = orderline::table(&rows);
    a.report.print(&rows, &table)?;
    let out = output::ResultsDir::create(&a.report.out, "orderline-sum")?;
    out.write_jsonl("results.jsonl", &rows)?;
    out.write_text("table.txt", &table)?;
    eprintln!("results: {}", out.path.display());
    Ok(())
}

/// Runs `ndpdb bench snapshot`; returns the results directory.
pub(crate) fn snapshot_cmd(a: SnapshotArgs) -> Result<PathBuf> {
    output::ResultsDir::check_root(&a.report.out)?;
    use ndpdb_bench::compose::Workload;
    use ndpdb_bench::snapshot;
    if let Some(n) = a.print_workload {
        for (_, w) in snapshot::scenario(n, a.rows, a.rounds, &a.op, &a.positions)? {
            outln!("# {}\n{}", w.name, w.to_toml());
        }
        return Ok(PathBuf::new());
    }
    let cfg = snapshot::Config {
        profile: Profile::load(&a.profile)?,
        clock: a.clock,
        pes: a.pes.clone(),
        workers: a.workers.clone(),
        postgres_workers: if a.no_postgres { vec![] } else { a.pg_workers.clone() },
        seed: a.seed,
        repeat: a.repeat,
    };
    if cfg.profile.pe.count == 0 {
        bail!(
            "profile `{}` has no processing elements (pe.count = 0), so NDP cannot run on it; choose a profile \
             with PEs (ndpdb profiles list)",
            cfg.profile.name
        );
    }
    if let Some(&bad) = cfg.pes.iter().find(|&&p| p == 0 || p > cfg.profile.pe.count) {
        bail!("--pes {bad}: profile `{}` has 1..={} PEs", cfg.profile.name, cfg.profile.pe.count);
    }
    let runs: Vec<(u32, Vec<(f64, Workload)>)> = match &a.workload {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            vec![(0, vec![(0.0, Workload::parse(&text, &path.display().to_string())?)])]
        }
        None => a
            .scenarios
            .iter()
            .map(|&n| Ok((n, snapshot::scenario(n, a.rows, a.rounds, &a.op, &a.positions)?)))
            .collect::<Result<_>>()?,
    };
    let out = output::ResultsDir::create(&a.report.out, "snapshot")?;
    let bar = indicatif::ProgressBar::new(1);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{prefix} {msg:>20} [{bar:30}] {pos}/{len}").expect("template"),
    );
    let mut all: Vec<(f64, snapshot::Row)> = Vec::new();
    let mut notes = Vec::new();
    let mut postgres = snapshot::Postgres::default();
    let mut plots = Vec::new();
    for (n, points) in runs {
        let mut scenario_rows = Vec::new();
        for (x, w) in points {
            bar.set_prefix(w.name.clone());
            let dir = scratch()?;
            let label = if n == 0 { w.name.clone() } else { format!("scenario {n}") };
            let (rows, note) = snapshot::run(&w, &label, &cfg, dir.path(), &mut postgres, |phase, done, total| {
                bar.set_message(phase.to_string());
                bar.set_length(total.max(1));
                bar.set_position(done);
            })?;
            if let Some(p) = note.postgres
                && !notes.contains(&p)
            {
                notes.push(p);
            }
            for r in rows {
                let rx = snapshot::x_of(n, x, &r);
                scenario_rows.push((rx, r));
            }
        }
        match snapshot::plot(n, &scenario_rows, &out.path) {
            Ok(p) => plots.extend(p),
            Err(e) => eprintln!("no plot: {e:#}"),
        }
        all.extend(scenario_rows);
    }
    bar.finish_and_clear();
    postgres.stop()?;
    let mut table = snapshot::table(&all);
    if let Some(s) = snapshot::speedups(&all) {
        table = format!("{table}\n{s}");
    }
    let rows: Vec<&snapshot::Row> = all.iter().map(|(_, r)| r).collect();
    a.report.print(&rows, &table)?;
    for n in &notes {
        eprintln!("{n}");
    }
    eprintln!("all engines agree on every answer");
    out.write_jsonl("results.jsonl", &rows)?;
    out.write_text("table.txt", &table)?;
    eprintln!("results: {}", out.path.display());
    for p in plots {
        eprintln!("  {}", p.display());
    }
    Ok(out.path)
}
