//! Cardinality estimation of a set of joined relations.
//!
//! An estimator maps a *set* of relations to rows, never a tree: every join
//! order of the same relations gets the same estimate, so plans differ only
//! in cost (and the orderer memoises the estimate per set). Two estimators:
//!
//! - [`Independence`]: the textbook estimate, every predicate independent:
//!
//!   ```text
//!   card(S) = Π rows(r), r ∈ S  ×  Π sel(e), e an edge inside S
//!   ```
//!
//! - [`ExponentialBackoff`]: JOB's join graphs repeat one key many times
//!   (`t.id = mi.movie_id`, `mi.movie_id = mk.movie_id`, `t.id =
//!   mk.movie_id`, ...). Those predicates are correlated: once two of them
//!   hold the third is implied, but independence multiplies its selectivity
//!   in again and underestimates by orders of magnitude, the misestimate JOB
//!   is known for (Leis et al., VLDB 2015). The backoff keeps the edges of a
//!   spanning forest of S at full weight (taken most selective first, as
//!   Kruskal would) and damps the edges that close a cycle the way SQL
//!   Server's exponential backoff and DuckDB's damping do: the k-th such
//!   edge (k = 1, 2, ..., most selective first) counts as `sel^(1/2^k)`.
//!   [`BackoffScope::AllEdges`] damps every edge instead (SQL Server's rule
//!   as it is for conjuncts on one table).
//!
//! Both work in logarithms, so 64 relations of a billion rows do not
//! overflow. The orderer clamps every estimate to at least one row.

use super::graph::QueryGraph;
use super::relset::RelSet;

/// Estimates the rows of the inner join of a set of relations.
pub trait CardinalityEstimator {
    /// Rows of the join of all relations in `set`, every edge inside `set`
    /// applied. A function of the set only. The orderer clamps the result
    /// to `[1, f64::MAX]` (NaN counts as `f64::MAX`).
    fn estimate(&self, graph: &QueryGraph, set: RelSet) -> f64;
}

/// Independent predicates: the product of rows and selectivities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Independence;

impl CardinalityEstimator for Independence {
    fn estimate(&self, graph: &QueryGraph, set: RelSet) -> f64 {
        let sel: f64 = graph.edges_inside(set).map(|e| e.ln_selectivity).sum();
        (graph.ln_rows(set) + sel).exp()
    }
}

/// Which edges the backoff damps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackoffScope {
    /// Only edges that close a cycle (redundant given a spanning forest).
    #[default]
    CycleEdges,
    /// Every edge: the most selective at full weight, the next at ^1/2, ...
    AllEdges,
}

/// Damped estimate for correlated (redundant) join predicates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExponentialBackoff {
    /// Which edges are damped.
    pub scope: BackoffScope,
}

impl CardinalityEstimator for ExponentialBackoff {
    fn estimate(&self, graph: &QueryGraph, set: RelSet) -> f64 {
        let mut forest = Forest::new();
        // The k-th damped edge weighs 1/2^k: cycle edges start at k = 1 (the
        // tree edges had full weight), all-edges at k = 0 (SQL Server's rule).
        let mut k: u32 = match self.scope {
            BackoffScope::CycleEdges => 1,
            BackoffScope::AllEdges => 0,
        };
        let mut sel = 0.0;
        for edge in graph.edges_inside_by_selectivity(set) {
            let tree_edge = forest.merge(edge.relations());
            if tree_edge && self.scope == BackoffScope::CycleEdges {
                sel += edge.ln_selectivity;
            } else {
                // ln(s^(1/2^k)) = ln(s) / 2^k (weights below 2^-63 are kept at 2^-63).
                sel += edge.ln_selectivity / 2f64.powi(k.min(63) as i32);
                k += 1;
            }
        }
        (graph.ln_rows(set) + sel).exp()
    }
}

/// Union-find over relation indices, to tell spanning-forest edges from
/// cycle edges.
struct Forest {
    /// Parent of each relation index (`RelSet::CAPACITY` of them).
    parent: [u8; 64],
}

impl Forest {
    fn new() -> Forest {
        Forest { parent: std::array::from_fn(|i| i as u8) }
    }

    fn root(&mut self, i: usize) -> usize {
        let mut i = i as u8;
        while self.parent[usize::from(i)] != i {
            let up = self.parent[usize::from(self.parent[usize::from(i)])];
            self.parent[usize::from(i)] = up;
            i = up;
        }
        usize::from(i)
    }

    /// Joins the trees of all members; true when at least two were apart.
    fn merge(&mut self, members: RelSet) -> bool {
        let mut merged = false;
        let mut first = None;
        for i in members.iter() {
            let r = self.root(i);
            match first {
                None => first = Some(r),
                Some(f) if f != r => {
                    self.parent[r] = f as u8;
                    merged = true;
                }
                Some(_) => {}
            }
        }
        merged
    }
}
