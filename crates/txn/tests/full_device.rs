//! A full device: writes stop with a clear error while the pages the next
//! checkpoint needs are held back, so a checkpoint can always run, give
//! superseded pages back and let writes resume; nothing committed is lost,
//! before or after a reopen.

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode};

/// A u280-nvm image in `dir` (8 KiB pages): created with `bytes`, or
/// opened with `None`.
fn device(dir: &std::path::Path, bytes: Option<u64>) -> Device {
    let p = Profile::load("u280-nvm").unwrap();
    let o = DeviceOptions::with_clock(ClockKind::Virtual);
    match bytes {
        Some(b) => Device::create(dir, p, Some(b), o).unwrap(),
        None => Device::open(dir, p, o).unwrap(),
    }
}

fn opts() -> StoreOptions {
    StoreOptions { delta_pages: 3, cache_pages: 16, map_delta_max: 100, log_bytes: 1 << 20, ..StoreOptions::default() }
}

fn columns() -> Vec<Column> {
    vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, false)]
}

/// A database on a new image of `bytes` with table `t (k, v)`.
fn create_with(
    dir: &std::path::Path,
    bytes: u64,
    store_opts: StoreOptions,
) -> (Database, std::sync::Arc<ndpdb_storage::Table>) {
    let db = Database::create(Store::new(device(dir, Some(bytes)), store_opts).unwrap()).unwrap();
    let t = db.create_table("t", columns()).unwrap();
    (db, t)
}

/// [`create_with`] on a 4 MiB image (512 pages, 128 of them the log).
fn create(dir: &std::path::Path) -> (Database, std::sync::Arc<ndpdb_storage::Table>) {
    create_with(dir, 4 << 20, opts())
}

/// COUNT(*) and SUM(v) on the host and by NDP, which must agree.
fn count_and_sum(db: &Database) -> (Option<i128>, Option<i128>) {
    let t = db.table("t").unwrap();
    let mut r = db.begin(Isolation::RepeatableRead);
    let mut get = |func, column, mode| r.aggregate(&t, func, column, None, mode).unwrap().value;
    let ndp = ReadMode::Ndp { pes: 2, freshness: Freshness::Ship };
    let host = ReadMode::Host { workers: 2 };
    let (count, sum) = (get(Aggregate::CountStar, 0, host), get(Aggregate::Sum, 1, host));
    assert_eq!((count, sum), (get(Aggregate::CountStar, 0, ndp), get(Aggregate::Sum, 1, ndp)), "host and NDP");
    (count, sum)
}

fn reopen(dir: &std::path::Path) -> Database {
    let (store, meta, _) = Store::open_with_report(device(dir, None), opts()).unwrap();
    Database::open(store, meta)
}

#[test]
fn a_full_device_still_checkpoints_and_loses_no_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = create(dir.path());
    let mut committed = 0i64;
    let full = loop {
        let mut w = db.begin(Isolation::ReadCommitted);
        let batch: Result<(), _> =
            (0..100).try_for_each(|i| w.insert(&t, &[Value::Int(committed + i), Value::Int(1)]).map(|_| ()));
        match batch.and_then(|()| w.commit()) {
            Ok(()) => committed += 100,
            Err(e) => break e.to_string(),
        }
        // Checkpoints along the way write the delta buffer: rows that must
        // not take the pages the next checkpoint needs.
        if committed % 500 == 0 {
            db.checkpoint().unwrap_or_else(|e| panic!("checkpoint after {committed} rows: {e}"));
        }
    };
    assert!(full.contains("device is full") && full.contains("held back so that a checkpoint can still run"), "{full}");
    assert!(committed > 10_000, "only {committed} rows fit");
    // The reserve is the checkpoint's: it runs, twice, and nothing is lost.
    db.checkpoint().unwrap();
    db.checkpoint().unwrap();
    let rows = Some(i128::from(committed));
    assert_eq!(count_and_sum(&db), (rows, rows));
    // Writes still fail cleanly; the failed transaction leaves nothing.
    let mut w = db.begin(Isolation::ReadCommitted);
    let e = (0..1000)
        .try_for_each(|i| w.insert(&t, &[Value::Int(-i), Value::Int(1)]).map(|_| ()))
        .and_then(|()| w.commit());
    assert!(e.unwrap_err().to_string().contains("device is full"));
    assert_eq!(count_and_sum(&db), (rows, rows));
    drop(t);
    drop(db);
    assert_eq!(count_and_sum(&reopen(dir.path())), (rows, rows));
}

/// Rounds of updates to every row fill the device with versions and
/// superseded pages; each time it is full, a checkpoint (possible because
/// of the reserve), garbage collection and another checkpoint make room,
/// and the rounds go on.
#[test]
fn updates_on_a_full_device_resume_after_checkpoint_and_gc() {
    const ROWS: i64 = 3000;
    const ROUNDS: i64 = 60;
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = create(dir.path());
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 0..ROWS {
        w.insert(&t, &[Value::Int(k), Value::Int(0)]).unwrap();
    }
    w.commit().unwrap();
    let (mut round, mut fulls) = (0, 0);
    while round < ROUNDS {
        let mut w = db.begin(Isolation::ReadCommitted);
        let updated = (0..ROWS).try_for_each(|k| w.update(&t, k as u64, &[Value::Int(k), Value::Int(round + 1)]));
        let outcome = match updated {
            Ok(()) => w.commit(),
            Err(e) => {
                w.abort().unwrap();
                Err(e)
            }
        };
        match outcome {
            Ok(()) => round += 1,
            Err(e) => {
                assert!(e.to_string().contains("device is full"), "round {round}: {e}");
                fulls += 1;
                assert!(fulls <= 2 * ROUNDS, "no progress: still full after {fulls} recoveries");
                db.checkpoint().unwrap_or_else(|e| panic!("round {round}: checkpoint on a full device: {e}"));
                db.gc().unwrap_or_else(|e| panic!("round {round}: gc after a checkpoint: {e}"));
                db.checkpoint().unwrap();
            }
        }
    }
    assert!(fulls > 0, "the device never filled: the test proves nothing");
    let expected = (Some(i128::from(ROWS)), Some(i128::from(ROUNDS * ROWS)));
    assert_eq!(count_and_sum(&db), expected);
    drop(t);
    drop(db);
    assert_eq!(count_and_sum(&reopen(dir.path())), expected);
}

/// Without any explicit checkpoint: rounds of updates and GC on a small
/// device, with a log large enough that log-driven checkpoints come too late.
/// Commits checkpoint on their own when the free pages run down to the
/// reserve and superseded pages wait, so no round fails.
#[test]
fn commits_checkpoint_on_their_own_when_free_pages_run_low() {
    const ROWS: i64 = 3000;
    const ROUNDS: i64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = create_with(dir.path(), 6 << 20, StoreOptions { log_bytes: 3 << 20, ..opts() });
    let mut w = db.begin(Isolation::ReadCommitted);
    for k in 0..ROWS {
        w.insert(&t, &[Value::Int(k), Value::Int(0)]).unwrap();
    }
    w.commit().unwrap();
    let mut reused = 0;
    for round in 0..ROUNDS {
        let mut w = db.begin(Isolation::ReadCommitted);
        for k in 0..ROWS {
            w.update(&t, k as u64, &[Value::Int(k), Value::Int(round + 1)])
                .unwrap_or_else(|e| panic!("round {round}: {e}; {:?}", db.store().page_reuse()));
        }
        w.commit().unwrap_or_else(|e| panic!("round {round}: {e}"));
        db.gc().unwrap_or_else(|e| panic!("round {round}: gc: {e}"));
        reused = db.store().page_reuse().reused;
    }
    assert!(reused > 500, "only {reused} pages reused: the device never ran low");
    assert_eq!(count_and_sum(&db), (Some(i128::from(ROWS)), Some(i128::from(ROUNDS * ROWS))));
}

/// The reserve is an upper bound: no checkpoint takes more free pages than
/// `Store::headroom` held back just before it began, after any mix of
/// inserts, updates, deletes, GC, an open transaction (fuzzy checkpoints)
/// and a reopen, with small and with default buffer and map-delta policies.
#[test]
fn no_checkpoint_takes_more_than_the_reserve() {
    for seed in 1..=4u64 {
        let dir = tempfile::tempdir().unwrap();
        let store_opts = if seed % 2 == 0 { opts() } else { StoreOptions { log_bytes: 2 << 20, ..Default::default() } };
        let (db, t) = create_with(dir.path(), 16 << 20, store_opts.clone());
        let tables = [t, db.create_table("u", columns()).unwrap()];
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let checked = |db: &Database, what: &str| {
            let reserve = db.store().headroom().reserve;
            db.checkpoint().unwrap_or_else(|e| panic!("seed {seed}, {what}: {e}"));
            let took = db.store().checkpoint_allocated();
            assert!(
                took <= reserve,
                "seed {seed}, {what}: the checkpoint took {took} pages, the reserve was {reserve}"
            );
        };
        let mut straggler: Option<(ndpdb_txn::Txn<'_>, usize, u64)> = None;
        for step in 0..2500 {
            let ti = (next() % 2) as usize;
            let t = &tables[ti];
            let n = t.vids();
            // While a transaction stays open, only GC, checkpoints (fuzzy)
            // or its commit: another write whose lock key shared its bucket
            // (an insert's new VID sweeps the buckets) would wait for it,
            // and in one thread forever.
            let pick = if straggler.is_some() { [85, 90, 95][(next() % 3) as usize] } else { next() % 100 };
            match pick {
                0..=54 if n > 0 => {
                    let mut w = db.begin(Isolation::ReadCommitted);
                    for _ in 0..1 + next() % 20 {
                        let k = next() % n;
                        let _ = w.update(t, k, &[Value::Int(k as i32 as i64), Value::Int((next() % 1000) as i64)]);
                    }
                    w.commit().unwrap();
                }
                0..=74 => {
                    let mut w = db.begin(Isolation::ReadCommitted);
                    for i in 0..1 + next() % 50 {
                        w.insert(t, &[Value::Int((n + i) as i32 as i64), Value::Int(1)]).unwrap();
                    }
                    w.commit().unwrap();
                }
                75..=84 if n > 0 => {
                    let mut w = db.begin(Isolation::ReadCommitted);
                    let _ = w.delete(t, next() % n);
                    w.commit().unwrap();
                }
                85..=89 => {
                    db.gc().unwrap();
                }
                90..=94 => match straggler.take() {
                    Some((w, _, _)) => w.commit().unwrap(),
                    None if n > 0 => {
                        let k = next() % n;
                        let mut w = db.begin(Isolation::ReadCommitted);
                        if w.update(t, k, &[Value::Int(k as i32 as i64), Value::Int(7)]).is_ok() {
                            straggler = Some((w, ti, k));
                        } else {
                            w.abort().unwrap();
                        }
                    }
                    None => {}
                },
                _ => checked(&db, &format!("step {step}")),
            }
        }
        if let Some((w, _, _)) = straggler.take() {
            w.commit().unwrap();
        }
        checked(&db, "the end");
        drop(straggler);
        drop(tables);
        drop(db);
        let (store, meta, _) = Store::open_with_report(device(dir.path(), None), store_opts).unwrap();
        let db = Database::open(store, meta);
        checked(&db, "after a reopen");
    }
}
