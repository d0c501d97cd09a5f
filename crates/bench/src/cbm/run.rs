//! One cell of the experiment: the OLTP thread and the OLAP thread over the
//! loaded store, until the OLAP thread's lookups completed.
//!
//! The OLTP thread runs YCSB operations (`ndpdb_workload::ycsb`) through the
//! store; each update is committed (the store is synchronous) before the
//! checker hears of it. The OLAP thread draws keys from the same
//! distribution and offloads one lookup per key: Flush writes back every
//! dirty page first, Shadow serialises its memtable and ships it with the
//! call, CBM asks for the mirror. Each thread's times are taken as wall
//! times and as model times (the modelled waits for its own commands plus
//! its CPU time, `Host` and `Olap` below); a lookup's from just before the
//! method's own preparation (the flush, the serialisation) to its answer.
//! Every method of a (value size, distribution, mix) gets the same seed, so
//! the same operation and lookup-key sequences.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use ndpdb_device::Counters;
use ndpdb_workload::ycsb::{self, Distribution, KeyChooser, Mix, Op, Operations};
use parking_lot::Mutex;

use super::Method;
use super::freshness::Checker;
use super::latency::Latencies;
use super::offload::{Call, Offload};
use super::shadow::{CAPACITY_BYTES, Memtable};

/// One point of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub method: Method,
    pub mix: Mix,
    pub distribution: Distribution,
    /// The updates' value size.
    pub value_bytes: usize,
}

/// What the cells share: each key's committed value (fingerprints) and the
/// next write's sequence number.
#[derive(Debug, Clone)]
pub struct RunState {
    pub base: Vec<u64>,
    pub seq: u64,
}

/// The OLTP thread's measurements (of the measured operations, after the
/// warm-up).
///
/// Two times per operation: its wall time, and its *model* time: the
/// modelled time of the device commands it waited for
/// (`ndpdb_device::thread_io`: the union of their submission-to-completion
/// spans on the model clock) plus the thread's CPU time
/// (`ndpdb_device::thread_cpu_ns`). On the virtual clock, commands complete
/// at once in wall time, so only the model time says what the host would
/// take next to the modelled device; its CPU part is the host code's own
/// work (the emulator's device side runs on other threads).
#[derive(Debug, Default)]
pub struct Host {
    pub ops: u64,
    pub wall_s: f64,
    /// Sum of the operations' model times, and its two parts.
    pub model_ns: u64,
    pub cpu_ns: u64,
    pub waited_ns: u64,
    /// Device commands this thread submitted.
    pub commands: u64,
    /// Per operation, wall time.
    pub reads: Latencies,
    pub updates: Latencies,
    /// Per operation, model time.
    pub reads_model: Latencies,
    pub updates_model: Latencies,
}

/// The calling thread's CPU time, modelled wait and commands so far.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    cpu_ns: u64,
    io: ndpdb_device::ThreadIo,
}

impl Stamp {
    fn now() -> Stamp {
        Stamp { cpu_ns: ndpdb_device::thread_cpu_ns(), io: ndpdb_device::thread_io() }
    }

    /// Adds the span since `self` to `host`; returns its model time in ns.
    fn charge(&self, host: &mut Host) -> u64 {
        let now = Stamp::now();
        let cpu = now.cpu_ns.saturating_sub(self.cpu_ns);
        let waited = now.io.waited_ps.saturating_sub(self.io.waited_ps) / 1000;
        host.cpu_ns += cpu;
        host.waited_ns += waited;
        host.model_ns += cpu + waited;
        host.commands += now.io.submitted - self.io.submitted;
        cpu + waited
    }
}

/// The OLAP thread's measurements.
///
/// A lookup's latency, from before the method's preparation (Flush's
/// write-back, Shadow's serialisation) to the answer, is taken two ways:
/// - `latency_model`: the modelled time of the commands this thread waited
///   for (`thread_io`: Flush's page writes, the `Execute`, the `MemoryRead`
///   of the output; overlapping waits once) plus the preparation's CPU time;
/// - `latency_span`: the device clock's reading at the answer minus its
///   reading at dispatch.
///
/// On the real clock the two agree but for the emulator's lateness. On the
/// virtual clock the clock is shared: it jumps whenever the OLTP thread
/// consumes a completion (its commits wait for 800 µs flash programs), so
/// the span of a lookup also holds the OLTP thread's waits that fell
/// between its commands; `latency` is then the model measure.
#[derive(Debug, Default)]
pub struct Olap {
    /// The measure of the clock (model on virtual, span on real).
    pub latency: Latencies,
    pub latency_model: Latencies,
    pub latency_span: Latencies,
    /// Wall time of the same span.
    pub latency_wall: Latencies,
    pub done: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub retries: u64,
    pub host_reads: u64,
    pub host_read_bytes: u64,
    pub medium_reads: u64,
    /// Device commands the OLAP thread issued (lookups, Flush's writes).
    pub commands: u64,
    pub flush_pages_written: u64,
    pub shadow_bytes_shipped: u64,
}

/// What one cell measured.
#[derive(Debug)]
pub struct Measured {
    pub cell: Cell,
    pub host: Host,
    pub olap: Olap,
    pub violations: u64,
    /// Device counters over the cell.
    pub counters: Counters,
    pub shadow_flushes: u64,
    /// Checkpoints the store took (its log half full).
    pub checkpoints: u64,
    /// Dirty pages the pool's clock wrote back to make room (0 when the
    /// pool holds the whole file, the paper's setup).
    pub eviction_write_backs: u64,
}

/// What a cell needs besides the store.
pub struct CellSpec<'a> {
    pub cell: Cell,
    pub keys: u64,
    pub lookups: u64,
    /// OLTP operations before the OLAP thread starts and measuring begins
    /// (the pool reaches its steady state of dirty pages).
    pub warmup_ops: u64,
    pub seed: u64,
    pub progress: &'a (dyn Fn(u64) + Sync),
}

/// Runs one cell on `off`'s store; `state` carries the committed values on.
pub fn run_cell(off: &dyn Offload, spec: &CellSpec<'_>, state: &mut RunState) -> Result<Measured> {
    let cell = spec.cell;
    off.prepare(cell.method)?;
    let checker = Checker::new(std::mem::take(&mut state.base));
    let memtable = (cell.method == Method::Shadow).then(|| Mutex::new(Memtable::new(CAPACITY_BYTES)));
    let stop = AtomicBool::new(false);
    let warm = AtomicBool::new(false);
    let before = std::sync::Mutex::new(None);
    let checkpoints_before = off.store().stats().checkpoints;
    let evicted_before = off.store().pool().stats().eviction_write_backs;
    let (host, olap) = std::thread::scope(|s| {
        let oltp = s.spawn(|| {
            let flags = Flags { stop: &stop, warm: &warm };
            let r = oltp(off, spec, &checker, memtable.as_ref(), flags, state.seq);
            stop.store(true, Ordering::SeqCst);
            r
        });
        while !warm.load(Ordering::SeqCst) && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        *before.lock().unwrap_or_else(|p| p.into_inner()) = Some(off.device().counters());
        // Stops the OLTP thread however this thread leaves (a panic too:
        // the scope would otherwise wait for it forever).
        let _stop = StopOnDrop(&stop);
        let olap = olap(off, spec, &checker, memtable.as_ref(), &stop);
        stop.store(true, Ordering::SeqCst);
        let host = oltp.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (host, olap)
    });
    let ((host, seq), olap) = (host?, olap?);
    let before = before.into_inner().unwrap_or_else(|p| p.into_inner()).unwrap_or_default();
    let counters = off.device().counters().since(&before);
    state.seq = seq;
    let violations = checker.violations();
    state.base = checker.into_base();
    let shadow_flushes = memtable.map_or(0, |m| m.into_inner().flushes);
    let checkpoints = off.store().stats().checkpoints - checkpoints_before;
    let eviction_write_backs = off.store().pool().stats().eviction_write_backs - evicted_before;
    Ok(Measured { cell, host, olap, violations, counters, shadow_flushes, checkpoints, eviction_write_backs })
}

struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The OLTP thread's signals: `warm` it sets after its warm-up, `stop`
/// the OLAP thread sets when its lookups are done.
#[derive(Clone, Copy)]
struct Flags<'a> {
    stop: &'a AtomicBool,
    warm: &'a AtomicBool,
}

/// The OLTP thread: `spec.warmup_ops` operations unmeasured, then measured
/// ones until `stop`; returns the next sequence number.
fn oltp(
    off: &dyn Offload,
    spec: &CellSpec<'_>,
    checker: &Checker,
    memtable: Option<&Mutex<Memtable>>,
    flags: Flags<'_>,
    mut seq: u64,
) -> Result<(Host, u64)> {
    let c = spec.cell;
    let store = off.store();
    let mut ops = Operations::new(spec.keys, c.mix, c.distribution, spec.seed.wrapping_mul(2))?;
    let mut host = Host::default();
    let mut buf = Vec::new();
    let mut t0 = Instant::now();
    let mut warmup = spec.warmup_ops;
    while !flags.stop.load(Ordering::Relaxed) {
        if warmup > 0 {
            warmup -= 1;
            if warmup == 0 {
                host = Host::default();
                t0 = Instant::now();
            }
        }
        if warmup == 0 && !flags.warm.load(Ordering::Relaxed) {
            flags.warm.store(true, Ordering::SeqCst);
        }
        let (t, stamp) = (Instant::now(), Stamp::now());
        match ops.next_op() {
            Op::Read(k) => {
                let found = store.get_into(&ycsb::key(k), &mut buf)?;
                anyhow::ensure!(found, "key number {k} is missing from the store");
                host.reads.record_ns(t.elapsed().as_nanos() as u64);
                let model_ns = stamp.charge(&mut host);
                host.reads_model.record_ns(model_ns);
            }
            Op::Update(k) => {
                seq += 1;
                let (key, value) = (ycsb::key(k), ycsb::value(k, seq, c.value_bytes));
                let ticket = checker.announce(k, &value);
                let found = store.update(&key, &value)?;
                anyhow::ensure!(found, "key number {k} is missing from the store");
                if let Some(m) = memtable {
                    let write_back = || store.pool().flush_dirty().map(drop).map_err(anyhow::Error::from);
                    m.lock().insert(&key, Some(value), write_back).context("the shadow memtable's write-back")?;
                }
                checker.commit(ticket);
                host.updates.record_ns(t.elapsed().as_nanos() as u64);
                let model_ns = stamp.charge(&mut host);
                host.updates_model.record_ns(model_ns);
            }
        }
        host.ops += 1;
    }
    host.wall_s = t0.elapsed().as_secs_f64();
    Ok((host, seq))
}

/// The OLAP thread: `spec.lookups` lookups (fewer if the OLTP thread failed).
fn olap(
    off: &dyn Offload,
    spec: &CellSpec<'_>,
    checker: &Checker,
    memtable: Option<&Mutex<Memtable>>,
    stop: &AtomicBool,
) -> Result<Olap> {
    let method = spec.cell.method;
    let mut keys = KeyChooser::new(spec.keys, spec.cell.distribution, spec.seed.wrapping_mul(2) + 1)?;
    let mut o = Olap::default();
    let device = off.device();
    let virtual_clock = device.clock() == ndpdb_device::ClockKind::Virtual;
    while o.done + o.errors < spec.lookups && !stop.load(Ordering::Relaxed) {
        let k = keys.next_key();
        let dispatched = checker.now();
        let (t, start_ps, stamp) = (Instant::now(), device.now_ps(), Stamp::now());
        let mut table = None;
        match method {
            Method::Flush => {
                let f = off.store().pool().flush_dirty()?;
                o.flush_pages_written += f.pages_written;
                o.commands += f.pages_written;
            }
            Method::Shadow => {
                let pairs = memtable.map(|m| m.lock().pairs()).unwrap_or_default();
                let t = off.encode_shadow(&pairs)?;
                o.shadow_bytes_shipped += t.len() as u64;
                table = Some(t);
            }
            Method::Baseline | Method::Cbm => {}
        }
        let prep_cpu_ns = ndpdb_device::thread_cpu_ns().saturating_sub(stamp.cpu_ns);
        let call = Call { mirror: method == Method::Cbm, shadow: table.as_deref() };
        match off.lookup(&ycsb::key(k), call) {
            Ok(l) => {
                let completed = checker.now();
                checker.check(k, l.value.as_deref(), dispatched, completed);
                let waited_ns = ndpdb_device::thread_io().waited_ps.saturating_sub(stamp.io.waited_ps) / 1000;
                let (model_ns, span_ns) = (waited_ns + prep_cpu_ns, l.end_ps.saturating_sub(start_ps) / 1000);
                o.latency_model.record_ns(model_ns);
                o.latency_span.record_ns(span_ns);
                o.latency.record_ns(if virtual_clock { model_ns } else { span_ns });
                o.latency_wall.record_ns(t.elapsed().as_nanos() as u64);
                o.retries += l.retries;
                o.host_reads += l.host_reads;
                o.host_read_bytes += l.host_read_bytes;
                o.medium_reads += l.medium_reads;
                o.commands += l.commands;
                o.done += 1;
            }
            Err(e) => {
                // A failed lookup's retries and commands count all the same.
                if let Some(ndpdb_kv::KvError::LookupFailed { retries, commands, .. }) = e.downcast_ref() {
                    o.retries += retries;
                    o.commands += commands;
                }
                o.errors += 1;
                o.first_error.get_or_insert_with(|| format!("{e:#}"));
            }
        }
        (spec.progress)(o.done + o.errors);
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use ndpdb_device::ClockKind;
    use ndpdb_workload::ycsb::{key, value};

    use super::super::offload::{DeviceOffload, StoreSpec};
    use super::super::{Config, LOAD_VALUE_BYTES, fingerprint};
    use super::*;

    fn loaded(keys: u64) -> (tempfile::TempDir, DeviceOffload, RunState) {
        let dir = tempfile::tempdir().unwrap();
        let (profile, _) = Config::quick().profile_16k();
        // A pool of half the store's pages: most dirty pages stay in it.
        let spec = StoreSpec { profile, clock: ClockKind::Virtual, frames: 160, file_pages: 1024 };
        let off = spec.create(dir.path()).unwrap();
        let mut base = Vec::new();
        for i in 0..keys {
            let v = value(i, 0, LOAD_VALUE_BYTES);
            off.store().put(&key(i), &v).unwrap();
            base.push(fingerprint(&v));
        }
        off.store().checkpoint().unwrap();
        (dir, off, RunState { base, seq: 0 })
    }

    /// An `Offload` whose lookups panic (a bug in a lookup path).
    struct Panicking(DeviceOffload);

    impl Offload for Panicking {
        fn store(&self) -> &ndpdb_kv::KvStore {
            self.0.store()
        }
        fn device(&self) -> &std::sync::Arc<ndpdb_device::Device> {
            self.0.device()
        }
        fn lookup_path(&self) -> &'static str {
            "panics"
        }
        fn prepare(&self, method: Method) -> Result<()> {
            self.0.prepare(method)
        }
        fn encode_shadow(&self, pairs: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<Vec<u8>> {
            self.0.encode_shadow(pairs)
        }
        fn lookup(&self, _: &[u8], _: Call<'_>) -> Result<super::super::Lookup> {
            panic!("a lookup path's bug")
        }
    }

    /// A panic on the lookup thread stops the OLTP thread too: the cell
    /// ends with the panic instead of waiting for the OLTP thread forever.
    #[test]
    fn a_panicking_lookup_ends_the_cell_instead_of_hanging_it() {
        let (_dir, off, mut state) = loaded(300);
        let off = Panicking(off);
        let progress = |_| {};
        let cell = Cell {
            method: Method::Baseline,
            mix: Mix::UpdateOnly,
            distribution: Distribution::Uniform,
            value_bytes: 100,
        };
        let spec = CellSpec { cell, keys: 300, lookups: 10, warmup_ops: 10, seed: 1, progress: &progress };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_cell(&off, &spec, &mut state)));
        assert!(r.is_err(), "the panic comes through");
    }

    /// Shadow's host side on the device's search: the memtable insert before
    /// the acknowledgement, and the write-back before a full memtable is
    /// emptied, keep every answer fresh; the same workload without them is
    /// stale.
    #[test]
    fn shadow_answers_fresh_and_empties_a_full_memtable_only_after_a_write_back() {
        let (_dir, off, mut state) = loaded(3000);
        let progress = |_| {};
        let mut run = |method| {
            let cell = Cell { method, mix: Mix::UpdateOnly, distribution: Distribution::Zipfian, value_bytes: 1024 };
            let spec = CellSpec { cell, keys: 3000, lookups: 1000, warmup_ops: 3000, seed: 7, progress: &progress };
            let m = run_cell(&off, &spec, &mut state).unwrap();
            off.store().checkpoint().unwrap();
            m
        };
        let shadow = run(Method::Shadow);
        assert_eq!((shadow.olap.done, shadow.olap.errors), (1000, 0), "{:?}", shadow.olap.first_error);
        assert_eq!(shadow.violations, 0, "Shadow answers fresh");
        assert!(shadow.shadow_flushes > 0, "the memtable filled up at least once");
        assert!(shadow.olap.shadow_bytes_shipped > 0);
        let baseline = run(Method::Baseline);
        assert!(baseline.violations > 0, "the same workload without the memtable is stale");
    }
}
