//! In-storage point lookups (`kv.lookup`) against the host's own `get`, on
//! the emulated device, with the store's log on a ring of device pages
//! (a minimal ring here: the store's on-device ring is its owner's):
//!
//! - CBM (mirror on): every answer equals `get`, for keys in dirty cached
//!   pages (read from host memory), clean cached and evicted pages (read
//!   from the medium);
//! - Baseline (mirror off): keys updated in pages still dirty on the host
//!   come back with their old values — the stale reads the experiment
//!   measures;
//! - the mirror costs no command: the same workload issues the same
//!   commands with and without it;
//! - under a concurrent writer, answers are whole values at least as new as
//!   the last write committed before the call (no torn node);
//! - garbage parameters and garbage nodes give errors (naming the page),
//!   never a panic.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ndpdb_bufmgr::{BufferPool, DevicePageIo, PoolConfig};
use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile, QueuePair};
use ndpdb_format::kv_log::frame_into;
use ndpdb_kv::{
    DeviceLayout, KvError, KvLog, KvOffload, KvOptions, KvStore, LOOKUP_SLOT, LogRecord, LookupCall, MemoryKvLog,
    PoolLog,
};
use parking_lot::Mutex;
use proptest::prelude::*;

const LOG_FIRST: u64 = 8;
const LOG_PAGES: u64 = 32;
const FILE_FIRST: u64 = 64;
const FILE_PAGES: u64 = 1024;
const FRAMES: usize = 24;

/// A log whose records also go to a ring of device pages on every flush
/// (byte `lsn` in ring page `(lsn / page) mod pages`, as `docs/format/wal.md`).
struct DeviceRing {
    mem: MemoryKvLog,
    state: Mutex<Ring>,
}

struct Ring {
    stream: Vec<u8>,
    written: u64,
    qp: QueuePair,
    page: usize,
}

impl DeviceRing {
    fn new(dev: &Device) -> DeviceRing {
        let page = dev.info().page_bytes as usize;
        DeviceRing {
            mem: MemoryKvLog::new(),
            state: Mutex::new(Ring { stream: Vec::new(), written: 0, qp: dev.queue_pair(), page }),
        }
    }
}

impl KvLog for DeviceRing {
    fn append(&self, kind: u32, payload: &[u8]) -> Result<(u64, u64), KvError> {
        let mut g = self.state.lock();
        let (start, end) = self.mem.append(kind, payload)?;
        assert_eq!(g.stream.len() as u64, start);
        assert_eq!(frame_into(&mut g.stream, start, kind, payload), end);
        Ok((start, end))
    }
    fn end_lsn(&self) -> u64 {
        self.mem.end_lsn()
    }
    fn durable_lsn(&self) -> u64 {
        self.mem.durable_lsn()
    }
    fn flush_to(&self, lsn: u64) -> Result<(), KvError> {
        let mut g = self.state.lock();
        let g = &mut *g;
        let end = g.stream.len() as u64;
        if lsn > g.written && end > g.written {
            let p = g.page as u64;
            for k in g.written / p..=(end - 1) / p {
                let mut data = vec![0u8; g.page];
                let lo = (k * p) as usize;
                let hi = (lo + g.page).min(g.stream.len());
                data[..hi - lo].copy_from_slice(&g.stream[lo..hi]);
                let cmd = Command::PageWrite { ppn: LOG_FIRST + k % LOG_PAGES, data };
                g.qp.call(cmd).map_err(|e| KvError::Log { message: e.to_string() })?;
            }
            g.written = end;
        }
        self.mem.flush_to(lsn)
    }
    fn scan(&self, from: u64, f: &mut dyn FnMut(LogRecord<'_>) -> Result<(), KvError>) -> Result<(), KvError> {
        self.mem.scan(from, f)
    }
    fn checkpoint_lsn(&self) -> u64 {
        self.mem.checkpoint_lsn()
    }
    fn set_checkpoint(&self, lsn: u64) -> Result<(), KvError> {
        self.mem.set_checkpoint(lsn)
    }
    fn capacity(&self) -> Option<u64> {
        None
    }
}

fn device(profile: &str) -> (tempfile::TempDir, Arc<Device>) {
    device_with(Profile::load(profile).unwrap())
}

fn device_with(p: Profile) -> (tempfile::TempDir, Arc<Device>) {
    let dir = tempfile::tempdir().unwrap();
    let capacity = (FILE_FIRST + FILE_PAGES) * u64::from(p.page_bytes());
    let dev = Device::create(dir.path(), p, Some(capacity), DeviceOptions::with_clock(ClockKind::Virtual)).unwrap();
    (dir, Arc::new(dev))
}

fn store(dev: &Arc<Device>) -> (KvStore, DeviceLayout) {
    let io = Arc::new(DevicePageIo::new(dev.clone(), FILE_FIRST, 0, FILE_PAGES).unwrap());
    let log: Arc<dyn KvLog> = Arc::new(DeviceRing::new(dev));
    let config = PoolConfig { frames: FRAMES, page_bytes: io.page_bytes() };
    let pool = Arc::new(BufferPool::new(config, io.clone(), Arc::new(PoolLog(log.clone()))).unwrap());
    let store = KvStore::create(pool, log, KvOptions::default()).unwrap();
    let layout = DeviceLayout {
        page_bytes: io.page_bytes(),
        file_first_ppn: FILE_FIRST,
        file_pages: FILE_PAGES,
        log_first_ppn: LOG_FIRST,
        log_pages: LOG_PAGES,
        root_pid: store.root(),
        frames: FRAMES as u64,
    };
    (store, layout)
}

fn key(n: u64) -> Vec<u8> {
    format!("user{:020}", n.wrapping_mul(2654435761) % 1_000_003).into_bytes()
}

/// A value that says which key and version it is, whole or not at all.
fn value(n: u64, version: u64) -> Vec<u8> {
    format!("{n}:{version};").repeat(200 / format!("{n}:{version};").len() + 1).into_bytes()
}

fn version_of(n: u64, v: &[u8]) -> u64 {
    let s = std::str::from_utf8(v).expect("a value is text");
    let first = s.split(';').next().unwrap();
    let version: u64 = first.strip_prefix(&format!("{n}:")).expect("the key's own value").parse().unwrap();
    assert_eq!(v, &value(n, version)[..], "a whole value");
    version
}

fn lookup(off: &KvOffload, keys: &[Vec<u8>], mirror: bool) -> ndpdb_kv::LookupResult {
    off.lookup(&LookupCall { keys, pes: 4, mirror, shadow: None }).unwrap()
}

#[test]
fn lookups_agree_with_get_under_cbm_and_go_stale_without_the_mirror() {
    let (_dir, dev) = device("u280-nvm");
    let (kv, layout) = store(&dev);
    for n in 0..2000 {
        kv.put(&key(n), &value(n, 0)).unwrap();
    }
    let off = KvOffload::new(dev.clone(), layout).unwrap();
    off.configure_mirror(&kv).unwrap();
    let updated: Vec<u64> = (0..2000).step_by(7).collect();
    for &n in &updated {
        kv.put(&key(n), &value(n, 1)).unwrap();
    }
    let dirty_pages = dev.mirror_stats().unwrap().dirty;
    assert!(dirty_pages > 0, "some updated pages are still dirty on the host");
    let probe: Vec<u64> = updated.iter().copied().chain((0..2000).step_by(3)).collect();
    // Baseline first, while the host still holds its dirty pages (the
    // host's own reads below evict some of them).
    let mut stale = 0;
    for chunk in probe.chunks(40) {
        let keys: Vec<Vec<u8>> = chunk.iter().map(|&n| key(n)).collect();
        let base = lookup(&off, &keys, false);
        assert_eq!(base.host_reads, 0);
        for (i, &n) in chunk.iter().enumerate() {
            let got = version_of(n, base.values[i].as_deref().expect("every key is there"));
            let want = u64::from(n % 7 == 0);
            if got != want {
                assert_eq!(got, 0, "key {n}: a stale answer is the value before the update");
                stale += 1;
            }
        }
    }
    // Through the mirror, all lookups before the host's own reads, which
    // evict (and write back) dirty pages.
    let (mut host_reads, mut medium_reads) = (0, 0);
    let mut answers = Vec::new();
    for chunk in probe.chunks(40) {
        let keys: Vec<Vec<u8>> = chunk.iter().map(|&n| key(n)).collect();
        let cbm = lookup(&off, &keys, true);
        host_reads += cbm.host_reads;
        medium_reads += cbm.medium_reads;
        answers.extend(chunk.iter().copied().zip(cbm.values));
    }
    for (n, got) in answers {
        assert_eq!(got, kv.get(&key(n)).unwrap(), "key {n} through the mirror");
        assert_eq!(version_of(n, got.as_deref().unwrap()), u64::from(n % 7 == 0));
    }
    assert!(
        host_reads > 0 && medium_reads > 0,
        "dirty nodes from host memory ({host_reads}), the rest from the medium"
    );
    assert!(stale > 0, "without the mirror the device misses the host's unflushed updates");
    eprintln!("{stale} stale answers without the mirror; {host_reads} DMA reads, {medium_reads} medium reads with it");
    assert!(dev.counters().dma_bytes_read >= host_reads * layout_page(&dev));
}

/// The Shadow method: the shipped table answers first (a value, or a
/// delete), the tree the rest.
#[test]
fn a_shadow_table_is_searched_first() {
    let (_dir, dev) = device("u280-nvm");
    let (kv, layout) = store(&dev);
    for n in 0..300 {
        kv.put(&key(n), &value(n, 0)).unwrap();
    }
    kv.pool().write_back_all().unwrap();
    let off = KvOffload::new(dev.clone(), layout).unwrap();
    let table = ndpdb_format::shadow::encode(&[(key(5), Some(value(5, 9))), (key(6), None)]);
    let keys = vec![key(5), key(6), key(7), b"absent".to_vec()];
    let r = off.lookup(&LookupCall { keys: &keys, pes: 2, mirror: false, shadow: Some(&table) }).unwrap();
    assert_eq!(r.values, vec![Some(value(5, 9)), None, Some(value(7, 0)), None]);
}

fn layout_page(dev: &Device) -> u64 {
    u64::from(dev.info().page_bytes)
}

/// The same workload with and without the mirror: the same commands.
#[test]
fn the_mirror_costs_no_command() {
    let mut seen = Vec::new();
    for with_mirror in [false, true] {
        let (_dir, dev) = device("u280-nvm");
        let (kv, layout) = store(&dev);
        for n in 0..600 {
            kv.put(&key(n), &value(n, 0)).unwrap();
        }
        let off = KvOffload::new(dev.clone(), layout).unwrap();
        if with_mirror {
            off.configure_mirror(&kv).unwrap();
        } else {
            kv.pool().write_back_all().unwrap();
        }
        let before = dev.counters();
        for n in (0..600).step_by(3) {
            kv.put(&key(n), &value(n, 1)).unwrap();
            assert_eq!(kv.get(&key(n + 1)).unwrap(), Some(value(n + 1, 0)));
        }
        let commands = dev.counters().since(&before).commands;
        if with_mirror {
            let stats = dev.mirror_stats().unwrap();
            assert!(stats.records > 0 && stats.page_reads > 0 && stats.page_writes > 0, "{stats:?}");
        }
        seen.push(commands);
    }
    assert_eq!(seen[0], seen[1], "commands without and with the mirror");
}

/// A writer updates keys while lookups run through the mirror: every
/// answer is a whole value, at least as new as the last committed before
/// the call.
#[test]
fn lookups_under_a_concurrent_writer_see_whole_fresh_values() {
    let (_dir, dev) = device("u280-nvm");
    let (kv, layout) = store(&dev);
    const KEYS: u64 = 300;
    for n in 0..KEYS {
        kv.put(&key(n), &value(n, 0)).unwrap();
    }
    let off = KvOffload::new(dev.clone(), layout).unwrap();
    off.configure_mirror(&kv).unwrap();
    let committed: Vec<AtomicU64> = (0..KEYS).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    /// Stops the writer however the reader ends (a failed assertion too).
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let (retries, host_reads) = std::thread::scope(|s| {
        let _stop = Stop(&stop);
        s.spawn(|| {
            let mut v = 1;
            while !stop.load(Ordering::Relaxed) && v < 400 {
                for n in (v % 5..KEYS).step_by(5) {
                    kv.put(&key(n), &value(n, v)).unwrap();
                    committed[n as usize].store(v, Ordering::Release);
                }
                v += 1;
            }
        });
        let (mut retries, mut host_reads) = (0, 0);
        for round in 0..150u64 {
            let ns: Vec<u64> = (0..8).map(|i| (round * 37 + i * 41) % KEYS).collect();
            let before: Vec<u64> = ns.iter().map(|&n| committed[n as usize].load(Ordering::Acquire)).collect();
            let keys: Vec<Vec<u8>> = ns.iter().map(|&n| key(n)).collect();
            let r = lookup(&off, &keys, true);
            for (i, &n) in ns.iter().enumerate() {
                let got = version_of(n, r.values[i].as_deref().expect("every key is there"));
                assert!(got >= before[i], "key {n}: version {got}, but {} was committed before the call", before[i]);
            }
            retries += r.retries;
            host_reads += r.host_reads;
        }
        (retries, host_reads)
    });
    assert!(host_reads > 0, "dirty nodes were read from host memory");
    eprintln!("{host_reads} DMA reads of frames, {retries} retries");
}

/// The figures for the report (printed, never asserted on time): a
/// one-key lookup's modelled latency on `softssd` with 16 KiB pages when
/// every node comes from flash, and when the leaf comes from host memory.
#[test]
fn modelled_lookup_latency_flash_vs_host_memory_on_softssd() {
    let mut p = Profile::load("softssd").unwrap();
    if let ndpdb_device::profile::MediumProfile::Flash(f) = &mut p.medium {
        f.page_bytes = 16384;
    }
    let (_dir, dev) = device_with(p);
    let (kv, layout) = store(&dev);
    for n in 0..3000 {
        kv.put(&key(n), &value(n, 0)).unwrap();
    }
    let off = KvOffload::new(dev.clone(), layout).unwrap();
    off.configure_mirror(&kv).unwrap();
    for n in (0..3000).step_by(11) {
        kv.put(&key(n), &value(n, 1)).unwrap();
    }
    let (mut flash, mut host) = (Vec::new(), Vec::new());
    for n in (0..3000).step_by(11) {
        let r = lookup1(&off, n);
        assert_eq!(version_of(n, r.values[0].as_deref().unwrap()), 1);
        let ps = (r.end_ps - r.start_ps, r.exec_end_ps - r.exec_start_ps);
        if r.host_reads == 0 { flash.push(ps) } else { host.push(ps) }
    }
    assert!(!flash.is_empty() && !host.is_empty());
    let mean = |v: &[(u64, u64)], f: fn(&(u64, u64)) -> u64| v.iter().map(f).sum::<u64>() as f64 / v.len() as f64 / 1e6;
    eprintln!(
        "softssd (16 KiB pages), one key, 1 PE: all nodes from flash: {} lookups, end to end {:.2} us (PEs {:.2} us); \
         leaf from host memory: {} lookups, end to end {:.2} us (PEs {:.2} us)",
        flash.len(),
        mean(&flash, |p| p.0),
        mean(&flash, |p| p.1),
        host.len(),
        mean(&host, |p| p.0),
        mean(&host, |p| p.1)
    );
}

fn lookup1(off: &KvOffload, n: u64) -> ndpdb_kv::LookupResult {
    off.lookup(&LookupCall { keys: &[key(n)], pes: 1, mirror: true, shadow: None }).unwrap()
}

fn raw_execute(dev: &Device, params: Vec<u8>) -> Result<(), String> {
    let mut qp = dev.queue_pair();
    let _ = qp.call(Command::ProgramLoad { slot: LOOKUP_SLOT, name: "kv.lookup".into() });
    let _ = qp.call(Command::ProgramActivate { slot: LOOKUP_SLOT, active: true });
    let range = match qp.call(Command::MemoryRangeCreate { bytes: 1 << 16 }).unwrap() {
        ndpdb_device::Reply::Range(r) => r,
        other => panic!("{other:?}"),
    };
    let r = qp.call(Command::Execute { slot: LOOKUP_SLOT, pes: 2, params, ranges: vec![range] });
    qp.call(Command::MemoryRangeDelete { range }).unwrap();
    r.map(|_| ()).map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Garbage parameters, and a garbage node where the tree's root should
    /// be: an error, never a panic; a bad node's error names its page.
    #[test]
    fn garbage_gives_errors_never_panics(params in proptest::collection::vec(any::<u8>(), 0..200), node in proptest::collection::vec(any::<u8>(), 0..300), seed in any::<u64>(), pid in 0u64..4) {
        let (_dir, dev) = device("u280-nvm");
        if let Err(e) = raw_execute(&dev, params) {
            prop_assert!(!e.contains("panicked"), "{}", e);
        }
        let page = layout_page(&dev) as usize;
        let mut data: Vec<u8> = (0..page).map(|i| node.get(i % node.len().max(1)).copied().unwrap_or(0) ^ (seed >> (i % 64)) as u8).collect();
        data[8..16].copy_from_slice(&pid.to_le_bytes());
        data[16..18].copy_from_slice(b"BT");
        dev.queue_pair().call(Command::PageWrite { ppn: FILE_FIRST + pid, data }).unwrap();
        let call = ndpdb_format::kv_lookup::Call { mirror: false, root_pid: pid, file_first_ppn: FILE_FIRST, file_pages: FILE_PAGES, slot_bytes: 4096, keys: vec![b"user1", b"x"], shadow: None };
        if let Err(e) = raw_execute(&dev, call.encode()) {
            prop_assert!(!e.contains("panicked"), "{}", e);
            prop_assert!(e.contains("page "), "{}", e);
        }
    }
}
