//! Crash recovery from the write-ahead log: what committed survives, what did
//! not commit leaves nothing, and a torn log tail is cut off and reported.

use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile};
use ndpdb_format::checkpoint::Root;
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, ROOT_PPN, Store, StoreError, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode};

fn device(dir: &std::path::Path, create: bool) -> Device {
    device_of(dir, create, 64 << 20)
}

/// A u280-nvm device of `bytes` (when created) in `dir`.
fn device_of(dir: &std::path::Path, create: bool, bytes: u64) -> Device {
    let p = Profile::load("u280-nvm").unwrap();
    let o = DeviceOptions::with_clock(ClockKind::Virtual);
    if create { Device::create(dir, p, Some(bytes), o).unwrap() } else { Device::open(dir, p, o).unwrap() }
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

/// The log's first physical page, the newest checkpoint's position in it,
/// and how many bytes the log holds after that (as an open finds them).
fn log_extent(dir: &std::path::Path) -> (u64, u64, u64) {
    let (store, _, rec) = Store::open_with_report(device(dir, false), opts()).unwrap();
    drop(store);
    let dev = device(dir, false);
    let mut qp = dev.queue_pair();
    let root = (0..2)
        .filter_map(|p| {
            Root::decode(&qp.call(Command::PageRead { ppn: ROOT_PPN + p, host_addr: None }).unwrap().into_data())
                .unwrap()
        })
        .max_by_key(|r| r.generation)
        .unwrap();
    (root.log_start, root.log_lsn, rec.log_bytes)
}

/// Flips the log byte at LSN `target` of a log that starts at physical
/// page `start` (and has not wrapped around its ring).
fn flip_log_byte(dir: &std::path::Path, start: u64, target: u64) {
    let dev = device(dir, false);
    let page = u64::from(dev.info().page_bytes);
    let ppn = start + target / page;
    let mut qp = dev.queue_pair();
    let mut data = qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
    data[(target % page) as usize] ^= 0x5a;
    qp.call(Command::PageWrite { ppn, data }).unwrap();
}

/// Flips a byte `back` bytes before the end of the log; returns the
/// recovery report of opening the damaged image.
fn damage_log_and_reopen(dir: &std::path::Path, back: u64) -> (Database, ndpdb_storage::Recovery) {
    let (start, lsn, bytes) = log_extent(dir);
    flip_log_byte(dir, start, lsn + bytes - back);
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
    assert_eq!((rec.commits, rec.lost.clone()), (2, None));
    assert!(rec.ring_bytes_read > 0, "the ring was searched for records past the tail");
    assert_eq!(sums(&db), (Some(sum), Some(sum), count));
    assert!(db.pinned_snapshots().is_empty(), "the torn pin record was cut off");
}

/// Defect 2 of issue 15: a damaged record with valid records of the same
/// log after it is not a torn tail. The open is refused, naming the commit
/// that would be lost; `accept_loss` opens without it (and without the
/// damaged one), says so, and erases both from the ring, so that later
/// opens (and a commit made meanwhile) see one consistent log.
#[test]
fn damage_in_the_middle_of_the_log_is_refused_and_accept_loss_drops_what_follows() {
    let dir = tempfile::tempdir().unwrap();
    let (sum, count) = crashed_database(dir.path());
    let (start, lsn, _) = log_extent(dir.path());
    flip_log_byte(dir.path(), start, lsn + 40); // commit A's payload
    let image = std::fs::read(dir.path().join("device.img")).unwrap();
    let err = Store::open_with_report(device(dir.path(), false), opts()).err().expect("refused");
    let StoreError::LogDamaged(loss) = &err else { panic!("{err}") };
    assert_eq!(loss.stop_lsn, lsn, "{err}");
    assert_eq!(loss.commits().len(), 1, "commit B follows the damaged commit A: {err}");
    assert_eq!(loss.dropped.len(), 2, "commit B and the pin: {err}");
    assert_eq!(loss.damaged.len(), 1, "{err}");
    let text = err.to_string();
    assert!(text.contains(&format!("stops at LSN {lsn}")) && text.contains("--accept-loss"), "{text}");
    assert!(std::fs::read(dir.path().join("device.img")).unwrap() == image, "a refused open writes nothing");

    let accept = StoreOptions { accept_loss: true, ..opts() };
    let (store, meta, rec) = Store::open_with_report(device(dir.path(), false), accept.clone()).unwrap();
    assert_eq!(rec.lost.as_ref().map(|l| l.commits()), Some(loss.commits()), "{rec:?}");
    assert_eq!(rec.commits, 0);
    let db = Database::open(store, meta);
    assert_eq!(sums(&db), (Some(800), Some(800), 800), "the checkpoint's state: commits A and B are gone");
    assert_ne!((sum, count), (800, 800));
    // A commit after accepting the loss takes the dropped records' LSNs;
    // after a crash, the log holds it and nothing of what was dropped.
    let t = db.table("t").unwrap();
    let mut w = db.begin(Isolation::ReadCommitted);
    w.update(&t, 0, &[Value::Int(0), Value::Int(2)]).unwrap();
    w.commit().unwrap();
    drop(db);
    let (store, meta, rec) = Store::open_with_report(device(dir.path(), false), opts()).unwrap();
    assert_eq!((rec.commits, rec.lost, rec.truncated), (1, None, None));
    assert_eq!(sums(&Database::open(store, meta)), (Some(801), Some(801), 800));
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
    let mut data = qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
    data[100] ^= 0xff;
    qp.call(Command::PageWrite { ppn, data }).unwrap();
    drop(qp);
    drop(dev);
    let (store, _) = Store::open(device(dir.path(), false), opts()).unwrap();
    let r = store.check().unwrap();
    let page = format!("page {}", rid.lpn());
    assert!(r.errors.iter().any(|e| e.contains(&page)), "{:?}", r.errors);
}

/// Table `t (k, v)` with `rows` committed tuples `(k, v)`.
fn table_with(db: &Database, rows: i64, v: i64) -> std::sync::Arc<ndpdb_storage::Table> {
    let t = db
        .create_table("t", vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, false)])
        .unwrap();
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 0..rows {
        w.insert(&t, &[Value::Int(k), Value::Int(v)]).unwrap();
    }
    w.commit().unwrap();
    t
}

fn host_sum(tx: &mut ndpdb_txn::Txn<'_>, t: &std::sync::Arc<ndpdb_storage::Table>) -> Option<i128> {
    tx.aggregate(t, Aggregate::Sum, 1, None, ReadMode::Host { workers: 1 }).unwrap().value
}

/// A checkpoint taken while transactions are open records committed state
/// only: after a crash, what committed after it comes back from the log,
/// and what never committed leaves nothing.
#[test]
fn a_checkpoint_with_open_transactions_records_committed_state_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(Store::new(device(dir.path(), true), opts()).unwrap()).unwrap();
    let t = table_with(&db, 800, 1);
    let mut reader = db.begin(Isolation::RepeatableRead);
    assert_eq!(host_sum(&mut reader, &t), Some(800));
    let mut committing = db.begin(Isolation::ReadCommitted);
    for k in 0..300 {
        committing.update(&t, k, &[Value::Int(k as i64), Value::Int(5)]).unwrap();
    }
    committing.insert(&t, &[Value::Int(800), Value::Int(100)]).unwrap();
    let mut never = db.begin(Isolation::ReadCommitted);
    for k in 300..400 {
        never.update(&t, k, &[Value::Int(k as i64), Value::Int(9)]).unwrap();
    }
    never.delete(&t, 400).unwrap();
    never.insert(&t, &[Value::Int(801), Value::Int(1000)]).unwrap();
    db.checkpoint().expect("a checkpoint no longer waits for open transactions");
    committing.commit().unwrap();
    assert_eq!(host_sum(&mut reader, &t), Some(800), "the reader keeps its snapshot");
    let expected = sums(&db);
    assert_eq!(expected, (Some(300 * 5 + 500 + 100), Some(300 * 5 + 500 + 100), 801));
    std::mem::forget(never);
    std::mem::forget(reader);
    drop(db);

    let (store, meta, rec) = Store::open_with_report(device(dir.path(), false), opts()).unwrap();
    assert_eq!(rec.commits, 1, "only the commit after the checkpoint is replayed: {rec:?}");
    let db = Database::open(store, meta);
    assert_eq!(sums(&db), expected);
    let r = db.store().check().unwrap();
    assert_eq!(r.errors, Vec::<String>::new());
    // The device's VID map holds committed heads, not the lost transaction's.
    let mut tx = db.begin(Isolation::RepeatableRead);
    let ndp = ReadMode::Ndp { pes: 4, freshness: Freshness::Flush };
    assert_eq!(tx.aggregate(&t_of(&db), Aggregate::Sum, 1, None, ndp).unwrap().value, expected.0);
    tx.commit().unwrap();
}

fn t_of(db: &Database) -> std::sync::Arc<ndpdb_storage::Table> {
    db.table("t").unwrap()
}

/// A transaction held open (a long analysis) no longer holds the log:
/// checkpoints run past it, and the ring never fills.
#[test]
fn a_long_open_reader_does_not_hold_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(Store::new(device(dir.path(), true), opts()).unwrap()).unwrap();
    let t = table_with(&db, 200, 1);
    let mut reader = db.begin(Isolation::RepeatableRead);
    assert_eq!(host_sum(&mut reader, &t), Some(200));
    let (_, capacity) = db.store().wal_usage();
    let update_all = |round: i64| {
        let mut w = db.begin(Isolation::ReadCommitted);
        for k in 0..200 {
            w.update(&t, k, &[Value::Int(k as i64), Value::Int(round)]).unwrap();
        }
        w.commit().expect("the log never fills");
    };
    let before = db.store().wal_usage().0;
    update_all(1);
    let per_round = db.store().wal_usage().0 - before;
    // Rounds that log four times the ring, past the open reader.
    let rounds = 4 * capacity / per_round + 1;
    for round in 2..=rounds as i64 {
        update_all(round);
        assert!(db.store().wal_usage().0 <= capacity / 2 + per_round, "checkpoints keep the log short");
    }
    let round = rounds as i64;
    assert_eq!(host_sum(&mut reader, &t), Some(200), "the reader still sees its snapshot");
    std::mem::forget(reader);
    let expected = sums(&db);
    assert_eq!(expected.0, Some(200 * i128::from(round)));
    drop(db);
    let (store, meta) = Store::open(device(dir.path(), false), opts()).unwrap();
    let db = Database::open(store, meta);
    assert_eq!(sums(&db), expected);
    assert_eq!(db.store().check().unwrap().errors, Vec::<String>::new());
}

/// Checkpoints racing two writers: every checkpoint holds committed state
/// only, whatever the writers were doing, so after a crash the committed
/// transfers are all there and the open ones are not.
#[test]
fn checkpoints_racing_writers_keep_committed_state_only() {
    const ACCOUNTS: i64 = 64;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(Store::new(device(dir.path(), true), opts()).unwrap()).unwrap();
    let t = table_with(&db, ACCOUNTS, 100);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let barrier = std::sync::Barrier::new(2);
    let checkpoints = std::thread::scope(|s| {
        for worker in 0..2u64 {
            let (db, t, done, barrier) = (&db, &t, &done, &barrier);
            s.spawn(move || {
                let mut x = (worker + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let transfer =
                    |tx: &mut ndpdb_txn::Txn<'_>, a: u64, b: u64, d: i64| -> Result<(), ndpdb_txn::TxnError> {
                        for (id, delta) in [(a, -d), (b, d)] {
                            let Value::Int(v) = tx.get(t, id)?.expect("accounts stay")[1] else { panic!("balance") };
                            tx.update(t, id, &[Value::Int(id as i64), Value::Int(v + delta)])?;
                        }
                        Ok(())
                    };
                let mut committed = 0;
                while committed < 150 {
                    let (a, b, d) = (next() % ACCOUNTS as u64, next() % ACCOUNTS as u64, (next() % 10) as i64);
                    if a == b {
                        continue;
                    }
                    // Repeatable read: a transfer based on a stale balance fails
                    // (read committed would lose updates, as PostgreSQL's does).
                    let mut tx = db.begin(Isolation::RepeatableRead);
                    if transfer(&mut tx, a, b, d).and_then(|()| tx.commit()).is_ok() {
                        committed += 1;
                    }
                }
                // One transfer left open at the crash, half of it written
                // (once both are done: its lock is never released).
                barrier.wait();
                let mut tx = db.begin(Isolation::ReadCommitted);
                let a = worker * 2;
                let Value::Int(v) = tx.get(t, a).unwrap().unwrap()[1] else { panic!("balance") };
                tx.update(t, a, &[Value::Int(a as i64), Value::Int(v - 1_000_000)]).unwrap();
                std::mem::forget(tx);
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        // Pace the checkpoints: each costs map pages until a later one frees them.
        let mut n = 0;
        while done.load(std::sync::atomic::Ordering::SeqCst) < 2 && n < 200 {
            db.checkpoint().unwrap();
            n += 1;
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        db.checkpoint().unwrap();
        n + 1
    });
    assert!(checkpoints > 1, "checkpoints ran while the writers did");
    let mut r = db.begin(Isolation::RepeatableRead);
    let balances: Vec<i64> = (0..ACCOUNTS as u64)
        .map(|k| match r.get(&t, k).unwrap().unwrap()[1] {
            Value::Int(v) => v,
            _ => panic!("balance"),
        })
        .collect();
    r.commit().unwrap();
    assert_eq!(balances.iter().sum::<i64>(), 100 * ACCOUNTS, "committed transfers conserve money");
    drop(db);

    let (store, meta) = Store::open(device(dir.path(), false), opts()).unwrap();
    let db = Database::open(store, meta);
    let t = db.table("t").unwrap();
    let mut r = db.begin(Isolation::RepeatableRead);
    for (k, &v) in balances.iter().enumerate() {
        assert_eq!(r.get(&t, k as u64).unwrap().unwrap()[1], Value::Int(v), "account {k} after recovery");
    }
    let ndp = ReadMode::Ndp { pes: 4, freshness: Freshness::Ship };
    assert_eq!(r.aggregate(&t, Aggregate::Sum, 1, None, ndp).unwrap().value, Some(i128::from(100 * ACCOUNTS)));
    r.commit().unwrap();
    assert_eq!(db.store().check().unwrap().errors, Vec::<String>::new());
}

/// A checkpoint's blob pages are free once the next checkpoint is durable:
/// without reuse these checkpoints (about 45 pages each) would need more
/// pages than the 64 MiB image has.
#[test]
fn repeated_checkpoints_reuse_their_pages() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(Store::new(device(dir.path(), true), opts()).unwrap()).unwrap();
    let t = table_with(&db, 20_000, 1);
    let pages = u64::from(db.store().device().info().page_bytes);
    let total = db.store().device().info().capacity_bytes / pages;
    let mut v = 1;
    for i in 0..250 {
        if i % 25 == 0 {
            v += 1;
            let mut w = db.begin(Isolation::ReadCommitted);
            w.update(&t, 7, &[Value::Int(7), Value::Int(v)]).unwrap();
            w.commit().unwrap();
        }
        db.checkpoint().unwrap_or_else(|e| panic!("checkpoint {i} of {total}-page image: {e}"));
    }
    let expected = sums(&db);
    assert_eq!(expected.0, Some(19_999 + i128::from(v)));
    drop(db);
    let (store, meta) = Store::open(device(dir.path(), false), opts()).unwrap();
    let db = Database::open(store, meta);
    assert_eq!(sums(&db), expected);
    assert_eq!(db.store().check().unwrap().errors, Vec::<String>::new());
    // And after a restart, the checkpoints go on.
    db.checkpoint().unwrap();
}

/// Pages that writes, GC and map flushes give up are written again once a
/// durable checkpoint no longer references them and no reader that could
/// know them runs. Rounds of money transfers, GC and a checkpoint reuse
/// more pages than the 64 MiB image has, while a reader keeps running NDP
/// and host sums beside them, each of which must see the conserved total
/// (a call reading a reused page would not); crashes in between come back
/// with every committed transfer, find the pages the crashed process had
/// given up free again, and the integrity check passes.
#[test]
fn superseded_pages_are_reused_and_survive_crashes() {
    const ACCOUNTS: i64 = 20_000;
    const ROUNDS: u64 = 60;
    let dir = tempfile::tempdir().unwrap();
    let small = |create: bool| device_of(dir.path(), create, 8 << 20);
    let mut db = Database::create(Store::new(small(true), opts()).unwrap()).unwrap();
    let mut t = table_with(&db, ACCOUNTS, 100);
    let total = i128::from(100 * ACCOUNTS);
    let pages = db.store().device().info().capacity_bytes / u64::from(db.store().device().info().page_bytes);
    let mut balances = vec![100i64; ACCOUNTS as usize];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut reused = 0;
    for round in 0..ROUNDS {
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let (db, t, stop) = (&db, &t, &stop);
            s.spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let mut r = db.begin(Isolation::RepeatableRead);
                    let ndp = ReadMode::Ndp { pes: 2, freshness: Freshness::Ship };
                    let sum = r.aggregate(t, Aggregate::Sum, 1, None, ndp).unwrap().value;
                    assert_eq!(sum, Some(total), "an NDP sum in round {round}");
                    assert_eq!(host_sum(&mut r, t), Some(total), "a host sum in round {round}");
                    r.commit().unwrap();
                }
            });
            let mut w = db.begin(Isolation::ReadCommitted);
            for _ in 0..300 {
                let (a, b, d) = (next() % ACCOUNTS as u64, next() % ACCOUNTS as u64, (next() % 10) as i64);
                if a == b {
                    continue;
                }
                for (id, delta) in [(a, -d), (b, d)] {
                    balances[id as usize] += delta;
                    w.update(t, id, &[Value::Int(id as i64), Value::Int(balances[id as usize])]).unwrap();
                }
            }
            w.commit().unwrap();
            db.gc().unwrap();
            db.checkpoint().unwrap_or_else(|e| panic!("checkpoint in round {round} of a {pages}-page image: {e}"));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        if round % 20 == 19 {
            reused += db.store().page_reuse().reused;
            // A crash: one more committed round only the log knows.
            let mut w = db.begin(Isolation::ReadCommitted);
            for k in 0..20u64 {
                balances[k as usize] += 1;
                balances[k as usize + 20] -= 1;
                w.update(&t, k, &[Value::Int(k as i64), Value::Int(balances[k as usize])]).unwrap();
                w.update(&t, k + 20, &[Value::Int(k as i64 + 20), Value::Int(balances[k as usize + 20])]).unwrap();
            }
            w.commit().unwrap();
            drop(t);
            drop(db);
            let (store, meta) = Store::open(small(false), opts()).unwrap();
            db = Database::open(store, meta);
            t = db.table("t").unwrap();
            // What was on its way back, and what the log's round superseded, is free again.
            let found = db.store().page_reuse().free;
            assert!(found > 0, "no free page found at open in round {round}");
            let mut r = db.begin(Isolation::RepeatableRead);
            for (k, &v) in balances.iter().enumerate() {
                assert_eq!(r.get(&t, k as u64).unwrap().unwrap()[1], Value::Int(v), "account {k} in round {round}");
            }
            r.commit().unwrap();
            assert_eq!(sums(&db), (Some(total), Some(total), ACCOUNTS as u64));
            assert_eq!(db.store().check().unwrap().errors, Vec::<String>::new(), "round {round}");
        }
    }
    assert!(reused > pages, "{reused} pages reused in a {pages}-page image: the run did not need reuse");
}

/// The newer root slot unreadable, and a record on the way from the older
/// checkpoint damaged with committed records after it: recovering from the
/// older checkpoint would lose those commits (and the next checkpoint would
/// make that final), so the open is refused and the image left as it is.
#[test]
fn an_older_checkpoint_that_cannot_reach_the_logs_commits_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(Store::new(device(dir.path(), true), opts()).unwrap()).unwrap();
    let t = db
        .create_table("t", vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, false)])
        .unwrap();
    let commit = |keys: std::ops::Range<i64>| {
        let mut w = db.begin(Isolation::ReadCommitted);
        for k in keys {
            w.insert(&t, &[Value::Int(k), Value::Int(1)]).unwrap();
        }
        w.commit().unwrap();
    };
    commit(0..100);
    db.checkpoint().unwrap(); // the older root: the log after it holds the next two commits
    commit(100..200);
    commit(200..300);
    db.checkpoint().unwrap(); // the newer root
    drop(t);
    drop(db);
    let dev = device(dir.path(), false);
    let page = u64::from(dev.info().page_bytes);
    let mut qp = dev.queue_pair();
    let roots: Vec<(u64, Root)> = (0..2)
        .map(|p| {
            let b = qp.call(Command::PageRead { ppn: ROOT_PPN + p, host_addr: None }).unwrap().into_data();
            (ROOT_PPN + p, Root::decode(&b).unwrap().unwrap())
        })
        .collect();
    let (older, newer) =
        if roots[0].1.generation < roots[1].1.generation { (&roots[0], &roots[1]) } else { (&roots[1], &roots[0]) };
    // A byte in the payload of the first commit after the older checkpoint.
    let (start, lsn) = (older.1.log_start, older.1.log_lsn);
    let target = lsn + 40;
    let ppn = start + target / page;
    let mut data = qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
    data[(target % page) as usize] ^= 0x5a;
    qp.call(Command::PageWrite { ppn, data }).unwrap();
    let mut root = qp.call(Command::PageRead { ppn: newer.0, host_addr: None }).unwrap().into_data();
    root[9] ^= 1;
    qp.call(Command::PageWrite { ppn: newer.0, data: root }).unwrap();
    drop(qp);
    drop(dev);
    let image = std::fs::read(dir.path().join("device.img")).unwrap();
    let err = Store::open(device(dir.path(), false), opts()).err().expect("refused").to_string();
    assert!(err.contains("root slot") && err.contains("1 of them commits"), "{err}");
    assert!(std::fs::read(dir.path().join("device.img")).unwrap() == image, "the image is left as it is");
}
