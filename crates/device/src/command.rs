//! The command set, shaped after NVMe: the native page commands beside the
//! Computational Programs (program load, activate, execute) and Subsystem
//! Local Memory (memory ranges) command sets. `docs/format/commands.md` lists
//! each command with what crosses the link and what it reserves.

use serde::Serialize;

use crate::counters::Counters;
use crate::error::DeviceError;

/// A memory range in device DRAM (SLM), named by the id the device gave it.
pub type RangeId = u32;

/// Program slots per device (a limit on everything).
pub const PROGRAM_SLOTS: u32 = 16;

/// Bytes a program's parameters may take (they travel with the command).
pub const PARAMS_BYTES_MAX: usize = 1 << 20;

/// The most bytes one [`Command::PageReadRun`] reads (NVMe's maximum data
/// transfer size, MDTS, as many drives set it).
pub const RUN_BYTES_MAX: u64 = 128 * 1024;

/// The sector size of [`Command::Read`]: the unit the medium's check codes
/// cover and the unit a write is atomic in.
pub const SECTOR_BYTES: u64 = ndpdb_format::image::SECTOR_BYTES as u64;

#[derive(Debug, Clone)]
pub enum Command {
    /// The device's geometry and profile (a 4096-byte identify structure).
    Identify,
    /// Read one native page to the host, into the host memory at
    /// `host_addr` if the host names it (a buffer pool's frame: the
    /// device's mirror learns from it which frame holds which page).
    PageRead {
        ppn: u64,
        host_addr: Option<u64>,
    },
    /// Read the `pages` native pages `first_ppn..first_ppn + pages` to the
    /// host, each into a buffer of its own (NVMe Read of consecutive blocks
    /// with a list of page-sized host buffers, as a PRP list gives), at most
    /// [`RUN_BYTES_MAX`] bytes: one submission and one completion where
    /// `pages` `PageRead`s would take `pages` of each.
    PageReadRun {
        first_ppn: u64,
        pages: u32,
    },
    /// Read `len` bytes at byte address `addr` to the host, in whole
    /// 512-byte sectors within one page (NVMe Read with LBA and block count).
    Read {
        addr: u64,
        len: u32,
    },
    /// Write one native page (`data.len()` must equal the page size).
    PageWrite {
        ppn: u64,
        data: Vec<u8>,
    },
    /// Make all completed writes durable.
    Flush,
    /// Start (or restart) the mirror of a host buffer pool (`mirror.rs`):
    /// the pool's file is pages `file_first_ppn..+file_pages` (pid `p` is
    /// page `file_first_ppn + p`), its log ring pages
    /// `log_first_ppn..+log_pages`, whose records the mirror reads from LSN
    /// `log_lsn` on; the pool has `frames` frames. Once per store.
    MirrorConfigure {
        file_first_ppn: u64,
        file_pages: u64,
        log_first_ppn: u64,
        log_pages: u64,
        frames: u64,
        log_lsn: u64,
    },
    /// `MirrorConfigure` of kind heap (`docs/cbm.md`, CBM for the MVCC
    /// engine): the mirror follows the MVCC store's delta-buffer pages, in
    /// `frames` frames of `frame_bytes` (page + 24) of host memory, from
    /// the records of its log ring `log_first_ppn..+log_pages` from LSN
    /// `log_lsn` on. Once per store (again after the mirror is lost).
    MirrorConfigureHeap {
        log_first_ppn: u64,
        log_pages: u64,
        frames: u64,
        frame_bytes: u64,
        log_lsn: u64,
    },
    /// Allocate a range of device DRAM.
    MemoryRangeCreate {
        bytes: u64,
    },
    MemoryRangeDelete {
        range: RangeId,
    },
    /// Host memory -> device memory range.
    MemoryWrite {
        range: RangeId,
        offset: u64,
        data: Vec<u8>,
    },
    /// Device memory range -> host memory.
    MemoryRead {
        range: RangeId,
        offset: u64,
        len: u64,
    },
    /// Bind a slot to a device-defined program (a pre-compiled PE binary).
    ProgramLoad {
        slot: u32,
        name: String,
    },
    /// Activate (or deactivate) the program in a slot.
    ProgramActivate {
        slot: u32,
        active: bool,
    },
    /// Run the active program of `slot` on PEs `0..pes`, each given `params`
    /// and access to `ranges`.
    Execute {
        slot: u32,
        pes: u32,
        params: Vec<u8>,
        ranges: Vec<RangeId>,
    },
}

impl Command {
    pub fn kind(&self) -> &'static str {
        match self {
            Command::Identify => "identify",
            Command::PageRead { .. } => "page_read",
            Command::PageReadRun { .. } => "page_read_run",
            Command::Read { .. } => "read",
            Command::PageWrite { .. } => "page_write",
            Command::Flush => "flush",
            Command::MirrorConfigure { .. } | Command::MirrorConfigureHeap { .. } => "mirror_configure",
            Command::MemoryRangeCreate { .. } => "memory_range_create",
            Command::MemoryRangeDelete { .. } => "memory_range_delete",
            Command::MemoryWrite { .. } => "memory_write",
            Command::MemoryRead { .. } => "memory_read",
            Command::ProgramLoad { .. } => "program_load",
            Command::ProgramActivate { .. } => "program_activate",
            Command::Execute { .. } => "execute",
        }
    }
}

#[derive(Debug, Clone)]
pub enum Reply {
    Done,
    Identify(Box<DeviceInfo>),
    Data(Vec<u8>),
    /// A [`Command::PageReadRun`]'s pages, in page order.
    Pages(Vec<Vec<u8>>),
    Range(RangeId),
    Executed(ExecuteReport),
}

impl Reply {
    pub fn into_data(self) -> Vec<u8> {
        match self {
            Reply::Data(d) => d,
            other => panic!("expected a data reply, got {other:?}"),
        }
    }
}

/// What the device says of itself.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    pub profile: String,
    pub medium_kind: &'static str,
    pub capacity_bytes: u64,
    pub page_bytes: u32,
    pub channels: u32,
    pub chips_per_channel: u32,
    pub pes: u32,
    pub dram_ndp_bytes: u64,
    pub dram_in_use_bytes: u64,
    pub queue_depth: u32,
    pub clock: &'static str,
    pub programs: Vec<String>,
    /// Opened with `DeviceOptions::read_only`: every write is refused.
    pub read_only: bool,
}

/// How one program execution went, on the model's clock.
#[derive(Debug, Clone, Serialize)]
pub struct ExecuteReport {
    pub program: String,
    pub pes: u32,
    pub start_ps: u64,
    pub end_ps: u64,
    /// Each PE's critical path (latencies waited for, compute), in ps.
    pub pe_demand_ps: Vec<u64>,
    /// The resource that decided `end_ps`: `pe N`, `channel N` or `chip N`.
    pub bottleneck: String,
    /// What this execution did to the medium (a slice of the device counters).
    pub medium_reads: u64,
    pub medium_bytes_read: u64,
    pub medium_writes: u64,
    pub medium_bytes_written: u64,
    /// DMA reads of host memory this execution made, and their bytes.
    pub dma_reads: u64,
    pub dma_bytes_read: u64,
}

impl ExecuteReport {
    pub fn modelled_s(&self) -> f64 {
        (self.end_ps - self.start_ps) as f64 / 1e12
    }
}

/// A completed command.
#[derive(Debug)]
pub struct Completion {
    pub id: u64,
    pub kind: &'static str,
    pub result: Result<Reply, DeviceError>,
    /// When the host submitted it and when it completed, on the model's clock.
    pub submitted_ps: u64,
    pub completed_ps: u64,
    /// Compute finished after `completed_ps` (real-time clock only).
    pub late: bool,
}

impl Completion {
    pub fn modelled_s(&self) -> f64 {
        (self.completed_ps - self.submitted_ps) as f64 / 1e12
    }
}

/// The counters and the model clock, read together (a measurement point;
/// not an MVCC snapshot, which is `ndpdb_format::ndp::Snapshot`).
#[derive(Debug, Clone, Serialize)]
pub struct CountersReading {
    pub now_ps: u64,
    pub counters: Counters,
}
