//! `ndpdb bench locks` at toy sizes through the library: every experiment
//! runs, every JSON line has its keys, latencies are positive, and the lock
//! table is empty afterwards (the run checks that itself and fails
//! otherwise; the last test shows the check bites). No timing is asserted.

use std::sync::mpsc;
use std::time::Duration;

use ndpdb_bench::locks::{self, Config, Row};
use ndpdb_device::Profile;
use ndpdb_locktable::{LockKey, LockTable};
use serde_json::Value;

/// A hang guard, not a timing: the toy run takes well under a second.
const GUARD: Duration = Duration::from_secs(120);

fn tiny(experiments: Vec<u32>) -> Config {
    Config {
        experiments,
        contention_pct: vec![0, 50, 100],
        profile: Profile::load("u280-nvm").unwrap(),
        profiles: vec![Profile::load("u280-nvm").unwrap(), Profile::load("nvme-ssd").unwrap()],
        requests: 2_000,
        threads: 1,
        pes: 2,
        keys: 64,
        table_bytes: vec![ndpdb_locktable::DEFAULT_TABLE_BYTES],
        postgres: false,
        seed: 7,
    }
}

fn run_guarded(cfg: Config) -> Vec<Row> {
    let (rows, notes) = run_with_notes(cfg);
    assert!(notes.is_empty(), "{notes:?}");
    rows
}

/// The run's rows and notes, less the note that other processes were busy
/// (other tests run beside these, PostgreSQL servers among them).
fn run_with_notes(cfg: Config) -> (Vec<Row>, Vec<String>) {
    let (rows, mut notes) = run_with_all_notes(cfg);
    notes.retain(|n| !n.starts_with("other processes kept"));
    (rows, notes)
}

fn run_with_all_notes(cfg: Config) -> (Vec<Row>, Vec<String>) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let dir = tempfile::tempdir().unwrap();
        let mut steps = Vec::new();
        let outcome = locks::run(&cfg, dir.path(), |done, total, label| steps.push((done, total, label.to_string())));
        let _ = tx.send((outcome.map_err(|e| format!("{e:#}")), steps, cfg.steps()));
    });
    let (rows, steps, expected) = rx.recv_timeout(GUARD).expect("the locks experiments did not finish (a hang?)");
    let outcome = rows.unwrap_or_else(|e| panic!("the run failed: {e}"));
    assert_eq!(steps.len(), expected, "one progress step per phase: {steps:?}");
    assert!(steps.iter().enumerate().all(|(i, (done, total, _))| *done == i && *total == expected));
    (outcome.rows, outcome.notes)
}

fn json(row: &Row) -> Value {
    serde_json::to_value(row).unwrap()
}

/// The keys every latency line has (Exp. 1 and 3).
const LATENCY_KEYS: [&str; 10] = [
    "experiment",
    "lock_table",
    "side",
    "contention_pct",
    "access",
    "requests",
    "p50_ns",
    "p99_ns",
    "clock",
    "profile",
];

#[test]
fn all_three_experiments_write_complete_lines() {
    let rows = run_guarded(tiny(vec![1, 2, 3]));
    let lines: Vec<Value> = rows.iter().map(json).collect();
    let of = |e: u64| lines.iter().filter(|l| l["experiment"] == e).collect::<Vec<_>>();
    check_exp1_lines(&of(1));
    check_exp2_lines(&of(2));
    check_exp3_lines(&of(3));

    let text = locks::table(&rows);
    for section in ["Exp. 1", "Exp. 2", "Exp. 3", "median conventional/ndpdb"] {
        assert!(text.contains(section), "the table lacks {section}:\n{text}");
    }
}

/// Exp. 1: a host and a device line per level, on ndpdb's table.
fn check_exp1_lines(exp1: &[&Value]) {
    assert_eq!(exp1.len(), 2 * 3);
    for l in exp1 {
        for k in LATENCY_KEYS {
            assert!(l.get(k).is_some(), "Exp. 1 line lacks {k}: {l}");
        }
        assert_eq!(l["lock_table"], "ndpdb");
        assert!(l["access"].is_null());
        assert_eq!(l["profile"], "u280-nvm");
        assert!(l["p50_ns"].as_u64().unwrap() > 0 && l["p99_ns"].as_u64().unwrap() >= l["p50_ns"].as_u64().unwrap());
        match l["side"].as_str().unwrap() {
            "host" => {
                assert_eq!(l["clock"], "real");
                assert_eq!(l["requests"], 2_000);
                let shared = l["shared_requests_pct"].as_f64().unwrap();
                let level = l["contention_pct"].as_f64().unwrap();
                // The share is drawn at random; 2,000 draws stay well within 10 points.
                assert!((shared - level).abs() < 10.0, "{shared}% shared at {level}%");
            }
            "device" => {
                assert_eq!(l["clock"], "virtual");
                assert_eq!(l["requests"], 2_000);
            }
            other => panic!("side {other}"),
        }
    }
    for pct in [0, 50, 100] {
        for side in ["host", "device"] {
            assert!(exp1.iter().any(|l| l["contention_pct"] == pct && l["side"] == side), "{side} at {pct}%");
        }
    }
}

/// Exp. 2: both paths, both sizes, per profile; no coherent path on an NVMe SSD.
fn check_exp2_lines(exp2: &[&Value]) {
    assert_eq!(exp2.len(), 2 * 2 * 2);
    for l in exp2 {
        for k in ["experiment", "profile", "transfer_bytes", "path", "latency_ns"] {
            assert!(l.get(k).is_some(), "Exp. 2 line lacks {k}: {l}");
        }
        let unavailable = l["profile"] == "nvme-ssd" && l["path"] == "coherent";
        if unavailable {
            assert!(l["latency_ns"].is_null(), "{l}");
        } else {
            assert!(l["latency_ns"].as_f64().unwrap() > 0.0, "{l}");
        }
    }
    let pcie = |bytes: u64| {
        exp2.iter().find(|l| l["profile"] == "u280-nvm" && l["path"] == "pcie" && l["transfer_bytes"] == bytes).unwrap()
            ["latency_ns"]
            .as_f64()
            .unwrap()
    };
    assert!(pcie(8192) > pcie(64), "8 KiB takes longer over PCIe than 64 B");
}

/// Exp. 3: both tables and the floor, both orders, each with a histogram of
/// every sample.
fn check_exp3_lines(exp3: &[&Value]) {
    assert_eq!(exp3.len(), 6);
    for l in exp3 {
        for k in LATENCY_KEYS {
            assert!(l.get(k).is_some(), "Exp. 3 line lacks {k}: {l}");
        }
        assert_eq!(l["side"], "host");
        assert_eq!(l["clock"], "real");
        assert!(l["p50_ns"].as_u64().unwrap() > 0);
        let counted: u64 = l["histogram"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
        assert_eq!(counted, 2_000);
    }
    for table in ["ndpdb", "floor", "conventional"] {
        for access in ["sequential", "random"] {
            assert!(exp3.iter().any(|l| l["lock_table"] == table && l["access"] == access), "{table} {access}");
        }
    }
}

#[test]
fn exp3_measures_each_table_size_and_plots_against_it() {
    let sizes = [1usize << 12, 1 << 14];
    let mut cfg = tiny(vec![3]);
    cfg.table_bytes = sizes.to_vec();
    cfg.requests = 500;
    let rows = run_guarded(cfg);
    let lines: Vec<Value> = rows.iter().map(json).collect();
    // Per access: ndpdb's table and its cache-line floor at each size, the
    // conventional manager once.
    assert_eq!(lines.len(), 2 * (2 * sizes.len() + 1));
    for access in ["sequential", "random"] {
        let of = |table: &str| {
            lines.iter().filter(|l| l["access"] == access && l["lock_table"] == table).collect::<Vec<_>>()
        };
        let ndpdb: Vec<u64> = of("ndpdb").iter().map(|l| l["table_bytes"].as_u64().unwrap()).collect();
        assert_eq!(ndpdb, sizes.map(|b| b as u64), "{access}");
        let floor: Vec<u64> = of("floor").iter().map(|l| l["table_bytes"].as_u64().unwrap()).collect();
        assert_eq!(floor, sizes.map(|b| b as u64), "{access}");
        let conventional = of("conventional");
        assert_eq!(conventional.len(), 1, "{access}");
        assert!(conventional[0]["table_bytes"].is_null(), "{}", conventional[0]);
        for l in of("ndpdb").into_iter().chain(of("floor")).chain(conventional) {
            assert_eq!(l["requests"], 500);
            assert!(l["histogram"].is_array(), "{l}");
        }
    }

    let text = locks::table(&rows);
    for access in ["sequential", "random"] {
        for size in ["4 KiB", "16 KiB"] {
            let line = format!("median conventional/ndpdb, {access}, {size} table:");
            let found = text.lines().find(|l| l.starts_with(&line));
            let found = found.unwrap_or_else(|| panic!("the table lacks `{line}`:\n{text}"));
            assert!(found.contains("over the cache-line floor"), "no floor ratio in `{found}`");
        }
    }

    let dir = tempfile::tempdir().unwrap();
    match locks::plot(&rows, dir.path()) {
        Ok(files) => {
            for stem in ["exp3-table-size", "exp3-histogram-sequential", "exp3-histogram-random"] {
                for ext in ["svg", "png"] {
                    let path = dir.path().join(format!("{stem}.{ext}"));
                    assert!(files.contains(&path), "plot() does not name {}", path.display());
                    assert!(std::fs::metadata(&path).unwrap().len() > 1000, "{} is too small", path.display());
                }
            }
        }
        // Only a missing font may stop a plot, and not in CI (`.ci/run` installs it).
        Err(e) => {
            assert!(std::env::var_os("CI").is_none(), "CI must draw plots: {e}");
            assert!(e.to_string().contains("fonts-dejavu-core"), "{e}");
        }
    }
}

/// PostgreSQL's own lock manager, timed in a private server by the C
/// function ndpdb compiles against its headers: two backends at once, the
/// same requests as ndpdb's tables, and no tuple lock left in `pg_locks`
/// (the run checks that itself). CI installs PostgreSQL, its headers and a
/// compiler; elsewhere the run must say which of them is missing.
#[test]
fn exp3_times_postgresqls_own_lock_manager() {
    let mut cfg = tiny(vec![3]);
    cfg.postgres = true;
    cfg.threads = 2;
    cfg.requests = 3_001;
    let (rows, notes) = run_with_notes(cfg);
    let lines: Vec<Value> = rows.iter().map(json).collect();
    let pg: Vec<&Value> = lines.iter().filter(|l| l["lock_table"] == "postgresql").collect();
    if pg.is_empty() {
        ndpdb_baseline::require::skip_postgres("exp3_times_postgresqls_own_lock_manager", &format!("{notes:?}"));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("install"), "the note says what to install: {}", notes[0]);
        return;
    }
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(pg.len(), 2, "one line per access");
    for access in ["sequential", "random"] {
        let l = pg.iter().find(|l| l["access"] == access).unwrap_or_else(|| panic!("no {access} line"));
        assert_eq!(l["requests"], 3_001);
        assert_eq!(l["threads"], 2);
        assert_eq!(l["clock"], "real");
        assert!(l["table_bytes"].is_null());
        assert!(l["postgres_version"].as_str().unwrap().starts_with("PostgreSQL "), "{l}");
        assert!(l["p50_ns"].as_u64().unwrap() > 0);
        let counted: u64 = l["histogram"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
        assert_eq!(counted, 3_001);
    }
    let text = locks::table(&rows);
    for access in ["sequential", "random"] {
        let line = format!("median postgresql/ndpdb, {access}, 4 MiB table:");
        assert!(text.contains(&line), "the table lacks `{line}`:\n{text}");
    }
}

#[test]
fn every_table_size_is_checked() {
    let mut cfg = tiny(vec![3]);
    cfg.table_bytes = vec![1 << 12, 3000];
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("--table-bytes 3000") && e.contains("power of two"), "{e}");
    cfg.table_bytes = vec![1 << 12, 1 << 14, 1 << 12];
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("--table-bytes 4096"), "{e}");
    cfg.table_bytes = vec![];
    assert!(cfg.validate().is_err());
}

#[test]
fn exp1_needs_a_coherent_profile() {
    let mut cfg = tiny(vec![1]);
    cfg.profile = Profile::load("nvme-ssd").unwrap();
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("[coherent]") && e.contains("--profile"), "{e}");
}

#[test]
fn a_lock_left_behind_fails_the_check() {
    let table = LockTable::with_bytes(1 << 12).unwrap();
    locks::check_empty(&table).unwrap();
    let key = LockKey::new(3, 1);
    table.lock(key, 9, None).unwrap();
    let e = locks::check_empty(&table).unwrap_err().to_string();
    assert!(e.contains("not empty"), "{e}");
    table.unlock(key, 9).unwrap();
    locks::check_empty(&table).unwrap();
}
