//! The database handle, the transaction manager and transactions.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use ndpdb_format::ndp::{Aggregate, Predicate, Snapshot};
use ndpdb_format::page::RecordId;
use ndpdb_format::record::VersionHeader;
use ndpdb_format::schema::{Column, Value};
use ndpdb_storage::{AggregateResult, Freshness, Head, RowsResult, Store, StoreError, Table, TableId, TxnMeta};
use parking_lot::{Condvar, Mutex};

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
    locks: HashMap<Key, u64>,
    waits_for: HashMap<u64, u64>,
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
    released: Condvar,
}

impl Database {
    /// A database on a new store.
    pub fn new(store: Store) -> Database {
        Database::open(store, TxnMeta { next_txn: 1, snapshots: vec![] })
    }

    /// A database on a reopened store (`Store::open`).
    pub fn open(store: Store, meta: TxnMeta) -> Database {
        let mgr = Manager {
            next_id: meta.next_txn.max(1),
            pinned: meta.snapshots.into_iter().collect(),
            ..Manager::default()
        };
        Database { store, mgr: Mutex::new(mgr), released: Condvar::new() }
    }

    /// Writes a checkpoint; no transaction may be open.
    pub fn checkpoint(&self) -> Result<()> {
        let m = self.mgr.lock();
        if !m.active.is_empty() {
            return Err(TxnError::InvalidInput(format!(
                "{} transactions are still open; end them before a checkpoint",
                m.active.len()
            )));
        }
        let meta = TxnMeta { next_txn: m.next_id, snapshots: m.pinned.iter().map(|(&i, &x)| (i, x)).collect() };
        drop(m);
        Ok(self.store.checkpoint(&meta)?)
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
        m.pinned.insert(id, xmax);
        Ok(id)
    }

    pub fn pinned_snapshots(&self) -> Vec<(u64, u64)> {
        self.mgr.lock().pinned.iter().map(|(&i, &x)| (i, x)).collect()
    }

    pub fn drop_snapshot(&self, id: u64) -> Result<()> {
        self.mgr
            .lock()
            .pinned
            .remove(&id)
            .map(|_| ())
            .ok_or_else(|| TxnError::InvalidInput(format!("no pinned snapshot {id}")))
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
        Txn { db: self, id, isolation, snapshot: None, undo: Vec::new(), ended: false }
    }

    /// Versions created by transactions below this id are visible to every
    /// open and future snapshot.
    pub fn gc_horizon(&self) -> u64 {
        let m = self.mgr.lock();
        m.xmin.values().chain(m.pinned.values()).copied().min().unwrap_or(m.next_id).min(m.next_id)
    }

    /// Removes versions no open snapshot can see, in every table.
    pub fn gc(&self) -> Result<ndpdb_storage::GcStats> {
        let horizon = self.gc_horizon();
        let mut total = ndpdb_storage::GcStats::default();
        for t in self.store.tables() {
            let s = self.store.gc(&t, horizon)?;
            total.chains_cut += s.chains_cut;
            total.tuples_removed += s.tuples_removed;
            total.pages_rewritten += s.pages_rewritten;
            total.pages_unmapped += s.pages_unmapped;
            total.versions_removed += s.versions_removed;
        }
        Ok(total)
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

    /// Locks held (for tests and diagnostics).
    pub fn locks_held(&self) -> usize {
        self.mgr.lock().locks.len()
    }
}

pub struct Txn<'db> {
    db: &'db Database,
    id: u64,
    isolation: Isolation,
    snapshot: Option<Snapshot>,
    /// (table, vid, head before our first write), in write order.
    undo: Vec<(Arc<Table>, u64, Head)>,
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
        self.lock(table.id, vid)?;
        self.undo.push((table.clone(), vid, Head::NONE));
        let header =
            VersionHeader { create_ts: self.id, prev: RecordId::NONE, tombstone: false, data_len: data.len() as u16 };
        match self.db.store.append_version(table, header, &data) {
            Ok(rid) => {
                self.db.store.set_head(table, vid, Head { rid, create_ts: self.id, tombstone: false });
                self.note_write(table, vid);
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
        let newly_locked = self.lock(table.id, vid)?;
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
            if newly_locked {
                self.db.mgr.lock().locks.remove(&(table.id, vid));
                self.db.released.notify_all();
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
                Ok(())
            }
            Err(e) => self.fail(e.into()),
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

    /// Takes the tuple lock, waiting for its holder to end; whether this
    /// call took it (false: we held it already).
    fn lock(&mut self, table: TableId, vid: u64) -> Result<bool> {
        let mut m = self.db.mgr.lock();
        loop {
            match m.locks.get(&(table, vid)).copied() {
                None => {
                    m.locks.insert((table, vid), self.id);
                    m.waits_for.remove(&self.id);
                    return Ok(true);
                }
                Some(h) if h == self.id => return Ok(false),
                Some(holder) => {
                    // Would waiting close a cycle?
                    let mut t = holder;
                    let mut hops = 0;
                    while let Some(&next) = m.waits_for.get(&t) {
                        if next == self.id || hops > 10_000 {
                            m.waits_for.remove(&self.id);
                            drop(m);
                            return self.fail(TxnError::Deadlock);
                        }
                        t = next;
                        hops += 1;
                    }
                    m.waits_for.insert(self.id, holder);
                    self.db.released.wait(&mut m);
                }
            }
        }
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
        let mut m = self.db.mgr.lock();
        let seq = m.next_id;
        m.next_id += 1;
        m.active.remove(&self.id);
        m.xmin.remove(&self.id);
        m.locks.retain(|_, h| *h != self.id);
        // Whoever waited for us waits no longer (until it finds another holder).
        m.waits_for.retain(|_, h| *h != self.id);
        if let Some(s) = m.ssi.get_mut(&self.id) {
            s.committed = Some(seq);
        }
        m.cleanup();
        self.ended = true;
        drop(m);
        self.db.released.notify_all();
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
        m.locks.retain(|_, h| *h != self.id);
        m.waits_for.remove(&self.id);
        m.waits_for.retain(|_, h| *h != self.id);
        m.forget(self.id);
        m.cleanup();
        drop(m);
        self.db.released.notify_all();
        Ok(())
    }
}
