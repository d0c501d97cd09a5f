//! Garbage collection: removing versions that no snapshot can see.
//!
//! Given a horizon `h` such that every version created by a transaction with
//! id < h is visible to every open and future snapshot (the transaction
//! layer computes it), the first version `V` of a chain with
//! `create_ts < h` is the oldest any snapshot will ever reach: every walk
//! stops at `V` or before. So GC
//!
//! 1. cuts each chain below `V` (sets `V.prev` to NONE),
//! 2. removes tuples whose `V` is a head tombstone (head := NONE), and
//! 3. unmaps heap pages that no longer hold a reachable version.
//!
//! Records are immutable once written, so a cut rewrites the page holding
//! `V`: the page is read, patched, resealed and written to a new physical
//! page, and the L2P map points the same logical page at it. RecordIds keep
//! naming the same records, so no chain a snapshot still walks is broken.
//! The physical pages given up this way, and those of unmapped pages, go
//! back to the allocator once a durable checkpoint no longer references
//! them (`PageReuse` in `reuse.rs`); GC shortens chains and frees logical
//! pages.

use std::collections::{BTreeMap, HashSet};

use ndpdb_format::page::{self, RecordId};
use ndpdb_format::record::VersionHeader;

use crate::alloc::heap_object;
use crate::error::StoreError;
use crate::store::Store;
use crate::table::{CHAIN_MAX, Head, Table};

/// What one collection did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcStats {
    pub chains_cut: u64,
    pub tuples_removed: u64,
    pub pages_rewritten: u64,
    pub pages_unmapped: u64,
    /// Versions that became unreachable.
    pub versions_removed: u64,
    /// Compaction ([`Store::compact_into`]): versions copied off sparse
    /// pages, and the pages they left (counted in `pages_unmapped` too).
    pub versions_moved: u64,
    pub pages_compacted: u64,
}

/// A written heap page is compacted when at most this share of its records
/// is still reachable (as a single-version tuple).
const COMPACT_LIVE_SHARE: (u64, u64) = (1, 2);

/// What the headers of a table's written heap pages say, read a page at a
/// time before the chains are walked: the walks would otherwise read a
/// page per version (16 s for 1M tuples with 4 versions each). Records on
/// written pages never change while GC runs (GC patches its own copies
/// after the walks), so the map is exact for them; versions elsewhere (the
/// delta buffer, pages written during the collection) are read as before.
#[derive(Default)]
struct Headers {
    /// Per page: its index into `versions`, and its slot count.
    pages: std::collections::HashMap<u64, (usize, u16)>,
    versions: Vec<Option<VersionHeader>>,
}

impl Headers {
    fn get(&self, rid: RecordId) -> Option<VersionHeader> {
        let &(first, slots) = self.pages.get(&rid.lpn())?;
        if rid.slot() >= slots {
            return None;
        }
        self.versions[first + usize::from(rid.slot())]
    }
}

/// What one collection changes, found by walking the chains
/// ([`Store::gc_plan`]).
#[derive(Default)]
struct GcPlan {
    /// Per page, the slots to cut and how many versions each cut removes.
    cuts: BTreeMap<u64, Vec<(u16, u64)>>,
    /// Pages some chain still reaches.
    reachable: HashSet<u64>,
    /// Tuples whose oldest visible version is a head tombstone: (VID, its
    /// head then, its versions).
    dead: Vec<(u64, Head, u64)>,
}

impl Store {
    /// Reads the headers of every record on `lpns`, a page at a time.
    fn read_headers(&self, lpns: impl IntoIterator<Item = u64>) -> Result<Headers, StoreError> {
        let mut h = Headers::default();
        for lpn in lpns {
            let bytes = self.read_page(lpn, &mut self.qp.lock())?;
            let Ok(ph) = page::PageHeader::decode(&bytes) else { continue };
            h.pages.insert(lpn, (h.versions.len(), ph.slot_count));
            for slot in 0..ph.slot_count {
                let v = page::heap_record(&bytes, &ph, slot).ok().and_then(|r| VersionHeader::decode(r, r.len()).ok());
                h.versions.push(v);
            }
        }
        Ok(h)
    }

    /// The header of the version at `rid`: from `headers` if its page was
    /// read, else from the device or the delta buffer.
    fn header_at(&self, table: &Table, headers: &Headers, rid: RecordId) -> Result<VersionHeader, StoreError> {
        match headers.get(rid) {
            Some(h) => Ok(h),
            None => Ok(self.read_version(table, rid)?.0),
        }
    }

    /// Collects `table` below `horizon` (see the module docs).
    pub fn gc(&self, table: &Table, horizon: u64) -> Result<GcStats, StoreError> {
        let mut stats = GcStats::default();
        self.gc_into(table, horizon, &mut stats)?;
        Ok(stats)
    }

    /// [`Store::gc`], adding to `stats` what it did as it does it, so that
    /// a collection that fails part-way (a full device: each page it patches
    /// takes a free page first) has counted exactly what it changed, and
    /// may simply run again (every step is written on its own: chains
    /// already cut and tuples already removed are not seen again).
    pub fn gc_into(&self, table: &Table, horizon: u64, stats: &mut GcStats) -> Result<(), StoreError> {
        self.writable("garbage collection")?;
        // Pages written while we collect hold new versions: only pages that
        // existed when we looked at the heads may be unmapped.
        let (heads, pages_before, delta): (Vec<Head>, HashSet<u64>, HashSet<u64>) = {
            let s = table.state.lock();
            (s.heads.clone(), s.heap_pages.iter().copied().collect(), s.delta.iter().map(|p| p.lpn()).collect())
        };
        let headers = self.read_headers(pages_before.iter().copied().filter(|l| !delta.contains(l)))?;
        let GcPlan { cuts, mut reachable, dead } = self.gc_plan(table, &headers, &heads, horizon)?;
        {
            let mut s = table.state.lock();
            for &(vid, was, versions) in &dead {
                // A writer may have come since; then the tuple lives on.
                if s.heads[vid as usize] == was {
                    s.heads[vid as usize] = Head::NONE;
                    s.vid_dirty.insert(vid);
                    stats.tuples_removed += 1;
                    stats.versions_removed += versions;
                } else {
                    reachable.insert(was.rid.lpn());
                }
            }
        }
        self.cut_chains(table, cuts, stats)?;
        let unreachable: Vec<u64> = {
            let mut s = table.state.lock();
            let (keep, drop): (Vec<u64>, Vec<u64>) =
                s.heap_pages.iter().partition(|l| reachable.contains(l) || !pages_before.contains(l));
            s.heap_pages = keep;
            drop
        };
        for lpn in unreachable {
            self.unmap(heap_object(table.id), lpn);
            stats.pages_unmapped += 1;
        }
        Ok(())
    }

    /// Walks every chain from `heads` down to its first version below
    /// `horizon` (see the module docs) and says what to change.
    fn gc_plan(&self, table: &Table, headers: &Headers, heads: &[Head], horizon: u64) -> Result<GcPlan, StoreError> {
        let mut plan = GcPlan::default();
        for (vid, head) in heads.iter().enumerate() {
            let mut rid = head.rid;
            let mut on_chain = Vec::new();
            while !rid.is_none() {
                if on_chain.len() > CHAIN_MAX {
                    return Err(StoreError::Corrupt(format!(
                        "VID {vid}: version chain longer than {CHAIN_MAX} (a cycle?)"
                    )));
                }
                let h = self.header_at(table, headers, rid)?;
                on_chain.push(rid.lpn());
                if h.create_ts < horizon {
                    let below = self.chain_len(table, headers, h.prev)?;
                    if h.tombstone && rid == head.rid {
                        plan.dead.push((vid as u64, *head, below + 1));
                        on_chain.clear();
                    } else if !h.prev.is_none() {
                        plan.cuts.entry(rid.lpn()).or_default().push((rid.slot(), below));
                    }
                    break;
                }
                rid = h.prev;
            }
            plan.reachable.extend(on_chain);
        }
        Ok(plan)
    }

    /// Cuts the chains of `cuts` (`prev` := NONE): in the delta buffer, or
    /// in a rewritten copy of the written page.
    fn cut_chains(
        &self,
        table: &Table,
        cuts: BTreeMap<u64, Vec<(u16, u64)>>,
        stats: &mut GcStats,
    ) -> Result<(), StoreError> {
        for (lpn, cut) in cuts {
            let slots: Vec<u16> = cut.iter().map(|&(slot, _)| slot).collect();
            if !self.cut_in_delta(table, lpn, &slots)? {
                let mut bytes = self.read_page(lpn, &mut self.qp.lock())?;
                for &slot in &slots {
                    page::set_prev(&mut bytes, slot, RecordId::NONE)
                        .map_err(|e| StoreError::Corrupt(format!("page {lpn}: {e}")))?;
                }
                page::seal(&mut bytes);
                self.replace_page(heap_object(table.id), lpn, bytes)?;
                stats.pages_rewritten += 1;
            }
            stats.chains_cut += slots.len() as u64;
            stats.versions_removed += cut.iter().map(|&(_, below)| below).sum::<u64>();
        }
        Ok(())
    }

    /// Compaction, for a database in which no transaction is open and none
    /// can begin (the caller holds them off: `Database::gc` does so only
    /// when none is open). GC unmaps a page only when nothing on it is
    /// reachable, and random updates leave a few live versions on most
    /// pages, so without this the heap grows even with regular GC.
    ///
    /// A written heap page (not a delta-buffer page) on which every
    /// reachable record is a tuple's only version (its head, `prev` = NONE)
    /// and at most half the records are reachable gives those tuples up:
    /// each is copied, header and data unchanged, into the delta buffer, and
    /// its head points at the copy. Same creator, same visibility: every
    /// snapshot sees the copy exactly where it saw the original, and the
    /// tuple-lock key (VID, creator) stays the same. Then the page holds
    /// nothing reachable and is unmapped; its physical page comes back
    /// after the next durable checkpoint like any other. A page holding a
    /// longer chain's member (a pinned snapshot keeps chains) is left alone.
    ///
    /// Nothing is logged: the log is logical, and until the next checkpoint
    /// the last one still maps the old pages (superseded pages are not
    /// reused before a durable checkpoint). On a device too full for the
    /// copies it stops with `DeviceFull`, having changed only whole tuples.
    pub fn compact_into(&self, table: &Table, stats: &mut GcStats) -> Result<(), StoreError> {
        self.writable("compaction")?;
        let (heads, candidates): (Vec<Head>, Vec<u64>) = {
            let s = table.state.lock();
            let delta: HashSet<u64> = s.delta.iter().map(|p| p.lpn()).collect();
            (s.heads.clone(), s.heap_pages.iter().copied().filter(|l| !delta.contains(l)).collect())
        };
        let headers = self.read_headers(candidates)?;
        // Per page: its single-version tuples, or None once it holds a
        // member of a longer chain.
        let mut singles: BTreeMap<u64, Option<Vec<(u64, Head)>>> = BTreeMap::new();
        for (vid, head) in heads.iter().enumerate() {
            if head.rid.is_none() {
                continue;
            }
            let h = self.header_at(table, &headers, head.rid)?;
            if h.prev.is_none() {
                if let Some(list) = singles.entry(head.rid.lpn()).or_insert_with(|| Some(Vec::new())) {
                    list.push((vid as u64, *head));
                }
                continue;
            }
            let mut rid = head.rid;
            let mut hops = 0;
            while !rid.is_none() {
                hops += 1;
                if hops > CHAIN_MAX {
                    return Err(StoreError::Corrupt(format!(
                        "VID {vid}: version chain longer than {CHAIN_MAX} (a cycle?)"
                    )));
                }
                singles.insert(rid.lpn(), None);
                rid = self.header_at(table, &headers, rid)?.prev;
            }
        }
        for (lpn, tuples) in singles {
            // Only written pages that decoded are in `headers`.
            let (Some(tuples), Some(&(_, slots))) = (tuples, headers.pages.get(&lpn)) else { continue };
            let slots = u64::from(slots);
            let (num, den) = COMPACT_LIVE_SHARE;
            if tuples.len() as u64 * den > slots * num {
                continue;
            }
            let mut moved_all = true;
            for (vid, head) in tuples {
                let (h, data) = self.read_version(table, head.rid)?;
                let copy = self.append_version(table, h, &data)?;
                let mut s = table.state.lock();
                if s.heads[vid as usize] == head {
                    s.heads[vid as usize] = Head { rid: copy, ..head };
                    s.vid_dirty.insert(vid);
                    stats.versions_moved += 1;
                } else {
                    // A writer came after all (the caller's promise broken):
                    // the original may be its new version's `prev`.
                    moved_all = false;
                }
            }
            if !moved_all {
                continue;
            }
            {
                let mut s = table.state.lock();
                s.heap_pages.retain(|&l| l != lpn);
            }
            self.unmap(heap_object(table.id), lpn);
            stats.pages_compacted += 1;
            stats.pages_unmapped += 1;
        }
        Ok(())
    }

    fn chain_len(&self, table: &Table, headers: &Headers, mut rid: RecordId) -> Result<u64, StoreError> {
        let mut n = 0;
        while !rid.is_none() {
            n += 1;
            if n > CHAIN_MAX as u64 {
                return Err(StoreError::Corrupt(format!(
                    "version chain from {rid:?} longer than {CHAIN_MAX} (a cycle?)"
                )));
            }
            rid = self.header_at(table, headers, rid)?.prev;
        }
        Ok(n)
    }

    /// Cuts chains in a delta-buffer page; false if the page was written.
    fn cut_in_delta(&self, table: &Table, lpn: u64, slots: &[u16]) -> Result<bool, StoreError> {
        let mut s = table.state.lock();
        let st = &mut *s;
        let Some(i) = st.delta.iter().position(|p| p.lpn() == lpn) else { return Ok(false) };
        let p = &mut st.delta[i];
        // The device may read this page from its frame (CBM): each cut is
        // published there too.
        let frame = st.delta_frames.get(i).copied().flatten().zip(self.cbm.frames.get());
        for &slot in slots {
            p.set_prev(slot, RecordId::NONE).map_err(|e| StoreError::Corrupt(format!("delta page {lpn}: {e}")))?;
            if let Some((f, frames)) = frame {
                frames.publish_record(f.frame, p, slot)?;
            }
        }
        Ok(true)
    }
}
