//! Fixes and unfixes from two threads at once on a pool smaller than the
//! file, so that misses, evictions and latch waits overlap; and Flush
//! (`flush_dirty`) while they run. Fixed seeds; no timing is asserted.
//!
//! Each page holds a counter twice (at the start and the end of its body).
//! Writers increment both under the exclusive latch; readers check under
//! the shared latch that the copies agree. At the end the counters add up
//! to the increments made: no update was lost to a shared latch letting a
//! writer in, to two writers at once, or to an eviction.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::{Rng, memory_pool};
use ndpdb_bufmgr::{BufferPool, ExclusiveGuard, HEADER_BYTES, PoolError, TRAILER_BYTES};

const PAGE: usize = 256;
const PAGES: u64 = 12;
const FRAMES: usize = 4;
const FIRST: usize = HEADER_BYTES;
const SECOND: usize = PAGE - TRAILER_BYTES - 8;

fn counters(bytes: &[u8]) -> (u64, u64) {
    let at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    (at(FIRST), at(SECOND))
}

/// A little work inside a latch, so that the threads' latches overlap.
fn work() {
    for _ in 0..100 {
        std::hint::spin_loop();
    }
}

fn increment(g: &mut ExclusiveGuard<'_>) -> u64 {
    let (a, b) = counters(g.bytes());
    assert_eq!(a, b, "page {}: counters differ under the exclusive latch", g.pid());
    g.write(FIRST, &(a + 1).to_le_bytes());
    work();
    g.write(SECOND, &(a + 1).to_le_bytes());
    a + 1
}

/// Half the operations go to page 0, the rest spread over the file.
fn pick(rng: &mut Rng) -> u64 {
    if rng.chance(50) { 0 } else { rng.below(PAGES) }
}

/// One thread's work: at least `ops` random operations, and more until
/// `enough` is set; returns its increments.
fn worker(pool: &BufferPool, seed: u64, ops: u64, committed: &[AtomicU64], enough: &AtomicBool) -> u64 {
    let mut rng = Rng(seed);
    let mut increments = 0;
    let mut op = 0;
    while op < ops || !enough.load(Ordering::Relaxed) {
        op += 1;
        let pid = pick(&mut rng);
        match rng.below(10) {
            0..4 => {
                let g = pool.fix_shared(pid).unwrap();
                let (a, _) = counters(g.bytes());
                work();
                let (_, b) = counters(g.bytes());
                assert_eq!(a, b, "page {pid}: a reader saw a change in progress");
            }
            4..8 => {
                let value = increment(&mut pool.fix_exclusive(pid).unwrap());
                committed[pid as usize].fetch_max(value, Ordering::SeqCst);
                increments += 1;
            }
            _ => {
                // Two pages at once, in pid order (as latch coupling would).
                let other = pick(&mut rng);
                let (lo, hi) = (pid.min(other), pid.max(other));
                if lo == hi {
                    continue;
                }
                let first = pool.fix_shared(lo).unwrap();
                let mut second = pool.fix_exclusive(hi).unwrap();
                let _ = counters(first.bytes());
                let value = increment(&mut second);
                drop(first);
                let shared = second.downgrade();
                assert_eq!(counters(shared.bytes()), (value, value));
                drop(shared);
                committed[hi as usize].fetch_max(value, Ordering::SeqCst);
                increments += 1;
            }
        }
    }
    increments
}

fn setup() -> (BufferPool, std::sync::Arc<ndpdb_bufmgr::MemoryPageIo>) {
    let (pool, io, _) = memory_pool(FRAMES, PAGE, PAGES);
    for _ in 0..PAGES {
        pool.allocate().unwrap();
    }
    (pool, io)
}

fn total(pool: &BufferPool) -> u64 {
    (0..PAGES).map(|pid| counters(pool.fix_shared(pid).unwrap().bytes()).0).sum()
}

#[test]
fn two_threads_fixing_lose_no_update() {
    let (pool, _) = setup();
    let committed: Vec<AtomicU64> = (0..PAGES).map(|_| AtomicU64::new(0)).collect();
    let enough = AtomicBool::new(true);
    let made: u64 = std::thread::scope(|s| {
        let a = s.spawn(|| worker(&pool, 1, 20_000, &committed, &enough));
        let b = s.spawn(|| worker(&pool, 2, 20_000, &committed, &enough));
        a.join().unwrap() + b.join().unwrap()
    });
    assert_eq!(total(&pool), made);
    let s = pool.stats();
    eprintln!("{s:?}");
    assert_eq!(s.full, 0, "at most three frames are ever pinned");
    assert!(s.evictions > 0 && s.misses > 0);
}

#[test]
fn flush_writes_every_change_that_ended_before_it() {
    let (pool, io) = setup();
    let committed: Vec<AtomicU64> = (0..PAGES).map(|_| AtomicU64::new(0)).collect();
    // The workers go on until the flusher has flushed 50 times under them.
    let enough = AtomicBool::new(false);
    let mut flushes = 0;
    let made: u64 = std::thread::scope(|s| {
        let a = s.spawn(|| worker(&pool, 3, 2_000, &committed, &enough));
        let b = s.spawn(|| worker(&pool, 4, 2_000, &committed, &enough));
        for _ in 0..50 {
            let before: Vec<u64> = committed.iter().map(|c| c.load(Ordering::SeqCst)).collect();
            let f = pool.flush_dirty().unwrap();
            assert!(f.quiesce_ns <= f.held_ns);
            for (pid, &c) in before.iter().enumerate() {
                let on_medium = counters(&io.page(pid as u64).unwrap()).0;
                assert!(on_medium >= c, "page {pid}: {c} committed before the flush, {on_medium} on the medium");
            }
            flushes += 1;
        }
        enough.store(true, Ordering::SeqCst);
        a.join().unwrap() + b.join().unwrap()
    });
    assert!(flushes > 0);
    assert_eq!(pool.stats().flushes, flushes);
    pool.flush_dirty().unwrap();
    let on_medium: u64 = (0..PAGES).map(|pid| counters(&io.page(pid).unwrap()).0).sum();
    assert_eq!(on_medium, made, "after a final flush the medium holds every increment");
    assert_eq!(total(&pool), made);
}

#[test]
fn a_full_pool_under_two_threads_is_an_error_not_a_wait() {
    let (pool, io, _) = memory_pool(2, PAGE, 8);
    for _ in 0..4 {
        pool.allocate().unwrap();
    }
    let _ = io;
    std::thread::scope(|s| {
        let a = pool.fix_shared(0).unwrap();
        s.spawn(|| {
            let b = pool.fix_shared(1).unwrap();
            let err = pool.fix_shared(2).unwrap_err();
            assert!(matches!(err, PoolError::Full { frames: 2 }), "{err}");
            drop(b);
        })
        .join()
        .unwrap();
        drop(a);
    });
    assert!(pool.fix_shared(2).is_ok());
}
