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

#[path = "../../sql/tests/isolation_runner/mod.rs"]
mod isolation_runner;
#[path = "isolation_psql/session.rs"]
mod psql_session;

use std::sync::Arc;

use isolation_runner::{ScriptBackend, ScriptConn};
use ndpdb_server::{Server, ServerOptions};
use ndpdb_sql::session::{Engine, EngineOptions, StatementResult};
use psql_session::PsqlSession;

/// `ndpdb serve` over a new database, in this process (its engine is the
/// tests' view of the waits-for graph); stopped when dropped.
struct PsqlBackend {
    engine: Arc<Engine>,
    addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    admin: Option<PsqlSession>,
    _dir: tempfile::TempDir,
}

impl PsqlBackend {
    fn start() -> PsqlBackend {
        let dir = tempfile::tempdir().unwrap();
        let opts = EngineOptions {
            dir: dir.path().to_path_buf(),
            create_if_missing: true,
            capacity_mib: Some(32),
            ..EngineOptions::default()
        };
        let engine = Engine::open(&opts).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let server_opts = ServerOptions { listen: "127.0.0.1:0".parse().unwrap(), max_connections: 20 };
        let server = rt.block_on(Server::bind(engine.clone(), server_opts)).unwrap();
        let addr = server.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            rt.block_on(server.run(async {
                let _ = rx.await;
            }))
            .unwrap();
        });
        let mut backend = PsqlBackend { engine, addr, stop: Some(tx), thread: Some(thread), admin: None, _dir: dir };
        backend.admin = Some(PsqlSession::connect(addr, backend.engine.clone()));
        backend
    }
}

impl ScriptBackend for PsqlBackend {
    fn open(&mut self) -> Box<dyn ScriptConn> {
        Box::new(PsqlSession::connect(self.addr, self.engine.clone()))
    }

    fn admin(&mut self, sql: &str) -> Result<StatementResult, String> {
        let admin = self.admin.as_mut().expect("the admin session");
        admin.send(vec![sql.to_string()])?;
        match admin.finish_or_block() {
            Some(Ok(mut r)) => r.pop().ok_or_else(|| "no result".into()),
            Some(Err(e)) => Err(format!("error: {}", e.message)),
            None => Err("an autocommitted statement waits for a lock".into()),
        }
    }
}

impl Drop for PsqlBackend {
    fn drop(&mut self) {
        drop(self.admin.take());
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = self.engine.close();
    }
}

#[test]
fn isolation_scripts_through_psql_sessions() {
    let have = std::process::Command::new("psql").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var_os("NDPDB_REQUIRE_POSTGRES").is_none(),
            "psql is needed (NDPDB_REQUIRE_POSTGRES is set): install it (.ci/run does)"
        );
        eprintln!("skipped: psql is not installed");
        return;
    }
    isolation_runner::check_all_scripts("psql", &mut |text| {
        isolation_runner::run_script_on(&mut PsqlBackend::start(), text)
    });
}
