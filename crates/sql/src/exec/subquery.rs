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
//!
//! ## The memo
//!
//! A subquery that decorrelation could not turn into a join (one under
//! OR, in a select list, correlated inside a join) runs once per outer
//! row. Its result depends only on the plan with the outer values it
//! reads substituted (no function is volatile; the snapshot is the
//! statement's), so [`MemoSubqueryRunner`], the runner every execution
//! gets, keeps each result under the text of that bound plan. An outer
//! query of 8,000 rows whose subquery reads one column of 20 distinct
//! values runs it 20 times; a nested subquery, bound afresh for each run
//! of its parent, hits the memo whenever its own bound plan repeats.
//!
//! ```text
//!  run(plan, outer) ─► bind outer values ─► key = text of bound plan
//!                        memo hit ─► clone of the batches (Arc'd arrays)
//!                        miss     ─► execute, remember (up to the caps)
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;

use super::{ExecContext, SubqueryRunner, execute};
use crate::error::{Result, SqlError};
use crate::plan::{Access, Expr, JoinAlgorithm, Node, Plan, SubqueryKind};
use crate::types::Value;
use crate::types::arrow::value_at;

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

/// Results kept per statement at most: distinct bound plans, and rows.
const MEMO_PLANS: usize = 100_000;
const MEMO_ROWS: usize = 1 << 20;
/// A closed subtree with more rows stays as it is (a Values node
/// evaluates row by row).
const CLOSED_ROWS_MAX: usize = 4096;

/// [`ExecSubqueryRunner`] with a memo of results by bound plan (the
/// module's essay); one per statement, shared by its nested executions.
#[derive(Debug, Default)]
pub struct MemoSubqueryRunner {
    memo: Mutex<Memo>,
}

#[derive(Debug, Default)]
struct Memo {
    results: HashMap<String, Vec<RecordBatch>>,
    rows: usize,
}

impl SubqueryRunner for MemoSubqueryRunner {
    fn run(&self, plan: &Plan, outer: &[Vec<Value>], ctx: &ExecContext) -> Result<Vec<RecordBatch>> {
        let mut bound = plan.clone();
        bind_plan(&mut bound, outer, 0)?;
        let key = format!("{bound:?}");
        if let Some(hit) = self.lock().results.get(&key) {
            return Ok(hit.clone());
        }
        let mut inner = ctx.clone();
        inner.workers = 1;
        let mut run = plan.clone();
        self.materialize_closed(&mut run, &inner)?;
        bind_plan(&mut run, outer, 0)?;
        let batches = execute(&run, &inner)?.batches;
        self.remember(key, &batches);
        Ok(batches)
    }
}

impl MemoSubqueryRunner {
    fn remember(&self, key: String, batches: &[RecordBatch]) {
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let mut memo = self.lock();
        if memo.results.len() < MEMO_PLANS && memo.rows + rows <= MEMO_ROWS {
            memo.rows += rows;
            memo.results.insert(key, batches.to_vec());
        }
    }

    /// Replaces each largest subtree of `plan` that reads no outer value
    /// and scans a table by a Values node of its rows (up to
    /// [`CLOSED_ROWS_MAX`]), computed once per statement: a correlated
    /// subquery run per outer row then scans only what depends on it.
    /// The inner side of an index nested-loop join stays a Scan (the
    /// join looks rows up in its index).
    fn materialize_closed(&self, plan: &mut Plan, ctx: &ExecContext) -> Result<()> {
        let children: Vec<&mut Plan> = match &mut plan.node {
            Node::Join { left, algorithm: JoinAlgorithm::IndexNestedLoop { .. }, .. } => vec![left],
            Node::Join { left, right, .. } | Node::SetOp { left, right, .. } => vec![left, right],
            Node::Filter { input, .. }
            | Node::Project { input, .. }
            | Node::Aggregate { input, .. }
            | Node::Sort { input, .. }
            | Node::Limit { input, .. }
            | Node::Distinct { input } => vec![input],
            Node::Scan { .. } | Node::Values { .. } | Node::Series { .. } => vec![],
        };
        for child in children {
            if plan_reads_outer(child) {
                self.materialize_closed(child, ctx)?;
            } else if has_scan(child) {
                self.replace_closed(child, ctx)?;
            }
        }
        Ok(())
    }

    fn replace_closed(&self, plan: &mut Plan, ctx: &ExecContext) -> Result<()> {
        let key = format!("closed {plan:?}");
        let hit = self.lock().results.get(&key).cloned();
        let batches = match hit {
            Some(b) => b,
            None => {
                let b = execute(plan, ctx)?.batches;
                self.remember(key, &b);
                b
            }
        };
        if batches.iter().map(|b| b.num_rows()).sum::<usize>() > CLOSED_ROWS_MAX {
            return Ok(());
        }
        let mut rows = Vec::new();
        for b in &batches {
            for i in 0..b.num_rows() {
                let row = b
                    .columns()
                    .iter()
                    .zip(plan.schema.iter())
                    .map(|(c, f)| Ok(Expr::Literal { value: value_at(c.as_ref(), i)?, ty: f.ty }))
                    .collect::<Result<Vec<_>>>()?;
                // A value whose own type is not the column's (the plan's
                // schema and its arrays may differ in width): keep the scan.
                let exact = row.iter().all(|e| match e {
                    Expr::Literal { value, ty } => value.is_null() || same_kind(value.data_type(), *ty),
                    _ => false,
                });
                if !exact {
                    return Ok(());
                }
                rows.push(row);
            }
        }
        plan.node = Node::Values { rows };
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memo> {
        // A panic while holding the lock leaves a consistent map (inserts
        // are single calls): the poisoned guard is still usable.
        self.memo.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `ctx` with a memoizing runner for this statement, unless the caller
/// gave one.
pub fn with_runner(ctx: &ExecContext) -> ExecContext {
    let mut ctx = ctx.clone();
    if ctx.subqueries.is_none() {
        ctx.subqueries = Some(Arc::new(MemoSubqueryRunner::default()));
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
                SubqueryKind::Scalar | SubqueryKind::Array | SubqueryKind::Exists { .. } => {}
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
        Node::Series { start, stop, step } => {
            [start, stop, step].into_iter().try_for_each(|e| bind_expr(e, outer, level))?
        }
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
                JoinAlgorithm::Hash { left_keys, right_keys, .. } => {
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

/// The expressions of one plan node (not its children's).
fn node_exprs(node: &Node) -> Vec<&Expr> {
    let mut out: Vec<&Expr> = Vec::new();
    match node {
        Node::Scan { filter, access, .. } => {
            out.extend(filter.iter());
            if let Access::Index { lower, upper, .. } = access {
                out.extend(lower.iter().chain(upper.iter()));
            }
        }
        Node::Values { rows } => out.extend(rows.iter().flatten()),
        Node::Series { start, stop, step } => out.extend([start, stop, step]),
        Node::Filter { predicate, .. } => out.push(predicate),
        Node::Project { exprs, .. } => out.extend(exprs.iter()),
        Node::Join { on, algorithm, .. } => {
            out.extend(on.iter());
            match algorithm {
                JoinAlgorithm::Hash { left_keys, right_keys, .. } => {
                    out.extend(left_keys.iter().chain(right_keys.iter()))
                }
                JoinAlgorithm::IndexNestedLoop { keys, .. } => out.extend(keys.iter()),
                JoinAlgorithm::Unchosen | JoinAlgorithm::NestedLoop => {}
            }
        }
        Node::Aggregate { group_by, aggregates, .. } => {
            out.extend(group_by.iter());
            out.extend(aggregates.iter().flat_map(|a| a.arg.iter().chain(a.filter.iter())));
        }
        Node::Sort { keys, .. } => out.extend(keys.iter().map(|k| &k.expr)),
        Node::Limit { .. } | Node::Distinct { .. } | Node::SetOp { .. } => {}
    }
    out
}

/// Whether `plan` has an outer reference anywhere, nested subqueries'
/// plans included (conservative: a nested subquery's reference to its
/// own parent counts too).
pub(crate) fn plan_reads_outer(plan: &Plan) -> bool {
    node_exprs(&plan.node).into_iter().any(expr_reads_outer) || plan.children().into_iter().any(plan_reads_outer)
}

fn expr_reads_outer(e: &Expr) -> bool {
    let mut found = false;
    crate::bind::aggregate::walk(e, &mut |x| match x {
        Expr::Outer { .. } => found = true,
        Expr::Subquery { plan, .. } => found |= plan_reads_outer(plan),
        _ => {}
    });
    found
}

fn has_scan(plan: &Plan) -> bool {
    matches!(plan.node, Node::Scan { .. }) || plan.children().into_iter().any(has_scan)
}

/// Whether a value of type `a` is one of column type `b` (text types are
/// one kind; numeric ones of any precision and scale another).
fn same_kind(a: crate::types::DataType, b: crate::types::DataType) -> bool {
    use crate::types::DataType as T;
    let text = |t: T| matches!(t, T::Text | T::Varchar(_) | T::Char(_));
    (text(a) && text(b)) || std::mem::discriminant(&a) == std::mem::discriminant(&b)
}
