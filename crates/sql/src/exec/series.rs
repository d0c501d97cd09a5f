//! `generate_series(start, stop, step)` (`Node::Series`): a source of
//! [`BATCH_ROWS`]-row batches of one integer column.
//!
//! As in PostgreSQL: a NULL argument gives no rows, a zero step is error
//! 22023, and the series ends before a value its type cannot hold (it
//! never overflows: `generate_series(2147483646, 2147483647)` is two rows).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int16Array, Int32Array, Int64Array};

use super::pipeline::Operator;
use super::util::{empty_rows_batch, make_batch};
use super::{BATCH_ROWS, ExecContext, check_interrupts, expr};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Expr, Schema};
use crate::types::DataType;

pub struct SeriesOp {
    /// The next value, None once the series is done.
    next: Option<i64>,
    stop: i64,
    step: i64,
    /// The bounds of the column's type.
    min: i64,
    max: i64,
    schema: Schema,
    ctx: ExecContext,
}

impl SeriesOp {
    /// Evaluates the arguments (once, for this execution).
    pub fn new(start: &Expr, stop: &Expr, step: &Expr, schema: &Schema, ctx: &ExecContext) -> Result<SeriesOp> {
        let [start, stop, step] = [start, stop, step].map(|e| argument(e, ctx));
        let (start, stop, step) = (start?, stop?, step?);
        if step == Some(0) {
            return Err(SqlError::new(SqlState::INVALID_PARAMETER_VALUE, "step size cannot equal zero"));
        }
        let (min, max) = match schema.first().map(|f| f.ty) {
            Some(DataType::Int64) => (i64::MIN, i64::MAX),
            _ => (i64::from(i32::MIN), i64::from(i32::MAX)),
        };
        let mut op = SeriesOp { next: None, stop: 0, step: 1, min, max, schema: schema.clone(), ctx: ctx.clone() };
        if let (Some(a), Some(b), Some(s)) = (start, stop, step) {
            (op.next, op.stop, op.step) = (Some(a), b, s);
        }
        Ok(op)
    }

    /// Whether `v` is still in the series.
    fn within(&self, v: i64) -> bool {
        if self.step > 0 { v <= self.stop } else { v >= self.stop }
    }
}

/// An argument's value: NULL as None.
fn argument(e: &Expr, ctx: &ExecContext) -> Result<Option<i64>> {
    let a: ArrayRef = expr::evaluate(e, &empty_rows_batch(1), ctx)?;
    if a.is_null(0) {
        return Ok(None);
    }
    let any = a.as_any();
    if let Some(x) = any.downcast_ref::<Int64Array>() {
        Ok(Some(x.value(0)))
    } else if let Some(x) = any.downcast_ref::<Int32Array>() {
        Ok(Some(i64::from(x.value(0))))
    } else if let Some(x) = any.downcast_ref::<Int16Array>() {
        Ok(Some(i64::from(x.value(0))))
    } else {
        Err(SqlError::internal(format!("generate_series argument of arrow type {}", a.data_type())))
    }
}

impl Operator for SeriesOp {
    fn next(&mut self) -> Result<Option<arrow_array::RecordBatch>> {
        check_interrupts(&self.ctx)?;
        let Some(mut v) = self.next.filter(|&v| self.within(v)) else { return Ok(None) };
        let mut values = Vec::with_capacity(BATCH_ROWS);
        while values.len() < BATCH_ROWS {
            values.push(v);
            match v.checked_add(self.step).filter(|n| (self.min..=self.max).contains(n) && self.within(*n)) {
                Some(n) => v = n,
                None => {
                    self.next = None;
                    break;
                }
            }
        }
        if self.next.is_some() {
            self.next = Some(v);
        }
        let n = values.len();
        let column: ArrayRef = if self.max == i64::MAX {
            Arc::new(Int64Array::from(values))
        } else {
            Arc::new(Int32Array::from_iter_values(values.into_iter().map(|x| x as i32)))
        };
        make_batch(&self.schema, vec![column], n).map(Some)
    }
}
