//! # The emulated native computational-storage device
//!
//! Everything ndpdb does runs against this device, so whether any later
//! figure means something depends on it. Four rules hold by construction:
//!
//! 1. **The host never touches the medium.** The medium (`medium/`) is a
//!    private type of this crate; the only public ways in are [`Command`]s
//!    submitted on a [`QueuePair`], and NDP programs running on the device's
//!    processing elements through a [`PeCtx`]. Byte-granular medium reads exist
//!    only on `PeCtx`. This crate depends on the shared formats and on no host
//!    crate.
//! 2. **Every byte is counted.** Each command moves a 64-byte submission entry
//!    to the device and a 16-byte completion entry back, plus its data; each
//!    medium access and each PE's busy time is counted ([`Counters`]). Counts
//!    are exact and independent of the clock.
//! 3. **Time is a documented model.** Each resource (link direction, medium
//!    channel, flash chip, PE) keeps its reservations; a command reserves
//!    what it uses at the earliest free gap and completes when the last
//!    resource is done (`timing.rs`). The
//!    real-time clock holds completions until their modelled time; the
//!    virtual clock only advances the model (`clock.rs`).
//! 4. **No damaged byte is returned.** Every 512-byte sector of the medium
//!    carries a check code written with it; every read the device makes, for
//!    the host or for a PE, checks it and fails with an unrecovered read error
//!    ([`DeviceError::UnrecoveredRead`]) rather than return damaged bytes
//!    (`medium/check.rs`). Each sector write is atomic, also against a kill
//!    of the process (`medium/journal.rs`).
//!
//! ```text
//!          host                         │            device
//!  QueuePair ── SQE (64 B) + data ─────►│ command runner  ─► medium (device.img, mmap)
//!            ◄─ CQE (16 B) + data ──────│        │           NVM: channels, PE transfers
//!     link: bandwidth + latency,        │        │           flash: channels x chips, tR/tPROG
//!     reservations per direction        │        └─► PEs 0..n run a Program with a PeCtx
//!                                       │            device DRAM: memory ranges, scratch,
//!                                       │            bounded by the profile's NDP budget
//! ```
//!
//! The boundary is checked by the compiler. Outside this crate the medium
//! cannot be named, neither its type nor its module:
//!
//! ```compile_fail
//! use ndpdb_device::medium::Medium;
//! ```
//!
//! nor can the host reach into a device's state (its fields are private), so
//! medium bytes are reachable only by a program the device runs, through the
//! `PeCtx` the device makes for it (`PeCtx::new` is crate-private):
//!
//! ```compile_fail
//! fn peek(dev: &ndpdb_device::Device) { let _ = &dev.inner; }
//! ```
//!
//! while the command interface is what the host uses:
//!
//! ```
//! use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile};
//! let dir = tempfile::tempdir().unwrap();
//! let profile = Profile::load("u280-nvm").unwrap();
//! let dev = Device::create(dir.path(), profile, Some(1 << 20), DeviceOptions::with_clock(ClockKind::Virtual)).unwrap();
//! let page = dev.queue_pair().call(Command::PageRead { ppn: 0, host_addr: None }).unwrap().into_data();
//! assert_eq!(page.len(), 8192);
//! assert_eq!(dev.counters().link_bytes_to_host, 8192 + ndpdb_device::CQE_BYTES);
//! ```
//!
//! The parameters come from a hardware [`Profile`] (TOML, `profiles/`), and
//! `docs/device-model.md` walks through the model with the papers' numbers.

mod chain;
mod clock;
mod coherent;
mod columns;
mod command;
mod counters;
mod device;
mod error;
mod execute;
mod host_memory;
pub mod kv_lookup;
mod medium;
mod memory;
pub mod mirror;
mod mirror_log;
mod ndp_snapshot;
mod ndp_update;
mod pe;
mod process;
pub mod profile;
pub mod programs;
mod queue;
mod timing;

pub use clock::ClockKind;
pub use coherent::DeviceWords;
pub use command::{
    Command, Completion, CountersReading, DeviceInfo, ExecuteReport, PARAMS_BYTES_MAX, PROGRAM_SLOTS, RUN_BYTES_MAX,
    RangeId, Reply, SECTOR_BYTES,
};
pub use counters::{CQE_BYTES, Counters, SQE_BYTES};
pub use device::{DEFAULT_CAPACITY_MAX, Device, DeviceOptions, Faults, IMAGE_FILE, KillPoint, SectorKill};
pub use error::DeviceError;
pub use host_memory::HostMemory;
pub use memory::RANGES_MAX;
pub use pe::{PeCtx, Program, ProgramFn, ProgramLibrary, Scratch, thread_cpu_ns};
pub use profile::{Profile, ProfileError};
pub use queue::{QueuePair, ThreadIo, thread_io};

/// Packs u64 parameters for [`Command::Execute`] (little-endian).
pub fn params(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}
