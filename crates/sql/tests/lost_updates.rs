//! Concurrent transfers lose no update: N sessions on one engine move
//! amounts between accounts (`UPDATE acc SET bal = bal - x WHERE id = a`,
//! then `+ x` on `b`, and a row in a log table, in one transaction),
//! retrying 40001 and 40P01, while readers check that a read committed
//! `SELECT sum(bal)` sees the total and that a repeatable read transaction
//! sees the same total each time. At the end the sum is unchanged and each
//! account's balance is its start plus the committed transfers of the log
//! (every committed transfer applied exactly once).
//!
//! The regression test of two bugs in `ndpdb-txn`'s `locks.rs`. Lost
//! updates under read committed: a writer granted a tuple lock keyed on a
//! version that its holder's commit had just made stale kept it, while a
//! later writer locked the new version's key, so both re-checked and
//! wrote the same row. And a hang with 12 writers: more writers queued on
//! a row than its lock bucket has slots, and the one waiting for a slot
//! was not in the waits-for graph, so a deadlock through it was never
//! detected.

mod session_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ndpdb_sql::SqlError;
use ndpdb_sql::session::{Engine, Session};
use ndpdb_sql::types::Value;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use session_support::{engine, ok};

const ACCOUNTS: i64 = 8;
const START: i64 = 1000;
const TRANSFERS: usize = 100;

fn int(v: &Value) -> i64 {
    match v {
        Value::Int64(x) => *x,
        Value::Int32(x) => i64::from(*x),
        other => panic!("not an integer: {other:?}"),
    }
}

/// Whether `e` is a failure a client retries (serialization, deadlock).
fn retryable(e: &SqlError) -> bool {
    matches!(e.code.0, "40001" | "40P01")
}

/// Runs one transfer as a transaction; Err on a retryable failure (the
/// transaction rolled back), panics on any other.
fn transfer(s: &mut Session, level: &str, id: i64, a: i64, b: i64, x: i64) -> Result<(), SqlError> {
    let stmts = [
        format!("BEGIN ISOLATION LEVEL {level}"),
        format!("UPDATE acc SET bal = bal - {x} WHERE id = {a}"),
        format!("UPDATE acc SET bal = bal + {x} WHERE id = {b}"),
        format!("INSERT INTO xfer VALUES ({id}, {a}, {b}, {x})"),
        "COMMIT".to_string(),
    ];
    for sql in &stmts {
        let r = s.run(sql).pop().expect("a result");
        match r {
            Ok(r) if sql.starts_with("UPDATE") => assert_eq!(r.tag, "UPDATE 1", "{sql}"),
            Ok(_) => {}
            Err(e) if retryable(&e) => {
                s.run("ROLLBACK");
                return Err(e);
            }
            Err(e) => panic!("{sql}: {e:?}"),
        }
    }
    Ok(())
}

fn writer(engine: Arc<Engine>, w: usize, level: &'static str) -> usize {
    let mut s = engine.session();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x5eed + w as u64);
    let mut retries = 0;
    for i in 0..TRANSFERS {
        let id = (w * TRANSFERS + i) as i64;
        let a = rng.random_range(0..ACCOUNTS);
        let b = (a + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
        let x = rng.random_range(1..50);
        while transfer(&mut s, level, id, a, b, x).is_err() {
            retries += 1;
        }
    }
    retries
}

fn sum(s: &mut Session) -> i64 {
    int(&ok(s, "SELECT sum(bal) FROM acc").rows[0][0])
}

/// Reads the total until `done`: read committed statements, and repeatable
/// read transactions reading it three times. Returns the reads made.
fn reader(engine: Arc<Engine>, done: Arc<AtomicBool>) -> usize {
    let mut s = engine.session();
    let total = ACCOUNTS * START;
    let mut reads = 0;
    while !done.load(Ordering::Relaxed) {
        assert_eq!(sum(&mut s), total, "a read committed sum");
        ok(&mut s, "BEGIN ISOLATION LEVEL REPEATABLE READ");
        let first = sum(&mut s);
        for _ in 0..2 {
            assert_eq!(sum(&mut s), first, "a repeatable read transaction's sums differ");
        }
        ok(&mut s, "COMMIT");
        assert_eq!(first, total, "a repeatable read sum");
        reads += 4;
        // Leave the cores to the writers (two cores in CI).
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    reads
}

/// `writers` sessions at `level` (read committed or repeatable read) and
/// two readers; then the invariants.
fn run(writers: usize, levels: &[&'static str]) {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let mut s = engine.session();
    ok(&mut s, "CREATE TABLE acc (id integer PRIMARY KEY, bal integer)");
    ok(&mut s, "CREATE TABLE xfer (id integer, a integer, b integer, x integer)");
    let rows: Vec<String> = (0..ACCOUNTS).map(|i| format!("({i}, {START})")).collect();
    ok(&mut s, &format!("INSERT INTO acc VALUES {}", rows.join(", ")));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (e, d) = (engine.clone(), done.clone());
            std::thread::spawn(move || reader(e, d))
        })
        .collect();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (e, level) = (engine.clone(), levels[w % levels.len()]);
            std::thread::spawn(move || writer(e, w, level))
        })
        .collect();
    let retries: usize = handles.into_iter().map(|h| h.join().expect("a writer panicked")).sum();
    done.store(true, Ordering::Relaxed);
    let reads: usize = readers.into_iter().map(|h| h.join().expect("a reader panicked")).sum();
    eprintln!("{writers} writers {levels:?}: {} transfers, {retries} retries, {reads} reads", writers * TRANSFERS);

    assert_eq!(sum(&mut s), ACCOUNTS * START, "the total changed");
    let logged = ok(&mut s, "SELECT count(*), count(DISTINCT id) FROM xfer");
    assert_eq!(int(&logged.rows[0][0]), (writers * TRANSFERS) as i64, "committed transfers");
    assert_eq!(int(&logged.rows[0][1]), (writers * TRANSFERS) as i64, "a transfer committed twice");
    let mut want = vec![START; ACCOUNTS as usize];
    for r in ok(&mut s, "SELECT a, b, x FROM xfer").rows {
        want[int(&r[0]) as usize] -= int(&r[2]);
        want[int(&r[1]) as usize] += int(&r[2]);
    }
    let got: Vec<i64> = ok(&mut s, "SELECT bal FROM acc ORDER BY id").rows.iter().map(|r| int(&r[0])).collect();
    assert_eq!(got, want, "balances against the log of committed transfers");
}

#[test]
fn read_committed_transfers_lose_no_update() {
    run(8, &["READ COMMITTED"]);
}

#[test]
fn repeatable_read_transfers_lose_no_update() {
    run(8, &["REPEATABLE READ"]);
}

#[test]
fn mixed_level_transfers_lose_no_update() {
    run(12, &["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"]);
}
