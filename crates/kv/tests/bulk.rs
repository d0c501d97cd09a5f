//! `KvStore::put_many`, the bulk load: the same tree as one `put` per pair,
//! its records made durable together (far fewer log writes than pairs), and
//! every pair kept by a crash after it returned.

use std::path::Path;
use std::sync::Arc;

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_kv::{KvOptions, KvStore};

fn options() -> KvOptions {
    KvOptions { frames: 32, pages: Some(2 + 64 + 1200), log_pages: 64, ..KvOptions::default() }
}

fn device(dir: &Path, create: bool) -> Arc<Device> {
    let p = Profile::load("u280-nvm").unwrap();
    let opts = DeviceOptions::with_clock(ClockKind::Virtual);
    Arc::new(if create {
        Device::create(dir, p, Some(16 << 20), opts).unwrap()
    } else {
        Device::open(dir, p, opts).unwrap()
    })
}

fn pair(n: u64) -> (Vec<u8>, Vec<u8>) {
    (format!("user{:020}", n * 2654435761 % 1_000_003).into_bytes(), format!("{n};").repeat(30).into_bytes())
}

#[test]
fn a_bulk_load_writes_the_log_in_batches_and_survives_a_crash_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = KvStore::create_on(device(dir.path(), true), options()).unwrap();
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..3000).map(pair).collect();
    let before = store.ring_stats().unwrap();
    for chunk in pairs.chunks(500) {
        let n = store.put_many(chunk.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap();
        assert_eq!(n, 500);
    }
    let ring = store.ring_stats().unwrap();
    let stats = store.stats();
    // One flush per batch, per split (its record is forced before its
    // latches go) and per checkpoint; one per pair without the batching.
    let flushes = ring.flushes - before.flushes;
    assert!(flushes < 3000 / 4, "{flushes} log flushes for 3000 pairs ({} splits)", stats.splits);
    assert!(flushes >= 6, "at least one per batch");
    drop(store);
    // A crash: nothing written back, only the durable log.
    let (store, rec) = KvStore::open_on(device(dir.path(), false), options()).unwrap();
    assert!(rec.notes.is_empty(), "{:?}", rec.notes);
    for (k, v) in &pairs {
        assert_eq!(store.get(k).unwrap().as_deref(), Some(&v[..]));
    }
    assert_eq!(store.check().unwrap().entries, 3000);
}

/// Sorted inserts split the rightmost node of each level unevenly
/// (`APPEND_FILL`, 70 %), so a sorted bulk load packs its nodes about as
/// full as random inserts do, not half full; and the tree stays valid.
#[test]
fn a_sorted_load_fills_nodes_to_the_append_fill_not_half() {
    let dir = tempfile::tempdir().unwrap();
    let store = KvStore::create_on(device(dir.path(), true), options()).unwrap();
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..3000).map(pair).collect();
    pairs.sort();
    store.put_many(pairs.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap();
    let shape = store.check().unwrap();
    assert_eq!(shape.entries, 3000);
    let bytes: usize = pairs.iter().map(|(k, v)| k.len() + v.len() + ndpdb_format::btree::SLOT_BYTES).sum();
    let leaves = *shape.nodes_per_level.last().unwrap() as f64;
    let fill = bytes as f64 / (leaves * 8192.0);
    assert!((0.6..=0.75).contains(&fill), "leaves {fill:.2} full on average ({leaves} leaves)");
    for (k, v) in pairs.iter().step_by(97) {
        assert_eq!(store.get(k).unwrap().as_deref(), Some(&v[..]));
    }
}
