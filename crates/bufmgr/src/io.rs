//! Where pages live and what the pool asks of the caller's log: the two
//! traits the pool is built over, and the check every page read passes
//! before it is cached (the pool never trusts the medium's bytes).

use crate::error::PoolError;
use crate::seqlock;
use crate::{HEADER_BYTES, Pid};

/// Where pages live: the device (`DevicePageIo`), or memory in unit tests
/// (`MemoryPageIo`).
pub trait PageIo: Send + Sync {
    /// Page `pid`'s bytes, read into the frame at host address `host_addr`
    /// (the device learns from it which frame holds which page).
    fn read(&self, pid: Pid, host_addr: u64) -> Result<Vec<u8>, PoolError>;
    fn write(&self, pid: Pid, page: &[u8]) -> Result<(), PoolError>;
    /// The file's length in pages.
    fn pages(&self) -> u64;
    /// One more page at the end of the file; its pid.
    fn extend(&self) -> Result<Pid, PoolError>;
}

/// The caller's write-ahead log, as far as the pool needs it: a dirty page
/// is written back only once the log is durable up to the page's LSN.
pub trait LogSync: Send + Sync {
    fn durable_lsn(&self) -> u64;
    fn flush_to(&self, lsn: u64) -> Result<(), PoolError>;
}

/// What a page read returned, checked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadPage {
    /// A page the pool wrote back: its pid word names it, its versions match.
    Written,
    /// All zeros: a page of the file never written back (extended, then
    /// lost to a crash before its first write-back, or never used). The
    /// pool caches it as a zeroed page with its pid word set, clean.
    NeverWritten,
}

/// Checks a page read for `pid` before it is cached: its length, its pid
/// word and its versions (a torn write leaves them unequal).
pub(crate) fn check_read(pid: Pid, page: &[u8], page_bytes: usize) -> Result<ReadPage, PoolError> {
    if page.len() != page_bytes {
        return Err(PoolError::PageSize { pid, expected: page_bytes, found: page.len() });
    }
    if page.iter().all(|&b| b == 0) {
        return Ok(ReadPage::NeverWritten);
    }
    let found = u64::from_le_bytes(page[8..HEADER_BYTES].try_into().expect("page_bytes >= 64"));
    if found != pid {
        let what = if found == 0 && page[..8] == [0; 8] {
            "it holds no buffer-managed page (front version and pid word are 0 but the page is not empty)".to_string()
        } else {
            format!("its pid word says {found} (a misdirected or overwritten page)")
        };
        return Err(PoolError::Corrupt { pid, what });
    }
    match seqlock::versions(page) {
        Some((front, rear)) if front == rear => Ok(ReadPage::Written),
        Some((front, rear)) => Err(PoolError::Corrupt {
            pid,
            what: format!("front version {front} != rear version {rear} (a torn write)"),
        }),
        None => unreachable!("the length was checked"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(pid: u64, front: u64, rear: u64) -> Vec<u8> {
        let mut p = vec![0u8; 64];
        p[..8].copy_from_slice(&front.to_le_bytes());
        p[8..16].copy_from_slice(&pid.to_le_bytes());
        p[56..].copy_from_slice(&rear.to_le_bytes());
        p
    }

    #[test]
    fn a_written_page_names_itself_and_has_equal_versions() {
        assert_eq!(check_read(3, &page(3, 9, 9), 64).unwrap(), ReadPage::Written);
        assert_eq!(check_read(3, &[0; 64], 64).unwrap(), ReadPage::NeverWritten);
    }

    #[test]
    fn every_bad_read_names_the_page() {
        let cases = [
            (check_read(3, &page(4, 9, 9), 64), "pid word says 4"),
            (check_read(3, &page(3, 9, 8), 64), "torn write"),
            (check_read(3, &page(3, 0, 0)[..32], 64), "returned 32 bytes"),
        ];
        for (result, wanted) in cases {
            let msg = result.unwrap_err().to_string();
            assert!(msg.contains("page 3") && msg.contains(wanted), "{msg}");
        }
        let mut garbage = vec![0u8; 64];
        garbage[40] = 1;
        let msg = check_read(5, &garbage, 64).unwrap_err().to_string();
        assert!(msg.contains("page 5") && msg.contains("no buffer-managed page"), "{msg}");
    }
}
