//! The operator model: pull-based operators over batches, and pipelines
//! of per-batch stages that run on several workers (morsel-driven).
//!
//! ```text
//!   breaker (sort, aggregate, hash build, limit, top)
//!      ▲  batches in source order (reorder buffer by morsel number)
//!   ┌──┴───────────── Pipeline ──────────────────┐
//!   │ worker 1: morsel k   ─► stage ─► stage ─┐  │
//!   │ worker 2: morsel k+1 ─► stage ─► stage ─┤  │
//!   └──────▲──────────────────────────────────┴──┘
//!          │ one morsel at a time, numbered, under a lock; a host scan's
//!          │ morsel is work (page reads, decoding) run outside the lock
//!       source operator (scan, or any operator)
//! ```
//!
//! A source hands out [`Morsel`]s: a batch it made (any operator), or the
//! work that makes one ([`Morsel::Deferred`]: a host scan's VID range). The
//! worker takes the morsel and its number under the source's lock and runs
//! deferred work after releasing it, so both workers read and decode pages
//! at once; the number still fixes the morsel's place in the output.
//!
//! A stage ([`Transform`]) is a filter, a projection or a hash-join probe:
//! it maps one batch to one batch and keeps no order-dependent state, so
//! workers can run it on different morsels at once. Each morsel carries
//! the number it was pulled with and the consumer emits results in that
//! order, so a parallel pipeline's output is the serial one, batch for
//! batch. What must see the whole input (a right or full join's unmatched
//! build rows) is a stage's [`Transform::finish`], run once after every
//! worker is done.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Instant;

use arrow_array::RecordBatch;
use parking_lot::Mutex;

use super::metrics::MetricsNode;
use super::{ExecContext, check_interrupts};
use crate::error::{Result, SqlError};

/// A pull-based operator: `None` once exhausted.
pub trait Operator: Send {
    fn next(&mut self) -> Result<Option<RecordBatch>>;

    /// The next morsel, for a parallel pipeline's worker (which holds the
    /// source's lock): a source that can make its batch on any thread hands
    /// out the work instead. A deferred morsel may make an empty batch.
    fn next_morsel(&mut self) -> Result<Option<Morsel>> {
        Ok(self.next()?.map(Morsel::Ready))
    }
}

/// Work that makes one morsel's batch, runnable on any worker.
pub type Deferred = Box<dyn FnOnce() -> Result<RecordBatch> + Send>;

/// One numbered unit of a pipeline's input.
pub enum Morsel {
    Ready(RecordBatch),
    Deferred(Deferred),
}

impl Morsel {
    /// The batch, making it on this thread if it was deferred.
    pub fn run(self) -> Result<RecordBatch> {
        match self {
            Morsel::Ready(batch) => Ok(batch),
            Morsel::Deferred(work) => work(),
        }
    }
}

pub type BoxOp = Box<dyn Operator>;

/// A per-batch step of a pipeline, callable from several workers at once.
pub trait Transform: Send + Sync {
    fn apply(&self, batch: RecordBatch, ctx: &ExecContext) -> Result<RecordBatch>;
    /// Rows to emit once the input is exhausted.
    fn finish(&self, _ctx: &ExecContext) -> Result<Option<RecordBatch>> {
        Ok(None)
    }
}

#[derive(Clone)]
pub struct Stage {
    pub transform: Arc<dyn Transform>,
    pub metrics: Arc<MetricsNode>,
}

/// A source and the stages above it, not started yet.
pub struct Pipeline {
    pub source: BoxOp,
    pub stages: Vec<Stage>,
}

impl Pipeline {
    /// Starts the pipeline: on `ctx.workers` threads when it has stages
    /// and more than one worker, else on the caller's thread.
    pub fn start(self, ctx: &ExecContext) -> BoxOp {
        if self.stages.is_empty() {
            return self.source;
        }
        if ctx.workers > 1 {
            return Box::new(Adaptive { pipeline: Some(self), running: None, ctx: ctx.clone() });
        }
        Box::new(SerialPipeline { source: self.source, stages: self.stages, ctx: ctx.clone(), tail: None })
    }
}

/// Starts workers only for an input of more than one morsel: a point
/// query's single batch runs on the caller's thread, without the cost of
/// starting threads.
struct Adaptive {
    pipeline: Option<Pipeline>,
    running: Option<BoxOp>,
    ctx: ExecContext,
}

impl Operator for Adaptive {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(Pipeline { mut source, stages }) = self.pipeline.take() {
            let mut first = Vec::new();
            while first.len() < 2 {
                match source.next()? {
                    Some(batch) => first.push(batch),
                    None => break,
                }
            }
            let many = first.len() == 2;
            first.reverse();
            let source: BoxOp = Box::new(Chain { head: VecSource(first), rest: source });
            self.running = Some(if many {
                Box::new(ParallelPipeline::start(Pipeline { source, stages }, &self.ctx))
            } else {
                Box::new(SerialPipeline { source, stages, ctx: self.ctx.clone(), tail: None })
            });
        }
        match &mut self.running {
            Some(op) => op.next(),
            None => Ok(None),
        }
    }
}

/// Batches already pulled, then the rest of the source.
struct Chain {
    head: VecSource,
    rest: BoxOp,
}

impl Operator for Chain {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        match self.head.next()? {
            Some(batch) => Ok(Some(batch)),
            None => self.rest.next(),
        }
    }

    fn next_morsel(&mut self) -> Result<Option<Morsel>> {
        match self.head.next()? {
            Some(batch) => Ok(Some(Morsel::Ready(batch))),
            None => self.rest.next_morsel(),
        }
    }
}

/// Runs `batch` through `stages`.
fn run_stages(stages: &[Stage], mut batch: RecordBatch, ctx: &ExecContext) -> Result<RecordBatch> {
    for stage in stages {
        let t0 = Instant::now();
        batch = stage.transform.apply(batch, ctx)?;
        stage.metrics.add_time(t0.elapsed());
        stage.metrics.add_rows(batch.num_rows());
    }
    Ok(batch)
}

/// The stages' `finish` outputs, each run through the stages above it.
fn finish_stages(stages: &[Stage], ctx: &ExecContext) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        let t0 = Instant::now();
        let extra = stage.transform.finish(ctx)?;
        stage.metrics.add_time(t0.elapsed());
        if let Some(batch) = extra {
            stage.metrics.add_rows(batch.num_rows());
            out.push(run_stages(&stages[i + 1..], batch, ctx)?);
        }
    }
    Ok(out)
}

struct SerialPipeline {
    source: BoxOp,
    stages: Vec<Stage>,
    ctx: ExecContext,
    /// The stages' `finish` output, once the source is exhausted.
    tail: Option<Vec<RecordBatch>>,
}

impl Operator for SerialPipeline {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(tail) = &mut self.tail {
            return Ok(tail.pop());
        }
        while let Some(batch) = self.source.next()? {
            check_interrupts(&self.ctx)?;
            let out = run_stages(&self.stages, batch, &self.ctx)?;
            if out.num_rows() > 0 {
                return Ok(Some(out));
            }
        }
        let mut tail = finish_stages(&self.stages, &self.ctx)?;
        tail.reverse();
        Ok(self.tail.insert(tail).pop())
    }
}

/// Yields batches from a vector (last first).
pub struct VecSource(pub Vec<RecordBatch>);

impl Operator for VecSource {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        Ok(self.0.pop())
    }
}

/// A morsel's number and its result.
type Done = (u64, Result<RecordBatch>);

struct ParallelPipeline {
    rx: Option<Receiver<Done>>,
    handles: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    pending: BTreeMap<u64, RecordBatch>,
    next_seq: u64,
    stages: Vec<Stage>,
    tail: Option<Vec<RecordBatch>>,
    ctx: ExecContext,
    shared: Arc<Shared>,
}

struct Shared {
    source: Mutex<(BoxOp, u64, bool)>,
    stages: Vec<Stage>,
    stop: Arc<AtomicBool>,
}

impl ParallelPipeline {
    fn start(pipeline: Pipeline, ctx: &ExecContext) -> ParallelPipeline {
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            source: Mutex::new((pipeline.source, 0, false)),
            stages: pipeline.stages.clone(),
            stop: stop.clone(),
        });
        let (tx, rx) = sync_channel(ctx.workers * 2);
        let handles = (0..ctx.workers)
            .map(|_| {
                let (shared, tx, ctx) = (shared.clone(), tx.clone(), ctx.clone());
                std::thread::spawn(move || {
                    // A panic (an engine bug) fails the statement, not the
                    // process, and loses no morsel silently.
                    let run = std::panic::AssertUnwindSafe(|| worker(&shared, &tx, &ctx));
                    if std::panic::catch_unwind(run).is_err() {
                        let _ = tx.send((u64::MAX, Err(SqlError::internal("a pipeline worker panicked"))));
                    }
                })
            })
            .collect();
        ParallelPipeline {
            rx: Some(rx),
            handles,
            stop,
            pending: BTreeMap::new(),
            next_seq: 0,
            stages: pipeline.stages,
            tail: None,
            ctx: ctx.clone(),
            shared,
        }
    }
}

/// One worker: pull a numbered morsel, make its batch (outside the
/// source's lock), run the stages, send the result.
fn worker(shared: &Shared, tx: &SyncSender<Done>, ctx: &ExecContext) {
    while !shared.stop.load(Ordering::Relaxed) {
        let (seq, morsel) = {
            let mut source = shared.source.lock();
            if source.2 {
                return;
            }
            let pulled = check_interrupts(ctx).and_then(|_| source.0.next_morsel());
            let seq = source.1;
            match pulled {
                Ok(Some(morsel)) => {
                    source.1 += 1;
                    (seq, morsel)
                }
                Ok(None) => {
                    source.2 = true;
                    return;
                }
                Err(e) => {
                    source.2 = true;
                    let _ = tx.send((seq, Err(e)));
                    return;
                }
            }
        };
        // An empty batch (a deferred scan morsel with no visible row)
        // skips the stages: the consumer drops it after counting it.
        let out = morsel.run().and_then(|b| if b.num_rows() == 0 { Ok(b) } else { run_stages(&shared.stages, b, ctx) });
        let failed = out.is_err();
        if tx.send((seq, out)).is_err() || failed {
            return;
        }
    }
}

impl Operator for ParallelPipeline {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(tail) = &mut self.tail {
                return Ok(tail.pop());
            }
            if let Some(batch) = self.pending.remove(&self.next_seq) {
                self.next_seq += 1;
                if batch.num_rows() > 0 {
                    return Ok(Some(batch));
                }
                continue;
            }
            let rx = self.rx.as_ref().ok_or_else(|| SqlError::internal("pipeline polled after it ended"))?;
            match rx.recv() {
                Ok((_, Err(e))) => return Err(e),
                Ok((seq, Ok(batch))) => {
                    self.pending.insert(seq, batch);
                }
                Err(_) => {
                    // Every worker has ended, and each sent every morsel it
                    // pulled: nothing is missing.
                    if !self.pending.is_empty() || self.next_seq != self.shared.source.lock().1 {
                        return Err(SqlError::internal("a parallel pipeline lost a morsel"));
                    }
                    self.join();
                    let mut tail = finish_stages(&self.stages, &self.ctx)?;
                    tail.reverse();
                    self.tail = Some(tail);
                }
            }
        }
    }
}

impl ParallelPipeline {
    fn join(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.rx = None;
        for h in self.handles.drain(..) {
            // A worker that panicked has already reported nothing more;
            // its morsel's absence is caught above.
            let _ = h.join();
        }
    }
}

impl Drop for ParallelPipeline {
    fn drop(&mut self) {
        self.join();
    }
}

#[cfg(test)]
mod tests {

    use arrow_array::Int64Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;

    use super::*;
    use crate::exec::memory::MemorySource;

    /// Holds back even morsels, so workers finish them out of order.
    struct Uneven;

    impl Transform for Uneven {
        fn apply(&self, batch: RecordBatch, _ctx: &ExecContext) -> Result<RecordBatch> {
            if batch.column(0).as_primitive::<Int64Type>().values().first().is_some_and(|v| v % 2 == 0) {
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            Ok(batch)
        }
    }

    /// Panics on morsel 5 (an engine bug stand-in).
    struct Faulty;

    impl Transform for Faulty {
        fn apply(&self, batch: RecordBatch, _ctx: &ExecContext) -> Result<RecordBatch> {
            assert_ne!(batch.column(0).as_primitive::<Int64Type>().value(0), 5, "planted bug");
            Ok(batch)
        }
    }

    fn numbered() -> Vec<RecordBatch> {
        (0..24i64)
            .rev()
            .map(|i| RecordBatch::try_from_iter([("v", Arc::new(Int64Array::from(vec![i])) as _)]).unwrap())
            .collect()
    }

    fn ctx() -> ExecContext {
        ExecContext { work_mem: 1 << 20, workers: 3, ..ExecContext::new(Arc::new(MemorySource::new())) }
    }

    #[test]
    fn a_panicking_worker_fails_the_statement() {
        let ctx = ctx();
        let stage = Stage { transform: Arc::new(Faulty), metrics: MetricsNode::new("faulty", vec![]) };
        let mut op = Pipeline { source: Box::new(VecSource(numbered())), stages: vec![stage] }.start(&ctx);
        let err = loop {
            match op.next() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("a morsel was lost without an error"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.message, "a pipeline worker panicked");
    }

    /// Hands out morsel `i` as deferred work: every third makes no rows,
    /// the even ones take longer (so workers finish out of order).
    struct DeferredSource(i64);

    impl Operator for DeferredSource {
        fn next(&mut self) -> Result<Option<RecordBatch>> {
            self.next_morsel()?.map(Morsel::run).transpose()
        }

        fn next_morsel(&mut self) -> Result<Option<Morsel>> {
            let i = self.0;
            if i == 30 {
                return Ok(None);
            }
            self.0 += 1;
            Ok(Some(Morsel::Deferred(Box::new(move || {
                if i % 2 == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                let values: Vec<i64> = if i % 3 == 0 { vec![] } else { vec![i, i] };
                Ok(RecordBatch::try_from_iter([("v", Arc::new(Int64Array::from(values)) as _)]).unwrap())
            }))))
        }
    }

    /// Deferred morsels run on the workers, outside the source's lock, and
    /// the output is still the serial one: the same batches in order.
    #[test]
    fn deferred_morsels_keep_the_serial_output() {
        let run = |workers| {
            let ctx = ExecContext { workers, ..ctx() };
            let stage = Stage { transform: Arc::new(Uneven), metrics: MetricsNode::new("uneven", vec![]) };
            let mut op = Pipeline { source: Box::new(DeferredSource(0)), stages: vec![stage] }.start(&ctx);
            let mut got = Vec::new();
            while let Some(b) = op.next().unwrap() {
                got.push(b.column(0).as_primitive::<Int64Type>().values().to_vec());
            }
            got
        };
        let serial = run(1);
        assert_eq!(serial.len(), 20, "morsels without rows are dropped");
        assert_eq!(serial[0], vec![1, 1]);
        assert_eq!(run(3), serial);
    }

    #[test]
    fn parallel_output_keeps_the_morsel_order() {
        let (batches, ctx) = (numbered(), ctx());
        let stage = Stage { transform: Arc::new(Uneven), metrics: MetricsNode::new("uneven", vec![]) };
        let mut op = Pipeline { source: Box::new(VecSource(batches)), stages: vec![stage] }.start(&ctx);
        let mut got = Vec::new();
        while let Some(b) = op.next().unwrap() {
            got.push(b.column(0).as_primitive::<Int64Type>().value(0));
        }
        assert_eq!(got, (0..24).collect::<Vec<_>>());
    }
}
