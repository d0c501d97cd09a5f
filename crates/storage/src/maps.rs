//! The maps: the L2P map (logical page → physical page, one for the
//! store) with what placement keeps beside it under the same lock, and
//! writing the maps and heap pages to the device. A table's VID map lives
//! in its state (`table.rs`); this writes its pages.
//!
//! Every page write goes to a new physical page (`alloc.rs`) and remaps
//! its logical page; the physical page it replaces is superseded
//! (`PageReuse`, `reuse.rs`).

use std::collections::{BTreeSet, HashMap};

use ndpdb_device::Command;
use ndpdb_format::page::{self, PageKind, RecordId};

use crate::alloc::{AllocClass, Allocator, L2P_OBJECT, vid_object};
use crate::error::{Result, StoreError};
use crate::reserve::CheckpointSize;
use crate::reuse::PageReuse;
use crate::store::Store;
use crate::table::{Head, Table, TableState};

/// The L2P map, the allocator and page reuse: everything that decides or
/// records where a page is, under one lock (`Store::maps`).
pub(crate) struct Maps {
    pub l2p: Vec<u64>,
    /// Logical pages whose entry changed since the L2P map pages were last
    /// written (the L2P delta an NDP call ships).
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

impl Maps {
    /// Empty maps over `alloc`.
    pub(crate) fn new(alloc: Allocator) -> Maps {
        Maps {
            l2p: Vec::new(),
            l2p_dirty: BTreeSet::new(),
            l2p_pages: Vec::new(),
            next_lpn: 0,
            alloc,
            reuse: PageReuse::default(),
            last_checkpoint: CheckpointSize::default(),
        }
    }

    /// Pages an allocation can have now: never handed out, or free again
    /// (not counting limbo that may be released).
    pub(crate) fn free_now(&self) -> u64 {
        self.alloc.fresh_pages() + self.reuse.free_pages()
    }
}

impl Store {
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

    /// The physical page behind logical page `lpn`, if it is mapped.
    pub fn physical_page(&self, lpn: u64) -> Option<u64> {
        self.maps.lock().l2p.get(lpn as usize).copied().filter(|&p| p != u64::MAX)
    }

    /// Writes a sealed page of `object` to a new physical page and maps
    /// `lpn` to it; the page it was mapped to before is superseded.
    pub(crate) fn write_page(&self, object: u64, lpn: u64, bytes: Vec<u8>, class: AllocClass) -> Result<u64> {
        let ppn = self.allocate(object, class)?;
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
        self.write_page(object, lpn, bytes, AllocClass::Write)?;
        self.cache.remove(lpn);
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
        self.cache.remove(lpn);
    }

    /// Writes dirty map pages when more entries wait than the policy allows.
    pub(crate) fn bound_map_deltas(&self, table: &Table, class: AllocClass) -> Result<()> {
        if self.opts.read_only {
            return Ok(());
        }
        if table.state.lock().vid_dirty.len() > self.opts.map_delta_max {
            self.flush_vid_map_as(table, None, class)?;
        }
        if self.maps.lock().l2p_dirty.len() > self.opts.map_delta_max {
            self.flush_l2p(class)?;
        }
        Ok(())
    }

    pub(crate) fn flush_vid_map(&self, table: &Table) -> Result<()> {
        self.flush_vid_map_as(table, None, AllocClass::Write)
    }

    /// Writes the VID map pages that hold dirty entries. A VID stays dirty if
    /// its head changed after its page was copied. With `committed` (a
    /// fuzzy checkpoint), those VIDs' entries are written as the given
    /// committed heads, and the VIDs stay dirty: calls keep shipping their
    /// real heads, which only their open transactions may see. Each page is
    /// copied and written under the table's state, so two flushes of one
    /// page (a writer's and a checkpoint's) install their copies in the
    /// order they made them.
    pub(crate) fn flush_vid_map_as(
        &self,
        table: &Table,
        committed: Option<&HashMap<u64, Head>>,
        class: AllocClass,
    ) -> Result<()> {
        let dirty: Vec<u64> = {
            let mut s = table.state.lock();
            if let Some(c) = committed {
                s.vid_dirty.extend(c.keys().copied());
            }
            s.vid_dirty.iter().copied().collect()
        };
        let per_page = self.per_page;
        let mut at = 0;
        while at < dirty.len() {
            let p = dirty[at] as usize / per_page;
            while at < dirty.len() && dirty[at] as usize / per_page == p {
                at += 1;
            }
            let lpn = self.vid_page_lpn(table, p)?;
            let mut s = table.state.lock();
            let (first, end) = (p * per_page, ((p + 1) * per_page).min(s.heads.len()));
            let entry =
                |s: &TableState, v: usize| committed.and_then(|c| c.get(&(v as u64))).unwrap_or(&s.heads[v]).rid.0;
            let entries: Vec<u64> = (first..end).map(|v| entry(&s, v)).collect();
            let bytes = page::map_page(self.page_bytes, PageKind::VidMap, table.id, lpn, &entries);
            self.write_page(vid_object(table.id), lpn, bytes, class)?;
            for (v, &rid) in (first..end).zip(&entries) {
                let overridden = committed.is_some_and(|c| c.contains_key(&(v as u64)));
                if !overridden && s.heads[v].rid.0 == rid {
                    s.vid_dirty.remove(&(v as u64));
                }
            }
        }
        if table.state.lock().vid_pages.contains(&u64::MAX) {
            return Err(StoreError::Corrupt("a VID map page was skipped".into()));
        }
        Ok(())
    }

    /// The logical page of the table's VID map page `p`, given one the
    /// first time it is written.
    fn vid_page_lpn(&self, table: &Table, p: usize) -> Result<u64> {
        if let Some(&lpn) = table.state.lock().vid_pages.get(p) {
            return Ok(lpn);
        }
        let lpn = self.new_lpn()?;
        let mut s = table.state.lock();
        while s.vid_pages.len() <= p {
            s.vid_pages.push(u64::MAX);
        }
        s.vid_pages[p] = lpn;
        Ok(lpn)
    }

    /// Writes the L2P map pages that hold dirty entries. An entry stays
    /// dirty if it changed after its page was copied (GC and writers remap
    /// pages while this runs). Each page is copied and written under the
    /// queue pair, so two flushes of one page install their copies in the
    /// order they made them: an older copy never replaces a newer one.
    pub(crate) fn flush_l2p(&self, class: AllocClass) -> Result<()> {
        let dirty: BTreeSet<usize> = self.maps.lock().l2p_dirty.iter().map(|&l| l as usize / self.per_page).collect();
        for p in dirty {
            let mut qp = self.qp.lock();
            let (first, entries): (usize, Vec<u64>) = {
                let m = self.maps.lock();
                let end = ((p + 1) * self.per_page).min(m.l2p.len());
                (p * self.per_page, m.l2p[p * self.per_page..end].to_vec())
            };
            let bytes = page::map_page(self.page_bytes, PageKind::L2pMap, 0, p as u64, &entries);
            let ppn = self.allocate(L2P_OBJECT, class)?;
            qp.call(Command::PageWrite { ppn, data: bytes })?;
            let mut m = self.maps.lock();
            while m.l2p_pages.len() <= p {
                m.l2p_pages.push(u64::MAX);
            }
            let old = std::mem::replace(&mut m.l2p_pages[p], ppn);
            m.reuse.supersede(L2P_OBJECT, old);
            for (i, &written) in entries.iter().enumerate() {
                let lpn = (first + i) as u64;
                if m.l2p[first + i] == written {
                    m.l2p_dirty.remove(&lpn);
                }
            }
        }
        Ok(())
    }
}
