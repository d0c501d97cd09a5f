//! The store's log, as a trait: the on-device ring is `ring.rs`'s
//! `DeviceKvLog`; [`MemoryKvLog`] is the in-memory implementation for tests.
//!
//! A log hands out LSNs (byte positions in an endless stream), frames each
//! record as `format::kv_log::frame_into` does (a record starts at the LSN
//! `append` returns and ends at the LSN after it), keeps what was flushed
//! across a crash, replays from a position, and remembers the checkpoint's
//! position, before which it may reuse its space.
//!
//! What an on-device ring must provide for this trait: appends that return
//! (start, end) LSNs in append order; `flush_to` that makes every record
//! ending at or below the LSN durable (group commit: one device write and
//! `Flush` for all waiting); `scan` that stops at the first record that is
//! not whole and valid (torn tail); `set_checkpoint` that makes its LSN
//! durable (the root page's slot) only after the page writes before it are
//! durable (a device `Flush`), and that refuses appends which would
//! overwrite bytes at or after it (`KvError::LogFull`).

use ndpdb_bufmgr::{LogSync, PoolError};
use ndpdb_format::kv_log::frame_into;
use ndpdb_format::wal::{RECORD_HEADER_BYTES, RecordHeader};
use parking_lot::Mutex;

use crate::error::KvError;

/// A record read back by [`KvLog::scan`].
#[derive(Debug, Clone, Copy)]
pub struct LogRecord<'a> {
    pub lsn: u64,
    /// The LSN just past the record (header, payload and padding).
    pub end: u64,
    pub kind: u32,
    pub payload: &'a [u8],
}

/// The key-value store's write-ahead log.
pub trait KvLog: Send + Sync {
    /// Appends a record of `kind`; its (start, end) LSNs.
    fn append(&self, kind: u32, payload: &[u8]) -> Result<(u64, u64), KvError>;
    /// Where the next record goes.
    fn end_lsn(&self) -> u64;
    /// Records ending at or below this LSN are durable.
    fn durable_lsn(&self) -> u64;
    /// Makes every record ending at or below `lsn` durable.
    fn flush_to(&self, lsn: u64) -> Result<(), KvError>;
    /// Calls `f` with each durable record from `from` on, in order, up to the
    /// first that is not whole and valid. `f` may call the log's other
    /// methods (the pool asks `durable_lsn` when recovery's fixes evict).
    fn scan(&self, from: u64, f: &mut dyn FnMut(LogRecord<'_>) -> Result<(), KvError>) -> Result<(), KvError>;
    /// Where recovery starts: the newest durable checkpoint's LSN.
    fn checkpoint_lsn(&self) -> u64;
    /// Moves the checkpoint to `lsn` (durably); bytes before it may be reused.
    fn set_checkpoint(&self, lsn: u64) -> Result<(), KvError>;
    /// Bytes the log holds past its checkpoint, if bounded.
    fn capacity(&self) -> Option<u64>;
}

/// The pool's view of a [`KvLog`]: the write-ahead rule's two questions.
pub struct PoolLog(pub std::sync::Arc<dyn KvLog>);

impl LogSync for PoolLog {
    fn durable_lsn(&self) -> u64 {
        self.0.durable_lsn()
    }
    fn flush_to(&self, lsn: u64) -> Result<(), PoolError> {
        self.0.flush_to(lsn).map_err(|e| PoolError::Log { message: e.to_string() })
    }
}

/// A log in memory. "Durable" is what survives [`MemoryKvLog::crash`].
#[derive(Debug, Default)]
pub struct MemoryKvLog {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The bytes from LSN `base` on.
    bytes: Vec<u8>,
    base: u64,
    durable: u64,
    checkpoint: u64,
    capacity: Option<u64>,
    flushes: u64,
}

impl Inner {
    fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }
}

impl MemoryKvLog {
    /// An unbounded log.
    pub fn new() -> MemoryKvLog {
        MemoryKvLog::default()
    }

    /// A log that holds `capacity` bytes past its checkpoint.
    pub fn with_capacity(capacity: u64) -> MemoryKvLog {
        let log = MemoryKvLog::default();
        log.inner.lock().capacity = Some(capacity);
        log
    }

    /// Drops everything not durable, as a crash would.
    pub fn crash(&self) {
        let mut g = self.inner.lock();
        let keep = (g.durable - g.base) as usize;
        g.bytes.truncate(keep);
    }

    /// Flips a byte at `lsn` (a torn or damaged tail, for tests).
    pub fn damage(&self, lsn: u64) {
        let mut g = self.inner.lock();
        let at = lsn.checked_sub(g.base).map(|a| a as usize).filter(|&a| a < g.bytes.len());
        if let Some(at) = at {
            g.bytes[at] ^= 0x5a;
        }
    }

    /// `flush_to` calls that had something to flush.
    pub fn flushes(&self) -> u64 {
        self.inner.lock().flushes
    }
}

impl KvLog for MemoryKvLog {
    fn append(&self, kind: u32, payload: &[u8]) -> Result<(u64, u64), KvError> {
        let mut g = self.inner.lock();
        let lsn = g.end();
        let needed = ndpdb_format::wal::record_bytes(payload.len()) as u64;
        if let Some(capacity) = g.capacity
            && lsn + needed - g.checkpoint > capacity
        {
            return Err(KvError::LogFull { needed, capacity, checkpoint: g.checkpoint });
        }
        let end = frame_into(&mut g.bytes, lsn, kind, payload);
        Ok((lsn, end))
    }

    fn end_lsn(&self) -> u64 {
        self.inner.lock().end()
    }

    fn durable_lsn(&self) -> u64 {
        self.inner.lock().durable
    }

    fn flush_to(&self, lsn: u64) -> Result<(), KvError> {
        let mut g = self.inner.lock();
        if lsn > g.durable {
            // Group commit: everything appended so far goes with it.
            g.durable = g.end();
            g.flushes += 1;
        }
        Ok(())
    }

    fn scan(&self, from: u64, f: &mut dyn FnMut(LogRecord<'_>) -> Result<(), KvError>) -> Result<(), KvError> {
        // A copy, so that `f` may call back into the log (recovery's page
        // fixes evict, and eviction asks the log how far it is durable).
        let (bytes, base) = {
            let g = self.inner.lock();
            let start = from.clamp(g.base, g.durable);
            (g.bytes[(start - g.base) as usize..(g.durable - g.base) as usize].to_vec(), start)
        };
        let mut lsn = base;
        while let Some(rec) = record_at(&bytes, base, lsn) {
            f(rec)?;
            lsn = rec.end;
        }
        Ok(())
    }

    fn checkpoint_lsn(&self) -> u64 {
        self.inner.lock().checkpoint
    }

    fn set_checkpoint(&self, lsn: u64) -> Result<(), KvError> {
        let mut g = self.inner.lock();
        if lsn > g.durable {
            return Err(KvError::Log { message: format!("checkpoint at {lsn} past the durable log ({})", g.durable) });
        }
        g.checkpoint = g.checkpoint.max(lsn);
        let drop = (g.checkpoint - g.base) as usize;
        g.bytes.drain(..drop);
        g.base = g.checkpoint;
        Ok(())
    }

    fn capacity(&self) -> Option<u64> {
        self.inner.lock().capacity
    }
}

/// The whole, valid record at `lsn` of a log whose bytes start at `base`.
pub fn record_at(bytes: &[u8], base: u64, lsn: u64) -> Option<LogRecord<'_>> {
    let at = usize::try_from(lsn.checked_sub(base)?).ok()?;
    let h = RecordHeader::decode(bytes.get(at..)?).ok()?;
    let body = at + RECORD_HEADER_BYTES;
    let payload = bytes.get(body..body.checked_add(h.len as usize)?)?;
    let end = lsn + h.record_bytes();
    if h.lsn != lsn || !h.checks(payload) || end - base > bytes.len() as u64 {
        return None;
    }
    Some(LogRecord { lsn, end, kind: h.kind, payload })
}
