//! Physical page allocation: per-object regions ([`Allocator`]), who may
//! take the pages held back for the next checkpoint ([`AllocClass`]), and
//! [`Store::allocate`], which hands out a page that page reuse gives back
//! (`reuse.rs`), else a fresh one, leaving the checkpoint's reserve
//! (`reserve.rs`) free unless the class may take it.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use crate::error::{Result, StoreError};
use crate::maps::Maps;
use crate::store::Store;
use crate::table::TableId;

/// Objects that own regions: tables' heaps and VID maps, the L2P map, and
/// the checkpoint's blob and index pages.
pub(crate) fn heap_object(t: TableId) -> u64 {
    u64::from(t) << 1
}
pub(crate) fn vid_object(t: TableId) -> u64 {
    u64::from(t) << 1 | 1
}
pub(crate) const L2P_OBJECT: u64 = u64::MAX;
pub(crate) const META_OBJECT: u64 = u64::MAX - 1;

/// Physical page of the root page (`ndpdb_format::checkpoint::Root`); the rest of
/// the first region stays unused so that regions keep their alignment.
pub const ROOT_PPN: u64 = 0;

/// Append-only physical allocation in per-object regions: each object
/// fills its current region page by page and then takes the next region
/// not begun; when none is left, the rest of another object's region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Allocator {
    pub next_region: u64,
    pub region_pages: u64,
    pub total_pages: u64,
    /// Per object, its current region's next page and end.
    pub cursors: HashMap<u64, (u64, u64)>,
}

impl Allocator {
    /// An allocator whose first region begins at `first_region`.
    pub(crate) fn new(first_region: u64, region_pages: u64, total_pages: u64) -> Allocator {
        Allocator { next_region: first_region, region_pages, total_pages, cursors: HashMap::new() }
    }

    /// Pages never handed out: the rest of every object's region, and the
    /// regions not begun.
    pub(crate) fn fresh_pages(&self) -> u64 {
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

/// Who asks for a physical page, and so whether it may take the pages held
/// back for the next checkpoint.
///
/// Pages are written once, and the pages that writes supersede come back
/// only through a durable checkpoint (`PageReuse`), which itself writes
/// pages: the delta buffers, the dirty VID-map and L2P pages, and its blob.
/// If ordinary writes could take the last free page, a full device could
/// never checkpoint again, and so never get a superseded page back. So
/// [`AllocClass::Write`] allocations leave [`Store::checkpoint_reserve`]
/// pages free, an upper bound of what the next checkpoint writes;
/// delta-buffer pages are admitted against it when they are started
/// ([`Store::admit_delta_page`]) and written as [`AllocClass::Buffered`];
/// and only [`AllocClass::Checkpoint`] allocations (everything
/// `Store::checkpoint` writes, and the log replay at open) may take the
/// reserve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AllocClass {
    /// Leaves the reserve free, and one page more.
    Write,
    /// A delta-buffer page that was admitted, and so counted in the
    /// reserve, when it was started: leaves the reserve (less itself) free.
    Buffered,
    /// May take the reserve: the checkpoint, and recovery's replay.
    Checkpoint,
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

impl Store {
    /// A physical page for `object`: a free one of its own (`PageReuse`),
    /// else a new one from its region, else (the device full) any free one.
    pub(crate) fn allocate(&self, object: u64, class: AllocClass) -> Result<u64> {
        // Every new page is allocated before it is written.
        self.writable("writing a page")?;
        let mut m = self.maps.lock();
        match class {
            AllocClass::Write => self.keep_reserve(&mut m, 1)?,
            AllocClass::Buffered => self.keep_reserve(&mut m, 0)?,
            AllocClass::Checkpoint => {
                self.shape.checkpoint_allocated.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(ppn) = m.reuse.take(object, false) {
            return Ok(ppn);
        }
        if m.reuse.has_limbo() {
            self.release_limbo(&mut m);
            if let Some(ppn) = m.reuse.take(object, false) {
                return Ok(ppn);
            }
        }
        match m.alloc.allocate(object) {
            Err(StoreError::DeviceFull { .. }) if let Some(ppn) = m.reuse.take(object, true) => Ok(ppn),
            Err(StoreError::DeviceFull { pages, .. }) => {
                Err(StoreError::DeviceFull { pages, waiting: m.reuse.stats().waiting(), reserved: 0 })
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
        Err(StoreError::DeviceFull {
            pages: m.alloc.total_pages,
            waiting: m.reuse.stats().waiting(),
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
        self.shape.delta_buffered.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The free pages against the checkpoint's reserve, in one look.
    pub fn headroom(&self) -> Headroom {
        let m = self.maps.lock();
        let reserve = self.checkpoint_reserve(&m);
        Headroom { writes: m.free_now().saturating_sub(reserve), reserve, superseded: m.reuse.stats().superseded }
    }

    /// Free pages the last checkpoint took (the running one's so far),
    /// besides the older checkpoints' blob pages it reused: at most the
    /// reserve [`Store::headroom`] gave just before it began.
    pub fn checkpoint_allocated(&self) -> u64 {
        self.shape.checkpoint_allocated.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_store::store;

    /// Each object fills a region of its own; once every region is begun,
    /// an object takes the rest of the lowest-numbered object's region,
    /// and then the device is full.
    #[test]
    fn objects_fill_regions_of_their_own_then_the_rest_of_others() {
        let (a, b) = (heap_object(1), vid_object(1));
        let mut alloc = Allocator::new(4, 4, 16);
        assert_eq!(alloc.fresh_pages(), 12);
        let taken: Vec<u64> = [a, b, a, a, a, a].iter().map(|&o| alloc.allocate(o).unwrap()).collect();
        assert_eq!(taken, [4, 8, 5, 6, 7, 12], "a's second region begins after b's");
        assert_eq!(alloc.fresh_pages(), 6);
        assert_eq!(alloc.allocate(a).unwrap(), 13);
        // No region left: the rest of a's (a < b), then of b's, serve anyone.
        let rest: Vec<u64> = (0..5).map(|_| alloc.allocate(L2P_OBJECT).unwrap()).collect();
        assert_eq!(rest, [14, 15, 9, 10, 11]);
        assert_eq!(alloc.fresh_pages(), 0);
        let e = alloc.allocate(a).unwrap_err();
        assert!(matches!(e, StoreError::DeviceFull { pages: 16, waiting: 0, reserved: 0 }), "{e}");
    }

    /// A region shorter than the others at the end of the device.
    #[test]
    fn the_last_region_may_be_short() {
        let mut alloc = Allocator::new(0, 4, 6);
        let taken: Vec<u64> = (0..6).map(|_| alloc.allocate(META_OBJECT).unwrap()).collect();
        assert_eq!(taken, [0, 1, 2, 3, 4, 5]);
        assert!(alloc.allocate(META_OBJECT).is_err());
    }

    /// Writes stop while the next checkpoint's reserve is left, and say so;
    /// a checkpoint may take the reserve. A device full even for it says
    /// how many superseded pages a checkpoint would free; once one is free,
    /// any object may take it.
    #[test]
    fn a_full_device_keeps_a_checkpoints_reserve_and_names_the_pages_it_would_free() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let until_full = |class| {
            let mut taken = Vec::new();
            loop {
                match s.allocate(heap_object(1), class) {
                    Ok(p) => taken.push(p),
                    Err(e) => break (taken, e),
                }
            }
        };
        let (writes, e) = until_full(AllocClass::Write);
        let reserve = s.checkpoint_reserve(&s.maps.lock());
        assert!(matches!(e, StoreError::DeviceFull { waiting: 0, reserved, .. } if reserved == reserve), "{e}");
        assert!(
            e.to_string().contains("for writes; ") && e.to_string().contains("held back so that a checkpoint"),
            "{e}"
        );
        assert!(!writes.is_empty() && reserve > 0);
        let h = s.headroom();
        assert_eq!((h.writes, h.reserve), (0, reserve));
        let (checkpoint, e) = until_full(AllocClass::Checkpoint);
        assert_eq!(checkpoint.len() as u64, reserve, "the checkpoint gets exactly the reserve");
        assert!(matches!(e, StoreError::DeviceFull { waiting: 0, reserved: 0, .. }), "{e}");
        assert!(e.to_string().contains("larger capacity"), "{e}");
        let last = *checkpoint.last().unwrap();
        s.maps.lock().reuse.supersede(heap_object(1), last);
        let e = s.allocate(vid_object(1), AllocClass::Checkpoint).unwrap_err().to_string();
        assert!(e.contains("1 superseded pages") && e.contains("checkpoint"), "{e}");
        s.maps.lock().reuse.capture();
        s.checkpoint_durable();
        assert_eq!(
            s.allocate(vid_object(1), AllocClass::Checkpoint).unwrap(),
            last,
            "the device is full: any object takes a free page"
        );
    }

    /// A delta-buffer page admitted against the reserve is counted in it
    /// until it is written; writing it may use the page it was admitted for.
    #[test]
    fn an_admitted_delta_page_is_counted_in_the_reserve() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let before = s.headroom();
        s.admit_delta_page().unwrap();
        let after = s.headroom();
        assert_eq!((after.reserve, after.writes), (before.reserve + 1, before.writes - 1));
        while s.allocate(heap_object(1), AllocClass::Write).is_ok() {}
        assert!(s.admit_delta_page().is_err(), "no page left to admit one more");
        s.allocate(heap_object(1), AllocClass::Buffered).expect("the admitted page is there to write");
    }
}
