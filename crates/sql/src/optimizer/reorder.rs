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
use std::sync::Arc;

use super::OptimizerContext;
use super::cardinality::{ColumnInfo, column_info, column_of, origin, selectivity};
use super::join_order::{
    ExponentialBackoff, HashJoinCostModel, JoinEdge, JoinTree, QueryGraph, RelSet, Relation, order_joins,
};
use super::util::{columns_used, conjoin, conjuncts, filter_with, has_subquery, mk_join, mk_select, remap};
use crate::catalog::TableDef;
use crate::error::{Result, SqlError};
use crate::plan::{BinaryOp, Expr, JoinAlgorithm, JoinKind, Node, Plan};

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
    let (mut edges, mut keys) = (Vec::new(), Vec::new());
    for (c, set) in conds {
        let (a, b) = sides(c, set, leaves);
        let sel = selectivity(c, &info) / implied_selectivity(c, set, leaves, &info);
        let sel = if sel.is_finite() { sel.clamp(1e-12, 1.0) } else { 1.0 };
        add_edge(&mut edges, &mut keys, JoinEdge { left: a, right: b, selectivity: sel }, key_pair(c, leaves));
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

/// Adds `edge` for one condition; `key`: its columns when it is an
/// equality of base columns. A second equality between the same two leaves
/// joins them on a composite key: it joins the first's edge (see
/// `composite_selectivity`) instead of adding one.
fn add_edge(edges: &mut Vec<JoinEdge>, keys: &mut Vec<Option<KeyPair>>, edge: JoinEdge, key: Option<KeyPair>) {
    let Some(key) = key else {
        edges.push(edge);
        keys.push(None);
        return;
    };
    let between =
        |e: &JoinEdge| (e.left == edge.left && e.right == edge.right) || (e.left == edge.right && e.right == edge.left);
    let found = edges.iter_mut().zip(keys.iter_mut()).find(|(e, k)| k.is_some() && between(e));
    match found {
        Some((e, Some(pair))) => {
            pair.merge(key, e.left == edge.left);
            e.selectivity =
                composite_selectivity(e.selectivity * edge.selectivity, pair, e.selectivity.min(edge.selectivity));
        }
        _ => {
            edges.push(edge);
            keys.push(Some(key));
        }
    }
}

/// The product of the selectivities of the restrictions an OR condition
/// implies on its leaves (`orfactor::implied_restriction`): those
/// restrictions were pushed into the leaves and filtered them already, so
/// the OR's own selectivity over the leaves' rows is its selectivity over
/// the tables' divided by theirs. TPC-H Q7's `(n1 = FRANCE AND n2 =
/// GERMANY) OR (n1 = GERMANY AND n2 = FRANCE)` keeps half of the 2 × 2
/// nation pairs, not 2/625 of them.
fn implied_selectivity(c: &Expr, set: &BTreeSet<usize>, leaves: &[Leaf], info: &dyn Fn(usize) -> ColumnInfo) -> f64 {
    set.iter()
        .filter_map(|&i| {
            let leaf = &leaves[i];
            super::orfactor::implied_restriction(c, &(leaf.start..leaf.start + leaf.width))
        })
        .map(|r| selectivity(&r, info))
        .filter(|s| s.is_finite() && *s > 0.0)
        .product::<f64>()
        .max(1e-12)
}

/// The base columns an equality `x = y` between two leaves compares, per
/// side (the side of `x` first), with the tables' rows.
struct KeyPair {
    sides: [Vec<(Arc<TableDef>, usize)>; 2],
    rows: [f64; 2],
}

impl KeyPair {
    /// Adds `other`'s columns; `aligned`: its first side is this one's first.
    fn merge(&mut self, other: KeyPair, aligned: bool) {
        let [x, y] = other.sides;
        let (x, y) = if aligned { (x, y) } else { (y, x) };
        self.sides[0].extend(x);
        self.sides[1].extend(y);
    }

    /// Rows of a side whose columns cover a unique key of its table.
    fn unique_rows(&self) -> Option<f64> {
        (0..2).filter(|&i| covers_unique_key(&self.sides[i])).map(|i| self.rows[i]).reduce(f64::min)
    }
}

fn key_pair(c: &Expr, leaves: &[Leaf]) -> Option<KeyPair> {
    let Expr::Binary { op: BinaryOp::Eq, left, right, .. } = c else { return None };
    let base = |e: &Expr| -> Option<((Arc<TableDef>, usize), f64)> {
        let col = column_of(e)?;
        let leaf = leaves.iter().find(|l| col >= l.start && col < l.start + l.width)?;
        let plan = leaf.plan.as_ref()?;
        let (table, c) = origin(plan, col - leaf.start)?;
        let rows = table.stats.as_ref().map_or(f64::NAN, |s| s.rows);
        Some(((table, c), rows))
    };
    let ((l, lr), (r, rr)) = (base(left)?, base(right)?);
    Some(KeyPair { sides: [vec![l], vec![r]], rows: [lr, rr] })
}

/// True when `cols`, all of one table, include every column of its primary
/// key, a UNIQUE constraint or a unique index.
fn covers_unique_key(cols: &[(Arc<TableDef>, usize)]) -> bool {
    let Some((table, _)) = cols.first() else { return false };
    if cols.iter().any(|(t, _)| t.id != table.id) {
        return false;
    }
    let has = |key: &[usize]| !key.is_empty() && key.iter().all(|k| cols.iter().any(|(_, c)| c == k));
    table.primary_key.as_deref().is_some_and(has)
        || table.unique.iter().any(|u| has(u))
        || table.indexes.iter().any(|i| i.unique && has(&i.columns))
}

/// Selectivity of a join on several equalities between the same two
/// leaves. Independence multiplies them (`product`), and the orderer's
/// backoff would damp the second as a cycle: both treat `(ps_partkey,
/// ps_suppkey) = (l_partkey, l_suppkey)` as far rarer than it is (TPC-H
/// Q9: 14,384 rows estimated, 319,404 joined). When one side's columns
/// cover a unique key of its table, each row of the other side meets at
/// most one partner and, along a foreign key, about one: the selectivity
/// is `1 / rows` of the unique side, as a single-column key's is, but never
/// above the most selective equality alone (`cap`).
fn composite_selectivity(product: f64, pair: &KeyPair, cap: f64) -> f64 {
    match pair.unique_rows().filter(|r| r.is_finite() && *r >= 1.0) {
        Some(rows) => product.max(1.0 / rows).min(cap),
        None => product,
    }
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
