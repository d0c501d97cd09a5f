//! # The page versions: a sequence lock split over a page's two ends
//!
//! The device reads a frame by DMA while host threads may change it, so a
//! page carries a version at each end (CBM's front and rear versions):
//!
//! ```text
//!  word 0        word 1       words 2 ..              last word
//!  ┌───────────┬───────────┬─────────── body ─────────┬───────────┐
//!  │ front     │ pid       │                          │ rear      │
//!  └───────────┴───────────┴──────────────────────────┴───────────┘
//!  writer (under the exclusive latch):        reader (DMA, no latch):
//!    v = front                                 f = front        (Acquire)
//!    rear = v + 1          (Relaxed)           words 1 .. last  (Relaxed)
//!    fence(Release)                            fence(Acquire)
//!    body stores           (Relaxed)           r = rear         (Relaxed)
//!    front = v + 1         (Release)           accept iff f == r
//! ```
//!
//! Why an accepted copy is never torn: if the reader's front load saw
//! `v + 1`, it synchronises with that writer's release store, so every
//! store of that change and of earlier ones is visible to the later loads.
//! If any word load saw a store of a *later* change (version `w + 1 > f`),
//! that change's release fence (after its rear store) and the reader's
//! acquire fence synchronise, so the rear load sees `w + 1` or newer, and
//! `r != f`. The rear word never returns to `f` afterwards: a writer that
//! changed nothing puts back the rear it found, which is never older than
//! the newest front.
//!
//! A guard that took the exclusive latch and wrote nothing restores
//! `rear = v` at release instead of bumping the front: the page's bytes
//! stay as they were (a clean page stays byte-equal to its copy on the
//! medium), and readers that overlapped the latch only retried.
//!
//! Loading a different page into a frame (`install`) follows the same
//! order with a version above both the frame's and the new page's, so a
//! DMA read that overlaps the frame's reuse is rejected too.
//!
//! Every word is an atomic, so the concurrent host stores and device loads
//! are sound in Rust's memory model. Words hold their bytes in memory
//! order (`to_ne_bytes`); the versions are little-endian `u64`s, like every
//! ndpdb format. The protocol is generic over [`Words`] so that
//! `tests/loom.rs` runs this very code over loom's atomics.

use std::sync::atomic::{AtomicU64, Ordering};

/// Atomic words with fences: host memory here, loom's atomics in the model.
pub trait Words {
    fn load(&self, index: usize, order: Ordering) -> u64;
    fn store(&self, index: usize, value: u64, order: Ordering);
    fn fence(&self, order: Ordering);
}

impl Words for [AtomicU64] {
    #[inline]
    fn load(&self, index: usize, order: Ordering) -> u64 {
        self[index].load(order)
    }

    #[inline]
    fn store(&self, index: usize, value: u64, order: Ordering) {
        self[index].store(value, order)
    }

    #[inline]
    fn fence(&self, order: Ordering) {
        std::sync::atomic::fence(order)
    }
}

/// Where one page lies among the words: `first` is its front word, and it
/// has `words` words (at least 3: front, pid, rear).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSpan {
    pub first: usize,
    pub words: usize,
}

impl PageSpan {
    pub fn front(&self) -> usize {
        self.first
    }

    pub fn rear(&self) -> usize {
        self.first + self.words - 1
    }
}

/// A version as it lies in a word: little-endian bytes.
#[inline]
pub fn encode(version: u64) -> u64 {
    u64::from_ne_bytes(version.to_le_bytes())
}

/// The version a word holds (see [`encode`]).
#[inline]
pub fn decode(word: u64) -> u64 {
    u64::from_le_bytes(word.to_ne_bytes())
}

/// Begins a change under the exclusive latch: stores `rear = v + 1`, then a
/// release fence. Returns `v`, the front version, for [`end_write`].
#[inline]
pub fn begin_write<W: Words + ?Sized>(words: &W, span: PageSpan) -> u64 {
    let v = decode(words.load(span.front(), Ordering::Relaxed));
    words.store(span.rear(), encode(v.wrapping_add(1)), Ordering::Relaxed);
    words.fence(Ordering::Release);
    v
}

/// Ends a change begun with [`begin_write`] at version `v`: publishes it
/// with `front = v + 1` (release) if anything was written, or puts the rear
/// back to `v` if nothing was.
#[inline]
pub fn end_write<W: Words + ?Sized>(words: &W, span: PageSpan, v: u64, wrote: bool) {
    if wrote {
        words.store(span.front(), encode(v.wrapping_add(1)), Ordering::Release);
    } else {
        words.store(span.rear(), encode(v), Ordering::Release);
    }
}

/// Replaces the frame's page by another whose words `page(k)` gives (in
/// memory order, `k` in `0..span.words`), under the frame's exclusive
/// ownership. The new page's front and rear become one version above both
/// the frame's and the page's own. Returns that version.
pub fn install<W: Words + ?Sized>(words: &W, span: PageSpan, page: impl Fn(usize) -> u64) -> u64 {
    let old = decode(words.load(span.front(), Ordering::Relaxed));
    let mut v = old.max(decode(page(0))).wrapping_add(1);
    if v == old {
        v = old.wrapping_add(1);
    }
    words.store(span.rear(), encode(v), Ordering::Relaxed);
    words.fence(Ordering::Release);
    for k in 1..span.words - 1 {
        words.store(span.first + k, page(k), Ordering::Relaxed);
    }
    words.store(span.front(), encode(v), Ordering::Release);
    v
}

/// The reader's side: loads words `from..to` (absolute indices inside
/// `span`, in address order) with the orderings above and hands each to
/// `out`. A copy of a whole page is consistent iff its front equals its
/// rear ([`versions_match`]); a partial copy gets no such check.
#[inline]
pub fn read_words<W: Words + ?Sized>(
    words: &W,
    span: PageSpan,
    from: usize,
    to: usize,
    mut out: impl FnMut(usize, u64),
) {
    debug_assert!(span.first <= from && from <= to && to <= span.first + span.words);
    for i in from..to {
        let value = if i == span.front() {
            words.load(i, Ordering::Acquire)
        } else if i == span.rear() {
            words.fence(Ordering::Acquire);
            words.load(i, Ordering::Relaxed)
        } else {
            words.load(i, Ordering::Relaxed)
        };
        out(i, value);
    }
}

/// The front and rear versions of a page's bytes, if it is long enough.
pub fn versions(page: &[u8]) -> Option<(u64, u64)> {
    if page.len() < 16 {
        return None;
    }
    let front = u64::from_le_bytes(page[..8].try_into().ok()?);
    let rear = u64::from_le_bytes(page[page.len() - 8..].try_into().ok()?);
    Some((front, rear))
}

/// Whether a copy of a whole page is consistent (front == rear).
pub fn versions_match(page: &[u8]) -> bool {
    matches!(versions(page), Some((f, r)) if f == r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize) -> Box<[AtomicU64]> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    fn bytes(w: &[AtomicU64]) -> Vec<u8> {
        w.iter().flat_map(|x| x.load(Ordering::Relaxed).to_ne_bytes()).collect()
    }

    #[test]
    fn a_change_bumps_rear_first_and_front_last() {
        let w = words(4);
        let span = PageSpan { first: 0, words: 4 };
        let v = begin_write(&*w, span);
        assert_eq!(v, 0);
        assert!(!versions_match(&bytes(&w)), "a change in progress shows front != rear");
        assert_eq!(versions(&bytes(&w)), Some((0, 1)));
        end_write(&*w, span, v, true);
        assert_eq!(versions(&bytes(&w)), Some((1, 1)));
    }

    #[test]
    fn a_latch_that_wrote_nothing_puts_the_rear_back() {
        let w = words(4);
        let span = PageSpan { first: 0, words: 4 };
        let before = bytes(&w);
        let v = begin_write(&*w, span);
        end_write(&*w, span, v, false);
        assert_eq!(bytes(&w), before);
    }

    #[test]
    fn install_takes_a_version_above_the_frame_and_the_page() {
        let w = words(8);
        let span = PageSpan { first: 4, words: 4 };
        w[4].store(encode(7), Ordering::Relaxed);
        w[7].store(encode(7), Ordering::Relaxed);
        let page = [encode(3), 42, 43, encode(3)];
        assert_eq!(install(&*w, span, |k| page[k]), 8);
        assert_eq!(versions(&bytes(&w)[32..]), Some((8, 8)));
        assert_eq!(w[5].load(Ordering::Relaxed), 42);
        let newer = [encode(20), 1, 2, encode(20)];
        assert_eq!(install(&*w, span, |k| newer[k]), 21);
    }

    #[test]
    fn versions_need_a_whole_header() {
        assert_eq!(versions(&[0; 8]), None);
        assert!(!versions_match(&[1; 15]));
        assert!(versions_match(&[0; 24]));
    }
}
