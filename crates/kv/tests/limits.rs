//! Bad input and exhausted resources: each gets an error that says what to
//! do, and loses nothing.

mod common;

use common::{Harness, Model, key, value};
use ndpdb_kv::{KvError, KvOptions, MemoryKvLog};

#[test]
fn values_up_to_the_limit_are_stored_and_longer_ones_refused_with_it() {
    let h = Harness::new(16384, 16, MemoryKvLog::new(), KvOptions::default());
    let k = [7u8; 24];
    let max = h.kv().max_value_bytes(24);
    assert_eq!(max, 4038, "a quarter of a 16 KiB page, less the slot and the key");
    for len in [2048, max] {
        h.kv().put(&k, &vec![1; len]).unwrap();
        assert_eq!(h.kv().get(&k).unwrap().unwrap().len(), len);
    }
    let err = h.kv().put(&k, &vec![1; max + 1]).unwrap_err();
    assert!(matches!(err, KvError::ValueTooLong { len: 4039, max: 4038, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("at most 4038 bytes") && msg.contains("16384-byte pages"), "{msg}");
    assert_eq!(h.kv().get(&k).unwrap().unwrap().len(), max, "the refused put changed nothing");
    assert!(matches!(h.kv().update(&k, &vec![1; 5000]), Err(KvError::ValueTooLong { .. })));

    let long_key = vec![1u8; h.kv().max_key_bytes() + 1];
    let msg = h.kv().put(&long_key, b"v").unwrap_err().to_string();
    assert!(msg.contains("keys hold at most 1019 bytes"), "{msg}");
    assert!(h.kv().get(&long_key).unwrap().is_none());
}

#[test]
fn a_full_pool_is_an_error_not_a_wait_and_loses_nothing() {
    let frames = 8;
    let h = Harness::new(1024, frames, MemoryKvLog::new(), KvOptions::default());
    let mut model = Model::new();
    for n in 0..400 {
        h.kv().put(&key(n), &value(n, 0, 50)).unwrap();
        model.insert(key(n), value(n, 0, 50));
    }
    let pool = h.kv().pool().clone();
    assert!(pool.pages() > frames as u64 * 2);
    // Pin every frame with pages of the tree other than the root.
    let pinned: Vec<_> =
        (0..pool.pages()).filter(|&p| p != h.kv().root()).take(frames).map(|p| pool.fix_shared(p).unwrap()).collect();
    let err = std::thread::scope(|s| s.spawn(|| h.kv().put(&key(1000), b"x").unwrap_err()).join().unwrap());
    assert!(err.is_pool_full(), "{err:?}");
    assert!(err.to_string().contains("release guards"), "{err}");
    let err = std::thread::scope(|s| s.spawn(|| h.kv().get(&key(5)).unwrap_err()).join().unwrap());
    assert!(err.is_pool_full(), "{err:?}");
    drop(pinned);
    h.kv().put(&key(1000), b"x").unwrap();
    model.insert(key(1000), b"x".to_vec());
    h.check(&model);
}

#[test]
fn a_bounded_log_checkpoints_as_it_fills_and_refuses_what_cannot_fit() {
    let mut h = Harness::new(1024, 16, MemoryKvLog::with_capacity(64 << 10), KvOptions::default());
    let mut model = Model::new();
    for n in 0..3000 {
        let v = value(n, 1, (n % 150) as usize);
        h.kv().put(&key(n % 700), &v).unwrap();
        model.insert(key(n % 700), v);
    }
    assert!(h.kv().stats().checkpoints > 5, "{:?}", h.kv().stats());
    h.crash();
    h.check(&model);

    // A log smaller than one write's worst case: refused before anything
    // changed.
    let h = Harness::new(1024, 16, MemoryKvLog::with_capacity(16 << 10), KvOptions::default());
    h.kv().put(b"a", b"1").unwrap_or_else(|e| panic!("{e}"));
    let tiny = Harness::new(4096, 16, MemoryKvLog::with_capacity(8 << 10), KvOptions::default());
    let err = tiny.kv().put(b"a", b"1").unwrap_err();
    assert!(matches!(err, KvError::LogFull { .. }), "{err:?}");
    assert!(err.to_string().contains("take a checkpoint"), "{err}");
    assert_eq!(tiny.kv().get(b"a").unwrap(), None);
}

/// A node damaged on the medium: reads and writes that reach it fail with
/// an error naming its page (a link to a page on the wrong level included:
/// no descent runs in a circle), and the store serves the rest.
#[test]
fn a_corrupt_node_is_an_error_naming_its_page() {
    let mut h = Harness::new(1024, 64, MemoryKvLog::new(), KvOptions::default());
    for n in 0..2000 {
        h.kv().put(&key(n), &value(n, 0, 40)).unwrap();
    }
    h.restart();
    let root = h.kv().root();
    let shape = h.kv().check().unwrap();
    assert!(shape.nodes_per_level.len() >= 3);
    // The root's lowest child: make its own lowest link point back to the root.
    let page = h.io.page(root).unwrap();
    let child = u64::from_le_bytes(page[40..48].try_into().unwrap());
    let mut bad = h.io.page(child).unwrap();
    bad[40..48].copy_from_slice(&root.to_le_bytes());
    h.io.put(child, bad);
    // And garble the slots of a leaf on the far right. Bounds checks catch
    // what a read touches; a search that compares only the garbled heads
    // may answer "absent" for the leaf's keys (pages carry no checksum).
    let far = (0..ndpdb_bufmgr::PageIo::pages(&*h.io)).rev().find(|&p| h.io.page(p).unwrap()[19] == 1).unwrap();
    let mut bad = h.io.page(far).unwrap();
    let node = ndpdb_format::btree::Node::parse(&bad, far).unwrap();
    let in_far: Vec<Vec<u8>> = (0..node.count()).map(|i| node.key(i).unwrap().to_vec()).collect();
    bad[64..200].fill(0xee);
    h.io.put(far, bad);
    h.reopen();
    let err = h.kv().get(&key(0)).unwrap_err().to_string();
    assert!(err.contains(&format!("page {root}")) && err.contains("level"), "{err}");
    let err = h.kv().put(&key(0), b"x").unwrap_err().to_string();
    assert!(err.contains(&format!("page {root}")), "{err}");
    let err = h.kv().check().unwrap_err().to_string();
    assert!(err.contains("page"), "{err}");
    let (mut served, mut refused) = (0, 0);
    for n in 0..2000 {
        match h.kv().get(&key(n)) {
            Ok(Some(v)) => {
                assert_eq!(v, value(n, 0, 40));
                served += 1;
            }
            Ok(None) => assert!(in_far.contains(&key(n)), "key {n} lost outside the damaged leaf"),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains(&format!("page {far}")) || e.contains(&format!("page {root}")), "{e}");
                refused += 1;
            }
        }
    }
    assert!(served > 1000 && refused > 0, "{served} served, {refused} refused");
}
