//! The store: placement, the L2P map, tables with their VID maps and delta
//! buffers, and reads of single records.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ndpdb_device::{Command, Device, DeviceError, QueuePair, RangeId};
use ndpdb_format::FormatError;
use ndpdb_format::page::{self, HeapPage, PageKind, RecordId, map_entries_per_page};
use ndpdb_format::record::{HEADER_BYTES, VersionHeader};
use ndpdb_format::schema::{Column, Layout, LayoutDescriptor, Value};
use ndpdb_format::wal::{Record, TableDef};
use ndpdb_locktable::LockTable;

use crate::wal::{LogGeometry, RecordKind, Wal, WalStats};
use parking_lot::Mutex;

pub type TableId = u32;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("corrupt data: {0}")]
    Corrupt(String),
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error(
        "the device is full: no free physical pages left of {pages}{}{}; create the database with a larger capacity",
        reserve_hint(*reserved),
        waiting_hint(*waiting)
    )]
    DeviceFull {
        pages: u64,
        /// Superseded pages that are not free yet: a durable checkpoint
        /// (and the end of older readers) would free them.
        waiting: u64,
        /// Free pages held back for the next checkpoint, which only it may
        /// write (`Budget` in `store.rs`); 0 when the checkpoint itself ran
        /// out.
        reserved: u64,
    },
    #[error(
        "the write-ahead log is full ({used} of {bytes} bytes since the last checkpoint, {needed} more needed): \
         end open transactions so that a checkpoint can run, or create the database with a larger log"
    )]
    LogFull { bytes: u64, needed: u64, used: u64 },
}

/// The part of a full device's message about the checkpoint's reserve.
fn reserve_hint(reserved: u64) -> String {
    match reserved {
        0 => String::new(),
        n => format!(" for writes; {n} are held back so that a checkpoint can still run"),
    }
}

/// The part of a full device's message about pages on their way back.
fn waiting_hint(waiting: u64) -> String {
    match waiting {
        0 => String::new(),
        n => format!(
            " ({n} superseded pages are not free yet: a checkpoint frees them once it is durable and readers that \
             began before it have ended; garbage collection gives up more)"
        ),
    }
}

impl StoreError {
    fn corrupt(what: impl std::fmt::Display, e: FormatError) -> StoreError {
        StoreError::Corrupt(format!("{what}: {e}"))
    }
}

pub(crate) type Result<T> = std::result::Result<T, StoreError>;

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
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            delta_pages: 32,
            cache_pages: 4096,
            map_delta_max: 8192,
            lock_table_bytes: ndpdb_locktable::DEFAULT_TABLE_BYTES,
            log_bytes: 0,
        }
    }
}

/// A tuple's newest version as the host knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub rid: RecordId,
    pub create_ts: u64,
    pub tombstone: bool,
}

impl Head {
    pub const NONE: Head = Head { rid: RecordId::NONE, create_ts: 0, tombstone: false };
}

pub struct Table {
    pub id: TableId,
    pub name: String,
    pub columns: Vec<Column>,
    pub layout: Layout,
    /// Device memory range holding the layout descriptor, written at creation.
    pub(crate) layout_range: RangeId,
    pub(crate) state: Mutex<TableState>,
}

pub(crate) struct TableState {
    pub heads: Vec<Head>,
    /// VIDs whose head changed since the VID map pages were last written.
    pub vid_dirty: BTreeSet<u64>,
    /// Logical pages of the VID map, in order.
    pub vid_pages: Vec<u64>,
    /// Delta-buffer pages not yet written; the last one is being filled.
    pub delta: Vec<HeapPage>,
    /// Heap pages written to the device, in order.
    pub heap_pages: Vec<u64>,
}

impl Table {
    pub fn vids(&self) -> u64 {
        self.state.lock().heads.len() as u64
    }

    pub fn head(&self, vid: u64) -> Option<Head> {
        self.state.lock().heads.get(vid as usize).copied()
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// The L2P map and the allocator. Lock order: a table's state, then the
/// maps, each released before a device command is waited for, except that
/// reading a page (`read_page`) looks the map up while holding a queue pair.
pub(crate) struct Maps {
    pub l2p: Vec<u64>,
    pub l2p_dirty: BTreeSet<u64>,
    /// Physical pages of the L2P map pages, in order (u64::MAX: not written).
    pub l2p_pages: Vec<u64>,
    pub next_lpn: u64,
    pub alloc: Allocator,
    /// Physical pages given up, on their way back to `alloc`'s callers.
    pub reuse: PageReuse,
    /// The last checkpoint's size, from which the next one's is estimated.
    pub last_checkpoint: CheckpointSize,
}

/// Free physical pages against the next checkpoint's reserve
/// ([`Store::headroom`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headroom {
    /// Free pages ordinary writes may still take.
    pub writes: u64,
    /// Free pages held back for the next checkpoint.
    pub reserve: u64,
    /// Pages given up that only a checkpoint makes free again.
    pub superseded: u64,
}

/// Who asks for a physical page, and so whether it may take the pages held
/// back for the next checkpoint.
///
/// Pages are written once, and the pages that writes supersede come back
/// only through a durable checkpoint ([`PageReuse`]), which itself writes
/// pages: the delta buffers, the dirty VID-map and L2P pages, and its blob.
/// If ordinary writes could take the last free page, a full device could
/// never checkpoint again, and so never get a superseded page back. So
/// [`Budget::Write`] allocations leave [`Store::checkpoint_reserve`] pages
/// free, an upper bound of what the next checkpoint writes; delta-buffer
/// pages are admitted against it when they are started
/// ([`Store::admit_delta_page`]) and written as [`Budget::Buffered`]; and
/// only [`Budget::Checkpoint`] allocations (everything `Store::checkpoint`
/// writes, and the log replay at open) may take the reserve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    /// Leaves the reserve free, and one page more.
    Write,
    /// A delta-buffer page that was admitted, and so counted in the
    /// reserve, when it was started: leaves the reserve (less itself) free.
    Buffered,
    /// May take the reserve: the checkpoint, and recovery's replay.
    Checkpoint,
}

/// What the last checkpoint wrote or restored, for
/// [`Store::checkpoint_reserve`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CheckpointSize {
    /// Bytes of its blob.
    pub blob_bytes: u64,
    /// Tuples (VID map entries of all tables) and logical pages it recorded.
    pub tuples: u64,
    pub lpns: u64,
}

impl Maps {
    /// Pages an allocation can have now: never handed out, or free again
    /// (not counting limbo that may be released).
    fn free_now(&self) -> u64 {
        self.alloc.fresh_pages() + self.reuse.free_pages()
    }
}

/// Physical pages that writes, map flushes and garbage collection give up,
/// and when each may be written again. A page moves down this list:
///
/// ```text
///   superseded ──checkpoint captures the maps──► awaiting
///   awaiting ──that checkpoint's root is durable──► limbo (epoch e)
///   limbo ──every page reader that began by epoch e has ended──► free
///   free (per object) ──► allocate
/// ```
///
/// - **superseded**: the maps no longer point at it, but the newest durable
///   checkpoint may: recovery would read it.
/// - **awaiting**: a checkpoint captured the maps after it was superseded,
///   so that checkpoint does not reference it; the one before may.
/// - **limbo**: no durable checkpoint references it (a torn root falls back
///   to the newest durable checkpoint, never an older one). A page reader
///   that began before it was superseded (an NDP call carries physical page
///   numbers; a scan resolves them before it reads) may still read it.
/// - **free**: no reader that could know the page is running
///   ([`PageReaders`]); it is handed out again, to the object whose region
///   it is in, so that placement stays per object.
///
/// The lists live in memory: at open, `Store::rebuild_free_pages` finds
/// every allocated page the restored checkpoint does not reference free
/// (`docs/storage.md`, "Reusing physical pages").
#[derive(Debug, Default)]
pub(crate) struct PageReuse {
    superseded: Vec<(u64, u64)>,
    awaiting: Vec<(u64, u64)>,
    /// (epoch it entered limbo in, object, ppn), in entry order.
    limbo: std::collections::VecDeque<(u64, u64, u64)>,
    free: HashMap<u64, Vec<u64>>,
    /// Pages handed out again so far.
    reused: u64,
}

/// The readers of physical pages that are running, by the epoch each began
/// in: everything that reads pages whose numbers it resolved earlier (NDP
/// calls, which carry them; scans; point reads) holds a [`PageReader`] from
/// before it resolves them until its last read. A durable checkpoint ends
/// an epoch ([`PageReuse::durable`]).
#[derive(Debug, Default)]
pub(crate) struct PageReaders {
    epoch: u64,
    running: std::collections::BTreeMap<u64, usize>,
}

/// One running reader of physical pages ([`PageReaders`]).
pub(crate) struct PageReader<'a> {
    readers: &'a Mutex<PageReaders>,
    epoch: u64,
}

impl Drop for PageReader<'_> {
    fn drop(&mut self) {
        let mut r = self.readers.lock();
        if let Some(n) = r.running.get_mut(&self.epoch) {
            *n -= 1;
            if *n == 0 {
                r.running.remove(&self.epoch);
            }
        }
    }
}

/// How many physical pages are at each step of page reuse (`PageReuse` in
/// `store.rs`, `docs/storage.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageReuseStats {
    pub superseded: u64,
    pub awaiting: u64,
    pub limbo: u64,
    pub free: u64,
    /// Pages handed out again since the store was opened.
    pub reused: u64,
}

impl PageReuse {
    /// `object`'s page `ppn` is no longer mapped (`u64::MAX`: nothing was).
    pub(crate) fn supersede(&mut self, object: u64, ppn: u64) {
        if ppn != u64::MAX {
            self.superseded.push((object, ppn));
        }
    }

    /// A checkpoint has captured the maps: nothing superseded so far is in it.
    pub(crate) fn capture(&mut self) {
        self.awaiting.append(&mut self.superseded);
    }

    /// A checkpoint that captured the maps is durable; readers that begin
    /// from now on are in a later epoch than `epoch`.
    pub(crate) fn durable(&mut self, epoch: u64) {
        self.limbo.extend(self.awaiting.drain(..).map(|(object, ppn)| (epoch, object, ppn)));
    }

    /// Frees the pages in limbo that no running reader can know: those that
    /// entered it before the oldest running reader's epoch (all of them if
    /// none runs).
    fn release_limbo(&mut self, oldest_reader: Option<u64>) {
        while let Some(&(epoch, object, ppn)) = self.limbo.front() {
            if oldest_reader.is_some_and(|r| r <= epoch) {
                break;
            }
            self.limbo.pop_front();
            self.free.entry(object).or_default().push(ppn);
        }
    }

    /// Free pages, of every object.
    fn free_pages(&self) -> u64 {
        self.free.values().map(|f| f.len() as u64).sum()
    }

    /// A free page of `object`'s, or with `any`, of any object's.
    fn take(&mut self, object: u64, any: bool) -> Option<u64> {
        let ppn = match self.free.get_mut(&object).and_then(Vec::pop) {
            Some(p) => Some(p),
            None if any => self.free.values_mut().find_map(Vec::pop),
            None => None,
        }?;
        self.reused += 1;
        Some(ppn)
    }

    /// Pages found free when the store was opened (`rebuild_free_pages`).
    pub(crate) fn restore_free(&mut self, pages: Vec<(u64, u64)>) {
        for (object, ppn) in pages {
            self.free.entry(object).or_default().push(ppn);
        }
    }

    pub(crate) fn stats(&self) -> PageReuseStats {
        PageReuseStats {
            superseded: self.superseded.len() as u64,
            awaiting: self.awaiting.len() as u64,
            limbo: self.limbo.len() as u64,
            free: self.free.values().map(|f| f.len() as u64).sum(),
            reused: self.reused,
        }
    }
}

/// Physical pages of checkpoint blobs. Those of the newest durable
/// checkpoint are what recovery reads; once a newer checkpoint is durable
/// (its root written and flushed), they are free for the next one. A torn
/// root falls back to the newest durable checkpoint, never to an older one,
/// so that is safe. After a restart, older checkpoints' pages are found
/// free at open with every other unreferenced page (`rebuild_free_pages`).
#[derive(Debug, Default)]
pub(crate) struct CheckpointPages {
    pub durable: Vec<u64>,
    pub free: Vec<u64>,
}

/// Append-only physical allocation in per-object regions.
pub(crate) struct Allocator {
    pub next_region: u64,
    pub region_pages: u64,
    pub total_pages: u64,
    pub cursors: HashMap<u64, (u64, u64)>,
}

/// Objects that own regions: tables' heaps and VID maps, and the L2P map.
pub(crate) fn heap_object(t: TableId) -> u64 {
    u64::from(t) << 1
}
pub(crate) fn vid_object(t: TableId) -> u64 {
    u64::from(t) << 1 | 1
}
pub(crate) const L2P_OBJECT: u64 = u64::MAX;
pub(crate) const META_OBJECT: u64 = u64::MAX - 1;

/// Versions a chain may have before a walk calls it corrupt (a cycle).
pub const CHAIN_MAX: usize = 1 << 24;

/// Physical page of the root page (`ndpdb_format::meta::Root`); the rest of
/// the first region stays unused so that regions keep their alignment.
pub const ROOT_PPN: u64 = 0;

impl Allocator {
    /// Pages never handed out: the rest of every object's region, and the
    /// regions not begun.
    fn fresh_pages(&self) -> u64 {
        let in_regions: u64 = self.cursors.values().map(|&(next, end)| end - next).sum();
        in_regions + self.total_pages.saturating_sub(self.next_region)
    }

    pub(crate) fn allocate(&mut self, object: u64) -> Result<u64> {
        let (next, end) = self.cursors.get(&object).copied().unwrap_or((0, 0));
        if next < end {
            self.cursors.insert(object, (next + 1, end));
            return Ok(next);
        }
        let start = self.next_region;
        let len = self.region_pages.min(self.total_pages.saturating_sub(start));
        if len == 0 {
            // No region left to begin: the rest of another object's region
            // (the object with the lowest number, so runs repeat). Every
            // fresh page serves whoever needs one last, which is what
            // `fresh_pages` and the checkpoint's reserve count on.
            let other = self.cursors.iter().filter(|(_, (n, e))| n < e).map(|(&o, _)| o).min();
            let Some(other) = other else {
                return Err(StoreError::DeviceFull { pages: self.total_pages, waiting: 0, reserved: 0 });
            };
            let (n, e) = self.cursors[&other];
            self.cursors.insert(other, (n + 1, e));
            return Ok(n);
        }
        self.next_region += len;
        self.cursors.insert(object, (start + 1, start + len));
        Ok(start)
    }
}

pub struct Store {
    dev: Device,
    pub(crate) qp: Mutex<QueuePair>,
    pub(crate) page_bytes: usize,
    pub(crate) per_page: usize,
    pub(crate) maps: Mutex<Maps>,
    pub(crate) tables: Mutex<Vec<Arc<Table>>>,
    /// Checkpoints written to this image so far.
    pub(crate) generation: Mutex<u64>,
    /// The blob and index pages of the newest durable checkpoint, and pages
    /// of older checkpoints that the next ones reuse (`checkpoint.rs`).
    /// Lock order: the maps, then this (`checkpoint_reserve`).
    pub(crate) checkpoint_pages: Mutex<CheckpointPages>,
    /// Tuples of all tables (VIDs handed out), and tables: the shape the
    /// checkpoint reserve is estimated from (read under the maps' lock,
    /// which cannot take the tables' locks).
    pub(crate) tuples: AtomicU64,
    pub(crate) table_count: AtomicU64,
    /// Delta-buffer pages started and not yet written, of all tables.
    pub(crate) delta_buffered: AtomicU64,
    /// Free pages the running or last checkpoint took (reset when one
    /// begins): what the reserve must cover.
    pub(crate) checkpoint_allocated: AtomicU64,
    /// The running readers of physical pages, which keep pages they may
    /// know in limbo ([`PageReuse`]). Lock order: the maps, then this.
    page_readers: Mutex<PageReaders>,
    cache: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
    opts: StoreOptions,
    /// Program slot holding `ndp.snapshot`.
    pub(crate) snapshot_slot: u32,
    /// Program slot holding `ndp.update`.
    pub(crate) update_slot: u32,
    /// The tuple lock table, in memory the device reaches coherently when
    /// its profile has a coherent interconnect.
    lock_table: Arc<LockTable>,
    /// The write-ahead log (`wal.rs`), with a queue pair of its own: a
    /// commit must not wait behind an NDP call (an update-NDP call may be
    /// waiting for that very transaction's lock).
    pub(crate) wal: Wal,
    pub(crate) wal_qp: Mutex<QueuePair>,
}

impl Store {
    /// A store on a freshly created device image.
    pub fn new(dev: Device, opts: StoreOptions) -> Result<Store> {
        let info = dev.info();
        let page_bytes = info.page_bytes as usize;
        let region_pages = u64::from(info.channels) * u64::from(info.chips_per_channel) * 4;
        let mut qp = dev.queue_pair();
        let (snapshot_slot, update_slot) = (0, 1);
        if info.pes > 0 {
            for (slot, name) in [(snapshot_slot, "ndp.snapshot"), (update_slot, "ndp.update")] {
                qp.call(Command::ProgramLoad { slot, name: name.into() })?;
                qp.call(Command::ProgramActivate { slot, active: true })?;
            }
        }
        let lock_table = Arc::new(
            LockTable::with_bytes(opts.lock_table_bytes)
                .map_err(|e| StoreError::InvalidInput(format!("lock table size: {e}")))?,
        );
        if dev.profile().coherent.is_some() {
            dev.attach_lock_table(lock_table.clone())?;
        }
        let total_pages = info.capacity_bytes / page_bytes as u64;
        // Region 0 holds the root slots; the log's ring follows it.
        let log_bytes = match opts.log_bytes {
            0 => (info.capacity_bytes / 8).min(256 << 20),
            b => b,
        };
        let log_pages = log_bytes.div_ceil(page_bytes as u64).max(2).div_ceil(region_pages) * region_pages;
        let geo = LogGeometry { start: region_pages, pages: log_pages, page_bytes: page_bytes as u64 };
        let maps = Maps {
            l2p: Vec::new(),
            l2p_dirty: BTreeSet::new(),
            l2p_pages: Vec::new(),
            next_lpn: 0,
            reuse: PageReuse::default(),
            last_checkpoint: CheckpointSize::default(),
            alloc: Allocator {
                next_region: region_pages + log_pages,
                region_pages,
                total_pages,
                cursors: HashMap::new(),
            },
        };
        if region_pages + log_pages + region_pages >= total_pages {
            return Err(StoreError::DeviceFull { pages: total_pages, waiting: 0, reserved: 0 });
        }
        let wal_qp = dev.queue_pair();
        Ok(Store {
            dev,
            qp: Mutex::new(qp),
            page_bytes,
            per_page: map_entries_per_page(page_bytes),
            maps: Mutex::new(maps),
            tables: Mutex::new(Vec::new()),
            generation: Mutex::new(0),
            checkpoint_pages: Mutex::new(CheckpointPages::default()),
            tuples: AtomicU64::new(0),
            table_count: AtomicU64::new(0),
            delta_buffered: AtomicU64::new(0),
            checkpoint_allocated: AtomicU64::new(0),
            page_readers: Mutex::new(PageReaders::default()),
            cache: Mutex::new(HashMap::new()),
            opts,
            snapshot_slot,
            update_slot,
            lock_table,
            wal: Wal::new(geo, 0, 0, Vec::new()),
            wal_qp: Mutex::new(wal_qp),
        })
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The tuple lock table host transactions and device programs share.
    pub fn lock_table(&self) -> &Arc<LockTable> {
        &self.lock_table
    }

    /// Makes the device's image durable (`Flush`). Experiments call it before
    /// they time queries, so that the host's write-back of the emulated
    /// medium does not run during the measurement.
    pub fn sync_device(&self) -> Result<()> {
        self.qp.lock().call(Command::Flush)?;
        Ok(())
    }

    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    pub fn create_table(&self, name: &str, columns: Vec<Column>) -> Result<Arc<Table>> {
        let table = self.create_table_unlogged(name, columns)?;
        let mut payload = Vec::new();
        encode_table_record(&mut payload, table.id, name, &table.layout, &table.columns);
        let end = self.wal.append(RecordKind::CreateTable, &payload)?;
        self.wal.flush_to(end, &self.wal_qp)?;
        Ok(table)
    }

    pub(crate) fn create_table_unlogged(&self, name: &str, columns: Vec<Column>) -> Result<Arc<Table>> {
        let layout = Layout::new(&columns).map_err(|e| StoreError::InvalidInput(e.to_string()))?;
        let mut tables = self.tables.lock();
        if tables.iter().any(|t| t.name == name) {
            return Err(StoreError::InvalidInput(format!("table {name} already exists")));
        }
        let layout_range = self.layout_range(&LayoutDescriptor::encode(&layout))?;
        let table = Arc::new(Table {
            id: tables.len() as TableId + 1,
            name: name.to_owned(),
            columns,
            layout,
            layout_range,
            state: Mutex::new(TableState {
                heads: Vec::new(),
                vid_dirty: BTreeSet::new(),
                vid_pages: Vec::new(),
                delta: Vec::new(),
                heap_pages: Vec::new(),
            }),
        });
        tables.push(table.clone());
        self.table_count.fetch_add(1, Ordering::Relaxed);
        Ok(table)
    }

    /// Makes a committed transaction's writes durable in the log; returns
    /// once they are on the medium (group commit, `wal.rs`).
    pub fn log_commit(&self, txn: u64, ops: &[LogOp]) -> Result<()> {
        let record = Record::Commit { txn, ops: Cow::Borrowed(ops) };
        let end = self.wal.append(record.kind(), &record.encode())?;
        self.wal.flush_to(end, &self.wal_qp)
    }

    /// Logs a pinned snapshot (`drop`: its removal), durably.
    pub fn log_snapshot(&self, id: u64, xmax: u64, drop: bool) -> Result<()> {
        let record = if drop { Record::DropSnapshot { id, xmax } } else { Record::PinSnapshot { id, xmax } };
        let end = self.wal.append(record.kind(), &record.encode())?;
        self.wal.flush_to(end, &self.wal_qp)
    }

    /// The physical page behind logical page `lpn`, if it is mapped.
    pub fn physical_page(&self, lpn: u64) -> Option<u64> {
        self.maps.lock().l2p.get(lpn as usize).copied().filter(|&p| p != u64::MAX)
    }

    /// Log traffic since the store was opened.
    pub fn wal_stats(&self) -> WalStats {
        self.wal.stats()
    }

    /// Bytes of the log since the last checkpoint, and the ring's size.
    pub fn wal_usage(&self) -> (u64, u64) {
        (self.wal.used(), self.wal.geo.capacity())
    }

    pub fn table(&self, name: &str) -> Option<Arc<Table>> {
        self.tables.lock().iter().find(|t| t.name == name).cloned()
    }

    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.tables.lock().clone()
    }

    pub(crate) fn new_lpn(&self) -> Result<u64> {
        let mut m = self.maps.lock();
        let lpn = m.next_lpn;
        if lpn > RecordId::LPN_MAX {
            return Err(StoreError::InvalidInput("the logical page space is exhausted".into()));
        }
        m.next_lpn += 1;
        m.l2p.push(u64::MAX);
        Ok(lpn)
    }

    /// A physical page for `object`: a free one of its own ([`PageReuse`]),
    /// else a new one from its region, else (the device full) any free one.
    pub(crate) fn allocate(&self, object: u64, budget: Budget) -> Result<u64> {
        let mut m = self.maps.lock();
        match budget {
            Budget::Write => self.keep_reserve(&mut m, 1)?,
            Budget::Buffered => self.keep_reserve(&mut m, 0)?,
            Budget::Checkpoint => {
                self.checkpoint_allocated.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(ppn) = m.reuse.take(object, false) {
            return Ok(ppn);
        }
        if !m.reuse.limbo.is_empty() {
            self.release_limbo(&mut m);
            if let Some(ppn) = m.reuse.take(object, false) {
                return Ok(ppn);
            }
        }
        match m.alloc.allocate(object) {
            Err(StoreError::DeviceFull { .. }) if let Some(ppn) = m.reuse.take(object, true) => Ok(ppn),
            Err(StoreError::DeviceFull { pages, .. }) => {
                let r = m.reuse.stats();
                Err(StoreError::DeviceFull { pages, waiting: r.superseded + r.awaiting + r.limbo, reserved: 0 })
            }
            other => other,
        }
    }

    /// Fails unless the free pages (fresh, free, and limbo that may be
    /// freed now) are at least the checkpoint's reserve plus `more`.
    fn keep_reserve(&self, m: &mut Maps, more: u64) -> Result<()> {
        let reserve = self.checkpoint_reserve(m);
        if m.free_now() >= reserve + more {
            return Ok(());
        }
        self.release_limbo(m);
        if m.free_now() >= reserve + more {
            return Ok(());
        }
        let r = m.reuse.stats();
        Err(StoreError::DeviceFull {
            pages: m.alloc.total_pages,
            waiting: r.superseded + r.awaiting + r.limbo,
            reserved: reserve,
        })
    }

    /// Admits a new delta-buffer page: it will take a free page when it is
    /// written, so it may start only while the free pages cover the reserve
    /// with it counted in (the reserve's delta term). Under the maps' lock,
    /// so two writers cannot both take the last page.
    pub(crate) fn admit_delta_page(&self) -> Result<()> {
        let mut m = self.maps.lock();
        self.keep_reserve(&mut m, 1)?;
        self.delta_buffered.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// How many free pages ordinary writes leave for the next checkpoint
    /// ([`Budget`]): an upper bound of what it allocates, from the last
    /// checkpoint's size and what was added since.
    ///
    /// - **Blob**: the last blob's bytes, plus 24 per tuple added (its head
    ///   is 17), plus 24 per logical page added (its L2P entry, its entry in
    ///   a page list, its share of an L2P map page), plus 4 KiB (a new
    ///   table's name, layout and allocator cursors), in pages, plus its
    ///   index pages; less the pages of older checkpoints it reuses first.
    /// - **Delta buffers**: every delta page started and not yet written
    ///   (`delta_buffered`; writers start one only while the pool covers
    ///   it, [`Store::admit_delta_page`]).
    /// - **VID map**: every VID map page (dirty entries are bounded only by
    ///   the tuples open transactions wrote).
    /// - **L2P map**: every L2P map page, counting the logical pages the VID
    ///   map may still add.
    pub(crate) fn checkpoint_reserve(&self, m: &Maps) -> u64 {
        let (page, per) = (self.page_bytes as u64, self.per_page as u64);
        let last = m.last_checkpoint;
        let tuples = self.tuples.load(Ordering::Relaxed);
        let tables = self.table_count.load(Ordering::Relaxed);
        let blob = last.blob_bytes
            + 24 * tuples.saturating_sub(last.tuples)
            + 24 * m.next_lpn.saturating_sub(last.lpns)
            + 4096;
        let blob_pages = blob.div_ceil(page);
        let blob_pages = blob_pages + blob_pages.div_ceil(page / 8);
        let reusable = self.checkpoint_pages.lock().free.len() as u64;
        let delta = self.delta_buffered.load(Ordering::Relaxed);
        let vid = tuples.div_ceil(per) + tables;
        let l2p = (m.next_lpn + vid).div_ceil(per) + 1;
        blob_pages.saturating_sub(reusable) + delta + vid + l2p
    }

    /// Moves to free what no running page reader may still know.
    fn release_limbo(&self, m: &mut Maps) {
        let oldest = self.page_readers.lock().running.keys().next().copied();
        m.reuse.release_limbo(oldest);
    }

    /// The free pages against the checkpoint's reserve, in one look.
    pub fn headroom(&self) -> Headroom {
        let m = self.maps.lock();
        let reserve = self.checkpoint_reserve(&m);
        Headroom { writes: m.free_now().saturating_sub(reserve), reserve, superseded: m.reuse.superseded.len() as u64 }
    }

    /// Held while physical pages resolved under it are read
    /// ([`PageReaders`]); a reader may nest another.
    pub(crate) fn page_reader(&self) -> PageReader<'_> {
        let mut r = self.page_readers.lock();
        let epoch = r.epoch;
        *r.running.entry(epoch).or_default() += 1;
        PageReader { readers: &self.page_readers, epoch }
    }

    /// A checkpoint that captured the maps is durable: what was superseded
    /// before the capture moves to limbo, and a new epoch of readers begins.
    pub(crate) fn checkpoint_durable(&self) {
        let mut m = self.maps.lock();
        let mut r = self.page_readers.lock();
        m.reuse.durable(r.epoch);
        r.epoch += 1;
    }

    /// Free pages the last checkpoint took (the running one's so far),
    /// besides the older checkpoints' blob pages it reused: at most the
    /// reserve [`Store::headroom`] gave just before it began.
    pub fn checkpoint_allocated(&self) -> u64 {
        self.checkpoint_allocated.load(Ordering::Relaxed)
    }

    /// Where the physical pages given up are on their way back.
    pub fn page_reuse(&self) -> PageReuseStats {
        self.maps.lock().reuse.stats()
    }

    /// Writes a sealed page of `object` to a new physical page and maps
    /// `lpn` to it; the page it was mapped to before is superseded.
    fn write_page(&self, object: u64, lpn: u64, bytes: Vec<u8>, budget: Budget) -> Result<u64> {
        let ppn = self.allocate(object, budget)?;
        self.qp.lock().call(Command::PageWrite { ppn, data: bytes })?;
        let mut m = self.maps.lock();
        let old = std::mem::replace(&mut m.l2p[lpn as usize], ppn);
        m.reuse.supersede(object, old);
        m.l2p_dirty.insert(lpn);
        Ok(ppn)
    }

    /// Writes a new version of logical page `lpn` and remaps it; the old
    /// physical page is superseded.
    pub(crate) fn replace_page(&self, object: u64, lpn: u64, bytes: Vec<u8>) -> Result<()> {
        self.write_page(object, lpn, bytes, Budget::Write)?;
        self.cache.lock().remove(&lpn);
        Ok(())
    }

    /// Forgets `object`'s logical page that holds nothing reachable; its
    /// physical page is superseded.
    pub(crate) fn unmap(&self, object: u64, lpn: u64) {
        let mut m = self.maps.lock();
        let old = std::mem::replace(&mut m.l2p[lpn as usize], u64::MAX);
        m.reuse.supersede(object, old);
        m.l2p_dirty.insert(lpn);
        drop(m);
        self.cache.lock().remove(&lpn);
    }

    /// A new tuple with no versions yet; returns its VID.
    pub fn new_vid(&self, table: &Table) -> u64 {
        let mut s = table.state.lock();
        s.heads.push(Head::NONE);
        self.tuples.fetch_add(1, Ordering::Relaxed);
        let vid = s.heads.len() as u64 - 1;
        s.vid_dirty.insert(vid);
        vid
    }

    pub fn set_head(&self, table: &Table, vid: u64, head: Head) {
        let mut s = table.state.lock();
        s.heads[vid as usize] = head;
        s.vid_dirty.insert(vid);
    }

    /// Appends a version record to the table's delta buffer.
    pub fn append_version(&self, table: &Table, header: VersionHeader, data: &[u8]) -> Result<RecordId> {
        self.append_version_as(table, header, data, Budget::Write)
    }

    /// [`Store::append_version`] on `budget`: `Write` for transactions, which
    /// start a delta page only while the pages it will take leave the
    /// checkpoint's reserve free ([`Store::admit_delta_page`]); `Checkpoint`
    /// for recovery, which replays what was committed and may use the
    /// reserve (refusing it would leave the database unopenable).
    pub(crate) fn append_version_as(
        &self,
        table: &Table,
        header: VersionHeader,
        data: &[u8],
        budget: Budget,
    ) -> Result<RecordId> {
        let record = header.record(data);
        if record.len() + page::PAGE_HEADER_BYTES + page::SLOT_BYTES > self.page_bytes {
            return Err(StoreError::InvalidInput(format!(
                "a {}-byte version does not fit a {}-byte page",
                record.len(),
                self.page_bytes
            )));
        }
        loop {
            let mut s = table.state.lock();
            if let Some(p) = s.delta.last_mut()
                && let Some(slot) = p.insert(&record)
            {
                return Ok(RecordId::new(p.lpn(), slot));
            }
            if s.delta.len() >= self.opts.delta_pages {
                let flush = if budget == Budget::Write { Budget::Buffered } else { budget };
                self.write_delta(table, &mut s, flush)?;
                drop(s);
                self.bound_map_deltas(table, if budget == Budget::Write { Budget::Write } else { budget })?;
                continue;
            }
            drop(s);
            if budget == Budget::Write {
                self.admit_delta_page()?;
            } else {
                self.delta_buffered.fetch_add(1, Ordering::Relaxed);
            }
            let lpn = match self.new_lpn() {
                Ok(l) => l,
                Err(e) => {
                    self.delta_buffered.fetch_sub(1, Ordering::Relaxed);
                    return Err(e);
                }
            };
            table.state.lock().delta.push(HeapPage::new(self.page_bytes, table.id, lpn));
        }
    }

    /// Writes the delta buffer's pages, oldest first. Each page leaves the
    /// buffer only once the L2P map points at its physical copy, and the
    /// caller holds the table's state throughout, so a reader always finds a
    /// record either in the buffer or on the device.
    pub(crate) fn write_delta(&self, table: &Table, s: &mut TableState, budget: Budget) -> Result<()> {
        while let Some(p) = s.delta.first() {
            let (lpn, bytes) = (p.lpn(), p.sealed());
            self.write_page(heap_object(table.id), lpn, bytes, budget)?;
            s.heap_pages.push(lpn);
            s.delta.remove(0);
            self.delta_buffered.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Writes dirty map pages when more entries wait than the policy allows.
    fn bound_map_deltas(&self, table: &Table, budget: Budget) -> Result<()> {
        if table.state.lock().vid_dirty.len() > self.opts.map_delta_max {
            self.flush_vid_map_as(table, None, budget)?;
        }
        if self.maps.lock().l2p_dirty.len() > self.opts.map_delta_max {
            self.flush_l2p(budget)?;
        }
        Ok(())
    }

    /// Writes the delta buffer, the dirty VID map pages and the dirty L2P map
    /// pages to the device, so that it holds the whole shared state.
    pub fn flush(&self, table: &Table) -> Result<()> {
        self.write_delta(table, &mut table.state.lock(), Budget::Buffered)?;
        self.flush_vid_map(table)?;
        self.flush_l2p(Budget::Write)
    }

    pub(crate) fn flush_vid_map(&self, table: &Table) -> Result<()> {
        self.flush_vid_map_as(table, None, Budget::Write)
    }

    /// Writes the VID map pages that hold dirty entries. A VID stays dirty if
    /// its head changed after its page was written. With `committed` (a
    /// fuzzy checkpoint), those VIDs' entries are written as the given
    /// committed heads, and the VIDs stay dirty: calls keep shipping their
    /// real heads, which only their open transactions may see.
    pub(crate) fn flush_vid_map_as(
        &self,
        table: &Table,
        committed: Option<&HashMap<u64, Head>>,
        budget: Budget,
    ) -> Result<()> {
        let dirty: Vec<u64> = {
            let mut s = table.state.lock();
            if let Some(c) = committed {
                s.vid_dirty.extend(c.keys().copied());
            }
            s.vid_dirty.iter().copied().collect()
        };
        let per_page = self.per_page;
        let mut written: Vec<(u64, u64)> = Vec::with_capacity(dirty.len());
        let mut at = 0;
        while at < dirty.len() {
            let p = dirty[at] as usize / per_page;
            let lpn = {
                let s = table.state.lock();
                s.vid_pages.get(p).copied()
            };
            let lpn = match lpn {
                Some(l) => l,
                None => {
                    let l = self.new_lpn()?;
                    let mut s = table.state.lock();
                    while s.vid_pages.len() <= p {
                        s.vid_pages.push(u64::MAX);
                    }
                    s.vid_pages[p] = l;
                    l
                }
            };
            let entries: Vec<u64> = {
                let s = table.state.lock();
                let (first, end) = (p * per_page, ((p + 1) * per_page).min(s.heads.len()));
                let entry = |v: usize| committed.and_then(|c| c.get(&(v as u64))).unwrap_or(&s.heads[v]).rid.0;
                while at < dirty.len() && dirty[at] as usize / per_page == p {
                    let v = dirty[at] as usize;
                    if v < end {
                        written.push((v as u64, entry(v)));
                    }
                    at += 1;
                }
                (first..end).map(entry).collect()
            };
            let bytes = page::map_page(self.page_bytes, PageKind::VidMap, table.id, lpn, &entries);
            self.write_page(vid_object(table.id), lpn, bytes, budget)?;
        }
        let mut s = table.state.lock();
        if s.vid_pages.contains(&u64::MAX) {
            return Err(StoreError::Corrupt("a VID map page was skipped".into()));
        }
        for (vid, rid) in written {
            let overridden = committed.is_some_and(|c| c.contains_key(&vid));
            if !overridden && s.heads.get(vid as usize).is_some_and(|h| h.rid.0 == rid) {
                s.vid_dirty.remove(&vid);
            }
        }
        Ok(())
    }

    pub(crate) fn flush_l2p(&self, budget: Budget) -> Result<()> {
        // Writing an L2P page maps nothing new (map pages are addressed by
        // physical page), so one pass empties the dirty set.
        let dirty: BTreeSet<usize> = self.maps.lock().l2p_dirty.iter().map(|&l| l as usize / self.per_page).collect();
        for p in dirty {
            let entries: Vec<u64> = {
                let m = self.maps.lock();
                let end = ((p + 1) * self.per_page).min(m.l2p.len());
                m.l2p[p * self.per_page..end].to_vec()
            };
            let bytes = page::map_page(self.page_bytes, PageKind::L2pMap, 0, p as u64, &entries);
            let ppn = self.allocate(L2P_OBJECT, budget)?;
            self.qp.lock().call(Command::PageWrite { ppn, data: bytes })?;
            let mut m = self.maps.lock();
            while m.l2p_pages.len() <= p {
                m.l2p_pages.push(u64::MAX);
            }
            let old = std::mem::replace(&mut m.l2p_pages[p], ppn);
            m.reuse.supersede(L2P_OBJECT, old);
        }
        self.maps.lock().l2p_dirty.clear();
        Ok(())
    }

    /// Reads one version: from the delta buffer, the page cache, or the device.
    pub fn read_version(&self, table: &Table, rid: RecordId) -> Result<(VersionHeader, Vec<u8>)> {
        {
            let s = table.state.lock();
            if let Some(p) = s.delta.iter().find(|p| p.lpn() == rid.lpn()) {
                let rec = p
                    .record(rid.slot())
                    .ok_or_else(|| StoreError::Corrupt(format!("no record {rid:?} in the delta buffer")))?;
                return decode_record(rec, rid);
            }
        }
        let page = self.cached_page(rid.lpn())?;
        let h = page::PageHeader::decode(&page).map_err(|e| StoreError::corrupt(format!("page {}", rid.lpn()), e))?;
        let rec =
            page::heap_record(&page, &h, rid.slot()).map_err(|e| StoreError::corrupt(format!("record {rid:?}"), e))?;
        decode_record(rec, rid)
    }

    fn cached_page(&self, lpn: u64) -> Result<Arc<Vec<u8>>> {
        if let Some(p) = self.cache.lock().get(&lpn) {
            return Ok(p.clone());
        }
        let page = Arc::new(self.read_page(lpn, &mut self.qp.lock())?);
        let mut c = self.cache.lock();
        if c.len() >= self.opts.cache_pages {
            // Written pages change only by GC, which evicts what it rewrites, so any victim is fine.
            if let Some(&victim) = c.keys().next() {
                c.remove(&victim);
            }
        }
        c.insert(lpn, page.clone());
        Ok(page)
    }

    /// Reads and verifies a whole page over the link.
    pub(crate) fn read_page(&self, lpn: u64, qp: &mut QueuePair) -> Result<Vec<u8>> {
        let _reading = self.page_reader();
        let ppn = *self
            .maps
            .lock()
            .l2p
            .get(lpn as usize)
            .ok_or_else(|| StoreError::Corrupt(format!("logical page {lpn} does not exist")))?;
        if ppn == u64::MAX {
            return Err(StoreError::Corrupt(format!("logical page {lpn} is not mapped")));
        }
        let page = qp.call(Command::PageRead { ppn })?.into_data();
        page::verify(&page).map_err(|e| StoreError::corrupt(format!("page {lpn} (physical {ppn})"), e))?;
        Ok(page)
    }

    /// The values of one version's tuple.
    pub fn decode_values(&self, table: &Table, data: &[u8]) -> Result<Vec<Value>> {
        table.layout.decode(data).map_err(|e| StoreError::corrupt(format!("tuple of {}", table.name), e))
    }
}

fn decode_record(rec: &[u8], rid: RecordId) -> Result<(VersionHeader, Vec<u8>)> {
    let h = VersionHeader::decode(rec, rec.len()).map_err(|e| StoreError::corrupt(format!("record {rid:?}"), e))?;
    Ok((h, rec[HEADER_BYTES..HEADER_BYTES + usize::from(h.data_len)].to_vec()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_device::{ClockKind, DeviceOptions, Profile};

    fn store(dir: &std::path::Path) -> Store {
        let dev = Device::create(
            dir,
            Profile::load("u280-nvm").unwrap(),
            Some(16 << 20),
            DeviceOptions::with_clock(ClockKind::Virtual),
        )
        .unwrap();
        Store::new(dev, StoreOptions { log_bytes: 1 << 20, ..StoreOptions::default() }).unwrap()
    }

    /// A superseded page comes back only after a checkpoint captured the
    /// maps, that checkpoint is durable, and every reader that began before
    /// it is durable has ended; then to its own object first.
    #[test]
    fn a_page_is_reused_only_past_a_durable_checkpoint_and_its_readers() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let (object, other) = (heap_object(1), vid_object(1));
        let page = s.allocate(object, Budget::Write).unwrap();
        s.maps.lock().reuse.supersede(object, page);
        let fresh = |n: usize| -> Vec<u64> { (0..n).map(|_| s.allocate(object, Budget::Write).unwrap()).collect() };
        // Durable, but captured by no checkpoint: the durable one may hold it.
        s.checkpoint_durable();
        assert!(!fresh(4).contains(&page));
        let early = s.page_reader();
        s.maps.lock().reuse.capture();
        s.checkpoint_durable();
        assert_eq!(s.page_reuse().limbo, 1);
        // A reader that began before it was durable may know the page.
        let late = s.page_reader();
        assert!(!fresh(4).contains(&page), "handed out under a running reader");
        assert!(!(0..4).map(|_| s.allocate(other, Budget::Write).unwrap()).any(|p| p == page));
        drop(early);
        // One that began after cannot.
        assert_eq!(s.allocate(object, Budget::Write).unwrap(), page);
        drop(late);
        let stats = s.page_reuse();
        assert_eq!((stats.limbo, stats.free, stats.reused), (0, 0, 1));
    }

    /// Writes stop while the next checkpoint's reserve is left, and say so;
    /// a checkpoint may take the reserve. A device full even for it says
    /// how many superseded pages a checkpoint would free; once one is free,
    /// any object may take it.
    #[test]
    fn a_full_device_keeps_a_checkpoints_reserve_and_names_the_pages_it_would_free() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let until_full = |budget| {
            let mut taken = Vec::new();
            loop {
                match s.allocate(heap_object(1), budget) {
                    Ok(p) => taken.push(p),
                    Err(e) => break (taken, e),
                }
            }
        };
        let (writes, e) = until_full(Budget::Write);
        let reserve = s.checkpoint_reserve(&s.maps.lock());
        assert!(matches!(e, StoreError::DeviceFull { waiting: 0, reserved, .. } if reserved == reserve), "{e}");
        assert!(
            e.to_string().contains("for writes; ") && e.to_string().contains("held back so that a checkpoint"),
            "{e}"
        );
        assert!(!writes.is_empty() && reserve > 0);
        let h = s.headroom();
        assert_eq!((h.writes, h.reserve), (0, reserve));
        let (checkpoint, e) = until_full(Budget::Checkpoint);
        assert_eq!(checkpoint.len() as u64, reserve, "the checkpoint gets exactly the reserve");
        assert!(matches!(e, StoreError::DeviceFull { waiting: 0, reserved: 0, .. }), "{e}");
        assert!(e.to_string().contains("larger capacity"), "{e}");
        let last = *checkpoint.last().unwrap();
        s.maps.lock().reuse.supersede(heap_object(1), last);
        let e = s.allocate(vid_object(1), Budget::Checkpoint).unwrap_err().to_string();
        assert!(e.contains("1 superseded pages") && e.contains("checkpoint"), "{e}");
        s.maps.lock().reuse.capture();
        s.checkpoint_durable();
        assert_eq!(
            s.allocate(vid_object(1), Budget::Checkpoint).unwrap(),
            last,
            "the device is full: any object takes a free page"
        );
    }
}
