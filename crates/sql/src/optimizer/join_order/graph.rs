//! The query graph: relations with estimated rows and scan costs, and inner
//! join predicates as (hyper)edges between sets of relations.
//!
//! ```text
//!   relations: 0 title  1 movie_info  2 info_type  3 kind_type
//!   edges:     {0}-{1} sel 1/|title|       simple: one relation a side
//!              {1}-{2} sel 1/|info_type|
//!              {0,2}-{3} sel 0.1           hyperedge: t.x + it.y = kt.z
//! ```
//!
//! A simple edge joins one relation to one relation; a hyperedge's sides are
//! sets (a predicate over several relations whose two sides are fixed by
//! the planner). An edge connects two disjoint sets `S1`, `S2` when one of
//! its sides lies in `S1` and the other in `S2`; its selectivity applies to
//! every set that contains both sides. All edges are inner joins for now;
//! outer, semi and anti joins will add ordering constraints (see the module
//! essay in `mod.rs`).

use super::cost::Cost;
use super::error::JoinOrderError;
use super::relset::RelSet;

/// A base relation (a scan, possibly with pushed-down filters) as the
/// join orderer sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    /// The planner's own handle for the relation; the orderer only carries
    /// it into the plan's leaves.
    pub id: u64,
    /// Estimated rows after the relation's own filters.
    pub rows: f64,
    /// Cost of producing those rows (host-only scan or NDP call), chosen by
    /// the caller.
    pub scan: Cost,
}

/// A join predicate between two sets of relations, as the caller gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinEdge {
    /// Relation indices on one side.
    pub left: Vec<usize>,
    /// Relation indices on the other side.
    pub right: Vec<usize>,
    /// Fraction of the cross product of the two sides that qualifies.
    pub selectivity: f64,
}

impl JoinEdge {
    /// A simple edge `a - b`.
    pub fn simple(a: usize, b: usize, selectivity: f64) -> JoinEdge {
        JoinEdge { left: vec![a], right: vec![b], selectivity }
    }

    /// A hyperedge between the sets `left` and `right`.
    pub fn hyper(left: &[usize], right: &[usize], selectivity: f64) -> JoinEdge {
        JoinEdge { left: left.to_vec(), right: right.to_vec(), selectivity }
    }
}

/// A validated edge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Edge {
    /// One side.
    pub left: RelSet,
    /// The other side (disjoint from `left`).
    pub right: RelSet,
    /// In (0, 1].
    pub selectivity: f64,
    /// `ln(selectivity)`, for estimators that work in logarithms.
    pub ln_selectivity: f64,
}

impl Edge {
    /// Both sides.
    pub fn relations(&self) -> RelSet {
        self.left.union(self.right)
    }

    /// True when the edge joins `a` to `b` (one side in each).
    pub fn connects(&self, a: RelSet, b: RelSet) -> bool {
        (self.left.is_subset_of(a) && self.right.is_subset_of(b))
            || (self.left.is_subset_of(b) && self.right.is_subset_of(a))
    }
}

/// A validated query graph of at most 64 relations.
#[derive(Debug, Clone)]
pub struct QueryGraph {
    relations: Vec<Relation>,
    edges: Vec<Edge>,
    /// Simple neighbours of each relation.
    adjacent: Vec<RelSet>,
    /// Edges with more than one relation on a side.
    hyperedges: Vec<Edge>,
    /// `edges` stably sorted by selectivity, most selective first: the
    /// backoff estimator's order, sorted once here instead of per estimate
    /// (a fifth of JOB 29a's planning time went into that sort).
    by_selectivity: Vec<Edge>,
    /// `ln(rows)` of each relation (`-inf` for 0 rows).
    ln_rows: Vec<f64>,
}

impl QueryGraph {
    /// Validates and builds a graph.
    pub fn new(relations: Vec<Relation>, edges: Vec<JoinEdge>) -> Result<QueryGraph, JoinOrderError> {
        let count = relations.len();
        if count == 0 {
            return Err(JoinOrderError::NoRelations);
        }
        if count > RelSet::CAPACITY {
            return Err(JoinOrderError::TooManyRelations { count, max: RelSet::CAPACITY });
        }
        for (relation, r) in relations.iter().enumerate() {
            if !(r.rows.is_finite() && r.rows >= 0.0) {
                return Err(JoinOrderError::BadRows { relation, rows: r.rows });
            }
            if !r.scan.is_valid() {
                return Err(JoinOrderError::BadScanCost { relation, cost: format!("{:?}", r.scan) });
            }
        }
        let ln_rows = relations.iter().map(|r| r.rows.ln()).collect();
        let adjacent = vec![RelSet::EMPTY; count];
        let mut graph = QueryGraph {
            relations,
            edges: Vec::new(),
            adjacent,
            hyperedges: Vec::new(),
            by_selectivity: Vec::new(),
            ln_rows,
        };
        for (index, edge) in edges.iter().enumerate() {
            let edge = validate_edge(index, edge, count)?;
            if edge.left.len() == 1 && edge.right.len() == 1 {
                let (a, b) = (edge.left.min().unwrap_or(0), edge.right.min().unwrap_or(0));
                graph.adjacent[a] = graph.adjacent[a].union(edge.right);
                graph.adjacent[b] = graph.adjacent[b].union(edge.left);
            } else {
                graph.hyperedges.push(edge);
            }
            graph.edges.push(edge);
        }
        graph.by_selectivity = graph.edges.clone();
        graph.by_selectivity.sort_by(|a, b| a.selectivity.total_cmp(&b.selectivity));
        Ok(graph)
    }

    /// The relations, indexed as in the edges.
    pub fn relations(&self) -> &[Relation] {
        &self.relations
    }

    /// The validated edges, in the order given.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// Number of relations.
    pub fn len(&self) -> usize {
        self.relations.len()
    }

    /// Always false: a graph has at least one relation.
    pub fn is_empty(&self) -> bool {
        self.relations.is_empty()
    }

    /// The set of all relations.
    pub fn all(&self) -> RelSet {
        RelSet::first(self.relations.len())
    }

    /// `Σ ln(rows)` over the relations in `set`.
    pub fn ln_rows(&self, set: RelSet) -> f64 {
        set.iter().map(|i| self.ln_rows[i]).sum()
    }

    /// True when some edge of the component has more than one relation on a side.
    pub fn has_hyperedges(&self, component: RelSet) -> bool {
        self.hyperedges.iter().any(|e| e.relations().is_subset_of(component))
    }

    /// Edges whose both sides lie in `set`.
    pub fn edges_inside(&self, set: RelSet) -> impl Iterator<Item = &Edge> {
        self.edges.iter().filter(move |e| e.relations().is_subset_of(set))
    }

    /// [`Self::edges_inside`] most selective first (ties in the order given).
    pub fn edges_inside_by_selectivity(&self, set: RelSet) -> impl Iterator<Item = &Edge> {
        self.by_selectivity.iter().filter(move |e| e.relations().is_subset_of(set))
    }

    /// True when some edge joins `a` to `b` (disjoint sets).
    pub fn connects(&self, a: RelSet, b: RelSet) -> bool {
        self.connects_via(self.simple_neighbours(a), a, b)
    }

    /// [`Self::connects`] given `a`'s simple neighbours, for callers that
    /// test one `a` against many `b`.
    pub fn connects_via(&self, a_neighbours: RelSet, a: RelSet, b: RelSet) -> bool {
        a_neighbours.intersects(b) || self.hyperedges.iter().any(|e| e.connects(a, b))
    }

    /// DPhyp's neighbourhood N(S, X): relations outside `S ∪ X` reachable
    /// from `S` by one edge, a hyperedge's far side represented by its
    /// lowest member (Moerkotte & Neumann 2008, section 3.3).
    pub fn neighbourhood(&self, set: RelSet, excluded: RelSet) -> RelSet {
        let excluded = excluded.union(set);
        let mut n = self.simple_neighbours(set).minus(excluded);
        for e in &self.hyperedges {
            if e.left.is_subset_of(set) && !e.right.intersects(excluded) {
                n = n.union(e.right.lowest());
            } else if e.right.is_subset_of(set) && !e.left.intersects(excluded) {
                n = n.union(e.left.lowest());
            }
        }
        n
    }

    /// The connected components (an edge connects all relations it names),
    /// ordered by their lowest relation.
    pub fn components(&self) -> Vec<RelSet> {
        let mut left = self.all();
        let mut components = Vec::new();
        while let Some(start) = left.min() {
            let mut component = RelSet::single(start);
            loop {
                let mut grown = component.union(self.simple_neighbours(component));
                for e in &self.edges {
                    if e.relations().intersects(grown) {
                        grown = grown.union(e.relations());
                    }
                }
                if grown == component {
                    break;
                }
                component = grown;
            }
            left = left.minus(component);
            components.push(component);
        }
        components
    }

    /// Relations joined to a member of `set` by a simple edge (members of
    /// `set` included when they are joined to each other).
    pub fn simple_neighbours(&self, set: RelSet) -> RelSet {
        set.iter().fold(RelSet::EMPTY, |n, i| n.union(self.adjacent[i]))
    }
}

fn validate_edge(index: usize, edge: &JoinEdge, count: usize) -> Result<Edge, JoinOrderError> {
    let side = |members: &[usize]| -> Result<RelSet, JoinOrderError> {
        if members.is_empty() {
            return Err(JoinOrderError::EmptyEdgeSide { edge: index });
        }
        members.iter().try_fold(RelSet::EMPTY, |set, &relation| match RelSet::try_single(relation) {
            Some(one) if relation < count => Ok(set.union(one)),
            _ => Err(JoinOrderError::EdgeRelationOutOfRange { edge: index, relation, count }),
        })
    };
    let (left, right) = (side(&edge.left)?, side(&edge.right)?);
    if let Some(relation) = left.intersection(right).min() {
        return Err(JoinOrderError::EdgeSidesOverlap { edge: index, relation });
    }
    let selectivity = edge.selectivity;
    if !(selectivity > 0.0 && selectivity <= 1.0) {
        return Err(JoinOrderError::BadSelectivity { edge: index, selectivity });
    }
    Ok(Edge { left, right, selectivity, ln_selectivity: selectivity.ln() })
}
