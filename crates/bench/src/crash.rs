//! The crash harness (`ndpdb bench crash`): crash a database at random
//! moments, recover it, check it, and verify every acknowledged commit.
//!
//! Each crash point runs a worker (`ndpdb bench crash-worker`, a child
//! process) on the same database directory. The worker opens the database
//! (recovering the previous crash), then runs a mixed workload of one-at-a-
//! time transactions on table `kv (k int64, v int64)`: host updates of one
//! to three keys, inserts, deletes, update-NDP (`v = v + d WHERE k = x`
//! on the device's PEs) and transactions it aborts. Now and then a
//! straggler updates one key and stays open for the next tens of
//! transactions, and every 200 transactions the worker collects garbage and
//! checkpoints, so both run while transactions are open (fuzzy checkpoints),
//! and the small image reuses its pages all the time. Before
//! each commit it prints the transaction's writes (`W`), after the commit
//! returns it prints the acknowledgement (`A`). The crash is one of:
//!
//! - `sigkill`: the harness kills the worker (SIGKILL) after a random delay;
//!   everything the device was sent survives (the medium is the file);
//! - `fail`: the device fails command `n` and every command after it;
//! - `torn`: the device writes only the first sectors of page write `n`,
//!   then fails it and every command after it.
//!
//! Then the harness opens the database itself (recovery), runs the
//! integrity check ([`ndpdb_storage::Store::check`]), reads every tuple and
//! compares with its model: the state before the point plus every
//! acknowledged transaction, and possibly the one transaction whose commit
//! was under way (durable but not acknowledged is allowed; acknowledged but
//! missing is a lost commit). It checkpoints and goes on to the next point,
//! so later points also recover databases that earlier points recovered.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Faults, Profile};
use ndpdb_format::ndp::{CmpOp, Predicate, UpdateExpr};
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode, TxnError};
use serde::Serialize;

/// The harness's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub points: u32,
    pub seed: u64,
    pub profile: String,
    /// Tuples loaded before the first point.
    pub rows: u64,
    /// The `ndpdb` binary that runs the workers.
    pub exe: PathBuf,
    /// Database directory (created).
    pub dir: PathBuf,
}

/// One crash point.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub point: u32,
    pub crash: &'static str,
    /// Delay (sigkill) or command number (fail, torn).
    pub at: u64,
    pub acknowledged_commits: u64,
    /// The commit under way at the crash survived (allowed).
    pub unacknowledged_survived: bool,
    pub lost_commits: u64,
    pub integrity_errors: u64,
    pub recovered_records: u64,
    pub log_truncated: bool,
    pub recovery_s: f64,
}

/// The run's summary line.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub crash_points: u64,
    pub acknowledged_commits: u64,
    pub lost_commits: u64,
    pub integrity_errors: u64,
    pub log_truncations: u64,
    pub sigkill: u64,
    pub fail: u64,
    pub torn: u64,
    pub recovery_s_max: f64,
    pub recovery_s_mean: f64,
    pub profile: String,
    pub seed: u64,
    pub wall_s: f64,
}

/// Key -> value of every live tuple.
type State = BTreeMap<i64, i64>;

/// One write of a logged transaction, as the worker prints it.
#[derive(Debug, Clone, PartialEq)]
enum Op {
    Set(i64, i64),
    Insert(i64, i64),
    Delete(i64),
    Add(i64, i64),
}

fn apply(state: &mut State, ops: &[Op]) {
    for op in ops {
        match *op {
            Op::Set(k, v) | Op::Insert(k, v) => {
                state.insert(k, v);
            }
            Op::Delete(k) => {
                state.remove(&k);
            }
            Op::Add(k, d) => {
                if let Some(v) = state.get_mut(&k) {
                    *v += d;
                }
            }
        }
    }
}

fn parse_ops(words: &[&str]) -> Result<Vec<Op>> {
    let mut ops = Vec::new();
    let mut it = words.iter();
    let num = |w: Option<&&str>| -> Result<i64> { Ok(w.context("truncated op")?.parse()?) };
    while let Some(&w) = it.next() {
        ops.push(match w {
            "S" => Op::Set(num(it.next())?, num(it.next())?),
            "I" => Op::Insert(num(it.next())?, num(it.next())?),
            "D" => Op::Delete(num(it.next())?),
            "+" => Op::Add(num(it.next())?, num(it.next())?),
            other => bail!("unknown op `{other}`"),
        });
    }
    Ok(ops)
}

fn profile(name: &str) -> Result<Profile> {
    Profile::load(name).with_context(|| format!("loading profile `{name}`"))
}

fn store_options() -> StoreOptions {
    StoreOptions { log_bytes: 16 << 20, ..StoreOptions::default() }
}

fn columns() -> Vec<Column> {
    vec![Column::new("k", ColumnType::Int64, false), Column::new("v", ColumnType::Int64, false)]
}

fn read_state(db: &Database) -> Result<State> {
    let t = db.table("kv")?;
    let mut r = db.begin(Isolation::RepeatableRead);
    let rows = r.rows(&t, &[0, 1], None, ReadMode::Host { workers: 2 })?.rows;
    r.commit()?;
    let mut s = State::new();
    for (_, vals) in rows {
        match (&vals[0], &vals[1]) {
            (Value::Int(k), Value::Int(v)) => {
                s.insert(*k, *v);
            }
            other => bail!("tuple {other:?} is not (int, int)"),
        }
    }
    Ok(s)
}

/// Runs the harness; `on_point` sees each point as it ends.
pub fn run(cfg: &Config, mut on_point: impl FnMut(&Point)) -> Result<Summary> {
    let t0 = Instant::now();
    let prof = profile(&cfg.profile)?;
    if prof.coherent.is_none() {
        bail!(
            "profile {} has no coherent interconnect, so the workload's update-NDP cannot run; use u280-nvm",
            cfg.profile
        );
    }
    let mut model = {
        let dev = Device::create(
            &cfg.dir,
            prof.clone(),
            Some(CAPACITY_BYTES),
            DeviceOptions::with_clock(ClockKind::Virtual),
        )?;
        let db = Database::create(Store::new(dev, store_options())?)?;
        let t = db.create_table("kv", columns())?;
        let mut w = db.begin(Isolation::ReadCommitted);
        for k in 0..cfg.rows {
            w.insert(&t, &[Value::Int(k as i64), Value::Int(1000)])?;
        }
        w.commit()?;
        db.checkpoint()?;
        read_state(&db)?
    };
    let mut rng = cfg.seed | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut sum = Summary { profile: cfg.profile.clone(), seed: cfg.seed, ..Summary::default() };
    let mut recovery_total = 0.0;
    for point in 0..cfg.points {
        let (crash, at) = match next() % 10 {
            0..=5 => ("sigkill", 30 + next() % 400),
            6..=7 => ("fail", 40 + next() % 1500),
            _ => ("torn", 40 + next() % 1500),
        };
        let mut cmd = Process::new(&cfg.exe);
        cmd.args(["bench", "crash-worker", "--db"]).arg(&cfg.dir).args([
            "--profile",
            &cfg.profile,
            "--seed",
            &(cfg.seed ^ u64::from(point) << 20).to_string(),
        ]);
        match crash {
            "fail" => {
                cmd.args(["--fail-from", &at.to_string()]);
            }
            "torn" => {
                cmd.args(["--torn-at", &at.to_string(), "--torn-sectors", &(1 + next() % 15).to_string()]);
            }
            _ => {}
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting the worker {}", cfg.exe.display()))?;
        let out = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || BufReader::new(out).lines().map_while(|l| l.ok()).collect::<Vec<_>>());
        if crash == "sigkill" {
            std::thread::sleep(Duration::from_millis(at));
            let _ = child.kill();
        } else {
            // A worker that never reaches the fault is killed after a while.
            let deadline = Instant::now() + Duration::from_secs(20);
            while child.try_wait()?.is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = child.kill();
        }
        child.wait()?;
        let lines = reader.join().map_err(|_| anyhow::anyhow!("the reader thread panicked"))?;
        // Acknowledged transactions in order, and the one under way.
        let mut acked: Vec<Vec<Op>> = Vec::new();
        let mut pending: Option<(u64, Vec<Op>)> = None;
        for l in &lines {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.first().copied() {
                Some("W") => pending = Some((w[1].parse()?, parse_ops(&w[2..])?)),
                Some("A") => {
                    let seq: u64 = w[1].parse()?;
                    match pending.take() {
                        Some((s, ops)) if s == seq => acked.push(ops),
                        other => bail!("worker acknowledged {seq} but was writing {other:?}"),
                    }
                }
                _ => {}
            }
        }
        // Recover and verify.
        let dev = Device::open(&cfg.dir, prof.clone(), DeviceOptions::with_clock(ClockKind::Virtual))?;
        let (store, meta, rec) = Store::open_with_report(dev, store_options()).context("recovery")?;
        let db = Database::open(store, meta);
        let report = db.store().check()?;
        let state = read_state(&db)?;
        let mut expected = model.clone();
        for ops in &acked {
            apply(&mut expected, ops);
        }
        let mut with_pending = expected.clone();
        if let Some((_, ops)) = &pending {
            apply(&mut with_pending, ops);
        }
        let (lost, survived) = if state == expected {
            (0, false)
        } else if pending.is_some() && state == with_pending {
            (0, true)
        } else {
            // Count acknowledged transactions with a write the state lacks
            // (at least one: the state matches neither model).
            let lost = acked
                .iter()
                .filter(|ops| {
                    ops.iter().any(|o| {
                        let (Op::Set(k, _) | Op::Insert(k, _) | Op::Delete(k) | Op::Add(k, _)) = *o;
                        state.get(&k) != with_pending.get(&k) && state.get(&k) != expected.get(&k)
                    })
                })
                .count() as u64;
            (lost.max(1), false)
        };
        model = state;
        db.checkpoint().context("checkpoint after recovery")?;
        drop(db);
        let p = Point {
            point,
            crash,
            at,
            acknowledged_commits: acked.len() as u64,
            unacknowledged_survived: survived,
            lost_commits: lost,
            integrity_errors: report.error_count(),
            recovered_records: rec.records,
            log_truncated: rec.truncated.is_some(),
            recovery_s: rec.wall_s,
        };
        if !report.errors.is_empty() {
            for e in report.errors.iter().take(5) {
                eprintln!("crash point {point}: integrity: {e}");
            }
        }
        on_point(&p);
        sum.crash_points += 1;
        sum.acknowledged_commits += p.acknowledged_commits;
        sum.lost_commits += p.lost_commits;
        sum.integrity_errors += p.integrity_errors;
        sum.log_truncations += u64::from(p.log_truncated);
        match crash {
            "sigkill" => sum.sigkill += 1,
            "fail" => sum.fail += 1,
            _ => sum.torn += 1,
        }
        sum.recovery_s_max = sum.recovery_s_max.max(p.recovery_s);
        recovery_total += p.recovery_s;
    }
    sum.recovery_s_mean = if sum.crash_points > 0 { recovery_total / sum.crash_points as f64 } else { 0.0 };
    sum.wall_s = t0.elapsed().as_secs_f64();
    Ok(sum)
}

/// The harness's image: small, so that crashes hit a device whose pages
/// are reused all the time. The worker collects garbage before each of its
/// checkpoints, so each point reuses pages that earlier points gave up.
/// GC compacts sparse pages only when no transaction is open, and the
/// worker's straggler is often open when it runs, so the heap may still
/// grow slowly (before compaction: 32 MiB filled in 1,000 points).
const CAPACITY_BYTES: u64 = 128 << 20;

/// Transactions between the worker's explicit checkpoints (besides those
/// a filling log starts).
const CHECKPOINT_EVERY: u64 = 200;
/// About one transaction in this many starts a straggler.
const STRAGGLER_ONE_IN: u64 = 40;

/// A key in `0..n` other than `avoid` (the straggler's); `n` > 1 whenever
/// there is a straggler, as it holds one key of a loaded table.
fn other_key(next: &mut impl FnMut() -> u64, n: u64, avoid: Option<u64>) -> u64 {
    let k = next() % n;
    if Some(k) == avoid && n > 1 { (k + 1) % n } else { k }
}

/// The worker: open (recovering), then run the mixed workload until the
/// process is killed or the device fails (see the module docs).
pub fn worker(dir: &Path, profile_name: &str, seed: u64, faults: Faults) -> Result<()> {
    let opts = DeviceOptions { faults, ..DeviceOptions::with_clock(ClockKind::Virtual) };
    let dev = Device::open(dir, profile(profile_name)?, opts)?;
    let (store, meta) = Store::open(dev, store_options())?;
    let db = Database::open(store, meta);
    let t = db.table("kv")?;
    let mut rng = seed | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let stdout = std::io::stdout();
    let mut seq = 0u64;
    // A straggler: a transaction that updates one key and stays open while
    // the next ones run and checkpoints pass it (fuzzy checkpoints), then
    // commits. The others leave its key alone (one thread: they would wait
    // for it forever).
    let mut straggler: Option<(ndpdb_txn::Txn<'_>, u64, i64, u64)> = None;
    loop {
        seq += 1;
        if seq.is_multiple_of(CHECKPOINT_EVERY) {
            db.gc()?;
            db.checkpoint()?;
        }
        if straggler.as_ref().is_some_and(|s| seq >= s.3) {
            let (tx, k, v, _) = straggler.take().expect("checked above");
            {
                let mut o = stdout.lock();
                writeln!(o, "W {seq} S {k} {v}")?;
                o.flush()?;
            }
            tx.commit()?;
            let mut o = stdout.lock();
            writeln!(o, "A {seq}")?;
            o.flush()?;
            continue;
        }
        if straggler.is_none() && next().is_multiple_of(STRAGGLER_ONE_IN) {
            let (k, v) = (next() % t.vids().max(1), (next() % 100_000) as i64);
            let mut tx = db.begin(Isolation::ReadCommitted);
            match tx.update(&t, k, &[Value::Int(k as i64), Value::Int(v)]) {
                Ok(()) => straggler = Some((tx, k, v, seq + 10 + next() % 200)),
                Err(TxnError::NotFound { .. }) => tx.abort()?,
                Err(e) => return Err(e.into()),
            }
            continue;
        }
        let avoid = straggler.as_ref().map(|s| s.1);
        let mut tx = db.begin(if next() % 2 == 0 { Isolation::RepeatableRead } else { Isolation::ReadCommitted });
        let mut ops: Vec<String> = Vec::new();
        let kind = next() % 20;
        // Ok(true): commit; Ok(false): abort on purpose.
        let outcome: std::result::Result<bool, TxnError> = (|| {
            let n = t.vids().max(1);
            match kind {
                0..=9 => {
                    for _ in 0..1 + next() % 3 {
                        let k = other_key(&mut next, n, avoid);
                        let v = (next() % 100_000) as i64;
                        match tx.update(&t, k, &[Value::Int(k as i64), Value::Int(v)]) {
                            Ok(()) => ops.push(format!("S {k} {v}")),
                            Err(TxnError::NotFound { .. }) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                10..=12 => {
                    let k = t.vids();
                    let v = (next() % 100_000) as i64;
                    let vid = tx.insert(&t, &[Value::Int(k as i64), Value::Int(v)])?;
                    assert_eq!(vid, k, "one worker thread: VIDs follow table length");
                    ops.push(format!("I {k} {v}"));
                }
                13..=14 => {
                    let k = other_key(&mut next, n, avoid);
                    match tx.delete(&t, k) {
                        Ok(()) => ops.push(format!("D {k}")),
                        Err(TxnError::NotFound { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                15..=17 => {
                    let k = other_key(&mut next, n, avoid);
                    let d = (next() % 100) as i64 - 50;
                    let p = Predicate { column: 0, op: CmpOp::Eq, value: k as i64 };
                    if tx.ndp_update(&t, 1, UpdateExpr::Add(d), Some(p), 2)? > 0 {
                        ops.push(format!("+ {k} {d}"));
                    }
                }
                _ => {
                    let k = other_key(&mut next, n, avoid);
                    let _ = tx.update(&t, k, &[Value::Int(k as i64), Value::Int(-1)]);
                    return Ok(false);
                }
            }
            Ok(true)
        })();
        match outcome {
            Ok(true) => {}
            Ok(false) => {
                tx.abort()?;
                continue;
            }
            Err(TxnError::Serialization(_) | TxnError::Deadlock) => continue,
            Err(e) => return Err(e.into()),
        }
        {
            let mut o = stdout.lock();
            writeln!(o, "W {seq} {}", ops.join(" "))?;
            o.flush()?;
        }
        tx.commit()?;
        let mut o = stdout.lock();
        writeln!(o, "A {seq}")?;
        o.flush()?;
    }
}
