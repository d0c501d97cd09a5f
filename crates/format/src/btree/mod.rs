//! B+-tree nodes on buffer-managed pages (`docs/format/btree.md`).
//!
//! The key-value store (`ndpdb-kv`) keeps its B+-tree in pages of the host
//! buffer pool (`ndpdb-bufmgr`); the device's in-storage lookup traverses the
//! same pages in place, from the medium or, through its mirror of the pool,
//! straight from host memory. Both read nodes with the accessors here and
//! search with the one [`lookup`], so host and device agree on every byte.
//!
//! **Page** (little-endian). The pool owns the first 16 and the last 8 bytes
//! (a sequence lock's two version words and the pid); the node owns the rest:
//!
//! ```text
//! offset size field
//!      0    8 front       pool: version, stored after a change
//!      8    8 pid         pool: the page's pid
//!     16    2 magic       b"BT"
//!     18    1 version     1
//!     19    1 kind        1 leaf, 2 inner
//!     20    2 level       0 for leaves; an inner node's children are one below
//!     22    2 count       entries (slots)
//!     24    8 lsn         log position just past the newest record that
//!                         changed the node (0: none yet)
//!     32    8 right       right sibling at the same level; NONE (all ones) for
//!                         the rightmost node, which has no high key
//!     40    8 lower       inner: the child for keys below entry 0's key;
//!                         leaves: NONE
//!     48    2 heap_start  payload occupies heap_start..page_bytes-8
//!     50    2 garbage     heap bytes no slot and no high key references
//!     52    2 high_off    the high key's offset in the heap (0 without one)
//!     54    2 high_len    the high key's length
//!     56    2 low_off     the low fence's offset in the heap (0 without one)
//!     58    2 low_len     the low fence's length (0: none, the leftmost node)
//!     60    2 prefix_len  bytes every key of the node shares: the common
//!                         prefix of the low fence and the high key (0 if
//!                         either is missing)
//!     62    2 reserved    zero
//!     64 16·n slots       per entry: head (the 8 key bytes after the prefix,
//!                         zero-padded), offset u16, key_len u16, value_len
//!                         u16, reserved u16
//!         ... free ...
//! heap_start   payload    key bytes then value bytes of each entry, and the
//!                         high key, packed downwards from page_bytes-8
//! page_bytes-8 8 rear     pool: version, stored before a change
//! ```
//!
//! ```text
//!  ┌────────┬────────────┬─────────────────┬── free ──┬──────────────────┬──────┐
//!  │fr │pid │ node header│ s0 │ s1 │ … │sn│          │ high│ e1 │ e0 ... │ rear │
//!  └────────┴────────────┴─────────────────┴──────────┴──────────────────┴──────┘
//!  0        16           64                heap_start → grows down        page-8
//! ```
//!
//! **B-link.** Slots are in strictly increasing key order (bytewise, as
//! `memcmp`). A node with a right sibling holds only keys below its high
//! key; the sibling holds keys from the high key up. A node's low fence is
//! the high key of its left sibling (none for the leftmost): its keys are at
//! or above it. A node's fences never change but by its split (which only
//! lowers the high key), so every key it will ever hold shares their common
//! prefix, and the slots' heads start after it: a binary search compares
//! heads in the slot array and reads a key only where heads are equal. A leaf entry's value is
//! the stored value; an inner entry's value is the 8-byte pid of the child
//! for keys from its key up to the next entry's key. Pages never leave the
//! tree (deletes leave empty leaves), and a split moves the upper half of a
//! node to a new right sibling before the parent learns of it, so a reader
//! that reads one node at a time without any latch (the device) still finds
//! every key: it moves right while the key is at or above a node's high key
//! (Lehman and Yao). The root keeps its pid for life: a root split moves its
//! entries to two new children.
//!
//! Decoders never trust bytes: every accessor checks every offset it follows
//! against the page and returns a [`FormatError`] naming the page.

mod edit;
mod node;
mod search;
mod split;

pub use edit::{NodeSpec, PageMut, blank_page, compact, insert, node_bytes, remove, set_lsn, set_value, write_node};
pub use node::{Node, NodeKind};
pub use search::{Found, LookupError, MAX_LOOKUP_NODES, lookup};
pub use split::{Split, choose_split};

use crate::FormatError;

/// A page's id in the buffer pool's file.
pub type Pid = u64;

/// "No page": the rightmost node's `right`, a leaf's `lower`.
pub const NONE: Pid = u64::MAX;

/// Bytes of the pool's words at the start (front version, pid).
pub const POOL_HEAD_BYTES: usize = 16;
/// Bytes of the pool's rear version word at the end.
pub const POOL_TAIL_BYTES: usize = 8;
/// Bytes before the first slot: pool words and the node header.
pub const HEADER_BYTES: usize = 64;
/// Bytes of one slot: the key's head, then offset, key and value lengths.
pub const SLOT_BYTES: usize = 16;
/// Offsets inside a slot.
pub mod slot_at {
    pub const HEAD: usize = 0;
    pub const OFFSET: usize = 8;
    pub const KEY_LEN: usize = 10;
    pub const VALUE_LEN: usize = 12;
}
/// Bytes of an inner entry's value (the child's pid).
pub const CHILD_BYTES: usize = 8;
/// The deepest tree a reader follows (a level above this is corruption).
pub const MAX_LEVEL: u16 = 32;
/// Smallest and largest page a node may fill (u16 offsets address 64 KiB).
pub const MIN_PAGE_BYTES: usize = 512;
pub const MAX_PAGE_BYTES: usize = 65536;

pub const MAGIC: [u8; 2] = *b"BT";
pub const VERSION: u8 = 1;

/// Offsets of the header fields (see the table above).
pub mod at {
    pub const FRONT: usize = 0;
    pub const PID: usize = 8;
    pub const MAGIC: usize = 16;
    pub const VERSION: usize = 18;
    pub const KIND: usize = 19;
    pub const LEVEL: usize = 20;
    pub const COUNT: usize = 22;
    pub const LSN: usize = 24;
    pub const RIGHT: usize = 32;
    pub const LOWER: usize = 40;
    pub const HEAP_START: usize = 48;
    pub const GARBAGE: usize = 50;
    pub const HIGH_OFF: usize = 52;
    pub const HIGH_LEN: usize = 54;
    pub const LOW_OFF: usize = 56;
    pub const LOW_LEN: usize = 58;
    pub const PREFIX_LEN: usize = 60;
}

const S: &str = "B+-tree node";

/// Bytes between the header and the rear word: what slots and payload share.
pub fn usable_bytes(page_bytes: usize) -> usize {
    page_bytes.saturating_sub(HEADER_BYTES + POOL_TAIL_BYTES)
}

/// The longest key a tree on `page_bytes` pages takes: a sixteenth of the
/// usable bytes (1019 at 16 KiB), so an inner node always holds at least a
/// dozen entries besides its high key. The store refuses longer keys.
pub fn max_key_bytes(page_bytes: usize) -> usize {
    usable_bytes(page_bytes) / 16
}

/// The most bytes one leaf entry (slot, key and value) may take: a quarter of
/// the usable bytes (4078 at 16 KiB: a 24-byte key takes values up to 4038
/// bytes). A quarter keeps a split always possible: the two halves of a full
/// leaf plus one such entry each fit a page with their high keys.
pub fn max_entry_bytes(page_bytes: usize) -> usize {
    usable_bytes(page_bytes) / 4
}

/// The longest value a key of `key_len` bytes may have on `page_bytes` pages.
pub fn max_value_bytes(page_bytes: usize, key_len: usize) -> usize {
    max_entry_bytes(page_bytes).saturating_sub(SLOT_BYTES + key_len)
}

/// Bytes an entry with these lengths takes in a node (slot and payload).
pub fn entry_bytes(key_len: usize, value_len: usize) -> usize {
    SLOT_BYTES + key_len + value_len
}

/// Whether `page_bytes` can hold nodes.
pub fn page_size_ok(page_bytes: usize) -> bool {
    (MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&page_bytes) && page_bytes.is_multiple_of(8)
}

pub(crate) fn corrupt(pid: Pid, field: &'static str, reason: impl std::fmt::Display) -> FormatError {
    FormatError::InvalidField { structure: S, field, reason: format!("page {pid}: {reason}") }
}

/// A key's head in a node whose keys share `prefix` bytes: the 8 bytes after
/// the prefix, zero-padded, as a big-endian number. Of two keys that share
/// the prefix, heads order like the keys where they differ; equal heads say
/// nothing.
pub fn key_head(key: &[u8], prefix: usize) -> u64 {
    let rest = key.get(prefix..).unwrap_or(&[]);
    let mut h = [0u8; 8];
    let n = rest.len().min(8);
    h[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(h)
}

/// The bytes a node with fences `low` and `high` has in common for all keys.
pub fn fence_prefix(low: Option<&[u8]>, high: Option<&[u8]>) -> usize {
    match (low, high) {
        (Some(l), Some(h)) => l.iter().zip(h).take_while(|(a, b)| a == b).count(),
        _ => 0,
    }
}

pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The shortest separator for a split between `left` (the last key that
/// stays) and `right` (the first key that moves): the shortest prefix of
/// `right` that is greater than `left`. Every key of the left node is below
/// it and every key of the right node at or above it. (Keys out of order,
/// from a corrupt node, give `right`; `choose_split` refuses such splits.)
pub fn separator<'a>(left: &[u8], right: &'a [u8]) -> &'a [u8] {
    let common = left.iter().zip(right).take_while(|(a, b)| a == b).count();
    &right[..(common + 1).min(right.len())]
}

#[cfg(test)]
mod tests;
