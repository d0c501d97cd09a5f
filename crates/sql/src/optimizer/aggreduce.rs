//! Aggregate input reduction: a grouped aggregate joined on its group key
//! aggregates only the keys its partner side can hold (a "magic set").
//!
//! Decorrelating `l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem
//! WHERE l_partkey = p_partkey)` (TPC-H Q17; Q20 alike) gives a join of the
//! outer rows with `avg` grouped by `l_partkey` over all of lineitem: 6
//! million rows aggregated into 200,000 groups, of which the outer side,
//! 204 filtered parts, meets 204. When the key the outer side joins on
//! comes from a scan with a filter, that scan's values of the key hold every
//! value the outer side can have, so only those groups can find a partner:
//!
//! ```text
//!  Join(A, Agg_k(R)) on a.x = k
//!    ==  Join(A, Agg_k(Project_R(Inner(R, Distinct(Project_x'(S))) on r.k = s.x'))) on a.x = k
//! ```
//!
//! where S is a scan inside A whose column x' holds every non-NULL value of
//! a.x: a.x passes unchanged through Projects, Filters and joins down to
//! S, or to a column an Inner or Semi join's equality ties it to (Q20's
//! `ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE ...)`).
//! A group whose key is not among S's values (or is NULL) meets no row of
//! A, so dropping it changes nothing when the aggregate side is not the
//! preserved side of the join: Inner on either side; Left, Single, Semi and
//! Anti with the aggregate on the right; Right with it on the left (not
//! Mark: a NULL key makes its comparisons NULL, which a Mark join reports).
//! The groups kept are aggregated from exactly their own rows, so their
//! values do not change.
//!
//! The rewrite pays for S once more (a filtered scan) and a join in front
//! of the aggregate; with an index on R's key the join orderer can look the
//! few keys up instead of scanning R. Whether that is cheaper depends on
//! the estimates, so the physical pass plans both and keeps the cheaper
//! (`physical::physical`), as it does for `semipush.rs`. Only a scan with a
//! filter is used as S: an unfiltered one holds every key.

use super::util::{conjuncts, has_subquery, mk_join, mk_select};
use crate::plan::{BinaryOp, Expr, JoinAlgorithm, JoinKind, Node, Plan};
use crate::types::DataType;

/// How deep the search for S goes (plans are small; this bounds the work
/// on odd shapes).
const DEPTH_MAX: usize = 32;

/// `plan` (a join) with its aggregate side's input reduced to the keys the
/// other side can hold, or None when the pattern is not there.
pub fn reduced(plan: &Plan) -> Option<Plan> {
    let Node::Join { left, right, kind, on: Some(on), algorithm: JoinAlgorithm::Unchosen } = &plan.node else {
        return None;
    };
    if has_subquery(on) {
        return None;
    }
    use JoinKind as K;
    let agg_right = matches!(kind, K::Inner | K::Left | K::Single | K::Semi | K::Anti);
    let agg_left = matches!(kind, K::Inner | K::Right);
    let lw = left.schema.len();
    for (l, r) in conjuncts(on.clone()).iter().filter_map(|c| split_equality(c, lw)) {
        let sides = if agg_right && let Some(new_right) = reduce_side(right, r, left, l) {
            ((**left).clone(), new_right)
        } else if agg_left && let Some(new_left) = reduce_side(left, l, right, r) {
            (new_left, (**right).clone())
        } else {
            continue;
        };
        let node = Node::Join {
            left: Box::new(sides.0),
            right: Box::new(sides.1),
            kind: *kind,
            on: Some(on.clone()),
            algorithm: JoinAlgorithm::Unchosen,
        };
        return Some(Plan::new(node, plan.schema.clone()));
    }
    None
}

/// `a = b` between a left column and a right column (`b` numbered within
/// the right input).
fn split_equality(c: &Expr, lw: usize) -> Option<(usize, usize)> {
    let Expr::Binary { op: BinaryOp::Eq, left, right, .. } = c else { return None };
    let (Expr::Column { index: a, .. }, Expr::Column { index: b, .. }) = (left.as_ref(), right.as_ref()) else {
        return None;
    };
    match (*a < lw, *b < lw) {
        (true, false) => Some((*a, *b - lw)),
        (false, true) => Some((*b, *a - lw)),
        _ => None,
    }
}

/// `agg_side` with its aggregate's input cut to the values of column `x`
/// of `other`, when `agg_side`'s column `k` is a group key and `x` comes
/// from a filtered scan.
fn reduce_side(agg_side: &Plan, k: usize, other: &Plan, x: usize) -> Option<Plan> {
    let key_ty = group_key_type(agg_side, k)?;
    let mut sources = Vec::new();
    find_sources(other, x, &mut sources, 0);
    let (scan, column) = sources.into_iter().find(|(s, c)| is_filtered_scan(s) && s.schema[*c].ty == key_ty)?;
    let keys = mk_select(scan, &[column]);
    let schema = keys.schema.clone();
    let keys = Plan::new(Node::Distinct { input: Box::new(keys) }, schema);
    with_reduced_input(agg_side, k, keys)
}

/// The type of `plan`'s column `k` when it is a plain group key of an
/// Aggregate (under Projects of plain columns and HAVING Filters: a group
/// they drop has no partner either).
fn group_key_type(plan: &Plan, k: usize) -> Option<DataType> {
    match &plan.node {
        Node::Project { input, exprs } => match exprs.get(k)? {
            Expr::Column { index, .. } => group_key_type(input, *index),
            _ => None,
        },
        Node::Filter { input, predicate } if !has_subquery(predicate) => group_key_type(input, k),
        Node::Aggregate { group_by, .. } => match group_by.get(k)? {
            Expr::Column { ty, .. } => Some(*ty),
            _ => None,
        },
        _ => None,
    }
}

fn with_reduced_input(plan: &Plan, k: usize, keys: Plan) -> Option<Plan> {
    match &plan.node {
        Node::Project { input, exprs } => {
            let Expr::Column { index, .. } = exprs.get(k)? else { return None };
            let input = with_reduced_input(input, *index, keys)?;
            Some(Plan::new(Node::Project { input: Box::new(input), exprs: exprs.clone() }, plan.schema.clone()))
        }
        Node::Filter { input, predicate } => {
            let input = with_reduced_input(input, k, keys)?;
            Some(Plan::new(Node::Filter { input: Box::new(input), predicate: predicate.clone() }, plan.schema.clone()))
        }
        Node::Aggregate { input, group_by, aggregates } => {
            let Expr::Column { index: rk, ty } = group_by.get(k)? else { return None };
            let rw = input.schema.len();
            let on = Expr::binary(BinaryOp::Eq, Expr::column(*rk, *ty), Expr::column(rw, *ty), DataType::Bool);
            let joined = mk_join((**input).clone(), keys, JoinKind::Inner, Some(on));
            let input = mk_select(joined, &(0..rw).collect::<Vec<_>>());
            let node =
                Node::Aggregate { input: Box::new(input), group_by: group_by.clone(), aggregates: aggregates.clone() };
            Some(Plan::new(node, plan.schema.clone()))
        }
        _ => None,
    }
}

/// A scan with a filter of its own, or a Filter right over a scan.
fn is_filtered_scan(plan: &Plan) -> bool {
    match &plan.node {
        Node::Scan { filter, emit_vid, .. } => filter.is_some() && !emit_vid,
        Node::Filter { input, predicate } => {
            !has_subquery(predicate) && matches!(&input.node, Node::Scan { emit_vid: false, .. })
        }
        _ => false,
    }
}

/// The scans (with the column; a scan under a Filter counts with the
/// Filter) whose values hold every non-NULL value of column `x` of `plan`,
/// nearest first.
fn find_sources(plan: &Plan, x: usize, out: &mut Vec<(Plan, usize)>, depth: usize) {
    if depth > DEPTH_MAX {
        return;
    }
    let next = depth + 1;
    match &plan.node {
        Node::Scan { columns, .. } if x < columns.len() => out.push((plan.clone(), x)),
        Node::Filter { input, .. } => {
            if matches!(&input.node, Node::Scan { columns, .. } if x < columns.len()) {
                out.push((plan.clone(), x));
            }
            find_sources(input, x, out, next)
        }
        Node::Distinct { input } | Node::Sort { input, .. } | Node::Limit { input, .. } => {
            find_sources(input, x, out, next)
        }
        Node::Project { input, exprs } => {
            if let Some(Expr::Column { index, .. }) = exprs.get(x) {
                find_sources(input, *index, out, next);
            }
        }
        Node::Join { left, right, kind, on, .. } => {
            let lw = left.schema.len();
            let ties = |side_left| on.as_ref().map_or(vec![], |on| equal_columns(on, *kind, lw, x, side_left));
            if x < lw {
                find_sources(left, x, out, next);
                for r in ties(true) {
                    find_sources(right, r, out, next);
                }
            } else if !matches!(kind, JoinKind::Semi | JoinKind::Anti | JoinKind::Mark) {
                find_sources(right, x - lw, out, next);
                for l in ties(false) {
                    find_sources(left, l, out, next);
                }
            }
        }
        _ => {}
    }
}

/// The columns of the other input that the join's equalities hold equal to
/// output column `x` (on the left input when `x_left`, else on the right,
/// numbered within that input): an Inner join keeps only pairs where they
/// are equal, a Semi join only left rows that have such a partner.
fn equal_columns(on: &Expr, kind: JoinKind, lw: usize, x: usize, x_left: bool) -> Vec<usize> {
    let holds = match kind {
        JoinKind::Inner => true,
        JoinKind::Semi => x_left,
        _ => false,
    };
    if !holds {
        return vec![];
    }
    conjuncts(on.clone())
        .iter()
        .filter_map(|c| split_equality(c, lw))
        .filter_map(|(l, r)| match x_left {
            true if l == x => Some(r),
            false if r + lw == x => Some(l),
            _ => None,
        })
        .collect()
}
