//! Shared by the join-order tests: random query graphs of known shapes, an
//! exhaustive reference optimizer, and a checker for join trees.

#![allow(dead_code)]

use std::collections::HashMap;

use ndpdb_sql::optimizer::join_order::{
    CardinalityEstimator, Cost, CostModel, JoinEdge, JoinInput, JoinStep, JoinTree, QueryGraph, RelSet, Relation,
};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// Shapes of simple graphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Chain,
    Star,
    Cycle,
    Clique,
    /// A random spanning tree plus random extra edges.
    Random,
}

pub const SHAPES: [Shape; 5] = [Shape::Chain, Shape::Star, Shape::Cycle, Shape::Clique, Shape::Random];

pub fn rng(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// `10^x`, `x` uniform in `[lo, hi)`.
fn log_uniform(rng: &mut Xoshiro256PlusPlus, lo: f64, hi: f64) -> f64 {
    10f64.powf(rng.random_range(lo..hi))
}

/// `n` relations with random rows and scan costs (some on the device).
pub fn relations(rng: &mut Xoshiro256PlusPlus, n: usize) -> Vec<Relation> {
    (0..n)
        .map(|i| {
            let rows = log_uniform(rng, 0.0, 6.0).round();
            let scan = if rng.random_bool(0.5) {
                Cost::host(rows * 20e-9)
            } else {
                Cost { host: rows * 2e-9, device: rows * 30e-9 }
            };
            Relation { id: 100 + i as u64, rows, scan }
        })
        .collect()
}

/// The simple edges of a shape over `n` relations.
pub fn shape_pairs(rng: &mut Xoshiro256PlusPlus, shape: Shape, n: usize) -> Vec<(usize, usize)> {
    match shape {
        Shape::Chain => (1..n).map(|i| (i - 1, i)).collect(),
        Shape::Star => (1..n).map(|i| (0, i)).collect(),
        Shape::Cycle if n >= 3 => (0..n).map(|i| (i, (i + 1) % n)).collect(),
        Shape::Cycle => (1..n).map(|i| (i - 1, i)).collect(),
        Shape::Clique => (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).collect(),
        Shape::Random => {
            let mut pairs: Vec<(usize, usize)> = (1..n).map(|i| (rng.random_range(0..i), i)).collect();
            for _ in 0..rng.random_range(0..=n) {
                let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
                if a != b {
                    pairs.push((a.min(b), a.max(b)));
                }
            }
            pairs
        }
    }
}

/// A random graph of a shape with random selectivities; the relations are
/// renumbered randomly so that shapes do not always follow index order.
pub fn graph(seed: u64, shape: Shape, n: usize) -> QueryGraph {
    let mut rng = rng(seed);
    let rels = relations(&mut rng, n);
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        perm.swap(i, rng.random_range(0..=i));
    }
    let edges = shape_pairs(&mut rng, shape, n)
        .into_iter()
        .map(|(a, b)| JoinEdge::simple(perm[a], perm[b], log_uniform(&mut rng, -6.0, 0.0)))
        .collect();
    QueryGraph::new(rels, edges).expect("generated graphs are valid")
}

/// A random graph with hyperedges: a random forest of simple edges plus
/// hyperedges between random disjoint sets (so some components are
/// connected only through hyperedges).
pub fn hypergraph(seed: u64, n: usize) -> QueryGraph {
    let mut rng = rng(seed);
    let rels = relations(&mut rng, n);
    let mut edges = Vec::new();
    for i in 1..n {
        if rng.random_bool(0.7) {
            edges.push(JoinEdge::simple(rng.random_range(0..i), i, log_uniform(&mut rng, -4.0, 0.0)));
        }
    }
    for _ in 0..rng.random_range(1..=4) {
        let mut left = Vec::new();
        let mut right = Vec::new();
        for i in 0..n {
            match rng.random_range(0..4) {
                0 => left.push(i),
                1 => right.push(i),
                _ => {}
            }
        }
        if !left.is_empty() && !right.is_empty() && left.len() + right.len() <= 5 {
            edges.push(JoinEdge::hyper(&left, &right, log_uniform(&mut rng, -4.0, 0.0)));
        }
    }
    QueryGraph::new(rels, edges).expect("generated graphs are valid")
}

/// The orderer's clamp of an estimate.
pub fn clamped(estimator: &dyn CardinalityEstimator, graph: &QueryGraph, set: RelSet) -> f64 {
    let raw = estimator.estimate(graph, set);
    if raw.is_nan() { f64::MAX } else { raw.clamp(1.0, f64::MAX) }
}

/// Costs `a ⋈ b` both ways round.
fn both_ways(model: &dyn CostModel, a: JoinInput, b: JoinInput, rows: f64) -> [Cost; 2] {
    [
        model.join(&JoinStep { probe: a, build: b, rows, cross: false }),
        model.join(&JoinStep { probe: b, build: a, rows, cross: false }),
    ]
}

/// The splits of `set` into two non-empty halves, each once (the first
/// half holds the lowest member).
fn splits(set: RelSet) -> impl Iterator<Item = (RelSet, RelSet)> {
    let lowest = set.lowest();
    set.minus(lowest).subsets().map(move |rest| (set.minus(rest), rest))
}

/// The exhaustive reference: every subset of `set`, every split of it into
/// two halves that are both buildable and joined by an edge (DPsub).
/// Returns the best objective for `set` (None if no tree without cross
/// products exists) and the number of such splits (csg-cmp pairs).
pub fn exhaustive(
    graph: &QueryGraph,
    estimator: &dyn CardinalityEstimator,
    model: &dyn CostModel,
    set: RelSet,
) -> (Option<f64>, u64) {
    let mut best: HashMap<RelSet, (f64, Cost)> = HashMap::new();
    let mut pairs = 0;
    let mut all: Vec<RelSet> = set.subsets().collect();
    all.sort_by_key(|s| s.len());
    for s in all {
        if s.len() == 1 {
            let cost = model.scan(&graph.relations()[s.min().unwrap()]);
            best.insert(s, (model.objective(cost), cost));
            continue;
        }
        let rows = clamped(estimator, graph, s);
        for (s1, s2) in splits(s) {
            let (Some(&(_, c1)), Some(&(_, c2))) = (best.get(&s1), best.get(&s2)) else { continue };
            if !graph.connects(s1, s2) {
                continue;
            }
            pairs += 1;
            let a = JoinInput { relations: s1, rows: clamped(estimator, graph, s1), cost: c1 };
            let b = JoinInput { relations: s2, rows: clamped(estimator, graph, s2), cost: c2 };
            for cost in both_ways(model, a, b, rows) {
                let objective = model.objective(cost);
                if best.get(&s).is_none_or(|&(o, _)| objective < o) {
                    best.insert(s, (objective, cost));
                }
            }
        }
    }
    (best.get(&set).map(|&(o, _)| o), pairs)
}

/// The objective of every bushy tree without cross products over `set`
/// (both orientations of every join): exponential, for small sets only.
pub fn all_trees(
    graph: &QueryGraph,
    estimator: &dyn CardinalityEstimator,
    model: &dyn CostModel,
    set: RelSet,
) -> Vec<f64> {
    fn trees(
        graph: &QueryGraph,
        estimator: &dyn CardinalityEstimator,
        model: &dyn CostModel,
        set: RelSet,
    ) -> Vec<Cost> {
        if set.len() == 1 {
            return vec![model.scan(&graph.relations()[set.min().unwrap()])];
        }
        let rows = clamped(estimator, graph, set);
        let mut out = Vec::new();
        for (s1, s2) in splits(set) {
            if !graph.connects(s1, s2) {
                continue;
            }
            let (t1, t2) = (trees(graph, estimator, model, s1), trees(graph, estimator, model, s2));
            let (r1, r2) = (clamped(estimator, graph, s1), clamped(estimator, graph, s2));
            for &c1 in &t1 {
                for &c2 in &t2 {
                    let a = JoinInput { relations: s1, rows: r1, cost: c1 };
                    let b = JoinInput { relations: s2, rows: r2, cost: c2 };
                    out.extend(both_ways(model, a, b, rows));
                }
            }
        }
        out
    }
    trees(graph, estimator, model, set).into_iter().map(|c| model.objective(c)).collect()
}

/// Checks a join tree over all of `graph`: every relation once, every node's
/// relations the union of its children's, rows the estimator's for the set,
/// cost the model's for the children, and every join not marked cross
/// connected by an edge. Returns the number of cross joins.
pub fn check_tree(
    tree: &JoinTree,
    graph: &QueryGraph,
    estimator: &dyn CardinalityEstimator,
    model: &dyn CostModel,
) -> usize {
    let mut leaves = tree.leaves();
    leaves.sort_unstable();
    assert_eq!(leaves, (0..graph.len()).collect::<Vec<_>>(), "every relation exactly once");
    let mut crosses = 0;
    tree.visit(&mut |node| {
        assert_eq!(node.rows(), clamped(estimator, graph, node.relations()), "rows of {}", node.relations());
        match node {
            JoinTree::Scan { relation, id, cost, .. } => {
                assert_eq!(*id, graph.relations()[*relation].id);
                assert_eq!(*cost, model.scan(&graph.relations()[*relation]));
            }
            JoinTree::Join { probe, build, relations, rows, cost, cross } => {
                let (p, b) = (probe.relations(), build.relations());
                assert!(!p.intersects(b), "children overlap at {relations}");
                assert_eq!(p.union(b), *relations);
                assert_eq!(*cross, !graph.connects(p, b), "cross flag of {relations}");
                crosses += usize::from(*cross);
                let input = |t: &JoinTree| JoinInput { relations: t.relations(), rows: t.rows(), cost: t.cost() };
                let step = JoinStep { probe: input(probe), build: input(build), rows: *rows, cross: *cross };
                assert_eq!(*cost, model.join(&step), "cost of {relations}");
            }
        }
    });
    crosses
}

/// Relative comparison of objectives.
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// The objective of the subtree over exactly `set`.
pub fn subtree_objective(tree: &JoinTree, set: RelSet, model: &dyn CostModel) -> f64 {
    let mut found = None;
    tree.visit(&mut |node| {
        if node.relations() == set {
            found = Some(model.objective(node.cost()));
        }
    });
    found.unwrap_or_else(|| panic!("no subtree over {set}"))
}
