//! Differential tests: random sequences of inserts, updates, deletes, aborts
//! and snapshots taken at random points give identical results for NDP, the
//! host-only block stack and a simple in-memory reference model, for every
//! aggregate and for row output, on several profiles.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

static CHECKS: AtomicU64 = AtomicU64::new(0);
static ROWS_SEEN: AtomicU64 = AtomicU64::new(0);
static NDP_CHECKS: AtomicU64 = AtomicU64::new(0);
static GC_REMOVED: AtomicU64 = AtomicU64::new(0);

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::{Aggregate, CmpOp, Partial, Predicate};
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode, Txn, TxnError};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn columns() -> Vec<Column> {
    vec![
        Column::new("id", ColumnType::Int32, false),
        Column::new("amount", ColumnType::Decimal { precision: 12, scale: 2 }, true),
        Column::new("qty", ColumnType::Int64, false),
        Column::new("note", ColumnType::Varchar(12), true),
        Column::new("at", ColumnType::Timestamp, true),
    ]
}

/// The reference: every tuple's versions as (creator, values or None for a
/// delete), oldest first, and the set of committed transactions.
#[derive(Default, Clone)]
struct Model {
    chains: Vec<Vec<(u64, Option<Vec<Value>>)>>,
    committed: BTreeSet<u64>,
}

/// A reference snapshot: who had committed, and who reads.
#[derive(Clone)]
struct RefSnap {
    committed: BTreeSet<u64>,
    own: u64,
}

impl Model {
    fn visible(&self, s: &RefSnap) -> BTreeMap<u64, Vec<Value>> {
        let mut out = BTreeMap::new();
        for (vid, chain) in self.chains.iter().enumerate() {
            if let Some((_, Some(v))) = chain.iter().rev().find(|(t, _)| *t == s.own || s.committed.contains(t)) {
                out.insert(vid as u64, v.clone());
            }
        }
        out
    }
}

#[derive(Debug, Clone)]
enum Op {
    Begin(bool),
    Insert(usize, i64, bool),
    Update(usize, usize, i64, bool),
    Delete(usize, usize),
    Commit(usize),
    Abort(usize),
    Check(usize, u8, u8, i64),
    Gc,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => any::<bool>().prop_map(Op::Begin),
        4 => (any::<usize>(), -1000i64..1000, any::<bool>()).prop_map(|(t, v, n)| Op::Insert(t, v, n)),
        5 => (any::<usize>(), any::<usize>(), -1000i64..1000, any::<bool>()).prop_map(|(t, k, v, n)| Op::Update(t, k, v, n)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(t, k)| Op::Delete(t, k)),
        2 => any::<usize>().prop_map(Op::Commit),
        1 => any::<usize>().prop_map(Op::Abort),
        2 => (any::<usize>(), any::<u8>(), any::<u8>(), -500i64..500).prop_map(|(t, f, c, p)| Op::Check(t, f, c, p)),
        1 => Just(Op::Gc),
    ]
}

fn row(id: i64, v: i64, nulls: bool) -> Vec<Value> {
    vec![
        Value::Int(id),
        if nulls { Value::Null } else { Value::Int(v * 101) },
        Value::Int(v),
        if nulls { Value::Null } else { Value::Text(format!("n{v}").into_bytes()) },
        if v % 3 == 0 { Value::Null } else { Value::Int(1_700_000_000_000_000 + v) },
    ]
}

struct Open<'a> {
    txn: Txn<'a>,
    snap: Option<RefSnap>,
    /// Versions this transaction added, to undo in the model on abort.
    wrote: Vec<usize>,
}

const FUNCS: [Aggregate; 6] =
    [Aggregate::CountStar, Aggregate::Count, Aggregate::Sum, Aggregate::Min, Aggregate::Max, Aggregate::Avg];

fn expected(
    rows: &BTreeMap<u64, Vec<Value>>,
    func: Aggregate,
    col: u16,
    pred: Option<(u16, CmpOp, i64)>,
) -> Option<i128> {
    let mut p = Partial::default();
    for r in rows.values() {
        if let Some((column, op, value)) = pred {
            match r[usize::from(column)] {
                Value::Int(v) if op.eval(v, value) => {}
                _ => continue,
            }
        }
        p.add_row(match &r[usize::from(col)] {
            Value::Int(v) => Some(*v),
            _ => None,
        });
    }
    p.result(func)
}

fn run(profile: &str, initial: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let p = Profile::load(profile).unwrap();
    let pes_max = p.pe.count;
    let dev = Device::create(dir.path(), p, Some(32 << 20), DeviceOptions::with_clock(ClockKind::Virtual)).unwrap();
    let store =
        Store::new(dev, StoreOptions { delta_pages: 2, cache_pages: 8, map_delta_max: 64, ..StoreOptions::default() })
            .unwrap();
    let db = Database::new(store);
    let t = db.create_table("t", columns()).unwrap();
    let mut model = Model::default();
    // Uncommitted writer of each VID, to keep the single-threaded driver from blocking.
    let mut locked: BTreeMap<usize, u64> = BTreeMap::new();
    let mut open: Vec<Open<'_>> = Vec::new();
    // A committed base so that chains span pages on the device, the delta
    // buffer, and the VID and L2P map pages.
    let mut base = db.begin(Isolation::ReadCommitted);
    for i in 0..initial {
        let r = row(i as i64, (i as i64 * 37) % 1000 - 500, i % 7 == 0);
        base.insert(&t, &r).unwrap();
        model.chains.push(vec![(base.id(), Some(r))]);
    }
    let base_id = base.id();
    base.commit().unwrap();
    model.committed.insert(base_id);
    let mut checks = 0;
    for (step, op) in ops.iter().enumerate() {
        match op.clone() {
            Op::Begin(rr) => {
                let iso = if rr { Isolation::RepeatableRead } else { Isolation::ReadCommitted };
                open.push(Open { txn: db.begin(iso), snap: None, wrote: vec![] });
            }
            Op::Insert(i, v, n) if !open.is_empty() => {
                let n_open = open.len();
                let o = &mut open[i % n_open];
                let id = o.txn.id();
                let snap = ensure_snap(o, &model);
                let _ = snap;
                let vid = o.txn.insert(&t, &row(step as i64, v, n)).unwrap() as usize;
                assert_eq!(vid, model.chains.len());
                model.chains.push(vec![(id, Some(row(step as i64, v, n)))]);
                locked.insert(vid, id);
                o.wrote.push(vid);
            }
            Op::Update(i, k, _, _) | Op::Delete(i, k) if !open.is_empty() && !model.chains.is_empty() => {
                let delete = matches!(op, Op::Delete(..));
                let (v, n) = if let Op::Update(_, _, v, n) = op { (*v, *n) } else { (0, false) };
                let oi = i % open.len();
                let vid = k % model.chains.len();
                let id = open[oi].txn.id();
                if locked.get(&vid).is_some_and(|&h| h != id) {
                    continue;
                }
                let snap = ensure_snap(&mut open[oi], &model);
                let rr = open[oi].txn.isolation() == Isolation::RepeatableRead;
                // What the model expects: the newest version's creator.
                let chain = &model.chains[vid];
                let (newest_creator, newest_live) = chain.last().map(|(c, v)| (*c, v.is_some())).unwrap_or((0, false));
                let sees_newest = newest_creator == id || snap.committed.contains(&newest_creator) || !rr;
                let vals = row(vid as i64, v, n);
                let r = if delete {
                    open[oi].txn.delete(&t, vid as u64)
                } else {
                    open[oi].txn.update(&t, vid as u64, &vals)
                };
                match r {
                    Ok(()) => {
                        prop_assert!(
                            sees_newest && newest_live,
                            "step {step}: write succeeded, model expected failure"
                        );
                        model.chains[vid].push((id, if delete { None } else { Some(vals) }));
                        locked.insert(vid, id);
                        open[oi].wrote.push(vid);
                    }
                    Err(TxnError::Serialization(_)) => {
                        prop_assert!(!sees_newest, "step {step}: unexpected serialization failure");
                        let o = open.remove(oi);
                        undo(&mut model, &mut locked, &o);
                    }
                    Err(TxnError::NotFound { .. }) => prop_assert!(!newest_live, "step {step}: tuple should exist"),
                    Err(e) => prop_assert!(false, "step {step}: {e}"),
                }
            }
            Op::Commit(i) if !open.is_empty() => {
                let o = open.remove(i % open.len());
                let id = o.txn.id();
                o.txn.commit().unwrap();
                model.committed.insert(id);
                locked.retain(|_, h| *h != id);
            }
            Op::Abort(i) if !open.is_empty() => {
                let o = open.remove(i % open.len());
                undo(&mut model, &mut locked, &o);
                o.txn.abort().unwrap();
            }
            Op::Check(i, f, c, pv) if !open.is_empty() => {
                checks += 1;
                let oi = i % open.len();
                let snap = match open[oi].txn.isolation() {
                    Isolation::ReadCommitted => RefSnap { committed: model.committed.clone(), own: open[oi].txn.id() },
                    _ => ensure_snap(&mut open[oi], &model),
                };
                let rows = model.visible(&snap);
                let func = FUNCS[usize::from(f) % FUNCS.len()];
                let col = [1u16, 2, 4][usize::from(c) % 3];
                // (column 2, op, value): the model's; `predicate`: the store's.
                let pred = (c % 2 == 0).then_some((2u16, [CmpOp::Lt, CmpOp::Ge, CmpOp::Ne][usize::from(f) % 3], pv));
                let predicate = pred.map(|(column, op, value)| Predicate::int(column, op, value));
                let want = expected(&rows, func, col, pred);
                CHECKS.fetch_add(1, Ordering::Relaxed);
                ROWS_SEEN.fetch_add(rows.len() as u64, Ordering::Relaxed);
                let pes = 1 + (u32::from(f) % pes_max.max(1));
                let fresh = [Freshness::Flush, Freshness::Ship, Freshness::Cbm][usize::from(c % 3)];
                let txn = &mut open[oi].txn;
                let host = txn
                    .aggregate(&t, func, col, predicate.as_ref(), ReadMode::Host { workers: 1 + usize::from(c % 3) })
                    .unwrap();
                prop_assert_eq!(host.value, want, "step {}: host {:?} {} pred {:?}", step, func, col, pred);
                if pes_max > 0 {
                    NDP_CHECKS.fetch_add(1, Ordering::Relaxed);
                    let ndp = txn
                        .aggregate(&t, func, col, predicate.as_ref(), ReadMode::Ndp { pes, freshness: fresh })
                        .unwrap();
                    prop_assert_eq!(
                        ndp.value,
                        want,
                        "step {}: ndp {:?} {} pred {:?} pes {}",
                        step,
                        func,
                        col,
                        pred,
                        pes
                    );
                    prop_assert_eq!(ndp.partial.visited, host.partial.visited, "step {}: versions visited", step);
                    prop_assert_eq!(ndp.stats.counters.link_bytes_to_host < 2048, true, "NDP results are small");
                }
                // Rows, projected.
                let proj = [0u16, 3, 1];
                let want_rows: Vec<(u64, Vec<Value>)> = rows
                    .iter()
                    .filter(|(_, r)| pred.is_none_or(|(_, op, pv)| matches!(r[2], Value::Int(v) if op.eval(v, pv))))
                    .map(|(vid, r)| (*vid, proj.iter().map(|&c| r[usize::from(c)].clone()).collect()))
                    .collect();
                let host_rows = txn.rows(&t, &proj, predicate.as_ref(), ReadMode::Host { workers: 2 }).unwrap();
                prop_assert_eq!(&host_rows.rows, &want_rows, "step {}: host rows", step);
                if pes_max > 0 {
                    let mut ndp_rows =
                        txn.rows(&t, &proj, predicate.as_ref(), ReadMode::Ndp { pes, freshness: fresh }).unwrap();
                    ndp_rows.rows.sort_by_key(|r| r.0);
                    prop_assert_eq!(&ndp_rows.rows, &want_rows, "step {}: ndp rows", step);
                }
                // Point reads agree too.
                for (vid, r) in rows.iter().take(3) {
                    let got = txn.get(&t, *vid).unwrap();
                    prop_assert_eq!(got.as_ref(), Some(r));
                }
            }
            Op::Gc => {
                let s = db.gc().unwrap();
                GC_REMOVED.fetch_add(s.versions_removed, Ordering::Relaxed);
            }
            _ => {}
        }
    }
    let _ = checks;
    for o in open.drain(..) {
        o.txn.abort().unwrap();
    }
    prop_assert_eq!(db.locks_held(), 0);
    prop_assert!(db.active().is_empty());
    Ok(())
}

/// Under repeatable read the snapshot is fixed at the first statement; the
/// model records who had committed then.
fn ensure_snap(o: &mut Open<'_>, model: &Model) -> RefSnap {
    if o.txn.isolation() == Isolation::ReadCommitted {
        return RefSnap { committed: model.committed.clone(), own: o.txn.id() };
    }
    if o.snap.is_none() {
        o.txn.statement_snapshot().unwrap();
        o.snap = Some(RefSnap { committed: model.committed.clone(), own: o.txn.id() });
    }
    o.snap.clone().unwrap()
}

fn undo(model: &mut Model, locked: &mut BTreeMap<usize, u64>, o: &Open<'_>) {
    let id = o.txn.id();
    for &vid in o.wrote.iter().rev() {
        let popped = model.chains[vid].pop();
        assert_eq!(popped.map(|p| p.0), Some(id));
    }
    locked.retain(|_, h| *h != id);
}

#[test]
fn ndp_host_and_model_agree_on_every_profile() {
    let which = std::env::var("DIFF_PROFILES").unwrap_or_default();
    for (profile, cases) in [("u280-nvm", 24), ("cosmos-plus", 8), ("softssd", 8), ("ideal", 8), ("nvme-ssd", 4)]
        .into_iter()
        .filter(|(p, _)| which.is_empty() || which.contains(p))
    {
        let mut runner = TestRunner::new(Config { cases, ..Config::default() });
        runner
            .run(&(0usize..400, proptest::collection::vec(op(), 10..120)), |(initial, ops)| run(profile, initial, &ops))
            .unwrap_or_else(|e| panic!("{profile}: {e}"));
    }
    // The runs must have compared something.
    let (checks, rows, ndp) =
        (CHECKS.load(Ordering::Relaxed), ROWS_SEEN.load(Ordering::Relaxed), NDP_CHECKS.load(Ordering::Relaxed));
    let gc = GC_REMOVED.load(Ordering::Relaxed);
    eprintln!("{checks} checks ({ndp} on the device) over {rows} visible rows; GC removed {gc} versions");
    assert!(gc > 0, "garbage collection never removed anything");
    assert!(checks > 50 && ndp > 20 && rows > 5000, "too little was compared: {checks} checks, {ndp} NDP, {rows} rows");
}
