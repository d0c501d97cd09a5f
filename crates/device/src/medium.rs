//! The medium: a file-backed device image, private to the device crate.
//!
//! `device.img` holds a 4096-byte superblock (`ndpdb_format::image`) followed
//! by the medium's bytes. The image is mapped into memory and read and written
//! as 32-bit words with relaxed atomics: concurrent commands may touch the
//! same bytes (as they may on a real device, where the result of overlapping
//! concurrent writes is undefined), and atomics keep that a well-defined race
//! in Rust's memory model rather than undefined behaviour. Ordering between
//! commands comes from the queues' channels.
//!
//! Nothing outside this crate can name this type: the host reaches the
//! medium only through commands (`docs/architecture.md`, "The boundary").
//!
//! Opening never writes: a missing, wrongly sized, corrupt or mismatched image is
//! an error and the file is left as it was. Creating reserves the whole image
//! with `posix_fallocate`, so a full disk fails at creation with a clear
//! error instead of a SIGBUS on a later write to a sparse hole.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use memmap2::MmapMut;
use ndpdb_format::image::{HEADER_BYTES, Superblock};

use crate::error::DeviceError;
use crate::profile::Profile;

pub(crate) const WORD: u64 = 4;

pub(crate) struct Medium {
    path: PathBuf,
    superblock: Superblock,
    _file: File,
    map: MmapMut,
    words: *const AtomicU32,
    capacity_bytes: u64,
}

// SAFETY: all access to the mapping goes through `AtomicU32`s, which are Sync;
// the mapping lives as long as `map`.
unsafe impl Send for Medium {}
unsafe impl Sync for Medium {}

impl Medium {
    pub fn create(path: &Path, profile: &Profile, capacity_bytes: u64) -> Result<Medium, DeviceError> {
        let page = u64::from(profile.page_bytes());
        let superblock = Superblock {
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
        };
        let header = superblock.encode().map_err(|source| DeviceError::InvalidCommand {
            what: format!("cannot create an image with this geometry: {source}"),
        })?;
        let mut file = match OpenOptions::new().read(true).write(true).create_new(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(DeviceError::ImageExists { path: path.to_owned() });
            }
            Err(e) => return Err(DeviceError::io(path, e)),
        };
        let result = (|| {
            lock(&file, path)?;
            reserve(&file, path, superblock.file_bytes())?;
            file.write_all(&header).map_err(|e| DeviceError::io(path, e))?;
            file.sync_all().map_err(|e| DeviceError::io(path, e))?;
            Ok(())
        })();
        if let Err(e) = result {
            // We created the file in this call: remove the half-made image.
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        Medium::map(path, file, superblock)
    }

    pub fn open(path: &Path, profile: &Profile) -> Result<Medium, DeviceError> {
        let mut file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(DeviceError::ImageMissing { path: path.to_owned() });
            }
            Err(e) => return Err(DeviceError::io(path, e)),
        };
        lock(&file, path)?;
        let mut header = Vec::with_capacity(HEADER_BYTES);
        (&mut file).take(HEADER_BYTES as u64).read_to_end(&mut header).map_err(|e| DeviceError::io(path, e))?;
        let superblock = Superblock::decode(&header)
            .map_err(|source| DeviceError::ImageCorrupt { path: path.to_owned(), source })?;
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
        Medium::map(path, file, superblock)
    }

    fn map(path: &Path, file: File, superblock: Superblock) -> Result<Medium, DeviceError> {
        // SAFETY: the file is locked against other ndpdb processes for as long
        // as the mapping lives; its length was checked above.
        let map = unsafe { memmap2::MmapOptions::new().offset(HEADER_BYTES as u64).map_mut(&file) }
            .map_err(|e| DeviceError::io(path, e))?;
        let capacity_bytes = superblock.capacity_bytes;
        assert_eq!(map.len() as u64, capacity_bytes);
        assert_eq!(map.as_ptr() as usize % std::mem::align_of::<AtomicU32>(), 0);
        let words = map.as_ptr() as *const AtomicU32;
        Ok(Medium { path: path.to_owned(), superblock, _file: file, map, words, capacity_bytes })
    }

    pub fn superblock(&self) -> &Superblock {
        &self.superblock
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
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

    fn word(&self, index: u64) -> &AtomicU32 {
        debug_assert!(index < self.capacity_bytes / WORD);
        // SAFETY: index is within the mapping (callers checked the range).
        unsafe { &*self.words.add(index as usize) }
    }

    /// Reads one aligned 32-bit word. The caller checked the range.
    #[inline]
    pub fn read_word(&self, addr: u64) -> u32 {
        debug_assert_eq!(addr % WORD, 0);
        self.word(addr / WORD).load(Ordering::Relaxed)
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

    /// Loads consecutive aligned words. The caller checked the range.
    #[inline]
    pub fn read_words(&self, addr: u64, out: &mut [u32]) {
        debug_assert_eq!(addr % WORD, 0);
        let first = addr / WORD;
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.word(first + i as u64).load(Ordering::Relaxed);
        }
    }

    /// Copies medium bytes out. The caller checked the range.
    pub fn read(&self, addr: u64, buf: &mut [u8]) {
        if addr.is_multiple_of(WORD) {
            // Whole words first, then a partial tail.
            let mut chunks = buf.chunks_exact_mut(WORD as usize);
            let mut at = addr / WORD;
            for c in &mut chunks {
                c.copy_from_slice(&self.word(at).load(Ordering::Relaxed).to_le_bytes());
                at += 1;
            }
            let tail = chunks.into_remainder();
            if !tail.is_empty() {
                let w = self.word(at).load(Ordering::Relaxed).to_le_bytes();
                let n = tail.len();
                tail.copy_from_slice(&w[..n]);
            }
            return;
        }
        let mut at = addr;
        let mut out = 0;
        while out < buf.len() {
            let w = self.word(at / WORD).load(Ordering::Relaxed).to_le_bytes();
            let skip = (at % WORD) as usize;
            let n = (WORD as usize - skip).min(buf.len() - out);
            buf[out..out + n].copy_from_slice(&w[skip..skip + n]);
            out += n;
            at += n as u64;
        }
    }

    /// Copies bytes into the medium. The caller checked the range. Partial
    /// words are merged with a compare-and-swap loop.
    pub fn write(&self, addr: u64, data: &[u8]) {
        let mut at = addr;
        let mut inp = 0;
        while inp < data.len() {
            let skip = (at % WORD) as usize;
            let n = (WORD as usize - skip).min(data.len() - inp);
            let word = self.word(at / WORD);
            if n == WORD as usize {
                word.store(u32::from_le_bytes(data[inp..inp + 4].try_into().expect("4 bytes")), Ordering::Relaxed);
            } else {
                let _ = word.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                    let mut b = old.to_le_bytes();
                    b[skip..skip + n].copy_from_slice(&data[inp..inp + n]);
                    Some(u32::from_le_bytes(b))
                });
            }
            inp += n;
            at += n as u64;
        }
    }

    /// Makes every completed write durable in the image file.
    pub fn flush(&self) -> Result<(), DeviceError> {
        self.map.flush().map_err(|e| DeviceError::io(&self.path, e))
    }
}

fn lock(file: &File, path: &Path) -> Result<(), DeviceError> {
    // SAFETY: flock on a valid descriptor.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Err(DeviceError::ImageLocked { path: path.to_owned() })
    } else {
        Err(DeviceError::io(path, err))
    }
}

fn reserve(file: &File, path: &Path, bytes: u64) -> Result<(), DeviceError> {
    // SAFETY: posix_fallocate on a valid descriptor.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, bytes as libc::off_t) };
    match rc {
        0 => Ok(()),
        libc::ENOSPC | libc::EFBIG => Err(DeviceError::DiskFull { path: path.to_owned(), bytes }),
        // File systems without fallocate: fall back to a sparse file.
        libc::EOPNOTSUPP | libc::EINVAL => file.set_len(bytes).map_err(|e| DeviceError::io(path, e)),
        other => Err(DeviceError::io(path, std::io::Error::from_raw_os_error(other))),
    }
}
