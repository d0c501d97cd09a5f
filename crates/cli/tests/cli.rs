//! The `ndpdb` binary end to end: help everywhere, the issue's commands and
//! their JSON, and clear errors (exit 1, no panic) for bad input.

mod common;

use common::{ndpdb, ok, refused};
use std::process::Command;

#[test]
fn every_subcommand_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["--help"],
        vec!["demo", "--help"],
        vec!["profiles", "--help"],
        vec!["profiles", "list", "--help"],
        vec!["profiles", "show", "--help"],
        vec!["profile", "--help"],
        vec!["bench", "--help"],
        vec!["bench", "device-scaling", "--help"],
        vec!["device", "--help"],
        vec!["device", "create", "--help"],
        vec!["device", "info", "--help"],
    ] {
        let text = ok(&ndpdb(&args, dir.path()));
        assert!(text.contains("Usage:"), "{args:?}: {text}");
    }
}

#[test]
fn device_scaling_json_has_the_issue_keys_and_table_i() {
    let dir = tempfile::tempdir().unwrap();
    let out = ndpdb(
        &[
            "bench",
            "device-scaling",
            "--profile",
            "u280-nvm",
            "--pes",
            "1,4,8,12,16",
            "--clock",
            "virtual",
            "--json",
            "--transfers",
            "50000",
        ],
        dir.path(),
    );
    let stdout = ok(&out);
    let rows: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 5);
    for r in &rows {
        let ours = r["transfers_per_s"].as_f64().unwrap();
        let paper = r["paper_transfers_per_s"].as_f64().unwrap();
        assert!(((ours - paper) / paper).abs() <= 0.15, "{r}");
        assert!(r["late_completions"].is_u64() && r["pes"].is_u64(), "{r}");
        assert_eq!(r["clock"], "virtual");
        assert_eq!(r["profile"], "u280-nvm");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let results = stderr.lines().find_map(|l| l.strip_prefix("results: ")).expect("results path");
    let results = dir.path().join(results);
    assert!(results.join("results.jsonl").exists() && results.join("table.txt").exists());
}

#[test]
fn profile_writes_a_model_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = ndpdb(
        &["profile", "--profile", "cosmos-plus", "--clock", "virtual", "--out", "hw.toml", "--quick"],
        dir.path(),
    );
    let table = ok(&out);
    assert!(table.contains("medium read latency"), "{table}");
    let model =
        ndpdb_profiler::HardwareModel::parse(&std::fs::read_to_string(dir.path().join("hw.toml")).unwrap(), "hw.toml")
            .unwrap();
    assert_eq!(model.profile, "cosmos-plus");
}

#[test]
fn a_copied_and_edited_profile_is_used_or_refused_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = ok(&ndpdb(&["profiles", "show", "u280-nvm"], dir.path()));
    let faster = text.replace("read_latency_ns = 142.857", "read_latency_ns = 71.4285");
    std::fs::write(dir.path().join("fast.toml"), &faster).unwrap();
    let out = ndpdb(
        &["bench", "device-scaling", "--profile", "fast.toml", "--pes", "1", "--json", "--transfers", "10000"],
        dir.path(),
    );
    let row: serde_json::Value = serde_json::from_str(ok(&out).lines().next().unwrap()).unwrap();
    let rate = row["transfers_per_s"].as_f64().unwrap();
    assert!((rate - 14e6).abs() < 0.1e6, "halving the latency doubles the 1-PE rate: {rate}");
    std::fs::write(dir.path().join("typo.toml"), text.replace("slowdown = 40", "slowdwn = 40")).unwrap();
    let err = refused(&ndpdb(&["profile", "--profile", "typo.toml", "--out", "x.toml"], dir.path()));
    assert!(err.contains("slowdwn"), "{err}");
    std::fs::write(dir.path().join("bad.toml"), text.replace("count = 16", "count = 5000")).unwrap();
    let err = refused(&ndpdb(&["profile", "--profile", "bad.toml", "--out", "x.toml"], dir.path()));
    assert!(err.contains("pe.count") && err.contains("5000"), "{err}");
    let err = refused(&ndpdb(&["profile", "--profile", "missing.toml"], dir.path()));
    assert!(err.contains("missing.toml"), "{err}");
}

#[test]
fn device_create_info_and_bad_images() {
    let dir = tempfile::tempdir().unwrap();
    let err = refused(&ndpdb(&["device", "info", "--db", "db"], dir.path()));
    assert!(err.contains("no device image"), "{err}");
    ok(&ndpdb(&["device", "create", "--db", "db", "--profile", "softssd", "--capacity-mib", "8"], dir.path()));
    // Without --profile, the image's own.
    let info = ok(&ndpdb(&["device", "info", "--db", "db", "--json"], dir.path()));
    let v: serde_json::Value = serde_json::from_str(info.trim()).unwrap();
    assert_eq!(v["capacity_bytes"], 8 << 20);
    let err = refused(&ndpdb(&["device", "info", "--db", "db", "--profile", "u280-nvm"], dir.path()));
    assert!(err.contains("flash") && err.contains("nvm"), "{err}");
    let img = dir.path().join("db").join("device.img");
    let mut bytes = std::fs::read(&img).unwrap();
    bytes[20] ^= 1;
    std::fs::write(&img, &bytes).unwrap();
    let err = refused(&ndpdb(&["device", "info", "--db", "db", "--profile", "softssd"], dir.path()));
    assert!(err.contains("corrupt"), "{err}");
    assert_eq!(std::fs::read(&img).unwrap(), bytes, "a corrupt image is never rewritten");
}

#[test]
fn bad_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = refused(&ndpdb(&["bench", "device-scaling", "--pes", "17"], dir.path()));
    assert!(err.contains("1..=16"), "{err}");
    let err = refused(&ndpdb(&["bench", "device-scaling", "--profile", "nvme-ssd"], dir.path()));
    assert!(err.contains("no processing elements"), "{err}");
    let out = ndpdb(&["bench", "device-scaling", "--clock", "sundial"], dir.path());
    assert_eq!(out.status.code(), Some(2), "clap rejects bad values with usage");
    assert!(String::from_utf8_lossy(&out.stderr).contains("real"));
    let err = refused(&ndpdb(&["bench", "snapshot", "--rows", "0", "--no-postgres"], dir.path()));
    assert!(err.contains("--rows 0"), "{err}");
    // A results directory that cannot be made is said before the run.
    std::fs::write(dir.path().join("a-file"), b"").unwrap();
    let err = refused(&ndpdb(&["bench", "crash", "--points", "1000", "--out", "a-file"], dir.path()));
    assert!(err.contains("--out a-file") && err.contains("choose another"), "{err}");
}

#[test]
fn orderline_sum_agrees_and_moves_little_to_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let out = ndpdb(
        &["bench", "orderline-sum", "--rows", "3000", "--rounds", "2", "--profile", "u280-nvm", "--pes", "4", "--json"],
        dir.path(),
    );
    let rows: Vec<serde_json::Value> = ok(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 4);
    for snap in ["newest", "oldest"] {
        let pick = |engine: &str| rows.iter().find(|r| r["snapshot"] == snap && r["engine"] == engine).unwrap().clone();
        let (ndp, host) = (pick("ndpdb-ndp"), pick("ndpdb-host"));
        assert_eq!(ndp["result"], host["result"]);
        // 3,000 tuples are TPC-C's delivered lines, whose amounts load as 0:
        // the engines also agree on the rows they read.
        assert_eq!(ndp["control"], host["control"]);
        assert!(ndp["control"].as_str().unwrap().starts_with("3000 rows, sum(ol_i_id) "), "{ndp}");
        assert!(ndp["link_bytes_to_host"].as_u64().unwrap() * 1000 <= host["link_bytes_to_host"].as_u64().unwrap());
        assert_eq!(ndp["chain_bytes_per_visited_version"].as_f64().unwrap(), 24.0, "{ndp}");
        let visited = ndp["versions_visited"].as_u64().unwrap();
        assert_eq!(visited, if snap == "newest" { 3000 } else { 9000 });
    }
}

#[test]
fn db_subcommands_keep_state_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| ok(&ndpdb(args, dir.path()));
    run(&["db", "create", "--db", "d", "--profile", "softssd", "--capacity-mib", "64"]);
    run(&["db", "load-orderline", "--db", "d", "--rows", "2000"]);
    assert_eq!(run(&["db", "snapshot", "--db", "d"]).trim(), "snapshot 1");
    run(&["db", "update", "--db", "d", "--rounds", "2"]);
    let agg = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["db", "aggregate", "--db", "d", "--json", "--pes", "4"];
        args.extend_from_slice(extra);
        serde_json::from_str(run(&args).trim()).unwrap()
    };
    for snap in [None, Some("1")] {
        let s: Vec<&str> = snap.map(|s| vec!["--snapshot", s]).unwrap_or_default();
        let ndp = agg(&[&s[..], &["--mode", "ndp"]].concat());
        let host = agg(&[&s[..], &["--mode", "host"]].concat());
        assert_eq!(ndp["result"], host["result"]);
        assert_eq!(ndp["versions_visited"], if snap.is_some() { 6000 } else { 2000 });
    }
    // Timestamps print and parse as PostgreSQL's do; they have no sum.
    let newest = agg(&["--func", "max", "--column", "ol_delivery_d"]);
    let text = newest["result"].as_str().unwrap().to_string();
    assert!(text.len() >= 19 && text.as_bytes()[4] == b'-' && text.as_bytes()[10] == b' ', "{newest}");
    let at_or_after = agg(&["--func", "count-star", "--where", &format!("ol_delivery_d >= '{text}'")]);
    assert!(at_or_after["result"].as_str().unwrap().parse::<u64>().unwrap() >= 1, "{at_or_after}");
    let err =
        refused(&ndpdb(&["db", "aggregate", "--db", "d", "--func", "sum", "--column", "ol_delivery_d"], dir.path()));
    assert!(err.contains("no sum or average"), "{err}");
    let err = refused(&ndpdb(&["db", "aggregate", "--db", "d", "--where", "ol_delivery_d > 5"], dir.path()));
    assert!(err.contains("is not a timestamp"), "{err}");
    let count = agg(&["--func", "count-star", "--where", "ol_amount>=5000.00"]);
    assert!(count["result"].as_str().unwrap().parse::<u64>().unwrap() < 2000);
    let err = refused(&ndpdb(&["db", "aggregate", "--db", "d", "--where", "ol_amount>>1"], dir.path()));
    assert!(err.contains("--where"), "{err}");
    let err = refused(&ndpdb(&["db", "aggregate", "--db", "d", "--column", "nope"], dir.path()));
    assert!(err.contains("no column nope"), "{err}");
    run(&["db", "snapshot", "--db", "d", "--drop", "1"]);
    assert!(run(&["db", "gc", "--db", "d"]).contains("removed 4000 versions"));
    assert_eq!(agg(&["--mode", "ndp"])["versions_visited"], 2000);
    let info = run(&["db", "info", "--db", "d"]);
    assert!(info.contains("table order_line (2000 tuples)"), "{info}");
    assert!(info.contains("pages of 8192 B;") && info.contains("held back for the next checkpoint"), "{info}");
    let err = refused(&ndpdb(&["db", "info", "--db", "nowhere"], dir.path()));
    assert!(err.contains("no device image"), "{err}");
}

/// `ndpdb db update-ndp`: the device's update is committed and seen by both
/// read paths; a value outside the column's type fails the whole statement
/// (PostgreSQL's "numeric field overflow") and changes nothing.
#[test]
fn db_update_ndp_updates_on_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| ok(&ndpdb(args, dir.path()));
    run(&["db", "create", "--db", "d", "--capacity-mib", "64"]);
    // TPC-C's first 2,100 orders of a district are delivered, with amount
    // 0.00: 30,000 tuples reach the later ones.
    run(&["db", "load-orderline", "--db", "d", "--rows", "30000"]);
    // Values in cents, from the aggregate's decimal text.
    let agg = |extra: &[&str]| -> i64 {
        let mut args = vec!["db", "aggregate", "--db", "d", "--json", "--pes", "4"];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(run(&args).trim()).unwrap();
        v["result"].as_str().unwrap().replace('.', "").parse().unwrap()
    };
    let before = agg(&[]);
    let qualifying = agg(&["--func", "count-star", "--where", "ol_amount<9000.00"]);
    assert!(qualifying > 21_000 && qualifying < 30_000, "{qualifying}");
    let up: serde_json::Value = serde_json::from_str(
        run(&[
            "db",
            "update-ndp",
            "--db",
            "d",
            "--set",
            "ol_amount = ol_amount + 1.50",
            "--where",
            "ol_amount<9000.00",
            "--pes",
            "4",
            "--json",
        ])
        .trim(),
    )
    .unwrap();
    assert_eq!(up["tuples_updated"].as_i64(), Some(qualifying), "{up}");
    assert_eq!(up["profile"], "u280-nvm");
    assert!(up["modelled_s"].as_f64().unwrap() > 0.0, "{up}");
    // Uncontended, a PE's lock is one compare-and-swap on the bucket.
    assert_eq!(up["counters"]["coherent_remote"].as_i64(), Some(qualifying), "{up}");
    assert_eq!(up["counters"]["coherent_local_hits"], 0, "{up}");
    let after = agg(&[]);
    assert_eq!(after, before + 150 * qualifying);
    assert_eq!(agg(&["--mode", "host"]), after, "host and device read the same versions");
    // Some amounts are above 100.00, and times 100 they overflow numeric(6,2).
    let err = refused(&ndpdb(&["db", "update-ndp", "--db", "d", "--set", "ol_amount = ol_amount * 100"], dir.path()));
    assert!(err.contains("numeric field overflow") && err.contains("numeric(6,2)"), "{err}");
    assert_eq!(agg(&[]), after, "a failed statement changes nothing");
    for (set, says) in [
        ("ol_amount 3", "expected COLUMN = VALUE"),
        ("= 3", "no column before `=`"),
        ("nope = 1", "no column nope"),
        ("ol_dist_info = 1", "integer and decimal columns"),
        ("ol_amount = ol_amount * 1.5", "not an integer"),
        ("ol_amount = 1.234", "at most 2 decimals"),
    ] {
        let err = refused(&ndpdb(&["db", "update-ndp", "--db", "d", "--set", set], dir.path()));
        assert!(err.contains(says), "--set {set:?}: {err}");
    }
    // A 4 MiB image has a 512 KiB log: the loader's transactions must fit it
    // (one of 10,000 tuples needs 890 KB), and the device's own limit is
    // then a clear error.
    run(&["db", "create", "--db", "small", "--capacity-mib", "4"]);
    assert!(run(&["db", "load-orderline", "--db", "small", "--rows", "20000"]).contains("has 20000"));
    let err = refused(&ndpdb(&["db", "update", "--db", "small", "--rounds", "2"], dir.path()));
    assert!(err.contains("the device is full") && err.contains("larger capacity"), "{err}");
    assert!(ok(&ndpdb(&["check", "small"], dir.path())).contains(": 0 errors"));
    run(&["db", "create", "--db", "plain", "--profile", "softssd", "--capacity-mib", "16"]);
    run(&["db", "load-orderline", "--db", "plain", "--rows", "10"]);
    let err = refused(&ndpdb(&["db", "update-ndp", "--db", "plain", "--set", "ol_amount = 1"], dir.path()));
    assert!(err.contains("coherent"), "{err}");
    assert!(ok(&ndpdb(&["check", "d"], dir.path())).contains(": 0 errors"));
}

/// `ndpdb ... | head`: a reader that goes away is the end of the output, not
/// a panic, and a database command still closes its database (the next one
/// has no log to replay).
#[test]
fn a_closed_stdout_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| ok(&ndpdb(args, dir.path()));
    run(&["db", "create", "--db", "d", "--capacity-mib", "16"]);
    run(&["db", "load-orderline", "--db", "d", "--rows", "100"]);
    for args in [&["db", "aggregate", "--db", "d", "--func", "sum"][..], &["profiles", "list"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ndpdb"))
            .args(args)
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !err.contains("panicked"), "{args:?}: {:?} {err}", out.status);
    }
    let info = ndpdb(&["db", "info", "--db", "d"], dir.path());
    assert!(info.status.success());
    assert!(!String::from_utf8_lossy(&info.stderr).contains("recovery"), "the aggregate closed the database");
}
