//! Helpers the pool's tests share.
#![allow(dead_code)]

use std::sync::Arc;

use ndpdb_bufmgr::{BufferPool, MemoryLog, MemoryPageIo, PoolConfig};

/// A pool of `frames` frames of `page_bytes` over a file in memory that may
/// grow to `pages_max` pages.
pub fn memory_pool(
    frames: usize,
    page_bytes: usize,
    pages_max: u64,
) -> (BufferPool, Arc<MemoryPageIo>, Arc<MemoryLog>) {
    let io = Arc::new(MemoryPageIo::new(page_bytes, pages_max));
    let log = Arc::new(MemoryLog::new());
    let pool = BufferPool::new(PoolConfig { frames, page_bytes }, io.clone(), log.clone()).unwrap();
    (pool, io, log)
}

/// SplitMix64: a small seeded generator (the tests' randomness is fixed).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The pid word of a page's bytes.
pub fn pid_word(page: &[u8]) -> u64 {
    u64::from_le_bytes(page[8..16].try_into().unwrap())
}
