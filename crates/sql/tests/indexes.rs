//! B+-tree indexes end to end: plans that use them, results equal to
//! sequential scans, unique checks between sessions, MVCC through an index,
//! index builds and drops, prepared lookups, rebuild at open, and a crash
//! after commit (a child process aborts; the parent reopens and looks up).

use std::path::Path;

use ndpdb_sql::SqlState;
use ndpdb_sql::session::Session;
use ndpdb_sql::types::Value;

mod session_support;

use session_support::{engine, err, ok, text};

fn plan(s: &mut Session, sql: &str) -> String {
    text(&ok(s, &format!("EXPLAIN {sql}"))).join("\n")
}

/// `t(id bigint PRIMARY KEY, g integer, name text)` with ids 0..n.
fn load(s: &mut Session, n: i64) {
    ok(s, "CREATE TABLE t (id bigint PRIMARY KEY, g integer, name text)");
    for start in (0..n).step_by(1000) {
        let rows: Vec<String> = (start..n.min(start + 1000)).map(|x| format!("({x}, {}, 'n{x}')", x % 10)).collect();
        ok(s, &format!("INSERT INTO t VALUES {}", rows.join(", ")));
    }
}

#[test]
fn point_and_range_lookups_use_the_primary_key_and_match_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    load(&mut s, 5000);
    ok(&mut s, "ANALYZE");
    let p = plan(&mut s, "SELECT name FROM t WHERE id = 77");
    assert!(p.contains("Index Scan using t_pkey on t") && p.contains("Index Cond"), "{p}");
    assert_eq!(text(&ok(&mut s, "SELECT name FROM t WHERE id = 77")), ["n77"]);
    assert_eq!(text(&ok(&mut s, "SELECT name FROM t WHERE 4999 = id")), ["n4999"]);
    assert!(text(&ok(&mut s, "SELECT name FROM t WHERE id = 5000")).is_empty());
    let p = plan(&mut s, "SELECT id FROM t WHERE id > 10 AND id <= 14");
    assert!(p.contains("Index Scan using t_pkey"), "{p}");
    assert_eq!(text(&ok(&mut s, "SELECT id FROM t WHERE id > 10 AND id <= 14 ORDER BY id")), ["11", "12", "13", "14"]);
    // bounds of other types: exact conversions, and ones no key can equal
    assert_eq!(text(&ok(&mut s, "SELECT id FROM t WHERE id = 12.0")), ["12"]);
    assert!(text(&ok(&mut s, "SELECT id FROM t WHERE id = 12.5")).is_empty());
    assert_eq!(text(&ok(&mut s, "SELECT count(*) FROM t WHERE id < 2.5")), ["3"]);
    // a secondary index over two columns, used by its prefix
    ok(&mut s, "CREATE INDEX t_g_name ON t (g, name)");
    let p = plan(&mut s, "SELECT id FROM t WHERE g = 3 AND name = 'n13'");
    assert!(p.contains("Index Scan using t_g_name"), "{p}");
    assert_eq!(text(&ok(&mut s, "SELECT id FROM t WHERE g = 3 AND name = 'n13'")), ["13"]);
}

#[test]
fn index_nested_loop_join_from_a_small_outer_side() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    load(&mut s, 20000);
    ok(&mut s, "CREATE TABLE probe (k integer, tag text)");
    ok(&mut s, "INSERT INTO probe VALUES (5, 'a'), (19999, 'b'), (20001, 'c'), (NULL, 'd'), (5, 'e')");
    ok(&mut s, "ANALYZE");
    let q = "SELECT probe.tag, t.name FROM probe JOIN t ON t.id = probe.k ORDER BY probe.tag";
    let p = plan(&mut s, q);
    assert!(p.contains("Index Nested Loop") && p.contains("t_pkey"), "{p}");
    assert_eq!(text(&ok(&mut s, q)), ["a|n5", "b|n19999", "e|n5"]);
    let q = "SELECT probe.tag, t.name FROM probe LEFT JOIN t ON t.id = probe.k AND t.g = 5 ORDER BY probe.tag";
    assert_eq!(text(&ok(&mut s, q)), ["a|n5", "b|NULL", "c|NULL", "d|NULL", "e|n5"]);
    let q = "SELECT tag FROM probe WHERE EXISTS (SELECT 1 FROM t WHERE t.id = probe.k) ORDER BY tag";
    assert_eq!(text(&ok(&mut s, q)), ["a", "b", "e"]);
    let q = "SELECT tag FROM probe WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.id = probe.k) ORDER BY tag";
    assert_eq!(text(&ok(&mut s, q)), ["c", "d"]);
}

#[test]
fn unique_keys_are_checked_through_the_index_across_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let (mut a, mut b) = (e.session(), e.session());
    load(&mut a, 100);
    let dup = err(&mut a, "INSERT INTO t VALUES (5, 0, 'dup')");
    assert_eq!(dup.code, SqlState::UNIQUE_VIOLATION);
    assert!(dup.message.contains("\"t_pkey\""), "{dup:?}");
    // an uncommitted insert holds its key; its rollback frees it
    ok(&mut a, "BEGIN");
    ok(&mut a, "INSERT INTO t VALUES (500, 0, 'a')");
    assert_eq!(err(&mut b, "INSERT INTO t VALUES (500, 0, 'b')").code, SqlState::UNIQUE_VIOLATION);
    ok(&mut a, "ROLLBACK");
    ok(&mut b, "INSERT INTO t VALUES (500, 0, 'b')");
    // a committed delete frees its key; an update moves it
    ok(&mut a, "DELETE FROM t WHERE id = 7");
    ok(&mut b, "INSERT INTO t VALUES (7, 0, 'again')");
    ok(&mut a, "UPDATE t SET id = 1000 WHERE id = 8");
    ok(&mut b, "INSERT INTO t VALUES (8, 0, 'eight')");
    assert_eq!(err(&mut b, "INSERT INTO t VALUES (1000, 0, 'x')").code, SqlState::UNIQUE_VIOLATION);
    assert_eq!(
        text(&ok(&mut a, "SELECT name FROM t WHERE id IN (7, 8, 1000, 500) ORDER BY id")),
        ["again", "eight", "b", "n8"]
    );
    // UNIQUE constraints get indexes too; NULLs never collide
    ok(&mut a, "CREATE TABLE u (a integer UNIQUE, b integer)");
    ok(&mut a, "INSERT INTO u VALUES (1, 1), (NULL, 2), (NULL, 3)");
    let e2 = err(&mut a, "INSERT INTO u VALUES (1, 4)");
    assert!(e2.message.contains("\"u_a_key\""), "{e2:?}");
    assert_eq!(err(&mut a, "DROP INDEX u_a_key").code, SqlState("2BP01"));
}

#[test]
fn an_index_reads_the_version_its_snapshot_sees() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let (mut a, mut b) = (e.session(), e.session());
    load(&mut a, 1000);
    ok(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(text(&ok(&mut a, "SELECT name FROM t WHERE id = 1")), ["n1"]);
    ok(&mut b, "UPDATE t SET id = 5001, name = 'moved' WHERE id = 1");
    ok(&mut b, "INSERT INTO t VALUES (5002, 0, 'new')");
    assert_eq!(text(&ok(&mut a, "SELECT name FROM t WHERE id = 1")), ["n1"]);
    assert!(text(&ok(&mut a, "SELECT name FROM t WHERE id >= 5001")).is_empty());
    ok(&mut a, "COMMIT");
    assert!(text(&ok(&mut a, "SELECT name FROM t WHERE id = 1")).is_empty());
    assert_eq!(text(&ok(&mut a, "SELECT name FROM t WHERE id >= 5001 ORDER BY id")), ["moved", "new"]);
}

#[test]
fn create_drop_and_failed_builds() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    load(&mut s, 300);
    let bad = err(&mut s, "CREATE UNIQUE INDEX t_g ON t (g)");
    assert_eq!(bad.code, SqlState::UNIQUE_VIOLATION);
    assert_eq!(bad.message, "could not create unique index \"t_g\"");
    ok(&mut s, "CREATE INDEX t_g ON t (g)");
    assert!(plan(&mut s, "SELECT id FROM t WHERE g = 3").contains("t_g"));
    assert_eq!(text(&ok(&mut s, "SELECT count(*) FROM t WHERE g = 3")), ["30"]);
    // a build rolled back leaves no index behind
    ok(&mut s, "BEGIN");
    ok(&mut s, "CREATE INDEX t_name ON t (name)");
    ok(&mut s, "ROLLBACK");
    assert_eq!(err(&mut s, "DROP INDEX t_name").code, SqlState::UNDEFINED_OBJECT);
    ok(&mut s, "DROP INDEX t_g");
    assert!(!plan(&mut s, "SELECT id FROM t WHERE g = 3").contains("t_g"));
    assert_eq!(text(&ok(&mut s, "SELECT count(*) FROM t WHERE g = 3")), ["30"]);
    ok(&mut s, "DROP TABLE t");
    load(&mut s, 10);
    assert_eq!(text(&ok(&mut s, "SELECT count(*) FROM t WHERE id >= 0")), ["10"]);
}

#[test]
fn prepared_lookups_reuse_their_plan_and_see_new_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    load(&mut s, 2000);
    let mut p = s.prepare("SELECT name FROM t WHERE id = $1").unwrap();
    for id in [0i64, 1999, 77] {
        let r = s.execute_prepared(&mut p, &[Value::Int64(id)]).unwrap();
        assert_eq!(text(&r), [format!("n{id}")]);
    }
    assert!(s.execute_prepared(&mut p, &[Value::Int64(2000)]).unwrap().rows.is_empty());
    let mut q = s.prepare("SELECT id FROM t WHERE g = $1 AND name = $2").unwrap();
    ok(&mut s, "CREATE INDEX t_g_name ON t (g, name)");
    let r = s.execute_prepared(&mut q, &[Value::Int32(4), Value::Text("n14".into())]).unwrap();
    assert_eq!(text(&r), ["14"]);
    let mut ins = s.prepare("INSERT INTO t VALUES ($1, 0, 'p')").unwrap();
    s.execute_prepared(&mut ins, &[Value::Int64(9000)]).unwrap();
    let dup = s.execute_prepared(&mut ins, &[Value::Int64(9000)]).unwrap_err();
    assert_eq!(dup.code, SqlState::UNIQUE_VIOLATION);
    assert_eq!(text(&s.execute_prepared(&mut p, &[Value::Int64(9000)]).unwrap()), ["p"]);
}

#[test]
fn a_missing_index_image_is_rebuilt_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = engine(dir.path());
        let mut s = e.session();
        load(&mut s, 500);
        ok(&mut s, "CREATE INDEX t_g ON t (g)");
        e.close().unwrap();
    }
    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    assert_eq!(text(&ok(&mut s, "SELECT name FROM t WHERE id = 321")), ["n321"]);
    assert_eq!(text(&ok(&mut s, "SELECT count(*) FROM t WHERE g = 1")), ["50"]);
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (3, 0, 'x')").code, SqlState::UNIQUE_VIOLATION);
}

const CRASH_DIR: &str = "NDPDB_INDEX_CRASH_DIR";

/// The child of `committed_rows_are_found_through_the_index_after_a_crash`:
/// commits rows one transaction at a time, then aborts the process without
/// closing anything.
#[test]
#[ignore = "run by committed_rows_are_found_through_the_index_after_a_crash"]
fn crash_child() {
    let Ok(dir) = std::env::var(CRASH_DIR) else { return };
    let e = engine(Path::new(&dir));
    let mut s = e.session();
    load(&mut s, 50);
    for id in 100..160 {
        ok(&mut s, &format!("INSERT INTO t VALUES ({id}, 1, 'c{id}')"));
    }
    ok(&mut s, "BEGIN");
    ok(&mut s, "INSERT INTO t VALUES (999, 1, 'uncommitted')");
    std::process::abort();
}

#[test]
fn committed_rows_are_found_through_the_index_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["crash_child", "--exact", "--ignored", "--nocapture"])
        .env(CRASH_DIR, dir.path())
        .status()
        .unwrap();
    assert!(!status.success(), "the child should have aborted");
    let e = engine(dir.path());
    let mut s = e.session();
    assert!(plan(&mut s, "SELECT name FROM t WHERE id = 150").contains("Index Scan using t_pkey"));
    for id in (0..50).chain(100..160) {
        let want = if id < 50 { format!("n{id}") } else { format!("c{id}") };
        assert_eq!(text(&ok(&mut s, &format!("SELECT name FROM t WHERE id = {id}"))), [want], "id {id}");
    }
    assert!(text(&ok(&mut s, "SELECT name FROM t WHERE id = 999")).is_empty());
    ok(&mut s, "INSERT INTO t VALUES (999, 1, 'now')");
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (150, 0, 'x')").code, SqlState::UNIQUE_VIOLATION);
}
