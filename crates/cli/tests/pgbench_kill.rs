//! Issue 18's "SIGKILL the server in the middle of a pgbench run, restart
//! it: the invariants hold and the integrity check passes".
//!
//! `pgbench -i -s 1` loads `ndpdb serve`; a TPC-B run with 4 clients goes
//! until history holds some committed transactions, then the server gets
//! SIGKILL (no shutdown, no checkpoint). `ndpdb check` recovers the image
//! in memory and checks it; the server restarts on the same directory
//! (recovery from the log) and the TPC-B sums agree: accounts = tellers =
//! branches = history's deltas, i.e. every transaction is there whole or
//! not at all. History's row count is not compared with pgbench's count:
//! pgbench cannot know which of the transactions in flight at the kill
//! committed. A clean stop and a second check end the test.

mod serve_child;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serve_child::{Serve, have, psql};

/// Committed TPC-B transactions to wait for before the kill.
const BEFORE_KILL: u64 = 200;

fn one_value(serve: &Serve, sql: &str) -> String {
    let (out, err, ok) = psql(serve, &["-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql], "");
    assert!(ok, "{sql}: {err}\nserver log:\n{}", serve.log_text());
    out.trim().to_string()
}

fn check(db: &std::path::Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_ndpdb")).arg("check").arg(db).output().unwrap();
    assert!(
        out.status.success(),
        "ndpdb check failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sigkill_mid_pgbench_keeps_tpcb_invariants_and_integrity() {
    if !have("pgbench") || !have("psql") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let serve = Serve::start(&db, &dir.path().join("serve1.log"));
    let init = Command::new("pgbench").args(["-i", "-q", "-s", "1"]).args(serve.conn_args()).output().unwrap();
    assert!(init.status.success(), "pgbench -i: {}", String::from_utf8_lossy(&init.stderr));

    let mut bench = Command::new("pgbench")
        .args(["-c", "4", "-j", "2", "-T", "60", "--max-tries", "10"])
        .args(serve.conn_args())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let n: u64 = one_value(&serve, "SELECT count(*) FROM pgbench_history").parse().unwrap();
        if n >= BEFORE_KILL {
            break;
        }
        assert!(bench.try_wait().unwrap().is_none(), "pgbench ended before the kill");
        assert!(t0.elapsed() < Duration::from_secs(60), "only {n} transactions committed in 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    serve.kill();
    // pgbench loses its connections and stops.
    bench.wait().unwrap();

    check(&db);
    let serve = Serve::start(&db, &dir.path().join("serve2.log"));
    let sums = one_value(
        &serve,
        "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), \
         (SELECT sum(bbalance) FROM pgbench_branches), (SELECT sum(delta) FROM pgbench_history), \
         (SELECT count(*) FROM pgbench_history), (SELECT count(*) FROM pgbench_accounts)",
    );
    eprintln!("after SIGKILL and recovery: sums and counts {sums}");
    let v: Vec<i64> = sums.split('|').map(|s| s.parse().unwrap()).collect();
    let [accounts, tellers, branches, history, rows, n_accounts] = v[..] else { panic!("{sums}") };
    assert_eq!((tellers, branches, history), (accounts, accounts, accounts), "TPC-B sums after recovery: {sums}");
    assert!(rows >= BEFORE_KILL as i64, "committed history rows were lost: {sums}");
    assert_eq!(n_accounts, 100_000, "{sums}");
    assert!(serve.stop().success(), "ndpdb serve did not stop cleanly");
    check(&db);
}
