//! Concurrent readers and writers (2 writer threads and readers, fixed
//! seeds), checked against models while they run and at the end; and the
//! device's uncoupled B-link lookup racing with splits.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{Harness, Model, key, value};
use ndpdb_kv::{KvOptions, MemoryKvLog};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// Writer `t` of `threads` owns the keys `n` with `n % threads == t`, so its
/// own model is exact while others write.
fn writer(h: &Harness, t: u64, threads: u64, ops: u64) -> Model {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(100 + t);
    let mut model = Model::new();
    for i in 0..ops {
        let n = rng.random_range(0..1500) * threads + t;
        let k = key(n);
        match rng.random_range(0..10) {
            0..6 => {
                let v = value(n, i, rng.random_range(0..h.kv().max_value_bytes(k.len())));
                h.kv().put(&k, &v).unwrap();
                model.insert(k, v);
            }
            6..8 => {
                assert_eq!(h.kv().delete(&k).unwrap(), model.remove(&k).is_some());
            }
            _ => assert_eq!(h.kv().get(&k).unwrap(), model.get(&k).cloned(), "own key {n}"),
        }
    }
    model
}

/// Scans see keys in strictly increasing order, each with a value written
/// for that key (never a torn or misplaced one).
fn reader(h: &Harness, stop: &AtomicU64) -> u64 {
    let mut scans = 0;
    while stop.load(Ordering::Relaxed) == 0 {
        let mut last: Option<Vec<u8>> = None;
        for entry in h.kv().scan(&key(scans * 37 % 3000)).take(200) {
            let (k, v) = entry.unwrap();
            assert!(last.as_ref().is_none_or(|l| *l < k), "scan order");
            let n = u64::from_be_bytes(k[..8].try_into().unwrap());
            let head = format!("{n}/");
            let m = v.len().min(head.len());
            assert_eq!(&v[..m], &head.as_bytes()[..m], "the value of key {n}");
            last = Some(k);
        }
        scans += 1;
    }
    scans
}

#[test]
fn two_writers_and_a_reader_agree_with_their_models() {
    let mut h = Harness::new(1024, 48, MemoryKvLog::new(), KvOptions::default());
    let stop = AtomicU64::new(0);
    let (models, scans) = std::thread::scope(|s| {
        let writers: Vec<_> = (0..2)
            .map(|t| {
                s.spawn({
                    let h = &h;
                    move || writer(h, t, 2, 6000)
                })
            })
            .collect();
        let r = s.spawn(|| reader(&h, &stop));
        let models: Vec<Model> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        stop.store(1, Ordering::Relaxed);
        (models, r.join().unwrap())
    });
    assert!(scans > 0);
    let model: Model = models.into_iter().flatten().collect();
    h.check(&model);
    h.crash();
    h.check(&model);
}

/// The lookup the device runs reads one node at a time with no latch held
/// in between (here: each node copied under a short shared latch), so it
/// sees splits half done. Every key inserted before a lookup starts must be
/// found while another thread keeps splitting nodes.
#[test]
fn the_uncoupled_lookup_finds_every_key_during_splits() {
    let h = Harness::new(1024, 256, MemoryKvLog::new(), KvOptions { sync: false, ..KvOptions::default() });
    let inserted = AtomicU64::new(0);
    let total = 20000u64;
    // Keys in a scrambled order, so splits happen all over the tree.
    let order: Arc<Vec<u64>> = Arc::new((0..total).map(|i| (i * 7919) % total).collect());
    let misses = std::thread::scope(|s| {
        s.spawn(|| {
            for (i, &n) in order.iter().enumerate() {
                h.kv().put(&key(n), &value(n, 0, 60)).unwrap();
                inserted.store(i as u64 + 1, Ordering::Release);
            }
        });
        let looker = s.spawn(|| {
            let pool = h.kv().pool().clone();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
            let mut misses = 0;
            loop {
                let done = inserted.load(Ordering::Acquire);
                if done == 0 {
                    continue;
                }
                let n = order[rng.random_range(0..done) as usize];
                let found = ndpdb_format::btree::lookup(h.kv().root(), &key(n), |pid| {
                    pool.fix_shared(pid).map(|g| g.bytes().to_vec())
                })
                .unwrap();
                if found.is_none_or(|f| f.value() != value(n, 0, 60)) {
                    misses += 1;
                }
                if done == total {
                    return misses;
                }
            }
        });
        looker.join().unwrap()
    });
    assert_eq!(misses, 0);
}

/// The device's way of reading a node, without the mirror: copy the frame
/// by DMA (atomic loads, no latch), retry while its versions differ or the
/// frame holds another page; a page not in the pool comes from the medium.
/// The shared lookup over such reads finds every key inserted before it
/// started, while a writer splits nodes and moves pages in and out of a
/// small pool.
#[test]
fn lookups_over_dma_reads_of_frames_find_every_key_during_splits() {
    let h = Harness::new(1024, 40, MemoryKvLog::new(), KvOptions { sync: false, ..KvOptions::default() });
    let inserted = AtomicU64::new(0);
    let total = 12000u64;
    let order: Vec<u64> = (0..total).map(|i| (i * 7919) % total).collect();
    let (misses, retries) = std::thread::scope(|s| {
        s.spawn(|| {
            for (i, &n) in order.iter().enumerate() {
                h.kv().put(&key(n), &value(n, 0, 60)).unwrap();
                inserted.store(i as u64 + 1, Ordering::Release);
            }
        });
        let looker = s.spawn(|| {
            let pool = h.kv().pool().clone();
            let frames = pool.host_memory();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
            let (mut misses, mut retries) = (0u64, 0u64);
            let mut read = |pid: u64| -> Result<Vec<u8>, String> {
                let mut page = vec![0u8; 1024];
                loop {
                    let Some(addr) = pool.resident(pid) else {
                        return h.io.page(pid).ok_or_else(|| format!("no page {pid}"));
                    };
                    frames.dma_read(addr, &mut page).map_err(|e| e.to_string())?;
                    let holds = u64::from_le_bytes(page[8..16].try_into().unwrap());
                    if ndpdb_bufmgr::seqlock::versions_match(&page) && holds == pid {
                        return Ok(page);
                    }
                    retries += 1;
                }
            };
            loop {
                let done = inserted.load(Ordering::Acquire);
                if done == 0 {
                    continue;
                }
                let n = order[rng.random_range(0..done) as usize];
                let found = ndpdb_format::btree::lookup(h.kv().root(), &key(n), &mut read).unwrap();
                misses += u64::from(found.is_none_or(|f| f.value() != value(n, 0, 60)));
                if done == total {
                    return (misses, retries);
                }
            }
        });
        looker.join().unwrap()
    });
    assert_eq!(misses, 0, "{retries} retries");
}
