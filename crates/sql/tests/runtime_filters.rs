//! Runtime key filters (`exec/runtime_filter.rs`): a hash join's build keys
//! drop the probe scan's rows that have no partner, and only where that
//! changes no result. Each query's answer is checked against one computed
//! here from the data; EXPLAIN ANALYZE must show the filter, with the exact
//! number of rows it removed, on the scans it may apply to and on no other.

use std::collections::HashSet;

mod session_support;

use session_support::{engine, ok, text};

/// `big`: 6,000 rows, `k` = i mod 1,000 (duplicates), NULL every 97th row.
fn big_k(i: i32) -> Option<i32> {
    (i % 97 != 0).then_some(i % 1000)
}

/// `small`: keys 0, 3, .., 117, one NULL and one (5,000) that `big` lacks.
fn small_k() -> Vec<Option<i32>> {
    let mut keys: Vec<Option<i32>> = (0..40).map(|i| Some(3 * i)).collect();
    keys.extend([None, Some(5000)]);
    keys
}

fn load(s: &mut ndpdb_sql::session::Session) {
    ok(s, "create table big (k integer, v integer)");
    ok(s, "create table small (k integer, w integer)");
    let rows: Vec<String> =
        (0..6000).map(|i| format!("({}, {i})", big_k(i).map_or("NULL".to_string(), |k| k.to_string()))).collect();
    ok(s, &format!("insert into big values {}", rows.join(", ")));
    let rows: Vec<String> = small_k()
        .iter()
        .enumerate()
        .map(|(i, k)| format!("({}, {i})", k.map_or("NULL".to_string(), |k| k.to_string())))
        .collect();
    ok(s, &format!("insert into small values {}", rows.join(", ")));
    ok(s, "analyze");
}

/// The `Runtime Filter` lines of the plan, as the numbers of rows removed,
/// each plus the VIDs its scan's zone maps skipped (`Zone Map` line; `big`
/// has no deleted rows, so they are rows the filter would have removed).
fn removed(plan: &[String]) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for l in plan.iter().map(|l| l.trim()) {
        if let Some(l) = l.strip_prefix("Runtime Filter: ") {
            out.push(l.split(' ').next().unwrap().parse().unwrap());
        } else if let Some(l) = l.strip_prefix("Zone Map: ") {
            let vids = l.split('(').nth(1).unwrap().split(' ').next().unwrap();
            *out.last_mut().expect("a Zone Map line follows its Runtime Filter line") += vids.parse::<u64>().unwrap();
        }
    }
    out
}

#[test]
fn joins_that_drop_unmatched_probe_rows_filter_the_probe_scan_and_answer_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    load(&mut s);
    let small: HashSet<i32> = small_k().into_iter().flatten().collect();
    let big: Vec<Option<i32>> = (0..6000).map(big_k).collect();
    let unmatched_big = big.iter().filter(|k| !k.is_some_and(|k| small.contains(&k))).count() as u64;
    let matched: Vec<i32> = (0..6000).filter(|&i| big_k(i).is_some_and(|k| small.contains(&k))).collect();

    // Inner join, built on small: big's rows without a partner never leave its scan.
    let q = "select count(*), sum(big.v) from big join small on big.k = small.k";
    let sum: i64 = matched.iter().map(|&i| i64::from(i)).sum();
    assert_eq!(text(&ok(&mut s, q)), vec![format!("{}|{sum}", matched.len())]);
    let plan = text(&ok(&mut s, &format!("explain analyze {q}")));
    assert_eq!(removed(&plan), vec![unmatched_big], "{plan:#?}");

    // Semi join (EXISTS), the same rows kept.
    let q = "select count(*) from big where exists (select 1 from small where small.k = big.k)";
    assert_eq!(text(&ok(&mut s, q)), vec![matched.len().to_string()]);
    let plan = text(&ok(&mut s, &format!("explain analyze {q}")));
    assert_eq!(removed(&plan), vec![unmatched_big], "{plan:#?}");

    // Anti join built on its left input (small): big streams past it, and
    // big's rows without a partner could flag nothing. small's NULL key and
    // 5,000 have no partner in big: NOT EXISTS holds for them.
    let q = "select count(*) from small where not exists (select 1 from big where big.k = small.k)";
    assert_eq!(text(&ok(&mut s, q)), vec!["2"]);
    let plan = text(&ok(&mut s, &format!("explain analyze {q}")));
    assert_eq!(removed(&plan), vec![unmatched_big], "{plan:#?}");
}

#[test]
fn joins_that_keep_unmatched_probe_rows_are_not_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    load(&mut s);
    // Every big row is kept by a left join and by an anti join probing big.
    for (q, want) in [
        ("select count(*) from big left join small on big.k = small.k", "6000"),
        (
            "select count(*) from big where not exists (select 1 from small where small.k = big.k)",
            &(0..6000).filter(|&i| !big_k(i).is_some_and(|k| k % 3 == 0 && k < 120)).count().to_string(),
        ),
    ] {
        assert_eq!(text(&ok(&mut s, q)), vec![want.to_string()], "{q}");
        let plan = text(&ok(&mut s, &format!("explain analyze {q}")));
        assert_eq!(removed(&plan), Vec::<u64>::new(), "{q}: {plan:#?}");
    }
}
