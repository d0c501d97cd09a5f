//! Serializable reads by a unique key (`store/index/read.rs`, "Serializable
//! reads"): a primary-key lookup that finds its row marks only that row,
//! so transactions on different rows both commit; anything else marks the
//! table, so write skew and phantoms through keys still fail one side.

mod session_support;

use ndpdb_sql::session::Session;
use session_support::{engine, ok, text};

/// Runs `sql`; the SQLSTATE of its error, if any.
fn code(s: &mut Session, sql: &str) -> Option<&'static str> {
    s.run(sql).into_iter().find_map(Result::err).map(|e| e.code.0)
}

fn setup(dir: &std::path::Path) -> (Session, Session, Session) {
    let eng = engine(dir);
    let mut admin = eng.session();
    ok(&mut admin, "CREATE TABLE acct (id integer PRIMARY KEY, balance bigint)");
    ok(&mut admin, "INSERT INTO acct VALUES (1, 100), (2, 100), (3, 100)");
    let (mut a, mut b) = (eng.session(), eng.session());
    ok(&mut a, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    ok(&mut b, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    (admin, a, b)
}

#[test]
fn point_reads_and_writes_of_different_rows_both_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (mut admin, mut a, mut b) = setup(dir.path());
    let plan = text(&ok(&mut a, "EXPLAIN SELECT balance FROM acct WHERE id = 1")).join("\n");
    assert!(plan.contains("Index Scan using acct_pkey"), "{plan}");
    assert_eq!(text(&ok(&mut a, "SELECT balance FROM acct WHERE id = 1")), ["100"]);
    assert_eq!(text(&ok(&mut b, "SELECT balance FROM acct WHERE id = 2")), ["100"]);
    ok(&mut a, "UPDATE acct SET balance = balance - 10 WHERE id = 1");
    ok(&mut b, "UPDATE acct SET balance = balance + 10 WHERE id = 2");
    ok(&mut a, "COMMIT");
    ok(&mut b, "COMMIT");
    assert_eq!(text(&ok(&mut admin, "SELECT id, balance FROM acct ORDER BY id")), ["1|90", "2|110", "3|100"]);
}

#[test]
fn write_skew_through_key_reads_fails_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (mut admin, mut a, mut b) = setup(dir.path());
    // Each checks both balances, then takes from its own row.
    for s in [&mut a, &mut b] {
        ok(s, "SELECT balance FROM acct WHERE id = 1");
        ok(s, "SELECT balance FROM acct WHERE id = 2");
    }
    ok(&mut a, "UPDATE acct SET balance = balance - 150 WHERE id = 1");
    let b_write = code(&mut b, "UPDATE acct SET balance = balance - 150 WHERE id = 2");
    let a_commit = code(&mut a, "COMMIT");
    let b_commit = code(&mut b, "COMMIT");
    let failures = [b_write, a_commit, b_commit].iter().filter(|c| **c == Some("40001")).count();
    assert_eq!(failures, 1, "write: {b_write:?}, commits: {a_commit:?} {b_commit:?}");
    let sum = text(&ok(&mut admin, "SELECT sum(balance) FROM acct WHERE id IN (1, 2)"));
    assert_eq!(sum, ["50"], "exactly one withdrawal of 150 went through");
}

#[test]
fn a_key_read_that_finds_nothing_still_sees_the_phantom() {
    let dir = tempfile::tempdir().unwrap();
    let (mut admin, mut a, mut b) = setup(dir.path());
    // Each inserts the key the other looked for and did not find.
    assert!(text(&ok(&mut a, "SELECT balance FROM acct WHERE id = 5")).is_empty());
    assert!(text(&ok(&mut b, "SELECT balance FROM acct WHERE id = 6")).is_empty());
    let a_write = code(&mut a, "INSERT INTO acct VALUES (6, 0)");
    let b_write = code(&mut b, "INSERT INTO acct VALUES (5, 0)");
    let a_commit = code(&mut a, "COMMIT");
    let b_commit = code(&mut b, "COMMIT");
    let outcomes = [a_write, b_write, a_commit, b_commit];
    assert_eq!(outcomes.iter().filter(|c| **c == Some("40001")).count(), 1, "{outcomes:?}");
    assert_eq!(text(&ok(&mut admin, "SELECT count(*) FROM acct WHERE id IN (5, 6)")), ["1"]);
}

#[test]
fn a_key_read_of_a_row_deleted_since_marks_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let (mut admin, mut a, mut b) = setup(dir.path());
    ok(&mut admin, "DELETE FROM acct WHERE id = 3");
    // The snapshots are taken at the first statement: both see id 3 gone,
    // so their reads of it mark the table.
    assert!(text(&ok(&mut a, "SELECT balance FROM acct WHERE id = 3")).is_empty());
    assert!(text(&ok(&mut b, "SELECT balance FROM acct WHERE id = 4")).is_empty());
    let a_write = code(&mut a, "INSERT INTO acct VALUES (4, 0)");
    let b_write = code(&mut b, "INSERT INTO acct VALUES (3, 0)");
    let outcomes = [a_write, b_write, code(&mut a, "COMMIT"), code(&mut b, "COMMIT")];
    assert_eq!(outcomes.iter().filter(|c| **c == Some("40001")).count(), 1, "{outcomes:?}");
}
