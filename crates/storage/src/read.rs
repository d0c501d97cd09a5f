//! Point reads: one version by its RecordId, from the delta buffer, the
//! host's cache of written heap pages ([`PageCache`]), or the device. Scans
//! never use the cache: the block stack reads every page (`scan.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ndpdb_device::{Command, QueuePair};
use ndpdb_format::page::{self, RecordId};
use ndpdb_format::record::{HEADER_BYTES, VersionHeader};

use crate::error::{Result, StoreError};
use crate::lock_order::{Level, OrderedMutex};
use crate::store::Store;
use crate::table::Table;

/// Heap pages by logical page, for point reads (writers' and index
/// reads'), up to `StoreOptions::cache_pages`. Pages change only by GC,
/// which evicts what it rewrites or unmaps. Eviction is CLOCK (second
/// chance): a read marks its page, the hand passes over marked pages once
/// (clearing the mark) and evicts the first unmarked one, so the pages a
/// batch of reads has just brought in stay until the hand has gone round
/// the whole cache, and pages read again stay longer than pages read once.
pub(crate) struct PageCache {
    clock: OrderedMutex<Clock>,
    capacity: usize,
}

#[derive(Default)]
struct Clock {
    /// Slot of each cached page.
    slot_of: HashMap<u64, usize>,
    slots: Vec<Slot>,
    hand: usize,
}

struct Slot {
    lpn: u64,
    page: Arc<Vec<u8>>,
    marked: bool,
}

impl PageCache {
    pub(crate) fn new(capacity: usize) -> PageCache {
        PageCache { clock: OrderedMutex::new(Level::PageCache, Clock::default()), capacity }
    }

    fn get(&self, lpn: u64) -> Option<Arc<Vec<u8>>> {
        let mut guard = self.clock.lock();
        let c = &mut *guard;
        let i = *c.slot_of.get(&lpn)?;
        let slot = &mut c.slots[i];
        slot.marked = true;
        Some(slot.page.clone())
    }

    fn contains(&self, lpn: u64) -> bool {
        self.clock.lock().slot_of.contains_key(&lpn)
    }

    fn insert(&self, lpn: u64, page: Arc<Vec<u8>>) {
        if self.capacity == 0 {
            return;
        }
        let mut guard = self.clock.lock();
        let c = &mut *guard;
        if let Some(&i) = c.slot_of.get(&lpn) {
            c.slots[i].page = page;
            return;
        }
        let slot = Slot { lpn, page, marked: false };
        if c.slots.len() < self.capacity {
            c.slot_of.insert(lpn, c.slots.len());
            c.slots.push(slot);
            return;
        }
        // Every slot is full: at most one round clears marks, then a page
        // is unmarked.
        loop {
            let hand = c.hand;
            c.hand = (hand + 1) % c.slots.len();
            if std::mem::take(&mut c.slots[hand].marked) {
                continue;
            }
            let victim = std::mem::replace(&mut c.slots[hand], slot);
            c.slot_of.remove(&victim.lpn);
            c.slot_of.insert(lpn, hand);
            return;
        }
    }

    pub(crate) fn remove(&self, lpn: u64) {
        let mut guard = self.clock.lock();
        let c = &mut *guard;
        let Some(i) = c.slot_of.remove(&lpn) else { return };
        c.slots.swap_remove(i);
        if let Some(moved) = c.slots.get(i) {
            let moved = moved.lpn;
            c.slot_of.insert(moved, i);
        }
        if c.hand >= c.slots.len() {
            c.hand = 0;
        }
    }
}

impl Store {
    /// Reads one version: from the delta buffer, the page cache, or the
    /// device (through the store's own queue pair).
    pub fn read_version(&self, table: &Table, rid: RecordId) -> Result<(VersionHeader, Vec<u8>)> {
        self.read_version_via(table, rid, None)
    }

    /// [`Store::read_version`], a page the cache does not hold read through
    /// `qp` when given: the caller's queue pair counts exactly what its
    /// reads cost ([`QueuePair::counters`]).
    pub fn read_version_via(
        &self,
        table: &Table,
        rid: RecordId,
        qp: Option<&mut QueuePair>,
    ) -> Result<(VersionHeader, Vec<u8>)> {
        {
            let s = table.state.lock();
            if let Some(p) = s.delta.iter().find(|p| p.lpn() == rid.lpn()) {
                let rec = p
                    .record(rid.slot())
                    .ok_or_else(|| StoreError::Corrupt(format!("no record {rid:?} in the delta buffer")))?;
                return decode_record(rec, rid);
            }
        }
        let page = self.cached_page(rid.lpn(), qp)?;
        let h = page::PageHeader::decode(&page).map_err(|e| StoreError::corrupt(format!("page {}", rid.lpn()), e))?;
        let rec =
            page::heap_record(&page, &h, rid.slot()).map_err(|e| StoreError::corrupt(format!("record {rid:?}"), e))?;
        decode_record(rec, rid)
    }

    /// The most pages one [`Store::prefetch_versions`] call should bring
    /// in: a quarter of the cache, so that a batch's pages are all still
    /// cached when its versions are read.
    pub fn prefetch_pages_max(&self) -> usize {
        (self.cache.capacity / 4).max(1)
    }

    /// Reads into the page cache, through `qp`, the heap pages of `rids`
    /// that are neither cached nor in `table`'s delta buffer, so that the
    /// [`Store::read_version_via`]s of a batch of point reads (an index
    /// join's probe, an index scan's batch) find them there instead of
    /// waiting for one device round trip each: sorted, physically
    /// consecutive pages in one command, read-ahead over the rest. The
    /// caller keeps a batch to [`Store::prefetch_pages_max`] pages; more
    /// are read, but the first may be evicted by the last. Only an
    /// optimisation: a page it skips or that is evicted is read by
    /// `read_version_via` as before.
    pub fn prefetch_versions(
        &self,
        table: &Table,
        rids: impl Iterator<Item = RecordId>,
        qp: &mut QueuePair,
    ) -> Result<()> {
        let delta: HashSet<u64> = table.state.lock().delta.iter().map(|p| p.lpn()).collect();
        let mut lpns: Vec<u64> = rids.filter(|r| !r.is_none()).map(|r| r.lpn()).collect();
        lpns.sort_unstable();
        lpns.dedup();
        lpns.retain(|lpn| !delta.contains(lpn) && !self.cache.contains(*lpn));
        if lpns.is_empty() {
            return Ok(());
        }
        for (lpn, page) in self.read_page_runs(&lpns, qp)? {
            // `read_page`'s check that the page is the one asked for; a
            // page that fails it is left to `read_version` to report.
            if page::PageHeader::decode(&page).is_ok_and(|h| h.lpn == lpn) {
                self.cache.insert(lpn, Arc::new(page));
            }
        }
        Ok(())
    }

    fn cached_page(&self, lpn: u64, qp: Option<&mut QueuePair>) -> Result<Arc<Vec<u8>>> {
        if let Some(p) = self.cache.get(lpn) {
            return Ok(p);
        }
        let page = Arc::new(match qp {
            Some(qp) => self.read_page(lpn, qp)?,
            None => self.read_page(lpn, &mut self.qp.lock())?,
        });
        self.cache.insert(lpn, page.clone());
        Ok(page)
    }

    /// Reads a whole heap or VID map page over the link, and verifies its
    /// checksum and that it is logical page `lpn`.
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
        let page = qp.call(Command::PageRead { ppn, host_addr: None })?.into_data();
        let h = page::verify(&page).map_err(|e| StoreError::corrupt(format!("page {lpn} (physical {ppn})"), e))?;
        // A physical page reused for another logical page (or a misdirected
        // write) passes its checksum; its header says whose it is.
        if h.lpn != lpn {
            return Err(StoreError::Corrupt(format!(
                "page {lpn} (physical {ppn}) holds {:?} page {} of object {} instead",
                h.kind, h.lpn, h.object_id
            )));
        }
        Ok(page)
    }
}

fn decode_record(rec: &[u8], rid: RecordId) -> Result<(VersionHeader, Vec<u8>)> {
    let h = VersionHeader::decode(rec, rec.len()).map_err(|e| StoreError::corrupt(format!("record {rid:?}"), e))?;
    Ok((h, rec[HEADER_BYTES..HEADER_BYTES + usize::from(h.data_len)].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_at_most_its_capacity() {
        let c = PageCache::new(2);
        for lpn in 0..5 {
            c.insert(lpn, Arc::new(vec![lpn as u8]));
        }
        assert_eq!(c.clock.lock().slots.len(), 2);
        assert_eq!(c.get(4).as_deref(), Some(&vec![4]), "the newest page is kept");
        c.remove(4);
        assert_eq!(c.get(4), None);
    }

    fn page(n: u8) -> Arc<Vec<u8>> {
        Arc::new(vec![n])
    }

    /// Pages read since the hand last passed survive; the first unmarked
    /// page in the hand's way goes; removal keeps the rest reachable.
    #[test]
    fn the_clock_evicts_unread_pages_first() {
        let c = PageCache::new(3);
        for lpn in 1..=3 {
            c.insert(lpn, page(lpn as u8));
        }
        assert!(c.get(1).is_some() && c.get(3).is_some());
        c.insert(4, page(4)); // 1 marked (cleared), 2 unmarked: evicted
        assert!(!c.contains(2));
        assert!(c.contains(1) && c.contains(3) && c.contains(4));
        // 3 marked (cleared); then 1, whose mark the last round cleared,
        // goes before 4, which the hand has not reached.
        c.insert(5, page(5));
        assert!(!c.contains(1) && c.contains(3) && c.contains(4) && c.contains(5));
        c.remove(4);
        assert!(!c.contains(4) && c.get(3).is_some() && c.get(5).is_some());
        c.insert(6, page(6));
        c.insert(7, page(7)); // full again: one of the unmarked goes
        assert_eq!([3, 5, 6, 7].iter().filter(|&&l| c.contains(l)).count(), 3);
        assert_eq!(c.get(7).or_else(|| c.get(6)).map(|p| p.len()), Some(1));
        let empty = PageCache::new(0);
        empty.insert(1, page(1));
        assert!(!empty.contains(1));
    }
}
