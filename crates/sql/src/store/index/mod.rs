//! B+-tree indexes: every index of a database in one `ndpdb-kv` store on a
//! second device image, entries mapping key ‖ VID, kept up to date by every
//! write and re-checked against the tuple on every read.
//!
//! ```text
//!  <db dir>/device.img           the MVCC store (tables, catalog, WAL)
//!  <db dir>/index/device.img     the index device: KvStore::create_on / open_on
//!        root slots │ kv log ring │ B+-tree file (pool of frames on the host)
//!
//!  entry: table id ‖ columns ‖ memcomparable key ‖ VID  →  ()      (keys.rs)
//!
//!  INSERT   ─► tuple at VID ─► put (key, VID)     (unique: check, then put, under a stripe lock)
//!  UPDATE   ─► key changed? ─► put (new key, VID) (the old entry stays)
//!  DELETE   ─► nothing        (the entry stays)
//!  index scan / lookup ─► entries in a key range ─► VIDs ─► the version the
//!                          snapshot sees ─► the executor re-checks the filter
//! ```
//!
//! **Why a second image.** The MVCC store owns its device from the first
//! page to the last (regions, checkpoints, WAL); the kv store lays itself
//! out on a device by `first_ppn`/`pages`. A second image in the database
//! directory gives the indexes their own log ring and page file without a
//! change to the storage layer; the device's in-storage lookup (`kv.lookup`,
//! `KvOffload`) can run on it as it is (hybridNDP, the next issue, offloads
//! index probes there; today index scans run on the host).
//!
//! **MVCC.** An entry names a VID, which is stable across the tuple's
//! versions, and one key value the tuple has, or had, in some version. A
//! reader takes the version its snapshot sees and the executor checks the
//! scan's whole filter (or the join condition) on it, so an entry of an
//! aborted insert, of a key an update replaced or of a deleted tuple only
//! costs a wasted fetch. Only one property matters: *every version a
//! snapshot can see has an entry for its key*. Writes keep it (an insert
//! puts before its transaction commits; an update whose key changed puts
//! the new key; nothing is removed while a snapshot may still need it).
//!
//! **When entries go.** The entries of an aborted transaction's inserts and
//! key changes are deleted when it aborts (those it made new; at most
//! [`ABORT_UNDO_MAX`] per transaction, beyond that they stay). DROP INDEX
//! and DROP TABLE delete the index's (table's) whole key range when their
//! transaction commits. Entries of deleted tuples and of replaced keys stay
//! until the index is dropped: removing them needs the oldest snapshot
//! (the GC's horizon), an open point for the store's garbage collection.
//!
//! **Durability.** The kv store is asynchronous: its records reach the
//! ring in groups. A transaction that wrote entries syncs the kv log
//! *before* its commit record is written ([`SqlTxn::before_commit`]), so
//! after a crash the index holds an entry for every committed tuple
//! (`kv` recovery redoes the ring); entries of transactions that did not
//! commit may survive as harmless garbage. A database whose index image is
//! missing (created before indexes existed, or the image was removed) gets
//! one at open, and every index is built from its table.
//!
//! **Unique checks** go through the index: under a lock striped by key,
//! the entries with the new key are looked up, and each one's tuple is a
//! conflict if its newest version, or an older one up to the newest
//! committed one, still has that key and is not deleted. A key held by an
//! uncommitted insert or by an uncommitted delete is a conflict at once
//! (23505), where PostgreSQL waits for the other transaction to end. NULL
//! keys never conflict.

pub mod build;
pub mod keys;
pub mod point;
pub mod read;

use std::path::Path;
use std::sync::Arc;

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_kv::{KvError, KvOptions, KvStore};
use parking_lot::{Mutex, MutexGuard};

use crate::error::{Result, SqlError, SqlState};
pub use keys::{IndexKeys, KeyRange};

/// The index image's directory inside a database directory.
pub const INDEX_DIR: &str = "index";

/// Entries an aborting transaction deletes at most (the rest stay as
/// harmless garbage); bounds what a bulk load keeps in memory.
pub const ABORT_UNDO_MAX: usize = 1 << 20;

/// Stripes of the unique-check lock.
const STRIPES: usize = 64;

/// Frames of the index pool at most: 16,384 pages of 8 KiB, 128 MiB, as
/// PostgreSQL's default `shared_buffers` (a 1,000,000-row bigint key's
/// index outgrew the former 4,096 and its lookups went to the device).
const POOL_FRAMES_MAX: u64 = 16_384;

/// All indexes of one database.
pub struct IndexStore {
    kv: KvStore,
    stripes: Vec<Mutex<()>>,
}

/// The SQL error of a kv store error.
pub fn kv_error(e: KvError) -> SqlError {
    let msg = format!("index store: {e}");
    match e {
        KvError::KeyTooLong { .. } | KvError::ValueTooLong { .. } => {
            SqlError::new(SqlState::PROGRAM_LIMIT_EXCEEDED, msg).with_hint("Index shorter values, or fewer columns.")
        }
        KvError::Corrupt(_) | KvError::Recovery(_) => SqlError::new(SqlState::DATA_CORRUPTED, msg).with_hint(format!(
            "Remove the directory `{INDEX_DIR}` of the database: the next open rebuilds every index."
        )),
        KvError::LogFull { .. } => SqlError::new(SqlState::DISK_FULL, msg),
        _ if e.is_disk_full() => SqlError::new(SqlState::DISK_FULL, msg),
        KvError::Pool(_) if e.is_pool_full() => SqlError::new(SqlState::OUT_OF_MEMORY, msg),
        _ => SqlError::new(SqlState::IO_ERROR, msg),
    }
}

impl IndexStore {
    /// Opens the index image of the database in `dir` (recovering its
    /// log), or creates one of `capacity_bytes`; true when created (every
    /// index must then be built).
    pub fn open(dir: &Path, profile: &Profile, clock: ClockKind, capacity_bytes: u64) -> Result<(IndexStore, bool)> {
        let dir = dir.join(INDEX_DIR);
        let io = |e: ndpdb_device::DeviceError| {
            SqlError::new(SqlState::IO_ERROR, format!("index image in {}: {e}", dir.display()))
        };
        let exists = dir.join(ndpdb_device::IMAGE_FILE).exists();
        let opts = DeviceOptions::with_clock(clock);
        let device = if exists {
            Device::open(&dir, profile.clone(), opts).map_err(io)?
        } else {
            Device::create(&dir, profile.clone(), Some(capacity_bytes), opts).map_err(io)?
        };
        let device = Arc::new(device);
        let info = device.info();
        let pages = info.capacity_bytes / u64::from(info.page_bytes);
        let kv_opts = KvOptions {
            sync: false,
            // Up to 128 MiB of frames (PostgreSQL's default shared_buffers),
            // never more than the image has pages.
            frames: pages.clamp(64, POOL_FRAMES_MAX) as usize,
            log_pages: (pages / 8).clamp(ndpdb_kv::LOG_PAGES_MIN, 2048),
            ..KvOptions::default()
        };
        let kv = if exists {
            KvStore::open_on(device, kv_opts).map_err(kv_error)?.0
        } else {
            KvStore::create_on(device, kv_opts).map_err(kv_error)?
        };
        Ok((IndexStore { kv, stripes: (0..STRIPES).map(|_| Mutex::new(())).collect() }, !exists))
    }

    /// The lock of the unique checks of `key` (prefix ‖ key, no VID).
    pub fn stripe(&self, key: &[u8]) -> MutexGuard<'_, ()> {
        let h = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        self.stripes[(h % STRIPES as u64) as usize].lock()
    }

    pub fn put(&self, entry: &[u8]) -> Result<()> {
        self.kv.put(entry, &[]).map_err(kv_error)
    }

    /// Puts sorted entries in bulk (a build).
    pub fn put_many(&self, entries: &[Vec<u8>]) -> Result<u64> {
        self.kv.put_many(entries.iter().map(|e| (e.as_slice(), &[][..]))).map_err(kv_error)
    }

    pub fn contains(&self, entry: &[u8]) -> Result<bool> {
        Ok(self.kv.get(entry).map_err(kv_error)?.is_some())
    }

    pub fn delete(&self, entry: &[u8]) -> Result<bool> {
        self.kv.delete(entry).map_err(kv_error)
    }

    /// The entries of `range`, in key order.
    pub fn entries<'a>(&'a self, range: &'a KeyRange) -> impl Iterator<Item = Result<Vec<u8>>> + 'a {
        let scan =
            if range.end.is_empty() { self.kv.scan(&range.start) } else { self.kv.scan_to(&range.start, &range.end) };
        scan.map(|r| r.map(|(k, _)| k).map_err(kv_error)).take_while(|r| !r.as_ref().is_ok_and(|k| range.past(k)))
    }

    /// The VIDs of the entries of `range`, in key order.
    pub fn vids(&self, range: &KeyRange) -> Result<Vec<u64>> {
        let mut out = Vec::new();
        self.vids_into(range, &mut out)?;
        Ok(out)
    }

    /// Appends the VIDs of the entries of `range` to `out`, in key order,
    /// reading the entries in place (no key is copied).
    pub fn vids_into(&self, range: &KeyRange, out: &mut Vec<u64>) -> Result<()> {
        let mut bad = None;
        let end = (!range.end.is_empty()).then_some(range.end.as_slice());
        self.kv
            .for_each_key(&range.start, end, |k| match keys::entry_vid(k) {
                Ok(v) => {
                    out.push(v);
                    true
                }
                Err(e) => {
                    bad = Some(e);
                    false
                }
            })
            .map_err(kv_error)?;
        bad.map_or(Ok(()), Err)
    }

    /// Deletes every entry of `range`; returns how many.
    pub fn delete_range(&self, range: &KeyRange) -> Result<u64> {
        let doomed: Vec<Vec<u8>> = self.entries(range).collect::<Result<_>>()?;
        for e in &doomed {
            self.kv.delete(e).map_err(kv_error)?;
        }
        Ok(doomed.len() as u64)
    }

    /// Makes every entry written so far durable.
    pub fn sync(&self) -> Result<()> {
        self.kv.sync().map_err(kv_error)
    }

    /// Writes back every dirty page (the next open redoes no log).
    pub fn checkpoint(&self) -> Result<()> {
        self.kv.checkpoint().map(|_| ()).map_err(kv_error)
    }

    pub fn kv(&self) -> &KvStore {
        &self.kv
    }
}
