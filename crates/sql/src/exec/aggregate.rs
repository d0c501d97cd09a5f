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
//!
//! ## Over `work_mem`: spilling (PostgreSQL 13's hybrid hash aggregation)
//!
//! ```text
//!  row ─► group in the table? ─yes─► update its states
//!              │ no
//!              ├─ room for a group ─► add it, update
//!              └─ table full ─► spill the row to partition(hash of key, level) ─► file
//!
//!  end: merge the tables; for each partition p: a table of the merged groups in p,
//!       fed p's spilled rows (spilling again, one level down, if it fills) ─► output
//! ```
//!
//! Once a table is full it adds no group, so a group's rows are either all
//! in that table or all spilled, in input order: a float sum adds the
//! same values in the same order as without spilling. With several partial
//! tables one group may be in one table and spilled by another; the
//! partition's table starts from the merged groups of that partition, so
//! the spilled rows join their group's state there. A DISTINCT aggregate's
//! table (only ever one) lets groups take a quarter of `work_mem`, the
//! rest being for the values its sets keep: the sets of the groups in the
//! table cannot spill, and sets that outgrow `work_mem` still fail with
//! 53200. Without GROUP BY there is one group and
//! nothing to spill. Output is sorted within each partition, not across.

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
use super::spill::{Partitions, SpillFile, partition_of};
use super::util::{KeyEncoder, arrow_err, conform, make_batch, rechunk, take_columns};
use super::work_mem::{ENTRY_OVERHEAD_BYTES, Reservation};
use super::{ExecContext, check_interrupts, expr};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{AggFunc, AggregateExpr, Expr, Schema};
use crate::types::DataType;

/// Partitions a full table's new groups are spilled to.
const FANOUT: usize = 16;

/// Repartitioning deeper than this fails (each level has at least one
/// group per table, so only a tiny `work_mem` gets there).
const MAX_LEVEL: u32 = 12;

/// A row's group when the table was full and the row spilled.
const SPILLED: u32 = u32::MAX;

pub struct AggregateOp {
    input: Option<(BoxOp, Option<Arc<PartialTables>>)>,
    spec: Arc<Spec>,
    schema: Schema,
    ctx: ExecContext,
    node: Arc<MetricsNode>,
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
        node: &Arc<MetricsNode>,
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
            node: node.clone(),
            output: Vec::new(),
        }
    }

    /// The output batches (each at most [`super::BATCH_ROWS`] rows).
    fn aggregate(&self, mut input: BoxOp, partial: Option<Arc<PartialTables>>) -> Result<Vec<RecordBatch>> {
        let tables = match partial {
            None => {
                let mut table = GroupTable::new(self.spec.clone(), &self.ctx, 0)?;
                while let Some(batch) = input.next()? {
                    check_interrupts(&self.ctx)?;
                    table.consume(&batch)?;
                }
                vec![table]
            }
            Some(partial) => {
                while input.next()?.is_some() {}
                drop(input);
                partial.tables.iter().filter_map(|t| t.lock().take()).collect()
            }
        };
        if tables.iter().any(|t| t.spilled.is_some()) {
            return self.aggregate_spilled(tables);
        }
        let tables = match <[GroupTable; 1]>::try_from(tables) {
            Ok([table]) => return Ok(rechunk(&table.finish(&self.schema)?)),
            Err(tables) => tables,
        };
        let mut merged = GroupTable::new(self.spec.clone(), &self.ctx, 0)?;
        for table in tables {
            check_interrupts(&self.ctx)?;
            merged.merge(&table, 0..table.groups.len() as u32)?;
        }
        Ok(rechunk(&merged.finish(&self.schema)?))
    }

    /// The tables' groups and their spilled rows, partition by partition.
    fn aggregate_spilled(&self, tables: Vec<GroupTable>) -> Result<Vec<RecordBatch>> {
        let mut files: Vec<Vec<SpillFile>> = (0..FANOUT).map(|_| Vec::new()).collect();
        let mut merged = GroupTable::new(self.spec.clone(), &self.ctx, 1)?;
        for mut table in tables {
            check_interrupts(&self.ctx)?;
            for (p, file) in table.take_spilled()?.into_iter().enumerate() {
                files[p].extend(file);
            }
            merged.merge(&table, 0..table.groups.len() as u32)?;
        }
        self.node.note_spill_passes(1);
        let mut by_partition: Vec<Vec<u32>> = vec![Vec::new(); FANOUT];
        for g in 0..merged.groups.len() as u32 {
            by_partition[partition_of(merged.groups.hash(g), 0, FANOUT)].push(g);
        }
        let mut out = Vec::new();
        for (groups, files) in by_partition.into_iter().zip(files) {
            let mut table = GroupTable::new(self.spec.clone(), &self.ctx, 1)?;
            table.merge(&merged, groups.into_iter())?;
            self.feed(&mut table, files)?;
            self.drain(table, &mut out)?;
        }
        Ok(out)
    }

    /// Feeds `table` the rows of spill `files`.
    fn feed(&self, table: &mut GroupTable, files: Vec<SpillFile>) -> Result<()> {
        self.node.add_spill_files(&files);
        for file in files {
            for batch in file.read()? {
                check_interrupts(&self.ctx)?;
                table.consume(&batch?)?;
            }
        }
        Ok(())
    }

    /// `table`'s groups, then those of the rows it spilled, a table per
    /// partition one level down.
    fn drain(&self, mut table: GroupTable, out: &mut Vec<RecordBatch>) -> Result<()> {
        let spilled = table.take_spilled()?;
        let level = table.level;
        if table.group_count > 0 {
            out.extend(rechunk(&table.finish(&self.schema)?));
        }
        if spilled.iter().all(Option::is_none) {
            return Ok(());
        }
        if level >= MAX_LEVEL {
            return Err(SqlError::new(SqlState::OUT_OF_MEMORY, "out of memory")
                .with_detail(format!("HashAggregate repartitioned its spilled groups {level} times"))
                .with_hint("Raise work_mem (SET work_mem = '256MB')."));
        }
        self.node.note_spill_passes(u64::from(level) + 1);
        for file in spilled.into_iter().flatten() {
            let mut sub = GroupTable::new(self.spec.clone(), &self.ctx, level + 1)?;
            self.feed(&mut sub, vec![file])?;
            self.drain(sub, out)?;
        }
        Ok(())
    }
}

impl Operator for AggregateOp {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some((input, partial)) = self.input.take() {
            self.output = self.aggregate(input, partial)?;
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
            *slot = Some(GroupTable::new(self.spec.clone(), ctx, 0)?);
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
    /// The most its groups may take (all of `work_mem`, or a quarter of
    /// it with DISTINCT aggregates: their sets take the rest).
    group_budget: usize,
    /// Adds no group any more: rows of new groups spill.
    full: bool,
    /// Where rows of new groups went once the table was full.
    spilled: Option<Partitions>,
    /// 0 for the tables the input feeds; a partition's table one more
    /// than the table whose rows it reads. Picks the partitioning's bits.
    level: u32,
}

impl GroupTable {
    fn new(spec: Arc<Spec>, ctx: &ExecContext, level: u32) -> Result<GroupTable> {
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
        let group_budget = if spec.aggregates.iter().any(|a| a.distinct) { ctx.work_mem / 4 } else { ctx.work_mem };
        let mut table = GroupTable {
            spec,
            ctx: ctx.clone(),
            encoder,
            groups: GroupKeys::new(),
            group_count: 0,
            states,
            group_budget,
            distinct,
            reservation: Reservation::new("HashAggregate", ctx.work_mem),
            full: false,
            spilled: None,
            level,
        };
        if table.encoder.is_none() {
            let bytes = table.add_group();
            table.reservation.force_grow(bytes);
        }
        Ok(table)
    }

    /// Adds a group's states; returns their bytes.
    fn add_group(&mut self) -> usize {
        self.group_count += 1;
        self.states.iter_mut().map(|s| s.push_group()).sum()
    }

    /// The group number of an encoded key (whose [`hash_bytes`] is
    /// `hash`), adding the group if new and there is room ([`SPILLED`]
    /// if not; `force`: add it anyway). A table without groups takes one
    /// whatever its size.
    fn group_of(&mut self, key: &[u8], hash: u64, force: bool) -> u32 {
        if self.full && !force {
            return self.groups.find_hashed(key, hash).unwrap_or(SPILLED);
        }
        let (id, added) = self.groups.find_or_insert_hashed(key, hash);
        if added {
            let bytes = self.add_group() + key.len() + ENTRY_OVERHEAD_BYTES;
            debug_assert_eq!(id as usize + 1, self.group_count, "group keys and states are numbered alike");
            self.reservation.force_grow(bytes);
            if self.reservation.used_bytes() >= self.group_budget {
                self.full = true;
            }
        }
        id
    }

    /// The group number of each row of `batch` ([`SPILLED`] for rows of
    /// new groups once the table is full), and the key hashes of those.
    fn group_ids(&mut self, batch: &RecordBatch) -> Result<(Vec<u32>, Vec<u64>)> {
        let Some(encoder) = &self.encoder else { return Ok((vec![0; batch.num_rows()], Vec::new())) };
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
        let mut spilled = Vec::new();
        let mut previous: Option<(&[u8], u32, u64)> = None;
        for row in rows.iter() {
            let key = row.data();
            let (id, hash) = match previous {
                Some((k, id, hash)) if k == key => (id, hash),
                _ => {
                    let hash = hash_bytes(key);
                    (self.group_of(key, hash, false), hash)
                }
            };
            previous = Some((key, id, hash));
            ids.push(id);
            if id == SPILLED {
                spilled.push(hash);
            }
        }
        Ok((ids, spilled))
    }

    fn consume(&mut self, batch: &RecordBatch) -> Result<()> {
        let (ids, spilled) = self.group_ids(batch)?;
        if spilled.is_empty() {
            for a in 0..self.spec.aggregates.len() {
                self.update(a, batch, &ids)?;
            }
            return Ok(());
        }
        let resident: BooleanArray = ids.iter().map(|&g| Some(g != SPILLED)).collect();
        let out = arrow_arith::boolean::not(&resident).map_err(arrow_err)?;
        let out = arrow_select::filter::filter_record_batch(batch, &out).map_err(arrow_err)?;
        self.spill(&out, &spilled)?;
        let batch = arrow_select::filter::filter_record_batch(batch, &resident).map_err(arrow_err)?;
        let ids: Vec<u32> = ids.into_iter().filter(|&g| g != SPILLED).collect();
        for a in 0..self.spec.aggregates.len() {
            self.update(a, &batch, &ids)?;
        }
        Ok(())
    }

    /// Writes rows of new groups (their keys' hashes `hashes`) to the
    /// partitions of this table's level.
    fn spill(&mut self, rows: &RecordBatch, hashes: &[u64]) -> Result<()> {
        let level = self.level;
        let parts: Vec<usize> = hashes.iter().map(|&h| partition_of(h, level, FANOUT)).collect();
        self.spilled.get_or_insert_with(|| Partitions::new(&self.ctx.spill, rows.schema(), FANOUT)).add(rows, &parts)
    }

    /// The files of the rows this table spilled, by partition (all None
    /// if it spilled none).
    fn take_spilled(&mut self) -> Result<Vec<Option<SpillFile>>> {
        match self.spilled.take() {
            Some(parts) => parts.finish(),
            None => Ok((0..FANOUT).map(|_| None).collect()),
        }
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

    /// Adds `other`'s `groups` and their states, whatever room that takes
    /// (states cannot spill). DISTINCT aggregates have one partial table,
    /// and a group of it never meets more rows after a merge (see the
    /// module doc): their sets are not carried over.
    fn merge(&mut self, other: &GroupTable, groups: impl Iterator<Item = u32>) -> Result<()> {
        let mapping: Vec<(u32, u32)> = match self.encoder {
            None => vec![(0, 0)],
            Some(_) => {
                let mut m = Vec::with_capacity(other.groups.len());
                for theirs in groups {
                    m.push((self.group_of(other.groups.key(theirs), other.groups.hash(theirs), true), theirs));
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
        let mut whole = GroupTable::new(spec.clone(), &ctx, 0).unwrap();
        whole.consume(&batch).unwrap();
        let (mut a, mut b) =
            (GroupTable::new(spec.clone(), &ctx, 0).unwrap(), GroupTable::new(spec.clone(), &ctx, 0).unwrap());
        a.consume(&batch.slice(0, 400)).unwrap();
        b.consume(&batch.slice(400, 600)).unwrap();
        let mut merged = GroupTable::new(spec, &ctx, 0).unwrap();
        merged.merge(&a, 0..a.groups.len() as u32).unwrap();
        merged.merge(&b, 0..b.groups.len() as u32).unwrap();
        assert_eq!(merged.finish(&schema).unwrap(), whole.finish(&schema).unwrap());
    }
}
