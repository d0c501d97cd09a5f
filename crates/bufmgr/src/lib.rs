//! # The host buffer pool
//!
//! Every real DBMS caches pages in host memory and changes them there. This
//! crate is ndpdb's page cache for buffer-managed files (the B+-tree store,
//! and later the SQL engine's indexes): a fixed pool of frames, a page
//! table, pin/latch guards, clock eviction, and write-back only after the
//! caller's log is durable. Its frames are host memory the device may read
//! by DMA while the host changes them, which is what the cooperative buffer
//! manager (CBM, `docs/buffer-manager.md`) needs: the device reads a dirty
//! page straight from its frame and checks the page's two versions.
//!
//! ```text
//!   host threads                                          device
//!   fix_shared / fix_exclusive / allocate ──► guards      (reads frames by DMA:
//!        │                                      │          HostFrames::dma_read,
//!        ▼                                      ▼          atomic loads, retries
//!   page table (pid → frame, sharded) ──► frame states     while front != rear)
//!        │ miss: claim a frame (clock),     (latch, waiters,        ▲
//!        │ write the victim back after      version; pid, dirty,    │
//!        │ log.flush_to(page_lsn),          page LSN, clock bit)    │
//!        ▼ read the page into it                                    │
//!   PageIo (DevicePageIo: PageRead/PageWrite)      HostFrames: frames × page_bytes
//! ```
//!
//! A page of the pool starts with its front version and its pid and ends
//! with its rear version (`docs/format/btree.md` gives the rest of a
//! B+-tree node):
//!
//! ```text
//!  0        8        16                                page_bytes-8   page_bytes
//!  ┌────────┬────────┬──────────── body ──────────────┬──────────────┐
//!  │ front  │ pid    │ (written by the guards' owner) │ rear         │
//!  └────────┴────────┴────────────────────────────────┴──────────────┘
//! ```
//!
//! Modules, by job: `pool.rs` (fixing, reading on a miss, allocating),
//! `guard.rs` (the guards), `evict.rs` (clock, write-back, Flush),
//! `state.rs` (the frame state word), `latch.rs` (its CAS loops),
//! `seqlock.rs` (the page versions), `frames.rs` (the DMA-readable frames),
//! `table.rs` (the page table), `gate.rs` (holding the pool for a Flush),
//! `io.rs` (the I/O and log traits, the read check), `device_io.rs` (the
//! device as `PageIo`), `memory.rs` (pages and a log in memory, for tests),
//! `stats.rs`.

mod device_io;
mod error;
mod evict;
mod frames;
mod gate;
mod guard;
mod io;
mod latch;
mod memory;
mod pool;
pub mod seqlock;
mod state;
mod stats;
mod table;

pub use device_io::{DevicePageIo, page_read};
pub use error::PoolError;
pub use frames::HostFrames;
pub use guard::{ExclusiveGuard, SharedGuard};
pub use io::{LogSync, PageIo};
pub use memory::{MemoryLog, MemoryPageIo};
pub use pool::{BufferPool, FRAMES_MAX, PoolConfig};
pub use stats::{FlushStats, PoolStats};

/// A page's number in the buffer-managed file.
pub type Pid = u64;

/// Bytes before a page's body: the front version and the pid word.
pub const HEADER_BYTES: usize = 16;
/// Bytes after a page's body: the rear version.
pub const TRAILER_BYTES: usize = 8;
/// Byte offsets of the header words.
pub const FRONT_OFFSET: usize = 0;
pub const PID_OFFSET: usize = 8;

/// Page sizes the pool accepts.
pub const PAGE_BYTES_MIN: usize = 64;
pub const PAGE_BYTES_MAX: usize = 1 << 20;

/// The rear version's offset in a page of `page_bytes`.
pub fn rear_offset(page_bytes: usize) -> usize {
    page_bytes - TRAILER_BYTES
}
