//! Pages: the unit the host reads and writes (`PAGE_READ`, `PAGE_WRITE`).
//!
//! Every page starts with a 32-byte header:
//!
//! ```text
//! offset size field
//!      0    2 magic         b"NP"
//!      2    1 version       1
//!      3    1 kind          1 heap (version records), 2 VID map, 3 L2P map
//!      4    4 object_id     u32 LE: the table (0 for the L2P map)
//!      8    8 lpn           u64 LE: the page's logical page number (L2P map pages:
//!                            their index in the L2P map)
//!     16    2 slot_count    u16 LE (heap pages; 0 otherwise)
//!     18    2 free_end      u16 LE: record data occupies free_end..page end
//!     20    4 reserved      zero
//!     24    4 crc32         CRC-32 of the whole page with these 4 bytes zero
//!     28    4 reserved      zero
//! ```
//!
//! **Heap pages** (slotted, NSM) hold version records. The slot array starts
//! at byte 32, four bytes a slot: `u16 offset, u16 length` of the record.
//! Records are placed from the end of the page downwards, each at a multiple
//! of 4, so a record header is five aligned 4-byte transfers on NVM:
//!
//! ```text
//! | header | slot 0 | slot 1 | ... free ... | record 1 | record 0 |
//! 0        32       36       40             free_end           page end
//! ```
//!
//! **Map pages** (VID map, L2P map) hold `(page_bytes - 32) / 8` u64 LE
//! entries from byte 32: entry i of page p is map index `p * per_page + i`.
//!
//! The checksum covers the whole page and is checked by whoever reads the
//! whole page (the host's block reads). A PE that reads single records cannot
//! check it; it checks every offset and length it follows instead.

use crate::{FormatError, u32_at, u64_at};

pub const PAGE_HEADER_BYTES: usize = 32;
pub const SLOT_BYTES: usize = 4;
const MAGIC: [u8; 2] = *b"NP";
const VERSION: u8 = 1;
const CRC_AT: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    Heap = 1,
    VidMap = 2,
    L2pMap = 3,
}

/// A version record's address: logical page number and slot.
///
/// Packed into a u64 as `lpn << 16 | slot`; `RecordId::NONE` (all ones) marks
/// the end of a chain and an empty VID map entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordId(pub u64);

impl RecordId {
    pub const NONE: RecordId = RecordId(u64::MAX);
    /// Largest logical page number a RecordId can name.
    pub const LPN_MAX: u64 = (1 << 48) - 2;

    pub fn new(lpn: u64, slot: u16) -> RecordId {
        assert!(lpn <= Self::LPN_MAX, "lpn {lpn} out of range");
        RecordId(lpn << 16 | u64::from(slot))
    }

    pub fn lpn(self) -> u64 {
        self.0 >> 16
    }

    pub fn slot(self) -> u16 {
        self.0 as u16
    }

    pub fn is_none(self) -> bool {
        self == RecordId::NONE
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    pub kind: PageKind,
    pub object_id: u32,
    pub lpn: u64,
    pub slot_count: u16,
    pub free_end: u16,
}

/// Entries a map page holds.
pub fn map_entries_per_page(page_bytes: usize) -> usize {
    (page_bytes - PAGE_HEADER_BYTES) / 8
}

fn invalid(field: &'static str, reason: String) -> FormatError {
    FormatError::InvalidField { structure: "page", field, reason }
}

impl PageHeader {
    /// Decodes and checks the header against the page's length (not the checksum).
    pub fn decode(page: &[u8]) -> Result<PageHeader, FormatError> {
        if page.len() < PAGE_HEADER_BYTES {
            return Err(FormatError::Truncated { structure: "page", needed: PAGE_HEADER_BYTES, found: page.len() });
        }
        if page[0..2] != MAGIC {
            return Err(FormatError::BadMagic { structure: "page", found: page[0..2].to_vec() });
        }
        if page[2] != VERSION {
            return Err(FormatError::UnsupportedVersion {
                structure: "page",
                found: page[2].into(),
                supported: VERSION.into(),
            });
        }
        let kind = match page[3] {
            1 => PageKind::Heap,
            2 => PageKind::VidMap,
            3 => PageKind::L2pMap,
            k => return Err(invalid("kind", format!("unknown page kind {k}"))),
        };
        let h = PageHeader {
            kind,
            object_id: u32_at(page, 4),
            lpn: u64_at(page, 8),
            slot_count: u16::from_le_bytes([page[16], page[17]]),
            free_end: u16::from_le_bytes([page[18], page[19]]),
        };
        let slots_end = PAGE_HEADER_BYTES + SLOT_BYTES * usize::from(h.slot_count);
        if kind == PageKind::Heap && (slots_end > usize::from(h.free_end) || usize::from(h.free_end) > page.len()) {
            return Err(invalid(
                "free_end",
                format!("{} slots and free_end {} in a {}-byte page", h.slot_count, h.free_end, page.len()),
            ));
        }
        Ok(h)
    }

    fn write(&self, page: &mut [u8]) {
        page[0..2].copy_from_slice(&MAGIC);
        page[2] = VERSION;
        page[3] = self.kind as u8;
        page[4..8].copy_from_slice(&self.object_id.to_le_bytes());
        page[8..16].copy_from_slice(&self.lpn.to_le_bytes());
        page[16..18].copy_from_slice(&self.slot_count.to_le_bytes());
        page[18..20].copy_from_slice(&self.free_end.to_le_bytes());
    }
}

/// Sets the checksum of a finished page (before it is written to the device).
pub fn seal(page: &mut [u8]) {
    page[CRC_AT..CRC_AT + 4].fill(0);
    let crc = crc32fast::hash(page);
    page[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

/// Checks a whole page: checksum, header, and (heap pages) every slot.
pub fn verify(page: &[u8]) -> Result<PageHeader, FormatError> {
    let h = PageHeader::decode(page)?;
    let stored = u32_at(page, CRC_AT);
    let mut h2 = crc32fast::Hasher::new();
    h2.update(&page[..CRC_AT]);
    h2.update(&[0; 4]);
    h2.update(&page[CRC_AT + 4..]);
    let computed = h2.finalize();
    if stored != computed {
        return Err(FormatError::Checksum { structure: "page", stored, computed });
    }
    if h.kind == PageKind::Heap {
        for s in 0..h.slot_count {
            heap_record(page, &h, s)?;
        }
    }
    Ok(h)
}

/// Bytes of record `slot` of a heap page whose header was decoded.
pub fn heap_record<'a>(page: &'a [u8], h: &PageHeader, slot: u16) -> Result<&'a [u8], FormatError> {
    let (off, len) = slot_entry(page, h, slot)?;
    Ok(&page[off..off + len])
}

/// The `(offset, length)` of a slot, checked against the page.
pub fn slot_entry(page: &[u8], h: &PageHeader, slot: u16) -> Result<(usize, usize), FormatError> {
    if slot >= h.slot_count {
        return Err(invalid("slot", format!("slot {slot} of a page with {} slots", h.slot_count)));
    }
    decode_slot(u32_at(page, slot_at(slot)), h.free_end, page.len())
        .map_err(|r| invalid("slot", format!("slot {slot}: {r}")))
}

/// Byte of slot `slot`'s entry in a heap page.
#[inline]
pub fn slot_at(slot: u16) -> usize {
    PAGE_HEADER_BYTES + SLOT_BYTES * usize::from(slot)
}

/// The `(offset, length)` a raw slot entry holds (`u16 offset, u16 length`).
#[inline]
pub fn split_slot(raw: u32) -> (usize, usize) {
    ((raw & 0xffff) as usize, (raw >> 16) as usize)
}

/// Whether slot `slot`'s record `(offset, length)` can be a record of a
/// `page_bytes` page, checked without the page header (how a PE that read
/// only the slot entry checks it): after the slot's own entry, 4-aligned,
/// inside the page, and at least a version header long.
#[inline]
pub fn slot_fits(off: usize, len: usize, slot: u16, page_bytes: usize) -> bool {
    off >= slot_at(slot) + SLOT_BYTES
        && off.is_multiple_of(4)
        && off + len <= page_bytes
        && len >= crate::record::HEADER_BYTES
}

/// Checks one raw slot entry (as a PE reads it in one transfer).
pub fn decode_slot(raw: u32, free_end: u16, page_bytes: usize) -> Result<(usize, usize), String> {
    let (off, len) = split_slot(raw);
    if off < usize::from(free_end)
        || !off.is_multiple_of(4)
        || off + len > page_bytes
        || len < crate::record::HEADER_BYTES
    {
        return Err(format!("record at {off} of {len} bytes is not within the record area {free_end}..{page_bytes}"));
    }
    Ok((off, len))
}

/// Sets the predecessor of record `slot` of a heap page (garbage collection
/// cuts chains this way). The caller reseals a page that goes to the device.
pub fn set_prev(page: &mut [u8], slot: u16, prev: RecordId) -> Result<(), FormatError> {
    let h = PageHeader::decode(page)?;
    let (off, _) = slot_entry(page, &h, slot)?;
    page[off + 8..off + 16].copy_from_slice(&prev.0.to_le_bytes());
    Ok(())
}

/// A heap page being filled (the delta buffer's pages).
#[derive(Debug, Clone)]
pub struct HeapPage {
    bytes: Vec<u8>,
    header: PageHeader,
}

impl HeapPage {
    pub fn new(page_bytes: usize, object_id: u32, lpn: u64) -> HeapPage {
        debug_assert!(page_bytes <= usize::from(u16::MAX), "slot offsets and free_end are u16s");
        let header = PageHeader { kind: PageKind::Heap, object_id, lpn, slot_count: 0, free_end: page_bytes as u16 };
        let mut bytes = vec![0; page_bytes];
        header.write(&mut bytes);
        HeapPage { bytes, header }
    }

    /// Free bytes for one more record (its slot included).
    pub fn free(&self) -> usize {
        let used = PAGE_HEADER_BYTES + SLOT_BYTES * usize::from(self.header.slot_count);
        (usize::from(self.header.free_end) & !3).saturating_sub(used + SLOT_BYTES)
    }

    /// Appends a record; None when it does not fit.
    pub fn insert(&mut self, record: &[u8]) -> Option<u16> {
        if record.len() > self.free() || self.header.slot_count == u16::MAX {
            return None;
        }
        debug_assert!(record.len() >= crate::record::HEADER_BYTES, "heap pages hold version records");
        let off = (usize::from(self.header.free_end) - record.len()) & !3;
        self.bytes[off..off + record.len()].copy_from_slice(record);
        let slot = self.header.slot_count;
        let at = slot_at(slot);
        debug_assert!(off.is_multiple_of(4) && off >= at + SLOT_BYTES, "records are 4-aligned, above the slots");
        let raw = off as u32 | (record.len() as u32) << 16;
        self.bytes[at..at + 4].copy_from_slice(&raw.to_le_bytes());
        self.header.slot_count += 1;
        self.header.free_end = off as u16;
        self.header.write(&mut self.bytes);
        Some(slot)
    }

    pub fn set_prev(&mut self, slot: u16, prev: RecordId) -> Result<(), FormatError> {
        set_prev(&mut self.bytes, slot, prev)
    }

    pub fn record(&self, slot: u16) -> Option<&[u8]> {
        heap_record(&self.bytes, &self.header, slot).ok()
    }

    pub fn lpn(&self) -> u64 {
        self.header.lpn
    }

    pub fn slot_count(&self) -> u16 {
        self.header.slot_count
    }

    /// The page as it goes to the device, checksummed.
    pub fn sealed(&self) -> Vec<u8> {
        let mut b = self.bytes.clone();
        seal(&mut b);
        b
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// Builds a sealed map page from its entries (missing ones are all ones).
pub fn map_page(page_bytes: usize, kind: PageKind, object_id: u32, lpn: u64, entries: &[u64]) -> Vec<u8> {
    assert!(kind != PageKind::Heap && entries.len() <= map_entries_per_page(page_bytes));
    let mut b = vec![0xff; page_bytes];
    b[..PAGE_HEADER_BYTES].fill(0);
    PageHeader { kind, object_id, lpn, slot_count: 0, free_end: 0 }.write(&mut b);
    for (i, e) in entries.iter().enumerate() {
        let at = PAGE_HEADER_BYTES + 8 * i;
        b[at..at + 8].copy_from_slice(&e.to_le_bytes());
    }
    seal(&mut b);
    b
}

/// Entry `i` of a map page.
pub fn map_entry(page: &[u8], i: usize) -> Result<u64, FormatError> {
    let at = PAGE_HEADER_BYTES + 8 * i;
    if at + 8 > page.len() {
        return Err(invalid("entry", format!("entry {i} of a {}-byte map page", page.len())));
    }
    Ok(u64_at(page, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn heap_page_roundtrip() {
        let mut p = HeapPage::new(8192, 3, 77);
        let rec: Vec<u8> = (0..25).collect();
        let s0 = p.insert(&rec).unwrap();
        let s1 = p.insert(&[9; 40]).unwrap();
        let sealed = p.sealed();
        let h = verify(&sealed).unwrap();
        assert_eq!((h.kind, h.object_id, h.lpn, h.slot_count), (PageKind::Heap, 3, 77, 2));
        assert_eq!(heap_record(&sealed, &h, s0).unwrap(), &rec[..]);
        assert_eq!(heap_record(&sealed, &h, s1).unwrap(), &[9; 40][..]);
        assert!(heap_record(&sealed, &h, 2).is_err());
        let (off, _) = slot_entry(&sealed, &h, s0).unwrap();
        assert_eq!(off % 4, 0);
    }

    #[test]
    fn page_fills_up() {
        let mut p = HeapPage::new(512, 1, 1);
        let mut n = 0;
        while p.insert(&[1; 40]).is_some() {
            n += 1;
        }
        assert_eq!(n, (512 - 32) / 44);
        assert!(verify(&p.sealed()).is_ok());
    }

    #[test]
    fn a_slot_entry_checks_without_the_header() {
        let mut p = HeapPage::new(512, 1, 1);
        let s = p.insert(&[7; 24]).unwrap();
        let raw = u32_at(p.bytes(), slot_at(s));
        assert_eq!(split_slot(raw), (488, 24));
        assert!(slot_fits(488, 24, s, 512));
        assert!(!slot_fits(488, 25, s, 512), "past the page");
        assert!(!slot_fits(490, 20, s, 512), "unaligned");
        assert!(!slot_fits(32, 20, s, 512), "over its own slot entry");
        assert!(!slot_fits(488, 19, s, 512), "shorter than a version header");
    }

    #[test]
    fn map_pages() {
        let b = map_page(8192, PageKind::VidMap, 2, 5, &[1, 2, 3]);
        assert_eq!(verify(&b).unwrap().kind, PageKind::VidMap);
        assert_eq!(map_entry(&b, 2).unwrap(), 3);
        assert_eq!(map_entry(&b, 3).unwrap(), u64::MAX);
        assert!(map_entry(&b, map_entries_per_page(8192)).is_err());
        assert_eq!(map_entries_per_page(8192), 1020);
    }

    #[test]
    fn record_ids_pack() {
        let r = RecordId::new(123_456, 789);
        assert_eq!((r.lpn(), r.slot()), (123_456, 789));
        assert!(RecordId::NONE.is_none() && !r.is_none());
    }

    #[test]
    fn corruption_is_detected() {
        let mut p = HeapPage::new(1024, 1, 1);
        p.insert(&[5; 30]).unwrap();
        let good = p.sealed();
        for i in (0..1024).step_by(13) {
            let mut b = good.clone();
            b[i] ^= 0x40;
            assert!(verify(&b).is_err(), "flip at {i} accepted");
        }
    }

    proptest! {
        #[test]
        fn verify_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = verify(&bytes);
            if let Ok(h) = PageHeader::decode(&bytes) {
                for s in 0..h.slot_count.min(50) {
                    let _ = heap_record(&bytes, &h, s);
                }
            }
        }

        #[test]
        fn sealed_garbage_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 64..1024), slots in 0u16..300) {
            bytes[0..2].copy_from_slice(b"NP");
            bytes[2] = 1;
            bytes[3] = 1;
            bytes[16..18].copy_from_slice(&slots.to_le_bytes());
            seal(&mut bytes);
            if let Ok(h) = verify(&bytes) {
                for s in 0..h.slot_count {
                    prop_assert!(heap_record(&bytes, &h, s).is_ok());
                }
            }
        }

        #[test]
        fn decode_slot_never_out_of_bounds(raw in any::<u32>(), free_end in any::<u16>(), page in 512usize..65536) {
            if let Ok((off, len)) = decode_slot(raw, free_end, page) {
                prop_assert!(off + len <= page);
            }
        }
    }
}
