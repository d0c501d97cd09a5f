//! Hashing of encoded keys for hash joins, aggregation and set operations.
//!
//! Keys are arrow-row encodings (`util::KeyEncoder`): byte strings whose
//! equality is the keys' equality. Two pieces:
//!
//! - [`FastState`], a `BuildHasher` for `HashMap`s keyed by such bytes:
//!   eight bytes at a time, multiply and rotate, a final avalanche. The
//!   standard SipHash is keyed to resist chosen collisions; this hash is
//!   not (as PostgreSQL's `hash_any` is not): a user who stores keys
//!   chosen to collide makes a join or aggregation slow, never wrong,
//!   since every match compares the encoded bytes. SipHash cost a tenth of
//!   TPC-H Q21's time.
//! - [`KeyIndex`], a hash join's build side indexed by key without a map
//!   entry (nor an allocation) per key:
//!
//! ```text
//!  encoded keys (one arrow-row buffer)   hashes[row]   next[row]
//!  heads[hash & mask] ─► first row of the bucket ─► next ─► ... ─► NO_ROW
//! ```
//!
//!   A bucket chains every build row whose hash falls in it, in ascending
//!   row order (rows are linked from the last to the first); a lookup
//!   walks the chain and keeps the rows whose 64-bit hash and encoded
//!   bytes equal the probe key's, so the rows of one key come out ascending
//!   as before. The table has at least twice as many buckets as rows, so a
//!   chain holds about one other key. A probe batch is looked up in two
//!   passes ([`KeyIndex::probe`]: all heads, then all chains), so that
//!   the cache misses of many rows overlap (TPC-H SF 1 Q5, 6M probes into
//!   227,597 orders: 0.58-0.61 s row by row, 0.48-0.52 s batched).

use std::hash::{BuildHasher, Hasher};

use arrow_row::Rows;

/// No row (end of a chain).
pub const NO_ROW: u32 = u32::MAX;

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// The avalanche of MurmurHash3's 64-bit finaliser.
pub(super) fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A hash of `bytes` (not keyed: see the module doc).
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = FastHasher::default();
    h.write(bytes);
    h.finish()
}

/// The hasher behind [`FastState`].
#[derive(Default, Clone, Copy)]
pub struct FastHasher {
    h: u64,
}

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.h = (self.h ^ word).wrapping_mul(K).rotate_left(31);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn finish(&self) -> u64 {
        mix(self.h)
    }
}

/// `BuildHasher` for maps keyed by encoded keys (see the module doc).
#[derive(Default, Clone, Copy)]
pub struct FastState;

impl BuildHasher for FastState {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher::default()
    }
}

/// Build rows indexed by encoded key (see the module doc).
pub struct KeyIndex {
    rows: Rows,
    hashes: Vec<u64>,
    heads: Vec<u32>,
    next: Vec<u32>,
    mask: u64,
}

impl KeyIndex {
    /// Indexes the rows of `rows` except those `skip` marks (a NULL key).
    pub fn new(rows: Rows, skip: &[bool]) -> KeyIndex {
        let n = rows.num_rows();
        let buckets = (2 * n).max(16).next_power_of_two();
        let mask = buckets as u64 - 1;
        let hashes: Vec<u64> = (0..n).map(|i| hash_bytes(rows.row(i).as_ref())).collect();
        let mut heads = vec![NO_ROW; buckets];
        let mut next = vec![NO_ROW; n];
        for i in (0..n).rev() {
            if skip.get(i).copied().unwrap_or(false) {
                continue;
            }
            let b = (hashes[i] & mask) as usize;
            next[i] = heads[b];
            heads[b] = i as u32;
        }
        KeyIndex { rows, hashes, heads, next, mask }
    }

    /// The matches of every probe key in `keys` that `skip` does not mark
    /// (a NULL key), as (probe row, build row) pairs: probe rows
    /// ascending, each one's build rows ascending, as [`KeyIndex::matches`]
    /// row by row gives. In two passes over the batch: every key's hash
    /// and bucket head first, then the chains. A bucket head of a table
    /// larger than the CPU's caches is a cache miss; loaded in a loop
    /// whose iterations do not depend on each other, the misses of many
    /// probe rows overlap, where a lookup that walks its chain before the
    /// next row's head is loaded waits for each miss in turn.
    pub fn probe(&self, keys: &Rows, skip: &[bool], out: &mut Vec<(u32, u32)>) {
        let heads: Vec<(u32, u32, u64)> = (0..keys.num_rows())
            .filter(|&i| !skip.get(i).copied().unwrap_or(false))
            .map(|i| {
                let h = hash_bytes(keys.row(i).data());
                (i as u32, self.heads[(h & self.mask) as usize], h)
            })
            .filter(|&(_, head, _)| head != NO_ROW)
            .collect();
        for (i, mut at, h) in heads {
            let key = keys.row(i as usize);
            while at != NO_ROW {
                let r = at as usize;
                if self.hashes[r] == h && self.rows.row(r).as_ref() == key.data() {
                    out.push((i, at));
                }
                at = self.next[r];
            }
        }
    }

    /// The build rows whose key encodes as `key`, ascending: one lookup,
    /// the reference the tests hold [`KeyIndex::probe`] to.
    #[cfg(test)]
    pub fn matches<'a>(&'a self, key: &'a [u8]) -> impl Iterator<Item = u32> + 'a {
        let h = hash_bytes(key);
        let mut at = self.heads[(h & self.mask) as usize];
        std::iter::from_fn(move || {
            while at != NO_ROW {
                let r = at;
                at = self.next[r as usize];
                if self.hashes[r as usize] == h && self.rows.row(r as usize).as_ref() == key {
                    return Some(r);
                }
            }
            None
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array};
    use arrow_row::{RowConverter, SortField};

    use super::*;

    fn encode(values: &[i64]) -> Rows {
        let conv = RowConverter::new(vec![SortField::new(arrow_schema::DataType::Int64)]).unwrap();
        let col: ArrayRef = Arc::new(Int64Array::from(values.to_vec()));
        conv.convert_columns(&[col]).unwrap()
    }

    #[test]
    fn lookups_find_every_row_of_a_key_in_ascending_order() {
        // Many keys in few buckets' worth of values, duplicates, a skipped row.
        let values: Vec<i64> = (0..5000).map(|i| (i * 7919) % 613).collect();
        let mut skip = vec![false; values.len()];
        skip[10] = true;
        let index = KeyIndex::new(encode(&values), &skip);
        let probes = encode(&(0..700).collect::<Vec<_>>());
        for k in 0..700usize {
            let got: Vec<u32> = index.matches(probes.row(k).as_ref()).collect();
            let want: Vec<u32> =
                (0..values.len()).filter(|&i| values[i] == k as i64 && !skip[i]).map(|i| i as u32).collect();
            assert_eq!(got, want, "key {k}");
        }
    }

    /// The batch probe gives what row-by-row lookups give, in the same
    /// order, and leaves out the probe rows it is told to skip.
    #[test]
    fn a_batch_probe_equals_lookups_row_by_row() {
        let values: Vec<i64> = (0..5000).map(|i| (i * 7919) % 613).collect();
        let mut skip = vec![false; values.len()];
        skip[10] = true;
        let index = KeyIndex::new(encode(&values), &skip);
        let keys: Vec<i64> = (0..900).map(|i| (i * 31) % 700).collect();
        let probes = encode(&keys);
        let probe_skip: Vec<bool> = (0..keys.len()).map(|i| i % 11 == 3).collect();
        let mut got = Vec::new();
        index.probe(&probes, &probe_skip, &mut got);
        let want: Vec<(u32, u32)> = (0..keys.len())
            .filter(|&i| !probe_skip[i])
            .flat_map(|i| index.matches(probes.row(i).as_ref()).map(move |r| (i as u32, r)).collect::<Vec<_>>())
            .collect();
        assert!(!want.is_empty());
        assert_eq!(got, want);
    }

    #[test]
    fn the_hash_tells_lengths_and_words_apart() {
        assert_ne!(hash_bytes(b""), hash_bytes(b"\0"));
        assert_ne!(hash_bytes(b"\0"), hash_bytes(b"\0\0"));
        assert_ne!(hash_bytes(b"abcdefgh1"), hash_bytes(b"abcdefgh2"));
        assert_eq!(hash_bytes(b"same key"), hash_bytes(b"same key"));
    }
}
