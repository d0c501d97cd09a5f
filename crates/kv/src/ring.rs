//! The store's log on the device: a ring of pages after the two root slots
//! (`format::kv_image`, `docs/format/kv-image.md`), implementing [`KvLog`].
//!
//! ```text
//!   append ──► pending bytes (frame_into, under the state mutex)
//!                 │ flush_to(lsn): one flusher at a time takes every pending
//!                 ▼ byte, writes the ring pages they cover, then Flush
//!   ring:  … │ page k (tail: rewritten with its earlier bytes) │ k+1 │ …
//!                 │
//!   set_checkpoint(lsn): Flush (the pages written back before it), then the
//!   root slot of generation g+1 (slot (g+1) % 2) and Flush
//! ```
//!
//! **Group commit.** Writers append under the state mutex and then wait
//! until the log is durable up to their record's end. One of them at a
//! time is the flusher: it takes everything appended so far, writes the
//! pages it covers with `PageWrite` (rewriting the partly filled last page;
//! its earlier bytes do not change, so a torn rewrite cannot hurt records
//! already on it), issues one `Flush`, and wakes the others. Writers that
//! arrive while it writes ride on the next flush. A flush that fails leaves
//! the log failed: every later `flush_to` fails too, since bytes after a
//! half-written batch can never be acknowledged.
//!
//! **Space.** Bytes before the checkpoint may be overwritten. Ring pages are
//! written whole, so the page holding the checkpoint is not reused until the
//! checkpoint moves past it: an append may reach at most
//! `checkpoint - checkpoint % page + capacity` ([`KvError::LogFull`]
//! otherwise), and [`KvLog::capacity`] says one page less than the ring
//! holds, which the store's reservation uses to checkpoint in time.
//!
//! **Reading back.** Opening reads the ring from the checkpoint's page on
//! and walks the records up to the first position that does not hold a
//! whole valid record of this lap (zeros, an earlier lap's record, which has
//! a smaller LSN, a torn or damaged record, or a page with a media error):
//! that is where the log continues. Page writes reach the medium in order
//! and a torn write leaves a prefix of its sectors, so no record of this
//! lap lies past the first invalid one; the next append overwrites it.

use std::sync::Arc;

use ndpdb_bufmgr::PageIo;
use ndpdb_device::{Command, Device, DeviceError, QueuePair};
use ndpdb_format::kv_image::KvRoot;
use ndpdb_format::kv_log::frame_into;
use ndpdb_format::wal::{page_images, record_bytes};
use parking_lot::{Condvar, Mutex};

use crate::error::KvError;
use crate::log::{KvLog, LogRecord, record_at};

/// Log traffic since the log was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingStats {
    pub records: u64,
    /// Record bytes appended (headers and padding included).
    pub bytes: u64,
    /// Flushes: each is the page writes of one batch and one `Flush`.
    pub flushes: u64,
    pub page_writes: u64,
    /// Root slots written (checkpoints).
    pub root_writes: u64,
}

struct State {
    /// LSN the next record gets.
    end: u64,
    /// Bytes appended, not yet handed to a flusher, from `pending_from`.
    pending: Vec<u8>,
    pending_from: u64,
    /// The bytes of the page holding `pending_from`, up to it.
    tail_page: Vec<u8>,
    durable: u64,
    flushing: bool,
    checkpoint: u64,
    /// Why the log stopped (a failed flush): nothing more is acknowledged.
    failed: Option<String>,
    stats: RingStats,
}

/// The key-value store's log ring on a device.
pub struct DeviceKvLog {
    qp: Mutex<QueuePair>,
    /// The newest root slot written (its geometry is the ring's).
    root: Mutex<KvRoot>,
    geo: KvRoot,
    file: Arc<dyn PageIo>,
    state: Mutex<State>,
    flushed: Condvar,
    /// Why opening stopped reading the ring early (a page with a media
    /// error), if it did.
    open_note: Option<String>,
}

impl DeviceKvLog {
    /// An empty log for a new image described by `root` (generation 0: no
    /// slot written yet). `file` is the tree's file (its length goes into
    /// each root slot).
    pub fn create(device: &Device, root: KvRoot, file: Arc<dyn PageIo>) -> DeviceKvLog {
        let at = root.checkpoint_lsn;
        DeviceKvLog::assemble(device, root, file, at, Vec::new(), None)
    }

    /// The log of the image whose newest root slot is `root`: reads the ring
    /// from its checkpoint to find where the log continues.
    pub fn open(device: &Device, root: KvRoot, file: Arc<dyn PageIo>) -> Result<DeviceKvLog, KvError> {
        let mut qp = device.queue_pair();
        let (bytes, base, note) =
            read_ring(&mut qp, &root, root.checkpoint_lsn, root.checkpoint_lsn + root.log_capacity())?;
        let mut end = root.checkpoint_lsn;
        while let Some(rec) = record_at(&bytes, base, end) {
            end = rec.end;
        }
        let page = u64::from(root.page_bytes);
        let tail_from = (end - end % page).max(base);
        let tail = bytes[(tail_from - base) as usize..(end - base) as usize].to_vec();
        Ok(DeviceKvLog::assemble(device, root, file, end, tail, note))
    }

    fn assemble(
        device: &Device,
        root: KvRoot,
        file: Arc<dyn PageIo>,
        end: u64,
        tail_page: Vec<u8>,
        open_note: Option<String>,
    ) -> DeviceKvLog {
        DeviceKvLog {
            qp: Mutex::new(device.queue_pair()),
            root: Mutex::new(root),
            geo: root,
            file,
            state: Mutex::new(State {
                end,
                pending: Vec::new(),
                pending_from: end,
                tail_page,
                durable: end,
                flushing: false,
                checkpoint: root.checkpoint_lsn,
                failed: None,
                stats: RingStats::default(),
            }),
            flushed: Condvar::new(),
            open_note,
        }
    }

    pub fn stats(&self) -> RingStats {
        self.state.lock().stats
    }

    /// The newest root slot written.
    pub fn root(&self) -> KvRoot {
        *self.root.lock()
    }

    /// Why opening stopped reading the ring before its end (a log page with
    /// a media error: records past it, if any, were not replayed).
    pub fn open_note(&self) -> Option<&str> {
        self.open_note.as_deref()
    }

    /// The highest LSN an append may reach: the checkpoint's page is not
    /// overwritten until the checkpoint leaves it.
    fn limit(&self, checkpoint: u64) -> u64 {
        checkpoint - checkpoint % u64::from(self.geo.page_bytes) + self.geo.log_capacity()
    }

    /// Writes `data` (log bytes from `from`) to the ring pages they cover;
    /// `tail` holds the bytes already on the first page. Then `Flush`.
    fn write(&self, from: u64, data: &[u8], tail: &mut Vec<u8>) -> Result<u64, DeviceError> {
        let mut qp = self.qp.lock();
        let pages = page_images(self.geo.page_bytes as usize, from, data, tail, |at, image| {
            qp.call(Command::PageWrite { ppn: self.geo.log_ppn(at), data: image }).map(drop)
        })?;
        qp.call(Command::Flush)?;
        Ok(pages)
    }

    fn failed(why: &str) -> KvError {
        KvError::Log {
            message: format!(
                "an earlier log write failed ({why}), so no later write can be acknowledged; reopen the store \
                 (recovery keeps every acknowledged write)"
            ),
        }
    }
}

/// Reads the ring's bytes `[from - from % page, limit)` (at most one lap),
/// stopping before a page with a media error. Returns the bytes, the LSN
/// of their first byte, and a note if it stopped early.
fn read_ring(
    qp: &mut QueuePair,
    geo: &KvRoot,
    from: u64,
    limit: u64,
) -> Result<(Vec<u8>, u64, Option<String>), KvError> {
    let page = u64::from(geo.page_bytes);
    let base = from - from % page;
    let limit = limit.min(base + geo.log_capacity());
    let mut bytes = Vec::with_capacity((limit - base) as usize);
    let mut at = base;
    while at < limit {
        let ppn = geo.log_ppn(at);
        match qp.call(Command::PageRead { ppn, host_addr: None }) {
            Ok(reply) => bytes.extend_from_slice(&reply.into_data()),
            Err(e @ DeviceError::UnrecoveredRead { .. }) => {
                let note = format!("log page {ppn} (LSN {at}) cannot be read: {e}");
                return Ok((bytes, base, Some(note)));
            }
            Err(e) => return Err(KvError::Log { message: format!("reading log page {ppn}: {e}") }),
        }
        at += page;
    }
    bytes.truncate((limit - base) as usize);
    Ok((bytes, base, None))
}

impl KvLog for DeviceKvLog {
    fn append(&self, kind: u32, payload: &[u8]) -> Result<(u64, u64), KvError> {
        let needed = record_bytes(payload.len()) as u64;
        let mut s = self.state.lock();
        let lsn = s.end;
        if lsn + needed > self.limit(s.checkpoint) {
            return Err(KvError::LogFull { needed, capacity: self.capacity().unwrap_or(0), checkpoint: s.checkpoint });
        }
        let end = frame_into(&mut s.pending, lsn, kind, payload);
        s.end = end;
        s.stats.records += 1;
        s.stats.bytes += needed;
        Ok((lsn, end))
    }

    fn end_lsn(&self) -> u64 {
        self.state.lock().end
    }

    fn durable_lsn(&self) -> u64 {
        self.state.lock().durable
    }

    fn flush_to(&self, lsn: u64) -> Result<(), KvError> {
        let mut s = self.state.lock();
        loop {
            if s.durable >= lsn.min(s.end) {
                return Ok(());
            }
            if let Some(why) = &s.failed {
                return Err(DeviceKvLog::failed(why));
            }
            if s.flushing {
                self.flushed.wait(&mut s);
                continue;
            }
            s.flushing = true;
            let from = s.pending_from;
            let data = std::mem::take(&mut s.pending);
            s.pending_from = from + data.len() as u64;
            let mut tail = std::mem::take(&mut s.tail_page);
            drop(s);
            let written = self.write(from, &data, &mut tail);
            s = self.state.lock();
            s.flushing = false;
            self.flushed.notify_all();
            match written {
                Ok(pages) => {
                    s.durable = from + data.len() as u64;
                    s.tail_page = tail;
                    s.stats.flushes += 1;
                    s.stats.page_writes += pages;
                }
                Err(e) => {
                    s.failed = Some(e.to_string());
                    return Err(KvError::log(format_args!("writing the log at LSN {from}"), &e));
                }
            }
        }
    }

    fn scan(&self, from: u64, f: &mut dyn FnMut(LogRecord<'_>) -> Result<(), KvError>) -> Result<(), KvError> {
        let (checkpoint, durable) = {
            let s = self.state.lock();
            (s.checkpoint, s.durable)
        };
        let from = from.clamp(checkpoint, durable);
        let (bytes, base, _) = read_ring(&mut self.qp.lock(), &self.geo, from, durable)?;
        let mut lsn = from;
        while let Some(rec) = record_at(&bytes, base, lsn) {
            f(rec)?;
            lsn = rec.end;
        }
        Ok(())
    }

    fn checkpoint_lsn(&self) -> u64 {
        self.state.lock().checkpoint
    }

    fn set_checkpoint(&self, lsn: u64) -> Result<(), KvError> {
        let durable = self.durable_lsn();
        if lsn > durable {
            return Err(KvError::Log { message: format!("checkpoint at {lsn} past the durable log ({durable})") });
        }
        let mut root = self.root.lock();
        let next = KvRoot {
            generation: root.generation + 1,
            checkpoint_lsn: lsn.max(root.checkpoint_lsn),
            file_pages: self.file.pages(),
            ..*root
        };
        let mut qp = self.qp.lock();
        let io = |e: DeviceError| KvError::log(format_args!("writing root slot {}", next.slot()), &e);
        // The pages written back before this call reach the medium first.
        qp.call(Command::Flush).map_err(io)?;
        let slot_ppn = self.geo.log_first_ppn - ndpdb_format::kv_image::SLOTS + next.slot();
        qp.call(Command::PageWrite { ppn: slot_ppn, data: next.encode() }).map_err(io)?;
        qp.call(Command::Flush).map_err(io)?;
        drop(qp);
        *root = next;
        let mut s = self.state.lock();
        s.checkpoint = next.checkpoint_lsn;
        s.stats.root_writes += 1;
        Ok(())
    }

    fn capacity(&self) -> Option<u64> {
        Some(self.geo.log_capacity() - u64::from(self.geo.page_bytes))
    }
}

impl std::fmt::Debug for DeviceKvLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceKvLog").field("root", &*self.root.lock()).finish_non_exhaustive()
    }
}
