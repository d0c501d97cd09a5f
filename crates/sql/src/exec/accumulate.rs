//! Per-group states of the aggregate functions, and their results in
//! PostgreSQL's types and arithmetic:
//!
//! ```text
//!  count(*), count(x)        bigint
//!  sum(smallint|integer)     bigint   (exact, 22003 past bigint)
//!  sum(bigint|numeric)       numeric  (exact in i128, 22003 past 38 digits)
//!  avg(integer|numeric)      numeric at the scale the binder gave the
//!                            aggregate's type, rounded half away from 0
//!  sum/avg(double precision) double precision
//!  min/max(any)              the argument's type (arrow-row order: bytes
//!                            for text, i.e. the C collation)
//!  bool_and/bool_or          boolean
//! ```
//!
//! NULL arguments are skipped; a group that saw no value gives NULL (0
//! for count).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int64Array};

use super::util::{KeyEncoder, arrow_err, conform};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{AggFunc, AggregateExpr};
use crate::types::{DataType, NUMERIC_MAX_PRECISION};

/// Exact sums: integers and numerics as i128 at the argument's scale.
pub enum Accumulator {
    Count(Vec<i64>),
    Exact { sums: Vec<i128>, counts: Vec<i64>, scale: u8 },
    Float { sums: Vec<f64>, counts: Vec<i64> },
    Extreme { best: Vec<Option<Box<[u8]>>>, encoder: KeyEncoder, min: bool },
    Bool { values: Vec<Option<bool>>, and: bool },
}

fn arg_type(agg: &AggregateExpr) -> Result<DataType> {
    agg.arg.as_ref().map(|a| a.ty()).ok_or_else(|| SqlError::internal(format!("{:?} without an argument", agg.func)))
}

impl Accumulator {
    pub fn new(agg: &AggregateExpr) -> Result<Accumulator> {
        Ok(match agg.func {
            AggFunc::CountStar | AggFunc::Count => Accumulator::Count(Vec::new()),
            AggFunc::Sum | AggFunc::Avg => match arg_type(agg)? {
                t if t.is_integer() => Accumulator::Exact { sums: Vec::new(), counts: Vec::new(), scale: 0 },
                DataType::Numeric { scale, .. } => Accumulator::Exact { sums: Vec::new(), counts: Vec::new(), scale },
                DataType::Float64 => Accumulator::Float { sums: Vec::new(), counts: Vec::new() },
                t => return Err(SqlError::unsupported(format!("{:?} of {t} is not executed", agg.func))),
            },
            AggFunc::Min | AggFunc::Max => Accumulator::Extreme {
                best: Vec::new(),
                encoder: KeyEncoder::new(&[arg_type(agg)?.arrow()])?,
                min: agg.func == AggFunc::Min,
            },
            AggFunc::BoolAnd | AggFunc::BoolOr => {
                Accumulator::Bool { values: Vec::new(), and: agg.func == AggFunc::BoolAnd }
            }
        })
    }

    /// Adds a group; returns the bytes its state takes.
    pub fn push_group(&mut self) -> usize {
        match self {
            Accumulator::Count(c) => c.push(0),
            Accumulator::Exact { sums, counts, .. } => {
                sums.push(0);
                counts.push(0);
            }
            Accumulator::Float { sums, counts } => {
                sums.push(0.0);
                counts.push(0);
            }
            Accumulator::Extreme { best, .. } => best.push(None),
            Accumulator::Bool { values, .. } => values.push(None),
        }
        24
    }

    /// Feeds row `i` (group `ids[i]`) where `take[i]` and the argument is
    /// not NULL (`arg` None: count(*), every taken row).
    pub fn update(&mut self, arg: Option<&ArrayRef>, ids: &[u32], take: &[bool]) -> Result<()> {
        let live = |i: usize| take[i] && arg.is_none_or(|a| a.is_valid(i));
        match self {
            Accumulator::Count(counts) => {
                for (i, &g) in ids.iter().enumerate() {
                    if live(i) {
                        counts[g as usize] += 1;
                    }
                }
            }
            Accumulator::Exact { sums, counts, scale } => {
                let values = exact_values(arg_of(arg)?, *scale)?;
                for (i, &g) in ids.iter().enumerate() {
                    if live(i) {
                        let s = &mut sums[g as usize];
                        *s = s.checked_add(values[i]).ok_or_else(numeric_overflow)?;
                        counts[g as usize] += 1;
                    }
                }
            }
            Accumulator::Float { sums, counts } => {
                let a = arrow_cast::cast(arg_of(arg)?, &arrow_schema::DataType::Float64).map_err(arrow_err)?;
                let values = a.as_primitive::<Float64Type>();
                for (i, &g) in ids.iter().enumerate() {
                    if live(i) {
                        sums[g as usize] += values.value(i);
                        counts[g as usize] += 1;
                    }
                }
            }
            Accumulator::Extreme { best, encoder, min } => {
                let rows = encoder.encode(std::slice::from_ref(arg_of(arg)?))?;
                for (i, &g) in ids.iter().enumerate() {
                    if live(i) {
                        let row = rows.row(i);
                        let slot = &mut best[g as usize];
                        let better = match slot {
                            None => true,
                            Some(b) => (row.as_ref() < b.as_ref()) == *min && row.as_ref() != b.as_ref(),
                        };
                        if better {
                            *slot = Some(row.as_ref().into());
                        }
                    }
                }
            }
            Accumulator::Bool { values, and } => {
                let a = arg_of(arg)?.as_boolean_opt().ok_or_else(|| SqlError::internal("bool_and of non-boolean"))?;
                for (i, &g) in ids.iter().enumerate() {
                    if live(i) {
                        let v = &mut values[g as usize];
                        *v = Some(match *v {
                            None => a.value(i),
                            Some(prev) if *and => prev && a.value(i),
                            Some(prev) => prev || a.value(i),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Folds group `src` of `other` (the same aggregate, another partial
    /// table) into group `dst`.
    pub fn merge_group(&mut self, dst: u32, other: &Accumulator, src: u32) -> Result<()> {
        let (d, s) = (dst as usize, src as usize);
        match (self, other) {
            (Accumulator::Count(a), Accumulator::Count(b)) => a[d] += b[s],
            (Accumulator::Exact { sums, counts, .. }, Accumulator::Exact { sums: s2, counts: c2, .. }) => {
                sums[d] = sums[d].checked_add(s2[s]).ok_or_else(numeric_overflow)?;
                counts[d] += c2[s];
            }
            (Accumulator::Float { sums, counts }, Accumulator::Float { sums: s2, counts: c2 }) => {
                // Into a group without values: the sum as it is (-0 stays -0).
                sums[d] = if counts[d] == 0 { s2[s] } else { sums[d] + s2[s] };
                counts[d] += c2[s];
            }
            (Accumulator::Extreme { best, min, .. }, Accumulator::Extreme { best: b2, .. }) => {
                if let Some(theirs) = &b2[s] {
                    let better = match &best[d] {
                        None => true,
                        Some(mine) => (theirs.as_ref() < mine.as_ref()) == *min && theirs != mine,
                    };
                    if better {
                        best[d] = Some(theirs.clone());
                    }
                }
            }
            (Accumulator::Bool { values, and }, Accumulator::Bool { values: v2, .. }) => {
                if let Some(theirs) = v2[s] {
                    values[d] = Some(match values[d] {
                        None => theirs,
                        Some(mine) if *and => mine && theirs,
                        Some(mine) => mine || theirs,
                    });
                }
            }
            _ => return Err(SqlError::internal("merging states of different aggregates")),
        }
        Ok(())
    }

    pub fn finish(self, agg: &AggregateExpr) -> Result<ArrayRef> {
        Ok(match self {
            Accumulator::Count(c) => Arc::new(Int64Array::from(c)),
            Accumulator::Exact { sums, counts, scale } if agg.ty == DataType::Float64 => {
                // An exact argument with a float result: divide in f64.
                let unit = 10f64.powi(scale as i32);
                let avg = agg.func == AggFunc::Avg;
                let out: Float64Array = sums
                    .iter()
                    .zip(&counts)
                    .map(|(&s, &c)| (c > 0).then(|| s as f64 / unit / if avg { c as f64 } else { 1.0 }))
                    .collect();
                Arc::new(out)
            }
            Accumulator::Exact { sums, counts, scale } => {
                let avg = agg.func == AggFunc::Avg;
                let out: Vec<Option<i128>> = sums
                    .iter()
                    .zip(&counts)
                    .map(|(&s, &c)| if c == 0 { Ok(None) } else { finish_exact(s, c, scale, avg, &agg.ty).map(Some) })
                    .collect::<Result<_>>()?;
                exact_array(out, &agg.ty)?
            }
            Accumulator::Float { sums, counts } => {
                let avg = agg.func == AggFunc::Avg;
                let out: Float64Array = sums
                    .iter()
                    .zip(&counts)
                    .map(|(&s, &c)| (c > 0).then(|| if avg { s / c as f64 } else { s }))
                    .collect();
                conform(Arc::new(out), &agg.ty)?
            }
            Accumulator::Extreme { best, encoder, .. } => {
                let arg_ty = arg_type(agg)?;
                let present: Vec<&[u8]> = best.iter().flatten().map(|b| b.as_ref()).collect();
                let values = encoder.decode(present)?.remove(0);
                // Spread the values back out with NULLs for empty groups.
                let mut at = 0u32;
                let indices: arrow_array::UInt32Array = best
                    .iter()
                    .map(|b| {
                        b.as_ref().map(|_| {
                            at += 1;
                            at - 1
                        })
                    })
                    .collect();
                let spread = arrow_select::take::take(values.as_ref(), &indices, None).map_err(arrow_err)?;
                conform(conform(spread, &arg_ty)?, &agg.ty)?
            }
            Accumulator::Bool { values, .. } => Arc::new(BooleanArray::from(values)),
        })
    }
}

fn arg_of(arg: Option<&ArrayRef>) -> Result<&ArrayRef> {
    arg.ok_or_else(|| SqlError::internal("aggregate without its argument"))
}

fn numeric_overflow() -> SqlError {
    SqlError::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
}

/// An integer or numeric array's values as i128 at `scale` (NULLs as 0).
fn exact_values(array: &ArrayRef, scale: u8) -> Result<Vec<i128>> {
    if let arrow_schema::DataType::Decimal128(_, s) = array.data_type() {
        if *s as i64 != scale as i64 {
            return Err(SqlError::internal(format!("numeric argument at scale {s}, expected {scale}")));
        }
        let a: &Decimal128Array = array.as_primitive::<Decimal128Type>();
        return Ok(a.values().iter().copied().collect());
    }
    let a = arrow_cast::cast(array, &arrow_schema::DataType::Int64).map_err(arrow_err)?;
    Ok(a.as_primitive::<Int64Type>().values().iter().map(|&v| v as i128).collect())
}

fn pow10(exp: u32) -> Result<i128> {
    10i128.checked_pow(exp).ok_or_else(numeric_overflow)
}

/// `n / d` rounded half away from zero.
fn div_round(n: i128, d: i128) -> i128 {
    let (q, r) = (n / d, n % d);
    if 2 * r.unsigned_abs() >= d.unsigned_abs() { q + n.signum() * d.signum() } else { q }
}

/// A group's sum (or average) at the result type's scale.
fn finish_exact(sum: i128, count: i64, scale: u8, avg: bool, ty: &DataType) -> Result<i128> {
    let out_scale = match ty {
        DataType::Numeric { scale, .. } => *scale,
        _ => 0,
    };
    let (num, den) = if out_scale >= scale {
        (sum.checked_mul(pow10((out_scale - scale) as u32)?).ok_or_else(numeric_overflow)?, 1)
    } else {
        (sum, pow10((scale - out_scale) as u32)?)
    };
    let den = if avg { den * count as i128 } else { den };
    Ok(if den == 1 { num } else { div_round(num, den) })
}

fn exact_array(values: Vec<Option<i128>>, ty: &DataType) -> Result<ArrayRef> {
    match ty {
        DataType::Numeric { scale, .. } => {
            let limit = pow10(NUMERIC_MAX_PRECISION as u32)?;
            if values.iter().flatten().any(|v| v.unsigned_abs() >= limit as u128) {
                return Err(numeric_overflow());
            }
            let a = Decimal128Array::from(values)
                .with_precision_and_scale(NUMERIC_MAX_PRECISION, *scale as i8)
                .map_err(arrow_err)?;
            Ok(Arc::new(a))
        }
        DataType::Int64 | DataType::Int32 | DataType::Int16 => {
            let (min, max, name) = match ty {
                DataType::Int64 => (i64::MIN as i128, i64::MAX as i128, "bigint"),
                DataType::Int32 => (i32::MIN as i128, i32::MAX as i128, "integer"),
                _ => (i16::MIN as i128, i16::MAX as i128, "smallint"),
            };
            if values.iter().flatten().any(|&v| v < min || v > max) {
                return Err(SqlError::overflow(name));
            }
            let a: Int64Array = values.into_iter().map(|v| v.map(|v| v as i64)).collect();
            conform(Arc::new(a), ty)
        }
        DataType::Float64 => {
            let a: Float64Array = values.into_iter().map(|v| v.map(|v| v as f64)).collect();
            Ok(Arc::new(a))
        }
        other => Err(SqlError::internal(format!("an exact sum typed {other}"))),
    }
}
