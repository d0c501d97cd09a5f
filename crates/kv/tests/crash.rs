//! Crashes: the pool's dirty pages are lost, the log keeps what was
//! flushed, and pages written back since the checkpoint may be torn (the
//! first sectors of the new bytes over the old). Recovery must give back
//! every acknowledged write (the store is synchronous: a write returns once
//! its record is durable).

mod common;

use std::collections::BTreeMap;

use common::{Harness, Model, key, value};
use ndpdb_bufmgr::PageIo;
use ndpdb_kv::{KvOptions, MemoryKvLog};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

const SECTOR: usize = 512;

/// Every page of the file as it is on the medium.
fn pages(h: &Harness) -> BTreeMap<u64, Vec<u8>> {
    (0..h.io.pages()).map(|pid| (pid, h.io.page(pid).expect("in the file"))).collect()
}

/// Tears pages written since `before`: the first sectors of what is there
/// now, then what was there before (zeros for a page new since).
fn tear(h: &Harness, before: &BTreeMap<u64, Vec<u8>>, rng: &mut Xoshiro256PlusPlus) -> usize {
    let mut torn = 0;
    for (pid, now) in pages(h) {
        let old = before.get(&pid).cloned().unwrap_or_else(|| vec![0; now.len()]);
        if old == now || rng.random_range(0..2) == 0 {
            continue;
        }
        let keep = rng.random_range(1..now.len() / SECTOR) * SECTOR;
        let mut page = old;
        page[..keep].copy_from_slice(&now[..keep]);
        h.io.put(pid, page);
        torn += 1;
    }
    torn
}

#[test]
fn torn_pages_and_lost_dirty_pages_recover_from_the_log() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    // 4 KiB pages (8 sectors) and a pool of 10 frames: writes evict dirty
    // pages all the time, so many pages are written back between
    // checkpoints and can be torn.
    let mut h = Harness::new(4096, 10, MemoryKvLog::new(), KvOptions::default());
    let mut model = Model::new();
    let (mut torn_total, mut replaced_total) = (0, 0);
    for round in 0..30u64 {
        h.kv().checkpoint().unwrap();
        let before = pages(&h);
        for i in 0..200 {
            let n = rng.random_range(0..1500);
            let k = key(n);
            if rng.random_range(0..5) == 0 {
                h.kv().delete(&k).unwrap();
                model.remove(&k);
            } else {
                let len = rng.random_range(0..h.kv().max_value_bytes(k.len()));
                let v = value(n, round * 1000 + i, len);
                h.kv().put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        torn_total += tear(&h, &before, &mut rng);
        let stats = h.crash();
        replaced_total += stats.torn_pages_replaced;
        h.check(&model);
    }
    assert!(torn_total > 50, "the test tears pages: {torn_total}");
    assert_eq!(replaced_total as usize, torn_total, "every torn page came back from a full image");
}

/// Records that were appended but never flushed are lost in a crash, and
/// only those, in log order: an asynchronous store comes back as it was
/// after some prefix of its writes that includes every write before the
/// last flush (splits flush too: the device must not see links to pages it
/// has not heard of).
#[test]
fn an_unflushed_tail_is_lost_in_order() {
    let mut h = Harness::new(1024, 256, MemoryKvLog::new(), KvOptions { sync: false, ..KvOptions::default() });
    let mut model = Model::new();
    for n in 0..300 {
        h.kv().put(&key(n), &value(n, 0, 40)).unwrap();
        model.insert(key(n), value(n, 0, 40));
    }
    ndpdb_kv::KvLog::flush_to(&*h.log, u64::MAX).unwrap();
    for n in 300..600 {
        h.kv().put(&key(n), &value(n, 0, 40)).unwrap();
    }
    let durable = ndpdb_kv::KvLog::durable_lsn(&*h.log);
    assert!(durable < ndpdb_kv::KvLog::end_lsn(&*h.log), "some of the tail is not durable");
    h.crash();
    let kept = h.kv().scan(b"").count() as u64;
    assert!((300..600).contains(&kept), "{kept} entries");
    for n in 300..kept {
        model.insert(key(n), value(n, 0, 40));
    }
    h.check(&model);
}
