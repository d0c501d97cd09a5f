//! # Pages on the emulated device
//!
//! The buffer-managed file is a run of physical pages: pid `p` is physical
//! page `first_ppn + p`, for `p` below a page limit fixed at construction.
//!
//! ```text
//!  device pages:  ... │ first_ppn │ first_ppn+1 │ ... │ first_ppn+limit-1 │ ...
//!  file pids:           0           1                 limit-1
//!                       └── pages() in use ──┘└── extend() hands these out ──┘
//! ```
//!
//! Reads and writes are the device's `PageRead` and `PageWrite` commands,
//! on a small pool of queue pairs (a queue pair serves one thread at a
//! time). A page read names the frame's host address ([`page_read`] is the
//! one place that builds the command): the device's mirror of the pool
//! learns from it which frame holds which page. The file's length is the caller's
//! to keep (the store's root page); `extend` only counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ndpdb_device::{Command, Device, QueuePair, Reply};
use parking_lot::Mutex;

use crate::Pid;
use crate::error::PoolError;
use crate::io::PageIo;

/// Queue pairs kept for reuse (more are made while more threads do I/O).
const QUEUE_PAIRS_KEPT: usize = 8;

/// The command that reads page `ppn` into the frame at host address
/// `host_addr`.
pub fn page_read(ppn: u64, host_addr: u64) -> Command {
    Command::PageRead { ppn, host_addr: Some(host_addr) }
}

/// A buffer-managed file on a run of the device's physical pages.
pub struct DevicePageIo {
    device: Arc<Device>,
    first_ppn: u64,
    page_limit: u64,
    pages: AtomicU64,
    page_bytes: usize,
    queue_pairs: Mutex<Vec<QueuePair>>,
}

impl DevicePageIo {
    /// The file of `pages` pages (pids `0..pages`) at physical page
    /// `first_ppn`, which may grow to `page_limit` pages.
    pub fn new(device: Arc<Device>, first_ppn: u64, pages: u64, page_limit: u64) -> Result<DevicePageIo, PoolError> {
        let info = device.info();
        let device_pages = info.capacity_bytes / u64::from(info.page_bytes);
        let end = first_ppn.checked_add(page_limit).filter(|&e| e <= device_pages);
        if end.is_none() || pages > page_limit {
            return Err(PoolError::Config {
                what: format!(
                    "a file of {pages} pages, growing to {page_limit}, at physical page {first_ppn}: \
                     the device holds {device_pages} pages; choose a smaller limit or a larger device"
                ),
            });
        }
        Ok(DevicePageIo {
            device,
            first_ppn,
            page_limit,
            pages: AtomicU64::new(pages),
            page_bytes: info.page_bytes as usize,
            queue_pairs: Mutex::new(Vec::new()),
        })
    }

    /// The device's page size: the pool's pages must have it.
    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    pub fn page_limit(&self) -> u64 {
        self.page_limit
    }

    pub fn first_ppn(&self) -> u64 {
        self.first_ppn
    }

    /// The physical page of `pid`.
    pub fn ppn(&self, pid: Pid) -> u64 {
        self.first_ppn + pid
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    fn check(&self, pid: Pid) -> Result<(), PoolError> {
        let pages = self.pages();
        if pid >= pages {
            return Err(PoolError::NoSuchPage { pid, pages });
        }
        Ok(())
    }

    /// Runs `cmd` on a queue pair of the pool (or a new one).
    fn call(&self, pid: Pid, cmd: Command) -> Result<Reply, PoolError> {
        let taken = self.queue_pairs.lock().pop();
        let mut qp = taken.unwrap_or_else(|| self.device.queue_pair());
        let reply = qp.call(cmd);
        let mut kept = self.queue_pairs.lock();
        if kept.len() < QUEUE_PAIRS_KEPT {
            kept.push(qp);
        }
        reply.map_err(|source| PoolError::Device { pid, source })
    }
}

impl PageIo for DevicePageIo {
    fn read(&self, pid: Pid, host_addr: u64) -> Result<Vec<u8>, PoolError> {
        self.check(pid)?;
        match self.call(pid, page_read(self.ppn(pid), host_addr))? {
            Reply::Data(page) => Ok(page),
            other => Err(PoolError::Io { pid, message: format!("the device answered a page read with {other:?}") }),
        }
    }

    fn write(&self, pid: Pid, page: &[u8]) -> Result<(), PoolError> {
        self.check(pid)?;
        if page.len() != self.page_bytes {
            return Err(PoolError::PageSize { pid, expected: self.page_bytes, found: page.len() });
        }
        self.call(pid, Command::PageWrite { ppn: self.ppn(pid), data: page.to_vec() })?;
        Ok(())
    }

    fn pages(&self) -> u64 {
        self.pages.load(Ordering::Acquire)
    }

    fn extend(&self) -> Result<Pid, PoolError> {
        let limit = self.page_limit;
        self.pages
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| (p < limit).then_some(p + 1))
            .map_err(|_| PoolError::DeviceFull { pages_max: limit })
    }
}
