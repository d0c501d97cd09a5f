//! Update-NDP with the shared lock table (ccSLT, EDBT'22): the paper's
//! Fig. 1 in both orders, concurrent host and device writers that must never
//! branch a chain or lose an update, and device transactions that fail or
//! abort leaving nothing behind.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::{Aggregate, CmpOp, Predicate, UpdateExpr};
use ndpdb_format::page::RecordId;
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, Store, StoreOptions, Table};
use ndpdb_txn::{Database, Isolation, ReadMode, Txn, TxnError};

const ACCOUNTS: u64 = 64;
const START: i64 = 1000;

fn db(dir: &std::path::Path, profile: &str) -> Database {
    let dev = Device::create(
        dir,
        Profile::load(profile).unwrap(),
        Some(64 << 20),
        DeviceOptions::with_clock(ClockKind::Virtual),
    )
    .unwrap();
    let opts = StoreOptions { delta_pages: 4, cache_pages: 64, map_delta_max: 256, ..StoreOptions::default() };
    Database::new(Store::new(dev, opts).unwrap())
}

fn accounts(db: &Database) -> std::sync::Arc<Table> {
    let t = db
        .create_table(
            "accounts",
            vec![Column::new("id", ColumnType::Int64, false), Column::new("balance", ColumnType::Int64, false)],
        )
        .unwrap();
    let mut w = db.begin(Isolation::ReadCommitted);
    for id in 0..ACCOUNTS {
        w.insert(&t, &[Value::Int(id as i64), Value::Int(START)]).unwrap();
    }
    w.commit().unwrap();
    t
}

fn id_is(id: u64) -> Option<Predicate> {
    Some(Predicate::int(0, CmpOp::Eq, id as i64))
}

fn balance(db: &Database, t: &std::sync::Arc<Table>, id: u64) -> i64 {
    let mut r = db.begin(Isolation::RepeatableRead);
    let v = r.get(t, id).unwrap().unwrap();
    r.commit().unwrap();
    match v[1] {
        Value::Int(b) => b,
        ref other => panic!("balance {other:?}"),
    }
}

/// Versions of `vid`'s chain, newest first, as (create_ts, RecordId).
fn chain(db: &Database, t: &Table, vid: u64) -> Vec<(u64, RecordId)> {
    let mut out = vec![];
    let mut rid = t.head(vid).unwrap().rid;
    while !rid.is_none() {
        let (h, _) = db.store().read_version(t, rid).unwrap();
        out.push((h.create_ts, rid));
        rid = h.prev;
    }
    out
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    for _ in 0..2000 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("timed out waiting until {what}");
}

#[test]
fn fig1_device_first_host_waits_then_sees_the_device_version() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path(), "u280-nvm");
    let t = accounts(&db);
    let mut dev_tx = db.begin(Isolation::RepeatableRead);
    assert_eq!(dev_tx.ndp_update(&t, 1, UpdateExpr::Add(5), id_is(7).as_ref(), 4).unwrap(), 1);
    let dev_id = dev_tx.id();
    assert!(db.locks_held() >= 1, "the device's lock is held until the host commits");
    let host_done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let host = s.spawn(|| {
            // Read committed: waits for the device transaction, then updates
            // its committed version (the chain stays linear).
            let mut h = db.begin(Isolation::ReadCommitted);
            h.update(&t, 7, &[Value::Int(7), Value::Int(2000)]).unwrap();
            h.commit().unwrap();
            host_done.store(true, Ordering::SeqCst);
        });
        wait_until("the host transaction queues behind the device's", || {
            db.active().iter().any(|&id| id != dev_id && db.is_waiting(id))
        });
        assert!(!host_done.load(Ordering::SeqCst));
        dev_tx.commit().unwrap();
        host.join().unwrap();
    });
    assert_eq!(balance(&db, &t, 7), 2000);
    let c = chain(&db, &t, 7);
    assert_eq!(c.len(), 3, "host version -> device version -> loaded version: {c:?}");
    assert_eq!(c[1].0, dev_id);
    assert_eq!(db.locks_held(), 0);
}

#[test]
fn fig1_device_first_repeatable_read_host_gets_a_serialization_failure() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path(), "u280-nvm");
    let t = accounts(&db);
    let mut h = db.begin(Isolation::RepeatableRead);
    assert_eq!(balance(&db, &t, 3), START);
    let _ = h.get(&t, 3).unwrap();
    let mut dev_tx = db.begin(Isolation::RepeatableRead);
    dev_tx.ndp_update(&t, 1, UpdateExpr::Mul(2), id_is(3).as_ref(), 2).unwrap();
    std::thread::scope(|s| {
        let t2 = t.clone();
        let host = s.spawn(move || h.update(&t2, 3, &[Value::Int(3), Value::Int(1)]));
        std::thread::sleep(Duration::from_millis(20));
        dev_tx.commit().unwrap();
        let r = host.join().unwrap();
        assert!(matches!(r, Err(TxnError::Serialization(_))), "{r:?}");
    });
    assert_eq!(balance(&db, &t, 3), 2 * START);
    assert_eq!(db.locks_held(), 0);
}

/// Fig. 1, host first: the open host transaction `h` holds its tuple locks;
/// a device transaction at `iso` runs `SET balance = balance + add WHERE
/// predicate` and commits, its PE polling the host's lock, while `h` ends
/// with `end` 50 ms later. Returns the device transaction's outcome.
fn device_behind_host<'db>(
    db: &'db Database,
    t: &std::sync::Arc<Table>,
    h: Txn<'db>,
    iso: Isolation,
    add: i64,
    predicate: Option<&Predicate>,
    end: impl FnOnce(Txn<'db>) -> Result<(), TxnError>,
) -> Result<u64, TxnError> {
    std::thread::scope(|s| {
        let device = s.spawn(|| {
            let mut d = db.begin(iso);
            let n = d.ndp_update(t, 1, UpdateExpr::Add(add), predicate, 4)?;
            d.commit()?;
            Ok(n)
        });
        std::thread::sleep(Duration::from_millis(50));
        end(h).unwrap();
        device.join().unwrap()
    })
}

#[test]
fn fig1_host_first_device_waits_and_loses_to_the_first_updater() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path(), "u280-nvm");
    let t = accounts(&db);
    let mut h = db.begin(Isolation::RepeatableRead);
    h.update(&t, 9, &[Value::Int(9), Value::Int(1)]).unwrap();
    let r = device_behind_host(&db, &t, h, Isolation::RepeatableRead, 100, id_is(9).as_ref(), Txn::commit);
    assert!(matches!(r, Err(TxnError::Serialization(_))), "the device based its version on a stale one: {r:?}");
    assert_eq!(balance(&db, &t, 9), 1);
    assert_eq!(chain(&db, &t, 9).len(), 2, "the device's version was never installed");
    assert_eq!(db.locks_held(), 0, "the failed device transaction holds no locks");
}

#[test]
fn fig1_host_first_aborts_and_the_device_proceeds() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path(), "u280-nvm");
    let t = accounts(&db);
    let mut h = db.begin(Isolation::RepeatableRead);
    h.update(&t, 9, &[Value::Int(9), Value::Int(1)]).unwrap();
    assert_eq!(
        device_behind_host(&db, &t, h, Isolation::RepeatableRead, 100, id_is(9).as_ref(), Txn::abort).unwrap(),
        1
    );
    assert_eq!(balance(&db, &t, 9), START + 100);
    assert_eq!(db.locks_held(), 0);
}

/// Read committed: a row that a concurrent commit changed while the device
/// waited for its lock is re-evaluated on its newest version, as PostgreSQL's
/// EvalPlanQual does (repeatable read fails instead, above).
#[test]
fn read_committed_device_update_applies_to_the_newest_version() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path(), "u280-nvm");
    let t = accounts(&db);
    let mut h = db.begin(Isolation::ReadCommitted);
    h.update(&t, 9, &[Value::Int(9), Value::Int(1)]).unwrap();
    // The device's statement snapshot saw START.
    assert_eq!(
        device_behind_host(&db, &t, h, Isolation::ReadCommitted, 100, id_is(9).as_ref(), Txn::commit).unwrap(),
        1
    );
    assert_eq!(balance(&db, &t, 9), 1 + 100, "the expression applies to the committed 1, not to the stale {START}");
    let c = chain(&db, &t, 9);
    assert_eq!(c.len(), 3, "one linear chain: {START}, 1, 101: {c:?}");
    assert!(c.windows(2).all(|w| w[0].0 > w[1].0), "creators decrease along the chain: {c:?}");
    assert_eq!(db.locks_held(), 0);
}

/// Read committed, re-evaluation: a row that no longer meets the predicate
/// on its newest version, or that was deleted, is left alone; the others
/// are updated by the device as usual.
#[test]
fn read_committed_device_update_skips_rows_that_no_longer_qualify_or_were_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path(), "u280-nvm");
    let t = accounts(&db);
    let rich = Some(Predicate::int(1, CmpOp::Ge, 500));
    let mut h = db.begin(Isolation::ReadCommitted);
    h.update(&t, 9, &[Value::Int(9), Value::Int(1)]).unwrap();
    h.delete(&t, 10).unwrap();
    let n = device_behind_host(&db, &t, h, Isolation::ReadCommitted, 5, rich.as_ref(), Txn::commit).unwrap();
    assert_eq!(n, ACCOUNTS - 2);
    assert_eq!(balance(&db, &t, 9), 1, "1 is below 500 on the newest version: not updated");
    let mut r = db.begin(Isolation::RepeatableRead);
    assert_eq!(r.get(&t, 10).unwrap(), None, "a deleted row stays deleted");
    r.commit().unwrap();
    for id in (0..ACCOUNTS).filter(|&id| id != 9 && id != 10) {
        assert_eq!(balance(&db, &t, id), START + 5, "account {id}");
    }
    assert_eq!(chain(&db, &t, 9).len(), 2, "the device's version of 9 was never installed");
    assert_eq!(db.locks_held(), 0);
}

#[test]
fn device_transactions_that_abort_or_fail_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path(), "u280-nvm");
    let t = accounts(&db);
    let sum = |db: &Database| {
        let mut r = db.begin(Isolation::RepeatableRead);
        let v = r.aggregate(&t, Aggregate::Sum, 1, None, ReadMode::Host { workers: 2 }).unwrap().value;
        r.commit().unwrap();
        v
    };
    let before = sum(&db);
    // Aborted after the device wrote every tuple.
    let mut d = db.begin(Isolation::ReadCommitted);
    assert_eq!(d.ndp_update(&t, 1, UpdateExpr::Set(0), None, 8).unwrap(), ACCOUNTS);
    d.abort().unwrap();
    assert_eq!(sum(&db), before);
    assert_eq!(db.locks_held(), 0);
    // Failed part-way: one tuple overflows after other PEs locked and wrote theirs.
    let mut w = db.begin(Isolation::ReadCommitted);
    w.update(&t, 40, &[Value::Int(40), Value::Int(i64::MAX / 2)]).unwrap();
    w.commit().unwrap();
    let before = sum(&db);
    let mut d = db.begin(Isolation::ReadCommitted);
    let r = d.ndp_update(&t, 1, UpdateExpr::Mul(3), None, 8);
    assert!(format!("{:?}", r.unwrap_err()).contains("overflows"));
    assert_eq!(sum(&db), before);
    assert_eq!(db.locks_held(), 0, "locks of a failed program are swept");
    for vid in 0..ACCOUNTS {
        assert!(chain(&db, &t, vid).iter().all(|(ts, _)| *ts != d.id()));
    }
}

#[test]
fn update_ndp_needs_a_coherent_interconnect() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path(), "cosmos-plus");
    let t = accounts(&db);
    let mut d = db.begin(Isolation::ReadCommitted);
    let e = d.ndp_update(&t, 1, UpdateExpr::Add(1), None, 2).unwrap_err().to_string();
    assert!(e.contains("coherent"), "{e}");
}

/// Retries `f` in a new transaction until it commits.
fn retry(db: &Database, iso: Isolation, mut f: impl FnMut(&mut Txn<'_>) -> Result<(), TxnError>) -> u64 {
    loop {
        let mut tx = db.begin(iso);
        let id = tx.id();
        match f(&mut tx).and_then(|()| tx.commit()) {
            Ok(()) => return id,
            Err(TxnError::Serialization(_) | TxnError::Deadlock) => continue,
            Err(TxnError::Store(e)) if e.to_string().contains("lock wait timed out") => continue,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn concurrent_host_and_device_transfers_conserve_money_and_keep_chains_linear() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path(), "u280-nvm");
    let t = accounts(&db);
    let committed_writes: Vec<AtomicU64> = (0..ACCOUNTS).map(|_| AtomicU64::new(0)).collect();
    std::thread::scope(|s| {
        for worker in 0..3u64 {
            let (db, t, writes) = (&db, &t, &committed_writes);
            s.spawn(move || {
                let mut x = worker.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                for i in 0..40 {
                    let (a, b) = (next() % ACCOUNTS, next() % ACCOUNTS);
                    if a == b {
                        continue;
                    }
                    let amount = (next() % 50) as i64;
                    let on_device = worker == 0 || i % 4 == 0;
                    retry(db, Isolation::RepeatableRead, |tx| {
                        if on_device {
                            tx.ndp_update(t, 1, UpdateExpr::Add(-amount), id_is(a).as_ref(), 4)?;
                            tx.ndp_update(t, 1, UpdateExpr::Add(amount), id_is(b).as_ref(), 4)?;
                        } else {
                            for (id, delta) in [(a, -amount), (b, amount)] {
                                let row = tx.get(t, id)?.expect("accounts are never deleted");
                                let Value::Int(bal) = row[1] else { panic!("balance") };
                                tx.update(t, id, &[Value::Int(id as i64), Value::Int(bal + delta)])?;
                            }
                        }
                        Ok(())
                    });
                    writes[a as usize].fetch_add(1, Ordering::Relaxed);
                    writes[b as usize].fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let mut r = db.begin(Isolation::RepeatableRead);
    let ndp = ReadMode::Ndp { pes: 8, freshness: Freshness::Ship };
    let total = r.aggregate(&t, Aggregate::Sum, 1, None, ndp).unwrap().value;
    r.commit().unwrap();
    assert_eq!(total, Some(i128::from(START) * ACCOUNTS as i128), "money was created or destroyed");
    for vid in 0..ACCOUNTS {
        let c = chain(&db, &t, vid);
        assert_eq!(
            c.len() as u64,
            1 + committed_writes[vid as usize].load(Ordering::Relaxed),
            "VID {vid}: every committed write is one version of a linear chain (no lost update): {c:?}"
        );
        assert!(c.windows(2).all(|w| w[0].0 > w[1].0), "VID {vid}: creators decrease along the chain: {c:?}");
    }
    assert_eq!(db.locks_held(), 0);
}

/// Each PE gets the pages its own share of the VIDs needs: a predicate that
/// selects every tuple of the first PE's share and none of the others'
/// once ran that PE out of pages (they were dealt round-robin, sized by the
/// total count).
#[test]
fn a_skewed_predicate_gets_each_pe_the_pages_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let d = db(dir.path(), "u280-nvm");
    let t = d
        .create_table(
            "wide",
            vec![Column::new("id", ColumnType::Int64, false), Column::new("pad", ColumnType::Text(200), false)],
        )
        .unwrap();
    const ROWS: u64 = 4000;
    let mut w = d.begin(Isolation::ReadCommitted);
    for id in 0..ROWS {
        w.insert(&t, &[Value::Int(id as i64), Value::Text(b"x".to_vec())]).unwrap();
    }
    w.commit().unwrap();
    // 8 PEs: the first takes VIDs 0..500, whose versions fill many pages.
    let first_share = Some(Predicate::int(0, CmpOp::Lt, (ROWS / 8) as i64));
    let mut u = d.begin(Isolation::RepeatableRead);
    assert_eq!(u.ndp_update(&t, 0, UpdateExpr::Add(ROWS as i64), first_share.as_ref(), 8).unwrap(), ROWS / 8);
    u.commit().unwrap();
    let mut r = d.begin(Isolation::RepeatableRead);
    let moved = Some(Predicate::int(0, CmpOp::Ge, ROWS as i64));
    let n = r.aggregate(&t, Aggregate::CountStar, 0, moved.as_ref(), ReadMode::Host { workers: 2 }).unwrap();
    assert_eq!(n.value, Some(i128::from(ROWS / 8)));
    r.commit().unwrap();
    assert!(d.store().check().unwrap().error_count() == 0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Any predicate, any PE count, deleted tuples among the live ones:
    /// update-NDP updates exactly the tuples the host counts as qualifying,
    /// and both read paths then see the same new values.
    #[test]
    fn update_ndp_updates_exactly_the_qualifying_tuples(
        rows in 1u64..2500,
        pes in 1u32..=16,
        cut in 0u64..2600,
        op in 0usize..6,
        add in -5i64..=5,
        deleted in proptest::collection::vec(0u64..2500, 0..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let d = db(dir.path(), "u280-nvm");
        let t = d
            .create_table(
                "t",
                vec![Column::new("id", ColumnType::Int64, false), Column::new("v", ColumnType::Int64, false)],
            )
            .unwrap();
        let mut w = d.begin(Isolation::ReadCommitted);
        for id in 0..rows {
            w.insert(&t, &[Value::Int(id as i64), Value::Int((id % 97) as i64)]).unwrap();
        }
        w.commit().unwrap();
        let mut w = d.begin(Isolation::ReadCommitted);
        for &vid in deleted.iter().filter(|&&v| v < rows) {
            let _ = w.delete(&t, vid);
        }
        w.commit().unwrap();
        let cmp = [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge][op];
        let predicate = Some(Predicate::int(0, cmp, cut as i64));
        let host = ReadMode::Host { workers: 2 };
        let ndp = ReadMode::Ndp { pes, freshness: Freshness::Ship };
        let measure = |d: &Database| {
            let mut r = d.begin(Isolation::RepeatableRead);
            let n = r.aggregate(&t, Aggregate::CountStar, 0, predicate.as_ref(), host).unwrap().value;
            let s_host = r.aggregate(&t, Aggregate::Sum, 1, None, host).unwrap().value;
            let s_ndp = r.aggregate(&t, Aggregate::Sum, 1, None, ndp).unwrap().value;
            r.commit().unwrap();
            (n.unwrap_or(0) as u64, s_host, s_ndp)
        };
        let (qualifying, before, _) = measure(&d);
        let mut u = d.begin(Isolation::RepeatableRead);
        // Odd PE counts ship the delta pages, even ones read them through
        // the device's mirror (CBM).
        let freshness = if pes % 2 == 0 { Freshness::Cbm } else { Freshness::Ship };
        let (updated, _) = u.ndp_update_fresh(&t, 1, UpdateExpr::Add(add), predicate.as_ref(), pes, freshness).unwrap();
        u.commit().unwrap();
        proptest::prop_assert_eq!(updated, qualifying);
        let (_, after_host, after_ndp) = measure(&d);
        let expected = before.map(|b| b + i128::from(add) * i128::from(qualifying as i64));
        proptest::prop_assert_eq!(after_host, expected);
        proptest::prop_assert_eq!(after_ndp, expected);
        proptest::prop_assert_eq!(d.store().check().unwrap().error_count(), 0);
    }
}
