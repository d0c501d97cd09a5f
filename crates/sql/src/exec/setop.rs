//! DISTINCT and the set operations, with PostgreSQL's duplicate rules:
//!
//! ```text
//!  UNION ALL      left rows, then right rows
//!  UNION          distinct rows of both
//!  INTERSECT      distinct rows in both         ALL: min(l, r) copies
//!  EXCEPT         distinct left rows not in right  ALL: max(l - r, 0) copies
//! ```
//!
//! Rows compare as whole rows encoded with arrow-row, so NULL equals NULL
//! here (as SQL's set operations and DISTINCT want). DISTINCT streams (a
//! row goes out when first seen); INTERSECT and EXCEPT first count the
//! right input's rows in a hash table, then stream the left. Output order
//! is the left input's (first occurrences), a choice PostgreSQL leaves
//! open.

use std::collections::{HashMap, HashSet};

use arrow_array::{RecordBatch, UInt32Array};

use super::hashing::FastState;
use super::pipeline::{BoxOp, Operator};
use super::util::{KeyEncoder, make_batch, take_columns};
use super::work_mem::{ENTRY_OVERHEAD_BYTES, Reservation};
use super::{ExecContext, check_interrupts};
use crate::error::Result;
use crate::plan::{Schema, SetOpKind};

fn encoder(schema: &Schema) -> Result<KeyEncoder> {
    KeyEncoder::new(&schema.iter().map(|f| f.ty.arrow()).collect::<Vec<_>>())
}

/// Keeps the rows of `batch` at `keep` (conformed to `schema`).
fn select(batch: &RecordBatch, keep: Vec<u32>, schema: &Schema) -> Result<RecordBatch> {
    let indices = UInt32Array::from(keep);
    make_batch(schema, take_columns(batch, &indices)?, indices.len())
}

pub struct DistinctOp {
    input: BoxOp,
    schema: Schema,
    encoder: KeyEncoder,
    seen: HashSet<Box<[u8]>, FastState>,
    reservation: Reservation,
    ctx: ExecContext,
}

impl DistinctOp {
    pub fn new(input: BoxOp, schema: Schema, ctx: &ExecContext) -> Result<DistinctOp> {
        Ok(DistinctOp {
            input,
            encoder: encoder(&schema)?,
            schema,
            seen: HashSet::default(),
            reservation: Reservation::new("HashDistinct", ctx.work_mem),
            ctx: ctx.clone(),
        })
    }
}

impl Operator for DistinctOp {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        while let Some(batch) = self.input.next()? {
            check_interrupts(&self.ctx)?;
            let batch = make_batch(&self.schema, batch.columns().to_vec(), batch.num_rows())?;
            let rows = self.encoder.encode(batch.columns())?;
            let mut keep = Vec::new();
            for i in 0..rows.num_rows() {
                let row = rows.row(i);
                let key = row.as_ref();
                if !self.seen.contains(key) {
                    self.reservation.grow(key.len() + ENTRY_OVERHEAD_BYTES)?;
                    self.seen.insert(key.into());
                    keep.push(i as u32);
                }
            }
            if !keep.is_empty() {
                return Ok(Some(select(&batch, keep, &self.schema)?));
            }
        }
        Ok(None)
    }
}

/// Left's batches, then right's.
struct ChainOp {
    inputs: Vec<BoxOp>,
    schema: Schema,
}

impl Operator for ChainOp {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        while let Some(input) = self.inputs.first_mut() {
            if let Some(batch) = input.next()? {
                return Ok(Some(make_batch(&self.schema, batch.columns().to_vec(), batch.num_rows())?));
            }
            self.inputs.remove(0);
        }
        Ok(None)
    }
}

pub fn set_op(op: SetOpKind, all: bool, left: BoxOp, right: BoxOp, schema: Schema, ctx: &ExecContext) -> Result<BoxOp> {
    match op {
        SetOpKind::Union => {
            let chain = Box::new(ChainOp { inputs: vec![left, right], schema: schema.clone() });
            if all { Ok(chain) } else { Ok(Box::new(DistinctOp::new(chain, schema, ctx)?)) }
        }
        SetOpKind::Intersect | SetOpKind::Except => Ok(Box::new(SetFilterOp {
            left,
            right: Some(right),
            intersect: op == SetOpKind::Intersect,
            all,
            encoder: encoder(&schema)?,
            schema,
            counts: HashMap::default(),
            emitted: HashSet::default(),
            reservation: Reservation::new(
                if op == SetOpKind::Intersect { "HashSetOp Intersect" } else { "HashSetOp Except" },
                ctx.work_mem,
            ),
            ctx: ctx.clone(),
        })),
    }
}

/// INTERSECT [ALL] and EXCEPT [ALL].
struct SetFilterOp {
    left: BoxOp,
    right: Option<BoxOp>,
    intersect: bool,
    all: bool,
    encoder: KeyEncoder,
    schema: Schema,
    /// Right rows not yet paired with a left row, by row.
    counts: HashMap<Box<[u8]>, u64, FastState>,
    /// Distinct forms: rows already emitted.
    emitted: HashSet<Box<[u8]>, FastState>,
    reservation: Reservation,
    ctx: ExecContext,
}

impl SetFilterOp {
    fn count_right(&mut self, mut right: BoxOp) -> Result<()> {
        while let Some(batch) = right.next()? {
            check_interrupts(&self.ctx)?;
            let batch = make_batch(&self.schema, batch.columns().to_vec(), batch.num_rows())?;
            let rows = self.encoder.encode(batch.columns())?;
            for row in rows.iter() {
                let key = row.as_ref();
                match self.counts.get_mut(key) {
                    Some(c) => *c += 1,
                    None => {
                        self.reservation.grow(key.len() + ENTRY_OVERHEAD_BYTES)?;
                        self.counts.insert(key.into(), 1);
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether a left row with encoded `key` goes out.
    fn keep(&mut self, key: &[u8]) -> Result<bool> {
        let in_right = match self.counts.get_mut(key) {
            Some(c) if *c > 0 => {
                if self.all {
                    *c -= 1;
                }
                true
            }
            _ => false,
        };
        let wanted = in_right == self.intersect;
        if self.all || !wanted {
            return Ok(wanted);
        }
        if self.emitted.contains(key) {
            return Ok(false);
        }
        self.reservation.grow(key.len() + ENTRY_OVERHEAD_BYTES)?;
        self.emitted.insert(key.into());
        Ok(true)
    }
}

impl Operator for SetFilterOp {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(right) = self.right.take() {
            self.count_right(right)?;
        }
        while let Some(batch) = self.left.next()? {
            check_interrupts(&self.ctx)?;
            let batch = make_batch(&self.schema, batch.columns().to_vec(), batch.num_rows())?;
            let rows = self.encoder.encode(batch.columns())?;
            let mut keep = Vec::new();
            for i in 0..rows.num_rows() {
                if self.keep(rows.row(i).as_ref())? {
                    keep.push(i as u32);
                }
            }
            if !keep.is_empty() {
                return Ok(Some(select(&batch, keep, &self.schema)?));
            }
        }
        Ok(None)
    }
}
