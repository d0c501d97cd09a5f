//! Join ordering: from a query graph to a binary join tree with estimated
//! rows and separate host and device costs on every node.
//!
//! ```text
//!  QueryGraph ──► components ──► per component:                ──► cross-join the
//!  (relations,                    1 relation: a scan               components,
//!   (hyper)edges)                 DPhyp, stopped at the budget     smallest first
//!                                   └─ over budget / no plan: GOO
//!                 every set S gets rows = estimator(S) (memoised), every
//!                 node Cost { host, device } from the CostModel
//! ```
//!
//! - **Exact where affordable.** DPhyp (`dphyp.rs`) finds the
//!   cheapest bushy tree without cross products and handles hyperedges. Its
//!   work is the number of csg-cmp pairs it emits; the choice between it
//!   and the greedy fallback is a budget on that count
//!   ([`JoinOrderOptions::dp_pair_budget`], default
//!   [`DEFAULT_DP_PAIR_BUDGET`]), not a relation count: JOB 29a (17
//!   relations, 222,882 pairs) stays exact, while a 12-relation clique
//!   (261,625 pairs) falls back. Without hyperedges the pairs are counted
//!   first (a few ns each, no costing), so an oversized DP never starts;
//!   with hyperedges the DP itself stops at the budget.
//! - **Greedy beyond, then exact where it can.** GOO (`greedy.rs`) joins
//!   the pair with the smallest result first: O(n³) estimates, bushy, no
//!   cross products. `refine.rs` then re-orders the largest subtrees of
//!   GOO's tree that fit a second budget with DPhyp.
//! - **Cardinality by set.** [`CardinalityEstimator`] maps a set of relations
//!   to rows, so every order of the same relations agrees on them; the
//!   independence estimate and a damped one (correlated JOB predicates) are
//!   built in (`cardinality.rs`).
//! - **Cost in two parts.** [`CostModel`] costs a join from its inputs'
//!   rows and costs; [`Cost`] keeps host and device seconds apart for the
//!   hybridNDP split, and [`CostModel::objective`] (default: their sum) is
//!   what plans are compared by.
//! - **Disconnected graphs** (a query with a cross product): each component
//!   is ordered alone, then the components are cross-joined in ascending
//!   order of their rows.
//!
//! All edges are inner joins. Outer, semi and anti joins will constrain the
//! search: a non-inner join's edge becomes a hyperedge whose sides are the
//! join's syntactic eligibility sets (the relations its predicate references
//! plus those its operator must keep together, as in Moerkotte, Fender and
//! Eich's conflict detectors, "On the correct and complete enumeration of
//! the core search space", SIGMOD 2013), and `emit_pair` will refuse a pair
//! that violates the join's ordering constraints and carry the join kind
//! into the tree. The cardinality of such a set then depends on the join
//! kinds, which the estimator interface will receive with the set.

mod cardinality;
mod context;
mod cost;
mod dphyp;
mod error;
mod graph;
mod greedy;
mod plan;
mod refine;
mod relset;

pub use cardinality::{BackoffScope, CardinalityEstimator, ExponentialBackoff, Independence};
pub use cost::{Cost, CostModel, HashJoinCostModel, JoinInput, JoinStep};
pub use error::JoinOrderError;
pub use graph::{Edge, JoinEdge, QueryGraph, Relation};
pub use plan::{Algorithm, ComponentReport, GreedyReason, JoinPlan, JoinTree};
pub use relset::{Members, RelSet, Subsets};

use context::Context;
use dphyp::DpOutcome;

/// The default budget of csg-cmp pairs for DPhyp per component.
///
/// Costing a pair takes 40-70 ns on this 2-core machine (more for graphs
/// with many connected subsets, whose table outgrows the caches; figures in
/// `docs/optimizer.md`, from `examples/join_order_time.rs`), so 250,000
/// pairs bound the DP to about 10-20 ms (and a component over budget to
/// the count, GOO, and at most one more budget refining GOO's tree), within
/// the 50 ms planning target. All 113 JOB queries fit (the largest, 29a-c,
/// have 222,882); chains and cycles of 64 relations fit; cliques of 12 or
/// more and stars of 17 or more do not. `docs/optimizer.md` must agree.
pub const DEFAULT_DP_PAIR_BUDGET: u64 = 250_000;

/// How the orderer chooses its algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinOrderOptions {
    /// Most csg-cmp pairs DPhyp may emit for one component before it gives
    /// up and GOO orders the component instead. At least 1.
    pub dp_pair_budget: u64,
    /// Skip DPhyp and order every component greedily.
    pub greedy_only: bool,
}

impl Default for JoinOrderOptions {
    fn default() -> Self {
        JoinOrderOptions { dp_pair_budget: DEFAULT_DP_PAIR_BUDGET, greedy_only: false }
    }
}

/// Orders the joins of `graph`.
///
/// Errors only on unusable options; the graph was validated when built.
pub fn order_joins(
    graph: &QueryGraph,
    estimator: &dyn CardinalityEstimator,
    model: &dyn CostModel,
    options: &JoinOrderOptions,
) -> Result<JoinPlan, JoinOrderError> {
    if options.dp_pair_budget == 0 {
        return Err(JoinOrderError::ZeroBudget);
    }
    let mut ctx = Context::new(graph, estimator, model);
    let mut ordered: Vec<(JoinTree, ComponentReport)> =
        graph.components().into_iter().map(|component| order_component(&mut ctx, component, options)).collect();
    // Smallest first; ties by lowest relation so the result is deterministic.
    ordered.sort_by(|(a, _), (b, _)| a.rows().total_cmp(&b.rows()).then(a.relations().min().cmp(&b.relations().min())));
    let mut components = Vec::with_capacity(ordered.len());
    let mut tree: Option<JoinTree> = None;
    for (next, report) in ordered {
        components.push(report);
        tree = Some(match tree {
            None => next,
            Some(acc) => ctx.join_trees(acc, next, true),
        });
    }
    let tree = tree.ok_or(JoinOrderError::NoRelations)?;
    let objective = model.objective(tree.cost());
    Ok(JoinPlan { tree, components, dp_pair_budget: options.dp_pair_budget, objective })
}

fn order_component(
    ctx: &mut Context<'_>,
    component: RelSet,
    options: &JoinOrderOptions,
) -> (JoinTree, ComponentReport) {
    let report = |algorithm, dp_pairs| ComponentReport {
        relations: component,
        algorithm,
        dp_pairs,
        refined_subtrees: 0,
        refine_pairs: 0,
    };
    if component.len() == 1 {
        let index = component.min().unwrap_or(0);
        return (ctx.scan(index), report(Algorithm::Single, 0));
    }
    if options.greedy_only {
        return (greedy::goo(ctx, component), report(Algorithm::Greedy(GreedyReason::Requested), 0));
    }
    let budget = options.dp_pair_budget;
    let (reason, pairs) = 'dp: {
        if !ctx.graph.has_hyperedges(component) {
            // Count first (cheap) so an oversized DP never starts.
            let pairs = dphyp::count_pairs(ctx.graph, component, budget);
            if pairs > budget {
                break 'dp (GreedyReason::OverBudget, pairs);
            }
        }
        match dphyp::dphyp(ctx, component, budget) {
            DpOutcome::Plan(tree, pairs) => return (tree, report(Algorithm::DpHyp, pairs)),
            DpOutcome::OverBudget(pairs) => (GreedyReason::OverBudget, pairs),
            DpOutcome::NoPlan(pairs) => (GreedyReason::NoCrossProductFreeTree, pairs),
        }
    };
    let greedy = greedy::goo(ctx, component);
    let refined = refine::refine(ctx, greedy, budget);
    let mut report = report(Algorithm::Greedy(reason), pairs);
    report.refined_subtrees = refined.subtrees;
    report.refine_pairs = refined.pairs;
    (refined.tree, report)
}
