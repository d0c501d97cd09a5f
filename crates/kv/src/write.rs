//! Writes: put, update, delete. Latch coupling, optimistic first:
//!
//! ```text
//! optimistic   root ─S─► inner ─S─► … ─S─► parent of leaves ─X─► leaf
//!              (shared latches hand over hand; the leaf exclusive, the
//!              parent released once it is held). Enough room: change it,
//!              log it, done. No room: let go of everything, and
//! pessimistic  root ─X─► inner ─X─► … ─X─► leaf
//!              (exclusive latches hand over hand; the ancestors are let go
//!              as soon as a node is safe: an inner node with room for one
//!              more separator of the longest key, a leaf with room for the
//!              change). The nodes still held are exactly those a split may
//!              climb into (`split.rs`).
//! ```
//!
//! All latches are taken top-down (and left to right by scans), so latch
//! waits never form a cycle. Deletes remove the entry and leave the leaf,
//! even empty, in the tree: pages never leave it, which the device's
//! uncoupled B-link lookup relies on (`docs/format/btree.md`).

use ndpdb_format::btree::{self, CHILD_BYTES, Node, SLOT_BYTES};
use ndpdb_format::kv_log::KvOp;

use crate::error::KvError;
use crate::store::{KvStore, bump};
use crate::tracked::Tracked;

/// What a write does to its key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change<'v> {
    /// Insert or replace.
    Put(&'v [u8]),
    /// Replace if present.
    Update(&'v [u8]),
    Delete,
}

impl Change<'_> {
    fn op(&self) -> KvOp {
        match self {
            Change::Put(_) => KvOp::Put,
            Change::Update(_) => KvOp::Update,
            Change::Delete => KvOp::Delete,
        }
    }
}

/// A node on the pessimistic path and the slot position of the child taken
/// below it (where a separator for that child's split goes).
pub(crate) struct Step<'p> {
    pub(crate) page: Tracked<'p>,
    pub(crate) pos: usize,
}

pub(crate) enum LeafResult {
    Changed,
    NoChange,
    /// Nothing changed: the leaf must split.
    NoRoom,
}

impl KvStore {
    /// Inserts `key → value`, replacing any value the key had.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<(), KvError> {
        self.check_sizes(key, value.len())?;
        self.write(key, Change::Put(value)).map(|_| ())
    }

    /// Replaces the value of `key`; false (nothing changed) if it is absent.
    pub fn update(&self, key: &[u8], value: &[u8]) -> Result<bool, KvError> {
        self.check_sizes(key, value.len())?;
        self.write(key, Change::Update(value))
    }

    /// Removes `key`; false if it was absent.
    pub fn delete(&self, key: &[u8]) -> Result<bool, KvError> {
        self.check_sizes(key, 0)?;
        self.write(key, Change::Delete)
    }

    /// The longest key this store takes.
    pub fn max_key_bytes(&self) -> usize {
        btree::max_key_bytes(self.page_bytes)
    }

    /// The longest value a key of `key_len` bytes may have.
    pub fn max_value_bytes(&self, key_len: usize) -> usize {
        btree::max_value_bytes(self.page_bytes, key_len)
    }

    fn check_sizes(&self, key: &[u8], value_len: usize) -> Result<(), KvError> {
        let max = self.max_key_bytes();
        if key.len() > max {
            return Err(KvError::KeyTooLong { len: key.len(), max, page_bytes: self.page_bytes });
        }
        let max = self.max_value_bytes(key.len());
        if value_len > max {
            return Err(KvError::ValueTooLong { len: value_len, key_len: key.len(), max, page_bytes: self.page_bytes });
        }
        Ok(())
    }

    /// Inserts every pair (a bulk load): as `put` each, but the records are
    /// made durable together, with one log write when the batch ends (and
    /// whenever a split or a checkpoint forces it), instead of one per pair
    /// in a synchronous store. The pairs are acknowledged when it returns;
    /// a crash before that keeps a prefix of them. Fails at the first pair
    /// that cannot be written (its predecessors stay, not yet durable until
    /// the next commit or `sync`).
    pub fn put_many<'a>(&self, pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Result<u64, KvError> {
        let (mut n, mut end) = (0, 0);
        for (key, value) in pairs {
            self.check_sizes(key, value.len())?;
            let (_, e) = self.write_unsynced(key, Change::Put(value))?;
            self.after_write(e, false)?;
            end = end.max(e);
            n += 1;
        }
        if end > 0 {
            self.log.flush_to(end)?;
        }
        Ok(n)
    }

    fn write(&self, key: &[u8], change: Change<'_>) -> Result<bool, KvError> {
        let (changed, end) = self.write_unsynced(key, change)?;
        self.after_write(end, self.options.sync)?;
        Ok(changed)
    }

    /// One write, its record appended (durable only if it split under a
    /// mirror); returns
    /// whether it changed anything and its record's end.
    fn write_unsynced(&self, key: &[u8], change: Change<'_>) -> Result<(bool, u64), KvError> {
        let reservation = self.reserve_log()?;
        let (changed, end) = {
            let _gate = self.gate.read();
            match self.write_optimistic(key, change)? {
                Some(done) => done,
                None => {
                    bump(&self.counters.pessimistic_writes, 1);
                    self.write_pessimistic(key, change)?
                }
            }
        };
        drop(reservation);
        bump(&self.counters.writes, 1);
        Ok((changed, end))
    }

    /// The leaf under shared coupling, changed if it has room. None: it has
    /// not (or the root grew under us); nothing was changed.
    fn write_optimistic(&self, key: &[u8], change: Change<'_>) -> Result<Option<(bool, u64)>, KvError> {
        let redo = self.redo_start();
        let mut g = self.pool.fix_shared(self.root)?;
        let mut want = None;
        let leaf = loop {
            let node = Node::parse(g.bytes(), g.pid())?;
            expect_level(&node, want)?;
            if node.is_leaf() {
                drop(g);
                let x = self.pool.fix_exclusive(self.root)?;
                if !Node::parse(x.bytes(), self.root)?.is_leaf() {
                    return Ok(None);
                }
                break x;
            }
            let (child, _) = node.child_for(key)?;
            if node.level() == 1 {
                let x = self.pool.fix_exclusive(child)?;
                drop(g);
                break x;
            }
            want = Some(node.level() - 1);
            g = self.pool.fix_shared(child)?;
        };
        let mut leaf = Tracked::new(leaf, redo);
        match apply_leaf(&mut leaf, key, change)? {
            LeafResult::NoChange => Ok(Some((false, 0))),
            LeafResult::Changed => Ok(Some((true, self.commit(change.op(), &mut [leaf], false)?))),
            LeafResult::NoRoom => Ok(None),
        }
    }

    /// Exclusive coupling from the root, splitting as needed.
    fn write_pessimistic(&self, key: &[u8], change: Change<'_>) -> Result<(bool, u64), KvError> {
        let redo = self.redo_start();
        let safe_inner = SLOT_BYTES + self.max_key_bytes() + CHILD_BYTES;
        let mut path = vec![Step { page: Tracked::new(self.pool.fix_exclusive(self.root)?, redo), pos: 0 }];
        loop {
            let top = path.last_mut().expect("the root at least");
            let node = top.page.node()?;
            if node.is_leaf() {
                break;
            }
            let (child, pos) = node.child_for(key)?;
            top.pos = pos;
            let below = Tracked::new(self.pool.fix_exclusive(child)?, redo);
            let n = below.node()?;
            expect_level(&n, Some(node.level() - 1))?;
            let safe = if n.is_leaf() { leaf_fits(&n, key, change)? } else { n.free_total() >= safe_inner };
            if safe {
                path.clear();
            }
            path.push(Step { page: below, pos: 0 });
        }
        let leaf = &mut path.last_mut().expect("a leaf").page;
        let (result, mut new_pages) = match apply_leaf(leaf, key, change)? {
            LeafResult::NoRoom => (LeafResult::Changed, self.split_for(&mut path, key, change)?),
            other => (other, Vec::new()),
        };
        if matches!(result, LeafResult::NoChange) {
            return Ok((false, 0));
        }
        // A split's record is forced before the latches go once a device
        // mirrors the pool (`store.rs`).
        let split = !new_pages.is_empty() && self.mirrored.load(std::sync::atomic::Ordering::SeqCst);
        let mut pages: Vec<Tracked<'_>> = path.into_iter().map(|s| s.page).collect();
        pages.append(&mut new_pages);
        Ok((true, self.commit(change.op(), &mut pages, split)?))
    }

    pub(crate) fn redo_start(&self) -> u64 {
        self.redo_start.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A node reached by a link must be on the level the link promised (so a
/// descent ends, whatever a corrupt page links to).
pub(crate) fn expect_level(node: &Node<'_>, want: Option<u16>) -> Result<(), KvError> {
    match want {
        Some(level) if node.level() != level => Err(KvError::Corrupt(ndpdb_format::FormatError::InvalidField {
            structure: "B+-tree node",
            field: "level",
            reason: format!("page {}: level {}, its parent's link expects {level}", node.pid(), node.level()),
        })),
        _ => Ok(()),
    }
}

/// Applies `change` to the leaf if it fits.
pub(crate) fn apply_leaf(leaf: &mut Tracked<'_>, key: &[u8], change: Change<'_>) -> Result<LeafResult, KvError> {
    let pid = leaf.pid();
    let node = leaf.node()?;
    expect_level(&node, Some(0))?;
    let (i, found) = node.lower_bound(key)?;
    let fitted = match (change, found) {
        (Change::Put(v) | Change::Update(v), true) => btree::set_value(leaf, pid, i, v)?,
        (Change::Put(v), false) => btree::insert(leaf, pid, i, key, v)?,
        (Change::Update(_) | Change::Delete, false) => return Ok(LeafResult::NoChange),
        (Change::Delete, true) => {
            btree::remove(leaf, pid, i)?;
            true
        }
    };
    Ok(if fitted { LeafResult::Changed } else { LeafResult::NoRoom })
}

/// Whether `change` fits the leaf without a split (what `apply_leaf` finds).
fn leaf_fits(node: &Node<'_>, key: &[u8], change: Change<'_>) -> Result<bool, KvError> {
    let (i, found) = node.lower_bound(key)?;
    Ok(match (change, found) {
        (Change::Put(v) | Change::Update(v), true) => node.free_total() + node.slot(i)?.2 >= v.len(),
        (Change::Put(v), false) => {
            node.free_total() >= SLOT_BYTES + key.len() + v.len() && node.count() < usize::from(u16::MAX)
        }
        _ => true,
    })
}
