//! psql against `ndpdb serve`: the simple query protocol, transactions and
//! their status byte, errors with SQLSTATE, the connection limit.

mod common;

use common::{TestServer, have, psql};

#[test]
fn psql_runs_statements_and_sees_postgresql_results() {
    if !have("psql", &["--version"]) {
        return;
    }
    let s = TestServer::start(100);
    let (out, err, ok) = psql(
        s.addr,
        &["-A", "-t", "-v", "ON_ERROR_STOP=1"],
        Some(
            "CREATE TABLE t (id integer PRIMARY KEY, name text, price numeric(10,2), d date);\n\
             INSERT INTO t VALUES (1, 'one', 1.50, '2024-01-02'), (2, NULL, -3.25, NULL);\n\
             SELECT id, name, price, d FROM t ORDER BY id;\n\
             SELECT count(*), sum(price) FROM t;\n",
        ),
    );
    assert!(ok, "psql failed: {err}");
    assert_eq!(out.trim(), "1|one|1.50|2024-01-02\n2||-3.25|\n2|-1.75", "stderr: {err}");
}

#[test]
fn transactions_roll_back_and_errors_carry_their_sqlstate() {
    if !have("psql", &["--version"]) {
        return;
    }
    let s = TestServer::start(100);
    let (out, err, _) = psql(
        s.addr,
        &["-A", "-t", "-v", "VERBOSITY=verbose"],
        Some(
            "CREATE TABLE a (x integer);\n\
             BEGIN;\nINSERT INTO a VALUES (1);\nROLLBACK;\n\
             BEGIN;\nINSERT INTO a VALUES (2);\nSELECT * FROM nosuch;\nINSERT INTO a VALUES (3);\nCOMMIT;\n\
             SELECT count(*) FROM a;\n\
             SELECT 1/0;\n",
        ),
    );
    assert_eq!(out.trim(), "0", "stderr: {err}");
    assert!(err.contains("42P01"), "{err}");
    assert!(err.contains("25P02"), "statements after an error in a block are refused: {err}");
    assert!(err.contains("22012"), "{err}");
}

#[test]
fn one_connection_more_than_the_limit_gets_too_many_clients() {
    if !have("psql", &["--version"]) {
        return;
    }
    let s = TestServer::start(1);
    // The first psql holds its connection while it sleeps in a statement-free wait.
    let addr = s.addr;
    let holder = std::thread::spawn(move || psql(addr, &[], Some("SELECT 1;\n\\! sleep 2\nSELECT 2;\n")));
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (_, err, ok) = psql(s.addr, &["-c", "SELECT 1"], None);
    assert!(!ok && err.contains("too many clients"), "{err}");
    let (_, err1, ok1) = holder.join().unwrap();
    assert!(ok1, "{err1}");
}
