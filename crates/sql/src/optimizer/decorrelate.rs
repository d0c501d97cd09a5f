//! Subquery decorrelation: subqueries in WHERE conjuncts become joins, so
//! that the join orderer and hash joins see them instead of a per-row loop.
//!
//! ```text
//!  Filter(EXISTS(σ[t.k = outer.k ∧ p](T)))   ─►  Join(Semi, on: k = T.k) ─ left, σ[p](T)
//!  Filter(x NOT IN (σ[p](T) → y))              ─►  Anti (x = y)  when neither side can be NULL,
//!                                                  else Mark (x = y) + Filter(mark IS FALSE)
//!  Filter(x < (γ[avg y](σ[T.k = outer.k](T)))) ─►  Left join on k = key of γ[key: T.k; avg y](T),
//!                                                  the subquery replaced by its output column
//!                                                  (count's empty group: COALESCE(count, 0))
//! ```
//!
//! The subquery's plan is *peeled*: Projects at its top are substituted
//! into its output expressions and Filters give up their conjuncts that
//! reference the outer query (the correlation) and keep the rest (a
//! Project below a kept expression that holds a subquery is passed only
//! when it picks plain columns, renumbering the subquery's outer
//! references; otherwise it stays in the core). What is
//! left (the core) must not reference the outer query anywhere else; the
//! correlation becomes the join condition with `Outer { depth: 1 }` turned
//! into the left input's columns and deeper references moved one level in.
//! Anything else (correlation inside a join or aggregate of the subquery,
//! a scalar aggregate correlated by something other than equalities, a
//! subquery outside a Filter) stays as it is for the executor's
//! `SubqueryRunner`. Subqueries are decorrelated innermost first, so TPC-H
//! Q20's scalar subquery inside an IN subquery is a join before the IN is
//! looked at. The rewritten Filter ends in a Project back to its input's
//! columns, so nothing above sees the added ones.

use std::sync::Arc;

use super::util::{
    children_mut, conjuncts, filter_with, has_outer, mk_join, mk_select, node_exprs_mut, plan_children_mut, substitute,
};
use crate::plan::{AggFunc, BinaryOp, Expr, Field, Function, JoinKind, Node, Plan, SubqueryKind, UnaryOp};
use crate::types::{DataType, Value};

/// Decorrelates every Filter of `plan`, innermost subqueries first.
pub fn decorrelate(mut plan: Plan) -> Plan {
    for e in node_exprs_mut(&mut plan.node) {
        decorrelate_in_expr(e);
    }
    for c in plan_children_mut(&mut plan) {
        let taken = super::util::take_plan(c);
        *c = decorrelate(taken);
    }
    match plan.node {
        Node::Filter { input, predicate } => rewrite_filter(*input, predicate, plan.schema, plan.est),
        node => Plan { node, ..plan },
    }
}

fn decorrelate_in_expr(e: &mut Expr) {
    for c in children_mut(e) {
        decorrelate_in_expr(c);
    }
    if let Expr::Subquery { plan, .. } = e {
        let taken = super::util::take_plan(plan.as_mut());
        **plan = decorrelate(taken);
    }
}

fn rewrite_filter(input: Plan, predicate: Expr, schema: crate::plan::Schema, est: crate::plan::Estimate) -> Plan {
    let width = input.schema.len();
    let mut left = input;
    let mut rest = Vec::new();
    let mut changed = false;
    for conj in conjuncts(predicate) {
        match conjunct_to_join(left, conj) {
            Ok(joined) => {
                left = joined;
                changed = true;
            }
            Err(back) => {
                let (back, mut conj) = *back;
                left = back;
                changed |= replace_scalars(&mut conj, &mut left);
                rest.push(conj);
            }
        }
    }
    if !changed {
        let predicate = super::util::conjoin(rest).unwrap_or_else(|| super::util::bool_lit(Some(true)));
        return Plan { node: Node::Filter { input: Box::new(left), predicate }, schema, est };
    }
    let filtered = filter_with(left, rest);
    if filtered.schema.len() == width {
        return filtered;
    }
    let cols: Vec<usize> = (0..width).collect();
    let mut out = mk_select(filtered, &cols);
    out.schema = schema;
    out
}

/// What is left of a subquery plan after peeling its top Projects and
/// Filters.
struct Peeled {
    core: Plan,
    /// The subquery's output columns, over `core`'s columns.
    outputs: Vec<Expr>,
    /// Conjuncts referencing the outer query, over `core`'s columns.
    correlated: Vec<Expr>,
}

fn peel(plan: Plan) -> Peeled {
    let mut outputs: Vec<Expr> = plan.schema.iter().enumerate().map(|(i, f)| Expr::column(i, f.ty)).collect();
    let mut correlated = Vec::new();
    let mut residual = Vec::new();
    let mut cur = plan;
    loop {
        match cur.node {
            Node::Project { input, exprs } if !exprs.iter().any(super::util::has_subquery) => {
                let pending = outputs.iter().chain(&correlated).chain(&residual);
                if pending.into_iter().any(super::util::has_subquery) {
                    // A subquery reads this Project's columns through outer
                    // references, which `substitute` does not rewrite:
                    // renumbered when the Project only picks columns, else
                    // the Project stays in the core.
                    let Some(map) = column_picks(&exprs) else {
                        cur = Plan { node: Node::Project { input, exprs }, ..cur };
                        break;
                    };
                    for e in outputs.iter_mut().chain(correlated.iter_mut()).chain(residual.iter_mut()) {
                        super::util::remap(e, &|i| map.get(i).copied().unwrap_or(i));
                    }
                } else {
                    for e in outputs.iter_mut().chain(correlated.iter_mut()).chain(residual.iter_mut()) {
                        *e = substitute(e, &exprs);
                    }
                }
                cur = *input;
            }
            Node::Filter { input, predicate } => {
                for c in conjuncts(predicate) {
                    if has_outer(&c) { correlated.push(c) } else { residual.push(c) }
                }
                cur = *input;
            }
            node => {
                cur = Plan { node, ..cur };
                break;
            }
        }
    }
    Peeled { core: filter_with(cur, residual), outputs, correlated }
}

/// The input column each expression is, when all are plain columns.
fn column_picks(exprs: &[Expr]) -> Option<Vec<usize>> {
    exprs.iter().map(|e| if let Expr::Column { index, .. } = e { Some(*index) } else { None }).collect()
}

/// True when `plan` references a query outside it (`Outer` with depth
/// reaching past `level` subquery levels).
fn escapes(plan: &Plan, level: usize) -> bool {
    let mut p = plan.clone();
    let mut found = false;
    for e in node_exprs_mut(&mut p.node) {
        found |= expr_escapes(e, level);
    }
    found || plan.children().into_iter().any(|c| escapes(c, level))
}

fn expr_escapes(e: &Expr, level: usize) -> bool {
    match e {
        Expr::Outer { depth, .. } => *depth >= level,
        Expr::Subquery { plan, .. } => {
            escapes(plan, level + 1) || super::util::children(e).into_iter().any(|c| expr_escapes(c, level))
        }
        _ => super::util::children(e).into_iter().any(|c| expr_escapes(c, level)),
    }
}

/// Rewrites a correlated conjunct into a join condition over
/// `left ++ core`: `Outer{1, i}` → column `i`, column `j` → `width + j`,
/// deeper outer references one level in. None if it holds a subquery.
fn to_condition(e: &Expr, width: usize) -> Option<Expr> {
    let mut out = e.clone();
    if super::util::has_subquery(&out) {
        return None;
    }
    shift(&mut out, width);
    Some(out)
}

fn shift(e: &mut Expr, width: usize) {
    match e {
        Expr::Column { index, .. } => *index += width,
        Expr::Outer { depth: 1, index, ty } => *e = Expr::Column { index: *index, ty: *ty },
        Expr::Outer { depth, .. } => *depth -= 1,
        _ => {}
    }
    for c in children_mut(e) {
        shift(c, width);
    }
}

fn eq(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinaryOp::Eq, a, b, DataType::Bool)
}

/// A top-level EXISTS / IN / ANY / ALL conjunct as a Semi, Anti or Mark
/// join; gives `left` and the conjunct back when it cannot.
fn conjunct_to_join(left: Plan, conj: Expr) -> Result<Plan, Box<(Plan, Expr)>> {
    let (kind, sub, negated) = match &conj {
        Expr::Subquery { kind, plan, .. } => (kind.clone(), plan.as_ref().clone(), false),
        Expr::Unary { op: UnaryOp::Not, expr, .. } => match expr.as_ref() {
            Expr::Subquery { kind, plan, .. } => (kind.clone(), plan.as_ref().clone(), true),
            _ => return Err(Box::new((left, conj))),
        },
        _ => return Err(Box::new((left, conj))),
    };
    let width = left.schema.len();
    let Peeled { core, outputs, correlated } = peel(sub);
    if escapes(&core, 1) {
        return Err(Box::new((left, conj)));
    }
    let mut cond = Vec::new();
    for c in &correlated {
        match to_condition(c, width) {
            Some(c) => cond.push(c),
            None => return Err(Box::new((left, conj))),
        }
    }
    let out = |i: usize| outputs.get(i).and_then(|o| to_condition(o, width));
    let (join_kind, compare) = match kind {
        SubqueryKind::Exists { negated: n } => (if n != negated { JoinKind::Anti } else { JoinKind::Semi }, None),
        SubqueryKind::In { expr, negated: n } => {
            let Some(o) = out(0) else { return Err(Box::new((left, conj))) };
            let nullable = expr_nullable(&expr, &left) || output_nullable(&outputs[0], &core);
            let cmp = eq(*expr, o);
            match (n != negated, nullable) {
                (false, _) => (JoinKind::Semi, Some(cmp)),
                (true, false) => (JoinKind::Anti, Some(cmp)),
                (true, true) => (JoinKind::Mark, Some(cmp)),
            }
        }
        SubqueryKind::Quantified { expr, op, all } => {
            let Some(o) = out(0) else { return Err(Box::new((left, conj))) };
            match (all, negated) {
                (false, false) => (JoinKind::Semi, Some(Expr::binary(op, *expr, o, DataType::Bool))),
                (true, false) => match negate(op) {
                    Some(nop) => (JoinKind::Mark, Some(Expr::binary(nop, *expr, o, DataType::Bool))),
                    None => return Err(Box::new((left, conj))),
                },
                _ => return Err(Box::new((left, conj))),
            }
        }
        SubqueryKind::Scalar | SubqueryKind::Array => return Err(Box::new((left, conj))),
    };
    if join_kind == JoinKind::Mark {
        // Only the comparison may make the mark NULL: a row the correlation
        // does not select (NULL or FALSE) is not in the subquery's result.
        cond = cond
            .into_iter()
            .map(|c| Expr::Unary { op: UnaryOp::IsTrue, expr: Box::new(c), ty: DataType::Bool })
            .collect();
    }
    cond.extend(compare);
    let joined = mk_join(left, core, join_kind, super::util::conjoin(cond));
    if join_kind != JoinKind::Mark {
        return Ok(joined);
    }
    let mark =
        Expr::Unary { op: UnaryOp::IsFalse, expr: Box::new(Expr::column(width, DataType::Bool)), ty: DataType::Bool };
    Ok(super::util::mk_filter(joined, mark))
}

/// `NOT (a op b)` as one comparison, for ALL.
fn negate(op: BinaryOp) -> Option<BinaryOp> {
    Some(match op {
        BinaryOp::Eq => BinaryOp::NotEq,
        BinaryOp::NotEq => BinaryOp::Eq,
        BinaryOp::Lt => BinaryOp::GtEq,
        BinaryOp::LtEq => BinaryOp::Gt,
        BinaryOp::Gt => BinaryOp::LtEq,
        BinaryOp::GtEq => BinaryOp::Lt,
        _ => return None,
    })
}

fn expr_nullable(e: &Expr, plan: &Plan) -> bool {
    match e {
        Expr::Column { index, .. } => plan.schema.get(*index).is_none_or(|f| f.nullable),
        Expr::Literal { value, .. } => value.is_null(),
        _ => true,
    }
}

fn output_nullable(e: &Expr, core: &Plan) -> bool {
    expr_nullable(e, core)
}

/// Replaces each scalar subquery of `e` (at this level) that can be
/// decorrelated by a column of a join appended to `left`. True if any was.
fn replace_scalars(e: &mut Expr, left: &mut Plan) -> bool {
    if let Expr::Subquery { kind: SubqueryKind::Scalar, plan, .. } = e {
        let taken = super::util::take_plan(left);
        match scalar_to_join(taken, plan.as_ref().clone()) {
            Ok((joined, value)) => {
                *left = joined;
                *e = value;
                return true;
            }
            Err(back) => {
                *left = *back;
                return false;
            }
        }
    }
    let mut any = false;
    for c in children_mut(e) {
        any |= replace_scalars(c, left);
    }
    any
}

/// A scalar subquery as a join appended to `left`, with the expression
/// that now yields its value (over the join's columns).
fn scalar_to_join(left: Plan, sub: Plan) -> Result<(Plan, Expr), Box<Plan>> {
    let width = left.schema.len();
    let Peeled { core, outputs, correlated } = peel(sub);
    if outputs.len() != 1 || has_outer(&outputs[0]) || super::util::has_subquery(&outputs[0]) {
        return Err(Box::new(left));
    }
    if let Node::Aggregate { group_by, .. } = &core.node
        && group_by.is_empty()
        && correlated.is_empty()
    {
        let inner = peel_aggregate_input(core);
        if let Some((agg, keys)) = inner {
            return grouped_aggregate_join(left, agg, keys, &outputs[0]);
        }
        return Err(Box::new(left));
    }
    if escapes(&core, 1) {
        return Err(Box::new(left));
    }
    let mut cond = Vec::new();
    for c in &correlated {
        match to_condition(c, width) {
            Some(c) => cond.push(c),
            None => return Err(Box::new(left)),
        }
    }
    let mut value = outputs[0].clone();
    super::util::remap(&mut value, &|i| i + width);
    Ok((mk_join(left, core, JoinKind::Single, super::util::conjoin(cond)), value))
}

/// An ungrouped Aggregate whose input is correlated by equalities only:
/// the Aggregate grouped by the inner sides, and the outer sides (as
/// columns of the outer query). None when the correlation is anything else.
fn peel_aggregate_input(agg: Plan) -> Option<(Plan, Vec<Expr>)> {
    let Node::Aggregate { input, mut aggregates, .. } = agg.node else { return None };
    // An argument reading an outer query (`sum(x - outer.y)`) would need
    // its references moved a level in: left to the executor.
    if aggregates.iter().flat_map(|a| a.arg.iter().chain(a.filter.iter())).any(|e| expr_escapes(e, 1)) {
        return None;
    }
    let Peeled { core, correlated, outputs } = peel(*input);
    // The arguments read the peeled Projects' outputs: rewritten over the
    // core (a subquery in one would keep its outer references to the old
    // columns, which `substitute` does not rewrite: left to the executor).
    let peeled_projects = !super::util::is_identity(&outputs, core.schema.len());
    let args = || aggregates.iter().flat_map(|a| a.arg.iter().chain(a.filter.iter()));
    if peeled_projects && args().any(super::util::has_subquery) {
        return None;
    }
    for a in &mut aggregates {
        for e in a.arg.iter_mut().chain(a.filter.iter_mut()) {
            *e = substitute(e, &outputs);
        }
    }
    if escapes(&core, 1) {
        return None;
    }
    let mut inner_keys = Vec::new();
    let mut outer_keys = Vec::new();
    for c in correlated {
        let Expr::Binary { op: BinaryOp::Eq, left, right, .. } = c else { return None };
        let (o, i) = match (pure_outer(&left), pure_outer(&right)) {
            (true, false) if !has_outer(&right) => (*left, *right),
            (false, true) if !has_outer(&left) => (*right, *left),
            _ => return None,
        };
        if super::util::has_subquery(&i) {
            return None;
        }
        outer_keys.push(o);
        inner_keys.push(i);
    }
    if inner_keys.is_empty() {
        // Uncorrelated: one row always; a Single join with no condition.
        return Some((rebuild_aggregate(core, vec![], aggregates, &agg.schema), vec![]));
    }
    let k = inner_keys.len();
    let mut fields: Vec<Field> = inner_keys
        .iter()
        .enumerate()
        .map(|(i, e)| Field { name: format!("key{i}"), qualifier: None, ty: e.ty(), nullable: true })
        .collect();
    fields.extend(agg.schema.iter().cloned());
    let grouped =
        Plan::new(Node::Aggregate { input: Box::new(core), group_by: inner_keys, aggregates }, Arc::new(fields));
    debug_assert_eq!(grouped.schema.len(), k + agg.schema.len());
    Some((grouped, outer_keys))
}

fn rebuild_aggregate(
    core: Plan,
    group_by: Vec<Expr>,
    aggregates: Vec<crate::plan::AggregateExpr>,
    schema: &crate::plan::Schema,
) -> Plan {
    Plan::new(Node::Aggregate { input: Box::new(core), group_by, aggregates }, schema.clone())
}

/// True when `e` reads only the outer query (no input columns) and does.
fn pure_outer(e: &Expr) -> bool {
    has_outer(e) && super::util::columns_used(e).is_empty() && !super::util::has_subquery(e)
}

/// Joins `left` to the grouped aggregate on the correlation keys (a Left
/// join: at most one group per key) and builds the subquery's value.
fn grouped_aggregate_join(
    left: Plan,
    agg: Plan,
    outer_keys: Vec<Expr>,
    output: &Expr,
) -> Result<(Plan, Expr), Box<Plan>> {
    let width = left.schema.len();
    let k = outer_keys.len();
    let Node::Aggregate { aggregates, .. } = &agg.node else { return Err(Box::new(left)) };
    let counts: Vec<bool> = aggregates.iter().map(|a| matches!(a.func, AggFunc::Count | AggFunc::CountStar)).collect();
    let subst: Vec<Expr> = agg.schema[k..]
        .iter()
        .enumerate()
        .map(|(j, f)| {
            let col = Expr::column(width + k + j, f.ty);
            if counts.get(j).copied().unwrap_or(false) {
                let zero = Expr::Literal { value: Value::Int64(0), ty: f.ty };
                Expr::Function { func: Function::Coalesce, args: vec![col, zero], ty: f.ty }
            } else {
                col
            }
        })
        .collect();
    let value = substitute(output, &subst);
    if k == 0 {
        return Ok((mk_join(left, agg, JoinKind::Single, None), value));
    }
    let mut cond = Vec::new();
    for (i, o) in outer_keys.iter().enumerate() {
        let mut o = o.clone();
        shift(&mut o, 0);
        cond.push(eq(o, Expr::column(width + i, agg.schema[i].ty)));
    }
    Ok((mk_join(left, agg, JoinKind::Left, super::util::conjoin(cond)), value))
}
