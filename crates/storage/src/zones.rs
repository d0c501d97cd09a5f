//! Zone maps: for blocks of [`ZONE_VIDS`] consecutive VIDs, the smallest
//! and the largest value an integer column takes in any version their
//! chains hold, so a host scan that wants only some keys can pass over
//! blocks that cannot hold one without reading their pages.
//!
//! ```text
//!  scan with a key filter ─► zones of its morsel's blocks (same epoch?)
//!      block [min, max] holds no key ─► skipped: its pages are not read
//!      zone unknown ─► walked, and its zone built on the way (every version
//!                      the walk visits widens it; a chain the walk leaves
//!                      before its end makes it unknown) ─► published
//! ```
//!
//! A zone is a statement about the VID map as it was at one **epoch**:
//! the table's epoch ([`TableState::epoch`](crate::table::TableState))
//! counts the changes of its heads (a new VID, a new version, an update
//! on the device, a rollback), and a host scan's view records the epoch
//! its heads were copied at. Zones built from a view of epoch `e` describe
//! every chain of epoch `e`, and a scan whose view is of epoch `e` may use
//! them whatever its snapshot: a zone covers every version of the chains,
//! not only the ones one snapshot sees. Garbage collection does not change
//! the epoch: it removes versions or moves them to other pages with the
//! same values, so the zones stay supersets. A write invalidates every zone
//! of its table (the next scan rebuilds what it needs); zones are never
//! widened in place, so a writer never touches them.
//!
//! Zones live in host memory only (16 bytes per block and column: 3 MB
//! for `lineitem`'s order keys at TPC-H SF 1) and only for the columns
//! scans have asked for; a reopened store starts without any. The policy
//! (which column, when to skip) is the caller's (`ndpdb-sql`'s runtime
//! filters); this module is the mechanism.

use std::collections::HashMap;
use std::ops::Range;

use crate::table::Table;

/// VIDs per zone: about half a heap page of narrow rows (TPC-H `lineitem`
/// stores about 57 to a page). A page is read when any block with a VID on
/// it is walked, so blocks smaller than a page skip more pages: on TPC-H SF 1
/// Q21, 64-VID blocks skipped 43 % of the blocks and 26 % of the bytes of
/// the probe scans, 32-VID blocks 64 % and 37 %.
pub const ZONE_VIDS: u64 = 32;

/// The range of a column's non-NULL values in one block. [`Zone::UNKNOWN`]
/// covers every value; [`Zone::EMPTY`] (min > max) none: the block holds
/// no version, or only NULLs and tombstones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    pub min: i64,
    pub max: i64,
}

impl Zone {
    pub const UNKNOWN: Zone = Zone { min: i64::MIN, max: i64::MAX };
    pub const EMPTY: Zone = Zone { min: i64::MAX, max: i64::MIN };

    /// Makes the zone cover `v` too.
    #[inline]
    pub fn widen(&mut self, v: i64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn is_known(&self) -> bool {
        *self != Zone::UNKNOWN
    }
}

/// The blocks of `vids`: block `b` holds VIDs `b·ZONE_VIDS ..`.
pub fn blocks(vids: &Range<u64>) -> Range<u64> {
    vids.start / ZONE_VIDS..vids.end.div_ceil(ZONE_VIDS)
}

/// A scan's request to build the zones of column `column` while it walks
/// blocks `first_block..`: `zones[i]` is block `first_block + i`'s. The
/// walker widens the zone of every block it walks; a block it does not
/// walk keeps what the caller put there.
#[derive(Debug, Clone)]
pub struct ZoneBuild {
    pub column: u16,
    pub first_block: u64,
    pub zones: Vec<Zone>,
}

/// A table's zones: per column, per block, all of one epoch.
#[derive(Debug, Default)]
pub(crate) struct ZoneMaps {
    epoch: u64,
    columns: HashMap<u16, Vec<Zone>>,
}

impl Table {
    /// The zones of `column` for `blocks`, as of `epoch` (a scan's
    /// [`HostScan::epoch`](crate::HostScan::epoch)); unknown where none was
    /// built at that epoch.
    pub fn zones(&self, column: u16, epoch: u64, blocks: Range<u64>) -> Vec<Zone> {
        let len = (blocks.end - blocks.start) as usize;
        let maps = self.zones.lock();
        let Some(known) = maps.columns.get(&column).filter(|_| maps.epoch == epoch) else {
            return vec![Zone::UNKNOWN; len];
        };
        (blocks.start..blocks.end).map(|b| known.get(b as usize).copied().unwrap_or(Zone::UNKNOWN)).collect()
    }

    /// Keeps the zones a scan of view epoch `epoch` built. Zones of an
    /// older epoch than the kept ones are dropped; a newer epoch replaces
    /// every kept zone.
    pub fn publish_zones(&self, epoch: u64, built: &ZoneBuild) {
        let mut maps = self.zones.lock();
        if epoch < maps.epoch {
            return;
        }
        if epoch > maps.epoch {
            maps.columns.clear();
            maps.epoch = epoch;
        }
        let zones = maps.columns.entry(built.column).or_default();
        let end = built.first_block as usize + built.zones.len();
        if zones.len() < end {
            zones.resize(end, Zone::UNKNOWN);
        }
        for (i, z) in built.zones.iter().enumerate() {
            if z.is_known() {
                zones[built.first_block as usize + i] = *z;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widening_an_empty_zone_gives_the_values_range() {
        let mut z = Zone::EMPTY;
        assert!(z.min > z.max);
        for v in [5, -3, 9] {
            z.widen(v);
        }
        assert_eq!(z, Zone { min: -3, max: 9 });
        let mut u = Zone::UNKNOWN;
        u.widen(7);
        assert!(!u.is_known(), "an unknown zone stays unknown");
    }

    #[test]
    fn blocks_cover_a_partial_last_block() {
        let z = ZONE_VIDS;
        assert_eq!(blocks(&(0..z)), 0..1);
        assert_eq!(blocks(&(z..3 * z + 1)), 1..4);
        assert_eq!(blocks(&(0..0)), 0..0);
    }
}
