//! Bridges between single [`Value`]s and Arrow arrays.
//!
//! [`value_at`] reads one row of an array (results to a client, the
//! row-at-a-time paths of the evaluator); [`array_from_values`] builds an
//! array of a SQL type from values (VALUES, DML rows, literals). The
//! mapping is the table of the module doc of [`crate::types`]. A value of
//! the wrong kind for the type is an internal error, never a panic; values
//! are converted to the array's type only where the conversion is exact
//! (an Int32 into an Int64 array, a numeric rescaled without loss).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float64Type, Int16Type, Int32Type, Int64Type, IntervalMonthDayNanoType,
    TimestampMicrosecondType,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int16Array, Int32Array, Int64Array,
    IntervalMonthDayNanoArray, StringArray, TimestampMicrosecondArray, new_null_array,
};
use arrow_buffer::IntervalMonthDayNano;
use arrow_schema::{DataType as A, IntervalUnit, TimeUnit};

use super::{DataType, Interval, NUMERIC_MAX_PRECISION, Value, numeric};
use crate::error::{Result, SqlError};

/// The value at `row` of `array` (NULL when the row is null).
pub fn value_at(array: &dyn Array, row: usize) -> Result<Value> {
    if row >= array.len() {
        return Err(SqlError::internal(format!("row {row} of an array of {} rows", array.len())));
    }
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    Ok(match array.data_type() {
        A::Null => Value::Null,
        A::Boolean => Value::Bool(array.as_boolean().value(row)),
        A::Int16 => Value::Int16(array.as_primitive::<Int16Type>().value(row)),
        A::Int32 => Value::Int32(array.as_primitive::<Int32Type>().value(row)),
        A::Int64 => Value::Int64(array.as_primitive::<Int64Type>().value(row)),
        A::Decimal128(_, s) => {
            Value::Numeric { value: array.as_primitive::<Decimal128Type>().value(row), scale: (*s).max(0) as u8 }
        }
        A::Float64 => Value::Float64(array.as_primitive::<Float64Type>().value(row)),
        A::Date32 => Value::Date(array.as_primitive::<Date32Type>().value(row)),
        A::Timestamp(TimeUnit::Microsecond, None) => {
            Value::Timestamp(array.as_primitive::<TimestampMicrosecondType>().value(row))
        }
        A::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
            Value::Interval(Interval { months: v.months, days: v.days, micros: v.nanoseconds / 1000 })
        }
        A::Utf8 => Value::Text(array.as_string::<i32>().value(row).to_string()),
        other => return Err(SqlError::internal(format!("no SQL value for an Arrow {other} array"))),
    })
}

fn wrong(v: &Value, ty: &DataType) -> SqlError {
    SqlError::internal(format!("value {v:?} in an array of type {ty}"))
}

fn collect<'a, T, F>(values: &'a [Value], ty: &DataType, f: F) -> Result<Vec<Option<T>>>
where
    F: Fn(&'a Value) -> Option<T>,
{
    values.iter().map(|v| if v.is_null() { Ok(None) } else { f(v).map(Some).ok_or_else(|| wrong(v, ty)) }).collect()
}

/// An array of `ty` holding `values` (NULLs as nulls).
pub fn array_from_values(values: &[Value], ty: &DataType) -> Result<ArrayRef> {
    let int = |v: &Value| match v {
        Value::Int16(x) => Some(*x as i64),
        Value::Int32(x) => Some(*x as i64),
        Value::Int64(x) => Some(*x),
        _ => None,
    };
    Ok(match ty {
        DataType::Unknown => new_null_array(&A::Null, values.len()),
        DataType::Bool => Arc::new(BooleanArray::from(collect(values, ty, |v| match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        })?)),
        DataType::Int16 => {
            Arc::new(Int16Array::from(collect(values, ty, |v| int(v).and_then(|x| i16::try_from(x).ok()))?))
        }
        DataType::Int32 => {
            Arc::new(Int32Array::from(collect(values, ty, |v| int(v).and_then(|x| i32::try_from(x).ok()))?))
        }
        DataType::Int64 => Arc::new(Int64Array::from(collect(values, ty, int)?)),
        DataType::Numeric { scale, .. } => {
            let s = *scale;
            let vals = collect(values, ty, |v| match v {
                Value::Numeric { value, scale } => numeric::rescale(*value, *scale, s).ok(),
                other => int(other).and_then(|x| numeric::rescale(x as i128, 0, s).ok()),
            })?;
            let arr = Decimal128Array::from(vals)
                .with_precision_and_scale(NUMERIC_MAX_PRECISION, s as i8)
                .map_err(|e| SqlError::internal(e.to_string()))?;
            Arc::new(arr)
        }
        DataType::Float64 => Arc::new(Float64Array::from(collect(values, ty, |v| match v {
            Value::Float64(f) => Some(*f),
            _ => None,
        })?)),
        DataType::Date => Arc::new(Date32Array::from(collect(values, ty, |v| match v {
            Value::Date(d) => Some(*d),
            _ => None,
        })?)),
        DataType::Timestamp => Arc::new(TimestampMicrosecondArray::from(collect(values, ty, |v| match v {
            Value::Timestamp(t) => Some(*t),
            _ => None,
        })?)),
        DataType::Interval => Arc::new(IntervalMonthDayNanoArray::from(collect(values, ty, |v| match v {
            Value::Interval(iv) => {
                iv.micros.checked_mul(1000).map(|ns| IntervalMonthDayNano::new(iv.months, iv.days, ns))
            }
            _ => None,
        })?)),
        DataType::Char(_) | DataType::Varchar(_) | DataType::Text => {
            let vals = collect(values, ty, |v| match v {
                Value::Text(s) => Some(s.as_str()),
                _ => None,
            })?;
            Arc::new(StringArray::from(vals))
        }
    })
}

/// An array of `n` copies of `value` (a literal over a batch).
pub fn repeat_value(value: &Value, ty: &DataType, n: usize) -> Result<ArrayRef> {
    if value.is_null() {
        return Ok(new_null_array(&ty.arrow(), n));
    }
    let one = array_from_values(std::slice::from_ref(value), ty)?;
    if n == 1 {
        return Ok(one);
    }
    let indices = arrow_array::UInt32Array::from(vec![0u32; n]);
    arrow_select::take::take(one.as_ref(), &indices, None).map_err(|e| SqlError::internal(e.to_string()))
}
