//! Sorts, hash joins and hash aggregations past `work_mem` spill to disk
//! and give the rows they give in memory.
//!
//! Each query runs at `work_mem = 64MB` (in memory) and at `64kB`
//! (PostgreSQL's smallest), with one and with two workers. The answers must
//! be equal (row for row where ORDER BY decides the order), EXPLAIN ANALYZE
//! at 64kB must show the operator's spill line, and the spill directory
//! must be empty afterwards. `slt/spill.slt` runs the same kinds of query
//! against PostgreSQL.

use ndpdb_sql::SqlState;
use ndpdb_sql::session::Session;

mod session_support;

use session_support::{engine, err, ok, text};

const BIG: &str = "INSERT INTO big SELECT g, g, CASE WHEN g % 97 = 0 THEN NULL ELSE g % 5003 END, \
     (g * 37 % 10007) / 100.0, g * 0.25, 'name-' || (g * 7919 % 100000)::text FROM generate_series(1, 60000) g";
const OTHER: &str = "INSERT INTO other SELECT g, CASE WHEN g % 89 = 0 THEN NULL ELSE g * 3 % 70000 END, \
     repeat('p', g % 40) FROM generate_series(1, 40000) g";

fn load(s: &mut Session) {
    ok(s, "CREATE TABLE big (id int PRIMARY KEY, bid int, grp int, val numeric(12,2), f double precision, name text)");
    ok(s, "CREATE TABLE other (id int PRIMARY KEY, k int, payload text)");
    ok(s, BIG);
    ok(s, OTHER);
    ok(s, "ANALYZE");
}

/// (query, whether ORDER BY fixes the whole order, the operator that spills)
const QUERIES: &[(&str, bool, &str)] = &[
    ("SELECT id, name, grp FROM big ORDER BY name DESC, grp NULLS FIRST, id", true, "Sort"),
    ("SELECT grp, val, id FROM big ORDER BY grp NULLS FIRST, val DESC", false, "Sort"),
    (
        "SELECT grp, count(*), sum(val), avg(val), min(name), max(name), sum(f), count(grp) FROM big GROUP BY grp",
        false,
        "HashAggregate",
    ),
    ("SELECT grp, count(DISTINCT id % 3), sum(f) FROM big GROUP BY grp", false, "HashAggregate"),
    ("SELECT name, count(*) FROM big GROUP BY name HAVING count(*) > 0", false, "HashAggregate"),
    ("SELECT b.id, o.id, o.payload FROM big b JOIN other o ON b.bid = o.k", false, "Join"),
    ("SELECT b.id, o.id FROM big b JOIN other o ON b.grp = o.k AND o.id < b.id", false, "Join"),
    ("SELECT b.id, o.id FROM big b LEFT JOIN other o ON b.bid = o.k", false, "Join"),
    ("SELECT b.id, o.id FROM big b RIGHT JOIN other o ON b.bid = o.k", false, "Join"),
    ("SELECT b.id, o.id FROM big b FULL JOIN other o ON b.bid = o.k", false, "Join"),
    ("SELECT b.id FROM big b WHERE EXISTS (SELECT 1 FROM other o WHERE o.k = b.bid)", false, "Join"),
    ("SELECT b.id FROM big b WHERE NOT EXISTS (SELECT 1 FROM other o WHERE o.k = b.bid)", false, "Join"),
];

fn answer(s: &mut Session, sql: &str, ordered: bool) -> Vec<String> {
    let mut rows = text(&ok(s, sql));
    if !ordered {
        rows.sort();
    }
    rows
}

#[test]
fn spilled_sorts_joins_and_aggregates_equal_the_in_memory_ones() {
    let dir = tempfile::tempdir().unwrap();
    let eng = engine(dir.path());
    let mut s = eng.session();
    load(&mut s);
    for workers in [1, 2] {
        ok(&mut s, &format!("SET workers = {workers}"));
        for &(sql, ordered, operator) in QUERIES {
            ok(&mut s, "SET work_mem = '64MB'");
            let memory = answer(&mut s, sql, ordered);
            assert!(!memory.is_empty(), "{sql}: no rows");
            let explain = text(&ok(&mut s, &format!("EXPLAIN ANALYZE {sql}")));
            assert!(!explain.iter().any(|l| l.contains("Disk:")), "{sql} spilled at 64MB:\n{}", explain.join("\n"));
            ok(&mut s, "SET work_mem = '64kB'");
            let spilled = answer(&mut s, sql, ordered);
            assert_eq!(spilled.len(), memory.len(), "{sql} with {workers} workers: row counts");
            assert!(spilled == memory, "{sql} with {workers} workers: rows differ after spilling");
            let explain = text(&ok(&mut s, &format!("EXPLAIN ANALYZE {sql}")));
            let spill_line = explain.iter().position(|l| l.contains("Disk:"));
            let node = spill_line.and_then(|i| explain[..i].iter().rev().find(|l| l.contains("(actual rows")));
            assert!(
                node.is_some_and(|n| n.contains(operator)),
                "{sql}: no spill line under a {operator} node:\n{}",
                explain.join("\n")
            );
        }
    }
    let spill = dir.path().join("spill");
    let left: Vec<_> = std::fs::read_dir(&spill).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "spill files left behind: {left:?}");
}

#[test]
fn what_cannot_spill_fails_with_53200_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let eng = engine(dir.path());
    let mut s = eng.session();
    load(&mut s);
    ok(&mut s, "SET work_mem = '64kB'");
    // One join key for every row: no split makes the build side smaller.
    ok(&mut s, "CREATE TABLE same (k int, v text)");
    ok(&mut s, "INSERT INTO same SELECT 1, repeat('v', 30) FROM generate_series(1, 20000)");
    let e = err(&mut s, "SELECT count(*) FROM big b JOIN same x ON b.id % 1 + 1 = x.k");
    assert_eq!(e.code, SqlState::OUT_OF_MEMORY, "{e:?}");
    assert!(e.detail.as_deref().unwrap_or("").contains("share one join key"), "{e:?}");
    assert!(e.hint.as_deref().unwrap_or("").contains("work_mem"), "{e:?}");
    // A DISTINCT aggregate's set of one group cannot spill.
    let e = err(&mut s, "SELECT count(DISTINCT name) FROM big");
    assert_eq!(e.code, SqlState::OUT_OF_MEMORY, "{e:?}");
    assert_eq!(text(&ok(&mut s, "SELECT count(*) FROM other")), ["40000"]);
    ok(&mut s, "SET work_mem = '64MB'");
    assert_eq!(text(&ok(&mut s, "SELECT count(DISTINCT name) FROM big")), ["60000"]);
}

#[test]
fn cancelling_a_spilling_statement_removes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let eng = engine(dir.path());
    let mut s = eng.session();
    load(&mut s);
    ok(&mut s, "SET work_mem = '64kB'");
    let spill = dir.path().join("spill");
    let files = |spill: &std::path::Path| std::fs::read_dir(spill).map(|d| d.flatten().count()).unwrap_or(0);
    // Cancel once the statement has spill files: they must go with it.
    let cancel = s.cancel_flag();
    let watch = spill.clone();
    let canceller = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        while files(&watch) == 0 && t0.elapsed() < std::time::Duration::from_secs(60) {
            std::thread::yield_now();
        }
        let seen = files(&watch);
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        seen
    });
    let sql = "SELECT b.id, o.id FROM big b FULL JOIN other o ON b.bid = o.k ORDER BY b.name, o.payload, 1, 2";
    let e = err(&mut s, sql);
    assert!(canceller.join().unwrap() > 0, "the statement never spilled");
    assert_eq!(e.code, SqlState::QUERY_CANCELED, "{e:?}");
    assert_eq!(files(&spill), 0, "spill files left behind");
}

/// A spilling join still hands its build keys to the probe side's scan
/// (`runtime_filter.rs`): the rows without a partner never reach the disk.
/// The last two queries' Semi and Anti joins are planned to build on their
/// small left input, which at 64kB is partitioned first and filters the
/// right input's scan (`semi_build.rs`).
#[test]
fn a_spilling_join_filters_its_probe_scan_by_its_build_keys() {
    let dir = tempfile::tempdir().unwrap();
    let eng = engine(dir.path());
    let mut s = eng.session();
    load(&mut s);
    let queries = [
        "SELECT b.id, o.id, o.payload FROM big b JOIN other o ON b.id = o.k",
        "SELECT o.id FROM other o WHERE EXISTS (SELECT 1 FROM big b WHERE b.id = o.k AND b.name > 'name-5')",
        "SELECT o.id FROM other o WHERE o.id <= 4000 AND EXISTS (SELECT 1 FROM big b WHERE b.id = o.k)",
        "SELECT o.id FROM other o WHERE o.id <= 4000 AND NOT EXISTS (SELECT 1 FROM big b WHERE b.id = o.k)",
    ];
    for sql in queries {
        ok(&mut s, "SET work_mem = '64MB'");
        let memory = answer(&mut s, sql, false);
        ok(&mut s, "SET work_mem = '64kB'");
        assert!(answer(&mut s, sql, false) == memory, "{sql}: rows differ after spilling");
        let explain = text(&ok(&mut s, &format!("EXPLAIN ANALYZE {sql}")));
        let shown = explain.join("\n");
        assert!(shown.contains("Spilled: Disk:"), "{sql}: did not spill:\n{shown}");
        let removed: u64 = explain
            .iter()
            .filter_map(|l| l.trim().strip_prefix("Runtime Filter: "))
            .filter_map(|l| l.split(' ').next()?.parse::<u64>().ok())
            .sum();
        assert!(removed > 0, "{sql}: no probe row filtered:\n{shown}");
    }
}
