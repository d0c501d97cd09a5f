//! Sort: encodes each input batch's keys with arrow-row (each key's
//! ASC/DESC and NULLS FIRST/LAST folded into the bytes), sorts row
//! positions by the encoded keys with a stable sort, and emits the rows in
//! batches. Stable: rows with equal keys keep their input order, which the
//! pipelines keep equal to the serial order, so ORDER BY ties come out the
//! same with any number of workers.
//!
//! Over `work_mem` (input batches and their encoded keys, counted as they
//! arrive) the sort goes external, as PostgreSQL's "external merge":
//!
//! ```text
//!  input ─► chunk of ≤ work_mem ─► sort ─► run file (rows + their encoded key) ─┐
//!        ─► chunk of ≤ work_mem ─► sort ─► run file ─────────────────────────────┤
//!                                            ...                                 │
//!        ◄── batches ◄── k-way merge by encoded key, ties to the earlier run ◄───┘
//! ```
//!
//! Runs cover consecutive stretches of the input and a tie goes to the
//! earlier run, so the external sort is stable too: its output is the
//! in-memory sort's, row for row. More than [`MERGE_FAN_IN`] runs are
//! merged in passes (groups of consecutive runs into longer runs) before
//! the last merge streams the output.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
use arrow_row::{Rows, SortField};
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema, SchemaRef, SortOptions};

use super::metrics::MetricsNode;
use super::pipeline::{BoxOp, Operator};
use super::spill::{SpillFile, SpillReader};
use super::util::{KeyEncoder, arrow_err, arrow_schema, conform, make_batch};
use super::work_mem::Reservation;
use super::{BATCH_ROWS, ExecContext, check_interrupts, expr};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Schema, SortKey};

/// Runs merged at once; more take extra passes.
pub const MERGE_FAN_IN: usize = 64;

pub struct SortOp {
    input: Option<BoxOp>,
    keys: Vec<SortKey>,
    schema: Schema,
    ctx: ExecContext,
    node: Arc<MetricsNode>,
    output: Option<Output>,
}

/// An input batch and its encoded sort keys.
struct Chunk {
    batch: RecordBatch,
    keys: Rows,
}

/// Rows in sorted order as (chunk, row) positions, or a merge of runs.
enum Output {
    Memory { chunks: Vec<RecordBatch>, order: Vec<(u32, u32)>, at: usize },
    Merge(Merge),
}

impl SortOp {
    pub fn new(input: BoxOp, keys: Vec<SortKey>, schema: Schema, ctx: &ExecContext, node: &Arc<MetricsNode>) -> SortOp {
        SortOp { input: Some(input), keys, schema, ctx: ctx.clone(), node: node.clone(), output: None }
    }

    fn encoder(&self) -> Result<KeyEncoder> {
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
        KeyEncoder::with_fields(fields)
    }

    fn chunk(&self, encoder: &KeyEncoder, batch: RecordBatch) -> Result<Chunk> {
        let keys = self
            .keys
            .iter()
            .map(|k| conform(expr::evaluate(&k.expr, &batch, &self.ctx)?, &k.expr.ty()))
            .collect::<Result<Vec<_>>>()?;
        let keys = encoder.encode(&keys)?;
        Ok(Chunk { batch, keys })
    }

    /// Reads the whole input: sorted in memory, or spilled as sorted runs
    /// and merged.
    fn sort_all(&mut self, mut input: BoxOp) -> Result<Output> {
        let encoder = self.encoder()?;
        let mut reservation = Reservation::new("Sort", self.ctx.work_mem);
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut runs: Vec<SpillFile> = Vec::new();
        let mut rows = 0usize;
        while let Some(batch) = input.next()? {
            check_interrupts(&self.ctx)?;
            rows += batch.num_rows();
            if rows > u32::MAX as usize {
                return Err(SqlError::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "a sort's input exceeds 2^32 rows"));
            }
            let chunk = self.chunk(&encoder, batch)?;
            let bytes = chunk.batch.get_array_memory_size() + chunk.keys.size();
            if !reservation.try_grow(bytes) && !chunks.is_empty() {
                runs.push(self.write_run(std::mem::take(&mut chunks))?);
                reservation.release_all();
                reservation.force_grow(bytes);
            }
            chunks.push(chunk);
        }
        drop(input);
        if runs.is_empty() {
            let order = sorted_order(&chunks, &self.ctx)?;
            let chunks = chunks.into_iter().map(|c| c.batch).collect();
            return Ok(Output::Memory { chunks, order, at: 0 });
        }
        if !chunks.is_empty() {
            runs.push(self.write_run(chunks)?);
        }
        self.merge_runs(runs)
    }

    /// Sorts `chunks` and writes them to a run file, each row with its
    /// encoded key in a last binary column.
    fn write_run(&self, chunks: Vec<Chunk>) -> Result<SpillFile> {
        let order = sorted_order(&chunks, &self.ctx)?;
        let keyed: Vec<RecordBatch> =
            chunks.iter().map(|c| with_key_column(&c.batch, &c.keys)).collect::<Result<_>>()?;
        drop(chunks);
        let schema = run_schema(&self.schema);
        let mut file = self.ctx.spill.create(&schema)?;
        let refs: Vec<&RecordBatch> = keyed.iter().collect();
        for piece in order.chunks(BATCH_ROWS) {
            check_interrupts(&self.ctx)?;
            let indices: Vec<(usize, usize)> = piece.iter().map(|&(c, r)| (c as usize, r as usize)).collect();
            file.write(&arrow_select::interleave::interleave_record_batch(&refs, &indices).map_err(arrow_err)?)?;
        }
        let file = file.finish()?;
        self.node.add_spill_files([&file]);
        Ok(file)
    }

    /// Merges groups of [`MERGE_FAN_IN`] consecutive runs into longer runs
    /// until one merge can produce the output.
    fn merge_runs(&self, mut runs: Vec<SpillFile>) -> Result<Output> {
        let mut passes = 1;
        while runs.len() > MERGE_FAN_IN {
            let schema = run_schema(&self.schema);
            let mut longer = Vec::new();
            let mut group = Vec::new();
            for run in runs.into_iter() {
                group.push(run);
                if group.len() == MERGE_FAN_IN {
                    longer.push(self.merge_into_run(std::mem::take(&mut group), &schema)?);
                }
            }
            if !group.is_empty() {
                longer.push(self.merge_into_run(group, &schema)?);
            }
            runs = longer;
            passes += 1;
        }
        self.node.note_spill_passes(passes);
        Ok(Output::Merge(Merge::new(runs, run_schema(&self.schema))?))
    }

    fn merge_into_run(&self, runs: Vec<SpillFile>, schema: &SchemaRef) -> Result<SpillFile> {
        let mut merge = Merge::new(runs, schema.clone())?;
        let mut file = self.ctx.spill.create(schema)?;
        while let Some(batch) = merge.next_batch()? {
            check_interrupts(&self.ctx)?;
            file.write(&batch)?;
        }
        let file = file.finish()?;
        self.node.add_spill_files([&file]);
        Ok(file)
    }
}

/// The (chunk, row) positions of `chunks`' rows in key order, ties in
/// input order.
fn sorted_order(chunks: &[Chunk], ctx: &ExecContext) -> Result<Vec<(u32, u32)>> {
    let mut order: Vec<(u32, u32)> = chunks
        .iter()
        .enumerate()
        .flat_map(|(c, chunk)| (0..chunk.batch.num_rows() as u32).map(move |r| (c as u32, r)))
        .collect();
    check_interrupts(ctx)?;
    order.sort_by(|&(ca, ra), &(cb, rb)| {
        chunks[ca as usize].keys.row(ra as usize).cmp(&chunks[cb as usize].keys.row(rb as usize))
    });
    Ok(order)
}

/// A run file's schema: the sort's output columns, then the encoded key.
fn run_schema(schema: &Schema) -> SchemaRef {
    let mut fields: Vec<ArrowField> = arrow_schema(schema).fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(ArrowField::new("sort_key", ArrowType::Binary, false));
    Arc::new(ArrowSchema::new(fields))
}

fn with_key_column(batch: &RecordBatch, keys: &Rows) -> Result<RecordBatch> {
    let key: BinaryArray = keys.iter().map(|r| Some(r.data().to_vec())).collect();
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(key));
    let mut fields: Vec<ArrowField> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(ArrowField::new("sort_key", ArrowType::Binary, false));
    RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns).map_err(arrow_err)
}

impl Operator for SortOp {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(input) = self.input.take() {
            self.output = Some(self.sort_all(input)?);
        }
        check_interrupts(&self.ctx)?;
        match &mut self.output {
            None => Ok(None),
            Some(Output::Memory { chunks, order, at }) => {
                if *at >= order.len() {
                    self.output = None;
                    return Ok(None);
                }
                let end = (*at + BATCH_ROWS).min(order.len());
                let refs: Vec<&RecordBatch> = chunks.iter().collect();
                let indices: Vec<(usize, usize)> =
                    order[*at..end].iter().map(|&(c, r)| (c as usize, r as usize)).collect();
                *at = end;
                let batch = arrow_select::interleave::interleave_record_batch(&refs, &indices).map_err(arrow_err)?;
                make_batch(&self.schema, batch.columns().to_vec(), indices.len()).map(Some)
            }
            Some(Output::Merge(merge)) => match merge.next_batch()? {
                None => {
                    self.output = None;
                    Ok(None)
                }
                Some(batch) => {
                    let width = batch.num_columns() - 1;
                    make_batch(&self.schema, batch.columns()[..width].to_vec(), batch.num_rows()).map(Some)
                }
            },
        }
    }
}

/// A k-way merge of sorted runs by their key column; a tie goes to the
/// run listed first.
struct Merge {
    cursors: Vec<Cursor>,
    /// Cursors with rows left, as a binary min-heap by (key, run).
    heap: Vec<usize>,
    schema: SchemaRef,
}

/// A run's position: its current batch and row.
struct Cursor {
    reader: SpillReader,
    batch: RecordBatch,
    at: usize,
    /// Keeps the run's file until the merge is done with it.
    _file: SpillFile,
}

impl Cursor {
    fn key(&self) -> &[u8] {
        self.batch.columns().last().map_or(&[][..], |k| k.as_binary::<i32>().value(self.at))
    }

    /// Moves to the next row; false once the run is exhausted.
    fn advance(&mut self) -> Result<bool> {
        self.at += 1;
        while self.at >= self.batch.num_rows() {
            match self.reader.next().transpose()? {
                Some(batch) => (self.batch, self.at) = (batch, 0),
                None => return Ok(false),
            }
        }
        Ok(true)
    }
}

impl Merge {
    fn new(runs: Vec<SpillFile>, schema: SchemaRef) -> Result<Merge> {
        let mut cursors = Vec::with_capacity(runs.len());
        for file in runs {
            let mut reader = file.read()?;
            if let Some(batch) = reader.next().transpose()? {
                cursors.push(Cursor { reader, batch, at: 0, _file: file });
            }
        }
        let mut merge = Merge { heap: Vec::with_capacity(cursors.len()), cursors, schema };
        for c in 0..merge.cursors.len() {
            merge.heap.push(c);
            merge.sift_up(merge.heap.len() - 1);
        }
        Ok(merge)
    }

    fn less(&self, a: usize, b: usize) -> bool {
        (self.cursors[a].key(), a) < (self.cursors[b].key(), b)
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(self.heap[i], self.heap[parent]) {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.heap.len() && self.less(self.heap[l], self.heap[least]) {
                least = l;
            }
            if r < self.heap.len() && self.less(self.heap[r], self.heap[least]) {
                least = r;
            }
            if least == i {
                return;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }

    /// The next up to [`BATCH_ROWS`] rows (key column included).
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        // Batches the output's rows come from, and each cursor's slot.
        let mut slots: Vec<RecordBatch> = Vec::new();
        let mut slot_of: Vec<Option<usize>> = vec![None; self.cursors.len()];
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(BATCH_ROWS);
        while picks.len() < BATCH_ROWS && !self.heap.is_empty() {
            let c = self.heap[0];
            let slot = *slot_of[c].get_or_insert_with(|| {
                slots.push(self.cursors[c].batch.clone());
                slots.len() - 1
            });
            picks.push((slot, self.cursors[c].at));
            if self.cursors[c].advance()? {
                if self.cursors[c].at == 0 {
                    // A new batch: rows from it need a slot of their own.
                    slot_of[c] = None;
                }
            } else {
                let last = self.heap.len() - 1;
                self.heap.swap(0, last);
                self.heap.pop();
            }
            self.sift_down(0);
        }
        if picks.is_empty() {
            return Ok(None);
        }
        let refs: Vec<&RecordBatch> = slots.iter().collect();
        let batch = arrow_select::interleave::interleave_record_batch(&refs, &picks).map_err(arrow_err)?;
        let columns: Vec<ArrayRef> = batch.columns().to_vec();
        RecordBatch::try_new(self.schema.clone(), columns).map(Some).map_err(arrow_err)
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Array, Int64Array, StringArray};

    use super::*;
    use crate::exec::memory::MemorySource;
    use crate::exec::pipeline::VecSource;
    use crate::plan::{Expr, Field};
    use crate::types::DataType;

    fn schema() -> Schema {
        Arc::new(vec![
            Field { name: "k".into(), qualifier: None, ty: DataType::Int64, nullable: true },
            Field { name: "s".into(), qualifier: None, ty: DataType::Text, nullable: true },
        ])
    }

    /// `n` rows whose key repeats (many ties) and has NULLs; `s` names the
    /// row's input position, so stability is visible.
    fn input(n: usize) -> Vec<RecordBatch> {
        let keys: Int64Array = (0..n).map(|i| (i % 11 != 3).then_some(((i * 7919) % 97) as i64)).collect();
        let names = StringArray::from_iter_values((0..n).map(|i| format!("{i:06}")));
        let all = make_batch(&schema(), vec![Arc::new(keys), Arc::new(names)], n).unwrap();
        let mut batches = crate::exec::util::rechunk(&all);
        batches.reverse();
        batches
    }

    fn sort(n: usize, work_mem: usize) -> (Vec<RecordBatch>, Option<crate::exec::SpillStats>) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ExecContext {
            work_mem,
            spill: crate::exec::spill::SpillDir::new(dir.path()),
            ..ExecContext::new(Arc::new(MemorySource::new()))
        };
        let keys = vec![
            SortKey { expr: Expr::column(0, DataType::Int64), asc: false, nulls_first: false },
            SortKey { expr: Expr::column(0, DataType::Int64), asc: true, nulls_first: true },
        ];
        let node = MetricsNode::new("Sort", vec![]);
        let mut op = SortOp::new(Box::new(VecSource(input(n))), keys, schema(), &ctx, &node);
        let mut out = Vec::new();
        while let Some(b) = op.next().unwrap() {
            assert!(b.num_rows() <= BATCH_ROWS);
            out.push(b);
        }
        drop(op);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "spill files removed");
        (out, node.snapshot().spill)
    }

    fn rows(batches: &[RecordBatch]) -> Vec<(Option<i64>, String)> {
        batches
            .iter()
            .flat_map(|b| {
                let k = b.column(0).as_primitive::<arrow_array::types::Int64Type>().clone();
                let s = b.column(1).as_string::<i32>().clone();
                (0..b.num_rows()).map(move |i| (k.is_valid(i).then(|| k.value(i)), s.value(i).to_string()))
            })
            .collect()
    }

    #[test]
    fn an_external_sort_equals_the_in_memory_sort_row_for_row() {
        let n = 50_000;
        let (memory, none) = sort(n, 64 << 20);
        assert_eq!(none, None, "fits in memory: nothing spilled");
        let memory = rows(&memory);
        assert_eq!(memory.len(), n);
        // Stable, DESC NULLS LAST: keys descend, NULLs last, ties by position.
        let mut expected: Vec<(Option<i64>, String)> = rows(&input(n).into_iter().rev().collect::<Vec<_>>());
        expected.sort_by(|a, b| match (a.0, b.0) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, _) => std::cmp::Ordering::Greater,
            (_, None) => std::cmp::Ordering::Less,
            (Some(x), Some(y)) => y.cmp(&x),
        });
        assert_eq!(memory, expected);
        // About 100 KiB per run: tens of runs, merged in one pass.
        let (spilled, stats) = sort(n, 100 << 10);
        let stats = stats.expect("spilled");
        assert!(stats.files > 2 && stats.passes == 1, "{stats:?}");
        assert_eq!(stats.rows, n as u64);
        assert_eq!(rows(&spilled), memory);
    }

    #[test]
    fn more_runs_than_the_fan_in_merge_in_passes() {
        let n = 150_000;
        let (memory, _) = sort(n, 64 << 20);
        let (spilled, stats) = sort(n, 8 << 10);
        let stats = stats.expect("spilled");
        assert!(stats.passes >= 2, "{stats:?}");
        assert_eq!(rows(&spilled), rows(&memory));
    }
}
