//! The medium: a file-backed device image, private to the device crate.
//!
//! `device.img` holds a 4096-byte superblock (`ndpdb_format::image`), the
//! medium's bytes, one check code per 512-byte sector, and a small journal
//! of sector writes in flight:
//!
//! ```text
//!  file: | superblock | medium (capacity) | codes (4 B per sector) | journal (slots) |
//!  map:               ^ words[0]            ^ codes_at                ^ journal_at
//! ```
//!
//! The file after the superblock is mapped into memory and read and written
//! as 32-bit words with relaxed atomics: concurrent commands may touch the
//! same bytes (as they may on a real device, where the result of overlapping
//! concurrent commands is undefined), and atomics keep that a well-defined
//! race in Rust's memory model rather than undefined behaviour. Ordering
//! between commands comes from the queues' channels.
//!
//! Like a real device's ECC, the check codes make damage loud
//! (`check.rs`): every read the device makes, for the host or for a PE,
//! returns verified bytes or a [`BadSector`]. Like a real device's
//! power-loss protection, the journal makes each sector write atomic
//! with respect to a kill of the process (`journal.rs`).
//!
//! Nothing outside this crate can name this type: the host reaches the
//! medium only through commands (`docs/architecture.md`, "The boundary").
//!
//! Opening writes nothing but the sector writes a killed process left in
//! the journal, which it finishes: a missing, wrongly sized, corrupt or
//! mismatched image is an error and the file is left as it was. A read-only
//! open writes nothing at all: it finishes such writes in a private copy of
//! the mapping. The image is thin-provisioned (`reserve.rs`): creating
//! reserves the superblock, codes and journal, and each write reserves the
//! medium's space it lands in before it stores, so a full disk fails that
//! write with a clear error instead of a SIGBUS on a store into a hole.

mod check;
mod journal;
mod reserve;

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use memmap2::{Mmap, MmapMut, MmapOptions};
use ndpdb_format::FormatError;
use ndpdb_format::image::{
    CODE_BYTES, HEADER_BYTES, JOURNAL_SLOT_BYTES, JOURNAL_SLOTS, SECTOR_BYTES, Superblock, ZeroSectorCodes,
};

pub(crate) use check::BadSector;
use check::Check;
use journal::Journal;
use reserve::Reservation;

use crate::device::SectorKill;
use crate::error::DeviceError;
use crate::profile::Profile;

pub(crate) const WORD: u64 = 4;
const SECTOR: u64 = SECTOR_BYTES as u64;
const SECTOR_SHIFT: u32 = SECTOR.trailing_zeros();
const SECTOR_WORDS: usize = (SECTOR / WORD) as usize;

/// The mapping of the file after the superblock.
enum Mapping {
    /// Shared and writable: stores reach the file.
    Shared(MmapMut),
    /// Read-only open, nothing to finish: the MMU refuses any store.
    ReadOnly(Mmap),
    /// Read-only open that finished a killed writer's sector writes in a
    /// private copy-on-write mapping: stores never reach the file.
    Private(MmapMut),
}

impl Mapping {
    fn as_ptr(&self) -> *const u8 {
        match self {
            Mapping::Shared(m) | Mapping::Private(m) => m.as_ptr(),
            Mapping::ReadOnly(m) => m.as_ptr(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Mapping::Shared(m) | Mapping::Private(m) => m.len(),
            Mapping::ReadOnly(m) => m.len(),
        }
    }
}

pub(crate) struct Medium {
    path: PathBuf,
    superblock: Superblock,
    file: File,
    map: Mapping,
    /// Medium byte 0 (file offset 4096), as words.
    words: *const AtomicU32,
    /// Words in the mapping.
    map_words: u64,
    capacity_bytes: u64,
    /// Word index (from `words`) of sector 0's check code.
    codes_at: u64,
    /// Word index (from `words`) of journal slot 0.
    journal_at: u64,
    read_only: bool,
    check: Check,
    journal: Journal,
    reservation: Reservation,
}

// SAFETY: all access to the mapping goes through `AtomicU32`s, which are Sync;
// the mapping lives as long as `map`.
unsafe impl Send for Medium {}
unsafe impl Sync for Medium {}

/// How to open an image.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OpenMode {
    pub read_only: bool,
    pub kill: Option<SectorKill>,
}

impl Medium {
    pub fn create(path: &Path, profile: &Profile, capacity_bytes: u64, mode: OpenMode) -> Result<Medium, DeviceError> {
        let superblock = new_superblock(profile, capacity_bytes);
        let header = superblock.encode().map_err(|source| DeviceError::InvalidCommand {
            what: format!("cannot create an image with this geometry: {source}"),
        })?;
        let file = match OpenOptions::new().read(true).write(true).create_new(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(DeviceError::ImageExists { path: path.to_owned() });
            }
            Err(e) => return Err(DeviceError::io(path, e)),
        };
        // The superblock is written last, so that an image whose creation
        // was interrupted is refused as corrupt rather than read unsealed.
        let thick = reserve::must_be_thick(&file);
        let made = lock(&file, path, false)
            .and_then(|()| reserve::create_file(&file, path, superblock.file_bytes(), superblock.codes_offset(), thick))
            .and_then(|()| Medium::map(path, file, superblock, mode, true))
            .and_then(|mut medium| {
                medium.reserved_all(thick);
                medium.seal_zeroed();
                medium.flush()?;
                medium.file.write_all_at(&header, 0).map_err(|e| DeviceError::io(path, e))?;
                medium.file.sync_all().map_err(|e| DeviceError::io(path, e))?;
                Ok(medium)
            });
        if made.is_err() {
            // We created the file in this call: remove the half-made image.
            let _ = std::fs::remove_file(path);
        }
        made
    }

    pub fn open(path: &Path, profile: &Profile, mode: OpenMode) -> Result<Medium, DeviceError> {
        let mut file = open_file(path, mode.read_only)?;
        lock(&file, path, mode.read_only)?;
        let mut header = Vec::with_capacity(HEADER_BYTES);
        (&mut file).take(HEADER_BYTES as u64).read_to_end(&mut header).map_err(|e| DeviceError::io(path, e))?;
        let superblock = Superblock::decode(&header).map_err(|source| superblock_error(path, source))?;
        let found = file.metadata().map_err(|e| DeviceError::io(path, e))?.len();
        if found != superblock.file_bytes() {
            return Err(DeviceError::ImageSize { path: path.to_owned(), found, expected: superblock.file_bytes() });
        }
        if superblock.medium_kind != profile.kind() || superblock.page_bytes != profile.page_bytes() {
            return Err(DeviceError::GeometryMismatch {
                path: path.to_owned(),
                profile: profile.name.clone(),
                image: format!("{} with {}-byte pages", superblock.medium_kind.name(), superblock.page_bytes),
                wanted: format!("{} with {}-byte pages", profile.kind().name(), profile.page_bytes()),
            });
        }
        let thick = !mode.read_only && reserve::must_be_thick(&file);
        if thick {
            reserve::reserve_all(&file, path, found)?;
        }
        let mut medium = Medium::map(path, file, superblock, mode, false)?;
        if mode.read_only {
            return medium.finish_in_private_copy();
        }
        medium.reserved_all(thick);
        if medium.replay()? > 0 {
            medium.flush()?;
        }
        Ok(medium)
    }

    /// Maps the file after the superblock; `verified` says whether every
    /// sector is known to match its code (a new image) or none is yet.
    fn map(
        path: &Path,
        file: File,
        superblock: Superblock,
        mode: OpenMode,
        verified: bool,
    ) -> Result<Medium, DeviceError> {
        let len = superblock.file_bytes() - HEADER_BYTES as u64;
        let options = {
            let mut o = MmapOptions::new();
            o.offset(HEADER_BYTES as u64).len(len as usize);
            o
        };
        // SAFETY: the file is locked against ndpdb writers for as long as
        // the mapping lives; its length was checked (or just reserved).
        let map = unsafe {
            if mode.read_only {
                options.map(&file).map(Mapping::ReadOnly)
            } else {
                options.map_mut(&file).map(Mapping::Shared)
            }
        }
        .map_err(|e| DeviceError::io(path, e))?;
        Medium::over(path, file, superblock, map, mode, verified)
    }

    /// The medium over `map`.
    fn over(
        path: &Path,
        file: File,
        superblock: Superblock,
        map: Mapping,
        mode: OpenMode,
        verified: bool,
    ) -> Result<Medium, DeviceError> {
        let capacity_bytes = superblock.capacity_bytes;
        assert_eq!(map.len() as u64, superblock.file_bytes() - HEADER_BYTES as u64);
        assert_eq!(map.as_ptr() as usize % std::mem::align_of::<AtomicU32>(), 0);
        let check = Check::new(superblock.sectors(), verified)?;
        let header = HEADER_BYTES as u64;
        Ok(Medium {
            path: path.to_owned(),
            words: map.as_ptr() as *const AtomicU32,
            map_words: map.len() as u64 / WORD,
            capacity_bytes,
            codes_at: (superblock.codes_offset() - header) / WORD,
            journal_at: (superblock.journal_offset() - header) / WORD,
            read_only: mode.read_only,
            check,
            journal: Journal::new(superblock.journal_slots, mode.kill),
            reservation: Reservation::new(capacity_bytes, false),
            superblock,
            file,
            map,
        })
    }

    /// A read-only medium that sees the sector writes a killed writer left
    /// in the journal finished, as a writable open would leave them: if
    /// there are any, in a private copy-on-write mapping.
    fn finish_in_private_copy(self) -> Result<Medium, DeviceError> {
        if !self.journal_pending() {
            return Ok(self);
        }
        let len = self.map.len();
        // SAFETY: as in `map`; a private mapping never writes the file.
        let map = unsafe { MmapOptions::new().offset(HEADER_BYTES as u64).len(len).map_copy(&self.file) }
            .map_err(|e| DeviceError::io(&self.path, e))?;
        let mode = OpenMode { read_only: true, kill: None };
        let Medium { path, superblock, file, .. } = self;
        let medium = Medium::over(&path, file, superblock, Mapping::Private(map), mode, false)?;
        medium.replay()?;
        Ok(medium)
    }

    pub fn superblock(&self) -> &Superblock {
        &self.superblock
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn check_range(&self, addr: u64, len: u64) -> Result<(), DeviceError> {
        match addr.checked_add(len) {
            Some(end) if end <= self.capacity_bytes => Ok(()),
            _ => Err(DeviceError::OutOfRange {
                what: format!(
                    "medium bytes {addr}..{} are outside the device's {} bytes",
                    addr.saturating_add(len),
                    self.capacity_bytes
                ),
            }),
        }
    }

    /// The word at `index` words from medium byte 0 (the codes and the
    /// journal lie beyond the medium's words).
    #[inline(always)]
    fn word(&self, index: u64) -> &AtomicU32 {
        debug_assert!(index < self.map_words);
        // SAFETY: index is within the mapping (callers checked the range).
        unsafe { &*self.words.add(index as usize) }
    }

    /// Sector `s`'s check code.
    fn code(&self, s: u64) -> &AtomicU32 {
        self.word(self.codes_at + s)
    }

    /// Hints the CPU to fetch the byte at `addr` (no effect on the model).
    /// Any address may be given: a prefetch never faults, and the pointer
    /// is only computed (wrapping), never dereferenced.
    #[inline(always)]
    pub fn prefetch(&self, addr: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let p = (self.words as *const i8).wrapping_add(addr as usize);
            // SAFETY: `_mm_prefetch` is a hint: it never faults or reads into the program.
            unsafe { std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = addr;
    }

    /// The error a read that met `bad` fails with: NVMe's unrecovered read
    /// error, naming the page and the sector.
    pub fn media_error(&self, bad: BadSector) -> DeviceError {
        let page = u64::from(self.superblock.page_bytes);
        let addr = bad.sector * SECTOR;
        DeviceError::UnrecoveredRead {
            path: self.path.clone(),
            ppn: addr / page,
            sector: (addr % page) / SECTOR,
            offset: addr % page,
        }
    }

    /// Reserves disk space for medium bytes `addr..addr + len` before a
    /// store into them (`reserve.rs`); a private mapping's stores never
    /// reach the file and need none.
    fn reserve(&self, addr: u64, len: u64) -> Result<(), DeviceError> {
        match self.map {
            Mapping::Shared(_) => self.reservation.ensure(&self.file, &self.path, addr, len),
            Mapping::ReadOnly(_) | Mapping::Private(_) => Ok(()),
        }
    }

    /// Records that the whole file is reserved (a thick image), if `all`.
    fn reserved_all(&mut self, all: bool) {
        if all {
            self.reservation = Reservation::new(self.capacity_bytes, true);
        }
    }

    /// Writes the check codes of an all-zero medium (a new image).
    fn seal_zeroed(&self) {
        let codes = ZeroSectorCodes::new();
        for s in 0..self.superblock.sectors() {
            self.code(s).store(codes.code(s), Ordering::Relaxed);
        }
    }

    /// Makes every completed write durable in the image file (nothing to do
    /// on a read-only open).
    pub fn flush(&self) -> Result<(), DeviceError> {
        match &self.map {
            Mapping::Shared(m) => m.flush().map_err(|e| DeviceError::io(&self.path, e)),
            Mapping::ReadOnly(_) | Mapping::Private(_) => Ok(()),
        }
    }
}

fn new_superblock(profile: &Profile, capacity_bytes: u64) -> Superblock {
    let page = u64::from(profile.page_bytes());
    Superblock {
        medium_kind: profile.kind(),
        page_bytes: profile.page_bytes(),
        capacity_bytes: capacity_bytes - capacity_bytes % page,
        channels: profile.channels(),
        chips_per_channel: profile.chips_per_channel(),
        created_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        profile_name: profile.name.clone(),
        journal_slots: JOURNAL_SLOTS,
    }
}

/// Why an image's superblock was refused: another format version, or damage.
pub(crate) fn superblock_error(path: &Path, source: FormatError) -> DeviceError {
    match source {
        FormatError::UnsupportedVersion { found, supported, .. } => {
            DeviceError::ImageVersion { path: path.to_owned(), found, supported }
        }
        source => DeviceError::ImageCorrupt { path: path.to_owned(), source },
    }
}

fn open_file(path: &Path, read_only: bool) -> Result<File, DeviceError> {
    match OpenOptions::new().read(true).write(!read_only).open(path) {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(DeviceError::ImageMissing { path: path.to_owned() }),
        Err(e)
            if !read_only
                && (e.kind() == std::io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(libc::EROFS)) =>
        {
            Err(DeviceError::ImageNotWritable { path: path.to_owned(), reason: e })
        }
        Err(e) => Err(DeviceError::io(path, e)),
    }
}

/// Takes the image lock: exclusive for a writer, shared for a reader, so
/// that readers coexist with each other and never with a writer.
///
/// A lock found held is tried again for up to [`LOCK_PATIENCE`] before it
/// is reported: a process that forks a child (to run a command) while it
/// has an image open shares the lock with that child until the child execs,
/// so an image closed a moment ago can look locked for a few milliseconds.
/// Another process that really has the image open holds it far longer.
fn lock(file: &File, path: &Path, shared: bool) -> Result<(), DeviceError> {
    let how = if shared { libc::LOCK_SH } else { libc::LOCK_EX };
    let deadline = std::time::Instant::now() + LOCK_PATIENCE;
    loop {
        // SAFETY: flock on a valid descriptor.
        let rc = unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(DeviceError::io(path, err));
        }
        if std::time::Instant::now() >= deadline {
            return Err(DeviceError::ImageLocked { path: path.to_owned() });
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// How long [`lock`] waits for a lock held by someone else.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

/// Journal slot `slot`'s first word, counted from `journal_at`.
const fn slot_words(slot: u32) -> u64 {
    slot as u64 * (JOURNAL_SLOT_BYTES as u64 / WORD)
}

const _: () = assert!(CODE_BYTES == WORD, "one code per word");
