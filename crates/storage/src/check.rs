//! The integrity check (`ndpdb check`): decodes every page a table owns,
//! walks every version chain from its VID map entry, and compares the VID
//! map pages and the L2P map pages on the device (what NDP calls read) with
//! the heads and the map the host holds. It reads through
//! the same command interface as everything else and changes nothing.
//!
//! Each problem is reported with where it is: table, logical page (and the
//! physical page behind it), slot or VID. The check goes on after a problem,
//! up to [`ERRORS_MAX`] of them.
//!
//! Each heap page is read once. While it is decoded, what every version's
//! header says (creator, predecessor, deletion) and whether its tuple
//! decodes are kept, 24 bytes a version, and the chain walk uses those; only
//! delta-buffer versions and records that failed to decode are read again,
//! the latter to report why. A page read per version took 29 s for 1M
//! tuples with 5 versions each; this takes 2.6 s.

use std::collections::{BTreeSet, HashMap, HashSet};

use ndpdb_device::Command;
use ndpdb_format::page::{self, PageKind, RecordId};
use ndpdb_format::record::VersionHeader;
use ndpdb_format::schema::Layout;

use crate::error::{Result, page_unreadable};
use crate::store::Store;
use crate::table::{CHAIN_MAX, Head, Table};

/// Problems reported before the check stops listing them.
pub const ERRORS_MAX: usize = 1000;

/// What the check looked at and what it found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub tables: u64,
    pub pages: u64,
    pub vids: u64,
    pub versions: u64,
    /// Each problem, with its place.
    pub errors: Vec<String>,
    /// Problems beyond [`ERRORS_MAX`] that were counted, not listed.
    pub more_errors: u64,
}

impl CheckReport {
    fn error(&mut self, e: String) {
        if self.errors.len() < ERRORS_MAX {
            self.errors.push(e);
        } else {
            self.more_errors += 1;
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.len() as u64 + self.more_errors
    }
}

impl Store {
    /// Checks every table (see the module docs).
    pub fn check(&self) -> Result<CheckReport> {
        let mut r = CheckReport::default();
        // The L2P map: no physical page behind two logical pages.
        {
            let m = self.maps.lock();
            let total = m.alloc.total_pages;
            let mut owner: HashMap<u64, u64> = HashMap::new();
            for (lpn, &ppn) in m.l2p.iter().enumerate() {
                if ppn == u64::MAX {
                    continue;
                }
                if ppn >= total {
                    r.error(format!(
                        "L2P: logical page {lpn} maps to physical page {ppn}, beyond the device's {total}"
                    ));
                } else if let Some(other) = owner.insert(ppn, lpn as u64) {
                    r.error(format!("L2P: logical pages {other} and {lpn} both map to physical page {ppn}"));
                }
            }
        }
        self.check_l2p_pages(&mut r)?;
        for t in self.tables() {
            r.tables += 1;
            self.check_table(&t, &mut r);
        }
        Ok(r)
    }

    /// The L2P map pages on the device (which NDP calls read) agree with
    /// the host's map, except for entries the host has not written yet.
    fn check_l2p_pages(&self, r: &mut CheckReport) -> Result<()> {
        let (l2p, pages, dirty) = {
            let m = self.maps.lock();
            (m.l2p.clone(), m.l2p_pages.clone(), m.l2p_dirty.clone())
        };
        let per_page = self.per_page;
        for (i, &ppn) in pages.iter().enumerate().filter(|&(_, &p)| p != u64::MAX) {
            r.pages += 1;
            let bytes = match self.qp.lock().call(Command::PageRead { ppn, host_addr: None }) {
                Ok(reply) => reply.into_data(),
                Err(e) if page_unreadable(&e) => {
                    r.error(format!("L2P map page {i} (physical {ppn}): {e}"));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            match page::verify(&bytes) {
                Err(e) => r.error(format!("L2P map page {i} (physical {ppn}): {e}")),
                Ok(h) if h.kind != PageKind::L2pMap || h.lpn != i as u64 => r.error(format!(
                    "L2P map page {i} (physical {ppn}) holds {:?} page {} of object {}",
                    h.kind, h.lpn, h.object_id
                )),
                Ok(_) => {
                    let first = i * per_page;
                    let end = ((i + 1) * per_page).min(l2p.len());
                    let differ = (first..end)
                        .filter(|&l| !dirty.contains(&(l as u64)))
                        .find(|&l| page::map_entry(&bytes, l - first).ok() != Some(l2p[l]));
                    if let Some(l) = differ {
                        r.error(format!(
                            "L2P map page {i} (physical {ppn}) maps logical page {l} to {:?}, the host's map to {}",
                            page::map_entry(&bytes, l - first).ok(),
                            l2p[l]
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn check_table(&self, t: &Table, r: &mut CheckReport) {
        let state = StateCopy::of(t);
        let seen = self.check_heap_pages(t, &state.heap_pages, r);
        self.check_vid_map(t, &state, r);
        // Every chain: decodable versions, creators never increasing (one
        // transaction may write a tuple twice), an end, tombstones only at
        // the head, tuples that decode.
        let heap: HashSet<u64> = state.heap_pages.iter().copied().chain(state.delta_lpns).collect();
        for (vid, head) in state.heads.iter().enumerate() {
            r.vids += 1;
            self.check_chain(t, (vid, *head), &heap, &seen, r);
        }
    }

    /// Every heap page decodes and belongs to this table. What each
    /// version's header says is kept (24 bytes a version) for the chain
    /// walk, which would otherwise read a page per version.
    fn check_heap_pages(&self, t: &Table, heap_pages: &[u64], r: &mut CheckReport) -> Seen {
        let name = &t.name;
        let mut seen = Seen::default();
        for &lpn in heap_pages {
            r.pages += 1;
            match self.read_page(lpn, &mut self.qp.lock()) {
                Err(e) => r.error(format!("table {name}: heap page {lpn}: {e}")),
                Ok(p) => match page::PageHeader::decode(&p) {
                    Err(e) => r.error(format!("table {name}: heap page {lpn}: {e}")),
                    Ok(h) if h.kind != PageKind::Heap || h.object_id != t.id || h.lpn != lpn => r.error(format!(
                        "table {name}: heap page {lpn} says it is {:?} page {} of object {}",
                        h.kind, h.lpn, h.object_id
                    )),
                    Ok(h) => {
                        let first = seen.begin_page(lpn, h.slot_count);
                        for slot in 0..h.slot_count {
                            match page::heap_record(&p, &h, slot) {
                                Err(e) => r.error(format!("table {name}: heap page {lpn}, slot {slot}: {e}")),
                                Ok(rec) => seen.record(first + usize::from(slot), rec, &t.layout),
                            }
                        }
                    }
                },
            }
        }
        seen
    }

    /// The VID map pages on the device agree with the heads, except for
    /// entries the host has not written yet.
    fn check_vid_map(&self, t: &Table, state: &StateCopy, r: &mut CheckReport) {
        let name = &t.name;
        let per_page = self.per_page;
        for (i, &lpn) in state.vid_pages.iter().enumerate() {
            r.pages += 1;
            let entries = match self.vid_map_entries(t, lpn) {
                Ok(e) => e,
                Err(e) => {
                    r.error(format!("table {name}: VID map page {i} (logical {lpn}): {e}"));
                    continue;
                }
            };
            for (k, &rid) in entries.iter().enumerate() {
                let vid = (i * per_page + k) as u64;
                if state.vid_dirty.contains(&vid) {
                    continue;
                }
                match state.heads.get(vid as usize) {
                    Some(h) if h.rid.0 == rid => {}
                    Some(h) => r.error(format!(
                        "table {name}: VID {vid}: the VID map page {lpn} says {:?}, the host's head is {:?}",
                        RecordId(rid),
                        h.rid
                    )),
                    None if rid == RecordId::NONE.0 => {}
                    None => {
                        r.error(format!("table {name}: VID map page {lpn} has an entry for VID {vid} beyond the table"))
                    }
                }
            }
        }
    }

    /// The entries of one of `t`'s VID map pages, read from the device.
    fn vid_map_entries(&self, t: &Table, lpn: u64) -> std::result::Result<Vec<u64>, String> {
        let p = self.read_page(lpn, &mut self.qp.lock()).map_err(|e| e.to_string())?;
        match page::PageHeader::decode(&p) {
            Ok(h) if h.kind == PageKind::VidMap && h.object_id == t.id => {}
            Ok(h) => return Err(format!("it holds {:?} page {} of object {}", h.kind, h.lpn, h.object_id)),
            Err(e) => return Err(e.to_string()),
        }
        (0..self.per_page)
            .map(|k| page::map_entry(&p, k))
            .collect::<std::result::Result<Vec<u64>, _>>()
            .map_err(|e| e.to_string())
    }

    /// Walks one tuple's chain from its head: versions on the table's
    /// pages, creators never increasing, an end ([`CHAIN_MAX`]).
    fn check_chain(
        &self,
        t: &Table,
        (vid, head): (usize, Head),
        heap: &HashSet<u64>,
        seen: &Seen,
        r: &mut CheckReport,
    ) {
        let name = &t.name;
        let mut rid = head.rid;
        let mut steps = 0usize;
        while !rid.is_none() {
            r.versions += 1;
            steps += 1;
            if steps > CHAIN_MAX {
                r.error(format!("table {name}: VID {vid}: the chain does not end (a cycle?)"));
                break;
            }
            if !heap.contains(&rid.lpn()) {
                r.error(format!(
                    "table {name}: VID {vid}: version {rid:?} is on logical page {}, not one of the table's",
                    rid.lpn()
                ));
                break;
            }
            // From the pages read before; the delta buffer's versions, and
            // records whose header did not decode there, are read again
            // (so their error is reported here).
            let h = match seen.get(rid) {
                Some(v) => v,
                None => match self.read_version(t, rid) {
                    Ok((h, data)) => Version::of(&h, &data, &t.layout),
                    Err(e) => {
                        r.error(format!(
                            "table {name}: VID {vid}: version at page {}, slot {}: {e}",
                            rid.lpn(),
                            rid.slot()
                        ));
                        break;
                    }
                },
            };
            // No order of `create_ts` along the chain is checked: a chain
            // is in commit order, and `create_ts` is the creator's id (its
            // begin order). Under read committed an older transaction
            // writes over the version a younger one committed
            // (`crates/txn/tests/read_committed_chain.rs`).
            self.check_version(t, (vid, head), rid, &h, r);
            rid = h.prev;
        }
    }

    /// The head record agrees with the VID map entry, a tombstone is only
    /// at the head, and a live version's tuple decodes.
    fn check_version(&self, t: &Table, (vid, head): (usize, Head), rid: RecordId, h: &Version, r: &mut CheckReport) {
        let name = &t.name;
        if rid == head.rid && (h.create_ts != head.create_ts || h.tombstone != head.tombstone) {
            r.error(format!("table {name}: VID {vid}: the head record disagrees with the VID map entry"));
        }
        if h.tombstone && rid != head.rid {
            r.error(format!(
                "table {name}: VID {vid}: a deletion at page {}, slot {} is not the newest version",
                rid.lpn(),
                rid.slot()
            ));
        } else if !h.tombstone
            && !h.decodes
            && let Ok((_, data)) = self.read_version(t, rid)
            && let Err(e) = t.layout.decode(&data)
        {
            r.error(format!("table {name}: VID {vid}: tuple at page {}, slot {}: {e}", rid.lpn(), rid.slot()));
        }
    }
}

/// What the check reads of a table's state, copied at one moment so that
/// the table is not locked while pages are read.
struct StateCopy {
    heads: Vec<Head>,
    heap_pages: Vec<u64>,
    vid_pages: Vec<u64>,
    vid_dirty: BTreeSet<u64>,
    delta_lpns: HashSet<u64>,
}

impl StateCopy {
    fn of(t: &Table) -> StateCopy {
        let s = t.state.lock();
        StateCopy {
            heads: s.heads.clone(),
            heap_pages: s.heap_pages.clone(),
            vid_pages: s.vid_pages.clone(),
            vid_dirty: s.vid_dirty.clone(),
            delta_lpns: s.delta.iter().map(|p| p.lpn()).collect(),
        }
    }
}

/// What a version's header says, and whether its tuple decodes.
#[derive(Debug, Clone, Copy)]
struct Version {
    create_ts: u64,
    prev: RecordId,
    tombstone: bool,
    decodes: bool,
    /// Its header decoded (else the walk reads it again to report why).
    valid: bool,
}

impl Default for Version {
    fn default() -> Self {
        Version { create_ts: 0, prev: RecordId::NONE, tombstone: false, decodes: false, valid: false }
    }
}

impl Version {
    fn of(h: &VersionHeader, data: &[u8], layout: &Layout) -> Version {
        let decodes = h.tombstone || layout.decode(data).is_ok();
        Version { create_ts: h.create_ts, prev: h.prev, tombstone: h.tombstone, decodes, valid: true }
    }
}

/// The versions of a table's heap pages, by page and slot.
#[derive(Debug, Default)]
struct Seen {
    /// Per logical page: its first version's index in `versions`, and its slots.
    pages: HashMap<u64, (usize, u16)>,
    versions: Vec<Version>,
}

impl Seen {
    /// Makes room for a page's slots; returns where its first one goes.
    fn begin_page(&mut self, lpn: u64, slots: u16) -> usize {
        let first = self.versions.len();
        self.pages.insert(lpn, (first, slots));
        self.versions.resize(first + usize::from(slots), Version::default());
        first
    }

    /// Keeps what record `at` (from [`Seen::begin_page`]) says, if its
    /// header decodes.
    fn record(&mut self, at: usize, rec: &[u8], layout: &Layout) {
        if let Ok(h) = VersionHeader::decode(rec, rec.len()) {
            let data = &rec[ndpdb_format::record::HEADER_BYTES..][..usize::from(h.data_len)];
            self.versions[at] = Version::of(&h, data, layout);
        }
    }

    fn get(&self, rid: RecordId) -> Option<Version> {
        let &(first, slots) = self.pages.get(&rid.lpn())?;
        (rid.slot() < slots).then(|| self.versions[first + usize::from(rid.slot())]).filter(|v| v.valid)
    }
}
