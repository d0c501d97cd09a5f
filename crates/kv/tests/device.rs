//! The store on the emulated device (`DevicePageIo`: `PageRead` and
//! `PageWrite` commands): reopened from the image, and crashed by the
//! device's fault injection (every command from the Nth on fails; a page
//! write there is torn at a sector boundary). The log stays in memory (the
//! on-device ring is connected by the store's owner): what was flushed
//! survives the crash. Every write acknowledged before the crash is there
//! after recovery.

use std::path::Path;
use std::sync::Arc;

use ndpdb_bufmgr::{BufferPool, DevicePageIo, PageIo, PoolConfig};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Faults, Profile};
use ndpdb_kv::{KvError, KvLog, KvOptions, KvStore, MemoryKvLog, PoolLog};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

type Model = std::collections::BTreeMap<Vec<u8>, Vec<u8>>;

const FIRST_PPN: u64 = 16;
const PAGE_LIMIT: u64 = 512;

fn device(dir: &Path, create: bool, faults: Faults) -> Arc<Device> {
    let p = Profile::load("u280-nvm").unwrap();
    let o = DeviceOptions { faults, ..DeviceOptions::with_clock(ClockKind::Virtual) };
    Arc::new(if create { Device::create(dir, p, Some(16 << 20), o).unwrap() } else { Device::open(dir, p, o).unwrap() })
}

fn open(dev: Arc<Device>, pages: u64, log: &Arc<MemoryKvLog>, root: Option<u64>) -> (KvStore, Arc<DevicePageIo>, u64) {
    let io = Arc::new(DevicePageIo::new(dev, FIRST_PPN, pages, PAGE_LIMIT).unwrap());
    let kv_log: Arc<dyn KvLog> = log.clone();
    let config = PoolConfig { frames: 12, page_bytes: io.page_bytes() };
    let pool = Arc::new(BufferPool::new(config, io.clone(), Arc::new(PoolLog(kv_log.clone()))).unwrap());
    let (store, torn) = match root {
        None => (KvStore::create(pool, kv_log, KvOptions::default()).unwrap(), 0),
        Some(root) => {
            let (store, stats) = KvStore::open(pool, &*io, kv_log, root, KvOptions::default()).unwrap();
            (store, stats.torn_pages_replaced)
        }
    };
    (store, io, torn)
}

fn key(n: u64) -> Vec<u8> {
    format!("user{:020}", n * 2654435761 % 1_000_003).into_bytes()
}

/// Random puts and deletes until `ops` or the first error; the model of
/// acknowledged writes, and the key of the write that failed (its record
/// may or may not have become durable).
fn work(store: &KvStore, seed: u64, ops: u64) -> (Model, Option<Vec<u8>>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut model = Model::new();
    for i in 0..ops {
        let k = key(rng.random_range(0..400));
        let result = if rng.random_range(0..6) == 0 {
            store.delete(&k).map(|_| None)
        } else {
            let v = vec![(i % 251) as u8; rng.random_range(100..1000)];
            store.put(&k, &v).map(|()| Some(v))
        };
        match result {
            Ok(Some(v)) => drop(model.insert(k, v)),
            Ok(None) => drop(model.remove(&k)),
            Err(KvError::Pool(_)) => return (model, Some(k)),
            Err(e) => panic!("{e}"),
        }
    }
    (model, None)
}

fn check(store: &KvStore, model: &Model, unsure: Option<&[u8]>) {
    store.check().unwrap_or_else(|e| panic!("integrity check: {e}"));
    let all: Vec<_> = store.scan(b"").map(Result::unwrap).filter(|(k, _)| Some(&k[..]) != unsure).collect();
    let want: Vec<_> =
        model.iter().filter(|(k, _)| Some(&k[..]) != unsure).map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want);
}

#[test]
fn a_store_on_the_device_reopens_from_its_image() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(MemoryKvLog::new());
    let (store, io, _) = open(device(dir.path(), true, Faults::default()), 0, &log, None);
    let (model, failed) = work(&store, 1, 1500);
    assert!(failed.is_none());
    store.checkpoint().unwrap();
    let (root, pages) = (store.root(), io.pages());
    assert!(store.pool().stats().evictions > 0, "the pool is small enough to evict");
    drop((store, io));
    let (store, _io, _) = open(device(dir.path(), false, Faults::default()), pages, &log, Some(root));
    check(&store, &model, None);
}

/// Crash points spread over a run: the device fails from command N on
/// (tearing a page write there), the store is recovered on the image the
/// crash left, and nothing acknowledged is lost.
#[test]
fn crashes_on_the_device_lose_no_acknowledged_write() {
    let mut torn = 0;
    for point in 0..24u64 {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(MemoryKvLog::new());
        let faults = Faults { torn_write: Some((20 + point * 37, 1 + (point % 15) as u32)), fail_from: None };
        let (store, io, _) = open(device(dir.path(), true, faults), 0, &log, None);
        let (model, failed) = work(&store, point, 3000);
        assert!(failed.is_some(), "crash point {point} was reached");
        let (root, pages) = (store.root(), io.pages());
        drop((store, io));
        let (store, _io, replaced) = open(device(dir.path(), false, Faults::default()), pages, &log, Some(root));
        check(&store, &model, failed.as_deref());
        torn += replaced;
    }
    assert!(torn > 0, "some crash tore a page write that recovery then replaced");
}
