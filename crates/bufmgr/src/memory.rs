//! Pages and a log in memory, for tests and examples: nothing here is
//! durable. `MemoryPageIo` can fail on purpose (a fault after N calls), so
//! that tests see what the pool does when its I/O fails.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::Pid;
use crate::error::PoolError;
use crate::io::{LogSync, PageIo};

/// A file of pages in memory.
pub struct MemoryPageIo {
    page_bytes: usize,
    pages: Mutex<Vec<Vec<u8>>>,
    pages_max: u64,
    /// Calls (reads, writes, extends) counted, and the first that fails.
    calls: AtomicU64,
    fail_from: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
}

impl MemoryPageIo {
    /// An empty file of `page_bytes`-byte pages, growing up to `pages_max`.
    pub fn new(page_bytes: usize, pages_max: u64) -> MemoryPageIo {
        MemoryPageIo {
            page_bytes,
            pages: Mutex::new(Vec::new()),
            pages_max,
            calls: AtomicU64::new(0),
            fail_from: AtomicU64::new(u64::MAX),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        }
    }

    /// Makes call number `n` (counted from now, 0-based) and every later
    /// one fail; `None` heals it.
    pub fn fail_after(&self, n: Option<u64>) {
        let now = self.calls.load(Ordering::SeqCst);
        self.fail_from.store(n.map_or(u64::MAX, |n| now + n), Ordering::SeqCst);
    }

    /// The stored bytes of page `pid` (what a write-back left there).
    pub fn page(&self, pid: Pid) -> Option<Vec<u8>> {
        self.pages.lock().get(pid as usize).cloned()
    }

    /// Overwrites page `pid` behind the pool's back (corruption tests).
    pub fn put(&self, pid: Pid, bytes: Vec<u8>) {
        self.pages.lock()[pid as usize] = bytes;
    }

    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    fn call(&self, pid: Pid, what: &str) -> Result<(), PoolError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n >= self.fail_from.load(Ordering::SeqCst) {
            return Err(PoolError::Io { pid, message: format!("injected fault at call {n} ({what})") });
        }
        Ok(())
    }
}

impl PageIo for MemoryPageIo {
    fn read(&self, pid: Pid, _host_addr: u64) -> Result<Vec<u8>, PoolError> {
        self.call(pid, "read")?;
        self.reads.fetch_add(1, Ordering::Relaxed);
        let pages = self.pages.lock();
        let page = pages.get(pid as usize).ok_or(PoolError::NoSuchPage { pid, pages: pages.len() as u64 })?;
        Ok(page.clone())
    }

    fn write(&self, pid: Pid, page: &[u8]) -> Result<(), PoolError> {
        self.call(pid, "write")?;
        if page.len() != self.page_bytes {
            return Err(PoolError::PageSize { pid, expected: self.page_bytes, found: page.len() });
        }
        self.writes.fetch_add(1, Ordering::Relaxed);
        let mut pages = self.pages.lock();
        let len = pages.len() as u64;
        let slot = pages.get_mut(pid as usize).ok_or(PoolError::NoSuchPage { pid, pages: len })?;
        slot.copy_from_slice(page);
        Ok(())
    }

    fn pages(&self) -> u64 {
        self.pages.lock().len() as u64
    }

    fn extend(&self) -> Result<Pid, PoolError> {
        let mut pages = self.pages.lock();
        let pid = pages.len() as Pid;
        self.call(pid, "extend")?;
        if pid >= self.pages_max {
            return Err(PoolError::DeviceFull { pages_max: self.pages_max });
        }
        pages.push(vec![0; self.page_bytes]);
        Ok(pid)
    }
}

/// A log in memory: LSNs are handed out by `append`, and become durable by
/// `flush_to` (or the test's `make_durable`).
#[derive(Default)]
pub struct MemoryLog {
    appended: AtomicU64,
    durable: AtomicU64,
    flushes: AtomicU64,
    failing: std::sync::atomic::AtomicBool,
}

impl MemoryLog {
    pub fn new() -> MemoryLog {
        MemoryLog::default()
    }

    /// A new record's LSN (1, 2, ...), not yet durable.
    pub fn append(&self) -> u64 {
        self.appended.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Makes records up to `lsn` durable as a group commit would.
    pub fn make_durable(&self, lsn: u64) {
        self.durable.fetch_max(lsn.min(self.appended.load(Ordering::SeqCst)), Ordering::SeqCst);
    }

    /// `flush_to` calls so far.
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Relaxed)
    }

    /// Makes `flush_to` fail (or work again).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl LogSync for MemoryLog {
    fn durable_lsn(&self) -> u64 {
        self.durable.load(Ordering::SeqCst)
    }

    fn flush_to(&self, lsn: u64) -> Result<(), PoolError> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        if self.failing.load(Ordering::SeqCst) {
            return Err(PoolError::Log { message: format!("injected log failure flushing to LSN {lsn}") });
        }
        self.make_durable(lsn);
        Ok(())
    }
}
