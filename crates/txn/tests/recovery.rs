//! Crash recovery from the write-ahead log: what committed survives, what did
//! not commit leaves nothing, and a torn log tail is cut off and reported.

use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, ROOT_PPN, Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode};

fn device(dir: &std::path::Path, create: bool) -> Device {
    let p = Profile::load("u280-nvm").unwrap();
    let o = DeviceOptions::with_clock(ClockKind::Virtual);
    if create { Device::create(dir, p, Some(64 << 20), o).unwrap() } else { Device::open(dir, p, o).unwrap() }
}

fn opts() -> StoreOptions {
    StoreOptions { delta_pages: 3, cache_pages: 16, map_delta_max: 100, log_bytes: 1 << 20, ..StoreOptions::default() }
}

fn sums(db: &Database) -> (Option<i128>, Option<i128>, u64) {
    let t = db.table("t").unwrap();
    let mut r = db.begin(Isolation::RepeatableRead);
    let ndp = r.aggregate(&t, Aggregate::Sum, 1, None, ReadMode::Ndp { pes: 4, freshness: Freshness::Ship }).unwrap();
    let host = r.aggregate(&t, Aggregate::Sum, 1, None, ReadMode::Host { workers: 2 }).unwrap();
    let count = r.aggregate(&t, Aggregate::CountStar, 0, None, ReadMode::Host { workers: 2 }).unwrap();
    r.commit().unwrap();
    (ndp.value, host.value, count.value.unwrap_or(0) as u64)
}

/// Builds a database, checkpoints it, commits more, leaves one transaction
/// open, and "crashes" (drops everything without a checkpoint).
fn crashed_database(dir: &std::path::Path) -> (i128, u64) {
    let db = Database::create(Store::new(device(dir, true), opts()).unwrap()).unwrap();
    let t = db
        .create_table("t", vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, false)])
        .unwrap();
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 0..800 {
        w.insert(&t, &[Value::Int(k), Value::Int(1)]).unwrap();
    }
    w.commit().unwrap();
    db.checkpoint().unwrap();
    // After the checkpoint: only the log knows these.
    let mut w = db.begin(Isolation::RepeatableRead);
    for k in 0..300 {
        w.update(&t, k, &[Value::Int(k as i64), Value::Int(5)]).unwrap();
    }
    w.delete(&t, 799).unwrap();
    w.commit().unwrap();
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 800..900 {
        w.insert(&t, &[Value::Int(k), Value::Int(7)]).unwrap();
    }
    w.commit().unwrap();
    let pin = db.pin_snapshot().unwrap();
    assert_eq!(pin, 1);
    // Open, with writes that reached the device's pages, never committed.
    let mut open = db.begin(Isolation::ReadCommitted);
    for k in 300..799 {
        open.update(&t, k, &[Value::Int(k as i64), Value::Int(1000)]).unwrap();
    }
    let expected = (sums(&db).0.unwrap(), sums(&db).2);
    std::mem::forget(open);
    drop(db);
    expected
}

#[test]
fn committed_transactions_survive_a_crash_and_open_ones_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (sum, count) = crashed_database(dir.path());
    assert_eq!((sum, count), (300 * 5 + 499 + 100 * 7, 899));
    let (store, meta, rec) = Store::open_with_report(device(dir.path(), false), opts()).unwrap();
    assert_eq!(rec.commits, 2, "{rec:?}");
    assert!(rec.truncated.is_none(), "{rec:?}");
    let db = Database::open(store, meta);
    assert_eq!(sums(&db), (Some(sum), Some(sum), count));
    assert_eq!(db.pinned_snapshots().len(), 1, "the pinned snapshot was logged");
    let mut at = db.begin_at(1).unwrap();
    let t = db.table("t").unwrap();
    let v = at.aggregate(&t, Aggregate::Sum, 1, None, ReadMode::Host { workers: 1 }).unwrap().value;
    assert_eq!(v, Some(sum));
    at.commit().unwrap();
    // Recovery is repeatable: crash again right away, reopen, same state.
    let mut w = db.begin(Isolation::ReadCommitted);
    assert!(w.id() > 4, "transaction ids continue after the replayed ones");
    w.update(&t, 0, &[Value::Int(0), Value::Int(6)]).unwrap();
    w.commit().unwrap();
    drop(db);
    let (store, meta) = Store::open(device(dir.path(), false), opts()).unwrap();
    let db = Database::open(store, meta);
    assert_eq!(sums(&db).0, Some(sum + 1));
}

/// Flips a byte `back` bytes before the end of the log (as the last open
/// found it); returns the recovery report of opening the damaged image.
fn damage_log_and_reopen(dir: &std::path::Path, back: u64) -> (Database, ndpdb_storage::Recovery) {
    let (store, _, rec) = Store::open_with_report(device(dir, false), opts()).unwrap();
    drop(store);
    let dev = device(dir, false);
    let mut qp = dev.queue_pair();
    let root = (0..2)
        .map(|p| qp.call(Command::PageRead { ppn: ROOT_PPN + p }).unwrap().into_data())
        .max_by_key(|b| u64::from_le_bytes(b[24..32].try_into().unwrap()))
        .unwrap();
    let (start, lsn) =
        (u64::from_le_bytes(root[32..40].try_into().unwrap()), u64::from_le_bytes(root[48..56].try_into().unwrap()));
    let page = u64::from(dev.info().page_bytes);
    let target = lsn + rec.log_bytes - back;
    let ppn = start + target / page;
    let mut data = qp.call(Command::PageRead { ppn }).unwrap().into_data();
    data[(target % page) as usize] ^= 0x5a;
    qp.call(Command::PageWrite { ppn, data }).unwrap();
    drop(qp);
    drop(dev);
    let (store, meta, rec) = Store::open_with_report(device(dir, false), opts()).unwrap();
    (Database::open(store, meta), rec)
}

#[test]
fn a_torn_log_tail_is_cut_off_and_reported() {
    // The log after the checkpoint holds: commit A (300 updates, a delete),
    // commit B (100 inserts, 3336 bytes), the pinned snapshot (40 bytes).
    let dir = tempfile::tempdir().unwrap();
    let (sum, count) = crashed_database(dir.path());
    let (db, rec) = damage_log_and_reopen(dir.path(), 10);
    assert!(rec.truncated.as_deref().is_some_and(|w| w.contains("checksum")), "{rec:?}");
    assert_eq!(rec.commits, 2);
    assert_eq!(sums(&db), (Some(sum), Some(sum), count));
    assert!(db.pinned_snapshots().is_empty(), "the torn pin record was cut off");
    drop(db);

    let dir = tempfile::tempdir().unwrap();
    crashed_database(dir.path());
    let (db, rec) = damage_log_and_reopen(dir.path(), 40 + 100);
    assert!(rec.truncated.is_some(), "{rec:?}");
    assert_eq!(rec.commits, 1, "commit B and everything after it are cut off");
    assert_eq!(sums(&db), (Some(sum - 700), Some(sum - 700), count - 100));
}

#[test]
fn the_integrity_check_passes_after_recovery_and_names_a_corrupt_page() {
    let dir = tempfile::tempdir().unwrap();
    crashed_database(dir.path());
    let (store, meta) = Store::open(device(dir.path(), false), opts()).unwrap();
    let db = Database::open(store, meta);
    let r = db.store().check().unwrap();
    assert_eq!(r.errors, Vec::<String>::new());
    assert!(r.versions >= 900 + 300 && r.pages > 0, "{r:?}");
    db.checkpoint().unwrap();
    drop(db);
    // Flip a byte in the middle of the first heap page.
    let (store, meta) = Store::open(device(dir.path(), false), opts()).unwrap();
    let t = store.table("t").unwrap();
    let rid = t.head(10).unwrap().rid;
    let ppn = store.physical_page(rid.lpn()).unwrap();
    drop((store, meta));
    let dev = device(dir.path(), false);
    let mut qp = dev.queue_pair();
    let mut data = qp.call(Command::PageRead { ppn }).unwrap().into_data();
    data[100] ^= 0xff;
    qp.call(Command::PageWrite { ppn, data }).unwrap();
    drop(qp);
    drop(dev);
    let (store, _) = Store::open(device(dir.path(), false), opts()).unwrap();
    let r = store.check().unwrap();
    let page = format!("page {}", rid.lpn());
    assert!(r.errors.iter().any(|e| e.contains(&page)), "{:?}", r.errors);
}
