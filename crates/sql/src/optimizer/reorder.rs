//! Join ordering of a plan: a maximal tree of inner joins becomes a
//! [`QueryGraph`], the join orderer (`join_order/`, DPhyp under a budget,
//! GOO beyond) orders it, and the tree is rebuilt with every condition at
//! the lowest join that holds all the relations it reads.
//!
//! ```text
//!  Join(on: a.x = c.z)                relations: 0 = A, 1 = B, 2 = C (finished,
//!   ├ Join(on: a.y = b.y)               estimated leaves); edges: {0}-{2}, {0}-{1}
//!   │  ├ A   B                      ─► order_joins ─► Join(C, Join(A, B)) + a
//!   └ C                                Project back to A, B, C's column order
//! ```
//!
//! Columns of the maximal tree are numbered globally (leaves left to right,
//! which is the tree's output order); each condition is rewritten from
//! global positions to the positions of the join that holds it. Outer,
//! semi, anti, mark and single joins are leaves: they stay where they are
//! and only the inner joins inside them are ordered (by the recursive
//! physical pass). A condition over one leaf becomes a Filter on it; one
//! holding a subquery stays above the rebuilt tree. More than
//! [`RelSet::CAPACITY`] leaves keep their written order.

use std::collections::BTreeSet;

use super::OptimizerContext;
use super::cardinality::{ColumnInfo, column_info, selectivity};
use super::join_order::{
    ExponentialBackoff, HashJoinCostModel, JoinEdge, JoinTree, QueryGraph, RelSet, Relation, order_joins,
};
use super::util::{columns_used, conjoin, conjuncts, filter_with, has_subquery, mk_join, mk_select, remap};
use crate::error::{Result, SqlError};
use crate::plan::{Expr, JoinAlgorithm, JoinKind, Node, Plan};

/// True when `plan` is an inner join the physical pass has not planned.
pub fn is_unplanned_inner(plan: &Plan) -> bool {
    matches!(&plan.node, Node::Join { kind: JoinKind::Inner, algorithm: JoinAlgorithm::Unchosen, .. })
}

struct Leaf {
    plan: Option<Plan>,
    /// First global column.
    start: usize,
    width: usize,
}

/// Orders the maximal inner-join tree rooted at `plan`. `finish` plans a
/// leaf (recursively). The result's joins are unplanned inner joins (with
/// the orderer's rows as their estimate) over finished leaves, possibly
/// under a Project restoring the column order and a Filter.
pub fn reorder(plan: Plan, ctx: &OptimizerContext<'_>, finish: &mut dyn FnMut(Plan) -> Result<Plan>) -> Result<Plan> {
    let schema = plan.schema.clone();
    let mut leaves = Vec::new();
    let mut conds = Vec::new();
    collect(plan, 0, &mut leaves, &mut conds);
    let leaf_of = |c: usize, leaves: &[Leaf]| leaves.iter().position(|l| c >= l.start && c < l.start + l.width);
    // Conditions over one leaf filter it; those with subqueries or over no
    // leaf stay on top.
    let mut top = Vec::new();
    let mut join_conds: Vec<(Expr, BTreeSet<usize>)> = Vec::new();
    for c in conds {
        let set: BTreeSet<usize> = columns_used(&c).iter().filter_map(|&col| leaf_of(col, &leaves)).collect();
        if has_subquery(&c) || set.is_empty() {
            top.push(c);
        } else if set.len() == 1 {
            let i = *set.iter().next().unwrap_or(&0);
            let start = leaves[i].start;
            let mut local = c;
            remap(&mut local, &|col| col - start);
            let p = leaves[i].plan.take().ok_or_else(|| SqlError::internal("join leaf taken twice"))?;
            leaves[i].plan = Some(filter_with(p, vec![local]));
        } else {
            join_conds.push((c, set));
        }
    }
    for leaf in leaves.iter_mut() {
        let p = leaf.plan.take().ok_or_else(|| SqlError::internal("join leaf missing"))?;
        leaf.plan = Some(finish(p)?);
    }
    let tree = order(&leaves, &join_conds, ctx)?;
    let mut placed = vec![false; join_conds.len()];
    let (joined, order) = rebuild(&tree, &mut leaves, &join_conds, &mut placed)?;
    // Back to the written column order.
    let mut local_start = vec![0; leaves.len()];
    let mut at = 0;
    for &i in &order {
        local_start[i] = at;
        at += leaves[i].width;
    }
    let positions: Vec<usize> =
        (0..schema.len()).map(|c| leaf_of(c, &leaves).map_or(c, |i| local_start[i] + c - leaves[i].start)).collect();
    let restored = if positions.iter().enumerate().all(|(i, &p)| i == p) {
        joined
    } else {
        let mut p = mk_select(joined, &positions);
        p.schema = schema;
        p
    };
    Ok(filter_with(restored, top))
}

fn collect(plan: Plan, offset: usize, leaves: &mut Vec<Leaf>, conds: &mut Vec<Expr>) {
    if !is_unplanned_inner(&plan) {
        leaves.push(Leaf { width: plan.schema.len(), plan: Some(plan), start: offset });
        return;
    }
    let Node::Join { left, right, on, .. } = plan.node else { return };
    let lw = left.schema.len();
    for mut c in on.map(conjuncts).unwrap_or_default() {
        remap(&mut c, &|col| col + offset);
        conds.push(c);
    }
    collect(*left, offset, leaves, conds);
    collect(*right, offset + lw, leaves, conds);
}

/// The join orderer's tree for the leaves (their written left-deep order
/// beyond the orderer's capacity).
fn order(leaves: &[Leaf], conds: &[(Expr, BTreeSet<usize>)], ctx: &OptimizerContext<'_>) -> Result<JoinTree> {
    let plans: Vec<&Plan> = leaves.iter().filter_map(|l| l.plan.as_ref()).collect();
    if leaves.len() > RelSet::CAPACITY {
        return Ok(written_order(&plans));
    }
    let info = |c: usize| -> ColumnInfo {
        match leaves.iter().find(|l| c >= l.start && c < l.start + l.width) {
            Some(l) => l.plan.as_ref().map(|p| column_info(p, c - l.start, ctx)).unwrap_or_default(),
            None => ColumnInfo::default(),
        }
    };
    let relations: Vec<Relation> = plans
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // The graph rejects NaN and infinities; an estimate that broke
            // must not fail the query.
            let rows = if p.est.rows.is_finite() { p.est.rows.max(0.0) } else { f64::MAX.sqrt() };
            let scan = if p.est.cost.is_valid() { p.est.cost } else { crate::plan::Cost::ZERO };
            Relation { id: i as u64, rows, scan }
        })
        .collect();
    let mut edges = Vec::new();
    for (c, set) in conds {
        let (a, b) = sides(c, set, leaves);
        let sel = selectivity(c, &info);
        let sel = if sel.is_finite() { sel.clamp(1e-12, 1.0) } else { 1.0 };
        edges.push(JoinEdge { left: a, right: b, selectivity: sel });
    }
    let graph = QueryGraph::new(relations, edges).map_err(|e| SqlError::internal(format!("join graph: {e}")))?;
    let p = ctx.cost;
    let model = HashJoinCostModel {
        build_row_s: p.hash_build_row_s,
        probe_row_s: p.hash_probe_row_s,
        output_row_s: p.output_row_s,
    };
    let planned = order_joins(&graph, &ExponentialBackoff::default(), &model, &ctx.join_order)
        .map_err(|e| SqlError::internal(format!("join ordering: {e}")))?;
    Ok(planned.tree)
}

/// The two sides of a condition's hyperedge: the leaves of a comparison's
/// operands when they are disjoint, else the lowest leaf against the rest.
fn sides(c: &Expr, set: &BTreeSet<usize>, leaves: &[Leaf]) -> (Vec<usize>, Vec<usize>) {
    let leaves_of = |e: &Expr| -> BTreeSet<usize> {
        columns_used(e)
            .iter()
            .filter_map(|&col| leaves.iter().position(|l| col >= l.start && col < l.start + l.width))
            .collect()
    };
    if let Expr::Binary { left, right, .. } = c {
        let (a, b) = (leaves_of(left), leaves_of(right));
        if !a.is_empty() && !b.is_empty() && a.is_disjoint(&b) && a.len() + b.len() == set.len() {
            return (a.into_iter().collect(), b.into_iter().collect());
        }
    }
    let mut all: Vec<usize> = set.iter().copied().collect();
    let first = all.remove(0);
    (vec![first], all)
}

fn written_order(plans: &[&Plan]) -> JoinTree {
    let scan = |i: usize, p: &Plan| JoinTree::Scan { relation: i, id: i as u64, rows: p.est.rows, cost: p.est.cost };
    let mut tree = scan(0, plans[0]);
    for (i, p) in plans.iter().enumerate().skip(1) {
        let rows = tree.rows() * p.est.rows.max(1.0);
        let relations = RelSet::EMPTY;
        tree = JoinTree::Join {
            probe: Box::new(tree),
            build: Box::new(scan(i, p)),
            relations,
            rows,
            cost: crate::plan::Cost::ZERO,
            cross: false,
        };
    }
    tree
}

/// The plan of `tree` and its leaves in output order; places each
/// condition at the lowest join holding its leaves.
fn rebuild(
    tree: &JoinTree,
    leaves: &mut [Leaf],
    conds: &[(Expr, BTreeSet<usize>)],
    placed: &mut [bool],
) -> Result<(Plan, Vec<usize>)> {
    match tree {
        JoinTree::Scan { relation, .. } => {
            let p = leaves
                .get_mut(*relation)
                .and_then(|l| l.plan.take())
                .ok_or_else(|| SqlError::internal("join orderer returned a leaf twice"))?;
            Ok((p, vec![*relation]))
        }
        JoinTree::Join { probe, build, rows, .. } => {
            let (lp, mut lo) = rebuild(probe, leaves, conds, placed)?;
            let (rp, ro) = rebuild(build, leaves, conds, placed)?;
            lo.extend(ro);
            let here: BTreeSet<usize> = lo.iter().copied().collect();
            let mut local_start = vec![usize::MAX; leaves.len()];
            let mut at = 0;
            for &i in &lo {
                local_start[i] = at;
                at += leaves[i].width;
            }
            let mut on = Vec::new();
            for (k, (c, set)) in conds.iter().enumerate() {
                if !placed[k] && set.is_subset(&here) {
                    placed[k] = true;
                    let mut local = c.clone();
                    remap(&mut local, &|col| {
                        let i = leaves.iter().position(|l| col >= l.start && col < l.start + l.width).unwrap_or(0);
                        local_start[i] + col - leaves[i].start
                    });
                    on.push(local);
                }
            }
            let mut joined = mk_join(lp, rp, JoinKind::Inner, conjoin(on));
            joined.est.rows = *rows;
            Ok((joined, lo))
        }
    }
}
