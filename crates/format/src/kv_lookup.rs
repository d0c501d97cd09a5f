//! The in-storage point lookup's call (`docs/format/kv_lookup.md`): the
//! parameters of program `kv.lookup` and the layout of its output range.
//!
//! **Parameters** (little-endian):
//!
//! ```text
//! offset size field
//!      0    4 magic           b"KVLK"
//!      4    4 flags           bit 0: read nodes through the mirror (CBM);
//!                             bit 1: a shadow table follows the keys
//!      8    8 root_pid        the tree's root
//!     16    8 file_first_ppn  pid p is physical page file_first_ppn + p
//!     24    8 file_pages      pids below this are pages of the file
//!     32    4 keys            n
//!     36    4 slot_bytes      bytes per key in the output (>= 8)
//!     40    4 shadow_len      bytes of the shadow table (0 without)
//!     44    4 reserved        zero
//!     48    … keys            per key: len u16, bytes
//!      …      shadow table    `format::shadow`
//! ```
//!
//! **Output** (memory range 0): `pes` stats blocks of 32 bytes (per PE:
//! retries, host reads, host read bytes, nodes read, u64 each), then `n`
//! slots of `slot_bytes`: status u32 (0 absent, 1 found), value_len u32,
//! the value (at most `slot_bytes - 8` bytes). Key `i` is looked up by PE
//! `i mod pes`.

use crate::FormatError;
use crate::bytes::{Reader, Writer};

pub const MAGIC: [u8; 4] = *b"KVLK";
pub const FLAG_MIRROR: u32 = 1;
pub const FLAG_SHADOW: u32 = 2;
pub const STATS_BYTES: usize = 32;
pub const SLOT_HEADER_BYTES: usize = 8;
const S: &str = "kv lookup call";

/// A lookup call's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call<'a> {
    pub mirror: bool,
    pub root_pid: u64,
    pub file_first_ppn: u64,
    pub file_pages: u64,
    pub slot_bytes: u32,
    pub keys: Vec<&'a [u8]>,
    pub shadow: Option<&'a [u8]>,
}

impl<'a> Call<'a> {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.bytes(&MAGIC);
        w.u32((u32::from(self.mirror) * FLAG_MIRROR) | (u32::from(self.shadow.is_some()) * FLAG_SHADOW));
        w.u64(self.root_pid);
        w.u64(self.file_first_ppn);
        w.u64(self.file_pages);
        w.u32(self.keys.len() as u32);
        w.u32(self.slot_bytes);
        w.u32(self.shadow.map_or(0, |s| s.len() as u32));
        w.u32(0);
        for k in &self.keys {
            w.u16(k.len() as u16);
            w.bytes(k);
        }
        if let Some(s) = self.shadow {
            w.bytes(s);
        }
        w.0
    }

    pub fn decode(b: &'a [u8]) -> Result<Call<'a>, FormatError> {
        let mut r = Reader::new(b, S);
        if r.take(4)? != MAGIC {
            return Err(FormatError::BadMagic { structure: S, found: b[..4].to_vec() });
        }
        let flags = r.u32()?;
        let (root_pid, file_first_ppn, file_pages) = (r.u64()?, r.u64()?, r.u64()?);
        let (n, slot_bytes, shadow_len, reserved) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        if flags & !(FLAG_MIRROR | FLAG_SHADOW) != 0 || reserved != 0 {
            return Err(invalid("flags", format!("flags {flags:#x}, reserved {reserved}")));
        }
        if (slot_bytes as usize) < SLOT_HEADER_BYTES {
            return Err(invalid("slot_bytes", format!("{slot_bytes}; at least {SLOT_HEADER_BYTES}")));
        }
        if (flags & FLAG_SHADOW == 0) != (shadow_len == 0) {
            return Err(invalid("shadow_len", format!("{shadow_len} bytes with flags {flags:#x}")));
        }
        let n = r.count(u64::from(n), 2)?;
        let keys = (0..n)
            .map(|_| {
                let len = r.u16()?;
                r.take(usize::from(len))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let shadow = if shadow_len > 0 { Some(r.take(shadow_len as usize)?) } else { None };
        r.finish()?;
        Ok(Call { mirror: flags & FLAG_MIRROR != 0, root_pid, file_first_ppn, file_pages, slot_bytes, keys, shadow })
    }

    /// Bytes the output range needs for `pes` PEs.
    pub fn output_bytes(&self, pes: u32) -> u64 {
        pes as u64 * STATS_BYTES as u64 + self.keys.len() as u64 * u64::from(self.slot_bytes)
    }
}

fn invalid(field: &'static str, reason: String) -> FormatError {
    FormatError::InvalidField { structure: S, field, reason }
}

/// One PE's statistics in the output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeStats {
    pub retries: u64,
    pub host_reads: u64,
    pub host_read_bytes: u64,
    pub nodes: u64,
}

impl PeStats {
    pub fn encode(&self) -> [u8; STATS_BYTES] {
        let mut out = [0u8; STATS_BYTES];
        for (i, v) in [self.retries, self.host_reads, self.host_read_bytes, self.nodes].iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    pub fn decode(b: &[u8]) -> Result<PeStats, FormatError> {
        let mut r = Reader::new(b, S);
        Ok(PeStats { retries: r.u64()?, host_reads: r.u64()?, host_read_bytes: r.u64()?, nodes: r.u64()? })
    }
}

/// A result slot: `Some(value)` if found.
pub fn encode_slot(value: Option<&[u8]>) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(SLOT_HEADER_BYTES + value.map_or(0, <[u8]>::len)));
    w.u32(u32::from(value.is_some()));
    w.u32(value.map_or(0, |v| v.len() as u32));
    w.bytes(value.unwrap_or(&[]));
    w.0
}

pub fn decode_slot(b: &[u8]) -> Result<Option<&[u8]>, FormatError> {
    let mut r = Reader::new(b, S);
    let (status, len) = (r.u32()?, r.u32()?);
    match status {
        0 => Ok(None),
        1 => Ok(Some(r.take(len as usize)?)),
        x => Err(invalid("status", format!("{x}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_call_roundtrips() {
        let shadow = crate::shadow::encode(&[(b"k".to_vec(), None)]);
        let call = Call {
            mirror: true,
            root_pid: 0,
            file_first_ppn: 9,
            file_pages: 100,
            slot_bytes: 64,
            keys: vec![b"abc", b""],
            shadow: Some(&shadow),
        };
        let bytes = call.encode();
        assert_eq!(&bytes[..8], b"KVLK\x03\x00\x00\x00");
        assert_eq!(Call::decode(&bytes).unwrap(), call);
        assert_eq!(decode_slot(&encode_slot(Some(b"v"))).unwrap(), Some(&b"v"[..]));
    }

    /// The example in docs/format/kv_lookup.md.
    #[test]
    fn the_documented_example() {
        let call = Call {
            mirror: true,
            root_pid: 0,
            file_first_ppn: 64,
            file_pages: 1024,
            slot_bytes: 64,
            keys: vec![b"ab"],
            shadow: None,
        };
        let hex: Vec<String> = call.encode().iter().map(|b| format!("{b:02x}")).collect();
        let want = "4b 56 4c 4b 01 00 00 00 00 00 00 00 00 00 00 00 40 00 00 00 00 00 00 00 \
                    00 04 00 00 00 00 00 00 01 00 00 00 40 00 00 00 00 00 00 00 00 00 00 00 02 00 61 62";
        assert_eq!(hex.join(" "), want.split_whitespace().collect::<Vec<_>>().join(" "));
    }

    proptest! {
        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..120), at in 0usize..120, x in any::<u8>()) {
            let _ = Call::decode(&b);
            let _ = decode_slot(&b);
            let mut good = Call { mirror: false, root_pid: 1, file_first_ppn: 2, file_pages: 3, slot_bytes: 8, keys: vec![b"xy"], shadow: None }.encode();
            let i = at % good.len();
            good[i] ^= x;
            let _ = Call::decode(&good);
        }
    }
}
