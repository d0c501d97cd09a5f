//! The store against a `BTreeMap` under random puts, updates, deletes and
//! scans (fixed seeds), with restarts (everything written back, then
//! reopened) and crashes (the pool dropped unwritten, the store recovered
//! from the pages written back plus the log).

mod common;

use common::{Harness, Model, key, value};
use ndpdb_kv::{KvOptions, MemoryKvLog};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// One random operation on store and model.
fn step(h: &Harness, model: &mut Model, rng: &mut Xoshiro256PlusPlus, keys: u64, version: u64) {
    let n = rng.random_range(0..keys);
    let k = key(n);
    let max = h.kv().max_value_bytes(k.len());
    let len = match rng.random_range(0..10) {
        0 => max,
        1..4 => rng.random_range(0..=max),
        _ => rng.random_range(0..=max / 8),
    };
    let v = value(n, version, len);
    match rng.random_range(0..10) {
        0..5 => {
            h.kv().put(&k, &v).unwrap();
            model.insert(k, v);
        }
        5..7 => {
            let present = h.kv().update(&k, &v).unwrap();
            assert_eq!(present, model.contains_key(&k));
            if present {
                model.insert(k, v);
            }
        }
        7..9 => {
            assert_eq!(h.kv().delete(&k).unwrap(), model.remove(&k).is_some());
        }
        _ => {
            let got: Vec<_> = h.kv().scan(&k).take(12).map(Result::unwrap).collect();
            let want: Vec<_> = model.range(k.clone()..).take(12).map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(got, want, "scan");
            // A bounded scan stops before its end, across leaves too.
            if let Some((end, _)) = want.last() {
                let got: Vec<_> = h.kv().scan_to(&k, end).map(Result::unwrap).collect();
                assert_eq!(got, want[..want.len() - 1], "scan_to");
                // The copy-free form visits the same keys, and stops when told.
                let mut keys = vec![];
                h.kv()
                    .for_each_key(&k, Some(end), |key| {
                        keys.push(key.to_vec());
                        true
                    })
                    .unwrap();
                let want_keys: Vec<_> = want[..want.len() - 1].iter().map(|(k, _)| k.clone()).collect();
                assert_eq!(keys, want_keys, "for_each_key");
                let mut first = vec![];
                h.kv()
                    .for_each_key(&k, Some(end), |key| {
                        first.push(key.to_vec());
                        false
                    })
                    .unwrap();
                assert_eq!(first, want_keys.iter().take(1).cloned().collect::<Vec<_>>(), "for_each_key stops");
            }
        }
    }
}

/// Runs `ops` random operations over `keys` keys, reopening every `every`;
/// returns the tree's height at the end.
fn run(seed: u64, page_bytes: usize, frames: usize, keys: u64, ops: u64, every: u64) -> usize {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut h = Harness::new(page_bytes, frames, MemoryKvLog::new(), KvOptions::default());
    let mut model = Model::new();
    for i in 0..ops {
        step(&h, &mut model, &mut rng, keys, i);
        if i % every == every - 1 {
            match rng.random_range(0..3) {
                0 => {
                    h.restart();
                }
                1 => {
                    h.crash();
                }
                _ => {
                    h.kv().checkpoint().unwrap();
                }
            }
            h.check(&model);
        }
    }
    h.check(&model);
    h.kv().check().unwrap().nodes_per_level.len()
}

#[test]
fn small_pages_deep_tree() {
    // 1 KiB pages: entries of up to 238 bytes, a tree of several levels
    // within a few thousand operations, and a pool small enough to evict.
    assert!(run(1, 1024, 24, 5000, 30000, 1500) >= 4, "a split cascade reaches the root");
}

#[test]
fn small_pages_few_keys_many_replacements() {
    assert!(run(2, 1024, 12, 60, 10000, 500) >= 2);
}

#[test]
fn sixteen_kib_pages() {
    assert!(run(3, 16384, 16, 3000, 8000, 1000) >= 2);
}

/// Every page of a grown tree checks, and a reopened tree finds every key
/// through the shared lookup that the device uses.
#[test]
fn the_device_lookup_finds_what_the_store_holds() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let mut h = Harness::new(1024, 64, MemoryKvLog::new(), KvOptions::default());
    let mut model = Model::new();
    for i in 0..3000 {
        step(&h, &mut model, &mut rng, 2000, i);
    }
    h.restart();
    let pool = h.kv().pool().clone();
    for n in 0..2000 {
        let k = key(n);
        let found =
            ndpdb_format::btree::lookup(h.kv().root(), &k, |pid| pool.fix_shared(pid).map(|g| g.bytes().to_vec()))
                .unwrap();
        assert_eq!(found.map(|f| f.value().to_vec()).as_ref(), model.get(&k), "key {n}");
    }
}
