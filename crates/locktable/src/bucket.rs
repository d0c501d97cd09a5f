//! The shared region: 64-byte buckets, the key hash and the table size.
//!
//! ```text
//!  region (bytes = buckets x 64, a power of two, default 4 MiB = 65,536 buckets)
//!  ┌────────────── bucket b (one cache line, 64-byte aligned) ──────────────┐
//!  │ w0 B|W|holder │ w1 │ w2 │ w3 │ w4 │ w5 │ w6 │ w7 │  8 x u64, little-endian │
//!  └────────────────────────────────────────────────────────────────────────┘
//!  b = (vid + mix(version)) mod buckets        (docs/format/locktable.md)
//! ```

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::LockError;
use crate::protocol::{BucketWords, SLOTS};

/// Bytes of one bucket: one cache line.
pub const BUCKET_BYTES: usize = 64;
/// The default region size, as in neoDBMS's "few megabytes".
pub const DEFAULT_TABLE_BYTES: usize = 4 << 20;
/// The largest region accepted (16 Mi buckets).
pub const MAX_TABLE_BYTES: usize = 1 << 30;
/// Multiplier of the version mix: 2^64 / golden ratio, odd.
pub const VERSION_MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// One bucket: a FIFO of up to eight transaction timestamps in one cache
/// line. Word 0 is the holder (with the busy and waiters bits, see
/// `protocol`), words 1..7 the waiters in arrival order, then zeros.
#[repr(C, align(64))]
#[derive(Default)]
pub struct Bucket {
    slots: [AtomicU64; SLOTS],
}

// The layout docs/format/locktable.md specifies.
const _: () = assert!(size_of::<Bucket>() == BUCKET_BYTES && align_of::<Bucket>() == BUCKET_BYTES);

impl Bucket {
    /// The atomic word of `slot` (0..8), for agents that share the region.
    pub fn slot(&self, slot: usize) -> &AtomicU64 {
        &self.slots[slot]
    }

    /// The eight words as they are now, read one by one (a debugging view:
    /// not a consistent snapshot while the bucket changes).
    pub fn words(&self) -> [u64; SLOTS] {
        std::array::from_fn(|i| self.slots[i].load(Ordering::Acquire))
    }
}

/// The lock key of a tuple version: neoDBMS locks (VID, version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockKey {
    pub vid: u64,
    pub version: u64,
}

impl LockKey {
    pub fn new(vid: u64, version: u64) -> Self {
        Self { vid, version }
    }
}

impl fmt::Display for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(vid {}, version {})", self.vid, self.version)
    }
}

/// The bucket of `key` in a table of `mask + 1` buckets.
///
/// `(vid + mix(version)) & mask`, with `mix(v) = h ^ (h >> 32)` for
/// `h = v * VERSION_MIX` (wrapping). The VID enters unhashed: VIDs are dense
/// and increasing (neoDBMS), so any `buckets` consecutive VIDs of one version
/// never collide and a sequential sweep walks consecutive cache lines (which
/// the coherent interconnect prefetches). The version is mixed, high bits
/// folded down, so successive versions of a tuple land far apart. The price:
/// VIDs that differ by a multiple of the bucket count collide.
pub fn bucket_index(key: LockKey, mask: u64) -> usize {
    let h = key.version.wrapping_mul(VERSION_MIX);
    (key.vid.wrapping_add(h ^ (h >> 32)) & mask) as usize
}

/// The number of buckets in a region of `bytes`, or why the size is refused.
pub fn bucket_count(bytes: usize) -> Result<usize, LockError> {
    let reason = if bytes < BUCKET_BYTES {
        Some("smaller than one 64-byte bucket")
    } else if !bytes.is_power_of_two() {
        Some("not a power of two")
    } else if bytes > MAX_TABLE_BYTES {
        Some("larger than 1 GiB")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(LockError::InvalidSize { bytes, reason }),
        None => Ok(bytes / BUCKET_BYTES),
    }
}

/// The host's access to the region: plain atomics on its own memory.
#[derive(Clone, Copy)]
pub struct HostWords<'a> {
    buckets: &'a [Bucket],
}

impl<'a> HostWords<'a> {
    pub fn new(buckets: &'a [Bucket]) -> Self {
        Self { buckets }
    }
}

impl BucketWords for HostWords<'_> {
    #[inline]
    fn load(&self, bucket: usize, slot: usize, order: Ordering) -> u64 {
        self.buckets[bucket].slots[slot].load(order)
    }

    #[inline]
    fn store(&self, bucket: usize, slot: usize, value: u64, order: Ordering) {
        self.buckets[bucket].slots[slot].store(value, order)
    }

    #[inline]
    fn compare_exchange(
        &self,
        bucket: usize,
        slot: usize,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        self.buckets[bucket].slots[slot].compare_exchange(current, new, success, failure)
    }
}
