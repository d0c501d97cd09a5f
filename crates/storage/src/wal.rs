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
//! `lsn % page`. The ring may not overwrite what recovery still needs.
//! Pages are written whole, so the page that holds `checkpoint_lsn` may not
//! be written in the next lap at all (its rewrite would zero the records
//! after the checkpoint): an append that would reach past the start of that
//! page plus the capacity fails with [`StoreError::LogFull`] (the
//! transaction layer checkpoints before that).
//!
//! **Records** are `ndpdb_format::wal`'s: a 24-byte header (magic, payload
//! length, the record's own LSN, CRC, kind), the payload, zero padding to a
//! multiple of 8 (`docs/format/wal.md`). This module places them in the
//! ring and reads them back; it does not look inside payloads.
//!
//! Recovery reads forward from `log_lsn` ([`scan`]) and stops at the first
//! position that does not hold a whole valid record of this lap: zeros or
//! an earlier lap's record (the end), a record that is torn or damaged (bad
//! magic, wrong LSN, length beyond the ring, CRC mismatch), or a page that
//! cannot be read. It then searches the whole ring for valid records past
//! that point ([`search_ring`]): none means the log ends there (a torn tail
//! is cut off and reported; the next append overwrites it); any means
//! committed records replay cannot reach, which `recovery.rs` refuses to
//! lose silently.
//!
//! **Group commit.** Committers append under a mutex and then wait until
//! the log is durable up to their record's end. One of them at a time is the
//! flusher: it takes everything appended so far, writes the pages it covers
//! (rewriting the partly filled last page; its earlier bytes do not change,
//! so a torn rewrite at sector granularity cannot hurt records already on
//! it), issues `Flush`, and wakes the others. Commits that arrive while it
//! writes ride on the next flush.

use ndpdb_device::{Command, QueuePair};
use ndpdb_format::wal::{MAGIC, RECORD_HEADER_BYTES, RecordHeader, frame_into, page_images, record_bytes};
use parking_lot::{Condvar, Mutex};

use crate::error::page_unreadable;
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

    /// The LSN appends may not pass: the start of the page holding
    /// `checkpoint_lsn`, one lap on (that page is written whole, so no byte
    /// of it may be written while it holds records recovery needs).
    fn append_limit(&self, checkpoint_lsn: u64) -> u64 {
        checkpoint_lsn - checkpoint_lsn % self.geo.page_bytes + self.geo.capacity()
    }

    /// Appends a record and returns the LSN just past it (not yet durable).
    pub(crate) fn append(&self, kind: RecordKind, payload: &[u8]) -> Result<u64> {
        let padded = record_bytes(payload.len());
        let mut s = self.state.lock();
        if s.end + padded as u64 > self.append_limit(s.checkpoint_lsn) {
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

    /// Runs `f` with the log's end while no append and no flush can run
    /// (after waiting for a flush under way): every record appended later
    /// lies at or after that end and reaches the device after `f` returns.
    /// The store configures the device's mirror this way (`cbm.rs`). `f`
    /// may use the log's queue pair, nothing else of the log.
    pub(crate) fn quiesced<T>(&self, f: impl FnOnce(u64) -> T) -> T {
        let mut s = self.state.lock();
        while s.flushing {
            self.flushed.wait(&mut s);
        }
        f(s.end)
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
        let mut qp = qp.lock();
        let pages = page_images(self.geo.page_bytes as usize, from, data, tail, |at, image| {
            qp.call(Command::PageWrite { ppn: self.geo.ppn(at), data: image }).map(drop)
        })?;
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

impl LogRecord {
    /// The LSN just past the record, its padding included.
    pub fn end(&self) -> u64 {
        self.lsn + record_bytes(self.payload.len()) as u64
    }
}

/// A log page that could not be read, and the device's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadablePage {
    pub ppn: u64,
    pub why: String,
}

/// Why reading the log forward stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LogStop {
    /// Zero bytes or a record of an earlier lap where a header should be:
    /// the end of the log, unless valid records follow further on.
    #[default]
    End,
    /// Bytes that are not a whole valid record: a torn tail after a crash,
    /// or damage.
    Invalid(String),
    /// The page holding the next record could not be read (damage; a torn
    /// write leaves a readable page).
    Unreadable(UnreadablePage),
}

/// What reading the log forward found.
#[derive(Debug, Clone, Default)]
pub struct LogScan {
    pub records: Vec<LogRecord>,
    /// LSN just past the last valid record: where the log continues.
    pub end: u64,
    /// Why the scan stopped at `end`.
    pub stop: LogStop,
    /// The bytes of the page holding `end`, up to `end`.
    pub tail_page: Vec<u8>,
}

impl LogScan {
    /// What stopped the scan, unless it was an ordinary end.
    pub fn stop_reason(&self) -> Option<String> {
        match &self.stop {
            LogStop::End => None,
            LogStop::Invalid(why) => Some(why.clone()),
            LogStop::Unreadable(p) => {
                Some(format!("log record at LSN {}: log page {} cannot be read ({})", self.end, p.ppn, p.why))
            }
        }
    }
}

/// Log pages read at a time when the whole ring is read.
const READ_AHEAD: usize = 128;

/// Reads log bytes by LSN through one cached page.
struct RingReader<'a> {
    geo: LogGeometry,
    qp: &'a Mutex<QueuePair>,
    cached: Option<(u64, Vec<u8>)>,
}

impl RingReader<'_> {
    /// Appends the `n` log bytes at `lsn` to `out`; a page that cannot be
    /// read is the inner error, a device that stopped the outer one.
    fn read(&mut self, lsn: u64, n: usize, out: &mut Vec<u8>) -> Result<std::result::Result<(), UnreadablePage>> {
        let page = self.geo.page_bytes;
        let (mut at, mut left) = (lsn, n);
        while left > 0 {
            let ppn = self.geo.ppn(at);
            if self.cached.as_ref().is_none_or(|(p, _)| *p != ppn) {
                match self.qp.lock().call(Command::PageRead { ppn, host_addr: None }) {
                    Ok(reply) => self.cached = Some((ppn, reply.into_data())),
                    Err(e) if page_unreadable(&e) => return Ok(Err(UnreadablePage { ppn, why: e.to_string() })),
                    Err(e) => return Err(e.into()),
                }
            }
            let (_, data) = self.cached.as_ref().expect("filled above");
            let off = (at % page) as usize;
            let k = (page as usize - off).min(left);
            out.extend_from_slice(&data[off..off + k]);
            at += k as u64;
            left -= k;
        }
        Ok(Ok(()))
    }
}

/// Reads the log forward from `from` until the first position that does
/// not hold a whole valid record of this lap.
pub(crate) fn scan(geo: LogGeometry, from: u64, qp: &Mutex<QueuePair>) -> Result<LogScan> {
    let mut reader = RingReader { geo, qp, cached: None };
    let mut out = LogScan { end: from, ..LogScan::default() };
    let mut lsn = from;
    let stop = loop {
        if lsn - from + RECORD_HEADER_BYTES as u64 > geo.capacity() {
            break LogStop::End;
        }
        let mut head = Vec::with_capacity(RECORD_HEADER_BYTES);
        if let Err(p) = reader.read(lsn, RECORD_HEADER_BYTES, &mut head)? {
            break LogStop::Unreadable(p);
        }
        if head.iter().all(|&b| b == 0) {
            break LogStop::End; // never written
        }
        let h = match RecordHeader::decode(&head) {
            Ok(h) if h.lsn == lsn => h,
            Ok(h) if h.lsn < lsn => break LogStop::End, // a record of an earlier lap
            _ => break LogStop::Invalid(format!("log record at LSN {lsn}: no valid header (torn or damaged)")),
        };
        let (len, padded) = (h.len as usize, h.record_bytes());
        if lsn - from + padded > geo.capacity() {
            break LogStop::Invalid(format!("log record at LSN {lsn}: length {len} runs past the ring"));
        }
        let mut payload = Vec::with_capacity(len);
        if let Err(p) = reader.read(lsn + RECORD_HEADER_BYTES as u64, len, &mut payload)? {
            break LogStop::Unreadable(p);
        }
        if !h.checks(&payload) {
            break LogStop::Invalid(format!("log record at LSN {lsn}: checksum mismatch (torn or damaged)"));
        }
        let Some(kind) = RecordKind::from_u32(h.kind) else {
            break LogStop::Invalid(format!("log record at LSN {lsn}: unknown kind {}", h.kind));
        };
        out.records.push(LogRecord { lsn, kind, payload });
        lsn += padded;
        out.end = lsn;
    };
    out.stop = stop;
    let off = (out.end % geo.page_bytes) as usize;
    if off > 0 {
        let mut t = Vec::with_capacity(off);
        if let Err(p) = reader.read(out.end - off as u64, off, &mut t)? {
            // The page the scan read records from a moment ago.
            return Err(StoreError::Corrupt(format!("log page {} became unreadable: {}", p.ppn, p.why)));
        }
        out.tail_page = t;
    }
    Ok(out)
}

/// What the search of the whole ring found.
#[derive(Debug, Clone, Default)]
pub(crate) struct RingSearch {
    /// Ring pages that could not be read: they may hold records too.
    pub unreadable: Vec<UnreadablePage>,
    /// Bytes of the ring read.
    pub bytes_read: u64,
}

/// Hands every whole valid record anywhere in the ring whose LSN is in
/// `from..limit` to `found`, in LSN order, and returns the pages it could
/// not read.
///
/// Recovery searches from where its forward scan stopped: a record past
/// that point was written after the one the scan could not read, so it is
/// a commit replay cannot reach (`recovery.rs`). Records of earlier laps
/// have smaller LSNs, and nothing at or past `limit` (the checkpoint's
/// position plus the ring's capacity) can be in the ring. Two passes: the
/// first reads every page once, [`READ_AHEAD`] at a time, and keeps the
/// 8-aligned positions that hold a header with the magic, an LSN in range
/// that belongs at that position and a length within the ring; the second
/// reads those records whole and checks their CRC (a healthy log has
/// none, so it usually reads nothing).
pub(crate) fn search_ring(
    geo: LogGeometry,
    (from, limit): (u64, u64),
    qp: &Mutex<QueuePair>,
    mut found: impl FnMut(LogRecord),
) -> Result<RingSearch> {
    let mut search = RingSearch::default();
    let headers = candidate_headers(geo, (from, limit), qp, &mut search)?;
    let mut reader = RingReader { geo, qp, cached: None };
    for h in headers {
        let mut payload = Vec::with_capacity(h.len as usize);
        if let Err(p) = reader.read(h.lsn + RECORD_HEADER_BYTES as u64, h.len as usize, &mut payload)? {
            if !search.unreadable.contains(&p) {
                search.unreadable.push(p);
            }
            continue;
        }
        if let Some(kind) = RecordKind::from_u32(h.kind).filter(|_| h.checks(&payload)) {
            found(LogRecord { lsn: h.lsn, kind, payload });
        }
    }
    Ok(search)
}

/// The first pass of [`search_ring`]: the headers that may start a record
/// with an LSN in `from..limit`, by LSN.
fn candidate_headers(
    geo: LogGeometry,
    (from, limit): (u64, u64),
    qp: &Mutex<QueuePair>,
    search: &mut RingSearch,
) -> Result<Vec<RecordHeader>> {
    let (page, cap) = (geo.page_bytes as usize, geo.capacity());
    let mut out = Vec::new();
    let mut look = |pos: u64, bytes: &[u8]| {
        if bytes[..4] != MAGIC {
            return;
        }
        let h = RecordHeader::decode(bytes).expect("a whole header with the magic");
        if h.lsn % cap == pos
            && (from..limit).contains(&h.lsn)
            && u64::from(h.len) + (RECORD_HEADER_BYTES as u64) <= cap
        {
            out.push(h);
        }
    };
    // A header that starts in the last 16 bytes of a page ends on the next
    // one (the last page's, on page 0): the page before's last bytes wait
    // for the next page here.
    let mut before: Option<(u64, Vec<u8>)> = None;
    let mut first_page: Option<Vec<u8>> = None;
    let across = RECORD_HEADER_BYTES - 8;
    let join = |before: &Option<(u64, Vec<u8>)>, next: &[u8], look: &mut dyn FnMut(u64, &[u8])| {
        if let Some((pos, tail)) = before {
            for k in (0..across).step_by(8) {
                let bytes: Vec<u8> = tail[k..].iter().chain(&next[..k + 8]).copied().collect();
                look(pos + k as u64, &bytes);
            }
        }
    };
    read_pages(&mut qp.lock(), geo.start, geo.pages, |i, data| {
        let pos = i * page as u64;
        match data {
            Ok(data) => {
                join(&before, &data, &mut look);
                // Records start at multiples of 8; most positions fail at
                // the magic, compared as one word.
                let magic = u32::from_le_bytes(MAGIC);
                for (k, word) in data.chunks_exact(8).enumerate() {
                    let p = k * 8;
                    if u32::from_le_bytes(word[..4].try_into().expect("4 bytes")) == magic
                        && p + RECORD_HEADER_BYTES <= page
                    {
                        look(pos + p as u64, &data[p..p + RECORD_HEADER_BYTES]);
                    }
                }
                before = Some((pos + (page - across) as u64, data[page - across..].to_vec()));
                if i == 0 {
                    first_page = Some(data[..across].to_vec());
                }
                search.bytes_read += page as u64;
            }
            Err(why) => {
                before = None;
                search.unreadable.push(UnreadablePage { ppn: geo.start + i, why });
            }
        }
    })?;
    if let Some(first) = &first_page {
        join(&before, first, &mut look);
    }
    out.sort_by_key(|h| h.lsn);
    Ok(out)
}

/// Reads physical pages `first..first + n`, [`READ_AHEAD`] at a time, and
/// hands each to `f` in order: its bytes, or why it cannot be read. A
/// device that stopped is an error.
fn read_pages(
    qp: &mut QueuePair,
    first: u64,
    n: u64,
    mut f: impl FnMut(u64, std::result::Result<Vec<u8>, String>),
) -> Result<()> {
    let mut in_flight = std::collections::VecDeque::with_capacity(READ_AHEAD);
    let mut next = 0;
    for i in 0..n {
        while next < n && in_flight.len() < READ_AHEAD {
            in_flight.push_back(qp.submit(Command::PageRead { ppn: first + next, host_addr: None })?);
            next += 1;
        }
        let id = in_flight.pop_front().expect("a read in flight");
        match qp.wait(id)?.result {
            Ok(reply) => f(i, Ok(reply.into_data())),
            Err(e) if page_unreadable(&e) => f(i, Err(e.to_string())),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Overwrites the log from `from` (whose page holds `tail`, the bytes
/// before it) up to `to` with zeros (the caller flushes): records there
/// that recovery dropped can then never be read back as part of the log
/// that continues at `from`, whose new records take the same LSNs.
pub(crate) fn erase(geo: LogGeometry, (from, to): (u64, u64), tail: &[u8], qp: &Mutex<QueuePair>) -> Result<u64> {
    let page = geo.page_bytes;
    let mut qp = qp.lock();
    let mut at = from - from % page;
    let mut pages = 0;
    while at < to && pages < geo.pages {
        let mut data = if at < from { tail.to_vec() } else { Vec::new() };
        data.resize(page as usize, 0);
        qp.call(Command::PageWrite { ppn: geo.ppn(at), data })?;
        at += page;
        pages += 1;
    }
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An append may not reach the checkpoint's page one lap on: that page is
    /// rewritten whole, which would zero the records after the checkpoint.
    #[test]
    fn appends_stop_before_the_checkpoints_page_comes_round_again() {
        let geo = LogGeometry { start: 10, pages: 4, page_bytes: 512 };
        let checkpoint = 512 + 104;
        let wal = Wal::new(geo, checkpoint, checkpoint, vec![0; 104]);
        let mut end = checkpoint;
        while let Ok(e) = wal.append(RecordKind::Commit, &[7; 40]) {
            end = e;
        }
        assert!(end <= 512 + geo.capacity(), "the log reached LSN {end}, into the checkpoint's page");
        assert!(end + 64 > 512 + geo.capacity(), "the log stopped early, at LSN {end}");
    }
}
