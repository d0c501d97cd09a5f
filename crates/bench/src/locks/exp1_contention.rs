//! Exp. 1 (Fig. 4): lock+unlock latency on one shared table while the other
//! side (host or device) works on a window that overlaps the measured one
//! by the contention level. The windows and the two phases are designed in
//! the module root; here are the rig that holds the device and the table
//! across levels, each phase's measuring and loading sides, and the host's
//! lock+unlock loops. Every phase ends with the table empty, or fails.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use ndpdb_device::programs::SplitMix64;
use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, QueuePair, RangeId, Reply, params};
use ndpdb_locktable::{Grant, LockCounters, LockKey, LockTable};

use super::host_bench::timer_overhead_ns;
use super::rows::{LatencyRow, LockEvents, latency_row};
use super::{Config, check_empty, create_range};
use crate::machine::CpuMark;

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

/// The device's and the host's key windows at contention `pct`.
pub fn windows(keys: u64, pct: u32) -> (Range<u64>, Range<u64>) {
    let overlap = shared_keys(keys, pct);
    (0..keys, keys - overlap..2 * keys - overlap)
}

/// Keys of the host's window that are in the device's at contention `pct`,
/// rounded to the nearest whole key.
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

/// A host and a device row per contention level, on one device and table.
pub(super) fn exp1(cfg: &Config, dir: &Path, step: &mut dyn FnMut(String)) -> Result<Vec<LatencyRow>> {
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
        let device_before = self.dev.counters();
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
        let device = self.dev.counters().since(&device_before);
        let load_s = loads.into_iter().collect::<Result<Vec<f64>>>()?.into_iter().fold(0.0, f64::max);
        let samples = measured?;
        check_empty(&self.table)?;
        let mut row = self.row(pct, "device", ClockKind::Virtual.name(), &samples, &before, wall_s)?;
        row.other_side_pairs_per_s = Some(host_pairs.load(Ordering::Relaxed) as f64 / load_s);
        (row.completions, row.late_completions) = (Some(device.completions), Some(device.late_completions));
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
        let ps = ndpdb_format::programs::decode_latencies(&bytes, (len / 8) as usize)?;
        Ok(ps.into_iter().map(|p| p.div_ceil(1000)).collect())
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
}
