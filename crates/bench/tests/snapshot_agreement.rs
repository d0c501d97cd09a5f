//! A small composer workload on every engine, PostgreSQL included (CI
//! installs it): all engines must give the same answer at every marker, and
//! read the same rows (the control, `count(*)` and `sum(ol_i_id)`, which
//! 3,000 tuples leave nonzero where their `ol_amount` sum is 0 at the
//! oldest marker: TPC-C's delivered lines have an amount of 0).

use ndpdb_bench::compose::Workload;
use ndpdb_bench::snapshot::{Config, Postgres, run};
use ndpdb_device::{ClockKind, Profile};
use ndpdb_storage::Freshness;

const WORKLOAD: &str = r#"
name = "small"
[[step]]
load = 3000
[[step]]
snapshot = "repeatable read"
label = "oldest"
[[step]]
update = "all"
[[step]]
update = 1000
choice = "zipfian"
[[step]]
delete = 200
[[step]]
insert = 300
[[step]]
snapshot = "serializable"
label = "newest"
[query]
op = "OP"
column = "ol_amount"
where = "ol_o_id >= 150"
"#;

#[test]
fn engines_agree_on_every_aggregate() {
    // One server for all five runs, as `bench snapshot` shares one among
    // its points: each run drops the table the one before it loaded.
    let mut postgres = Postgres::default();
    for op in ["sum", "count", "min", "max", "avg"] {
        let w = Workload::parse(&WORKLOAD.replace("OP", op), "small.toml").unwrap();
        let cfg = Config {
            profile: Profile::load("u280-nvm").unwrap(),
            clock: ClockKind::Virtual,
            pes: vec![1, 16],
            workers: vec![2],
            postgres_workers: vec![0, 2],
            seed: 3,
            repeat: 2,
            // NDP with every freshness: each agrees with the others, the
            // host and PostgreSQL.
            freshness: vec![Freshness::Ship, Freshness::Flush, Freshness::Cbm],
        };
        let dir = tempfile::tempdir().unwrap();
        let (rows, notes) = run(&w, "test", &cfg, dir.path(), &mut postgres, |_, _, _| {}).unwrap();
        let pg = rows.iter().filter(|r| r.engine == "postgresql").count();
        if pg == 0 {
            let why = notes.postgres.clone().unwrap_or_else(|| "no PostgreSQL rows and no note".into());
            ndpdb_baseline::require::skip_postgres("engines_agree_on_every_aggregate", &why);
        } else {
            assert_eq!(pg, 4, "{:?}", notes.postgres);
        }
        assert_eq!(rows.len(), 2 * (2 * 3 + 1) + pg);
        let fresh = |f| rows.iter().filter(|r| r.freshness == Some(f)).count();
        assert_eq!((fresh("ship"), fresh("flush"), fresh("cbm")), (4, 4, 4));
        let oldest: Vec<_> = rows.iter().filter(|r| r.snapshot_position == "oldest").collect();
        let newest: Vec<_> = rows.iter().filter(|r| r.snapshot_position == "newest").collect();
        if op == "sum" {
            assert_ne!(oldest[0].result, newest[0].result, "the snapshots see different data");
        }
        assert_eq!(oldest[0].rows, 3000);
        assert_eq!(newest[0].rows, 3100);
        for r in &rows {
            assert!(r.result.is_some(), "{op}: {r:?}");
            let control = r.control.as_deref().unwrap_or_else(|| panic!("{op}: no control: {r:?}"));
            assert!(!control.starts_with("0 rows") && !control.ends_with("NULL"), "{op}: {control}");
        }
        if op == "sum" {
            assert_eq!(oldest[0].result.as_deref(), Some("0.00"), "the oldest marker's sum is the trivial one");
        }
    }
    // A timestamp column: min and max print as PostgreSQL prints them, and
    // a timestamp literal filters the same rows on every engine.
    for op in ["min", "max", "count"] {
        let text = WORKLOAD
            .replace("OP", op)
            .replace("column = \"ol_amount\"", "column = \"ol_delivery_d\"")
            .replace("where = \"ol_o_id >= 150\"", "where = \"ol_delivery_d >= '2000-01-01 00:00:00'\"");
        let w = Workload::parse(&text, "small-ts.toml").unwrap();
        let cfg = Config {
            profile: Profile::load("u280-nvm").unwrap(),
            clock: ClockKind::Virtual,
            pes: vec![4],
            workers: vec![2],
            postgres_workers: vec![2],
            seed: 3,
            repeat: 1,
            freshness: vec![Freshness::Cbm],
        };
        let dir = tempfile::tempdir().unwrap();
        let (rows, _) = run(&w, "test", &cfg, dir.path(), &mut postgres, |_, _, _| {}).unwrap();
        if op != "count" {
            let r = rows[0].result.as_deref().unwrap_or_else(|| panic!("{op}: {:?}", rows[0]));
            assert!(r.len() >= 19 && r.as_bytes()[4] == b'-' && r.as_bytes()[10] == b' ', "{op}: {r}");
        }
    }
    postgres.stop().unwrap();
}
