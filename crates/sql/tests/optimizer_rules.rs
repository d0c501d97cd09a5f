//! The rewrite rules: each rule's effect on a plan's shape, and that the
//! whole optimizer keeps every plan's result (original and optimized plans
//! run on the reference interpreter over random data with NULLs, fixed
//! seeds, under each `SET ndp` mode).

#[path = "optimizer_fixture/mod.rs"]
mod fixture;

use fixture::*;
use ndpdb_sql::catalog::MemCatalog;
use ndpdb_sql::optimizer::{NdpMode, OptimizerContext, aggreduce, optimize, rules};
use ndpdb_sql::plan::{AggFunc, BinaryOp, Expr, Function, JoinKind, Node, Plan, SubqueryKind, UnaryOp};

/// a(id, x, y), b(id, a_id, z), c(id, b_id, w); ids NOT NULL.
fn cat() -> MemCatalog {
    catalog(vec![
        with_stats(table(1, "a", &["id", "x", "y"], &[true]), 40.0, &[40.0, 8.0, 8.0]),
        with_stats(table(2, "b", &["id", "a_id", "z"], &[true]), 40.0, &[40.0, 8.0, 8.0]),
        table(3, "c", &["id", "b_id", "w"], &[true]),
    ])
}

fn not(e: Expr) -> Expr {
    Expr::Unary { op: UnaryOp::Not, expr: Box::new(e), ty: ndpdb_sql::types::DataType::Bool }
}

/// The queries whose results the optimizer must keep, by name.
fn queries(c: &MemCatalog) -> Vec<(&'static str, Plan)> {
    let (a, b, cc) = (|| scan(c, "a"), || scan(c, "b"), || scan(c, "c"));
    let b_of_a = |extra: Option<Expr>| {
        let mut p = vec![eq(col(1), outer(0))];
        p.extend(extra);
        filter(b(), and(p))
    };
    let sum_z = |p: Plan| aggregate(p, vec![], vec![(AggFunc::Sum, Some(col(2)))]);
    let count = |p: Plan| aggregate(p, vec![], vec![(AggFunc::CountStar, None)]);
    vec![
        (
            "cross join + WHERE",
            project(
                filter(
                    join(a(), b(), JoinKind::Inner, None),
                    and(vec![eq(col(0), col(4)), bin(BinaryOp::Gt, col(2), int(3)), bin(BinaryOp::Lt, col(5), int(5))]),
                ),
                vec![col(1), col(5)],
            ),
        ),
        (
            "exists",
            filter(
                a(),
                subquery(SubqueryKind::Exists { negated: false }, b_of_a(Some(bin(BinaryOp::Gt, col(2), int(2))))),
            ),
        ),
        ("not exists", filter(a(), subquery(SubqueryKind::Exists { negated: true }, b_of_a(None)))),
        ("not (exists)", filter(a(), not(subquery(SubqueryKind::Exists { negated: false }, b_of_a(None))))),
        (
            "in",
            filter(
                a(),
                subquery(
                    SubqueryKind::In { expr: Box::new(col(1)), negated: false },
                    project(filter(b(), bin(BinaryOp::Gt, col(2), int(4))), vec![col(1)]),
                ),
            ),
        ),
        (
            "not in, nullable",
            filter(
                a(),
                subquery(SubqueryKind::In { expr: Box::new(col(1)), negated: true }, project(b(), vec![col(2)])),
            ),
        ),
        (
            "not in, not null",
            filter(
                a(),
                subquery(SubqueryKind::In { expr: Box::new(col(0)), negated: true }, project(b(), vec![col(0)])),
            ),
        ),
        (
            "correlated sum (Q17)",
            filter(a(), bin(BinaryOp::Lt, col(2), subquery(SubqueryKind::Scalar, sum_z(b_of_a(None))))),
        ),
        ("correlated count", filter(a(), eq(col(2), subquery(SubqueryKind::Scalar, count(b_of_a(None)))))),
        (
            "correlated count + 1 in a projection above",
            filter(
                a(),
                eq(
                    col(1),
                    subquery(
                        SubqueryKind::Scalar,
                        project(count(b_of_a(None)), vec![bin(BinaryOp::Add, col(0), int(1))]),
                    ),
                ),
            ),
        ),
        (
            "uncorrelated scalar",
            filter(
                a(),
                bin(
                    BinaryOp::Gt,
                    col(1),
                    subquery(SubqueryKind::Scalar, aggregate(b(), vec![], vec![(AggFunc::Min, Some(col(2)))])),
                ),
            ),
        ),
        (
            "correlated non-aggregate scalar",
            filter(
                a(),
                eq(col(1), subquery(SubqueryKind::Scalar, project(filter(b(), eq(col(0), outer(0))), vec![col(2)]))),
            ),
        ),
        (
            "all (Mark)",
            filter(
                a(),
                subquery(
                    SubqueryKind::Quantified { expr: Box::new(col(1)), op: BinaryOp::Gt, all: true },
                    project(b_of_a(None), vec![col(2)]),
                ),
            ),
        ),
        (
            "any",
            filter(
                a(),
                subquery(
                    SubqueryKind::Quantified { expr: Box::new(col(1)), op: BinaryOp::LtEq, all: false },
                    project(b_of_a(None), vec![col(2)]),
                ),
            ),
        ),
        (
            "left join, WHERE on the null-supplying side",
            filter(
                join(a(), b(), JoinKind::Left, Some(and(vec![eq(col(0), col(4)), bin(BinaryOp::Gt, col(5), int(3))]))),
                Expr::Unary { op: UnaryOp::IsNull, expr: Box::new(col(5)), ty: ndpdb_sql::types::DataType::Bool },
            ),
        ),
        (
            "right join with ON on the preserved side",
            join(a(), b(), JoinKind::Right, Some(and(vec![eq(col(0), col(4)), bin(BinaryOp::Gt, col(1), int(3))]))),
        ),
        (
            "full join",
            filter(join(a(), b(), JoinKind::Full, Some(eq(col(1), col(4)))), bin(BinaryOp::Gt, col(1), int(2))),
        ),
        (
            "three tables written as cross products",
            filter(
                join(join(a(), cc(), JoinKind::Inner, None), b(), JoinKind::Inner, None),
                and(vec![eq(col(0), col(7)), eq(col(6), col(3)), bin(BinaryOp::Lt, col(8), int(6))]),
            ),
        ),
        (
            "HAVING on a group key",
            filter(
                aggregate(a(), vec![col(1)], vec![(AggFunc::Count, Some(col(2)))]),
                bin(BinaryOp::Gt, col(0), int(3)),
            ),
        ),
        ("constant TRUE conjunct", filter(a(), and(vec![eq(int(1), int(1)), bin(BinaryOp::Gt, col(1), int(2))]))),
        ("constant FALSE filter", filter(a(), and(vec![eq(int(1), int(0)), bin(BinaryOp::Gt, col(1), int(2))]))),
        (
            "nested: IN over a correlated scalar (Q20)",
            filter(
                a(),
                subquery(
                    SubqueryKind::In { expr: Box::new(col(0)), negated: false },
                    project(
                        filter(
                            b(),
                            bin(
                                BinaryOp::Gt,
                                col(2),
                                subquery(
                                    SubqueryKind::Scalar,
                                    aggregate(
                                        filter(cc(), eq(col(1), outer(0))),
                                        vec![],
                                        vec![(AggFunc::Sum, Some(col(2)))],
                                    ),
                                ),
                            ),
                        ),
                        vec![col(1)],
                    ),
                ),
            ),
        ),
        (
            "min over a correlated join (Q2)",
            filter(
                a(),
                eq(
                    col(2),
                    subquery(
                        SubqueryKind::Scalar,
                        aggregate(
                            filter(
                                join(b(), cc(), JoinKind::Inner, None),
                                and(vec![eq(col(1), outer(0)), eq(col(0), col(4))]),
                            ),
                            vec![],
                            vec![(AggFunc::Min, Some(col(5)))],
                        ),
                    ),
                ),
            ),
        ),
        (
            "exists and not exists with <> (Q21)",
            filter(
                a(),
                and(vec![
                    subquery(
                        SubqueryKind::Exists { negated: false },
                        filter(b(), and(vec![eq(col(1), outer(0)), bin(BinaryOp::NotEq, col(2), outer(1))])),
                    ),
                    subquery(
                        SubqueryKind::Exists { negated: true },
                        filter(b(), and(vec![eq(col(1), outer(0)), bin(BinaryOp::NotEq, col(2), outer(2))])),
                    ),
                ]),
            ),
        ),
        (
            "uncorrelated avg and not exists (Q22)",
            filter(
                a(),
                and(vec![
                    bin(
                        BinaryOp::Gt,
                        col(1),
                        subquery(
                            SubqueryKind::Scalar,
                            aggregate(
                                filter(b(), bin(BinaryOp::Gt, col(2), int(0))),
                                vec![],
                                vec![(AggFunc::Avg, Some(col(2)))],
                            ),
                        ),
                    ),
                    subquery(SubqueryKind::Exists { negated: true }, b_of_a(None)),
                ]),
            ),
        ),
        (
            "exists and a scalar in one WHERE",
            filter(
                a(),
                and(vec![
                    subquery(SubqueryKind::Exists { negated: false }, b_of_a(None)),
                    bin(BinaryOp::GtEq, col(1), subquery(SubqueryKind::Scalar, count(b_of_a(None)))),
                ]),
            ),
        ),
    ]
}

#[test]
fn optimized_plans_return_the_original_results() {
    let c = cat();
    for seed in [1_u64, 7, 42, 1234] {
        let data = random_data(&c, 12 + seed as usize % 9, 8, 5, &mut Rng(seed * 0x9e37_79b9 + 1));
        for (name, plan) in queries(&c) {
            let expected = run_sorted(&plan, &data);
            for ndp in [NdpMode::Off, NdpMode::On, NdpMode::Auto] {
                let mut ctx = OptimizerContext::new(&c);
                ctx.ndp = ndp;
                let optimized = optimize(plan.clone(), &ctx).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(optimized.schema, plan.schema, "{name}: schema changed");
                let got = run_sorted(&optimized, &data);
                assert_eq!(got, expected, "{name} (seed {seed}, {ndp:?}) returned other rows; plan:\n{optimized:#?}");
            }
        }
    }
}

fn rewrite(c: &MemCatalog, plan: Plan) -> Plan {
    rules::rewrite(plan, &OptimizerContext::new(c)).expect("rules")
}

fn has_subquery(plan: &Plan) -> bool {
    format!("{plan:?}").contains("Subquery")
}

fn join_kinds(plan: &Plan) -> Vec<JoinKind> {
    nodes(plan).iter().filter_map(|n| if let Node::Join { kind, .. } = &n.node { Some(*kind) } else { None }).collect()
}

fn query(name: &str) -> Plan {
    queries(&cat()).into_iter().find(|(n, _)| *n == name).map(|(_, p)| p).expect("query exists")
}

#[test]
fn folding_drops_true_and_empties_false() {
    let c = cat();
    let p = rewrite(&c, query("constant TRUE conjunct"));
    assert!(matches!(&p.node, Node::Scan { filter: Some(Expr::Binary { op: BinaryOp::Gt, .. }), .. }), "{p:#?}");
    let p = rewrite(&c, query("constant FALSE filter"));
    assert!(matches!(&p.node, Node::Values { rows } if rows.is_empty()), "{p:#?}");
}

#[test]
fn pushdown_turns_cross_joins_into_inner_joins_and_fills_scan_filters() {
    let c = cat();
    let p = rewrite(&c, query("cross join + WHERE"));
    let all = nodes(&p);
    assert!(!all.iter().any(|n| matches!(n.node, Node::Filter { .. })), "no Filter left: {p:#?}");
    let join = all.iter().find(|n| matches!(n.node, Node::Join { .. })).expect("a join");
    let Node::Join { kind, on, left, right, .. } = &join.node else { unreachable!() };
    assert_eq!(*kind, JoinKind::Inner);
    assert!(matches!(on, Some(Expr::Binary { op: BinaryOp::Eq, .. })), "the equality is the join condition: {on:?}");
    assert!(matches!(&left.node, Node::Scan { filter: Some(_), .. }), "a.y > 3 in a's scan");
    assert!(matches!(&right.node, Node::Scan { filter: Some(_), .. }), "b.z < 5 in b's scan");
}

#[test]
fn where_on_the_null_supplying_side_stays_above_the_left_join() {
    let c = cat();
    let p = rewrite(&c, query("left join, WHERE on the null-supplying side"));
    let Node::Filter { input, .. } = &p.node else { panic!("the IS NULL filter stays on top: {p:#?}") };
    let Node::Join { right, on, .. } = &input.node else { panic!("a join under it") };
    // The ON conjunct on the right side moved into the right input.
    assert!(matches!(&right.node, Node::Scan { filter: Some(_), .. }), "{right:#?}");
    assert!(matches!(on, Some(Expr::Binary { op: BinaryOp::Eq, .. })));
}

#[test]
fn decorrelation_builds_the_expected_joins() {
    let c = cat();
    let cases: &[(&str, &[JoinKind])] = &[
        ("exists", &[JoinKind::Semi]),
        ("not exists", &[JoinKind::Anti]),
        ("not (exists)", &[JoinKind::Anti]),
        ("in", &[JoinKind::Semi]),
        ("not in, nullable", &[JoinKind::Mark]),
        ("not in, not null", &[JoinKind::Anti]),
        ("correlated sum (Q17)", &[JoinKind::Left]),
        ("correlated count", &[JoinKind::Left]),
        ("uncorrelated scalar", &[JoinKind::Single]),
        ("correlated non-aggregate scalar", &[JoinKind::Single]),
        ("all (Mark)", &[JoinKind::Mark]),
        ("any", &[JoinKind::Semi]),
        ("nested: IN over a correlated scalar (Q20)", &[JoinKind::Semi, JoinKind::Left]),
        ("exists and a scalar in one WHERE", &[JoinKind::Semi, JoinKind::Left]),
        ("min over a correlated join (Q2)", &[JoinKind::Left, JoinKind::Inner]),
        ("exists and not exists with <> (Q21)", &[JoinKind::Semi, JoinKind::Anti]),
        ("uncorrelated avg and not exists (Q22)", &[JoinKind::Single, JoinKind::Anti]),
    ];
    for (name, kinds) in cases {
        let p = rewrite(&c, query(name));
        assert!(!has_subquery(&p), "{name}: a subquery is left: {p:#?}");
        let mut got = join_kinds(&p);
        let mut want = kinds.to_vec();
        got.sort_by_key(|k| format!("{k:?}"));
        want.sort_by_key(|k| format!("{k:?}"));
        assert_eq!(got, want, "{name}: {p:#?}");
    }
}

#[test]
fn correlated_aggregate_is_grouped_on_the_key_and_count_defaults_to_zero() {
    let c = cat();
    let p = rewrite(&c, query("correlated count"));
    let text = format!("{p:?}");
    let agg = nodes(&p).into_iter().find(|n| matches!(n.node, Node::Aggregate { .. })).expect("aggregate");
    let Node::Aggregate { group_by, .. } = &agg.node else { unreachable!() };
    assert_eq!(group_by.len(), 1, "grouped by b.a_id");
    assert!(text.contains(&format!("{:?}", Function::Coalesce)), "count's empty group is 0: {p:#?}");
    // The sum has no such default (NULL over an empty group).
    let p = rewrite(&c, query("correlated sum (Q17)"));
    assert!(!format!("{p:?}").contains("Coalesce"));
}

#[test]
fn projection_pushdown_reads_only_used_columns() {
    let c = cat();
    let p = rewrite(&c, query("cross join + WHERE"));
    for n in nodes(&p) {
        if let Node::Scan { table, columns, .. } = &n.node {
            // a: id (join), x (output), y (filter); b: a_id (join), z (output, filter); never b.id.
            let want: &[usize] = if table.name == "a" { &[0, 1, 2] } else { &[1, 2] };
            assert_eq!(columns, want, "{}", table.name);
        }
    }
    let p = rewrite(&c, project(scan(&c, "b"), vec![col(2)]));
    assert!(matches!(&p.node, Node::Scan { columns, .. } if columns == &[2]), "the project is gone: {p:#?}");
}

#[test]
fn having_on_a_group_key_moves_below_the_aggregate() {
    let c = cat();
    let p = rewrite(&c, query("HAVING on a group key"));
    let Node::Aggregate { input, .. } = &p.node else { panic!("no filter above the aggregate: {p:#?}") };
    assert!(matches!(&input.node, Node::Scan { filter: Some(_), .. }), "{input:#?}");
}

#[test]
fn uncorrelatable_subqueries_stay_for_the_runner() {
    let c = cat();
    // Correlated inside a join of the subquery: not peeled, kept.
    let inner =
        join(scan(&c, "b"), scan(&c, "c"), JoinKind::Inner, Some(and(vec![eq(col(0), col(4)), eq(col(1), outer(0))])));
    let plan = filter(scan(&c, "a"), subquery(SubqueryKind::Exists { negated: false }, inner));
    let p = rewrite(&c, plan.clone());
    assert!(has_subquery(&p));
    let data = random_data(&c, 10, 6, 4, &mut Rng(99));
    let optimized = optimize(plan.clone(), &OptimizerContext::new(&c)).expect("optimize");
    assert_eq!(run_sorted(&optimized, &data), run_sorted(&plan, &data));
}

/// Join(A, sum and count of b grouped by b.a_id) on a key of A, for each
/// join kind that may drop groups; the aggregate on the side `kind` does
/// not preserve. A's key holds NULLs and duplicates; `having` keeps only
/// groups of more than one row.
fn grouped_join(c: &MemCatalog, kind: JoinKind, a_side: Plan, key: usize, having: bool) -> Plan {
    let mut g = aggregate(scan(c, "b"), vec![col(1)], vec![(AggFunc::Sum, Some(col(2))), (AggFunc::CountStar, None)]);
    if having {
        g = filter(g, bin(BinaryOp::Gt, col(2), int(1)));
    }
    let aw = a_side.schema.len();
    match kind {
        JoinKind::Right => join(g, a_side, kind, Some(eq(col(0), col(3 + key)))),
        _ => join(a_side, g, kind, Some(eq(col(key), col(aw)))),
    }
}

#[test]
fn an_aggregate_reduced_to_its_partners_keys_returns_the_same_rows() {
    let c = cat();
    // A: a filtered scan (key a.x), and b semi-joined to a filtered a (key
    // b.a_id, whose values the semi join ties to a.id).
    let filtered_a = || filter(scan(&c, "a"), bin(BinaryOp::Lt, col(2), int(4)));
    let shapes = [
        ("a filtered scan", filtered_a(), 1),
        ("through a semi join", join(scan(&c, "b"), filtered_a(), JoinKind::Semi, Some(eq(col(1), col(3)))), 1),
    ];
    let kinds = [JoinKind::Inner, JoinKind::Left, JoinKind::Single, JoinKind::Semi, JoinKind::Anti, JoinKind::Right];
    for (shape, a_side, key) in &shapes {
        for (kind, having) in kinds.into_iter().flat_map(|k| [(k, false), (k, true)]) {
            let plan = grouped_join(&c, kind, a_side.clone(), *key, having);
            let reduced = aggreduce::reduced(&plan).unwrap_or_else(|| panic!("{shape}, {kind:?}: not reduced"));
            assert_eq!(reduced.schema, plan.schema);
            assert!(nodes(&reduced).iter().any(|n| matches!(n.node, Node::Distinct { .. })), "{shape}, {kind:?}");
            for seed in [1_u64, 7, 42, 1234, 99] {
                let data = random_data(&c, 10 + seed as usize % 13, 6, 4, &mut Rng(seed * 0x9e37_79b9 + 3));
                assert_eq!(
                    run_sorted(&reduced, &data),
                    run_sorted(&plan, &data),
                    "{shape}, {kind:?}, having {having}, seed {seed}: other rows"
                );
            }
        }
    }
}

#[test]
fn an_aggregate_is_not_reduced_where_its_groups_are_kept_or_nothing_filters_the_keys() {
    let c = cat();
    let filtered_a = || filter(scan(&c, "a"), bin(BinaryOp::Lt, col(2), int(4)));
    // The aggregate on the preserved side, a Mark join, an unfiltered partner.
    let g = || aggregate(scan(&c, "b"), vec![col(1)], vec![(AggFunc::CountStar, None)]);
    let preserved = join(g(), filtered_a(), JoinKind::Left, Some(eq(col(0), col(3))));
    let mark = join(filtered_a(), g(), JoinKind::Mark, Some(eq(col(1), col(3))));
    let unfiltered = join(scan(&c, "a"), g(), JoinKind::Inner, Some(eq(col(1), col(3))));
    for (name, plan) in [("preserved", preserved), ("mark", mark), ("unfiltered", unfiltered)] {
        assert!(aggreduce::reduced(&plan).is_none(), "{name}: reduced");
    }
}
