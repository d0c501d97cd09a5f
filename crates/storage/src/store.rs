//! The store: one device, the maps that say where every page is, the
//! tables, and the write-ahead log. Its jobs live in their own modules:
//!
//! | module | job |
//! |---|---|
//! | `alloc.rs` | physical pages in per-object regions; who may take the checkpoint's reserve |
//! | `reserve.rs` | how many pages the next checkpoint may need (a pure function) |
//! | `reuse.rs` | when a page given up may be written again (a pure lifecycle) |
//! | `maps.rs` | the L2P map; writing heap and map pages |
//! | `table.rs` | tables, their heads (VID map) and delta buffers; writing versions |
//! | `delta_frames.rs`, `cbm.rs` | delta pages in frames the device reads; CBM calls and the mirror |
//! | `read.rs` | point reads and the page cache |
//! | `scan.rs`, `update.rs` | NDP calls and host-only scans; update-NDP |
//! | `gc.rs`, `check.rs` | garbage collection; the integrity check |
//! | `checkpoint.rs`, `wal.rs` | checkpoints, restoring one and replaying the log; the log ring |
//! | `recovery.rs` | opening: which checkpoint, what of the log, what damage costs |
//! | `salvage.rs` | reading every readable row of a damaged table (`ndpdb dump`) |
//! | `lock_order.rs` | the store's mutexes and the order they are taken in |
//!
//! This file holds the [`Store`] itself, creating one, and the operations
//! the log records (tables, commits, pinned snapshots).

use std::borrow::Cow;
use std::sync::Arc;

use ndpdb_device::{Command, Device, DeviceInfo, QueuePair};
use ndpdb_format::page::map_entries_per_page;
use ndpdb_format::schema::{Column, Layout, LayoutDescriptor};
use ndpdb_format::wal::{Record, TableDef};
use ndpdb_locktable::LockTable;
use parking_lot::Mutex;

use crate::alloc::Allocator;
use crate::checkpoint::Checkpoints;
use crate::lock_order::{Level, OrderedMutex};
use crate::maps::Maps;
use crate::read::PageCache;
use crate::reserve::StoreShape;
use crate::reuse::PageReaders;
use crate::wal::{LogGeometry, RecordKind, Wal, WalStats};

// The store's vocabulary, for the modules that name it from here.
pub(crate) use crate::alloc::{AllocClass, heap_object};
pub(crate) use crate::error::{Result, StoreError};
pub(crate) use crate::table::{Head, Table, TableId, TableState};

#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Pages of a table's delta buffer; when all are full they are written.
    pub delta_pages: usize,
    /// Pages of the host's cache of written heap pages (for point reads by
    /// writers). Scans never use it: the block stack reads every page.
    pub cache_pages: usize,
    /// Map entries (VID map and L2P map, each) allowed to wait in host
    /// memory; beyond this, writing the delta buffer also writes the dirty
    /// map pages, which bounds what an NDP call must ship.
    pub map_delta_max: usize,
    /// Bytes of the tuple lock table shared with the device (ccSLT): a
    /// power of two, 64-byte buckets.
    pub lock_table_bytes: usize,
    /// Bytes of the write-ahead log's ring, for a new database (0: an
    /// eighth of the device, at most 256 MiB). An opened database keeps the
    /// size it was created with.
    pub log_bytes: u64,
    /// Open without ever writing to the device: recovery replays the log
    /// into host memory only (no log cut, no checkpoint, no page written;
    /// the delta buffer grows instead of being written), and every call
    /// that would write fails with [`StoreError::ReadOnly`]. For inspecting
    /// an image (`ndpdb check`, `ndpdb db info`, `ndpdb dump`).
    pub read_only: bool,
    /// Open even when recovery finds committed records it cannot replay
    /// (damage in the middle of the log, an older checkpoint whose pages
    /// were reused), without them: what is dropped is listed in
    /// `Recovery::lost` and `Recovery::damage`. Without it such an open
    /// fails with [`StoreError::LogDamaged`] or [`StoreError::Corrupt`].
    pub accept_loss: bool,
    /// Frames of host memory the device may read delta pages from (CBM
    /// freshness, `delta_frames.rs`): one per delta page started after the
    /// first CBM call, until its page is written and no CBM call begun
    /// before the write runs. Allocated at the first CBM call.
    pub delta_frames: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            delta_pages: 32,
            cache_pages: 4096,
            map_delta_max: 8192,
            lock_table_bytes: ndpdb_locktable::DEFAULT_TABLE_BYTES,
            log_bytes: 0,
            read_only: false,
            accept_loss: false,
            delta_frames: 256,
        }
    }
}

/// The device programs NDP calls run, and the lock table they share with
/// host transactions.
pub(crate) struct Ndp {
    /// Program slot holding `ndp.snapshot`.
    pub snapshot_slot: u32,
    /// Program slot holding `ndp.update`.
    pub update_slot: u32,
    /// The tuple lock table, in memory the device reaches coherently when
    /// its profile has a coherent interconnect.
    pub lock_table: Arc<LockTable>,
}

/// The store. Its mutexes are taken in the order `lock_order.rs` states.
pub struct Store {
    dev: Device,
    /// The store's own queue pair: point reads, page writes, NDP calls.
    pub(crate) qp: OrderedMutex<QueuePair>,
    pub(crate) page_bytes: usize,
    /// Entries of a VID map or L2P map page.
    pub(crate) per_page: usize,
    pub(crate) opts: StoreOptions,
    /// Placement: the L2P map, the allocator, page reuse (`maps.rs`).
    pub(crate) maps: OrderedMutex<Maps>,
    /// The running readers of physical pages, which keep pages they may
    /// know in limbo (`reuse.rs`).
    pub(crate) page_readers: OrderedMutex<PageReaders>,
    /// What the checkpoint's reserve is estimated from (`reserve.rs`).
    pub(crate) shape: StoreShape,
    /// The catalog.
    pub(crate) tables: OrderedMutex<Vec<Arc<Table>>>,
    /// Checkpoints written and their pages (`checkpoint.rs`).
    pub(crate) checkpoints: Checkpoints,
    /// Written heap pages for point reads (`read.rs`).
    pub(crate) cache: PageCache,
    pub(crate) ndp: Ndp,
    /// The write-ahead log (`wal.rs`), with a queue pair of its own: a
    /// commit must not wait behind an NDP call (an update-NDP call may be
    /// waiting for that very transaction's lock).
    pub(crate) wal: Wal,
    pub(crate) wal_qp: Mutex<QueuePair>,
    /// CBM freshness: the delta frames and the mirror (`delta_frames.rs`).
    pub(crate) cbm: Cbm,
}

/// The store's side of CBM freshness: the delta frames, once the first CBM
/// call configured the device's mirror, and the LSN it reads the log from.
pub(crate) struct Cbm {
    pub frames: std::sync::OnceLock<crate::delta_frames::DeltaFrames>,
    /// The LSN the mirror reads the log from (`cbm::NO_MIRROR`: not
    /// configured, or lost).
    pub mirror_lsn: std::sync::atomic::AtomicU64,
    /// Held while the mirror is configured (with none of the store's locks).
    pub configuring: Mutex<()>,
}

impl Default for Cbm {
    fn default() -> Cbm {
        Cbm {
            frames: std::sync::OnceLock::new(),
            mirror_lsn: std::sync::atomic::AtomicU64::new(crate::cbm::NO_MIRROR),
            configuring: Mutex::new(()),
        }
    }
}

/// Pages of a region: enough to cover every channel and chip four times.
fn region_pages(info: &DeviceInfo) -> u64 {
    u64::from(info.channels) * u64::from(info.chips_per_channel) * 4
}

/// Where a new database's log goes: right after region 0 (the root slots),
/// `log_bytes` (0: an eighth of the device, at most 256 MiB) rounded up to
/// whole regions.
fn log_geometry(info: &DeviceInfo, log_bytes: u64) -> LogGeometry {
    let (page_bytes, region) = (u64::from(info.page_bytes), region_pages(info));
    let log_bytes = match log_bytes {
        0 => (info.capacity_bytes / 8).min(256 << 20),
        b => b,
    };
    let pages = log_bytes.div_ceil(page_bytes).max(2).div_ceil(region) * region;
    LogGeometry { start: region, pages, page_bytes }
}

impl Ndp {
    /// Loads and activates the NDP programs (on a device with PEs) and
    /// shares the lock table with the device if it can reach it coherently.
    fn load(dev: &Device, qp: &mut QueuePair, pes: u32, lock_table_bytes: usize) -> Result<Ndp> {
        let (snapshot_slot, update_slot) = (0, 1);
        if pes > 0 {
            for (slot, name) in [(snapshot_slot, "ndp.snapshot"), (update_slot, "ndp.update")] {
                qp.call(Command::ProgramLoad { slot, name: name.into() })?;
                qp.call(Command::ProgramActivate { slot, active: true })?;
            }
        }
        let lock_table = Arc::new(
            LockTable::with_bytes(lock_table_bytes)
                .map_err(|e| StoreError::InvalidInput(format!("lock table size: {e}")))?,
        );
        if dev.profile().coherent.is_some() {
            dev.attach_lock_table(lock_table.clone())?;
        }
        Ok(Ndp { snapshot_slot, update_slot, lock_table })
    }
}

impl Store {
    /// A store on a freshly created device image.
    pub fn new(dev: Device, opts: StoreOptions) -> Result<Store> {
        let info = dev.info();
        let page_bytes = info.page_bytes as usize;
        let mut qp = dev.queue_pair();
        let ndp = Ndp::load(&dev, &mut qp, info.pes, opts.lock_table_bytes)?;
        let total_pages = info.capacity_bytes / page_bytes as u64;
        let geo = log_geometry(&info, opts.log_bytes);
        let region = region_pages(&info);
        if region + geo.pages + region >= total_pages {
            return Err(StoreError::DeviceFull { pages: total_pages, waiting: 0, reserved: 0 });
        }
        let alloc = Allocator::new(region + geo.pages, region, total_pages);
        let wal_qp = dev.queue_pair();
        Ok(Store {
            dev,
            qp: OrderedMutex::new(Level::QueuePair, qp),
            page_bytes,
            per_page: map_entries_per_page(page_bytes),
            maps: OrderedMutex::new(Level::Maps, Maps::new(alloc)),
            page_readers: OrderedMutex::new(Level::PageReaders, PageReaders::default()),
            shape: StoreShape::default(),
            tables: OrderedMutex::new(Level::Catalog, Vec::new()),
            checkpoints: Checkpoints::default(),
            cache: PageCache::new(opts.cache_pages),
            opts,
            ndp,
            wal: Wal::new(geo, 0, 0, Vec::new()),
            wal_qp: Mutex::new(wal_qp),
            cbm: Cbm::default(),
        })
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Whether the store was opened read-only (`StoreOptions::read_only`).
    pub fn read_only(&self) -> bool {
        self.opts.read_only
    }

    /// Fails with [`StoreError::ReadOnly`] on a read-only store: every path
    /// that writes to the device asks first (allocating a page, the log, a
    /// checkpoint, `Flush`, GC, update-NDP).
    pub(crate) fn writable(&self, what: &'static str) -> Result<()> {
        if self.opts.read_only { Err(StoreError::ReadOnly { what }) } else { Ok(()) }
    }

    /// The tuple lock table host transactions and device programs share.
    pub fn lock_table(&self) -> &Arc<LockTable> {
        &self.ndp.lock_table
    }

    /// Makes the device's image durable (`Flush`). Experiments call it before
    /// they time queries, so that the host's write-back of the emulated
    /// medium does not run during the measurement.
    pub fn sync_device(&self) -> Result<()> {
        self.writable("a device flush")?;
        self.qp.lock().call(Command::Flush)?;
        Ok(())
    }

    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    pub fn create_table(&self, name: &str, columns: Vec<Column>) -> Result<Arc<Table>> {
        self.writable("creating a table")?;
        let table = self.create_table_unlogged(name, columns)?;
        let mut payload = Vec::new();
        encode_table_record(&mut payload, table.id, name, &table.layout, &table.columns);
        crate::lock_order::assert_none_held();
        let end = self.wal.append(RecordKind::CreateTable, &payload)?;
        self.wal.flush_to(end, &self.wal_qp)?;
        Ok(table)
    }

    /// Makes a committed transaction's writes durable in the log; returns
    /// once they are on the medium (group commit, `wal.rs`).
    pub fn log_commit(&self, txn: u64, ops: &[LogOp]) -> Result<()> {
        self.writable("a commit")?;
        let record = Record::Commit { txn, ops: Cow::Borrowed(ops) };
        let end = self.wal.append(record.kind(), &record.encode())?;
        self.wal.flush_to(end, &self.wal_qp)
    }

    /// Logs a pinned snapshot (`drop`: its removal), durably.
    pub fn log_snapshot(&self, id: u64, xmax: u64, drop: bool) -> Result<()> {
        self.writable("pinning or dropping a snapshot")?;
        let record = if drop { Record::DropSnapshot { id, xmax } } else { Record::PinSnapshot { id, xmax } };
        let end = self.wal.append(record.kind(), &record.encode())?;
        self.wal.flush_to(end, &self.wal_qp)
    }

    /// Log traffic since the store was opened.
    pub fn wal_stats(&self) -> WalStats {
        self.wal.stats()
    }

    /// Bytes of the log since the last checkpoint, and the ring's size.
    pub fn wal_usage(&self) -> (u64, u64) {
        (self.wal.used(), self.wal.geo.capacity())
    }
}

/// What a transaction did to one tuple, and one write of a committed
/// transaction, as the log records them (`ndpdb_format::wal`).
pub use ndpdb_format::wal::{LogOp, OpKind};

/// A create-table record's payload (`ndpdb_format::wal::Record::CreateTable`).
pub(crate) fn encode_table_record(out: &mut Vec<u8>, id: TableId, name: &str, layout: &Layout, columns: &[Column]) {
    let def = TableDef {
        id,
        name: name.to_owned(),
        layout_descriptor: LayoutDescriptor::encode(layout),
        column_names: columns.iter().map(|c| c.name.clone()).collect(),
    };
    out.extend_from_slice(&Record::CreateTable(def).encode());
}
