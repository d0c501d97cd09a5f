//! # Native storage manager
//!
//! The host decides where every page goes and keeps the maps that say so, as
//! neoDBMS does on native storage (ICDE'22, section II):
//!
//! ```text
//!   table ──VID──► VID map ──RecordId (lpn, slot)──► L2P map ──ppn──► device page
//!                   (per table)                       (one, global)
//!
//!   new versions ──► delta buffer (pre-reserved logical pages in host memory)
//!                        └── written to the device when all its pages are full
//! ```
//!
//! - **Placement.** Physical pages are allocated append-only in regions: a
//!   region is a run of consecutive physical pages long enough to cover every
//!   channel and chip of the device several times, owned by one object
//!   (a table's heap, its VID map, or the L2P map). Consecutive pages of an
//!   object therefore spread over all channels, which is what lets the PEs
//!   use the device's internal parallelism. Pages are appended; only the
//!   checkpoint's two root slots (physical pages 0 and 1) are written in
//!   place, and garbage collection rewrites a logical page to a new
//!   physical page. Pages given up come back once no durable checkpoint
//!   and no running reader needs them (`reuse.rs`).
//! - **L2P map.** Logical page number → physical page number, kept whole in
//!   host memory and persisted as map pages on the device. Changes not yet
//!   written are the "L2P delta" that an NDP call ships.
//! - **VID map.** Per table, each tuple's newest version (its chain head).
//!   The host keeps it whole in memory, with each head's creator and
//!   tombstone flag, so writers check conflicts without reading pages.
//! - **Delta buffer.** New versions go to a small set of pre-reserved
//!   logical pages in host memory; when all are full they are written to the
//!   device. An NDP call ships the pages not yet written.
//!
//! Freshness of what the device reads is chosen per NDP call ([`Freshness`]):
//! ship the shared state with the call (neoDBMS), write it to the device
//! first, or let the device read the delta pages from host memory through
//! its mirror of the host's delta frames (CBM, `delta_frames.rs`,
//! `docs/cbm.md`).
//!
//! The storage manager does not know transactions: it stores versions and
//! heads that the transaction layer (`ndpdb-txn`) decides on.
//!
//! Where each job lives: the module table in `store.rs`.

mod alloc;
mod cbm;
mod check;
mod checkpoint;
mod delta_frames;
mod error;
mod gc;
mod host_range;
mod lock_order;
mod maps;
mod page_read;
mod read;
mod recovery;
mod reserve;
mod reuse;
mod salvage;
mod scan;
mod store;
mod table;
#[cfg(test)]
mod test_store;
mod update;
mod wal;
mod zones;

pub use alloc::{Headroom, ROOT_PPN};

pub use check::{CheckReport, ERRORS_MAX};
pub use checkpoint::{CommittedHeads, TxnMeta};
pub use delta_frames::DeltaFrameStats;
pub use error::StoreError;
pub use gc::GcStats;
pub use host_range::{HostScan, RangeWalk, Tuples};
pub use recovery::{DroppedRecord, LogLoss, Recovery};
pub use reuse::PageReuseStats;
pub use salvage::{SalvageReport, Unreadable};
pub use scan::{AggregateResult, Freshness, NdpScan, RowsResult, ScanStats};
pub use store::{LogOp, OpKind, Store, StoreOptions};
pub use table::{CHAIN_MAX, Head, Table, TableId};
pub use update::{DEFAULT_POLL_LIMIT, NdpUpdate, NdpUpdateCall, UpdatedTuple};
pub use wal::{UnreadablePage, WalStats};
pub use zones::{ZONE_VIDS, Zone, ZoneBuild, blocks as zone_blocks};

/// The lock-table key of version `version` (its creating transaction) of
/// tuple `vid` of table `table`. Host transactions lock through it, and
/// `ndp.update` builds the same key on the device (`ndpdb_format::lock`).
pub fn tuple_lock_key(table: TableId, vid: u64, version: u64) -> ndpdb_locktable::LockKey {
    ndpdb_locktable::LockKey::new(ndpdb_format::lock::tuple_key_word(table, vid), version)
}
