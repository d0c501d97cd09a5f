//! The group numbers of hash aggregation: encoded group keys interned to
//! dense numbers 0, 1, 2, ... in the order they are first seen.
//!
//! ```text
//!  slots (open addressing, linear probing, at most half full)
//!   [ (tag, group) | EMPTY | (tag, group) | ... ]      tag: high 32 bits of the hash
//!                               │
//!  per group:  ends[g] ─► bytes[ends[g-1]..ends[g]]    the encoded key
//!              hashes[g]                               its 64-bit hash (for growing
//!                                                      and for merging tables)
//! ```
//!
//! The earlier `HashMap<Box<[u8]>, u32>` made an allocation per group and
//! followed a pointer to compare every probed key: TPC-H Q18 (1.5 million
//! groups of `l_orderkey`) spent a quarter of its time there, and more
//! freeing the boxes. Here the keys lie back to back in one buffer; a probe
//! compares the slot's 32-bit tag first and touches the key bytes only on
//! a tag match. A slot is 8 bytes and a group 16 besides its key bytes.
//! Equal keys are equal bytes (arrow-row encodings), so equality of bytes
//! decides; the hash (`hashing::hash_bytes`) is not keyed (see `hashing`).

/// A free slot.
const EMPTY: (u32, u32) = (0, u32::MAX);

/// Encoded keys and their group numbers (see the module doc).
#[derive(Default)]
pub struct GroupKeys {
    bytes: Vec<u8>,
    /// `ends[g]`: the end of key `g` in `bytes` (it starts at `ends[g-1]`).
    ends: Vec<usize>,
    hashes: Vec<u64>,
    slots: Vec<(u32, u32)>,
}

impl GroupKeys {
    pub fn new() -> GroupKeys {
        GroupKeys { slots: vec![EMPTY; 16], ..GroupKeys::default() }
    }

    /// Groups so far.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Group `g`'s encoded key.
    pub fn key(&self, g: u32) -> &[u8] {
        let g = g as usize;
        let start = if g == 0 { 0 } else { self.ends[g - 1] };
        &self.bytes[start..self.ends[g]]
    }

    /// Group `g`'s key hash.
    pub fn hash(&self, g: u32) -> u64 {
        self.hashes[g as usize]
    }

    /// The group of `key`, and whether it was added now.
    #[cfg(test)]
    pub fn find_or_insert(&mut self, key: &[u8]) -> (u32, bool) {
        self.find_or_insert_hashed(key, super::hashing::hash_bytes(key))
    }

    /// The group of `key` (whose hash is `hash`), if it has one.
    pub fn find_hashed(&self, key: &[u8], hash: u64) -> Option<u32> {
        self.probe(key, hash).ok()
    }

    /// `key`'s group, or the empty slot where it would go.
    #[inline]
    fn probe(&self, key: &[u8], hash: u64) -> std::result::Result<u32, usize> {
        let tag = (hash >> 32) as u32;
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let (t, g) = self.slots[i];
            if g == EMPTY.1 {
                return Err(i);
            }
            if t == tag && self.key(g) == key {
                return Ok(g);
            }
            i = (i + 1) & mask;
        }
    }

    /// [`GroupKeys::find_or_insert`] with the key's hash known
    /// ([`hash_bytes`](super::hashing::hash_bytes) of it: another table's [`GroupKeys::hash`]).
    pub fn find_or_insert_hashed(&mut self, key: &[u8], hash: u64) -> (u32, bool) {
        let i = match self.probe(key, hash) {
            Ok(g) => return (g, false),
            Err(i) => i,
        };
        let g = self.ends.len() as u32;
        self.slots[i] = ((hash >> 32) as u32, g);
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
        self.hashes.push(hash);
        if 2 * self.ends.len() > self.slots.len() {
            self.grow();
        }
        (g, true)
    }

    /// Doubles the slots and places every group again by its hash.
    fn grow(&mut self) {
        let mut slots = vec![EMPTY; self.slots.len() * 2];
        let mask = slots.len() - 1;
        for (g, &hash) in self.hashes.iter().enumerate() {
            let mut i = hash as usize & mask;
            while slots[i].1 != EMPTY.1 {
                i = (i + 1) & mask;
            }
            slots[i] = ((hash >> 32) as u32, g as u32);
        }
        self.slots = slots;
    }

    /// The group numbers in the order of their encoded keys.
    pub fn sorted(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        // Keys are distinct: the unstable sort's order is the only one.
        order.sort_unstable_by(|&a, &b| self.key(a).cmp(self.key(b)));
        order
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::exec::hashing::hash_bytes;

    /// Numbers are dense, first-seen order, stable across growing; the
    /// same as a map from key to its first position among new keys.
    #[test]
    fn interns_like_a_map() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        let mut keys = GroupKeys::new();
        let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
        for _ in 0..20_000 {
            let len = rng.random_range(0..12);
            let key: Vec<u8> = (0..len).map(|_| rng.random_range(0..4u8)).collect();
            let next = model.len() as u32;
            let want = *model.entry(key.clone()).or_insert(next);
            let found = keys.find_hashed(&key, hash_bytes(&key));
            let (got, added) = keys.find_or_insert(&key);
            assert_eq!((got, added), (want, want == next), "key {key:?}");
            assert_eq!(found, (!added).then_some(got));
        }
        assert_eq!(keys.len(), model.len());
        for (k, &g) in &model {
            assert_eq!(keys.key(g), k.as_slice());
            assert_eq!(keys.hash(g), hash_bytes(k));
        }
        let sorted = keys.sorted();
        assert!(sorted.windows(2).all(|w| keys.key(w[0]) < keys.key(w[1])));
    }

    /// Colliding tags (equal high hash bits) still compare the bytes.
    #[test]
    fn equal_tags_are_told_apart_by_bytes() {
        let mut keys = GroupKeys::new();
        let (a, b) = (b"a".as_slice(), b"b".as_slice());
        let h = 0xABCD_0000_0000_0003;
        assert_eq!(keys.find_or_insert_hashed(a, h), (0, true));
        assert_eq!(keys.find_or_insert_hashed(b, h), (1, true));
        assert_eq!(keys.find_or_insert_hashed(a, h), (0, false));
        assert_eq!(keys.find_or_insert_hashed(b, h), (1, false));
    }
}
