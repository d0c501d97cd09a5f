//! The crash harness's worker (`ndpdb bench crash-worker`): opens the
//! database (recovering the previous crash), then runs the mixed workload of
//! the module docs until the process is killed or the device fails, saying
//! each transaction's writes before its commit (`W`) and the commit after it
//! returns (`A`).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use ndpdb_device::{ClockKind, Device, DeviceOptions, Faults};
use ndpdb_format::ndp::{CmpOp, Predicate, UpdateExpr};
use ndpdb_format::schema::Value;
use ndpdb_storage::{Store, Table};
use ndpdb_txn::{Database, Isolation, Txn, TxnError};

use super::{TABLE, XorShift, profile, store_options};

/// Transactions between the worker's explicit checkpoints (besides those
/// a filling log starts).
const CHECKPOINT_EVERY: u64 = 200;
/// About one transaction in this many starts a straggler.
const STRAGGLER_ONE_IN: u64 = 40;

/// A transaction that updates one key and stays open while the next ones
/// run and checkpoints pass it (fuzzy checkpoints), then commits. The
/// others leave its key alone (one thread: they would wait for it forever).
struct Straggler<'db> {
    txn: Txn<'db>,
    key: u64,
    value: i64,
    /// The transaction number at which it commits.
    until: u64,
}

/// The worker: open (recovering), then run the mixed workload until the
/// process is killed or the device fails (see the module docs).
pub fn worker(dir: &Path, profile_name: &str, seed: u64, faults: Faults) -> Result<()> {
    let opts = DeviceOptions { faults, ..DeviceOptions::with_clock(ClockKind::Virtual) };
    let dev = Device::open(dir, profile(profile_name)?, opts)?;
    let (store, meta) = Store::open(dev, store_options())?;
    let db = Database::open(store, meta);
    let t = db.table(TABLE)?;
    let mut rng = XorShift::new(seed);
    let mut seq = 0u64;
    let mut straggler: Option<Straggler<'_>> = None;
    loop {
        seq += 1;
        if seq.is_multiple_of(CHECKPOINT_EVERY) {
            db.gc()?;
            db.checkpoint()?;
        }
        if straggler.as_ref().is_some_and(|s| seq >= s.until) {
            let s = straggler.take().expect("checked above");
            commit_logged(s.txn, seq, &format!("S {} {}", s.key, s.value))?;
            continue;
        }
        if straggler.is_none() && rng.next_u64().is_multiple_of(STRAGGLER_ONE_IN) {
            straggler = start_straggler(&db, &t, &mut rng, seq)?;
            continue;
        }
        let avoid = straggler.as_ref().map(|s| s.key);
        let mut tx = db.begin(if rng.next_u64().is_multiple_of(2) {
            Isolation::RepeatableRead
        } else {
            Isolation::ReadCommitted
        });
        let mut ops: Vec<String> = Vec::new();
        match mixed(&mut tx, &t, &mut rng, avoid, &mut ops) {
            Ok(true) => {}
            Ok(false) => {
                tx.abort()?;
                continue;
            }
            Err(TxnError::Serialization(_) | TxnError::Deadlock) => continue,
            Err(e) => return Err(e.into()),
        }
        commit_logged(tx, seq, &ops.join(" "))?;
    }
}

/// Says the writes (`W seq ops`), commits, and says the commit (`A seq`).
fn commit_logged(tx: Txn<'_>, seq: u64, ops: &str) -> Result<()> {
    let stdout = std::io::stdout();
    {
        let mut o = stdout.lock();
        writeln!(o, "W {seq} {ops}")?;
        o.flush()?;
    }
    tx.commit()?;
    let mut o = stdout.lock();
    writeln!(o, "A {seq}")?;
    o.flush()?;
    Ok(())
}

/// Updates a random key in a transaction left open for the next tens of
/// transactions; None when the key was deleted.
fn start_straggler<'db>(
    db: &'db Database,
    t: &Arc<Table>,
    rng: &mut XorShift,
    seq: u64,
) -> Result<Option<Straggler<'db>>> {
    let key = rng.next_u64() % t.vids().max(1);
    let value = (rng.next_u64() % 100_000) as i64;
    let mut txn = db.begin(Isolation::ReadCommitted);
    match txn.update(t, key, &[Value::Int(key as i64), Value::Int(value)]) {
        Ok(()) => Ok(Some(Straggler { txn, key, value, until: seq + 10 + rng.next_u64() % 200 })),
        Err(TxnError::NotFound { .. }) => {
            txn.abort()?;
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// A key in `0..n` other than `avoid` (the straggler's); `n` > 1 whenever
/// there is a straggler, as it holds one key of a loaded table.
fn other_key(rng: &mut XorShift, n: u64, avoid: Option<u64>) -> u64 {
    let k = rng.next_u64() % n;
    if Some(k) == avoid && n > 1 { (k + 1) % n } else { k }
}

/// One transaction of the mix (host updates, an insert, a delete,
/// update-NDP, or one aborted on purpose), its writes said in `ops`.
/// Ok(true): commit it; Ok(false): abort it.
fn mixed(
    tx: &mut Txn<'_>,
    t: &Arc<Table>,
    rng: &mut XorShift,
    avoid: Option<u64>,
    ops: &mut Vec<String>,
) -> std::result::Result<bool, TxnError> {
    let kind = rng.next_u64() % 20;
    let n = t.vids().max(1);
    match kind {
        0..=9 => {
            for _ in 0..1 + rng.next_u64() % 3 {
                let k = other_key(rng, n, avoid);
                let v = (rng.next_u64() % 100_000) as i64;
                match tx.update(t, k, &[Value::Int(k as i64), Value::Int(v)]) {
                    Ok(()) => ops.push(format!("S {k} {v}")),
                    Err(TxnError::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        10..=12 => {
            let k = t.vids();
            let v = (rng.next_u64() % 100_000) as i64;
            let vid = tx.insert(t, &[Value::Int(k as i64), Value::Int(v)])?;
            assert_eq!(vid, k, "one worker thread: VIDs follow table length");
            ops.push(format!("I {k} {v}"));
        }
        13..=14 => {
            let k = other_key(rng, n, avoid);
            match tx.delete(t, k) {
                Ok(()) => ops.push(format!("D {k}")),
                Err(TxnError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        15..=17 => {
            let k = other_key(rng, n, avoid);
            let d = (rng.next_u64() % 100) as i64 - 50;
            let p = Predicate::int(0, CmpOp::Eq, k as i64);
            if tx.ndp_update(t, 1, UpdateExpr::Add(d), Some(&p), 2)? > 0 {
                ops.push(format!("+ {k} {d}"));
            }
        }
        _ => {
            let k = other_key(rng, n, avoid);
            let _ = tx.update(t, k, &[Value::Int(k as i64), Value::Int(-1)]);
            return Ok(false);
        }
    }
    Ok(true)
}
