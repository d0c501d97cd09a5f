//! The write-ahead log: a ring of pages in its own region of the device.
//!
//! ndpdb logs **redo only, at commit**. A transaction's writes go to the
//! delta buffer and the VID map in host memory as they happen (other
//! transactions see them only once it commits), and nothing of an
//! uncommitted transaction reaches the log. Commit appends one record
//! holding every write of the transaction (the tuple data, or a tombstone)
//! and waits until the record is on the medium; only then is the commit
//! acknowledged. Recovery opens the last checkpoint (which reflects the log
//! up to `log_lsn`, and holds committed heads only, even when transactions
//! were open: see `Database::checkpoint`) and replays the
//! records after it, in log order, which is commit order. An uncommitted
//! transaction therefore leaves nothing visible after a crash: its versions
//! may be on the device, but no VID map entry that recovery builds points at
//! them.
//!
//! **Positions.** An LSN is a byte offset in the endless log stream; byte
//! `lsn` lives in page `log_start + (lsn / page) % log_pages`, at offset
//! `lsn % page`. The ring may not overwrite what recovery still needs: an
//! append that would reach `checkpoint_lsn + capacity` fails with
//! [`StoreError::LogFull`] (the transaction layer checkpoints before that).
//!
//! **Records** are `ndpdb_format::wal`'s: a 24-byte header (magic, payload
//! length, the record's own LSN, CRC, kind), the payload, zero padding to a
//! multiple of 8 (`docs/format/wal.md`). This module places them in the
//! ring and reads them back; it does not look inside payloads.
//!
//! Recovery reads forward from `log_lsn` and stops at the first record that
//! is not whole and valid: a torn or corrupt tail (bad magic, wrong LSN,
//! length beyond the ring, CRC mismatch). What follows it is cut off and
//! reported; the next append overwrites it.
//!
//! **Group commit.** Committers append under a mutex and then wait until
//! the log is durable up to their record's end. One of them at a time is the
//! flusher: it takes everything appended so far, writes the pages it covers
//! (rewriting the partly filled last page; its earlier bytes do not change,
//! so a torn rewrite at sector granularity cannot hurt records already on
//! it), issues `Flush`, and wakes the others. Commits that arrive while it
//! writes ride on the next flush.

use ndpdb_device::{Command, QueuePair};
use ndpdb_format::wal::{MAGIC, RECORD_HEADER_BYTES, RecordHeader, frame_into, record_bytes};
use parking_lot::{Condvar, Mutex};

use crate::store::{Result, StoreError};

pub(crate) use ndpdb_format::wal::RecordKind;

/// Where the log is and how far it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogGeometry {
    pub start: u64,
    pub pages: u64,
    pub page_bytes: u64,
}

impl LogGeometry {
    pub fn capacity(&self) -> u64 {
        self.pages * self.page_bytes
    }

    fn ppn(&self, lsn: u64) -> u64 {
        self.start + (lsn / self.page_bytes) % self.pages
    }
}

/// Log traffic since the store was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalStats {
    pub records: u64,
    /// Record bytes appended (headers and padding included).
    pub bytes: u64,
    /// Flushes (each one `Flush` command after its page writes).
    pub flushes: u64,
    /// Page writes the flushes issued.
    pub page_writes: u64,
}

struct State {
    /// LSN the next record gets.
    end: u64,
    /// Bytes appended but not written yet, starting at `pending_from`.
    pending: Vec<u8>,
    pending_from: u64,
    /// The last, partly filled page as written so far (its first bytes).
    tail_page: Vec<u8>,
    /// Everything below is on the medium.
    durable: u64,
    /// A flusher is at work.
    flushing: bool,
    /// Replay starts here (the last checkpoint's position).
    checkpoint_lsn: u64,
    stats: WalStats,
}

pub(crate) struct Wal {
    pub(crate) geo: LogGeometry,
    state: Mutex<State>,
    flushed: Condvar,
}

impl Wal {
    /// A log that continues at `end` (a fresh log: 0), whose last partial
    /// page holds `tail_page` (the bytes of the page containing `end`, up to it).
    pub(crate) fn new(geo: LogGeometry, end: u64, checkpoint_lsn: u64, tail_page: Vec<u8>) -> Wal {
        Wal {
            geo,
            state: Mutex::new(State {
                end,
                pending: Vec::new(),
                pending_from: end,
                tail_page,
                durable: end,
                flushing: false,
                checkpoint_lsn,
                stats: WalStats::default(),
            }),
            flushed: Condvar::new(),
        }
    }

    pub(crate) fn stats(&self) -> WalStats {
        self.state.lock().stats
    }

    pub(crate) fn end(&self) -> u64 {
        self.state.lock().end
    }

    /// Bytes of the ring in use (what recovery would replay).
    pub(crate) fn used(&self) -> u64 {
        let s = self.state.lock();
        s.end - s.checkpoint_lsn
    }

    pub(crate) fn set_checkpoint(&self, lsn: u64) {
        self.state.lock().checkpoint_lsn = lsn;
    }

    /// Appends a record and returns the LSN just past it (not yet durable).
    pub(crate) fn append(&self, kind: RecordKind, payload: &[u8]) -> Result<u64> {
        let padded = record_bytes(payload.len());
        let mut s = self.state.lock();
        if s.end + padded as u64 > s.checkpoint_lsn + self.geo.capacity() {
            return Err(StoreError::LogFull {
                bytes: self.geo.capacity(),
                needed: padded as u64,
                used: s.end - s.checkpoint_lsn,
            });
        }
        let lsn = s.end;
        debug_assert_eq!(s.pending_from + s.pending.len() as u64, lsn, "pending bytes end where the log does");
        frame_into(&mut s.pending, lsn, kind, payload);
        s.end += padded as u64;
        s.stats.records += 1;
        s.stats.bytes += padded as u64;
        Ok(s.end)
    }

    /// Waits until the log is on the medium up to `lsn`, flushing it if no
    /// one else is (group commit).
    pub(crate) fn flush_to(&self, lsn: u64, qp: &Mutex<QueuePair>) -> Result<()> {
        let mut s = self.state.lock();
        loop {
            if s.durable >= lsn {
                return Ok(());
            }
            if s.flushing {
                self.flushed.wait(&mut s);
                continue;
            }
            s.flushing = true;
            let from = s.pending_from;
            let data = std::mem::take(&mut s.pending);
            s.pending_from = from + data.len() as u64;
            let before = s.tail_page.clone();
            let mut tail = std::mem::take(&mut s.tail_page);
            drop(s);
            let written = self.write(from, &data, &mut tail, qp);
            s = self.state.lock();
            s.flushing = false;
            match written {
                Ok(pages) => {
                    s.durable = from + data.len() as u64;
                    s.tail_page = tail;
                    s.stats.flushes += 1;
                    s.stats.page_writes += pages;
                    self.flushed.notify_all();
                }
                Err(e) => {
                    // The bytes may be half on the medium; nothing after them
                    // can be acknowledged. Fail this commit and every later one.
                    s.pending_from = from;
                    s.tail_page = before;
                    let mut again = data;
                    again.extend_from_slice(&s.pending);
                    s.pending = again;
                    self.flushed.notify_all();
                    return Err(e);
                }
            }
        }
    }

    /// Writes `data` (log bytes from `from`) to the pages it covers; `tail`
    /// holds the bytes already on the first page. Returns pages written.
    fn write(&self, from: u64, data: &[u8], tail: &mut Vec<u8>, qp: &Mutex<QueuePair>) -> Result<u64> {
        let page = self.geo.page_bytes as usize;
        let mut qp = qp.lock();
        let mut at = from;
        let mut rest = data;
        let mut pages = 0;
        while !rest.is_empty() {
            let off = (at % page as u64) as usize;
            if off == 0 {
                tail.clear();
            }
            debug_assert_eq!(tail.len(), off, "the tail page holds the bytes before `at`");
            let n = (page - off).min(rest.len());
            tail.extend_from_slice(&rest[..n]);
            let mut img = tail.clone();
            img.resize(page, 0);
            qp.call(Command::PageWrite { ppn: self.geo.ppn(at), data: img })?;
            pages += 1;
            at += n as u64;
            rest = &rest[n..];
        }
        if at.is_multiple_of(page as u64) {
            tail.clear();
        }
        qp.call(Command::Flush)?;
        Ok(pages)
    }
}

/// One valid record read back.
#[derive(Debug, Clone)]
pub struct LogRecord {
    pub lsn: u64,
    pub kind: RecordKind,
    pub payload: Vec<u8>,
}

/// What reading the log found.
#[derive(Debug, Clone, Default)]
pub struct LogScan {
    pub records: Vec<LogRecord>,
    /// LSN just past the last valid record: where the log continues.
    pub end: u64,
    /// Why the scan stopped before the end of the ring, if it did at a
    /// record that was started but is not whole and valid.
    pub truncated: Option<String>,
    /// The bytes of the page holding `end`, up to `end`.
    pub tail_page: Vec<u8>,
}

/// The LSN of the newest whole and valid record anywhere in the ring, if
/// any: every 8-aligned position is tried (magic, an LSN that belongs at
/// that position, a length within the ring, the CRC). Recovery calls it
/// only when it had to start from the older root slot: a valid record at or
/// past where its replay stopped is a committed transaction that replay
/// could not reach (the log was overwritten past the older checkpoint, or a
/// record on the way is corrupt), so opening would lose it. Reads the whole
/// ring once.
pub(crate) fn newest_valid_lsn(geo: LogGeometry, qp: &Mutex<QueuePair>) -> Result<Option<u64>> {
    let cap = geo.capacity();
    let ring: Vec<u8> = {
        let mut ring = Vec::with_capacity(cap as usize);
        for i in 0..geo.pages {
            ring.extend_from_slice(&qp.lock().call(Command::PageRead { ppn: geo.start + i })?.into_data());
        }
        ring
    };
    let at = |pos: u64, n: usize| -> Vec<u8> { (0..n as u64).map(|i| ring[((pos + i) % cap) as usize]).collect() };
    let mut newest = None;
    for pos in (0..cap).step_by(8) {
        let p = pos as usize;
        if ring[p..p + 4] != MAGIC {
            continue;
        }
        // A header may wrap around the end of the ring.
        let h = RecordHeader::decode(&at(pos, RECORD_HEADER_BYTES)).expect("a whole header with the magic");
        if h.lsn % cap != pos || u64::from(h.len) + RECORD_HEADER_BYTES as u64 > cap {
            continue;
        }
        if h.checks(&at(pos + RECORD_HEADER_BYTES as u64, h.len as usize)) {
            newest = newest.max(Some(h.lsn));
        }
    }
    Ok(newest)
}

/// Reads the log from `from` until the first invalid record.
pub(crate) fn scan(geo: LogGeometry, from: u64, qp: &Mutex<QueuePair>) -> Result<LogScan> {
    let page = geo.page_bytes;
    let mut cache: Option<(u64, Vec<u8>)> = None;
    let mut read = |lsn: u64, n: usize, out: &mut Vec<u8>| -> Result<()> {
        let mut at = lsn;
        let mut left = n;
        while left > 0 {
            let ppn = geo.ppn(at);
            if cache.as_ref().is_none_or(|(p, _)| *p != ppn) {
                let data = qp.lock().call(Command::PageRead { ppn })?.into_data();
                cache = Some((ppn, data));
            }
            let (_, data) = cache.as_ref().expect("filled above");
            let off = (at % page) as usize;
            let k = (page as usize - off).min(left);
            out.extend_from_slice(&data[off..off + k]);
            at += k as u64;
            left -= k;
        }
        Ok(())
    };
    let mut out = LogScan { end: from, ..LogScan::default() };
    let mut lsn = from;
    loop {
        if lsn - from + RECORD_HEADER_BYTES as u64 > geo.capacity() {
            break;
        }
        let mut head = Vec::with_capacity(RECORD_HEADER_BYTES);
        read(lsn, RECORD_HEADER_BYTES, &mut head)?;
        if head.iter().all(|&b| b == 0) {
            break; // never written: the clean end of a fresh log
        }
        let h = match RecordHeader::decode(&head) {
            Ok(h) if h.lsn == lsn => h,
            Ok(h) if h.lsn < lsn => break, // a record of an earlier lap: the clean end
            _ => {
                out.truncated = Some(format!("log record at LSN {lsn}: no valid header (torn or corrupt tail)"));
                break;
            }
        };
        let (len, padded) = (h.len as usize, h.record_bytes());
        if lsn - from + padded > geo.capacity() {
            out.truncated = Some(format!("log record at LSN {lsn}: length {len} runs past the ring"));
            break;
        }
        let mut payload = Vec::with_capacity(len);
        read(lsn + RECORD_HEADER_BYTES as u64, len, &mut payload)?;
        if !h.checks(&payload) {
            out.truncated = Some(format!("log record at LSN {lsn}: checksum mismatch (torn or corrupt)"));
            break;
        }
        let Some(kind) = RecordKind::from_u32(h.kind) else {
            out.truncated = Some(format!("log record at LSN {lsn}: unknown kind {}", h.kind));
            break;
        };
        out.records.push(LogRecord { lsn, kind, payload });
        lsn += padded;
        out.end = lsn;
    }
    let off = (out.end % page) as usize;
    if off > 0 {
        let mut t = Vec::with_capacity(off);
        read(out.end - off as u64, off, &mut t)?;
        out.tail_page = t;
    }
    Ok(out)
}
