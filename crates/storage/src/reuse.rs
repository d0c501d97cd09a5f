//! Page reuse: when a physical page that writes, map flushes and garbage
//! collection gave up may be written again (`docs/storage.md`, "Reusing
//! physical pages").
//!
//! ```text
//!   live ──superseded (the maps no longer point at it)──► superseded
//!   superseded ──a checkpoint captures the maps──► awaiting
//!   awaiting ──that checkpoint's root is durable──► limbo (epoch e)
//!   limbo ──every page reader that began by epoch e has ended──► free
//!   free (per object) ──allocate──► live
//! ```
//!
//! - **superseded**: the maps no longer point at it, but the newest durable
//!   checkpoint may: recovery would read it.
//! - **awaiting**: a checkpoint captured the maps after it was superseded,
//!   so that checkpoint does not reference it; the one before may.
//! - **limbo**: no durable checkpoint references it (a torn root falls back
//!   to the newest durable checkpoint, never an older one). A page reader
//!   that began before it was superseded (an NDP call carries physical page
//!   numbers; a scan resolves them before it reads) may still read it.
//! - **free**: no reader that could know the page is running
//!   ([`PageReaders`]); it is handed out again, to the object whose region
//!   it is in, so that placement stays per object.
//!
//! [`PageReuse`] and [`PageReaders`] are pure: the store moves pages
//! between steps (`Store::checkpoint` captures and makes durable,
//! [`Store::allocate`] releases and takes). Debug builds assert every
//! transition: a page is superseded once (twice would hand it out twice),
//! moves only one step at a time, and is never freed while the L2P map or
//! a checkpoint still names it.
//!
//! The steps live in memory: at open, [`free_at_open`] finds every
//! allocated page the restored checkpoint does not reference free.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use crate::alloc::{Allocator, L2P_OBJECT, META_OBJECT, heap_object, vid_object};
use crate::error::{Result, StoreError};
use crate::lock_order::OrderedMutex;
use crate::maps::Maps;
use crate::store::Store;

/// A page's step on its way back ([`PageReuse`]); a live page has none.
#[cfg(debug_assertions)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Superseded,
    Awaiting,
    Limbo,
    Free,
}

/// Physical pages given up, by step (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct PageReuse {
    /// (object, ppn).
    superseded: Vec<(u64, u64)>,
    awaiting: Vec<(u64, u64)>,
    /// (epoch it entered limbo in, object, ppn), in entry order.
    limbo: VecDeque<(u64, u64, u64)>,
    free: HashMap<u64, Vec<u64>>,
    /// Pages handed out again so far.
    reused: u64,
    /// Each page's step, to assert the transitions.
    #[cfg(debug_assertions)]
    steps: HashMap<u64, Step>,
}

/// How many physical pages are at each step of page reuse (`reuse.rs`,
/// `docs/storage.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageReuseStats {
    pub superseded: u64,
    pub awaiting: u64,
    pub limbo: u64,
    pub free: u64,
    /// Pages handed out again since the store was opened.
    pub reused: u64,
}

impl PageReuseStats {
    /// Pages given up that are not free yet.
    pub(crate) fn waiting(&self) -> u64 {
        self.superseded + self.awaiting + self.limbo
    }
}

impl PageReuse {
    /// Asserts that `ppn` is at step `from` and moves it to `to`.
    #[cfg(debug_assertions)]
    fn step(steps: &mut HashMap<u64, Step>, ppn: u64, from: Option<Step>, to: Option<Step>) {
        let at = match to {
            Some(to) => steps.insert(ppn, to),
            None => steps.remove(&ppn),
        };
        debug_assert_eq!(at, from, "physical page {ppn} at step {at:?} cannot move to {to:?} (only from {from:?})");
    }

    /// `object`'s page `ppn` is no longer mapped (`u64::MAX`: nothing was).
    pub(crate) fn supersede(&mut self, object: u64, ppn: u64) {
        if ppn == u64::MAX {
            return;
        }
        #[cfg(debug_assertions)]
        Self::step(&mut self.steps, ppn, None, Some(Step::Superseded));
        self.superseded.push((object, ppn));
    }

    /// A checkpoint has captured the maps: nothing superseded so far is in it.
    pub(crate) fn capture(&mut self) {
        #[cfg(debug_assertions)]
        for &(_, ppn) in &self.superseded {
            Self::step(&mut self.steps, ppn, Some(Step::Superseded), Some(Step::Awaiting));
        }
        self.awaiting.append(&mut self.superseded);
    }

    /// A checkpoint that captured the maps is durable; readers that begin
    /// from now on are in a later epoch than `epoch`.
    pub(crate) fn durable(&mut self, epoch: u64) {
        debug_assert!(self.limbo.back().is_none_or(|&(e, ..)| e <= epoch), "epochs go forward");
        #[cfg(debug_assertions)]
        for &(_, ppn) in &self.awaiting {
            Self::step(&mut self.steps, ppn, Some(Step::Awaiting), Some(Step::Limbo));
        }
        self.limbo.extend(self.awaiting.drain(..).map(|(object, ppn)| (epoch, object, ppn)));
    }

    pub(crate) fn has_limbo(&self) -> bool {
        !self.limbo.is_empty()
    }

    /// Frees the pages in limbo that no running reader can know: those that
    /// entered it before the oldest running reader's epoch (all of them if
    /// none runs). Returns the pages freed.
    pub(crate) fn release_limbo(&mut self, oldest_reader: Option<u64>) -> Vec<u64> {
        let mut freed = Vec::new();
        while let Some(&(epoch, object, ppn)) = self.limbo.front() {
            if oldest_reader.is_some_and(|r| r <= epoch) {
                break;
            }
            self.limbo.pop_front();
            #[cfg(debug_assertions)]
            Self::step(&mut self.steps, ppn, Some(Step::Limbo), Some(Step::Free));
            self.free.entry(object).or_default().push(ppn);
            freed.push(ppn);
        }
        freed
    }

    /// Free pages, of every object.
    pub(crate) fn free_pages(&self) -> u64 {
        self.free.values().map(|f| f.len() as u64).sum()
    }

    /// A free page of `object`'s, or with `any`, of any object's.
    pub(crate) fn take(&mut self, object: u64, any: bool) -> Option<u64> {
        let ppn = match self.free.get_mut(&object).and_then(Vec::pop) {
            Some(p) => Some(p),
            None if any => self.free.values_mut().find_map(Vec::pop),
            None => None,
        }?;
        #[cfg(debug_assertions)]
        Self::step(&mut self.steps, ppn, Some(Step::Free), None);
        self.reused += 1;
        Some(ppn)
    }

    /// Pages found free when the store was opened ([`free_at_open`]).
    pub(crate) fn restore_free(&mut self, pages: Vec<(u64, u64)>) {
        for (object, ppn) in pages {
            #[cfg(debug_assertions)]
            Self::step(&mut self.steps, ppn, None, Some(Step::Free));
            self.free.entry(object).or_default().push(ppn);
        }
    }

    pub(crate) fn stats(&self) -> PageReuseStats {
        PageReuseStats {
            superseded: self.superseded.len() as u64,
            awaiting: self.awaiting.len() as u64,
            limbo: self.limbo.len() as u64,
            free: self.free_pages(),
            reused: self.reused,
        }
    }
}

/// The readers of physical pages that are running, by the epoch each began
/// in: everything that reads pages whose numbers it resolved earlier (NDP
/// calls, which carry them; scans; point reads) holds a [`PageReader`] from
/// before it resolves them until its last read. A durable checkpoint ends
/// an epoch ([`PageReaders::end_epoch`]).
#[derive(Debug, Default)]
pub(crate) struct PageReaders {
    epoch: u64,
    /// Readers running, per epoch they began in.
    running: BTreeMap<u64, usize>,
}

impl PageReaders {
    /// A reader begins: returns its epoch.
    pub(crate) fn begin(&mut self) -> u64 {
        *self.running.entry(self.epoch).or_default() += 1;
        self.epoch
    }

    /// A reader of `epoch` ends.
    pub(crate) fn end(&mut self, epoch: u64) {
        let n = self.running.get_mut(&epoch);
        debug_assert!(n.is_some(), "a page reader of epoch {epoch} ends, but none runs");
        if let Some(n) = n {
            *n -= 1;
            if *n == 0 {
                self.running.remove(&epoch);
            }
        }
    }

    /// The epoch of the oldest reader running.
    pub(crate) fn oldest(&self) -> Option<u64> {
        self.running.keys().next().copied()
    }

    /// Ends the current epoch (a checkpoint is durable); returns it.
    pub(crate) fn end_epoch(&mut self) -> u64 {
        self.epoch += 1;
        self.epoch - 1
    }
}

/// One running reader of physical pages ([`PageReaders`]).
pub(crate) struct PageReader<'a> {
    readers: &'a OrderedMutex<PageReaders>,
    epoch: u64,
}

impl Drop for PageReader<'_> {
    fn drop(&mut self) {
        self.readers.lock().end(self.epoch);
    }
}

/// The pages free at open: every page `alloc` handed out (regions from
/// `data_start` up to its next region, less each object's unallocated
/// cursor range) that `referenced` does not name, highest first (objects
/// take from the end, so in ascending order). Each goes to the object that
/// owns its region, known from the `(ppn, object)` references in it and
/// the cursors (a region has one owner), else to the checkpoint blobs'
/// object. Fails if a referenced page is outside what was allocated.
pub(crate) fn free_at_open(
    alloc: &Allocator,
    data_start: u64,
    referenced: &[(u64, Option<u64>)],
) -> Result<Vec<(u64, u64)>> {
    let (region, next_region) = (alloc.region_pages, alloc.next_region);
    if data_start > next_region || region == 0 {
        return Err(StoreError::Corrupt(format!(
            "checkpoint: allocator region {next_region} before the data pages at {data_start}"
        )));
    }
    let mut owner: HashMap<u64, u64> = HashMap::new();
    let mut named: HashSet<u64> = HashSet::with_capacity(referenced.len());
    for &(ppn, object) in referenced {
        if ppn < data_start || ppn >= next_region {
            return Err(StoreError::Corrupt(format!(
                "checkpoint: physical page {ppn} outside the allocated pages {data_start}..{next_region}"
            )));
        }
        named.insert(ppn);
        if let Some(o) = object {
            owner.entry((ppn - data_start) / region).or_insert(o);
        }
    }
    for (&object, &(next, end)) in &alloc.cursors {
        if end > next && next >= data_start {
            owner.entry((next - data_start) / region).or_insert(object);
        }
    }
    let unallocated: Vec<(u64, u64)> = alloc.cursors.values().copied().collect();
    Ok((data_start..next_region)
        .rev()
        .filter(|p| !named.contains(p) && !unallocated.iter().any(|&(n, e)| (n..e).contains(p)))
        .map(|p| (*owner.get(&((p - data_start) / region)).unwrap_or(&META_OBJECT), p))
        .collect())
}

impl Store {
    /// Moves to free what no running page reader may still know.
    pub(crate) fn release_limbo(&self, m: &mut Maps) {
        let oldest = self.page_readers.lock().oldest();
        let freed = m.reuse.release_limbo(oldest);
        if cfg!(debug_assertions) && !freed.is_empty() {
            self.assert_unreferenced(m, &freed);
        }
    }

    /// Asserts that neither the maps nor a checkpoint names `pages`.
    fn assert_unreferenced(&self, m: &Maps, pages: &[u64]) {
        let pages: HashSet<u64> = pages.iter().copied().collect();
        let named = m.l2p.iter().chain(&m.l2p_pages).find(|p| pages.contains(p));
        debug_assert!(named.is_none(), "physical page {named:?} is freed while mapped");
        let c = self.checkpoints.pages.lock();
        let named = c.durable.iter().chain(&c.free).find(|p| pages.contains(p));
        debug_assert!(named.is_none(), "physical page {named:?} is freed while a checkpoint's");
    }

    /// Held while physical pages resolved under it are read
    /// ([`PageReaders`]); a reader may nest another.
    pub(crate) fn page_reader(&self) -> PageReader<'_> {
        let epoch = self.page_readers.lock().begin();
        PageReader { readers: &self.page_readers, epoch }
    }

    /// A checkpoint that captured the maps is durable: what was superseded
    /// before the capture moves to limbo, and a new epoch of readers begins.
    pub(crate) fn checkpoint_durable(&self) {
        let mut m = self.maps.lock();
        let mut r = self.page_readers.lock();
        m.reuse.durable(r.end_epoch());
    }

    /// Where the physical pages given up are on their way back.
    pub fn page_reuse(&self) -> PageReuseStats {
        self.maps.lock().reuse.stats()
    }

    /// After a restore, before the log is replayed: every allocated data page
    /// that the restored checkpoint does not reference is free (pages that
    /// were on their way back when the last process ended, pages superseded
    /// after the checkpoint, pages written after it, older checkpoints'
    /// blobs): [`free_at_open`] of the L2P map's pages and entries and the
    /// checkpoint's own pages.
    pub(crate) fn rebuild_free_pages(&self, data_start: u64, checkpoint_pages: &[u64]) -> Result<()> {
        let mut lpn_object: HashMap<u64, u64> = HashMap::new();
        for t in &self.tables() {
            let s = t.state.lock();
            lpn_object.extend(s.heap_pages.iter().map(|&l| (l, heap_object(t.id))));
            lpn_object.extend(s.vid_pages.iter().map(|&l| (l, vid_object(t.id))));
        }
        let mut m = self.maps.lock();
        let mapped = m.l2p.iter().enumerate().filter(|&(_, &p)| p != u64::MAX);
        let referenced: Vec<(u64, Option<u64>)> = mapped
            .map(|(lpn, &ppn)| (ppn, lpn_object.get(&(lpn as u64)).copied()))
            .chain(m.l2p_pages.iter().filter(|&&p| p != u64::MAX).map(|&p| (p, Some(L2P_OBJECT))))
            .chain(checkpoint_pages.iter().map(|&p| (p, Some(META_OBJECT))))
            .collect();
        let free = free_at_open(&m.alloc, data_start, &referenced)?;
        m.reuse.restore_free(free);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::AllocClass;
    use crate::test_store::store;

    const A: u64 = 2;
    const B: u64 = 3;

    /// A page moves one step per event and is free only after all three.
    #[test]
    fn a_page_is_free_only_after_capture_durability_and_its_readers() {
        let mut r = PageReuse::default();
        r.supersede(A, 10);
        r.durable(0);
        assert_eq!(r.release_limbo(None), Vec::<u64>::new(), "durable, but captured by no checkpoint");
        assert_eq!(r.stats(), PageReuseStats { superseded: 1, ..PageReuseStats::default() });
        r.capture();
        assert_eq!(r.stats(), PageReuseStats { awaiting: 1, ..PageReuseStats::default() });
        assert_eq!(r.release_limbo(None), Vec::<u64>::new(), "captured, not durable");
        r.durable(1);
        assert_eq!(r.stats(), PageReuseStats { limbo: 1, ..PageReuseStats::default() });
        assert_eq!(r.release_limbo(Some(1)), Vec::<u64>::new(), "a reader of epoch 1 may know it");
        assert_eq!(r.release_limbo(Some(0)), Vec::<u64>::new(), "so may an older one");
        assert_eq!(r.release_limbo(Some(2)), vec![10], "a reader of a later epoch cannot");
        assert_eq!(r.stats(), PageReuseStats { free: 1, ..PageReuseStats::default() });
        assert_eq!(r.take(A, false), Some(10));
        assert_eq!(r.stats(), PageReuseStats { reused: 1, ..PageReuseStats::default() });
        assert_eq!(r.take(A, true), None);
    }

    /// Limbo is released in entry order, up to the oldest reader's epoch.
    #[test]
    fn limbo_is_released_up_to_the_oldest_readers_epoch() {
        let mut r = PageReuse::default();
        for (epoch, ppn) in [(0, 10), (1, 11), (2, 12)] {
            r.supersede(A, ppn);
            r.capture();
            r.durable(epoch);
        }
        assert_eq!(r.release_limbo(Some(2)), vec![10, 11]);
        assert_eq!(r.release_limbo(None), vec![12]);
        assert!(!r.has_limbo());
    }

    /// A free page goes to its own object first; to another only with `any`.
    #[test]
    fn free_pages_go_to_their_own_object_first() {
        let mut r = PageReuse::default();
        r.restore_free(vec![(A, 20), (B, 30)]);
        assert_eq!(r.free_pages(), 2);
        assert_eq!(r.take(B, false), Some(30));
        assert_eq!(r.take(B, false), None, "A's page is not B's");
        assert_eq!(r.take(B, true), Some(20), "unless the device is full");
        assert_eq!(r.stats().reused, 2);
        r.supersede(A, u64::MAX);
        assert_eq!(r.stats().superseded, 0, "nothing was mapped");
    }

    #[test]
    fn readers_are_counted_per_epoch() {
        let mut r = PageReaders::default();
        assert_eq!(r.oldest(), None);
        let (a, b) = (r.begin(), r.begin());
        assert_eq!(r.end_epoch(), 0);
        let c = r.begin();
        assert_eq!((a, b, c), (0, 0, 1));
        r.end(a);
        assert_eq!(r.oldest(), Some(0), "b still runs");
        r.end(b);
        assert_eq!(r.oldest(), Some(1));
        r.end(c);
        assert_eq!(r.oldest(), None);
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "physical page 10 at step Some(Superseded) cannot move to Some(Superseded)")]
    fn a_page_superseded_twice_fails() {
        let mut r = PageReuse::default();
        r.supersede(A, 10);
        r.supersede(B, 10);
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "physical page 10 at step Some(Free) cannot move to Some(Superseded)")]
    fn a_free_page_superseded_fails() {
        let mut r = PageReuse::default();
        r.restore_free(vec![(A, 10)]);
        r.supersede(A, 10);
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "a page reader of epoch 0 ends, but none runs")]
    fn a_reader_ends_once() {
        let mut r = PageReaders::default();
        let e = r.begin();
        r.end(e);
        r.end(e);
    }

    /// Regions of 4 pages from page 4 to 20: A's 4..8, B's 8..12 (used
    /// up), A's 12..16 (its cursor at 14), and 16..20, in which only a page
    /// of no named object is referenced.
    #[test]
    fn at_open_every_allocated_unreferenced_page_is_free_to_its_regions_owner() {
        let mut alloc = Allocator::new(20, 4, 20);
        alloc.cursors.insert(A, (14, 16));
        alloc.cursors.insert(B, (12, 12));
        let free = free_at_open(&alloc, 4, &[(5, Some(A)), (8, Some(B)), (12, None), (17, None)]).unwrap();
        let m = META_OBJECT;
        assert_eq!(free, [(m, 19), (m, 18), (m, 16), (A, 13), (B, 11), (B, 10), (B, 9), (A, 7), (A, 6), (A, 4)]);
    }

    #[test]
    fn at_open_a_reference_outside_the_allocated_pages_is_corrupt() {
        let alloc = Allocator::new(16, 4, 32);
        let e = free_at_open(&alloc, 4, &[(5, Some(A)), (16, None)]).unwrap_err();
        assert_eq!(e.to_string(), "corrupt data: checkpoint: physical page 16 outside the allocated pages 4..16");
        let e = free_at_open(&alloc, 20, &[]).unwrap_err();
        assert_eq!(e.to_string(), "corrupt data: checkpoint: allocator region 16 before the data pages at 20");
    }

    /// A superseded page comes back only after a checkpoint captured the
    /// maps, that checkpoint is durable, and every reader that began before
    /// it is durable has ended; then to its own object first.
    #[test]
    fn a_page_is_reused_only_past_a_durable_checkpoint_and_its_readers() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let (object, other) = (heap_object(1), vid_object(1));
        let page = s.allocate(object, AllocClass::Write).unwrap();
        s.maps.lock().reuse.supersede(object, page);
        let fresh = |n: usize| -> Vec<u64> { (0..n).map(|_| s.allocate(object, AllocClass::Write).unwrap()).collect() };
        // Durable, but captured by no checkpoint: the durable one may hold it.
        s.checkpoint_durable();
        assert!(!fresh(4).contains(&page));
        let early = s.page_reader();
        s.maps.lock().reuse.capture();
        s.checkpoint_durable();
        assert_eq!(s.page_reuse().limbo, 1);
        // A reader that began before it was durable may know the page.
        let late = s.page_reader();
        assert!(!fresh(4).contains(&page), "handed out under a running reader");
        assert!(!(0..4).map(|_| s.allocate(other, AllocClass::Write).unwrap()).any(|p| p == page));
        drop(early);
        // One that began after cannot.
        assert_eq!(s.allocate(object, AllocClass::Write).unwrap(), page);
        drop(late);
        let stats = s.page_reuse();
        assert_eq!((stats.limbo, stats.free, stats.reused), (0, 0, 1));
    }
}
