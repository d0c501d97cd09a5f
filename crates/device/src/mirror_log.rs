//! The mirror's reader of the host's log ring: records framed as
//! `format::wal` frames them (the key-value store's `format::kv_log`
//! records, or the MVCC engine's own, `format::wal`; a [`PagesNamed`]
//! function says which records name pages), in one stream of LSNs (byte `lsn`
//! is in ring page `(lsn / page_bytes) mod log_pages` at offset
//! `lsn mod page_bytes`, `docs/format/wal.md`). Records may span pages;
//! the host rewrites the ring's tail page as it fills.
//!
//! ```text
//!   stream:  ... parsed │ start ──── buf (bytes known, not yet a whole record) ──►│
//!   a page write at ring index j lands at the first lap position of j at or
//!   after start's page: overlaid onto buf if it touches it, kept aside if it
//!   lies ahead (out of order), ignored if it lies behind (a rewrite of pages
//!   already parsed)
//! ```
//!
//! A record is taken when its header has the magic and names `start` as its
//! LSN and all its bytes are known: then its CRC and payload must check, or
//! the stream is broken (the mirror is lost). Anything else at `start`
//! (zeros, a record of an earlier lap, bytes without the magic) is not
//! written yet: the host's next write of the page brings it, unless a whole,
//! valid record further on shows that the host moved past it (a hole: lost).
//! That takes care with pages written out of order (two submitting threads):
//! a valid record further on is a hole only if the page holding `start` was
//! written at the same time or after the page holding that record; if it
//! was written before, its newer write may still come.
//!
//! **Starting.** The host names the log's end when it configures the
//! mirror, but records from there on may reach the device before the
//! configuration does (a flush racing it), and the page holding that LSN
//! may then never be written again. Until a write of the page holding
//! `start` arrives, the stream is *unsynced*: a page ahead of it moves
//! `start` to the first record of this lap in that page (magic, and its own
//! LSN equal to its position). What it skips was appended before the
//! configuration took effect, and the host writes back every page dirty
//! then after configuring (`KvOffload::configure_mirror`), so skipping it
//! loses nothing.

use std::collections::{BTreeMap, HashMap};

use ndpdb_format::kv_log::{KIND_PAGE_REDO, pages_named};
use ndpdb_format::wal::{MAGIC, RECORD_HEADER_BYTES, RecordHeader, delta_page_named};

/// The `(pid, frame address)` pairs a record of a kind (the header's code)
/// names; an error if its payload does not decode.
pub(crate) type PagesNamed = fn(u32, &[u8]) -> Result<Vec<(u64, u64)>, String>;

/// The key-value store's log: page-redo records name pages.
pub(crate) fn kv_pages_named(kind: u32, payload: &[u8]) -> Result<Vec<(u64, u64)>, String> {
    if kind != KIND_PAGE_REDO {
        return Ok(Vec::new());
    }
    pages_named(payload).map_err(|e| e.to_string())
}

/// The MVCC engine's log: delta-page records name a delta page's frame.
pub(crate) fn heap_pages_named(kind: u32, payload: &[u8]) -> Result<Vec<(u64, u64)>, String> {
    Ok(delta_page_named(kind, payload).map_err(|e| e.to_string())?.into_iter().collect())
}

/// Pages kept aside that arrived ahead of the stream.
const AHEAD_PAGES_MAX: usize = 16;
/// The longest key-value log record (and the most bytes held waiting), in
/// pages. The MVCC log's commit records have no bound but the ring (a
/// transaction's writes), so a heap-mode stream takes records up to the
/// ring's size ([`LogStream::new`]'s `record_max`).
pub(crate) const RECORD_PAGES_MAX: u64 = 64;

#[derive(Debug)]
pub(crate) struct LogStream {
    start: u64,
    buf: Vec<u8>,
    ahead: BTreeMap<u64, Vec<u8>>,
    page_bytes: u64,
    log_pages: u64,
    /// Per ring index, the number of the absorb that last wrote it.
    written: HashMap<u64, u64>,
    writes: u64,
    /// A write of the page holding `start` has arrived since the start.
    synced: bool,
    names: PagesNamed,
    /// Bytes of the longest record taken (and the most held waiting).
    record_max: u64,
}

impl LogStream {
    pub(crate) fn new(start: u64, page_bytes: u64, log_pages: u64, names: PagesNamed, record_max: u64) -> LogStream {
        LogStream {
            start,
            buf: Vec::new(),
            ahead: BTreeMap::new(),
            page_bytes,
            log_pages,
            written: HashMap::new(),
            writes: 0,
            synced: false,
            names,
            record_max,
        }
    }

    /// Takes the write of ring page `index`; calls `dirty(pid, frame address,
    /// record end)` for each page every new whole record names. An error:
    /// the stream is broken (the reason).
    pub(crate) fn absorb(
        &mut self,
        index: u64,
        data: &[u8],
        dirty: &mut dyn FnMut(u64, u64, u64),
    ) -> Result<(), String> {
        let p = self.page_bytes;
        if data.len() as u64 != p || index >= self.log_pages {
            return Ok(());
        }
        self.writes += 1;
        self.written.insert(index, self.writes);
        let cur = self.start - self.start % p;
        let delta = (index + self.log_pages - (cur / p) % self.log_pages) % self.log_pages;
        // Pages from `start`'s that hold bytes known (a long record spans
        // many): a page is ahead up to AHEAD_PAGES_MAX past them, else behind.
        let known = (self.end() - cur).div_ceil(p);
        if delta > known + AHEAD_PAGES_MAX as u64 {
            // Behind the stream: a rewrite of parsed pages, unless it holds
            // a valid record of the lap ahead (the host jumped: a hole).
            return match self.valid_record_in(data, Some(cur + delta * p), self.end()) {
                Some(lsn) => Err(format!("log record at LSN {lsn} lies past LSN {}, the stream's next", self.start)),
                None => Ok(()),
            };
        }
        let base = cur + delta * p;
        if !self.synced && delta > 0 {
            self.resync(base, data);
        }
        self.synced |= base <= self.start;
        self.ahead.insert(base, data.to_vec());
        while let Some((&base, _)) = self.ahead.first_key_value() {
            if base > self.end() {
                break;
            }
            let page = self.ahead.remove(&base).expect("the first entry");
            self.overlay(base, &page);
        }
        if self.ahead.len() > AHEAD_PAGES_MAX {
            return Err(format!("{} log pages arrived ahead of a hole at LSN {}", self.ahead.len(), self.end()));
        }
        self.parse(dirty)
    }

    /// Moves an unsynced stream to the first record of this lap in the page
    /// at `base`, if it has one (see "Starting" above).
    fn resync(&mut self, base: u64, page: &[u8]) {
        let first = (0..page.len())
            .step_by(8)
            .find(|&off| RecordHeader::decode(&page[off..]).is_ok_and(|h| h.lsn == base + off as u64));
        if let Some(off) = first {
            self.start = base + off as u64;
            self.buf.clear();
            self.ahead.clear();
            self.synced = true;
        }
    }

    /// The first stream position not known.
    fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    /// Writes page bytes at stream position `base` (at most `end()`) into buf.
    fn overlay(&mut self, base: u64, page: &[u8]) {
        let from = self.start.max(base);
        let to = base + page.len() as u64;
        if to <= from {
            return;
        }
        let (lo, hi) = ((from - self.start) as usize, (to - self.start) as usize);
        if self.buf.len() < hi {
            self.buf.resize(hi, 0);
        }
        self.buf[lo..hi].copy_from_slice(&page[(from - base) as usize..]);
    }

    fn parse(&mut self, dirty: &mut dyn FnMut(u64, u64, u64)) -> Result<(), String> {
        let mut at = 0usize;
        let result = loop {
            let rest = &self.buf[at..];
            let lsn = self.start + at as u64;
            let Ok(h) = RecordHeader::decode(rest) else { break self.check_hole(at) };
            if h.lsn != lsn {
                break self.check_hole(at);
            }
            let total = h.record_bytes();
            if total > self.record_max {
                break Err(format!("log record at LSN {lsn} claims {} payload bytes", h.len));
            }
            if (rest.len() as u64) < total {
                break Ok(());
            }
            let payload = &rest[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + h.len as usize];
            if !h.checks(payload) {
                break Err(format!("log record at LSN {lsn} fails its CRC"));
            }
            match (self.names)(h.kind, payload) {
                Ok(pages) => pages.into_iter().for_each(|(pid, addr)| dirty(pid, addr, lsn + total)),
                Err(e) => break Err(format!("log record at LSN {lsn}: {e}")),
            }
            at += total as usize;
        };
        self.buf.drain(..at);
        self.start += at as u64;
        if result.is_ok() && self.buf.len() as u64 > self.record_max {
            return Err(format!("no whole log record at LSN {} in {} bytes", self.start, self.buf.len()));
        }
        result
    }

    /// The stream stops at buf offset `at` (no record there yet): a whole,
    /// valid record later in buf means the host skipped past it.
    fn check_hole(&self, at: usize) -> Result<(), String> {
        let next = self.start + at as u64;
        let Some(lsn) = self.valid_record_in(&self.buf[at..], Some(next), next + 1) else { return Ok(()) };
        let when = |pos: u64| self.written.get(&((pos / self.page_bytes) % self.log_pages)).copied().unwrap_or(0);
        if when(next) >= when(lsn) {
            return Err(format!("log record at LSN {lsn} lies past LSN {next}, the stream's next"));
        }
        Ok(())
    }

    /// The LSN of a whole record with a valid CRC in `bytes` (which sit at
    /// stream position `base`), at or after `from`, if any.
    fn valid_record_in(&self, bytes: &[u8], base: Option<u64>, from: u64) -> Option<u64> {
        let base = base?;
        (0..bytes.len()).step_by(8).find_map(|off| {
            let lsn = base + off as u64;
            if lsn < from || bytes[off..].get(..4) != Some(&MAGIC[..]) {
                return None;
            }
            let h = RecordHeader::decode(&bytes[off..]).ok()?;
            let payload = bytes.get(off + RECORD_HEADER_BYTES..off + RECORD_HEADER_BYTES + h.len as usize)?;
            (h.lsn == lsn && h.checks(payload)).then_some(lsn)
        })
    }
}
