//! Queue pairs (NVMe-style submission and completion queues): the only way
//! the host reaches the device. A submission runs on the submitting thread
//! (its completion kept until waited for), or goes to the command workers
//! when the device has some; `Execute` goes to the execution worker, so that
//! a long program never holds up page commands. A completion is held until
//! its modelled time.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::command::{Command, Completion, Reply};
use crate::counters::{Cells, Counters, SQE_BYTES, metered};
use crate::device::Inner;
use crate::error::DeviceError;

/// What the calling thread did through queue pairs (any device): commands
/// it submitted, and the modelled time it waited for completions, counting
/// overlapping waits once (the union of `[submitted, completed]` spans, in
/// the order waited). A benchmark charges a host thread with it on the
/// virtual clock (`docs/cbm-bench.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadIo {
    pub submitted: u64,
    pub waited_ps: u64,
}

thread_local! {
    static THREAD_IO: Cell<ThreadIo> = const { Cell::new(ThreadIo { submitted: 0, waited_ps: 0 }) };
    /// The latest completion time this thread waited for.
    static WAITED_UNTIL_PS: Cell<u64> = const { Cell::new(0) };
}

/// The calling thread's commands and modelled waits so far.
pub fn thread_io() -> ThreadIo {
    THREAD_IO.with(Cell::get)
}

fn note_submitted() {
    THREAD_IO.with(|t| t.set(ThreadIo { submitted: t.get().submitted + 1, ..t.get() }));
}

fn note_waited(c: &Completion) {
    let from = WAITED_UNTIL_PS.with(|w| {
        let from = c.submitted_ps.max(w.get());
        w.set(w.get().max(c.completed_ps));
        from
    });
    let ps = c.completed_ps.saturating_sub(from);
    THREAD_IO.with(|t| t.set(ThreadIo { waited_ps: t.get().waited_ps + ps, ..t.get() }));
}

/// Where submissions go: the command workers (if any), or the execution worker.
#[derive(Clone)]
pub(crate) struct Queues {
    pub(crate) io: Sender<Work>,
    pub(crate) exec: Sender<Work>,
}

pub(crate) struct Work {
    pub(crate) id: u64,
    pub(crate) cmd: Command,
    pub(crate) submitted_ps: u64,
    pub(crate) cq: Sender<Completion>,
    /// The submitting queue pair's own counters ([`crate::counters::metered`]).
    pub(crate) meter: Arc<Cells>,
}

/// A submission queue and its completion queue (NVMe I/O queue pair).
pub struct QueuePair {
    inner: Arc<Inner>,
    work: Arc<Mutex<Option<Queues>>>,
    cq_tx: Sender<Completion>,
    cq_rx: Receiver<Completion>,
    depth: usize,
    outstanding: usize,
    done: Vec<Completion>,
    /// Commands submitted through this queue pair since it was made.
    submitted: u64,
    /// What this queue pair's commands did: the device's counters, counted
    /// for these commands only.
    meter: Arc<Cells>,
    /// The modelled time this queue pair waited for its commands: the union
    /// of their `[submitted, completed]` spans in the order waited, and the
    /// latest completion waited for.
    waited_ps: u64,
    waited_until_ps: u64,
    /// The earliest submission time among the completions waited for.
    first_waited_ps: Option<u64>,
}

impl QueuePair {
    /// A queue pair of `depth` entries on the device's submission queues.
    pub(crate) fn new(inner: Arc<Inner>, work: Arc<Mutex<Option<Queues>>>, depth: usize) -> QueuePair {
        let (cq_tx, cq_rx) = crossbeam_channel::bounded(depth);
        let pes = inner.cells.pe_busy_ps.lock().len();
        let meter = Arc::new(Cells { pe_busy_ps: Mutex::new(vec![0; pes]), ..Cells::default() });
        QueuePair {
            inner,
            work,
            cq_tx,
            cq_rx,
            depth,
            outstanding: 0,
            done: Vec::new(),
            submitted: 0,
            meter,
            waited_ps: 0,
            waited_until_ps: 0,
            first_waited_ps: None,
        }
    }
}

impl QueuePair {
    /// Submits a command; blocks while the queue holds `depth` commands.
    pub fn submit(&mut self, cmd: Command) -> Result<u64, DeviceError> {
        while self.outstanding >= self.depth {
            let c = self.recv()?;
            self.done.push(c);
        }
        let queues = self.work.lock().clone().ok_or(DeviceError::ShutDown)?;
        let sender = if matches!(cmd, Command::Execute { .. }) { queues.exec } else { queues.io };
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let kind = cmd.kind();
        let submitted_ps = self.inner.clock.now_ps();
        let inline = self.inner.inline_commands && !matches!(cmd, Command::Execute { .. });
        if inline {
            self.count_submission(kind);
            let c = metered(&self.meter, || self.inner.process(id, cmd, submitted_ps));
            self.done.push(c);
            return Ok(id);
        }
        let work = Work { id, cmd, submitted_ps, cq: self.cq_tx.clone(), meter: self.meter.clone() };
        sender.send(work).map_err(|_| DeviceError::ShutDown)?;
        self.count_submission(kind);
        self.outstanding += 1;
        debug_assert!(self.outstanding <= self.depth, "a queue pair holds at most `depth` commands");
        Ok(id)
    }

    fn count_submission(&mut self, kind: &'static str) {
        for cells in [&self.inner.cells, &*self.meter] {
            Cells::add(&cells.link_bytes_to_device, SQE_BYTES);
            *cells.commands.lock().entry(kind).or_insert(0) += 1;
        }
        self.submitted += 1;
        note_submitted();
    }

    /// Commands submitted through this queue pair since it was made (the
    /// device's counters sum every queue pair's).
    pub fn submitted(&self) -> u64 {
        self.submitted
    }

    /// The device's counters as this queue pair's commands alone moved them
    /// (submission entries, data, completions, medium accesses, PE time):
    /// exact while other queue pairs use the device at the same time. A
    /// command's counts are in once it has been submitted and, for those
    /// the device makes, once its completion has been taken.
    pub fn counters(&self) -> Counters {
        Counters::read(&self.meter)
    }

    /// The modelled time this queue pair waited for its commands: the union
    /// of their `[submitted, completed]` spans, in the order waited. With
    /// one caller on the virtual clock that is how far the clock moved
    /// while it waited; with several, each counts its own commands' spans
    /// (which include queueing behind the others' on shared resources).
    pub fn waited_ps(&self) -> u64 {
        self.waited_ps
    }

    /// The model-clock span `[first submitted, last completed]` of the
    /// commands waited for, None before the first wait.
    pub fn waited_span_ps(&self) -> Option<(u64, u64)> {
        self.first_waited_ps.map(|from| (from, self.waited_until_ps))
    }

    fn note_waited(&mut self, c: &Completion) {
        let from = c.submitted_ps.max(self.waited_until_ps);
        self.waited_ps += c.completed_ps.saturating_sub(from);
        self.waited_until_ps = self.waited_until_ps.max(c.completed_ps);
        self.first_waited_ps = Some(self.first_waited_ps.map_or(c.submitted_ps, |f| f.min(c.submitted_ps)));
        note_waited(c);
    }

    fn recv(&mut self) -> Result<Completion, DeviceError> {
        let c = self.cq_rx.recv().map_err(|_| DeviceError::ShutDown)?;
        self.outstanding -= 1;
        Ok(c)
    }

    /// Waits for command `id` and returns its completion once it is due.
    pub fn wait(&mut self, id: u64) -> Result<Completion, DeviceError> {
        let c = loop {
            if let Some(i) = self.done.iter().position(|c| c.id == id) {
                break self.done.swap_remove(i);
            }
            if self.outstanding == 0 {
                return Err(DeviceError::InvalidCommand {
                    what: format!("command {id} is not outstanding on this queue pair"),
                });
            }
            let c = self.recv()?;
            self.done.push(c);
        };
        self.inner.clock.hold_until(c.completed_ps);
        self.note_waited(&c);
        Ok(c)
    }

    /// The next completion in modelled-time order among those computed, or
    /// None when nothing is outstanding.
    pub fn reap(&mut self) -> Result<Option<Completion>, DeviceError> {
        if self.done.is_empty() {
            if self.outstanding == 0 {
                return Ok(None);
            }
            let c = self.recv()?;
            self.done.push(c);
        }
        while let Ok(c) = self.cq_rx.try_recv() {
            self.outstanding -= 1;
            self.done.push(c);
        }
        let i = (0..self.done.len()).min_by_key(|&i| self.done[i].completed_ps).expect("not empty");
        let c = self.done.swap_remove(i);
        self.inner.clock.hold_until(c.completed_ps);
        self.note_waited(&c);
        Ok(Some(c))
    }

    /// Submits and waits: the command's reply.
    pub fn call(&mut self, cmd: Command) -> Result<Reply, DeviceError> {
        self.call_timed(cmd)?.result
    }

    /// Submits and waits: the whole completion, with its modelled times.
    pub fn call_timed(&mut self, cmd: Command) -> Result<Completion, DeviceError> {
        let id = self.submit(cmd)?;
        self.wait(id)
    }

    pub fn outstanding(&self) -> usize {
        self.outstanding
    }
}
