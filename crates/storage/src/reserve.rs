//! The checkpoint's reserve: how many free pages ordinary writes leave for
//! the next checkpoint (`AllocClass` in `alloc.rs` says who may take them).
//! [`checkpoint_reserve`] is a pure function of the store's shape, so that
//! each of its terms is tested on its own; [`Store::checkpoint_reserve`]
//! gathers the shape under the maps' lock.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::maps::Maps;
use crate::store::Store;

/// What the last checkpoint wrote or restored, from which the next one's
/// size is estimated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CheckpointSize {
    /// Bytes of its blob.
    pub blob_bytes: u64,
    /// Tuples (VID map entries of all tables) and logical pages it recorded.
    pub tuples: u64,
    pub lpns: u64,
}

/// Counts of the store that the reserve is estimated from besides the
/// maps, and what the last checkpoint took. They change under the tables'
/// locks and are read under the maps' lock, which may not take those
/// (`lock_order.rs`), so they are atomics.
#[derive(Debug, Default)]
pub(crate) struct StoreShape {
    /// Tuples of all tables (VIDs handed out).
    pub tuples: AtomicU64,
    pub tables: AtomicU64,
    /// Delta-buffer pages started and not yet written, of all tables.
    pub delta_buffered: AtomicU64,
    /// Free pages the running or last checkpoint took (reset when one
    /// begins): what the reserve must cover.
    pub checkpoint_allocated: AtomicU64,
}

/// Everything [`checkpoint_reserve`] is computed from.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReserveInputs {
    pub page_bytes: u64,
    /// Map entries a VID map or L2P map page holds.
    pub per_page: u64,
    pub last: CheckpointSize,
    pub tuples: u64,
    pub tables: u64,
    /// Logical pages handed out so far.
    pub lpns: u64,
    /// Pages of older checkpoints that the next one reuses first
    /// (`CheckpointPages::free`).
    pub reusable: u64,
    /// Delta-buffer pages started and not yet written.
    pub delta_pages: u64,
}

/// Pages a checkpoint blob of `blob_bytes` takes with its index pages (an
/// index page lists `page_bytes / 8` blob pages).
pub(crate) fn blob_pages(blob_bytes: u64, page_bytes: u64) -> u64 {
    let pages = blob_bytes.div_ceil(page_bytes);
    pages + pages.div_ceil(page_bytes / 8)
}

/// An upper bound of the pages the next checkpoint allocates, from the last
/// checkpoint's size and what was added since:
///
/// - **Blob**: the last blob's bytes, plus 24 per tuple added (its head
///   is 17), plus 24 per logical page added (its L2P entry, its entry in
///   a page list, its share of an L2P map page), plus 4 KiB (a new
///   table's name, layout and allocator cursors), in pages, plus its
///   index pages; less the pages of older checkpoints it reuses first.
/// - **Delta buffers**: every delta page started and not yet written
///   (writers start one only while the free pages cover it,
///   [`Store::admit_delta_page`]).
/// - **VID map**: every VID map page (dirty entries are bounded only by
///   the tuples open transactions wrote).
/// - **L2P map**: every L2P map page, counting the logical pages the VID
///   map may still add.
pub(crate) fn checkpoint_reserve(i: &ReserveInputs) -> u64 {
    let blob = i.last.blob_bytes
        + 24 * i.tuples.saturating_sub(i.last.tuples)
        + 24 * i.lpns.saturating_sub(i.last.lpns)
        + 4096;
    let blob = blob_pages(blob, i.page_bytes);
    let vid = i.tuples.div_ceil(i.per_page) + i.tables;
    let l2p = (i.lpns + vid).div_ceil(i.per_page) + 1;
    blob.saturating_sub(i.reusable) + i.delta_pages + vid + l2p
}

impl Store {
    /// How many free pages ordinary writes leave for the next checkpoint
    /// ([`checkpoint_reserve`] of the store as it is now).
    pub(crate) fn checkpoint_reserve(&self, m: &Maps) -> u64 {
        checkpoint_reserve(&ReserveInputs {
            page_bytes: self.page_bytes as u64,
            per_page: self.per_page as u64,
            last: m.last_checkpoint,
            tuples: self.shape.tuples.load(Ordering::Relaxed),
            tables: self.shape.tables.load(Ordering::Relaxed),
            lpns: m.next_lpn,
            reusable: self.checkpoints.pages.lock().free.len() as u64,
            delta_pages: self.shape.delta_buffered.load(Ordering::Relaxed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 8 KiB pages, 1,020 map entries a page, nothing written yet.
    fn empty() -> ReserveInputs {
        ReserveInputs { page_bytes: 8192, per_page: 1020, ..ReserveInputs::default() }
    }

    #[test]
    fn an_empty_store_reserves_a_blob_page_its_index_and_an_l2p_page() {
        assert_eq!(checkpoint_reserve(&empty()), 1 + 1 + 1);
    }

    /// 35,000 tuples in one table on 500 logical pages, none checkpointed:
    /// blob 24 × 35,500 + 4,096 = 856,096 bytes = 105 pages + 1 index page;
    /// VID map 35 pages + 1 for the table; L2P map (500 + 36) / 1,020 → 1
    /// page + 1.
    #[test]
    fn each_term_counts_what_the_checkpoint_may_write() {
        let i = ReserveInputs { tuples: 35_000, tables: 1, lpns: 500, ..empty() };
        assert_eq!(checkpoint_reserve(&i), 106 + 36 + 2);
        // Every delta page started counts one.
        assert_eq!(checkpoint_reserve(&ReserveInputs { delta_pages: 7, ..i }), 106 + 36 + 2 + 7);
        // A table more: a VID map page more.
        assert_eq!(checkpoint_reserve(&ReserveInputs { tables: 2, ..i }), 106 + 37 + 2);
        // Logical pages past a map page's worth: an L2P map page more (and
        // their blob bytes: 24 × 1,000 more is 3 pages more).
        assert_eq!(checkpoint_reserve(&ReserveInputs { lpns: 1_500, ..i }), 109 + 36 + 3);
    }

    /// The blob term grows from the last checkpoint's blob by what was
    /// added since, not by everything.
    #[test]
    fn the_blob_is_estimated_from_the_last_checkpoint() {
        let last = CheckpointSize { blob_bytes: 856_096 - 4096, tuples: 35_000, lpns: 500 };
        let i = ReserveInputs { tuples: 35_000, tables: 1, lpns: 500, last, ..empty() };
        assert_eq!(checkpoint_reserve(&i), 106 + 36 + 2, "nothing added: the last blob and 4 KiB");
        let grown = ReserveInputs { tuples: 35_000 + 8192 / 24 * 2, ..i };
        assert_eq!(checkpoint_reserve(&grown), 108 + 36 + 2, "two pages of new heads");
    }

    /// Pages of older checkpoints cover the blob, and only the blob.
    #[test]
    fn reusable_checkpoint_pages_cover_only_the_blob() {
        let i = ReserveInputs { tuples: 35_000, tables: 1, lpns: 500, delta_pages: 3, ..empty() };
        assert_eq!(checkpoint_reserve(&ReserveInputs { reusable: 100, ..i }), 6 + 3 + 36 + 2);
        assert_eq!(checkpoint_reserve(&ReserveInputs { reusable: 1_000, ..i }), 3 + 36 + 2);
    }

    #[test]
    fn a_blob_takes_an_index_page_per_page_bytes_over_8_pages() {
        assert_eq!(blob_pages(1, 8192), 2);
        assert_eq!(blob_pages(1024 * 8192, 8192), 1025);
        assert_eq!(blob_pages(1024 * 8192 + 1, 8192), 1027);
        assert_eq!(blob_pages(0, 8192), 0);
    }
}
