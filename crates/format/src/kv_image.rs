//! The key-value store's image on a device (`docs/format/kv-image.md`): a
//! run of physical pages `[first_ppn, first_ppn + pages)` holding two root
//! slots, the log ring, then the B+-tree's file.
//!
//! ```text
//!  first_ppn   +1         +2                  +2+log_pages            first_ppn+pages
//!  ┌─────────┬─────────┬──── log ring ────────┬──── file: pid 0, 1, … ────────┐
//!  │ slot 0  │ slot 1  │ log_pages pages      │ pid p = file_first_ppn + p     │
//!  └─────────┴─────────┴──────────────────────┴────────────────────────────────┘
//! ```
//!
//! A checkpoint writes the slot its generation selects (`generation % 2`),
//! so a torn root write leaves the other slot, the previous checkpoint,
//! intact; opening takes the valid slot with the higher generation
//! ([`choose`]), as the MVCC store's root slots do (`checkpoint.rs`).
//!
//! ```text
//! offset size field
//!      0    4 magic           b"NDPK"
//!      4    4 version         u32, 1
//!      8    8 generation      u64: checkpoints written (the first is 1)
//!     16    8 root_pid        u64: the tree's root (never changes)
//!     24    8 log_first_ppn   u64: the ring's first physical page
//!     32    8 log_pages       u64: pages of the ring
//!     40    8 file_first_ppn  u64: physical page of pid 0
//!     48    8 file_page_limit u64: pages the file may grow to
//!     56    8 checkpoint_lsn  u64: where redo starts (a record boundary)
//!     64    8 file_pages      u64: pages of the file in use at the checkpoint
//!     72    4 page_bytes      u32: the device's page size when written
//!     76    …  zero
//!    P-4    4 crc32           CRC-32 (IEEE) of bytes 0..P-4
//! ```
//!
//! An LSN is a byte position in the endless log stream: byte `lsn` is in
//! ring page `log_first_ppn + (lsn / page_bytes) % log_pages`, at offset
//! `lsn % page_bytes`. Records are `wal.rs`'s frames with `kv_log.rs`'s
//! kinds.

use crate::{FormatError, u32_at, u64_at};

const MAGIC: [u8; 4] = *b"NDPK";
pub const VERSION: u32 = 1;
/// Bytes of the slot's fields before the zero fill.
pub const HEADER_BYTES: usize = 76;
/// Root slots before the ring.
pub const SLOTS: u64 = 2;
const S: &str = "kv root slot";

/// One root slot's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvRoot {
    pub generation: u64,
    pub root_pid: u64,
    pub log_first_ppn: u64,
    pub log_pages: u64,
    pub file_first_ppn: u64,
    pub file_page_limit: u64,
    pub checkpoint_lsn: u64,
    pub file_pages: u64,
    pub page_bytes: u32,
}

impl KvRoot {
    /// The slot (0 or 1) this root is written to.
    pub fn slot(&self) -> u64 {
        self.generation % 2
    }

    /// The ring's bytes.
    pub fn log_capacity(&self) -> u64 {
        self.log_pages * u64::from(self.page_bytes)
    }

    /// The ring page holding byte `lsn`.
    pub fn log_ppn(&self, lsn: u64) -> u64 {
        self.log_first_ppn + (lsn / u64::from(self.page_bytes)) % self.log_pages
    }

    pub fn encode(&self) -> Vec<u8> {
        let page = self.page_bytes as usize;
        assert!(page >= HEADER_BYTES + 4, "a root slot needs {} bytes", HEADER_BYTES + 4);
        let mut b = vec![0u8; page];
        b[0..4].copy_from_slice(&MAGIC);
        b[4..8].copy_from_slice(&VERSION.to_le_bytes());
        let words = [
            self.generation,
            self.root_pid,
            self.log_first_ppn,
            self.log_pages,
            self.file_first_ppn,
            self.file_page_limit,
            self.checkpoint_lsn,
            self.file_pages,
        ];
        for (i, w) in words.iter().enumerate() {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&w.to_le_bytes());
        }
        b[72..76].copy_from_slice(&self.page_bytes.to_le_bytes());
        let crc = crc32fast::hash(&b[..page - 4]);
        b[page - 4..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a slot; `Ok(None)` for a page of zeros (never written).
    /// Checks, in order: length, magic, version, CRC, page size, geometry.
    pub fn decode(b: &[u8]) -> Result<Option<KvRoot>, FormatError> {
        if b.len() < HEADER_BYTES + 4 {
            return Err(FormatError::Truncated { structure: S, needed: HEADER_BYTES + 4, found: b.len() });
        }
        if b.iter().all(|&x| x == 0) {
            return Ok(None);
        }
        if b[0..4] != MAGIC {
            return Err(FormatError::BadMagic { structure: S, found: b[0..4].to_vec() });
        }
        let version = u32_at(b, 4);
        if version != VERSION {
            return Err(FormatError::UnsupportedVersion { structure: S, found: version, supported: VERSION });
        }
        let stored = u32_at(b, b.len() - 4);
        let computed = crc32fast::hash(&b[..b.len() - 4]);
        if stored != computed {
            return Err(FormatError::Checksum { structure: S, stored, computed });
        }
        let w = |i: usize| u64_at(b, 8 + 8 * i);
        let root = KvRoot {
            generation: w(0),
            root_pid: w(1),
            log_first_ppn: w(2),
            log_pages: w(3),
            file_first_ppn: w(4),
            file_page_limit: w(5),
            checkpoint_lsn: w(6),
            file_pages: w(7),
            page_bytes: u32_at(b, 72),
        };
        root.validate(b.len())?;
        Ok(Some(root))
    }

    fn validate(&self, slot_bytes: usize) -> Result<(), FormatError> {
        let bad = |field, reason: String| Err(FormatError::InvalidField { structure: S, field, reason });
        if self.page_bytes as usize != slot_bytes {
            return bad("page_bytes", format!("{} in a slot of {slot_bytes} bytes", self.page_bytes));
        }
        if self.log_pages == 0 {
            return bad("log_pages", "0: the ring has no pages".into());
        }
        let log_end = self.log_first_ppn.checked_add(self.log_pages);
        if log_end.is_none_or(|e| e > self.file_first_ppn) {
            return bad(
                "log_pages",
                format!("ring at {} of {} pages overlaps the file", self.log_first_ppn, self.log_pages),
            );
        }
        if self.file_first_ppn.checked_add(self.file_page_limit).is_none() {
            return bad(
                "file_page_limit",
                format!("{} pages at {} overflow", self.file_page_limit, self.file_first_ppn),
            );
        }
        if self.file_pages > self.file_page_limit || self.root_pid >= self.file_pages.max(1) {
            return bad(
                "file_pages",
                format!("{} in use of {}, root {}", self.file_pages, self.file_page_limit, self.root_pid),
            );
        }
        if !self.checkpoint_lsn.is_multiple_of(8) {
            return bad("checkpoint_lsn", format!("{} is not a record boundary", self.checkpoint_lsn));
        }
        Ok(())
    }
}

/// Which slot to use: the valid one with the higher generation. Returns the
/// root (None when both slots are zeros) and the reasons slots could not be
/// used (to report). Both slots unusable (and not both zeros) is an error
/// that names each slot's problem.
pub fn choose(slots: [&[u8]; 2]) -> Result<(Option<KvRoot>, Vec<String>), FormatError> {
    let decoded = slots.map(KvRoot::decode);
    let mut notes = Vec::new();
    let mut best: Option<KvRoot> = None;
    let mut zeros = 0;
    for (i, d) in decoded.iter().enumerate() {
        match d {
            Ok(Some(r)) if r.slot() != i as u64 => {
                notes.push(format!("slot {i}: generation {} belongs in slot {}", r.generation, r.slot()))
            }
            Ok(Some(r)) => {
                if best.is_none_or(|b| r.generation > b.generation) {
                    best = Some(*r);
                }
            }
            Ok(None) => zeros += 1,
            Err(e) => notes.push(format!("slot {i}: {e}")),
        }
    }
    if best.is_none() && zeros < 2 {
        return Err(FormatError::InvalidField { structure: S, field: "slots", reason: notes.join("; ") });
    }
    Ok((best, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(generation: u64) -> KvRoot {
        KvRoot {
            generation,
            root_pid: 0,
            log_first_ppn: 18,
            log_pages: 64,
            file_first_ppn: 82,
            file_page_limit: 1000,
            checkpoint_lsn: 4096,
            file_pages: 7,
            page_bytes: 512,
        }
    }

    #[test]
    fn a_slot_has_the_documented_bytes() {
        let r = sample(3);
        let b = r.encode();
        assert_eq!(&b[0..8], b"NDPK\x01\0\0\0");
        assert_eq!(u64_at(&b, 8), 3);
        assert_eq!(u64_at(&b, 24), 18);
        assert_eq!(u64_at(&b, 56), 4096);
        assert_eq!(u64_at(&b, 64), 7);
        assert_eq!(u32_at(&b, 72), 512);
        assert!(b[76..508].iter().all(|&x| x == 0));
        assert_eq!(KvRoot::decode(&b).unwrap(), Some(r));
        assert_eq!(KvRoot::decode(&[0u8; 512]).unwrap(), None);
        assert_eq!((r.log_ppn(0), r.log_ppn(511), r.log_ppn(512), r.log_ppn(64 * 512)), (18, 18, 19, 18));
    }

    #[test]
    fn the_newer_valid_slot_wins_and_a_torn_one_is_passed_over() {
        let (a, b) = (sample(4).encode(), sample(5).encode());
        assert_eq!(choose([&a, &b]).unwrap().0.unwrap().generation, 5);
        let mut torn = b.clone();
        torn[300] ^= 1;
        let (root, notes) = choose([&a, &torn]).unwrap();
        assert_eq!(root.unwrap().generation, 4);
        assert!(notes[0].contains("slot 1") && notes[0].contains("checksum"), "{notes:?}");
        let zeros = vec![0u8; 512];
        assert_eq!(choose([&zeros, &zeros]).unwrap().0, None);
        let err = choose([&torn, &zeros]).unwrap_err().to_string();
        assert!(err.contains("slot 0"), "{err}");
        assert!(choose([&b, &a]).is_err(), "each generation in the other's slot");
    }

    proptest! {
        #[test]
        fn decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..600), at in 0usize..512, x in any::<u8>()) {
            let _ = KvRoot::decode(&b);
            let mut good = sample(1).encode();
            good[at] ^= x;
            let _ = KvRoot::decode(&good);
            let _ = choose([&good, &b]);
        }
    }
}
