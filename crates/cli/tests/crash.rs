//! The crash harness as CI runs it (a short `ndpdb bench crash`, on the MVCC
//! and on the B+-tree store), and
//! `ndpdb check` on a healthy database and on one from a newer format.

use std::process::Command;

fn ndpdb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ndpdb"))
}

/// A short `ndpdb bench crash` with `args` (16 points on 500 rows): its
/// JSON summary, after checking it succeeded and lost nothing.
fn short_crash_run(args: &[&str]) -> (serde_json::Value, String) {
    let out_dir = tempfile::tempdir().unwrap();
    let out = ndpdb()
        .args(["bench", "crash"])
        .args(args)
        .args(["--points", "16", "--rows", "500", "--json", "--out"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let last = stdout.lines().last().expect("a summary line").to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(v["lost_commits"], 0, "{last}");
    assert_eq!(v["integrity_errors"], 0, "{last}");
    assert!(v["acknowledged_commits"].as_u64().unwrap() > 0, "{last}");
    (v, last)
}

#[test]
fn a_short_crash_run_loses_no_commit() {
    let (v, last) = short_crash_run(&[]);
    assert_eq!(v["crash_points"], 16, "{last}");
}

/// The same harness on the B+-tree store (`--store kv`): writes on the
/// store on the device image, crashed and recovered from its log ring.
#[test]
fn a_short_kv_crash_run_loses_no_acknowledged_write() {
    let (v, last) = short_crash_run(&["--store", "kv"]);
    assert_eq!((v["crash_points"].as_u64(), v["store"].as_str()), (Some(16), Some("kv")), "{last}");
}

#[test]
fn check_passes_a_healthy_database_and_refuses_a_newer_format() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let run = |args: &[&str]| {
        let o = ndpdb().args(args).output().unwrap();
        (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr))
    };
    let d = db.to_str().unwrap();
    assert!(run(&["db", "create", "--db", d, "--capacity-mib", "64"]).0);
    assert!(run(&["db", "load-orderline", "--db", d, "--rows", "3000"]).0);
    assert!(run(&["db", "update", "--db", d, "--rounds", "1"]).0);
    let (ok, text) = run(&["check", d, "--json"]);
    assert!(ok, "{text}");
    let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(v["integrity_errors"], 0);
    assert!(v["versions"].as_u64().unwrap() >= 6000, "{v}");
    // A database from a newer format version is refused with a message.
    let img = db.join("device.img");
    let bytes = std::fs::read(&img).unwrap();
    let page = 8192usize;
    let mut damaged = bytes.clone();
    // Both root slots say format version 99 (offset 4 of pages 0 and 1, after the 4 KiB superblock).
    for slot in 0..2 {
        let at = 4096 + slot * page + 4;
        damaged[at..at + 4].copy_from_slice(&99u32.to_le_bytes());
        // As if a newer build had written it: the root's CRC (its last 4
        // bytes in every version) and the sectors' check codes match.
        let crc = crc32fast::hash(&damaged[at - 4..at - 4 + page - 4]);
        damaged[at - 4 + page - 4..at - 4 + page].copy_from_slice(&crc.to_le_bytes());
        ndpdb_format::image::reseal(&mut damaged, (slot * page) as u64, page as u64).unwrap();
    }
    std::fs::write(&img, &damaged).unwrap();
    let (ok, text) = run(&["check", d]);
    assert!(!ok && text.contains("format version 99"), "{text}");
}
