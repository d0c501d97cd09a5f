//! CAST between all types.
//!
//! Fast paths over whole arrays where the conversion is plain: integer
//! widening (arrow-cast, exact), integer → numeric and numeric rescaling
//! (own loops: Arrow's decimal cast rounds half up on the scaled value and
//! checks a different precision), date → timestamp, `char(n)` → text
//! (trailing blanks dropped: what every comparison of a `char(n)` column
//! does first, `compare.rs`). Everything else goes
//! row by row through [`crate::types::ops::cast_value`], which holds
//! PostgreSQL's rules (text input and output, rounding, range errors,
//! `char(n)`/`varchar(n)` lengths).

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type};
use arrow_array::{
    Array, ArrayRef, Decimal128Array, PrimitiveArray, StringArray, TimestampMicrosecondArray, new_null_array,
};

use super::map_rows;
use crate::error::{Result, SqlError};
use crate::types::datetime::date_to_timestamp;
use crate::types::ops::{CastMode, cast_value};
use crate::types::{DataType, NUMERIC_MAX_PRECISION, numeric};

/// `a` (values of type `from`) cast to `to`.
pub fn cast_array(a: &ArrayRef, from: &DataType, to: &DataType, mode: CastMode) -> Result<ArrayRef> {
    let n = a.len();
    if a.data_type().is_null() || a.null_count() == n {
        return Ok(new_null_array(&to.arrow(), n));
    }
    if from == to {
        return Ok(a.clone());
    }
    use DataType as T;
    match (from, to) {
        (f, t) if f.is_integer() && t.is_integer() && int_rank(f) <= int_rank(t) => {
            arrow_cast::cast(a.as_ref(), &t.arrow()).map_err(super::arrow_err)
        }
        (f, T::Numeric { precision, scale }) if f.is_integer() || matches!(f, T::Numeric { .. }) => {
            let dec = if f.is_integer() {
                arrow_cast::cast(a.as_ref(), &arrow_schema::DataType::Decimal128(NUMERIC_MAX_PRECISION, 0))
                    .map_err(super::arrow_err)?
            } else {
                a.clone()
            };
            rescale_array(dec.as_primitive::<Decimal128Type>(), *precision, *scale)
        }
        (T::Date, T::Timestamp) => {
            let d = a.as_primitive::<Date32Type>();
            let ts: TimestampMicrosecondArray = d.try_unary(date_to_timestamp)?;
            Ok(Arc::new(ts))
        }
        (T::Varchar(_) | T::Text, T::Varchar(None) | T::Text) => Ok(a.clone()),
        (T::Char(_), T::Varchar(None) | T::Text) if a.as_string_opt::<i32>().is_some() => {
            Ok(Arc::new(unpad(a.as_string::<i32>())))
        }
        _ => map_rows(&[a], n, to, |v| cast_value(&v[0], from, to, mode)),
    }
}

/// `char(n)` values as text: without their trailing blanks (as
/// [`cast_value`] does row by row).
fn unpad(a: &StringArray) -> StringArray {
    let bytes = a.value_data().len();
    let mut out = StringBuilder::with_capacity(a.len(), bytes);
    for v in a.iter() {
        out.append_option(v.map(|s| s.trim_end_matches(' ')));
    }
    out.finish()
}

fn int_rank(t: &DataType) -> u8 {
    match t {
        DataType::Int16 => 0,
        DataType::Int32 => 1,
        _ => 2,
    }
}

/// A decimal array at its scale to `numeric(precision, scale)`.
fn rescale_array(d: &PrimitiveArray<Decimal128Type>, precision: Option<u8>, scale: u8) -> Result<ArrayRef> {
    let from = match d.data_type() {
        arrow_schema::DataType::Decimal128(_, s) => (*s).max(0) as u8,
        other => return Err(SqlError::internal(format!("decimal expected, got {other}"))),
    };
    let out: PrimitiveArray<Decimal128Type> = d.try_unary(|v| -> Result<i128> {
        let v = numeric::rescale(v, from, scale)?;
        match precision {
            Some(p) => numeric::check_precision(v, p, scale),
            None => Ok(v),
        }
    })?;
    let out: Decimal128Array =
        out.with_precision_and_scale(NUMERIC_MAX_PRECISION, scale as i8).map_err(super::arrow_err)?;
    Ok(Arc::new(out))
}
