//! # The buffer pool: fixing pages, reading them on a miss, allocating
//!
//! ```text
//!  fix(pid)                                   the frame's state word (state.rs)
//!    │ page table shard, read lock            ┌──────── free: claim ──────────┐
//!    ├─ hit:  CAS latch (or pin as waiter) ──►│ latched ── release ──► free    │
//!    │        ─► guard                        │ waiting ── acquire ──► latched │
//!    └─ miss: claim a frame (free list, then  │ evicting (pool owns it) ───────┘
//!             clock; a dirty victim is        └────────────────────────────────┘
//!             written back after the log),
//!             map pid → frame, latch it exclusively, read the page into it
//!             (PageIo::read names the frame's host address), check the
//!             bytes, install them with a fresh version ─► guard
//! ```
//!
//! Concurrent fixes of a page being read find its table entry, pin the
//! frame as waiters and get the latch once the read is in; if the read
//! failed they find the frame's pid cleared and look again. Two threads
//! missing on one page both claim frames; the second to insert its entry
//! gives its frame back and takes the first one's.
//!
//! Eviction, write-back, `flush_dirty` and `write_back_all` are
//! `evict.rs`'s; the guards are `guard.rs`'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::error::PoolError;
use crate::frames::HostFrames;
use crate::gate::{self, Gate};
use crate::guard::{ExclusiveGuard, SharedGuard};
use crate::io::{LogSync, PageIo, ReadPage, check_read};
use crate::latch::{self, Attempt, Backoff};
use crate::seqlock;
use crate::state::{Frame, Mode, NO_PID};
use crate::stats::{Counters, PoolStats, bump};
use crate::table::PageTable;
use crate::{PAGE_BYTES_MAX, PAGE_BYTES_MIN, Pid};

/// Frames at most (frame numbers are `u32`).
pub const FRAMES_MAX: usize = (u32::MAX - 1) as usize;

/// The pool's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    pub frames: usize,
    pub page_bytes: usize,
}

impl PoolConfig {
    pub fn validate(&self) -> Result<(), PoolError> {
        let what = if self.frames == 0 || self.frames > FRAMES_MAX {
            format!("{} frames; a pool has 1 to {FRAMES_MAX}", self.frames)
        } else if !(PAGE_BYTES_MIN..=PAGE_BYTES_MAX).contains(&self.page_bytes) || !self.page_bytes.is_multiple_of(8) {
            format!(
                "pages of {} bytes; pages hold {PAGE_BYTES_MIN} to {PAGE_BYTES_MAX} bytes, a multiple of 8",
                self.page_bytes
            )
        } else {
            return Ok(());
        };
        Err(PoolError::Config { what })
    }
}

static NEXT_POOL_ID: AtomicU64 = AtomicU64::new(1);

/// A fixed pool of frames caching the pages of one file.
pub struct BufferPool {
    pub(crate) id: u64,
    pub(crate) config: PoolConfig,
    pub(crate) frames: Arc<HostFrames>,
    pub(crate) meta: Box<[Frame]>,
    pub(crate) table: PageTable,
    /// Frames holding no page (a hint: each is claimed before use).
    pub(crate) free: Mutex<Vec<u32>>,
    /// The clock hand: the frame the next sweep looks at first.
    pub(crate) hand: AtomicUsize,
    pub(crate) io: Arc<dyn PageIo>,
    pub(crate) log: Arc<dyn LogSync>,
    pub(crate) gate: Gate,
    pub(crate) counters: Counters,
}

impl BufferPool {
    /// An empty pool over `io`, writing back only after `log` (see the
    /// crate's documentation). Dropping the pool drops its dirty pages: the
    /// caller writes them back first (`write_back_all`) or recovers them
    /// from its log.
    pub fn new(config: PoolConfig, io: Arc<dyn PageIo>, log: Arc<dyn LogSync>) -> Result<BufferPool, PoolError> {
        config.validate()?;
        let frames = Arc::new(HostFrames::new(config.frames, config.page_bytes)?);
        let id = NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed);
        Ok(BufferPool {
            id,
            config,
            frames,
            meta: (0..config.frames).map(|_| Frame::new()).collect(),
            table: PageTable::new(),
            free: Mutex::new((0..config.frames as u32).rev().collect()),
            hand: AtomicUsize::new(0),
            io,
            log,
            gate: Gate::new(id),
            counters: Counters::default(),
        })
    }

    pub fn page_bytes(&self) -> usize {
        self.config.page_bytes
    }

    pub fn frames(&self) -> usize {
        self.config.frames
    }

    /// The file's length in pages (`PageIo::pages`).
    pub fn pages(&self) -> u64 {
        self.io.pages()
    }

    /// The frames, for the device to read by DMA.
    pub fn host_memory(&self) -> Arc<HostFrames> {
        self.frames.clone()
    }

    /// Page `pid` pinned and shared-latched (read on a miss).
    pub fn fix_shared(&self, pid: Pid) -> Result<SharedGuard<'_>, PoolError> {
        let frame = self.fix(pid, Mode::Shared)?;
        Ok(SharedGuard::new(self, frame, pid))
    }

    /// Page `pid` pinned and exclusively latched (read on a miss). Waits
    /// while others hold its latch; a thread that holds a guard of `pid`
    /// itself must not ask for it exclusively (it would wait for itself).
    pub fn fix_exclusive(&self, pid: Pid) -> Result<ExclusiveGuard<'_>, PoolError> {
        let frame = self.fix(pid, Mode::Exclusive)?;
        Ok(ExclusiveGuard::new(self, frame, pid, false))
    }

    /// A new page at the end of the file (`PageIo::extend`), exclusively
    /// fixed and dirty: zeroed but for its header words (versions, pid).
    /// A full pool is refused before the file grows.
    pub fn allocate(&self) -> Result<ExclusiveGuard<'_>, PoolError> {
        self.gate.hold();
        let allocated = self.allocate_held();
        if allocated.is_err() {
            self.gate.unhold();
        }
        allocated
    }

    /// Where `pid` is cached now, as a host address (a snapshot: it may
    /// change as soon as it is returned unless the caller holds a guard).
    pub fn resident(&self, pid: Pid) -> Option<u64> {
        self.table.with(pid, |f| f.map(|f| self.frames.frame_addr(f as usize)))
    }

    pub fn stats(&self) -> PoolStats {
        let (hits, misses) = self.table.hits_misses();
        let mut stats = PoolStats {
            frames: self.config.frames,
            page_bytes: self.config.page_bytes,
            hits,
            misses,
            resident: self.table.len() as u64,
            dirty: self.meta.iter().filter(|m| m.pid() != NO_PID && m.dirty.load(Ordering::Relaxed)).count() as u64,
            ..PoolStats::default()
        };
        self.counters.read_into(&mut stats);
        stats
    }

    /// Fixes `pid` in `mode`: the frame, latched, with the gate held.
    fn fix(&self, pid: Pid, mode: Mode) -> Result<u32, PoolError> {
        self.gate.hold();
        let fixed = self.fix_held(pid, mode);
        if fixed.is_err() {
            self.gate.unhold();
        }
        fixed
    }

    pub(crate) fn fix_held(&self, pid: Pid, mode: Mode) -> Result<u32, PoolError> {
        let mut backoff = Backoff::new();
        loop {
            let found = self.table.with(pid, |f| f.map(|f| (f, latch::attempt(&self.meta[f as usize], mode))));
            let (frame, attempt) = match found {
                Some(found) => found,
                None => match self.load(pid, mode)? {
                    Some(frame) => return Ok(frame),
                    None => continue,
                },
            };
            let meta = &self.meta[frame as usize];
            match attempt {
                Attempt::Latched => {}
                Attempt::Waiting => {
                    bump(&self.counters.latch_waits);
                    latch::wait_latch(meta, mode);
                    if meta.pid() != pid {
                        // Its read failed while we waited: look again.
                        latch::release(meta, mode);
                        continue;
                    }
                }
                Attempt::Evicting => {
                    backoff.snooze();
                    continue;
                }
            }
            debug_assert_eq!(meta.pid(), pid);
            self.table.count_hit(pid);
            meta.touch();
            return Ok(frame);
        }
    }

    /// A miss: reads `pid` into a claimed frame. Ok(None) if another
    /// thread mapped `pid` meanwhile (the caller looks again).
    fn load(&self, pid: Pid, mode: Mode) -> Result<Option<u32>, PoolError> {
        let pages = self.io.pages();
        if pid >= pages {
            return Err(PoolError::NoSuchPage { pid, pages });
        }
        let frame = self.claim_frame()?;
        if !self.map_claimed(frame, pid) {
            return Ok(None);
        }
        self.table.count_miss(pid);
        let addr = self.frames.frame_addr(frame as usize);
        let read = self.io.read(pid, addr).and_then(|page| {
            let kind = check_read(pid, &page, self.config.page_bytes)?;
            Ok((page, kind))
        });
        let meta = &self.meta[frame as usize];
        match read {
            Ok((page, kind)) => {
                if kind == ReadPage::NeverWritten {
                    bump(&self.counters.never_written_reads);
                }
                self.install(frame, pid, Some(&page));
                meta.dirty.store(false, Ordering::Relaxed);
            }
            Err(e) => {
                self.unmap_loading(frame, pid);
                return Err(e);
            }
        }
        if mode == Mode::Shared {
            latch::downgrade(meta);
        }
        Ok(Some(frame))
    }

    /// Maps `pid` to the claimed `frame`, which becomes exclusively latched
    /// by the caller. False (frame given back) if `pid` is mapped already.
    fn map_claimed(&self, frame: u32, pid: Pid) -> bool {
        let meta = &self.meta[frame as usize];
        meta.pid.store(pid, Ordering::Relaxed);
        latch::claim_to_load(meta);
        if self.table.insert(pid, frame).is_ok() {
            return true;
        }
        meta.pid.store(NO_PID, Ordering::Relaxed);
        latch::release(meta, Mode::Exclusive);
        self.free.lock().push(frame);
        false
    }

    /// Undoes `map_claimed` after a failed read: waiters see the pid gone.
    fn unmap_loading(&self, frame: u32, pid: Pid) {
        let meta = &self.meta[frame as usize];
        self.table.remove(pid, frame);
        meta.pid.store(NO_PID, Ordering::Relaxed);
        latch::release(meta, Mode::Exclusive);
        self.free.lock().push(frame);
    }

    /// Puts `page` (or a zeroed page) into the exclusively owned `frame`
    /// with a fresh version and `pid` in its pid word (`seqlock::install`).
    fn install(&self, frame: u32, pid: Pid, page: Option<&[u8]>) {
        let span = self.frames.span(frame as usize);
        seqlock::install(self.frames.words(), span, |k| match (k, page) {
            (1, _) => seqlock::encode(pid),
            (_, Some(p)) => u64::from_ne_bytes(p[k * 8..k * 8 + 8].try_into().expect("a whole word")),
            (_, None) => 0,
        });
        let meta = &self.meta[frame as usize];
        meta.page_lsn.store(0, Ordering::Relaxed);
        meta.touch();
    }

    /// `allocate` with the gate held.
    fn allocate_held(&self) -> Result<ExclusiveGuard<'_>, PoolError> {
        let frame = self.claim_frame()?;
        let meta = &self.meta[frame as usize];
        let pid = match self.io.extend() {
            Ok(pid) => pid,
            Err(e) => {
                latch::unclaim(meta);
                self.free.lock().push(frame);
                return Err(e);
            }
        };
        bump(&self.counters.allocations);
        if !self.map_claimed(frame, pid) {
            // Someone fixed the new pid before we mapped it (reading the
            // never-written page): zero it in that frame instead.
            let frame = self.fix_held(pid, Mode::Exclusive)?;
            let mut guard = ExclusiveGuard::new(self, frame, pid, true);
            guard.zero_body();
            return Ok(guard);
        }
        self.install(frame, pid, None);
        Ok(ExclusiveGuard::new(self, frame, pid, true))
    }

    /// Refuses `operation` while this thread holds guards of the pool.
    pub(crate) fn no_guards(&self, operation: &'static str) -> Result<(), PoolError> {
        match gate::held(self.id) {
            0 => Ok(()),
            guards => Err(PoolError::GuardsHeld { guards, operation }),
        }
    }
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool").field("config", &self.config).finish_non_exhaustive()
    }
}
