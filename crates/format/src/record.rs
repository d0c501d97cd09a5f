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

use crate::FormatError;
use crate::page::RecordId;

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
        debug_assert!(!self.tombstone || self.data_len == 0, "a tombstone has no data");
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&self.create_ts.to_le_bytes());
        b[8..16].copy_from_slice(&self.prev.0.to_le_bytes());
        b[16] = if self.tombstone { TOMBSTONE } else { 0 };
        b[18..20].copy_from_slice(&self.data_len.to_le_bytes());
        b
    }

    /// Decodes a header; `record_len` (from the slot) bounds `data_len`.
    pub fn decode(b: &[u8], record_len: usize) -> Result<VersionHeader, FormatError> {
        if b.len() < HEADER_BYTES {
            return Err(FormatError::Truncated { structure: "version record", needed: HEADER_BYTES, found: b.len() });
        }
        let w = std::array::from_fn(|i| u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes")));
        VersionHeader::from_words(&w, record_len)
    }

    /// Decodes a header from its five little-endian 32-bit words (how a PE
    /// reads it from NVM); the same checks as [`VersionHeader::decode`].
    #[inline]
    pub fn from_words(w: &[u32; HEADER_BYTES / 4], record_len: usize) -> Result<VersionHeader, FormatError> {
        let (flags, data_len) = (w[4] & 0xffff, (w[4] >> 16) as u16);
        let tombstone = flags == u32::from(TOMBSTONE);
        if flags & !u32::from(TOMBSTONE) != 0
            || HEADER_BYTES + usize::from(data_len) > record_len
            || (tombstone && data_len != 0)
        {
            return Err(header_error(flags, data_len, record_len));
        }
        Ok(VersionHeader {
            create_ts: u64::from(w[0]) | u64::from(w[1]) << 32,
            prev: RecordId(u64::from(w[2]) | u64::from(w[3]) << 32),
            tombstone,
            data_len,
        })
    }

    /// A whole record: header then data.
    pub fn record(&self, data: &[u8]) -> Vec<u8> {
        assert_eq!(usize::from(self.data_len), data.len());
        let mut r = self.encode().to_vec();
        r.extend_from_slice(data);
        r
    }
}

#[cold]
fn header_error(flags: u32, data_len: u16, record_len: usize) -> FormatError {
    const S: &str = "version record";
    if flags & !u32::from(TOMBSTONE) != 0 {
        return FormatError::InvalidField {
            structure: S,
            field: "flags",
            reason: format!("{:#04x} {:#04x}", flags & 0xff, flags >> 8),
        };
    }
    FormatError::InvalidField {
        structure: S,
        field: "data_len",
        reason: format!(
            "{data_len} data bytes in a {record_len}-byte record (tombstone: {})",
            flags == u32::from(TOMBSTONE)
        ),
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
