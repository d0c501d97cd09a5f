//! A hash join whose build side outgrew `work_mem`: the grace hash join.
//!
//! ```text
//!  right (build) ─► partition by hash of key ─► R0 R1 … R15   (spill files)
//!  left (probe)  ─► partition by hash of key ─► L0 L1 … L15
//!  for each p:  Rp fits? ─yes─► BuildSide(Rp); Lp's batches through join.rs's Probe;
//!                               its finish (Right, Full: Rp's unmatched rows)
//!                        ─no──► split Rp and Lp again, one level down (other hash bits)
//! ```
//!
//! Rows with equal keys land in the same partition on both sides, so each
//! partition pair is an ordinary hash join, run by the same probe code as
//! the in-memory join (`join.rs`): every join kind but Mark (whose NULL
//! keys compare with every row) gives the same rows. A build row with a
//! NULL key matches nothing: Right and Full set it aside and emit it with
//! NULLs at the end, the other kinds drop it (it would fill one partition
//! that no split makes smaller). A probe row with a NULL key goes to the
//! partition of its encoded key like any other and matches nothing there;
//! Left, Full, Anti and Single keep it. A partition that cannot be split
//! further (a single key with more build rows than `work_mem` holds)
//! fails with 53200 and says so.
//!
//! The join reads its whole probe input before its first output row, and
//! runs the partitions on the consumer's thread, one after another: a
//! spilling join is not a parallel pipeline stage. Its output is ordered
//! by partition, not by the probe input.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch, new_null_array};
use arrow_select::filter::filter_record_batch;

use super::hashing::hash_bytes;
use super::join::{BuildInput, BuildSide, JoinSpec, Probe, eval_keys};
use super::metrics::MetricsNode;
use super::pipeline::{BoxOp, Operator, Transform, VecSource};
use super::runtime_filter::KeyFilterBuilder;
use super::spill::SpillWriter;
use super::spill::{Partitions, SpillFile, partition_of};
use super::util::{KeyEncoder, any_null, arrow_err, arrow_schema, make_batch};
use super::{ExecContext, check_interrupts};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Expr, JoinKind, Schema};
use crate::types::DataType;

/// Partitions per split.
const FANOUT: usize = 16;

/// Splits deeper than this fail (16^4 = 65,536 partitions).
const MAX_LEVEL: u32 = 4;

/// One partition pair still to join: its rows on each side (None: none)
/// and the level its rows were split at.
struct Pair {
    level: u32,
    left: Option<SpillFile>,
    right: Option<SpillFile>,
}

pub struct GraceJoin {
    spec: JoinSpec,
    cut: Cutter,
    ctx: ExecContext,
    node: Arc<MetricsNode>,
    /// The probe input, until it has been partitioned.
    left: Option<ProbeInput>,
    right: Option<Vec<Option<SpillFile>>>,
    /// Right and Full: the build rows with a NULL key, emitted last.
    null_right: Option<SpillFile>,
    pairs: VecDeque<Pair>,
    output: VecDeque<RecordBatch>,
}

/// A grace join's probe (left) input: an operator, partitioned when the
/// first output row is asked for, or rows partitioned already.
pub enum ProbeInput {
    Op(BoxOp),
    Partitioned(Vec<Option<SpillFile>>),
}

/// A grace join's build input, partitioned to disk before its probe input
/// is built, so that the filter of its keys can reach the probe side's scan
/// (`runtime_filter.rs`) as an in-memory join's does.
pub struct BuildPartitions {
    files: Vec<Option<SpillFile>>,
    null_right: Option<SpillFile>,
    filter: Option<KeyFilterBuilder>,
}

impl BuildPartitions {
    /// Partitions the build input `right` of `spec`; with `filter`, also
    /// makes the filter of its (one, integer) key.
    pub fn write(spec: &JoinSpec, right: BoxOp, ctx: &ExecContext, filter: bool) -> Result<BuildPartitions> {
        let cut = Cutter::new(spec, ctx)?;
        let mut nulls = match spec.kind {
            JoinKind::Right | JoinKind::Full => NullRows::Aside(None),
            _ => NullRows::Drop,
        };
        let mut filter = (filter && spec.right_keys.len() == 1).then(KeyFilterBuilder::default);
        let files = cut.partition(right, &spec.right_keys, &spec.right_schema, 0, &mut nulls, filter.as_mut())?;
        let null_right = match nulls {
            NullRows::Aside(Some(file)) => Some(file.finish()?),
            _ => None,
        };
        Ok(BuildPartitions { files, null_right, filter })
    }

    /// The filter of the build keys, if asked for and made.
    pub fn take_filter(&mut self) -> Option<KeyFilterBuilder> {
        self.filter.take()
    }
}

/// Partitions the probe input `left` of `spec` now, with (if `filter`) the
/// filter of its (one, integer) key: a Semi or Anti join that was to build on its left
/// input (`semi_build.rs`) partitions that first, so that its keys can
/// filter the right input's scan before the right input is partitioned.
pub fn partition_probe(
    spec: &JoinSpec,
    left: BoxOp,
    ctx: &ExecContext,
    filter: bool,
) -> Result<(Vec<Option<SpillFile>>, Option<KeyFilterBuilder>)> {
    let cut = Cutter::new(spec, ctx)?;
    let mut filter = (filter && spec.left_keys.len() == 1).then(KeyFilterBuilder::default);
    let files =
        cut.partition(left, &spec.left_keys, &spec.left_schema, 0, &mut NullRows::Partition, filter.as_mut())?;
    Ok((files, filter))
}

impl GraceJoin {
    /// The join of the partitioned build input and the probe input `left`
    /// (partitioned when the first output row is asked for).
    pub fn new(
        spec: JoinSpec,
        built: BuildPartitions,
        left: ProbeInput,
        ctx: &ExecContext,
        node: &Arc<MetricsNode>,
    ) -> Result<GraceJoin> {
        node.add_spill_files(built.files.iter().flatten().chain(&built.null_right));
        if let ProbeInput::Partitioned(files) = &left {
            node.add_spill_files(files.iter().flatten());
        }
        node.note_spill_passes(1);
        Ok(GraceJoin {
            cut: Cutter::new(&spec, ctx)?,
            spec,
            ctx: ctx.clone(),
            node: node.clone(),
            left: Some(left),
            right: Some(built.files),
            null_right: built.null_right,
            pairs: VecDeque::new(),
            output: VecDeque::new(),
        })
    }

    /// `input`'s rows cut by the hash of `keys` at `level`, counted in the
    /// join's spill figures.
    fn partition(&self, input: BoxOp, left_side: bool, level: u32) -> Result<Vec<Option<SpillFile>>> {
        let (keys, schema) = match left_side {
            true => (&self.spec.left_keys, &self.spec.left_schema),
            false => (&self.spec.right_keys, &self.spec.right_schema),
        };
        let files = self.cut.partition(input, keys, schema, level, &mut NullRows::Partition, None)?;
        self.node.add_spill_files(files.iter().flatten());
        Ok(files)
    }

    /// The build rows with a NULL key, beside NULLs for the probe side
    /// (Right and Full).
    fn null_key_output(&mut self) -> Result<()> {
        let Some(file) = self.null_right.take() else { return Ok(()) };
        for batch in file.read()? {
            check_interrupts(&self.ctx)?;
            let batch = batch?;
            let mut columns: Vec<_> =
                self.spec.left_schema.iter().map(|f| new_null_array(&f.ty.arrow(), batch.num_rows())).collect();
            columns.extend(batch.columns().iter().cloned());
            self.output.push_back(make_batch(&self.spec.schema, columns, batch.num_rows())?);
        }
        Ok(())
    }

    /// Splits `file` (rows of the left side or the right) one level down.
    fn split(&self, file: Option<SpillFile>, left_side: bool, level: u32) -> Result<Vec<Option<SpillFile>>> {
        let Some(file) = file else { return Ok((0..FANOUT).map(|_| None).collect()) };
        self.partition(Box::new(FileSource(file.read()?)), left_side, level)
    }

    /// Joins one partition pair into `output`, or splits it into pairs one
    /// level down if its build rows do not fit.
    fn join_pair(&mut self, pair: Pair) -> Result<()> {
        if pair.right.is_none() && matches!(self.spec.kind, JoinKind::Inner | JoinKind::Semi | JoinKind::Right) {
            return Ok(()); // no build row: no output
        }
        let right: BoxOp = match &pair.right {
            Some(file) => Box::new(FileSource(file.read()?)),
            None => Box::new(VecSource(Vec::new())),
        };
        let batches = match BuildInput::read(right, &self.ctx)? {
            BuildInput::Whole(batches) => batches,
            BuildInput::Over(..) => return self.split_pair(pair),
        };
        let spec = &self.spec;
        let build =
            BuildSide::from_batches(&batches, &spec.right_schema, &spec.right_keys, &spec.key_types, &self.ctx)?;
        drop(batches);
        let probe = Probe::new(spec, build);
        if let Some(file) = &pair.left {
            for batch in file.read()? {
                check_interrupts(&self.ctx)?;
                let out = probe.apply(batch?, &self.ctx)?;
                if out.num_rows() > 0 {
                    self.output.push_back(out);
                }
            }
        }
        self.output.extend(probe.finish(&self.ctx)?);
        Ok(())
    }

    fn split_pair(&mut self, pair: Pair) -> Result<()> {
        let level = pair.level + 1;
        if level > MAX_LEVEL {
            return Err(SqlError::new(SqlState::OUT_OF_MEMORY, "out of memory")
                .with_detail(format!(
                    "a hash join's build rows of one partition exceed work_mem ({} bytes) after {MAX_LEVEL} splits: \
                     many rows share one join key",
                    self.ctx.work_mem
                ))
                .with_hint("Raise work_mem (SET work_mem = '256MB')."));
        }
        self.node.note_spill_passes(u64::from(level) + 1);
        let rights = self.split(pair.right, false, level)?;
        let lefts = self.split(pair.left, true, level)?;
        // Depth first: the new pairs go before the pairs still waiting.
        for (left, right) in lefts.into_iter().zip(rights).rev() {
            if left.is_some() || right.is_some() {
                self.pairs.push_front(Pair { level, left, right });
            }
        }
        Ok(())
    }
}

impl Operator for GraceJoin {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(left) = self.left.take() {
            let lefts = match left {
                ProbeInput::Op(op) => self.partition(op, true, 0)?,
                ProbeInput::Partitioned(files) => files,
            };
            let rights = self.right.take().unwrap_or_default();
            for (left, right) in lefts.into_iter().zip(rights) {
                if left.is_some() || right.is_some() {
                    self.pairs.push_back(Pair { level: 0, left, right });
                }
            }
        }
        loop {
            check_interrupts(&self.ctx)?;
            if let Some(batch) = self.output.pop_front() {
                return Ok(Some(batch));
            }
            match self.pairs.pop_front() {
                Some(pair) => self.join_pair(pair)?,
                None if self.null_right.is_some() => self.null_key_output()?,
                None => return Ok(None),
            }
        }
    }
}

/// Cuts rows into partitions by the hash of their encoded join key.
struct Cutter {
    encoder: KeyEncoder,
    key_types: Vec<DataType>,
    ctx: ExecContext,
}

impl Cutter {
    fn new(spec: &JoinSpec, ctx: &ExecContext) -> Result<Cutter> {
        let encoder = KeyEncoder::new(&spec.key_types.iter().map(|t| t.arrow()).collect::<Vec<_>>())?;
        Ok(Cutter { encoder, key_types: spec.key_types.clone(), ctx: ctx.clone() })
    }

    /// `input`'s rows cut by the hash of `keys` at `level`; rows with a
    /// NULL key as `nulls` says; `filter` gets the keys of the rows kept.
    fn partition(
        &self,
        mut input: BoxOp,
        keys: &[Expr],
        schema: &Schema,
        level: u32,
        nulls: &mut NullRows,
        mut filter: Option<&mut KeyFilterBuilder>,
    ) -> Result<Vec<Option<SpillFile>>> {
        let arrow = arrow_schema(schema);
        let mut parts = Partitions::new(&self.ctx.spill, arrow.clone(), FANOUT);
        while let Some(mut batch) = input.next()? {
            check_interrupts(&self.ctx)?;
            let mut key_arrays = eval_keys(keys, &self.key_types, &batch, &self.ctx)?;
            if !matches!(nulls, NullRows::Partition) {
                let null = any_null(&key_arrays, batch.num_rows());
                if null.iter().any(|&n| n) {
                    let (with, without): (BooleanArray, BooleanArray) =
                        (null.iter().map(|&n| Some(n)).collect(), null.iter().map(|&n| Some(!n)).collect());
                    if let NullRows::Aside(file) = nulls {
                        let rows = filter_record_batch(&batch, &with).map_err(arrow_err)?;
                        let writer = match file {
                            Some(writer) => writer,
                            None => file.insert(Box::new(self.ctx.spill.create(&arrow)?)),
                        };
                        writer.write(&rows)?;
                    }
                    batch = filter_record_batch(&batch, &without).map_err(arrow_err)?;
                    key_arrays = eval_keys(keys, &self.key_types, &batch, &self.ctx)?;
                }
            }
            if let (Some(filter), [key]) = (filter.as_deref_mut(), key_arrays.as_slice()) {
                filter.add(key);
            }
            let rows = self.encoder.encode(&key_arrays)?;
            let of: Vec<usize> = rows.iter().map(|r| partition_of(hash_bytes(r.data()), level, FANOUT)).collect();
            parts.add(&batch, &of)?;
        }
        parts.finish()
    }
}

/// What partitioning does with rows whose key has a NULL.
enum NullRows {
    /// Like any other row (probe rows, and rows already split once).
    Partition,
    /// Leaves them out (build rows of joins that never emit them).
    Drop,
    /// Writes them to a file of their own (build rows of Right and Full).
    Aside(Option<Box<SpillWriter>>),
}

/// Batches already read (`read`), then the rest of the input they came
/// from: an input read up to `work_mem` as a whole again.
pub fn chained(read: Vec<RecordBatch>, rest: BoxOp) -> BoxOp {
    Box::new(Chained { head: read.into_iter(), rest })
}

struct Chained {
    head: std::vec::IntoIter<RecordBatch>,
    rest: BoxOp,
}

impl Operator for Chained {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        match self.head.next() {
            Some(batch) => Ok(Some(batch)),
            None => self.rest.next(),
        }
    }
}

/// A spill file's batches as an operator.
struct FileSource(super::spill::SpillReader);

impl Operator for FileSource {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        self.0.next().transpose()
    }
}
