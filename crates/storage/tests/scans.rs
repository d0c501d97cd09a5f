//! The two read paths agree with each other and with a model: an NDP call
//! (shipping the delta buffer and the map deltas, or flushing them first)
//! and the host-only block stack return the same aggregates and rows for
//! every snapshot of a history of inserts, updates and deletes.

mod common;

use std::collections::BTreeMap;

use common::{insert, kv_table, new_store, row, snapshot, write};
use ndpdb_format::ndp::{Aggregate, CmpOp, Operand, Partial, Predicate, Snapshot};
use ndpdb_format::schema::Value;
use ndpdb_storage::{Freshness, NdpScan, Store, Table};

/// Every version of every tuple, oldest first: (creator, values or None
/// for a deletion).
type History = BTreeMap<u64, Vec<(u64, Option<Vec<Value>>)>>;

/// The rows `snap` sees: each tuple's newest visible version, if live.
fn visible(history: &History, snap: &Snapshot) -> Vec<(u64, Vec<Value>)> {
    history
        .iter()
        .filter_map(|(&vid, versions)| {
            let (_, values) = versions.iter().rev().find(|(ts, _)| snap.visible(*ts))?;
            values.clone().map(|v| (vid, v))
        })
        .collect()
}

fn qualifies(values: &[Value], predicate: Option<&Predicate>) -> bool {
    predicate.is_none_or(|p| {
        p.terms.iter().all(|t| match (&values[usize::from(t.column)], &t.value) {
            (Value::Int(v), Operand::Int(c)) => t.op.eval(*v, *c),
            _ => false,
        })
    })
}

fn model_aggregate(rows: &[(u64, Vec<Value>)], func: Aggregate, predicate: Option<&Predicate>) -> Option<i128> {
    let mut p = Partial::default();
    for (_, values) in rows.iter().filter(|(_, v)| qualifies(v, predicate)) {
        p.add_row(match values[1] {
            Value::Int(v) => Some(v),
            _ => None,
        });
    }
    p.result(func)
}

/// 1,500 tuples inserted by transaction 1 (every 7th v NULL); transaction 2
/// updates every third, 3 deletes every tenth, 4 updates every fifth
/// again. Some versions are in the delta buffer, most on the device.
fn history(store: &Store, t: &Table) -> History {
    let mut h = History::new();
    for k in 0..1500u64 {
        let values = row(k, (k % 7 != 0).then_some(k as i64 % 100));
        let vid = insert(store, t, 1, &values);
        h.entry(vid).or_default().push((1, Some(values)));
    }
    let mut put = |vid: u64, txn: u64, values: Option<Vec<Value>>| {
        write(store, t, vid, txn, values.as_deref());
        h.entry(vid).or_default().push((txn, values));
    };
    for k in (0..1500).step_by(3) {
        put(k, 2, Some(row(k, Some(1000 + k as i64))));
    }
    for k in (0..1500).step_by(10) {
        put(k, 3, None);
    }
    for k in (1..1500).step_by(5) {
        put(k, 4, Some(row(k, Some(-(k as i64)))));
    }
    h
}

fn check_snapshot(store: &Store, t: &Table, history: &History, snap: &Snapshot, freshness: Freshness) {
    let expected = visible(history, snap);
    let ge50 = Predicate::int(1, CmpOp::Ge, 50);
    let range =
        Predicate::int(1, CmpOp::Ge, 20).and(Predicate::int(1, CmpOp::Lt, 1100)).and(Predicate::int(0, CmpOp::Ne, 7));
    for predicate in [None, Some(&ge50), Some(&range)] {
        for func in [Aggregate::CountStar, Aggregate::Count, Aggregate::Sum, Aggregate::Min, Aggregate::Avg] {
            let want = model_aggregate(&expected, func, predicate);
            let ndp = store
                .ndp_aggregate(&NdpScan { table: t, snapshot: snap, predicate, pes: 4, freshness }, func, 1)
                .unwrap();
            let host = store.host_aggregate(t, snap, func, 1, predicate, 3).unwrap();
            assert_eq!(ndp.value, want, "NDP {func:?} where {predicate:?} in {snap:?} ({freshness:?})");
            assert_eq!(host.value, want, "host {func:?} where {predicate:?} in {snap:?}");
        }
        let want: Vec<(u64, Vec<Value>)> = expected.iter().filter(|(_, v)| qualifies(v, predicate)).cloned().collect();
        let ndp = store.ndp_rows(&NdpScan { table: t, snapshot: snap, predicate, pes: 4, freshness }, &[1, 0]).unwrap();
        let host = store.host_rows(t, snap, &[1, 0], predicate, 3).unwrap();
        let projected: Vec<(u64, Vec<Value>)> =
            want.into_iter().map(|(vid, v)| (vid, vec![v[1].clone(), v[0].clone()])).collect();
        assert_eq!(ndp.rows, projected, "NDP rows where {predicate:?} in {snap:?} ({freshness:?})");
        assert_eq!(host.rows, projected, "host rows where {predicate:?} in {snap:?}");
        assert_eq!(tuple_rows(store, t, snap, predicate), projected, "host tuples where {predicate:?} in {snap:?}");
    }
}

/// A host scan in morsels of raw tuples (`host_tuples_range`), decoded and
/// projected as `check_snapshot`'s other scans project.
fn tuple_rows(store: &Store, t: &Table, snap: &Snapshot, predicate: Option<&Predicate>) -> Vec<(u64, Vec<Value>)> {
    let scan = store.host_scan(t);
    let mut tuples = ndpdb_storage::Tuples::new();
    let mut start = 0;
    while start < scan.vids() {
        // Morsels that do not divide the table, and one past its end.
        let end = start + 700;
        let (before, t0) = (store.device().counters(), store.device().now_ps());
        let stats = store.host_tuples_range(t, &scan, snap, predicate, start..end, &mut tuples).unwrap();
        // One thread: the call's own counters and waits are the device's change.
        assert_eq!(stats.counters, store.device().counters().since(&before));
        assert_eq!((stats.modelled_s * 1e12).round() as u64, store.device().now_ps() - t0);
        start = end;
    }
    tuples
        .vids()
        .iter()
        .zip(tuples.iter())
        .map(|(&vid, data)| {
            let v = store.decode_values(t, data).unwrap();
            (vid, vec![v[1].clone(), v[0].clone()])
        })
        .collect()
}

/// Morsels of one host scan walked on two threads at once count exactly
/// what the same morsels count walked one after another: each call's
/// counters are its own queue pair's, not the device's change.
#[test]
fn concurrent_morsels_count_their_own_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 16);
    let t = kv_table(&store, "t");
    let h = history(&store, &t);
    let snap = snapshot(5, &[]);
    let scan = store.host_scan(&t);
    let morsels: Vec<_> = (0..scan.vids()).step_by(97).map(|s| s..s + 97).collect();
    let walk = |ranges: &[std::ops::Range<u64>]| {
        let mut tuples = ndpdb_storage::Tuples::new();
        ranges
            .iter()
            .map(|r| {
                let s = store.host_tuples_range(&t, &scan, &snap, None, r.clone(), &mut tuples).unwrap();
                (r.start, s.counters, s.visited)
            })
            .collect::<Vec<_>>()
    };
    let mut serial = walk(&morsels);
    let (evens, odds): (Vec<_>, Vec<_>) = morsels.iter().cloned().enumerate().partition(|(i, _)| i % 2 == 0);
    let evens: Vec<_> = evens.into_iter().map(|(_, r)| r).collect();
    let odds: Vec<_> = odds.into_iter().map(|(_, r)| r).collect();
    let before = store.device().counters();
    let mut parallel = std::thread::scope(|s| {
        let a = s.spawn(|| walk(&evens));
        let b = s.spawn(|| walk(&odds));
        let mut all = a.join().unwrap();
        all.extend(b.join().unwrap());
        all
    });
    let total = store.device().counters().since(&before);
    serial.sort_by_key(|m| m.0);
    parallel.sort_by_key(|m| m.0);
    assert_eq!(serial, parallel, "each morsel counts the same alone and beside another");
    let summed: u64 = parallel.iter().map(|m| m.1.medium_bytes_read).sum();
    assert_eq!(summed, total.medium_bytes_read);
    let summed: u64 = parallel.iter().map(|m| m.1.link_bytes_to_host).sum();
    assert_eq!(summed, total.link_bytes_to_host);
    assert!(total.medium_bytes_read > 0);
    assert_eq!(visible(&h, &snap).len(), 1350);
}

#[test]
fn ndp_and_host_scans_agree_with_a_model_in_every_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 16);
    let t = kv_table(&store, "t");
    let h = history(&store, &t);
    let snapshots = [
        snapshot(1, &[]),  // before everything
        snapshot(2, &[]),  // the inserts
        snapshot(4, &[2]), // the deletes without the first updates
        snapshot(5, &[4]), // all but the last updates
        snapshot(5, &[]),  // everything
    ];
    // Shipping reads the delta buffer and the map deltas from the call;
    // flushing writes them first, after which the call ships nothing.
    for freshness in [Freshness::Ship, Freshness::Flush] {
        for snap in &snapshots {
            check_snapshot(&store, &t, &h, snap, freshness);
        }
    }
    assert_eq!(visible(&h, &snapshots[0]), vec![]);
    assert_eq!(visible(&h, &snapshots[4]).len(), 1350);
}
