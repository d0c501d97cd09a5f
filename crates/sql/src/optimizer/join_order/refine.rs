//! Polishing a greedy tree: DPhyp on the largest subtrees it can afford.
//!
//! When a component is over the DP budget, GOO orders it, and then this
//! pass walks GOO's tree from the root down. At each join it asks whether
//! the join's relations fit what is left of a second budget (the same size
//! as the first): if they do, DPhyp orders exactly those relations and its
//! tree replaces GOO's subtree when it is cheaper (it always is, unless
//! GOO's subtree holds a cross product); if not, the pass descends into
//! both children and re-costs the join above them.
//!
//! ```text
//!    GOO:  ⋈ (20 rels, over budget)          after:  ⋈ (re-costed)
//!         ╱ ╲                                        ╱ ╲
//!    ⋈ (12)  ⋈ (8)      12: over, descend      ⋈ (re-costed)  [DP 8]
//!   ╱ ╲                 8: fits -> DPhyp       ╱ ╲
//!  [9] [3]              9, 3: fit -> DPhyp  [DP 9] [DP 3]
//! ```
//!
//! The result is never worse than GOO's (a DP tree only replaces a subtree
//! it beats, and a join's cost never falls when an input gets cheaper under
//! the sum objective) and it is exact wherever the budget reached. The
//! pairs the DP costs are charged to the second budget; counting pairs
//! (no costing) is charged at one eighth of a pair, roughly its relative
//! work, so the whole pass stays within about one DP budget of time.

use super::context::Context;
use super::dphyp::{self, DpOutcome};
use super::plan::JoinTree;
use super::relset::RelSet;

/// How many counted pairs cost as much as one costed pair.
const COUNTED_PER_COSTED: u64 = 8;

/// A refined tree and what the refinement did.
pub(super) struct Refined {
    pub tree: JoinTree,
    /// Subtrees replaced by DPhyp's tree.
    pub subtrees: u32,
    /// Pairs DPhyp costed (including runs that gave up).
    pub pairs: u64,
}

/// Refines `tree` with at most `budget` pairs of DP work.
pub(super) fn refine(ctx: &mut Context<'_>, tree: JoinTree, budget: u64) -> Refined {
    let mut refiner = Refiner { left: budget, subtrees: 0, pairs: 0 };
    let tree = refiner.node(ctx, tree);
    Refined { tree, subtrees: refiner.subtrees, pairs: refiner.pairs }
}

struct Refiner {
    left: u64,
    subtrees: u32,
    pairs: u64,
}

impl Refiner {
    fn node(&mut self, ctx: &mut Context<'_>, tree: JoinTree) -> JoinTree {
        let objective = ctx.model.objective(tree.cost());
        let JoinTree::Join { probe, build, relations, cross, .. } = tree else {
            return tree;
        };
        if !cross
            && let Some(better) = self.optimal(ctx, relations)
            && ctx.model.objective(better.cost()) <= objective
        {
            self.subtrees += 1;
            return better;
        }
        let probe = self.node(ctx, *probe);
        let build = self.node(ctx, *build);
        ctx.join_trees(probe, build, cross)
    }

    /// DPhyp's tree for `set` if it fits in what is left of the budget.
    fn optimal(&mut self, ctx: &mut Context<'_>, set: RelSet) -> Option<JoinTree> {
        if self.left == 0 {
            return None;
        }
        if !ctx.graph.has_hyperedges(set) {
            let counted = dphyp::count_pairs(ctx.graph, set, self.left);
            let fits = counted <= self.left;
            self.left = self.left.saturating_sub(counted.div_ceil(COUNTED_PER_COSTED));
            if !fits || self.left == 0 {
                return None;
            }
        }
        let (tree, pairs) = match dphyp::dphyp(ctx, set, self.left) {
            DpOutcome::Plan(tree, pairs) => (Some(tree), pairs),
            DpOutcome::OverBudget(pairs) | DpOutcome::NoPlan(pairs) => (None, pairs),
        };
        self.left = self.left.saturating_sub(pairs);
        self.pairs += pairs;
        tree
    }
}
