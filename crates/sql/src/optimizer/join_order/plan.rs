//! The orderer's output: a binary join tree with rows and cost on every
//! node, and a report of how each connected component was ordered.

use std::fmt;

use super::cost::Cost;
use super::relset::RelSet;

/// A binary join tree. Leaves are base relations; a join's left child is
/// its probe side, its right child its build side.
#[derive(Debug, Clone, PartialEq)]
pub enum JoinTree {
    /// A base relation.
    Scan {
        /// Index in the query graph.
        relation: usize,
        /// The caller's id of the relation.
        id: u64,
        /// Estimated rows.
        rows: f64,
        /// Cost of the scan.
        cost: Cost,
    },
    /// `probe ⋈ build`.
    Join {
        /// Streamed input.
        probe: Box<JoinTree>,
        /// Hashed input.
        build: Box<JoinTree>,
        /// Every relation below.
        relations: RelSet,
        /// Estimated rows of the join.
        rows: f64,
        /// Cost of the whole subtree.
        cost: Cost,
        /// True when no predicate connects the children (a cross product).
        cross: bool,
    },
}

impl JoinTree {
    /// The relations below this node.
    pub fn relations(&self) -> RelSet {
        match self {
            JoinTree::Scan { relation, .. } => RelSet::single(*relation),
            JoinTree::Join { relations, .. } => *relations,
        }
    }

    /// Estimated rows.
    pub fn rows(&self) -> f64 {
        match self {
            JoinTree::Scan { rows, .. } | JoinTree::Join { rows, .. } => *rows,
        }
    }

    /// Cost of the subtree.
    pub fn cost(&self) -> Cost {
        match self {
            JoinTree::Scan { cost, .. } | JoinTree::Join { cost, .. } => *cost,
        }
    }

    /// The leaves' relation indices, left to right.
    pub fn leaves(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.visit(&mut |node| {
            if let JoinTree::Scan { relation, .. } = node {
                out.push(*relation);
            }
        });
        out
    }

    /// Calls `f` on every node, parents before children, probe before build.
    pub fn visit(&self, f: &mut impl FnMut(&JoinTree)) {
        f(self);
        if let JoinTree::Join { probe, build, .. } = self {
            probe.visit(f);
            build.visit(f);
        }
    }

    fn write_indented(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        match self {
            JoinTree::Scan { relation, id, rows, cost } => {
                writeln!(f, "{pad}scan #{relation} (id {id})  rows={}  {}", Rows(*rows), CostText(*cost))
            }
            JoinTree::Join { probe, build, relations, rows, cost, cross } => {
                let kind = if *cross { "cross join" } else { "hash join" };
                writeln!(f, "{pad}{kind} {relations}  rows={}  {}", Rows(*rows), CostText(*cost))?;
                probe.write_indented(f, depth + 1)?;
                build.write_indented(f, depth + 1)
            }
        }
    }
}

impl fmt::Display for JoinTree {
    /// An indented tree, probe side above build side:
    ///
    /// ```text
    /// hash join {0,1,2}  rows=500  host=2.1e-5s device=1.0e-3s
    ///   hash join {0,1}  rows=1000  host=...
    ///     scan #0 (id 10)  rows=1000  ...
    ///     scan #1 (id 11)  rows=10  ...
    ///   scan #2 (id 12)  rows=50  ...
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_indented(f, 0)
    }
}

/// Why the greedy algorithm ordered a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GreedyReason {
    /// The options asked for greedy only.
    Requested,
    /// DPhyp counted more csg-cmp pairs than the budget allows.
    OverBudget,
    /// The component is connected only through hyperedges whose sides are
    /// not connected themselves, so no tree without cross products exists.
    NoCrossProductFreeTree,
}

/// Which algorithm ordered a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// One relation: nothing to order.
    Single,
    /// DPhyp: the cheapest bushy tree without cross products.
    DpHyp,
    /// Greedy operator ordering (GOO).
    Greedy(GreedyReason),
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Algorithm::Single => f.write_str("single relation"),
            Algorithm::DpHyp => f.write_str("DPhyp"),
            Algorithm::Greedy(GreedyReason::Requested) => f.write_str("greedy (requested)"),
            Algorithm::Greedy(GreedyReason::OverBudget) => f.write_str("greedy (DP over budget)"),
            Algorithm::Greedy(GreedyReason::NoCrossProductFreeTree) => {
                f.write_str("greedy (no tree without cross products)")
            }
        }
    }
}

/// How one connected component of the query graph was ordered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ComponentReport {
    /// The component's relations.
    pub relations: RelSet,
    /// The algorithm whose tree was kept.
    pub algorithm: Algorithm,
    /// csg-cmp pairs DPhyp emitted or counted for the whole component (up
    /// to budget + 1 when it gave up; 0 when it did not run).
    pub dp_pairs: u64,
    /// After GOO: subtrees that DPhyp re-ordered (`refine.rs`).
    pub refined_subtrees: u32,
    /// After GOO: pairs DPhyp costed while refining.
    pub refine_pairs: u64,
}

/// The ordered joins of a query graph.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinPlan {
    /// The join tree over all relations.
    pub tree: JoinTree,
    /// One report per connected component, in the order they were joined
    /// (smallest estimated rows first).
    pub components: Vec<ComponentReport>,
    /// The budget DPhyp ran under.
    pub dp_pair_budget: u64,
    /// The cost model's objective of the whole tree.
    pub objective: f64,
}

impl JoinPlan {
    /// The csg-cmp pairs DPhyp emitted over all components.
    pub fn dp_pairs(&self) -> u64 {
        self.components.iter().map(|c| c.dp_pairs).sum()
    }
}

impl fmt::Display for JoinPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "join order: {} relations in {} component(s), objective {:.3e}, DP budget {} pairs",
            self.tree.relations().len(),
            self.components.len(),
            self.objective,
            self.dp_pair_budget
        )?;
        for c in &self.components {
            write!(f, "  component {}: {}, {} csg-cmp pairs", c.relations, c.algorithm, c.dp_pairs)?;
            if c.refined_subtrees > 0 {
                write!(f, "; DPhyp re-ordered {} subtree(s) ({} pairs)", c.refined_subtrees, c.refine_pairs)?;
            }
            writeln!(f)?;
        }
        write!(f, "{}", self.tree)
    }
}

/// Rows, whole below a billion and in scientific notation above.
struct Rows(f64);

impl fmt::Display for Rows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < 1e9 { write!(f, "{:.0}", self.0) } else { write!(f, "{:.3e}", self.0) }
    }
}

struct CostText(Cost);

impl fmt::Display for CostText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "host={:.3e}s device={:.3e}s", self.0.host, self.0.device)
    }
}
