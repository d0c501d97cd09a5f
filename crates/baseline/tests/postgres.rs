//! Runs against a real private PostgreSQL when one is installed (CI installs
//! it); without one the test prints a skip note (an error under
//! `NDPDB_REQUIRE_POSTGRES=1`, which `.ci/run` sets).

use ndpdb_baseline::postgres::{PgError, PgServer};

#[test]
fn private_server_snapshot_semantics() {
    let server = match PgServer::start() {
        Ok(s) => s,
        Err(e @ PgError::NotInstalled) => {
            ndpdb_baseline::require::skip_postgres("private_server_snapshot_semantics", &e);
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(server.version().unwrap().starts_with(char::is_numeric));
    let mut a = server.session().unwrap();
    a.exec("CREATE TABLE t (k int PRIMARY KEY, v numeric(6,2))").unwrap();
    a.exec("INSERT INTO t SELECT g, 1.50 FROM generate_series(1, 1000) g").unwrap();
    let mut old = server.session().unwrap();
    old.exec("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    assert_eq!(old.query("SELECT sum(v) FROM t").unwrap(), "1500.00");
    a.exec("UPDATE t SET v = v + 1").unwrap();
    assert_eq!(a.query("SELECT sum(v) FROM t").unwrap(), "2500.00");
    assert_eq!(old.query("SELECT sum(v) FROM t").unwrap(), "1500.00", "the open snapshot keeps its view");
    let err = old.exec("UPDATE t SET v = 0 WHERE k = 1").unwrap_err().to_string();
    assert!(err.contains("could not serialize access due to concurrent update"), "{err}");
    old.exec("ROLLBACK").unwrap();
    assert!(a.exec("SELECT nope FROM t").unwrap_err().to_string().contains("nope"));
    let sock = server.socket_dir().to_path_buf();
    drop(a);
    drop(old);
    server.stop().unwrap();
    assert!(!sock.exists(), "the private directory is removed");
}
