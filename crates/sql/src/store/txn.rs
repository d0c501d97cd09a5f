//! A transaction a session keeps across statements.
//!
//! `ndpdb_txn::Txn<'db>` borrows its `Database`. A session outlives any
//! borrow it could name, so [`SqlTxn`] owns the database (an
//! `Arc<Database>`) and the transaction that borrows it together, in one
//! self-referential cell (`self_cell`; `Txn` is covariant in `'db`), behind
//! an `Arc<Mutex<..>>`, so that the scans of one statement on two worker
//! threads can use it in turn:
//!
//! ```text
//!  SqlTxn ──Arc──► Mutex ──► Inner { cell: Arc<Database> ◄──borrows── Option<Txn<'_>>,
//!                                    statement snapshot (cached) }
//! ```
//!
//! The `Option` lets `commit`/`abort` (which consume a `Txn`) take it out;
//! afterwards every use reports that the transaction has ended.
//!
//! One snapshot per statement: under read committed `Txn` takes a new
//! snapshot at every call; [`SqlTxn::statement_snapshot`] takes one at the
//! statement's first scan and keeps it until [`SqlTxn::begin_statement`],
//! so that two scans of one statement (a self-join) see the same rows.
//!
//! [`txn_error`] maps the transaction layer's errors to SQLSTATEs.

use std::sync::Arc;

use ndpdb_format::ndp::Snapshot;
use ndpdb_storage::StoreError;
use ndpdb_txn::{Database, Isolation, Txn, TxnError};
use parking_lot::Mutex;

use crate::error::{Result, SqlError, SqlState};

type OpenTxn<'db> = Option<Txn<'db>>;

self_cell::self_cell!(
    struct TxnCell {
        owner: Arc<Database>,
        #[covariant]
        dependent: OpenTxn,
    }
);

/// Run when the transaction ends: with true if it committed.
pub type EndHook = Box<dyn FnOnce(bool) + Send>;

/// Run before the commit record is written; an error aborts instead.
pub type CommitHook = Box<dyn FnOnce() -> Result<()> + Send>;

struct Inner {
    cell: TxnCell,
    snapshot: Option<Snapshot>,
    /// Undone or completed at the end (the unique-key sets' reservations).
    on_end: Vec<EndHook>,
    /// Run before the commit (the index log's sync).
    before_commit: Vec<CommitHook>,
}

impl Inner {
    fn end(&mut self, committed: bool) {
        for hook in std::mem::take(&mut self.on_end) {
            hook(committed);
        }
    }
}

impl Drop for Inner {
    /// A transaction dropped open aborts (`Txn`'s own drop): so do its hooks.
    fn drop(&mut self) {
        self.end(false);
    }
}

/// A transaction over an `Arc<Database>`, shareable between threads.
#[derive(Clone)]
pub struct SqlTxn {
    db: Arc<Database>,
    inner: Arc<Mutex<Inner>>,
}

impl SqlTxn {
    /// Begins a transaction.
    pub fn begin(db: Arc<Database>, isolation: Isolation) -> SqlTxn {
        let cell = TxnCell::new(db.clone(), |db| Some(db.begin(isolation)));
        SqlTxn {
            db,
            inner: Arc::new(Mutex::new(Inner { cell, snapshot: None, on_end: vec![], before_commit: vec![] })),
        }
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// The transaction's id; None once it ended.
    pub fn id(&self) -> Option<u64> {
        self.inner.lock().cell.borrow_dependent().as_ref().map(|t| t.id())
    }

    /// Whether it is still open (not committed, aborted, nor failed).
    pub fn is_open(&self) -> bool {
        self.with(|_| Ok(())).is_ok()
    }

    /// Runs `f` on the open transaction (the mutex held meanwhile).
    pub fn with<R>(&self, f: impl FnOnce(&mut Txn<'_>) -> std::result::Result<R, TxnError>) -> Result<R> {
        let mut inner = self.inner.lock();
        inner.cell.with_dependent_mut(|_, t| match t {
            Some(t) => f(t).map_err(txn_error),
            None => Err(txn_error(TxnError::Ended)),
        })
    }

    /// A new statement begins: the next scan takes a new snapshot under
    /// read committed.
    pub fn begin_statement(&self) {
        self.inner.lock().snapshot = None;
    }

    /// The snapshot of the current statement (module docs).
    pub fn statement_snapshot(&self) -> Result<Snapshot> {
        let mut inner = self.inner.lock();
        if let Some(s) = &inner.snapshot {
            return Ok(s.clone());
        }
        let s = inner.cell.with_dependent_mut(|_, t| match t {
            Some(t) => t.statement_snapshot().map_err(txn_error),
            None => Err(txn_error(TxnError::Ended)),
        })?;
        inner.snapshot = Some(s.clone());
        Ok(s)
    }

    /// A snapshot taken now (not the statement's): what DDL reads after it
    /// took the catalog's lock, to see what committed while it waited.
    pub fn fresh_snapshot(&self) -> Result<Snapshot> {
        self.with(|t| t.statement_snapshot())
    }

    /// Runs `hook` when the transaction ends (true: it committed).
    pub fn on_end(&self, hook: EndHook) {
        self.inner.lock().on_end.push(hook);
    }

    /// Runs `hook` just before the commit record is written; if it fails,
    /// the transaction aborts and the commit returns its error.
    pub fn before_commit(&self, hook: CommitHook) {
        self.inner.lock().before_commit.push(hook);
    }

    /// Commits; the transaction has ended afterwards, whatever the result.
    pub fn commit(&self) -> Result<()> {
        let mut inner = self.inner.lock();
        for hook in std::mem::take(&mut inner.before_commit) {
            if let Err(e) = hook() {
                let _ = inner.cell.with_dependent_mut(|_, t| t.take().map(|t| t.abort()));
                inner.end(false);
                return Err(e);
            }
        }
        let result = inner.cell.with_dependent_mut(|_, t| match t.take() {
            Some(t) => t.commit().map_err(txn_error),
            None => Err(txn_error(TxnError::Ended)),
        });
        inner.end(result.is_ok());
        result
    }

    /// Aborts (a transaction that already ended stays ended: Ok).
    pub fn abort(&self) -> Result<()> {
        let mut inner = self.inner.lock();
        let result = inner.cell.with_dependent_mut(|_, t| match t.take() {
            Some(t) => t.abort().map_err(txn_error),
            None => Ok(()),
        });
        inner.end(false);
        result
    }
}

/// The SQL error of a transaction-layer error: SQLSTATE and PostgreSQL's
/// message where it has one.
pub fn txn_error(e: TxnError) -> SqlError {
    match e {
        TxnError::Serialization(why) => {
            SqlError::new(SqlState::SERIALIZATION_FAILURE, format!("could not serialize access due to {why}"))
                .with_hint("The transaction might succeed if retried.")
        }
        TxnError::Deadlock => SqlError::new(SqlState::DEADLOCK_DETECTED, "deadlock detected")
            .with_hint("The transaction was aborted; retry it."),
        TxnError::Ended => SqlError::new(
            SqlState::IN_FAILED_TRANSACTION,
            "current transaction is aborted, commands ignored until end of transaction block",
        ),
        TxnError::NotFound { table, vid } => {
            SqlError::new(SqlState::SERIALIZATION_FAILURE, format!("tuple {vid} of {table} was deleted concurrently"))
                .with_hint("The transaction might succeed if retried.")
        }
        TxnError::InvalidInput(m) => SqlError::internal(format!("the transaction layer refused a request: {m}")),
        TxnError::Store(e) => store_error(e),
    }
}

/// The SQL error of a store error.
pub fn store_error(e: StoreError) -> SqlError {
    let msg = e.to_string();
    match e {
        StoreError::DeviceFull { .. } | StoreError::LogFull { .. } => SqlError::new(SqlState::DISK_FULL, msg),
        StoreError::Device(ref d) if d.is_disk_full() => SqlError::new(SqlState::DISK_FULL, msg),
        StoreError::Corrupt(_) | StoreError::LogDamaged(_) => SqlError::new(SqlState::DATA_CORRUPTED, msg),
        StoreError::ReadOnly { .. } => SqlError::new(SqlState("25006"), msg),
        StoreError::Device(_) | StoreError::MirrorLost(_) => SqlError::new(SqlState::IO_ERROR, msg),
        StoreError::InvalidInput(_) => SqlError::internal(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_postgresql_codes() {
        let e = txn_error(TxnError::Serialization("concurrent update"));
        assert_eq!(e.code, SqlState("40001"));
        assert_eq!(e.message, "could not serialize access due to concurrent update");
        assert_eq!(txn_error(TxnError::Deadlock).code, SqlState("40P01"));
        assert_eq!(txn_error(TxnError::Ended).code, SqlState("25P02"));
        assert_eq!(txn_error(TxnError::Store(StoreError::Corrupt("x".into()))).code, SqlState("XX001"));
        let full = StoreError::DeviceFull { pages: 1, waiting: 0, reserved: 0 };
        assert_eq!(txn_error(TxnError::Store(full)).code, SqlState("53100"));
    }
}
