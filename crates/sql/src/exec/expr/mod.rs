//! Expression evaluation over Arrow batches, with PostgreSQL's semantics.
//!
//! [`evaluate`] turns a bound [`Expr`] and a [`RecordBatch`] into one array
//! of `batch.num_rows()` values. Each kind of expression has its module:
//!
//! ```text
//!  Column, Param, Outer, Literal ─► here (a column, or a value repeated)
//!  comparisons, IS DISTINCT, IN  ─► compare.rs  (arrow-ord; NaN and -0
//!                                                and intervals by hand)
//!  + - * / %, ||, unary minus    ─► arith.rs    (arrow-arith checked for
//!                                                integers, own numeric)
//!  AND OR NOT IS, CASE, COALESCE ─► logic.rs    (Kleene kernels; CASE and
//!                                                COALESCE lazy per row)
//!  CAST                          ─► cast.rs     (fast paths, else types::ops)
//!  LIKE / ILIKE                  ─► like.rs     (arrow-string)
//!  functions                     ─► func.rs, datefunc.rs
//!  subqueries                    ─► subquery.rs (per distinct outer row)
//! ```
//!
//! Vectorized kernels run where their semantics are PostgreSQL's; where
//! they are not (float8 overflow checks, interval order, date arithmetic,
//! most functions) the evaluator goes row by row through the scalar
//! functions of [`crate::types::ops`], which define the semantics. When a
//! fast kernel fails (an overflow), the row-wise path recomputes the batch,
//! so the error reported is the first failing row's, with PostgreSQL's
//! message.
//!
//! Laziness: CASE evaluates a branch only on the rows that take it (a
//! filtered batch), so `CASE WHEN x = 0 THEN 0 ELSE 1 / x END` never divides
//! by zero; COALESCE evaluates an argument only on rows whose earlier
//! arguments were NULL. An expression without column references (constant)
//! is evaluated once on a one-row batch and repeated.
//!
//! Correlation: [`EvalContext::outer`] holds the rows of the enclosing
//! queries (`outer[depth - 1]`), which [`Expr::Outer`] reads; a subquery is
//! run once per distinct outer row with this batch's row pushed in front.

mod arith;
mod cast;
mod compare;
mod datefunc;
mod func;
mod like;
mod logic;
mod pgfunc;
mod subquery;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, Schema};

pub use cast::cast_array;
pub use compare::compare_arrays;
pub use datefunc::extract_scale;

use super::ExecContext;
use crate::error::{Result, SqlError};
use crate::plan::Expr;
use crate::types::arrow::{array_from_values, repeat_value, value_at};
use crate::types::ops::{CastMode, cast_value};
use crate::types::{DataType, Value};

/// What evaluation needs beyond the batch: the statement's context and the
/// values of the enclosing queries' current rows.
#[derive(Clone, Copy)]
pub struct EvalContext<'a> {
    pub exec: &'a ExecContext,
    /// `outer[depth - 1]`: the row of the query `depth` levels out.
    pub outer: &'a [Vec<Value>],
}

impl<'a> EvalContext<'a> {
    pub fn new(exec: &'a ExecContext) -> EvalContext<'a> {
        EvalContext { exec, outer: &[] }
    }
}

/// Evaluates `expr` on every row of `batch`: an array of `batch.num_rows()`.
pub fn evaluate(expr: &Expr, batch: &RecordBatch, ctx: &ExecContext) -> Result<ArrayRef> {
    evaluate_with(expr, batch, &EvalContext::new(ctx))
}

/// [`evaluate`] inside a correlated subquery (outer rows available).
pub fn evaluate_with(expr: &Expr, batch: &RecordBatch, ev: &EvalContext<'_>) -> Result<ArrayRef> {
    let n = batch.num_rows();
    if n != 1 && is_foldable(expr) {
        let one = evaluate_with(expr, &one_row_batch(), ev)?;
        let v = value_at(one.as_ref(), 0)?;
        return repeat_value(&v, &expr.ty(), n);
    }
    match expr {
        Expr::Column { index, .. } => {
            batch.columns().get(*index).cloned().ok_or_else(|| {
                SqlError::internal(format!("column {index} of a batch of {} columns", batch.num_columns()))
            })
        }
        Expr::Outer { depth, index, ty } => {
            let v = ev.outer.get(depth.wrapping_sub(1)).and_then(|row| row.get(*index)).ok_or_else(|| {
                SqlError::internal(format!("outer reference depth {depth} column {index} without its outer row"))
            })?;
            literal_array(v, ty, n)
        }
        Expr::Param { index, ty } => {
            let v = ev.exec.params.get(*index).ok_or_else(|| {
                SqlError::new(crate::SqlState::UNDEFINED_PARAMETER, format!("there is no parameter ${}", index + 1))
            })?;
            literal_array(v, ty, n)
        }
        Expr::Literal { value, ty } => literal_array(value, ty, n),
        Expr::Unary { op, expr: inner, ty } => logic::unary(*op, inner, ty, batch, ev),
        Expr::Binary { op, left, right, ty } => {
            if matches!(op, crate::plan::BinaryOp::And | crate::plan::BinaryOp::Or) {
                return logic::and_or(*op, left, right, batch, ev);
            }
            let mut l = evaluate_with(left, batch, ev)?;
            let mut r = evaluate_with(right, batch, ev)?;
            if *op == crate::plan::BinaryOp::Concat {
                // `||` takes text: char(n) loses its padding (bpchar → text).
                let (lt, rt) = (left.ty(), right.ty());
                if let DataType::Char(_) = lt {
                    l = cast_array(&l, &lt, &DataType::Text, CastMode::Explicit)?;
                }
                if let DataType::Char(_) = rt {
                    r = cast_array(&r, &rt, &DataType::Text, CastMode::Explicit)?;
                }
            }
            if op.is_comparison() {
                compare::compare_arrays(*op, &l, &left.ty(), &r, &right.ty())
            } else {
                arith::binary(*op, &l, &left.ty(), &r, &right.ty(), ty)
            }
        }
        Expr::Cast { expr: inner, ty } => {
            let a = evaluate_with(inner, batch, ev)?;
            cast_array(&a, &inner.ty(), ty, CastMode::Explicit)
        }
        Expr::Case { operand, whens, else_, ty } => {
            logic::case(operand.as_deref(), whens, else_.as_deref(), ty, batch, ev)
        }
        Expr::Like { expr: e, pattern, negated, case_insensitive, escape } => {
            let s = evaluate_with(e, batch, ev)?;
            let p = evaluate_with(pattern, batch, ev)?;
            like::like(&s, &e.ty(), &p, &pattern.ty(), *negated, *case_insensitive, *escape)
        }
        Expr::InList { expr: e, list, negated } => logic::in_list(e, list, *negated, batch, ev),
        Expr::Function { func, args, ty } => func::call(*func, args, ty, batch, ev),
        Expr::Subquery { kind, plan, ty } => subquery::evaluate(kind, plan, ty, batch, ev),
    }
}

/// True when `expr` is worth folding: an operation (not a leaf) that reads
/// no column and no subquery, so its value is the same on every row
/// (parameters and outer references are fixed for one evaluation).
fn is_foldable(expr: &Expr) -> bool {
    !matches!(
        expr,
        Expr::Column { .. } | Expr::Subquery { .. } | Expr::Literal { .. } | Expr::Param { .. } | Expr::Outer { .. }
    ) && is_constant(expr)
}

/// No column and no subquery anywhere in `expr`.
pub fn is_constant(expr: &Expr) -> bool {
    match expr {
        Expr::Column { .. } | Expr::Subquery { .. } => false,
        Expr::Literal { .. } | Expr::Param { .. } | Expr::Outer { .. } => true,
        Expr::Unary { expr, .. } | Expr::Cast { expr, .. } => is_constant(expr),
        Expr::Binary { left, right, .. } => is_constant(left) && is_constant(right),
        Expr::Case { operand, whens, else_, .. } => {
            operand.as_deref().is_none_or(is_constant)
                && whens.iter().all(|(w, t)| is_constant(w) && is_constant(t))
                && else_.as_deref().is_none_or(is_constant)
        }
        Expr::Like { expr, pattern, .. } => is_constant(expr) && is_constant(pattern),
        Expr::InList { expr, list, .. } => is_constant(expr) && list.iter().all(is_constant),
        Expr::Function { args, .. } => args.iter().all(is_constant),
    }
}

/// A batch with no columns and one row: where literal-only expressions are
/// evaluated (constant folding).
pub fn one_row_batch() -> RecordBatch {
    RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )
    .expect("an empty schema with a row count is a valid batch")
}

/// `n` copies of `v` as type `ty`, converting `v` when its kind differs.
fn literal_array(v: &Value, ty: &DataType, n: usize) -> Result<ArrayRef> {
    match repeat_value(v, ty, n) {
        Ok(a) => Ok(a),
        Err(_) => repeat_value(&cast_value(v, &v.data_type(), ty, CastMode::Explicit)?, ty, n),
    }
}

/// Applies `f` to the values of each row of `args` (NULLs included) and
/// builds an array of `ty`: the row-at-a-time path.
pub(crate) fn map_rows<F>(args: &[&ArrayRef], n: usize, ty: &DataType, mut f: F) -> Result<ArrayRef>
where
    F: FnMut(&[Value]) -> Result<Value>,
{
    let mut out = Vec::with_capacity(n);
    let mut row = Vec::with_capacity(args.len());
    for i in 0..n {
        row.clear();
        for a in args {
            row.push(value_at(a.as_ref(), i)?);
        }
        out.push(f(&row)?);
    }
    array_from_values(&out, ty)
}

/// Converts an Arrow kernel's error: overflow and division by zero are the
/// user's (reported by the row-wise path); anything else is ours.
pub(crate) fn arrow_err(e: ArrowError) -> SqlError {
    match e {
        ArrowError::DivideByZero => SqlError::division_by_zero(),
        other => SqlError::internal(format!("arrow kernel: {other}")),
    }
}

/// The array as the (only) boolean array kind.
pub(crate) fn as_bool(a: &ArrayRef) -> Result<&arrow_array::BooleanArray> {
    a.as_any()
        .downcast_ref::<arrow_array::BooleanArray>()
        .ok_or_else(|| SqlError::internal(format!("boolean expected, got an Arrow {} array", a.data_type())))
}

/// A boolean array of `n` NULLs or of `n` copies of `b`.
pub(crate) fn bools(n: usize, b: Option<bool>) -> ArrayRef {
    Arc::new(arrow_array::BooleanArray::from(vec![b; n]))
}
