//! The store on a device image: creating it, opening it (recovering from
//! the ring), and where it lies (`DeviceLayout`, for the device's lookup
//! program and the mirror).
//!
//! ```text
//!  KvOptions { first_ppn, pages, log_pages, frames }
//!     │
//!     ▼  first_ppn  +1       +2                 +2+log_pages        first_ppn+pages
//!     ┌────────┬────────┬──── DeviceKvLog ──────┬──── DevicePageIo (pid 0 = root) ┐
//!     │ slot 0 │ slot 1 │ ring.rs               │ BufferPool of `frames` frames   │
//!     └────────┴────────┴───────────────────────┴─────────────────────────────────┘
//! ```
//!
//! **Create** builds the tree (its root is pid 0, logged and flushed), then
//! checkpoints: the first root slot (generation 1) is written last, so a
//! crash during creation leaves both slots empty and no store. **Open**
//! reads both slots and takes the valid one with the higher generation
//! (`kv_image::choose`), opens the file at the slot's length, reads the
//! ring from the slot's checkpoint and redoes it (`recovery.rs`). The
//! geometry comes from the slot; `KvOptions` says only where the slots are
//! (`first_ppn`) and how many frames the pool gets.
//!
//! A write is **committed** when its log record is durable: a synchronous
//! store's writes return then; an asynchronous store's writes are
//! committed when a later [`KvStore::sync`] returns (or any flush that
//! covers them: a split's, an eviction's, a checkpoint's).

use std::sync::Arc;

use ndpdb_bufmgr::{BufferPool, DevicePageIo, PageIo, PoolConfig};
use ndpdb_device::{Command, Device, DeviceError};
use ndpdb_format::kv_image::{self, KvRoot, SLOTS};

use crate::error::KvError;
use crate::log::{KvLog, PoolLog};
use crate::recovery::RecoveryStats;
use crate::ring::DeviceKvLog;
use crate::store::{KvOptions, KvStore};

/// Ring pages at least: room for a write's worst-case record (a split at
/// every level) and the store's checkpoint headroom.
pub const LOG_PAGES_MIN: u64 = 32;

/// Where a store lives on its device, for the device's lookup program and
/// the mirror's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceLayout {
    pub page_bytes: usize,
    /// Pid `p` is physical page `file_first_ppn + p`.
    pub file_first_ppn: u64,
    /// Pages the file may grow to.
    pub file_pages: u64,
    /// The log ring's pages.
    pub log_first_ppn: u64,
    pub log_pages: u64,
    /// The tree's root (never changes).
    pub root_pid: u64,
    /// The pool's frame count.
    pub frames: u64,
}

/// What a store on a device keeps besides the tree.
pub(crate) struct OnDevice {
    pub(crate) layout: DeviceLayout,
    pub(crate) ring: Arc<DeviceKvLog>,
}

fn config(what: String) -> KvError {
    KvError::Config(what)
}

/// The image's root slot before the first checkpoint, from the options.
fn plan(device: &Device, opts: &KvOptions) -> Result<KvRoot, KvError> {
    let info = device.info();
    let device_pages = info.capacity_bytes / u64::from(info.page_bytes);
    let first = opts.first_ppn;
    let pages = opts.pages.unwrap_or(device_pages.saturating_sub(first));
    if first.checked_add(pages).is_none_or(|end| end > device_pages) {
        return Err(config(format!(
            "pages {first}..{} are not on the device, which holds {device_pages} pages; choose a smaller region",
            first.saturating_add(pages)
        )));
    }
    if opts.log_pages < LOG_PAGES_MIN {
        return Err(config(format!("a log of {} pages; use at least {LOG_PAGES_MIN}", opts.log_pages)));
    }
    let file_pages = pages.checked_sub(SLOTS + opts.log_pages).filter(|&n| n > 0).ok_or_else(|| {
        config(format!(
            "a region of {pages} pages holds no file after its {SLOTS} root slots and {} log pages; give it more pages",
            opts.log_pages
        ))
    })?;
    Ok(KvRoot {
        generation: 0,
        root_pid: 0,
        log_first_ppn: first + SLOTS,
        log_pages: opts.log_pages,
        file_first_ppn: first + SLOTS + opts.log_pages,
        file_page_limit: file_pages,
        checkpoint_lsn: 0,
        file_pages: 0,
        page_bytes: info.page_bytes,
    })
}

/// The two root slots' bytes (a slot with a media error reads as garbage
/// and is named as unusable).
fn read_slots(device: &Device, first_ppn: u64) -> Result<[Vec<u8>; 2], KvError> {
    let mut qp = device.queue_pair();
    let page = device.info().page_bytes as usize;
    let mut read = |ppn: u64| match qp.call(Command::PageRead { ppn, host_addr: None }) {
        Ok(reply) => Ok(reply.into_data()),
        Err(DeviceError::UnrecoveredRead { .. }) => Ok(vec![0xff; page]),
        Err(e) => Err(KvError::Log { message: format!("reading root slot at physical page {ppn}: {e}") }),
    };
    Ok([read(first_ppn)?, read(first_ppn + 1)?])
}

impl KvStore {
    /// A new store on `device` (an image the caller created), in pages
    /// `[opts.first_ppn, opts.first_ppn + opts.pages)`: root slots, log
    /// ring, file; `opts.frames` frames of pool. Refuses a region whose root
    /// slots are not empty.
    pub fn create_on(device: Arc<Device>, opts: KvOptions) -> Result<KvStore, KvError> {
        let root = plan(&device, &opts)?;
        let slots = read_slots(&device, opts.first_ppn)?;
        if slots.iter().any(|s| s.iter().any(|&b| b != 0)) {
            return Err(config(format!(
                "physical pages {} and {} already hold data (a store?); open it with KvStore::open_on, or \
                 create the store on a fresh image or region",
                opts.first_ppn,
                opts.first_ppn + 1
            )));
        }
        let io = Arc::new(DevicePageIo::new(device.clone(), root.file_first_ppn, 0, root.file_page_limit)?);
        let ring = Arc::new(DeviceKvLog::create(&device, root, io.clone()));
        let pool = pool(&opts, &root, io, ring.clone())?;
        let mut store = KvStore::create(pool, ring.clone(), opts)?;
        if store.root() != root.root_pid {
            return Err(KvError::Internal(format!("a new tree's root is pid {}, not 0", store.root())));
        }
        store.checkpoint()?;
        store.on_device = Some(OnDevice { layout: layout(&ring.root(), store.pool.frames()), ring });
        Ok(store)
    }

    /// Reopens the store whose root slots are at `opts.first_ppn`,
    /// recovering from the ring (after a crash or a clean close alike).
    pub fn open_on(device: Arc<Device>, opts: KvOptions) -> Result<(KvStore, RecoveryStats), KvError> {
        let first = opts.first_ppn;
        let slots = read_slots(&device, first)?;
        let (root, notes) = kv_image::choose([&slots[0], &slots[1]]).map_err(|e| {
            KvError::Recovery(format!("no usable root slot at physical pages {first} and {}: {e}", first + 1))
        })?;
        let root = root.ok_or_else(|| {
            config(format!(
                "no key-value store at physical page {first}: both root slots are empty; create one with \
                 KvStore::create_on"
            ))
        })?;
        let page_bytes = device.info().page_bytes;
        if root.log_first_ppn != first + SLOTS || root.page_bytes != page_bytes {
            return Err(KvError::Recovery(format!(
                "the root slot at physical page {first} describes a log at page {} with {}-byte pages; this device \
                 has {page_bytes}-byte pages and the log would start at page {}: open it at the right place",
                root.log_first_ppn,
                root.page_bytes,
                first + SLOTS
            )));
        }
        let io =
            Arc::new(DevicePageIo::new(device.clone(), root.file_first_ppn, root.file_pages, root.file_page_limit)?);
        let ring = Arc::new(DeviceKvLog::open(&device, root, io.clone())?);
        let pool = pool(&opts, &root, io.clone(), ring.clone())?;
        let (mut store, mut stats) = KvStore::open(pool, &*io, ring.clone(), root.root_pid, opts)?;
        stats.notes = notes;
        stats.notes.extend(ring.open_note().map(str::to_string));
        store.on_device = Some(OnDevice { layout: layout(&root, store.pool.frames()), ring });
        Ok((store, stats))
    }

    /// Where the store lies on its device; None for a store on a pool the
    /// caller built (`KvStore::create`, `KvStore::open`).
    pub fn layout(&self) -> Option<DeviceLayout> {
        self.on_device.as_ref().map(|d| d.layout.clone())
    }

    /// The ring's counters (stores on a device).
    pub fn ring_stats(&self) -> Option<crate::ring::RingStats> {
        self.on_device.as_ref().map(|d| d.ring.stats())
    }
}

fn pool(
    opts: &KvOptions,
    root: &KvRoot,
    io: Arc<DevicePageIo>,
    ring: Arc<DeviceKvLog>,
) -> Result<Arc<BufferPool>, KvError> {
    let log: Arc<dyn KvLog> = ring;
    let config = PoolConfig { frames: opts.frames, page_bytes: root.page_bytes as usize };
    let io: Arc<dyn PageIo> = io;
    Ok(Arc::new(BufferPool::new(config, io, Arc::new(PoolLog(log)))?))
}

fn layout(root: &KvRoot, frames: usize) -> DeviceLayout {
    DeviceLayout {
        page_bytes: root.page_bytes as usize,
        file_first_ppn: root.file_first_ppn,
        file_pages: root.file_page_limit,
        log_first_ppn: root.log_first_ppn,
        log_pages: root.log_pages,
        root_pid: root.root_pid,
        frames: frames as u64,
    }
}
