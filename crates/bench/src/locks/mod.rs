//! `ndpdb bench locks`: the three experiments of ccSLT (Bernhardt et al.,
//! EDBT'22, section 4, Figs. 4-6) on ndpdb's shared lock table
//! (`ndpdb_locktable`). `docs/locks-bench.md` is the user's guide; this is
//! the design.
//!
//! **Exp. 1 (Fig. 4), lock latency under contention from the other side.**
//! The host and the device's PEs lock and unlock keys `(k, 1)` of one shared
//! table, as `bench.lock-latency` does on the device. Each side draws its
//! keys uniformly from a window of `keys` VIDs; at contention `c` the host's
//! window is shifted so that `c`% of it is the device's window:
//!
//! ```text
//!   VID      0                 keys               2 keys
//!   device   [=================)                            always [0, keys)
//!   host c=0                   [==================)
//!   host c=50         [==================)                  half of it shared
//!   host c=100 [=================)                          the same window
//! ```
//!
//! So `c` is the share of the measured side's requests that go to keys the
//! other side is requesting during the measurement (exactly `c`% of the
//! window; `c`% of the requests in expectation, which host rows verify in
//! `shared_requests_pct`). The other side's load is the same at every `c`:
//! only where it lands moves. `2 * keys` consecutive VIDs of one version
//! never share a bucket, so sharing happens through keys only, never through
//! collisions. Each level runs two phases:
//!
//! - host side: host threads time `requests` lock+unlock pairs (real clock)
//!   while the device repeats executions of `bench.lock-latency` on its
//!   window until they are done;
//! - device side: one execution of `requests` pairs on the PEs, whose
//!   modelled latencies (virtual clock, the profile's `[coherent]` charges)
//!   are the samples, while host threads lock and unlock their window until
//!   it ends.
//!
//! Each phase waits until the loading side has begun before it measures.
//!
//! **Exp. 2 (Fig. 5), 64 B and 8 KiB over the coherent path and over PCIe.**
//! Coherent: the profile's model, one `remote_atomic_ns` per 64-byte line
//! (and `local_hit_ns` per line when all lines are cached in the device's
//! agent). PCIe: a `MemoryRead` of that many bytes from a device memory range,
//! its completion time on the device's virtual clock, from a run.
//!
//! **Exp. 3 (Fig. 6), one million lock requests.** `bench_host` on the
//! shared table at each configured size and on the conventional
//! (PostgreSQL-style) lock manager, which has no size, sequential and random
//! keys, without contention; percentiles and a histogram over log-scale
//! buckets. The size matters for random keys: each request touches a random
//! line of the table, so whether the table stays in the caches decides the
//! median, while the conventional manager only holds the locks alive. With
//! `postgres`, PostgreSQL's own lock manager is timed too, inside a private
//! server by a C function ndpdb compiles against its headers
//! (`ndpdb_baseline::pglocks`), on the same key sequences: the paper's
//! actual baseline, beside ndpdb's Rust rendering of its structure.
//!
//! Beside each size of ndpdb's table, a `floor` line times only the two
//! compare-and-swaps an uncontended pair makes on the key's bucket line
//! (`bench_line_floor`), in a table of that size: what reaching the line
//! costs on this machine, which no table of that size can beat. The ratio
//! lines name the best ratio each baseline could give at that size, so a
//! reader sees how much of a shortfall is the protocol and how much the
//! machine (`docs/locks-bench.md`, "The cache-line floor").
//!
//! Every run ends by checking that its table is empty again; a lock left
//! behind fails the experiment. Host threads and PEs are all host threads:
//! more of them than cores measures the scheduler (a holder preempted), not
//! the table ([`Config::warnings`]).

pub mod host_bench;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use host_bench::{Access, HostBench, LatencySummary, bench_host, bench_line_floor, summarize, timer_overhead_ns};
use ndpdb_baseline::pglocks::{PgLockRun, PgLockTimer};
use ndpdb_baseline::postgres::{PgError, PgServer};
use ndpdb_device::programs::SplitMix64;
use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile, QueuePair, RangeId, Reply, params};
use ndpdb_locktable::{ConventionalLockTable, Grant, LockCounters, LockKey, LockTable};
use serde::Serialize;

use crate::machine::CpuMark;

/// The default size of ndpdb's table in these experiments: the table's own default.
pub use ndpdb_locktable::DEFAULT_TABLE_BYTES;

/// The version of every Exp. 1 key: `bench.lock-latency` locks `(k, 1)`.
const KEY_VERSION: u64 = 1;
/// The device's first transaction timestamp (PE p is `DEVICE_FIRST_TS + p`);
/// host threads are `1..=threads`.
const DEVICE_FIRST_TS: u64 = 1 << 32;
/// A host request waiting this long fails the run: a lost wake-up or a
/// wedged bucket, not a latency.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a phase waits for its loading side to begin.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Pairs per PE in each execution of the device's background load: long
/// enough that the gaps between executions (starting PE threads) are short.
const BACKGROUND_PAIRS_PER_PE: u64 = 20_000;
/// Each Exp. 3 thread's key range (the `bench_host` default).
const EXP3_KEYS_PER_THREAD: u64 = 1 << 20;
/// Exp. 3 warms each table with this share of the requests (at most
/// [`WARMUP_MAX`]) before it measures.
const WARMUP_DIVISOR: u64 = 10;
const WARMUP_MAX: u64 = 100_000;
/// Histogram buckets per decade of latency (Exp. 3).
const BINS_PER_DECADE: f64 = 20.0;
/// Transfer sizes of Exp. 2: a cache line (one lock bucket) and a page.
pub const TRANSFER_BYTES: [u64; 2] = [64, 8192];
const LINE_BYTES: u64 = 64;
/// PCIe reads per size in Exp. 2 (the virtual clock makes them equal; the
/// median guards against a reservation left by earlier commands).
const PCIE_READS: usize = 5;
/// Limits on the configuration: samples take 8 bytes each on both sides.
pub const REQUESTS_MAX: u64 = 20_000_000;
pub const THREADS_MAX: usize = 64;

#[derive(Debug, Clone)]
pub struct Config {
    /// Which of the experiments 1, 2, 3 to run.
    pub experiments: Vec<u32>,
    /// Exp. 1's contention levels, percent.
    pub contention_pct: Vec<u32>,
    /// Exp. 1's device (it needs a `[coherent]` section).
    pub profile: Profile,
    /// Exp. 2's profiles.
    pub profiles: Vec<Profile>,
    /// Lock+unlock pairs per measurement (Exp. 1: per side and level).
    pub requests: u64,
    /// Host threads (Exp. 1: measuring or loading; Exp. 3: measuring).
    pub threads: usize,
    /// Exp. 1's PEs.
    pub pes: u32,
    /// Exp. 1's window of keys per side.
    pub keys: u64,
    /// Sizes of ndpdb's table in bytes, each a power of two
    /// (`ndpdb_locktable::DEFAULT_TABLE_BYTES` is neoDBMS's "few megabytes").
    /// Exp. 1 uses the first; Exp. 3 measures every one.
    pub table_bytes: Vec<usize>,
    /// Exp. 3 also times PostgreSQL's own lock manager in a private server
    /// (`ndpdb_baseline::pglocks`), when PostgreSQL, its server headers and
    /// a C compiler are installed.
    pub postgres: bool,
    pub seed: u64,
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        if let Some(e) = self.experiments.iter().find(|e| !(1..=3).contains(*e)) {
            bail!("--experiments {e}: the experiments are 1, 2 and 3");
        }
        ensure!(!self.experiments.is_empty(), "--experiments: name at least one of 1, 2, 3");
        if let Some(c) = self.contention_pct.iter().find(|c| **c > 100) {
            bail!("--contention {c}: a percentage, 0..=100");
        }
        ensure!((1..=REQUESTS_MAX).contains(&self.requests), "--requests {}: choose 1..={REQUESTS_MAX}", self.requests);
        ensure!((1..=THREADS_MAX).contains(&self.threads), "--threads {}: choose 1..={THREADS_MAX}", self.threads);
        ensure!(self.keys >= 1, "--keys must be at least 1");
        ensure!(!self.table_bytes.is_empty(), "--table-bytes: name at least one size");
        for (i, &bytes) in self.table_bytes.iter().enumerate() {
            ndpdb_locktable::bucket::bucket_count(bytes).map_err(|e| anyhow!("--table-bytes {bytes}: {e}"))?;
            ensure!(!self.table_bytes[..i].contains(&bytes), "--table-bytes {bytes}: the size is named twice");
        }
        if self.experiments.contains(&1) {
            let count = self.profile.pe.count;
            let buckets = (self.exp1_table_bytes() / ndpdb_locktable::BUCKET_BYTES) as u64;
            ensure!(
                2 * self.keys <= buckets,
                "--keys {}: Exp. 1's two windows must fit the table's {buckets} buckets (at most {}, or a larger \
                 first --table-bytes)",
                self.keys,
                buckets / 2
            );
            ensure!(!self.contention_pct.is_empty(), "--contention: name at least one level for Exp. 1");
            ensure!(
                self.profile.coherent.is_some(),
                "Exp. 1 needs a device that shares the lock table over a coherent interconnect, and profile `{}` \
                 has no [coherent] section; choose --profile u280-nvm or ideal, or leave Exp. 1 out (--experiments 2,3)",
                self.profile.name
            );
            ensure!(
                count > 0,
                "Exp. 1 needs processing elements on the device, and profile `{}` has none (pe.count = 0); \
                 choose --profile u280-nvm or ideal, or leave Exp. 1 out (--experiments 2,3)",
                self.profile.name
            );
            ensure!(
                (1..=count).contains(&self.pes),
                "--pes {}: profile `{}` has 1..={count} PEs",
                self.pes,
                self.profile.name
            );
        }
        if self.experiments.contains(&2) {
            ensure!(!self.profiles.is_empty(), "--profiles: name at least one profile for Exp. 2");
        }
        Ok(())
    }

    /// Exp. 1's table size: the first of `table_bytes`.
    pub fn exp1_table_bytes(&self) -> usize {
        self.table_bytes[0]
    }

    /// Progress steps of a run (what `run`'s callback counts to).
    pub fn steps(&self) -> usize {
        let has = |e| usize::from(self.experiments.contains(&e));
        // Per access: ndpdb and its floor per size, conventional, PostgreSQL.
        let exp3 = 2 * (2 * self.table_bytes.len() + 1 + usize::from(self.postgres));
        has(1) * 2 * self.contention_pct.len() + has(2) * self.profiles.len() + has(3) * exp3
    }

    /// What makes the figures unreliable on this machine.
    pub fn warnings(&self) -> Vec<String> {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let mut out = Vec::new();
        if self.experiments.contains(&1) && self.threads + self.pes as usize > cores {
            out.push(format!(
                "Exp. 1 runs {} host threads and {} PEs (each a host thread) on {cores} cores: preempted lock \
                 holders will show in the tails; use --threads and --pes that add up to at most {cores}",
                self.threads, self.pes
            ));
        }
        if self.experiments.contains(&3) && self.threads > cores {
            out.push(format!("Exp. 3 runs {} threads on {cores} cores", self.threads));
        }
        out
    }
}

/// One JSON line: a latency distribution (Exp. 1, 3) or a transfer (Exp. 2).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Row {
    Latency(Box<LatencyRow>),
    Transfer(TransferRow),
}

#[derive(Debug, Clone, Serialize)]
pub struct LatencyRow {
    pub experiment: u32,
    /// `ndpdb` (the shared table), `conventional` (ndpdb's PostgreSQL-style
    /// manager), `postgresql` (PostgreSQL's own, Exp. 3) or `floor` (Exp. 3:
    /// the pair's two CASes on the bucket line alone, no protocol).
    pub lock_table: &'static str,
    /// Who made the measured requests: `host` or `device`.
    pub side: &'static str,
    pub contention_pct: u32,
    /// Exp. 3: `sequential` or `random`; Exp. 1 draws at random (null).
    pub access: Option<&'static str>,
    /// Lock+unlock pairs measured.
    pub requests: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    /// `real` for host samples; the device clock's name for modelled ones.
    pub clock: &'static str,
    /// The device's profile (Exp. 1); null for host-only runs (Exp. 3).
    pub profile: Option<String>,
    /// Host threads (measuring, or loading when the device is measured).
    pub threads: usize,
    /// PEs (loading, or measuring); null without a device.
    pub pes: Option<u32>,
    /// Exp. 1: keys per side's window; Exp. 3: keys per thread.
    pub keys: u64,
    /// Bytes of ndpdb's table (and of a `floor` line's); null for the
    /// conventional manager and PostgreSQL's.
    pub table_bytes: Option<usize>,
    /// Exp. 1: the share of the measured side's window that the other side
    /// requests (the contention level, rounded to whole keys).
    pub shared_window_pct: Option<f64>,
    /// Exp. 1, host side: the share of its requests that went to shared keys.
    pub shared_requests_pct: Option<f64>,
    /// Exp. 1: lock+unlock pairs per second of real time that the other side
    /// completed during the measurement.
    pub other_side_pairs_per_s: Option<f64>,
    /// The cost of timing an empty interval, included in each host sample.
    pub timer_overhead_ns: Option<u64>,
    /// Host lines measured in this process: CPUs that other processes kept
    /// busy on average during the phase (`machine::CpuMark`); they compete
    /// for the shared cache. Null for modelled lines, PostgreSQL's (its
    /// backend is the measured work) and where Linux's counters are missing.
    pub other_cpus_busy: Option<f64>,
    /// What the shared table counted during the phase (both sides).
    pub lock_events: Option<LockEvents>,
    /// Real time of the phase.
    pub wall_s: f64,
    /// `postgresql` rows: the server that was timed (`pg_config --version`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres_version: Option<String>,
    /// Exp. 3: non-empty buckets of the latency histogram.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Vec<HistBin>>,
}

/// Events of the shared table during a phase (`LockCounters` differences).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LockEvents {
    pub acquired: u64,
    pub queued: u64,
    pub handovers: u64,
    pub full: u64,
    pub cas_failures: u64,
    pub busy_waits: u64,
    pub parks: u64,
}

impl LockEvents {
    fn between(a: &LockCounters, b: &LockCounters) -> LockEvents {
        LockEvents {
            acquired: b.acquired - a.acquired,
            queued: b.queued - a.queued,
            handovers: b.handovers - a.handovers,
            full: b.full - a.full,
            cas_failures: b.cas_failures - a.cas_failures,
            busy_waits: b.busy_waits - a.busy_waits,
            parks: b.parks - a.parks,
        }
    }
}

/// Samples in `[lo_ns, hi_ns)`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct HistBin {
    pub lo_ns: f64,
    pub hi_ns: f64,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TransferRow {
    pub experiment: u32,
    pub profile: String,
    pub transfer_bytes: u64,
    /// `coherent` or `pcie`.
    pub path: &'static str,
    /// Null when the profile has no such path.
    pub latency_ns: Option<f64>,
    /// Coherent only: every line already in the device's coherence agent.
    pub cached_latency_ns: Option<f64>,
    /// The interconnect's name in the profile.
    pub interconnect: Option<String>,
    /// `model` (computed from the profile) or the device clock's name.
    pub clock: &'static str,
}

/// What a run measured, and what it could not measure on this machine.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<Row>,
    /// For the user: a part of the run that was skipped, and why.
    pub notes: Vec<String>,
}

/// Runs the configured experiments, with scratch images under `dir`.
/// `on_step(done, total, label)` is called as each step begins.
pub fn run(cfg: &Config, dir: &Path, mut on_step: impl FnMut(usize, usize, &str)) -> Result<Outcome> {
    cfg.validate()?;
    let total = cfg.steps();
    let mut done = 0;
    let mut step = |label: String| {
        on_step(done, total, &label);
        done += 1;
    };
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    if cfg.experiments.contains(&1) {
        rows.extend(exp1(cfg, &dir.join("exp1"), &mut step)?.into_iter().map(|r| Row::Latency(Box::new(r))));
    }
    if cfg.experiments.contains(&2) {
        rows.extend(exp2(cfg, dir, &mut step)?.into_iter().map(Row::Transfer));
    }
    if cfg.experiments.contains(&3) {
        rows.extend(exp3(cfg, &mut notes, &mut step)?.into_iter().map(|r| Row::Latency(Box::new(r))));
    }
    Ok(Outcome { rows, notes })
}

/// Fails unless every word of every bucket is zero: no lock is held or
/// waited for after a run.
pub fn check_empty(table: &LockTable) -> Result<()> {
    let left = table.buckets().iter().enumerate().find(|(_, b)| b.words().iter().any(|w| *w != 0));
    if let Some((i, b)) = left {
        bail!(
            "the lock table is not empty after the run: bucket {i} holds {:?}; a lock was left behind (a bug in the \
             lock table or in this benchmark)",
            b.words()
        );
    }
    Ok(())
}

// ---- Exp. 1 ----

/// The device's and the host's key windows at contention `pct`.
pub fn windows(keys: u64, pct: u32) -> (Range<u64>, Range<u64>) {
    let overlap = shared_keys(keys, pct);
    (0..keys, keys - overlap..2 * keys - overlap)
}

fn shared_keys(keys: u64, pct: u32) -> u64 {
    (keys * u64::from(pct) + 50) / 100
}

/// Exp. 1's device, table and ranges.
struct Rig<'a> {
    cfg: &'a Config,
    dev: Device,
    table: Arc<LockTable>,
    pairs_per_pe: u64,
    /// The measured execution's latencies.
    out: RangeId,
    /// The background executions' latencies (not read).
    scratch: RangeId,
}

fn exp1(cfg: &Config, dir: &Path, step: &mut dyn FnMut(String)) -> Result<Vec<LatencyRow>> {
    let table = Arc::new(LockTable::with_bytes(cfg.exp1_table_bytes())?);
    let opts = DeviceOptions { pe_threads: cfg.pes as usize, ..DeviceOptions::with_clock(ClockKind::Virtual) };
    let dev = Device::create(dir, cfg.profile.clone(), Some(1 << 20), opts)
        .with_context(|| format!("creating Exp. 1's device in {}", dir.display()))?;
    dev.attach_lock_table(table.clone())?;
    let mut qp = dev.queue_pair();
    qp.call(Command::ProgramLoad { slot: 0, name: "bench.lock-latency".into() })?;
    qp.call(Command::ProgramActivate { slot: 0, active: true })?;
    let pes = u64::from(cfg.pes);
    let pairs_per_pe = cfg.requests.div_ceil(pes);
    let out = create_range(&mut qp, 8 * pairs_per_pe * pes)?;
    let scratch = create_range(&mut qp, 8 * BACKGROUND_PAIRS_PER_PE * pes)?;
    let rig = Rig { cfg, dev, table, pairs_per_pe, out, scratch };
    let mut rows = Vec::new();
    for &pct in &cfg.contention_pct {
        step(format!("Exp. 1: host side, {pct}% contention"));
        rows.push(rig.host_side(pct)?);
        step(format!("Exp. 1: device side, {pct}% contention"));
        rows.push(rig.device_side(pct)?);
    }
    Ok(rows)
}

fn create_range(qp: &mut QueuePair, bytes: u64) -> Result<RangeId> {
    match qp.call(Command::MemoryRangeCreate { bytes })? {
        Reply::Range(r) => Ok(r),
        other => bail!("memory range create replied {other:?}"),
    }
}

impl Rig<'_> {
    /// Host threads time their pairs while the device loads its window.
    fn host_side(&self, pct: u32) -> Result<LatencyRow> {
        let (device_keys, host_keys) = windows(self.cfg.keys, pct);
        let before = self.table.counters();
        let stop = AtomicBool::new(false);
        let cpu = CpuMark::now();
        let wall = Instant::now();
        let (measured, load) = std::thread::scope(|s| {
            let load = s.spawn(|| self.device_load(&stop, &device_keys));
            let measured = wait_for_start(|| self.table.counters().acquired > before.acquired, || load.is_finished())
                .and_then(|()| self.host_measure(&host_keys, &device_keys));
            stop.store(true, Ordering::Relaxed);
            (measured, load.join().expect("the device load thread panicked"))
        });
        let wall_s = wall.elapsed().as_secs_f64();
        let (load_pairs, load_s) = load.context("the device's load in Exp. 1")?;
        let (samples, shared) = measured?;
        check_empty(&self.table)?;
        let mut row = self.row(pct, "host", "real", &samples, &before, wall_s)?;
        row.shared_requests_pct = Some(shared as f64 * 100.0 / samples.len() as f64);
        row.other_side_pairs_per_s = Some(load_pairs as f64 / load_s);
        row.other_cpus_busy = cpu.and_then(|c| c.others_since());
        row.timer_overhead_ns = Some(timer_overhead_ns(10_000));
        Ok(row)
    }

    /// The device's background load: executions on `keys` until `stop`.
    /// Returns the pairs it made and the seconds it took.
    fn device_load(&self, stop: &AtomicBool, keys: &Range<u64>) -> Result<(u64, f64)> {
        let mut qp = self.dev.queue_pair();
        let start = Instant::now();
        let (pes, mut pairs) = (self.cfg.pes, 0);
        for round in 0.. {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let p = [BACKGROUND_PAIRS_PER_PE, keys.end - keys.start, self.cfg.seed ^ round, DEVICE_FIRST_TS, 1];
            execute(&mut qp, pes, &p, self.scratch)?;
            pairs += BACKGROUND_PAIRS_PER_PE * u64::from(pes);
        }
        Ok((pairs, start.elapsed().as_secs_f64()))
    }

    /// `requests` timed pairs over the host threads; the samples and how many
    /// went to `shared` keys.
    fn host_measure(&self, window: &Range<u64>, shared: &Range<u64>) -> Result<(Vec<u64>, u64)> {
        let threads = self.cfg.threads as u64;
        let runs: Vec<Result<(Vec<u64>, u64)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let n = self.cfg.requests / threads + u64::from(t < self.cfg.requests % threads);
                    s.spawn(move || host_pairs(&self.table, t + 1, n, window, shared, self.cfg.seed))
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a host thread panicked")).collect()
        });
        let (mut samples, mut hits) = (Vec::with_capacity(self.cfg.requests as usize), 0);
        for run in runs {
            let (s, h) = run?;
            samples.extend(s);
            hits += h;
        }
        Ok((samples, hits))
    }

    /// One device execution's modelled pairs while host threads load their
    /// window.
    fn device_side(&self, pct: u32) -> Result<LatencyRow> {
        let (device_keys, host_keys) = windows(self.cfg.keys, pct);
        let before = self.table.counters();
        let stop = AtomicBool::new(false);
        let host_pairs = AtomicU64::new(0);
        let wall = Instant::now();
        let (measured, loads) = std::thread::scope(|s| {
            let (window, stop, pairs) = (&host_keys, &stop, &host_pairs);
            let loads: Vec<_> = (1..=self.cfg.threads as u64)
                .map(|ts| s.spawn(move || host_load(&self.table, ts, window, self.cfg.seed, stop, pairs)))
                .collect();
            let measured = wait_for_start(
                || host_pairs.load(Ordering::Relaxed) >= self.cfg.threads as u64,
                || loads.iter().any(|h| h.is_finished()),
            )
            .and_then(|()| self.device_measure(&device_keys));
            stop.store(true, Ordering::Relaxed);
            let loads: Vec<Result<f64>> =
                loads.into_iter().map(|h| h.join().expect("a host load thread panicked")).collect();
            (measured, loads)
        });
        let wall_s = wall.elapsed().as_secs_f64();
        let load_s = loads.into_iter().collect::<Result<Vec<f64>>>()?.into_iter().fold(0.0, f64::max);
        let samples = measured?;
        check_empty(&self.table)?;
        let mut row = self.row(pct, "device", ClockKind::Virtual.name(), &samples, &before, wall_s)?;
        row.other_side_pairs_per_s = Some(host_pairs.load(Ordering::Relaxed) as f64 / load_s);
        Ok(row)
    }

    /// The measured execution; its latencies in ns (modelled ps, rounded).
    fn device_measure(&self, keys: &Range<u64>) -> Result<Vec<u64>> {
        let mut qp = self.dev.queue_pair();
        let p = [self.pairs_per_pe, keys.end - keys.start, self.cfg.seed, DEVICE_FIRST_TS, 1];
        execute(&mut qp, self.cfg.pes, &p, self.out)?;
        let len = 8 * self.pairs_per_pe * u64::from(self.cfg.pes);
        let bytes = qp.call(Command::MemoryRead { range: self.out, offset: 0, len })?.into_data();
        ensure!(bytes.len() as u64 == len, "the device returned {} of {len} latency bytes", bytes.len());
        Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")).div_ceil(1000)).collect())
    }

    fn row(
        &self,
        pct: u32,
        side: &'static str,
        clock: &'static str,
        samples: &[u64],
        before: &LockCounters,
        wall_s: f64,
    ) -> Result<LatencyRow> {
        let mut row = latency_row(1, "ndpdb", side, clock, samples, wall_s)?;
        row.contention_pct = pct;
        row.profile = Some(self.cfg.profile.name.clone());
        row.threads = self.cfg.threads;
        row.pes = Some(self.cfg.pes);
        row.keys = self.cfg.keys;
        row.table_bytes = Some(self.cfg.exp1_table_bytes());
        row.shared_window_pct = Some(shared_keys(self.cfg.keys, pct) as f64 * 100.0 / self.cfg.keys as f64);
        row.lock_events = Some(LockEvents::between(before, &self.table.counters()));
        Ok(row)
    }
}

/// Runs `bench.lock-latency` (slot 0) on `pes` PEs.
fn execute(qp: &mut QueuePair, pes: u32, p: &[u64], out: RangeId) -> Result<()> {
    match qp.call(Command::Execute { slot: 0, pes, params: params(p), ranges: vec![out] })? {
        Reply::Executed(_) => Ok(()),
        other => bail!("execute replied {other:?}"),
    }
}

/// Waits until `started`, or fails if `ended` first (the loading side
/// failed: its error is reported when it is joined) or after a while.
fn wait_for_start(started: impl Fn() -> bool, ended: impl Fn() -> bool) -> Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    while !started() {
        if ended() {
            bail!("the loading side stopped before the measurement began");
        }
        if Instant::now() > deadline {
            bail!("the loading side did not begin within {START_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    Ok(())
}

fn key_stream(seed: u64, ts: u64) -> SplitMix64 {
    SplitMix64::new(seed ^ ts.wrapping_mul(0xA24B_AED4_963E_E407))
}

/// Lock+unlock pair of `key` by `ts` on the host; fails on a timeout or an
/// unexpected grant.
#[inline]
fn host_pair(table: &LockTable, key: LockKey, ts: u64, start: Instant) -> Result<()> {
    let grant = table.lock(key, ts, Some(start + LOCK_TIMEOUT))?;
    ensure!(grant == Grant::Acquired, "transaction {ts} was granted {key} as already held; it holds no other key");
    table.unlock(key, ts)?;
    Ok(())
}

/// `n` timed pairs of transaction `ts` on random keys of `window`; the
/// samples (ns) and how many keys were in `shared`.
fn host_pairs(
    table: &LockTable,
    ts: u64,
    n: u64,
    window: &Range<u64>,
    shared: &Range<u64>,
    seed: u64,
) -> Result<(Vec<u64>, u64)> {
    let mut rng = key_stream(seed, ts);
    let len = window.end - window.start;
    let (mut samples, mut hits) = (Vec::with_capacity(n as usize), 0);
    for _ in 0..n {
        let k = window.start + rng.below(len);
        hits += u64::from(shared.contains(&k));
        let start = Instant::now();
        host_pair(table, LockKey::new(k, KEY_VERSION), ts, start)?;
        samples.push(start.elapsed().as_nanos() as u64);
    }
    Ok((samples, hits))
}

/// Untimed pairs of `ts` on random keys of `window` until `stop`, counted
/// in `pairs`; returns the seconds it ran.
fn host_load(
    table: &LockTable,
    ts: u64,
    window: &Range<u64>,
    seed: u64,
    stop: &AtomicBool,
    pairs: &AtomicU64,
) -> Result<f64> {
    let mut rng = key_stream(seed.rotate_left(17), ts);
    let len = window.end - window.start;
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let k = window.start + rng.below(len);
        host_pair(table, LockKey::new(k, KEY_VERSION), ts, Instant::now())?;
        pairs.fetch_add(1, Ordering::Relaxed);
    }
    Ok(start.elapsed().as_secs_f64())
}

fn latency_row(
    experiment: u32,
    lock_table: &'static str,
    side: &'static str,
    clock: &'static str,
    samples: &[u64],
    wall_s: f64,
) -> Result<LatencyRow> {
    let s: LatencySummary = summarize(samples).ok_or_else(|| anyhow!("the run produced no samples"))?;
    Ok(LatencyRow {
        experiment,
        lock_table,
        side,
        contention_pct: 0,
        access: None,
        requests: s.count as u64,
        p50_ns: s.p50_ns,
        p90_ns: s.p90_ns,
        p99_ns: s.p99_ns,
        p999_ns: s.p999_ns,
        min_ns: s.min_ns,
        max_ns: s.max_ns,
        mean_ns: s.mean_ns,
        clock,
        profile: None,
        threads: 1,
        pes: None,
        keys: 0,
        table_bytes: None,
        shared_window_pct: None,
        shared_requests_pct: None,
        other_side_pairs_per_s: None,
        timer_overhead_ns: None,
        other_cpus_busy: None,
        lock_events: None,
        wall_s,
        postgres_version: None,
        histogram: None,
    })
}

// ---- Exp. 2 ----

fn exp2(cfg: &Config, dir: &Path, step: &mut dyn FnMut(String)) -> Result<Vec<TransferRow>> {
    let mut rows = Vec::new();
    for (i, profile) in cfg.profiles.iter().enumerate() {
        step(format!("Exp. 2: {}", profile.name));
        let pcie = pcie_latencies_ns(profile, &dir.join(format!("exp2-{i}")))?;
        for (&bytes, pcie_ns) in TRANSFER_BYTES.iter().zip(pcie) {
            let lines = bytes.div_ceil(LINE_BYTES) as f64;
            let coherent = profile.coherent.as_ref();
            rows.push(TransferRow {
                experiment: 2,
                profile: profile.name.clone(),
                transfer_bytes: bytes,
                path: "coherent",
                latency_ns: coherent.map(|c| lines * c.remote_atomic_ns),
                cached_latency_ns: coherent.map(|c| lines * c.local_hit_ns),
                interconnect: coherent.map(|c| c.name.clone()),
                clock: "model",
            });
            rows.push(TransferRow {
                experiment: 2,
                profile: profile.name.clone(),
                transfer_bytes: bytes,
                path: "pcie",
                latency_ns: Some(pcie_ns),
                cached_latency_ns: None,
                interconnect: Some(profile.link.name.clone()),
                clock: ClockKind::Virtual.name(),
            });
        }
    }
    Ok(rows)
}

/// Per size of [`TRANSFER_BYTES`], the median modelled completion time of a
/// `MemoryRead` of that many bytes from device memory to the host.
fn pcie_latencies_ns(profile: &Profile, dir: &Path) -> Result<Vec<f64>> {
    let dev = Device::create(dir, profile.clone(), Some(1 << 20), DeviceOptions::with_clock(ClockKind::Virtual))
        .with_context(|| format!("creating Exp. 2's device for profile {}", profile.name))?;
    let mut qp = dev.queue_pair();
    let range = create_range(&mut qp, TRANSFER_BYTES[1])?;
    let mut out = Vec::new();
    for &len in &TRANSFER_BYTES {
        let mut ps = Vec::with_capacity(PCIE_READS);
        for _ in 0..PCIE_READS {
            let c = qp.call_timed(Command::MemoryRead { range, offset: 0, len })?;
            let (submitted, completed) = (c.submitted_ps, c.completed_ps);
            ensure!(c.result?.into_data().len() as u64 == len, "a {len}-byte memory read returned another length");
            ps.push(completed - submitted);
        }
        ps.sort_unstable();
        out.push(ps[ps.len() / 2] as f64 / 1000.0);
    }
    Ok(out)
}

// ---- Exp. 3 ----

/// Per access: ndpdb's table at each size, each followed by the cache-line
/// floor of that size, then the conventional manager (which has no size)
/// once, then PostgreSQL's own lock manager when configured and available
/// (else a note says why not).
fn exp3(cfg: &Config, notes: &mut Vec<String>, step: &mut dyn FnMut(String)) -> Result<Vec<LatencyRow>> {
    let postgres = if cfg.postgres { start_postgres(notes)? } else { None };
    let mut rows = Vec::new();
    for access in [Access::Sequential, Access::Random] {
        let sized = cfg.table_bytes.iter().flat_map(|&b| [Exp3Table::Ndpdb(b), Exp3Table::Floor(b)]);
        for table in sized.chain([Exp3Table::Conventional]) {
            step(format!("Exp. 3: {}, {} access", table.label(), access_name(access)));
            rows.push(exp3_run(cfg, table, access)?);
        }
        if cfg.postgres {
            step(format!("Exp. 3: postgresql, {} access", access_name(access)));
        }
        if let Some((server, timer)) = &postgres {
            rows.push(exp3_postgres(cfg, server, timer, access)?);
        }
    }
    if let Some((server, _)) = postgres {
        server.stop()?;
    }
    let busiest = rows.iter().filter_map(|r| r.other_cpus_busy).fold(0.0, f64::max);
    if busiest >= BUSY_NOTE_CPUS {
        notes.push(format!(
            "other processes kept up to {busiest:.1} CPUs busy during Exp. 3 (column `others`): they compete for \
             the shared cache that random keys reach ndpdb's table through, and its random medians can be several \
             times the idle machine's; measure on an otherwise idle machine (docs/locks-bench.md)"
        ));
    }
    Ok(rows)
}

/// Other processes' CPUs at which Exp. 3 says its figures are disturbed.
const BUSY_NOTE_CPUS: f64 = 0.25;

/// What an Exp. 3 line in this process measures.
#[derive(Debug, Clone, Copy)]
enum Exp3Table {
    /// ndpdb's table of this many bytes.
    Ndpdb(usize),
    /// The two CASes of an uncontended pair on the bucket's line of a table
    /// of this many bytes, without the protocol (`bench_line_floor`).
    Floor(usize),
    /// The PostgreSQL-style lock manager.
    Conventional,
}

impl Exp3Table {
    fn label(self) -> String {
        match self {
            Exp3Table::Ndpdb(b) => format!("ndpdb {}", size_label(b)),
            Exp3Table::Floor(b) => format!("cache-line floor {}", size_label(b)),
            Exp3Table::Conventional => "conventional".into(),
        }
    }
}

/// A private server with the lock-timing function loaded; `None` (and a
/// note) when this machine lacks PostgreSQL, its headers or a compiler.
fn start_postgres(notes: &mut Vec<String>) -> Result<Option<(PgServer, PgLockTimer)>> {
    let skipped = |e: PgError| format!("Exp. 3 without PostgreSQL's own lock manager: {e}");
    let server = match PgServer::start() {
        Ok(s) => s,
        Err(e @ (PgError::NotInstalled | PgError::NoPostgresUser)) => {
            notes.push(skipped(e));
            return Ok(None);
        }
        Err(e) => return Err(e).context("starting the private PostgreSQL server for Exp. 3"),
    };
    match PgLockTimer::load(&server) {
        Ok(timer) => Ok(Some((server, timer))),
        Err(e @ (PgError::NoServerHeaders { .. } | PgError::NoCompiler { .. })) => {
            notes.push(skipped(e));
            Ok(None)
        }
        Err(e) => Err(e).context("loading the lock-timing function into PostgreSQL"),
    }
}

/// PostgreSQL's own lock manager: each thread a backend (one psql session)
/// that times the same requests as `bench_host` would, warm-up first.
fn exp3_postgres(cfg: &Config, server: &PgServer, timer: &PgLockTimer, access: Access) -> Result<LatencyRow> {
    let spec = exp3_spec(cfg, access);
    let warmup = exp3_warmup(cfg, &spec);
    let wall = Instant::now();
    let mut sessions = (0..cfg.threads).map(|_| server.session()).collect::<Result<Vec<_>, _>>()?;
    let runs = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .iter_mut()
            .enumerate()
            .map(|(t, session)| {
                scope.spawn(move || -> Result<Vec<u64>, PgError> {
                    let run = |b: &HostBench| PgLockRun {
                        requests: b.thread_requests(t),
                        random: b.access == Access::Random,
                        rng: b.thread_seed(t),
                        base: b.thread_base(t),
                        keys: b.keys_per_thread,
                    };
                    timer.time(session, run(&warmup))?;
                    timer.time(session, run(&spec))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("PostgreSQL lock-timing thread panicked")).collect::<Vec<_>>()
    });
    let mut samples = Vec::with_capacity(spec.requests);
    for run in runs {
        samples.extend(run?);
    }
    let held = PgLockTimer::tuple_locks_held(&mut sessions[0])?;
    ensure!(held == 0, "PostgreSQL holds {held} tuple locks after the run; a lock was left behind");
    let mut row = exp3_row(cfg, "postgresql", access, &samples, wall)?;
    row.postgres_version = Some(timer.server_version.clone());
    Ok(row)
}

/// An Exp. 3 line: what every table's line has.
fn exp3_row(
    cfg: &Config,
    lock_table: &'static str,
    access: Access,
    samples: &[u64],
    wall: Instant,
) -> Result<LatencyRow> {
    let mut row = latency_row(3, lock_table, "host", "real", samples, wall.elapsed().as_secs_f64())?;
    row.access = Some(access_name(access));
    row.threads = cfg.threads;
    row.keys = EXP3_KEYS_PER_THREAD;
    row.timer_overhead_ns = Some(timer_overhead_ns(10_000));
    row.histogram = Some(histogram(samples));
    Ok(row)
}

fn exp3_spec(cfg: &Config, access: Access) -> HostBench {
    HostBench {
        requests: cfg.requests as usize,
        access,
        threads: cfg.threads,
        contention_pct: 0,
        keys_per_thread: EXP3_KEYS_PER_THREAD,
        seed: cfg.seed,
    }
}

/// The warm-up before each measurement: a share of the requests, other keys.
fn exp3_warmup(cfg: &Config, spec: &HostBench) -> HostBench {
    HostBench {
        requests: (cfg.requests / WARMUP_DIVISOR).min(WARMUP_MAX) as usize,
        seed: cfg.seed.rotate_left(29),
        ..*spec
    }
}

/// `64 B`, `256 KiB`, `4 MiB`: bytes in the largest unit that divides them.
pub fn size_label(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let (mut n, mut unit) = (bytes, 0);
    while unit + 1 < UNITS.len() && n >= 1024 && n % 1024 == 0 {
        n /= 1024;
        unit += 1;
    }
    format!("{n} {}", UNITS[unit])
}

fn access_name(access: Access) -> &'static str {
    match access {
        Access::Sequential => "sequential",
        Access::Random => "random",
    }
}

/// One measurement in this process (PostgreSQL's runs in its server).
fn exp3_run(cfg: &Config, table: Exp3Table, access: Access) -> Result<LatencyRow> {
    let spec = exp3_spec(cfg, access);
    let warmup = exp3_warmup(cfg, &spec);
    let cpu = CpuMark::now();
    let wall = Instant::now();
    let (lock_table, table_bytes, samples, events) = match table {
        Exp3Table::Ndpdb(bytes) => {
            let table = LockTable::with_bytes(bytes)?;
            bench_host(&table, &warmup)?;
            let before = table.counters();
            let samples = bench_host(&table, &spec)?;
            check_empty(&table)?;
            ("ndpdb", Some(bytes), samples, Some(LockEvents::between(&before, &table.counters())))
        }
        Exp3Table::Floor(bytes) => {
            let table = LockTable::with_bytes(bytes)?;
            bench_line_floor(&table, &warmup)?;
            let samples = bench_line_floor(&table, &spec)?;
            check_empty(&table)?;
            ("floor", Some(bytes), samples, None)
        }
        Exp3Table::Conventional => {
            let table = ConventionalLockTable::new();
            bench_host(&table, &warmup)?;
            let samples = bench_host(&table, &spec)?;
            let left = table.lock_objects();
            ensure!(
                left == 0,
                "the conventional lock table holds {left} lock objects after the run; a lock was left behind"
            );
            ("conventional", None, samples, None)
        }
    };
    let mut row = exp3_row(cfg, lock_table, access, &samples, wall)?;
    row.other_cpus_busy = cpu.and_then(|c| c.others_since());
    row.table_bytes = table_bytes;
    row.lock_events = events;
    Ok(row)
}

/// The non-empty buckets of `samples` (ns) in log-scale buckets,
/// [`BINS_PER_DECADE`] per decade from 1 ns (a 0 counts as 1 ns).
pub fn histogram(samples: &[u64]) -> Vec<HistBin> {
    let bin_of = |ns: u64| ((ns.max(1) as f64).log10() * BINS_PER_DECADE).floor() as usize;
    let mut counts = vec![0u64; samples.iter().map(|&s| bin_of(s) + 1).max().unwrap_or(0)];
    for &s in samples {
        counts[bin_of(s)] += 1;
    }
    let edge = |i: usize| (10f64.powf(i as f64 / BINS_PER_DECADE) * 100.0).round() / 100.0;
    counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, &count)| HistBin { lo_ns: edge(i), hi_ns: edge(i + 1), count })
        .collect()
}

// ---- Table and plots ----

fn latency_rows(rows: &[Row], experiment: u32) -> Vec<&LatencyRow> {
    rows.iter()
        .filter_map(|r| if let Row::Latency(l) = r { Some(&**l) } else { None })
        .filter(|l| l.experiment == experiment)
        .collect()
}

fn transfer_rows(rows: &[Row]) -> Vec<&TransferRow> {
    rows.iter().filter_map(|r| if let Row::Transfer(t) = r { Some(t) } else { None }).collect()
}

/// The terminal table: one section per experiment that ran.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let exp1 = latency_rows(rows, 1);
    if let Some(first) = exp1.first() {
        out += &format!(
            "Exp. 1 (Fig. 4): lock+unlock latency with c% of requests on keys the other side requests \
             (profile {}, {} host threads, {} PEs, {} keys per side, {} KiB table; host: real clock, device: \
             modelled)\n",
            first.profile.as_deref().unwrap_or("-"),
            first.threads,
            first.pes.unwrap_or(0),
            first.keys,
            first.table_bytes.unwrap_or(0) >> 10
        );
        out += &crate::output::table(&LATENCY_HEADERS, &exp1.iter().map(|r| latency_cells(r)).collect::<Vec<_>>());
    }
    let exp2 = transfer_rows(rows);
    if !exp2.is_empty() {
        out += &format!(
            "{}Exp. 2 (Fig. 5): transfer latency, coherent path (modelled) and PCIe (measured, virtual clock)\n",
            sep(&out)
        );
        out += &crate::output::table(
            &["profile", "bytes", "coherent ns", "coherent cached ns", "PCIe ns", "link"],
            &exp2_cells(&exp2),
        );
    }
    let exp3 = latency_rows(rows, 3);
    if let Some(first) = exp3.first() {
        out += &format!(
            "{}Exp. 3 (Fig. 6): lock+unlock pairs on the host, {} thread(s), {} keys per thread, no contention, \
             ndpdb's table at each size (real clock)\n",
            sep(&out),
            first.threads,
            first.keys,
        );
        let mut headers = LATENCY_HEADERS.to_vec();
        headers.insert(1, "size");
        let cells = |r: &LatencyRow| {
            let mut c = latency_cells(r);
            c.insert(1, r.table_bytes.map_or("-".into(), size_label));
            c
        };
        out += &crate::output::table(&headers, &exp3.iter().map(|r| cells(r)).collect::<Vec<_>>());
        out += &exp3_ratios(&exp3);
    }
    out
}

/// One line per baseline (the conventional manager, PostgreSQL's own),
/// access and size of ndpdb's table: the baseline's median over ndpdb's,
/// and, where the size has a `floor` line, over the floor's: the best ratio
/// any table of that size could reach on this machine.
fn exp3_ratios(exp3: &[&LatencyRow]) -> String {
    let mut out = String::new();
    for baseline in ["conventional", "postgresql"] {
        for access in ["sequential", "random"] {
            let of_access = || exp3.iter().filter(move |r| r.access == Some(access));
            let Some(c) = of_access().find(|r| r.lock_table == baseline).map(|r| r.p50_ns) else { continue };
            for r in of_access().filter(|r| r.lock_table == "ndpdb") {
                let n = r.p50_ns;
                let size = r.table_bytes.map_or("-".into(), size_label);
                out += &format!(
                    "median {baseline}/ndpdb, {access}, {size} table: {:.2}x ({c} / {n} ns)",
                    c as f64 / n.max(1) as f64
                );
                let floor = of_access().find(|f| f.lock_table == "floor" && f.table_bytes == r.table_bytes);
                if let Some(f) = floor {
                    let f = f.p50_ns;
                    out += &format!(
                        "; at most {:.2}x over the cache-line floor ({c} / {f} ns)",
                        c as f64 / f.max(1) as f64
                    );
                }
                out += "\n";
            }
        }
    }
    out
}

fn sep(out: &str) -> &'static str {
    if out.is_empty() { "" } else { "\n" }
}

const LATENCY_HEADERS: [&str; 14] = [
    "table",
    "side",
    "access",
    "contention",
    "requests",
    "p50 ns",
    "p90 ns",
    "p99 ns",
    "p99.9 ns",
    "max ns",
    "clock",
    "other side pairs/s",
    "queued/parks",
    "others",
];

fn latency_cells(r: &LatencyRow) -> Vec<String> {
    vec![
        r.lock_table.to_string(),
        r.side.to_string(),
        r.access.unwrap_or("random").to_string(),
        format!("{}%", r.contention_pct),
        r.requests.to_string(),
        r.p50_ns.to_string(),
        r.p90_ns.to_string(),
        r.p99_ns.to_string(),
        r.p999_ns.to_string(),
        r.max_ns.to_string(),
        r.clock.to_string(),
        r.other_side_pairs_per_s.map_or("-".into(), |p| format!("{:.2}M", p / 1e6)),
        r.lock_events.map_or("-".into(), |e| format!("{}/{}", e.queued, e.parks)),
        r.other_cpus_busy.map_or("-".into(), |c| format!("{c:.2}")),
    ]
}

fn exp2_cells(rows: &[&TransferRow]) -> Vec<Vec<String>> {
    let ns = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.0}"));
    let mut body = Vec::new();
    for pcie in rows.iter().filter(|r| r.path == "pcie") {
        let coherent = rows
            .iter()
            .find(|r| r.path == "coherent" && r.profile == pcie.profile && r.transfer_bytes == pcie.transfer_bytes);
        let c = coherent.and_then(|c| c.latency_ns);
        let cached = coherent.and_then(|c| c.cached_latency_ns);
        let name = coherent.and_then(|c| c.interconnect.clone()).unwrap_or_else(|| "-".into());
        body.push(vec![
            pcie.profile.clone(),
            pcie.transfer_bytes.to_string(),
            ns(c),
            ns(cached),
            ns(pcie.latency_ns),
            format!("{} / {}", name, pcie.interconnect.as_deref().unwrap_or("-")),
        ]);
    }
    body
}

/// Exp. 1: p50 against contention (host and device, and the host's p99);
/// Exp. 3: a histogram per access with every table, and with more than one
/// size of ndpdb's table, latency against its size. Returns the files.
pub fn plot(rows: &[Row], dir: &Path) -> Result<Vec<PathBuf>> {
    use crate::output::{Plot, Series};
    let mut files = Vec::new();
    let exp1 = latency_rows(rows, 1);
    if !exp1.is_empty() {
        let series = |side: &str, name: &str, y: fn(&LatencyRow) -> u64| Series {
            name: name.into(),
            points: exp1
                .iter()
                .filter(|r| r.side == side)
                .map(|r| (f64::from(r.contention_pct), y(r) as f64))
                .collect(),
            reference: false,
        };
        let profile = exp1[0].profile.clone().unwrap_or_default();
        let title = format!("Exp. 1: lock+unlock median under contention ({profile})");
        let all = vec![
            series("host", "host p50 (real clock)", |r| r.p50_ns),
            series("device", "device p50 (modelled)", |r| r.p50_ns),
        ];
        let plot =
            Plot { title: &title, x_label: "requests on keys the other side requests (%)", y_label: "ns", series: all };
        files.extend(plot.write(dir, "exp1-p50")?);
        let host = vec![series("host", "host p50", |r| r.p50_ns), series("host", "host p99", |r| r.p99_ns)];
        let title = format!("Exp. 1: host lock+unlock latency under contention ({profile})");
        let plot = Plot {
            title: &title,
            x_label: "requests on keys the other side requests (%)",
            y_label: "ns",
            series: host,
        };
        files.extend(plot.write(dir, "exp1-host")?);
    }
    let exp3 = latency_rows(rows, 3);
    for access in ["sequential", "random"] {
        // The histograms are the paper's Fig. 6: the lock tables, not the floor.
        let of_access: Vec<&LatencyRow> =
            exp3.iter().copied().filter(|r| r.access == Some(access) && r.lock_table != "floor").collect();
        if !of_access.is_empty() {
            files.extend(histogram_plot(&of_access, access, dir)?);
        }
    }
    let mut sizes: Vec<usize> = exp3.iter().filter_map(|r| r.table_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() > 1 {
        files.extend(table_size_plot(&exp3, dir)?);
    }
    Ok(files)
}

/// Exp. 3 against the size of ndpdb's table (log2 axis): ndpdb's p50 and
/// p99 per access, the conventional manager's p50 as dashed horizontal lines.
fn table_size_plot(rows: &[&LatencyRow], dir: &Path) -> Result<Vec<PathBuf>> {
    use plotters::prelude::*;
    crate::output::ensure_font()?;
    let title = format!("Exp. 3: {} lock+unlock pairs against the size of ndpdb's table", rows[0].requests);
    let svg = dir.join("exp3-table-size.svg");
    let png = dir.join("exp3-table-size.png");
    draw_table_size(SVGBackend::new(&svg, (900, 600)).into_drawing_area(), &title, rows)?;
    draw_table_size(BitMapBackend::new(&png, (900, 600)).into_drawing_area(), &title, rows)?;
    Ok(vec![svg, png])
}

/// How a line of the table-size plot is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mark {
    /// ndpdb's p50: thick, with circles.
    P50,
    /// ndpdb's p99: thin, with triangles.
    P99,
    /// The cache-line floor's p50: thin, with squares.
    Floor,
    /// The conventional manager's p50: dashed across the whole axis.
    Reference,
    /// PostgreSQL's own manager's p50: dotted across the whole axis.
    PostgresReference,
}

/// One line of the table-size plot: (table bytes, ns) points, or one point
/// whose y a [`Mark::Reference`] line holds across the axis.
struct SizeLine {
    name: String,
    /// Palette index: one colour per access.
    color: usize,
    mark: Mark,
    points: Vec<(f64, f64)>,
}

/// What the table-size plot shows, per access: ndpdb's p50 and p99 and the
/// cache-line floor's p50 by size, and the baselines' p50.
fn table_size_lines(rows: &[&LatencyRow]) -> Vec<SizeLine> {
    let mut lines = Vec::new();
    for (color, access) in ["sequential", "random"].into_iter().enumerate() {
        let mut ndpdb: Vec<&LatencyRow> =
            rows.iter().copied().filter(|r| r.lock_table == "ndpdb" && r.access == Some(access)).collect();
        ndpdb.sort_by_key(|r| r.table_bytes);
        let points = |y: fn(&LatencyRow) -> u64| -> Vec<(f64, f64)> {
            ndpdb.iter().map(|r| (r.table_bytes.unwrap_or(0) as f64, y(r) as f64)).collect()
        };
        let line = |name: String, mark, points| SizeLine { name, color, mark, points };
        lines.push(line(format!("ndpdb p50, {access}"), Mark::P50, points(|r| r.p50_ns)));
        lines.push(line(format!("ndpdb p99, {access}"), Mark::P99, points(|r| r.p99_ns)));
        let mut floor: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.lock_table == "floor" && r.access == Some(access))
            .map(|r| (r.table_bytes.unwrap_or(0) as f64, r.p50_ns as f64))
            .collect();
        floor.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !floor.is_empty() {
            lines.push(line(format!("cache-line floor p50, {access}"), Mark::Floor, floor));
        }
        for baseline in ["conventional", "postgresql"] {
            if let Some(c) = rows.iter().find(|r| r.lock_table == baseline && r.access == Some(access)) {
                let (name, at) = (format!("{baseline} p50, {access}"), vec![(0.0, c.p50_ns as f64)]);
                let mark = if baseline == "conventional" { Mark::Reference } else { Mark::PostgresReference };
                lines.push(line(name, mark, at));
            }
        }
    }
    lines
}

fn draw_table_size<DB: plotters::prelude::DrawingBackend>(
    root: plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    rows: &[&LatencyRow],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;
    let lines = table_size_lines(rows);
    let sizes = || {
        lines
            .iter()
            .filter(|l| !matches!(l.mark, Mark::Reference | Mark::PostgresReference))
            .flat_map(|l| l.points.iter().map(|p| p.0))
    };
    let (x_min, x_max) = (sizes().fold(f64::INFINITY, f64::min), sizes().fold(0.0, f64::max));
    // Half a doubling of margin on each side; a label per power of two, or
    // per second one beyond a dozen.
    let (x_lo, x_hi) = (x_min / 2f64.sqrt(), x_max * 2f64.sqrt());
    let labels = ((x_max / x_min).log2().round() as usize + 1).min(12);
    let y_hi = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.1;
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing plot: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x_lo..x_hi).log_scale().base(2.0), 0f64..y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels(labels)
        .x_desc("ndpdb's table (bytes, log2 scale)")
        .x_label_formatter(&|x| size_label(x.round() as usize))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .y_desc("ns")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    // Each legend sample repeats its line's stroke and marker.
    for l in &lines {
        let color = Palette99::pick(l.color).to_rgba();
        let (thick, thin, name) = (color.stroke_width(2), color.stroke_width(1), l.name.clone());
        let stroke = move |(x, y): (i32, i32), style, gap| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (10 - gap, 0)], style)
                + PathElement::new(vec![(10 + gap, 0), (20, 0)], style)
        };
        match l.mark {
            Mark::P50 => {
                chart.draw_series(LineSeries::new(l.points.clone(), thick)).map_err(err)?;
                let dots = l.points.iter().map(|&p| Circle::new(p, 4, color.filled()));
                chart
                    .draw_series(dots)
                    .map_err(err)?
                    .label(name)
                    .legend(move |at| stroke(at, thick, 0) + Circle::new((10, 0), 4, color.filled()));
            }
            Mark::P99 => {
                chart.draw_series(LineSeries::new(l.points.clone(), thin)).map_err(err)?;
                let dots = l.points.iter().map(|&p| TriangleMarker::new(p, 5, color.filled()));
                chart
                    .draw_series(dots)
                    .map_err(err)?
                    .label(name)
                    .legend(move |at| stroke(at, thin, 0) + TriangleMarker::new((10, 0), 5, color.filled()));
            }
            Mark::Floor => {
                chart.draw_series(LineSeries::new(l.points.clone(), thin)).map_err(err)?;
                let dots = l
                    .points
                    .iter()
                    .map(|&(x, y)| EmptyElement::at((x, y)) + Rectangle::new([(-3, -3), (3, 3)], color.filled()));
                chart
                    .draw_series(dots)
                    .map_err(err)?
                    .label(name)
                    .legend(move |at| stroke(at, thin, 0) + Rectangle::new([(7, -3), (13, 3)], color.filled()));
            }
            Mark::Reference | Mark::PostgresReference => {
                // Dashes for the conventional manager, dots for PostgreSQL's.
                let (dash, space, gap) = if l.mark == Mark::Reference { (8, 5, 3) } else { (2, 4, 6) };
                let y = l.points[0].1;
                let line = DashedLineSeries::new([(x_lo, y), (x_hi, y)], dash, space, thick);
                chart.draw_series(line).map_err(err)?.label(name).legend(move |at| stroke(at, thick, gap));
            }
        }
    }
    crate::output::finish_plot(&mut chart, &root, SeriesLabelPosition::UpperLeft)
}

fn histogram_plot(rows: &[&LatencyRow], access: &str, dir: &Path) -> Result<Vec<PathBuf>> {
    use plotters::prelude::*;
    crate::output::ensure_font()?;
    let title = format!("Exp. 3: {} lock+unlock pairs, {access} access", rows[0].requests);
    let svg = dir.join(format!("exp3-histogram-{access}.svg"));
    let png = dir.join(format!("exp3-histogram-{access}.png"));
    draw_histogram(SVGBackend::new(&svg, (900, 600)).into_drawing_area(), &title, rows)?;
    draw_histogram(BitMapBackend::new(&png, (900, 600)).into_drawing_area(), &title, rows)?;
    Ok(vec![svg, png])
}

fn draw_histogram<DB: plotters::prelude::DrawingBackend>(
    root: plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    rows: &[&LatencyRow],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;
    let bins = |r: &LatencyRow| r.histogram.clone().unwrap_or_default();
    let share = |r: &LatencyRow, b: &HistBin| b.count as f64 * 100.0 / r.requests.max(1) as f64;
    let all: Vec<(&LatencyRow, HistBin)> =
        rows.iter().flat_map(|r| bins(r).into_iter().map(move |b| (*r, b))).collect();
    let pad = 10f64.powf(1.0 / BINS_PER_DECADE);
    let x_lo = (all.iter().map(|(_, b)| b.lo_ns).fold(f64::INFINITY, f64::min) / pad).max(1.0);
    // The axis ends a little past the largest p99.9: the rare stalls of
    // milliseconds (preemption, page faults) would squeeze the distribution
    // into a corner. The legend says how many samples lie beyond.
    let x_hi = rows.iter().map(|r| r.p999_ns as f64 * 2.0).fold(x_lo * 10.0, f64::max);
    let shown = |b: &HistBin| b.hi_ns <= x_hi;
    let y_hi = all.iter().filter(|(_, b)| shown(b)).map(|(r, b)| share(r, b)).fold(1.0, f64::max) * 1.1;
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing plot: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), 0f64..y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("latency (ns, log scale)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc("share of requests (%)")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    for (i, r) in rows.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let beyond: u64 = bins(r).iter().filter(|b| !shown(b)).map(|b| b.count).sum();
        let bars = bins(r)
            .into_iter()
            .filter(shown)
            .map(|b| Rectangle::new([(b.lo_ns, 0.0), (b.hi_ns, share(r, &b))], color.mix(0.5).filled()));
        let table = match r.table_bytes {
            Some(b) => format!("{} {}", r.lock_table, size_label(b)),
            None => r.lock_table.to_string(),
        };
        let name = format!(
            "{table} (p50 {} ns, p99 {} ns, {} beyond the axis, max {} ns)",
            r.p50_ns, r.p99_ns, beyond, r.max_ns
        );
        chart
            .draw_series(bars)
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
    }
    crate::output::finish_plot(&mut chart, &root, SeriesLabelPosition::UpperRight)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_share_exactly_the_level() {
        for pct in [0, 25, 50, 75, 100] {
            let (d, h) = windows(64, pct);
            assert_eq!((d.end - d.start, h.end - h.start), (64, 64));
            let shared = h.clone().filter(|k| d.contains(k)).count() as u64;
            assert_eq!(shared, 64 * u64::from(pct) / 100, "{pct}%");
        }
    }

    #[test]
    fn size_labels_use_the_largest_whole_unit() {
        let labels: Vec<String> = [64, 1 << 10, 256 << 10, 1 << 20, 4 << 20, 1 << 30].map(size_label).to_vec();
        assert_eq!(labels, ["64 B", "1 KiB", "256 KiB", "1 MiB", "4 MiB", "1 GiB"]);
        assert_eq!(size_label(1536), "1536 B");
    }

    #[test]
    fn histogram_bins_are_log_scaled_and_count_everything() {
        let samples = [0, 1, 9, 10, 11, 100, 1000, 1000];
        let h = histogram(&samples);
        assert_eq!(h.iter().map(|b| b.count).sum::<u64>(), samples.len() as u64);
        assert_eq!((h[0].lo_ns, h[0].count), (1.0, 2));
        assert!(h.iter().all(|b| b.hi_ns > b.lo_ns && (b.hi_ns / b.lo_ns - 10f64.powf(0.05)).abs() < 0.01));
        assert!(h.windows(2).all(|w| w[0].hi_ns <= w[1].lo_ns));
    }
}
