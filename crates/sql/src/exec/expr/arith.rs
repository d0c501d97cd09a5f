//! Arithmetic: `+ - * / %`, `||` and unary minus.
//!
//! Integers: both sides are widened to the result type and arrow-arith's
//! checked kernels compute; if a kernel fails (overflow, division by zero)
//! the batch is recomputed row by row so that the error is the first
//! failing row's with PostgreSQL's message (`integer out of range`), and
//! `INT_MIN % -1 = 0` as PostgreSQL. Numerics: a loop over the i128 values
//! with [`crate::types::numeric`]'s exact operations, rounded to the result
//! scale. float8, dates, timestamps, intervals and `||` go row by row
//! through [`crate::types::ops::arith_values`].

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Decimal128Type;
use arrow_array::{Array, ArrayRef, Decimal128Array};
use arrow_buffer::NullBuffer;

use super::{cast_array, map_rows};
use crate::error::{Result, SqlError};
use crate::plan::BinaryOp;
use crate::types::ops::{CastMode, arith_values};
use crate::types::{DataType, NUMERIC_MAX_PRECISION, numeric};

pub(super) fn binary(
    op: BinaryOp,
    l: &ArrayRef,
    lt: &DataType,
    r: &ArrayRef,
    rt: &DataType,
    ty: &DataType,
) -> Result<ArrayRef> {
    let n = l.len();
    if l.data_type().is_null() || r.data_type().is_null() {
        return Ok(arrow_array::new_null_array(&ty.arrow(), n));
    }
    if ty.is_integer() && lt.is_integer() && rt.is_integer() {
        if let Ok(a) = int_kernel(op, l, lt, r, rt, ty) {
            return Ok(a);
        }
    } else if let (DataType::Numeric { scale, precision: None }, true, true, false) =
        (ty, is_exact(lt), is_exact(rt), op == BinaryOp::Concat)
    {
        let l = as_decimal(l, lt)?;
        let r = as_decimal(r, rt)?;
        return decimal_kernel(op, &l, &r, *scale);
    }
    map_rows(&[l, r], n, ty, |v| arith_values(op, &v[0], &v[1], ty))
}

fn is_exact(t: &DataType) -> bool {
    t.is_integer() || matches!(t, DataType::Numeric { .. })
}

fn as_decimal(a: &ArrayRef, t: &DataType) -> Result<ArrayRef> {
    if t.is_integer() {
        cast_array(a, t, &DataType::Numeric { precision: None, scale: 0 }, CastMode::Explicit)
    } else {
        Ok(a.clone())
    }
}

fn int_kernel(
    op: BinaryOp,
    l: &ArrayRef,
    lt: &DataType,
    r: &ArrayRef,
    rt: &DataType,
    ty: &DataType,
) -> Result<ArrayRef> {
    let l = cast_array(l, lt, ty, CastMode::Explicit)?;
    let r = cast_array(r, rt, ty, CastMode::Explicit)?;
    let out = match op {
        BinaryOp::Add => arrow_arith::numeric::add(&l, &r),
        BinaryOp::Sub => arrow_arith::numeric::sub(&l, &r),
        BinaryOp::Mul => arrow_arith::numeric::mul(&l, &r),
        BinaryOp::Div => arrow_arith::numeric::div(&l, &r),
        BinaryOp::Mod => arrow_arith::numeric::rem(&l, &r),
        other => return Err(SqlError::internal(format!("{} on integers", other.sql()))),
    };
    out.map_err(super::arrow_err)
}

fn scale_of(a: &ArrayRef) -> u8 {
    match a.data_type() {
        arrow_schema::DataType::Decimal128(_, s) => (*s).max(0) as u8,
        _ => 0,
    }
}

/// Numeric `l op r` at result scale `out`, value by value.
fn decimal_kernel(op: BinaryOp, l: &ArrayRef, r: &ArrayRef, out: u8) -> Result<ArrayRef> {
    let (sl, sr) = (scale_of(l), scale_of(r));
    let (a, b) = (l.as_primitive::<Decimal128Type>(), r.as_primitive::<Decimal128Type>());
    let nulls = NullBuffer::union(a.nulls(), b.nulls());
    let f = match op {
        BinaryOp::Add => numeric::add,
        BinaryOp::Sub => numeric::sub,
        BinaryOp::Mul => numeric::mul,
        BinaryOp::Div => numeric::div,
        BinaryOp::Mod => numeric::rem,
        other => return Err(SqlError::internal(format!("{} on numeric", other.sql()))),
    };
    let fast = fast_factors(op, sl, sr, out);
    let mut values = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        if !nulls.as_ref().is_none_or(|nb| nb.is_valid(i)) {
            values.push(0);
            continue;
        }
        let (x, y) = (a.value(i), b.value(i));
        let quick = fast.and_then(|(fx, fy, fo)| match op {
            BinaryOp::Add => x.checked_mul(fx)?.checked_add(y.checked_mul(fy)?)?.checked_mul(fo),
            BinaryOp::Sub => x.checked_mul(fx)?.checked_sub(y.checked_mul(fy)?)?.checked_mul(fo),
            _ => x.checked_mul(y)?.checked_mul(fo),
        });
        values.push(match quick.filter(|v| v.unsigned_abs() < LIMIT_38) {
            Some(v) => v,
            // Exact in 256 bits, with the overflow error when it is one.
            None => f((x, sl), (y, sr), out)?,
        });
    }
    let arr = Decimal128Array::new(values.into(), nulls)
        .with_precision_and_scale(NUMERIC_MAX_PRECISION, out as i8)
        .map_err(super::arrow_err)?;
    Ok(Arc::new(arr))
}

const LIMIT_38: u128 = 10u128.pow(NUMERIC_MAX_PRECISION as u32);

/// For `+ - *` whose exact scale is at most the result's (no rounding):
/// the factors that bring the left and right operands to the exact scale
/// and the exact result to `out`, all in i128.
fn fast_factors(op: BinaryOp, sl: u8, sr: u8, out: u8) -> Option<(i128, i128, i128)> {
    let p = |e: u8| 10i128.checked_pow(e as u32);
    match op {
        BinaryOp::Add | BinaryOp::Sub => {
            let s = sl.max(sr);
            (out >= s).then_some(())?;
            Some((p(s - sl)?, p(s - sr)?, p(out - s)?))
        }
        BinaryOp::Mul => {
            let s = sl.checked_add(sr)?;
            (out >= s).then_some(())?;
            Some((1, 1, p(out - s)?))
        }
        _ => None,
    }
}

/// `-a` with arrow's checked negation for integers and floats.
pub(super) fn negate_array(a: &ArrayRef, from: &DataType, ty: &DataType) -> Result<ArrayRef> {
    if from != ty || !(ty.is_integer() || *ty == DataType::Float64) {
        return Err(SqlError::internal("row-wise negation"));
    }
    arrow_arith::numeric::neg(a.as_ref()).map_err(super::arrow_err)
}
