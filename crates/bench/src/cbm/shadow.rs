//! # The Shadow method's host memtable
//!
//! Shadow (update-aware NDP) keeps every updated pair a second time in a
//! small sorted memtable on the host; before each offload the memtable is
//! serialised as a sorted table with a block index (`format::shadow`) and
//! shipped with the call, and the device searches it before the tree. The
//! paper caps the memtable at 128 KiB and calls it "similar to an LSM
//! tree"; it does not say what happens when it is full. An LSM tree flushes
//! a full memtable to disk and starts a new one. Here the data are already
//! in the tree: only its pages on the medium may be stale. So a full
//! memtable is emptied only after every dirty page was written back
//! (`BufferPool::flush_dirty`): from then on the medium holds every pair the
//! memtable held, and dropping them loses nothing a lookup needs.
//!
//! ```text
//!  update(k, v): tree ── commit ──► memtable.insert(k, v) ──► acknowledged
//!                                      │ would exceed 128 KiB?
//!                                      ▼
//!                          flush_dirty(); clear; insert
//!  offload:      memtable ── encode ──► table shipped with the call
//! ```
//!
//! The insert happens before the write is acknowledged (the write path of
//! Shadow includes it), so a lookup dispatched after an acknowledgement
//! finds the pair in the table it ships. The size policy is a pure function
//! ([`admit`]) over the memtable's size.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

/// The paper's memtable capacity.
pub const CAPACITY_BYTES: usize = 128 << 10;
/// Bytes an entry costs besides its key and value (its lengths in the
/// serialised table: two u32).
pub const ENTRY_OVERHEAD_BYTES: usize = 8;

/// What an insert must do first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// It fits: insert.
    Insert,
    /// It would overflow: write back the dirty pages, empty the memtable,
    /// then insert.
    FlushFirst,
    /// The entry alone is larger than the memtable.
    TooLarge,
}

/// The policy: a memtable of `bytes` whose entry for the key now costs
/// `old` bytes (0 if absent) receives one of `new` bytes.
pub fn admit(bytes: usize, old: usize, new: usize, capacity: usize) -> Admit {
    if new > capacity {
        Admit::TooLarge
    } else if bytes - old + new > capacity {
        Admit::FlushFirst
    } else {
        Admit::Insert
    }
}

fn entry_bytes(key: &[u8], value: &Option<Vec<u8>>) -> usize {
    key.len() + value.as_ref().map_or(0, Vec::len) + ENTRY_OVERHEAD_BYTES
}

/// The memtable: the newest value of each updated key (`None`: deleted).
#[derive(Debug)]
pub struct Memtable {
    map: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    bytes: usize,
    capacity: usize,
    /// Times it was full and emptied after a write-back.
    pub flushes: u64,
}

impl Memtable {
    pub fn new(capacity: usize) -> Memtable {
        Memtable { map: BTreeMap::new(), bytes: 0, capacity, flushes: 0 }
    }

    /// Adds a pair; calls `write_back` (which must put every committed
    /// change on the medium) and empties the memtable first if it would
    /// overflow.
    pub fn insert(
        &mut self,
        key: &[u8],
        value: Option<Vec<u8>>,
        write_back: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let new = entry_bytes(key, &value);
        let old = self.map.get_key_value(key).map_or(0, |(k, v)| entry_bytes(k, v));
        match admit(self.bytes, old, new, self.capacity) {
            Admit::TooLarge => {
                bail!("a shadow entry of {new} bytes does not fit a memtable of {} bytes", self.capacity)
            }
            Admit::FlushFirst => {
                write_back()?;
                self.map.clear();
                self.bytes = 0;
                self.flushes += 1;
                self.bytes += new;
            }
            Admit::Insert => self.bytes = self.bytes - old + new,
        }
        self.map.insert(key.to_vec(), value);
        Ok(())
    }

    /// Bytes of its entries (the table's size without its index).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The pairs in key order, for `format::shadow::encode`.
    pub fn pairs(&self) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        self.map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_flushes_only_what_would_overflow() {
        assert_eq!(admit(0, 0, 100, 128), Admit::Insert);
        assert_eq!(admit(100, 0, 28, 128), Admit::Insert, "exactly full fits");
        assert_eq!(admit(100, 0, 29, 128), Admit::FlushFirst);
        assert_eq!(admit(120, 50, 58, 128), Admit::Insert, "a replaced entry frees its bytes");
        assert_eq!(admit(0, 0, 129, 128), Admit::TooLarge);
    }

    #[test]
    fn a_full_memtable_is_emptied_only_after_the_write_back() {
        let mut m = Memtable::new(CAPACITY_BYTES);
        let v = vec![7u8; 1024];
        let per = 24 + 1024 + ENTRY_OVERHEAD_BYTES;
        let fit = CAPACITY_BYTES / per;
        for i in 0..fit {
            m.insert(format!("user{i:020}").as_bytes(), Some(v.clone()), || panic!("not full yet")).unwrap();
        }
        assert_eq!((m.len(), m.bytes()), (fit, fit * per));
        // Updating a key already there replaces it: no growth.
        m.insert(b"user00000000000000000000", Some(v.clone()), || panic!("a replacement")).unwrap();
        assert_eq!(m.len(), fit);
        let mut wrote = false;
        m.insert(b"user99999999999999999999", Some(v.clone()), || {
            wrote = true;
            Ok(())
        })
        .unwrap();
        assert!(wrote);
        assert_eq!((m.len(), m.bytes(), m.flushes), (1, per, 1));
        assert_eq!(m.pairs(), vec![(b"user99999999999999999999".to_vec(), Some(v.clone()))]);
        // A failed write-back keeps the memtable as it was.
        let mut full = Memtable::new(2 * per);
        full.insert(b"a", Some(v.clone()), || Ok(())).unwrap();
        full.insert(b"b", Some(v.clone()), || Ok(())).unwrap();
        let err = full.insert(b"c", Some(v.clone()), || bail!("device full"));
        assert!(err.is_err() && full.len() == 2);
        assert!(Memtable::new(10).insert(b"k", Some(v), || Ok(())).is_err());
    }
}
