//! Latency of the buffer pool's fix and unfix on cached pages.
//!
//! `cargo run --release -p ndpdb-bufmgr --example pool_latency [-- ROUNDS PAIRS]`
//!
//! Each case runs ROUNDS rounds of PAIRS fix+unfix pairs on pages already
//! in the pool (pages in memory, so no I/O) and reports the nanoseconds per
//! pair over the rounds: median, 10th and 90th percentile. The two-thread
//! cases report each thread's rounds.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use ndpdb_bufmgr::{BufferPool, HEADER_BYTES, MemoryLog, MemoryPageIo, PoolConfig};

const PAGE: usize = 16 << 10;
const FRAMES: usize = 64;

fn pool() -> BufferPool {
    let io = Arc::new(MemoryPageIo::new(PAGE, FRAMES as u64));
    let pool =
        BufferPool::new(PoolConfig { frames: FRAMES, page_bytes: PAGE }, io, Arc::new(MemoryLog::new())).unwrap();
    for _ in 0..FRAMES {
        pool.allocate().unwrap();
    }
    pool
}

/// ns per pair of each round of `pairs` calls of `f(i)`.
fn rounds(rounds: usize, pairs: u64, mut f: impl FnMut(u64)) -> Vec<f64> {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for i in 0..pairs {
                f(i);
            }
            t.elapsed().as_nanos() as f64 / pairs as f64
        })
        .collect()
}

fn report(case: &str, mut ns: Vec<f64>) {
    ns.sort_by(f64::total_cmp);
    let at = |q: f64| ns[((ns.len() - 1) as f64 * q).round() as usize];
    println!("{case:<52} {:>8.1} {:>8.1} {:>8.1}", at(0.5), at(0.1), at(0.9));
}

/// `f(thread, i)` on two threads at once; both threads' rounds.
fn two_threads(pool: &BufferPool, r: usize, pairs: u64, f: impl Fn(&BufferPool, usize, u64) + Sync) -> Vec<f64> {
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let (start, f) = (&start, &f);
                s.spawn(move || {
                    start.wait();
                    rounds(r, pairs, |i| f(pool, t, i))
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let r = args.first().copied().unwrap_or(31) as usize;
    let pairs = args.get(1).copied().unwrap_or(1_000_000);
    let pool = pool();
    println!("buffer pool fix+unfix of cached pages: {FRAMES} frames of {PAGE} B, {r} rounds of {pairs} pairs");
    println!("{:<52} {:>8} {:>8} {:>8}", "case (ns per fix+unfix pair)", "median", "p10", "p90");
    report(
        "shared, one page, 1 thread",
        rounds(r, pairs, |_| {
            black_box(pool.fix_shared(black_box(7)).unwrap().bytes()[HEADER_BYTES]);
        }),
    );
    report(
        "shared, 64 pages in turn, 1 thread",
        rounds(r, pairs, |i| {
            black_box(pool.fix_shared(i % FRAMES as u64).unwrap().bytes()[HEADER_BYTES]);
        }),
    );
    report(
        "shared, 4 pages coupled (a 4-level descent), 1 thread",
        rounds(r, pairs / 4, |i| {
            let mut g = pool.fix_shared(i % 16).unwrap();
            for level in 1..4 {
                let child = pool.fix_shared((i + level * 16) % FRAMES as u64).unwrap();
                g = child;
            }
            black_box(g.bytes()[HEADER_BYTES]);
        })
        .into_iter()
        .map(|ns| ns / 4.0)
        .collect(),
    );
    report(
        "exclusive, no write, 1 thread",
        rounds(r, pairs, |_| {
            black_box(pool.fix_exclusive(black_box(7)).unwrap().bytes()[HEADER_BYTES]);
        }),
    );
    report(
        "exclusive, 8-byte write, 1 thread",
        rounds(r, pairs, |i| {
            pool.fix_exclusive(black_box(7)).unwrap().write(HEADER_BYTES, &i.to_le_bytes());
        }),
    );
    let r2 = r.div_ceil(2);
    report(
        "shared, same page, 2 threads",
        two_threads(&pool, r2, pairs, |p, _, _| {
            black_box(p.fix_shared(7).unwrap().bytes()[HEADER_BYTES]);
        }),
    );
    report(
        "shared, a page each, 2 threads",
        two_threads(&pool, r2, pairs, |p, t, _| {
            black_box(p.fix_shared(10 + t as u64).unwrap().bytes()[HEADER_BYTES]);
        }),
    );
    let s = pool.stats();
    println!("pool: {} hits, {} misses, {} latch waits", s.hits, s.misses, s.latch_waits);
}
