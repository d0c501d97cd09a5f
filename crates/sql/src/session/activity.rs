//! What a session is doing, for `pg_stat_activity`
//! (`catalog/system/activity.rs` has the picture).
//!
//! A session's [`SessionActivity`] lives in a cell shared with whoever
//! lists sessions (the server's registry reads it from other threads while
//! the session runs). The session's driver marks each statement:
//! [`Session::statement_started`] (state `active`, the query text, its
//! start, and the transaction's start if none is open) and
//! [`Session::statement_finished`] (`idle`, `idle in transaction` or `idle
//! in transaction (aborted)` from the transaction status; an ended
//! transaction clears `xact_start`). [`Session::run`] marks its own
//! statements; the server marks each Query and Execute message, whose text
//! is what PostgreSQL shows.
//!
//! Binding sees the sessions through [`SessionCatalog`], the session's
//! catalog plus [`Catalog::activity`]: the [`ActivitySource`] the server
//! set, or this session's own row.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use super::{Session, TxnStatus};
use crate::catalog::system::{ActivitySource, DATABASE, OWNER, SessionActivity};
use crate::catalog::{Catalog, IndexDef, MemCatalog, TableDef, ViewDef};

/// A session's activity cell and the source that lists all sessions.
pub(super) struct Activity {
    cell: Arc<Mutex<SessionActivity>>,
    source: Option<Arc<dyn ActivitySource>>,
}

impl Activity {
    pub(super) fn new() -> Activity {
        let row = SessionActivity {
            pid: std::process::id() as i32,
            usename: OWNER.into(),
            datname: DATABASE.into(),
            application_name: String::new(),
            client_addr: None,
            client_port: None,
            backend_start: now_us(),
            xact_start: None,
            query_start: None,
            state_change: None,
            state: "idle",
            query: String::new(),
        };
        Activity { cell: Arc::new(Mutex::new(row)), source: None }
    }
}

/// Now, in microseconds since 1970 (the wall clock: these are times of day).
fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

impl Session {
    /// This session's `pg_stat_activity` row, shared: the server fills in
    /// the connection's details and lists it to other sessions.
    pub fn activity(&self) -> Arc<Mutex<SessionActivity>> {
        self.activity.cell.clone()
    }

    /// Where `pg_stat_activity` reads the live sessions from (the
    /// server's list); without one a session shows its own row.
    pub fn set_activity_source(&mut self, source: Arc<dyn ActivitySource>) {
        self.activity.source = Some(source);
    }

    /// A statement (`query`, the client's text) begins.
    pub fn statement_started(&self, query: &str) {
        let now = now_us();
        let mut a = self.activity.cell.lock();
        a.state = "active";
        a.query = query.to_string();
        a.query_start = Some(now);
        a.state_change = Some(now);
        a.xact_start.get_or_insert(now);
    }

    /// The statement ended: idle, or idle in its (possibly failed) transaction.
    pub fn statement_finished(&self) {
        let status = self.txn_status();
        let mut a = self.activity.cell.lock();
        a.state = match status {
            TxnStatus::Idle => "idle",
            TxnStatus::InBlock => "idle in transaction",
            TxnStatus::Failed => "idle in transaction (aborted)",
        };
        a.state_change = Some(now_us());
        if status == TxnStatus::Idle {
            a.xact_start = None;
        }
    }

    /// `catalog` as statements bind against it: with the live sessions.
    pub(super) fn bind_catalog<'a>(&'a self, catalog: &'a MemCatalog) -> SessionCatalog<'a> {
        SessionCatalog { inner: catalog, activity: &self.activity }
    }
}

/// A session's catalog and its view of the live sessions.
pub(super) struct SessionCatalog<'a> {
    inner: &'a MemCatalog,
    activity: &'a Activity,
}

impl Catalog for SessionCatalog<'_> {
    fn table(&self, name: &str) -> Option<Arc<TableDef>> {
        self.inner.table(name)
    }

    fn view(&self, name: &str) -> Option<Arc<ViewDef>> {
        self.inner.view(name)
    }

    fn index(&self, name: &str) -> Option<Arc<IndexDef>> {
        self.inner.index(name)
    }

    fn tables(&self) -> Vec<Arc<TableDef>> {
        self.inner.tables()
    }

    fn view_names(&self) -> Vec<String> {
        self.inner.view_names()
    }

    fn activity(&self) -> Vec<SessionActivity> {
        match &self.activity.source {
            Some(source) => source.sessions(),
            None => vec![self.activity.cell.lock().clone()],
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::session::{Engine, EngineOptions};
    use crate::types::Value;

    #[test]
    fn an_embedded_session_shows_its_own_row_and_its_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let opts = EngineOptions {
            dir: dir.path().to_path_buf(),
            create_if_missing: true,
            capacity_mib: Some(64),
            ..EngineOptions::default()
        };
        let engine = Engine::open(&opts).unwrap();
        let mut s = engine.session();
        let q = "SELECT pid, state, query, xact_start IS NOT NULL FROM pg_stat_activity";
        let rows = |s: &mut crate::session::Session, sql: &str| s.run(sql).pop().unwrap().unwrap().rows;
        let pid = Value::Int32(std::process::id() as i32);
        let own = vec![vec![pid.clone(), Value::Text("active".into()), Value::Text(q.into()), Value::Bool(true)]];
        assert_eq!(rows(&mut s, q), own);
        assert_eq!(s.activity().lock().state, "idle");
        assert_eq!(s.activity().lock().xact_start, None);
        s.run("BEGIN");
        assert_eq!(s.activity().lock().state, "idle in transaction");
        let began = s.activity().lock().xact_start.expect("a transaction start");
        assert_eq!(rows(&mut s, q).len(), 1);
        assert_eq!(s.activity().lock().xact_start, Some(began), "the transaction's start stays");
        s.run("SELECT 1/0");
        assert_eq!(s.activity().lock().state, "idle in transaction (aborted)");
        s.run("ROLLBACK");
        let a = s.activity().lock().clone();
        assert_eq!((a.state, a.xact_start), ("idle", None));
        drop(s);
        engine.close().unwrap();
    }
}
