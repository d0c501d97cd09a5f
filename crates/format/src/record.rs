//! Version records: one version of one tuple, in new-to-old (N2O) chains.
//!
//! ```text
//! offset size field
//!      0    8 create_ts  u64 LE: id of the transaction that created the version
//!      8    8 prev       u64 LE: RecordId of the predecessor (older) version,
//!                        RecordId::NONE for the tuple's first version
//!     16    1 flags      bit 0: tombstone (the tuple was deleted); others zero
//!     17    1 reserved   zero
//!     18    2 data_len   u16 LE: bytes of tuple data that follow
//!     20    . data       the tuple (`schema.rs`), absent in tombstones
//! ```
//!
//! The header is 20 bytes: five 4-byte transfers on NVM, as in the neoDBMS
//! paper ("20B in five 32b transfers"). A version carries only its creator's
//! timestamp; it is invalidated by the existence of a successor (one-point
//! invalidation), so creating a version never writes an older one.

use crate::page::RecordId;
use crate::{FormatError, u64_at};

pub const HEADER_BYTES: usize = 20;
const TOMBSTONE: u8 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionHeader {
    pub create_ts: u64,
    pub prev: RecordId,
    pub tombstone: bool,
    pub data_len: u16,
}

impl VersionHeader {
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&self.create_ts.to_le_bytes());
        b[8..16].copy_from_slice(&self.prev.0.to_le_bytes());
        b[16] = if self.tombstone { TOMBSTONE } else { 0 };
        b[18..20].copy_from_slice(&self.data_len.to_le_bytes());
        b
    }

    /// Decodes a header; `record_len` (from the slot) bounds `data_len`.
    pub fn decode(b: &[u8], record_len: usize) -> Result<VersionHeader, FormatError> {
        const S: &str = "version record";
        if b.len() < HEADER_BYTES {
            return Err(FormatError::Truncated { structure: S, needed: HEADER_BYTES, found: b.len() });
        }
        if b[16] & !TOMBSTONE != 0 || b[17] != 0 {
            return Err(FormatError::InvalidField {
                structure: S,
                field: "flags",
                reason: format!("{:#04x} {:#04x}", b[16], b[17]),
            });
        }
        let h = VersionHeader {
            create_ts: u64_at(b, 0),
            prev: RecordId(u64_at(b, 8)),
            tombstone: b[16] & TOMBSTONE != 0,
            data_len: u16::from_le_bytes([b[18], b[19]]),
        };
        if HEADER_BYTES + usize::from(h.data_len) > record_len || (h.tombstone && h.data_len != 0) {
            return Err(FormatError::InvalidField {
                structure: S,
                field: "data_len",
                reason: format!("{} data bytes in a {record_len}-byte record (tombstone: {})", h.data_len, h.tombstone),
            });
        }
        Ok(h)
    }

    /// A whole record: header then data.
    pub fn record(&self, data: &[u8]) -> Vec<u8> {
        assert_eq!(usize::from(self.data_len), data.len());
        let mut r = self.encode().to_vec();
        r.extend_from_slice(data);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn roundtrip() {
        let h = VersionHeader { create_ts: 42, prev: RecordId::new(9, 3), tombstone: false, data_len: 5 };
        let r = h.record(&[1, 2, 3, 4, 5]);
        assert_eq!(VersionHeader::decode(&r, r.len()).unwrap(), h);
        assert!(VersionHeader::decode(&r, 24).is_err(), "data_len beyond the record");
        let t = VersionHeader { create_ts: 1, prev: RecordId::NONE, tombstone: true, data_len: 0 };
        assert_eq!(VersionHeader::decode(&t.encode(), 20).unwrap(), t);
    }

    proptest! {
        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..40), len in 0usize..100) {
            if let Ok(h) = VersionHeader::decode(&b, len) {
                prop_assert!(HEADER_BYTES + usize::from(h.data_len) <= len);
            }
        }
    }
}
