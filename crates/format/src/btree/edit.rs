//! Changes to a node, through [`PageMut`]: the host's buffer-pool guard
//! implements it (its stores are the atomic ones the device may race with,
//! and the key-value store records each write for its log); a `Vec<u8>` or
//! `[u8]` implements it for tests and for recovery's pure redo.
//!
//! Every edit parses the node first, so a corrupt page is an error here too.
//! Edits never touch the pool's words (the first 16 and the last 8 bytes) and
//! leave the `lsn` field to the caller, who sets it once the change is logged.

use super::node::{Node, NodeKind};
use super::{HEADER_BYTES, MAGIC, NONE, POOL_HEAD_BYTES, Pid, SLOT_BYTES, VERSION, at, corrupt, slot_at};
use crate::{FormatError, u64_at};

/// A page that can be changed in place.
pub trait PageMut {
    fn bytes(&self) -> &[u8];
    fn write(&mut self, at: usize, data: &[u8]);
    fn copy_within(&mut self, src: std::ops::Range<usize>, dst: usize);
}

impl PageMut for [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn write(&mut self, at: usize, data: &[u8]) {
        self[at..at + data.len()].copy_from_slice(data);
    }
    fn copy_within(&mut self, src: std::ops::Range<usize>, dst: usize) {
        <[u8]>::copy_within(self, src, dst);
    }
}

impl PageMut for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn write(&mut self, at: usize, data: &[u8]) {
        self[at..at + data.len()].copy_from_slice(data);
    }
    fn copy_within(&mut self, src: std::ops::Range<usize>, dst: usize) {
        <[u8]>::copy_within(self, src, dst);
    }
}

/// A zeroed page of `page_bytes` with the pool's pid word set, as the pool's
/// `allocate` hands one out (tests, and the redo of a page never written).
pub fn blank_page(page_bytes: usize, pid: Pid) -> Vec<u8> {
    let mut page = vec![0u8; page_bytes];
    page[at::PID..at::PID + 8].copy_from_slice(&pid.to_le_bytes());
    page
}

/// What a whole node holds, for [`write_node`].
#[derive(Debug, Clone, Copy)]
pub struct NodeSpec<'a> {
    pub kind: NodeKind,
    pub level: u16,
    /// Inner nodes: the lowest child; leaves: [`NONE`].
    pub lower: Pid,
    pub right: Pid,
    /// Present exactly when `right` is not [`NONE`].
    pub high: Option<&'a [u8]>,
    /// The low fence (the left sibling's high key); None for the leftmost.
    pub low: Option<&'a [u8]>,
}

/// Bytes a node with these entries and `fence_bytes` of fences (low and
/// high together) needs, header included.
pub fn node_bytes<'e>(entries: impl IntoIterator<Item = (&'e [u8], &'e [u8])>, fence_bytes: usize) -> usize {
    let payload: usize = entries.into_iter().map(|(k, v)| SLOT_BYTES + k.len() + v.len()).sum();
    HEADER_BYTES + payload + fence_bytes + super::POOL_TAIL_BYTES
}

/// Writes a whole node: the header (keeping the page's `lsn`) and slots in
/// one write, the payload packed below the rear word in another. The bytes
/// between stay as they were. Fails if the entries do not fit the page.
pub fn write_node<P: PageMut + ?Sized>(
    p: &mut P,
    pid: Pid,
    spec: &NodeSpec<'_>,
    entries: &[(&[u8], &[u8])],
) -> Result<(), FormatError> {
    let page_bytes = p.bytes().len();
    let fences = spec.high.map_or(0, <[u8]>::len) + spec.low.map_or(0, <[u8]>::len);
    let need = node_bytes(entries.iter().copied(), fences);
    if need > page_bytes || entries.len() > usize::from(u16::MAX) || !super::page_size_ok(page_bytes) {
        return Err(corrupt(pid, "count", format!("{} entries need {need} bytes of {page_bytes}", entries.len())));
    }
    if spec.high.is_some() != (spec.right != NONE) || spec.high.is_some_and(<[u8]>::is_empty) {
        return Err(corrupt(pid, "high key", "a node has a (non-empty) high key exactly when it has a right sibling"));
    }
    let end = page_bytes - super::POOL_TAIL_BYTES;
    let heap_start = end - (need - HEADER_BYTES - super::POOL_TAIL_BYTES - SLOT_BYTES * entries.len());
    let mut head = Vec::with_capacity(HEADER_BYTES - POOL_HEAD_BYTES + SLOT_BYTES * entries.len());
    let mut heap = Vec::with_capacity(end - heap_start);
    // The payload is built top-down: the high key at the top, the low fence
    // below it, then entry 0, 1, ... below that.
    let mut top = end;
    let mut place = |fence: Option<&[u8]>| match fence {
        Some(f) if !f.is_empty() => {
            top -= f.len();
            (top, f.len())
        }
        _ => (0, 0),
    };
    let (high_off, high_len) = place(spec.high);
    let (low_off, low_len) = place(spec.low);
    let prefix = super::fence_prefix(spec.low, spec.high);
    head.extend_from_slice(&MAGIC);
    head.push(VERSION);
    head.push(spec.kind as u8);
    head.extend_from_slice(&spec.level.to_le_bytes());
    head.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    head.extend_from_slice(&u64_at(p.bytes(), at::LSN).to_le_bytes());
    head.extend_from_slice(&spec.right.to_le_bytes());
    head.extend_from_slice(&spec.lower.to_le_bytes());
    head.extend_from_slice(&(heap_start as u16).to_le_bytes());
    head.extend_from_slice(&0u16.to_le_bytes());
    for field in [high_off, high_len, low_off, low_len, prefix, 0] {
        head.extend_from_slice(&(field as u16).to_le_bytes());
    }
    for (k, v) in entries {
        top -= k.len() + v.len();
        head.extend_from_slice(&slot_bytes(k, prefix, top, v.len()));
    }
    debug_assert_eq!(top, heap_start);
    for (k, v) in entries.iter().rev() {
        heap.extend_from_slice(k);
        heap.extend_from_slice(v);
    }
    for fence in [spec.low, spec.high].into_iter().flatten() {
        heap.extend_from_slice(fence);
    }
    p.write(POOL_HEAD_BYTES, &head);
    p.write(heap_start, &heap);
    Ok(())
}

/// Rewrites the node with its entries packed, so its garbage becomes free.
pub fn compact<P: PageMut + ?Sized>(p: &mut P, pid: Pid) -> Result<(), FormatError> {
    let copy = p.bytes().to_vec();
    let node = Node::parse(&copy, pid)?;
    let entries = (0..node.count()).map(|i| Ok((node.key(i)?, node.value(i)?))).collect::<Result<Vec<_>, _>>()?;
    let spec = NodeSpec {
        kind: node.kind(),
        level: node.level(),
        lower: node.lower(),
        right: node.right(),
        high: node.high_key()?,
        low: node.low_fence()?,
    };
    write_node(p, pid, &spec, &entries)
}

/// Inserts `key → value` as slot `i` (the caller found `i` with
/// [`Node::lower_bound`]). Compacts first if only the garbage makes room.
/// `Ok(false)`: it does not fit, nothing was changed (split the node).
pub fn insert<P: PageMut + ?Sized>(
    p: &mut P,
    pid: Pid,
    i: usize,
    key: &[u8],
    value: &[u8],
) -> Result<bool, FormatError> {
    let node = Node::parse(p.bytes(), pid)?;
    let need = SLOT_BYTES + key.len() + value.len();
    if i > node.count() {
        return Err(corrupt(pid, "slot", format!("insert at {i} of {}", node.count())));
    }
    if node.free_total() < need || node.count() == usize::from(u16::MAX) {
        return Ok(false);
    }
    if node.free_contiguous() < need {
        compact(p, pid)?;
    }
    let node = Node::parse(p.bytes(), pid)?;
    if node.free_contiguous() < need {
        return Err(corrupt(pid, "garbage", "compaction freed less than the garbage count promised"));
    }
    let (count, off, prefix) = (node.count(), node.heap_start() - key.len() - value.len(), node.prefix_len());
    p.write(off, key);
    p.write(off + key.len(), value);
    let slot = |j: usize| HEADER_BYTES + SLOT_BYTES * j;
    if i < count {
        p.copy_within(slot(i)..slot(count), slot(i + 1));
    }
    p.write(slot(i), &slot_bytes(key, prefix, off, value.len()));
    p.write(at::COUNT, &(count as u16 + 1).to_le_bytes());
    p.write(at::HEAP_START, &(off as u16).to_le_bytes());
    Ok(true)
}

/// Removes slot `i`; its payload becomes garbage.
pub fn remove<P: PageMut + ?Sized>(p: &mut P, pid: Pid, i: usize) -> Result<(), FormatError> {
    let node = Node::parse(p.bytes(), pid)?;
    let (_, klen, vlen) = node.slot(i)?;
    let (count, garbage) = (node.count(), node.garbage());
    let slot = |j: usize| HEADER_BYTES + SLOT_BYTES * j;
    if i + 1 < count {
        p.copy_within(slot(i + 1)..slot(count), slot(i));
    }
    p.write(at::COUNT, &(count as u16 - 1).to_le_bytes());
    add_garbage(p, garbage + klen + vlen);
    Ok(())
}

/// Replaces slot `i`'s value: in place when it is no longer than the old
/// one, else by removing and reinserting the entry. `Ok(false)`: it does
/// not fit, nothing was changed.
pub fn set_value<P: PageMut + ?Sized>(p: &mut P, pid: Pid, i: usize, value: &[u8]) -> Result<bool, FormatError> {
    let node = Node::parse(p.bytes(), pid)?;
    let (off, klen, vlen) = node.slot(i)?;
    let (garbage, free_total) = (node.garbage(), node.free_total());
    if value.len() <= vlen {
        p.write(off + klen, value);
        if value.len() < vlen {
            p.write(HEADER_BYTES + SLOT_BYTES * i + slot_at::VALUE_LEN, &(value.len() as u16).to_le_bytes());
            add_garbage(p, garbage + vlen - value.len());
        }
        return Ok(true);
    }
    if free_total + vlen < value.len() {
        return Ok(false);
    }
    let key = Node::parse(p.bytes(), pid)?.key(i)?.to_vec();
    remove(p, pid, i)?;
    if !insert(p, pid, i, &key, value)? {
        // Only a node whose garbage count lies gets here.
        return Err(corrupt(pid, "garbage", "the removed entry's bytes did not make room"));
    }
    Ok(true)
}

/// A slot: the key's head after `prefix`, where the entry is and its lengths.
fn slot_bytes(key: &[u8], prefix: usize, off: usize, value_len: usize) -> [u8; SLOT_BYTES] {
    let mut s = [0u8; SLOT_BYTES];
    s[slot_at::HEAD..slot_at::HEAD + 8].copy_from_slice(&super::key_head(key, prefix).to_be_bytes());
    s[slot_at::OFFSET..slot_at::OFFSET + 2].copy_from_slice(&(off as u16).to_le_bytes());
    s[slot_at::KEY_LEN..slot_at::KEY_LEN + 2].copy_from_slice(&(key.len() as u16).to_le_bytes());
    s[slot_at::VALUE_LEN..slot_at::VALUE_LEN + 2].copy_from_slice(&(value_len as u16).to_le_bytes());
    s
}

/// Sets the node's `lsn` (after the change is logged, and by redo).
pub fn set_lsn<P: PageMut + ?Sized>(p: &mut P, lsn: u64) {
    p.write(at::LSN, &lsn.to_le_bytes());
}

/// Stores the garbage count (a corrupt count may overflow: then it stays
/// wrong, which `Node::check` reports).
fn add_garbage<P: PageMut + ?Sized>(p: &mut P, garbage: usize) {
    p.write(at::GARBAGE, &u16::try_from(garbage).unwrap_or(u16::MAX).to_le_bytes());
}
