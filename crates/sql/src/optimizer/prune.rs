//! Projection pushdown: each node keeps only the columns something above
//! it reads, so scans read (and NDP calls ship) only those columns, and
//! Projects that only pass columns through disappear.
//!
//! [`prune`] walks top-down with the set of output columns the parent
//! needs and returns the pruned plan with a map from old output positions
//! to new ones; the parent renumbers its expressions through the map. The
//! root needs all its columns, so the plan's schema is unchanged. Columns
//! a node reads through a correlated subquery (`Outer` references) count
//! as read, and are renumbered with the rest.
//!
//! ```text
//!  Project[a+c]                       Project[#0 + #1]
//!   └ Filter(b > 1)         ──►        └ Filter(#1 > 1)     (b kept for the filter,
//!      └ Scan t [a,b,c,d]                 └ Scan t [a,b,c]   d never read)
//! ```

use std::collections::BTreeSet;

use super::util::{columns_used, is_identity, remap};
use crate::plan::{Expr, Field, JoinKind, Node, Plan};

type Map = Vec<Option<usize>>;

/// Prunes columns no one reads; the root keeps all of its own.
pub fn prune_plan(plan: Plan) -> Plan {
    let all: BTreeSet<usize> = (0..plan.schema.len()).collect();
    prune(plan, &all).0
}

fn identity(n: usize) -> Map {
    (0..n).map(Some).collect()
}

fn apply(e: &mut Expr, map: &Map) {
    remap(e, &|i| map.get(i).copied().flatten().unwrap_or(i));
}

fn used_by(exprs: &[&Expr]) -> BTreeSet<usize> {
    exprs.iter().flat_map(|e| columns_used(e)).collect()
}

/// Keeps `keep` (ascending positions) of a node's output; the map from old
/// positions.
fn keep_map(width: usize, keep: &[usize]) -> Map {
    let mut map = vec![None; width];
    for (new, &old) in keep.iter().enumerate() {
        map[old] = Some(new);
    }
    map
}

fn prune(mut plan: Plan, required: &BTreeSet<usize>) -> (Plan, Map) {
    let width = plan.schema.len();
    match plan.node {
        node @ Node::Scan { .. } => prune_scan(Plan { node, ..plan }, required),
        Node::Filter { input, mut predicate } => {
            let mut need = required.clone();
            need.extend(columns_used(&predicate));
            let (input, map) = prune(*input, &need);
            apply(&mut predicate, &map);
            let schema = input.schema.clone();
            (Plan { node: Node::Filter { input: Box::new(input), predicate }, schema, est: plan.est }, map)
        }
        Node::Project { input, exprs } => prune_project(*input, exprs, required, plan.schema, plan.est),
        node @ Node::Join { .. } => prune_join_node(Plan { node, ..plan }, required),
        node @ Node::Aggregate { .. } => prune_aggregate(Plan { node, ..plan }, required),
        Node::Sort { input, mut keys } => {
            let mut need = required.clone();
            need.extend(keys.iter().flat_map(|k| columns_used(&k.expr)));
            let (input, map) = prune(*input, &need);
            keys.iter_mut().for_each(|k| apply(&mut k.expr, &map));
            let schema = input.schema.clone();
            (Plan { node: Node::Sort { input: Box::new(input), keys }, schema, est: plan.est }, map)
        }
        Node::Limit { input, limit, offset } => {
            let (input, map) = prune(*input, required);
            let schema = input.schema.clone();
            (Plan { node: Node::Limit { input: Box::new(input), limit, offset }, schema, est: plan.est }, map)
        }
        Node::Distinct { input } => {
            let all: BTreeSet<usize> = (0..width).collect();
            let (input, map) = prune(*input, &all);
            let schema = input.schema.clone();
            (Plan { node: Node::Distinct { input: Box::new(input) }, schema, est: plan.est }, map)
        }
        Node::SetOp { op, all, left, right } => {
            let every: BTreeSet<usize> = (0..width).collect();
            let (left, _) = prune(*left, &every);
            let (right, _) = prune(*right, &every);
            let node = Node::SetOp { op, all, left: Box::new(left), right: Box::new(right) };
            (Plan { node, schema: plan.schema, est: plan.est }, identity(width))
        }
        node @ (Node::Values { .. } | Node::Series { .. }) => {
            plan.node = node;
            (plan, identity(width))
        }
    }
}

fn prune_project(
    input: Plan,
    exprs: Vec<Expr>,
    required: &BTreeSet<usize>,
    schema: crate::plan::Schema,
    est: crate::plan::Estimate,
) -> (Plan, Map) {
    let width = exprs.len();
    let mut keep: Vec<usize> = required.iter().copied().filter(|&c| c < width).collect();
    if keep.is_empty() && width > 0 {
        keep.push(0);
    }
    let mut kept: Vec<Expr> = keep.iter().map(|&i| exprs[i].clone()).collect();
    let need = used_by(&kept.iter().collect::<Vec<_>>());
    let (input, imap) = prune(input, &need);
    kept.iter_mut().for_each(|e| apply(e, &imap));
    let fields: Vec<Field> = keep.iter().map(|&c| schema[c].clone()).collect();
    let map = keep_map(width, &keep);
    // A Project that passes its input through unchanged (same fields) goes.
    if is_identity(&kept, input.schema.len()) && input.schema.as_slice() == fields.as_slice() {
        return (input, map);
    }
    let node = Node::Project { input: Box::new(input), exprs: kept };
    (Plan { node, schema: std::sync::Arc::new(fields), est }, map)
}

fn prune_join(
    left: Plan,
    right: Plan,
    kind: JoinKind,
    mut on: Option<Expr>,
    required: &BTreeSet<usize>,
    est: crate::plan::Estimate,
) -> (Plan, Map) {
    let l = left.schema.len();
    let r = right.schema.len();
    let mut need: BTreeSet<usize> = required.clone();
    need.extend(on.iter().flat_map(columns_used));
    let need_left: BTreeSet<usize> = need.iter().copied().filter(|&c| c < l).collect();
    let need_right: BTreeSet<usize> = need.iter().copied().filter(|&c| c >= l && c < l + r).map(|c| c - l).collect();
    let (left, lmap) = prune(left, &need_left);
    let (right, rmap) = prune(right, &need_right);
    let nl = left.schema.len();
    let mut inner: Map = lmap.clone();
    inner.extend(rmap.iter().map(|m| m.map(|c| c + nl)));
    if let Some(on) = on.as_mut() {
        apply(on, &inner);
    }
    let out_map: Map = match kind {
        JoinKind::Semi | JoinKind::Anti => lmap,
        JoinKind::Mark => {
            let mut m = lmap;
            m.push(Some(nl));
            m
        }
        _ => inner,
    };
    let joined = super::util::mk_join(left, right, kind, on);
    (Plan { est, ..joined }, out_map)
}

fn prune_scan(plan: Plan, required: &BTreeSet<usize>) -> (Plan, Map) {
    let width = plan.schema.len();
    match plan.node {
        Node::Scan { table, mut columns, mut filter, emit_vid, access } => {
            let mut need: BTreeSet<usize> = required.clone();
            need.extend(filter.iter().flat_map(columns_used));
            let n = columns.len();
            let mut keep: Vec<usize> = need.iter().copied().filter(|&c| c < n).collect();
            if keep.is_empty() && n > 0 {
                keep.push(0);
            }
            if emit_vid {
                keep.push(n);
            }
            let map = keep_map(width, &keep);
            columns = keep.iter().filter(|&&c| c < n).map(|&c| columns[c]).collect();
            if let Some(f) = filter.as_mut() {
                apply(f, &map);
            }
            let schema = std::sync::Arc::new(keep.iter().map(|&c| plan.schema[c].clone()).collect::<Vec<Field>>());
            (Plan { node: Node::Scan { table, columns, filter, emit_vid, access }, schema, est: plan.est }, map)
        }
        node => (Plan { node, ..plan }, identity(width)),
    }
}

fn prune_aggregate(plan: Plan, required: &BTreeSet<usize>) -> (Plan, Map) {
    let width = plan.schema.len();
    match plan.node {
        Node::Aggregate { input, group_by, aggregates } => {
            let g = group_by.len();
            let mut keep: Vec<usize> = (0..g).collect();
            keep.extend(required.iter().copied().filter(|&c| c >= g));
            if keep.is_empty() && !aggregates.is_empty() {
                keep.push(0);
            }
            let mut aggregates: Vec<_> =
                aggregates.into_iter().enumerate().filter(|(i, _)| keep.contains(&(g + i))).map(|(_, a)| a).collect();
            let mut group_by = group_by;
            let mut refs: Vec<&Expr> = group_by.iter().collect();
            for a in &aggregates {
                refs.extend(a.arg.iter());
                refs.extend(a.filter.iter());
            }
            let need = used_by(&refs);
            let (input, imap) = prune(*input, &need);
            for e in group_by.iter_mut() {
                apply(e, &imap);
            }
            for a in aggregates.iter_mut() {
                a.arg.iter_mut().chain(a.filter.iter_mut()).for_each(|e| apply(e, &imap));
            }
            let map = keep_map(width, &keep);
            let schema = std::sync::Arc::new(keep.iter().map(|&c| plan.schema[c].clone()).collect::<Vec<Field>>());
            let node = Node::Aggregate { input: Box::new(input), group_by, aggregates };
            (Plan { node, schema, est: plan.est }, map)
        }
        node => (Plan { node, ..plan }, identity(width)),
    }
}

fn prune_join_node(plan: Plan, required: &BTreeSet<usize>) -> (Plan, Map) {
    let width = plan.schema.len();
    match plan.node {
        Node::Join { left, right, kind, on, .. } => {
            let (mut joined, map) = prune_join(*left, *right, kind, on, required, plan.est);
            // The binder's fields (nullability included), at their new places.
            let mut fields = vec![None; joined.schema.len()];
            for (old, new) in map.iter().enumerate() {
                if let Some(n) = new
                    && let Some(slot) = fields.get_mut(*n)
                {
                    *slot = Some(plan.schema[old].clone());
                }
            }
            if fields.iter().all(Option::is_some) {
                joined.schema = std::sync::Arc::new(fields.into_iter().flatten().collect());
            }
            (joined, map)
        }
        node => (Plan { node, ..plan }, identity(width)),
    }
}
