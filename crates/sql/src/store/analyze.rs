//! `ANALYZE`: statistics of a table from a sample of its rows, as
//! PostgreSQL's `analyze.c` computes them.
//!
//! ```text
//!  host scan in morsels ─► row count (exact) + reservoir sample (≤ SAMPLE_ROWS,
//!                          fixed seed: the same figures on the same data)
//!  per column, on the sample:
//!    null_frac  NULLs / sample rows
//!    distinct   Haas–Stokes Duj1: n·d / (n − f1 + f1·n/N), clamped to [d, N]
//!               (d distinct, f1 seen once, n sampled, N total non-NULL);
//!               every value seen once → all distinct (N); whole table → d
//!    mcv        all values, when the sample holds every value there is and
//!               they fit in MCV_MAX; else values more common than 1.25 × the
//!               average, seen twice or more, at most MCV_MAX, by count;
//!               frequency = count / sample rows
//!    histogram  up to HISTOGRAM_BOUNDS equi-depth bounds of the other values
//!    avg_width  bytes of non-NULL values (fixed width, or text length)
//! ```
//!
//! Values are ordered as SQL orders them: integers, decimals, dates,
//! timestamps and booleans by their stored integer, floats by value, text
//! by bytes (the C collation).

use std::cmp::Ordering;
use std::collections::HashMap;

use ndpdb_format::schema::{self as fs, ColumnType};

use super::catalog::CatalogStore;
use super::mapping::{from_storage, storage_type};
use super::source::storage_table;
use super::txn::SqlTxn;
use crate::catalog::{ColumnStats, TableDef, TableStats};
use crate::error::Result;
use crate::exec::BATCH_ROWS;

/// Rows sampled (PostgreSQL: 300 × default_statistics_target 100).
pub const SAMPLE_ROWS: usize = 30_000;
/// Most common values kept per column (PostgreSQL's statistics target).
pub const MCV_MAX: usize = 100;
/// Histogram bounds kept per column.
pub const HISTOGRAM_BOUNDS: usize = 101;

/// Analyzes `def` in `txn` and saves the statistics in the catalog.
pub fn analyze(catalog: &CatalogStore, txn: &SqlTxn, def: &TableDef) -> Result<TableStats> {
    let stats = compute(txn, def)?;
    catalog.save_stats(txn, &def.name, &stats)?;
    Ok(stats)
}

/// The statistics of `def` as `txn`'s statement snapshot sees it.
pub fn compute(txn: &SqlTxn, def: &TableDef) -> Result<TableStats> {
    let table = storage_table(txn, def)?;
    let snapshot = txn.statement_snapshot()?;
    let scan = txn.with(|t| t.host_scan(&table))?;
    let all: Vec<u16> = (0..def.columns.len() as u16).collect();
    let mut sample: Vec<Vec<fs::Value>> = Vec::new();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut rows = 0u64;
    let mut start = 0;
    while start < scan.vids() {
        let vids = start..(start + BATCH_ROWS as u64).min(scan.vids());
        start = vids.end;
        let part = txn.with(|t| t.host_rows_range(&table, &scan, &snapshot, &all, None, vids))?;
        for (_, r) in part.rows {
            rows += 1;
            // Reservoir sampling (Algorithm R).
            if sample.len() < SAMPLE_ROWS {
                sample.push(r);
            } else {
                let j = next(&mut rng) % rows;
                if (j as usize) < SAMPLE_ROWS {
                    sample[j as usize] = r;
                }
            }
        }
    }
    let columns = def
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| column_stats(&sample, rows, i, storage_type(c)?, c.ty))
        .collect::<Result<_>>()?;
    Ok(TableStats { rows: rows as f64, columns })
}

fn next(state: &mut u64) -> u64 {
    // xorshift64*
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn column_stats(
    sample: &[Vec<fs::Value>],
    total_rows: u64,
    i: usize,
    st: ColumnType,
    ty: crate::types::DataType,
) -> Result<ColumnStats> {
    if sample.is_empty() {
        return Ok(ColumnStats::default());
    }
    let values: Vec<&fs::Value> = sample.iter().map(|r| &r[i]).filter(|v| **v != fs::Value::Null).collect();
    let sampled = sample.len() as f64;
    let null_frac = 1.0 - values.len() as f64 / sampled;
    let mut counts: HashMap<&fs::Value, u64> = HashMap::new();
    for v in &values {
        *counts.entry(*v).or_default() += 1;
    }
    let (n, d) = (values.len() as f64, counts.len() as f64);
    let f1 = counts.values().filter(|&&c| c == 1).count() as f64;
    let total_non_null = (total_rows as f64 * (1.0 - null_frac)).round();
    let distinct = distinct_estimate(n, d, f1, total_non_null);
    let avg_width = if values.is_empty() { 0.0 } else { values.iter().map(|v| width(v, st)).sum::<f64>() / n };
    // Most common values.
    let mut by_count: Vec<(&fs::Value, u64)> = counts.iter().map(|(v, c)| (*v, *c)).collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| order(a.0, b.0, st)));
    let average = if d > 0.0 { n / d } else { 0.0 };
    let mcv: Vec<(&fs::Value, u64)> = if d as usize <= MCV_MAX && distinct == d {
        // The sample holds every value there is, and they all fit.
        by_count
    } else if f1 == d {
        vec![]
    } else {
        by_count.into_iter().filter(|&(_, c)| c >= 2 && c as f64 > 1.25 * average).take(MCV_MAX).collect()
    };
    // Histogram over the rest.
    let mut rest: Vec<&fs::Value> = values.iter().copied().filter(|v| !mcv.iter().any(|(m, _)| m == v)).collect();
    rest.sort_by(|a, b| order(a, b, st));
    let histogram = if rest.len() < 2 {
        vec![]
    } else {
        let bounds = HISTOGRAM_BOUNDS.min(rest.len());
        (0..bounds).map(|k| rest[k * (rest.len() - 1) / (bounds - 1)]).collect::<Vec<_>>()
    };
    Ok(ColumnStats {
        distinct,
        null_frac,
        mcv: mcv.into_iter().map(|(v, c)| Ok((from_storage(v, ty)?, c as f64 / sampled))).collect::<Result<_>>()?,
        histogram: histogram.into_iter().map(|v| from_storage(v, ty)).collect::<Result<_>>()?,
        avg_width,
    })
}

/// Haas and Stokes' Duj1 estimator, as PostgreSQL uses it.
pub fn distinct_estimate(n: f64, d: f64, f1: f64, total: f64) -> f64 {
    if n == 0.0 {
        return 0.0;
    }
    if n >= total {
        return d; // the whole table was read
    }
    if f1 == d {
        return total; // every value seen once: take them all as distinct
    }
    let est = n * d / (n - f1 + f1 * n / total);
    est.clamp(d, total).round()
}

fn width(v: &fs::Value, st: ColumnType) -> f64 {
    match v {
        fs::Value::Text(t) => t.len() as f64,
        _ => f64::from(st.slot_bytes()),
    }
}

fn order(a: &fs::Value, b: &fs::Value, st: ColumnType) -> Ordering {
    match (a, b) {
        (fs::Value::Int(x), fs::Value::Int(y)) if st == ColumnType::Float64 => {
            fs::Value::as_float(*x).total_cmp(&fs::Value::as_float(*y))
        }
        _ => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duj1_matches_hand_computation() {
        // n = 100 sampled of 10,000, 30 distinct, 10 seen once.
        let e = distinct_estimate(100.0, 30.0, 10.0, 10_000.0);
        let expect = (100.0f64 * 30.0 / (100.0 - 10.0 + 10.0 * 100.0 / 10_000.0)).round();
        assert_eq!(e, expect);
        assert_eq!(distinct_estimate(100.0, 100.0, 100.0, 10_000.0), 10_000.0);
        assert_eq!(distinct_estimate(100.0, 7.0, 0.0, 100.0), 7.0);
    }
}
