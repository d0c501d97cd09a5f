//! # Delta pages in frames the device reads (CBM freshness)
//!
//! An NDP call with [`Freshness::Cbm`](crate::Freshness::Cbm) ships no
//! delta-buffer page: the device's PEs read the pages they reach straight
//! from host memory, through the mirror of these frames (`docs/cbm.md`,
//! "CBM for the MVCC engine"; the device side is `ndpdb-device`'s
//! `mirror.rs` and `chain.rs`).
//!
//! ```text
//!   table.delta (HeapPage, the host's working copy) ──every change──► frame
//!                                                   [front][lpn][heap page][rear]
//!   start a delta page: frame = take(), install (lpn, empty page),
//!                       log DeltaPage { table, lpn, frame_addr } (not forced)
//!   append / GC cut:    publish the bytes it changed (page versions)
//!   write_delta:        PageWrite(sealed page) ─► mirror: lpn Clean
//!                       retire(frame) ─► limbo ─► free once every CBM call
//!                       begun before the write has ended
//! ```
//!
//! - **Frames.** One `bufmgr::HostFrames` arena of `StoreOptions::delta_frames`
//!   frames of `page_bytes + 24` bytes, attached to the device when the
//!   mirror is configured. A frame is a buffer-pool page
//!   (`docs/buffer-manager.md`): front version, pid word (the lpn), the
//!   heap page, rear version. A frame has one writer at a time: its delta
//!   page's table state lock is held for every change.
//! - **Publishing.** Each change is stored under the page versions
//!   (`HostFrames::publish`: `seqlock::begin_write` … `end_write`), so a DMA
//!   read that overlaps it finds front != rear and reads again. An append
//!   changes the page header, one slot entry and the record's bytes; a GC
//!   cut changes a record's `prev`. Those are published, not the page.
//! - **Limbo by epochs.** A CBM call captures heads that may point into a
//!   delta page which the host writes to the medium while the call runs;
//!   the call's L2P does not map it, so the device reads it from its frame.
//!   A written page's frame therefore waits (with its bytes) until every
//!   CBM call that began before the write has ended: calls take increasing
//!   epochs when they begin ([`DeltaFrames::begin_call`]), a retired frame
//!   is tagged with the next epoch, and it is free once no running call
//!   has a smaller one (as `reuse.rs` does for physical pages).
//! - **Which pages the device can find.** The mirror reads the log from the
//!   LSN the store configured it with (`mirror_lsn`); a delta page whose
//!   record lies before it, or that has no frame (started before the
//!   mirror was configured), is invisible to the device, and a CBM call
//!   writes the table's delta buffer before it captures the call if it
//!   holds one ([`DeltaFrame::visible`]).

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use ndpdb_bufmgr::HostFrames;
use ndpdb_format::page::{self, HeapPage};

use crate::error::{Result, StoreError};
use crate::lock_order::{Level, OrderedMutex};

/// Bytes of a frame around its page: front version, pid word, rear version.
pub(crate) const FRAME_OVERHEAD: usize = 24;
/// Byte of a frame where its page starts.
const PAGE_AT: usize = 16;

/// A delta page's frame, and where its delta-page record starts in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeltaFrame {
    pub frame: usize,
    pub record_lsn: u64,
}

impl DeltaFrame {
    /// Whether the device's mirror, configured at `mirror_lsn`, learns of
    /// this page (its record is at or after the LSN it reads from).
    pub(crate) fn visible(this: Option<DeltaFrame>, mirror_lsn: u64) -> bool {
        this.is_some_and(|f| f.record_lsn >= mirror_lsn)
    }
}

/// What the frames are doing (`Store::delta_frame_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeltaFrameStats {
    pub frames: u64,
    pub free: u64,
    /// Frames of written pages kept for CBM calls still running.
    pub limbo: u64,
    /// CBM calls running.
    pub calls: u64,
}

struct FrameState {
    free: Vec<usize>,
    /// (epoch it was retired in, frame), in retirement order.
    limbo: VecDeque<(u64, usize)>,
    next_epoch: u64,
    /// Epochs of the CBM calls running.
    calls: BTreeSet<u64>,
}

impl FrameState {
    fn release(&mut self) {
        let oldest = self.calls.first().copied();
        while let Some(&(epoch, frame)) = self.limbo.front() {
            if oldest.is_some_and(|o| o < epoch) {
                break;
            }
            self.limbo.pop_front();
            self.free.push(frame);
        }
    }
}

/// The frames of the store's delta pages (module docs).
pub(crate) struct DeltaFrames {
    frames: Arc<HostFrames>,
    state: OrderedMutex<FrameState>,
}

/// A CBM call running: its frames' limbo holds until it is dropped.
pub(crate) struct CbmCall<'a> {
    frames: &'a DeltaFrames,
    epoch: u64,
}

impl Drop for CbmCall<'_> {
    fn drop(&mut self) {
        let mut s = self.frames.state.lock();
        s.calls.remove(&self.epoch);
        s.release();
    }
}

impl DeltaFrames {
    /// `count` frames for pages of `page_bytes`.
    pub(crate) fn new(count: usize, page_bytes: usize) -> Result<DeltaFrames> {
        if count == 0 {
            return Err(StoreError::InvalidInput(
                "StoreOptions::delta_frames is 0: CBM freshness needs at least one frame per delta page".into(),
            ));
        }
        let frames = HostFrames::new(count, page_bytes + FRAME_OVERHEAD)
            .map_err(|e| StoreError::InvalidInput(format!("delta frames: {e}")))?;
        let state = FrameState {
            free: (0..count).rev().collect(),
            limbo: VecDeque::new(),
            next_epoch: 0,
            calls: BTreeSet::new(),
        };
        Ok(DeltaFrames { frames: Arc::new(frames), state: OrderedMutex::new(Level::DeltaFrames, state) })
    }

    /// The arena, to attach to the device.
    pub(crate) fn host_memory(&self) -> Arc<HostFrames> {
        self.frames.clone()
    }

    pub(crate) fn count(&self) -> usize {
        self.frames.frames()
    }

    pub(crate) fn frame_bytes(&self) -> usize {
        self.frames.page_bytes()
    }

    /// The host address the device names `frame` by.
    pub(crate) fn addr(&self, frame: usize) -> u64 {
        self.frames.frame_addr(frame)
    }

    /// A free frame holding `page` (pid word: its lpn), or None if every
    /// frame is in use or in limbo.
    pub(crate) fn take(&self, page: &HeapPage) -> Option<usize> {
        let frame = {
            let mut s = self.state.lock();
            s.release();
            s.free.pop()?
        };
        self.frames.install_page(frame, page.lpn(), page.bytes());
        Some(frame)
    }

    /// `frame`'s page was written to the medium: the frame waits in limbo
    /// for the CBM calls running now.
    pub(crate) fn retire(&self, frame: usize) {
        let mut s = self.state.lock();
        let epoch = s.next_epoch;
        s.limbo.push_back((epoch, frame));
        s.release();
    }

    /// A CBM call begins (before it captures the table's state).
    pub(crate) fn begin_call(&self) -> CbmCall<'_> {
        let mut s = self.state.lock();
        let epoch = s.next_epoch;
        s.next_epoch += 1;
        s.calls.insert(epoch);
        CbmCall { frames: self, epoch }
    }

    /// Publishes record `slot` of `page` (just appended, or its `prev`
    /// cut) to `frame`: the page header, the slot entry and the record.
    pub(crate) fn publish_record(&self, frame: usize, page: &HeapPage, slot: u16) -> Result<()> {
        let bytes = page.bytes();
        let corrupt = |e| StoreError::corrupt(format!("delta page {}", page.lpn()), e);
        let h = page::PageHeader::decode(bytes).map_err(corrupt)?;
        let (off, len) = page::slot_entry(bytes, &h, slot).map_err(corrupt)?;
        let at = page::slot_at(slot);
        self.frames.publish(
            frame,
            &[
                (PAGE_AT, &bytes[..page::PAGE_HEADER_BYTES]),
                (PAGE_AT + at, &bytes[at..at + page::SLOT_BYTES]),
                (PAGE_AT + off, &bytes[off..off + len]),
            ],
        );
        Ok(())
    }

    pub(crate) fn stats(&self) -> DeltaFrameStats {
        let s = self.state.lock();
        DeltaFrameStats {
            frames: self.count() as u64,
            free: s.free.len() as u64,
            limbo: s.limbo.len() as u64,
            calls: s.calls.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(lpn: u64) -> HeapPage {
        HeapPage::new(512, 1, lpn)
    }

    /// A frame retired while a call runs is not handed out until that call
    /// ends; one retired before the call began is.
    #[test]
    fn limbo_waits_for_the_calls_begun_before_the_write() {
        let f = DeltaFrames::new(2, 512).unwrap();
        let a = f.take(&page(1)).unwrap();
        let b = f.take(&page(2)).unwrap();
        assert_eq!(f.take(&page(3)), None, "both frames in use");
        f.retire(a);
        let call = f.begin_call();
        f.retire(b);
        assert_eq!(f.take(&page(3)), Some(a), "retired before the call began");
        assert_eq!(f.take(&page(4)), None, "b waits for the call");
        let later = f.begin_call();
        drop(call);
        assert_eq!(f.stats().limbo, 0, "only calls begun before the write hold it");
        assert_eq!(f.take(&page(4)), Some(b));
        drop(later);
        assert_eq!(f.stats(), DeltaFrameStats { frames: 2, free: 0, limbo: 0, calls: 0 });
    }

    /// What the device copies out of a frame is the page, whole.
    #[test]
    fn a_published_append_reads_back_whole() {
        let f = DeltaFrames::new(1, 512).unwrap();
        let mut p = page(9);
        let frame = f.take(&p).unwrap();
        let record = [7u8; 40];
        let slot = p.insert(&record).unwrap();
        f.publish_record(frame, &p, slot).unwrap();
        let mut out = vec![0u8; f.frame_bytes()];
        f.frames.dma_read(f.addr(frame), &mut out).unwrap();
        assert!(ndpdb_bufmgr::seqlock::versions_match(&out));
        assert_eq!(&out[8..16], &9u64.to_le_bytes());
        assert_eq!(&out[PAGE_AT..PAGE_AT + 512], p.bytes());
    }
}
