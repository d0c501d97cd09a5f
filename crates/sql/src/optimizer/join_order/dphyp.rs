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
//!  emit_csg(S1):  X = S1 ∪ B_min(S1); N = N(S1, X);
//!                 for each v in N (descending), S2 = {v}:
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
//! When the count passes the budget the caller falls back to the greedy
//! algorithm, so cliques and dense stars cannot explode: without hyperedges
//! [`count_pairs`] runs the same enumeration without costing first; with
//! them the DP stops itself at the budget. Either can be restricted to a
//! connected subset of a component (every relation outside it is in X from
//! the start), which is how `refine.rs` re-orders GOO's subtrees.

use std::collections::hash_map::Entry as Slot;

use super::context::{Context, Joined, SetMap};
use super::cost::{Cost, JoinInput};
use super::graph::QueryGraph;
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

/// What the enumeration does with the sets and pairs it finds.
trait Visitor {
    /// What the visitor knows about a built set (the DP's table entry).
    type Built: Copy;
    /// `Some` when `set` is known to be connected (built). DPhyp asks before
    /// it emits a csg or a cmp grown by a neighbourhood subset.
    fn built(&self, set: RelSet) -> Option<Self::Built>;
    /// A csg-cmp pair, with what `built(s2)` returned; false stops the
    /// enumeration.
    fn pair(&mut self, s1: RelSet, s2: RelSet, built2: Self::Built) -> bool;
}

/// The enumeration of DPhyp, generic over what it feeds.
struct Enumerator<'g, V> {
    graph: &'g QueryGraph,
    visitor: V,
    /// Relations outside the set being ordered: never a neighbour.
    outside: RelSet,
    stopped: bool,
}

/// Counts the csg-cmp pairs of a connected set without hyperedges (a
/// component, or a subtree's relations), stopping at `budget + 1`. Without hyperedges every set the enumeration grows from a
/// connected set by neighbours is connected, so no table is needed: this
/// costs a few nanoseconds a pair, a small fraction of costing the pair.
pub(super) fn count_pairs(graph: &QueryGraph, component: RelSet, budget: u64) -> u64 {
    debug_assert!(!graph.has_hyperedges(component), "counting needs the table for hyperedges");
    let mut e = Enumerator { graph, visitor: Counter { pairs: 0, budget }, outside: RelSet::EMPTY, stopped: false };
    e.run(component);
    e.visitor.pairs
}

struct Counter {
    pairs: u64,
    budget: u64,
}

impl Visitor for Counter {
    type Built = ();

    fn built(&self, _: RelSet) -> Option<()> {
        Some(())
    }

    fn pair(&mut self, _: RelSet, _: RelSet, _: ()) -> bool {
        self.pairs += 1;
        self.pairs <= self.budget
    }
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

/// The dynamic program's table and counters.
struct Table<'c, 'a> {
    ctx: &'c mut Context<'a>,
    entries: SetMap<Entry>,
    /// The last csg looked up and its entry: `emit_csg(S1)` pairs one S1
    /// with many cmps, and no pair it emits changes S1's own entry.
    last_csg: (RelSet, Entry),
    pairs: u64,
    budget: u64,
}

/// Runs DPhyp on the relations of `component` (a connected component, or
/// any connected subset of one: edges leaving it are ignored), stopping
/// after `budget` pairs.
pub(super) fn dphyp(ctx: &mut Context<'_>, component: RelSet, budget: u64) -> DpOutcome {
    let graph = ctx.graph;
    let mut entries = SetMap::default();
    for v in component.iter() {
        let rows = ctx.rows(RelSet::single(v));
        let cost = ctx.model.scan(&graph.relations()[v]);
        let objective = ctx.model.objective(cost);
        entries.insert(RelSet::single(v), Entry { rows, cost, objective, probe: RelSet::EMPTY, build: RelSet::EMPTY });
    }
    let none = Entry { rows: 0.0, cost: Cost::ZERO, objective: 0.0, probe: RelSet::EMPTY, build: RelSet::EMPTY };
    let table = Table { ctx, entries, last_csg: (RelSet::EMPTY, none), pairs: 0, budget };
    let mut e = Enumerator { graph, visitor: table, outside: RelSet::EMPTY, stopped: false };
    e.run(component);
    let table = e.visitor;
    if e.stopped {
        DpOutcome::OverBudget(table.pairs)
    } else if table.entries.contains_key(&component) {
        DpOutcome::Plan(table.tree(component), table.pairs)
    } else {
        DpOutcome::NoPlan(table.pairs)
    }
}

impl<V: Visitor> Enumerator<'_, V> {
    fn run(&mut self, component: RelSet) {
        self.outside = RelSet::first(self.graph.len()).minus(component);
        for v in component.iter().rev() {
            let start = RelSet::single(v);
            self.emit_csg(start);
            self.enumerate_csg_rec(start, RelSet::up_to(v).union(self.outside));
            if self.stopped {
                return;
            }
        }
    }

    fn enumerate_csg_rec(&mut self, s1: RelSet, excluded: RelSet) {
        let n = self.graph.neighbourhood(s1, excluded);
        if n.is_empty() {
            return;
        }
        for grow in n.subsets() {
            if self.stopped {
                return;
            }
            let csg = s1.union(grow);
            if self.visitor.built(csg).is_some() {
                self.emit_csg(csg);
            }
        }
        let excluded = excluded.union(n);
        for grow in n.subsets() {
            if self.stopped {
                return;
            }
            self.enumerate_csg_rec(s1.union(grow), excluded);
        }
    }

    fn emit_csg(&mut self, s1: RelSet) {
        let Some(lowest) = s1.min() else { return };
        let excluded = s1.union(RelSet::up_to(lowest)).union(self.outside);
        let n = self.graph.neighbourhood(s1, excluded);
        let n1 = self.graph.simple_neighbours(s1);
        for v in n.iter().rev() {
            if self.stopped {
                return;
            }
            let s2 = RelSet::single(v);
            if self.graph.connects_via(n1, s1, s2)
                && let Some(built) = self.visitor.built(s2)
            {
                self.emit_pair(s1, s2, built);
            }
            self.enumerate_cmp_rec(s1, n1, s2, excluded.union(n.intersection(RelSet::up_to(v))));
        }
    }

    /// `n1`: the simple neighbours of `s1`, fixed for the whole recursion.
    fn enumerate_cmp_rec(&mut self, s1: RelSet, n1: RelSet, s2: RelSet, excluded: RelSet) {
        let n = self.graph.neighbourhood(s2, excluded);
        if n.is_empty() {
            return;
        }
        for grow in n.subsets() {
            if self.stopped {
                return;
            }
            let cmp = s2.union(grow);
            if self.graph.connects_via(n1, s1, cmp)
                && let Some(built) = self.visitor.built(cmp)
            {
                self.emit_pair(s1, cmp, built);
            }
        }
        let excluded = excluded.union(n);
        for grow in n.subsets() {
            if self.stopped {
                return;
            }
            self.enumerate_cmp_rec(s1, n1, s2.union(grow), excluded);
        }
    }

    fn emit_pair(&mut self, s1: RelSet, s2: RelSet, built2: V::Built) {
        if !self.visitor.pair(s1, s2, built2) {
            self.stopped = true;
        }
    }
}

impl Visitor for Table<'_, '_> {
    type Built = Entry;

    fn built(&self, set: RelSet) -> Option<Entry> {
        self.entries.get(&set).copied()
    }

    /// Costs `s1 ⋈ s2` both ways round and keeps it if it beats the table.
    fn pair(&mut self, s1: RelSet, s2: RelSet, b: Entry) -> bool {
        self.pairs += 1;
        if self.pairs > self.budget {
            return false;
        }
        if self.last_csg.0 != s1 {
            let Some(&a) = self.entries.get(&s1) else {
                debug_assert!(false, "DPhyp emitted {s1} before building it");
                return true;
            };
            self.last_csg = (s1, a);
        }
        let a = self.last_csg.1;
        let set = s1.union(s2);
        debug_assert!(set != self.last_csg.0, "a pair never rebuilds its own csg");
        let input = |relations, e: Entry| JoinInput { relations, rows: e.rows, cost: e.cost };
        match self.entries.entry(set) {
            Slot::Occupied(mut old) => {
                let rows = old.get().rows;
                let joined = self.ctx.join(input(s1, a), input(s2, b), rows, false);
                if joined.objective < old.get().objective {
                    old.insert(entry(rows, joined, s1, s2));
                }
            }
            Slot::Vacant(slot) => {
                // The table is the memo of estimates for the sets it holds.
                let rows = self.ctx.estimate(set);
                let joined = self.ctx.join(input(s1, a), input(s2, b), rows, false);
                slot.insert(entry(rows, joined, s1, s2));
            }
        }
        true
    }
}

fn entry(rows: f64, joined: Joined, s1: RelSet, s2: RelSet) -> Entry {
    let (probe, build) = if joined.first_probes { (s1, s2) } else { (s2, s1) };
    Entry { rows, cost: joined.cost, objective: joined.objective, probe, build }
}

impl Table<'_, '_> {
    /// The tree the table holds for `set` (which it must hold).
    fn tree(&self, set: RelSet) -> JoinTree {
        let e = self.entries[&set];
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
