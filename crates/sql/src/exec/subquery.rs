//! Subqueries left in expressions: the evaluator hands their plan and the
//! current outer row(s) to a [`SubqueryRunner`]; [`ExecSubqueryRunner`]
//! replaces each `Outer` reference that points past the subquery's own
//! levels by the outer row's value (a literal) and runs the plan. Nested
//! subqueries inside it keep their references to it, shifted by one level
//! per nesting, and get them when they are run in turn.
//!
//! ```text
//!  level 0: the subquery's plan      Outer{depth: d} → outer[d - 1]
//!  level 1: a subquery inside it     Outer{depth: d} → outer[d - 2] (d ≥ 2)
//! ```
//!
//! Per-row execution runs on one worker: starting threads per outer row
//! costs more than the subquery usually does.

use std::sync::Arc;

use arrow_array::RecordBatch;

use super::{ExecContext, SubqueryRunner, execute};
use crate::error::{Result, SqlError};
use crate::plan::{Access, Expr, JoinAlgorithm, Node, Plan, SubqueryKind};
use crate::types::Value;

/// Runs subquery plans with the executor.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExecSubqueryRunner;

impl SubqueryRunner for ExecSubqueryRunner {
    fn run(&self, plan: &Plan, outer: &[Vec<Value>], ctx: &ExecContext) -> Result<Vec<RecordBatch>> {
        let mut bound = plan.clone();
        bind_plan(&mut bound, outer, 0)?;
        let mut inner = ctx.clone();
        inner.workers = 1;
        Ok(execute(&bound, &inner)?.batches)
    }
}

/// `ctx` with the executor's runner, unless the caller gave one.
pub fn with_runner(ctx: &ExecContext) -> ExecContext {
    let mut ctx = ctx.clone();
    if ctx.subqueries.is_none() {
        ctx.subqueries = Some(Arc::new(ExecSubqueryRunner));
    }
    ctx
}

fn bind_expr(expr: &mut Expr, outer: &[Vec<Value>], level: usize) -> Result<()> {
    match expr {
        Expr::Outer { depth, index, ty } if *depth > level => {
            let row = outer.get(*depth - level - 1).ok_or_else(|| {
                SqlError::internal(format!("outer reference {depth} levels out with {} outer rows", outer.len()))
            })?;
            let value = row.get(*index).cloned().ok_or_else(|| SqlError::internal("outer column out of range"))?;
            *expr = Expr::Literal { value, ty: *ty };
        }
        Expr::Column { .. } | Expr::Outer { .. } | Expr::Param { .. } | Expr::Literal { .. } => {}
        Expr::Unary { expr, .. } | Expr::Cast { expr, .. } => bind_expr(expr, outer, level)?,
        Expr::Binary { left, right, .. } => {
            bind_expr(left, outer, level)?;
            bind_expr(right, outer, level)?;
        }
        Expr::Case { operand, whens, else_, .. } => {
            for e in operand.iter_mut().chain(else_.iter_mut()) {
                bind_expr(e, outer, level)?;
            }
            for (w, t) in whens {
                bind_expr(w, outer, level)?;
                bind_expr(t, outer, level)?;
            }
        }
        Expr::Like { expr, pattern, .. } => {
            bind_expr(expr, outer, level)?;
            bind_expr(pattern, outer, level)?;
        }
        Expr::InList { expr, list, .. } => {
            bind_expr(expr, outer, level)?;
            bind_all(list, outer, level)?;
        }
        Expr::Function { args, .. } => bind_all(args, outer, level)?,
        Expr::Subquery { kind, plan, .. } => {
            match kind {
                SubqueryKind::In { expr, .. } | SubqueryKind::Quantified { expr, .. } => bind_expr(expr, outer, level)?,
                SubqueryKind::Scalar | SubqueryKind::Exists { .. } => {}
            }
            bind_plan(plan, outer, level + 1)?;
        }
    }
    Ok(())
}

fn bind_all(exprs: &mut [Expr], outer: &[Vec<Value>], level: usize) -> Result<()> {
    exprs.iter_mut().try_for_each(|e| bind_expr(e, outer, level))
}

fn bind_plan(plan: &mut Plan, outer: &[Vec<Value>], level: usize) -> Result<()> {
    match &mut plan.node {
        Node::Scan { filter, access, .. } => {
            if let Some(f) = filter {
                bind_expr(f, outer, level)?;
            }
            if let Access::Index { lower, upper, .. } = access {
                bind_all(lower, outer, level)?;
                bind_all(upper, outer, level)?;
            }
        }
        Node::Values { rows } => rows.iter_mut().try_for_each(|r| bind_all(r, outer, level))?,
        Node::Filter { input, predicate } => {
            bind_expr(predicate, outer, level)?;
            bind_plan(input, outer, level)?;
        }
        Node::Project { input, exprs } => {
            bind_all(exprs, outer, level)?;
            bind_plan(input, outer, level)?;
        }
        Node::Join { left, right, on, algorithm, .. } => {
            if let Some(on) = on {
                bind_expr(on, outer, level)?;
            }
            match algorithm {
                JoinAlgorithm::Hash { left_keys, right_keys } => {
                    bind_all(left_keys, outer, level)?;
                    bind_all(right_keys, outer, level)?;
                }
                JoinAlgorithm::IndexNestedLoop { keys, .. } => bind_all(keys, outer, level)?,
                JoinAlgorithm::Unchosen | JoinAlgorithm::NestedLoop => {}
            }
            bind_plan(left, outer, level)?;
            bind_plan(right, outer, level)?;
        }
        Node::Aggregate { input, group_by, aggregates } => {
            bind_all(group_by, outer, level)?;
            for a in aggregates {
                for e in a.arg.iter_mut().chain(a.filter.iter_mut()) {
                    bind_expr(e, outer, level)?;
                }
            }
            bind_plan(input, outer, level)?;
        }
        Node::Sort { input, keys } => {
            for k in keys {
                bind_expr(&mut k.expr, outer, level)?;
            }
            bind_plan(input, outer, level)?;
        }
        Node::Limit { input, .. } | Node::Distinct { input } => bind_plan(input, outer, level)?,
        Node::SetOp { left, right, .. } => {
            bind_plan(left, outer, level)?;
            bind_plan(right, outer, level)?;
        }
    }
    Ok(())
}
