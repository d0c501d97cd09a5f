//! The shadow table (`docs/format/kv_lookup.md`, "Shadow table"): the
//! Shadow method's updated pairs, serialised by the host before each
//! offload as a sorted table with a block index (the paper's SST) and
//! shipped with the lookup call; the device searches it before the tree.
//!
//! ```text
//! offset size field
//!      0    4 magic         b"KVSH"
//!      4    4 pairs         entries in the table
//!      8    4 blocks        data blocks
//!     12    4 index_offset  where the block index starts
//!     16    … data blocks   entries in strictly increasing key order, per
//!                           entry: key_len u16, kind u8 (1 value, 0 delete),
//!                           value_len u32 (0 for a delete), key, value
//! index_offset  block index per block: offset u32 (of its first entry),
//!                           first_len u16, its first key
//! ```
//!
//! Blocks hold about [`BLOCK_BYTES`]; a search reads the index, picks the
//! last block whose first key is at or below the key, and scans it.

use crate::FormatError;
use crate::bytes::{Reader, Writer};

pub const MAGIC: [u8; 4] = *b"KVSH";
/// The data bytes a block holds before the next one starts.
pub const BLOCK_BYTES: usize = 4096;
const HEADER_BYTES: usize = 16;
const S: &str = "shadow table";

/// The table of `pairs` (`None`: the key was deleted). Keys need not be
/// sorted; of equal keys the last one counts. Keys up to 64 KiB - 1 bytes.
pub fn encode(pairs: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<u8> {
    let mut sorted: Vec<&(Vec<u8>, Option<Vec<u8>>)> = pairs.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    // Of equal keys keep the last given (stable sort keeps their order).
    let mut unique: Vec<&(Vec<u8>, Option<Vec<u8>>)> = Vec::with_capacity(sorted.len());
    for p in sorted {
        match unique.last_mut() {
            Some(last) if last.0 == p.0 => *last = p,
            _ => unique.push(p),
        }
    }
    let mut data = Writer(Vec::new());
    let mut index: Vec<(u32, &[u8])> = Vec::new();
    let mut block_start = usize::MAX;
    for (key, value) in unique.iter().map(|p| (&p.0, &p.1)) {
        debug_assert!(key.len() <= usize::from(u16::MAX));
        if block_start == usize::MAX || data.0.len() - block_start >= BLOCK_BYTES {
            block_start = data.0.len();
            index.push(((HEADER_BYTES + block_start) as u32, key));
        }
        data.u16(key.len() as u16);
        data.u8(u8::from(value.is_some()));
        data.u32(value.as_ref().map_or(0, |v| v.len() as u32));
        data.bytes(key);
        if let Some(v) = value {
            data.bytes(v);
        }
    }
    let mut w = Writer(Vec::with_capacity(HEADER_BYTES + data.0.len() + index.len() * 32));
    w.bytes(&MAGIC);
    w.u32(unique.len() as u32);
    w.u32(index.len() as u32);
    w.u32((HEADER_BYTES + data.0.len()) as u32);
    w.bytes(&data.0);
    for (offset, first) in index {
        w.u32(offset);
        w.u16(first.len() as u16);
        w.bytes(first);
    }
    w.0
}

fn invalid(field: &'static str, reason: String) -> FormatError {
    FormatError::InvalidField { structure: S, field, reason }
}

/// Looks `key` up: `None` if the table does not have it, `Some(None)` if it
/// says the key was deleted, `Some(Some(value))` if it has a value.
pub fn search<'t>(table: &'t [u8], key: &[u8]) -> Result<Option<Option<&'t [u8]>>, FormatError> {
    let mut r = Reader::new(table, S);
    if r.take(4)? != MAGIC {
        return Err(FormatError::BadMagic { structure: S, found: table[..4].to_vec() });
    }
    let (_pairs, blocks, index_offset) = (r.u32()?, r.u32()?, r.u32()? as usize);
    if index_offset < HEADER_BYTES || index_offset > table.len() {
        return Err(invalid("index_offset", format!("{index_offset} in a table of {} bytes", table.len())));
    }
    let mut idx = Reader::new(&table[index_offset..], S);
    let blocks = idx.count(u64::from(blocks), 6)?;
    // The last block whose first key is at or below `key`, and where it ends.
    let (mut chosen, mut end, mut previous) = (None, index_offset, HEADER_BYTES - 1);
    for _ in 0..blocks {
        let offset = idx.u32()? as usize;
        let len = usize::from(idx.u16()?);
        let first = idx.take(len)?;
        if offset <= previous || offset > index_offset {
            return Err(invalid("index", format!("block offset {offset} out of order or outside the data")));
        }
        if chosen.is_some() && end == index_offset {
            end = offset;
        }
        if first <= key {
            (chosen, end) = (Some(offset), index_offset);
        }
        previous = offset;
    }
    let Some(start) = chosen else { return Ok(None) };
    let mut b = Reader::new(&table[start..end], S);
    while b.at < end - start {
        let (klen, kind, vlen) = (usize::from(b.u16()?), b.u8()?, b.u32()? as usize);
        let k = b.take(klen)?;
        let v = b.take(if kind == 1 { vlen } else { 0 })?;
        if kind > 1 || (kind == 0 && vlen != 0) {
            return Err(invalid("kind", format!("entry kind {kind} with a {vlen}-byte value")));
        }
        match k.cmp(key) {
            std::cmp::Ordering::Less => continue,
            std::cmp::Ordering::Equal => return Ok(Some((kind == 1).then_some(v))),
            std::cmp::Ordering::Greater => return Ok(None),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        #[test]
        fn search_agrees_with_a_map(pairs in proptest::collection::vec((proptest::collection::vec(0u8..4, 0..6), proptest::option::of(proptest::collection::vec(any::<u8>(), 0..600))), 0..200), probe in proptest::collection::vec(0u8..4, 0..6)) {
            let table = encode(&pairs);
            let model: BTreeMap<_, _> = pairs.iter().cloned().collect();
            for key in model.keys().chain(std::iter::once(&probe)) {
                let want = model.get(key).map(|v| v.as_deref());
                prop_assert_eq!(search(&table, key).unwrap(), want);
            }
        }

        #[test]
        fn search_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300), at in 0usize..300, x in any::<u8>(), key in proptest::collection::vec(0u8..4, 0..6)) {
            let _ = search(&bytes, &key);
            let mut good = encode(&[(vec![1], Some(vec![2; 5000])), (vec![2], None), (vec![3], Some(vec![4]))]);
            let i = at % good.len();
            good[i] ^= x;
            let _ = search(&good, &key);
            let _ = search(&good[..i], &key);
        }
    }

    #[test]
    fn blocks_split_large_tables_and_the_index_finds_them() {
        let pairs: Vec<_> = (0..500u32).map(|i| (i.to_be_bytes().to_vec(), Some(vec![i as u8; 100]))).collect();
        let table = encode(&pairs);
        assert!(u32::from_le_bytes(table[8..12].try_into().unwrap()) > 10, "several blocks");
        assert_eq!(search(&table, &7u32.to_be_bytes()).unwrap(), Some(Some(&[7u8; 100][..])));
        assert_eq!(search(&table, &[0xff; 5]).unwrap(), None);
    }
}
