//! # Guards: a fixed page, pinned and latched until dropped
//!
//! A [`SharedGuard`] reads; an [`ExclusiveGuard`] reads and changes. Their
//! `bytes()` slices borrow the guard, and an exclusive guard's stores take
//! `&mut self`, so no slice of the frame is alive while the host stores
//! into it (`frames.rs`). Every store is an atomic store into the frame.
//!
//! An exclusive guard runs the page-version protocol of `seqlock.rs`: when
//! made, it stores `rear = v + 1` (then a release fence); when dropped or
//! downgraded, it publishes `front = v + 1` if it wrote anything, or puts
//! the rear back to `v` if it did not (the page is then byte-for-byte what
//! it was, and stays clean). Its first write marks the frame dirty.
//!
//! Guards are `!Send`: the gate counts a thread's guards (`gate.rs`).

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::Ordering;

use crate::pool::BufferPool;
use crate::seqlock;
use crate::state::{Frame, Mode};
use crate::{HEADER_BYTES, Pid, TRAILER_BYTES};

/// A page fixed with a shared latch.
pub struct SharedGuard<'a> {
    pool: &'a BufferPool,
    frame: u32,
    pid: Pid,
    _not_send: PhantomData<*const ()>,
}

impl<'a> SharedGuard<'a> {
    /// The caller holds `frame`'s shared latch and the gate for it.
    pub(crate) fn new(pool: &'a BufferPool, frame: u32, pid: Pid) -> SharedGuard<'a> {
        SharedGuard { pool, frame, pid, _not_send: PhantomData }
    }

    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The frame's host address (an offset in `HostFrames`).
    pub fn frame_addr(&self) -> u64 {
        self.pool.frames.frame_addr(self.frame as usize)
    }

    /// The whole page, header words included.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: this guard holds the frame's shared latch while the slice
        // (which borrows the guard) lives, so no host thread can store
        // into the frame: stores need the exclusive latch.
        unsafe { self.pool.frames.page(self.frame as usize) }
    }
}

impl Drop for SharedGuard<'_> {
    fn drop(&mut self) {
        crate::latch::release(&self.pool.meta[self.frame as usize], Mode::Shared);
        self.pool.gate.unhold();
    }
}

/// A page fixed with the exclusive latch.
pub struct ExclusiveGuard<'a> {
    pool: &'a BufferPool,
    frame: u32,
    pid: Pid,
    /// The front version when the latch was taken.
    version: u64,
    wrote: bool,
    _not_send: PhantomData<*const ()>,
}

impl<'a> ExclusiveGuard<'a> {
    /// The caller holds `frame`'s exclusive latch and the gate for it.
    /// Begins the change (rear = v + 1); `dirty` marks the page written.
    pub(crate) fn new(pool: &'a BufferPool, frame: u32, pid: Pid, dirty: bool) -> ExclusiveGuard<'a> {
        let version = seqlock::begin_write(pool.frames.words(), pool.frames.span(frame as usize));
        let mut guard = ExclusiveGuard { pool, frame, pid, version, wrote: false, _not_send: PhantomData };
        if dirty {
            guard.mark();
        }
        guard
    }

    fn meta(&self) -> &Frame {
        &self.pool.meta[self.frame as usize]
    }

    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The frame's host address (an offset in `HostFrames`).
    pub fn frame_addr(&self) -> u64 {
        self.pool.frames.frame_addr(self.frame as usize)
    }

    /// The whole page, header words included (while the guard is held the
    /// rear version is one ahead of the front).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: this guard holds the exclusive latch, so no other host
        // thread stores into the frame; this guard's own stores take
        // `&mut self`, which the borrow of the returned slice excludes.
        unsafe { self.pool.frames.page(self.frame as usize) }
    }

    /// Stores `data` at `offset` of the page body with atomic stores, and
    /// marks the page dirty.
    ///
    /// # Panics
    /// If the bytes reach outside the body (`HEADER_BYTES ..
    /// page_bytes - TRAILER_BYTES`): the header words belong to the pool.
    pub fn write(&mut self, offset: usize, data: &[u8]) {
        self.check_body(offset..offset.saturating_add(data.len()), "write");
        if data.is_empty() {
            return;
        }
        self.mark();
        self.pool.frames.store(self.frame as usize, offset, data);
    }

    /// Moves body bytes `src` to `dst` (they may overlap), as
    /// `slice::copy_within`, and marks the page dirty.
    ///
    /// # Panics
    /// As [`ExclusiveGuard::write`], for `src` and for the destination.
    pub fn copy_within(&mut self, src: Range<usize>, dst: usize) {
        assert!(src.start <= src.end, "page {}: copy_within of the reversed range {src:?}", self.pid);
        self.check_body(src.clone(), "copy_within source");
        self.check_body(dst..dst.saturating_add(src.len()), "copy_within destination");
        if src.is_empty() {
            return;
        }
        self.mark();
        self.pool.frames.move_within(self.frame as usize, src, dst);
    }

    /// Records `lsn` as the LSN of this page's newest change: the pool
    /// writes the page back only once the log is durable up to it. The
    /// page LSN only grows.
    pub fn set_lsn(&mut self, lsn: u64) {
        self.meta().page_lsn.fetch_max(lsn, Ordering::Relaxed);
    }

    /// Whether this guard changed the page (or allocated it).
    pub fn wrote(&self) -> bool {
        self.wrote
    }

    /// Ends the change and keeps the page shared-latched: never unlatched
    /// in between, so no other writer comes first.
    pub fn downgrade(self) -> SharedGuard<'a> {
        let (pool, frame, pid) = (self.pool, self.frame, self.pid);
        self.end_change();
        crate::latch::downgrade(self.meta());
        // The latch and the gate's count pass to the shared guard; this
        // guard owns nothing else, so forgetting it leaks nothing.
        std::mem::forget(self);
        SharedGuard::new(pool, frame, pid)
    }

    /// Zeroes the body (a page allocated under a race, `pool.rs`).
    pub(crate) fn zero_body(&mut self) {
        let body = self.pool.page_bytes() - HEADER_BYTES - TRAILER_BYTES;
        self.write(HEADER_BYTES, &vec![0; body]);
    }

    fn mark(&mut self) {
        if !self.wrote {
            self.wrote = true;
            self.meta().dirty.store(true, Ordering::Relaxed);
        }
    }

    fn end_change(&self) {
        let frames = &self.pool.frames;
        seqlock::end_write(frames.words(), frames.span(self.frame as usize), self.version, self.wrote);
    }

    fn check_body(&self, range: Range<usize>, what: &str) {
        let body = HEADER_BYTES..self.pool.page_bytes() - TRAILER_BYTES;
        assert!(
            body.start <= range.start && range.end <= body.end,
            "page {}: {what} of bytes {range:?} outside the page body {body:?}",
            self.pid
        );
    }
}

impl Drop for ExclusiveGuard<'_> {
    fn drop(&mut self) {
        self.end_change();
        crate::latch::release(self.meta(), Mode::Exclusive);
        self.pool.gate.unhold();
    }
}

impl std::fmt::Debug for SharedGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedGuard").field("pid", &self.pid).field("frame", &self.frame).finish()
    }
}

impl std::fmt::Debug for ExclusiveGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExclusiveGuard")
            .field("pid", &self.pid)
            .field("frame", &self.frame)
            .field("wrote", &self.wrote)
            .finish()
    }
}
