//! # The frames: one allocation of host memory the device may read by DMA
//!
//! ```text
//!  host address 0        page_bytes          2·page_bytes        frames·page_bytes
//!  ┌──────────────────────┬───────────────────┬─── ... ───┬──────────────────┐
//!  │ frame 0              │ frame 1           │           │ frame frames-1   │
//!  └──────────────────────┴───────────────────┴─── ... ───┴──────────────────┘
//!  a frame's host address = frame index × page_bytes (an offset in HostFrames)
//! ```
//!
//! The memory is a slice of `AtomicU64`: every host store into a frame is an
//! atomic store made under the frame's exclusive latch (or while the pool
//! owns the frame for loading), and the device's reads ([`HostFrames::dma_read`])
//! are atomic loads with the sequence-lock fences of `seqlock.rs`. So the
//! device reading while the host writes is defined behaviour in Rust's
//! memory model, not a "benign" race.
//!
//! Host code under a shared or exclusive latch reads a frame through a
//! plain `&[u8]` ([`HostFrames::page`]): no host store can happen while
//! such a slice lives (stores need the exclusive latch, and an exclusive
//! guard hands out its slice through `&self` while its stores take
//! `&mut self`), and the device only loads.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::PoolError;
use crate::seqlock::{self, PageSpan};

const WORD: usize = 8;

/// The pool's frames as host memory the device can read.
pub struct HostFrames {
    words: Box<[AtomicU64]>,
    page_bytes: usize,
    frames: usize,
}

impl HostFrames {
    /// `frames` zeroed frames of `page_bytes` bytes (a multiple of 8, at
    /// least 24: front, pid word, rear). The pool makes its own; other
    /// holders of DMA-readable pages (the MVCC store's delta frames,
    /// `ndpdb-storage`) make theirs and write them with
    /// [`HostFrames::install_page`] and [`HostFrames::publish`].
    pub fn new(frames: usize, page_bytes: usize) -> Result<HostFrames, PoolError> {
        if !page_bytes.is_multiple_of(WORD) || page_bytes < 3 * WORD {
            return Err(PoolError::Config {
                what: format!("frames of {page_bytes} bytes; a frame is a multiple of 8 bytes, at least 24"),
            });
        }
        let bytes = frames.checked_mul(page_bytes).filter(|&b| b <= isize::MAX as usize);
        let count = bytes.ok_or_else(|| PoolError::Config {
            what: format!("{frames} frames of {page_bytes} bytes do not fit in host memory"),
        })? / WORD;
        let words = zeroed_words(count).ok_or_else(|| PoolError::Config {
            what: format!(
                "cannot allocate {frames} frames of {page_bytes} bytes ({} MiB) of host memory; configure fewer frames",
                (count * WORD) >> 20
            ),
        })?;
        Ok(HostFrames { words, page_bytes, frames })
    }

    /// Bytes of host memory the frames take (the device's address range).
    pub fn len(&self) -> u64 {
        (self.words.len() * WORD) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The host address of `frame`.
    pub fn frame_addr(&self, frame: usize) -> u64 {
        (frame * self.page_bytes) as u64
    }

    /// Copies `out.len()` bytes at host address `addr` as the device's DMA
    /// does: atomic loads in address order with the page-version fences, so
    /// a copy of a whole frame whose front equals its rear is a page no
    /// writer touched during the copy (`seqlock.rs`). Never blocks a host
    /// writer and never waits for one: the caller retries on a mismatch.
    pub fn dma_read(&self, addr: u64, out: &mut [u8]) -> Result<(), PoolError> {
        let size = self.len();
        let end = addr.checked_add(out.len() as u64).filter(|&e| e <= size);
        if end.is_none() {
            return Err(PoolError::OutOfRange { addr, len: out.len(), size });
        }
        let start = addr as usize;
        let mut at = start;
        while at < start + out.len() {
            let frame = at / self.page_bytes;
            let span = self.span(frame);
            let page_end = ((frame + 1) * self.page_bytes).min(start + out.len());
            let (from, to) = (at / WORD, page_end.div_ceil(WORD));
            seqlock::read_words(&*self.words, span, from, to, |i, word| {
                let bytes = word.to_ne_bytes();
                let lo = (i * WORD).max(at);
                let hi = ((i + 1) * WORD).min(page_end);
                out[lo - start..hi - start].copy_from_slice(&bytes[lo - i * WORD..hi - i * WORD]);
            });
            at = page_end;
        }
        Ok(())
    }

    /// Puts a new page into `frame` (its reuse): pid word `pid`, `body` at
    /// byte 16 (the rest of the body zeroed), front and rear one version
    /// above the frame's (`seqlock::install`), so that a DMA read
    /// overlapping the reuse is rejected. The caller is the frame's only
    /// writer (it owns the frame) and `body` fits between pid and rear.
    pub fn install_page(&self, frame: usize, pid: u64, body: &[u8]) {
        assert!(frame < self.frames && crate::HEADER_BYTES + body.len() + crate::TRAILER_BYTES <= self.page_bytes);
        let word = |k: usize| -> u64 {
            if k == 1 {
                return u64::from_ne_bytes(pid.to_le_bytes());
            }
            let mut b = [0u8; WORD];
            let at = k * WORD;
            if at >= crate::HEADER_BYTES && at < crate::HEADER_BYTES + body.len() {
                let from = at - crate::HEADER_BYTES;
                let n = WORD.min(body.len() - from);
                b[..n].copy_from_slice(&body[from..from + n]);
            }
            u64::from_ne_bytes(b)
        };
        seqlock::install(&*self.words, self.span(frame), word);
    }

    /// Publishes one change to `frame` under its page versions: each
    /// `(offset, bytes)` of `parts` is stored at that byte of the frame
    /// (offsets count from the frame's start; the front, pid and rear words
    /// are not touched), between `seqlock::begin_write` and `end_write`,
    /// so a DMA read that overlaps it finds front != rear. The caller is
    /// the frame's only writer (as a pool guard holds the exclusive latch).
    pub fn publish(&self, frame: usize, parts: &[(usize, &[u8])]) {
        assert!(frame < self.frames, "frame {frame} of {}", self.frames);
        let body = crate::HEADER_BYTES..self.page_bytes - crate::TRAILER_BYTES;
        for &(off, bytes) in parts {
            assert!(body.start <= off && off + bytes.len() <= body.end, "a publish inside the body of frame {frame}");
        }
        let span = self.span(frame);
        let v = seqlock::begin_write(&*self.words, span);
        for &(off, bytes) in parts {
            self.store(frame, off, bytes);
        }
        seqlock::end_write(&*self.words, span, v, true);
    }

    /// Where `frame`'s page lies among the words.
    pub(crate) fn span(&self, frame: usize) -> PageSpan {
        let words = self.page_bytes / WORD;
        PageSpan { first: frame * words, words }
    }

    pub(crate) fn words(&self) -> &[AtomicU64] {
        &self.words
    }

    /// The bytes of `frame`.
    ///
    /// # Safety
    /// No store into `frame` may happen while the slice lives: the caller
    /// holds the frame's shared or exclusive latch (or owns the frame while
    /// it is claimed), and, holding the exclusive latch, makes no store
    /// before the slice is dropped.
    pub(crate) unsafe fn page(&self, frame: usize) -> &[u8] {
        assert!(frame < self.frames, "frame {frame} of {}", self.frames);
        let first = &self.words[frame * self.page_bytes / WORD];
        // SAFETY: `AtomicU64` has the size and bit validity of `u64`, so its
        // bytes are initialised `u8`s; the range lies inside `self.words`
        // (checked above), which lives as long as `&self`. The caller
        // guarantees that nothing stores into the range while the slice
        // lives; concurrent device reads are atomic loads, which never
        // conflict with reads.
        unsafe { std::slice::from_raw_parts((first as *const AtomicU64).cast::<u8>(), self.page_bytes) }
    }

    /// A copy of `frame`'s bytes by atomic loads (sound at any time; the
    /// copy is consistent when the caller holds a latch or the claim).
    pub(crate) fn copy_page(&self, frame: usize) -> Vec<u8> {
        let span = self.span(frame);
        let mut out = Vec::with_capacity(self.page_bytes);
        for w in &self.words[span.first..span.first + span.words] {
            out.extend_from_slice(&w.load(Ordering::Relaxed).to_ne_bytes());
        }
        out
    }

    /// Stores `data` at byte `offset` of `frame` with relaxed atomic stores
    /// (a partial word is read and stored whole). The caller holds the
    /// frame's exclusive latch (or owns it while loading), has begun the
    /// change (`seqlock::begin_write`), and holds no slice of the frame.
    pub(crate) fn store(&self, frame: usize, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= self.page_bytes, "store past the end of frame {frame}");
        let base = frame * self.page_bytes + offset;
        let mut done = 0;
        while done < data.len() {
            let at = base + done;
            let (i, lo) = (at / WORD, at % WORD);
            let n = (WORD - lo).min(data.len() - done);
            let word = if n == WORD {
                u64::from_ne_bytes(data[done..done + WORD].try_into().expect("a whole word"))
            } else {
                let mut bytes = self.words[i].load(Ordering::Relaxed).to_ne_bytes();
                bytes[lo..lo + n].copy_from_slice(&data[done..done + n]);
                u64::from_ne_bytes(bytes)
            };
            self.words[i].store(word, Ordering::Relaxed);
            done += n;
        }
    }

    /// Moves bytes `src` of `frame` to `dst` (overlap allowed, as
    /// `copy_within`), in chunks ordered so that no chunk reads bytes an
    /// earlier one wrote. Same rules as [`HostFrames::store`].
    pub(crate) fn move_within(&self, frame: usize, src: Range<usize>, dst: usize) {
        const CHUNK: usize = 512;
        let len = src.end - src.start;
        assert!(src.start <= src.end && src.end <= self.page_bytes && dst + len <= self.page_bytes);
        let mut buf = [0u8; CHUNK];
        let mut copy = |from: usize, to: usize, n: usize| {
            self.load_into(frame, from, &mut buf[..n]);
            self.store(frame, to, &buf[..n]);
        };
        if dst <= src.start {
            let mut k = 0;
            while k < len {
                let n = CHUNK.min(len - k);
                copy(src.start + k, dst + k, n);
                k += n;
            }
        } else {
            let mut k = len;
            while k > 0 {
                let n = CHUNK.min(k);
                copy(src.start + k - n, dst + k - n, n);
                k -= n;
            }
        }
    }

    /// Bytes at `offset` of `frame` by relaxed atomic loads.
    fn load_into(&self, frame: usize, offset: usize, out: &mut [u8]) {
        let base = frame * self.page_bytes + offset;
        let mut done = 0;
        while done < out.len() {
            let at = base + done;
            let (i, lo) = (at / WORD, at % WORD);
            let n = (WORD - lo).min(out.len() - done);
            let bytes = self.words[i].load(Ordering::Relaxed).to_ne_bytes();
            out[done..done + n].copy_from_slice(&bytes[lo..lo + n]);
            done += n;
        }
    }
}

/// The device reads the frames through this (`Device::attach_host_memory`).
impl ndpdb_device::HostMemory for HostFrames {
    fn dma_read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        HostFrames::dma_read(self, addr, out).map_err(|e| e.to_string())
    }
}

impl std::fmt::Debug for HostFrames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostFrames").field("frames", &self.frames).field("page_bytes", &self.page_bytes).finish()
    }
}

/// `count` zeroed words from the allocator's zeroed allocation (calloc: a
/// large pool's pages are mapped on first touch, so a pool of 128 MiB that
/// holds a small database costs what it holds, not 128 MiB); None when the
/// allocation fails.
fn zeroed_words(count: usize) -> Option<Box<[AtomicU64]>> {
    if count == 0 {
        return Some(Box::new([]));
    }
    let layout = std::alloc::Layout::array::<AtomicU64>(count).ok()?;
    // SAFETY: `layout` has a non-zero size (count > 0). `alloc_zeroed`
    // returns null or memory for `count` `AtomicU64`s, all bits zero, a
    // valid `AtomicU64` (the bit validity of `u64`). The box owns it and
    // frees it with `Layout::array::<AtomicU64>(count)`, the layout it was
    // allocated with.
    unsafe {
        let first = std::alloc::alloc_zeroed(layout).cast::<AtomicU64>();
        if first.is_null() {
            return None;
        }
        Some(Box::from_raw(std::ptr::slice_from_raw_parts_mut(first, count)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_moves_at_any_alignment() {
        let f = HostFrames::new(2, 64).unwrap();
        let data: Vec<u8> = (1..=29).collect();
        f.store(1, 19, &data);
        let mut model = vec![0u8; 64];
        model[19..48].copy_from_slice(&data);
        assert_eq!(f.copy_page(1), model);
        assert_eq!(f.copy_page(0), vec![0; 64], "a store stays inside its frame");
        f.move_within(1, 19..48, 23);
        model.copy_within(19..48, 23);
        assert_eq!(f.copy_page(1), model);
        f.move_within(1, 23..52, 3);
        model.copy_within(23..52, 3);
        assert_eq!(f.copy_page(1), model);
    }

    #[test]
    fn long_overlapping_moves_go_the_right_way() {
        let f = HostFrames::new(1, 4096).unwrap();
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        f.store(0, 0, &data);
        let mut model = data.clone();
        for (src, dst) in [(0..3000, 1001), (1001..4001, 3), (5..1500, 6)] {
            f.move_within(0, src.clone(), dst);
            model.copy_within(src, dst);
            assert_eq!(f.copy_page(0), model);
        }
    }

    #[test]
    fn dma_reads_any_range_and_refuses_past_the_end() {
        let f = HostFrames::new(3, 64).unwrap();
        let data: Vec<u8> = (0..192u32).map(|i| i as u8).collect();
        for frame in 0..3 {
            f.store(frame, 0, &data[frame * 64..frame * 64 + 64]);
        }
        for (addr, len) in [(0, 192), (5, 100), (63, 2), (64, 64), (191, 1), (17, 0)] {
            let mut out = vec![0; len];
            f.dma_read(addr, &mut out).unwrap();
            assert_eq!(out, &data[addr as usize..addr as usize + len], "at {addr}, {len} bytes");
        }
        let err = f.dma_read(150, &mut [0; 43]).unwrap_err();
        assert!(matches!(err, PoolError::OutOfRange { addr: 150, len: 43, size: 192 }), "{err}");
        assert!(f.dma_read(u64::MAX, &mut [0; 2]).is_err());
    }

    /// A publish is seen whole by a DMA copy of the frame, and a copy that
    /// overlaps one (front != rear) or an install is not accepted.
    #[test]
    fn publish_and_install_keep_the_versions() {
        let f = HostFrames::new(2, 64).unwrap();
        f.install_page(1, 42, &[7; 20]);
        let mut page = vec![0u8; 64];
        f.dma_read(64, &mut page).unwrap();
        assert!(seqlock::versions_match(&page));
        assert_eq!(&page[8..16], &42u64.to_le_bytes());
        assert_eq!(&page[16..36], &[7; 20]);
        let (v, _) = seqlock::versions(&page).unwrap();
        f.publish(1, &[(16, &[1, 2, 3]), (50, &[9])]);
        f.dma_read(64, &mut page).unwrap();
        assert_eq!(seqlock::versions(&page), Some((v + 1, v + 1)));
        assert_eq!((&page[16..19], page[50]), (&[1u8, 2, 3][..], 9));
        let span = f.span(1);
        let w = seqlock::begin_write(f.words(), span);
        f.dma_read(64, &mut page).unwrap();
        assert!(!seqlock::versions_match(&page), "a change in progress is refused");
        seqlock::end_write(f.words(), span, w, false);
        f.install_page(1, 43, &[]);
        f.dma_read(64, &mut page).unwrap();
        assert_eq!(seqlock::versions(&page), Some((v + 2, v + 2)));
        assert_eq!(&page[8..24], &[43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "the old body is gone");
        assert!(HostFrames::new(1, 12).is_err());
    }

    #[test]
    fn a_slice_under_the_latch_shows_the_stores_before_it() {
        let f = HostFrames::new(2, 32).unwrap();
        f.store(1, 8, &7u64.to_le_bytes());
        // SAFETY: single-threaded, and no store happens while the slice lives.
        let page = unsafe { f.page(1) };
        assert_eq!(&page[8..16], &7u64.to_le_bytes());
    }
}
