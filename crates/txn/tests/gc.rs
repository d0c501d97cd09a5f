//! Garbage collection removes what no snapshot can see, and nothing else.

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode};

fn opts() -> StoreOptions {
    StoreOptions { delta_pages: 4, cache_pages: 64, map_delta_max: 256, ..StoreOptions::default() }
}

fn db(dir: &std::path::Path) -> Database {
    let dev = Device::create(
        dir,
        Profile::load("u280-nvm").unwrap(),
        Some(64 << 20),
        DeviceOptions::with_clock(ClockKind::Virtual),
    )
    .unwrap();
    Database::new(Store::new(dev, opts()).unwrap())
}

#[test]
fn gc_keeps_what_open_snapshots_see_and_shortens_chains() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let t = db
        .create_table("t", vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, false)])
        .unwrap();
    let n = 2000u64;
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 0..n {
        w.insert(&t, &[Value::Int(k as i64), Value::Int(1)]).unwrap();
    }
    w.commit().unwrap();
    let mut old = db.begin(Isolation::RepeatableRead);
    let sum = |txn: &mut ndpdb_txn::Txn<'_>, mode| txn.aggregate(&t, Aggregate::Sum, 1, None, mode).unwrap();
    let ndp = ReadMode::Ndp { pes: 8, freshness: Freshness::Ship };
    assert_eq!(sum(&mut old, ndp).value, Some(n as i128));
    for round in 2..6 {
        let mut w = db.begin(Isolation::ReadCommitted);
        for k in 0..n {
            w.update(&t, k, &[Value::Int(k as i64), Value::Int(round)]).unwrap();
        }
        w.commit().unwrap();
    }
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 0..100 {
        w.delete(&t, k).unwrap();
    }
    w.commit().unwrap();
    // The old snapshot pins everything: GC may remove nothing it sees.
    db.gc().unwrap();
    let before = sum(&mut old, ndp);
    assert_eq!(before.value, Some(n as i128));
    assert_eq!(sum(&mut old, ReadMode::Host { workers: 2 }).value, Some(n as i128));
    assert_eq!(before.partial.visited, 5 * n + 100, "the old snapshot still walks every chain to its end");
    old.commit().unwrap();
    // Nothing pins old versions now.
    let stats = db.gc().unwrap();
    assert_eq!(stats.tuples_removed, 100);
    assert_eq!(stats.versions_removed, 100 * 6 + (n - 100) * 4);
    assert!(stats.pages_unmapped > 0 && stats.pages_rewritten > 0, "{stats:?}");
    let mut now = db.begin(Isolation::RepeatableRead);
    let after = sum(&mut now, ndp);
    assert_eq!(after.value, Some(5 * (n as i128 - 100)));
    assert_eq!(after.partial.visited, n - 100, "one version per live tuple");
    let host = sum(&mut now, ReadMode::Host { workers: 2 });
    assert_eq!((host.value, host.partial.visited), (after.value, n - 100));
    let flushed = now
        .aggregate(&t, Aggregate::CountStar, 0, None, ReadMode::Ndp { pes: 3, freshness: Freshness::Flush })
        .unwrap();
    assert_eq!(flushed.value, Some(n as i128 - 100));
    // A second collection finds nothing more.
    assert_eq!(db.gc().unwrap().versions_removed, 0);
}

#[test]
fn gc_alongside_writers_keeps_their_pages() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let t = db
        .create_table("t", vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, false)])
        .unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            for batch in 0..40 {
                let mut w = db.begin(Isolation::ReadCommitted);
                for k in 0..100 {
                    w.insert(&t, &[Value::Int(batch * 100 + k), Value::Int(1)]).unwrap();
                }
                w.commit().unwrap();
            }
        });
        s.spawn(|| {
            for _ in 0..40 {
                db.gc().unwrap();
            }
        });
    });
    let mut r = db.begin(Isolation::RepeatableRead);
    for mode in [ReadMode::Host { workers: 2 }, ReadMode::Ndp { pes: 4, freshness: Freshness::Ship }] {
        assert_eq!(r.aggregate(&t, Aggregate::Sum, 1, None, mode).unwrap().value, Some(4000));
    }
}

/// Random updates with GC after each round: GC alone unmaps a page only
/// when nothing on it is reachable, which random updates rarely leave, so
/// compaction moves the last live tuples off sparse pages. The heap stays
/// bounded, every value stays right on both read paths, and the image
/// checks clean and reopens the same. With a transaction open, compaction
/// waits for a quiet moment.
#[test]
fn compaction_keeps_the_heap_bounded_under_random_updates() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let t = db
        .create_table("t", vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, false)])
        .unwrap();
    let n = 3000usize;
    let mut model = vec![0i64; n];
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 0..n {
        w.insert(&t, &[Value::Int(k as i64), Value::Int(0)]).unwrap();
    }
    w.commit().unwrap();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut pages, mut moved) = (Vec::new(), 0);
    for round in 0..40 {
        let mut w = db.begin(Isolation::ReadCommitted);
        for _ in 0..150 {
            let (k, v) = (next() as usize % n, (next() % 1000) as i64);
            w.update(&t, k as u64, &[Value::Int(k as i64), Value::Int(v)]).unwrap();
            model[k] = v;
        }
        w.commit().unwrap();
        if round == 20 {
            // An open transaction: GC runs, compaction waits.
            let open = db.begin(Isolation::RepeatableRead);
            assert_eq!(db.gc().unwrap().versions_moved, 0);
            open.commit().unwrap();
        }
        moved += db.gc().unwrap().versions_moved;
        pages.push(db.store().check().unwrap().pages);
    }
    assert!(moved > 0, "compaction moved tuples off sparse pages");
    let (early, late) = (pages[4], pages[39]);
    assert!(late <= early + early / 4, "the heap stays bounded: {pages:?}");
    let expect: i128 = model.iter().map(|&v| i128::from(v)).sum();
    let sums = |db: &Database| {
        let t = db.table("t").unwrap();
        let mut r = db.begin(Isolation::RepeatableRead);
        let ndp = r.aggregate(&t, Aggregate::Sum, 1, None, ReadMode::Ndp { pes: 8, freshness: Freshness::Ship });
        let host = r.aggregate(&t, Aggregate::Sum, 1, None, ReadMode::Host { workers: 2 });
        let rows: Vec<i64> = (0..n as u64)
            .map(|k| match r.get(&t, k).unwrap().unwrap()[1] {
                Value::Int(v) => v,
                ref other => panic!("{other:?}"),
            })
            .collect();
        r.commit().unwrap();
        (ndp.unwrap().value, host.unwrap().value, rows)
    };
    assert_eq!(sums(&db), (Some(expect), Some(expect), model.clone()));
    assert_eq!(db.store().check().unwrap().error_count(), 0);
    db.checkpoint().unwrap();
    drop(t);
    drop(db);
    let dev =
        Device::open(dir.path(), Profile::load("u280-nvm").unwrap(), DeviceOptions::with_clock(ClockKind::Virtual))
            .unwrap();
    let (store, meta) = Store::open(dev, opts()).unwrap();
    let db = Database::open(store, meta);
    assert_eq!(sums(&db), (Some(expect), Some(expect), model));
    assert_eq!(db.store().check().unwrap().error_count(), 0);
}

/// GC rewrites and unmaps heap pages while writers flush map pages and
/// checkpoints run: the L2P and VID map pages on the device (what NDP calls
/// read, also after a restart) must agree with the host's maps, except for
/// entries not written yet, and a crash must reopen to a state the
/// integrity check passes. A flush used to forget entries remapped while it
/// ran, two flushes of one page could install the older copy, and a
/// checkpoint recorded L2P pages that a remap after its flush had made
/// stale.
#[test]
fn gc_racing_map_flushes_and_checkpoints_keeps_the_device_maps_right() {
    // Several short races, each ending in a reopen: a remap between a
    // checkpoint's L2P flush and its blob is seen only after one.
    for _ in 0..4 {
        race_and_reopen(6);
    }
}

fn race_and_reopen(rounds: i64) {
    use std::sync::atomic::{AtomicBool, Ordering};
    /// Stops the GC and checkpoint threads when the writer ends, also when
    /// an assertion fails (else the scope waits for them forever).
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions { delta_pages: 2, cache_pages: 16, map_delta_max: 16, ..StoreOptions::default() };
    let dev = Device::create(
        dir.path(),
        Profile::load("u280-nvm").unwrap(),
        Some(64 << 20),
        DeviceOptions::with_clock(ClockKind::Virtual),
    )
    .unwrap();
    let db = Database::new(Store::new(dev, opts.clone()).unwrap());
    let t = db
        .create_table("t", vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, false)])
        .unwrap();
    let n = 1000u64;
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 0..n {
        w.insert(&t, &[Value::Int(k as i64), Value::Int(0)]).unwrap();
    }
    w.commit().unwrap();
    let done = AtomicBool::new(false);
    // The integrity check compares states it copies one after the other,
    // so it runs while no GC or checkpoint does (they hold this shared).
    let quiet = std::sync::RwLock::new(());
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                let _g = quiet.read().unwrap();
                db.gc().unwrap();
            }
        });
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                {
                    let _g = quiet.read().unwrap();
                    db.checkpoint().unwrap();
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        let _stop = Stop(&done);
        for round in 1..=rounds {
            for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
                let mut w = db.begin(Isolation::ReadCommitted);
                for &k in chunk {
                    w.update(&t, k, &[Value::Int(k as i64), Value::Int(round)]).unwrap();
                }
                w.commit().unwrap();
            }
            let _g = quiet.write().unwrap();
            assert_eq!(db.store().check().unwrap().errors, Vec::<String>::new(), "round {round}");
        }
    });
    let expected = (n as i128) * rounds as i128;
    drop(t);
    drop(db);
    let dev =
        Device::open(dir.path(), Profile::load("u280-nvm").unwrap(), DeviceOptions::with_clock(ClockKind::Virtual))
            .unwrap();
    let (store, meta) = Store::open(dev, opts).unwrap();
    assert_eq!(store.check().unwrap().errors, Vec::<String>::new(), "after the crash");
    let db = Database::open(store, meta);
    let t = db.table("t").unwrap();
    let mut r = db.begin(Isolation::RepeatableRead);
    let ndp = ReadMode::Ndp { pes: 4, freshness: Freshness::Ship };
    assert_eq!(r.aggregate(&t, Aggregate::Sum, 1, None, ndp).unwrap().value, Some(expected));
}
