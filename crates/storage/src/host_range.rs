//! The host-only scan's hot path: one VID range (a morsel) of a
//! [`HostScan`] walked into raw tuples, for a caller that decodes them
//! itself (the SQL engine decodes straight into Arrow arrays).
//!
//! ```text
//!  heads[vids] ─► heap pages they name (sorted, read with read-ahead,
//!       │         headers decoded once per page)
//!       ▼
//!  per VID: head ─► page (the last one used, else a binary search)
//!       ├─ visible, live, qualifies ─► copy its bytes into Tuples
//!       └─ else prev ─► ... (an older page not read yet: read it then)
//! ```
//!
//! [`Store::host_rows_range`] (below) is this walk followed by a
//! [`Value`](ndpdb_format::schema::Value) per projected column (a heap
//! allocation per text value, a vector per row), for callers that want
//! values.
//!
//! Here a record costs a slot lookup, the version header's checks, the
//! snapshot's visibility test and one copy of its bytes: the common case
//! (a single-version chain committed long ago) never leaves the page the
//! previous VID was on. MVCC is the same walk: the first version on the
//! chain that the snapshot sees decides (a tombstone hides the tuple).
//!
//! [`Tuples`] keeps its buffers between morsels (the caller passes it back),
//! so a scan allocates per morsel only the pages it reads.

use std::ops::Range;
use std::time::Instant;

use ndpdb_format::ndp::{Operation, Predicate, Snapshot};
use ndpdb_format::page::{self, PageHeader, RecordId};
use ndpdb_format::record::{HEADER_BYTES, VersionHeader};
use ndpdb_format::schema::Value;

use crate::error::StoreError;
use crate::scan::{HostView, Rec, RowsResult, ScanStats, qualifies};
use crate::store::Store;
use crate::table::{CHAIN_MAX, Table};
use crate::zones::{ZONE_VIDS, Zone, ZoneBuild};

type Result<T> = std::result::Result<T, StoreError>;

/// Raw tuples of a VID range: each visible row's VID and stored bytes (the
/// table's [`Layout`](ndpdb_format::schema::Layout) decodes them), in VID
/// order.
#[derive(Debug, Default, Clone)]
pub struct Tuples {
    vids: Vec<u64>,
    data: Vec<u8>,
    /// `ends[i]`: the end of tuple `i` in `data` (it starts at `ends[i-1]`).
    ends: Vec<u32>,
}

impl Tuples {
    pub fn new() -> Tuples {
        Tuples::default()
    }

    pub fn clear(&mut self) {
        self.vids.clear();
        self.data.clear();
        self.ends.clear();
    }

    pub fn len(&self) -> usize {
        self.vids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vids.is_empty()
    }

    pub fn vids(&self) -> &[u64] {
        &self.vids
    }

    /// Tuple `i`'s bytes.
    #[inline]
    pub fn tuple(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.data[start..self.ends[i] as usize]
    }

    /// The tuples' bytes, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.tuple(i))
    }

    /// Keeps the tuples `keep` says yes to, in order (moved down in
    /// place); returns how many it dropped. Stops at `keep`'s first error,
    /// leaving the tuples in no particular state (clear them to reuse).
    pub fn retain<E>(
        &mut self,
        mut keep: impl FnMut(u64, &[u8]) -> std::result::Result<bool, E>,
    ) -> std::result::Result<usize, E> {
        let (mut kept, mut write, mut start) = (0, 0usize, 0usize);
        for i in 0..self.len() {
            let end = self.ends[i] as usize;
            if keep(self.vids[i], &self.data[start..end])? {
                self.data.copy_within(start..end, write);
                write += end - start;
                self.vids[kept] = self.vids[i];
                self.ends[kept] = write as u32;
                kept += 1;
            }
            start = end;
        }
        let dropped = self.len() - kept;
        self.vids.truncate(kept);
        self.ends.truncate(kept);
        self.data.truncate(write);
        Ok(dropped)
    }

    /// Appends one tuple.
    pub fn push(&mut self, vid: u64, tuple: &[u8]) {
        self.vids.push(vid);
        self.data.extend_from_slice(tuple);
        self.ends.push(self.data.len() as u32);
    }
}

/// The heap pages one range read, sorted by logical page, each with its
/// decoded header; `last` is the index of the page the previous record was
/// on (consecutive VIDs are usually on the same page).
struct RangePages {
    pages: Vec<(u64, PageHeader, Vec<u8>)>,
    last: usize,
}

impl RangePages {
    fn decoded(pages: Vec<(u64, Vec<u8>)>) -> Result<RangePages> {
        let mut out = Vec::with_capacity(pages.len());
        for (lpn, bytes) in pages {
            let h = PageHeader::decode(&bytes).map_err(|e| StoreError::corrupt(format!("page {lpn}"), e))?;
            out.push((lpn, h, bytes));
        }
        out.sort_unstable_by_key(|p| p.0);
        Ok(RangePages { pages: out, last: 0 })
    }

    #[inline]
    fn find(&mut self, lpn: u64) -> Option<usize> {
        if self.pages.get(self.last).is_some_and(|p| p.0 == lpn) {
            return Some(self.last);
        }
        let i = self.pages.binary_search_by_key(&lpn, |p| p.0).ok()?;
        self.last = i;
        Some(i)
    }

    fn insert(&mut self, lpn: u64, bytes: Vec<u8>) -> Result<usize> {
        let h = PageHeader::decode(&bytes).map_err(|e| StoreError::corrupt(format!("page {lpn}"), e))?;
        let at = self.pages.partition_point(|p| p.0 < lpn);
        self.pages.insert(at, (lpn, h, bytes));
        self.last = at;
        Ok(at)
    }
}

/// A record's version header and data, from a page whose header is decoded.
#[inline]
fn record<'p>(page: &'p [u8], h: &PageHeader, rid: RecordId, vid: u64) -> Result<(VersionHeader, &'p [u8])> {
    let corrupt = |e: ndpdb_format::FormatError| StoreError::Corrupt(format!("VID {vid}, record {rid:?}: {e}"));
    let rec = page::heap_record(page, h, rid.slot()).map_err(corrupt)?;
    let vh = VersionHeader::decode(rec, rec.len()).map_err(corrupt)?;
    Ok((vh, &rec[HEADER_BYTES..HEADER_BYTES + usize::from(vh.data_len)]))
}

/// What [`Store::host_tuples_ranges`] walks: VID ranges in the order given
/// (ascending and not overlapping, for VID order), and optionally the
/// zones of the blocks it walks to build (`zones.rs`): a block's zone is
/// widened by every version the walk visits except tombstones, and made
/// unknown when a walk stops before its chain's end (the older versions
/// are not read).
pub struct RangeWalk<'a> {
    pub ranges: &'a [Range<u64>],
    pub zones: Option<&'a mut ZoneBuild>,
}

/// A host-only scan taken apart into VID ranges (morsels): the table's
/// [`HostView`] is taken once, at [`Store::host_scan`], and each
/// [`Store::host_rows_range`] reads only the heap pages its VIDs' chains
/// reach. So a scan holds one range's pages at a time, not the table's, and
/// every range reads the table as it was when the scan began (a head
/// changed later, by this transaction too, is not followed).
pub struct HostScan {
    pub(crate) view: HostView,
}

impl HostScan {
    /// VIDs of the table when the scan began.
    pub fn vids(&self) -> u64 {
        self.view.heads.len() as u64
    }

    /// The table's epoch when the scan began: the epoch of the zones it
    /// may use and builds (`zones.rs`).
    pub fn epoch(&self) -> u64 {
        self.view.epoch
    }
}

impl Store {
    /// Begins a host-only scan of `table` in ranges ([`HostScan`]).
    pub fn host_scan(&self, table: &Table) -> HostScan {
        HostScan { view: HostView::of(table) }
    }

    /// The visible rows of VIDs `vids` (clipped to the scan's VIDs),
    /// projected, walked on the calling thread:
    /// [`Store::host_tuples_range`]'s raw tuples with a value per projected
    /// column.
    pub fn host_rows_range(
        &self,
        table: &Table,
        scan: &HostScan,
        snapshot: &Snapshot,
        projection: &[u16],
        predicate: Option<&Predicate>,
        vids: std::ops::Range<u64>,
    ) -> Result<RowsResult> {
        self.check_columns(table, &Operation::Rows { projection: projection.to_vec() }, predicate)?;
        let mut tuples = crate::Tuples::new();
        let stats = self.host_tuples_range(table, scan, snapshot, predicate, vids, &mut tuples)?;
        let rows = tuples
            .vids()
            .iter()
            .zip(tuples.iter())
            .map(|(&vid, data)| {
                let vals = projection
                    .iter()
                    .map(|&c| table.layout.column(data, usize::from(c)))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| StoreError::Corrupt(format!("VID {vid}: {e}")))?;
                Ok((vid, vals))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RowsResult { rows, stats })
    }
}

impl Store {
    /// The visible, live rows of VIDs `vids` of `scan` (clipped to its VIDs)
    /// that satisfy `predicate`, appended to `out` as raw tuples; walked on
    /// the calling thread. The same rows as [`Store::host_rows_range`].
    pub fn host_tuples_range(
        &self,
        table: &Table,
        scan: &HostScan,
        snapshot: &Snapshot,
        predicate: Option<&Predicate>,
        vids: Range<u64>,
        out: &mut Tuples,
    ) -> Result<ScanStats> {
        self.host_tuples_ranges(table, scan, snapshot, predicate, RangeWalk { ranges: &[vids], zones: None }, out)
    }

    /// [`Store::host_tuples_range`] over the VID ranges of `walk`, reading
    /// only the pages their chains reach, and building `walk.zones` on the
    /// way ([`RangeWalk`]).
    pub fn host_tuples_ranges(
        &self,
        table: &Table,
        scan: &HostScan,
        snapshot: &Snapshot,
        predicate: Option<&Predicate>,
        walk: RangeWalk<'_>,
        out: &mut Tuples,
    ) -> Result<ScanStats> {
        let RangeWalk { ranges, zones: mut build } = walk;
        self.check_columns(table, &Operation::Rows { projection: vec![] }, predicate)?;
        if let Some(b) = &build {
            self.check_columns(table, &Operation::Rows { projection: vec![b.column] }, None)?;
        }
        let (wall, t0_ps) = (Instant::now(), self.device().now_ps());
        let view = &scan.view;
        let total = view.heads.len() as u64;
        let ranges: Vec<Range<usize>> =
            ranges.iter().map(|r| r.start.min(total) as usize..r.end.min(total) as usize).collect();
        let mut lpns: Vec<u64> = ranges
            .iter()
            .flat_map(|r| view.heads[r.clone()].iter())
            .filter(|r| !r.is_none() && !view.delta.contains_key(&r.lpn()))
            .map(|r| r.lpn())
            .collect();
        lpns.sort_unstable();
        lpns.dedup();
        let mut qp = self.device().queue_pair();
        let mut pages = RangePages::decoded(self.read_page_runs(&lpns, &mut qp)?)?;
        let mut visited = 0u64;
        for vid in ranges.into_iter().flatten() {
            let vid64 = vid as u64;
            let mut zone = build.as_deref_mut().and_then(|b| zone_of(b, vid64));
            let mut rid = view.heads[vid];
            let mut steps = 0usize;
            while !rid.is_none() {
                visited += 1;
                steps += 1;
                if steps > CHAIN_MAX {
                    return Err(StoreError::Corrupt(format!("VID {vid}: version chain does not end (a cycle?)")));
                }
                let lpn = rid.lpn();
                let (h, data) = match view.delta.get(&lpn) {
                    Some(delta) => delta_record(delta, rid, vid64)?,
                    None => {
                        let i = match pages.find(lpn) {
                            Some(i) => i,
                            None => {
                                let read = self.read_page_runs(&[lpn], &mut qp)?;
                                let (lpn, bytes) = read.into_iter().next().ok_or_else(|| {
                                    StoreError::Corrupt(format!(
                                        "VID {vid}: page {lpn} of record {rid:?} is not in the table"
                                    ))
                                })?;
                                pages.insert(lpn, bytes)?
                            }
                        };
                        let (_, ph, bytes) = &pages.pages[i];
                        record(bytes, ph, rid, vid64)?
                    }
                };
                if let Some((z, column)) = zone.as_mut() {
                    widen(z, table, *column, vid64, &h, data)?;
                }
                if snapshot.visible(h.create_ts) {
                    if !h.tombstone && qualifies(table, &Rec { vid: vid64, data }, predicate)? {
                        out.push(vid64, data);
                    }
                    if let Some((z, _)) = zone.as_mut().filter(|_| !h.prev.is_none()) {
                        **z = Zone::UNKNOWN;
                    }
                    break;
                }
                rid = h.prev;
            }
        }
        // The queue pair's own counters and waits: exact while other
        // threads walk other ranges of the same scan at the same time.
        let span_ps = qp.waited_span_ps().unwrap_or((t0_ps, t0_ps));
        Ok(ScanStats {
            counters: qp.counters(),
            modelled_s: qp.waited_ps() as f64 / 1e12,
            wall_s: wall.elapsed().as_secs_f64(),
            visited,
            host_cpu_s: 0.0,
            span_ps,
        })
    }
}

/// The zone `build` holds for `vid`'s block, and the column it is of.
fn zone_of(build: &mut ZoneBuild, vid: u64) -> Option<(&mut Zone, u16)> {
    let at = usize::try_from((vid / ZONE_VIDS).checked_sub(build.first_block)?).ok()?;
    let column = build.column;
    build.zones.get_mut(at).map(|z| (z, column))
}

/// Widens `zone` by the value of `column` in one version (not a tombstone,
/// whose bytes are no row).
fn widen(zone: &mut Zone, table: &Table, column: u16, vid: u64, h: &VersionHeader, data: &[u8]) -> Result<()> {
    if h.tombstone {
        return Ok(());
    }
    match table.layout.column(data, usize::from(column)) {
        Ok(Value::Int(v)) => zone.widen(v),
        Ok(Value::Null) => {}
        Ok(Value::Text(_)) => *zone = Zone::UNKNOWN,
        Err(e) => return Err(StoreError::Corrupt(format!("VID {vid}: {e}"))),
    }
    Ok(())
}

fn delta_record(page: &[u8], rid: RecordId, vid: u64) -> Result<(VersionHeader, &[u8])> {
    let h = PageHeader::decode(page).map_err(|e| StoreError::Corrupt(format!("VID {vid}, record {rid:?}: {e}")))?;
    record(page, &h, rid, vid)
}
