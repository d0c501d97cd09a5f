//! The new user's tour of issue 15, command by command: the README's own
//! commands run as written, a closed stderr is no panic, zero counts are
//! refused by one rule, repeated commands write new values, the results of
//! a failed run do not linger, and every table with a time says which
//! profile and clock made it and how many completions were late.

mod common;

use common::{ndpdb, ok, refused};
use std::process::{Command, Stdio};

/// A command line as a shell splits it: words, double quotes, a `#`
/// comment at the end.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted, mut in_word) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '"' => (quoted, in_word) = (!quoted, true),
            '#' if !quoted && !in_word => break,
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                }
                in_word = false;
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The README's database commands, in order, on the README's data: its
/// update-NDP example once overflowed `numeric(6,2)` on the amounts its own
/// update rounds wrote. (The image is 256 MiB instead of 1024, which holds
/// the same data.)
#[test]
fn the_readme_db_commands_run_as_written() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().filter(|l| l.starts_with("ndpdb db ")).collect();
    assert!(lines.iter().any(|l| l.contains("update-ndp")), "{lines:?}");
    let dir = tempfile::tempdir().unwrap();
    for line in lines {
        let words = shell_words(&line.replace("--capacity-mib 1024", "--capacity-mib 256"));
        let args: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
        let out = ndpdb(&args, dir.path());
        assert!(out.status.success(), "README: {line}\n{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// `ndpdb ... 2>&1 | head -1`: a stderr that nobody reads any more ends
/// the notes, progress and errors written there, not the command (it used
/// to panic with exit 101).
#[test]
fn a_closed_stderr_is_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_ndpdb"))
            .args(args)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(writer)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string())
    };
    let (code, stdout) = run(&["bench", "orderline-sum", "--rows", "2000", "--rounds", "1", "--pes", "4"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("SUM(ol_amount) over 2000"), "{stdout}");
    assert_eq!(run(&["db", "info", "--db", "nowhere"]).0, Some(1), "an error on a closed stderr is still exit 1");
}

/// One rule for PE and worker counts in every command that takes them, and
/// no run of nothing that reports a rate or a time for it.
#[test]
fn zero_counts_are_refused_alike() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| ok(&ndpdb(args, dir.path()));
    run(&["db", "create", "--db", "d", "--capacity-mib", "16"]);
    run(&["db", "load-orderline", "--db", "d", "--rows", "100"]);
    let pes = "--pes 0: profile `u280-nvm` has 1..=16 PEs";
    let workers = "--workers 0: the host-only block stack runs 1..=256 worker threads";
    for (args, says) in [
        (&["bench", "orderline-sum", "--rows", "100", "--workers", "0"][..], workers),
        (&["bench", "orderline-sum", "--rows", "100", "--pes", "0"], pes),
        (&["bench", "snapshot", "--rows", "100", "--no-postgres", "--workers", "0"], workers),
        (&["bench", "snapshot", "--rows", "100", "--no-postgres", "--pes", "0"], pes),
        (&["bench", "device-scaling", "--pes", "0"], pes),
        (&["db", "aggregate", "--db", "d", "--pes", "0"], pes),
        (&["db", "aggregate", "--db", "d", "--mode", "host", "--workers", "0"], workers),
        (&["db", "update-ndp", "--db", "d", "--set", "ol_amount = 1", "--pes", "0"], pes),
        (&["bench", "device-scaling", "--transfers", "0"], "--transfers 0"),
        (&["bench", "crash", "--points", "0"], "--points 0"),
    ] {
        let err = refused(&ndpdb(args, dir.path()));
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(run(&["db", "aggregate", "--db", "d"]).starts_with("sum(ol_amount) = 0.00"), "--pes 0 changed nothing");
}

/// `db update` mixes its seed with the database's history: two calls write
/// different values, and the same calls on a copy write the same ones.
#[test]
fn each_db_update_writes_new_values() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| ok(&ndpdb(args, dir.path()));
    let sums = |db: &str| -> Vec<String> {
        run(&["db", "create", "--db", db, "--capacity-mib", "32"]);
        run(&["db", "load-orderline", "--db", db, "--rows", "2000"]);
        (0..3)
            .map(|_| {
                run(&["db", "update", "--db", db, "--rounds", "1"]);
                let v: serde_json::Value =
                    serde_json::from_str(run(&["db", "aggregate", "--db", db, "--json"]).trim()).unwrap();
                v["result"].as_str().unwrap().to_string()
            })
            .collect()
    };
    let a = sums("a");
    assert!(a[0] != a[1] && a[1] != a[2], "each call writes new values: {a:?}");
    assert_eq!(sums("b"), a, "the same history writes the same values");
}

/// `ndpdb device create` makes a bare image; the error for a missing
/// database names `ndpdb db create`, which puts a database into a bare
/// image and refuses one that holds a database.
#[test]
fn db_create_and_device_create_agree() {
    let dir = tempfile::tempdir().unwrap();
    let err = refused(&ndpdb(&["db", "info", "--db", "d"], dir.path()));
    assert!(err.contains("ndpdb db create --db d"), "{err}");
    let made = ok(&ndpdb(&["db", "create", "--db", "d", "--capacity-mib", "16"], dir.path()));
    assert!(made.contains("d/device.img") && made.contains("16 MiB reserved on disk"), "{made}");
    ok(&ndpdb(&["device", "create", "--db", "bare", "--capacity-mib", "16"], dir.path()));
    let err = refused(&ndpdb(&["db", "create", "--db", "bare", "--capacity-mib", "32"], dir.path()));
    assert!(err.contains("exists with 16 MiB"), "{err}");
    let made = ok(&ndpdb(&["db", "create", "--db", "bare"], dir.path()));
    assert!(made.contains("in the existing image"), "{made}");
    ok(&ndpdb(&["db", "load-orderline", "--db", "bare", "--rows", "10"], dir.path()));
    let err = refused(&ndpdb(&["db", "create", "--db", "bare"], dir.path()));
    assert!(err.contains("already holds a database"), "{err}");
    assert!(ok(&ndpdb(&["db", "info", "--db", "bare"], dir.path())).contains("(10 tuples)"), "nothing was lost");
}

/// Text by default and one JSON object with `--json`, everywhere; `--drop`
/// with `--list` does both.
#[test]
fn listings_are_tables_by_default_and_json_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| ok(&ndpdb(args, dir.path()));
    let json = |args: &[&str]| -> serde_json::Value { serde_json::from_str(run(args).trim()).unwrap() };
    run(&["db", "create", "--db", "d", "--capacity-mib", "16"]);
    run(&["db", "load-orderline", "--db", "d", "--rows", "100"]);
    let info = run(&["device", "info", "--db", "d"]);
    assert!(info.contains("profile") && info.contains("u280-nvm") && !info.contains('{'), "{info}");
    assert_eq!(json(&["device", "info", "--db", "d", "--json"])["pes"], 16);
    let profiles = run(&["profiles", "list", "--json"]);
    let names: Vec<serde_json::Value> =
        profiles.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["name"].clone()).collect();
    assert!(names.contains(&serde_json::json!("u280-nvm")), "{profiles}");
    assert_eq!(json(&["db", "snapshot", "--db", "d", "--json"])["snapshot"], 1);
    run(&["db", "snapshot", "--db", "d"]);
    let both = json(&["db", "snapshot", "--db", "d", "--drop", "1", "--list", "--json"]);
    assert_eq!(both["dropped"], 1);
    assert_eq!(both["pinned_snapshots"].as_array().map(Vec::len), Some(1), "{both}");
    assert_eq!(both["pinned_snapshots"][0]["snapshot"], 2, "{both}");
    let listed = run(&["db", "snapshot", "--db", "d", "--list"]);
    assert!(listed.starts_with("snapshot 2:") && listed.lines().count() == 1, "{listed}");
    let info = json(&["db", "info", "--db", "d", "--json"]);
    assert_eq!(info["tables"][0]["tuples"], 100);
    assert_eq!(info["pinned_snapshots"][0]["snapshot"], 2);
}

/// Every table with a time says the profile, the clock and the late
/// completions; on the virtual clock the host-only block stack's modelled
/// time is the same in every run (the chain walk's measured CPU time is
/// beside it, not in it).
#[test]
fn times_come_with_their_clock_and_repeat_on_the_virtual_clock() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| ok(&ndpdb(args, dir.path()));
    run(&["db", "create", "--db", "d", "--capacity-mib", "32"]);
    run(&["db", "load-orderline", "--db", "d", "--rows", "3000"]);
    run(&["db", "update", "--db", "d", "--rounds", "2"]);
    let host = |workers: &str| -> serde_json::Value {
        let out = run(&["db", "aggregate", "--db", "d", "--mode", "host", "--workers", workers, "--json"]);
        serde_json::from_str(out.trim()).unwrap()
    };
    let first = host("2");
    for workers in ["2", "2", "3"] {
        let again = host(workers);
        assert_eq!(again["modelled_s"], first["modelled_s"], "modelled time on the virtual clock: {again}");
        assert_eq!(again["late_completions"], 0);
        assert!(again["host_cpu_s"].as_f64().unwrap() > 0.0, "{again}");
    }
    let text = run(&["db", "aggregate", "--db", "d", "--mode", "host"]);
    assert!(text.contains("profile u280-nvm, virtual clock") && text.contains(" completions late"), "{text}");
    let table = run(&["bench", "orderline-sum", "--rows", "2000", "--rounds", "1", "--pes", "4", "--out", "r"]);
    assert!(table.contains("profile u280-nvm, virtual clock") && table.contains("late/completions"), "{table}");
}

/// A composer file's run: plots named and titled after the workload, no
/// modelled plot on `ideal`, whose modelled times are 0; a run that fails
/// leaves no results directory behind.
#[test]
fn a_composer_run_is_plotted_after_its_workload_and_a_failed_run_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.toml"),
        "name = \"Report while orders change\"\n[[step]]\nload = 3000\n[[step]]\nsnapshot = \"repeatable read\"\n\
         [[step]]\nupdate = 1000\n[[step]]\nsnapshot = \"serializable\"\n[query]\nop = \"sum\"\n",
    )
    .unwrap();
    let args = ["bench", "snapshot", "--workload", "w.toml", "--no-postgres", "--repeat", "1", "--pes", "4"];
    let out = ndpdb(&[&args[..], &["--profile", "ideal", "--out", "ideal"]].concat(), dir.path());
    ok(&out);
    let run_dir = std::fs::read_dir(dir.path().join("ideal")).unwrap().next().unwrap().unwrap().path();
    let mut files: Vec<String> =
        std::fs::read_dir(&run_dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    let plotted = files.iter().any(|f| f.ends_with(".svg"));
    for f in files.iter().filter(|f| f.ends_with(".svg") || f.ends_with(".png")) {
        assert!(f.starts_with("workload-report-while-orders-change."), "{files:?}");
    }
    assert!(plotted || std::env::var_os("CI").is_none(), "CI draws plots: {files:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("all engines agree at all 2 points") && stderr.contains("at 1 of them"), "{stderr}");
    // A profile whose device DRAM holds nothing: the NDP call fails mid-run.
    let profile = ok(&ndpdb(&["profiles", "show", "u280-nvm"], dir.path()));
    std::fs::write(dir.path().join("no-dram.toml"), profile.replace("\nndp_mib = 8192", "\nndp_mib = 0")).unwrap();
    let err = refused(&ndpdb(&[&args[..], &["--profile", "no-dram.toml", "--out", "failed"]].concat(), dir.path()));
    assert!(err.contains("device DRAM exhausted"), "{err}");
    let left = std::fs::read_dir(dir.path().join("failed")).unwrap().count();
    assert_eq!(left, 0, "the failed run left its results directory");
}
