//! # Making room and writing back
//!
//! **Claiming a frame** for a miss or an allocation: a frame from the free
//! list if there is one, else the clock. The free list is a hint: the
//! clock may have given one of its frames a page since, so a frame taken
//! from it is claimed and evicted like any victim. The hand sweeps the frames from
//! where it stopped: a pinned or claimed frame is passed by, a referenced
//! one loses its bit (second chance), an unreferenced unpinned one is
//! claimed (`state.rs`: only from "free, no waiters", so never a pinned
//! frame). From the third pass on the bits are ignored, so a sweep ends as
//! soon as one frame is unpinned; a pass that finds every frame pinned or
//! claimed ends it with `PoolError::Full` (never a wait without end).
//!
//! **Evicting** a claimed frame: a dirty page is written back first, and
//! only once the log is durable up to the page's LSN (the write-ahead
//! rule: `log.flush_to(page_lsn)` when it is not). If the write fails, the
//! frame is given back unchanged, still dirty. Then its pid is unmapped.
//!
//! **Write-back of all dirty pages** (`write_back_all` for checkpoints,
//! `flush_dirty` for the Flush method with the pool held, `gate.rs`):
//! the log is flushed once to the newest page LSN among the dirty frames,
//! then each dirty frame is shared-latched and written. A frame being
//! evicted is waited for, since its eviction writes it back.

use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::Pid;
use crate::error::PoolError;
use crate::latch::{self, Backoff};
use crate::pool::BufferPool;
use crate::seqlock;
use crate::state::{self, Mode, NO_PID, Sweep};
use crate::stats::{FlushStats, bump};

/// Passes after which the clock ignores reference bits.
const PASSES_WITH_BITS: usize = 2;

impl BufferPool {
    /// An empty frame, claimed (`EVICTING`) and unmapped.
    pub(crate) fn claim_frame(&self) -> Result<u32, PoolError> {
        loop {
            let Some(frame) = self.free.lock().pop() else { break };
            if latch::claim(&self.meta[frame as usize]) {
                // The clock may have taken it meanwhile for another page.
                self.evict(frame)?;
                return Ok(frame);
            }
            // Pinned (it holds a page again, or a waiter of a failed read
            // still pins it): the clock finds it when it is free.
        }
        self.sweep()
    }

    fn sweep(&self) -> Result<u32, PoolError> {
        let n = self.meta.len();
        let start = self.hand.fetch_add(1, Ordering::Relaxed);
        for pass in 0.. {
            let mut unpinned = false;
            for i in 0..n {
                let frame = (start + i) % n;
                let meta = &self.meta[frame];
                let referenced = pass < PASSES_WITH_BITS && meta.referenced.load(Ordering::Relaxed);
                match state::sweep(meta.state(), referenced) {
                    Sweep::Skip => {}
                    Sweep::SecondChance => {
                        unpinned = true;
                        meta.referenced.store(false, Ordering::Relaxed);
                    }
                    Sweep::Claim => {
                        unpinned = true;
                        if latch::claim(meta) {
                            self.hand.store(frame + 1, Ordering::Relaxed);
                            self.evict(frame as u32)?;
                            return Ok(frame as u32);
                        }
                    }
                }
            }
            if !unpinned {
                break;
            }
        }
        bump(&self.counters.full);
        Err(PoolError::Full { frames: n })
    }

    /// Empties the claimed `frame`: writes its page back if dirty (the
    /// frame is given back on failure), unmaps it.
    fn evict(&self, frame: u32) -> Result<(), PoolError> {
        let meta = &self.meta[frame as usize];
        let pid = meta.pid();
        if pid == NO_PID {
            return Ok(());
        }
        if meta.dirty.load(Ordering::Relaxed) {
            if let Err(e) = self.write_back(frame, pid) {
                latch::unclaim(meta);
                return Err(e);
            }
            bump(&self.counters.eviction_write_backs);
        }
        self.table.remove(pid, frame);
        meta.pid.store(NO_PID, Ordering::Relaxed);
        bump(&self.counters.evictions);
        Ok(())
    }

    /// Writes page `pid` of `frame` back after the log; the caller holds
    /// the frame's shared latch or its claim, so front == rear.
    fn write_back(&self, frame: u32, pid: Pid) -> Result<(), PoolError> {
        let meta = &self.meta[frame as usize];
        self.log_durable(pid, meta.page_lsn.load(Ordering::Relaxed))?;
        let page = self.frames.copy_page(frame as usize);
        debug_assert!(seqlock::versions_match(&page), "page {pid} written back mid-change");
        self.io.write(pid, &page)?;
        meta.dirty.store(false, Ordering::Relaxed);
        bump(&self.counters.write_backs);
        Ok(())
    }

    /// The write-ahead rule: the log durable up to `lsn` before page `pid`
    /// may be written.
    fn log_durable(&self, pid: Pid, lsn: u64) -> Result<(), PoolError> {
        if lsn <= self.log.durable_lsn() {
            return Ok(());
        }
        self.log.flush_to(lsn)?;
        bump(&self.counters.log_flushes);
        let durable = self.log.durable_lsn();
        if durable < lsn {
            return Err(PoolError::LogBehind { pid, lsn, durable });
        }
        Ok(())
    }

    /// Writes back every dirty page, with new fixes held off meanwhile
    /// (the experiment's Flush method, λ-IO's). Every change made by an
    /// operation (a thread's span of holding guards) that ended before this
    /// returns is on the medium when it returns. The calling thread must
    /// hold no guards of the pool (`PoolError::GuardsHeld`).
    pub fn flush_dirty(&self) -> Result<FlushStats, PoolError> {
        self.no_guards("flush_dirty")?;
        bump(&self.counters.flushes);
        let t0 = Instant::now();
        self.gate.closed(|| {
            let quiesce_ns = t0.elapsed().as_nanos() as u64;
            let pages_written = self.write_back_dirty()?;
            Ok(FlushStats { pages_written, held_ns: t0.elapsed().as_nanos() as u64, quiesce_ns })
        })
    }

    /// Writes back every dirty page (for checkpoints) while other threads
    /// go on: each change released before the call is on the medium when it
    /// returns. The calling thread must hold no guards of the pool.
    pub fn write_back_all(&self) -> Result<(), PoolError> {
        self.no_guards("write_back_all")?;
        self.write_back_dirty().map(|_| ())
    }

    fn write_back_dirty(&self) -> Result<u64, PoolError> {
        let newest = (self.meta.iter())
            .filter(|m| m.dirty.load(Ordering::Acquire))
            .map(|m| (m.page_lsn.load(Ordering::Relaxed), m.pid()))
            .max();
        if let Some((lsn, pid)) = newest {
            self.log_durable(pid, lsn)?;
        }
        let mut written = 0;
        for frame in 0..self.meta.len() as u32 {
            if self.write_back_frame(frame)? {
                written += 1;
            }
        }
        Ok(written)
    }

    /// Writes `frame` back if it holds a dirty page, under its shared latch.
    fn write_back_frame(&self, frame: u32) -> Result<bool, PoolError> {
        let meta = &self.meta[frame as usize];
        let mut backoff = Backoff::new();
        loop {
            if !meta.dirty.load(Ordering::Acquire) {
                return Ok(false);
            }
            if latch::pin_waiting(meta) {
                break;
            }
            // Being evicted: its eviction writes it back; look again after.
            backoff.snooze();
        }
        latch::wait_latch(meta, Mode::Shared);
        let pid = meta.pid();
        let result = if pid != NO_PID && meta.dirty.load(Ordering::Relaxed) {
            self.write_back(frame, pid).map(|()| true)
        } else {
            Ok(false)
        };
        latch::release(meta, Mode::Shared);
        result
    }
}
