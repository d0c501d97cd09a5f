//! The golden isolation scripts (`crates/txn/tests/scripts/*.txt`, read at
//! run time) written in SQL and run through the SQL engine, several
//! sessions at once, each statement's outcome compared with the `.golden`
//! file the transaction-API runner wrote: its result, whether it blocks,
//! which blocked statement a later line lets finish and how, and which
//! transaction fails with which error class (40001, 40P01).
//!
//! The translation and the runner are in `isolation_runner/`. Outcomes are
//! compared after the normalization `anomalies_vs_postgres.rs` also applies
//! (`crates/txn/tests/transcript/`, shared)
//! (error classes, "ended"), since SQL's messages are PostgreSQL's, not the
//! transaction layer's.
//!
//! Where the SQL engine's outcome knowingly differs from the golden file,
//! the script is listed in `isolation_runner::KNOWN_DIFFERENCES` with the
//! reason, and the test checks that it still differs (so the list cannot
//! go stale). `crates/server/tests/isolation_psql.rs` runs the same
//! scripts, list and comparison with each session a psql process.

mod isolation_runner;

#[test]
fn isolation_scripts_in_sql() {
    isolation_runner::check_all_scripts("SQL", &mut isolation_runner::run_script);
}

/// Read committed's re-check of UPDATE and DELETE (PostgreSQL's
/// EvalPlanQual, its documentation's "Read Committed Isolation Level"):
/// `b`'s statement waits for `a`'s lock on tuple `vid = 0`; once `a`
/// commits, `b` works on `a`'s version. Returns `b`'s command tag and the
/// table afterwards. The expectations below are PostgreSQL's outcomes.
fn read_committed_after(a_sql: &str, b_sql: &str) -> (String, Vec<String>) {
    use ndpdb_sql::session::{Engine, EngineOptions};
    use ndpdb_sql::types::format::pg_text;
    let dir = tempfile::tempdir().unwrap();
    let opts = EngineOptions { dir: dir.path().to_path_buf(), capacity_mib: Some(32), ..EngineOptions::default() };
    let engine = Engine::open(&opts).unwrap();
    let run = |s: &mut ndpdb_sql::session::Session, sql: &str| {
        s.run(sql).pop().unwrap().unwrap_or_else(|e| panic!("{sql}: {}", e.message))
    };
    let mut admin = engine.session();
    run(&mut admin, "CREATE TABLE acct (vid int PRIMARY KEY, v bigint)");
    run(&mut admin, "INSERT INTO acct VALUES (0, 100), (1, 100)");
    let (mut a, mut b) = (engine.session(), engine.session());
    run(&mut a, "BEGIN ISOLATION LEVEL READ COMMITTED");
    run(&mut a, a_sql);
    run(&mut b, "BEGIN ISOLATION LEVEL READ COMMITTED");
    let probe = b.wait_probe();
    let b_sql = b_sql.to_string();
    let waiter = std::thread::spawn(move || {
        let tag = run(&mut b, &b_sql).tag;
        run(&mut b, "COMMIT");
        tag
    });
    // Deterministic: b's statement waits in the waits-for graph until a ends.
    while !probe.is_waiting() {
        assert!(!waiter.is_finished(), "b's statement did not wait for a's lock");
        std::thread::yield_now();
    }
    run(&mut a, "COMMIT");
    let tag = waiter.join().unwrap();
    let rows = run(&mut admin, "SELECT vid, v FROM acct ORDER BY vid").rows;
    (tag, rows.iter().map(|r| format!("{}:{}", pg_text(&r[0]), pg_text(&r[1]))).collect())
}

/// Read committed's re-check, scenario by scenario: `a`'s statement, then
/// `b`'s (which waits for `a`'s lock), `b`'s command tag and the table
/// `(vid, v)` afterwards, from `(0, 100), (1, 100)`. The expectations are
/// PostgreSQL's; `read_committed_recheck_matches_postgresql` asks it.
const RECHECK_SCENARIOS: &[(&str, &str, &str, &[&str])] = &[
    // SET is computed from a's version: 100 + 10 + 20.
    (
        "UPDATE acct SET v = v + 10 WHERE vid = 0",
        "UPDATE acct SET v = v + 20 WHERE vid = 0",
        "UPDATE 1",
        &["0:130", "1:100"],
    ),
    // a moved tuple 0 out of b's WHERE: b updates only tuple 1.
    (
        "UPDATE acct SET v = 200 WHERE vid = 0",
        "UPDATE acct SET v = v + 1 WHERE v = 100",
        "UPDATE 1",
        &["0:200", "1:101"],
    ),
    // A tuple deleted meanwhile is skipped, not an error.
    ("DELETE FROM acct WHERE vid = 0", "UPDATE acct SET v = 1 WHERE vid = 0", "UPDATE 0", &["1:100"]),
    ("DELETE FROM acct WHERE vid = 0", "DELETE FROM acct WHERE vid < 5", "DELETE 1", &[]),
    // DELETE's WHERE is checked again too.
    ("UPDATE acct SET v = 7 WHERE vid = 0", "DELETE FROM acct WHERE v = 100", "DELETE 1", &["0:7"]),
];

#[test]
fn read_committed_update_and_delete_work_on_the_newest_version() {
    for (a, b, tag, rows) in RECHECK_SCENARIOS {
        let got = read_committed_after(a, b);
        assert_eq!(
            (got.0.as_str(), got.1.iter().map(String::as_str).collect::<Vec<_>>()),
            (*tag, rows.to_vec()),
            "a: {a}; b: {b}"
        );
    }
}

#[test]
fn read_committed_recheck_matches_postgresql() {
    use ndpdb_baseline::postgres::{PgError, PgServer};
    let server = match PgServer::start() {
        Ok(s) => s,
        Err(e @ PgError::NotInstalled) => {
            ndpdb_baseline::require::skip_postgres("read_committed_recheck_matches_postgresql", &e);
            return;
        }
        Err(e) => panic!("could not start PostgreSQL: {e}"),
    };
    let mut admin = server.session().expect("admin session");
    for (a_sql, b_sql, tag, rows) in RECHECK_SCENARIOS {
        admin.exec("DROP TABLE IF EXISTS acct").unwrap();
        admin.exec("CREATE TABLE acct (vid int PRIMARY KEY, v bigint)").unwrap();
        admin.exec("INSERT INTO acct VALUES (0, 100), (1, 100)").unwrap();
        let (mut a, mut b) = (server.session().unwrap(), server.session().unwrap());
        a.exec("BEGIN ISOLATION LEVEL READ COMMITTED").unwrap();
        a.exec(a_sql).unwrap();
        let pid = b.query("SELECT pg_backend_pid()").unwrap();
        b.exec("BEGIN ISOLATION LEVEL READ COMMITTED").unwrap();
        let returning = format!("{b_sql} RETURNING vid");
        let waiter = std::thread::spawn(move || {
            let n = b.exec(&returning).unwrap().len();
            b.exec("COMMIT").unwrap();
            n
        });
        // b waits for a's tuple lock: an ungranted request in pg_locks.
        let waiting = format!("SELECT count(*) FROM pg_locks WHERE pid = {pid} AND NOT granted");
        while admin.query(&waiting).unwrap() == "0" {
            assert!(!waiter.is_finished(), "b's statement did not wait for a's lock on PostgreSQL");
        }
        a.exec("COMMIT").unwrap();
        let n = waiter.join().unwrap();
        let verb = tag.split(' ').next().unwrap();
        let got = admin.exec("SELECT vid, v FROM acct ORDER BY vid").unwrap();
        let got: Vec<String> = got.iter().map(|r| r.replace('|', ":")).collect();
        assert_eq!(
            (format!("{verb} {n}"), got),
            (tag.to_string(), rows.iter().map(|r| r.to_string()).collect()),
            "PostgreSQL, a: {a_sql}; b: {b_sql}"
        );
    }
    drop(admin);
    server.stop().expect("stopping PostgreSQL");
}
