//! Issue 18's "the golden isolation scripts pass through psql sessions
//! against the server": the scripts `crates/sql/tests/isolation.rs` runs in
//! process, with the same translation, comparison and known differences
//! (`crates/sql/tests/isolation_runner/`, included by path), but each
//! script session is a psql process connected to `ndpdb serve`, fed its
//! statements on stdin.
//!
//! ```text
//!  runner ──stdin──► psql ──wire──► ndpdb serve ──► Session
//!    ▲  stmt; \echo @@n; \warn @@n        │
//!    │                                    │ waits for a tuple lock?
//!    └── stdout/stderr up to `@@n` ◄──────┘  Database::is_waiting(txn id)
//! ```
//!
//! A statement has finished when psql has printed its marker on stdout
//! (rows or command tag before it) and on stderr (its error before it). It
//! is blocked when the session's transaction waits in the engine's
//! waits-for graph, exactly as in process: the server runs in this test's
//! process, and a psql session's transaction id is the one transaction its
//! `BEGIN` added to `Database::active`. No timing decides an outcome.

mod common;
#[path = "../../sql/tests/isolation_runner/mod.rs"]
mod isolation_runner;
#[path = "isolation_psql/session.rs"]
mod psql_session;

use common::TestServer;
use isolation_runner::{ScriptBackend, ScriptConn};
use ndpdb_sql::session::StatementResult;
use psql_session::PsqlSession;

/// `ndpdb serve` over a new database, in this process (its engine is the
/// tests' view of the waits-for graph); stopped when dropped, after the
/// admin session (fields drop in order).
struct PsqlBackend {
    admin: PsqlSession,
    server: TestServer,
}

impl PsqlBackend {
    fn start() -> PsqlBackend {
        let server = TestServer::start_sized(20, 32, None);
        let admin = PsqlSession::connect(server.addr, server.engine.clone());
        PsqlBackend { admin, server }
    }
}

impl ScriptBackend for PsqlBackend {
    fn open(&mut self) -> Box<dyn ScriptConn> {
        Box::new(PsqlSession::connect(self.server.addr, self.server.engine.clone()))
    }

    fn admin(&mut self, sql: &str) -> Result<StatementResult, String> {
        self.admin.send(vec![sql.to_string()])?;
        match self.admin.finish_or_block() {
            Some(Ok(mut r)) => r.pop().ok_or_else(|| "no result".into()),
            Some(Err(e)) => Err(format!("error: {}", e.message)),
            None => Err("an autocommitted statement waits for a lock".into()),
        }
    }
}

#[test]
fn isolation_scripts_through_psql_sessions() {
    if !common::have("psql", &["--version"]) {
        return;
    }
    isolation_runner::check_all_scripts("psql", &mut |text| {
        isolation_runner::run_script_on(&mut PsqlBackend::start(), text)
    });
}
