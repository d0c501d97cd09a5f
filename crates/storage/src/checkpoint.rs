//! Closing and reopening a store: the checkpoint of `ndpdb_format::checkpoint`.
//!
//! A clean close writes every table's delta buffer, the dirty VID-map and
//! L2P pages, then the checkpoint blob and its index pages to new physical
//! pages, and finally the root page (physical page 0, the one page that is
//! written in place). Opening reads the root, the index pages and the blob,
//! checks the blob's CRC and rebuilds the maps, the catalog and the heads.
//! Device memory does not survive a restart, so opening also writes each
//! table's layout descriptor to the device again.
//!
//! The root has two slots (pages 0 and 1, `generation % 2`), so a torn root
//! write leaves the previous checkpoint readable. A checkpoint records the
//! log position it reflects; opening replays the write-ahead log from there
//! (`wal.rs`), so a crash between checkpoints loses no committed transaction.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ndpdb_device::{Command, Device, Reply};
use ndpdb_format::checkpoint::{Checkpoint, Root, TableMeta};
use ndpdb_format::page::RecordId;
use ndpdb_format::schema::{Column, LayoutDescriptor};
use parking_lot::Mutex;

use crate::store::{
    Allocator, Budget, CheckpointSize, Head, L2P_OBJECT, META_OBJECT, Maps, OpKind, PageReuse, ROOT_PPN, Store,
    StoreError, StoreOptions, Table, TableId, TableState,
};
use crate::wal::{self, LogGeometry, Wal};
use ndpdb_format::record::VersionHeader;
use ndpdb_format::wal::{LogOp, Record, TableDef};

type Result<T> = std::result::Result<T, StoreError>;

/// What opening a database found in its log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recovery {
    /// Log records replayed after the checkpoint (commits, tables, snapshots).
    pub records: u64,
    pub commits: u64,
    /// Log bytes read.
    pub log_bytes: u64,
    /// A torn or corrupt tail that was cut off, and why.
    pub truncated: Option<String>,
    /// A root slot that could not be read (the other one was used).
    pub root_note: Option<String>,
    pub wall_s: f64,
}

/// Per table, the VIDs that open transactions have written and the newest
/// committed head of each (what a fuzzy checkpoint records for them).
pub type CommittedHeads = HashMap<TableId, HashMap<u64, Head>>;

/// What the transaction layer keeps in a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnMeta {
    pub next_txn: u64,
    /// Pinned snapshots: (id, xmax).
    pub snapshots: Vec<(u64, u64)>,
}

impl Store {
    /// The tuples of `table` whose newest version an `active` transaction
    /// wrote, each with its newest committed head: the first version down
    /// its chain that no active transaction created (`Head::NONE` for a
    /// tuple an open transaction inserted). A tuple has one writer at a
    /// time (its lock), so that writer's versions are the top of the chain.
    pub fn committed_heads(&self, table: &Table, active: &BTreeSet<u64>) -> Result<HashMap<u64, Head>> {
        let open: Vec<(u64, Head)> = {
            let s = table.state.lock();
            s.heads
                .iter()
                .enumerate()
                .filter(|(_, h)| !h.rid.is_none() && active.contains(&h.create_ts))
                .map(|(v, h)| (v as u64, *h))
                .collect()
        };
        let mut out = HashMap::with_capacity(open.len());
        for (vid, head) in open {
            let mut rid = head.rid;
            let mut committed = Head::NONE;
            for _ in 0..crate::store::CHAIN_MAX {
                let (h, _) = self.read_version(table, rid)?;
                if !active.contains(&h.create_ts) {
                    committed = Head { rid, create_ts: h.create_ts, tombstone: h.tombstone };
                    break;
                }
                if h.prev.is_none() {
                    break;
                }
                rid = h.prev;
            }
            out.insert(vid, committed);
        }
        Ok(out)
    }

    /// Writes everything a reopen needs (see the module docs). `committed`
    /// names the VIDs that open transactions have written, with their newest
    /// committed heads: the checkpoint records those instead (a fuzzy
    /// checkpoint; the caller holds off commits meanwhile, and an open
    /// transaction's writes reach the log only when it commits, after the
    /// checkpoint's position).
    pub fn checkpoint(&self, txn: &TxnMeta, committed: &CommittedHeads) -> Result<()> {
        self.checkpoint_allocated.store(0, Ordering::Relaxed);
        for t in self.tables() {
            self.write_delta(&t, &mut t.state.lock(), Budget::Checkpoint)?;
            self.flush_vid_map_as(&t, committed.get(&t.id), Budget::Checkpoint)?;
        }
        self.flush_l2p(Budget::Checkpoint)?;
        let page = self.page_bytes;
        // The blob's own pages must be allocated before the blob records the
        // allocator, or the next run would hand them out again and overwrite
        // this checkpoint while it is still the one to recover from. More
        // pages change the cursors' values, not the blob's length (except a
        // first cursor for META_OBJECT), so this settles in two rounds.
        let mut reserved: Vec<u64> = Vec::new();
        let (blob, size) = loop {
            let cp = self.checkpoint_blob(txn, committed);
            let size = CheckpointSize {
                blob_bytes: 0,
                tuples: cp.tables.iter().map(|t| t.heads.len() as u64).sum(),
                lpns: cp.next_lpn,
            };
            let blob = cp.encode();
            let blob_pages = blob.len().div_ceil(page);
            let need = blob_pages + blob_pages.div_ceil(page / 8);
            if reserved.len() >= need {
                break (blob, size);
            }
            while reserved.len() < need {
                let reused = self.checkpoint_pages.lock().free.pop();
                reserved.push(match reused {
                    Some(ppn) => ppn,
                    None => self.allocate(META_OBJECT, Budget::Checkpoint)?,
                });
            }
        };
        let mut free = reserved.into_iter();
        let mut blob_ppns = Vec::new();
        for chunk in blob.chunks(page) {
            let mut data = chunk.to_vec();
            data.resize(page, 0);
            let ppn = free.next().expect("reserved above");
            self.qp.lock().call(Command::PageWrite { ppn, data })?;
            blob_ppns.push(ppn);
        }
        let mut index_pages = Vec::new();
        for chunk in blob_ppns.chunks(page / 8) {
            let mut data = vec![0xff; page];
            for (i, p) in chunk.iter().enumerate() {
                data[8 * i..8 * i + 8].copy_from_slice(&p.to_le_bytes());
            }
            let ppn = free.next().expect("reserved above");
            self.qp.lock().call(Command::PageWrite { ppn, data })?;
            index_pages.push(ppn);
        }
        if index_pages.len() > Root::capacity(page) {
            return Err(StoreError::InvalidInput(format!(
                "a {}-byte checkpoint does not fit one root page's index",
                blob.len()
            )));
        }
        let generation = self.generation.lock().wrapping_add(1);
        // Every commit so far is in the blob (the caller holds off new ones).
        let log_lsn = self.wal.end();
        self.wal.flush_to(log_lsn, &self.wal_qp)?;
        let index_pages_kept = index_pages.clone();
        let root = Root {
            blob_bytes: blob.len() as u64,
            blob_crc: crc32fast::hash(&blob),
            generation,
            log_start: self.wal.geo.start,
            log_pages: self.wal.geo.pages,
            log_lsn,
            index_pages,
        };
        let mut qp = self.qp.lock();
        qp.call(Command::Flush)?;
        qp.call(Command::PageWrite { ppn: ROOT_PPN + generation % 2, data: root.encode(page) })?;
        qp.call(Command::Flush)?;
        drop(qp);
        *self.generation.lock() = generation;
        self.wal.set_checkpoint(log_lsn);
        // No durable checkpoint references what was superseded before the
        // capture any more.
        self.checkpoint_durable();
        self.maps.lock().last_checkpoint = CheckpointSize { blob_bytes: blob.len() as u64, ..size };
        // This checkpoint is durable: the previous one's pages are free.
        let mut pages = self.checkpoint_pages.lock();
        let previous = std::mem::replace(&mut pages.durable, blob_ppns.into_iter().chain(index_pages_kept).collect());
        pages.free.extend(previous);
        pages.free.extend(free);
        Ok(())
    }

    fn checkpoint_blob(&self, txn: &TxnMeta, committed: &CommittedHeads) -> Checkpoint {
        // Lock order everywhere: a table's state before the maps.
        let tables = self
            .tables()
            .iter()
            .map(|t| {
                let s = t.state.lock();
                let over = committed.get(&t.id);
                let head = |v: usize| *over.and_then(|c| c.get(&(v as u64))).unwrap_or(&s.heads[v]);
                TableMeta {
                    id: t.id,
                    name: t.name.clone(),
                    layout_descriptor: LayoutDescriptor::encode(&t.layout),
                    column_names: t.columns.iter().map(|c| c.name.clone()).collect(),
                    heads: (0..s.heads.len()).map(head).map(|h| (h.rid.0, h.create_ts, h.tombstone)).collect(),
                    vid_pages: s.vid_pages.clone(),
                    heap_pages: s.heap_pages.clone(),
                }
            })
            .collect();
        let mut m = self.maps.lock();
        // The blob records these maps: the pages superseded so far are not in it.
        m.reuse.capture();
        Checkpoint {
            next_lpn: m.next_lpn,
            next_txn: txn.next_txn,
            next_region: m.alloc.next_region,
            cursors: m.alloc.cursors.iter().map(|(&o, &(n, e))| (o, n, e)).collect(),
            l2p: m.l2p.clone(),
            l2p_pages: m.l2p_pages.clone(),
            tables,
            snapshots: txn.snapshots.clone(),
        }
    }

    /// Opens the store of an existing image from its last checkpoint and
    /// replays the write-ahead log after it.
    pub fn open(dev: Device, opts: StoreOptions) -> Result<(Store, TxnMeta)> {
        Store::open_with_report(dev, opts).map(|(s, m, _)| (s, m))
    }

    /// [`Store::open`], saying what recovery did.
    pub fn open_with_report(dev: Device, opts: StoreOptions) -> Result<(Store, TxnMeta, Recovery)> {
        let t0 = std::time::Instant::now();
        let store = Store::new(dev, opts)?;
        let page = store.page_bytes;
        let corrupt = |what: &str, e: &dyn std::fmt::Display| StoreError::Corrupt(format!("{what}: {e}"));
        let mut slots = Vec::new();
        let mut notes = Vec::new();
        for ppn in [ROOT_PPN, ROOT_PPN + 1] {
            let bytes = store.qp.lock().call(Command::PageRead { ppn })?.into_data();
            match Root::decode(&bytes) {
                Ok(Some(r)) => slots.push(r),
                Ok(None) => {}
                Err(ndpdb_format::FormatError::UnsupportedVersion { found, supported, .. }) => {
                    return Err(StoreError::InvalidInput(format!(
                        "the database was written in format version {found}; this build reads version {supported}: \
                         open it with a matching ndpdb build"
                    )));
                }
                Err(e) => notes.push(format!("root slot {ppn} is unreadable ({e}); the other slot was used")),
            }
        }
        let root = slots.into_iter().max_by_key(|r| r.generation).ok_or_else(|| {
            if notes.is_empty() {
                StoreError::InvalidInput(
                    "the image holds no database (no checkpoint in pages 0 and 1): create one with `ndpdb db create`"
                        .into(),
                )
            } else {
                StoreError::Corrupt(format!("both root slots are unreadable: {}", notes.join("; ")))
            }
        })?;
        let mut blob = Vec::with_capacity(root.blob_bytes as usize);
        let pages_needed = (root.blob_bytes as usize).div_ceil(page);
        let mut checkpoint_pages = root.index_pages.clone();
        'index: for &ip in &root.index_pages {
            let index = store.qp.lock().call(Command::PageRead { ppn: ip })?.into_data();
            for e in index.chunks(8) {
                if blob.len() >= pages_needed * page {
                    break 'index;
                }
                let ppn = u64::from_le_bytes(e.try_into().expect("8 bytes"));
                checkpoint_pages.push(ppn);
                let data = store
                    .qp
                    .lock()
                    .call(Command::PageRead { ppn })
                    .map_err(|e| corrupt("checkpoint page", &e))?
                    .into_data();
                blob.extend_from_slice(&data);
            }
        }
        if blob.len() < root.blob_bytes as usize {
            return Err(StoreError::Corrupt(format!(
                "the checkpoint lists {} bytes but its pages hold {}",
                root.blob_bytes,
                blob.len()
            )));
        }
        blob.truncate(root.blob_bytes as usize);
        let crc = crc32fast::hash(&blob);
        if crc != root.blob_crc {
            return Err(StoreError::Corrupt(format!(
                "checkpoint blob CRC {crc:#010x}, the root page says {:#010x}",
                root.blob_crc
            )));
        }
        let cp = Checkpoint::decode(&blob).map_err(|e| corrupt("checkpoint", &e))?;
        let total = store.maps.lock().alloc.total_pages;
        if root.log_pages == 0 || root.log_start.checked_add(root.log_pages).is_none_or(|e| e > total) {
            return Err(StoreError::Corrupt(format!(
                "root: log pages {}..+{} outside the device's {total}",
                root.log_start, root.log_pages
            )));
        }
        let (mut store, mut meta) = store.restore(cp, root.generation)?;
        store.rebuild_free_pages(root.log_start + root.log_pages, &checkpoint_pages)?;
        store.checkpoint_pages.lock().durable = checkpoint_pages;
        store.maps.lock().last_checkpoint.blob_bytes = root.blob_bytes;
        let geo = LogGeometry { start: root.log_start, pages: root.log_pages, page_bytes: page as u64 };
        let scan = wal::scan(geo, root.log_lsn, &store.qp)?;
        if !notes.is_empty()
            && let Some(newest) = wal::newest_valid_lsn(geo, &store.qp)?
            && newest >= scan.end
        {
            // The newer root slot is unreadable and replay from the older
            // one stopped short of committed records: opening would lose
            // them, and the next checkpoint would make that final.
            return Err(StoreError::Corrupt(format!(
                "{}; recovery from the older checkpoint stops at log position {} ({}), but the log holds a \
                 committed record at {newest}: the transactions between cannot be recovered. The image is left \
                 as it is; restore it from a copy",
                notes.join("; "),
                scan.end,
                scan.truncated.as_deref().unwrap_or("the end of the valid records")
            )));
        }
        let mut rec = Recovery {
            records: scan.records.len() as u64,
            log_bytes: scan.end - root.log_lsn,
            truncated: scan.truncated.clone(),
            root_note: (!notes.is_empty()).then(|| notes.join("; ")),
            ..Recovery::default()
        };
        for r in &scan.records {
            store.replay(r, &mut meta, &mut rec).map_err(|e| match e {
                StoreError::Corrupt(m) => StoreError::Corrupt(format!("log record at LSN {}: {m}", r.lsn)),
                other => other,
            })?;
        }
        store.wal = Wal::new(geo, scan.end, root.log_lsn, scan.tail_page);
        rec.wall_s = t0.elapsed().as_secs_f64();
        Ok((store, meta, rec))
    }

    /// Applies one log record to the state restored from the checkpoint.
    fn replay(&self, r: &wal::LogRecord, meta: &mut TxnMeta, rec: &mut Recovery) -> Result<()> {
        let record = Record::decode(r.kind, &r.payload).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        match record {
            Record::Commit { txn, ops } => {
                self.replay_commit(txn, &ops)?;
                meta.next_txn = meta.next_txn.max(txn + 1);
                rec.commits += 1;
            }
            Record::CreateTable(def) => self.replay_create_table(def)?,
            Record::PinSnapshot { id, xmax } => {
                meta.snapshots.retain(|&(i, _)| i != id);
                meta.snapshots.push((id, xmax));
                meta.snapshots.sort_unstable();
                meta.next_txn = meta.next_txn.max(xmax);
            }
            Record::DropSnapshot { id, .. } => meta.snapshots.retain(|&(i, _)| i != id),
        }
        Ok(())
    }

    /// Appends each operation's version as transaction `txn` and makes it
    /// the VID's newest, growing the VID map for inserts.
    fn replay_commit(&self, txn: u64, ops: &[LogOp]) -> Result<()> {
        let bad = |what: String| StoreError::Corrupt(what);
        let tables = self.tables();
        for op in ops {
            let table = tables
                .iter()
                .find(|t| t.id == op.table)
                .ok_or_else(|| bad(format!("table {} does not exist", op.table)))?;
            if op.vid > 1 << 40 {
                return Err(bad(format!("VID {} is implausible", op.vid)));
            }
            while table.vids() <= op.vid {
                self.new_vid(table);
            }
            let head = table.head(op.vid).expect("extended above");
            let tombstone = op.kind == OpKind::Delete;
            let header = VersionHeader { create_ts: txn, prev: head.rid, tombstone, data_len: op.data.len() as u16 };
            let rid = self.append_version_as(table, header, &op.data, Budget::Checkpoint)?;
            self.set_head(table, op.vid, Head { rid, create_ts: txn, tombstone });
        }
        Ok(())
    }

    /// Creates a logged table unless the checkpoint has it; it must get the
    /// id it was created with.
    fn replay_create_table(&self, def: TableDef) -> Result<()> {
        let bad = |what: String| StoreError::Corrupt(what);
        let TableDef { id, name, layout_descriptor, column_names: names } = def;
        let layout = LayoutDescriptor::decode(&layout_descriptor).map_err(|e| bad(format!("table {name}: {e}")))?;
        if names.len() != layout.slots.len() {
            return Err(bad(format!("table {name}: {} names for {} columns", names.len(), layout.slots.len())));
        }
        let columns: Vec<Column> = names
            .into_iter()
            .zip(&layout.slots)
            .map(|(n, s)| Column { name: n, ty: s.ty, nullable: s.nullable })
            .collect();
        if self.table(&name).is_none() {
            let t = self.create_table_unlogged(&name, columns)?;
            if t.id != id {
                return Err(bad(format!("table {name} was created as {id}, replayed as {}", t.id)));
            }
        }
        Ok(())
    }

    fn restore(self, cp: Checkpoint, generation: u64) -> Result<(Store, TxnMeta)> {
        let total_pages = self.maps.lock().alloc.total_pages;
        let bad = |what: String| StoreError::Corrupt(format!("checkpoint: {what}"));
        if cp.next_lpn != cp.l2p.len() as u64 || cp.next_region > total_pages {
            return Err(bad(format!(
                "{} logical pages for next_lpn {}, region {} of {total_pages} pages",
                cp.l2p.len(),
                cp.next_lpn,
                cp.next_region
            )));
        }
        if let Some(p) = cp.l2p.iter().chain(&cp.l2p_pages).find(|&&p| p != u64::MAX && p >= total_pages) {
            return Err(bad(format!("physical page {p} beyond the device's {total_pages}")));
        }
        {
            let mut m = self.maps.lock();
            let region_pages = m.alloc.region_pages;
            *m = Maps {
                l2p: cp.l2p,
                l2p_dirty: BTreeSet::new(),
                l2p_pages: cp.l2p_pages,
                next_lpn: cp.next_lpn,
                reuse: PageReuse::default(),
                // The blob's bytes are the root's (`open_with_report`).
                last_checkpoint: CheckpointSize {
                    blob_bytes: 0,
                    tuples: cp.tables.iter().map(|t| t.heads.len() as u64).sum(),
                    lpns: cp.next_lpn,
                },
                alloc: Allocator {
                    next_region: cp.next_region,
                    region_pages,
                    total_pages,
                    cursors: cp.cursors.iter().map(|&(o, n, e)| (o, (n, e))).collect::<HashMap<_, _>>(),
                },
            };
        }
        for t in cp.tables {
            let layout =
                LayoutDescriptor::decode(&t.layout_descriptor).map_err(|e| bad(format!("table {}: {e}", t.name)))?;
            if t.column_names.len() != layout.slots.len() {
                return Err(bad(format!(
                    "table {}: {} names for {} columns",
                    t.name,
                    t.column_names.len(),
                    layout.slots.len()
                )));
            }
            let columns: Vec<Column> = t
                .column_names
                .iter()
                .zip(&layout.slots)
                .map(|(n, s)| Column { name: n.clone(), ty: s.ty, nullable: s.nullable })
                .collect();
            let layout_range = self.layout_range(&t.layout_descriptor)?;
            let heads = t
                .heads
                .iter()
                .map(|&(rid, create_ts, tombstone)| Head { rid: RecordId(rid), create_ts, tombstone })
                .collect();
            let table = Arc::new(Table {
                id: t.id,
                name: t.name,
                columns,
                layout,
                layout_range,
                state: Mutex::new(TableState {
                    heads,
                    vid_dirty: BTreeSet::new(),
                    vid_pages: t.vid_pages,
                    delta: Vec::new(),
                    heap_pages: t.heap_pages,
                }),
            });
            self.tuples.fetch_add(table.state.lock().heads.len() as u64, Ordering::Relaxed);
            self.table_count.fetch_add(1, Ordering::Relaxed);
            self.tables.lock().push(table);
        }
        *self.generation.lock() = generation;
        Ok((self, TxnMeta { next_txn: cp.next_txn, snapshots: cp.snapshots }))
    }

    /// After a restore, before the log is replayed: every allocated data page
    /// that the restored checkpoint does not reference is free (pages that
    /// were on their way back when the last process ended, pages superseded
    /// after the checkpoint, pages written after it, older checkpoints'
    /// blobs). Allocated: regions from `data_start` up to the allocator's
    /// next region, less each object's unallocated cursor range. Referenced:
    /// the L2P map's pages and entries, and the checkpoint's own pages. A
    /// free page goes to the object whose referenced pages share its region
    /// (a region has one owner), else to the checkpoint blobs' object.
    /// Fails if the checkpoint references a page outside what it allocated.
    pub(crate) fn rebuild_free_pages(&self, data_start: u64, checkpoint_pages: &[u64]) -> Result<()> {
        let tables = self.tables();
        let mut m = self.maps.lock();
        let (region, next_region) = (m.alloc.region_pages, m.alloc.next_region);
        if data_start > next_region || region == 0 {
            return Err(StoreError::Corrupt(format!(
                "checkpoint: allocator region {next_region} before the data pages at {data_start}"
            )));
        }
        // Owner of each region, from what references pages in it.
        let mut owner: HashMap<u64, u64> = HashMap::new();
        let mut lpn_object: HashMap<u64, u64> = HashMap::new();
        for t in &tables {
            let s = t.state.lock();
            lpn_object.extend(s.heap_pages.iter().map(|&l| (l, crate::store::heap_object(t.id))));
            lpn_object.extend(s.vid_pages.iter().map(|&l| (l, crate::store::vid_object(t.id))));
        }
        let mut referenced: HashSet<u64> = HashSet::new();
        let mut refer = |ppn: u64, object: Option<u64>| -> Result<()> {
            if ppn < data_start || ppn >= next_region {
                return Err(StoreError::Corrupt(format!(
                    "checkpoint: physical page {ppn} outside the allocated pages {data_start}..{next_region}"
                )));
            }
            referenced.insert(ppn);
            if let Some(o) = object {
                owner.entry((ppn - data_start) / region).or_insert(o);
            }
            Ok(())
        };
        for (lpn, &ppn) in m.l2p.iter().enumerate() {
            if ppn != u64::MAX {
                refer(ppn, lpn_object.get(&(lpn as u64)).copied())?;
            }
        }
        for &ppn in m.l2p_pages.iter().filter(|&&p| p != u64::MAX) {
            refer(ppn, Some(L2P_OBJECT))?;
        }
        for &ppn in checkpoint_pages {
            refer(ppn, Some(META_OBJECT))?;
        }
        for (&object, &(next, end)) in &m.alloc.cursors {
            if end > next && next >= data_start {
                owner.entry((next - data_start) / region).or_insert(object);
            }
        }
        let unallocated: Vec<(u64, u64)> = m.alloc.cursors.values().copied().collect();
        // Highest first: objects take from the end, so in ascending order.
        let free: Vec<(u64, u64)> = (data_start..next_region)
            .rev()
            .filter(|p| !referenced.contains(p) && !unallocated.iter().any(|&(n, e)| (n..e).contains(p)))
            .map(|p| (*owner.get(&((p - data_start) / region)).unwrap_or(&META_OBJECT), p))
            .collect();
        m.reuse.restore_free(free);
        Ok(())
    }

    /// A device memory range holding a layout descriptor.
    pub(crate) fn layout_range(&self, desc: &[u8]) -> Result<u32> {
        let mut qp = self.qp.lock();
        let range = match qp.call(Command::MemoryRangeCreate { bytes: desc.len() as u64 })? {
            Reply::Range(r) => r,
            other => return Err(StoreError::Corrupt(format!("device replied {other:?} to memory_range_create"))),
        };
        qp.call(Command::MemoryWrite { range, offset: 0, data: desc.to_vec() })?;
        Ok(range)
    }
}
