//! A page an operation changes: its exclusive guard, and the byte ranges the
//! operation wrote, from which the operation's log record is built.
//!
//! A page whose LSN is not past the checkpoint's redo start is logged as a
//! full image (its header, slots and heap as they are when the operation
//! ends), so that recovery rebuilds it whatever the crash left on the
//! medium; otherwise only the ranges written are logged, merged where they
//! touch or nearly touch.

use std::borrow::Cow;

use ndpdb_bufmgr::ExclusiveGuard;
use ndpdb_format::btree::{HEADER_BYTES, Node, POOL_HEAD_BYTES, PageMut, Pid, SLOT_BYTES, at};
use ndpdb_format::kv_log::PageChange;

use crate::error::KvError;

/// Ranges closer than this are logged as one (saves the 4-byte range headers).
const MERGE_GAP_BYTES: usize = 8;

pub(crate) struct Tracked<'p> {
    guard: ExclusiveGuard<'p>,
    /// (start, end) of each write, in the order made.
    ranges: Vec<(usize, usize)>,
    full_image: bool,
}

impl<'p> Tracked<'p> {
    /// Wraps a guard; `redo_start` is the current checkpoint's redo start.
    pub(crate) fn new(guard: ExclusiveGuard<'p>, redo_start: u64) -> Tracked<'p> {
        let lsn = guard.bytes().get(at::LSN..at::LSN + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8")));
        Tracked { guard, ranges: Vec::new(), full_image: lsn <= redo_start }
    }

    /// A page just allocated: always a full image.
    pub(crate) fn new_page(guard: ExclusiveGuard<'p>) -> Tracked<'p> {
        Tracked { guard, ranges: Vec::new(), full_image: true }
    }

    pub(crate) fn pid(&self) -> Pid {
        self.guard.pid()
    }

    pub(crate) fn node(&self) -> Result<Node<'_>, KvError> {
        Ok(Node::parse(self.guard.bytes(), self.guard.pid())?)
    }

    pub(crate) fn changed(&self) -> bool {
        !self.ranges.is_empty()
    }

    /// This page's part of the operation's record (None if unchanged).
    pub(crate) fn change(&self) -> Result<Option<PageChange<'_>>, KvError> {
        if !self.changed() {
            return Ok(None);
        }
        let page = self.guard.bytes();
        let spans = if self.full_image {
            let node = self.node()?;
            vec![(POOL_HEAD_BYTES, HEADER_BYTES + SLOT_BYTES * node.count()), (node.heap_start(), node.heap_end())]
        } else {
            merged(&self.ranges)
        };
        let ranges = spans.into_iter().filter(|(s, e)| s < e).map(|(s, e)| (s as u16, Cow::Borrowed(&page[s..e])));
        Ok(Some(PageChange {
            pid: self.pid(),
            frame_addr: self.guard.frame_addr(),
            full_image: self.full_image,
            ranges: ranges.collect(),
        }))
    }

    /// After the record is appended: the node's LSN and the pool's.
    pub(crate) fn set_lsn(&mut self, lsn: u64) {
        self.guard.write(at::LSN, &lsn.to_le_bytes());
        self.guard.set_lsn(lsn);
    }
}

impl PageMut for Tracked<'_> {
    fn bytes(&self) -> &[u8] {
        self.guard.bytes()
    }
    fn write(&mut self, at: usize, data: &[u8]) {
        self.guard.write(at, data);
        self.ranges.push((at, at + data.len()));
    }
    fn copy_within(&mut self, src: std::ops::Range<usize>, dst: usize) {
        self.ranges.push((dst, dst + src.len()));
        self.guard.copy_within(src, dst);
    }
}

/// The ranges sorted and merged (touching, overlapping or within
/// [`MERGE_GAP_BYTES`] of each other).
fn merged(ranges: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut r = ranges.to_vec();
    r.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(r.len());
    for (s, e) in r {
        match out.last_mut() {
            Some(last) if s <= last.1 + MERGE_GAP_BYTES => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// A guard changed without logging (recovery's redo writes).
pub(crate) struct Untracked<'a, 'p>(pub(crate) &'a mut ExclusiveGuard<'p>);

impl PageMut for Untracked<'_, '_> {
    fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }
    fn write(&mut self, at: usize, data: &[u8]) {
        self.0.write(at, data);
    }
    fn copy_within(&mut self, src: std::ops::Range<usize>, dst: usize) {
        self.0.copy_within(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::merged;

    #[test]
    fn ranges_merge_when_close() {
        assert_eq!(merged(&[(30, 40), (10, 20), (22, 25), (100, 101)]), [(10, 40), (100, 101)]);
        assert_eq!(merged(&[(10, 20), (12, 14)]), [(10, 20)]);
        assert_eq!(merged(&[]), []);
    }
}
