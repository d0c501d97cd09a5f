//! Closing and reopening a store: the checkpoint of `ndpdb_format::meta`.
//!
//! A clean close writes every table's delta buffer, the dirty VID-map and
//! L2P pages, then the checkpoint blob and its index pages to new physical
//! pages, and finally the root page (physical page 0, the one page that is
//! written in place). Opening reads the root, the index pages and the blob,
//! checks the blob's CRC and rebuilds the maps, the catalog and the heads.
//! Device memory does not survive a restart, so opening also writes each
//! table's layout descriptor to the device again.
//!
//! A crash between checkpoints loses what came after the last one; the
//! write-ahead log (a later issue) closes that gap.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use ndpdb_device::{Command, Device, Reply};
use ndpdb_format::meta::{Checkpoint, Root, TableMeta};
use ndpdb_format::page::RecordId;
use ndpdb_format::schema::{Column, LayoutDescriptor};
use parking_lot::Mutex;

use crate::store::{Allocator, Head, META_OBJECT, Maps, ROOT_PPN, Store, StoreError, StoreOptions, Table, TableState};

type Result<T> = std::result::Result<T, StoreError>;

/// What the transaction layer keeps in a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnMeta {
    pub next_txn: u64,
    /// Pinned snapshots: (id, xmax).
    pub snapshots: Vec<(u64, u64)>,
}

impl Store {
    /// Writes everything a reopen needs (see the module docs).
    pub fn checkpoint(&self, txn: &TxnMeta) -> Result<()> {
        for t in self.tables() {
            self.flush(&t)?;
        }
        self.flush_l2p()?;
        let blob = self.checkpoint_blob(txn).encode();
        let page = self.page_bytes;
        let mut blob_ppns = Vec::new();
        for chunk in blob.chunks(page) {
            let mut data = chunk.to_vec();
            data.resize(page, 0);
            let ppn = self.maps.lock().alloc.allocate(META_OBJECT)?;
            self.qp.lock().call(Command::PageWrite { ppn, data })?;
            blob_ppns.push(ppn);
        }
        let mut index_pages = Vec::new();
        for chunk in blob_ppns.chunks(page / 8) {
            let mut data = vec![0xff; page];
            for (i, p) in chunk.iter().enumerate() {
                data[8 * i..8 * i + 8].copy_from_slice(&p.to_le_bytes());
            }
            let ppn = self.maps.lock().alloc.allocate(META_OBJECT)?;
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
        let root = Root { blob_bytes: blob.len() as u64, blob_crc: crc32fast::hash(&blob), generation, index_pages };
        let mut qp = self.qp.lock();
        qp.call(Command::Flush)?;
        qp.call(Command::PageWrite { ppn: ROOT_PPN, data: root.encode(page) })?;
        qp.call(Command::Flush)?;
        *self.generation.lock() = generation;
        Ok(())
    }

    fn checkpoint_blob(&self, txn: &TxnMeta) -> Checkpoint {
        // Lock order everywhere: a table's state before the maps.
        let tables = self
            .tables()
            .iter()
            .map(|t| {
                let s = t.state.lock();
                TableMeta {
                    id: t.id,
                    name: t.name.clone(),
                    layout_descriptor: LayoutDescriptor::encode(&t.layout),
                    column_names: t.columns.iter().map(|c| c.name.clone()).collect(),
                    heads: s.heads.iter().map(|h| (h.rid.0, h.create_ts, h.tombstone)).collect(),
                    vid_pages: s.vid_pages.clone(),
                    heap_pages: s.heap_pages.clone(),
                }
            })
            .collect();
        let m = self.maps.lock();
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

    /// Opens the store of an existing image from its last checkpoint.
    pub fn open(dev: Device, opts: StoreOptions) -> Result<(Store, TxnMeta)> {
        let store = Store::new(dev, opts)?;
        let page = store.page_bytes;
        let corrupt = |what: &str, e: &dyn std::fmt::Display| StoreError::Corrupt(format!("{what}: {e}"));
        let root_bytes = store.qp.lock().call(Command::PageRead { ppn: ROOT_PPN })?.into_data();
        let root =
            Root::decode(&root_bytes).map_err(|e| corrupt("root page (physical page 0)", &e))?.ok_or_else(|| {
                StoreError::InvalidInput(
                    "the image holds no database (no checkpoint in page 0): create one with `ndpdb db create`".into(),
                )
            })?;
        let mut blob = Vec::with_capacity(root.blob_bytes as usize);
        let pages_needed = (root.blob_bytes as usize).div_ceil(page);
        'index: for &ip in &root.index_pages {
            let index = store.qp.lock().call(Command::PageRead { ppn: ip })?.into_data();
            for e in index.chunks(8) {
                if blob.len() >= pages_needed * page {
                    break 'index;
                }
                let ppn = u64::from_le_bytes(e.try_into().expect("8 bytes"));
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
        store.restore(cp, root.generation)
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
            self.tables.lock().push(table);
        }
        *self.generation.lock() = generation;
        Ok((self, TxnMeta { next_txn: cp.next_txn, snapshots: cp.snapshots }))
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
