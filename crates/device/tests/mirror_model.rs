//! The mirror against a model of the host pool and its log ring, under
//! random sequences of reads, writes, log writes (in order and out of
//! order, records spanning pages), evictions, frame reuse, pages created
//! by extending the file and write-backs of stale copies: a page whose
//! committed change is only in host memory is never reported Clean, and a
//! Dirty report names the frame that holds the page. Garbage log pages
//! never panic and never make the mirror report a dirty page Clean.

mod log_ring;

use std::borrow::Cow;

use ndpdb_device::mirror::{Mirror, MirrorConfig, MirrorKind, View};
use ndpdb_device::programs::SplitMix64;
use ndpdb_format::kv_log::{KIND_PAGE_REDO, KvOp, PageChange, Redo, frame_into};

const P: u64 = 512;
const FRAMES: usize = 6;
const FILE_FIRST: u64 = 10;
const FILE_PAGES: u64 = 40;
const LOG_FIRST: u64 = 2;
const LOG_PAGES: u64 = 5;

fn config(log_lsn: u64) -> MirrorConfig {
    MirrorConfig {
        kind: MirrorKind::Kv,
        frame_bytes: P,
        file_first_ppn: FILE_FIRST,
        file_pages: FILE_PAGES,
        log_first_ppn: LOG_FIRST,
        log_pages: LOG_PAGES,
        frames: FRAMES as u64,
        log_lsn,
        page_bytes: P,
    }
}

/// A page as the pool writes it back: pid word and node LSN set.
fn page(pid: u64, lsn: u64) -> Vec<u8> {
    let mut p = vec![0u8; P as usize];
    p[8..16].copy_from_slice(&pid.to_le_bytes());
    p[24..32].copy_from_slice(&lsn.to_le_bytes());
    p
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    pid: u64,
    /// End LSN of the newest record applied (the page's LSN).
    lsn: u64,
}

/// The host: frames, the medium's page LSNs, the log stream.
struct Host {
    frames: [Option<Frame>; FRAMES],
    medium: Vec<u64>,
    pages: u64,
    stream: Vec<u8>,
    durable: u64,
    rng: SplitMix64,
}

impl Host {
    fn addr(f: usize) -> u64 {
        f as u64 * P
    }

    fn frame_of(&self, pid: u64) -> Option<usize> {
        self.frames.iter().position(|f| f.is_some_and(|f| f.pid == pid))
    }

    /// Makes the log durable to its end: writes the ring pages that hold
    /// bytes from `durable` on (sometimes in reverse order).
    fn flush_log(&mut self, m: &mut Mirror) {
        if self.stream.len() as u64 == self.durable {
            return; // nothing to write, and no draw (the seeds' sequences stay as they were)
        }
        let reverse = self.rng.below(4) == 0;
        self.durable = log_ring::flush(&self.stream, self.durable, (P, LOG_FIRST, LOG_PAGES), reverse, m);
    }

    /// Appends a record naming `pages` (pid, frame), padded so records
    /// span pages; returns its end.
    fn log(&mut self, pages: &[(u64, usize)], m: &mut Mirror) -> u64 {
        let pad = vec![7u8; self.rng.below(400) as usize];
        let changes = pages
            .iter()
            .map(|&(pid, f)| PageChange {
                pid,
                frame_addr: Host::addr(f),
                full_image: false,
                ranges: vec![(64, Cow::Borrowed(&pad[..]))],
            })
            .collect();
        let payload = Redo { op: KvOp::Put, pages: changes }.encode();
        let lsn = self.stream.len() as u64;
        let end = frame_into(&mut self.stream, lsn, KIND_PAGE_REDO, &payload);
        // A ring never holds more than its pages: flush while the bytes
        // not yet written fit in fewer pages than the ring has.
        if end - self.durable > P {
            self.flush_log(m);
        }
        end
    }

    /// A frame for a new page: a free one, or a victim written back first.
    fn claim(&mut self, m: &mut Mirror) -> usize {
        if let Some(f) = self.frames.iter().position(Option::is_none) {
            return f;
        }
        let f = self.rng.below(FRAMES as u64) as usize;
        self.write_back(f, m);
        self.frames[f] = None;
        f
    }

    fn write_back(&mut self, f: usize, m: &mut Mirror) {
        let fr = self.frames[f].expect("a page");
        if fr.lsn > self.medium[fr.pid as usize] {
            if fr.lsn > self.durable {
                self.flush_log(m);
            }
            m.on_page_write(FILE_FIRST + fr.pid, &page(fr.pid, fr.lsn));
            self.medium[fr.pid as usize] = fr.lsn;
        }
    }

    fn step(&mut self, m: &mut Mirror) {
        match self.rng.below(100) {
            // Read a page into a frame (frame reuse when the pool is full).
            0..=24 => {
                let pid = self.rng.below(self.pages);
                if self.frame_of(pid).is_none() {
                    let f = self.claim(m);
                    m.on_page_read(FILE_FIRST + pid, Some(Host::addr(f)));
                    self.frames[f] = Some(Frame { pid, lsn: self.medium[pid as usize] });
                }
            }
            // Change one or two cached pages (a split changes several).
            25..=59 => {
                let cached: Vec<usize> = (0..FRAMES).filter(|&f| self.frames[f].is_some()).collect();
                if cached.is_empty() {
                    return;
                }
                let n = 1 + self.rng.below(2.min(cached.len() as u64)) as usize;
                let mut chosen: Vec<usize> =
                    (0..n).map(|_| cached[self.rng.below(cached.len() as u64) as usize]).collect();
                chosen.dedup();
                let named: Vec<(u64, usize)> = chosen.iter().map(|&f| (self.frames[f].unwrap().pid, f)).collect();
                let end = self.log(&named, m);
                for f in chosen {
                    self.frames[f].as_mut().unwrap().lsn = end;
                }
            }
            // Extend the file: a new page, logged, never read.
            60..=64 if self.pages < FILE_PAGES => {
                let f = self.claim(m);
                let pid = self.pages;
                self.pages += 1;
                self.frames[f] = Some(Frame { pid, lsn: 0 });
                let end = self.log(&[(pid, f)], m);
                self.frames[f].as_mut().unwrap().lsn = end;
            }
            65..=74 => self.flush_log(m),
            // Write a dirty page back (checkpoint, background writer).
            75..=84 => {
                let f = self.rng.below(FRAMES as u64) as usize;
                if self.frames[f].is_some() {
                    self.write_back(f, m);
                }
            }
            // A write-back of a copy taken before a change whose record
            // reaches the device first.
            85..=89 => {
                let f = self.rng.below(FRAMES as u64) as usize;
                let Some(fr) = self.frames[f] else { return };
                let end = self.log(&[(fr.pid, f)], m);
                self.flush_log(m);
                self.frames[f].as_mut().unwrap().lsn = end;
                m.on_page_write(FILE_FIRST + fr.pid, &page(fr.pid, fr.lsn));
                self.medium[fr.pid as usize] = fr.lsn;
            }
            // Evict a page silently (clean) or after writing it back.
            _ => {
                let f = self.rng.below(FRAMES as u64) as usize;
                if self.frames[f].is_some() {
                    self.write_back(f, m);
                    self.frames[f] = None;
                }
            }
        }
    }

    /// The property: a page whose committed change is only in host memory
    /// is reported Dirty at the frame that holds it.
    fn check(&self, m: &Mirror, step: usize) {
        for pid in 0..self.pages {
            let view = m.view(pid).unwrap_or_else(|e| panic!("step {step}: page {pid}: {e}"));
            let f = self.frame_of(pid);
            let committed = f.map(|f| self.frames[f].unwrap().lsn).filter(|&l| l <= self.durable).unwrap_or(0);
            if committed > self.medium[pid as usize] {
                assert_eq!(view, View::Host(Host::addr(f.unwrap())), "step {step}: page {pid} is dirty on the host");
            }
            if let View::Host(a) = view {
                assert_eq!(f.map(Host::addr), Some(a), "step {step}: page {pid} reported in a frame that lacks it");
            }
        }
    }
}

fn host(seed: u64) -> Host {
    Host {
        frames: [None; FRAMES],
        medium: vec![0; FILE_PAGES as usize],
        pages: 8,
        stream: Vec::new(),
        durable: 0,
        rng: SplitMix64::new(seed),
    }
}

#[test]
fn a_dirty_host_page_is_never_reported_clean() {
    for seed in 0..20 {
        let mut h = host(seed);
        let mut m = Mirror::new(config(0)).unwrap();
        for step in 0..3000 {
            h.step(&mut m);
            h.check(&m, step);
        }
        let s = m.stats();
        assert!(s.records > 100 && s.reused_frames > 10 && s.stale_write_backs > 0, "seed {seed}: {s:?}");
        assert!(s.descriptors <= FRAMES as u64);
    }
}

/// Garbage log pages at random ring positions between the host's own
/// writes: no panic, and never a dirty page reported Clean (the mirror may
/// lose track, and then refuses to answer).
#[test]
fn garbage_log_pages_never_make_a_dirty_page_clean() {
    let mut lost = 0;
    for seed in 0..40 {
        let mut h = host(seed);
        let mut m = Mirror::new(config(0)).unwrap();
        for step in 0..800 {
            h.step(&mut m);
            if h.rng.below(50) == 0 {
                let mut junk = vec![0u8; P as usize];
                let kind = h.rng.below(3);
                for (i, b) in junk.iter_mut().enumerate() {
                    *b = match kind {
                        0 => h.rng.next_u64() as u8,
                        // The magic everywhere, so headers parse.
                        1 => b"NDPL"[i % 4],
                        _ => h.stream.get(i + h.rng.below(h.stream.len() as u64 + 1) as usize).copied().unwrap_or(0),
                    };
                }
                m.on_page_write(LOG_FIRST + h.rng.below(LOG_PAGES), &junk);
            }
            if m.stats().lost.is_some() {
                assert!(m.view(0).is_err(), "a lost mirror refuses to answer");
                lost += 1;
                break;
            }
            h.check(&m, step);
        }
    }
    assert!(lost > 0, "some garbage breaks the stream");
}

#[test]
fn records_before_the_configured_lsn_are_not_read_and_bad_configs_are_refused() {
    let mut h = host(7);
    let mut m = Mirror::new(config(0)).unwrap();
    let f = h.claim(&mut m);
    m.on_page_read(FILE_FIRST + 3, Some(Host::addr(f)));
    h.frames[f] = Some(Frame { pid: 3, lsn: 0 });
    let end = h.log(&[(3, f)], &mut m);
    let mut late = Mirror::new(config(end)).unwrap();
    h.flush_log(&mut late);
    assert_eq!(late.view(3).unwrap(), View::Medium, "the record predates the configuration");
    h.durable = 0;
    h.flush_log(&mut m);
    assert_eq!(m.view(3).unwrap(), View::Host(Host::addr(f)));
    for bad in [
        MirrorConfig { frames: 0, ..config(0) },
        MirrorConfig { log_first_ppn: FILE_FIRST + 1, ..config(0) },
        MirrorConfig { log_lsn: 3, ..config(0) },
    ] {
        assert!(Mirror::new(bad).is_err(), "{bad:?}");
    }
}

/// A flush racing the configuration: records from the configured LSN on
/// reach the device before the mirror exists, and the page holding that LSN
/// is never written again. The mirror starts at the first record of a later
/// page instead of waiting for it (which would miss every later record).
#[test]
fn a_flush_racing_the_configuration_does_not_stall_the_mirror() {
    let mut h = host(3);
    let mut before = Mirror::new(config(0)).unwrap();
    let f = h.claim(&mut before);
    before.on_page_read(FILE_FIRST + 2, Some(Host::addr(f)));
    h.frames[f] = Some(Frame { pid: 2, lsn: 0 });
    h.log(&[(2, f)], &mut before);
    h.flush_log(&mut before);
    let e = h.stream.len() as u64;
    assert!(!e.is_multiple_of(P), "the configured LSN is inside a page");
    // Records after `e` fill the rest of its page and are flushed before
    // the configuration takes effect.
    while h.stream.len() as u64 / P == e / P {
        h.log(&[(2, f)], &mut before);
    }
    h.flush_log(&mut before);
    let mut m = Mirror::new(config(e)).unwrap();
    let end = h.log(&[(2, f)], &mut m);
    h.flush_log(&mut m);
    assert_eq!(m.view(2).unwrap(), View::Host(Host::addr(f)), "a record after the configuration is read");
    assert_eq!(m.descriptor(2).unwrap().dirty_lsn, end);
}
