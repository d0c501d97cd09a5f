//! In-storage lookups on a store made by `KvStore::create_on`: the log is
//! the store's own ring of device pages, which rewrites its partly filled
//! tail page on every commit and wraps after checkpoints. The mirror reads
//! the PIDs each record makes dirty from those page writes, so:
//!
//! - CBM (mirror on): every answer equals the host's `get` while the host
//!   holds dirty pages, round after round, across ring wraps;
//! - Baseline (mirror off): keys whose pages are still dirty on the host
//!   come back with their old values.

use std::sync::Arc;

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_kv::{KvOffload, KvOptions, KvStore, LOG_PAGES_MIN, LookupCall};

const PAGES: u64 = 2 + LOG_PAGES_MIN + 1024;
const KEYS: u64 = 1500;

fn store(dir: &std::path::Path) -> (Arc<Device>, KvStore) {
    let p = Profile::load("u280-nvm").unwrap();
    let capacity = PAGES * u64::from(p.page_bytes());
    let dev = Arc::new(Device::create(dir, p, Some(capacity), DeviceOptions::with_clock(ClockKind::Virtual)).unwrap());
    let opts = KvOptions { frames: 24, pages: Some(PAGES), log_pages: LOG_PAGES_MIN, ..KvOptions::default() };
    let kv = KvStore::create_on(dev.clone(), opts).unwrap();
    (dev, kv)
}

fn key(n: u64) -> Vec<u8> {
    format!("user{:020}", n.wrapping_mul(2654435761) % 1_000_003).into_bytes()
}

fn value(n: u64, version: u64) -> Vec<u8> {
    format!("{n}:{version};").repeat(20).into_bytes()
}

fn lookup(off: &KvOffload, keys: &[Vec<u8>], mirror: bool) -> ndpdb_kv::LookupResult {
    off.lookup(&LookupCall { keys, pes: 4, mirror, shadow: None }).unwrap()
}

#[test]
fn cbm_agrees_with_get_on_the_device_ring_and_baseline_goes_stale() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, kv) = store(dir.path());
    for n in 0..KEYS {
        kv.put(&key(n), &value(n, 0)).unwrap();
    }
    let off = KvOffload::new(dev.clone(), kv.layout().expect("a store on a device")).unwrap();
    off.configure_mirror(&kv).unwrap();
    let ring_before = kv.ring_stats().unwrap();
    let (mut stale, mut host_reads, mut dirty_seen) = (0, 0, 0);
    for round in 1..=40u64 {
        // A few keys per round, so their pages stay dirty in the pool; each
        // update is a commit, a rewrite of the ring's tail page.
        let updated: Vec<u64> = (round % 37..KEYS).step_by(37).collect();
        for &n in &updated {
            kv.put(&key(n), &value(n, round)).unwrap();
        }
        dirty_seen = dirty_seen.max(dev.mirror_stats().unwrap().dirty);
        let keys: Vec<Vec<u8>> = updated.iter().map(|&n| key(n)).collect();
        // Baseline and CBM before the host's own reads (which evict, and so
        // write back, dirty pages).
        let base = lookup(&off, &keys, false);
        stale += updated.iter().zip(&base.values).filter(|(n, v)| v.as_deref() != Some(&value(**n, round)[..])).count();
        let cbm = lookup(&off, &keys, true);
        host_reads += cbm.host_reads;
        for (i, &n) in updated.iter().enumerate() {
            assert_eq!(cbm.values[i], Some(value(n, round)), "round {round}, key {n} through the mirror");
            assert_eq!(cbm.values[i], kv.get(&key(n)).unwrap(), "round {round}, key {n}: CBM agrees with get");
        }
    }
    let ring = kv.ring_stats().unwrap();
    let log_bytes = LOG_PAGES_MIN * u64::from(dev.info().page_bytes);
    assert!(dirty_seen > 0, "the host held dirty pages while the device looked");
    assert!(host_reads > 0, "dirty nodes came from host memory");
    assert!(stale > 0, "without the mirror the device misses the host's unflushed updates");
    assert!(ring.page_writes - ring_before.page_writes > ring.flushes - ring_before.flushes, "tail pages rewritten");
    assert!(ring.bytes - ring_before.bytes > 2 * log_bytes, "the ring wrapped: {ring:?}");
    assert!(ring.root_writes > ring_before.root_writes, "checkpoints while the mirror ran: {ring:?}");
    eprintln!("{stale} stale answers without the mirror, {host_reads} DMA reads with it; ring {ring:?}");
}
