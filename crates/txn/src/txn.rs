//! A transaction: its snapshot, its reads (one tuple, or a scan on the
//! device or the host), its writes (insert, update, delete), commit and
//! abort. Tuple locking is in `locks.rs`, update-NDP in `update_ndp.rs`,
//! the SSI bookkeeping in `ssi.rs`.
//!
//! ```text
//!  write:  lock (table, VID, base version) ─► gate (shared) ─► isolation check
//!          ─► SSI conflicts ─► undo (old head) ─► append version ─► new head ─► redo
//!  commit: SSI check ─► gate (shared) ─► log redo ─► leave the active set
//!          ─► release tuple locks ─► maybe checkpoint
//!  abort:  restore undo heads (newest first) ─► leave the active set ─► release locks
//! ```
//!
//! A transaction is open until it commits or aborts, once; after that no
//! statement runs (`TxnError::Ended`) and it writes nothing, and its tuple
//! locks are released exactly once, when it ends. A failed statement
//! aborts the transaction (`fail`), as does dropping it open.

use std::sync::Arc;

use ndpdb_format::ndp::{Aggregate, Predicate, Snapshot};
use ndpdb_format::page::RecordId;
use ndpdb_format::record::VersionHeader;
use ndpdb_format::schema::Value;
use ndpdb_locktable::LockKey;
use ndpdb_storage::{
    AggregateResult, Freshness, Head, HostScan, LogOp, NdpScan, OpKind, RowsResult, ScanStats, StoreError, Table,
    Tuples,
};

use crate::db::Database;
use crate::error::{Result, TxnError};
use crate::ssi::SsiGraph;

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

/// Where a scan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// On the device's PEs.
    Ndp { pes: u32, freshness: Freshness },
    /// On the host after reading every page (the block stack).
    Host { workers: usize },
}

/// Where a transaction is in its life: open, then ended once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Committed,
    Aborted,
}

pub struct Txn<'db> {
    pub(crate) db: &'db Database,
    pub(crate) id: u64,
    pub(crate) isolation: Isolation,
    snapshot: Option<Snapshot>,
    /// (table, vid, head before our first write), in write order.
    pub(crate) undo: Vec<(Arc<Table>, u64, Head)>,
    /// Its writes in order, for the commit's log record.
    redo: Vec<LogOp>,
    /// Tuple locks this transaction took in the shared lock table.
    pub(crate) held: Vec<LockKey>,
    /// Whether device PEs took locks for it (update-NDP): then the end of
    /// the transaction sweeps the whole lock table for its id.
    pub(crate) device_locks: bool,
    state: State,
    /// Whether its tuple locks were released (once, when it ended).
    pub(crate) locks_released: bool,
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if self.is_open() {
            let _ = self.abort_inner();
        }
    }
}

impl<'db> Txn<'db> {
    /// Transaction `id`, just begun in `db`'s manager.
    pub(crate) fn new(db: &'db Database, id: u64, isolation: Isolation) -> Txn<'db> {
        Txn {
            db,
            id,
            isolation,
            snapshot: None,
            undo: Vec::new(),
            redo: Vec::new(),
            held: Vec::new(),
            device_locks: false,
            state: State::Open,
            locks_released: false,
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

    pub(crate) fn is_open(&self) -> bool {
        self.state == State::Open
    }

    /// Ends the transaction: an open one commits or aborts, once.
    fn end(&mut self, to: State) {
        debug_assert_eq!(self.state, State::Open, "transaction {} ends twice (now {to:?})", self.id);
        self.state = to;
    }

    /// Fixes the snapshot every statement reads (a pinned snapshot).
    pub(crate) fn set_snapshot(&mut self, snapshot: Snapshot) {
        debug_assert!(self.snapshot.is_none(), "transaction {} has a snapshot already", self.id);
        self.snapshot = Some(snapshot);
    }

    /// The snapshot the next statement reads: per statement under read
    /// committed, fixed at the first statement otherwise.
    pub fn statement_snapshot(&mut self) -> Result<Snapshot> {
        if !self.is_open() {
            return Err(TxnError::Ended);
        }
        if self.isolation == Isolation::ReadCommitted {
            return Ok(self.db.manager().snapshot(self.id));
        }
        if self.snapshot.is_none() {
            self.snapshot = Some(self.db.manager().snapshot(self.id));
        }
        Ok(self.snapshot.clone().expect("set above"))
    }

    /// Fails the transaction with `e`, aborting it.
    pub(crate) fn fail<T>(&mut self, e: TxnError) -> Result<T> {
        let _ = self.abort_inner();
        Err(e)
    }

    /// Adds a write to the commit's log record.
    pub(crate) fn log_write(&mut self, op: LogOp) {
        debug_assert!(self.is_open(), "transaction {} writes after it ended", self.id);
        self.redo.push(op);
    }

    /// Runs `f` on the SSI graph with this transaction's id, if it is
    /// serializable (nothing else is tracked).
    pub(crate) fn note_ssi(&self, f: impl FnOnce(&mut SsiGraph, u64)) {
        if self.isolation == Isolation::Serializable {
            f(&mut self.db.manager().ssi, self.id);
        }
    }

    pub fn insert(&mut self, table: &Arc<Table>, values: &[Value]) -> Result<u64> {
        let _ = self.statement_snapshot()?;
        let data = table.layout.encode(values).map_err(|e| TxnError::InvalidInput(e.to_string()))?;
        let store = self.db.store();
        let vid = store.new_vid(table);
        self.lock(table, vid)?;
        let _writing = self.db.gate_shared();
        self.undo.push((table.clone(), vid, Head::NONE));
        let header =
            VersionHeader { create_ts: self.id, prev: RecordId::NONE, tombstone: false, data_len: data.len() as u16 };
        match store.append_version(table, header, &data) {
            Ok(rid) => {
                store.set_head(table, vid, Head { rid, create_ts: self.id, tombstone: false });
                self.note_ssi(|g, me| g.wrote(me, (table.id, vid)));
                self.note_ssi(|g, me| g.insert(me, table.id));
                self.log_write(LogOp { kind: OpKind::Insert, table: table.id, vid, data });
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

    /// A new version of `vid` with `data`, or a tombstone (`None`).
    fn write(&mut self, table: &Arc<Table>, vid: u64, data: Option<Vec<u8>>) -> Result<()> {
        let snapshot = self.statement_snapshot()?;
        if vid >= table.vids() {
            return Err(TxnError::NotFound { table: table.name.clone(), vid });
        }
        let newly_locked = self.lock(table, vid)?;
        let store = self.db.store();
        let _writing = self.db.gate_shared();
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
                let _ = store.lock_table().release(key, self.id);
            }
            return Err(TxnError::NotFound { table: table.name.clone(), vid });
        }
        self.note_ssi(|g, me| g.overwrite(me, (table.id, vid)));
        if !mine || !self.undo.iter().any(|(t, v, _)| t.id == table.id && *v == vid) {
            self.undo.push((table.clone(), vid, head));
        }
        let header = VersionHeader {
            create_ts: self.id,
            prev: head.rid,
            tombstone: data.is_none(),
            data_len: data.as_ref().map_or(0, |d| d.len() as u16),
        };
        match store.append_version(table, header, data.as_deref().unwrap_or(&[])) {
            Ok(rid) => {
                store.set_head(table, vid, Head { rid, create_ts: self.id, tombstone: data.is_none() });
                self.note_ssi(|g, me| g.wrote(me, (table.id, vid)));
                let kind = if data.is_some() { OpKind::Update } else { OpKind::Delete };
                self.log_write(LogOp { kind, table: table.id, vid, data: data.unwrap_or_default() });
                Ok(())
            }
            Err(e) => self.fail(e.into()),
        }
    }

    /// Reads one tuple as the statement's snapshot sees it.
    pub fn get(&mut self, table: &Arc<Table>, vid: u64) -> Result<Option<Vec<Value>>> {
        let snapshot = self.statement_snapshot()?;
        let Some(head) = table.head(vid) else { return Ok(None) };
        self.note_ssi(|g, me| g.read_tuple(me, (table.id, vid)));
        let mut rid = head.rid;
        let mut steps = 0usize;
        while !rid.is_none() {
            steps += 1;
            if steps > ndpdb_storage::CHAIN_MAX {
                return Err(TxnError::Store(StoreError::Corrupt(format!("VID {vid}: version chain does not end"))));
            }
            let (h, data) = self.db.store().read_version(table, rid)?;
            if snapshot.visible(h.create_ts) {
                if h.tombstone {
                    return Ok(None);
                }
                return Ok(Some(self.db.store().decode_values(table, &data)?));
            }
            // A concurrent transaction wrote a version we cannot see: we
            // read "before" it.
            self.note_ssi(|g, me| g.read_past(me, h.create_ts));
            rid = h.prev;
        }
        Ok(None)
    }

    /// A serializable read of tuple `vid` found through a unique key: its
    /// SIREAD mark, as [`Txn::get`] makes (the caller saw the tuple's
    /// newest version, so no concurrent writer of it to note). Only valid
    /// where no other tuple can take the key while this one is live.
    pub fn note_tuple_read(&self, table: &Table, vid: u64) {
        self.note_ssi(|g, me| g.read_tuple(me, (table.id, vid)));
    }

    /// Serializable scans read the whole table: mark it and note conflicts
    /// with concurrent writers of it.
    pub(crate) fn note_scan(&self, table: &Table) {
        self.note_ssi(|g, me| g.scan(me, table.id));
    }

    pub fn aggregate(
        &mut self,
        table: &Arc<Table>,
        func: Aggregate,
        column: u16,
        predicate: Option<&Predicate>,
        mode: ReadMode,
    ) -> Result<AggregateResult> {
        let snapshot = self.statement_snapshot()?;
        self.note_scan(table);
        let store = self.db.store();
        Ok(match mode {
            ReadMode::Ndp { pes, freshness } => {
                store.ndp_aggregate(&NdpScan { table, snapshot: &snapshot, predicate, pes, freshness }, func, column)?
            }
            ReadMode::Host { workers } => store.host_aggregate(table, &snapshot, func, column, predicate, workers)?,
        })
    }

    pub fn rows(
        &mut self,
        table: &Arc<Table>,
        projection: &[u16],
        predicate: Option<&Predicate>,
        mode: ReadMode,
    ) -> Result<RowsResult> {
        let snapshot = self.statement_snapshot()?;
        self.note_scan(table);
        let store = self.db.store();
        Ok(match mode {
            ReadMode::Ndp { pes, freshness } => {
                store.ndp_rows(&NdpScan { table, snapshot: &snapshot, predicate, pes, freshness }, projection)?
            }
            ReadMode::Host { workers } => store.host_rows(table, &snapshot, projection, predicate, workers)?,
        })
    }

    /// [`Txn::rows`] at a snapshot the caller took ([`Txn::statement_snapshot`]),
    /// so that every scan of one statement reads the same snapshot under
    /// read committed too.
    pub fn rows_at(
        &mut self,
        table: &Arc<Table>,
        snapshot: &Snapshot,
        projection: &[u16],
        predicate: Option<&Predicate>,
        mode: ReadMode,
    ) -> Result<RowsResult> {
        if !self.is_open() {
            return Err(TxnError::Ended);
        }
        self.note_scan(table);
        let store = self.db.store();
        Ok(match mode {
            ReadMode::Ndp { pes, freshness } => {
                store.ndp_rows(&NdpScan { table, snapshot, predicate, pes, freshness }, projection)?
            }
            ReadMode::Host { workers } => store.host_rows(table, snapshot, projection, predicate, workers)?,
        })
    }

    /// Begins a host-only scan of `table` in VID ranges
    /// ([`Txn::host_rows_range`]); marks the table read (SSI).
    pub fn host_scan(&mut self, table: &Arc<Table>) -> Result<HostScan> {
        if !self.is_open() {
            return Err(TxnError::Ended);
        }
        self.note_scan(table);
        Ok(self.db.store().host_scan(table))
    }

    /// The visible rows of VIDs `vids` of a [`Txn::host_scan`], at `snapshot`.
    pub fn host_rows_range(
        &mut self,
        table: &Arc<Table>,
        scan: &HostScan,
        snapshot: &Snapshot,
        projection: &[u16],
        predicate: Option<&Predicate>,
        vids: std::ops::Range<u64>,
    ) -> Result<RowsResult> {
        if !self.is_open() {
            return Err(TxnError::Ended);
        }
        Ok(self.db.store().host_rows_range(table, scan, snapshot, projection, predicate, vids)?)
    }

    /// The visible rows of VIDs `vids` of a [`Txn::host_scan`], at
    /// `snapshot`, as raw tuples appended to `out` (the caller decodes them
    /// with the table's layout): [`Txn::host_rows_range`] without a value
    /// per column.
    pub fn host_tuples_range(
        &mut self,
        table: &Arc<Table>,
        scan: &HostScan,
        snapshot: &Snapshot,
        predicate: Option<&Predicate>,
        vids: std::ops::Range<u64>,
        out: &mut Tuples,
    ) -> Result<ScanStats> {
        if !self.is_open() {
            return Err(TxnError::Ended);
        }
        Ok(self.db.store().host_tuples_range(table, scan, snapshot, predicate, vids, out)?)
    }

    pub fn commit(mut self) -> Result<()> {
        if !self.is_open() {
            return Err(TxnError::Ended);
        }
        if self.isolation == Isolation::Serializable && self.db.manager().ssi.commit_unsafe(self.id) {
            return self.fail(TxnError::Serialization("read/write dependencies among transactions"));
        }
        // Durable before visible: the log record first. From the record to
        // leaving the active set, a checkpoint must not run (it would take
        // us for open, yet begin its log after our record).
        let gate = self.db.gate_shared();
        if !self.redo.is_empty() {
            let redo = std::mem::take(&mut self.redo);
            if let Err(e) = self.db.store().log_commit(self.id, &redo) {
                drop(gate);
                return self.fail(e.into());
            }
        }
        let mut m = self.db.manager();
        m.commit(self.id);
        self.end(State::Committed);
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

    pub(crate) fn abort_inner(&mut self) -> Result<()> {
        if !self.is_open() {
            return Ok(());
        }
        self.end(State::Aborted);
        // Unlink our versions before anyone can lock the tuples again.
        let store = self.db.store();
        for (table, vid, old) in self.undo.drain(..).rev() {
            store.set_head(&table, vid, old);
        }
        self.db.manager().abort(self.id);
        self.release_locks();
        Ok(())
    }
}
