//! The pool's errors. Each variant says what the caller must do: release
//! guards or configure more frames (`Full`), give the file more room
//! (`DeviceFull`), repair or restore the image (`Corrupt`), or fix its own
//! call (`NoSuchPage`, `Config`, `GuardsHeld`, `OutOfRange`).

use ndpdb_device::DeviceError;

use crate::Pid;

#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error(
        "the buffer pool is full: all {frames} frames are pinned by guards, so no page can be read or allocated; \
         release guards you no longer need, or configure the pool with more frames"
    )]
    Full { frames: usize },
    #[error(
        "the buffer-managed file is full: it may hold {pages_max} pages on the device and all are in use; \
         give it a larger page limit (or a larger device image)"
    )]
    DeviceFull { pages_max: u64 },
    #[error(
        "page {pid} does not exist: the file holds {pages} pages (pids 0..{pages}); allocate pages before fixing them"
    )]
    NoSuchPage { pid: Pid, pages: u64 },
    #[error("page {pid} is corrupt: {what}; the page was not cached (restore the image, or recover from the log)")]
    Corrupt { pid: Pid, what: String },
    #[error(
        "page {pid}: the device returned {found} bytes, the pool's pages hold {expected}; configure the pool with the device's page size"
    )]
    PageSize { pid: Pid, expected: usize, found: usize },
    #[error("device error on page {pid}: {source}")]
    Device { pid: Pid, source: DeviceError },
    #[error("page I/O error on page {pid}: {message}")]
    Io { pid: Pid, message: String },
    #[error(
        "the log is durable only up to LSN {durable} after flushing to {lsn}, so page {pid} (LSN {lsn}) may not be \
         written back yet (write-ahead rule); the page stays dirty in the pool"
    )]
    LogBehind { pid: Pid, lsn: u64, durable: u64 },
    #[error("the log failed: {message}; dirty pages stay in the pool (nothing was written back past the log)")]
    Log { message: String },
    #[error("invalid buffer pool configuration: {what}")]
    Config { what: String },
    #[error(
        "this thread holds {guards} guard(s) of the pool; release them before {operation} (it waits for every \
         latch and would wait for this thread's own)"
    )]
    GuardsHeld { guards: usize, operation: &'static str },
    #[error("host memory read of {len} bytes at {addr:#x} is outside the pool's {size} bytes of frames")]
    OutOfRange { addr: u64, len: usize, size: u64 },
}
