//! DPhyp (Moerkotte & Neumann, "Dynamic programming strikes back", SIGMOD
//! 2008): the cheapest bushy join tree without cross products, over a
//! hypergraph, under a budget of csg-cmp pairs.
//!
//! A *csg* is a connected set of relations; its *cmp* is a connected set
//! disjoint from it and joined to it by an edge. Every such pair is a join
//! the dynamic program must cost, and DPhyp emits each exactly once, each
//! after every pair that builds either half, so one pass fills the table:
//!
//! ```text
//!  for v = n-1 down to 0:                 relations numbered above v are
//!    emit_csg({v})                        already finished; extend {v}
//!    enumerate_csg_rec({v}, B_v)          only with those, never below v
//!
//!  emit_csg(S1):  for each neighbour v of S1 (descending), S2 = {v}:
//!                   pair (S1, S2) if connected;
//!                   enumerate_cmp_rec(S1, S2, X ∪ {w ∈ N | w <= v})
//!  *_rec(S, X):   N = N(S, X); each non-empty N' ⊆ N: visit S ∪ N' if it
//!                   is in the table (so connected); then recurse on each
//!                   S ∪ N' with X ∪ N
//! ```
//!
//! N(S, X) ([`QueryGraph::neighbourhood`]) holds simple neighbours and, for
//! a hyperedge, the lowest member of its far side; the table lookup filters
//! the sets that are not connected yet. The number of pairs is the DP's work
//! (each costs two cost-model calls and a table update): a chain of n
//! relations has (n³-n)/6, a star (n-1)·2^(n-2), a clique (3^n-2^(n+1)+1)/2.
//! When the count passes the budget the DP stops and the caller falls back
//! to the greedy algorithm, so cliques and dense cycles cannot explode.

use super::context::{Context, SetMap};
use super::cost::{Cost, JoinInput};
use super::plan::JoinTree;
use super::relset::RelSet;

/// What the dynamic program reached.
pub(super) enum DpOutcome {
    /// The optimal tree, and the pairs emitted.
    Plan(JoinTree, u64),
    /// More pairs than the budget; the count at which it stopped.
    OverBudget(u64),
    /// Finished, but the component has no tree without cross products.
    NoPlan(u64),
}

/// The best plan found so far for one set.
#[derive(Debug, Clone, Copy)]
struct Entry {
    rows: f64,
    cost: Cost,
    objective: f64,
    /// Children (both empty for a leaf).
    probe: RelSet,
    build: RelSet,
}

struct DpHyp<'c, 'a> {
    ctx: &'c mut Context<'a>,
    table: SetMap<Entry>,
    pairs: u64,
    budget: u64,
    over: bool,
}

/// Runs DPhyp on one connected component.
pub(super) fn dphyp(ctx: &mut Context<'_>, component: RelSet, budget: u64) -> DpOutcome {
    let mut dp = DpHyp { ctx, table: SetMap::default(), pairs: 0, budget, over: false };
    for v in component.iter() {
        let rows = dp.ctx.rows(RelSet::single(v));
        let cost = dp.ctx.model.scan(&dp.ctx.graph.relations()[v]);
        let objective = dp.ctx.model.objective(cost);
        let leaf = Entry { rows, cost, objective, probe: RelSet::EMPTY, build: RelSet::EMPTY };
        dp.table.insert(RelSet::single(v), leaf);
    }
    for v in component.iter().rev() {
        let start = RelSet::single(v);
        dp.emit_csg(start);
        dp.enumerate_csg_rec(start, RelSet::up_to(v));
        if dp.over {
            return DpOutcome::OverBudget(dp.pairs);
        }
    }
    if dp.table.contains_key(&component) {
        DpOutcome::Plan(dp.tree(component), dp.pairs)
    } else {
        DpOutcome::NoPlan(dp.pairs)
    }
}

impl DpHyp<'_, '_> {
    fn enumerate_csg_rec(&mut self, s1: RelSet, excluded: RelSet) {
        let n = self.ctx.graph.neighbourhood(s1, excluded);
        if n.is_empty() {
            return;
        }
        for grow in n.subsets() {
            if self.over {
                return;
            }
            let csg = s1.union(grow);
            if self.table.contains_key(&csg) {
                self.emit_csg(csg);
            }
        }
        let excluded = excluded.union(n);
        for grow in n.subsets() {
            if self.over {
                return;
            }
            self.enumerate_csg_rec(s1.union(grow), excluded);
        }
    }

    fn emit_csg(&mut self, s1: RelSet) {
        let Some(lowest) = s1.min() else { return };
        let excluded = s1.union(RelSet::up_to(lowest));
        let n = self.ctx.graph.neighbourhood(s1, excluded);
        for v in n.iter().rev() {
            if self.over {
                return;
            }
            let s2 = RelSet::single(v);
            if self.ctx.graph.connects(s1, s2) {
                self.emit_pair(s1, s2);
            }
            self.enumerate_cmp_rec(s1, s2, excluded.union(n.intersection(RelSet::up_to(v))));
        }
    }

    fn enumerate_cmp_rec(&mut self, s1: RelSet, s2: RelSet, excluded: RelSet) {
        let n = self.ctx.graph.neighbourhood(s2, excluded);
        if n.is_empty() {
            return;
        }
        for grow in n.subsets() {
            if self.over {
                return;
            }
            let cmp = s2.union(grow);
            if self.table.contains_key(&cmp) && self.ctx.graph.connects(s1, cmp) {
                self.emit_pair(s1, cmp);
            }
        }
        let excluded = excluded.union(n);
        for grow in n.subsets() {
            if self.over {
                return;
            }
            self.enumerate_cmp_rec(s1, s2.union(grow), excluded);
        }
    }

    /// Costs `s1 ⋈ s2` both ways round and keeps it if it beats the table.
    fn emit_pair(&mut self, s1: RelSet, s2: RelSet) {
        self.pairs += 1;
        if self.pairs > self.budget {
            self.over = true;
            return;
        }
        let (Some(&a), Some(&b)) = (self.table.get(&s1), self.table.get(&s2)) else {
            debug_assert!(false, "DPhyp emitted {s1} and {s2} before building both");
            return;
        };
        let set = s1.union(s2);
        let rows = self.ctx.rows(set);
        let input = |relations, e: Entry| JoinInput { relations, rows: e.rows, cost: e.cost };
        let joined = self.ctx.join(input(s1, a), input(s2, b), rows, false);
        if self.table.get(&set).is_some_and(|old| old.objective <= joined.objective) {
            return;
        }
        let (probe, build) = if joined.first_probes { (s1, s2) } else { (s2, s1) };
        self.table.insert(set, Entry { rows, cost: joined.cost, objective: joined.objective, probe, build });
    }

    /// The tree the table holds for `set` (which it must hold).
    fn tree(&self, set: RelSet) -> JoinTree {
        let e = self.table[&set];
        if e.probe.is_empty() {
            let relation = set.min().unwrap_or(0);
            let id = self.ctx.graph.relations()[relation].id;
            return JoinTree::Scan { relation, id, rows: e.rows, cost: e.cost };
        }
        JoinTree::Join {
            probe: Box::new(self.tree(e.probe)),
            build: Box::new(self.tree(e.build)),
            relations: set,
            rows: e.rows,
            cost: e.cost,
            cross: false,
        }
    }
}
