//! Which blocks of a host scan's morsel a runtime key filter lets it pass
//! over: the policy over the store's zone maps (`ndpdb_storage::Zone`,
//! `crates/storage/src/zones.rs`).
//!
//! ```text
//!  morsel VIDs ─► blocks of ZONE_VIDS ─► zone known at the scan's epoch?
//!      yes, and no key of the filter in [min, max] ─► skipped (pages not read)
//!      yes, and some key in it                     ─► walked
//!      no                                          ─► walked, zone built on the way, published
//! ```
//!
//! A hash join's build keys (`exec/runtime_filter.rs`) already drop the
//! probe scan's rows without a partner after the walk; the zones let the
//! walk not read the pages of blocks where no row can have one. That pays
//! where a table is stored in an order that correlates with the key: TPC-H
//! `lineitem` is loaded in `l_orderkey` order, so the scans that probe Q21's
//! and Q4's joins with one twentieth of the order keys skip 64 % of
//! lineitem's blocks (37 % of its bytes: a page is read when any block on
//! it is walked). The first scan that filters on a column builds its
//! zones (one decode of the key per version walked); later scans at the
//! same epoch use them. A block that straddles the morsel's start or end is
//! built only when the morsel walks it whole (the last block of the table
//! is whole: it ends at the scan's last VID).

use std::ops::Range;

use ndpdb_storage::{HostScan, Table, ZONE_VIDS, Zone, ZoneBuild, zone_blocks};

use crate::exec::ZoneCounts;
use crate::exec::runtime_filter::KeyFilter;

/// What a morsel walks and builds.
#[derive(Debug)]
pub struct ZonePlan {
    /// VID ranges to walk, ascending.
    pub ranges: Vec<Range<u64>>,
    /// Zones to build on the way, when some walked block has none.
    pub build: Option<ZoneBuild>,
    pub counts: ZoneCounts,
}

/// The plan for morsel `vids` of `scan` with key filter `filter` on the
/// table's column `column`.
pub fn plan(table: &Table, scan: &HostScan, column: usize, filter: &KeyFilter, vids: Range<u64>) -> ZonePlan {
    let Ok(column) = u16::try_from(column) else {
        return ZonePlan { counts: ZoneCounts::default(), build: None, ranges: vec![vids] };
    };
    let blocks = zone_blocks(&vids);
    let mut zones = table.zones(column, scan.epoch(), blocks.clone());
    let (mut ranges, mut build) = (Vec::<Range<u64>>::new(), false);
    let mut counts = ZoneCounts { blocks: blocks.end - blocks.start, ..ZoneCounts::default() };
    for (b, zone) in blocks.clone().zip(zones.iter_mut()) {
        let whole = b * ZONE_VIDS..(b + 1) * ZONE_VIDS;
        let walk = whole.start.max(vids.start)..whole.end.min(vids.end);
        if zone.is_known() && !filter.overlaps(zone.min, zone.max) {
            counts.skipped += 1;
            counts.skipped_vids += walk.end.min(scan.vids()).saturating_sub(walk.start);
            continue;
        }
        if !zone.is_known() && walk.start == whole.start && (walk.end == whole.end || walk.end >= scan.vids()) {
            *zone = Zone::EMPTY;
            build = true;
        }
        match ranges.last_mut() {
            Some(last) if last.end == walk.start => last.end = walk.end,
            _ => ranges.push(walk),
        }
    }
    let build = build.then_some(ZoneBuild { column, first_block: blocks.start, zones });
    ZonePlan { ranges, build, counts }
}
