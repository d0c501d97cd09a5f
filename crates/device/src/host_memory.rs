//! # Host memory the device reads by DMA
//!
//! The cooperative buffer manager (`docs/cbm.md`) lets a program on the PEs
//! read a dirty page straight from the host's buffer pool instead of the
//! medium. The host registers the memory once ([`Device::attach_host_memory`]:
//! in ndpdb, the pool's frames, `bufmgr::HostFrames`); a PE then reads it
//! with [`PeCtx::host_read`](crate::PeCtx::host_read).
//!
//! ```text
//!   PE ── read request (TLP) ──────────────► host memory (HostMemory::dma_read)
//!   PE ◄── len bytes: link latency + len / link bandwidth ── (host -> device)
//! ```
//!
//! **What is charged.** Each DMA read is a link transfer like the commands'
//! data: the PE waits the profile's link latency plus `len` bytes at the
//! link bandwidth, and the bytes occupy the host → device direction of the
//! link (the direction the data travels), which the execution settles on
//! the device's timeline with the other resources (`timing.rs`). The bytes
//! are counted in `link_bytes_to_device`, and the reads and their bytes in
//! `dma_reads` and `dma_bytes_read`. The small read request is not counted
//! (it is a few bytes, like the doorbells the commands do not count either).
//!
//! The device trusts nothing it reads this way: a DMA read only copies
//! bytes, and whoever uses them (the lookup, `kv_lookup.rs`) checks them.

use std::sync::Arc;

use crate::device::Device;

/// Host memory the device may read by DMA (the pool's frames).
pub trait HostMemory: Send + Sync {
    /// Copies `out.len()` bytes at host address `addr`; an error if the
    /// range is not host memory the host registered.
    fn dma_read(&self, addr: u64, out: &mut [u8]) -> Result<(), String>;
}

impl Device {
    /// Registers the host memory the device may read (one per device; a
    /// second call replaces the first).
    pub fn attach_host_memory(&self, mem: Arc<dyn HostMemory>) {
        *self.inner().host_memory.write() = Some(mem);
    }

    /// Whether host memory is attached.
    pub fn has_host_memory(&self) -> bool {
        self.inner().host_memory.read().is_some()
    }
}
