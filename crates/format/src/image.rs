//! The device image: its superblock (the first 4096 bytes of `device.img`),
//! where the medium, its check codes and the sector-write journal lie in the
//! file, the check code itself, and the journal slot.
//!
//! The image file is the emulated device's medium. It starts with one
//! superblock that records the geometry the medium was created with, so that
//! a later run can reopen it and refuse to misread it:
//!
//! ```text
//! offset size field
//!      0    8 magic              b"NDPDBDEV"
//!      8    4 format_version     u32 LE, currently 2
//!     12    4 header_bytes       u32 LE, 4096: medium data starts here
//!     16    1 medium_kind        1 = NVM (byte-addressable), 2 = flash
//!     17    3 reserved           zero
//!     20    4 page_bytes         u32 LE, native page size, power of two, 512..=32768
//!     24    8 capacity_bytes     u64 LE, a positive multiple of page_bytes, at most 2^56
//!     32    4 channels           u32 LE, >= 1 (informational; timing comes from the profile)
//!     36    4 chips_per_channel  u32 LE, >= 1 (informational)
//!     40    8 created_unix_s     u64 LE
//!     48   64 profile_name       UTF-8, zero padded (informational)
//!    112    4 sector_bytes       u32 LE, 512: the unit a check code covers
//!    116    4 check_code         u32 LE, 1 = CRC-32 (IEEE) of sector number (u64 LE) ++ sector bytes
//!    120    4 journal_slots      u32 LE, 1..=4096 slots of the sector-write journal
//!    124    4 journal_slot_bytes u32 LE, 1024
//!    128 3964 reserved           zero
//!   4092    4 crc32              CRC-32 (IEEE) of bytes 0..4092
//! ```
//!
//! After the superblock come three areas (`Superblock::codes_offset`,
//! `journal_offset`, `file_bytes`):
//!
//! ```text
//! 4096                          the medium: capacity_bytes, medium address a at 4096 + a
//! 4096 + capacity_bytes         check codes: one u32 LE per 512-byte sector, in sector order
//! round_up(.., 4096)            journal: journal_slots slots of 1024 bytes
//! ```
//!
//! Every sector carries the code [`sector_code`] of its number and bytes, so
//! a damaged sector, and a sector written to the wrong place, fail their
//! check. A journal slot holds one sector write in flight (layout at
//! [`JournalSlot`]): the device writes the slot, then the sector and its
//! code, then clears the slot, so that a process killed in the middle of a
//! sector leaves a slot that the next open finishes (`docs/format/image.md`).
//!
//! The medium kind and page size must match the profile a later run opens the
//! image with; the capacity is the image's own (it may be smaller than the
//! profiled device's); timing parameters may differ, which is how users change
//! a device's speed without reloading data.

use crate::{FormatError, u32_at, u64_at};

pub const MAGIC: [u8; 8] = *b"NDPDBDEV";
/// Version 2 added the check codes and the journal; version 1 images have
/// neither and cannot be verified.
pub const FORMAT_VERSION: u32 = 2;
pub const HEADER_BYTES: usize = 4096;
pub const PROFILE_NAME_BYTES: usize = 64;
const CRC_AT: usize = HEADER_BYTES - 4;
const RESERVED_AT: usize = 128;
const STRUCTURE: &str = "device image superblock";

/// Page sizes a medium may use; the limits are repeated in `docs/format/image.md`.
pub const PAGE_BYTES_MIN: u32 = 512;
/// 32 KiB: heap pages address records with u16 offsets (`page.rs`).
pub const PAGE_BYTES_MAX: u32 = 32768;
/// 64 PiB: keeps every offset in the file, and the file's length, far from
/// overflowing a u64 or an `off_t`.
pub const CAPACITY_BYTES_MAX: u64 = 1 << 56;

/// The unit a check code covers (and the atomic write unit), as NVMe's
/// logical block. `PAGE_BYTES_MIN` equals it, so pages are whole sectors.
pub const SECTOR_BYTES: u32 = 512;
/// Bytes of one check code in the code area.
pub const CODE_BYTES: u64 = 4;
/// `check_code` 1: [`sector_code`].
pub const CHECK_CODE_CRC32: u32 = 1;
/// Bytes of one journal slot.
pub const JOURNAL_SLOT_BYTES: u32 = 1024;
/// Journal slots a new image gets: at most this many sector writes are in
/// flight at once (writers wait for a free slot).
pub const JOURNAL_SLOTS: u32 = 64;
/// Journal slots an image may have.
pub const JOURNAL_SLOTS_MAX: u32 = 4096;
/// Journal areas start on this file offset boundary.
const JOURNAL_ALIGN: u64 = 4096;

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
    pub journal_slots: u32,
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
        if self.capacity_bytes == 0
            || !self.capacity_bytes.is_multiple_of(u64::from(self.page_bytes))
            || self.capacity_bytes > CAPACITY_BYTES_MAX
        {
            return Err(invalid(
                "capacity_bytes",
                format!(
                    "{} is not a positive multiple of page_bytes {} of at most {CAPACITY_BYTES_MAX}",
                    self.capacity_bytes, self.page_bytes
                ),
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
        if !(1..=JOURNAL_SLOTS_MAX).contains(&self.journal_slots) {
            return Err(invalid("journal_slots", format!("{} is not in 1..={JOURNAL_SLOTS_MAX}", self.journal_slots)));
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
        b[112..116].copy_from_slice(&SECTOR_BYTES.to_le_bytes());
        b[116..120].copy_from_slice(&CHECK_CODE_CRC32.to_le_bytes());
        b[120..124].copy_from_slice(&self.journal_slots.to_le_bytes());
        b[124..128].copy_from_slice(&JOURNAL_SLOT_BYTES.to_le_bytes());
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
        let profile_name = decode_name(&b[48..48 + PROFILE_NAME_BYTES])?;
        decode_media_fields(b)?;
        if b[RESERVED_AT..CRC_AT].iter().any(|&c| c != 0) {
            return Err(invalid("reserved", format!("bytes {RESERVED_AT}..{CRC_AT} must be zero")));
        }
        let sb = Superblock {
            medium_kind,
            page_bytes: u32_at(b, 20),
            capacity_bytes: u64_at(b, 24),
            channels: u32_at(b, 32),
            chips_per_channel: u32_at(b, 36),
            created_unix_s: u64_at(b, 40),
            profile_name,
            journal_slots: u32_at(b, 120),
        };
        sb.validate()?;
        Ok(sb)
    }

    /// Sectors on the medium (each with one check code).
    pub fn sectors(&self) -> u64 {
        self.capacity_bytes / u64::from(SECTOR_BYTES)
    }

    /// File offset of sector 0's check code.
    pub fn codes_offset(&self) -> u64 {
        HEADER_BYTES as u64 + self.capacity_bytes
    }

    /// File offset of journal slot 0.
    pub fn journal_offset(&self) -> u64 {
        (self.codes_offset() + CODE_BYTES * self.sectors()).next_multiple_of(JOURNAL_ALIGN)
    }

    /// Length the image file must have.
    pub fn file_bytes(&self) -> u64 {
        self.journal_offset() + u64::from(self.journal_slots) * u64::from(JOURNAL_SLOT_BYTES)
    }
}

/// The profile name field: UTF-8, then zeros.
fn decode_name(field: &[u8]) -> Result<String, FormatError> {
    let invalid = |reason: String| FormatError::InvalidField { structure: STRUCTURE, field: "profile_name", reason };
    let len = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    if field[len..].iter().any(|&c| c != 0) {
        return Err(invalid("bytes after the first NUL must be zero".into()));
    }
    Ok(std::str::from_utf8(&field[..len]).map_err(|e| invalid(format!("not UTF-8: {e}")))?.to_owned())
}

/// The fields at 112..128 that this version fixes: sector size, check code
/// and slot size. (`journal_slots` is checked by `validate`.)
fn decode_media_fields(b: &[u8]) -> Result<(), FormatError> {
    let fixed = [
        ("sector_bytes", 112, SECTOR_BYTES),
        ("check_code", 116, CHECK_CODE_CRC32),
        ("journal_slot_bytes", 124, JOURNAL_SLOT_BYTES),
    ];
    for (field, at, want) in fixed {
        let found = u32_at(b, at);
        if found != want {
            return Err(FormatError::InvalidField {
                structure: STRUCTURE,
                field,
                reason: format!("{found}; format version {FORMAT_VERSION} has {want}"),
            });
        }
    }
    Ok(())
}

/// The check code of sector number `sector` (medium address / 512) holding
/// `data`: CRC-32 (IEEE) of the sector number as a u64 LE, then the 512
/// bytes. The number makes a sector written to the wrong place fail too.
pub fn sector_code(sector: u64, data: &[u8; SECTOR_BYTES as usize]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&sector.to_le_bytes());
    h.update(data);
    h.finalize()
}

/// The check codes of all-zero sectors (a new image's), fast: a CRC over a
/// message of fixed length is affine in the message's bits, so
/// `sector_code(s, zeros)` is `sector_code(0, zeros)` XOR one table entry
/// per byte of `s`. Equal to [`sector_code`] (tested); eight lookups
/// instead of a CRC of 520 bytes per sector.
pub struct ZeroSectorCodes {
    zero: u32,
    /// `table[j][v]`: `sector_code(v << 8j, zeros) ^ zero`.
    table: Box<[[u32; 256]; 8]>,
}

impl ZeroSectorCodes {
    pub fn new() -> ZeroSectorCodes {
        let zeros = [0u8; SECTOR_BYTES as usize];
        let zero = sector_code(0, &zeros);
        let mut table = Box::new([[0u32; 256]; 8]);
        for (j, row) in table.iter_mut().enumerate() {
            for (v, entry) in row.iter_mut().enumerate() {
                *entry = sector_code((v as u64) << (8 * j), &zeros) ^ zero;
            }
        }
        ZeroSectorCodes { zero, table }
    }

    /// `sector_code(sector, &[0; 512])`.
    pub fn code(&self, sector: u64) -> u32 {
        let bytes = sector.to_le_bytes();
        self.table.iter().zip(bytes).fold(self.zero, |c, (row, b)| c ^ row[usize::from(b)])
    }
}

impl Default for ZeroSectorCodes {
    fn default() -> Self {
        ZeroSectorCodes::new()
    }
}

/// One sector write in flight, as it sits in a journal slot:
///
/// ```text
/// offset size field
///      0  512 data    the sector's new bytes
///    512    8 sector  u64 LE, the sector number it goes to
///    520    4 code    u32 LE, sector_code(sector, data)
///    524    4 state   u32 LE, JOURNAL_PENDING while the write is to be finished; else the slot is empty
///    528  496 unused  (never read)
/// ```
///
/// The device writes `data`, `sector` and `code` first and `state` last, so
/// a pending slot is complete unless the journal itself was damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalSlot {
    pub sector: u64,
    pub code: u32,
    pub data: [u8; SECTOR_BYTES as usize],
}

/// Byte of the slot's `state` word.
pub const SLOT_STATE_AT: usize = 524;
/// `state` of a slot whose write is to be finished: "JPND".
pub const JOURNAL_PENDING: u32 = u32::from_le_bytes(*b"JPND");

impl JournalSlot {
    /// A slot for writing `data` to `sector`.
    pub fn new(sector: u64, data: [u8; SECTOR_BYTES as usize]) -> JournalSlot {
        JournalSlot { sector, code: sector_code(sector, &data), data }
    }

    /// Bytes 0..524 (everything but `state`).
    pub fn encode_body(&self) -> [u8; SLOT_STATE_AT] {
        let mut b = [0u8; SLOT_STATE_AT];
        b[..512].copy_from_slice(&self.data);
        b[512..520].copy_from_slice(&self.sector.to_le_bytes());
        b[520..524].copy_from_slice(&self.code.to_le_bytes());
        b
    }

    /// The write a slot holds: `None` if the slot is empty; an error if it is
    /// pending but cannot be finished (truncated, its sector beyond the
    /// medium's `sectors`, or its code does not match its bytes).
    pub fn decode(b: &[u8], sectors: u64) -> Result<Option<JournalSlot>, FormatError> {
        const S: &str = "journal slot";
        if b.len() < SLOT_STATE_AT + 4 {
            return Err(FormatError::Truncated { structure: S, needed: SLOT_STATE_AT + 4, found: b.len() });
        }
        if u32_at(b, SLOT_STATE_AT) != JOURNAL_PENDING {
            return Ok(None);
        }
        let sector = u64_at(b, 512);
        if sector >= sectors {
            return Err(FormatError::InvalidField {
                structure: S,
                field: "sector",
                reason: format!("{sector} is beyond the medium's {sectors} sectors"),
            });
        }
        let data: [u8; SECTOR_BYTES as usize] = b[..512].try_into().expect("length checked");
        let (stored, computed) = (u32_at(b, 520), sector_code(sector, &data));
        if stored != computed {
            return Err(FormatError::Checksum { structure: S, stored, computed });
        }
        Ok(Some(JournalSlot { sector, code: stored, data }))
    }
}

/// Recomputes the check codes of the sectors that medium bytes
/// `addr..addr + len` touch, in the bytes of a whole image file, as if the
/// device had written them. For tests and tools that change an image's data
/// on purpose and want the change to pass the device's check (to damage
/// what the host wrote rather than the medium).
pub fn reseal(image: &mut [u8], addr: u64, len: u64) -> Result<(), FormatError> {
    let sb = Superblock::decode(image)?;
    let invalid = |reason: String| FormatError::InvalidField { structure: "device image", field: "length", reason };
    if image.len() as u64 != sb.file_bytes() {
        return Err(invalid(format!("{} bytes, the superblock says {}", image.len(), sb.file_bytes())));
    }
    if addr.checked_add(len).is_none_or(|end| end > sb.capacity_bytes) {
        return Err(invalid(format!("medium bytes {addr}+{len} are beyond the capacity {}", sb.capacity_bytes)));
    }
    let sector = u64::from(SECTOR_BYTES);
    let end = (addr + len).div_ceil(sector);
    for s in addr / sector..end {
        let at = (HEADER_BYTES as u64 + s * sector) as usize;
        let data: [u8; SECTOR_BYTES as usize] = image[at..at + SECTOR_BYTES as usize].try_into().expect("in range");
        let code_at = (sb.codes_offset() + CODE_BYTES * s) as usize;
        image[code_at..code_at + 4].copy_from_slice(&sector_code(s, &data).to_le_bytes());
    }
    Ok(())
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
            journal_slots: JOURNAL_SLOTS,
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
    fn other_versions_name_versions() {
        for found in [1u32, 3] {
            let mut b = sample().encode().unwrap();
            b[8..12].copy_from_slice(&found.to_le_bytes());
            let err = Superblock::decode(&b).unwrap_err();
            assert_eq!(err, FormatError::UnsupportedVersion { structure: STRUCTURE, found, supported: 2 });
            assert!(err.to_string().contains(&format!("version {found}")));
        }
    }

    #[test]
    fn invalid_geometry_is_not_encoded() {
        let mut sb = sample();
        sb.page_bytes = 3000;
        assert!(matches!(sb.encode(), Err(FormatError::InvalidField { field: "page_bytes", .. })));
        let mut sb = sample();
        sb.capacity_bytes = 8191;
        assert!(matches!(sb.encode(), Err(FormatError::InvalidField { field: "capacity_bytes", .. })));
        let mut sb = sample();
        sb.capacity_bytes = CAPACITY_BYTES_MAX + 8192;
        assert!(matches!(sb.encode(), Err(FormatError::InvalidField { field: "capacity_bytes", .. })));
        let mut sb = sample();
        sb.journal_slots = 0;
        assert!(matches!(sb.encode(), Err(FormatError::InvalidField { field: "journal_slots", .. })));
    }

    #[test]
    fn fixed_media_fields_are_checked() {
        for (at, field) in [(112, "sector_bytes"), (116, "check_code"), (124, "journal_slot_bytes")] {
            let mut b = sample().encode().unwrap();
            b[at] ^= 1;
            let crc = crc32fast::hash(&b[..CRC_AT]);
            b[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
            let err = Superblock::decode(&b).unwrap_err();
            assert!(matches!(err, FormatError::InvalidField { field: f, .. } if f == field), "{err}");
        }
    }

    #[test]
    fn areas_follow_the_medium() {
        let sb = sample();
        assert_eq!(sb.sectors(), 8192 * 1000 / 512);
        assert_eq!(sb.codes_offset(), 4096 + 8192 * 1000);
        // 16000 codes of 4 bytes end at 4096 + 8192000 + 64000 = 8260096; the next multiple of 4096 is 8261632.
        assert_eq!(sb.journal_offset(), 8_261_632);
        assert_eq!(sb.file_bytes(), 8_261_632 + 64 * 1024);
        let one_page = Superblock { page_bytes: 512, capacity_bytes: 512, ..sample() };
        assert_eq!(one_page.journal_offset(), 8192, "4096 + 512 + 4 rounded up to 4096");
    }

    #[test]
    fn sector_codes_cover_the_sector_number() {
        let data = [7u8; 512];
        assert_ne!(sector_code(1, &data), sector_code(2, &data));
        let mut other = data;
        other[511] ^= 1;
        assert_ne!(sector_code(1, &data), sector_code(1, &other));
    }

    #[test]
    fn zero_sector_codes_are_sector_codes() {
        let fast = ZeroSectorCodes::new();
        let zeros = [0u8; 512];
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..2000u64 {
            s = s.rotate_left(17) ^ i.wrapping_mul(0x2545_f491_4f6c_dd1d);
            for sector in [i, s, s >> 20, u64::MAX - i] {
                assert_eq!(fast.code(sector), sector_code(sector, &zeros), "sector {sector}");
            }
        }
    }

    #[test]
    fn journal_slots_roundtrip_and_refuse_damage() {
        let slot = JournalSlot::new(5, [3u8; 512]);
        let mut b = vec![0u8; JOURNAL_SLOT_BYTES as usize];
        b[..SLOT_STATE_AT].copy_from_slice(&slot.encode_body());
        assert_eq!(JournalSlot::decode(&b, 10).unwrap(), None, "not pending: empty");
        b[SLOT_STATE_AT..SLOT_STATE_AT + 4].copy_from_slice(&JOURNAL_PENDING.to_le_bytes());
        assert_eq!(JournalSlot::decode(&b, 10).unwrap(), Some(slot));
        assert!(matches!(JournalSlot::decode(&b, 5), Err(FormatError::InvalidField { field: "sector", .. })));
        b[100] ^= 1;
        assert!(matches!(JournalSlot::decode(&b, 10), Err(FormatError::Checksum { .. })));
        assert!(matches!(JournalSlot::decode(&b[..100], 10), Err(FormatError::Truncated { .. })));
    }

    #[test]
    fn reseal_recomputes_the_touched_codes() {
        let sb = Superblock { medium_kind: MediumKind::Nvm, capacity_bytes: 8192 * 2, ..sample() };
        let mut image = vec![0u8; sb.file_bytes() as usize];
        image[..HEADER_BYTES].copy_from_slice(&sb.encode().unwrap());
        image[HEADER_BYTES + 1000] = 9;
        reseal(&mut image, 1000, 1).unwrap();
        let code = |image: &[u8], s: u64| {
            let at = (sb.codes_offset() + 4 * s) as usize;
            u32::from_le_bytes(image[at..at + 4].try_into().unwrap())
        };
        let mut sector1 = [0u8; 512];
        sector1[1000 - 512] = 9;
        assert_eq!(code(&image, 1), sector_code(1, &sector1));
        assert_eq!(code(&image, 0), 0, "untouched sectors keep their codes");
        assert!(reseal(&mut image, 8192 * 2 - 1, 2).is_err());
        assert!(reseal(&mut image[..100], 0, 1).is_err());
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

        /// A valid superblock with any value in the fields version 2 added
        /// (and any reserved byte) decodes to a valid superblock or fails
        /// with an error naming the field; it never panics.
        #[test]
        fn decode_any_media_fields(at in 112usize..CRC_AT, value in any::<u32>(), slots in any::<u32>()) {
            let mut b = sample().encode().unwrap();
            b[120..124].copy_from_slice(&slots.to_le_bytes());
            let at = at & !3;
            b[at..at + 4].copy_from_slice(&value.to_le_bytes());
            let crc = crc32fast::hash(&b[..CRC_AT]);
            b[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
            match Superblock::decode(&b) {
                Ok(sb) => {
                    prop_assert!(sb.validate().is_ok());
                    prop_assert!(sb.file_bytes() > sb.codes_offset());
                }
                Err(e) => prop_assert!(matches!(e, FormatError::InvalidField { .. }), "{e}"),
            }
        }

        #[test]
        fn journal_slot_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..1100),
                                            pending in any::<bool>(), sectors in any::<u64>()) {
            let mut bytes = bytes;
            if pending && bytes.len() >= SLOT_STATE_AT + 4 {
                bytes[SLOT_STATE_AT..SLOT_STATE_AT + 4].copy_from_slice(&JOURNAL_PENDING.to_le_bytes());
            }
            if let Ok(Some(slot)) = JournalSlot::decode(&bytes, sectors) {
                prop_assert!(slot.sector < sectors);
                prop_assert_eq!(slot.code, sector_code(slot.sector, &slot.data));
            }
        }

        #[test]
        fn roundtrip_any_valid(kind in prop_oneof![Just(MediumKind::Nvm), Just(MediumKind::Flash)],
                               page_shift in 9u32..=15, pages in 1u64..1_000_000,
                               channels in 1u32..64, chips in 1u32..64, t in any::<u64>(),
                               name in "[a-z0-9-]{0,64}", slots in 1u32..=JOURNAL_SLOTS_MAX) {
            let sb = Superblock { medium_kind: kind, page_bytes: 1 << page_shift,
                capacity_bytes: pages << page_shift, channels, chips_per_channel: chips,
                created_unix_s: t, profile_name: name, journal_slots: slots };
            prop_assert_eq!(Superblock::decode(&sb.encode().unwrap()).unwrap(), sb);
        }
    }
}
