//! The database handle: a store, its transaction manager and the commit
//! gate, and what is done on the database as a whole (begin, tables,
//! pinned snapshots, diagnostics). Maintenance (checkpoints, GC) is in
//! `maintenance.rs`; what transactions do, in `txn.rs`.
//!
//! Its two locks are taken in one order, asserted in debug builds
//! (`lock_order.rs`): the commit gate, then the manager mutex, then
//! whatever the store takes inside its calls.

use std::sync::Arc;

use ndpdb_format::ndp::Snapshot;
use ndpdb_format::schema::Column;
use ndpdb_storage::{Store, Table, TxnMeta};
use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::{Result, TxnError};
use crate::lock_order::{Level, Ordered};
use crate::manager::Manager;
use crate::txn::{Isolation, Txn};

/// An open database: a store and its transaction manager.
pub struct Database {
    store: Store,
    mgr: Mutex<Manager>,
    /// Held (shared) by a commit from its log record until it leaves the
    /// active set and by a write while it changes a head (after it has its
    /// tuple lock), and (exclusive) by a checkpoint and by compaction: while
    /// one runs, no head changes and no commit is half done.
    commit_gate: RwLock<()>,
}

impl Database {
    /// A database on a new store.
    pub fn new(store: Store) -> Database {
        Database::open(store, TxnMeta { next_txn: 1, snapshots: vec![] })
    }

    /// A new database that survives a crash from its first commit on: it
    /// writes the first checkpoint (recovery starts from a checkpoint).
    pub fn create(store: Store) -> Result<Database> {
        let db = Database::new(store);
        db.checkpoint()?;
        Ok(db)
    }

    /// A database on a reopened store (`Store::open`).
    pub fn open(store: Store, meta: TxnMeta) -> Database {
        Database { store, mgr: Mutex::new(Manager::new(meta)), commit_gate: RwLock::new(()) }
    }

    /// The manager, after the gate if the caller holds it.
    pub(crate) fn manager(&self) -> Ordered<MutexGuard<'_, Manager>> {
        Ordered::take(Level::Manager, || self.mgr.lock())
    }

    /// The commit gate, shared: held by a write while it changes heads and
    /// by a commit from its log record until it leaves the active set.
    /// Never held while waiting for a tuple lock, nor taken twice by one
    /// thread.
    pub(crate) fn gate_shared(&self) -> Ordered<RwLockReadGuard<'_, ()>> {
        Ordered::take(Level::CommitGate, || self.commit_gate.read())
    }

    /// The commit gate, exclusive: no head changes and no commit is half
    /// done while it is held (checkpoint, compaction).
    pub(crate) fn gate_exclusive(&self) -> Ordered<RwLockWriteGuard<'_, ()>> {
        Ordered::take(Level::CommitGate, || self.commit_gate.write())
    }

    /// Pins the current snapshot under an id that later runs can read at
    /// (`begin_at`); GC keeps what it sees until it is dropped. No
    /// transaction may be open (a pinned snapshot has no in-progress set).
    pub fn pin_snapshot(&self) -> Result<u64> {
        let mut m = self.manager();
        if !m.active.is_empty() {
            return Err(TxnError::InvalidInput("pin a snapshot while no transaction is open".into()));
        }
        let id = m.pinned.keys().next_back().map_or(1, |k| k + 1);
        let xmax = m.next_id;
        self.store.log_snapshot(id, xmax, false)?;
        m.pinned.insert(id, xmax);
        Ok(id)
    }

    pub fn pinned_snapshots(&self) -> Vec<(u64, u64)> {
        self.manager().pinned_snapshots()
    }

    pub fn drop_snapshot(&self, id: u64) -> Result<()> {
        let mut m = self.manager();
        let xmax = *m.pinned.get(&id).ok_or_else(|| TxnError::InvalidInput(format!("no pinned snapshot {id}")))?;
        self.store.log_snapshot(id, xmax, true)?;
        m.pinned.remove(&id);
        Ok(())
    }

    /// A repeatable-read transaction that reads at pinned snapshot `id`.
    pub fn begin_at(&self, id: u64) -> Result<Txn<'_>> {
        let xmax = *self
            .manager()
            .pinned
            .get(&id)
            .ok_or_else(|| TxnError::InvalidInput(format!("no pinned snapshot {id}")))?;
        let mut t = self.begin(Isolation::RepeatableRead);
        let own = t.id();
        t.set_snapshot(Snapshot { xmax, active: vec![], own });
        Ok(t)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn create_table(&self, name: &str, columns: Vec<Column>) -> Result<Arc<Table>> {
        Ok(self.store.create_table(name, columns)?)
    }

    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.store.table(name).ok_or_else(|| TxnError::InvalidInput(format!("no table {name}")))
    }

    pub fn begin(&self, isolation: Isolation) -> Txn<'_> {
        let id = self.manager().begin(isolation);
        Txn::new(self, id, isolation)
    }

    /// Transactions in progress (for tests and diagnostics).
    pub fn active(&self) -> Vec<u64> {
        self.manager().active.iter().copied().collect()
    }

    /// Whether transaction `id` is waiting for a tuple lock (for tests and
    /// diagnostics).
    pub fn is_waiting(&self, id: u64) -> bool {
        self.manager().waits_for.is_waiting(id)
    }

    /// Lock-table buckets whose lock is held (for tests and diagnostics;
    /// reads the whole table).
    pub fn locks_held(&self) -> usize {
        self.store.lock_table().held_buckets()
    }
}
