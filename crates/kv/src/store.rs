//! The store: its parts, creating and opening it, committing an operation's
//! log record, and checkpoints.
//!
//! **An operation** (put, update, delete) takes the log gate shared, latches
//! the pages it changes, changes them through [`Tracked`] pages, appends one
//! record naming every page it changed, stores the record's end LSN in each
//! page, and releases the latches; then, if the store is synchronous, it
//! waits until the log is durable up to the record (group commit). An
//! operation that allocated pages (a split) makes its record durable before
//! it releases any latch once a device mirrors the pool
//! (`KvOffload::configure_mirror`): the mirror learns of new pages only from
//! the log write that names them, and must not find a link to a page it has
//! not heard of (test `a_split_is_known_to_the_mirror_before_anyone_can_follow_its_links`).
//! Before that nothing reads the pool's pages behind the host's back, and a
//! split waits like any operation (a bulk load's splits cost no log write).
//!
//! **A checkpoint** takes the log gate exclusively just long enough to pick
//! its redo start (the log's end: every record before it belongs to an
//! operation that released its pages), writes back every dirty page, and
//! then moves the log's checkpoint there. The gate makes the full-image rule
//! exact: an operation decides which pages to log whole and appends its
//! record under the same shared hold, so no record after the redo start was
//! decided against an older one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ndpdb_bufmgr::{BufferPool, PageIo, Pid};
use ndpdb_format::btree::{self, NONE, NodeKind, NodeSpec};
use ndpdb_format::kv_log::{KIND_PAGE_REDO, KvOp, Redo};
use parking_lot::{Mutex, RwLock};

use crate::error::KvError;
use crate::log::KvLog;
use crate::recovery::{RecoveryStats, recover};
use crate::tracked::Tracked;

/// How the store behaves, and (for a store on a device: `create_on`,
/// `open_on`) where it lies and how large its pool is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KvOptions {
    /// Each write returns only once its log record is durable.
    pub sync: bool,
    /// Checkpoint when a write finds the log fuller than this fraction of
    /// its capacity (bounded logs only).
    pub checkpoint_fill: f64,
    /// The pool's frames (stores on a device).
    pub frames: usize,
    /// The store's first physical page: its root slots (stores on a device).
    pub first_ppn: u64,
    /// Physical pages the store may use from `first_ppn` on; None: to the
    /// end of the device (`create_on`; `open_on` reads it from the image).
    pub pages: Option<u64>,
    /// Pages of the log ring (`create_on`; at least `LOG_PAGES_MIN`).
    pub log_pages: u64,
}

impl Default for KvOptions {
    fn default() -> KvOptions {
        KvOptions { sync: true, checkpoint_fill: 0.5, frames: 1024, first_ppn: 0, pages: None, log_pages: 256 }
    }
}

/// What the store counts (relaxed; exact once it is quiet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvStats {
    pub writes: u64,
    /// Writes that needed the exclusive descent from the root.
    pub pessimistic_writes: u64,
    pub splits: u64,
    pub root_splits: u64,
    pub records: u64,
    pub log_bytes: u64,
    /// Pages logged whole (first change after a checkpoint, new pages).
    pub full_images: u64,
    pub checkpoints: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) writes: AtomicU64,
    pub(crate) pessimistic_writes: AtomicU64,
    pub(crate) splits: AtomicU64,
    pub(crate) root_splits: AtomicU64,
    pub(crate) records: AtomicU64,
    pub(crate) log_bytes: AtomicU64,
    pub(crate) full_images: AtomicU64,
    pub(crate) checkpoints: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// A B+-tree key-value store on a buffer pool.
pub struct KvStore {
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) log: Arc<dyn KvLog>,
    pub(crate) root: Pid,
    pub(crate) page_bytes: usize,
    pub(crate) options: KvOptions,
    /// Shared by operations from their first latch to their record's
    /// append; exclusive while a checkpoint picks its redo start.
    pub(crate) gate: RwLock<()>,
    /// The newest checkpoint's redo start: pages not changed since are
    /// logged whole.
    pub(crate) redo_start: AtomicU64,
    checkpointing: Mutex<()>,
    /// Log bytes reserved by writes in progress (bounded logs).
    reserved: Mutex<u64>,
    /// The tree's height (the root's level + 1), for the log reservation.
    pub(crate) levels: AtomicU64,
    /// A device mirrors the pool: splits make their records durable before
    /// releasing their latches.
    pub(crate) mirrored: AtomicBool,
    pub(crate) counters: Counters,
    /// The image and ring of a store on a device (`image.rs`).
    pub(crate) on_device: Option<crate::image::OnDevice>,
}

/// Log space held for a write in progress; given back when dropped.
pub(crate) struct Reservation<'s> {
    store: &'s KvStore,
    bytes: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        *self.store.reserved.lock() -= self.bytes;
    }
}

impl KvStore {
    /// A new, empty tree in `pool`'s file: its root is a page allocated now.
    pub fn create(pool: Arc<BufferPool>, log: Arc<dyn KvLog>, options: KvOptions) -> Result<KvStore, KvError> {
        let page_bytes = pool.page_bytes();
        if !btree::page_size_ok(page_bytes) {
            return Err(KvError::Config(format!(
                "pages of {page_bytes} bytes cannot hold B+-tree nodes: use {} to {} bytes",
                btree::MIN_PAGE_BYTES,
                btree::MAX_PAGE_BYTES
            )));
        }
        let redo_start = log.checkpoint_lsn();
        let mut store = KvStore::assemble(pool, log, NONE, options, redo_start);
        let root = {
            let _gate = store.gate.read();
            let mut root = Tracked::new_page(store.pool.allocate()?);
            let spec = NodeSpec { kind: NodeKind::Leaf, level: 0, lower: NONE, right: NONE, low: None, high: None };
            let pid = root.pid();
            btree::write_node(&mut root, pid, &spec, &[])?;
            store.commit(KvOp::Create, &mut [root], true)?;
            pid
        };
        store.root = root;
        Ok(store)
    }

    /// Opens the tree whose root is `root`: redoes the log from its
    /// checkpoint into `pool` first. `io` is the pool's file, for pages a
    /// crash left torn (recovery replaces them from the log's full images).
    pub fn open(
        pool: Arc<BufferPool>,
        io: &dyn PageIo,
        log: Arc<dyn KvLog>,
        root: Pid,
        options: KvOptions,
    ) -> Result<(KvStore, RecoveryStats), KvError> {
        let stats = recover(&pool, io, &*log)?;
        let redo_start = log.checkpoint_lsn();
        let store = KvStore::assemble(pool, log, root, options, redo_start);
        let g = store.pool.fix_shared(root)?;
        let node = btree::Node::parse(g.bytes(), root)?;
        if node.right() != NONE {
            return Err(KvError::Recovery(format!("page {root} is no root: it has a right sibling")));
        }
        store.levels.store(u64::from(node.level()) + 1, Ordering::Relaxed);
        drop(g);
        Ok((store, stats))
    }

    fn assemble(pool: Arc<BufferPool>, log: Arc<dyn KvLog>, root: Pid, options: KvOptions, redo: u64) -> KvStore {
        KvStore {
            page_bytes: pool.page_bytes(),
            pool,
            log,
            root,
            options,
            gate: RwLock::new(()),
            redo_start: AtomicU64::new(redo),
            checkpointing: Mutex::new(()),
            reserved: Mutex::new(0),
            levels: AtomicU64::new(1),
            mirrored: AtomicBool::new(false),
            counters: Counters::default(),
            on_device: None,
        }
    }

    /// The root's pid (fixed for the tree's life): what the device's lookup
    /// starts from.
    pub fn root(&self) -> Pid {
        self.root
    }

    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    pub fn log(&self) -> &Arc<dyn KvLog> {
        &self.log
    }

    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    pub fn stats(&self) -> KvStats {
        let c = &self.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        KvStats {
            writes: l(&c.writes),
            pessimistic_writes: l(&c.pessimistic_writes),
            splits: l(&c.splits),
            root_splits: l(&c.root_splits),
            records: l(&c.records),
            log_bytes: l(&c.log_bytes),
            full_images: l(&c.full_images),
            checkpoints: l(&c.checkpoints),
        }
    }

    /// Appends the record of an operation that changed `pages` (the caller
    /// holds the gate shared and every page's latch) and stores its end LSN
    /// in each changed page. `durable`: flush before returning (the caller
    /// still holds the latches). Returns the record's end.
    pub(crate) fn commit(&self, op: KvOp, pages: &mut [Tracked<'_>], durable: bool) -> Result<u64, KvError> {
        let changes = pages.iter().filter_map(|p| p.change().transpose()).collect::<Result<Vec<_>, _>>()?;
        if changes.is_empty() {
            return Ok(0);
        }
        bump(&self.counters.full_images, changes.iter().filter(|c| c.full_image).count() as u64);
        let payload = Redo { op, pages: changes }.encode();
        let (start, end) = self.log.append(KIND_PAGE_REDO, &payload)?;
        bump(&self.counters.records, 1);
        bump(&self.counters.log_bytes, end - start);
        for p in pages.iter_mut().filter(|p| p.changed()) {
            p.set_lsn(end);
        }
        if durable {
            self.log.flush_to(end)?;
        }
        Ok(end)
    }

    /// Holds log space for one write (bounded logs): the most a record of a
    /// write can take, with a split at every level and a new root. A log too
    /// full for it is checkpointed first; still too full: `LogFull`, before
    /// anything changed (a record that could not be appended would leave
    /// changed pages without their record).
    pub(crate) fn reserve_log(&self) -> Result<Option<Reservation<'_>>, KvError> {
        let Some(capacity) = self.log.capacity() else {
            return Ok(None);
        };
        let pages = 2 * (self.levels.load(Ordering::Relaxed) + 1) + 1;
        let bound = 64 + pages * 2 * self.page_bytes as u64;
        for attempt in 0..2 {
            {
                let mut reserved = self.reserved.lock();
                let used = self.log.end_lsn().saturating_sub(self.log.checkpoint_lsn());
                if used + *reserved + bound <= capacity {
                    *reserved += bound;
                    return Ok(Some(Reservation { store: self, bytes: bound }));
                }
            }
            if attempt == 0 {
                let _one = self.checkpointing.lock();
                self.checkpoint_locked()?;
            }
        }
        Err(KvError::LogFull { needed: bound, capacity, checkpoint: self.log.checkpoint_lsn() })
    }

    /// After an operation released its latches: waits for its record if
    /// `sync` (the store's option, false within a bulk load), and
    /// checkpoints if the log is filling up.
    pub(crate) fn after_write(&self, end: u64, sync: bool) -> Result<(), KvError> {
        if sync && end > 0 {
            self.log.flush_to(end)?;
        }
        if let Some(capacity) = self.log.capacity() {
            let used = self.log.end_lsn().saturating_sub(self.log.checkpoint_lsn());
            if used as f64 > capacity as f64 * self.options.checkpoint_fill
                && let Some(_one) = self.checkpointing.try_lock()
            {
                self.checkpoint_locked()?;
            }
        }
        Ok(())
    }

    /// Makes every write so far durable: one log write and one device
    /// `Flush` for all writers waiting at the time (group commit). A write
    /// is committed once its record is durable: when it returns in a
    /// synchronous store, when a later `sync` returns in an asynchronous one.
    pub fn sync(&self) -> Result<(), KvError> {
        self.log.flush_to(self.log.end_lsn())
    }

    /// Writes back every dirty page and moves the log's checkpoint: recovery
    /// then starts from here. The calling thread must hold no guards of the
    /// pool. Returns the new checkpoint's LSN.
    pub fn checkpoint(&self) -> Result<u64, KvError> {
        let _one = self.checkpointing.lock();
        self.checkpoint_locked()
    }

    fn checkpoint_locked(&self) -> Result<u64, KvError> {
        let start = {
            let _g = self.gate.write();
            let start = self.log.end_lsn();
            self.redo_start.store(start, Ordering::Relaxed);
            start
        };
        self.log.flush_to(start)?;
        self.pool.write_back_all()?;
        self.log.set_checkpoint(start)?;
        bump(&self.counters.checkpoints, 1);
        Ok(start)
    }
}

impl std::fmt::Debug for KvStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvStore")
            .field("root", &self.root)
            .field("page_bytes", &self.page_bytes)
            .finish_non_exhaustive()
    }
}
