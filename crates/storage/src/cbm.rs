//! CBM freshness on the store's side: configuring the device's mirror of
//! the delta frames, and what a CBM call does around `scan.rs`'s call
//! (`docs/cbm.md`, "CBM for the MVCC engine"; the frames are
//! `delta_frames.rs`).
//!
//! ```text
//!   first CBM call (or after the mirror was lost):
//!     frames = DeltaFrames::new(delta_frames), attached to the device
//!     with the log quiesced: MirrorConfigureHeap { log ring, frames, log_lsn = log end }
//!   every CBM call:
//!     begin_call (epoch) ─► capture under the table lock: delta pages the
//!     mirror cannot know (no frame, or record before log_lsn) are written
//!     first; the call lists no delta page ─► log durable to its end ─►
//!     Execute with the mirror flag ─► end of call (limbo released)
//! ```
//!
//! Configuring with the log quiesced (no append, no flush) means every
//! record at or after `log_lsn` reaches the device after the mirror exists,
//! starting with the page that holds `log_lsn`: the mirror reads the
//! stream from its first byte, never skips. A page whose record lies before
//! `log_lsn` is written by the next CBM call over its table.

use std::sync::atomic::Ordering;

use ndpdb_device::Command;

use crate::delta_frames::{DeltaFrameStats, DeltaFrames};
use crate::error::{Result, StoreError};
use crate::store::Store;

/// `Cbm::mirror_lsn` when no mirror is configured.
pub(crate) const NO_MIRROR: u64 = u64::MAX;

impl Store {
    /// The delta frames with the device's mirror following them:
    /// configures it on the first CBM call and again after it was lost.
    pub(crate) fn cbm_ready(&self) -> Result<&DeltaFrames> {
        self.writable("a CBM call (it may write delta pages the device cannot find)")?;
        let _one = self.cbm.configuring.lock();
        let lost = self.device().mirror_stats().is_none_or(|s| s.lost.is_some());
        if let Some(frames) = self.cbm.frames.get()
            && self.cbm.mirror_lsn.load(Ordering::Acquire) != NO_MIRROR
            && !lost
        {
            return Ok(frames);
        }
        let frames = match self.cbm.frames.get() {
            Some(f) => f,
            None => {
                let f = DeltaFrames::new(self.opts.delta_frames, self.page_bytes)?;
                self.cbm.frames.get_or_init(|| f)
            }
        };
        self.device().attach_host_memory(frames.host_memory());
        let geo = self.wal.geo;
        let lsn = self.wal.quiesced(|end| -> Result<u64> {
            self.wal_qp.lock().call(Command::MirrorConfigureHeap {
                log_first_ppn: geo.start,
                log_pages: geo.pages,
                frames: frames.count() as u64,
                frame_bytes: frames.frame_bytes() as u64,
                log_lsn: end,
            })?;
            Ok(end)
        })?;
        self.cbm.mirror_lsn.store(lsn, Ordering::Release);
        Ok(frames)
    }

    /// Configures the device's mirror of the delta frames now, so that the
    /// delta pages started from here on are in frames it knows (the first
    /// CBM call does it otherwise, and writes the pages started before).
    pub fn prepare_cbm(&self) -> Result<()> {
        self.cbm_ready().map(drop)
    }

    /// The LSN the device's mirror reads the log from ([`NO_MIRROR`]: none).
    pub(crate) fn mirror_lsn(&self) -> u64 {
        self.cbm.mirror_lsn.load(Ordering::Acquire)
    }

    /// What a failed CBM call means: if the device's mirror lost track of
    /// the log, an error that says so (the next CBM call configures it
    /// again); otherwise the error as it was.
    pub(crate) fn cbm_failure(&self, e: StoreError) -> StoreError {
        match self.device().mirror_stats().and_then(|s| s.lost) {
            Some(why) => {
                self.cbm.mirror_lsn.store(NO_MIRROR, Ordering::Release);
                StoreError::MirrorLost(why)
            }
            None => e,
        }
    }

    /// The delta frames' state (None before the first CBM call).
    pub fn delta_frame_stats(&self) -> Option<DeltaFrameStats> {
        self.cbm.frames.get().map(DeltaFrames::stats)
    }
}

#[cfg(test)]
mod tests {
    use ndpdb_format::ndp::Snapshot;
    use ndpdb_format::record::VersionHeader;
    use ndpdb_format::schema::{Column, ColumnType, Value};
    use ndpdb_format::wal::{Record, frame_into};

    use super::*;
    use crate::scan::{Freshness, NdpScan};
    use crate::table::Head;
    use crate::test_store::store;

    /// Makes the device's mirror lost: a valid record at the stream's
    /// next LSN naming an address that is no frame.
    fn lose_the_mirror(s: &Store, table: u32) {
        s.wal.flush_to(s.wal.end(), &s.wal_qp).unwrap();
        let lsn = s.wal.end();
        let (page, geo) = (s.page_bytes as u64, s.wal.geo);
        let mut rec = Vec::new();
        let bad = Record::DeltaPage { table, lpn: 3, frame_addr: 7 };
        frame_into(&mut rec, lsn, bad.kind(), &bad.encode());
        // Bytes before the stream's next LSN do not matter to the mirror.
        let mut image = vec![0u8; page as usize];
        let off = (lsn % page) as usize;
        image[off..off + rec.len()].copy_from_slice(&rec);
        s.qp.lock().call(Command::PageWrite { ppn: geo.start + (lsn / page) % geo.pages, data: image }).unwrap();
        assert!(s.device().mirror_stats().unwrap().lost.is_some());
    }

    /// A lost mirror is configured again by the next CBM call, which
    /// answers; a call that fails while it is lost says so (`MirrorLost`).
    #[test]
    fn a_lost_mirror_is_configured_again() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let t = s.create_table("t", vec![Column::new("k", ColumnType::Int64, false)]).unwrap();
        let data = t.layout.encode(&[Value::Int(5)]).unwrap();
        let prev = ndpdb_format::page::RecordId::NONE;
        let header = VersionHeader { create_ts: 1, prev, tombstone: false, data_len: data.len() as u16 };
        s.prepare_cbm().unwrap();
        let vid = s.new_vid(&t);
        let rid = s.append_version(&t, header, &data).unwrap();
        s.set_head(&t, vid, Head { rid, create_ts: 1, tombstone: false });
        lose_the_mirror(&s, t.id);
        let snap = Snapshot { xmax: 2, active: vec![], own: 0 };
        let scan = NdpScan { table: &t, snapshot: &snap, predicate: None, pes: 2, freshness: Freshness::Cbm };
        let again = s.ndp_rows(&scan, &[0]).unwrap();
        assert_eq!(again.rows, vec![(vid, vec![Value::Int(5)])]);
        assert_eq!(again.stats.counters.commands.get("mirror_configure"), Some(&1), "configured anew");
        assert!(s.device().mirror_stats().unwrap().lost.is_none());
        lose_the_mirror(&s, t.id);
        let err = s.cbm_failure(StoreError::Corrupt("the program failed".into()));
        assert!(matches!(err, StoreError::MirrorLost(_)) && err.to_string().contains("call it again"), "{err}");
        assert_eq!(s.mirror_lsn(), NO_MIRROR);
    }
}
