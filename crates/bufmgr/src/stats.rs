//! What the pool counts. Counters are relaxed atomics, exact once the pool
//! is quiet; hits and misses are counted per page-table shard
//! (`table.rs`) so that a hit dirties no line the lookup did not.

use std::sync::atomic::{AtomicU64, Ordering};

/// The pool's counters since it was made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub frames: usize,
    pub page_bytes: usize,
    /// Fixes that found their page in the pool.
    pub hits: u64,
    /// Fixes that read their page (each a `PageIo::read`).
    pub misses: u64,
    /// Pages read that had never been written back (all zeros).
    pub never_written_reads: u64,
    /// Pages added to the file by `allocate`.
    pub allocations: u64,
    /// Pages the clock removed from the pool to make room.
    pub evictions: u64,
    /// Dirty pages written (by eviction, `flush_dirty` or `write_back_all`).
    pub write_backs: u64,
    /// Of those, written by eviction.
    pub eviction_write_backs: u64,
    /// `LogSync::flush_to` calls the write-ahead rule made.
    pub log_flushes: u64,
    /// Fixes that waited for a latch.
    pub latch_waits: u64,
    /// Fixes and allocations refused with `PoolError::Full`.
    pub full: u64,
    /// `flush_dirty` calls.
    pub flushes: u64,
    /// Pages in the pool now, and how many of them are dirty.
    pub resident: u64,
    pub dirty: u64,
}

/// What one `flush_dirty` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushStats {
    /// Dirty pages written back.
    pub pages_written: u64,
    /// Wall time the pool was held against new fixes, and the part of it
    /// spent waiting for operations in progress to finish.
    pub held_ns: u64,
    pub quiesce_ns: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) never_written_reads: AtomicU64,
    pub(crate) allocations: AtomicU64,
    pub(crate) evictions: AtomicU64,
    pub(crate) write_backs: AtomicU64,
    pub(crate) eviction_write_backs: AtomicU64,
    pub(crate) log_flushes: AtomicU64,
    pub(crate) latch_waits: AtomicU64,
    pub(crate) full: AtomicU64,
    pub(crate) flushes: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    /// The counters into `stats` (the pool fills in the rest).
    pub(crate) fn read_into(&self, stats: &mut PoolStats) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        stats.never_written_reads = get(&self.never_written_reads);
        stats.allocations = get(&self.allocations);
        stats.evictions = get(&self.evictions);
        stats.write_backs = get(&self.write_backs);
        stats.eviction_write_backs = get(&self.eviction_write_backs);
        stats.log_flushes = get(&self.log_flushes);
        stats.latch_waits = get(&self.latch_waits);
        stats.full = get(&self.full);
        stats.flushes = get(&self.flushes);
    }
}
