//! # The mirror of the host's buffer pool (cooperative buffer manager)
//!
//! The host caches pages of a buffer-managed file and changes them in its
//! frames; a program on the PEs that reads the medium would miss those
//! changes. The mirror is the device's copy of the host pool's page states
//! (the CBM paper's Fig. 3): one descriptor per page the host holds,
//! `(pid, Clean | Dirty, host address)`, indexed by pid and by host
//! address, at most as many as the pool has frames. The in-storage lookup
//! (`kv_lookup.rs`) asks it where a page's newest copy is.
//!
//! It changes only through commands the host sends anyway (the paper's page
//! state piggybacking; `MirrorConfigure` once per store aside), so the
//! command counters show no extra command per state change:
//!
//! ```text
//!                 PageRead(file page p, frame a)
//!   ┌─────────┐  ─────────────────────────────►  ┌─────────┐
//!   │ Evicted │  (drops whatever held a: the     │  Clean  │◄──┐
//!   │ (no     │   frame was reused)              │  at a   │   │ PageWrite(p)
//!   │ descr.) │◄──────────────────────────────── └─────────┘   │ (written back,
//!   └─────────┘  PageRead(other page, frame a)       │         │  page LSN >= the
//!        │  ▲    or a log record naming (q, a)       │ log     │  newest record's)
//!        │  └─────────────────────────────────┐      │ record  │
//!        │ log record naming (p, a)           │      ▼ (p, a)  │
//!        │ (a page created by extending    ┌─────────┐         │
//!        └──────────────────────────────►  │  Dirty  │─────────┘
//!          the file arrives this way)      │  at a   │
//!                                          └─────────┘
//! ```
//!
//! **Conservative in one direction.** A Dirty page reported Clean (or
//! absent) sends the lookup to the medium and gives a stale answer; a Clean
//! page reported Dirty only costs a DMA read of a frame that holds the same
//! bytes (the lookup checks the frame's pid word and retries, then fails,
//! if the frame holds another page). So every doubt resolves towards Dirty
//! or towards "unknown", never towards Clean:
//!
//! - a `PageWrite` makes a page Clean only if the page it carries is at
//!   least as new as the newest log record that named it (its node header's
//!   LSN, `format::btree`): a write-back of a copy taken before a change
//!   whose record the device has already seen leaves the page Dirty;
//! - the log is parsed as one stream of `format::kv_log` records in LSN
//!   order from the LSN the host named when it configured the mirror
//!   (`log.rs`); a record whose bytes are whole but do not check (CRC,
//!   payload, a pid outside the file, an address that is no frame), or a
//!   hole in the stream, means the mirror may have missed a Dirty page: it
//!   is then *lost*, and every lookup through it fails with the reason until
//!   the host configures it again. Bytes that are not (yet) a record at the
//!   stream's next position (zeros, a record of an earlier lap of the ring,
//!   garbage without the magic) change nothing: the host's next write of
//!   that page brings the record.
//!
//! Host addresses name frames: multiples of the frame size below
//! `frames × frame size` (the pool's `HostFrames` addresses).
//!
//! **Heap mode** (`MirrorKind::Heap`, the MVCC engine's CBM freshness,
//! `docs/cbm.md`): the pages are the store's delta-buffer pages, named by
//! lpn, in frames of `frame_bytes` (a page plus the 24 bytes of front, pid
//! word and rear). The log is the MVCC log (`format::wal`): a delta-page
//! record makes its lpn Dirty at its frame; a `PageWrite` of any page that
//! carries a heap page whose lpn has a descriptor makes it Clean, keeping
//! the address (the frame keeps the bytes until it is reused). Page reads
//! change nothing. A Dirty descriptor that outlives its page (the record
//! reached the device after the page was written) is harmless: the frame
//! still holds the page's final bytes, or another page, which the reader's
//! pid check sees (`chain.rs`).

use std::collections::HashMap;

use ndpdb_format::btree::at;
use ndpdb_format::page::{PageHeader, PageKind, RecordId};
use serde::Serialize;

use crate::error::DeviceError;

use crate::mirror_log::{LogStream, RECORD_PAGES_MAX, heap_pages_named, kv_pages_named};

/// Which host structure the mirror follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MirrorKind {
    /// The key-value store's B+-tree file and its log (`MirrorConfigure`).
    Kv,
    /// The MVCC store's delta-buffer pages and its log
    /// (`MirrorConfigureHeap`; the file fields are 0).
    Heap,
}

/// What the host told the device with `MirrorConfigure` (or
/// `MirrorConfigureHeap`), and the page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MirrorConfig {
    pub kind: MirrorKind,
    /// Bytes of a frame: the page size in Kv mode, page + 24 in heap mode.
    pub frame_bytes: u64,
    pub file_first_ppn: u64,
    pub file_pages: u64,
    pub log_first_ppn: u64,
    pub log_pages: u64,
    pub frames: u64,
    /// The LSN of the first log record the mirror reads (the log's end when
    /// the host configured it; earlier changes the host wrote back).
    pub log_lsn: u64,
    pub page_bytes: u64,
}

/// A page's state in the mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PageState {
    Clean,
    Dirty,
}

/// One page the host holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    pub pid: u64,
    pub state: PageState,
    pub host_addr: u64,
    /// End LSN of the newest record that named the page (0: none).
    pub dirty_lsn: u64,
}

/// Where a program finds a page's newest copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// No descriptor, or Clean: the medium holds the newest copy.
    Medium,
    /// Dirty: the frame at this host address holds it.
    Host(u64),
}

/// What the mirror has seen (exact; read with `Device::mirror_stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MirrorStats {
    pub descriptors: u64,
    pub dirty: u64,
    pub page_reads: u64,
    pub page_writes: u64,
    pub log_pages: u64,
    pub records: u64,
    /// Descriptors dropped because their frame now holds another page.
    pub reused_frames: u64,
    /// Write-backs that left a page Dirty (the copy predates a record).
    pub stale_write_backs: u64,
    /// Heap mode: page writes that made a delta page Clean.
    pub cleaned: u64,
    /// Why the mirror lost track of the log, if it did.
    pub lost: Option<String>,
}

/// The device's mirror of one host pool.
#[derive(Debug)]
pub struct Mirror {
    config: MirrorConfig,
    by_pid: HashMap<u64, Descriptor>,
    /// Host address -> the pid whose descriptor holds it.
    by_addr: HashMap<u64, u64>,
    log: LogStream,
    stats: MirrorStats,
}

impl Mirror {
    /// A mirror with no descriptors; refuses a configuration whose regions
    /// are empty or overlap (the caller checked they lie on the device).
    pub fn new(config: MirrorConfig) -> Result<Mirror, DeviceError> {
        let c = &config;
        let bad = |what: String| Err(DeviceError::InvalidCommand { what: format!("mirror_configure: {what}") });
        if c.frames == 0 || c.frames > 1 << 24 {
            return bad(format!("{} frames; configure 1 to 2^24 (the pool's frame count)", c.frames));
        }
        let heap = c.kind == MirrorKind::Heap;
        if (!heap && c.file_pages == 0) || c.log_pages == 0 {
            return bad("the file and the log need at least one page each".into());
        }
        let frame_min = if heap { c.page_bytes + 24 } else { c.page_bytes };
        if c.frame_bytes < frame_min || !c.frame_bytes.is_multiple_of(8) || c.frame_bytes > 1 << 24 {
            return bad(format!(
                "frames of {} bytes; a frame holds a {}-byte page and its versions (at least {frame_min}, a multiple of 8)",
                c.frame_bytes, c.page_bytes
            ));
        }
        let (f, l) =
            (c.file_first_ppn..c.file_first_ppn + c.file_pages, c.log_first_ppn..c.log_first_ppn + c.log_pages);
        if f.start < l.end && l.start < f.end {
            return bad(format!("the file's pages {f:?} overlap the log's {l:?}"));
        }
        if !c.log_lsn.is_multiple_of(8) {
            return bad(format!("log LSN {} is not a multiple of 8 (records start at multiples of 8)", c.log_lsn));
        }
        Ok(Mirror {
            log: LogStream::new(
                c.log_lsn,
                c.page_bytes,
                c.log_pages,
                if heap { heap_pages_named } else { kv_pages_named },
                if heap { c.log_pages * c.page_bytes } else { RECORD_PAGES_MAX * c.page_bytes },
            ),
            by_pid: HashMap::with_capacity(c.frames.min(1 << 16) as usize),
            by_addr: HashMap::with_capacity(c.frames.min(1 << 16) as usize),
            stats: MirrorStats::default(),
            config,
        })
    }

    pub fn config(&self) -> &MirrorConfig {
        &self.config
    }

    pub fn stats(&self) -> MirrorStats {
        let dirty = self.by_pid.values().filter(|d| d.state == PageState::Dirty).count() as u64;
        MirrorStats { descriptors: self.by_pid.len() as u64, dirty, ..self.stats.clone() }
    }

    pub fn descriptor(&self, pid: u64) -> Option<Descriptor> {
        self.by_pid.get(&pid).copied()
    }

    /// Where page `pid`'s newest copy is; an error if the mirror lost track.
    pub fn view(&self, pid: u64) -> Result<View, String> {
        if let Some(why) = &self.stats.lost {
            return Err(format!(
                "the device's mirror of the host pool lost track of the log ({why}); the host must configure it again"
            ));
        }
        Ok(match self.by_pid.get(&pid) {
            Some(d) if d.state == PageState::Dirty => View::Host(d.host_addr),
            _ => View::Medium,
        })
    }

    /// Page `pid`'s descriptor (Clean or Dirty), or None; an error if the
    /// mirror lost track (as [`Mirror::view`]).
    pub fn lookup(&self, pid: u64) -> Result<Option<Descriptor>, String> {
        self.view(pid).map(|_| self.by_pid.get(&pid).copied())
    }

    fn file_pid(&self, ppn: u64) -> Option<u64> {
        if self.config.kind == MirrorKind::Heap {
            return None;
        }
        ppn.checked_sub(self.config.file_first_ppn).filter(|&p| p < self.config.file_pages)
    }

    fn log_index(&self, ppn: u64) -> Option<u64> {
        ppn.checked_sub(self.config.log_first_ppn).filter(|&p| p < self.config.log_pages)
    }

    fn frame_addr_ok(&self, addr: u64) -> bool {
        addr.is_multiple_of(self.config.frame_bytes) && addr / self.config.frame_bytes < self.config.frames
    }

    /// A `PageRead` of physical page `ppn` into the frame at `host_addr`.
    pub fn on_page_read(&mut self, ppn: u64, host_addr: Option<u64>) {
        let (Some(pid), Some(addr)) = (self.file_pid(ppn), host_addr) else { return };
        self.stats.page_reads += 1;
        // The host reads the page because it does not hold it: any
        // descriptor it had is stale.
        self.remove_pid(pid);
        if !self.frame_addr_ok(addr) {
            // Not a frame we can name: whatever the frame held before stays
            // (Dirty: the lookup's pid check catches it; Clean: the medium).
            return;
        }
        self.place(Descriptor { pid, state: PageState::Clean, host_addr: addr, dirty_lsn: 0 });
    }

    /// A `PageWrite` of physical page `ppn` carrying `data`.
    pub fn on_page_write(&mut self, ppn: u64, data: &[u8]) {
        if let Some(pid) = self.file_pid(ppn) {
            self.stats.page_writes += 1;
            let Some(d) = self.by_pid.get_mut(&pid) else { return };
            let words = (data.get(at::PID..at::PID + 8), data.get(at::LSN..at::LSN + 8));
            let (Some(pid_word), Some(lsn)) = words else { return };
            let (pid_word, lsn) = (le_u64(pid_word), le_u64(lsn));
            if pid_word == pid && lsn >= d.dirty_lsn {
                d.state = PageState::Clean;
            } else if d.state == PageState::Dirty {
                self.stats.stale_write_backs += 1;
            }
        } else if let Some(index) = self.log_index(ppn) {
            self.on_log_write(index, data);
        } else if self.config.kind == MirrorKind::Heap {
            self.on_heap_write(data);
        }
    }

    /// Heap mode: a written heap page whose lpn has a descriptor is Clean
    /// (at the same address: the frame keeps its bytes until reused).
    fn on_heap_write(&mut self, data: &[u8]) {
        let Ok(h) = PageHeader::decode(data) else { return };
        if h.kind != PageKind::Heap {
            return;
        }
        self.stats.page_writes += 1;
        if let Some(d) = self.by_pid.get_mut(&h.lpn)
            && d.state == PageState::Dirty
        {
            d.state = PageState::Clean;
            self.stats.cleaned += 1;
        }
    }

    /// A write of log ring page `index`: the records it completes.
    fn on_log_write(&mut self, index: u64, data: &[u8]) {
        self.stats.log_pages += 1;
        if self.stats.lost.is_some() {
            return;
        }
        let mut marks = Vec::new();
        let outcome = self.log.absorb(index, data, &mut |pid, addr, end| marks.push((pid, addr, end)));
        for (pid, addr, end) in marks {
            self.stats.records += 1;
            if let Err(why) = self.mark_dirty(pid, addr, end) {
                self.stats.lost = Some(why);
                return;
            }
        }
        if let Err(why) = outcome {
            self.stats.lost = Some(why);
        }
    }

    /// A log record ending at `end` names `pid` in the frame at `addr`.
    fn mark_dirty(&mut self, pid: u64, addr: u64, end: u64) -> Result<(), String> {
        if self.config.kind == MirrorKind::Heap && pid > RecordId::LPN_MAX {
            return Err(format!("a record ending at LSN {end} names logical page {pid}, above the largest"));
        }
        if self.config.kind == MirrorKind::Kv && pid >= self.config.file_pages {
            return Err(format!(
                "a record ending at LSN {end} names page {pid}; the file has {}",
                self.config.file_pages
            ));
        }
        if !self.frame_addr_ok(addr) {
            return Err(format!("a record ending at LSN {end} names page {pid} in frame address {addr:#x}, no frame"));
        }
        let dirty_lsn = match self.by_pid.get(&pid) {
            Some(d) if d.host_addr == addr => d.dirty_lsn.max(end),
            _ => end,
        };
        self.remove_pid(pid);
        self.place(Descriptor { pid, state: PageState::Dirty, host_addr: addr, dirty_lsn });
        Ok(())
    }

    /// Puts `d` in, dropping the descriptor that held its address.
    fn place(&mut self, d: Descriptor) {
        if let Some(old) = self.by_addr.insert(d.host_addr, d.pid)
            && old != d.pid
        {
            self.by_pid.remove(&old);
            self.stats.reused_frames += 1;
        }
        self.by_pid.insert(d.pid, d);
        debug_assert!(self.by_pid.len() as u64 <= self.config.frames, "one descriptor per frame");
        debug_assert_eq!(self.by_pid.len(), self.by_addr.len());
    }

    fn remove_pid(&mut self, pid: u64) {
        if let Some(d) = self.by_pid.remove(&pid) {
            self.by_addr.remove(&d.host_addr);
        }
    }
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().expect("8 bytes"))
}
