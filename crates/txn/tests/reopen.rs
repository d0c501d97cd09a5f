//! A database closed cleanly reopens with its data, its heads, its pinned
//! snapshots and its transaction counter; bad root pages are refused.

use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile};
use ndpdb_format::checkpoint::Root;
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, ROOT_PPN, Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode};

fn device(dir: &std::path::Path, create: bool) -> Device {
    let p = Profile::load("cosmos-plus").unwrap();
    let o = DeviceOptions::with_clock(ClockKind::Virtual);
    if create { Device::create(dir, p, Some(64 << 20), o).unwrap() } else { Device::open(dir, p, o).unwrap() }
}

fn sum(db: &Database, t: &std::sync::Arc<ndpdb_storage::Table>, at: Option<u64>) -> (Option<i128>, Option<i128>) {
    let mut txn = match at {
        Some(id) => db.begin_at(id).unwrap(),
        None => db.begin(Isolation::RepeatableRead),
    };
    let ndp = txn.aggregate(t, Aggregate::Sum, 1, None, ReadMode::Ndp { pes: 1, freshness: Freshness::Ship }).unwrap();
    let host = txn.aggregate(t, Aggregate::Sum, 1, None, ReadMode::Host { workers: 2 }).unwrap();
    txn.commit().unwrap();
    (ndp.value, host.value)
}

#[test]
fn close_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions { delta_pages: 3, cache_pages: 16, map_delta_max: 100, ..StoreOptions::default() };
    let pin;
    {
        let db = Database::new(Store::new(device(dir.path(), true), opts.clone()).unwrap());
        let t = db
            .create_table(
                "t",
                vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, true)],
            )
            .unwrap();
        let mut w = db.begin(Isolation::ReadCommitted);
        for k in 0..1500 {
            w.insert(&t, &[Value::Int(k), Value::Int(2)]).unwrap();
        }
        w.commit().unwrap();
        pin = db.pin_snapshot().unwrap();
        let mut w = db.begin(Isolation::ReadCommitted);
        for k in 0..700 {
            w.update(&t, k, &[Value::Int(k as i64), Value::Int(3)]).unwrap();
        }
        w.delete(&t, 1499).unwrap();
        w.commit().unwrap();
        assert_eq!(sum(&db, &t, None), (Some(3 * 700 + 2 * 799), Some(3 * 700 + 2 * 799)));
        db.checkpoint().unwrap();
    }
    let (store, meta) = Store::open(device(dir.path(), false), opts.clone()).unwrap();
    let db = Database::open(store, meta);
    let t = db.table("t").unwrap();
    assert_eq!(sum(&db, &t, None), (Some(3 * 700 + 2 * 799), Some(3 * 700 + 2 * 799)));
    assert_eq!(sum(&db, &t, Some(pin)), (Some(2 * 1500), Some(2 * 1500)), "the pinned snapshot survives");
    // Writes continue where they left off, and conflict rules still apply.
    let mut w = db.begin(Isolation::RepeatableRead);
    assert!(w.id() > 3, "the transaction counter was restored");
    w.update(&t, 0, &[Value::Int(0), Value::Int(10)]).unwrap();
    assert!(w.delete(&t, 1499).is_err(), "the deleted tuple stays deleted");
    w.commit().unwrap();
    assert_eq!(sum(&db, &t, None).0, Some(3 * 699 + 10 + 2 * 799));
    db.drop_snapshot(pin).unwrap();
    assert!(db.gc().unwrap().versions_removed > 0);
    db.checkpoint().unwrap();
    drop(db);
    // A damaged root slot is reported; the other slot (the checkpoint
    // before) and the log after it give back the same database.
    let damage = |ppn: u64| {
        let dev = device(dir.path(), false);
        let mut qp = dev.queue_pair();
        let mut root = qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
        root[9] ^= 1;
        qp.call(Command::PageWrite { ppn, data: root }).unwrap();
    };
    let newest = (0..2u64)
        .max_by_key(|&p| {
            let dev = device(dir.path(), false);
            let b =
                dev.queue_pair().call(Command::PageRead { ppn: ROOT_PPN + p, host_addr: None }).unwrap().into_data();
            Root::decode(&b).unwrap().map_or(0, |r| r.generation)
        })
        .unwrap();
    damage(ROOT_PPN + newest);
    let (store, meta, rec) = Store::open_with_report(device(dir.path(), false), opts.clone()).unwrap();
    assert!(rec.root_note.as_deref().is_some_and(|n| n.contains("checksum")), "{rec:?}");
    assert!(rec.commits > 0, "commits after the older checkpoint were replayed from the log: {rec:?}");
    let db = Database::open(store, meta);
    let t = db.table("t").unwrap();
    assert_eq!(sum(&db, &t, None).0, Some(3 * 699 + 10 + 2 * 799));
    drop(db);
    // Both slots damaged: refused, and the image is not rewritten.
    damage(ROOT_PPN + (1 - newest));
    let err = Store::open(device(dir.path(), false), opts.clone()).err().unwrap().to_string();
    assert!(err.contains("both root slots") && err.contains("checksum"), "{err}");
}

#[test]
fn an_image_without_a_database_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let err = Store::open(device(dir.path(), true), StoreOptions::default()).err().unwrap().to_string();
    assert!(err.contains("no database"), "{err}");
}
