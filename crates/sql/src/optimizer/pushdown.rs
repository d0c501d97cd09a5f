//! Predicate pushdown: every WHERE, HAVING and ON conjunct moves as far
//! down as it stays correct, ending in a join's condition or a scan's
//! filter. Equalities between the two sides of a cross join become its
//! condition on the way, which turns `FROM a, b WHERE a.x = b.y` into an
//! inner join.
//!
//! ```text
//!  Filter(p ∧ q ∧ r)                    Join(inner, on: r)
//!   └ Join(cross)            ──►         ├ Scan a  filter: p
//!      ├ Scan a                          └ Scan b  filter: q
//!      └ Scan b               (p reads only a, q only b, r both)
//! ```
//!
//! Where a conjunct may go:
//! - through Filter, Sort, Distinct and Project (Project substitutes its
//!   expressions, unless one holds a subquery);
//! - through Aggregate when it reads group-by columns only;
//! - into either input of an inner join (or into its condition);
//! - into the preserved side of a Left/Right/Semi/Anti/Mark/Single join from
//!   above, and an ON conjunct into the null-supplying (or inner) side; never
//!   a WHERE conjunct into the null-supplying side, and nothing through a
//!   Full join;
//! - into `Scan.filter` unless it holds a subquery or an outer reference.
//!
//! It stops at Limit, SetOp and Values. A conjunct holding a subquery stays
//! where it is (its correlated columns would otherwise need remapping).

use super::util::{columns_used, conjuncts, filter_with, has_outer, has_subquery, remap, substitute};
use crate::plan::{Expr, JoinKind, Node, Plan};

/// Pushes the predicates of `plan` down; the result has `plan`'s schema.
pub fn pushdown(plan: Plan) -> Plan {
    push(plan, Vec::new())
}

/// `preds` are over `plan`'s output; the result is `plan` filtered by them.
fn push(plan: Plan, preds: Vec<Expr>) -> Plan {
    let Plan { node, schema, est } = plan;
    let (pinned, movable): (Vec<Expr>, Vec<Expr>) = preds.into_iter().partition(has_subquery);
    let rebuilt = |node: Node| Plan { node, schema: schema.clone(), est };
    let out = match node {
        Node::Filter { input, predicate } => {
            let mut all = movable;
            let (here, down): (Vec<Expr>, Vec<Expr>) = conjuncts(predicate).into_iter().partition(has_subquery);
            all.extend(down);
            let below = push(*input, all);
            return filter_with(below, pinned.into_iter().chain(here).collect());
        }
        Node::Project { input, exprs } => {
            let (down, keep): (Vec<Expr>, Vec<Expr>) = movable
                .into_iter()
                .partition(|p| columns_used(p).iter().all(|&c| exprs.get(c).is_some_and(|e| !has_subquery(e))));
            let down = down.iter().map(|p| substitute(p, &exprs)).collect();
            let input = push(*input, down);
            filter_with(rebuilt(Node::Project { input: Box::new(input), exprs }), keep)
        }
        Node::Sort { input, keys } => rebuilt(Node::Sort { input: Box::new(push(*input, movable)), keys }),
        Node::Distinct { input } => rebuilt(Node::Distinct { input: Box::new(push(*input, movable)) }),
        Node::Aggregate { input, group_by, aggregates } => {
            let g = group_by.len();
            let (down, keep): (Vec<Expr>, Vec<Expr>) = movable.into_iter().partition(|p| {
                let cols = columns_used(p);
                !cols.is_empty() && cols.iter().all(|&c| c < g && !has_subquery(&group_by[c]))
            });
            let down = down.iter().map(|p| substitute(p, &group_by)).collect();
            let input = push(*input, down);
            filter_with(rebuilt(Node::Aggregate { input: Box::new(input), group_by, aggregates }), keep)
        }
        Node::Join { left, right, kind, on, algorithm } => {
            let (node, keep) = push_join(*left, *right, kind, on, movable);
            let _ = algorithm;
            filter_with(rebuilt(node), keep)
        }
        Node::Scan { table, columns, filter, emit_vid, access } => {
            let (into, keep): (Vec<Expr>, Vec<Expr>) = movable.into_iter().partition(|p| !has_outer(p));
            let mut parts = filter.map(conjuncts).unwrap_or_default();
            parts.extend(into);
            let filter = super::util::conjoin(parts);
            filter_with(rebuilt(Node::Scan { table, columns, filter, emit_vid, access }), keep)
        }
        Node::Limit { input, limit, offset } => {
            filter_with(rebuilt(Node::Limit { input: Box::new(pushdown(*input)), limit, offset }), movable)
        }
        Node::SetOp { op, all, left, right } => filter_with(
            rebuilt(Node::SetOp { op, all, left: Box::new(pushdown(*left)), right: Box::new(pushdown(*right)) }),
            movable,
        ),
        node @ (Node::Values { .. } | Node::Series { .. }) => filter_with(rebuilt(node), movable),
    };
    filter_with(out, pinned)
}

/// Which inputs of a join of `kind` a conjunct may enter, from above
/// (WHERE) and from the ON condition.
struct Sides {
    where_left: bool,
    where_right: bool,
    on_left: bool,
    on_right: bool,
}

fn sides(kind: JoinKind) -> Sides {
    let s = |where_left, where_right, on_left, on_right| Sides { where_left, where_right, on_left, on_right };
    match kind {
        JoinKind::Inner => s(true, true, true, true),
        JoinKind::Left | JoinKind::Single | JoinKind::Mark | JoinKind::Anti => s(true, false, false, true),
        JoinKind::Semi => s(true, false, true, true),
        JoinKind::Right => s(false, true, true, false),
        JoinKind::Full => s(false, false, false, false),
    }
}

/// `x IS TRUE`: never NULL, so filtering on it below a Mark join is the same.
fn is_true_test(p: &Expr) -> bool {
    matches!(p, Expr::Unary { op: crate::plan::UnaryOp::IsTrue, .. })
}

/// Splits WHERE conjuncts (`from_above`) and ON conjuncts among the two
/// inputs, the condition, and what must stay above the join.
fn push_join(left: Plan, right: Plan, kind: JoinKind, on: Option<Expr>, from_above: Vec<Expr>) -> (Node, Vec<Expr>) {
    let l = left.schema.len();
    let s = sides(kind);
    let (mut to_left, mut to_right, mut cond, mut keep) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Output columns at or past `l` are the right's, except after Semi/Anti
    // (left only) and Mark (the mark column), which no conjunct may cross.
    let right_visible = !matches!(kind, JoinKind::Semi | JoinKind::Anti | JoinKind::Mark);
    for p in from_above {
        let cols = columns_used(&p);
        if !cols.is_empty() && cols.iter().all(|&c| c < l) && s.where_left {
            to_left.push(p);
        } else if right_visible && !cols.is_empty() && cols.iter().all(|&c| c >= l) && s.where_right {
            to_right.push(p);
        } else if kind == JoinKind::Inner && !has_outer(&p) {
            cond.push(p);
        } else {
            keep.push(p);
        }
    }
    for p in on.map(conjuncts).unwrap_or_default() {
        let cols = columns_used(&p);
        if has_subquery(&p) || cols.is_empty() {
            cond.push(p);
        } else if cols.iter().all(|&c| c < l) && s.on_left {
            to_left.push(p);
        } else if cols.iter().all(|&c| c >= l) && s.on_right && (kind != JoinKind::Mark || is_true_test(&p)) {
            // A Mark join's comparison stays in the condition even when it
            // reads only the right (`'x' NOT IN (SELECT ..)`): where it is
            // NULL the mark is NULL, a filter would drop the row instead.
            to_right.push(p);
        } else {
            cond.push(p);
        }
    }
    for p in to_right.iter_mut() {
        remap(p, &|c| c - l);
    }
    let left = push(left, to_left);
    let right = push(right, to_right);
    let node = Node::Join {
        left: Box::new(left),
        right: Box::new(right),
        kind,
        on: super::util::conjoin(cond),
        algorithm: crate::plan::JoinAlgorithm::Unchosen,
    };
    (node, keep)
}
