//! Comparisons: `= <> < <= > >=` and `IS [NOT] DISTINCT FROM`.
//!
//! Both sides are first brought to a common type (integers widened,
//! integer with numeric as numeric at the larger scale, anything with
//! float8 as float8, date with timestamp as timestamp, `char(n)` as text
//! without its padding, as PostgreSQL's `bpchar` comparisons ignore
//! trailing blanks). arrow-ord's kernels then compare integers, numerics,
//! dates, timestamps, booleans and text (byte order: PostgreSQL with the C
//! collation). float8 goes row by row: PostgreSQL has `-0 = 0` and NaN equal
//! to itself and above every number, where Arrow's total order has neither;
//! intervals compare by span (`1 mon = 30 days`), not field by field.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_ord::cmp;

use super::{cast_array, map_rows};
use crate::error::{Result, SqlError};
use crate::plan::BinaryOp;
use crate::types::DataType;
use crate::types::ops::{CastMode, compare_op};

/// The type both sides of a comparison are compared as.
pub(super) fn common_type(a: &DataType, b: &DataType) -> DataType {
    use DataType as T;
    match (a, b) {
        (T::Unknown, x) | (x, T::Unknown) => *x,
        (x, y) if x.is_text() && y.is_text() => {
            if x == y && !matches!(x, T::Char(_)) {
                *x
            } else {
                T::Text
            }
        }
        (x, y) if x == y => *x,
        (T::Float64, y) | (y, T::Float64) if y.is_numeric() => T::Float64,
        (T::Numeric { scale: s1, .. }, T::Numeric { scale: s2, .. }) => {
            T::Numeric { precision: None, scale: (*s1).max(*s2) }
        }
        (T::Numeric { scale, .. }, y) | (y, T::Numeric { scale, .. }) if y.is_integer() => {
            T::Numeric { precision: None, scale: *scale }
        }
        (T::Int64, y) | (y, T::Int64) if y.is_integer() => T::Int64,
        (T::Int32, y) | (y, T::Int32) if y.is_integer() => T::Int32,
        (T::Date, T::Timestamp) | (T::Timestamp, T::Date) => T::Timestamp,
        (x, y) if x.is_text() && y.is_numeric() => *y,
        (x, y) if y.is_text() && x.is_numeric() => *x,
        _ => *a,
    }
}

/// `l op r` for a comparison `op`: a boolean array.
pub fn compare_arrays(op: BinaryOp, l: &ArrayRef, lt: &DataType, r: &ArrayRef, rt: &DataType) -> Result<ArrayRef> {
    let n = l.len();
    let distinct_op = matches!(op, BinaryOp::IsDistinctFrom | BinaryOp::IsNotDistinctFrom);
    let null_side = l.data_type().is_null() || r.data_type().is_null();
    if null_side && !distinct_op {
        return Ok(super::bools(n, None));
    }
    let ty = common_type(lt, rt);
    let l = if lt == &ty || null_side { l.clone() } else { cast_array(l, lt, &ty, CastMode::Explicit)? };
    let r = if rt == &ty || null_side { r.clone() } else { cast_array(r, rt, &ty, CastMode::Explicit)? };
    if null_side || matches!(ty, DataType::Float64 | DataType::Interval) || l.data_type() != r.data_type() {
        return map_rows(&[&l, &r], n, &DataType::Bool, |v| compare_op(op, &v[0], &v[1]));
    }
    let out: std::result::Result<BooleanArray, _> = match op {
        BinaryOp::Eq => cmp::eq(&l, &r),
        BinaryOp::NotEq => cmp::neq(&l, &r),
        BinaryOp::Lt => cmp::lt(&l, &r),
        BinaryOp::LtEq => cmp::lt_eq(&l, &r),
        BinaryOp::Gt => cmp::gt(&l, &r),
        BinaryOp::GtEq => cmp::gt_eq(&l, &r),
        BinaryOp::IsDistinctFrom => cmp::distinct(&l, &r),
        BinaryOp::IsNotDistinctFrom => cmp::not_distinct(&l, &r),
        other => return Err(SqlError::internal(format!("{} is not a comparison", other.sql()))),
    };
    out.map(|a| Arc::new(a) as ArrayRef).map_err(super::arrow_err)
}
