//! A node read in place: [`Node::parse`] checks the header against the page,
//! and every accessor checks the slot it reads, so a corrupt node gives a
//! [`FormatError`] naming the page and the field, never a panic.

use super::{
    CHILD_BYTES, HEADER_BYTES, MAGIC, MAX_LEVEL, NONE, POOL_TAIL_BYTES, Pid, SLOT_BYTES, VERSION, at, corrupt, slot_at,
    u16_at,
};
use crate::{FormatError, u64_at};

/// Leaf or inner node (the header's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Leaf = 1,
    Inner = 2,
}

/// A node whose header was checked against its page.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    page: &'a [u8],
    pid: Pid,
    kind: NodeKind,
    level: u16,
    count: usize,
    heap_start: usize,
    prefix: usize,
}

impl<'a> Node<'a> {
    /// Checks the header of the node that page `pid` should hold: the pool's
    /// pid word, magic, version, kind and level, and that the slots and the
    /// heap (and the high key, if any) lie inside the page.
    pub fn parse(page: &'a [u8], pid: Pid) -> Result<Node<'a>, FormatError> {
        if !super::page_size_ok(page.len()) {
            return Err(corrupt(pid, "page size", format!("{} bytes is no node page", page.len())));
        }
        let stored = u64_at(page, at::PID);
        if stored != pid {
            return Err(corrupt(pid, "pid", format!("the page holds pid {stored}")));
        }
        if page[at::MAGIC..at::MAGIC + 2] != MAGIC {
            return Err(corrupt(
                pid,
                "magic",
                format!("{:02x?} (not a B+-tree node)", &page[at::MAGIC..at::MAGIC + 2]),
            ));
        }
        if page[at::VERSION] != VERSION {
            return Err(corrupt(pid, "version", format!("{}, this build reads {VERSION}", page[at::VERSION])));
        }
        let level = u16_at(page, at::LEVEL);
        let kind = match page[at::KIND] {
            1 if level == 0 => NodeKind::Leaf,
            2 if (1..=MAX_LEVEL).contains(&level) => NodeKind::Inner,
            k => return Err(corrupt(pid, "kind", format!("kind {k} at level {level}"))),
        };
        let count = usize::from(u16_at(page, at::COUNT));
        let heap_start = usize::from(u16_at(page, at::HEAP_START));
        let end = page.len() - POOL_TAIL_BYTES;
        let slots_end = HEADER_BYTES + SLOT_BYTES * count;
        if slots_end > heap_start || heap_start > end {
            return Err(corrupt(pid, "heap_start", format!("{heap_start} with {count} slots in {} bytes", page.len())));
        }
        let prefix = usize::from(u16_at(page, at::PREFIX_LEN));
        let node = Node { page, pid, kind, level, count, heap_start, prefix };
        if kind == NodeKind::Inner && node.lower() == NONE {
            return Err(corrupt(pid, "lower", "an inner node without a lowest child"));
        }
        let (low, high) = (node.low_fence()?, node.high_key()?);
        if prefix > low.map_or(0, <[u8]>::len).min(high.map_or(0, <[u8]>::len)) {
            return Err(corrupt(pid, "prefix_len", format!("{prefix}, longer than a fence")));
        }
        Ok(node)
    }

    pub fn pid(&self) -> Pid {
        self.pid
    }
    pub fn kind(&self) -> NodeKind {
        self.kind
    }
    pub fn is_leaf(&self) -> bool {
        self.kind == NodeKind::Leaf
    }
    pub fn level(&self) -> u16 {
        self.level
    }
    pub fn count(&self) -> usize {
        self.count
    }
    pub fn page(&self) -> &'a [u8] {
        self.page
    }
    pub fn lsn(&self) -> u64 {
        u64_at(self.page, at::LSN)
    }
    /// The right sibling, or [`NONE`].
    pub fn right(&self) -> Pid {
        u64_at(self.page, at::RIGHT)
    }
    /// Inner nodes: the child for keys below entry 0's key.
    pub fn lower(&self) -> Pid {
        u64_at(self.page, at::LOWER)
    }
    pub fn heap_start(&self) -> usize {
        self.heap_start
    }
    pub fn garbage(&self) -> usize {
        usize::from(u16_at(self.page, at::GARBAGE))
    }
    /// Bytes between the slots and the heap.
    pub fn free_contiguous(&self) -> usize {
        self.heap_start - HEADER_BYTES - SLOT_BYTES * self.count
    }
    /// Free bytes once the heap is compacted.
    pub fn free_total(&self) -> usize {
        self.free_contiguous() + self.garbage()
    }
    /// Where the heap ends (the rear version word).
    pub fn heap_end(&self) -> usize {
        self.page.len() - POOL_TAIL_BYTES
    }

    /// The high key: keys at or above it are in the right sibling. None for
    /// the rightmost node at its level (no right sibling).
    pub fn high_key(&self) -> Result<Option<&'a [u8]>, FormatError> {
        if self.right() == NONE {
            return Ok(None);
        }
        match self.fence(at::HIGH_OFF, at::HIGH_LEN, "high key")? {
            Some(high) => Ok(Some(high)),
            None => Err(corrupt(self.pid, "high key", "a node with a right sibling and no high key")),
        }
    }

    /// The low fence: every key is at or above it. None for the leftmost
    /// node at its level.
    pub fn low_fence(&self) -> Result<Option<&'a [u8]>, FormatError> {
        self.fence(at::LOW_OFF, at::LOW_LEN, "low fence").map(|f| f.filter(|f| !f.is_empty()))
    }

    /// Bytes every key of the node shares (the fences' common prefix).
    pub fn prefix_len(&self) -> usize {
        self.prefix
    }

    fn fence(&self, off_at: usize, len_at: usize, field: &'static str) -> Result<Option<&'a [u8]>, FormatError> {
        let off = usize::from(u16_at(self.page, off_at));
        let len = usize::from(u16_at(self.page, len_at));
        if len == 0 {
            return Ok(None);
        }
        if off < self.heap_start || off + len > self.heap_end() {
            return Err(corrupt(self.pid, field, format!("{len} bytes at {off} outside the heap")));
        }
        Ok(Some(&self.page[off..off + len]))
    }

    /// Whether `key` belongs to a node to the right (at or above the high key).
    pub fn key_is_right(&self, key: &[u8]) -> Result<bool, FormatError> {
        Ok(self.high_key()?.is_some_and(|high| key >= high))
    }

    /// Slot `i`: (payload offset, key length, value length), checked.
    pub fn slot(&self, i: usize) -> Result<(usize, usize, usize), FormatError> {
        if i >= self.count {
            return Err(corrupt(self.pid, "slot", format!("slot {i} of {}", self.count)));
        }
        let s = HEADER_BYTES + SLOT_BYTES * i;
        let off = usize::from(u16_at(self.page, s + slot_at::OFFSET));
        let klen = usize::from(u16_at(self.page, s + slot_at::KEY_LEN));
        let vlen = usize::from(u16_at(self.page, s + slot_at::VALUE_LEN));
        if off < self.heap_start || off + klen + vlen > self.heap_end() {
            return Err(corrupt(self.pid, "slot", format!("slot {i}: {klen}+{vlen} bytes at {off} outside the heap")));
        }
        if self.kind == NodeKind::Inner && vlen != CHILD_BYTES {
            return Err(corrupt(self.pid, "slot", format!("slot {i}: an inner entry with a {vlen}-byte value")));
        }
        Ok((off, klen, vlen))
    }

    pub fn key(&self, i: usize) -> Result<&'a [u8], FormatError> {
        let (off, klen, _) = self.slot(i)?;
        Ok(&self.page[off..off + klen])
    }

    /// Entry `i`'s value (leaves) or the child pid's 8 bytes (inner nodes).
    pub fn value(&self, i: usize) -> Result<&'a [u8], FormatError> {
        let (off, klen, vlen) = self.slot(i)?;
        Ok(&self.page[off + klen..off + klen + vlen])
    }

    /// Where entry `i`'s value lies in the page.
    pub fn value_range(&self, i: usize) -> Result<std::ops::Range<usize>, FormatError> {
        let (off, klen, vlen) = self.slot(i)?;
        Ok(off + klen..off + klen + vlen)
    }

    /// Inner nodes: entry `i`'s child.
    pub fn child(&self, i: usize) -> Result<Pid, FormatError> {
        let v = self.value(i)?;
        Ok(u64::from_le_bytes(v.try_into().map_err(|_| corrupt(self.pid, "child", "not 8 bytes"))?))
    }

    /// Slot `i`'s key head (unchecked against the key; `check` does that).
    pub fn head(&self, i: usize) -> Result<u64, FormatError> {
        if i >= self.count {
            return Err(corrupt(self.pid, "slot", format!("slot {i} of {}", self.count)));
        }
        let s = HEADER_BYTES + SLOT_BYTES * i + slot_at::HEAD;
        Ok(u64::from_be_bytes(self.page[s..s + 8].try_into().expect("parse checked the slots")))
    }

    /// The first slot whose key is at or above `key` (`count` if none), by
    /// binary search over the heads (keys are read where heads are equal),
    /// and whether that key equals `key`. `key` must be within the node's
    /// fences (a reader moves right first), so it shares the node's prefix.
    pub fn lower_bound(&self, key: &[u8]) -> Result<(usize, bool), FormatError> {
        let head = super::key_head(key, self.prefix);
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let by_head = self.head(mid)?.cmp(&head);
            let order = if by_head.is_eq() { self.key(mid)?.cmp(key) } else { by_head };
            match order {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Equal => return Ok((mid, true)),
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        Ok((lo, false))
    }

    /// Inner nodes: the child whose range holds `key` (the last entry whose
    /// key is at or below it, or `lower`), and that entry's index + 1 (0 for
    /// `lower`): where a separator for a split of that child goes.
    pub fn child_for(&self, key: &[u8]) -> Result<(Pid, usize), FormatError> {
        debug_assert!(self.kind == NodeKind::Inner, "leaves have no children");
        let (i, eq) = self.lower_bound(key)?;
        let pos = if eq { i + 1 } else { i };
        let child = if pos == 0 { self.lower() } else { self.child(pos - 1)? };
        Ok((child, pos))
    }

    /// Checks the whole node: every slot and its head, strictly increasing
    /// keys within the fences, the prefix, no two payloads overlapping, and
    /// the garbage count.
    pub fn check(&self) -> Result<(), FormatError> {
        let (low, high) = (self.low_fence()?, self.high_key()?);
        if self.prefix != super::fence_prefix(low, high) || low.zip(high).is_some_and(|(l, h)| l >= h) {
            return Err(corrupt(self.pid, "fences", format!("prefix {} for fences {low:?}, {high:?}", self.prefix)));
        }
        let mut spans = Vec::with_capacity(self.count + 2);
        let mut prev: Option<&[u8]> = low;
        for i in 0..self.count {
            let (off, klen, vlen) = self.slot(i)?;
            let key = self.key(i)?;
            let below_low = i == 0 && low.is_some_and(|l| key < l);
            if below_low || i > 0 && prev.is_some_and(|p| p >= key) || high.is_some_and(|h| key >= h) {
                return Err(corrupt(self.pid, "key order", format!("slot {i} is out of order or outside the fences")));
            }
            let s = HEADER_BYTES + SLOT_BYTES * i;
            if self.head(i)? != super::key_head(key, self.prefix) || u16_at(self.page, s + 14) != 0 {
                return Err(corrupt(self.pid, "slot", format!("slot {i}: head or reserved bytes do not match")));
            }
            if self.kind == NodeKind::Inner && self.child(i)? == NONE {
                return Err(corrupt(self.pid, "child", format!("slot {i} has no child")));
            }
            prev = Some(key);
            spans.push((off, klen + vlen));
        }
        if let Some(h) = high {
            spans.push((usize::from(u16_at(self.page, at::HIGH_OFF)), h.len()));
        }
        if let Some(l) = low {
            spans.push((usize::from(u16_at(self.page, at::LOW_OFF)), l.len()));
        }
        if u16_at(self.page, 62) != 0 {
            return Err(corrupt(self.pid, "reserved", "not zero"));
        }
        spans.sort_unstable();
        let overlapping = spans.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0);
        let used: usize = spans.iter().map(|s| s.1).sum();
        if overlapping || used + self.garbage() != self.heap_end() - self.heap_start {
            return Err(corrupt(
                self.pid,
                "garbage",
                format!("heap of {} bytes, {used} used, {} garbage", self.heap_end() - self.heap_start, self.garbage()),
            ));
        }
        Ok(())
    }
}
