//! Reads: point lookups and forward range scans, with shared latches taken
//! hand over hand from the root (latch coupling). A reader never holds a
//! latch between calls: a scan copies a leaf's entries from its start key
//! on, lets go, and descends again from the root for the next batch (from
//! the leaf's high key), so a caller may write while it iterates.

use ndpdb_bufmgr::SharedGuard;
use ndpdb_format::btree::Node;

use crate::error::KvError;
use crate::store::KvStore;
use crate::write::expect_level;

impl KvStore {
    /// The value of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        let mut out = Vec::new();
        Ok(self.get_into(key, &mut out)?.then_some(out))
    }

    /// Copies the value of `key` into `out` (replacing its contents);
    /// false if the key is absent.
    pub fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, KvError> {
        let leaf = self.leaf_for(key)?;
        let node = Node::parse(leaf.bytes(), leaf.pid())?;
        let (i, found) = node.lower_bound(key)?;
        if found {
            out.clear();
            out.extend_from_slice(node.value(i)?);
        }
        Ok(found)
    }

    /// The leaf whose range holds `key`, shared-latched.
    fn leaf_for(&self, key: &[u8]) -> Result<SharedGuard<'_>, KvError> {
        let mut g = self.pool.fix_shared(self.root)?;
        let mut want = None;
        loop {
            let node = Node::parse(g.bytes(), g.pid())?;
            expect_level(&node, want)?;
            if node.is_leaf() {
                return Ok(g);
            }
            let (child, _) = node.child_for(key)?;
            want = Some(node.level() - 1);
            g = self.pool.fix_shared(child)?;
        }
    }

    /// The entries from `start` on, in key order.
    pub fn scan(&self, start: &[u8]) -> Scan<'_> {
        Scan { store: self, next: Some(start.to_vec()), end: None, batch: Vec::new().into_iter() }
    }

    /// The entries with `start <= key < end`, in key order: as
    /// [`KvStore::scan`], but a leaf's entries are copied only up to `end`
    /// (a point lookup copies one or a few entries, not half a leaf).
    pub fn scan_to(&self, start: &[u8], end: &[u8]) -> Scan<'_> {
        Scan { store: self, next: Some(start.to_vec()), end: Some(end.to_vec()), batch: Vec::new().into_iter() }
    }

    /// Calls `f` on every key with `start <= key < end` (None: no end), in key order,
    /// without copying: each key is borrowed from its leaf while the leaf
    /// is shared-latched (so `f` must be short and must not call the store).
    /// `f` returns false to stop early.
    pub fn for_each_key(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        mut f: impl FnMut(&[u8]) -> bool,
    ) -> Result<(), KvError> {
        let mut high: Option<Vec<u8>> = None;
        loop {
            let from = high.as_deref().unwrap_or(start);
            let g = self.leaf_for(from)?;
            let node = Node::parse(g.bytes(), g.pid())?;
            let (i, _) = node.lower_bound(from)?;
            for j in i..node.count() {
                let key = node.key(j)?;
                if end.is_some_and(|e| key >= e) || !f(key) {
                    return Ok(());
                }
            }
            // Keys at or above the high key are right of this leaf.
            match node.high_key()? {
                Some(h) if end.is_none_or(|e| h < e) => high = Some(h.to_vec()),
                _ => return Ok(()),
            }
        }
    }

    /// The next batch of a scan: the entries of the leaf that holds `from`,
    /// at or after it, and that leaf's high key, where the next batch starts
    /// (None: it was the last leaf).
    fn batch(&self, from: &[u8], end: Option<&[u8]>) -> Result<(Entries, Option<Vec<u8>>), KvError> {
        let g = self.leaf_for(from)?;
        let node = Node::parse(g.bytes(), g.pid())?;
        let (i, _) = node.lower_bound(from)?;
        let mut entries = Vec::new();
        for j in i..node.count() {
            let key = node.key(j)?;
            if end.is_some_and(|e| key >= e) {
                return Ok((entries, None));
            }
            entries.push((key.to_vec(), node.value(j)?.to_vec()));
        }
        let high = node.high_key()?.map(<[u8]>::to_vec);
        // A high key at or past the end: the next leaf holds nothing wanted.
        Ok((entries, high.filter(|h| end.is_none_or(|e| h.as_slice() < e))))
    }
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A forward scan ([`KvStore::scan`]).
pub struct Scan<'s> {
    store: &'s KvStore,
    /// Where the next batch starts (inclusive).
    next: Option<Vec<u8>>,
    /// Where the scan ends (exclusive); None: at the last key.
    end: Option<Vec<u8>>,
    batch: std::vec::IntoIter<(Vec<u8>, Vec<u8>)>,
}

impl Iterator for Scan<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>), KvError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.batch.next() {
                return Some(Ok(entry));
            }
            let from = self.next.take()?;
            match self.store.batch(&from, self.end.as_deref()) {
                Ok((entries, high)) => {
                    // Keys at or above the high key are right of this leaf.
                    self.next = high;
                    self.batch = entries.into_iter();
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
