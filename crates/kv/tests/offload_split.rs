//! The interleavings behind CBM's one failed lookup in the full grid
//! (`docs/cbm-bench.md`, "Lookup failures"):
//!
//! - the suspected one, refuted: a lookup reads a dirty leaf from host
//!   memory after a split whose record has not reached the device, follows
//!   the right link to the new page and finds zeros on the medium. It cannot
//!   happen: a split's record is made durable (and so reaches the mirror)
//!   before the split's latches are released, even in an asynchronous store;
//!   the first test forces the interleaving and finds the new page known;
//! - the real one: a writer holds a dirty page's exclusive latch across a
//!   synchronous log write (that same split commit), and on a loaded host its
//!   thread may be descheduled for milliseconds. The PE's optimistic reads
//!   gave up after 1000 yields (a few milliseconds); now they back off and
//!   give up only after `RETRY_WAIT` as well. The second test holds a latch
//!   for longer than the old budget.
//!
//! The second test watches a process-wide counter
//! (`kv_lookup::frame_retries_in_process`); this file's tests keep their
//! lookups apart from it where it matters (the first asserts on its own
//! result only).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ndpdb_device::kv_lookup::{MAX_RETRIES, frame_retries_in_process};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_kv::{KvError, KvOffload, KvOptions, KvStore, LookupCall};

const LOG_PAGES: u64 = 512;
const PAGES: u64 = 2 + LOG_PAGES + 512;

fn key(n: u64) -> Vec<u8> {
    format!("user{n:020}").into_bytes()
}

fn value(n: u64, version: u64) -> Vec<u8> {
    format!("{n}:{version};").repeat(40).into_bytes()
}

/// A store on a fresh device (`sync` as given), its mirror configured.
fn setup(dir: &std::path::Path, sync: bool, keys: u64) -> (Arc<Device>, KvStore, KvOffload) {
    let p = Profile::load("softssd").unwrap();
    let capacity = PAGES * u64::from(p.page_bytes());
    let dev = Arc::new(Device::create(dir, p, Some(capacity), DeviceOptions::with_clock(ClockKind::Virtual)).unwrap());
    let opts = KvOptions { sync, frames: 64, pages: Some(PAGES), log_pages: LOG_PAGES, ..KvOptions::default() };
    let kv = KvStore::create_on(dev.clone(), opts).unwrap();
    for n in (0..keys).map(|i| 2 * i) {
        kv.put(&key(n), &value(n, 0)).unwrap();
    }
    kv.sync().unwrap();
    kv.checkpoint().unwrap();
    let off = KvOffload::new(dev.clone(), kv.layout().unwrap()).unwrap();
    off.configure_mirror(&kv).unwrap();
    (dev, kv, off)
}

#[test]
fn a_split_is_known_to_the_mirror_before_anyone_can_follow_its_links() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, kv, off) = setup(dir.path(), false, 300);
    // Every leaf dirty, and the device told (durable records).
    for n in (0..600).step_by(2) {
        kv.update(&key(n), &value(n, 1)).unwrap();
    }
    kv.sync().unwrap();
    let (splits, checkpoints) = (kv.stats().splits, kv.stats().checkpoints);
    let synced = kv.log().durable_lsn();
    // Odd keys until a leaf splits; the store is asynchronous, so only what
    // the split itself forces reaches the device.
    let mut added = Vec::new();
    let mut n = 1;
    while kv.stats().splits == splits {
        kv.put(&key(n), &value(n, 2)).unwrap();
        added.push(n);
        n += 2;
    }
    assert_eq!(kv.stats().checkpoints, checkpoints, "no checkpoint wrote the split back");
    assert!(kv.log().durable_lsn() > synced, "the split forced its record");
    assert!(kv.log().end_lsn() >= kv.log().durable_lsn());
    // The leaf is read from host memory (dirty), its right link leads to
    // the new page: the mirror must know it (else: zeros on the medium).
    let keys: Vec<Vec<u8>> = added.iter().map(|&n| key(n)).chain((0..600).step_by(2).map(key)).collect();
    let r = off.lookup(&LookupCall { keys: &keys, pes: 1, mirror: true, shadow: None });
    let r = r.expect("every page a lookup can reach is on the medium or known to the mirror");
    assert!(r.host_reads > 0 && dev.mirror_stats().unwrap().dirty > 0, "{r:?}");
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(r.values[i], kv.get(k).unwrap(), "key {i}");
    }
}

/// Holds `pid`'s exclusive latch (front != rear) from another thread while
/// `lookup` runs; lets go once `release` says so or the lookup is done.
fn while_latched<R>(kv: &KvStore, pid: u64, release: impl Fn() -> bool + Sync, lookup: impl FnOnce() -> R) -> R {
    let (held, done) = (AtomicBool::new(false), AtomicBool::new(false));
    std::thread::scope(|s| {
        s.spawn(|| {
            let guard = kv.pool().fix_exclusive(pid).unwrap();
            held.store(true, Ordering::SeqCst);
            while !release() && !done.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            drop(guard);
        });
        while !held.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let r = lookup();
        done.store(true, Ordering::SeqCst);
        r
    })
}

/// One test, so that the process-wide retry counter is its alone.
#[test]
fn a_lookup_outwaits_a_long_held_latch_and_one_that_gives_up_reports_its_retries() {
    let dir = tempfile::tempdir().unwrap();
    // Few keys: the root is the only leaf.
    let (_dev, kv, off) = setup(dir.path(), true, 10);
    kv.update(&key(4), &value(4, 1)).unwrap();
    let keys = [key(4)];
    let call = LookupCall { keys: &keys, pes: 1, mirror: true, shadow: None };
    // Held for twice the old budget of reads: the lookup waits it out.
    let before = frame_retries_in_process();
    let release = || frame_retries_in_process() >= before + 2 * MAX_RETRIES;
    let r = while_latched(&kv, kv.root(), release, || off.lookup(&call));
    let r = r.expect("the lookup waits for the writer instead of giving up");
    assert!(r.retries >= 2 * MAX_RETRIES, "every read of the latched frame counted: {}", r.retries);
    assert_eq!(r.values, vec![Some(value(4, 1))]);
    // Held until the lookup gives up: its retries still come back.
    match while_latched(&kv, kv.root(), || false, || off.lookup(&call)) {
        Err(KvError::LookupFailed { message, retries, commands }) => {
            assert!(retries >= MAX_RETRIES, "{retries} retries: {message}");
            assert!(message.contains("reads of its frame"), "{message}");
            assert_eq!(commands, 2, "Execute, and the MemoryRead of the failed call's statistics");
        }
        other => panic!("expected a failed lookup with its retries, got {other:?}"),
    }
    let r = off.lookup(&call).unwrap();
    assert_eq!((r.values.clone(), r.retries), (vec![Some(value(4, 1))], 0), "the page is whole again");
}
