//! The device's optimistic read under concurrent host writers: a reader
//! copies frames with `HostFrames::dma_read` and accepts a copy only when
//! its front version equals its rear; an accepted copy is never torn.
//!
//! The writer fills a page's whole body with one word, `pid << 40 | n` for
//! its n-th change, so a copy that mixes two changes (or two pages, when a
//! frame is reused for another page) shows unequal words. The pool has
//! fewer frames than pages, so frames are evicted and reloaded under the
//! reader too. Writers also take the latch without writing (the rear is put
//! back) and downgrade. Two threads, fixed seeds; no timing is asserted.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::{Rng, memory_pool, pid_word};
use ndpdb_bufmgr::{HEADER_BYTES, TRAILER_BYTES, seqlock};

const PAGE: usize = 1024;
const PAGES: u64 = 5;
const FRAMES: usize = 2;

fn body(pid: u64, n: u64) -> Vec<u8> {
    let word = (pid << 40 | n).to_le_bytes();
    word.iter().copied().cycle().take(PAGE - HEADER_BYTES - TRAILER_BYTES).collect()
}

/// Checks an accepted copy: one page, one change. Returns whether accepted.
fn check(copy: &[u8]) -> bool {
    if !seqlock::versions_match(copy) {
        return false;
    }
    let pid = pid_word(copy);
    let words: Vec<u64> =
        copy[HEADER_BYTES..PAGE - TRAILER_BYTES].chunks(8).map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect();
    assert!(words.iter().all(|&w| w == words[0]), "torn copy accepted: page {pid}, words {words:x?}");
    assert_eq!(words[0] >> 40, pid, "copy of page {pid} holds another page's words");
    true
}

#[test]
fn accepted_copies_are_never_torn() {
    let (pool, _, _) = memory_pool(FRAMES, PAGE, PAGES);
    for pid in 0..PAGES {
        pool.allocate().unwrap().write(HEADER_BYTES, &body(pid, 0));
    }
    let memory = pool.host_memory();
    let done = AtomicBool::new(false);
    let (accepted, rejected) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = Rng(7);
            for n in 1..=20_000u64 {
                let pid = rng.below(PAGES);
                let mut g = pool.fix_exclusive(pid).unwrap();
                match rng.below(10) {
                    0 => {} // latched, nothing written: the rear is put back
                    1 => {
                        g.write(HEADER_BYTES, &body(pid, n));
                        let _shared = g.downgrade();
                    }
                    _ => {
                        // Word by word, so that a reader overlaps the change often.
                        for (i, word) in body(pid, n).chunks(8).enumerate() {
                            g.write(HEADER_BYTES + 8 * i, word);
                        }
                    }
                }
            }
            done.store(true, Ordering::SeqCst);
        });
        s.spawn(|| {
            let mut copy = vec![0u8; PAGE];
            let mut last_round = false;
            loop {
                for frame in 0..FRAMES as u64 {
                    memory.dma_read(frame * PAGE as u64, &mut copy).unwrap();
                    let counter = if check(&copy) { &accepted } else { &rejected };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                if last_round {
                    break;
                }
                last_round = done.load(Ordering::SeqCst);
            }
        });
    });
    let (a, r) = (accepted.load(Ordering::Relaxed), rejected.load(Ordering::Relaxed));
    eprintln!("copies accepted {a}, rejected (front != rear) {r}");
    assert!(a >= FRAMES as u64, "the copies after the writer stopped are accepted");
}
