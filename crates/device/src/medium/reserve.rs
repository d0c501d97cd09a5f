//! Disk space for the image, reserved as the medium is written.
//!
//! The image is mapped into memory, and a store through a mapping into a
//! hole of a sparse file that the file system cannot fill (the disk is
//! full) is not an error return but a SIGBUS that kills the process. So
//! every byte the emulator stores must lie in reserved space
//! (`posix_fallocate`). Reserving the whole image at creation did that,
//! at the price of a database's full capacity on disk from its first
//! moment (a SQL database is a 2 GiB image and a 1 GiB index image, and a
//! test suite that makes several at once failed on a machine with a few
//! GiB free).
//!
//! The image is thin-provisioned instead, like a sparse virtual disk:
//!
//! - creation reserves the superblock, the check codes and the journal (a
//!   few bytes per 512-byte sector; `seal_zeroed` writes every code), and
//!   leaves the medium's bytes a hole, which reads as zeros;
//! - a write reserves each [`EXTENT`] of the medium it touches the first
//!   time it touches it since the image was opened, before it stores
//!   anything. A full disk then fails that write with
//!   [`DeviceError::DiskFullOnWrite`] and leaves the medium as it was;
//!   the host sees an ordinary failed command (SQLSTATE 53100 in SQL).
//!
//! An extent reserved once stays reserved in the file, so after a reopen
//! the first write to an extent asks again and the file system answers
//! at once. Reads never reserve: a hole reads as zeros, whose check codes
//! creation wrote, and on disk file systems reading a hole through a
//! mapping takes no space. On a tmpfs it does (the zero page read is
//! memory the tmpfs must find, or SIGBUS), so there the image is thick:
//! creation and every writable open reserve all of it, and a full tmpfs
//! fails the create or open. On a file system without `posix_fallocate`
//! the image stays sparse and unreserved.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ndpdb_format::image::HEADER_BYTES;
use parking_lot::Mutex;

use crate::error::DeviceError;

/// Bytes of the medium reserved at a time: 8 MiB, so a small database
/// holds little more than it stores, and a large load asks the file
/// system once per 8 MiB written.
pub(super) const EXTENT: u64 = 8 << 20;

/// Which extents of the medium this open has reserved.
pub(super) struct Reservation {
    /// One bit per extent.
    reserved: Box<[AtomicU64]>,
    /// Serialises the reservations themselves (writes to reserved extents
    /// never take it).
    grow: Mutex<()>,
    /// The file system cannot reserve: every store goes to a sparse file.
    unsupported: AtomicBool,
    capacity_bytes: u64,
}

/// What one reservation call did.
enum Reserved {
    Done,
    Unsupported,
}

impl Reservation {
    /// Nothing reserved yet, or (`all`) everything.
    pub(super) fn new(capacity_bytes: u64, all: bool) -> Reservation {
        let extents = capacity_bytes.div_ceil(EXTENT);
        let bits = if all { u64::MAX } else { 0 };
        Reservation {
            reserved: (0..extents.div_ceil(64)).map(|_| AtomicU64::new(bits)).collect(),
            grow: Mutex::new(()),
            unsupported: AtomicBool::new(false),
            capacity_bytes,
        }
    }

    /// Makes sure medium bytes `addr..addr + len` lie in reserved space of
    /// `file`. The caller checked the range.
    pub(super) fn ensure(&self, file: &File, path: &Path, addr: u64, len: u64) -> Result<(), DeviceError> {
        if len == 0 {
            return Ok(());
        }
        let (first, last) = (addr / EXTENT, (addr + len - 1) / EXTENT);
        for e in first..=last {
            if !self.is_reserved(e) {
                self.reserve_extent(file, path, e)?;
            }
        }
        Ok(())
    }

    fn is_reserved(&self, e: u64) -> bool {
        self.unsupported.load(Ordering::Relaxed)
            || self.reserved[(e / 64) as usize].load(Ordering::Acquire) & (1 << (e % 64)) != 0
    }

    fn reserve_extent(&self, file: &File, path: &Path, e: u64) -> Result<(), DeviceError> {
        let _grow = self.grow.lock();
        if self.is_reserved(e) {
            return Ok(());
        }
        let start = e * EXTENT;
        let len = EXTENT.min(self.capacity_bytes - start);
        match allocate(file, HEADER_BYTES as u64 + start, len) {
            Ok(Reserved::Done) => {
                self.reserved[(e / 64) as usize].fetch_or(1 << (e % 64), Ordering::Release);
                Ok(())
            }
            Ok(Reserved::Unsupported) => {
                self.unsupported.store(true, Ordering::Relaxed);
                Ok(())
            }
            Err(libc::ENOSPC | libc::EFBIG) => {
                Err(DeviceError::DiskFullOnWrite { path: path.to_owned(), addr: start, bytes: len })
            }
            Err(other) => Err(DeviceError::io(path, std::io::Error::from_raw_os_error(other))),
        }
    }
}

/// Reserves file bytes `offset..offset + len`; the error is an errno.
fn allocate(file: &File, offset: u64, len: u64) -> Result<Reserved, i32> {
    // SAFETY: posix_fallocate on a valid descriptor.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), offset as libc::off_t, len as libc::off_t) };
    match rc {
        0 => Ok(Reserved::Done),
        libc::EOPNOTSUPP | libc::EINVAL => Ok(Reserved::Unsupported),
        other => Err(other),
    }
}

/// Whether the image must be thick on the file system holding `file`: a
/// tmpfs, where a read of a hole through a mapping takes memory.
pub(super) fn must_be_thick(file: &File) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    // SAFETY: fstatfs on a valid descriptor into a zeroed struct it fills.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
    rc == 0 && st.f_type as i64 == TMPFS_MAGIC
}

/// Creates the image's file of `file_bytes` bytes: sparse, with the bytes
/// from `reserve_from` to the end (the codes and the journal) and the
/// superblock reserved; wholly reserved when `thick`.
pub(super) fn create_file(
    file: &File,
    path: &Path,
    file_bytes: u64,
    reserve_from: u64,
    thick: bool,
) -> Result<(), DeviceError> {
    let (what, bytes) = if thick {
        (THICK, file_bytes)
    } else {
        ("creating it (its check codes and journal)", file_bytes - reserve_from)
    };
    let full = || DeviceError::DiskFull { path: path.to_owned(), what, bytes };
    match file.set_len(file_bytes) {
        Ok(()) => {}
        Err(e) if matches!(e.raw_os_error(), Some(libc::EFBIG | libc::ENOSPC)) => return Err(full()),
        Err(e) => return Err(DeviceError::io(path, e)),
    }
    let ranges = if thick {
        [(0, file_bytes), (0, 0)]
    } else {
        [(0, HEADER_BYTES as u64), (reserve_from, file_bytes - reserve_from)]
    };
    for (offset, len) in ranges.into_iter().filter(|r| r.1 > 0) {
        match allocate(file, offset, len) {
            Ok(_) => {}
            Err(libc::ENOSPC | libc::EFBIG) => return Err(full()),
            Err(other) => return Err(DeviceError::io(path, std::io::Error::from_raw_os_error(other))),
        }
    }
    Ok(())
}

/// Reserves all of an existing image's `file_bytes` (a writable open on a
/// tmpfs).
pub(super) fn reserve_all(file: &File, path: &Path, file_bytes: u64) -> Result<(), DeviceError> {
    match allocate(file, 0, file_bytes) {
        Ok(_) => Ok(()),
        Err(libc::ENOSPC | libc::EFBIG) => {
            Err(DeviceError::DiskFull { path: path.to_owned(), what: THICK, bytes: file_bytes })
        }
        Err(other) => Err(DeviceError::io(path, std::io::Error::from_raw_os_error(other))),
    }
}

const THICK: &str = "the whole image (on a tmpfs, where even reading a hole takes memory)";
