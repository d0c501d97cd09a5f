//! Update-NDP on the storage side: reserving pages for the device's new
//! versions, calling `ndp.update`, and installing what it wrote.
//!
//! The device program (`ndpdb_device` `update.rs`) computes the snapshot,
//! locks each qualifying tuple's visible version in the shared lock table,
//! and writes new versions into pages the host reserved for the call. It
//! installs nothing. [`Store::install_update`] then, under the table's state
//! lock, checks that every base version is still its tuple's newest (first
//! updater wins; a host writer that based its version on the same one had to
//! hold the same lock), maps the written pages and points the VID map at the
//! new versions, all or nothing. A call that fails, or whose install is
//! refused, leaves pages that nothing maps (reserved pages the PEs did not
//! fill go back to the allocator by way of `PageReuse`).
//!
//! Pages: the host first counts the qualifying tuples of each PE's share of
//! the VIDs with an NDP `count(*)` in the same snapshot, then reserves
//! `ceil(count_p / records_per_page)` pages for PE `p` (records_per_page
//! for the table's longest record), and the update call splits the same
//! VIDs. The snapshot and the predicate decide which tuples qualify, so the
//! counts are exact: each PE gets the pages it fills, its last one perhaps
//! partly, whichever PE the qualifying tuples fall to.

use ndpdb_format::ndp::{Aggregate, Operation, Predicate, Snapshot, UpdateExpr, UpdateOutput, encode_page_runs};
use ndpdb_format::page::{PAGE_HEADER_BYTES, SLOT_BYTES};
use ndpdb_format::record::HEADER_BYTES;

use crate::scan::{Freshness, NdpScan, ScanStats, UpdateArgs};
use crate::store::{AllocClass, Head, Result, Store, StoreError, Table, TableState, heap_object};

/// How many polls of its lock bucket a PE makes before it gives up on a
/// lock held by another transaction (and fails the call). Past the first
/// thousand, the emulated PE sleeps 20 us between polls, so this is well
/// under a second of real waiting. The host cannot see a PE's wait in its
/// waits-for graph, so this bound is what ends a deadlock between a device
/// transaction and a host one.
pub const DEFAULT_POLL_LIMIT: u64 = 1 << 14;

/// One tuple the device updated (the entry `ndp.update` reports).
pub use ndpdb_format::ndp::UpdatedTuple;

/// The tuples an update call updated, and the pages it programmed: (lpn, ppn).
type Written = (Vec<UpdatedTuple>, Vec<(u64, u64)>);

/// What an `ndp.update` call wrote; nothing of it is visible until
/// [`Store::install_update`].
#[derive(Debug, Clone)]
pub struct NdpUpdate {
    pub tuples: Vec<UpdatedTuple>,
    /// Pages the device programmed: (lpn, ppn).
    pub pages: Vec<(u64, u64)>,
    /// The counting call and the update call together.
    pub stats: ScanStats,
}

/// One update-NDP statement: `UPDATE table SET column = expr WHERE
/// predicate` on `pes` PEs in `snapshot`; a PE that polls a lock `poll_limit`
/// times without getting it gives up (and the call fails).
#[derive(Clone, Copy)]
pub struct NdpUpdateCall<'a> {
    pub table: &'a Table,
    pub snapshot: &'a Snapshot,
    pub column: u16,
    pub expr: UpdateExpr,
    pub predicate: Option<&'a Predicate>,
    pub pes: u32,
    pub poll_limit: u64,
    /// How both calls (counting, then updating) get the delta pages: Ship,
    /// or Cbm (through the device's mirror); Flush writes them first.
    pub freshness: Freshness,
}

impl Store {
    /// Runs `UPDATE table SET column = expr WHERE predicate` on the device's
    /// PEs in `snapshot`, as transaction `snapshot.own`. The value in `expr`
    /// is in the column's stored units (a decimal's value times 10^scale).
    pub fn ndp_update(&self, call: &NdpUpdateCall<'_>) -> Result<NdpUpdate> {
        let NdpUpdateCall { table, snapshot, column, expr, predicate, pes, poll_limit, freshness } = *call;
        self.writable("update-NDP")?;
        if snapshot.own == 0 {
            return Err(StoreError::InvalidInput("an update needs a writing transaction (snapshot.own)".into()));
        }
        if self.device().lock_table().is_none() {
            return Err(StoreError::InvalidInput(format!(
                "update-NDP needs the lock table in coherent memory, and profile {} has no coherent interconnect; \
                 use u280-nvm or ideal, or update on the host",
                self.device().profile().name
            )));
        }
        let op = Operation::Update { column, expr };
        self.check_columns(table, &op, predicate)?;
        let pes = pes.max(1);
        let m = self.measure();
        // Count the qualifying tuples of each PE's share of the VIDs, so that
        // each PE gets the pages its share needs (a predicate can select
        // all of one PE's tuples and none of another's), and have the update
        // split the same VIDs.
        let scan = NdpScan { table, snapshot, predicate, pes, freshness };
        let (partials, vids) = self.aggregate_partials(&scan, &[(Aggregate::CountStar, 0)])?;
        let per_page = self.records_per_page(table);
        let runs: Vec<u64> = partials.iter().map(|p| p.rows.div_ceil(per_page)).collect();
        let pages = self.reserve_pages(table, runs.iter().sum())?;
        let share = UpdateOutput::share_bytes(vids / u64::from(pes) + 1);
        let (out, _) = self.ndp_call(
            &scan,
            op,
            share * u64::from(pes),
            Some(UpdateArgs {
                params: vec![u64::from(table.id), poll_limit],
                pages: encode_page_runs(&pages, &runs),
                vids,
            }),
        )?;
        let (mut tuples, written) = self.update_output(table, &out, share as usize, &pages, &runs)?;
        tuples.sort_unstable_by_key(|t| t.vid);
        Ok(NdpUpdate { tuples, pages: written, stats: self.stats(m, 0) })
    }

    /// The tuples the PEs updated and the pages they programmed, from the
    /// output of an update call whose PE `p` had pages `runs[p]` of `pages`
    /// in turn; pages no PE programmed go back to the allocator.
    fn update_output(
        &self,
        table: &Table,
        out: &[u8],
        share: usize,
        pages: &[(u64, u64)],
        runs: &[u64],
    ) -> Result<Written> {
        let mut tuples = Vec::new();
        let mut written = Vec::new();
        let mut mine = pages;
        for (pe, &run) in runs.iter().enumerate() {
            let part = UpdateOutput::decode(&out[pe * share..(pe + 1) * share])
                .map_err(|e| StoreError::Corrupt(format!("PE {pe}'s updates: {e}")))?;
            let (own, rest) = mine.split_at(run as usize);
            mine = rest;
            if part.pages_written > own.len() as u64 {
                return Err(StoreError::Corrupt(format!(
                    "PE {pe} reports {} pages of {}",
                    part.pages_written,
                    own.len()
                )));
            }
            tuples.extend(part.tuples);
            written.extend_from_slice(&own[..part.pages_written as usize]);
        }
        let written_lpns: std::collections::HashSet<u64> = written.iter().map(|&(l, _)| l).collect();
        {
            // Reserved pages the PEs did not fill: never mapped, so never in
            // a checkpoint; they go back the usual way.
            let mut m = self.maps.lock();
            for &(lpn, ppn) in pages {
                if !written_lpns.contains(&lpn) {
                    m.reuse.supersede(heap_object(table.id), ppn);
                }
            }
        }
        for t in &tuples {
            if t.vid >= table.vids() || !written_lpns.contains(&t.new.lpn()) {
                return Err(StoreError::Corrupt(format!(
                    "the device reports an update of VID {} it cannot have made",
                    t.vid
                )));
            }
        }
        Ok((tuples, written))
    }

    /// Records of the table's longest version a page holds.
    fn records_per_page(&self, table: &Table) -> u64 {
        let record = (HEADER_BYTES + table.layout.max_tuple_bytes()).div_ceil(4) * 4 + SLOT_BYTES;
        ((self.page_bytes - PAGE_HEADER_BYTES) / record).max(1) as u64
    }

    /// New logical pages with physical pages of the table's heap behind
    /// them, not mapped yet: (lpn, ppn).
    fn reserve_pages(&self, table: &Table, n: u64) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let lpn = self.new_lpn()?;
            let ppn = self.allocate(heap_object(table.id), AllocClass::Write)?;
            out.push((lpn, ppn));
        }
        Ok(out)
    }

    /// Makes an update's versions the tuples' newest, as transaction `own`,
    /// if every base version still is; returns the heads it replaced (for
    /// an abort), or the first VID whose newest version changed.
    pub fn install_update(
        &self,
        table: &Table,
        update: &NdpUpdate,
        own: u64,
    ) -> Result<std::result::Result<Vec<(u64, Head)>, u64>> {
        let mut s = table.state.lock();
        if let Some(t) = update.tuples.iter().find(|t| s.heads.get(t.vid as usize).is_none_or(|h| h.rid != t.base)) {
            return Ok(Err(t.vid));
        }
        Ok(Ok(self.install(&mut s, update, update.tuples.iter(), own)))
    }

    /// Read committed's install: makes the versions of the tuples whose base
    /// version is still the newest the new newest, as transaction `own`;
    /// returns the heads it replaced and the tuples it left out, whose base
    /// a later commit replaced (their new versions stay unreferenced; the
    /// caller re-evaluates those rows on their newest version).
    pub fn install_update_current(
        &self,
        table: &Table,
        update: &NdpUpdate,
        own: u64,
    ) -> (Vec<(u64, Head)>, Vec<UpdatedTuple>) {
        let mut s = table.state.lock();
        let (current, stale): (Vec<&UpdatedTuple>, Vec<&UpdatedTuple>) =
            update.tuples.iter().partition(|t| s.heads.get(t.vid as usize).is_some_and(|h| h.rid == t.base));
        let old = self.install(&mut s, update, current.into_iter(), own);
        (old, stale.into_iter().copied().collect())
    }

    /// Maps the update's pages and points `tuples` at their new versions.
    fn install<'u>(
        &self,
        s: &mut TableState,
        update: &NdpUpdate,
        tuples: impl Iterator<Item = &'u UpdatedTuple>,
        own: u64,
    ) -> Vec<(u64, Head)> {
        {
            let mut m = self.maps.lock();
            for &(lpn, ppn) in &update.pages {
                m.l2p[lpn as usize] = ppn;
                m.l2p_dirty.insert(lpn);
            }
        }
        s.heap_pages.extend(update.pages.iter().map(|&(l, _)| l));
        let mut old = Vec::with_capacity(update.tuples.len());
        for t in tuples {
            let i = t.vid as usize;
            old.push((t.vid, s.heads[i]));
            s.heads[i] = Head { rid: t.new, create_ts: own, tombstone: false };
            s.epoch += 1;
            s.vid_dirty.insert(t.vid);
        }
        old
    }
}
