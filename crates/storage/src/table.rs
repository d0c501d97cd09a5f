//! Tables: the catalog entry ([`Table`]), each table's VID map of heads and
//! delta buffer ([`TableState`]), creating tables, and writing versions.
//!
//! New versions go to the table's delta buffer, a few logical pages in host
//! memory; when all are full they are written to the device, oldest first
//! (`write_delta`). A reader finds every record either in the buffer or on
//! the device: a page leaves the buffer only once the L2P map points at its
//! copy, under the table's state lock.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ndpdb_device::{Command, RangeId, Reply};
use ndpdb_format::page::{self, HeapPage, RecordId};
use ndpdb_format::record::VersionHeader;
use ndpdb_format::schema::{Column, Layout, LayoutDescriptor, Value};
use ndpdb_format::wal::{DELTA_PAGE_BYTES, Record, record_bytes};

use crate::alloc::{AllocClass, heap_object};
use crate::delta_frames::DeltaFrame;
use crate::error::{Result, StoreError};
use crate::lock_order::{Level, OrderedMutex};
use crate::store::Store;

pub type TableId = u32;

/// Versions a chain may have before a walk calls it corrupt (a cycle).
pub const CHAIN_MAX: usize = 1 << 24;

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
    pub(crate) state: OrderedMutex<TableState>,
    /// Zone maps of the columns scans asked for (`zones.rs`).
    pub(crate) zones: OrderedMutex<crate::zones::ZoneMaps>,
}

/// What changes as a table is written, under one lock.
#[derive(Default)]
pub(crate) struct TableState {
    /// The VID map: each tuple's newest version.
    pub heads: Vec<Head>,
    /// VIDs whose head changed since the VID map pages were last written.
    pub vid_dirty: std::collections::BTreeSet<u64>,
    /// Logical pages of the VID map, in order.
    pub vid_pages: Vec<u64>,
    /// Delta-buffer pages not yet written; the last one is being filled.
    pub delta: Vec<HeapPage>,
    /// Each delta page's frame (CBM freshness, `delta_frames.rs`), in the
    /// same order; None for pages started before the mirror was configured.
    pub delta_frames: Vec<Option<DeltaFrame>>,
    /// Heap pages written to the device, in order.
    pub heap_pages: Vec<u64>,
    /// Changes of `heads` so far (a new VID, a new head): the epoch zone
    /// maps are valid at (`zones.rs`). Garbage collection, which only
    /// removes versions or moves them, does not count.
    pub epoch: u64,
}

impl Table {
    pub(crate) fn new(
        id: TableId,
        name: String,
        columns: Vec<Column>,
        layout: Layout,
        layout_range: RangeId,
        state: TableState,
    ) -> Table {
        Table {
            id,
            name,
            columns,
            layout,
            layout_range,
            state: OrderedMutex::new(Level::TableState, state),
            zones: OrderedMutex::new(Level::Zones, Default::default()),
        }
    }

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

impl Store {
    pub fn table(&self, name: &str) -> Option<Arc<Table>> {
        self.tables.lock().iter().find(|t| t.name == name).cloned()
    }

    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.tables.lock().clone()
    }

    /// Creates a table without logging it (`Store::create_table` logs).
    pub(crate) fn create_table_unlogged(&self, name: &str, columns: Vec<Column>) -> Result<Arc<Table>> {
        let layout = Layout::new(&columns).map_err(|e| StoreError::InvalidInput(e.to_string()))?;
        let mut tables = self.tables.lock();
        if tables.iter().any(|t| t.name == name) {
            return Err(StoreError::InvalidInput(format!("table {name} already exists")));
        }
        let layout_range = self.layout_range(&LayoutDescriptor::encode(&layout))?;
        let id = tables.len() as TableId + 1;
        let table = Arc::new(Table::new(id, name.to_owned(), columns, layout, layout_range, TableState::default()));
        tables.push(table.clone());
        self.shape.tables.fetch_add(1, Ordering::Relaxed);
        Ok(table)
    }

    /// A device memory range holding a layout descriptor.
    pub(crate) fn layout_range(&self, desc: &[u8]) -> Result<RangeId> {
        let mut qp = self.qp.lock();
        let range = match qp.call(Command::MemoryRangeCreate { bytes: desc.len() as u64 })? {
            Reply::Range(r) => r,
            other => return Err(StoreError::Corrupt(format!("device replied {other:?} to memory_range_create"))),
        };
        qp.call(Command::MemoryWrite { range, offset: 0, data: desc.to_vec() })?;
        Ok(range)
    }

    /// A new tuple with no versions yet; returns its VID.
    pub fn new_vid(&self, table: &Table) -> u64 {
        let mut s = table.state.lock();
        s.heads.push(Head::NONE);
        s.epoch += 1;
        self.shape.tuples.fetch_add(1, Ordering::Relaxed);
        let vid = s.heads.len() as u64 - 1;
        s.vid_dirty.insert(vid);
        vid
    }

    pub fn set_head(&self, table: &Table, vid: u64, head: Head) {
        let mut s = table.state.lock();
        s.heads[vid as usize] = head;
        s.epoch += 1;
        s.vid_dirty.insert(vid);
    }

    /// Appends a version record to the table's delta buffer.
    pub fn append_version(&self, table: &Table, header: VersionHeader, data: &[u8]) -> Result<RecordId> {
        self.append_version_as(table, header, data, AllocClass::Write)
    }

    /// [`Store::append_version`] in `class`: `Write` for transactions,
    /// which start a delta page only while the pages it will take leave the
    /// checkpoint's reserve free ([`Store::admit_delta_page`]); `Checkpoint`
    /// for recovery, which replays what was committed and may use the
    /// reserve (refusing it would leave the database unopenable).
    pub(crate) fn append_version_as(
        &self,
        table: &Table,
        header: VersionHeader,
        data: &[u8],
        class: AllocClass,
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
            let st = &mut *s;
            if let Some(p) = st.delta.last_mut()
                && let Some(slot) = p.insert(&record)
            {
                if let (Some(Some(f)), Some(frames)) = (st.delta_frames.last(), self.cbm.frames.get()) {
                    frames.publish_record(f.frame, p, slot)?;
                }
                return Ok(RecordId::new(p.lpn(), slot));
            }
            // A read-only store keeps every page it fills in memory.
            if s.delta.len() >= self.opts.delta_pages && !self.opts.read_only {
                let flush = if class == AllocClass::Write { AllocClass::Buffered } else { class };
                self.write_delta(table, &mut s, flush)?;
                drop(s);
                self.bound_map_deltas(table, class)?;
                continue;
            }
            drop(s);
            self.start_delta_page(table, class)?;
        }
    }

    /// Starts a new delta-buffer page, admitted against the checkpoint's
    /// reserve unless `class` may take it.
    fn start_delta_page(&self, table: &Table, class: AllocClass) -> Result<()> {
        if class == AllocClass::Write {
            self.admit_delta_page()?;
        } else {
            self.shape.delta_buffered.fetch_add(1, Ordering::Relaxed);
        }
        let started = self.new_lpn().and_then(|lpn| {
            let page = HeapPage::new(self.page_bytes, table.id, lpn);
            let frame = self.delta_frame(table, &page)?;
            Ok((page, frame))
        });
        let (page, frame) = match started {
            Ok(p) => p,
            Err(e) => {
                self.shape.delta_buffered.fetch_sub(1, Ordering::Relaxed);
                return Err(e);
            }
        };
        let mut s = table.state.lock();
        s.delta.push(page);
        s.delta_frames.push(frame);
        Ok(())
    }

    /// A frame for a delta page being started, its delta-page record logged
    /// (not forced), once CBM freshness is in use (`delta_frames.rs`). No
    /// free frame: the table's delta buffer is written (its frames retire)
    /// and the store tries again; still none, an error.
    fn delta_frame(&self, table: &Table, page: &HeapPage) -> Result<Option<DeltaFrame>> {
        let Some(frames) = self.cbm.frames.get() else { return Ok(None) };
        let frame = match frames.take(page) {
            Some(f) => f,
            None => {
                self.write_delta(table, &mut table.state.lock(), AllocClass::Buffered)?;
                frames.take(page).ok_or_else(|| {
                    let st = frames.stats();
                    StoreError::InvalidInput(format!(
                        "no free delta frame for a new delta page of table {}: all {} frames hold unwritten delta \
                         pages or wait for CBM calls still running ({} in limbo); raise StoreOptions::delta_frames",
                        table.name, st.frames, st.limbo
                    ))
                })?
            }
        };
        let record = Record::DeltaPage { table: table.id, lpn: page.lpn(), frame_addr: frames.addr(frame) };
        match self.wal.append(record.kind(), &record.encode()) {
            Ok(end) => Ok(Some(DeltaFrame { frame, record_lsn: end - record_bytes(DELTA_PAGE_BYTES) as u64 })),
            Err(e) => {
                frames.retire(frame);
                Err(e)
            }
        }
    }

    /// Writes the delta buffer's pages, oldest first. Each page leaves the
    /// buffer only once the L2P map points at its physical copy, and the
    /// caller holds the table's state throughout, so a reader always finds a
    /// record either in the buffer or on the device.
    pub(crate) fn write_delta(&self, table: &Table, s: &mut TableState, class: AllocClass) -> Result<()> {
        while let Some(p) = s.delta.first() {
            let (lpn, bytes) = (p.lpn(), p.sealed());
            self.write_page(heap_object(table.id), lpn, bytes, class)?;
            s.heap_pages.push(lpn);
            s.delta.remove(0);
            if let Some(Some(f)) = (!s.delta_frames.is_empty()).then(|| s.delta_frames.remove(0))
                && let Some(frames) = self.cbm.frames.get()
            {
                frames.retire(f.frame);
            }
            self.shape.delta_buffered.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Writes the delta buffer, the dirty VID map pages and the dirty L2P map
    /// pages to the device, so that it holds the whole shared state.
    pub fn flush(&self, table: &Table) -> Result<()> {
        self.write_delta(table, &mut table.state.lock(), AllocClass::Buffered)?;
        self.flush_vid_map(table)?;
        self.flush_l2p(AllocClass::Write)
    }

    /// The values of one version's tuple.
    pub fn decode_values(&self, table: &Table, data: &[u8]) -> Result<Vec<Value>> {
        table.layout.decode(data).map_err(|e| StoreError::corrupt(format!("tuple of {}", table.name), e))
    }
}
