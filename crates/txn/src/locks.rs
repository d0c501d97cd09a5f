//! Tuple locks: how a write locks its tuple in the shared lock table
//! (ccSLT), waits for the transactions ahead of it without closing a cycle,
//! and how an ending transaction gives its locks back.
//!
//! ```text
//!  key = (table, VID, base version)          base version: the head's creator,
//!  try_acquire ─ Acquired / AlreadyHeld ─►   or the version before the head
//!      │                                     while its creator is in progress
//!      ├ Full ─► sleep until a slot frees, retry
//!      └ Queued at p ─► waits-for graph: ahead_of(p) closes a cycle?
//!                          yes ─► cancel ─► deadlock error (unless granted)
//!                          no  ─► sleep until head
//!  granted ─► head moved on meanwhile? give the lock back, lock the newer version
//! ```
//!
//! A host request waits asleep with no database lock held
//! (`lock_order.rs`). Device PEs lock for update-NDP with the writer's id;
//! their keys are not known to the host, so the end of such a transaction
//! sweeps the whole table for its id (`LockTable::release_all`).

use std::sync::Arc;

use ndpdb_format::ndp::Snapshot;
use ndpdb_format::schema::Value;
use ndpdb_locktable::{Attempt, CancelOutcome, Grant, LockKey, LockTable};
use ndpdb_storage::{Head, StoreError, Table, tuple_lock_key};

use crate::error::{Result, TxnError, lock_error};
use crate::lock_order;
use crate::txn::Txn;

/// A tuple's newest version once locked, against what a statement's
/// snapshot saw ([`Txn::lock_current`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Current {
    /// The newest version is the one the snapshot sees (or our own).
    Seen,
    /// A transaction the snapshot does not see committed a newer version:
    /// its values, or None when it deleted the tuple.
    Changed(Option<Vec<Value>>),
}

impl Txn<'_> {
    /// Takes the tuple's lock in the shared lock table, waiting (asleep)
    /// for the transactions ahead of it; returns the key if this call took
    /// it (None: we hold it already, or we wrote the newest version).
    ///
    /// The key is (table, VID, version) with the version a new one would be
    /// based on: the newest committed one, i.e. the head's creator, or the
    /// one before the head while its creator is still in progress (that
    /// creator holds this very key). Once granted, the base version is
    /// computed again: if it moved on meanwhile (the writer ahead committed,
    /// whether or not the head changed since), the lock is on a stale
    /// version, so it is given back and the newer one is locked; the
    /// caller's isolation check then decides.
    pub(crate) fn lock(&mut self, table: &Arc<Table>, vid: u64) -> Result<Option<LockKey>> {
        debug_assert!(self.is_open(), "transaction {} locks after it ended", self.id);
        lock_order::assert_none_held("waiting for a tuple lock");
        let lt = self.db.store().lock_table();
        loop {
            let head = table.head(vid).unwrap_or(Head::NONE);
            if head.create_ts == self.id && !head.rid.is_none() {
                return Ok(None);
            }
            let version = self.base_version(table, head)?;
            let key = tuple_lock_key(table.id, vid, version);
            let acquired = self.acquire(lt, key)? == Grant::Acquired;
            if acquired {
                self.held.push(key);
            }
            // Not `now == head`: the same head has a newer base once its
            // creator committed (it left the active set before giving the
            // key back), and a later writer locks that newer key.
            let now = table.head(vid).unwrap_or(Head::NONE);
            if self.base_version(table, now)? == version {
                return Ok(acquired.then_some(key));
            }
            if acquired {
                self.held.retain(|k| *k != key);
                lt.release(key, self.id).map_err(lock_error)?;
            }
        }
    }

    /// Locks tuple `vid` for a write a statement decided on at `snapshot`,
    /// waiting for the transactions ahead, and says whether its newest
    /// version is still the one the snapshot sees: read committed's
    /// re-check (PostgreSQL's EvalPlanQual), where a caller re-evaluates
    /// its WHERE and SET on the newest version and skips a deleted tuple.
    /// The lock stays held (it is the write's); a deleted tuple's is given
    /// back, as [`Txn::update`] does.
    pub fn lock_current(&mut self, table: &Arc<Table>, vid: u64, snapshot: &Snapshot) -> Result<Current> {
        if !self.is_open() {
            return Err(TxnError::Ended);
        }
        if vid >= table.vids() {
            return Err(TxnError::NotFound { table: table.name.clone(), vid });
        }
        let newly_locked = self.lock(table, vid)?;
        let head = table.head(vid).unwrap_or(Head::NONE);
        if !head.rid.is_none() && (head.create_ts == self.id || snapshot.visible(head.create_ts)) {
            return Ok(Current::Seen);
        }
        if head.rid.is_none() || head.tombstone {
            if let Some(key) = newly_locked {
                self.held.retain(|k| *k != key);
                let _ = self.db.store().lock_table().release(key, self.id);
            }
            return Ok(Current::Changed(None));
        }
        let data = match self.db.store().read_version(table, head.rid) {
            Ok((_, data)) => data,
            Err(e) => return self.fail(e.into()),
        };
        match table.layout.decode(&data) {
            Ok(values) => Ok(Current::Changed(Some(values))),
            Err(e) => self.fail(TxnError::Store(StoreError::Corrupt(format!("VID {vid} of {}: {e}", table.name)))),
        }
    }

    /// Requests `key`, sleeping while the queue ahead drains, unless
    /// waiting would close a cycle of waits (then the transaction fails
    /// with a deadlock error).
    fn acquire(&mut self, lt: &LockTable, key: LockKey) -> Result<Grant> {
        loop {
            match lt.try_acquire(key, self.id).map_err(lock_error)? {
                Attempt::Acquired => return Ok(Grant::Acquired),
                Attempt::AlreadyHeld => return Ok(Grant::AlreadyHeld),
                Attempt::Full => self.wait_for_slot(lt, key)?,
                Attempt::Queued { position } => return self.wait_queued(lt, key, position),
            }
        }
    }

    /// Waits as the request queued at `position`, if the waits-for graph
    /// takes the wait.
    fn wait_queued(&mut self, lt: &LockTable, key: LockKey, position: usize) -> Result<Grant> {
        let ahead = lt.ahead_of(key, self.id, position);
        if !self.db.manager().waits_for.wait(self.id, &ahead) {
            return match lt.cancel(key, self.id).map_err(lock_error)? {
                CancelOutcome::Granted => Ok(Grant::Acquired),
                _ => self.fail(TxnError::Deadlock),
            };
        }
        let waited = lt.wait_for_head(key, self.id, None);
        self.db.manager().waits_for.stop_waiting(self.id);
        waited.map_err(lock_error)
    }

    /// Waits for a free slot in `key`'s full bucket. A slot frees when its
    /// holder ends (its first waiter moves up), so the wait is on the
    /// holder in the waits-for graph: a holder that waits, directly or not,
    /// for this transaction would otherwise never end (an undetected
    /// deadlock once more writers queue than a bucket has slots).
    fn wait_for_slot(&mut self, lt: &LockTable, key: LockKey) -> Result<()> {
        let ahead: Vec<u64> = lt.holder(key).filter(|&h| h != self.id).into_iter().collect();
        if !self.db.manager().waits_for.wait(self.id, &ahead) {
            return self.fail(TxnError::Deadlock);
        }
        let waited = lt.wait_for_slot(key, self.id, None);
        self.db.manager().waits_for.stop_waiting(self.id);
        waited.map_err(lock_error)
    }

    /// The version a write of a tuple whose newest version is `head` is
    /// based on (see [`Txn::lock`]): 0 for a tuple with no committed version.
    fn base_version(&self, table: &Table, head: Head) -> Result<u64> {
        if head.rid.is_none() {
            return Ok(0);
        }
        let creator_active = head.create_ts != self.id && self.db.manager().active.contains(&head.create_ts);
        if !creator_active {
            return Ok(head.create_ts);
        }
        let store = self.db.store();
        let (h, _) = store.read_version(table, head.rid)?;
        if h.prev.is_none() {
            return Ok(0);
        }
        Ok(store.read_version(table, h.prev)?.0.create_ts)
    }

    /// Gives back every lock this transaction holds or waits for, once, as
    /// it ends.
    pub(crate) fn release_locks(&mut self) {
        debug_assert!(!self.is_open(), "transaction {} releases its locks while open", self.id);
        debug_assert!(!self.locks_released, "transaction {} releases its locks twice", self.id);
        self.locks_released = true;
        let lt = self.db.store().lock_table();
        for key in self.held.drain(..) {
            let _ = lt.release(key, self.id);
        }
        if std::mem::take(&mut self.device_locks) {
            // The device's locks are not known key by key (a PE may have
            // failed half-way): sweep every bucket for our id.
            let _ = lt.release_all(self.id);
        }
    }
}
