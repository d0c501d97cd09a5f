//! A version chain is in commit order, not in transaction-id order: under
//! read committed an older transaction updates the version a younger one
//! committed (as PostgreSQL's read committed does). The integrity check
//! must accept such a chain (it reported "created by N after its
//! successor's M" for every pgbench run, whose transactions are read
//! committed), and every snapshot still sees the right version.

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Store, StoreOptions};
use ndpdb_txn::{Database, Isolation};

#[test]
fn an_older_read_committed_writer_after_a_younger_one_passes_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::create(
        dir.path(),
        Profile::load("u280-nvm").unwrap(),
        Some(32 << 20),
        DeviceOptions::with_clock(ClockKind::Virtual),
    )
    .unwrap();
    let db = Database::new(Store::new(dev, StoreOptions::default()).unwrap());
    let t = db
        .create_table("t", vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, false)])
        .unwrap();
    let mut w = db.begin(Isolation::ReadCommitted);
    w.insert(&t, &[Value::Int(0), Value::Int(100)]).unwrap();
    w.commit().unwrap();
    let mut older = db.begin(Isolation::ReadCommitted);
    let mut younger = db.begin(Isolation::ReadCommitted);
    younger.update(&t, 0, &[Value::Int(0), Value::Int(110)]).unwrap();
    younger.commit().unwrap();
    // The chain: older's version (newest) -> younger's -> the insert's.
    older.update(&t, 0, &[Value::Int(0), Value::Int(130)]).unwrap();
    older.commit().unwrap();
    let mut r = db.begin(Isolation::RepeatableRead);
    assert_eq!(r.get(&t, 0).unwrap().unwrap()[1], Value::Int(130));
    r.commit().unwrap();
    assert_eq!(db.store().check().unwrap().errors, Vec::<String>::new());
}
