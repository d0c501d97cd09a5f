//! What both algorithms share: memoised cardinalities and the choice of a
//! join's build side.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::cardinality::CardinalityEstimator;
use super::cost::{Cost, CostModel, JoinInput, JoinStep};
use super::graph::QueryGraph;
use super::plan::JoinTree;
use super::relset::RelSet;

/// A hash map keyed by relation sets.
pub(super) type SetMap<V> = HashMap<RelSet, V, BuildHasherDefault<SetHasher>>;

/// A hasher for one `u64` (a [`RelSet`]'s mask): a 64x64->128-bit multiply
/// folded to 64 bits, so both the low bits (bucket) and the high bits (tag)
/// of the table depend on every bit of the set.
#[derive(Default)]
pub(super) struct SetHasher(u64);

impl Hasher for SetHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        let product = u128::from(self.0 ^ n ^ 0x243f_6a88_85a3_08d3) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

/// The cheaper orientation of a join.
#[derive(Debug, Clone, Copy)]
pub(super) struct Joined {
    pub cost: Cost,
    pub objective: f64,
    /// True when the first input is the probe side.
    pub first_probes: bool,
}

/// The graph, the estimator, the cost model and the memo of estimates.
pub(super) struct Context<'a> {
    pub graph: &'a QueryGraph,
    estimator: &'a dyn CardinalityEstimator,
    pub model: &'a dyn CostModel,
    rows: SetMap<f64>,
}

impl<'a> Context<'a> {
    pub fn new(graph: &'a QueryGraph, estimator: &'a dyn CardinalityEstimator, model: &'a dyn CostModel) -> Self {
        Context { graph, estimator, model, rows: SetMap::default() }
    }

    /// The estimate for `set`, memoised, clamped to `[1, f64::MAX]`.
    pub fn rows(&mut self, set: RelSet) -> f64 {
        if let Some(&rows) = self.rows.get(&set) {
            return rows;
        }
        let rows = self.estimate(set);
        self.rows.insert(set, rows);
        rows
    }

    /// The estimate for `set`, clamped, not memoised (for callers that keep
    /// their own memo, as the DP table does).
    pub fn estimate(&self, set: RelSet) -> f64 {
        let raw = self.estimator.estimate(self.graph, set);
        if raw.is_nan() { f64::MAX } else { raw.clamp(1.0, f64::MAX) }
    }

    /// The leaf for relation `index`.
    pub fn scan(&mut self, index: usize) -> JoinTree {
        let rows = self.rows(RelSet::single(index));
        let relation = &self.graph.relations()[index];
        JoinTree::Scan { relation: index, id: relation.id, rows, cost: self.model.scan(relation) }
    }

    /// Costs `a ⋈ b` both ways round and keeps the cheaper (ties: `a` probes).
    pub fn join(&self, a: JoinInput, b: JoinInput, rows: f64, cross: bool) -> Joined {
        let forward = self.model.join(&JoinStep { probe: a, build: b, rows, cross });
        let backward = self.model.join(&JoinStep { probe: b, build: a, rows, cross });
        let (f, r) = (self.model.objective(forward), self.model.objective(backward));
        if r < f {
            Joined { cost: backward, objective: r, first_probes: false }
        } else {
            Joined { cost: forward, objective: f, first_probes: true }
        }
    }

    /// Joins two trees into one node, the cheaper way round.
    pub fn join_trees(&mut self, a: JoinTree, b: JoinTree, cross: bool) -> JoinTree {
        let relations = a.relations().union(b.relations());
        let rows = self.rows(relations);
        let joined = self.join(input(&a), input(&b), rows, cross);
        let (probe, build) = if joined.first_probes { (a, b) } else { (b, a) };
        JoinTree::Join { probe: Box::new(probe), build: Box::new(build), relations, rows, cost: joined.cost, cross }
    }
}

/// A tree as a join input.
pub(super) fn input(tree: &JoinTree) -> JoinInput {
    JoinInput { relations: tree.relations(), rows: tree.rows(), cost: tree.cost() }
}
