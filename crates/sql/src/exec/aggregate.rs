//! Hash aggregation: GROUP BY keys encoded with arrow-row map to group
//! numbers ([`GroupKeys`]: keys back to back, no allocation per group);
//! each aggregate keeps one state per group
//! ([`super::accumulate`]). No GROUP BY = one group, which exists even for
//! an empty input (`count(*)` of nothing is 0). Groups are emitted in the
//! order of their encoded keys, so the output does not depend on the hash
//! map, on the order morsels arrive in, or on the number of workers.
//!
//! ```text
//!  input pipeline ─► worker 1 ─► partial table 1 ─┐
//!                 ─► worker 2 ─► partial table 2 ─┴─► merge ─► sort keys ─► batches
//! ```
//!
//! The update runs as the last stage of the input's pipeline, on every
//! worker, each into a partial table of its own; the partial tables are
//! merged at the end (PostgreSQL's partial aggregation). Two cases keep
//! fewer tables: DISTINCT aggregates use one table (a value seen by two
//! workers must count once), and float sums and averages are fed in the
//! input's order on the consumer's thread (float addition is not
//! associative, and parallel must equal serial bit for bit).
//!
//! DISTINCT aggregates keep a set of (group, encoded argument) and feed a
//! value only the first time; FILTER drops the rows where its condition
//! is not TRUE. Everything held (keys, states, distinct sets) is counted
//! against `work_mem`, per partial table.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use parking_lot::Mutex;

use super::accumulate::Accumulator;
use super::build::as_bool;
use super::group_keys::GroupKeys;
use super::hashing::{FastState, hash_bytes};
use super::metrics::MetricsNode;
use super::pipeline::{BoxOp, Operator, Pipeline, Stage, Transform};
use super::util::{KeyEncoder, conform, make_batch, rechunk, take_columns};
use super::work_mem::{ENTRY_OVERHEAD_BYTES, Reservation};
use super::{ExecContext, check_interrupts, expr};
use crate::error::{Result, SqlError};
use crate::plan::{AggFunc, AggregateExpr, Expr, Schema};
use crate::types::DataType;

pub struct AggregateOp {
    input: Option<(BoxOp, Option<Arc<PartialTables>>)>,
    spec: Arc<Spec>,
    schema: Schema,
    ctx: ExecContext,
    output: Vec<RecordBatch>,
}

/// What the aggregate computes.
struct Spec {
    group_by: Vec<Expr>,
    aggregates: Vec<AggregateExpr>,
}

impl AggregateOp {
    /// Starts `input` with the update stage on top where the aggregates
    /// allow it.
    pub fn new(
        mut input: Pipeline,
        group_by: &[Expr],
        aggregates: &[AggregateExpr],
        schema: &Schema,
        ctx: &ExecContext,
    ) -> AggregateOp {
        let spec = Arc::new(Spec { group_by: group_by.to_vec(), aggregates: aggregates.to_vec() });
        let float = aggregates.iter().any(|a| {
            matches!(a.func, AggFunc::Sum | AggFunc::Avg) && a.arg.as_ref().is_some_and(|e| e.ty() == DataType::Float64)
        });
        let partial = (!float).then(|| {
            let tables = if aggregates.iter().any(|a| a.distinct) { 1 } else { ctx.workers.max(1) };
            let partial =
                Arc::new(PartialTables { spec: spec.clone(), tables: (0..tables).map(|_| Mutex::new(None)).collect() });
            let metrics = MetricsNode::new("partial aggregate", vec![]);
            input.stages.push(Stage { transform: partial.clone(), metrics });
            partial
        });
        AggregateOp {
            input: Some((input.start(ctx), partial)),
            spec,
            schema: schema.clone(),
            ctx: ctx.clone(),
            output: Vec::new(),
        }
    }

    fn aggregate(&self, mut input: BoxOp, partial: Option<Arc<PartialTables>>) -> Result<RecordBatch> {
        let Some(partial) = partial else {
            let mut table = GroupTable::new(self.spec.clone(), &self.ctx)?;
            while let Some(batch) = input.next()? {
                check_interrupts(&self.ctx)?;
                table.consume(&batch)?;
            }
            return table.finish(&self.schema);
        };
        while input.next()?.is_some() {}
        drop(input);
        let mut merged = GroupTable::new(self.spec.clone(), &self.ctx)?;
        for table in &partial.tables {
            if let Some(table) = table.lock().take() {
                check_interrupts(&self.ctx)?;
                merged.merge(table)?;
            }
        }
        merged.finish(&self.schema)
    }
}

impl Operator for AggregateOp {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some((input, partial)) = self.input.take() {
            let all = self.aggregate(input, partial)?;
            self.output = rechunk(&all);
            self.output.reverse();
        }
        check_interrupts(&self.ctx)?;
        Ok(self.output.pop())
    }
}

/// The update stage: each call feeds a batch into a partial table no
/// other worker holds at the moment; it emits nothing.
struct PartialTables {
    spec: Arc<Spec>,
    tables: Vec<Mutex<Option<GroupTable>>>,
}

impl Transform for PartialTables {
    fn apply(&self, batch: RecordBatch, ctx: &ExecContext) -> Result<RecordBatch> {
        let mut slot = match self.tables.iter().find_map(|t| t.try_lock()) {
            Some(slot) => slot,
            None => self.tables[0].lock(),
        };
        if slot.is_none() {
            *slot = Some(GroupTable::new(self.spec.clone(), ctx)?);
        }
        slot.as_mut().ok_or_else(|| SqlError::internal("partial table missing"))?.consume(&batch)?;
        Ok(batch.slice(0, 0))
    }
}

/// A DISTINCT aggregate's values seen so far, per group.
type DistinctSet = (KeyEncoder, HashSet<(u32, Box<[u8]>), FastState>);

struct GroupTable {
    spec: Arc<Spec>,
    ctx: ExecContext,
    /// None without GROUP BY (one group, number 0).
    encoder: Option<KeyEncoder>,
    /// The groups' encoded keys (empty without GROUP BY).
    groups: GroupKeys,
    group_count: usize,
    states: Vec<Accumulator>,
    distinct: Vec<Option<DistinctSet>>,
    reservation: Reservation,
}

impl GroupTable {
    fn new(spec: Arc<Spec>, ctx: &ExecContext) -> Result<GroupTable> {
        let encoder = if spec.group_by.is_empty() {
            None
        } else {
            Some(KeyEncoder::new(&spec.group_by.iter().map(|e| e.ty().arrow()).collect::<Vec<_>>())?)
        };
        let states = spec.aggregates.iter().map(Accumulator::new).collect::<Result<Vec<_>>>()?;
        let distinct = spec
            .aggregates
            .iter()
            .map(|a| match (&a.arg, a.distinct) {
                (Some(arg), true) => Ok(Some((KeyEncoder::new(&[arg.ty().arrow()])?, HashSet::default()))),
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut table = GroupTable {
            spec,
            ctx: ctx.clone(),
            encoder,
            groups: GroupKeys::new(),
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

    /// The group number of an encoded key (whose [`hash_bytes`] is
    /// `hash`), adding the group if new.
    fn group_of(&mut self, key: &[u8], hash: u64) -> Result<u32> {
        let (id, added) = self.groups.find_or_insert_hashed(key, hash);
        if added {
            let state_id = self.add_group()?;
            debug_assert_eq!(id, state_id, "group keys and states are numbered alike");
            self.reservation.grow(key.len() + ENTRY_OVERHEAD_BYTES)?;
        }
        Ok(id)
    }

    /// The group number of each row of `batch`.
    fn group_ids(&mut self, batch: &RecordBatch) -> Result<Vec<u32>> {
        let Some(encoder) = &self.encoder else { return Ok(vec![0; batch.num_rows()]) };
        let keys = self
            .spec
            .group_by
            .iter()
            .map(|e| conform(expr::evaluate(e, batch, &self.ctx)?, &e.ty()))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let rows = encoder.encode(&keys)?;
        // Rows of one group often come together (lineitem by order key):
        // a row with the previous row's key skips the hash lookup.
        let mut ids = Vec::with_capacity(rows.num_rows());
        let mut previous: Option<(&[u8], u32)> = None;
        for row in rows.iter() {
            let key = row.data();
            let id = match previous {
                Some((k, id)) if k == key => id,
                _ => self.group_of(key, hash_bytes(key))?,
            };
            previous = Some((key, id));
            ids.push(id);
        }
        Ok(ids)
    }

    fn consume(&mut self, batch: &RecordBatch) -> Result<()> {
        let ids = self.group_ids(batch)?;
        for a in 0..self.spec.aggregates.len() {
            self.update(a, batch, &ids)?;
        }
        Ok(())
    }

    /// Feeds aggregate `a` the rows of `batch` its FILTER and DISTINCT let
    /// through.
    fn update(&mut self, a: usize, batch: &RecordBatch, ids: &[u32]) -> Result<()> {
        let agg = &self.spec.aggregates[a];
        let n = batch.num_rows();
        let mut take: Vec<bool> = vec![true; n];
        if let Some(filter) = &agg.filter {
            let mask = expr::evaluate(filter, batch, &self.ctx)?;
            let mask: &BooleanArray = as_bool(&mask)?;
            for (i, t) in take.iter_mut().enumerate() {
                *t = mask.is_valid(i) && mask.value(i);
            }
        }
        let arg = match &agg.arg {
            Some(e) => Some(conform(expr::evaluate(e, batch, &self.ctx)?, &e.ty())?),
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

    /// Adds `other`'s groups and states. DISTINCT aggregates have one
    /// partial table, merged into an empty one: their sets are no longer
    /// needed.
    fn merge(&mut self, other: GroupTable) -> Result<()> {
        let mapping: Vec<(u32, u32)> = match self.encoder {
            None => vec![(0, 0)],
            Some(_) => {
                let mut m = Vec::with_capacity(other.groups.len());
                for theirs in 0..other.groups.len() as u32 {
                    m.push((self.group_of(other.groups.key(theirs), other.groups.hash(theirs))?, theirs));
                }
                m
            }
        };
        for (mine, theirs) in self.states.iter_mut().zip(&other.states) {
            for &(dst, src) in &mapping {
                mine.merge_group(dst, theirs, src)?;
            }
        }
        Ok(())
    }

    /// The output: group keys, then one column per aggregate, groups in
    /// the order of their encoded keys.
    fn finish(self, schema: &Schema) -> Result<RecordBatch> {
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.len());
        let mut order: Vec<u32> = (0..self.group_count as u32).collect();
        if let Some(encoder) = &self.encoder {
            order = self.groups.sorted();
            columns.extend(encoder.decode(order.iter().map(|&g| self.groups.key(g)))?);
        }
        let order = UInt32Array::from(order);
        let key_count = columns.len();
        for (state, agg) in self.states.into_iter().zip(&self.spec.aggregates) {
            columns.push(state.finish(agg)?);
        }
        let by_id =
            make_batch(&Arc::new(schema[key_count..].to_vec()), columns.split_off(key_count), self.group_count)?;
        columns.extend(take_columns(&by_id, &order)?);
        make_batch(schema, columns, self.group_count)
    }
}

#[cfg(test)]
mod tests {

    use arrow_array::{Int32Array, Int64Array};

    use super::*;
    use crate::exec::memory::MemorySource;
    use crate::plan::Field;

    fn ctx() -> ExecContext {
        ExecContext { work_mem: 1 << 24, workers: 2, ..ExecContext::new(Arc::new(MemorySource::new())) }
    }

    /// Merged partial tables give what one table fed everything gives.
    #[test]
    fn merged_partials_equal_one_table() {
        let (int, big) = (DataType::Int32, DataType::Int64);
        let agg = |func, ty| AggregateExpr { func, arg: Some(Expr::column(1, big)), distinct: false, filter: None, ty };
        let spec = Arc::new(Spec {
            group_by: vec![Expr::column(0, int)],
            aggregates: vec![
                AggregateExpr { func: AggFunc::CountStar, arg: None, distinct: false, filter: None, ty: big },
                agg(AggFunc::Sum, DataType::Numeric { precision: None, scale: 0 }),
                agg(AggFunc::Min, big),
                agg(AggFunc::Max, big),
            ],
        });
        let fields = ["g", "count", "sum", "min", "max"].map(|n| Field {
            name: n.into(),
            qualifier: None,
            ty: big,
            nullable: true,
        });
        let mut fields = fields.to_vec();
        fields[0].ty = int;
        fields[2].ty = DataType::Numeric { precision: None, scale: 0 };
        let schema: Schema = Arc::new(fields);
        let g: Int32Array = (0..1000).map(|i| (i % 7 != 0).then_some(i % 13)).collect();
        let v: Int64Array = (0..1000).map(|i| (i % 5 != 0).then_some((i * 7919) % 1000 - 500)).collect();
        let batch =
            RecordBatch::try_from_iter([("g", Arc::new(g) as ArrayRef), ("v", Arc::new(v) as ArrayRef)]).unwrap();
        let ctx = ctx();
        let mut whole = GroupTable::new(spec.clone(), &ctx).unwrap();
        whole.consume(&batch).unwrap();
        let (mut a, mut b) =
            (GroupTable::new(spec.clone(), &ctx).unwrap(), GroupTable::new(spec.clone(), &ctx).unwrap());
        a.consume(&batch.slice(0, 400)).unwrap();
        b.consume(&batch.slice(400, 600)).unwrap();
        let mut merged = GroupTable::new(spec, &ctx).unwrap();
        merged.merge(a).unwrap();
        merged.merge(b).unwrap();
        assert_eq!(merged.finish(&schema).unwrap(), whole.finish(&schema).unwrap());
    }
}
