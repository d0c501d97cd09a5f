//! Hash aggregation: GROUP BY keys encoded with arrow-row map to group
//! numbers (in first-seen order, so the output order does not depend on
//! the hash map or on the number of workers); each aggregate keeps one
//! state per group ([`super::accumulate`]). No GROUP BY = one group, which
//! exists even for an empty input (`count(*)` of nothing is 0).
//!
//! DISTINCT aggregates keep a set of (group, encoded argument) and feed a
//! value only the first time; FILTER drops the rows where its condition
//! is not TRUE. Everything held (keys, states, distinct sets) is counted
//! against `work_mem`.

use std::collections::{HashMap, HashSet};

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};

use super::accumulate::Accumulator;
use super::build::as_bool;
use super::pipeline::{BoxOp, Operator};
use super::util::{KeyEncoder, conform, make_batch, rechunk};
use super::work_mem::{ENTRY_OVERHEAD_BYTES, Reservation};
use super::{ExecContext, check_interrupts, expr};
use crate::error::Result;
use crate::plan::{AggregateExpr, Expr, Schema};

pub struct AggregateOp {
    input: Option<BoxOp>,
    group_by: Vec<Expr>,
    aggregates: Vec<AggregateExpr>,
    schema: Schema,
    ctx: ExecContext,
    output: Vec<RecordBatch>,
}

impl AggregateOp {
    pub fn new(
        input: BoxOp,
        group_by: &[Expr],
        aggregates: &[AggregateExpr],
        schema: &Schema,
        ctx: &ExecContext,
    ) -> AggregateOp {
        AggregateOp {
            input: Some(input),
            group_by: group_by.to_vec(),
            aggregates: aggregates.to_vec(),
            schema: schema.clone(),
            ctx: ctx.clone(),
            output: Vec::new(),
        }
    }
}

impl Operator for AggregateOp {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(input) = self.input.take() {
            let mut table = GroupTable::new(&self.group_by, &self.aggregates, &self.ctx)?;
            table.consume(input)?;
            let all = table.finish(&self.schema)?;
            self.output = rechunk(&all);
            self.output.reverse();
        }
        check_interrupts(&self.ctx)?;
        Ok(self.output.pop())
    }
}

/// A DISTINCT aggregate's values seen so far, per group.
type DistinctSet = (KeyEncoder, HashSet<(u32, Box<[u8]>)>);

struct GroupTable<'a> {
    group_by: &'a [Expr],
    aggregates: &'a [AggregateExpr],
    ctx: &'a ExecContext,
    /// None without GROUP BY (one group, number 0).
    encoder: Option<KeyEncoder>,
    groups: HashMap<Box<[u8]>, u32>,
    group_count: usize,
    states: Vec<Accumulator>,
    distinct: Vec<Option<DistinctSet>>,
    reservation: Reservation,
}

impl<'a> GroupTable<'a> {
    fn new(group_by: &'a [Expr], aggregates: &'a [AggregateExpr], ctx: &'a ExecContext) -> Result<GroupTable<'a>> {
        let encoder = if group_by.is_empty() {
            None
        } else {
            Some(KeyEncoder::new(&group_by.iter().map(|e| e.ty().arrow()).collect::<Vec<_>>())?)
        };
        let states = aggregates.iter().map(Accumulator::new).collect::<Result<Vec<_>>>()?;
        let distinct = aggregates
            .iter()
            .map(|a| match (&a.arg, a.distinct) {
                (Some(arg), true) => Ok(Some((KeyEncoder::new(&[arg.ty().arrow()])?, HashSet::new()))),
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut table = GroupTable {
            group_by,
            aggregates,
            ctx,
            encoder,
            groups: HashMap::new(),
            group_count: 0,
            states,
            distinct,
            reservation: Reservation::new("HashAggregate", ctx.work_mem),
        };
        if table.encoder.is_none() {
            table.add_group()?;
        }
        Ok(table)
    }

    fn add_group(&mut self) -> Result<u32> {
        let id = self.group_count as u32;
        self.group_count += 1;
        let mut bytes = 0;
        for s in &mut self.states {
            bytes += s.push_group();
        }
        self.reservation.grow(bytes)?;
        Ok(id)
    }

    /// The group number of each row of `batch`.
    fn group_ids(&mut self, batch: &RecordBatch) -> Result<Vec<u32>> {
        let Some(encoder) = &self.encoder else { return Ok(vec![0; batch.num_rows()]) };
        let keys = self
            .group_by
            .iter()
            .map(|e| conform(expr::evaluate(e, batch, self.ctx)?, &e.ty()))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let rows = encoder.encode(&keys)?;
        let mut ids = Vec::with_capacity(rows.num_rows());
        for row in rows.iter() {
            let id = match self.groups.get(row.as_ref()) {
                Some(&id) => id,
                None => {
                    let id = self.add_group()?;
                    self.reservation.grow(row.as_ref().len() + ENTRY_OVERHEAD_BYTES)?;
                    self.groups.insert(row.as_ref().into(), id);
                    id
                }
            };
            ids.push(id);
        }
        Ok(ids)
    }

    fn consume(&mut self, mut input: BoxOp) -> Result<()> {
        while let Some(batch) = input.next()? {
            check_interrupts(self.ctx)?;
            let ids = self.group_ids(&batch)?;
            for a in 0..self.aggregates.len() {
                self.update(a, &batch, &ids)?;
            }
        }
        Ok(())
    }

    /// Feeds aggregate `a` the rows of `batch` its FILTER and DISTINCT let
    /// through.
    fn update(&mut self, a: usize, batch: &RecordBatch, ids: &[u32]) -> Result<()> {
        let agg = &self.aggregates[a];
        let n = batch.num_rows();
        let mut take: Vec<bool> = vec![true; n];
        if let Some(filter) = &agg.filter {
            let mask = expr::evaluate(filter, batch, self.ctx)?;
            let mask: &BooleanArray = as_bool(&mask)?;
            for (i, t) in take.iter_mut().enumerate() {
                *t = mask.is_valid(i) && mask.value(i);
            }
        }
        let arg = match &agg.arg {
            Some(e) => Some(conform(expr::evaluate(e, batch, self.ctx)?, &e.ty())?),
            None => None,
        };
        if let (Some(arg), Some((encoder, seen))) = (&arg, &mut self.distinct[a]) {
            let rows = encoder.encode(std::slice::from_ref(arg))?;
            for i in 0..n {
                if take[i] && arg.is_valid(i) {
                    let key = (ids[i], Box::<[u8]>::from(rows.row(i).as_ref()));
                    let bytes = key.1.len() + ENTRY_OVERHEAD_BYTES;
                    take[i] = seen.insert(key);
                    if take[i] {
                        self.reservation.grow(bytes)?;
                    }
                }
            }
        }
        self.states[a].update(arg.as_ref(), ids, &take)
    }

    /// The output: group keys, then one column per aggregate.
    fn finish(self, schema: &Schema) -> Result<RecordBatch> {
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.len());
        if let Some(encoder) = &self.encoder {
            let mut keys: Vec<(&Box<[u8]>, &u32)> = self.groups.iter().collect();
            keys.sort_unstable_by_key(|(_, id)| **id);
            columns.extend(encoder.decode(keys.into_iter().map(|(k, _)| k.as_ref()))?);
        }
        for (state, agg) in self.states.into_iter().zip(self.aggregates) {
            columns.push(state.finish(agg)?);
        }
        make_batch(schema, columns, self.group_count)
    }
}
