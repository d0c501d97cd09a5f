//! `ndpdb bench ycsb` through the binary: go-ycsb (built with Go on first
//! use) loads 1,000 records into ndpdb's server and runs 2,000 operations
//! of workload a; the JSON line carries go-ycsb's figures and no failed
//! operation. Without Go, or when go-ycsb cannot be built (no module
//! proxy), the test is skipped with the reason, unless
//! NDPDB_REQUIRE_YCSB=1 makes that a failure.

use std::process::{Command, Output};

fn ndpdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ndpdb")).args(args).output().expect("run ndpdb")
}

fn text(out: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn skip(reason: &str) {
    assert!(std::env::var("NDPDB_REQUIRE_YCSB").as_deref() != Ok("1"), "NDPDB_REQUIRE_YCSB=1: {reason}");
    eprintln!("skipped: {reason}");
}

#[test]
fn a_short_workload_a_runs_on_ndpdb() {
    if !Command::new("go").arg("version").output().is_ok_and(|o| o.status.success()) {
        return skip("the Go toolchain is not installed (go-ycsb is built with it)");
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = ndpdb(&[
        "bench",
        "ycsb",
        "--workload",
        "a",
        "--records",
        "1000",
        "--operations",
        "2000",
        "--threads",
        "4",
        "--engines",
        "ndpdb",
        "--json",
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    let all = text(&out);
    if !out.status.success() && (all.contains("building go-ycsb failed") || all.contains("go mod download")) {
        return skip(&format!("go-ycsb could not be built here:\n{all}"));
    }
    assert!(out.status.success(), "{all}");
    let line = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_string();
    let row: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {all}"));
    assert_eq!(row["engine"], "ndpdb");
    assert_eq!(row["distribution"], "zipfian");
    assert_eq!(row["errors"], 0, "{all}");
    assert!(row["ops_per_s"].as_f64().unwrap() > 0.0, "{all}");
    let ops = row["ops"].as_array().unwrap();
    let count = |op: &str| ops.iter().find(|o| o["op"] == op).map_or(0, |o| o["count"].as_u64().unwrap());
    assert_eq!(count("READ") + count("UPDATE"), 2000, "{all}");
    assert!(count("READ") > 0 && count("UPDATE") > 0, "{all}");
}
