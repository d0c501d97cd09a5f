//! `pg_stat_activity`: the sessions of the process, not of the catalog.
//!
//! ```text
//!  server: Registry ──(ActivitySource)──┐     embedded: none
//!                                       ▼                 │
//!  Session ─► SessionCatalog::activity() ─► Relations.activity ─► rows
//!                                       ▲                 │
//!                 each Session's own SessionActivity ◄────┘ (its one row)
//! ```
//!
//! The SQL engine does not know the server. Each session keeps its own
//! [`SessionActivity`] (state, query, when its transaction and statement
//! began; `session/activity.rs` updates it) in a shared cell; whoever runs
//! many sessions (the server) gives each one an [`ActivitySource`] that
//! lists them all, and fills in the connection's details (pid = backend
//! key, user, database, application, client address). An embedded session
//! without a source shows its own one row. The rows are read when the
//! statement is bound, as every system table's are.

use super::oids::{DATABASE_OID, OWNER_OID};
use crate::types::Value;

/// One row of `pg_stat_activity`. Times are microseconds since 1970 (UTC).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionActivity {
    /// The backend's pid (the server: the connection's backend key).
    pub pid: i32,
    pub usename: String,
    pub datname: String,
    pub application_name: String,
    /// The client's address and port (None: not over TCP).
    pub client_addr: Option<String>,
    pub client_port: Option<i32>,
    pub backend_start: i64,
    /// When the open transaction began (None: none open).
    pub xact_start: Option<i64>,
    /// When the last statement began (None: none yet).
    pub query_start: Option<i64>,
    pub state_change: Option<i64>,
    /// `active`, `idle`, `idle in transaction` or `idle in transaction (aborted)`.
    pub state: &'static str,
    /// The running statement, or the last one when idle.
    pub query: String,
}

/// Lists the live sessions (the server implements it over its connections).
pub trait ActivitySource: Send + Sync {
    fn sessions(&self) -> Vec<SessionActivity>;
}

/// The rows, in `pg_stat_activity`'s column order (see `schema.rs`).
pub(super) fn rows(list: &[SessionActivity]) -> Vec<Vec<Value>> {
    let ts = |t: Option<i64>| t.map(Value::Timestamp).unwrap_or(Value::Null);
    let text = |s: &str| Value::Text(s.to_string());
    list.iter()
        .map(|a| {
            vec![
                Value::Int64(DATABASE_OID),
                text(&a.datname),
                Value::Int32(a.pid),
                Value::Null,
                Value::Int64(OWNER_OID),
                text(&a.usename),
                text(&a.application_name),
                a.client_addr.as_deref().map(text).unwrap_or(Value::Null),
                Value::Null,
                a.client_port.map(Value::Int32).unwrap_or(Value::Null),
                Value::Timestamp(a.backend_start),
                ts(a.xact_start),
                ts(a.query_start),
                ts(a.state_change),
                Value::Null,
                Value::Null,
                text(a.state),
                Value::Null,
                Value::Null,
                Value::Null,
                text(&a.query),
                text("client backend"),
            ]
        })
        .collect()
}
