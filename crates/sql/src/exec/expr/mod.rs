//! Expression evaluation over Arrow batches.
//!
//! PLACEHOLDER (foundation commit): evaluates only column references,
//! literals of a few types, comparisons, AND/OR/NOT and IS [NOT] NULL, so
//! that operator code can be written against [`evaluate`]'s signature; the
//! full evaluator replaces this file.

use std::sync::Arc;

use arrow_arith::boolean;
use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray, new_null_array};

use super::ExecContext;
use crate::error::{Result, SqlError};
use crate::plan::{BinaryOp, Expr, UnaryOp};
use crate::types::Value;
use arrow_ord::cmp;

/// Evaluates `expr` on every row of `batch`: an array of `batch.num_rows()`.
pub fn evaluate(expr: &Expr, batch: &RecordBatch, _ctx: &ExecContext) -> Result<ArrayRef> {
    let n = batch.num_rows();
    match expr {
        Expr::Column { index, .. } => Ok(batch.column(*index).clone()),
        Expr::Literal { value, ty } => Ok(match value {
            Value::Null => new_null_array(&ty.arrow(), n),
            Value::Bool(b) => Arc::new(BooleanArray::from(vec![*b; n])),
            Value::Int32(v) => Arc::new(Int32Array::from(vec![*v; n])),
            Value::Int64(v) => Arc::new(Int64Array::from(vec![*v; n])),
            Value::Text(s) => Arc::new(StringArray::from(vec![s.as_str(); n])),
            other => return Err(SqlError::unsupported(format!("literal {other:?} not evaluated yet"))),
        }),
        Expr::Binary { op, left, right, .. } => {
            let l = evaluate(left, batch, _ctx)?;
            let r = evaluate(right, batch, _ctx)?;
            let bool_of = |a: &ArrayRef| a.as_any().downcast_ref::<BooleanArray>().cloned();
            let cmp = match op {
                BinaryOp::Eq => cmp::eq(&l, &r),
                BinaryOp::NotEq => cmp::neq(&l, &r),
                BinaryOp::Lt => cmp::lt(&l, &r),
                BinaryOp::LtEq => cmp::lt_eq(&l, &r),
                BinaryOp::Gt => cmp::gt(&l, &r),
                BinaryOp::GtEq => cmp::gt_eq(&l, &r),
                BinaryOp::And | BinaryOp::Or => {
                    let (Some(a), Some(b)) = (bool_of(&l), bool_of(&r)) else {
                        return Err(SqlError::internal("AND/OR of non-boolean arrays"));
                    };
                    let out =
                        if *op == BinaryOp::And { boolean::and_kleene(&a, &b) } else { boolean::or_kleene(&a, &b) };
                    return out.map(|a| Arc::new(a) as ArrayRef).map_err(|e| SqlError::internal(e.to_string()));
                }
                other => return Err(SqlError::unsupported(format!("operator {other:?} not evaluated yet"))),
            };
            cmp.map(|a| Arc::new(a) as ArrayRef).map_err(|e| SqlError::internal(e.to_string()))
        }
        Expr::Unary { op, expr: inner, .. } => {
            let a = evaluate(inner, batch, _ctx)?;
            let out = match op {
                UnaryOp::IsNull => arrow_arith::boolean::is_null(&a),
                UnaryOp::IsNotNull => arrow_arith::boolean::is_not_null(&a),
                UnaryOp::Not => match a.as_any().downcast_ref::<BooleanArray>() {
                    Some(b) => arrow_arith::boolean::not(b),
                    None => return Err(SqlError::internal("NOT of a non-boolean array")),
                },
                other => return Err(SqlError::unsupported(format!("operator {other:?} not evaluated yet"))),
            };
            out.map(|a| Arc::new(a) as ArrayRef).map_err(|e| SqlError::internal(e.to_string()))
        }
        other => Err(SqlError::unsupported(format!("expression {other:?} not evaluated yet"))),
    }
}
