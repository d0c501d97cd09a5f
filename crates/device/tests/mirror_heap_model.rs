//! The mirror in heap mode (CBM freshness for the MVCC engine,
//! `docs/cbm.md`) against a model of the store's delta frames and its log,
//! under random sequences of delta pages started in frames (a delta-page
//! record each), commits (records of other kinds, spanning pages), log
//! flushes (in order and out of order), delta pages written to the medium
//! (before or after their record is durable) and frames reused: a delta
//! page in a frame whose record reached the device is always reported
//! Dirty at that frame, never Clean or absent.

mod log_ring;

use std::borrow::Cow;

use ndpdb_device::mirror::{Mirror, MirrorConfig, MirrorKind, PageState};
use ndpdb_device::programs::SplitMix64;
use ndpdb_format::page::HeapPage;
use ndpdb_format::wal::{LogOp, OpKind, Record, frame_into};

const P: u64 = 512;
const FRAME: u64 = P + 24;
const FRAMES: usize = 6;
const LOG_FIRST: u64 = 2;
const LOG_PAGES: u64 = 5;
const DATA_FIRST: u64 = 100;

fn config() -> MirrorConfig {
    MirrorConfig {
        kind: MirrorKind::Heap,
        frame_bytes: FRAME,
        file_first_ppn: 0,
        file_pages: 0,
        log_first_ppn: LOG_FIRST,
        log_pages: LOG_PAGES,
        frames: FRAMES as u64,
        log_lsn: 0,
        page_bytes: P,
    }
}

/// The store: which delta page each frame holds (and where its record
/// ends), the log stream and how much of it is durable.
struct Host {
    frames: [Option<(u64, u64)>; FRAMES],
    next_lpn: u64,
    stream: Vec<u8>,
    durable: u64,
    written: u64,
    rng: SplitMix64,
}

impl Host {
    fn flush_log(&mut self, m: &mut Mirror) {
        if self.stream.len() as u64 == self.durable {
            return; // nothing to write, and no draw (the seeds' sequences stay as they were)
        }
        let reverse = self.rng.below(4) == 0;
        self.durable = log_ring::flush(&self.stream, self.durable, (P, LOG_FIRST, LOG_PAGES), reverse, m);
    }

    fn append(&mut self, record: &Record<'_>, m: &mut Mirror) -> u64 {
        let lsn = self.stream.len() as u64;
        frame_into(&mut self.stream, lsn, record.kind(), &record.encode());
        let end = self.stream.len() as u64;
        if end - self.durable > P {
            self.flush_log(m);
        }
        end
    }

    /// Writes frame `f`'s page to the medium (its record durable or not)
    /// and frees the frame.
    fn write_page(&mut self, f: usize, m: &mut Mirror) {
        let (lpn, _) = self.frames[f].take().expect("a page");
        let page = HeapPage::new(P as usize, 1, lpn).sealed();
        m.on_page_write(DATA_FIRST + self.written % 50, &page);
        self.written += 1;
    }

    fn step(&mut self, m: &mut Mirror) {
        match self.rng.below(100) {
            0..30 => {
                let f = match self.frames.iter().position(Option::is_none) {
                    Some(f) => f,
                    None => {
                        let f = self.rng.below(FRAMES as u64) as usize;
                        self.write_page(f, m);
                        f
                    }
                };
                let lpn = self.next_lpn;
                self.next_lpn += 1 + self.rng.below(3);
                let end = self.append(&Record::DeltaPage { table: 1, lpn, frame_addr: f as u64 * FRAME }, m);
                self.frames[f] = Some((lpn, end));
            }
            30..60 => {
                let data = vec![5u8; self.rng.below(600) as usize];
                let ops = [LogOp { kind: OpKind::Insert, table: 1, vid: 3, data }];
                self.append(&Record::Commit { txn: 9, ops: Cow::Borrowed(&ops) }, m);
            }
            60..80 => self.flush_log(m),
            _ => {
                let f = self.rng.below(FRAMES as u64) as usize;
                if self.frames[f].is_some() {
                    self.write_page(f, m);
                }
            }
        }
    }

    fn check(&self, m: &Mirror, seed: u64, step: usize) {
        for (f, slot) in self.frames.iter().enumerate() {
            let Some((lpn, end)) = *slot else { continue };
            if end > self.durable {
                continue;
            }
            let d = m.lookup(lpn).unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
            let d = d.unwrap_or_else(|| panic!("seed {seed} step {step}: page {lpn} in frame {f} is unknown"));
            assert_eq!(
                (d.state, d.host_addr),
                (PageState::Dirty, f as u64 * FRAME),
                "seed {seed} step {step}: page {lpn} in frame {f}"
            );
        }
    }
}

#[test]
fn a_delta_page_in_a_frame_is_never_reported_clean() {
    let mut reused = 0;
    for seed in 0..20 {
        let mut h = Host {
            frames: [None; FRAMES],
            next_lpn: 1,
            stream: Vec::new(),
            durable: 0,
            written: 0,
            rng: SplitMix64::new(seed),
        };
        let mut m = Mirror::new(config()).unwrap();
        for step in 0..3000 {
            h.step(&mut m);
            h.check(&m, seed, step);
        }
        let stats = m.stats();
        assert!(stats.lost.is_none(), "seed {seed}: {stats:?}");
        assert!(stats.cleaned > 0 && stats.records > 0, "seed {seed}: {stats:?}");
        reused += stats.reused_frames;
    }
    assert!(reused > 0, "frames were reused");
}

/// Heap mode refuses frames too small for a page and its versions, and a
/// record naming an address that is no frame loses the mirror.
#[test]
fn heap_mode_checks_its_frames() {
    assert!(Mirror::new(MirrorConfig { frame_bytes: P, ..config() }).is_err());
    let mut m = Mirror::new(config()).unwrap();
    let mut log = Vec::new();
    let r = Record::DeltaPage { table: 1, lpn: 4, frame_addr: 7 };
    frame_into(&mut log, 0, r.kind(), &r.encode());
    log.resize(P as usize, 0);
    m.on_page_write(LOG_FIRST, &log);
    assert!(m.stats().lost.is_some_and(|w| w.contains("no frame")), "{:?}", m.stats());
    assert!(m.lookup(4).is_err(), "a lost mirror answers nothing");
}
