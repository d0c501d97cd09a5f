//! Boolean logic, CASE, IN lists: PostgreSQL's three-valued logic.
//!
//! AND/OR are Kleene's (`NULL AND FALSE = FALSE`, `NULL OR TRUE = TRUE`) and
//! lazy: the right side is evaluated only on rows the left side leaves
//! undecided, as PostgreSQL stops at the first deciding argument. CASE
//! evaluates each WHEN on the rows no earlier WHEN took and each THEN only
//! on the rows that take it; the pieces are put back in row order with
//! `interleave`. `x IN (a, b)` is `x = a OR x = b` (so NULL when no match
//! and a NULL in the list), `NOT IN` its negation.

use std::sync::Arc;

use arrow_arith::boolean;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array, new_null_array};

use super::{EvalContext, as_bool, bools, cast_array, compare_arrays, evaluate_with, map_rows};
use crate::error::{Result, SqlError};
use crate::plan::{BinaryOp, Expr, UnaryOp};
use crate::types::DataType;
use crate::types::ops::{CastMode, negate};

fn ok(r: std::result::Result<BooleanArray, arrow_schema::ArrowError>) -> Result<ArrayRef> {
    r.map(|a| Arc::new(a) as ArrayRef).map_err(super::arrow_err)
}

pub(super) fn unary(
    op: UnaryOp,
    inner: &Expr,
    ty: &DataType,
    batch: &RecordBatch,
    ev: &EvalContext<'_>,
) -> Result<ArrayRef> {
    let a = evaluate_with(inner, batch, ev)?;
    if op == UnaryOp::Neg {
        return super::arith::negate_array(&a, &inner.ty(), ty)
            .or_else(|_| map_rows(&[&a], a.len(), ty, |v| negate(&v[0], ty)));
    }
    if op == UnaryOp::IsNull {
        return ok(boolean::is_null(&a));
    }
    if op == UnaryOp::IsNotNull {
        return ok(boolean::is_not_null(&a));
    }
    if a.data_type() == &arrow_schema::DataType::Null {
        let v = match op {
            UnaryOp::Not => None,
            UnaryOp::IsTrue | UnaryOp::IsFalse => Some(false),
            _ => Some(true),
        };
        return Ok(bools(a.len(), v));
    }
    let b = as_bool(&a)?;
    let n = b.len();
    let map = |f: fn(Option<bool>) -> bool| -> ArrayRef {
        Arc::new((0..n).map(|i| Some(f(b.is_valid(i).then(|| b.value(i))))).collect::<BooleanArray>())
    };
    Ok(match op {
        UnaryOp::Not => return ok(boolean::not(b)),
        UnaryOp::IsTrue => map(|v| v == Some(true)),
        UnaryOp::IsNotTrue => map(|v| v != Some(true)),
        UnaryOp::IsFalse => map(|v| v == Some(false)),
        UnaryOp::IsNotFalse => map(|v| v != Some(false)),
        _ => return Err(SqlError::internal(format!("unary {op:?}"))),
    })
}

/// Rows `indices` of `batch` (any number of columns, zero included).
pub(super) fn take_batch(batch: &RecordBatch, indices: &[u32]) -> Result<RecordBatch> {
    let idx = UInt32Array::from(indices.to_vec());
    let cols = batch
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), &idx, None))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(super::arrow_err)?;
    RecordBatch::try_new_with_options(
        batch.schema(),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(indices.len())),
    )
    .map_err(super::arrow_err)
}

/// Evaluates `expr` on rows `indices` of `batch`, as type `ty`.
pub(super) fn eval_on(
    expr: &Expr,
    batch: &RecordBatch,
    indices: &[u32],
    ty: &DataType,
    ev: &EvalContext<'_>,
) -> Result<ArrayRef> {
    let sub = if indices.len() == batch.num_rows() { batch.clone() } else { take_batch(batch, indices)? };
    let a = evaluate_with(expr, &sub, ev)?;
    coerce(a, &expr.ty(), ty)
}

/// `a` (of type `from`) as an array of `ty`'s Arrow type.
pub(super) fn coerce(a: ArrayRef, from: &DataType, ty: &DataType) -> Result<ArrayRef> {
    if a.data_type() == &ty.arrow() && (from == ty || !matches!(ty, DataType::Char(_) | DataType::Varchar(Some(_)))) {
        Ok(a)
    } else {
        cast_array(&a, from, ty, CastMode::Explicit)
    }
}

/// Puts pieces (rows `indices` of the output, their values) together in
/// row order; rows no piece covers are NULL.
pub(super) fn merge(n: usize, ty: &DataType, pieces: Vec<(Vec<u32>, ArrayRef)>) -> Result<ArrayRef> {
    let nulls = new_null_array(&ty.arrow(), 1);
    let mut map: Vec<(usize, usize)> = vec![(0, 0); n];
    let mut arrays: Vec<&dyn Array> = vec![nulls.as_ref()];
    for (k, (indices, a)) in pieces.iter().enumerate() {
        arrays.push(a.as_ref());
        for (j, &row) in indices.iter().enumerate() {
            map[row as usize] = (k + 1, j);
        }
    }
    arrow_select::interleave::interleave(&arrays, &map).map_err(super::arrow_err)
}

/// Rows of `indices` whose value in `b` is TRUE, and the others.
fn split(indices: &[u32], b: &BooleanArray) -> (Vec<u32>, Vec<u32>) {
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for (j, &row) in indices.iter().enumerate() {
        if b.is_valid(j) && b.value(j) { yes.push(row) } else { no.push(row) }
    }
    (yes, no)
}

pub(super) fn and_or(
    op: BinaryOp,
    left: &Expr,
    right: &Expr,
    batch: &RecordBatch,
    ev: &EvalContext<'_>,
) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let l = coerce(evaluate_with(left, batch, ev)?, &left.ty(), &DataType::Bool)?;
    let lb = as_bool(&l)?;
    let decided = if op == BinaryOp::And { Some(false) } else { Some(true) };
    let open: Vec<u32> =
        (0..n as u32).filter(|&i| (lb.is_valid(i as usize).then(|| lb.value(i as usize))) != decided).collect();
    if open.is_empty() {
        return Ok(l);
    }
    let r = eval_on(right, batch, &open, &DataType::Bool, ev)?;
    let r = if open.len() == n { r } else { merge(n, &DataType::Bool, vec![(open, r)])? };
    let rb = as_bool(&r)?;
    ok(if op == BinaryOp::And { boolean::and_kleene(lb, rb) } else { boolean::or_kleene(lb, rb) })
}

pub(super) fn case(
    operand: Option<&Expr>,
    whens: &[(Expr, Expr)],
    else_: Option<&Expr>,
    ty: &DataType,
    batch: &RecordBatch,
    ev: &EvalContext<'_>,
) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let operand = match operand {
        Some(e) => Some((evaluate_with(e, batch, ev)?, e.ty())),
        None => None,
    };
    let mut open: Vec<u32> = (0..n as u32).collect();
    let mut pieces = Vec::new();
    for (when, then) in whens {
        if open.is_empty() {
            break;
        }
        let cond = match &operand {
            Some((op_arr, op_ty)) => {
                let w = eval_on(when, batch, &open, &when.ty(), ev)?;
                let idx = UInt32Array::from(open.clone());
                let o = arrow_select::take::take(op_arr.as_ref(), &idx, None).map_err(super::arrow_err)?;
                compare_arrays(BinaryOp::Eq, &o, op_ty, &w, &when.ty())?
            }
            None => eval_on(when, batch, &open, &DataType::Bool, ev)?,
        };
        let (taken, rest) = split(&open, as_bool(&cond)?);
        if !taken.is_empty() {
            let v = eval_on(then, batch, &taken, ty, ev)?;
            pieces.push((taken, v));
        }
        open = rest;
    }
    if let (Some(e), false) = (else_, open.is_empty()) {
        let v = eval_on(e, batch, &open, ty, ev)?;
        pieces.push((open, v));
    }
    merge(n, ty, pieces)
}

pub(super) fn in_list(
    e: &Expr,
    list: &[Expr],
    negated: bool,
    batch: &RecordBatch,
    ev: &EvalContext<'_>,
) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let mut x = evaluate_with(e, batch, ev)?;
    let mut x_ty = e.ty();
    // A char(n) operand compares as text (`compare.rs`): unpad it once, not
    // once per item.
    if matches!(x_ty, DataType::Char(_)) && list.iter().all(|i| i.ty().is_text()) {
        x = cast_array(&x, &x_ty, &DataType::Text, CastMode::Explicit)?;
        x_ty = DataType::Text;
    }
    let mut acc: ArrayRef = bools(n, Some(false));
    for item in list {
        let v = evaluate_with(item, batch, ev)?;
        let eq = compare_arrays(BinaryOp::Eq, &x, &x_ty, &v, &item.ty())?;
        acc = ok(boolean::or_kleene(as_bool(&acc)?, as_bool(&eq)?))?;
    }
    if negated { ok(boolean::not(as_bool(&acc)?)) } else { Ok(acc) }
}

/// COALESCE: each argument only on the rows still NULL.
pub(super) fn coalesce(args: &[Expr], ty: &DataType, batch: &RecordBatch, ev: &EvalContext<'_>) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let mut open: Vec<u32> = (0..n as u32).collect();
    let mut pieces = Vec::new();
    for arg in args {
        if open.is_empty() {
            break;
        }
        let v = eval_on(arg, batch, &open, ty, ev)?;
        let (mut have, mut rest) = (Vec::new(), Vec::new());
        let mut take = Vec::new();
        for (j, &row) in open.iter().enumerate() {
            if v.is_valid(j) {
                have.push(row);
                take.push(j as u32);
            } else {
                rest.push(row);
            }
        }
        if !have.is_empty() {
            let vals =
                arrow_select::take::take(v.as_ref(), &UInt32Array::from(take), None).map_err(super::arrow_err)?;
            pieces.push((have, vals));
        }
        open = rest;
    }
    merge(n, ty, pieces)
}
