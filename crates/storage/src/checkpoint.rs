//! Closing and reopening a store: the checkpoint of `ndpdb_format::checkpoint`.
//!
//! A clean close writes every table's delta buffer, the dirty VID-map and
//! L2P pages, then the checkpoint blob and its index pages to new physical
//! pages, and finally the root page (physical page 0 or 1, the pages that
//! are written in place). Opening reads the root, the index pages and the
//! blob, checks the blob's CRC and rebuilds the maps, the catalog and the
//! heads. Device memory does not survive a restart, so opening also writes
//! each table's layout descriptor to the device again.
//!
//! The root has two slots (pages 0 and 1, `generation % 2`), so a torn root
//! write leaves the previous checkpoint readable. A checkpoint records the
//! log position it reflects; opening replays the write-ahead log from there
//! (`wal.rs`), so a crash between checkpoints loses no committed transaction.
//! Which checkpoint an open starts from, and what it does about damage, is
//! `recovery.rs`'s; this module restores a checkpoint and replays records.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ndpdb_device::Command;
use ndpdb_format::checkpoint::{Checkpoint, Root, TableMeta, index_page};
use ndpdb_format::page::RecordId;
use ndpdb_format::schema::{Column, LayoutDescriptor};

use crate::alloc::{AllocClass, Allocator, META_OBJECT, ROOT_PPN};
use crate::error::{Result, StoreError};
use crate::lock_order::{Level, OrderedMutex};
use crate::maps::Maps;
use crate::recovery::Recovery;
use crate::reserve::{CheckpointSize, blob_pages};
use crate::store::Store;
use crate::table::{Head, Table, TableId, TableState};
use crate::wal;
use ndpdb_format::record::VersionHeader;
use ndpdb_format::wal::{LogOp, OpKind, Record, TableDef};

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

/// Physical pages of checkpoint blobs. Those of the newest durable
/// checkpoint are what recovery reads; once a newer checkpoint is durable
/// (its root written and flushed), they are free for the next one. A torn
/// root falls back to the newest durable checkpoint, never to an older one,
/// so that is safe. After a restart, older checkpoints' pages are found
/// free at open with every other unreferenced page (`reuse.rs`).
#[derive(Debug, Default)]
pub(crate) struct CheckpointPages {
    pub durable: Vec<u64>,
    pub free: Vec<u64>,
}

/// The checkpoints written to this image so far, and their pages.
pub(crate) struct Checkpoints {
    pub generation: OrderedMutex<u64>,
    pub pages: OrderedMutex<CheckpointPages>,
}

impl Default for Checkpoints {
    fn default() -> Self {
        Checkpoints {
            generation: OrderedMutex::new(Level::Generation, 0),
            pages: OrderedMutex::new(Level::CheckpointPages, CheckpointPages::default()),
        }
    }
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
            for _ in 0..crate::table::CHAIN_MAX {
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
        self.writable("a checkpoint")?;
        self.shape.checkpoint_allocated.store(0, Ordering::Relaxed);
        for t in self.tables() {
            self.write_delta(&t, &mut t.state.lock(), AllocClass::Checkpoint)?;
            self.flush_vid_map_as(&t, committed.get(&t.id), AllocClass::Checkpoint)?;
        }
        self.flush_l2p(AllocClass::Checkpoint)?;
        let (blob, size, reserved) = self.checkpoint_blob_and_pages(txn, committed)?;
        let mut free = reserved.into_iter();
        let (blob_ppns, index_pages) = self.write_blob(&blob, &mut free)?;
        if index_pages.len() > Root::capacity(self.page_bytes) {
            return Err(StoreError::InvalidInput(format!(
                "a {}-byte checkpoint does not fit one root page's index",
                blob.len()
            )));
        }
        let generation = self.checkpoints.generation.lock().wrapping_add(1);
        // Every commit so far is in the blob (the caller holds off new ones).
        let log_lsn = self.wal.end();
        crate::lock_order::assert_none_held();
        self.wal.flush_to(log_lsn, &self.wal_qp)?;
        let root = Root {
            blob_bytes: blob.len() as u64,
            blob_crc: crc32fast::hash(&blob),
            generation,
            log_start: self.wal.geo.start,
            log_pages: self.wal.geo.pages,
            log_lsn,
            index_pages: index_pages.clone(),
        };
        self.write_root(&root)?;
        *self.checkpoints.generation.lock() = generation;
        self.wal.set_checkpoint(log_lsn);
        // No durable checkpoint references what was superseded before the
        // capture any more.
        self.checkpoint_durable();
        self.maps.lock().last_checkpoint = CheckpointSize { blob_bytes: blob.len() as u64, ..size };
        // This checkpoint is durable: the previous one's pages are free.
        let mut pages = self.checkpoints.pages.lock();
        let previous = std::mem::replace(&mut pages.durable, blob_ppns.into_iter().chain(index_pages).collect());
        pages.free.extend(previous);
        pages.free.extend(free);
        Ok(())
    }

    /// The checkpoint blob, its size for the reserve, and the pages it and
    /// its index go to. The blob's own pages must be allocated before the
    /// blob records the allocator, or the next run would hand them out
    /// again and overwrite this checkpoint while it is still the one to
    /// recover from. More pages change the cursors' values, not the blob's
    /// length (except a first cursor for META_OBJECT), so this settles in
    /// two rounds.
    fn checkpoint_blob_and_pages(
        &self,
        txn: &TxnMeta,
        committed: &CommittedHeads,
    ) -> Result<(Vec<u8>, CheckpointSize, Vec<u64>)> {
        let mut reserved: Vec<u64> = Vec::new();
        loop {
            let cp = self.checkpoint_blob(txn, committed);
            let size = CheckpointSize {
                blob_bytes: 0,
                tuples: cp.tables.iter().map(|t| t.heads.len() as u64).sum(),
                lpns: cp.next_lpn,
            };
            let blob = cp.encode();
            let need = blob_pages(blob.len() as u64, self.page_bytes as u64) as usize;
            if reserved.len() >= need {
                return Ok((blob, size, reserved));
            }
            while reserved.len() < need {
                let reused = self.checkpoints.pages.lock().free.pop();
                reserved.push(match reused {
                    Some(ppn) => ppn,
                    None => self.allocate(META_OBJECT, AllocClass::Checkpoint)?,
                });
            }
        }
    }

    /// Writes the blob to pages from `free`, then its index pages
    /// (`format::checkpoint::index_page`); returns both lists.
    fn write_blob(&self, blob: &[u8], free: &mut impl Iterator<Item = u64>) -> Result<(Vec<u64>, Vec<u64>)> {
        let page = self.page_bytes;
        let mut blob_ppns = Vec::new();
        for chunk in blob.chunks(page) {
            let mut data = chunk.to_vec();
            data.resize(page, 0);
            let ppn = free.next().expect("reserved for the blob");
            self.qp.lock().call(Command::PageWrite { ppn, data })?;
            blob_ppns.push(ppn);
        }
        let mut index_pages = Vec::new();
        for chunk in blob_ppns.chunks(page / 8) {
            let data = index_page(page, chunk);
            let ppn = free.next().expect("reserved for the index");
            self.qp.lock().call(Command::PageWrite { ppn, data })?;
            index_pages.push(ppn);
        }
        Ok((blob_ppns, index_pages))
    }

    /// Makes everything written so far durable, then writes the root to
    /// its slot and makes it durable: the checkpoint is then the newest.
    fn write_root(&self, root: &Root) -> Result<()> {
        let mut qp = self.qp.lock();
        qp.call(Command::Flush)?;
        qp.call(Command::PageWrite { ppn: ROOT_PPN + root.generation % 2, data: root.encode(self.page_bytes) })?;
        qp.call(Command::Flush)?;
        Ok(())
    }

    fn checkpoint_blob(&self, txn: &TxnMeta, committed: &CommittedHeads) -> Checkpoint {
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
            l2p_pages: blob_l2p_pages(&m.l2p_pages, &m.l2p_dirty, self.per_page),
            tables,
            snapshots: txn.snapshots.clone(),
        }
    }

    /// Applies one log record to the state restored from the checkpoint.
    pub(crate) fn replay(&self, r: &wal::LogRecord, meta: &mut TxnMeta, rec: &mut Recovery) -> Result<()> {
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
            // Host memory of the run that wrote it: nothing to restore
            // (the versions it held are in commit records).
            Record::DeltaPage { .. } => {}
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
            let rid = self.append_version_as(table, header, &op.data, AllocClass::Checkpoint)?;
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

    /// The store `self` with the maps, the catalog and the heads of `cp`
    /// (which [`validate`] accepted).
    pub(crate) fn restore(self, cp: Checkpoint, generation: u64) -> Result<(Store, TxnMeta)> {
        let total_pages = self.maps.lock().alloc.total_pages;
        debug_assert_eq!(validate(&cp, total_pages), Ok(()), "validated before");
        {
            let mut m = self.maps.lock();
            let region_pages = m.alloc.region_pages;
            let mut alloc = Allocator::new(cp.next_region, region_pages, total_pages);
            alloc.cursors = cp.cursors.iter().map(|&(o, n, e)| (o, (n, e))).collect::<HashMap<_, _>>();
            *m = Maps {
                l2p: cp.l2p,
                l2p_pages: cp.l2p_pages,
                next_lpn: cp.next_lpn,
                // The blob's bytes are the root's (`open_with_report`).
                last_checkpoint: CheckpointSize {
                    blob_bytes: 0,
                    tuples: cp.tables.iter().map(|t| t.heads.len() as u64).sum(),
                    lpns: cp.next_lpn,
                },
                ..Maps::new(alloc)
            };
            m.l2p_dirty = unwritten_entries(&m.l2p, &m.l2p_pages, self.per_page);
        }
        for t in cp.tables {
            let table = self.restore_table(t)?;
            self.shape.tuples.fetch_add(table.state.lock().heads.len() as u64, Ordering::Relaxed);
            self.shape.tables.fetch_add(1, Ordering::Relaxed);
            self.tables.lock().push(Arc::new(table));
        }
        *self.checkpoints.generation.lock() = generation;
        Ok((self, TxnMeta { next_txn: cp.next_txn, snapshots: cp.snapshots }))
    }

    /// A table as the checkpoint recorded it, with its layout descriptor in
    /// device memory again.
    fn restore_table(&self, t: TableMeta) -> Result<Table> {
        let layout = LayoutDescriptor::decode(&t.layout_descriptor)
            .map_err(|e| StoreError::Corrupt(format!("checkpoint: table {}: {e}", t.name)))?;
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
        let state = TableState {
            heads,
            vid_dirty: BTreeSet::new(),
            vid_pages: t.vid_pages,
            delta: Vec::new(),
            delta_frames: Vec::new(),
            heap_pages: t.heap_pages,
            epoch: 0,
        };
        Ok(Table::new(t.id, t.name, columns, layout, layout_range, state))
    }
}

/// The checks a decoded checkpoint must pass before it is restored: the L2P
/// map has `next_lpn` entries, no physical page lies beyond the device, and
/// each table's layout descriptor decodes and matches its column names.
pub(crate) fn validate(cp: &Checkpoint, total_pages: u64) -> std::result::Result<(), String> {
    if cp.next_lpn != cp.l2p.len() as u64 || cp.next_region > total_pages {
        return Err(format!(
            "{} logical pages for next_lpn {}, region {} of {total_pages} pages",
            cp.l2p.len(),
            cp.next_lpn,
            cp.next_region
        ));
    }
    if let Some(p) = cp.l2p.iter().chain(&cp.l2p_pages).find(|&&p| p != u64::MAX && p >= total_pages) {
        return Err(format!("physical page {p} beyond the device's {total_pages}"));
    }
    for t in &cp.tables {
        let layout = LayoutDescriptor::decode(&t.layout_descriptor).map_err(|e| format!("table {}: {e}", t.name))?;
        if t.column_names.len() != layout.slots.len() {
            return Err(format!("table {}: {} names for {} columns", t.name, t.column_names.len(), layout.slots.len()));
        }
    }
    Ok(())
}

/// The L2P map pages a blob records. The checkpoint flushed the L2P map,
/// but GC, writers and update-NDP may have remapped pages since (they do
/// not wait for checkpoints): a page holding such an entry no longer says
/// what the blob's map says, so it is recorded as not written, and an
/// open ships its entries with NDP calls ([`unwritten_entries`]) until a
/// flush writes it again.
fn blob_l2p_pages(l2p_pages: &[u64], dirty: &BTreeSet<u64>, per_page: usize) -> Vec<u64> {
    let mut pages = l2p_pages.to_vec();
    for &lpn in dirty {
        if let Some(p) = pages.get_mut(lpn as usize / per_page) {
            *p = u64::MAX;
        }
    }
    pages
}

/// The mapped entries of a restored L2P map whose page is not on the
/// device ([`blob_l2p_pages`]): dirty, so that NDP calls get them shipped.
fn unwritten_entries(l2p: &[u64], l2p_pages: &[u64], per_page: usize) -> BTreeSet<u64> {
    let unwritten = |lpn: usize| l2p_pages.get(lpn / per_page).is_none_or(|&p| p == u64::MAX);
    (0..l2p.len()).filter(|&l| l2p[l] != u64::MAX && unwritten(l)).map(|l| l as u64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page with an entry remapped after the checkpoint's flush is
    /// recorded as not written; on restore its mapped entries are dirty
    /// (shipped), as are those of a page never written.
    #[test]
    fn pages_with_entries_remapped_after_the_flush_are_recorded_unwritten() {
        let dirty = BTreeSet::from([5]);
        assert_eq!(blob_l2p_pages(&[10, 11, 12], &dirty, 4), vec![10, u64::MAX, 12]);
        assert_eq!(blob_l2p_pages(&[10, 11, 12], &BTreeSet::new(), 4), vec![10, 11, 12]);
        let l2p = [1, 2, u64::MAX, 3, 4, u64::MAX, 6, 7, 8, 9];
        let pages = [10, u64::MAX];
        assert_eq!(unwritten_entries(&l2p, &pages, 4), BTreeSet::from([4, 6, 7, 8, 9]));
    }
}
