//! `ndpdb bench cbm`: the CI subset end to end (its JSON lines; Flush,
//! Shadow and CBM fresh; Baseline stale under updates), and bad grid names
//! and sizes refused.

mod common;

use common::ndpdb;

const FIELDS: [&str; 17] = [
    "method",
    "mix",
    "distribution",
    "value_bytes",
    "host_ops_per_s",
    "host_read_us_p50",
    "host_update_us_p50",
    "lookup_us_p50",
    "lookup_us_p99",
    "lookups",
    "retries",
    "freshness_violations",
    "commands",
    "link_bytes_to_host",
    "link_bytes_to_device",
    "profile",
    "clock",
];

#[test]
fn quick_run_flush_shadow_and_cbm_are_fresh_and_baseline_is_stale_under_updates() {
    let dir = tempfile::tempdir().unwrap();
    let out = ndpdb(&["bench", "cbm", "--quick", "--json", "--out", "results"], dir.path());
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let rows: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 8, "four methods x read-only and update-only: {stdout}");
    for r in &rows {
        for f in FIELDS {
            assert!(r.get(f).is_some(), "no `{f}` in {r}");
        }
        assert_eq!(r["profile"], "softssd (16 KiB pages)");
        assert_eq!(r["clock"], "virtual");
        assert_eq!(r["lookups"], 300, "{r}");
        assert!(r["host_ops_per_s"].as_f64().unwrap() > 0.0 && r["lookup_us_p50"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["commands"].as_u64().unwrap() > 0 && r["link_bytes_to_host"].as_u64().unwrap() > 0, "{r}");
    }
    let cell = |method: &str, mix: &str| {
        rows.iter().find(|r| r["method"] == method && r["mix"] == mix).unwrap_or_else(|| panic!("{method} {mix}"))
    };
    let violations = |method, mix| cell(method, mix)["freshness_violations"].as_u64().unwrap();
    for method in ["baseline", "flush", "shadow", "cbm"] {
        assert_eq!(violations(method, "read-only"), 0, "{method}: nothing to be stale about");
        assert_eq!(cell(method, "update-only")["lookup_errors"], 0, "{}", cell(method, "update-only"));
    }
    for method in ["flush", "shadow", "cbm"] {
        assert_eq!(violations(method, "update-only"), 0, "{method} must never answer stale");
    }
    let cbm = cell("cbm", "update-only");
    assert!(cbm["lookup_host_reads"].as_u64().unwrap() > 0, "CBM read dirty nodes from host memory: {cbm}");
    assert!(
        violations("baseline", "update-only") > 0,
        "Baseline reads stale pages: {}",
        cell("baseline", "update-only")
    );
    assert!(cell("flush", "update-only")["host_update_us_p50"].as_f64().unwrap() > 0.0);
    assert!(stderr.contains("results: "), "{stderr}");
    let results = dir.path().join("results");
    let run = std::fs::read_dir(&results).unwrap().next().unwrap().unwrap().path();
    for f in ["cbm.jsonl", "cdf.jsonl", "table.txt"] {
        assert!(run.join(f).exists(), "{f} in {}", run.display());
    }
}

#[test]
fn bad_names_and_sizes_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (vec!["--methods", "cbm,lambda"], "--methods: unknown `lambda`"),
        (vec!["--mixes", "write-only"], "--mixes: unknown `write-only`"),
        (vec!["--methods", "baseline", "--value-bytes", "9000"], "--value-bytes 9000"),
        (vec!["--methods", "baseline", "--keys", "10"], "--keys 10"),
    ] {
        let mut all = vec!["bench", "cbm", "--out", "results"];
        all.extend(args);
        let out = ndpdb(&all, dir.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{all:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains(says) && !err.contains("panicked"), "{all:?}: {err}");
    }
    let help = ndpdb(&["bench", "cbm", "--help"], dir.path());
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["--methods", "--mixes", "--distributions", "--value-bytes", "--keys", "--lookups", "--quick", "--json"]
    {
        assert!(help.contains(flag), "{flag} in {help}");
    }
}
