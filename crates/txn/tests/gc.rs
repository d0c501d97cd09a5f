//! Garbage collection removes what no snapshot can see, and nothing else.

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode};

fn db(dir: &std::path::Path) -> Database {
    let dev = Device::create(
        dir,
        Profile::load("u280-nvm").unwrap(),
        Some(64 << 20),
        DeviceOptions::with_clock(ClockKind::Virtual),
    )
    .unwrap();
    Database::new(
        Store::new(
            dev,
            StoreOptions { delta_pages: 4, cache_pages: 64, map_delta_max: 256, ..StoreOptions::default() },
        )
        .unwrap(),
    )
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
