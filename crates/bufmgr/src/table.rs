//! # The page table: pid → frame, in shards
//!
//! A hash map per shard under a reader-writer lock; a pid's shard is a few
//! bits of a multiplicative hash. Hits take the shard's read lock only for
//! the lookup and the pin (a CAS on the frame's state word), so the frame
//! cannot be claimed between the two: an entry is removed only under the
//! write lock, after the evictor claimed the frame (a claim needs the frame
//! unpinned) or after a failed load (whose waiters check the frame's pid
//! once they hold the latch). Each shard also counts its hits and misses,
//! on the cache line its lock already dirties.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;

use crate::Pid;

const SHARDS: usize = 64;
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// A hasher for pids: one multiply, high bits folded down (the map uses
/// both the low bits and the top seven).
#[derive(Default)]
pub(crate) struct PidHasher(u64);

impl Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let h = (x ^ self.0).wrapping_mul(MIX);
        self.0 = h ^ (h >> 29);
    }
}

type Map = HashMap<Pid, u32, BuildHasherDefault<PidHasher>>;

#[repr(align(64))]
struct Shard {
    map: RwLock<Map>,
    hits: AtomicU64,
    misses: AtomicU64,
}

pub(crate) struct PageTable {
    shards: Box<[Shard]>,
}

impl PageTable {
    pub(crate) fn new() -> PageTable {
        let shards = (0..SHARDS)
            .map(|_| Shard { map: RwLock::new(Map::default()), hits: AtomicU64::new(0), misses: AtomicU64::new(0) })
            .collect();
        PageTable { shards }
    }

    fn shard(&self, pid: Pid) -> &Shard {
        let i = (pid.wrapping_mul(MIX) >> 58) as usize;
        &self.shards[i % SHARDS]
    }

    /// Runs `f` on `pid`'s frame (if mapped) under the shard's read lock.
    #[inline]
    pub(crate) fn with<R>(&self, pid: Pid, f: impl FnOnce(Option<u32>) -> R) -> R {
        let map = self.shard(pid).map.read();
        f(map.get(&pid).copied())
    }

    /// Maps `pid` to `frame` unless it is mapped already; Err(the frame it is in).
    pub(crate) fn insert(&self, pid: Pid, frame: u32) -> Result<(), u32> {
        let mut map = self.shard(pid).map.write();
        match map.get(&pid) {
            Some(&other) => Err(other),
            None => {
                map.insert(pid, frame);
                Ok(())
            }
        }
    }

    /// Unmaps `pid` if it maps to `frame`.
    pub(crate) fn remove(&self, pid: Pid, frame: u32) {
        let mut map = self.shard(pid).map.write();
        if map.get(&pid) == Some(&frame) {
            map.remove(&pid);
        }
    }

    pub(crate) fn count_hit(&self, pid: Pid) {
        self.shard(pid).hits.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_miss(&self, pid: Pid) {
        self.shard(pid).misses.fetch_add(1, Ordering::Relaxed);
    }

    /// Hits and misses over all shards.
    pub(crate) fn hits_misses(&self) -> (u64, u64) {
        self.shards
            .iter()
            .fold((0, 0), |(h, m), s| (h + s.hits.load(Ordering::Relaxed), m + s.misses.load(Ordering::Relaxed)))
    }

    /// Pages mapped now.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.map.read().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_refuses_a_second_frame_and_remove_checks_the_frame() {
        let t = PageTable::new();
        assert_eq!(t.insert(7, 1), Ok(()));
        assert_eq!(t.insert(7, 2), Err(1));
        t.remove(7, 2);
        assert_eq!(t.with(7, |f| f), Some(1));
        t.remove(7, 1);
        assert_eq!(t.with(7, |f| f), None);
    }

    #[test]
    fn consecutive_pids_spread_over_the_shards() {
        let t = PageTable::new();
        for pid in 0..4096 {
            t.insert(pid, pid as u32).unwrap();
        }
        let fullest = t.shards.iter().map(|s| s.map.read().len()).max().unwrap();
        assert!(fullest < 4096 / SHARDS * 2, "the fullest shard holds {fullest} of 4096 pids");
        assert_eq!(t.len(), 4096);
    }
}
