//! The key-value store's log records (`docs/format/btree.md`, "Log
//! records"): physical redo. One record per tree operation names every page
//! the operation changed, the host frame the page sits in, and the byte
//! ranges it changed, so that
//!
//! - recovery redoes a record on a page without knowing B+-trees
//!   ([`redo_page`]: apply when the page's LSN is older), and
//! - the device's mirror of the host pool learns which pages are dirty, and
//!   where in host memory, from the log writes the host sends anyway
//!   ([`pages_named`] reads only the page directory).
//!
//! Records are framed like the MVCC store's (`wal.rs`: magic, length, LSN,
//! CRC, kind) so both can share one ring; their kinds start at 16.
//!
//! **Payload** (little-endian):
//!
//! ```text
//! offset size field
//!      0    1 op        1 create, 2 put, 3 update, 4 delete (what the tree did)
//!      1    1 reserved  zero
//!      2    2 n         pages changed (at least 1)
//!      4 20·n directory per page: pid u64, frame_addr u64 (the host frame
//!                       holding it), flags u16 (bit 0: full image: redo
//!                       zeroes the node's bytes first), ranges u16
//!      …      ranges    per page in directory order, per range:
//!                       offset u16, len u16, len bytes (inside 16..page-8)
//! ```
//!
//! A page's LSN (the node header's `lsn`) is the position just past the
//! newest record applied to it; redo applies a record to a page whose LSN is
//! below the record's end and then sets it to that end. A full image applies
//! whatever the page holds (a page torn by a crash included).

use std::borrow::Cow;

use crate::btree::{POOL_HEAD_BYTES, POOL_TAIL_BYTES, PageMut, Pid, at};
use crate::bytes::{Reader, Writer};
use crate::wal::{MAGIC, RECORD_HEADER_BYTES, record_bytes};

const _: () = assert!(RECORD_HEADER_BYTES == 24, "frame_into writes wal.rs's 24-byte header");
use crate::{FormatError, u64_at};

/// The record kind of a tree operation's page changes (the frame's `kind`).
pub const KIND_PAGE_REDO: u32 = 16;
const S: &str = "kv log record";
const DIRECTORY_ENTRY_BYTES: usize = 20;
const FLAG_FULL_IMAGE: u16 = 1;

/// What the tree operation was (diagnostics; redo does not depend on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvOp {
    Create = 1,
    Put = 2,
    Update = 3,
    Delete = 4,
}

/// One page's changes in a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageChange<'a> {
    pub pid: Pid,
    /// The host address of the frame the page is in.
    pub frame_addr: u64,
    /// The ranges cover everything the node holds; redo starts from zeros.
    pub full_image: bool,
    /// (offset in the page, new bytes), in any order, not overlapping.
    pub ranges: Vec<(u16, Cow<'a, [u8]>)>,
}

/// A tree operation's record payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redo<'a> {
    pub op: KvOp,
    pub pages: Vec<PageChange<'a>>,
}

impl Redo<'_> {
    pub fn encode(&self) -> Vec<u8> {
        debug_assert!(!self.pages.is_empty() && self.pages.len() <= usize::from(u16::MAX));
        let bytes: usize = self.pages.iter().flat_map(|p| p.ranges.iter().map(|r| 4 + r.1.len())).sum();
        let mut w = Writer(Vec::with_capacity(4 + DIRECTORY_ENTRY_BYTES * self.pages.len() + bytes));
        w.u8(self.op as u8);
        w.u8(0);
        w.u16(self.pages.len() as u16);
        for p in &self.pages {
            w.u64(p.pid);
            w.u64(p.frame_addr);
            w.u16(if p.full_image { FLAG_FULL_IMAGE } else { 0 });
            w.u16(p.ranges.len() as u16);
        }
        for p in &self.pages {
            for (off, data) in &p.ranges {
                w.u16(*off);
                w.u16(data.len() as u16);
                w.bytes(data);
            }
        }
        w.0
    }

    /// Decodes a payload, borrowing the ranges' bytes from it.
    pub fn decode(payload: &[u8]) -> Result<Redo<'_>, FormatError> {
        let mut r = Reader::new(payload, S);
        let op = match r.u8()? {
            1 => KvOp::Create,
            2 => KvOp::Put,
            3 => KvOp::Update,
            4 => KvOp::Delete,
            x => return Err(invalid("op", format!("{x}"))),
        };
        let (reserved, n) = (r.u8()?, r.u16()?);
        if reserved != 0 || n == 0 {
            return Err(invalid("pages", format!("{n} pages, reserved byte {reserved}")));
        }
        let n = r.count(n.into(), DIRECTORY_ENTRY_BYTES)?;
        let mut pages = Vec::with_capacity(n);
        let mut counts = Vec::with_capacity(n);
        for _ in 0..n {
            let (pid, frame_addr, flags, ranges) = (r.u64()?, r.u64()?, r.u16()?, r.u16()?);
            if flags & !FLAG_FULL_IMAGE != 0 {
                return Err(invalid("flags", format!("{flags:#06x} for page {pid}")));
            }
            pages.push(PageChange { pid, frame_addr, full_image: flags == FLAG_FULL_IMAGE, ranges: Vec::new() });
            counts.push(ranges);
        }
        for (p, count) in pages.iter_mut().zip(counts) {
            let count = r.count(count.into(), 4)?;
            p.ranges.reserve(count);
            for _ in 0..count {
                let (off, len) = (r.u16()?, r.u16()?);
                p.ranges.push((off, Cow::Borrowed(r.take(usize::from(len))?)));
            }
        }
        r.finish()?;
        Ok(Redo { op, pages })
    }
}

fn invalid(field: &'static str, reason: String) -> FormatError {
    FormatError::InvalidField { structure: S, field, reason }
}

/// The (pid, frame address) pairs a record payload names, from its directory
/// alone: what the device's mirror marks Dirty when it sees the log write.
pub fn pages_named(payload: &[u8]) -> Result<Vec<(Pid, u64)>, FormatError> {
    let mut r = Reader::new(payload, S);
    let (_op, _reserved, n) = (r.u8()?, r.u8()?, r.u16()?);
    let n = r.count(n.into(), DIRECTORY_ENTRY_BYTES)?;
    (0..n)
        .map(|_| {
            let (pid, addr) = (r.u64()?, r.u64()?);
            r.take(4)?;
            Ok((pid, addr))
        })
        .collect()
}

/// Redoes one page's changes from the record that ends at `end_lsn`: a full
/// image always, a partial change only if the page's LSN is below `end_lsn`.
/// Returns whether it applied. A range outside the node's bytes is an error
/// and changes nothing.
pub fn redo_page<P: PageMut + ?Sized>(
    page: &mut P,
    change: &PageChange<'_>,
    end_lsn: u64,
) -> Result<bool, FormatError> {
    let len = page.bytes().len();
    if len < POOL_HEAD_BYTES + POOL_TAIL_BYTES + at::LSN + 8 {
        return Err(invalid("page", format!("page {}: {len} bytes", change.pid)));
    }
    for (off, data) in &change.ranges {
        let off = usize::from(*off);
        if off < POOL_HEAD_BYTES || off + data.len() > len - POOL_TAIL_BYTES {
            return Err(invalid("range", format!("page {}: {} bytes at {off} of {len}", change.pid, data.len())));
        }
    }
    if !change.full_image && u64_at(page.bytes(), at::LSN) >= end_lsn {
        return Ok(false);
    }
    if change.full_image {
        page.write(POOL_HEAD_BYTES, &vec![0; len - POOL_HEAD_BYTES - POOL_TAIL_BYTES]);
    }
    for (off, data) in &change.ranges {
        page.write(usize::from(*off), data);
    }
    crate::btree::set_lsn(page, end_lsn);
    Ok(true)
}

/// Appends a whole record of kind `kind` at log position `lsn` to `out`, framed
/// as `wal.rs` frames the MVCC store's (magic, length, LSN, CRC-32 of the
/// header's first 16 bytes and the payload, kind, payload, zero padding to
/// 8); `wal::RecordHeader` reads it back. Returns the record's end LSN.
pub fn frame_into(out: &mut Vec<u8>, lsn: u64, kind: u32, payload: &[u8]) -> u64 {
    debug_assert!(lsn.is_multiple_of(8), "records start at multiples of 8");
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&out[start..start + 16]);
    h.update(payload);
    out.extend_from_slice(&h.finalize().to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(payload);
    out.resize(start + record_bytes(payload.len()), 0);
    debug_assert_eq!(out.len() - start, record_bytes(payload.len()));
    lsn + record_bytes(payload.len()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::{self, Node, NodeKind, NodeSpec, blank_page};
    use crate::wal::RecordHeader;
    use proptest::prelude::*;

    fn change(pid: Pid, full_image: bool, ranges: &[(u16, &'static [u8])]) -> PageChange<'static> {
        PageChange {
            pid,
            frame_addr: 0x1000 * pid,
            full_image,
            ranges: ranges.iter().map(|&(o, d)| (o, Cow::Borrowed(d))).collect(),
        }
    }

    /// The bytes of docs/format/btree.md's log record example.
    #[test]
    fn a_record_has_the_documented_bytes() {
        let redo = Redo { op: KvOp::Put, pages: vec![change(3, false, &[(100, b"ab"), (22, b"\x05\x00")])] };
        let payload = redo.encode();
        let mut expect = vec![2, 0, 1, 0];
        expect.extend_from_slice(&3u64.to_le_bytes());
        expect.extend_from_slice(&0x3000u64.to_le_bytes());
        expect.extend_from_slice(&[0, 0, 2, 0]);
        expect.extend_from_slice(&[100, 0, 2, 0, b'a', b'b', 22, 0, 2, 0, 5, 0]);
        assert_eq!(payload, expect);
        assert_eq!(Redo::decode(&payload).unwrap(), redo);
        assert_eq!(pages_named(&payload).unwrap(), [(3, 0x3000)]);
        let mut log = Vec::new();
        let end = frame_into(&mut log, 40, KIND_PAGE_REDO, &payload);
        assert_eq!((log.len(), end), (64, 104), "24 + 36 bytes, padded to 8");
        let h = RecordHeader::decode(&log).unwrap();
        assert_eq!((h.len, h.lsn, h.kind), (36, 40, 16));
        assert!(h.checks(&log[24..60]) && !h.checks(&log[24..59]));
    }

    #[test]
    fn redo_applies_only_to_older_pages() {
        let mut page = blank_page(1024, 3);
        let c = change(3, false, &[(100, b"ab")]);
        assert!(redo_page(&mut page, &c, 64).unwrap());
        assert_eq!((&page[100..102], u64_at(&page, at::LSN)), (&b"ab"[..], 64));
        let c2 = change(3, false, &[(100, b"xy")]);
        assert!(!redo_page(&mut page, &c2, 64).unwrap(), "the page already holds the record ending at 64");
        assert_eq!(&page[100..102], b"ab");
        let full = change(3, true, &[(200, b"z")]);
        assert!(redo_page(&mut page, &full, 8).unwrap(), "a full image applies whatever the page's LSN");
        assert_eq!((&page[100..102], page[200], u64_at(&page, at::LSN)), (&[0u8, 0][..], b'z', 8));
        assert_eq!(u64_at(&page, at::PID), 3, "the pool's words stay");
        let bad = change(3, false, &[(1020, b"ab")]);
        assert!(redo_page(&mut page, &bad, 100).is_err());
        assert!(redo_page(&mut page, &change(3, false, &[(8, b"ab")]), 100).is_err());
        assert_eq!(u64_at(&page, at::LSN), 8, "a refused record changes nothing");
    }

    /// Records each write, as the key-value store's guard does.
    struct Tracked(Vec<u8>, Vec<(usize, usize)>);
    impl PageMut for Tracked {
        fn bytes(&self) -> &[u8] {
            &self.0
        }
        fn write(&mut self, at: usize, data: &[u8]) {
            self.0.write(at, data);
            self.1.push((at, data.len()));
        }
        fn copy_within(&mut self, src: std::ops::Range<usize>, dst: usize) {
            self.1.push((dst, src.len()));
            PageMut::copy_within(&mut self.0, src, dst);
        }
    }

    proptest! {
        /// Logging the ranges an edit wrote and redoing them on the page as it
        /// was gives the page as it is.
        #[test]
        fn redo_of_logged_edits_rebuilds_the_page(keys in proptest::collection::vec((proptest::collection::vec(0u8..5, 0..5), 0usize..90), 1..40)) {
            let mut before = blank_page(1024, 1);
            btree::write_node(&mut before, 1, &NodeSpec { kind: NodeKind::Leaf, level: 0, lower: btree::NONE, right: btree::NONE, high: None, low: None }, &[]).unwrap();
            for (k, n) in keys {
                let mut t = Tracked(before.clone(), Vec::new());
                let (i, found) = Node::parse(&t.0, 1).unwrap().lower_bound(&k).unwrap();
                let v = vec![n as u8; n];
                let _ = if found { btree::set_value(&mut t, 1, i, &v) } else { btree::insert(&mut t, 1, i, &k, &v) };
                let ranges = t.1.iter().map(|&(o, l)| (o as u16, Cow::Owned(t.0[o..o + l].to_vec()))).collect();
                let redo = Redo { op: KvOp::Put, pages: vec![PageChange { pid: 1, frame_addr: 0, full_image: false, ranges }] };
                let payload = redo.encode();
                let decoded = Redo::decode(&payload).unwrap();
                let lsn = u64_at(&before, at::LSN) + 8;
                let mut replayed = before.clone();
                prop_assert!(redo_page(&mut replayed, &decoded.pages[0], lsn).unwrap());
                btree::set_lsn(&mut t.0, lsn);
                prop_assert_eq!(&replayed, &t.0);
                before = t.0;
            }
        }

        #[test]
        fn records_roundtrip(pages in proptest::collection::vec((any::<u64>(), any::<u64>(), any::<bool>(), proptest::collection::vec((16u16..1000, proptest::collection::vec(any::<u8>(), 0..8)), 0..4)), 1..4), op in 1u8..5) {
            let pages: Vec<PageChange<'static>> = pages.into_iter().map(|(pid, frame_addr, full_image, r)| PageChange {
                pid, frame_addr, full_image, ranges: r.into_iter().map(|(o, d)| (o, Cow::Owned(d))).collect(),
            }).collect();
            let op = [KvOp::Create, KvOp::Put, KvOp::Update, KvOp::Delete][usize::from(op - 1)];
            let redo = Redo { op, pages };
            let payload = redo.encode();
            prop_assert_eq!(&Redo::decode(&payload).unwrap(), &redo);
            let named: Vec<_> = redo.pages.iter().map(|p| (p.pid, p.frame_addr)).collect();
            prop_assert_eq!(pages_named(&payload).unwrap(), named);
        }

        #[test]
        fn decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200), at in 0usize..200, x in any::<u8>(), lsn in any::<u64>()) {
            let _ = pages_named(&b);
            let mut good = Redo { op: KvOp::Delete, pages: vec![change(1, true, &[(20, b"abc")]), change(2, false, &[(30, b"")])] }.encode();
            let i = at % good.len();
            good[i] ^= x;
            for bytes in [&b[..], &good[..]] {
                let _ = pages_named(bytes);
                if let Ok(redo) = Redo::decode(bytes) {
                    for c in &redo.pages {
                        let mut page = blank_page(512, c.pid);
                        let _ = redo_page(&mut page, c, lsn);
                        let _ = redo_page(&mut page[..100], c, lsn);
                    }
                }
            }
        }
    }
}
