//! The database handle, the transaction manager and transactions.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use ndpdb_format::ndp::{Aggregate, Predicate, Snapshot, UpdateExpr};
use ndpdb_format::page::RecordId;
use ndpdb_format::record::VersionHeader;
use ndpdb_format::schema::{Column, Value};
use ndpdb_locktable::protocol::{self, TS_MASK, Tally};
use ndpdb_locktable::{Attempt, CancelOutcome, Grant, LockError, LockKey};
use ndpdb_storage::{
    AggregateResult, CommittedHeads, DEFAULT_POLL_LIMIT, Freshness, Head, LogOp, OpKind, RowsResult, ScanStats, Store,
    StoreError, Table, TableId, TxnMeta, tuple_lock_key,
};
use parking_lot::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }
}

/// Errors say what the caller must do: `Serialization` and `Deadlock` mean
/// retry the transaction; `NotFound` and `InvalidInput` are the caller's
/// mistake; `Store` wraps device and corruption errors.
#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    #[error("could not serialize access due to {0}; retry the transaction")]
    Serialization(&'static str),
    #[error("deadlock detected; retry the transaction")]
    Deadlock,
    #[error("tuple {vid} of {table} does not exist in this transaction's snapshot")]
    NotFound { table: String, vid: u64 },
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("the transaction has ended (it committed, aborted or failed); begin a new one")]
    Ended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

type Result<T> = std::result::Result<T, TxnError>;

/// Where a scan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// On the device's PEs.
    Ndp { pes: u32, freshness: Freshness },
    /// On the host after reading every page (the block stack).
    Host { workers: usize },
}

type Key = (TableId, u64);

#[derive(Debug, Default)]
struct Ssi {
    reads: HashSet<Key>,
    table_reads: HashSet<TableId>,
    writes: HashSet<Key>,
    tables_written: HashSet<TableId>,
    /// Readers that read what we overwrote (`reader -rw-> us`).
    in_from: HashSet<u64>,
    /// Writers that overwrote what we read (`us -rw-> writer`).
    out_to: HashSet<u64>,
    /// Commit sequence number, once committed.
    committed: Option<u64>,
}

#[derive(Default)]
struct Manager {
    next_id: u64,
    active: BTreeSet<u64>,
    /// Per active transaction, the smallest id it may not see: the oldest
    /// transaction active when it began (or itself).
    xmin: HashMap<u64, u64>,
    /// Host transactions queued for a tuple lock, and the transactions
    /// ahead of them in its bucket (the deadlock detector's graph). Device
    /// transactions never appear as waiters: a PE that cannot get a lock
    /// gives up after a bounded number of polls.
    waits_for: HashMap<u64, Vec<u64>>,
    /// Serializable transactions, active ones and committed ones that
    /// overlapped a still active one.
    ssi: HashMap<u64, Ssi>,
    /// Pinned snapshots, kept across restarts: id -> xmax.
    pinned: std::collections::BTreeMap<u64, u64>,
}

impl Manager {
    fn snapshot(&self, own: u64) -> Snapshot {
        Snapshot { xmax: self.next_id, active: self.active.iter().copied().filter(|&t| t != own).collect(), own }
    }

    /// Whether `other` overlapped `me`: it was active when `me` started or
    /// started while `me` ran (committed transactions are kept only while
    /// they overlap a running one).
    fn concurrent(&self, me: u64, other: u64) -> bool {
        other != me && self.ssi.get(&other).is_some_and(|s| s.committed.is_none_or(|c| c > me))
    }

    /// Records `reader -rw-> writer`.
    fn rw_conflict(&mut self, reader: u64, writer: u64) {
        if let Some(r) = self.ssi.get_mut(&reader) {
            r.out_to.insert(writer);
        }
        if let Some(w) = self.ssi.get_mut(&writer) {
            w.in_from.insert(reader);
        }
    }

    /// Whether `t` committed. Edges never name aborted transactions
    /// (`forget` removes them), so one that is no longer tracked committed
    /// long ago and was cleaned up.
    fn committed(&self, t: u64) -> bool {
        self.ssi.get(&t).is_none_or(|s| s.committed.is_some())
    }

    /// A pivot `in -rw-> t -rw-> out` whose `out` side has committed.
    fn dangerous_pivot(&self, t: u64) -> bool {
        self.ssi.get(&t).is_some_and(|s| !s.in_from.is_empty() && s.out_to.iter().any(|&o| self.committed(o)))
    }

    /// Whether committing `t` would complete a dangerous structure
    /// `T1 -rw-> T2 -rw-> T3` in which T3 committed first (Cahill's rule as
    /// PostgreSQL applies it): `t` is the pivot, or `t` is T1 of a pivot
    /// whose T3 has committed.
    fn commit_unsafe(&self, t: u64) -> bool {
        self.dangerous_pivot(t)
            || self.ssi.get(&t).is_some_and(|s| s.out_to.iter().any(|&p| p != t && self.dangerous_pivot(p)))
    }

    /// Forgets an aborted transaction's edges.
    fn forget(&mut self, t: u64) {
        self.ssi.remove(&t);
        for s in self.ssi.values_mut() {
            s.in_from.remove(&t);
            s.out_to.remove(&t);
        }
    }

    fn cleanup(&mut self) {
        let oldest = self.active.iter().next().copied().unwrap_or(u64::MAX);
        self.ssi.retain(|_, s| s.committed.is_none_or(|c| c > oldest));
    }
}

/// An open database: a store and its transaction manager.
pub struct Database {
    store: Store,
    mgr: Mutex<Manager>,
    /// Held (shared) by a commit from its log record until it leaves the
    /// active set and by a write while it changes a head (after it has its
    /// tuple lock), and (exclusive) by a checkpoint: while one runs, no head
    /// changes and no commit is half done.
    commit_gate: parking_lot::RwLock<()>,
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
        let mgr = Manager {
            next_id: meta.next_txn.max(1),
            pinned: meta.snapshots.into_iter().collect(),
            ..Manager::default()
        };
        Database { store, mgr: Mutex::new(mgr), commit_gate: parking_lot::RwLock::new(()) }
    }

    /// Writes a checkpoint, also while transactions are open (a fuzzy
    /// checkpoint): for every tuple an open transaction has written it
    /// records the newest committed head, so it holds committed state only.
    /// It waits for commits in flight and holds off new ones and the manager
    /// throughout: the checkpoint reflects exactly the log up to its
    /// position, and an open transaction's writes reach the log only when
    /// it commits, after that position.
    pub fn checkpoint(&self) -> Result<()> {
        let _gate = self.commit_gate.write();
        let m = self.mgr.lock();
        let meta = TxnMeta { next_txn: m.next_id, snapshots: m.pinned.iter().map(|(&i, &x)| (i, x)).collect() };
        let mut committed = CommittedHeads::new();
        if !m.active.is_empty() {
            for t in self.store.tables() {
                let heads = self.store.committed_heads(&t, &m.active)?;
                if !heads.is_empty() {
                    committed.insert(t.id, heads);
                }
            }
        }
        self.store.checkpoint(&meta, &committed)?;
        drop(m);
        Ok(())
    }

    /// Held by a write while it changes heads (see `commit_gate`). Never
    /// held while waiting for a tuple lock, nor taken twice by one thread.
    fn write_gate(&self) -> parking_lot::RwLockReadGuard<'_, ()> {
        self.commit_gate.read()
    }

    /// Checkpoints (after commits and GC) when the log since the last one
    /// fills more than half its ring, or when superseded pages, which only
    /// a checkpoint gives back, are at least a quarter of the checkpoint's
    /// reserve and as many as the free pages writes have left, or writes
    /// are down to less than the reserve (`Store::headroom`).
    fn maybe_checkpoint(&self) -> Result<()> {
        let (used, capacity) = self.store.wal_usage();
        let log_half_full = used * 2 >= capacity;
        let h = self.store.headroom();
        let pages_low =
            h.superseded > 0 && h.superseded * 4 >= h.reserve && (h.superseded >= h.writes || h.writes < h.reserve);
        if log_half_full || pages_low { self.checkpoint() } else { Ok(()) }
    }

    /// Pins the current snapshot under an id that later runs can read at
    /// (`begin_at`); GC keeps what it sees until it is dropped. No
    /// transaction may be open (a pinned snapshot has no in-progress set).
    pub fn pin_snapshot(&self) -> Result<u64> {
        let mut m = self.mgr.lock();
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
        self.mgr.lock().pinned.iter().map(|(&i, &x)| (i, x)).collect()
    }

    pub fn drop_snapshot(&self, id: u64) -> Result<()> {
        let mut m = self.mgr.lock();
        let xmax = *m.pinned.get(&id).ok_or_else(|| TxnError::InvalidInput(format!("no pinned snapshot {id}")))?;
        self.store.log_snapshot(id, xmax, true)?;
        m.pinned.remove(&id);
        Ok(())
    }

    /// A repeatable-read transaction that reads at pinned snapshot `id`.
    pub fn begin_at(&self, id: u64) -> Result<Txn<'_>> {
        let xmax = *self
            .mgr
            .lock()
            .pinned
            .get(&id)
            .ok_or_else(|| TxnError::InvalidInput(format!("no pinned snapshot {id}")))?;
        let mut t = self.begin(Isolation::RepeatableRead);
        t.snapshot = Some(Snapshot { xmax, active: vec![], own: t.id });
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
        let mut m = self.mgr.lock();
        let id = m.next_id;
        m.next_id += 1;
        let xmin = m.active.iter().next().copied().unwrap_or(id).min(id);
        m.active.insert(id);
        m.xmin.insert(id, xmin);
        if isolation == Isolation::Serializable {
            m.ssi.insert(id, Ssi::default());
        }
        Txn {
            db: self,
            id,
            isolation,
            snapshot: None,
            undo: Vec::new(),
            redo: Vec::new(),
            held: Vec::new(),
            device_locks: false,
            ended: false,
        }
    }

    /// Versions created by transactions below this id are visible to every
    /// open and future snapshot.
    pub fn gc_horizon(&self) -> u64 {
        let m = self.mgr.lock();
        m.xmin.values().chain(m.pinned.values()).copied().min().unwrap_or(m.next_id).min(m.next_id)
    }

    /// Removes versions no open snapshot can see, in every table.
    ///
    /// Each page GC patches takes a free page before it gives its old one
    /// up, and only a checkpoint makes given-up pages free. So on a device
    /// too full for the next patch, GC checkpoints and goes on, as long as
    /// the last attempt gave pages up; the pages it unmaps at the end (the
    /// old versions') are most of what it frees.
    pub fn gc(&self) -> Result<ndpdb_storage::GcStats> {
        let horizon = self.gc_horizon();
        let mut total = ndpdb_storage::GcStats::default();
        for t in self.store.tables() {
            loop {
                let given_up = self.store.page_reuse().superseded;
                match self.store.gc_into(&t, horizon, &mut total) {
                    Ok(()) => break,
                    Err(StoreError::DeviceFull { .. }) if self.store.page_reuse().superseded > given_up => {
                        self.checkpoint()?;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        self.compact(&mut total)?;
        self.maybe_checkpoint()?;
        Ok(total)
    }

    /// Compaction (`Store::compact_into`), only while no transaction is open:
    /// it holds commits (the gate, as a checkpoint does) and new
    /// transactions (the manager) off while it moves tuples. A device too
    /// full for the copies ends it early; the checkpoint after GC gives the
    /// pages back.
    fn compact(&self, total: &mut ndpdb_storage::GcStats) -> Result<()> {
        let _gate = self.commit_gate.write();
        let m = self.mgr.lock();
        if !m.active.is_empty() {
            return Ok(());
        }
        for t in self.store.tables() {
            match self.store.compact_into(&t, total) {
                Ok(()) => {}
                Err(StoreError::DeviceFull { .. }) => break,
                Err(e) => return Err(e.into()),
            }
        }
        drop(m);
        Ok(())
    }

    /// Transactions in progress (for tests and diagnostics).
    pub fn active(&self) -> Vec<u64> {
        self.mgr.lock().active.iter().copied().collect()
    }

    /// Whether transaction `id` is waiting for a tuple lock (for tests and
    /// diagnostics).
    pub fn is_waiting(&self, id: u64) -> bool {
        self.mgr.lock().waits_for.contains_key(&id)
    }

    /// Lock-table buckets whose lock is held (for tests and diagnostics;
    /// reads the whole table).
    pub fn locks_held(&self) -> usize {
        self.store.lock_table().buckets().iter().filter(|b| b.words()[0] & TS_MASK != 0).count()
    }
}

pub struct Txn<'db> {
    db: &'db Database,
    id: u64,
    isolation: Isolation,
    snapshot: Option<Snapshot>,
    /// (table, vid, head before our first write), in write order.
    undo: Vec<(Arc<Table>, u64, Head)>,
    /// Its writes in order, for the commit's log record.
    redo: Vec<LogOp>,
    /// Tuple locks this transaction took in the shared lock table.
    held: Vec<LockKey>,
    /// Whether device PEs took locks for it (update-NDP): then the end of
    /// the transaction sweeps the whole lock table for its id.
    device_locks: bool,
    ended: bool,
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.abort_inner();
        }
    }
}

impl Txn<'_> {
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// The snapshot the next statement reads: per statement under read
    /// committed, fixed at the first statement otherwise.
    pub fn statement_snapshot(&mut self) -> Result<Snapshot> {
        if self.ended {
            return Err(TxnError::Ended);
        }
        if self.isolation == Isolation::ReadCommitted {
            return Ok(self.db.mgr.lock().snapshot(self.id));
        }
        if self.snapshot.is_none() {
            self.snapshot = Some(self.db.mgr.lock().snapshot(self.id));
        }
        Ok(self.snapshot.clone().expect("set above"))
    }

    /// Fails the transaction with `e`, aborting it.
    fn fail<T>(&mut self, e: TxnError) -> Result<T> {
        let _ = self.abort_inner();
        Err(e)
    }

    pub fn insert(&mut self, table: &Arc<Table>, values: &[Value]) -> Result<u64> {
        let _ = self.statement_snapshot()?;
        let data = table.layout.encode(values).map_err(|e| TxnError::InvalidInput(e.to_string()))?;
        let vid = self.db.store.new_vid(table);
        self.lock(table, vid)?;
        let _writing = self.db.write_gate();
        self.undo.push((table.clone(), vid, Head::NONE));
        let header =
            VersionHeader { create_ts: self.id, prev: RecordId::NONE, tombstone: false, data_len: data.len() as u16 };
        match self.db.store.append_version(table, header, &data) {
            Ok(rid) => {
                self.db.store.set_head(table, vid, Head { rid, create_ts: self.id, tombstone: false });
                self.note_write(table, vid);
                self.note_insert_conflicts(table);
                self.redo.push(LogOp { kind: OpKind::Insert, table: table.id, vid, data });
                Ok(vid)
            }
            Err(e) => self.fail(e.into()),
        }
    }

    pub fn update(&mut self, table: &Arc<Table>, vid: u64, values: &[Value]) -> Result<()> {
        let data = table.layout.encode(values).map_err(|e| TxnError::InvalidInput(e.to_string()))?;
        self.write(table, vid, Some(data))
    }

    pub fn delete(&mut self, table: &Arc<Table>, vid: u64) -> Result<()> {
        self.write(table, vid, None)
    }

    fn write(&mut self, table: &Arc<Table>, vid: u64, data: Option<Vec<u8>>) -> Result<()> {
        let snapshot = self.statement_snapshot()?;
        if vid >= table.vids() {
            return Err(TxnError::NotFound { table: table.name.clone(), vid });
        }
        let newly_locked = self.lock(table, vid)?;
        let _writing = self.db.write_gate();
        let head = table.head(vid).expect("vid checked");
        let mine = head.create_ts == self.id;
        if !mine && !head.rid.is_none() && !snapshot.visible(head.create_ts) {
            // A transaction that committed after our snapshot wrote it; under
            // read committed we take the statement's view again.
            if self.isolation != Isolation::ReadCommitted {
                return self.fail(TxnError::Serialization("concurrent update"));
            }
        }
        if head.rid.is_none() || head.tombstone {
            // Nothing to write: do not keep a lock we took for nothing.
            if let Some(key) = newly_locked {
                self.held.retain(|k| *k != key);
                let _ = self.db.store.lock_table().release(key, self.id);
            }
            return Err(TxnError::NotFound { table: table.name.clone(), vid });
        }
        if self.isolation == Isolation::Serializable {
            let mut m = self.db.mgr.lock();
            let readers: Vec<u64> = m
                .ssi
                .iter()
                .filter(|(_, s)| s.reads.contains(&(table.id, vid)) || s.table_reads.contains(&table.id))
                .map(|(t, _)| *t)
                .collect();
            for r in readers {
                if m.concurrent(self.id, r) {
                    m.rw_conflict(r, self.id);
                }
            }
            drop(m);
        }
        if !mine || !self.undo.iter().any(|(t, v, _)| t.id == table.id && *v == vid) {
            self.undo.push((table.clone(), vid, head));
        }
        let header = VersionHeader {
            create_ts: self.id,
            prev: head.rid,
            tombstone: data.is_none(),
            data_len: data.as_ref().map_or(0, |d| d.len() as u16),
        };
        match self.db.store.append_version(table, header, data.as_deref().unwrap_or(&[])) {
            Ok(rid) => {
                self.db.store.set_head(table, vid, Head { rid, create_ts: self.id, tombstone: data.is_none() });
                self.note_write(table, vid);
                let kind = if data.is_some() { OpKind::Update } else { OpKind::Delete };
                self.redo.push(LogOp { kind, table: table.id, vid, data: data.unwrap_or_default() });
                Ok(())
            }
            Err(e) => self.fail(e.into()),
        }
    }

    /// A new tuple is a write "after" every concurrent serializable scan of
    /// its table (the scan's predicate might have matched it): record
    /// `scanner -rw-> us`, as PostgreSQL's predicate locks do (G2).
    fn note_insert_conflicts(&self, table: &Table) {
        if self.isolation != Isolation::Serializable {
            return;
        }
        let mut m = self.db.mgr.lock();
        let scanners: Vec<u64> =
            m.ssi.iter().filter(|(_, s)| s.table_reads.contains(&table.id)).map(|(t, _)| *t).collect();
        for r in scanners {
            if m.concurrent(self.id, r) {
                m.rw_conflict(r, self.id);
            }
        }
    }

    fn note_write(&self, table: &Table, vid: u64) {
        if self.isolation == Isolation::Serializable {
            let mut m = self.db.mgr.lock();
            if let Some(s) = m.ssi.get_mut(&self.id) {
                s.writes.insert((table.id, vid));
                s.tables_written.insert(table.id);
            }
        }
    }

    /// Takes the tuple's lock in the shared lock table, waiting (asleep)
    /// for the transactions ahead of it; returns the key if this call took
    /// it (None: we hold it already, or we wrote the newest version).
    ///
    /// The key is (table, VID, version) with the version a new one would be
    /// based on: the newest committed one, i.e. the head's creator, or the
    /// one before the head while its creator is still in progress (that
    /// creator holds this very key). Once granted, the head is looked at
    /// again: if it moved on meanwhile (the writer ahead committed), the
    /// lock is on a stale version, so it is given back and the newer one is
    /// locked; the caller's isolation check then decides.
    fn lock(&mut self, table: &Arc<Table>, vid: u64) -> Result<Option<LockKey>> {
        let lt = self.db.store.lock_table().clone();
        loop {
            let head = table.head(vid).unwrap_or(Head::NONE);
            if head.create_ts == self.id && !head.rid.is_none() {
                return Ok(None);
            }
            let version = self.base_version(table, head)?;
            let key = tuple_lock_key(table.id, vid, version);
            let granted = loop {
                match lt.try_acquire(key, self.id).map_err(lock_error)? {
                    Attempt::Acquired => break Grant::Acquired,
                    Attempt::AlreadyHeld => break Grant::AlreadyHeld,
                    Attempt::Full => lt.wait_for_slot(key, self.id, None).map_err(lock_error)?,
                    Attempt::Queued { position } => {
                        let words = lt.bucket_words(key);
                        let ahead: Vec<u64> = words[..position.min(words.len())]
                            .iter()
                            .map(|w| w & TS_MASK)
                            .filter(|&t| t != 0 && t != self.id)
                            .collect();
                        if self.would_deadlock(&ahead) {
                            match lt.cancel(key, self.id).map_err(lock_error)? {
                                CancelOutcome::Granted => break Grant::Acquired,
                                _ => return self.fail(TxnError::Deadlock),
                            }
                        }
                        let waited = lt.wait_for_head(key, self.id, None);
                        self.db.mgr.lock().waits_for.remove(&self.id);
                        break waited.map_err(lock_error)?;
                    }
                }
            };
            let acquired = granted == Grant::Acquired;
            if acquired {
                self.held.push(key);
            }
            let now = table.head(vid).unwrap_or(Head::NONE);
            if now == head || self.base_version(table, now)? == version {
                return Ok(acquired.then_some(key));
            }
            if acquired {
                self.held.retain(|k| *k != key);
                lt.release(key, self.id).map_err(lock_error)?;
            }
        }
    }

    /// The version a write of a tuple whose newest version is `head` is
    /// based on (see [`Txn::lock`]): 0 for a tuple with no committed version.
    fn base_version(&self, table: &Table, head: Head) -> Result<u64> {
        if head.rid.is_none() {
            return Ok(0);
        }
        let creator_active = head.create_ts != self.id && self.db.mgr.lock().active.contains(&head.create_ts);
        if !creator_active {
            return Ok(head.create_ts);
        }
        let (h, _) = self.db.store.read_version(table, head.rid)?;
        if h.prev.is_none() {
            return Ok(0);
        }
        Ok(self.db.store.read_version(table, h.prev)?.0.create_ts)
    }

    /// Records that we wait for `ahead`, unless that closes a cycle in the
    /// waits-for graph (then: true, and nothing is recorded).
    fn would_deadlock(&self, ahead: &[u64]) -> bool {
        let mut m = self.db.mgr.lock();
        let mut stack: Vec<u64> = ahead.to_vec();
        let mut seen = HashSet::new();
        while let Some(t) = stack.pop() {
            if t == self.id {
                return true;
            }
            if seen.insert(t)
                && let Some(next) = m.waits_for.get(&t)
            {
                stack.extend(next.iter().copied());
            }
        }
        m.waits_for.insert(self.id, ahead.to_vec());
        false
    }

    /// Gives back every lock this transaction holds or waits for.
    fn release_locks(&mut self) {
        let lt = self.db.store.lock_table().clone();
        for key in self.held.drain(..) {
            let _ = lt.release(key, self.id);
        }
        if std::mem::take(&mut self.device_locks) {
            // The device's locks are not known key by key (a PE may have
            // failed half-way): sweep every bucket for our id.
            let words = lt.host_words();
            let mut tally = Tally::default();
            for (i, b) in lt.buckets().iter().enumerate() {
                let w = b.words();
                if w[0] & TS_MASK == self.id {
                    protocol::release(&words, i, self.id, &mut tally);
                    lt.notify(i);
                } else if w[1..].iter().any(|&x| x & TS_MASK == self.id) {
                    protocol::cancel(&words, i, self.id, &mut tally);
                    lt.notify(i);
                }
            }
        }
    }

    /// `UPDATE table SET column = expr WHERE predicate` on the device's PEs
    /// (update-NDP, ccSLT): the PEs lock and write the new versions, the host
    /// installs them if no other writer got there first; returns the number
    /// of tuples updated. A tuple another transaction changed since the
    /// statement's snapshot fails the transaction with a serialization error
    /// at every isolation level (update-NDP does not re-evaluate rows the way
    /// PostgreSQL's read committed does). The value of `expr` is in the
    /// column's stored units (a decimal's value times 10^scale).
    pub fn ndp_update(
        &mut self,
        table: &Arc<Table>,
        column: u16,
        expr: UpdateExpr,
        predicate: Option<Predicate>,
        pes: u32,
    ) -> Result<u64> {
        self.ndp_update_stats(table, column, expr, predicate, pes).map(|(updated, _)| updated)
    }

    /// [`Txn::ndp_update`], also returning what the device calls did (the
    /// counting call and the update call together: counters, modelled and
    /// wall time).
    pub fn ndp_update_stats(
        &mut self,
        table: &Arc<Table>,
        column: u16,
        expr: UpdateExpr,
        predicate: Option<Predicate>,
        pes: u32,
    ) -> Result<(u64, ScanStats)> {
        let snapshot = self.statement_snapshot()?;
        self.note_scan(table)?;
        self.device_locks = true;
        let up = match self.db.store.ndp_update(table, &snapshot, column, expr, predicate, pes, DEFAULT_POLL_LIMIT) {
            Ok(u) => u,
            Err(e) => return self.fail(e.into()),
        };
        // First updater wins: a row whose locked version a later commit
        // replaced fails the statement, except under read committed, where
        // (as PostgreSQL does) the row is re-evaluated on its newest version.
        let writing = self.db.write_gate();
        let (old, stale) = if self.isolation == Isolation::ReadCommitted {
            self.db.store.install_update_current(table, &up, self.id)
        } else {
            match self.db.store.install_update(table, &up, self.id) {
                Ok(Ok(old)) => (old, vec![]),
                Ok(Err(_vid)) => {
                    drop(writing);
                    return self.fail(TxnError::Serialization("concurrent update"));
                }
                Err(e) => {
                    drop(writing);
                    return self.fail(e.into());
                }
            }
        };
        drop(writing);
        for &(vid, head) in &old {
            if head.create_ts != self.id {
                self.undo.push((table.clone(), vid, head));
            }
        }
        // The log needs the new tuples; the device wrote them, so read them back.
        for &(vid, _) in &old {
            let new = table.head(vid).expect("installed above").rid;
            match self.db.store.read_version(table, new) {
                Ok((_, data)) => self.redo.push(LogOp { kind: OpKind::Update, table: table.id, vid, data }),
                Err(e) => return self.fail(e.into()),
            }
        }
        let mut updated = old.len() as u64;
        for t in &stale {
            updated += u64::from(self.reevaluate(table, t.vid, column, expr, predicate)?);
        }
        if self.isolation == Isolation::Serializable {
            let mut m = self.db.mgr.lock();
            let readers: Vec<u64> = m
                .ssi
                .iter()
                .filter(|(_, s)| {
                    s.table_reads.contains(&table.id) || old.iter().any(|(v, _)| s.reads.contains(&(table.id, *v)))
                })
                .map(|(t, _)| *t)
                .collect();
            for r in readers {
                if m.concurrent(self.id, r) {
                    m.rw_conflict(r, self.id);
                }
            }
            if let Some(s) = m.ssi.get_mut(&self.id) {
                s.writes.extend(old.iter().map(|(v, _)| (table.id, *v)));
                s.tables_written.insert(table.id);
            }
        }
        Ok((updated, up.stats))
    }

    /// Read committed, for a row an update-NDP statement updated from a
    /// version that a concurrent commit has since replaced: PostgreSQL's
    /// EvalPlanQual. Locks the row's newest version, checks the predicate on
    /// it again and applies the expression to it on the host (the rules of
    /// [`UpdateExpr::new_value`], as on the device). A row deleted meanwhile,
    /// or one that no longer qualifies, is left alone. Returns whether the
    /// row was updated.
    fn reevaluate(
        &mut self,
        table: &Arc<Table>,
        vid: u64,
        column: u16,
        expr: UpdateExpr,
        predicate: Option<Predicate>,
    ) -> Result<bool> {
        self.lock(table, vid)?;
        let head = table.head(vid).unwrap_or(Head::NONE);
        if head.rid.is_none() || head.tombstone {
            return Ok(false);
        }
        let mut values = match self.db.store.read_version(table, head.rid) {
            Ok((_, data)) => match table.layout.decode(&data) {
                Ok(v) => v,
                Err(e) => return self.fail(TxnError::Store(StoreError::Corrupt(format!("VID {vid}: {e}")))),
            },
            Err(e) => return self.fail(e.into()),
        };
        let int = |v: &Value| match v {
            Value::Int(i) => Some(*i),
            _ => None,
        };
        if let Some(p) = predicate
            && !values.get(usize::from(p.column)).and_then(int).is_some_and(|v| p.op.eval(v, p.value))
        {
            return Ok(false);
        }
        let c = usize::from(column);
        match expr.new_value(int(&values[c]), table.columns[c].ty) {
            Ok(Some(v)) => values[c] = Value::Int(v),
            Ok(None) => {}
            Err(e) => {
                return self.fail(TxnError::InvalidInput(format!("VID {vid}: column {}: {e}", table.columns[c].name)));
            }
        }
        self.update(table, vid, &values)?;
        Ok(true)
    }

    /// Reads one tuple as the statement's snapshot sees it.
    pub fn get(&mut self, table: &Arc<Table>, vid: u64) -> Result<Option<Vec<Value>>> {
        let snapshot = self.statement_snapshot()?;
        let Some(head) = table.head(vid) else { return Ok(None) };
        if self.isolation == Isolation::Serializable {
            let mut m = self.db.mgr.lock();
            if let Some(s) = m.ssi.get_mut(&self.id) {
                s.reads.insert((table.id, vid));
            }
            drop(m);
        }
        let mut rid = head.rid;
        let mut steps = 0usize;
        while !rid.is_none() {
            steps += 1;
            if steps > ndpdb_storage::CHAIN_MAX {
                return Err(TxnError::Store(StoreError::Corrupt(format!("VID {vid}: version chain does not end"))));
            }
            let (h, data) = self.db.store.read_version(table, rid)?;
            if !snapshot.visible(h.create_ts) && self.isolation == Isolation::Serializable {
                // A concurrent transaction wrote a version we cannot see: we
                // read "before" it.
                let mut m = self.db.mgr.lock();
                if m.concurrent(self.id, h.create_ts) {
                    m.rw_conflict(self.id, h.create_ts);
                }
            }
            if snapshot.visible(h.create_ts) {
                if h.tombstone {
                    return Ok(None);
                }
                return Ok(Some(self.db.store.decode_values(table, &data)?));
            }
            rid = h.prev;
        }
        Ok(None)
    }

    /// Serializable scans read the whole table: mark it and note conflicts
    /// with concurrent writers of it.
    fn note_scan(&mut self, table: &Table) -> Result<()> {
        if self.isolation != Isolation::Serializable {
            return Ok(());
        }
        let mut m = self.db.mgr.lock();
        if let Some(s) = m.ssi.get_mut(&self.id) {
            s.table_reads.insert(table.id);
        }
        let writers: Vec<u64> =
            m.ssi.iter().filter(|(_, s)| s.tables_written.contains(&table.id)).map(|(t, _)| *t).collect();
        for w in writers {
            if m.concurrent(self.id, w) {
                m.rw_conflict(self.id, w);
            }
        }
        Ok(())
    }

    pub fn aggregate(
        &mut self,
        table: &Arc<Table>,
        func: Aggregate,
        column: u16,
        predicate: Option<Predicate>,
        mode: ReadMode,
    ) -> Result<AggregateResult> {
        let snapshot = self.statement_snapshot()?;
        self.note_scan(table)?;
        Ok(match mode {
            ReadMode::Ndp { pes, freshness } => {
                self.db.store.ndp_aggregate(table, &snapshot, func, column, predicate, pes, freshness)?
            }
            ReadMode::Host { workers } => {
                self.db.store.host_aggregate(table, &snapshot, func, column, predicate, workers)?
            }
        })
    }

    pub fn rows(
        &mut self,
        table: &Arc<Table>,
        projection: &[u16],
        predicate: Option<Predicate>,
        mode: ReadMode,
    ) -> Result<RowsResult> {
        let snapshot = self.statement_snapshot()?;
        self.note_scan(table)?;
        Ok(match mode {
            ReadMode::Ndp { pes, freshness } => {
                self.db.store.ndp_rows(table, &snapshot, projection, predicate, pes, freshness)?
            }
            ReadMode::Host { workers } => self.db.store.host_rows(table, &snapshot, projection, predicate, workers)?,
        })
    }

    pub fn commit(mut self) -> Result<()> {
        if self.ended {
            return Err(TxnError::Ended);
        }
        if self.isolation == Isolation::Serializable && self.db.mgr.lock().commit_unsafe(self.id) {
            return self.fail(TxnError::Serialization("read/write dependencies among transactions"));
        }
        // Durable before visible: the log record first. From the record to
        // leaving the active set, a checkpoint must not run (it would take
        // us for open, yet begin its log after our record).
        let gate = self.db.commit_gate.read();
        if !self.redo.is_empty() {
            let redo = std::mem::take(&mut self.redo);
            if let Err(e) = self.db.store.log_commit(self.id, &redo) {
                drop(gate);
                return self.fail(e.into());
            }
        }
        let mut m = self.db.mgr.lock();
        let seq = m.next_id;
        m.next_id += 1;
        m.active.remove(&self.id);
        m.xmin.remove(&self.id);
        // Whoever waited for us waits no longer for us (the graph keeps
        // the others ahead of it).
        for ahead in m.waits_for.values_mut() {
            ahead.retain(|&t| t != self.id);
        }
        if let Some(s) = m.ssi.get_mut(&self.id) {
            s.committed = Some(seq);
        }
        m.cleanup();
        self.ended = true;
        drop(m);
        drop(gate);
        self.release_locks();
        // The commit stands whatever the checkpoint does; if it cannot run,
        // a later commit reports the full log (StoreError::LogFull).
        let _ = self.db.maybe_checkpoint();
        Ok(())
    }

    pub fn abort(mut self) -> Result<()> {
        self.abort_inner()
    }

    fn abort_inner(&mut self) -> Result<()> {
        if self.ended {
            return Ok(());
        }
        self.ended = true;
        // Unlink our versions before anyone can lock the tuples again.
        for (table, vid, old) in self.undo.drain(..).rev() {
            self.db.store.set_head(&table, vid, old);
        }
        let mut m = self.db.mgr.lock();
        m.active.remove(&self.id);
        m.xmin.remove(&self.id);
        m.waits_for.remove(&self.id);
        for ahead in m.waits_for.values_mut() {
            ahead.retain(|&t| t != self.id);
        }
        m.forget(self.id);
        m.cleanup();
        drop(m);
        self.release_locks();
        Ok(())
    }
}

/// A lock-table failure: the caller misused it (a bug) or was cancelled.
fn lock_error(e: LockError) -> TxnError {
    TxnError::InvalidInput(format!("tuple lock: {e}"))
}
