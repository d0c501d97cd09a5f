//! The device image superblock: the first 4096 bytes of `device.img`.
//!
//! The image file is the emulated device's medium. It starts with one
//! superblock that records the geometry the medium was created with, so that
//! a later run can reopen it and refuse to misread it:
//!
//! ```text
//! offset size field
//!      0    8 magic              b"NDPDBDEV"
//!      8    4 format_version     u32 LE, currently 1
//!     12    4 header_bytes       u32 LE, 4096: medium data starts here
//!     16    1 medium_kind        1 = NVM (byte-addressable), 2 = flash
//!     17    3 reserved           zero
//!     20    4 page_bytes         u32 LE, native page size, power of two, 512..=32768
//!     24    8 capacity_bytes     u64 LE, a positive multiple of page_bytes
//!     32    4 channels           u32 LE, >= 1 (informational; timing comes from the profile)
//!     36    4 chips_per_channel  u32 LE, >= 1 (informational)
//!     40    8 created_unix_s     u64 LE
//!     48   64 profile_name       UTF-8, zero padded (informational)
//!    112 3980 reserved           zero
//!   4092    4 crc32              CRC-32 (IEEE) of bytes 0..4092
//! ```
//!
//! The file is exactly `header_bytes + capacity_bytes` long. The medium kind
//! and page size must match the profile a later run opens it with; the
//! capacity is the image's own (it may be smaller than the profiled device's);
//! timing parameters may differ, which is how users change a device's speed
//! without reloading data.

use crate::{FormatError, u32_at, u64_at};

pub const MAGIC: [u8; 8] = *b"NDPDBDEV";
pub const FORMAT_VERSION: u32 = 1;
pub const HEADER_BYTES: usize = 4096;
pub const PROFILE_NAME_BYTES: usize = 64;
const CRC_AT: usize = HEADER_BYTES - 4;
const STRUCTURE: &str = "device image superblock";

/// Page sizes a medium may use; the limits are repeated in `docs/format/image.md`.
pub const PAGE_BYTES_MIN: u32 = 512;
/// 32 KiB: heap pages address records with u16 offsets (`page.rs`).
pub const PAGE_BYTES_MAX: u32 = 32768;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediumKind {
    Nvm,
    Flash,
}

impl MediumKind {
    fn code(self) -> u8 {
        match self {
            MediumKind::Nvm => 1,
            MediumKind::Flash => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            MediumKind::Nvm => "nvm",
            MediumKind::Flash => "flash",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superblock {
    pub medium_kind: MediumKind,
    pub page_bytes: u32,
    pub capacity_bytes: u64,
    pub channels: u32,
    pub chips_per_channel: u32,
    pub created_unix_s: u64,
    pub profile_name: String,
}

impl Superblock {
    /// Checks the invariants `decode` checks, so nothing invalid is written.
    pub fn validate(&self) -> Result<(), FormatError> {
        let invalid = |field, reason: String| FormatError::InvalidField { structure: STRUCTURE, field, reason };
        if !self.page_bytes.is_power_of_two() || !(PAGE_BYTES_MIN..=PAGE_BYTES_MAX).contains(&self.page_bytes) {
            return Err(invalid(
                "page_bytes",
                format!("{} is not a power of two in {PAGE_BYTES_MIN}..={PAGE_BYTES_MAX}", self.page_bytes),
            ));
        }
        if self.capacity_bytes == 0 || !self.capacity_bytes.is_multiple_of(u64::from(self.page_bytes)) {
            return Err(invalid(
                "capacity_bytes",
                format!("{} is not a positive multiple of page_bytes {}", self.capacity_bytes, self.page_bytes),
            ));
        }
        if self.channels == 0 {
            return Err(invalid("channels", "must be at least 1".into()));
        }
        if self.chips_per_channel == 0 {
            return Err(invalid("chips_per_channel", "must be at least 1".into()));
        }
        if self.profile_name.len() > PROFILE_NAME_BYTES || self.profile_name.contains('\0') {
            return Err(invalid(
                "profile_name",
                format!("must be at most {PROFILE_NAME_BYTES} bytes of UTF-8 without NUL"),
            ));
        }
        Ok(())
    }

    pub fn encode(&self) -> Result<[u8; HEADER_BYTES], FormatError> {
        self.validate()?;
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(HEADER_BYTES as u32).to_le_bytes());
        b[16] = self.medium_kind.code();
        b[20..24].copy_from_slice(&self.page_bytes.to_le_bytes());
        b[24..32].copy_from_slice(&self.capacity_bytes.to_le_bytes());
        b[32..36].copy_from_slice(&self.channels.to_le_bytes());
        b[36..40].copy_from_slice(&self.chips_per_channel.to_le_bytes());
        b[40..48].copy_from_slice(&self.created_unix_s.to_le_bytes());
        b[48..48 + self.profile_name.len()].copy_from_slice(self.profile_name.as_bytes());
        let crc = crc32fast::hash(&b[..CRC_AT]);
        b[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        Ok(b)
    }

    /// Decodes and checks a superblock. Order of checks: length, magic,
    /// version (so an image of another version says so even if its layout
    /// differs), checksum, then each field.
    pub fn decode(b: &[u8]) -> Result<Superblock, FormatError> {
        if b.len() < HEADER_BYTES {
            return Err(FormatError::Truncated { structure: STRUCTURE, needed: HEADER_BYTES, found: b.len() });
        }
        if b[0..8] != MAGIC {
            return Err(FormatError::BadMagic { structure: STRUCTURE, found: b[0..8].to_vec() });
        }
        let version = u32_at(b, 8);
        if version != FORMAT_VERSION {
            return Err(FormatError::UnsupportedVersion {
                structure: STRUCTURE,
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let stored = u32_at(b, CRC_AT);
        let computed = crc32fast::hash(&b[..CRC_AT]);
        if stored != computed {
            return Err(FormatError::Checksum { structure: STRUCTURE, stored, computed });
        }
        let invalid = |field, reason: String| FormatError::InvalidField { structure: STRUCTURE, field, reason };
        let header_bytes = u32_at(b, 12);
        if header_bytes as usize != HEADER_BYTES {
            return Err(invalid("header_bytes", format!("{header_bytes}, expected {HEADER_BYTES}")));
        }
        let medium_kind = match b[16] {
            1 => MediumKind::Nvm,
            2 => MediumKind::Flash,
            other => return Err(invalid("medium_kind", format!("unknown code {other}"))),
        };
        if b[17..20] != [0, 0, 0] {
            return Err(invalid("reserved", "bytes 17..20 must be zero".into()));
        }
        let name_field = &b[48..48 + PROFILE_NAME_BYTES];
        let name_len = name_field.iter().position(|&c| c == 0).unwrap_or(PROFILE_NAME_BYTES);
        if name_field[name_len..].iter().any(|&c| c != 0) {
            return Err(invalid("profile_name", "bytes after the first NUL must be zero".into()));
        }
        let profile_name = std::str::from_utf8(&name_field[..name_len])
            .map_err(|e| invalid("profile_name", format!("not UTF-8: {e}")))?
            .to_owned();
        if b[48 + PROFILE_NAME_BYTES..CRC_AT].iter().any(|&c| c != 0) {
            return Err(invalid("reserved", "bytes 112..4092 must be zero".into()));
        }
        let sb = Superblock {
            medium_kind,
            page_bytes: u32_at(b, 20),
            capacity_bytes: u64_at(b, 24),
            channels: u32_at(b, 32),
            chips_per_channel: u32_at(b, 36),
            created_unix_s: u64_at(b, 40),
            profile_name,
        };
        sb.validate()?;
        Ok(sb)
    }

    /// Length the image file must have.
    pub fn file_bytes(&self) -> u64 {
        HEADER_BYTES as u64 + self.capacity_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Superblock {
        Superblock {
            medium_kind: MediumKind::Flash,
            page_bytes: 8192,
            capacity_bytes: 8192 * 1000,
            channels: 8,
            chips_per_channel: 8,
            created_unix_s: 1_700_000_000,
            profile_name: "cosmos-plus".into(),
        }
    }

    #[test]
    fn roundtrip() {
        let sb = sample();
        assert_eq!(Superblock::decode(&sb.encode().unwrap()).unwrap(), sb);
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        let good = sample().encode().unwrap();
        for bit in (0..HEADER_BYTES * 8).step_by(7) {
            let mut b = good;
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(Superblock::decode(&b).is_err(), "bit {bit} flip accepted");
        }
    }

    #[test]
    fn other_version_names_versions() {
        let mut b = sample().encode().unwrap();
        b[8..12].copy_from_slice(&2u32.to_le_bytes());
        let err = Superblock::decode(&b).unwrap_err();
        assert_eq!(err, FormatError::UnsupportedVersion { structure: STRUCTURE, found: 2, supported: 1 });
        assert!(err.to_string().contains("version 2"));
    }

    #[test]
    fn invalid_geometry_is_not_encoded() {
        let mut sb = sample();
        sb.page_bytes = 3000;
        assert!(matches!(sb.encode(), Err(FormatError::InvalidField { field: "page_bytes", .. })));
        let mut sb = sample();
        sb.capacity_bytes = 8191;
        assert!(matches!(sb.encode(), Err(FormatError::InvalidField { field: "capacity_bytes", .. })));
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..5000)) {
            let _ = Superblock::decode(&bytes);
        }

        #[test]
        fn decode_garbage_with_valid_magic_and_crc(mut body in proptest::collection::vec(any::<u8>(), HEADER_BYTES)) {
            body[0..8].copy_from_slice(&MAGIC);
            body[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
            let crc = crc32fast::hash(&body[..CRC_AT]);
            body[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
            if let Ok(sb) = Superblock::decode(&body) {
                prop_assert!(sb.validate().is_ok());
            }
        }

        #[test]
        fn roundtrip_any_valid(kind in prop_oneof![Just(MediumKind::Nvm), Just(MediumKind::Flash)],
                               page_shift in 9u32..=15, pages in 1u64..1_000_000,
                               channels in 1u32..64, chips in 1u32..64, t in any::<u64>(),
                               name in "[a-z0-9-]{0,64}") {
            let sb = Superblock { medium_kind: kind, page_bytes: 1 << page_shift,
                capacity_bytes: pages << page_shift, channels, chips_per_channel: chips,
                created_unix_s: t, profile_name: name };
            prop_assert_eq!(Superblock::decode(&sb.encode().unwrap()).unwrap(), sb);
        }
    }
}
