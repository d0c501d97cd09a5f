//! The crash harness (`ndpdb bench crash`): crash a database at random
//! moments, recover it, check it, and verify every acknowledged commit.
//!
//! Each crash point runs a worker (`ndpdb bench crash-worker`, a child
//! process) on the same database directory. The worker opens the database
//! (recovering the previous crash), then runs a mixed workload of one-at-a-
//! time transactions on table `kv (k int64, v int64)`: host updates of one
//! to three keys, inserts, deletes, update-NDP (`v = v + d WHERE k = x`
//! on the device's PEs) and transactions it aborts. Now and then a
//! straggler updates one key and stays open for the next tens of
//! transactions, and every 200 transactions the worker collects garbage and
//! checkpoints, so both run while transactions are open (fuzzy checkpoints),
//! and the small image reuses its pages all the time. Before
//! each commit it prints the transaction's writes (`W`), after the commit
//! returns it prints the acknowledgement (`A`). The crash is one of:
//!
//! - `sigkill`: the harness kills the worker (SIGKILL) after a random delay;
//!   everything the device was sent survives (the medium is the file);
//! - `fail`: the device fails command `n` and every command after it;
//! - `torn`: the device writes only the first sectors of page write `n`,
//!   then fails it and every command after it.
//!
//! Then the harness opens the database itself (recovery), runs the
//! integrity check ([`ndpdb_storage::Store::check`]), reads every tuple and
//! compares with its model: the state before the point plus every
//! acknowledged transaction, and possibly the one transaction whose commit
//! was under way (durable but not acknowledged is allowed; acknowledged but
//! missing is a lost commit). It checkpoints and goes on to the next point,
//! so later points also recover databases that earlier points recovered.
//!
//! With `--store kv` the same crash points hit the B+-tree store on the
//! device image instead (`kv.rs`).

mod kv;
mod model;
mod worker;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode};
use serde::Serialize;

use crate::errln;
use crate::report::{Report, progress_bar, scratch};
use model::{State, Transcript};

pub use kv::worker as kv_worker;
pub use worker::worker;

/// The harness's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub points: u32,
    pub seed: u64,
    pub profile: String,
    /// Tuples loaded before the first point.
    pub rows: u64,
    /// The `ndpdb` binary that runs the workers.
    pub exe: PathBuf,
    /// The store the workload runs on.
    pub store: StoreKind,
}

/// The store a crash run exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The MVCC store and its transactions (`ndpdb-storage`, `ndpdb-txn`).
    Mvcc,
    /// The B+-tree key-value store on the buffer pool (`ndpdb-kv`).
    Kv,
}

impl StoreKind {
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Mvcc => "mvcc",
            StoreKind::Kv => "kv",
        }
    }

    pub fn parse(s: &str) -> Result<StoreKind> {
        match s {
            "mvcc" => Ok(StoreKind::Mvcc),
            "kv" => Ok(StoreKind::Kv),
            other => bail!("--store {other}: choose mvcc (the MVCC store) or kv (the B+-tree store)"),
        }
    }
}

impl Config {
    /// The harness run by this process's own binary, which must be
    /// `ndpdb` (the workers are `<exe> bench crash-worker`).
    pub fn new(points: u32, rows: u64, profile: &str, seed: u64) -> Result<Config> {
        let exe = std::env::current_exe().context("finding the ndpdb binary for the workers")?;
        Ok(Config { points, seed, profile: profile.to_string(), rows, exe, store: StoreKind::Mvcc })
    }

    /// The profile, which must have a coherent interconnect: the workload
    /// runs update-NDP.
    pub fn validate(&self) -> Result<Profile> {
        if self.points == 0 {
            bail!("--points 0: a run with no crash point would verify nothing; choose at least 1");
        }
        let prof = profile(&self.profile)?;
        if self.store == StoreKind::Mvcc && prof.coherent.is_none() {
            bail!(
                "profile {} has no coherent interconnect, so the workload's update-NDP cannot run; use u280-nvm",
                self.profile
            );
        }
        Ok(prof)
    }

    /// Runs the harness on a scratch database under a progress bar that
    /// says each point with lost commits or integrity errors, then reports;
    /// fails when any commit was lost or the integrity check found errors.
    pub fn run_and_report(&self, report: &Report) -> Result<PathBuf> {
        let scratch = scratch()?;
        let bar = progress_bar(u64::from(self.points), "crash points [{bar:30}] {pos}/{len} ({msg})");
        let mut points = Vec::new();
        let summary = run(self, &scratch.path().join("db"), |p| {
            bar.inc(1);
            bar.set_message(format!(
                "{} acknowledged commits so far",
                points.iter().map(|p: &Point| p.acknowledged_commits).sum::<u64>() + p.acknowledged_commits
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
        let results = report.results("crash")?;
        results.jsonl("points.jsonl", &points)?;
        results.jsonl("summary.jsonl", std::slice::from_ref(&summary))?;
        let mut lines = points.iter().map(serde_json::to_string).collect::<Result<Vec<_>, _>>()?;
        lines.push(serde_json::to_string(&summary)?);
        report.print_lines(&lines, &table(&summary));
        let dir = results.announce(&[]);
        if summary.lost_commits > 0 || summary.integrity_errors > 0 {
            bail!("{} lost commits and {} integrity errors", summary.lost_commits, summary.integrity_errors);
        }
        Ok(dir)
    }
}

/// One crash point.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub point: u32,
    pub crash: &'static str,
    /// Delay (sigkill) or command number (fail, torn).
    pub at: u64,
    pub acknowledged_commits: u64,
    /// The commit under way at the crash survived (allowed).
    pub unacknowledged_survived: bool,
    pub lost_commits: u64,
    pub integrity_errors: u64,
    pub recovered_records: u64,
    pub log_truncated: bool,
    pub recovery_s: f64,
    pub recovery_completions: u64,
    pub recovery_late_completions: u64,
}

/// The run's summary line.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub crash_points: u64,
    pub acknowledged_commits: u64,
    pub lost_commits: u64,
    pub integrity_errors: u64,
    pub log_truncations: u64,
    pub sigkill: u64,
    pub fail: u64,
    pub torn: u64,
    pub recovery_s_max: f64,
    pub recovery_s_mean: f64,
    /// The recoveries' device completions, and the late ones: recovery runs
    /// on the virtual clock, so its times are the emulator's wall times.
    pub recovery_completions: u64,
    pub recovery_late_completions: u64,
    pub clock: &'static str,
    pub profile: String,
    pub seed: u64,
    pub wall_s: f64,
    /// `mvcc` or `kv`.
    pub store: &'static str,
}

impl Summary {
    /// Counts point `p` in; `recovery_s_mean` is left to the end.
    fn add(&mut self, p: &Point) {
        self.crash_points += 1;
        self.acknowledged_commits += p.acknowledged_commits;
        self.lost_commits += p.lost_commits;
        self.integrity_errors += p.integrity_errors;
        self.log_truncations += u64::from(p.log_truncated);
        match p.crash {
            "sigkill" => self.sigkill += 1,
            "fail" => self.fail += 1,
            _ => self.torn += 1,
        }
        self.recovery_s_max = self.recovery_s_max.max(p.recovery_s);
        self.recovery_completions += p.recovery_completions;
        self.recovery_late_completions += p.recovery_late_completions;
    }
}

/// The terminal table: the summary's counts, under a heading that says
/// what its times are.
pub fn table(summary: &Summary) -> String {
    let head = format!(
        "store {}, profile {}, {} clock: recovery s is the emulator's wall time on this machine ({} late of {} device \
         completions during recovery)\n",
        summary.store, summary.profile, summary.clock, summary.recovery_late_completions, summary.recovery_completions
    );
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
    head + &crate::output::table(
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
    )
}

/// The workload's table: `kv (k int64, v int64)`.
const TABLE: &str = "kv";

/// The harness's and the worker's random numbers: xorshift64 from a seed
/// made odd (never zero).
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(seed | 1)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn profile(name: &str) -> Result<Profile> {
    Profile::load(name).with_context(|| format!("loading profile `{name}`"))
}

fn store_options() -> StoreOptions {
    StoreOptions { log_bytes: 16 << 20, ..StoreOptions::default() }
}

fn columns() -> Vec<Column> {
    vec![Column::new("k", ColumnType::Int64, false), Column::new("v", ColumnType::Int64, false)]
}

fn read_state(db: &Database) -> Result<State> {
    let t = db.table(TABLE)?;
    let mut r = db.begin(Isolation::RepeatableRead);
    let rows = r.rows(&t, &[0, 1], None, ReadMode::Host { workers: 2 })?.rows;
    r.commit()?;
    let mut s = State::new();
    for (_, vals) in rows {
        match (&vals[0], &vals[1]) {
            (Value::Int(k), Value::Int(v)) => {
                s.insert(*k, *v);
            }
            other => bail!("tuple {other:?} is not (int, int)"),
        }
    }
    Ok(s)
}

/// Runs the harness on a database it creates in `dir`; `on_point` sees
/// each point as it ends.
pub fn run(cfg: &Config, dir: &Path, mut on_point: impl FnMut(&Point)) -> Result<Summary> {
    let t0 = Instant::now();
    let prof = cfg.validate()?;
    let mut model = match cfg.store {
        StoreKind::Mvcc => create(cfg, dir, &prof)?,
        StoreKind::Kv => kv::create(dir, &prof, cfg.rows)?,
    };
    let mut rng = XorShift::new(cfg.seed);
    let mut sum = Summary {
        store: cfg.store.name(),
        profile: cfg.profile.clone(),
        clock: ClockKind::Virtual.name(),
        seed: cfg.seed,
        ..Summary::default()
    };
    let mut recovery_total = 0.0;
    for point in 0..cfg.points {
        let (crash, at) = match rng.next_u64() % 10 {
            0..=5 => ("sigkill", 30 + rng.next_u64() % 400),
            6..=7 => ("fail", 40 + rng.next_u64() % 1500),
            _ => ("torn", 40 + rng.next_u64() % 1500),
        };
        let lines = run_worker(cfg, dir, point, crash, at, &mut rng)?;
        if cfg.store == StoreKind::Kv {
            let p = kv::recover(dir, &prof, &mut model, &lines, point, crash, at)?;
            on_point(&p);
            sum.add(&p);
            recovery_total += p.recovery_s;
            continue;
        }
        let transcript = Transcript::parse(&lines)?;
        let r = recover(dir, &prof, &mut model, &transcript, point)?;
        let p = Point {
            point,
            crash,
            at,
            acknowledged_commits: transcript.acked.len() as u64,
            unacknowledged_survived: r.unacknowledged_survived,
            lost_commits: r.lost_commits,
            integrity_errors: r.integrity_errors,
            recovered_records: r.records,
            log_truncated: r.log_truncated,
            recovery_s: r.wall_s,
            recovery_completions: r.completions,
            recovery_late_completions: r.late_completions,
        };
        on_point(&p);
        sum.add(&p);
        recovery_total += p.recovery_s;
    }
    sum.recovery_s_mean = if sum.crash_points > 0 { recovery_total / sum.crash_points as f64 } else { 0.0 };
    sum.wall_s = t0.elapsed().as_secs_f64();
    Ok(sum)
}

/// Creates the database with `cfg.rows` tuples and a checkpoint; returns
/// its state.
fn create(cfg: &Config, dir: &Path, prof: &Profile) -> Result<State> {
    let dev = Device::create(dir, prof.clone(), Some(CAPACITY_BYTES), DeviceOptions::with_clock(ClockKind::Virtual))?;
    let db = Database::create(Store::new(dev, store_options())?)?;
    let t = db.create_table(TABLE, columns())?;
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 0..cfg.rows {
        w.insert(&t, &[Value::Int(k as i64), Value::Int(1000)])?;
    }
    w.commit()?;
    db.checkpoint()?;
    read_state(&db)
}

/// Runs a worker on `dir` until it crashes as `crash` at `at`; returns the
/// lines it printed.
fn run_worker(cfg: &Config, dir: &Path, point: u32, crash: &str, at: u64, rng: &mut XorShift) -> Result<Vec<String>> {
    let mut cmd = Process::new(&cfg.exe);
    cmd.args(["bench", "crash-worker", "--db"]).arg(dir).args([
        "--profile",
        &cfg.profile,
        "--seed",
        &(cfg.seed ^ u64::from(point) << 20).to_string(),
        "--store",
        cfg.store.name(),
    ]);
    match crash {
        "fail" => {
            cmd.args(["--fail-from", &at.to_string()]);
        }
        "torn" => {
            cmd.args(["--torn-at", &at.to_string(), "--torn-sectors", &(1 + rng.next_u64() % 15).to_string()]);
        }
        _ => {}
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting the worker {}", cfg.exe.display()))?;
    let out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || BufReader::new(out).lines().map_while(|l| l.ok()).collect::<Vec<_>>());
    if crash == "sigkill" {
        std::thread::sleep(Duration::from_millis(at));
        let _ = child.kill();
    } else {
        // A worker that never reaches the fault is killed after a while.
        let deadline = Instant::now() + Duration::from_secs(20);
        while child.try_wait()?.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
    }
    child.wait()?;
    reader.join().map_err(|_| anyhow::anyhow!("the reader thread panicked"))
}

/// What recovery and the checks found after a crash point.
struct Recovered {
    lost_commits: u64,
    unacknowledged_survived: bool,
    integrity_errors: u64,
    records: u64,
    log_truncated: bool,
    wall_s: f64,
    completions: u64,
    late_completions: u64,
}

/// Recovers the database after crash point `point`, checks its integrity
/// and compares its state with `model` and the worker's transcript; the
/// state becomes the model of the next point.
fn recover(dir: &Path, prof: &Profile, model: &mut State, transcript: &Transcript, point: u32) -> Result<Recovered> {
    let dev = Device::open(dir, prof.clone(), DeviceOptions::with_clock(ClockKind::Virtual))?;
    let (store, meta, rec) = Store::open_with_report(dev, store_options()).context("recovery")?;
    let recovery = store.device().counters();
    let db = Database::open(store, meta);
    let report = db.store().check()?;
    let state = read_state(&db)?;
    let (lost_commits, unacknowledged_survived) = transcript.verify(model, &state);
    *model = state;
    db.checkpoint().context("checkpoint after recovery")?;
    drop(db);
    for e in report.errors.iter().take(5) {
        errln!("crash point {point}: integrity: {e}");
    }
    Ok(Recovered {
        lost_commits,
        unacknowledged_survived,
        integrity_errors: report.error_count(),
        records: rec.records,
        log_truncated: rec.truncated.is_some(),
        wall_s: rec.wall_s,
        completions: recovery.completions,
        late_completions: recovery.late_completions,
    })
}

/// The harness's image: small, so that crashes hit a device whose pages
/// are reused all the time. The worker collects garbage before each of its
/// checkpoints, so each point reuses pages that earlier points gave up.
/// GC compacts sparse pages only when no transaction is open, and the
/// worker's straggler is often open when it runs, so the heap may still
/// grow slowly (before compaction: 32 MiB filled in 1,000 points).
const CAPACITY_BYTES: u64 = 128 << 20;
