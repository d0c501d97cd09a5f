//! The harness itself on the private PostgreSQL: a wrong expected answer,
//! a wrong SQLSTATE and a wrong message each fail the run; completion
//! writes PostgreSQL's answers, after which the file passes.

use std::path::{Path, PathBuf};

use ndpdb_sqltest::{EngineError, TestDatabase, complete_files, run_files, start_postgres};

const SETUP: &str = "statement ok
CREATE TABLE t (a integer, b text, c boolean)

statement count 3
INSERT INTO t VALUES (1, 'x', true), (2, '', false), (3, NULL, NULL)
";

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{SETUP}\n{body}")).expect("writing the slt file");
    path
}

#[test]
fn run_and_complete_against_postgresql() {
    let Some(mut pg) = start_postgres().expect("starting PostgreSQL") else {
        eprintln!("PostgreSQL is not installed: skipping (set NDPDB_REQUIRE_POSTGRES=1 to fail instead)");
        return;
    };
    let mut make = |_: &Path| -> Result<Box<dyn TestDatabase>, EngineError> { Ok(Box::new(pg.database()?)) };
    let dir = tempfile::tempdir().expect("temporary directory");
    let good = write(
        dir.path(),
        "good.slt",
        "query ITT\nSELECT a, b, c FROM t ORDER BY a\n----\n1 x t\n2 (empty) f\n3 NULL NULL\n\n\
         statement error 22012: division by zero\nSELECT 1 / 0\n\nstatement error (42P01)\nSELECT * FROM nope\n",
    );
    run_files(&mut make, std::slice::from_ref(&good), "postgresql").expect("the right answers pass");

    let wrong = [
        ("rows.slt", "query I\nSELECT a FROM t ORDER BY a\n----\n1\n2\n4\n"),
        ("empty.slt", "query T\nSELECT b FROM t WHERE a = 2\n----\nNULL\n"),
        ("count.slt", "statement count 2\nUPDATE t SET a = a + 1\n"),
        ("state.slt", "statement error (42P01)\nSELECT 1 / 0\n"),
        ("message.slt", "statement error 22012: overflow\nSELECT 1 / 0\n"),
        ("noerror.slt", "statement error\nSELECT 1\n"),
    ];
    for (name, body) in wrong {
        let file = write(dir.path(), name, body);
        let err = run_files(&mut make, std::slice::from_ref(&file), "postgresql").expect_err(name);
        assert!(err.to_string().contains(name), "{name}: {err}");
    }

    // completion fills in results and error messages; the file then passes
    let todo = write(
        dir.path(),
        "todo.slt",
        "query ITT\nSELECT a, b, c FROM t ORDER BY a\n----\n\nstatement error TODO\nSELECT * FROM nope\n\n\
         onlyif ndpdb\nquery T\nEXPLAIN SELECT 1\n----\nkept as written\n",
    );
    complete_files(&mut make, std::slice::from_ref(&todo), "postgresql").expect("completing");
    let text = std::fs::read_to_string(&todo).expect("reading back");
    assert!(text.contains("1 x t\n2 (empty) f\n3 NULL NULL\n"), "{text}");
    assert!(text.contains("statement error 42P01: relation \"nope\" does not exist\n"), "{text}");
    assert!(text.contains("kept as written"), "records for the other engine stay: {text}");
    run_files(&mut make, &[todo], "postgresql").expect("a completed file passes");
}
