//! Sort: reads its whole input (counted against `work_mem`), encodes the
//! keys with arrow-row (each key's ASC/DESC and NULLS FIRST/LAST folded
//! into the bytes), sorts row numbers by the encoded keys with a stable
//! sort, and emits the rows in batches. Stable: rows with equal keys keep
//! their input order, which the pipelines keep equal to the serial order,
//! so ORDER BY ties come out the same with any number of workers.

use arrow_array::{RecordBatch, UInt32Array};
use arrow_row::SortField;
use arrow_schema::SortOptions;

use super::pipeline::{BoxOp, Operator};
use super::util::{KeyEncoder, concat, conform, make_batch, take_columns};
use super::work_mem::Reservation;
use super::{BATCH_ROWS, ExecContext, check_interrupts, expr};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Schema, SortKey};

pub struct SortOp {
    input: Option<BoxOp>,
    keys: Vec<SortKey>,
    schema: Schema,
    ctx: ExecContext,
    sorted: Option<(RecordBatch, Vec<u32>, usize)>,
}

impl SortOp {
    pub fn new(input: BoxOp, keys: Vec<SortKey>, schema: Schema, ctx: &ExecContext) -> SortOp {
        SortOp { input: Some(input), keys, schema, ctx: ctx.clone(), sorted: None }
    }

    fn sort_all(&mut self, mut input: BoxOp) -> Result<(RecordBatch, Vec<u32>)> {
        let mut reservation = Reservation::new("Sort", self.ctx.work_mem);
        let mut batches = Vec::new();
        while let Some(batch) = input.next()? {
            check_interrupts(&self.ctx)?;
            reservation.grow(batch.get_array_memory_size())?;
            batches.push(batch);
        }
        drop(input);
        let all = concat(&self.schema, &batches)?;
        drop(batches);
        let rows = all.num_rows();
        if rows > u32::MAX as usize {
            return Err(SqlError::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "a sort's input exceeds 2^32 rows"));
        }
        let keys = self
            .keys
            .iter()
            .map(|k| conform(expr::evaluate(&k.expr, &all, &self.ctx)?, &k.expr.ty()))
            .collect::<Result<Vec<_>>>()?;
        let fields = self
            .keys
            .iter()
            .map(|k| {
                SortField::new_with_options(
                    k.expr.ty().arrow(),
                    SortOptions { descending: !k.asc, nulls_first: k.nulls_first },
                )
            })
            .collect();
        let encoded = KeyEncoder::with_fields(fields)?.encode(&keys)?;
        reservation.grow(encoded.size() + rows * 4)?;
        check_interrupts(&self.ctx)?;
        let mut order: Vec<u32> = (0..rows as u32).collect();
        order.sort_by(|&a, &b| encoded.row(a as usize).cmp(&encoded.row(b as usize)));
        Ok((all, order))
    }
}

impl Operator for SortOp {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(input) = self.input.take() {
            let (all, order) = self.sort_all(input)?;
            self.sorted = Some((all, order, 0));
        }
        let Some((all, order, at)) = &mut self.sorted else { return Ok(None) };
        if *at >= order.len() {
            self.sorted = None;
            return Ok(None);
        }
        check_interrupts(&self.ctx)?;
        let end = (*at + BATCH_ROWS).min(order.len());
        let indices = UInt32Array::from(order[*at..end].to_vec());
        *at = end;
        let columns = take_columns(all, &indices)?;
        Ok(Some(make_batch(&self.schema, columns, indices.len())?))
    }
}
