//! Estimates from statistics and defaults, the cost model's choices (NDP
//! on/off/auto, index scans, hash join keys and build side, index nested
//! loop), EXPLAIN, and join ordering of JOB-sized graphs (planning time
//! printed, not asserted).

#[path = "optimizer_fixture/mod.rs"]
mod fixture;

use std::sync::Arc;
use std::time::Instant;

use fixture::*;
use ndpdb_device::profile::Profile;
use ndpdb_sql::catalog::{ColumnStats, MemCatalog, TableDef, TableStats};
use ndpdb_sql::optimizer::{CostParams, NdpMode, OptimizerContext, optimize};
use ndpdb_sql::plan::explain::{ExplainOptions, NodeActuals, explain};
use ndpdb_sql::plan::{Access, BinaryOp, Expr, HashBuild, JoinAlgorithm, JoinKind, Node, Plan, UnaryOp};
use ndpdb_sql::types::Value;

fn v(x: i64) -> Value {
    Value::Int64(x)
}

/// t(a, b, c): 1000 rows; a has 100 distinct values, 10% NULL, MCV 5 at
/// 20%, a histogram 0, 10, ..., 100. u(k): 200 rows, 50 distinct.
fn stats_catalog() -> MemCatalog {
    let a = ColumnStats {
        distinct: 100.0,
        null_frac: 0.1,
        mcv: vec![(v(5), 0.2)],
        histogram: (0..=10).map(|i| v(i * 10)).collect(),
        avg_width: 8.0,
    };
    let plain = |d: f64| ColumnStats { distinct: d, avg_width: 8.0, ..ColumnStats::default() };
    let mut t = table(1, "t", &["a", "b", "c"], &[]);
    t.stats = Some(Arc::new(TableStats { rows: 1000.0, columns: vec![a, plain(10.0), plain(10.0)] }));
    let u = with_stats(table(2, "u", &["k"], &[]), 200.0, &[50.0]);
    catalog(vec![t, u, table(3, "nostats", &["x"], &[])])
}

fn scan_rows(c: &MemCatalog, table: &str, pred: Expr) -> f64 {
    let p = optimize(filter(scan(c, table), pred), &OptimizerContext::new(c)).expect("optimize");
    p.est.rows
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn selectivities_follow_statistics_and_postgres_defaults() {
    let c = stats_catalog();
    let cases = [
        ("a = 5 (an MCV)", "t", eq(col(0), int(5)), 200.0),
        ("a = 7 (not an MCV)", "t", eq(col(0), int(7)), 1000.0 * 0.7 / 99.0),
        ("a < 25 (MCV 5 + 2.5 of 10 buckets)", "t", bin(BinaryOp::Lt, col(0), int(25)), 1000.0 * (0.2 + 0.7 * 0.25)),
        ("25 > a (flipped)", "t", bin(BinaryOp::Gt, int(25), col(0)), 1000.0 * (0.2 + 0.7 * 0.25)),
        ("a >= 95", "t", bin(BinaryOp::GtEq, col(0), int(95)), 1000.0 * 0.7 * 0.05),
        (
            "a IS NULL",
            "t",
            Expr::Unary { op: UnaryOp::IsNull, expr: Box::new(col(0)), ty: ndpdb_sql::types::DataType::Bool },
            100.0,
        ),
        ("b = 3 (1/ndistinct)", "t", eq(col(1), int(3)), 100.0),
        ("x = 1 without stats (0.005)", "nostats", eq(col(0), int(1)), 5.0),
        ("x < 1 without stats (1/3)", "nostats", bin(BinaryOp::Lt, col(0), int(1)), 1000.0 / 3.0),
        ("a = 5 OR b = 3", "t", bin(BinaryOp::Or, eq(col(0), int(5)), eq(col(1), int(3))), 1000.0 * (0.2 + 0.1 - 0.02)),
    ];
    for (name, table, pred, want) in cases {
        let got = scan_rows(&c, table, pred);
        assert!(close(got, want), "{name}: {got} rows, want {want}");
    }
}

#[test]
fn row_counts_come_from_the_store_without_statistics() {
    let c = stats_catalog();
    let rows = |t: &TableDef| (t.name == "nostats").then_some(5000.0);
    let mut ctx = OptimizerContext::new(&c);
    ctx.table_rows = Some(&rows);
    let p = optimize(filter(scan(&c, "nostats"), eq(col(0), int(1))), &ctx).expect("optimize");
    assert!(close(p.est.rows, 25.0), "{}", p.est.rows);
}

#[test]
fn equi_join_selectivity_is_one_over_the_larger_ndv() {
    let c = stats_catalog();
    let plan = filter(join(scan(&c, "t"), scan(&c, "u"), JoinKind::Inner, None), eq(col(0), col(3)));
    let p = optimize(plan, &OptimizerContext::new(&c)).expect("optimize");
    let join = nodes(&p).into_iter().find(|n| matches!(n.node, Node::Join { .. })).expect("join");
    // 1000 × 200 × (1 - 0.1) / max(100, 50).
    assert!(close(join.est.rows, 1800.0), "{}", join.est.rows);
    assert!(p.est.cost.host > 0.0);
}

/// big(c0..c9): a million rows of 10 columns; c0 unique with an index.
fn big_catalog() -> MemCatalog {
    let cols: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
    let names: Vec<&str> = cols.iter().map(String::as_str).collect();
    let t = with_stats(
        table(1, "big", &names, &[true]),
        1e6,
        &[1e6, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0],
    );
    let t = with_index(t, "big_c0", &[0], true);
    let small = with_stats(table(2, "small", &["id", "big_id"], &[]), 10.0, &[10.0, 10.0]);
    let mid = with_stats(table(3, "mid", &["id", "v"], &[]), 1e5, &[1e5, 100.0]);
    catalog(vec![t, small, mid])
}

fn access_of(p: &Plan, table: &str) -> Access {
    nodes(p)
        .into_iter()
        .find_map(|n| match &n.node {
            Node::Scan { table: t, access, .. } if t.name == table => Some(access.clone()),
            _ => None,
        })
        .expect("scan of the table")
}

fn selective_query(c: &MemCatalog) -> Plan {
    project(filter(scan(c, "big"), eq(col(1), int(7))), vec![col(2)])
}

#[test]
fn ndp_mode_decides_scans_and_auto_goes_by_cost() {
    let c = big_catalog();
    let mut ctx = OptimizerContext::new(&c);
    // A device without delays: NDP's cost is the emulator's walk and the
    // rows it returns (under u280-nvm its latency-bound PEs lose).
    ctx.cost = CostParams::from_profile(&Profile::load("ideal").expect("profile"));
    for (mode, want) in [(NdpMode::On, Access::Ndp), (NdpMode::Off, Access::Host), (NdpMode::Auto, Access::Ndp)] {
        ctx.ndp = mode;
        let p = optimize(selective_query(&c), &ctx).expect("optimize");
        assert_eq!(access_of(&p, "big"), want, "{mode:?}");
    }
    // Auto compares the two costs: NDP's is lower here (1% of the rows and
    // one of ten columns cross the link), and a device whose PEs are
    // slow loses.
    ctx.ndp = NdpMode::Off;
    let host = optimize(selective_query(&c), &ctx).expect("optimize").est.cost;
    ctx.ndp = NdpMode::On;
    let ndp = optimize(selective_query(&c), &ctx).expect("optimize").est.cost;
    assert!(ndp.host + ndp.device < host.host + host.device, "ndp {ndp:?} host {host:?}");
    assert!(ndp.host < host.host, "the host's share falls with NDP");
    ctx.ndp = NdpMode::Auto;
    ctx.cost = CostParams { pe_clock_hz: 1e6, ..CostParams::default() };
    let p = optimize(selective_query(&c), &ctx).expect("optimize");
    assert_eq!(access_of(&p, "big"), Access::Host, "slow PEs: host");
    // A device without PEs never gets an NDP scan.
    ctx.cost = CostParams::from_profile(&Profile::load("nvme-ssd").expect("profile"));
    ctx.ndp = NdpMode::On;
    let p = optimize(selective_query(&c), &ctx).expect("optimize");
    assert_eq!(access_of(&p, "big"), Access::Host);
}

#[test]
fn cost_params_come_from_the_profile() {
    let p = CostParams::from_profile(&Profile::load("u280-nvm").expect("profile"));
    assert!(close(p.link_bandwidth_bytes_s, 13_391e6));
    assert!(close(p.link_latency_s, 737e-9));
    assert!(close(p.medium_bandwidth_bytes_s, 2.0 * 6600e6));
    assert!(close(p.pe_count, 16.0) && close(p.pe_clock_hz, 300e6));
    let ideal = CostParams::from_profile(&Profile::load("ideal").expect("profile"));
    let c = big_catalog();
    let mut ctx = OptimizerContext::new(&c);
    ctx.cost = ideal;
    ctx.ndp = NdpMode::Auto;
    let plan = optimize(selective_query(&c), &ctx).expect("optimize");
    assert!(plan.est.cost.host.is_finite() && plan.est.cost.device.is_finite(), "{:?}", plan.est.cost);
}

#[test]
fn a_selective_predicate_on_an_indexed_column_uses_the_index() {
    let c = big_catalog();
    let ctx = OptimizerContext::new(&c);
    let p = optimize(filter(scan(&c, "big"), eq(col(0), int(42))), &ctx).expect("optimize");
    match access_of(&p, "big") {
        Access::Index { index, lower, upper, lower_inclusive, upper_inclusive } => {
            assert_eq!(index.name, "big_c0");
            assert_eq!((lower, upper), (vec![int(42)], vec![int(42)]));
            assert!(lower_inclusive && upper_inclusive);
        }
        other => panic!("expected an index scan, got {other:?}"),
    }
    // A third of the table through the index costs more than scanning it.
    let p = optimize(filter(scan(&c, "big"), bin(BinaryOp::Gt, col(0), int(42))), &ctx).expect("optimize");
    assert_eq!(access_of(&p, "big"), Access::Host);
    // No index on c1.
    let p = optimize(filter(scan(&c, "big"), eq(col(1), int(42))), &ctx).expect("optimize");
    assert_eq!(access_of(&p, "big"), Access::Host);
}

#[test]
fn hash_join_builds_the_smaller_input_and_keeps_the_column_order() {
    let c = big_catalog();
    let ctx = OptimizerContext::new(&c);
    // small (10 rows) ⋈ mid (100,000): written with the small side left.
    let plan = join(scan(&c, "small"), scan(&c, "mid"), JoinKind::Left, Some(eq(col(1), col(2))));
    let p = optimize(plan.clone(), &ctx).expect("optimize");
    assert_eq!(p.schema, plan.schema);
    let Node::Project { input, .. } = &p.node else { panic!("a Project restores the order: {p:#?}") };
    let Node::Join { kind, algorithm, left, right, on, .. } = &input.node else { panic!("join below") };
    assert_eq!(*kind, JoinKind::Right, "the left join mirrored");
    assert!(left.est.rows > right.est.rows, "the larger input probes");
    assert!(on.is_none(), "the equality became the hash key");
    assert!(
        matches!(algorithm, JoinAlgorithm::Hash { left_keys, right_keys, .. } if left_keys.len() == 1 && right_keys.len() == 1)
    );
    // Same result on data.
    let data = random_data(&c, 20, 6, 5, &mut Rng(5));
    assert_eq!(run_sorted(&p, &data), run_sorted(&plan, &data));
}

#[test]
fn a_small_outer_side_probes_the_index_of_the_inner_side() {
    let c = big_catalog();
    let ctx = OptimizerContext::new(&c);
    // 10 rows of small, each looking up big.c0 (unique, indexed).
    let plan = join(scan(&c, "small"), scan(&c, "big"), JoinKind::Inner, Some(eq(col(1), col(2))));
    let p = optimize(plan.clone(), &ctx).expect("optimize");
    let inl = nodes(&p).into_iter().find_map(|n| match &n.node {
        Node::Join { algorithm: JoinAlgorithm::IndexNestedLoop { index, keys }, .. } => {
            Some((index.name.clone(), keys.len()))
        }
        _ => None,
    });
    assert_eq!(inl, Some(("big_c0".to_string(), 1)), "{p:#?}");
    let data = random_data(&c, 15, 15, 6, &mut Rng(11));
    assert_eq!(run_sorted(&p, &data), run_sorted(&plan, &data));
    // Without conditions: a nested loop.
    let cross = optimize(join(scan(&c, "small"), scan(&c, "mid"), JoinKind::Inner, None), &ctx).expect("optimize");
    assert!(nodes(&cross).iter().any(|n| matches!(n.node, Node::Join { algorithm: JoinAlgorithm::NestedLoop, .. })));
}

#[test]
fn explain_marks_host_and_device_and_shows_estimates() {
    let c = big_catalog();
    let mut ctx = OptimizerContext::new(&c);
    ctx.ndp = NdpMode::On;
    let plan = project(
        filter(
            join(scan(&c, "big"), scan(&c, "mid"), JoinKind::Inner, None),
            and(vec![eq(col(1), col(10)), eq(col(2), int(3))]),
        ),
        vec![col(0), col(11)],
    );
    let p = optimize(plan, &ctx).expect("optimize");
    let lines = explain(&p, &ExplainOptions { costs: true, analyze: None, ctx: Some(&ctx) });
    let text = lines.join("\n");
    println!("{text}");
    assert!(lines[0].contains("[host]") && lines[0].contains("rows=") && lines[0].contains("cost: host="), "{text}");
    assert!(text.contains("Hash Inner Join [host]"), "{text}");
    assert!(text.contains("NDP Scan on big [device]") && text.contains("NDP Scan on mid [device]"), "{text}");
    assert!(text.contains("Hash Cond: (mid.id = big.c1)"), "{text}");
    assert!(text.contains("\n  ->  Hash Inner Join") && text.contains("\n        ->  NDP Scan on"), "{text}");
    assert!(text.contains("Filter: (c2 = 3)"), "{text}");
    assert!(text.contains("Columns: c0, c1, c2\n") && text.contains("Link bytes saved (est.): "), "{text}");
    let count = nodes(&p).len();
    let actuals: Vec<NodeActuals> = (0..count)
        .map(|i| NodeActuals { rows: i as u64 * 10, time_s: 0.001, loops: 1, scan: None, spill: None })
        .collect();
    let lines = explain(&p, &ExplainOptions { costs: false, analyze: Some(&actuals), ctx: None });
    assert!(lines[0].contains("(actual rows=0 time=1.000ms loops=1)"), "{lines:?}");
    assert!(!lines[0].contains("cost:"));
}

/// A chain of `n` tables written as one cross product with a WHERE of
/// equalities (how the binder hands over `FROM t0, t1, ... WHERE ...`).
fn chain(n: usize) -> (MemCatalog, Plan) {
    let tables: Vec<TableDef> = (0..n)
        .map(|i| {
            with_stats(
                table(i as u32, &format!("t{i}"), &["id", "next"], &[true]),
                1000.0 * (1 + i % 5) as f64,
                &[1000.0, 100.0],
            )
        })
        .collect();
    let c = catalog(tables);
    let mut plan = scan(&c, "t0");
    for i in 1..n {
        plan = join(plan, scan(&c, &format!("t{i}")), JoinKind::Inner, None);
    }
    // t_i.next = t_{i+1}.id: column 2i+1 = column 2(i+1).
    let preds = (0..n - 1).map(|i| eq(col(2 * i + 1), col(2 * (i + 1)))).collect();
    (c, filter(plan, and(preds)))
}

#[test]
fn job_sized_join_graphs_plan_without_cross_products() {
    for n in [5, 12, 17, 20] {
        let (c, plan) = chain(n);
        let ctx = OptimizerContext::new(&c);
        let start = Instant::now();
        let p = optimize(plan.clone(), &ctx).expect("optimize");
        let ms = start.elapsed().as_secs_f64() * 1e3;
        println!("chain of {n}: planned in {ms:.2} ms");
        assert_eq!(p.schema, plan.schema);
        let joins: Vec<&Plan> = nodes(&p).into_iter().filter(|x| matches!(x.node, Node::Join { .. })).collect();
        assert_eq!(joins.len(), n - 1);
        for j in joins {
            assert!(
                matches!(&j.node, Node::Join { algorithm: JoinAlgorithm::Hash { .. }, .. }),
                "every join hashes on a key"
            );
        }
        if n == 5 {
            let data = random_data(&c, 9, 9, 100, &mut Rng(3));
            assert_eq!(run_sorted(&p, &data), run_sorted(&plan, &data));
        }
    }
}

/// A star of `n` relations (a fact table and `n - 1` dimensions), past
/// DPhyp's budget at 17: GOO plus refinement.
fn star(n: usize) -> (MemCatalog, Plan) {
    let mut tables =
        vec![with_stats(table(0, "fact", &(0..n).map(|_| "k").collect::<Vec<_>>(), &[]), 1e6, &vec![1000.0; n])];
    for i in 1..n {
        tables.push(with_stats(
            table(i as u32, &format!("d{i}"), &["id", "v"], &[true]),
            100.0 * i as f64,
            &[100.0 * i as f64, 10.0],
        ));
    }
    let c = catalog(tables);
    let mut plan = scan(&c, "fact");
    for i in 1..n {
        plan = join(plan, scan(&c, &format!("d{i}")), JoinKind::Inner, None);
    }
    // fact.k_i = d_i.id: fact has n columns, then 2 per dimension.
    let preds = (1..n).map(|i| eq(col(i), col(n + 2 * (i - 1)))).collect();
    (c, filter(plan, and(preds)))
}

#[test]
fn a_star_past_the_dp_budget_still_plans_every_join_on_a_key() {
    for n in [10, 17] {
        let (c, plan) = star(n);
        let ctx = OptimizerContext::new(&c);
        let start = Instant::now();
        let p = optimize(plan.clone(), &ctx).expect("optimize");
        println!("star of {n}: planned in {:.2} ms", start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(p.schema, plan.schema);
        let joins = nodes(&p)
            .into_iter()
            .filter(|x| matches!(x.node, Node::Join { algorithm: JoinAlgorithm::Hash { .. }, .. }))
            .count();
        assert_eq!(joins, n - 1);
    }
}

/// li(p, s) 600,000 rows ⋈ ps(p, s) 80,000 rows on both columns; ps's key
/// (p, s) is unique when `ps_key` says so.
fn composite_join_rows(ps_key: bool) -> f64 {
    let li = with_stats(table(1, "li", &["p", "s"], &[]), 600_000.0, &[20_000.0, 1_000.0]);
    let mut ps = with_stats(table(2, "ps", &["p", "s"], &[]), 80_000.0, &[20_000.0, 1_000.0]);
    if ps_key {
        ps.primary_key = Some(vec![0, 1]);
    }
    let c = catalog(vec![li, ps]);
    let on = and(vec![eq(col(0), col(2)), eq(col(1), col(3))]);
    let plan = join(scan(&c, "li"), scan(&c, "ps"), JoinKind::Inner, Some(on));
    optimize(plan, &OptimizerContext::new(&c)).expect("optimize").est.rows
}

#[test]
fn a_join_on_a_composite_unique_key_meets_one_partner_per_row() {
    // Each li row has one ps partner: 600,000 rows (TPC-H Q9's
    // lineitem ⋈ partsupp was estimated at 1/22 of its rows when the two
    // equalities were multiplied and the second damped as a cycle).
    let keyed = composite_join_rows(true);
    assert!(close(keyed, 600_000.0), "{keyed}");
    // Without the key the two equalities stay independent.
    let unkeyed = composite_join_rows(false);
    assert!(unkeyed < 100_000.0, "{unkeyed}");
}

#[test]
fn index_lookups_that_miss_the_cache_cost_a_page_read_each() {
    let p = CostParams::default();
    let page = p.page_bytes;
    assert!(close(p.fetch_miss(page * p.host_cache_pages / 2.0), 0.0), "a table half the cache's size stays cached");
    assert!(close(p.fetch_miss(page * p.host_cache_pages * 4.0), 0.75), "a quarter of a 4x table is cached");
    // mid (100,000 rows) ⋈ big (1,000,000 rows, ~100 MB, indexed on c0).
    let c = big_catalog();
    let plan = join(scan(&c, "mid"), scan(&c, "big"), JoinKind::Inner, Some(eq(col(0), col(2))));
    let algorithm = |cache_pages: f64| {
        let mut ctx = OptimizerContext::new(&c);
        ctx.cost.host_cache_pages = cache_pages;
        let p = optimize(plan.clone(), &ctx).expect("optimize");
        nodes(&p)
            .into_iter()
            .find_map(|n| match &n.node {
                Node::Join { algorithm, .. } => Some(matches!(algorithm, JoinAlgorithm::IndexNestedLoop { .. })),
                _ => None,
            })
            .expect("a join")
    };
    // big in the cache: 100,000 cached fetches beat scanning 1,000,000 rows.
    assert!(algorithm(1e6), "cached: index nested loop");
    // big 16x the cache: most fetches wait for the device; the hash join wins.
    assert!(!algorithm(800.0), "uncached: hash join");
}

#[test]
fn a_hashed_semi_or_anti_join_keeps_its_key_in_the_estimate() {
    // A hash join keeps its key in the algorithm, not in `on`; the estimate
    // must still see it (it once put every hashed anti join at 0 rows and
    // every semi join at its whole outer side).
    let c = big_catalog();
    let ctx = OptimizerContext::new(&c);
    let join_rows = |plan: Plan| {
        let p = optimize(plan, &ctx).expect("optimize");
        nodes(&p).into_iter().find(|n| matches!(n.node, Node::Join { .. })).expect("a join").est.rows
    };
    // mid.v (100 values) against small.big_id (10): a tenth matches.
    for (kind, want) in [(JoinKind::Semi, 10_000.0), (JoinKind::Anti, 90_000.0)] {
        let rows = join_rows(join(scan(&c, "mid"), scan(&c, "small"), kind, Some(eq(col(1), col(3)))));
        assert!(close(rows, want), "{kind:?}: {rows}");
    }
    // A filtered inner side holds at most its rows' keys: one row of big
    // (c1 has 100 values) leaves 99 % of mid to an anti join.
    let one_big = filter(scan(&c, "big"), eq(col(0), int(7)));
    let rows = join_rows(join(scan(&c, "mid"), one_big, JoinKind::Anti, Some(eq(col(1), col(3)))));
    assert!(close(rows, 99_000.0), "{rows}");
}

#[test]
fn a_semi_join_with_a_small_outer_side_builds_its_hash_table_there() {
    // One row of mid EXISTS-joined to a million rows of big on an
    // unindexed column: hash the one row, stream big past it.
    let c = big_catalog();
    let ctx = OptimizerContext::new(&c);
    for kind in [JoinKind::Semi, JoinKind::Anti] {
        let one_mid = filter(scan(&c, "mid"), eq(col(0), int(7)));
        let plan = join(one_mid, scan(&c, "big"), kind, Some(eq(col(1), col(3))));
        let p = optimize(plan.clone(), &ctx).expect("optimize");
        let algorithm = nodes(&p).into_iter().find_map(|n| match &n.node {
            Node::Join { algorithm, .. } => Some(algorithm.clone()),
            _ => None,
        });
        assert!(
            matches!(algorithm, Some(JoinAlgorithm::Hash { build: HashBuild::Left, .. })),
            "{kind:?}: {algorithm:?}"
        );
        let data = random_data(&c, 30, 30, 6, &mut Rng(21));
        assert_eq!(run_sorted(&p, &data), run_sorted(&plan, &data), "{kind:?}");
    }
}

#[test]
fn an_aggregate_joined_to_a_few_keys_aggregates_only_those_looked_up_by_index() {
    // TPC-H Q17's shape: 10 of p's rows meet avg(q) of l grouped by l.pk
    // (1,000,000 rows, 10,000 keys, an index on pk).
    let p = with_stats(table(1, "p", &["id", "x"], &[true]), 10_000.0, &[10_000.0, 1_000.0]);
    let l = with_index(with_stats(table(2, "l", &["pk", "q"], &[]), 1e6, &[10_000.0, 50.0]), "l_pk", &[0], false);
    let c = catalog(vec![p, l]);
    let g = fixture::aggregate(scan(&c, "l"), vec![col(0)], vec![(ndpdb_sql::plan::AggFunc::Sum, Some(col(1)))]);
    let a = filter(scan(&c, "p"), eq(col(1), int(1)));
    let plan = join(a, g, JoinKind::Left, Some(eq(col(0), col(2))));
    let optimized = optimize(plan, &OptimizerContext::new(&c)).expect("optimize");
    let agg_input = nodes(&optimized)
        .into_iter()
        .find_map(|n| if let Node::Aggregate { input, .. } = &n.node { Some(input) } else { None })
        .expect("an aggregate");
    let below = nodes(agg_input);
    assert!(below.iter().any(|n| matches!(n.node, Node::Distinct { .. })), "the keys of p: {optimized:#?}");
    assert!(
        below.iter().any(|n| matches!(&n.node, Node::Join { algorithm: JoinAlgorithm::IndexNestedLoop { .. }, .. })),
        "l looked up by its index: {optimized:#?}"
    );
    assert!(optimized.est.cost.host < 0.1, "cost {:?}", optimized.est.cost);
}
