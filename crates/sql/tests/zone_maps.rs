//! Zone maps (`store/zone_skip.rs`, `crates/storage/src/zones.rs`): a
//! probe scan with a runtime key filter skips the blocks of VIDs whose
//! key range holds no build key, and still returns every row it must:
//! after updates, inserts and deletes, and to a snapshot older than the
//! zones. EXPLAIN ANALYZE's `Zone Map` line counts the blocks exactly.

mod session_support;

use ndpdb_storage::ZONE_VIDS;
use session_support::{engine, ok, text};

/// Rows of `t`, inserted in key order: VID i holds k = i.
const ROWS: i64 = 20_000;
/// The last VID of block 299, whose key is the only build key in its
/// block's range.
const EDGE: i64 = 300 * ZONE_VIDS as i64 - 1;

/// The build side's keys; 50,000 is not in `t`.
fn keys() -> Vec<i64> {
    vec![5, 7000, 7001, 15_000, 19_999, 50_000, EDGE]
}

const QUERY: &str = "select count(*), sum(t.v) from t join keys on t.k = keys.k";

fn load(s: &mut ndpdb_sql::session::Session) {
    ok(s, "create table t (k bigint, v bigint)");
    ok(s, "create table keys (k bigint)");
    let rows: Vec<String> = (0..ROWS).map(|i| format!("({i}, {})", i % 7)).collect();
    ok(s, &format!("insert into t values {}", rows.join(", ")));
    let keys: Vec<String> = keys().iter().map(|k| format!("({k})")).collect();
    ok(s, &format!("insert into keys values {}", keys.join(", ")));
    ok(s, "analyze");
}

/// `count|sum` of the join over rows `(k, v)`.
fn expected(rows: &[(i64, i64)]) -> String {
    let keys = keys();
    let hits: Vec<i64> = rows.iter().filter(|(k, _)| keys.contains(k)).map(|&(_, v)| v).collect();
    format!("{}|{}", hits.len(), hits.iter().sum::<i64>())
}

/// EXPLAIN ANALYZE of `query`: its `Zone Map` line's skipped blocks,
/// blocks and skipped VIDs (`S of B blocks of 32 VIDs skipped (V VIDs), ...`).
fn zone_line(s: &mut ndpdb_sql::session::Session, query: &str) -> (u64, u64, u64) {
    let plan = text(&ok(s, &format!("explain analyze {query}")));
    let line = plan.iter().find_map(|l| l.trim().strip_prefix("Zone Map: ")).unwrap_or_else(|| panic!("{plan:#?}"));
    let words: Vec<&str> = line.split(' ').collect();
    let vids = line.split('(').nth(1).unwrap().split(' ').next().unwrap();
    (words[0].parse().unwrap(), words[2].parse().unwrap(), vids.parse().unwrap())
}

/// What a statement does to the model of `t`'s rows.
type Apply = fn(&mut Vec<(i64, i64)>);

fn initial() -> Vec<(i64, i64)> {
    (0..ROWS).map(|i| (i, i % 7)).collect()
}

#[test]
fn a_probe_scan_of_a_clustered_key_skips_the_blocks_without_a_build_key() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    load(&mut s);
    let want = expected(&initial());
    // The first scan builds the zones, and skips nothing.
    assert_eq!(text(&ok(&mut s, QUERY)), vec![want.clone()]);
    let blocks = (ROWS as u64).div_ceil(ZONE_VIDS);
    // Keys 5, 7000 and 7001, 15,000, 19,999 and EDGE lie in five blocks.
    let holding: std::collections::HashSet<u64> =
        keys().iter().filter(|&&k| k < ROWS).map(|&k| k as u64 / ZONE_VIDS).collect();
    let skipped = blocks - holding.len() as u64;
    assert_eq!(zone_line(&mut s, QUERY), (skipped, blocks, ROWS as u64 - holding.len() as u64 * ZONE_VIDS));
    assert_eq!(text(&ok(&mut s, QUERY)), vec![want]);

    // One key (5, whose v is 5): every morsel but the first has no block to walk.
    let one = "select count(*), sum(t.v) from t join keys on t.k = keys.k where keys.k < 100";
    assert_eq!(text(&ok(&mut s, one)), vec!["1|5"]);
    let (skipped, all, _) = zone_line(&mut s, one);
    assert_eq!((skipped, all), (blocks - 1, blocks));
    assert_eq!(text(&ok(&mut s, one)), vec!["1|5"]);
}

#[test]
fn updates_inserts_and_deletes_after_the_zones_are_built_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut s = e.session();
    load(&mut s);
    let mut rows = initial();
    ok(&mut s, QUERY);
    assert!(zone_line(&mut s, QUERY).0 > 0, "zones built and used");
    let steps: [(&str, Apply); 4] = [
        // A row of a skipped block takes a build key.
        ("update t set k = 7000 where k = 100", |r| r[100].0 = 7000),
        // A new VID past the zones.
        ("insert into t values (15000, 3)", |r| r.push((15_000, 3))),
        ("delete from t where k = 5", |r| r.retain(|&(k, _)| k != 5)),
        // Back out of the key set, in a transaction that rolls back first.
        ("begin; update t set k = 1 where k = 7001; rollback; update t set v = 100 where k = 19999", |r| {
            r.iter_mut().filter(|(k, _)| *k == 19_999).for_each(|x| x.1 = 100)
        }),
    ];
    for (sql, apply) in steps {
        ok(&mut s, sql);
        apply(&mut rows);
        assert_eq!(text(&ok(&mut s, QUERY)), vec![expected(&rows)], "after {sql}");
        // Rebuilt at the new epoch, and used again.
        assert_eq!(text(&ok(&mut s, QUERY)), vec![expected(&rows)], "after {sql}, again");
    }
}

#[test]
fn a_snapshot_older_than_the_zones_still_finds_the_versions_it_sees() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let mut old = e.session();
    load(&mut old);
    let before = initial();
    ok(&mut old, QUERY);
    ok(&mut old, "begin isolation level repeatable read");
    assert_eq!(text(&ok(&mut old, QUERY)), vec![expected(&before)]);

    // Another session moves 7000 and EDGE out of the key set (EDGE to a
    // value that leaves its block's range clear of every key) and 200 into
    // it, then scans twice: the zones it builds are of the new heads, and
    // must not hide the versions they replaced from the older snapshot.
    let mut new = e.session();
    ok(&mut new, "update t set k = 123456 where k = 7000");
    ok(&mut new, &format!("update t set k = {} where k = {EDGE}", EDGE - 5));
    ok(&mut new, "update t set k = 15000 where k = 200");
    let mut after = before.clone();
    after[7000].0 = 123_456;
    after[EDGE as usize].0 = EDGE - 5;
    after[200].0 = 15_000;
    assert_eq!(text(&ok(&mut new, QUERY)), vec![expected(&after)]);
    assert!(zone_line(&mut new, QUERY).0 > 0, "zones used by the new session");

    // The old snapshot sees 7000 and 200 as they were.
    assert_eq!(text(&ok(&mut old, QUERY)), vec![expected(&before)]);
    ok(&mut old, "commit");
    assert_eq!(text(&ok(&mut old, QUERY)), vec![expected(&after)]);
}
