//! Prepared point lookups (`store/index/point.rs`): every answer of the
//! executor-free path equals the executor's answer to the same query with
//! literals (`Session::run`), across updates that move keys, deletes,
//! uncommitted writes of another session, snapshots of repeatable read,
//! NULL and mistyped parameters, and composite and text keys; plans that
//! are no point lookups stay on the executor.

use std::path::Path;
use std::sync::Arc;

use ndpdb_sql::session::{Engine, EngineOptions, Prepared, Session, StatementResult};
use ndpdb_sql::types::Value;
use ndpdb_sql::types::format::pg_text;

fn engine(dir: &Path) -> Arc<Engine> {
    let opts = EngineOptions { dir: dir.to_path_buf(), capacity_mib: Some(64), ..EngineOptions::default() };
    Engine::open(&opts).expect("open")
}

fn ok(s: &mut Session, sql: &str) -> StatementResult {
    let mut rs = s.run(sql);
    let last = rs.pop().expect("a result");
    for r in rs {
        r.unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    last.unwrap_or_else(|e| panic!("{sql}: {e:?}"))
}

fn text(r: &StatementResult) -> Vec<String> {
    let mut rows: Vec<String> = r
        .rows
        .iter()
        .map(|row| {
            row.iter().map(|v| if v.is_null() { "NULL".to_string() } else { pg_text(v) }).collect::<Vec<_>>().join("|")
        })
        .collect();
    rows.sort();
    rows
}

fn literal(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Text(t) => format!("'{t}'"),
        other => pg_text(other),
    }
}

/// The prepared answer, checked against the executor's for `sql` with
/// `$n` replaced by literals.
fn check(s: &mut Session, p: &mut Prepared, sql: &str, params: &[Value]) -> Vec<String> {
    let got = text(&s.execute_prepared(p, params).unwrap_or_else(|e| panic!("{sql} {params:?}: {e:?}")));
    let mut literal_sql = sql.to_string();
    for (i, v) in params.iter().enumerate().rev() {
        literal_sql = literal_sql.replace(&format!("${}", i + 1), &literal(v));
    }
    assert_eq!(got, text(&ok(s, &literal_sql)), "{literal_sql}");
    got
}

#[test]
fn point_lookups_equal_the_executor_across_versions() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let (mut a, mut b) = (e.session(), e.session());
    ok(&mut a, "CREATE TABLE t (id bigint PRIMARY KEY, g integer, name text, c char(4))");
    let rows: Vec<String> = (0..500).map(|x| format!("({x}, {}, 'n{x}', 'c{}')", x % 7, x % 3)).collect();
    ok(&mut a, &format!("INSERT INTO t VALUES {}", rows.join(", ")));
    let sql = "SELECT name, c, g FROM t WHERE id = $1";
    let mut p = a.prepare(sql).unwrap();
    assert_eq!(check(&mut a, &mut p, sql, &[Value::Int64(7)]), ["n7|c1  |0"]);
    assert!(p.is_point(), "a primary-key lookup runs without the executor");
    // keys moved, deleted, and written by an open transaction of b
    ok(&mut b, "UPDATE t SET id = 1000 + id WHERE id < 20");
    ok(&mut b, "DELETE FROM t WHERE id BETWEEN 20 AND 29");
    ok(&mut b, "BEGIN");
    ok(&mut b, "UPDATE t SET name = 'dirty' WHERE id = 30");
    ok(&mut b, "INSERT INTO t VALUES (5000, 0, 'uncommitted', 'x')");
    let mut seen = 0;
    for id in [0i64, 5, 19, 20, 25, 30, 31, 499, 500, 1000, 1005, 1019, 1020, 5000, -1] {
        seen += check(&mut a, &mut p, sql, &[Value::Int64(id)]).len();
    }
    assert_eq!(seen, 6, "0..19 moved to 1000..1019, 20..29 gone, 5000 not committed");
    // a NULL parameter matches nothing; a mistyped one goes through the executor's cast
    assert!(check(&mut a, &mut p, sql, &[Value::Null]).is_empty());
    assert_eq!(text(&a.execute_prepared(&mut p, &[Value::Int32(31)]).unwrap()), ["n31|c1  |3"]);
    assert_eq!(text(&a.execute_prepared(&mut p, &[Value::Float64(31.0)]).unwrap()), ["n31|c1  |3"]);
    // a repeatable-read snapshot keeps seeing the old versions
    ok(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(check(&mut a, &mut p, sql, &[Value::Int64(31)]), ["n31|c1  |3"]);
    ok(&mut b, "COMMIT");
    ok(&mut b, "UPDATE t SET id = 31000 WHERE id = 31");
    assert_eq!(check(&mut a, &mut p, sql, &[Value::Int64(31)]), ["n31|c1  |3"]);
    assert!(check(&mut a, &mut p, sql, &[Value::Int64(5000)]).is_empty());
    ok(&mut a, "COMMIT");
    assert!(check(&mut a, &mut p, sql, &[Value::Int64(31)]).is_empty());
    assert_eq!(check(&mut a, &mut p, sql, &[Value::Int64(31000)]), ["n31|c1  |3"]);
    assert_eq!(check(&mut a, &mut p, sql, &[Value::Int64(30)]), ["dirty|c0  |2"]);
    assert_eq!(check(&mut a, &mut p, sql, &[Value::Int64(5000)]), ["uncommitted|x   |0"]);
    // a key moved away and back within one tuple's chain
    ok(&mut b, "UPDATE t SET id = 77777 WHERE id = 40");
    ok(&mut b, "UPDATE t SET id = 40 WHERE id = 77777");
    assert_eq!(check(&mut a, &mut p, sql, &[Value::Int64(40)]), ["n40|c1  |5"]);
    assert!(check(&mut a, &mut p, sql, &[Value::Int64(77777)]).is_empty());
}

#[test]
fn composite_and_text_keys_and_plans_that_are_no_point_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    ok(&mut s, "CREATE TABLE u (a integer, b varchar(8), v integer, f double precision, PRIMARY KEY (a, b))");
    let rows: Vec<String> = (0..300).map(|x| format!("({}, 'k{}', {x}, {}.0)", x % 10, x / 10, x % 4)).collect();
    ok(&mut s, &format!("INSERT INTO u VALUES {}", rows.join(", ")));
    ok(&mut s, "CREATE INDEX u_f ON u (f)");
    let sql = "SELECT v, a FROM u WHERE a = $1 AND b = $2";
    let mut p = s.prepare(sql).unwrap();
    assert_eq!(check(&mut s, &mut p, sql, &[Value::Int32(3), Value::Text("k5".into())]), ["53|3"]);
    assert!(p.is_point());
    for (a, b) in [(3, "k6"), (4, "k5"), (9, "k29"), (9, "k30"), (0, ""), (0, "k0 ")] {
        check(&mut s, &mut p, sql, &[Value::Int32(a), Value::Text(b.into())]);
    }
    ok(&mut s, "UPDATE u SET b = 'moved' WHERE a = 3 AND b = 'k5'");
    assert!(check(&mut s, &mut p, sql, &[Value::Int32(3), Value::Text("k5".into())]).is_empty());
    assert_eq!(check(&mut s, &mut p, sql, &[Value::Int32(3), Value::Text("moved".into())]), ["53|3"]);
    // another condition, a prefix of the key, a double key: the executor's
    let others = [
        ("SELECT v FROM u WHERE a = $1 AND b = $2 AND v > 100", vec![Value::Int32(3), Value::Text("k15".into())]),
        ("SELECT v FROM u WHERE a = $1", vec![Value::Int32(2)]),
        ("SELECT v FROM u WHERE f = $1", vec![Value::Float64(2.0)]),
        ("SELECT v + 1 FROM u WHERE a = $1 AND b = $2", vec![Value::Int32(3), Value::Text("k15".into())]),
    ];
    for (sql, params) in others {
        let mut q = s.prepare(sql).unwrap();
        check(&mut s, &mut q, sql, &params);
        assert!(!q.is_point(), "{sql}");
    }
}
