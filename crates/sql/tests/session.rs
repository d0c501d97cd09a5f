//! The engine end to end through a session: DDL, DML, queries, transactions
//! and their failure states, settings, EXPLAIN, reopen.

use ndpdb_sql::SqlState;
use ndpdb_sql::session::TxnStatus;

mod session_support;

use session_support::{engine, err, ok, text};

#[test]
fn create_insert_select_with_filters_joins_and_aggregates() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    ok(&mut s, "create table t (a integer primary key, b text, c numeric(10,2))");
    assert_eq!(ok(&mut s, "insert into t values (1, 'x', 1.50), (2, 'y', NULL), (3, 'x', 2.25)").tag, "INSERT 0 3");
    assert_eq!(text(&ok(&mut s, "select a, b from t where a >= 2 order by a")), vec!["2|y", "3|x"]);
    assert_eq!(
        text(&ok(&mut s, "select b, count(*), sum(c) from t group by b order by b")),
        vec!["x|2|3.75", "y|1|NULL"]
    );
    ok(&mut s, "create table u (a integer, d date)");
    ok(&mut s, "insert into u values (1, date '1998-12-01'), (3, date '1998-09-02' )");
    assert_eq!(
        text(&ok(&mut s, "select t.a, u.d from t join u on t.a = u.a order by t.a")),
        vec!["1|1998-12-01", "3|1998-09-02"]
    );
    assert_eq!(ok(&mut s, "update t set b = 'z' where a = 1").tag, "UPDATE 1");
    assert_eq!(ok(&mut s, "delete from t where b = 'x'").tag, "DELETE 1");
    assert_eq!(text(&ok(&mut s, "select a, b from t order by a")), vec!["1|z", "2|y"]);
}

#[test]
fn transactions_roll_back_and_a_failed_block_refuses_statements() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    ok(&mut s, "create table t (a integer)");
    ok(&mut s, "begin");
    assert_eq!(s.txn_status(), TxnStatus::InBlock);
    ok(&mut s, "insert into t values (1)");
    ok(&mut s, "rollback");
    assert_eq!(text(&ok(&mut s, "select count(*) from t")), vec!["0"]);
    ok(&mut s, "begin");
    assert_eq!(err(&mut s, "select * from nope").code, SqlState::UNDEFINED_TABLE);
    assert_eq!(s.txn_status(), TxnStatus::Failed);
    assert_eq!(err(&mut s, "select 1").code, SqlState::IN_FAILED_TRANSACTION);
    assert_eq!(ok(&mut s, "commit").tag, "ROLLBACK");
    assert_eq!(s.txn_status(), TxnStatus::Idle);
    // DDL is transactional.
    ok(&mut s, "begin; create table v (x integer); rollback");
    assert_eq!(err(&mut s, "select * from v").code, SqlState::UNDEFINED_TABLE);
}

#[test]
fn errors_carry_postgresqls_sqlstate_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    ok(&mut s, "create table t (a integer not null, b varchar(3))");
    assert_eq!(err(&mut s, "select nope from t").code, SqlState::UNDEFINED_COLUMN);
    assert_eq!(err(&mut s, "select 1/0").code, SqlState::DIVISION_BY_ZERO);
    assert_eq!(err(&mut s, "insert into t values (NULL, 'a')").code, SqlState::NOT_NULL_VIOLATION);
    assert_eq!(err(&mut s, "insert into t values (1, 'abcd')").code, SqlState::STRING_DATA_RIGHT_TRUNCATION);
    assert_eq!(err(&mut s, "select 2147483647 + 1").code, SqlState::NUMERIC_VALUE_OUT_OF_RANGE);
    assert_eq!(err(&mut s, "selec 1").code, SqlState::SYNTAX_ERROR);
    assert_eq!(text(&ok(&mut s, "select 1 + 1")), vec!["2"]);
}

#[test]
fn settings_and_explain_show_where_scans_run() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    ok(&mut s, "create table t (a integer, b bigint)");
    ok(&mut s, "insert into t select 1, 2");
    ok(&mut s, "set ndp = on");
    assert_eq!(text(&ok(&mut s, "show ndp")), vec!["on"]);
    let plan = text(&ok(&mut s, "explain select sum(b) from t where a = 1")).join("\n");
    assert!(plan.contains("device"), "{plan}");
    assert_eq!(text(&ok(&mut s, "select sum(b) from t where a = 1")), vec!["2"]);
    ok(&mut s, "set ndp = off");
    let plan = text(&ok(&mut s, "explain select sum(b) from t where a = 1")).join("\n");
    assert!(!plan.contains("device]"), "{plan}");
    let analyzed = text(&ok(&mut s, "explain analyze select sum(b) from t")).join("\n");
    assert!(analyzed.contains("profile") && analyzed.contains("clock"), "{analyzed}");
}

#[test]
fn explain_and_the_session_report_planning_time() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    ok(&mut s, "create table t (a integer, b bigint)");
    assert_eq!(s.last_planning_time(), None);
    for sql in ["explain select * from t a join t b on a.a = b.a", "explain analyze select sum(b) from t"] {
        let lines = text(&ok(&mut s, sql));
        let planning = lines.iter().find(|l| l.starts_with("Planning Time: ") && l.ends_with(" ms"));
        assert!(planning.is_some(), "{sql}: {lines:?}");
    }
    ok(&mut s, "select count(*) from t");
    assert!(s.last_planning_time().is_some());
}

#[test]
fn tables_and_rows_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = engine(dir.path());
        let mut s = e.session();
        ok(&mut s, "create table t (a integer, b text)");
        ok(&mut s, "insert into t values (7, 'seven')");
        drop(s);
        e.close().unwrap();
    }
    let e = engine(dir.path());
    let mut s = e.session();
    assert_eq!(text(&ok(&mut s, "select a, b from t")), vec!["7|seven"]);
}

/// EXPLAIN keeps its plan as a tree (`Session::last_explain`) with the text
/// form's content: marks, estimates, and under ANALYZE the actuals and the
/// device counters of the NDP scan.
#[test]
fn explain_keeps_its_plan_as_a_tree() {
    use ndpdb_sql::plan::explain::ExplainNode;
    fn preorder<'a>(n: &'a ExplainNode, out: &mut Vec<&'a ExplainNode>) {
        out.push(n);
        for c in &n.children {
            preorder(c, out);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    ok(&mut s, "create table t (a integer, b bigint)");
    ok(&mut s, "insert into t select 1, 2");
    assert!(s.last_explain().is_none());
    ok(&mut s, "set ndp = on");
    let lines = text(&ok(&mut s, "explain analyze select sum(b) from t where a = 1"));
    let tree = s.last_explain().expect("a tree").clone();
    assert!(tree.analyzed && tree.execution_ms.is_some() && tree.device.is_some(), "{tree:?}");
    let mut nodes = Vec::new();
    preorder(&tree.root, &mut nodes);
    // A head line of the text form per node, in the same order.
    let heads: Vec<&String> = lines.iter().filter(|l| l.contains("(rows=")).collect();
    assert_eq!(heads.len(), nodes.len(), "{lines:?}");
    for (n, head) in nodes.iter().zip(&heads) {
        let mark = if n.device { "[device]" } else { "[host]" };
        assert!(head.contains(&format!("{} {mark}", n.title)), "{head} vs {n:?}");
        assert!(n.actual.is_some(), "{n:?}");
    }
    assert!(!tree.root.device && tree.root.actual.is_some_and(|a| a.rows == 1), "{tree:?}");
    let scan = nodes.iter().find(|n| n.device).expect("an NDP scan");
    assert_eq!(scan.title, "NDP Scan on t");
    assert!(scan.link_bytes_saved_est.is_some() && scan.actual.and_then(|a| a.scan).is_some(), "{scan:?}");
    assert!(lines.iter().any(|l| l.ends_with(&scan.details[0])), "details are the text form's: {lines:?}");
    ok(&mut s, "set ndp = off");
    ok(&mut s, "explain select sum(b) from t");
    let tree = s.last_explain().unwrap();
    let mut nodes = Vec::new();
    preorder(&tree.root, &mut nodes);
    assert!(!tree.analyzed && nodes.iter().all(|n| !n.device && n.actual.is_none()), "{tree:?}");
}
