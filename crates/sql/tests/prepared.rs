//! Prepared statements return what `Session::run` returns for the same
//! text (char(n) padding included), and report their result columns
//! before they run (a server's Describe).

use ndpdb_sql::session::{Engine, EngineOptions};
use ndpdb_sql::types::{DataType, Value};

#[test]
fn prepared_results_equal_run_results_and_columns_are_known_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let opts = EngineOptions { dir: dir.path().to_path_buf(), capacity_mib: Some(64), ..EngineOptions::default() };
    let engine = Engine::open(&opts).unwrap();
    let mut s = engine.session();
    for r in s.run("CREATE TABLE z (id integer, c char(3)); INSERT INTO z VALUES (1, 'ab')") {
        r.unwrap();
    }
    let run = s.run("SELECT c FROM z WHERE id = 1").pop().unwrap().unwrap();
    let mut p = s.prepare("SELECT c FROM z WHERE id = $1").unwrap();
    assert_eq!(p.param_types, vec![DataType::Int32]);
    assert_eq!(p.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["c"]);
    let prepared = s.execute_prepared(&mut p, &[Value::Int32(1)]).unwrap();
    assert_eq!(prepared.rows, run.rows);
    assert_eq!(prepared.rows, vec![vec![Value::Text("ab ".into())]]);
    assert_eq!(s.prepare("SHOW work_mem").unwrap().columns[0].name, "work_mem");
    assert_eq!(s.prepare("EXPLAIN SELECT 1").unwrap().columns[0].name, "QUERY PLAN");
    assert!(s.prepare("INSERT INTO z VALUES ($1, $2)").unwrap().columns.is_empty());
    drop(s);
    engine.close().unwrap();
}
