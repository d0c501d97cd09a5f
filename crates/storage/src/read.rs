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
use crate::scan::{Order, READ_AHEAD};
use crate::store::Store;
use crate::table::Table;

/// Written heap pages by logical page, for point reads by writers, up to
/// `StoreOptions::cache_pages`. Written pages change only by GC, which
/// evicts what it rewrites or unmaps.
pub(crate) struct PageCache {
    pages: OrderedMutex<HashMap<u64, Arc<Vec<u8>>>>,
    capacity: usize,
}

impl PageCache {
    pub(crate) fn new(capacity: usize) -> PageCache {
        PageCache { pages: OrderedMutex::new(Level::PageCache, HashMap::new()), capacity }
    }

    fn get(&self, lpn: u64) -> Option<Arc<Vec<u8>>> {
        self.pages.lock().get(&lpn).cloned()
    }

    fn insert(&self, lpn: u64, page: Arc<Vec<u8>>) {
        let mut c = self.pages.lock();
        if c.len() >= self.capacity {
            // Any victim is fine: no cached page is stale.
            if let Some(&victim) = c.keys().next() {
                c.remove(&victim);
            }
        }
        c.insert(lpn, page);
    }

    pub(crate) fn remove(&self, lpn: u64) {
        self.pages.lock().remove(&lpn);
    }
}

impl Store {
    /// Reads one version: from the delta buffer, the page cache, or the device.
    pub fn read_version(&self, table: &Table, rid: RecordId) -> Result<(VersionHeader, Vec<u8>)> {
        {
            let s = table.state.lock();
            if let Some(p) = s.delta.iter().find(|p| p.lpn() == rid.lpn()) {
                let rec = p
                    .record(rid.slot())
                    .ok_or_else(|| StoreError::Corrupt(format!("no record {rid:?} in the delta buffer")))?;
                return decode_record(rec, rid);
            }
        }
        let page = self.cached_page(rid.lpn())?;
        let h = page::PageHeader::decode(&page).map_err(|e| StoreError::corrupt(format!("page {}", rid.lpn()), e))?;
        let rec =
            page::heap_record(&page, &h, rid.slot()).map_err(|e| StoreError::corrupt(format!("record {rid:?}"), e))?;
        decode_record(rec, rid)
    }

    /// Reads into the page cache, many at a time, the heap pages of `rids`
    /// that are neither cached nor in `table`'s delta buffer, so that the
    /// [`Store::read_version`]s of a batch of point reads (an index join's
    /// probe) find them there instead of waiting for one device round trip
    /// each. At most half the cache is filled per call, so a call does not
    /// evict its own pages. Only an optimisation: a page it skips or that
    /// is evicted is read by `read_version` as before.
    pub fn prefetch_versions(&self, table: &Table, rids: impl Iterator<Item = RecordId>) -> Result<()> {
        let delta: HashSet<u64> = table.state.lock().delta.iter().map(|p| p.lpn()).collect();
        let mut lpns: Vec<u64> = rids.filter(|r| !r.is_none()).map(|r| r.lpn()).collect();
        lpns.sort_unstable();
        lpns.dedup();
        lpns.retain(|lpn| !delta.contains(lpn) && self.cache.get(*lpn).is_none());
        lpns.truncate(self.cache.capacity / 2);
        if lpns.len() < 2 {
            return Ok(());
        }
        let mut qp = self.device().queue_pair();
        for (lpn, page) in self.read_pages_ahead(&lpns, &mut qp, READ_AHEAD, Order::Submission)? {
            // `read_page`'s check that the page is the one asked for; a
            // page that fails it is left to `read_version` to report.
            if page::PageHeader::decode(&page).is_ok_and(|h| h.lpn == lpn) {
                self.cache.insert(lpn, Arc::new(page));
            }
        }
        Ok(())
    }

    fn cached_page(&self, lpn: u64) -> Result<Arc<Vec<u8>>> {
        if let Some(p) = self.cache.get(lpn) {
            return Ok(p);
        }
        let page = Arc::new(self.read_page(lpn, &mut self.qp.lock())?);
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
        assert_eq!(c.pages.lock().len(), 2);
        assert_eq!(c.get(4).as_deref(), Some(&vec![4]), "the newest page is kept");
        c.remove(4);
        assert_eq!(c.get(4), None);
    }
}
