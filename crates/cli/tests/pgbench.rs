//! `ndpdb bench pgbench` through the binary: pgbench `-i` loads ndpdb's
//! server (TRUNCATE, COPY FROM STDIN, ALTER TABLE ADD PRIMARY KEY), a short
//! select-only run answers on ndpdb and PostgreSQL, and the JSON lines carry
//! pgbench's figures.

use std::process::{Command, Output};

fn ndpdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ndpdb")).args(args).output().expect("run ndpdb")
}

fn text(out: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Whether pgbench runs; without it the test is skipped, saying so (a
/// failure under NDPDB_REQUIRE_POSTGRES, as in CI).
fn have_pgbench() -> bool {
    let ok = Command::new("pgbench").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        ndpdb_baseline::require::skip_postgres("bench pgbench", &"pgbench is not installed");
    }
    ok
}

#[test]
fn select_only_pgbench_runs_on_ndpdb_and_postgresql() {
    if !have_pgbench() {
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = ndpdb(&[
        "bench",
        "pgbench",
        "-S",
        "-s",
        "1",
        "-c",
        "2",
        "-j",
        "1",
        "-T",
        "2",
        "--json",
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("PostgreSQL is not installed") {
        ndpdb_baseline::require::skip_postgres("bench pgbench", &"PostgreSQL is not installed");
        return;
    }
    assert!(out.status.success(), "{}", text(&out));
    let rows: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let engines: Vec<&str> = rows.iter().filter_map(|r| r["engine"].as_str()).collect();
    assert_eq!(engines, ["ndpdb", "postgresql"], "{}", text(&out));
    for r in &rows {
        assert_eq!(r["script"], "select-only");
        assert!(r["transactions"].as_u64().unwrap() > 0 && r["tps"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["failed"], 0, "{r}");
        assert!(r["error"].is_null(), "{r}");
    }
    assert!(stderr.contains("pgbench-tps.svg"), "{}", text(&out));
}

/// TPC-B on ndpdb with concurrent clients: every transaction commits or is
/// retried (deadlocks and serialization failures, `--max-tries`), and the
/// sums of balances and history's rows agree afterwards (they did not while
/// a committed writer's tuple lock could be taken twice: `txn/src/locks.rs`).
#[test]
fn tpcb_on_ndpdb_keeps_its_invariants() {
    if !have_pgbench() {
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = ndpdb(&[
        "bench",
        "pgbench",
        "--engines",
        "ndpdb",
        "-s",
        "1",
        "-c",
        "4",
        "-j",
        "2",
        "-T",
        "3",
        "--max-tries",
        "10",
        "--json",
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let row: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(row["invariants_hold"], true, "{row}");
    assert_eq!(row["failed"], 0, "{row}");
    let history = row["invariants"]["history_rows"].as_u64().unwrap();
    assert!(history > 0 && history == row["transactions"].as_u64().unwrap(), "{row}");
}

#[test]
fn bad_flags_are_refused_before_any_server_starts() {
    let out = ndpdb(&["bench", "pgbench", "--engines", "mysql"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown engine \"mysql\""), "{}", text(&out));
    let out = ndpdb(&["bench", "pgbench", "-c", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 1"), "{}", text(&out));
}
