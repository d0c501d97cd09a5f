//! Expression and plan helpers the rules share: conjuncts, the columns an
//! expression reads, column remapping, and schema-building constructors.
//!
//! Column references cross subquery boundaries: an [`Expr::Outer`] with
//! `depth == d` inside a subquery nested `d` levels below a node reads that
//! node's input column. Every helper here that reads or remaps columns
//! follows them through [`Expr::Subquery`] plans at the right depth, so a
//! rule may move or renumber an expression holding a correlated subquery
//! and the subquery stays correct.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::plan::{Access, Expr, Field, JoinAlgorithm, JoinKind, Node, Plan, Schema};
use crate::types::{DataType, Value};

/// Splits a predicate into its AND-ed conjuncts.
pub fn conjuncts(expr: Expr) -> Vec<Expr> {
    let mut out = Vec::new();
    split_into(expr, &mut out);
    out
}

fn split_into(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::Binary { op: crate::plan::BinaryOp::And, left, right, .. } => {
            split_into(*left, out);
            split_into(*right, out);
        }
        other => out.push(other),
    }
}

/// AND of `parts`; None when empty.
pub fn conjoin(parts: Vec<Expr>) -> Option<Expr> {
    parts.into_iter().reduce(Expr::and)
}

/// The direct sub-expressions of `e` at the same query level (not the
/// plans of subqueries).
pub fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match e {
        Expr::Column { .. } | Expr::Outer { .. } | Expr::Param { .. } | Expr::Literal { .. } => vec![],
        Expr::Unary { expr, .. } | Expr::Cast { expr, .. } => vec![expr.as_mut()],
        Expr::Binary { left, right, .. } => vec![left.as_mut(), right.as_mut()],
        Expr::Case { operand, whens, else_, .. } => {
            let mut v: Vec<&mut Expr> = Vec::new();
            if let Some(o) = operand {
                v.push(o.as_mut());
            }
            for (w, t) in whens.iter_mut() {
                v.push(w);
                v.push(t);
            }
            if let Some(e) = else_ {
                v.push(e.as_mut());
            }
            v
        }
        Expr::Like { expr, pattern, .. } => vec![expr.as_mut(), pattern.as_mut()],
        Expr::InList { expr, list, .. } => {
            let mut v = vec![expr.as_mut()];
            v.extend(list.iter_mut());
            v
        }
        Expr::Function { args, .. } => args.iter_mut().collect(),
        Expr::Subquery { kind, .. } => match kind {
            crate::plan::SubqueryKind::In { expr, .. } | crate::plan::SubqueryKind::Quantified { expr, .. } => {
                vec![expr.as_mut()]
            }
            _ => vec![],
        },
    }
}

/// Read-only [`children_mut`].
pub fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Column { .. } | Expr::Outer { .. } | Expr::Param { .. } | Expr::Literal { .. } => vec![],
        Expr::Unary { expr, .. } | Expr::Cast { expr, .. } => vec![expr.as_ref()],
        Expr::Binary { left, right, .. } => vec![left.as_ref(), right.as_ref()],
        Expr::Case { operand, whens, else_, .. } => {
            let mut v: Vec<&Expr> = operand.iter().map(|o| o.as_ref()).collect();
            for (w, t) in whens {
                v.push(w);
                v.push(t);
            }
            v.extend(else_.iter().map(|e| e.as_ref()));
            v
        }
        Expr::Like { expr, pattern, .. } => vec![expr.as_ref(), pattern.as_ref()],
        Expr::InList { expr, list, .. } => std::iter::once(expr.as_ref()).chain(list.iter()).collect(),
        Expr::Function { args, .. } => args.iter().collect(),
        Expr::Subquery { kind, .. } => match kind {
            crate::plan::SubqueryKind::In { expr, .. } | crate::plan::SubqueryKind::Quantified { expr, .. } => {
                vec![expr.as_ref()]
            }
            _ => vec![],
        },
    }
}

/// Every expression a node holds (not its children's).
pub fn node_exprs_mut(node: &mut Node) -> Vec<&mut Expr> {
    let mut v: Vec<&mut Expr> = Vec::new();
    match node {
        Node::Scan { filter, access, .. } => {
            v.extend(filter.iter_mut());
            if let Access::Index { lower, upper, .. } = access {
                v.extend(lower.iter_mut());
                v.extend(upper.iter_mut());
            }
        }
        Node::Values { rows } => v.extend(rows.iter_mut().flatten()),
        Node::Series { start, stop, step } => v.extend([start, stop, step]),
        Node::Filter { predicate, .. } => v.push(predicate),
        Node::Project { exprs, .. } => v.extend(exprs.iter_mut()),
        Node::Join { on, algorithm, .. } => {
            v.extend(on.iter_mut());
            match algorithm {
                JoinAlgorithm::Hash { left_keys, right_keys, .. } => {
                    v.extend(left_keys.iter_mut());
                    v.extend(right_keys.iter_mut());
                }
                JoinAlgorithm::IndexNestedLoop { keys, .. } => v.extend(keys.iter_mut()),
                _ => {}
            }
        }
        Node::Aggregate { group_by, aggregates, .. } => {
            v.extend(group_by.iter_mut());
            for a in aggregates.iter_mut() {
                v.extend(a.arg.iter_mut());
                v.extend(a.filter.iter_mut());
            }
        }
        Node::Sort { keys, .. } => v.extend(keys.iter_mut().map(|k| &mut k.expr)),
        Node::Limit { .. } | Node::Distinct { .. } | Node::SetOp { .. } => {}
    }
    v
}

/// The children of a plan, mutable.
pub fn plan_children_mut(plan: &mut Plan) -> Vec<&mut Plan> {
    match &mut plan.node {
        Node::Scan { .. } | Node::Values { .. } | Node::Series { .. } => vec![],
        Node::Filter { input, .. }
        | Node::Project { input, .. }
        | Node::Aggregate { input, .. }
        | Node::Sort { input, .. }
        | Node::Limit { input, .. }
        | Node::Distinct { input } => vec![input.as_mut()],
        Node::Join { left, right, .. } | Node::SetOp { left, right, .. } => vec![left.as_mut(), right.as_mut()],
    }
}

/// Calls `f` on every column reference of `e` that reads the input of the
/// node holding `e`: `Column` at level 0 and `Outer { depth: level }` in
/// subqueries `level` deep.
pub fn visit_input_refs_mut(e: &mut Expr, level: usize, f: &mut dyn FnMut(&mut usize)) {
    match e {
        Expr::Column { index, .. } if level == 0 => f(index),
        Expr::Outer { depth, index, .. } if level > 0 && *depth == level => f(index),
        _ => {}
    }
    for c in children_mut(e) {
        visit_input_refs_mut(c, level, f);
    }
    if let Expr::Subquery { plan, .. } = e {
        visit_plan_outer_refs_mut(plan, level + 1, f);
    }
}

/// Visits the `Outer { depth: level }` references anywhere in `plan`
/// (whose nodes are `level` subquery levels below the referenced node).
pub fn visit_plan_outer_refs_mut(plan: &mut Plan, level: usize, f: &mut dyn FnMut(&mut usize)) {
    for e in node_exprs_mut(&mut plan.node) {
        visit_input_refs_mut(e, level, f);
    }
    for c in plan_children_mut(plan) {
        visit_plan_outer_refs_mut(c, level, f);
    }
}

/// The input columns `e` reads (see [`visit_input_refs_mut`]).
pub fn columns_used(e: &Expr) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let mut copy = e.clone();
    visit_input_refs_mut(&mut copy, 0, &mut |i| {
        out.insert(*i);
    });
    out
}

/// Renumbers the input columns `e` reads.
pub fn remap(e: &mut Expr, f: &dyn Fn(usize) -> usize) {
    visit_input_refs_mut(e, 0, &mut |i| *i = f(*i));
}

/// Replaces every `Column` of `e` (level 0) by `exprs[index]`. Callers
/// make sure the columns substituted hold no subqueries when `e` has
/// correlated subqueries reading them (see [`has_subquery`]).
pub fn substitute(e: &Expr, exprs: &[Expr]) -> Expr {
    match e {
        Expr::Column { index, .. } => exprs.get(*index).cloned().unwrap_or_else(|| e.clone()),
        _ => {
            let mut out = e.clone();
            for c in children_mut(&mut out) {
                *c = substitute(c, exprs);
            }
            out
        }
    }
}

/// True when `e` holds a subquery.
pub fn has_subquery(e: &Expr) -> bool {
    matches!(e, Expr::Subquery { .. }) || children(e).into_iter().any(has_subquery)
}

/// True when `e` references an enclosing query (an `Outer` at this level).
pub fn has_outer(e: &Expr) -> bool {
    matches!(e, Expr::Outer { .. }) || children(e).into_iter().any(has_outer)
}

/// True when every value `e` yields is known without any input: only
/// literals and operators (no columns, parameters, subqueries, or
/// statement-time functions).
pub fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Literal { .. } => true,
        Expr::Column { .. } | Expr::Outer { .. } | Expr::Param { .. } | Expr::Subquery { .. } => false,
        Expr::Function { func: crate::plan::Function::Now | crate::plan::Function::CurrentDate, .. } => false,
        _ => children(e).into_iter().all(is_constant),
    }
}

pub fn bool_lit(b: Option<bool>) -> Expr {
    match b {
        Some(b) => Expr::Literal { value: Value::Bool(b), ty: DataType::Bool },
        None => Expr::Literal { value: Value::Null, ty: DataType::Bool },
    }
}

/// `Some(Some(b))` for a boolean literal, `Some(None)` for NULL.
pub fn as_bool_lit(e: &Expr) -> Option<Option<bool>> {
    match e {
        Expr::Literal { value: Value::Bool(b), .. } => Some(Some(*b)),
        Expr::Literal { value: Value::Null, .. } => Some(None),
        _ => None,
    }
}

/// The output fields of a join of `left` and `right`.
pub fn join_schema(left: &Schema, right: &Schema, kind: JoinKind) -> Schema {
    let nullable = |f: &Field, n: bool| Field { nullable: f.nullable || n, ..f.clone() };
    let (ln, rn) = match kind {
        JoinKind::Left | JoinKind::Single => (false, true),
        JoinKind::Right => (true, false),
        JoinKind::Full => (true, true),
        _ => (false, false),
    };
    let mut fields: Vec<Field> = left.iter().map(|f| nullable(f, ln)).collect();
    match kind {
        JoinKind::Semi | JoinKind::Anti => {}
        JoinKind::Mark => {
            fields.push(Field { name: "mark".into(), qualifier: None, ty: DataType::Bool, nullable: true })
        }
        _ => fields.extend(right.iter().map(|f| nullable(f, rn))),
    }
    Arc::new(fields)
}

pub fn mk_join(left: Plan, right: Plan, kind: JoinKind, on: Option<Expr>) -> Plan {
    let schema = join_schema(&left.schema, &right.schema, kind);
    Plan::new(
        Node::Join { left: Box::new(left), right: Box::new(right), kind, on, algorithm: JoinAlgorithm::Unchosen },
        schema,
    )
}

pub fn mk_filter(input: Plan, predicate: Expr) -> Plan {
    let schema = input.schema.clone();
    Plan::new(Node::Filter { input: Box::new(input), predicate }, schema)
}

/// A Filter over `input` with the conjuncts, or `input` when none.
pub fn filter_with(input: Plan, preds: Vec<Expr>) -> Plan {
    match conjoin(preds) {
        Some(p) => mk_filter(input, p),
        None => input,
    }
}

/// A Project choosing input columns `cols` in that order (fields kept).
pub fn mk_select(input: Plan, cols: &[usize]) -> Plan {
    let fields: Vec<Field> = cols.iter().map(|&c| input.schema[c].clone()).collect();
    let exprs = cols.iter().map(|&c| Expr::column(c, input.schema[c].ty)).collect();
    Plan::new(Node::Project { input: Box::new(input), exprs }, Arc::new(fields))
}

/// An empty relation with `schema`.
pub fn empty(schema: Schema) -> Plan {
    Plan::new(Node::Values { rows: vec![] }, schema)
}

/// True when `exprs` are `Column 0..n` of an input of `n` columns.
pub fn is_identity(exprs: &[Expr], input_width: usize) -> bool {
    exprs.len() == input_width
        && exprs.iter().enumerate().all(|(i, e)| matches!(e, Expr::Column { index, .. } if *index == i))
}

/// Output width of a plan.
pub fn width(plan: &Plan) -> usize {
    plan.schema.len()
}

/// Moves the plan out of `slot`, leaving an empty relation of its schema.
pub fn take_plan(slot: &mut Plan) -> Plan {
    let schema = slot.schema.clone();
    std::mem::replace(slot, empty(schema))
}
