//! The join orderer against an exhaustive reference on random graphs (fixed
//! seeds), the closed-form pair counts of DPhyp, the greedy fallback, the
//! estimators and the errors.

mod common;

use common::{SHAPES, Shape, check_tree, close, exhaustive};
use ndpdb_sql::optimizer::join_order::{
    Algorithm, BackoffScope, CardinalityEstimator, ExponentialBackoff, GreedyReason, HashJoinCostModel, Independence,
    JoinOrderError, JoinOrderOptions, JoinPlan, QueryGraph, order_joins,
};

const SEEDS_PER_CASE: u64 = 6;

fn estimators() -> [(&'static str, Box<dyn CardinalityEstimator>); 3] {
    [
        ("independence", Box::new(Independence)),
        ("backoff-cycles", Box::new(ExponentialBackoff { scope: BackoffScope::CycleEdges })),
        ("backoff-all", Box::new(ExponentialBackoff { scope: BackoffScope::AllEdges })),
    ]
}

fn exact() -> JoinOrderOptions {
    JoinOrderOptions { dp_pair_budget: u64::MAX, greedy_only: false }
}

fn greedy() -> JoinOrderOptions {
    JoinOrderOptions { greedy_only: true, ..JoinOrderOptions::default() }
}

fn plan(graph: &QueryGraph, estimator: &dyn CardinalityEstimator, options: JoinOrderOptions) -> JoinPlan {
    order_joins(graph, estimator, &HashJoinCostModel::default(), &options).expect("valid options")
}

/// DPhyp's tree is the exhaustive optimum, it emits exactly the csg-cmp
/// pairs the reference counts, and GOO's tree is valid and no cheaper.
#[test]
fn dp_is_optimal_and_greedy_is_valid_on_every_shape() {
    let model = HashJoinCostModel::default();
    for shape in SHAPES {
        for n in 2..=9 {
            for seed in 0..SEEDS_PER_CASE {
                let graph = common::graph(seed * 1000 + n as u64, shape, n);
                for (name, est) in estimators() {
                    let case = format!("{shape:?} n={n} seed={seed} {name}");
                    let (best, pairs) = exhaustive(&graph, est.as_ref(), &model, graph.all());
                    let best = best.expect("simple connected graphs have a plan");
                    let dp = plan(&graph, est.as_ref(), exact());
                    assert_eq!(dp.components[0].algorithm, Algorithm::DpHyp, "{case}");
                    assert_eq!(dp.dp_pairs(), pairs, "{case}: csg-cmp pairs");
                    assert!(close(dp.objective, best), "{case}: dp {} != exhaustive {best}", dp.objective);
                    assert_eq!(check_tree(&dp.tree, &graph, est.as_ref(), &model), 0, "{case}");
                    let goo = plan(&graph, est.as_ref(), greedy());
                    assert_eq!(check_tree(&goo.tree, &graph, est.as_ref(), &model), 0, "{case}");
                    assert!(goo.objective >= best * (1.0 - 1e-9), "{case}: greedy beat the optimum");
                    // Over a quarter of the budget it needs: GOO, then DPhyp on subtrees.
                    let budget = JoinOrderOptions { dp_pair_budget: (pairs / 4).max(1), greedy_only: false };
                    let refined = plan(&graph, est.as_ref(), budget);
                    assert_eq!(check_tree(&refined.tree, &graph, est.as_ref(), &model), 0, "{case}");
                    let spent: u64 = refined.components.iter().map(|c| c.refine_pairs).sum();
                    assert!(spent <= budget.dp_pair_budget, "{case}: refinement over its budget");
                    let o = refined.objective;
                    assert!(o >= best * (1.0 - 1e-9) && o <= goo.objective * (1.0 + 1e-9), "{case}: refined {o}");
                }
            }
        }
    }
}

/// Larger graphs, fewer seeds: 10-12 relations of every shape.
#[test]
fn dp_is_optimal_on_larger_graphs() {
    let model = HashJoinCostModel::default();
    for shape in SHAPES {
        for n in 10..=12 {
            let graph = common::graph(4242 + n as u64, shape, n);
            let est = ExponentialBackoff::default();
            let (best, pairs) = exhaustive(&graph, &est, &model, graph.all());
            let dp = plan(&graph, &est, exact());
            assert_eq!(dp.dp_pairs(), pairs, "{shape:?} n={n}");
            assert!(close(dp.objective, best.unwrap()), "{shape:?} n={n}");
        }
    }
}

/// The exhaustive reference itself assumes the principle of optimality;
/// check it against the minimum over every tree on small graphs.
#[test]
fn exhaustive_reference_equals_the_minimum_over_all_trees() {
    let model = HashJoinCostModel::default();
    for shape in SHAPES {
        for n in 2..=6 {
            for seed in 0..SEEDS_PER_CASE {
                let graph = common::graph(seed * 77 + n as u64, shape, n);
                for (name, est) in estimators() {
                    let trees = common::all_trees(&graph, est.as_ref(), &model, graph.all());
                    let min = trees.iter().copied().fold(f64::INFINITY, f64::min);
                    let (best, _) = exhaustive(&graph, est.as_ref(), &model, graph.all());
                    assert!(close(best.unwrap(), min), "{shape:?} n={n} seed={seed} {name}");
                }
            }
        }
    }
}

/// Hypergraphs: per component DPhyp finds the optimum when a tree without
/// cross products exists and says so when it does not; the pair counts
/// agree with the reference; the whole plan is a valid tree.
#[test]
fn dp_handles_hyperedges() {
    let model = HashJoinCostModel::default();
    let (mut without_plan, mut exact_with_hyperedges) = (0, 0);
    for n in 2..=9 {
        for seed in 0..(4 * SEEDS_PER_CASE) {
            let graph = common::hypergraph(seed * 31 + n as u64, n);
            for (name, est) in estimators() {
                let case = format!("hypergraph n={n} seed={seed} {name}");
                let dp = plan(&graph, est.as_ref(), exact());
                check_tree(&dp.tree, &graph, est.as_ref(), &model);
                for c in &dp.components {
                    let (best, pairs) = exhaustive(&graph, est.as_ref(), &model, c.relations);
                    assert_eq!(c.dp_pairs, pairs, "{case}: pairs of {}", c.relations);
                    match (c.algorithm, best) {
                        (Algorithm::Single, _) => assert_eq!(c.relations.len(), 1),
                        (Algorithm::DpHyp, Some(best)) => {
                            let sub = common::subtree_objective(&dp.tree, c.relations, &model);
                            assert!(close(sub, best), "{case}: {} dp {sub} != {best}", c.relations);
                            exact_with_hyperedges += usize::from(graph.has_hyperedges(c.relations));
                        }
                        (Algorithm::Greedy(GreedyReason::NoCrossProductFreeTree), None) => without_plan += 1,
                        (algorithm, best) => panic!("{case}: {} got {algorithm} but reference {best:?}", c.relations),
                    }
                }
            }
        }
    }
    assert!(without_plan > 20, "only {without_plan} components without a cross-product-free tree");
    assert!(exact_with_hyperedges > 100, "only {exact_with_hyperedges} DP components with hyperedges");
}

/// DPhyp emits exactly the published number of csg-cmp pairs (Moerkotte &
/// Neumann, VLDB 2006) on chains, stars, cycles and cliques.
#[test]
fn dp_pair_counts_match_the_closed_forms() {
    let est = Independence;
    for n in 2..=12u64 {
        let count = |shape| plan(&common::graph(n, shape, n as usize), &est, exact()).dp_pairs();
        assert_eq!(count(Shape::Chain), (n * n * n - n) / 6, "chain {n}");
        assert_eq!(count(Shape::Star), (n - 1) << (n - 2), "star {n}");
        assert_eq!(count(Shape::Clique), (3u64.pow(n as u32) + 1 - (2 << n)) / 2, "clique {n}");
        if n >= 3 {
            assert_eq!(count(Shape::Cycle), (n * n * n - 2 * n * n + n) / 2, "cycle {n}");
        }
    }
}

/// Over the budget the component is ordered greedily, and the report says
/// so with the count at which the DP stopped.
#[test]
fn over_budget_falls_back_to_greedy() {
    let est = Independence;
    let model = HashJoinCostModel::default();
    let graph = common::graph(5, Shape::Clique, 10);
    let options = JoinOrderOptions { dp_pair_budget: 1000, greedy_only: false };
    let p = plan(&graph, &est, options);
    assert_eq!(p.components[0].algorithm, Algorithm::Greedy(GreedyReason::OverBudget));
    assert_eq!(p.dp_pairs(), 1001);
    assert_eq!(check_tree(&p.tree, &graph, &est, &model), 0);
    // GOO's tree was refined by DPhyp on subtrees, and is no worse for it.
    assert!(p.components[0].refined_subtrees > 0 && p.components[0].refine_pairs <= 1000);
    assert!(p.objective <= plan(&graph, &est, greedy()).objective);
    // A 10-clique has 28,501 pairs: exactly that budget suffices, one less does not.
    let at = plan(&graph, &est, JoinOrderOptions { dp_pair_budget: 28501, greedy_only: false });
    assert_eq!((at.components[0].algorithm, at.dp_pairs()), (Algorithm::DpHyp, 28501));
    let below = plan(&graph, &est, JoinOrderOptions { dp_pair_budget: 28500, greedy_only: false });
    assert_eq!(below.components[0].algorithm, Algorithm::Greedy(GreedyReason::OverBudget));
    assert_eq!(below.dp_pairs(), 28501);
}

/// With hyperedges there is no counting pass: the DP stops itself.
#[test]
fn hypergraph_dp_stops_at_the_budget() {
    use ndpdb_sql::optimizer::join_order::JoinEdge;
    let est = Independence;
    let model = HashJoinCostModel::default();
    let mut rng = common::rng(3);
    let rels = common::relations(&mut rng, 5);
    let mut edges: Vec<JoinEdge> = (1..5).map(|i| JoinEdge::simple(i - 1, i, 0.01)).collect();
    edges.push(JoinEdge::hyper(&[0, 1], &[3, 4], 0.5));
    let graph = QueryGraph::new(rels, edges).unwrap();
    let full = plan(&graph, &est, exact());
    assert_eq!(full.components[0].algorithm, Algorithm::DpHyp);
    assert_eq!(full.dp_pairs(), exhaustive(&graph, &est, &model, graph.all()).1);
    let p = plan(&graph, &est, JoinOrderOptions { dp_pair_budget: 3, greedy_only: false });
    assert_eq!((p.components[0].algorithm, p.dp_pairs()), (Algorithm::Greedy(GreedyReason::OverBudget), 4));
    assert_eq!(check_tree(&p.tree, &graph, &est, &model), 0);
}

/// GOO joins the connected pair with the fewest rows first, even when it is
/// not the cheapest join.
#[test]
fn greedy_joins_the_smallest_result_first() {
    use ndpdb_sql::optimizer::join_order::{Cost, JoinEdge, JoinTree, Relation};
    let rel = |rows| Relation { id: 0, rows, scan: Cost::ZERO };
    // Chain 0-1-2-3: {0,1} = 50 rows (cheap), {1,2} = 10^4, {2,3} = 1 row
    // (expensive: two inputs of 10^6 rows).
    let edges = vec![JoinEdge::simple(0, 1, 0.5), JoinEdge::simple(1, 2, 1e-3), JoinEdge::simple(2, 3, 1e-12)];
    let graph = QueryGraph::new(vec![rel(10.0), rel(10.0), rel(1e6), rel(1e6)], edges).unwrap();
    let p = plan(&graph, &Independence, greedy());
    // Then {1,2,3} = 10 rows beats {0,1} = 50: ((({2,3} ⋈ 1) ⋈ 0).
    let mut joins = Vec::new();
    p.tree.visit(&mut |node| {
        if let JoinTree::Join { relations, .. } = node {
            joins.push(relations.to_string());
        }
    });
    assert_eq!(joins, ["{0,1,2,3}", "{1,2,3}", "{2,3}"]);
}

/// Components are ordered alone and cross-joined smallest first.
#[test]
fn disconnected_components_are_cross_joined_smallest_first() {
    let est = Independence;
    let model = HashJoinCostModel::default();
    let mut rng = common::rng(9);
    let mut rels = common::relations(&mut rng, 6);
    for (r, rows) in rels.iter_mut().zip([1000.0, 1000.0, 5.0, 7.0, 1e6, 3.0]) {
        r.rows = rows;
    }
    use ndpdb_sql::optimizer::join_order::JoinEdge;
    let edges = vec![JoinEdge::simple(0, 1, 0.001), JoinEdge::simple(2, 3, 0.5), JoinEdge::simple(4, 3, 1e-6)];
    let graph = QueryGraph::new(rels, edges).unwrap();
    let p = plan(&graph, &est, exact());
    let order: Vec<String> = p.components.iter().map(|c| c.relations.to_string()).collect();
    // {5}: 3 rows, {0,1}: 1000 rows, {2,3,4}: 5*7*1e6*0.5*1e-6 = 17.5 rows.
    assert_eq!(order, ["{5}", "{2,3,4}", "{0,1}"]);
    assert_eq!(check_tree(&p.tree, &graph, &est, &model), 2, "two cross joins between three components");
}

/// Every node's rows are the estimator's for its set, whichever algorithm
/// built it, and an estimate does not depend on how relations are numbered.
#[test]
fn cardinality_is_a_function_of_the_set() {
    use ndpdb_sql::optimizer::join_order::{JoinEdge, RelSet};
    for n in 2..=9 {
        for seed in 0..SEEDS_PER_CASE {
            let graph = common::graph(seed + 500, Shape::Random, n);
            let perm: Vec<usize> = (0..n).rev().collect();
            let relations = perm.iter().map(|&i| graph.relations()[i].clone()).collect();
            let inverse = |i: usize| n - 1 - i;
            let edges = graph
                .edges()
                .iter()
                .rev()
                .map(|e| {
                    let side = |s: RelSet| s.iter().map(inverse).collect::<Vec<_>>();
                    JoinEdge::hyper(&side(e.right), &side(e.left), e.selectivity)
                })
                .collect();
            let renumbered = QueryGraph::new(relations, edges).unwrap();
            for (name, est) in estimators() {
                for set in graph.all().subsets() {
                    let mapped = RelSet::from_bits(set.iter().fold(0, |m, i| m | 1 << inverse(i)));
                    let (a, b) = (est.estimate(&graph, set), est.estimate(&renumbered, mapped));
                    assert!(close(a, b), "{name} n={n} seed={seed} {set}: {a} vs {b}");
                }
            }
        }
    }
}

#[test]
fn estimators_on_a_triangle_of_one_key() {
    use ndpdb_sql::optimizer::join_order::{Cost, JoinEdge, Relation};
    let rel = |rows| Relation { id: 0, rows, scan: Cost::ZERO };
    // t.id = mi.movie_id = mk.movie_id: three edges, two independent.
    let edges = vec![JoinEdge::simple(0, 1, 1e-3), JoinEdge::simple(1, 2, 1e-3), JoinEdge::simple(0, 2, 1e-3)];
    let graph = QueryGraph::new(vec![rel(1e3), rel(1e4), rel(1e5)], edges).unwrap();
    let all = graph.all();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
    // 1e12 * 1e-9 = 1000.
    assert!(close(Independence.estimate(&graph, all), 1e3));
    // Two tree edges at full weight, the cycle edge at ^1/2: 1e12 * 1e-6 * 10^-1.5.
    let cycles = ExponentialBackoff { scope: BackoffScope::CycleEdges };
    assert!(close(cycles.estimate(&graph, all), 1e6 * 10f64.powf(-1.5)));
    // All edges damped: 1e-3 * 1e-3^(1/2) * 1e-3^(1/4) = 10^-5.25.
    let every = ExponentialBackoff { scope: BackoffScope::AllEdges };
    assert!(close(every.estimate(&graph, all), 1e12 * 10f64.powf(-5.25)));
    // A set with no edges inside is the product of its rows.
    assert!(close(cycles.estimate(&graph, ndpdb_sql::optimizer::join_order::RelSet::single(2)), 1e5));
}

#[test]
fn bad_graphs_and_options_are_errors() {
    use ndpdb_sql::optimizer::join_order::{Cost, JoinEdge, Relation};
    let rel = |rows| Relation { id: 0, rows, scan: Cost::ZERO };
    let err = |relations, edges| QueryGraph::new(relations, edges).unwrap_err();
    assert_eq!(err(vec![], vec![]), JoinOrderError::NoRelations);
    assert_eq!(err(vec![rel(1.0); 65], vec![]), JoinOrderError::TooManyRelations { count: 65, max: 64 });
    assert!(matches!(err(vec![rel(f64::NAN)], vec![]), JoinOrderError::BadRows { relation: 0, .. }));
    let bad_scan = Relation { id: 0, rows: 1.0, scan: Cost { host: -1.0, device: 0.0 } };
    assert!(matches!(err(vec![bad_scan], vec![]), JoinOrderError::BadScanCost { relation: 0, .. }));
    let two = || vec![rel(1.0), rel(2.0)];
    let out = JoinOrderError::EdgeRelationOutOfRange { edge: 0, relation: 2, count: 2 };
    assert_eq!(err(two(), vec![JoinEdge::simple(0, 2, 0.5)]), out);
    let huge = JoinOrderError::EdgeRelationOutOfRange { edge: 0, relation: 64, count: 2 };
    assert_eq!(err(two(), vec![JoinEdge::simple(64, 1, 0.5)]), huge);
    assert_eq!(err(two(), vec![JoinEdge::hyper(&[], &[1], 0.5)]), JoinOrderError::EmptyEdgeSide { edge: 0 });
    let overlap = JoinOrderError::EdgeSidesOverlap { edge: 0, relation: 1 };
    assert_eq!(err(two(), vec![JoinEdge::hyper(&[0, 1], &[1], 0.5)]), overlap);
    for sel in [0.0, -0.1, 1.5, f64::NAN] {
        assert!(matches!(err(two(), vec![JoinEdge::simple(0, 1, sel)]), JoinOrderError::BadSelectivity { .. }));
    }
    let graph = QueryGraph::new(two(), vec![JoinEdge::simple(0, 1, 0.5)]).unwrap();
    let zero = JoinOrderOptions { dp_pair_budget: 0, greedy_only: false };
    let got = order_joins(&graph, &Independence, &HashJoinCostModel::default(), &zero);
    assert_eq!(got.unwrap_err(), JoinOrderError::ZeroBudget);
    // Exactly 64 relations (a chain) are fine.
    let edges = (1..64).map(|i| JoinEdge::simple(i - 1, i, 0.01)).collect();
    let graph = QueryGraph::new(vec![rel(100.0); 64], edges).unwrap();
    let p = plan(&graph, &Independence, JoinOrderOptions::default());
    assert_eq!(p.tree.leaves().len(), 64);
    assert_eq!(p.components[0].algorithm, Algorithm::DpHyp, "a 64-chain has 43,680 pairs");
}

/// The plan prints as an indented tree, probe side first.
#[test]
fn plan_display_is_an_indented_tree() {
    use ndpdb_sql::optimizer::join_order::{Cost, JoinEdge, Relation};
    let rels = vec![
        Relation { id: 10, rows: 1000.0, scan: Cost::host(1e-3) },
        Relation { id: 11, rows: 10.0, scan: Cost::device(2e-3) },
        Relation { id: 12, rows: 50.0, scan: Cost::host(1e-4) },
    ];
    let edges = vec![JoinEdge::simple(0, 1, 0.1), JoinEdge::simple(0, 2, 0.01)];
    let graph = QueryGraph::new(rels, edges).unwrap();
    let p = plan(&graph, &Independence, JoinOrderOptions::default());
    // Star around 0: {0}⋈{2} first (500 rows, host 1e-3 + 1e-4 + 15e-6 + 2e-6 + 5e-6), then {1} as the build side.
    let expected = "\
join order: 3 relations in 1 component(s), objective 3.135e-3, DP budget 250000 pairs
  component {0,1,2}: DPhyp, 4 csg-cmp pairs
hash join {0,1,2}  rows=500  host=1.135e-3s device=2.000e-3s
  hash join {0,2}  rows=500  host=1.122e-3s device=0.000e0s
    scan #0 (id 10)  rows=1000  host=1.000e-3s device=0.000e0s
    scan #2 (id 12)  rows=50  host=1.000e-4s device=0.000e0s
  scan #1 (id 11)  rows=10  host=0.000e0s device=2.000e-3s
";
    assert_eq!(p.to_string(), expected);
}

/// Garbage in: building a graph never panics, and every graph it accepts is
/// ordered into a valid tree (extreme rows included).
#[test]
fn arbitrary_input_never_panics() {
    use ndpdb_sql::optimizer::join_order::{Cost, JoinEdge, Relation};
    use rand::RngExt;
    let model = HashJoinCostModel::default();
    let number = |rng: &mut rand::rngs::Xoshiro256PlusPlus| match rng.random_range(0..40) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => -1.0,
        3 => 0.0,
        4 => 1e300,
        _ => rng.random_range(0.0..1.0),
    };
    let mut accepted = 0;
    for seed in 0..10_000 {
        let mut rng = common::rng(seed);
        let n = rng.random_range(0..12usize);
        let relations: Vec<Relation> = (0..n)
            .map(|i| Relation { id: i as u64, rows: number(&mut rng) * 1e6, scan: Cost::host(number(&mut rng)) })
            .collect();
        let side = |rng: &mut rand::rngs::Xoshiro256PlusPlus| {
            let len = if rng.random_bool(0.05) { 0 } else { rng.random_range(1..3) };
            let bound = if rng.random_bool(0.05) { n + 70 } else { n.max(1) };
            (0..len).map(|_| rng.random_range(0..bound)).collect::<Vec<usize>>()
        };
        let edges: Vec<JoinEdge> = (0..rng.random_range(0..n + 3))
            .map(|_| JoinEdge { left: side(&mut rng), right: side(&mut rng), selectivity: number(&mut rng) })
            .collect();
        let Ok(graph) = QueryGraph::new(relations, edges) else { continue };
        accepted += 1;
        for (_, est) in estimators() {
            let p = plan(&graph, est.as_ref(), JoinOrderOptions { dp_pair_budget: 50, greedy_only: false });
            check_tree(&p.tree, &graph, est.as_ref(), &model);
        }
    }
    assert!(accepted > 500, "only {accepted} graphs accepted: the generator should hit valid ones");
}
