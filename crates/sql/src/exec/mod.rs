//! The executor: runs a physical [`Plan`](crate::plan::Plan) over Arrow
//! record batches (`docs/execution.md`).
//!
//! Tables reach the executor through a [`TableSource`]: the session's
//! implementation reads the MVCC store inside the statement's transaction
//! (host block stack or NDP call, by the scan's [`Access`]); tests use the
//! in-memory one. Expressions are evaluated by [`expr::evaluate`] on whole
//! batches.

pub mod expr;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use arrow_array::RecordBatch;

use crate::catalog::TableDef;
use crate::error::Result;
use crate::plan::{Access, Expr};
use crate::types::Value;

/// Rows of at most this many rows per batch.
pub const BATCH_ROWS: usize = 2048;

/// What a scan asks of its source.
#[derive(Debug, Clone, Copy)]
pub struct ScanSpec<'a> {
    pub table: &'a TableDef,
    /// Table column positions to read, in output order.
    pub columns: &'a [usize],
    /// Predicate over the scan's output columns. The source may use it to
    /// skip rows early (on the device for NDP); it reports in
    /// [`ScanOutput::remaining`] what of it the returned rows may still
    /// fail, which the executor evaluates.
    pub filter: Option<&'a Expr>,
    /// Append the VID as a last Int64 column.
    pub emit_vid: bool,
    pub access: &'a Access,
    /// Keys of a hash join above: rows whose column is not among them have
    /// no partner, and the source may drop them ([`runtime_filter`]).
    pub key_filter: Option<&'a Arc<runtime_filter::ScanKeyFilter>>,
}

/// Counters of one scan, for EXPLAIN ANALYZE and the benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ScanCounters {
    pub link_bytes_to_host: u64,
    pub link_bytes_to_device: u64,
    pub medium_bytes_read: u64,
    /// Busy time of the device's PEs, summed, in picoseconds.
    pub pe_busy_ps: u64,
    /// Modelled time of the device work, in picoseconds.
    pub modelled_ps: u64,
    /// Versions or rows the source examined.
    pub rows_examined: u64,
    /// Rows a runtime key filter removed, if one was applied.
    pub runtime_filtered: Option<u64>,
    /// With a runtime key filter: what the zone maps let the scan skip
    /// (`store/zone_skip.rs`).
    pub zone_blocks: Option<ZoneCounts>,
}

/// Blocks of `ZONE_VIDS` VIDs a scan skipped by their zone maps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZoneCounts {
    pub skipped: u64,
    /// Blocks of the scan's morsels.
    pub blocks: u64,
    /// VIDs in the skipped blocks (rows not walked, so neither returned
    /// nor counted as removed by the runtime filter).
    pub skipped_vids: u64,
}

impl ScanCounters {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &ScanCounters) {
        self.link_bytes_to_host += other.link_bytes_to_host;
        self.link_bytes_to_device += other.link_bytes_to_device;
        self.medium_bytes_read += other.medium_bytes_read;
        self.pe_busy_ps += other.pe_busy_ps;
        self.modelled_ps += other.modelled_ps;
        self.rows_examined += other.rows_examined;
        self.runtime_filtered = match (self.runtime_filtered, other.runtime_filtered) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.zone_blocks = match (self.zone_blocks, other.zone_blocks) {
            (Some(a), Some(b)) => Some(ZoneCounts {
                skipped: a.skipped + b.skipped,
                blocks: a.blocks + b.blocks,
                skipped_vids: a.skipped_vids + b.skipped_vids,
            }),
            (a, b) => a.or(b),
        };
    }
}

/// A scan's batches, each made already or deferred to whichever pipeline
/// worker takes it ([`pipeline::Morsel`]).
pub struct ScanOutput {
    pub batches: Box<dyn Iterator<Item = Result<pipeline::Morsel>> + Send>,
    /// The conjuncts of the spec's filter the source did not apply (the
    /// whole filter when it applied none); None: every row satisfies it.
    pub remaining: Option<Expr>,
    /// Filled when the iterator is exhausted (shared with it).
    pub counters: Arc<parking_lot::Mutex<ScanCounters>>,
}

/// What an index lookup returns: the rows found (the spec's columns), and
/// for each the position of the key it was found by; the device counters
/// of the pages it read, and their span on the model clock (None: it read
/// none).
pub struct IndexLookup {
    pub rows: RecordBatch,
    pub owners: Vec<u32>,
    pub counters: ScanCounters,
    pub span_ps: Option<(u64, u64)>,
}

/// Where tables come from.
pub trait TableSource: Send + Sync {
    fn scan(&self, spec: &ScanSpec<'_>) -> Result<ScanOutput>;

    /// The rows of `spec.table` whose `index` key equals each of `keys`
    /// (one value per index column, in key order), as its snapshot sees
    /// them. `spec.filter` is not applied; an entry's key is not re-checked
    /// (the caller's condition does both). Sources without indexes refuse.
    fn index_lookup(
        &self,
        spec: &ScanSpec<'_>,
        index: &crate::catalog::IndexDef,
        keys: &[Vec<Value>],
    ) -> Result<IndexLookup> {
        let _ = (spec, keys);
        Err(crate::error::SqlError::unsupported(format!("this table source has no index \"{}\"", index.name)))
    }
}

/// What a statement's execution needs besides its plan.
#[derive(Clone)]
pub struct ExecContext {
    pub source: Arc<dyn TableSource>,
    /// Values of `$1..$n`.
    pub params: Arc<Vec<Value>>,
    /// The statement's start (now(), current_date), µs since 1970.
    pub statement_start_us: i64,
    /// Set by a cancel request; checked between batches.
    pub cancel: Arc<AtomicBool>,
    /// `statement_timeout` as a deadline.
    pub deadline: Option<Instant>,
    /// `work_mem` in bytes: the limit of each hash table and sort.
    pub work_mem: usize,
    /// Worker threads for parallel pipelines.
    pub workers: usize,
    /// Runs subqueries that decorrelation left in expressions (set by the
    /// executor; None where no plan can be run, e.g. constant folding).
    pub subqueries: Option<Arc<dyn SubqueryRunner>>,
    /// Key filters offered by hash joins to the scans under their probe
    /// sides, while the plan's pipelines are built.
    pub runtime_filters: Arc<runtime_filter::RuntimeFilters>,
    /// Where sorts, hash joins and aggregations over `work_mem` spill.
    pub spill: spill::SpillDir,
}

impl ExecContext {
    /// A context over `source` with nothing else set: no parameters, no
    /// deadline, a cancel flag of its own, one worker, 64 MiB of
    /// `work_mem`, the statement start at the epoch, spill files under
    /// the system's temporary directory. Callers override the
    /// fields they need (`ExecContext { workers: 2, ..ExecContext::new(s) }`).
    pub fn new(source: Arc<dyn TableSource>) -> ExecContext {
        ExecContext {
            source,
            params: Arc::new(Vec::new()),
            statement_start_us: 0,
            cancel: Arc::new(AtomicBool::new(false)),
            deadline: None,
            work_mem: 64 << 20,
            workers: 1,
            subqueries: None,
            runtime_filters: Arc::default(),
            spill: spill::SpillDir::temporary(),
        }
    }
}

/// Runs a subquery plan with the values of the outer row its
/// [`Expr::Outer`] references name (`outer[depth - 1]` is the row `depth`
/// levels out), returning all its batches.
pub trait SubqueryRunner: Send + Sync {
    fn run(&self, plan: &crate::plan::Plan, outer: &[Vec<Value>], ctx: &ExecContext) -> Result<Vec<RecordBatch>>;
}

mod accumulate;
mod aggregate;
mod build;
mod grace;
mod group_keys;
mod hashing;
mod index_join;
mod join;
mod join_keys;
pub mod memory;
mod metrics;
pub mod pipeline;
pub mod runtime_filter;
mod semi_build;
mod series;
mod setop;
mod sort;
pub mod spill;
mod subquery;
mod util;
pub mod work_mem;

pub use metrics::{OperatorMetrics, SpanUnion, SpillStats};
pub use subquery::ExecSubqueryRunner;

/// What [`execute`] returns: the plan's output, all of it, and the
/// measured tree for EXPLAIN ANALYZE.
#[derive(Debug)]
pub struct ExecOutput {
    pub schema: crate::plan::Schema,
    pub batches: Vec<RecordBatch>,
    pub metrics: OperatorMetrics,
}

/// Runs `plan` to completion and collects its batches.
pub fn execute(plan: &crate::plan::Plan, ctx: &ExecContext) -> Result<ExecOutput> {
    let mut batches = Vec::new();
    let metrics = execute_streaming(plan, ctx, &mut |b| {
        batches.push(b);
        Ok(())
    })?;
    Ok(ExecOutput { schema: plan.schema.clone(), batches, metrics })
}

/// Runs `plan`, handing each output batch to `sink` as soon as it is made
/// (the result is never held whole unless the plan holds it, e.g. a
/// sort). An error from `sink` stops the execution and is returned.
pub fn execute_streaming(
    plan: &crate::plan::Plan,
    ctx: &ExecContext,
    sink: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<OperatorMetrics> {
    let ctx = subquery::with_runner(ctx);
    let (mut op, node) = build::build(plan, &ctx)?;
    while let Some(batch) = op.next()? {
        if batch.num_rows() > 0 {
            sink(batch)?;
        }
    }
    drop(op);
    Ok(node.snapshot())
}

/// Fails with 57014 if the statement was cancelled or ran past its
/// `statement_timeout`; every operator loop calls it between batches.
pub fn check_interrupts(ctx: &ExecContext) -> Result<()> {
    use crate::error::{SqlError, SqlState};
    if ctx.cancel.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(SqlError::new(SqlState::QUERY_CANCELED, "canceling statement due to user request"));
    }
    if ctx.deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(SqlError::new(SqlState::QUERY_CANCELED, "canceling statement due to statement timeout"));
    }
    Ok(())
}
