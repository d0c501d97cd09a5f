//! `ndpdb serve`: the SQL engine behind PostgreSQL's wire protocol, so
//! psql, pgbench, psycopg, JDBC and go-ycsb are ndpdb clients.
//!
//! ```text
//!   client ──TCP──► accept loop ──► one task per connection (pgwire codec,
//!                     │               startup, simple + extended query)
//!                     │                    │ spawn_blocking
//!                     │                    ▼
//!                     │               Session (one per connection) ──► Engine
//!                     └── Registry: backend keys → cancel flags          │
//!                                                                  database dir
//! ```
//!
//! The protocol is pgwire's (`default-features = false`, server API, no
//! TLS: an SSLRequest is answered `N`); everything between the messages
//! and the engine is here: the handlers ([`conn`]), the value formats
//! ([`wire`]), errors with their SQLSTATE ([`errors`]), cancel requests
//! ([`registry`]), statements the parser does not take ([`utility`]).
//!
//! One process serves one database directory and holds an exclusive lock
//! on it ([`DirLock`]): a second server, or `ndpdb sql` beside a server,
//! gets an error instead of two caches of one image.
//!
//! Lifecycle: [`serve`] runs until its shutdown future completes (the CLI
//! passes SIGINT/SIGTERM); it stops accepting, cancels running statements,
//! sends every client PostgreSQL's FATAL 57P01 "terminating connection due
//! to administrator command" and closes it (`socket.rs`), drops every
//! session (open transactions roll back), and returns; the caller then
//! closes the engine, which checkpoints. After SIGKILL the next start
//! recovers from the log like any crash.
//!
//! Also here: `COPY .. FROM STDIN` on the wire ([`copy`]), SQL cursors
//! ([`cursor`]), the extended protocol ([`extended`]), each connection's
//! message loop with the shutdown's FATAL ([`socket`]).
//!
//! Access: trust on loopback addresses; with `--password-file` every
//! client passes SCRAM-SHA-256 ([`auth`], [`scram`], `startup.rs`), and
//! only then may the server listen on other addresses ([`check_access`]).
//!
//! Not built yet (issue 18): COPY TO, scrollable cursors.

pub mod auth;
pub mod conn;
mod copy;
pub mod cursor;
pub mod errors;
pub mod extended;
mod lock;
pub mod log;
pub mod registry;
pub mod scram;
mod socket;
mod startup;
pub mod utility;
pub mod wire;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use ndpdb_sql::session::Engine;
use pgwire::api::ClientInfo;
use pgwire::api::PgWireServerHandlers;
use pgwire::api::auth::StartupHandler;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tokio::net::TcpListener;

pub use lock::DirLock;
pub use log::LogLevel;

/// What `server_version` says: PostgreSQL 16's protocol and catalog
/// conventions, and which engine answers.
pub const SERVER_VERSION: &str = concat!("16.0 (ndpdb ", env!("CARGO_PKG_VERSION"), ")");

/// How the server listens.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub listen: SocketAddr,
    /// Connections served at once; one more gets PostgreSQL's 53300.
    pub max_connections: usize,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions { listen: "127.0.0.1:5433".parse().expect("a literal address"), max_connections: 100 }
    }
}

/// Errors of the server itself (not of a statement).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source} (is another server on that port? choose one with --listen)")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error(
        "refusing to listen on {0} without authentication: a non-loopback address needs passwords; \
         pass --password-file FILE (lines `user:password`, mode 600; see docs/server.md), \
         or listen on a loopback address such as 127.0.0.1"
    )]
    Unauthenticated(SocketAddr),
    #[error("{0}")]
    Lock(String),
}

/// A bound server: its address is known before it runs (tests bind port 0).
pub struct Server {
    listener: TcpListener,
    engine: Arc<Engine>,
    opts: ServerOptions,
    registry: Arc<registry::Registry>,
    passwords: Option<Arc<auth::Passwords>>,
}

impl Server {
    /// Binds `opts.listen` with trust authentication: loopback addresses only.
    pub async fn bind(engine: Arc<Engine>, opts: ServerOptions) -> Result<Server, ServeError> {
        Server::bind_with(engine, opts, None).await
    }

    /// Binds `opts.listen`; with `passwords` every client must pass
    /// SCRAM-SHA-256, without them a non-loopback address is refused.
    pub async fn bind_with(
        engine: Arc<Engine>,
        opts: ServerOptions,
        passwords: Option<Arc<auth::Passwords>>,
    ) -> Result<Server, ServeError> {
        check_access(opts.listen, passwords.is_some())?;
        let listener =
            TcpListener::bind(opts.listen).await.map_err(|source| ServeError::Listen { addr: opts.listen, source })?;
        let seed = std::process::id() as u64 ^ random_seed();
        Ok(Server { listener, engine, opts, registry: Arc::new(registry::Registry::new(seed)), passwords })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then ends every session.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> std::io::Result<()> {
        let active = Arc::new(AtomicUsize::new(0));
        let next_id = AtomicI32::new(1);
        let sessions: Arc<parking_lot::Mutex<Vec<Weak<()>>>> = Arc::default();
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            let (socket, peer) = tokio::select! {
                r = self.listener.accept() => match r {
                    Ok(x) => x,
                    Err(e) => { log::info(format_args!("accept failed: {e}")); continue; }
                },
                _ = &mut shutdown => break,
            };
            let _ = socket.set_nodelay(true);
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            let count = active.fetch_add(1, Ordering::AcqRel) + 1;
            let guard = ActiveGuard(active.clone());
            if count > self.opts.max_connections {
                let refuse = Refuse(self.registry.clone());
                tasks.spawn(async move {
                    let _ = pgwire::tokio::process_socket(socket, None, refuse).await;
                    drop(guard);
                });
                continue;
            }
            log::info(format_args!("connection {id} from {peer}"));
            let mut session = self.engine.session();
            session.set_activity_source(self.registry.clone());
            let alive = Arc::new(());
            sessions.lock().push(Arc::downgrade(&alive));
            let conn = conn::Conn::new(session, self.registry.clone(), id).with_passwords(self.passwords.clone());
            let conn = Arc::new(conn);
            let registry = self.registry.clone();
            let stopping = stopping.clone();
            tasks.spawn(async move {
                let r = socket::serve(socket, conn, stopping).await;
                registry.unregister(id);
                log::info(format_args!(
                    "connection {id} closed{}",
                    r.err().map(|e| format!(": {e}")).unwrap_or_default()
                ));
                drop((guard, alive));
            });
        }
        log::info(format_args!(
            "shutting down: cancelling running statements, ending {} sessions",
            self.registry.len()
        ));
        let _ = stop.send(true);
        end_connections(&mut tasks, &self.registry).await;
        wait_for_sessions(&sessions).await;
        Ok(())
    }
}

/// Trust is for loopback only: a non-loopback address (`0.0.0.0`, `::`,
/// an interface's) needs passwords. Checked before binding.
pub fn check_access(listen: SocketAddr, with_passwords: bool) -> Result<(), ServeError> {
    if listen.ip().is_loopback() || with_passwords { Ok(()) } else { Err(ServeError::Unauthenticated(listen)) }
}

/// Lets every connection send its FATAL 57P01 and close: running
/// statements are cancelled (again every 50 ms, for one that started
/// after the first cancel); after 10 s the rest are dropped.
async fn end_connections(tasks: &mut tokio::task::JoinSet<()>, registry: &registry::Registry) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tasks.is_empty() && Instant::now() < deadline {
        registry.cancel_all();
        let _ = tokio::time::timeout(Duration::from_millis(50), tasks.join_next()).await;
    }
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
}

/// Waits (up to 30 s) until every session is dropped: a statement still
/// running on the blocking pool holds its session until it sees the cancel.
async fn wait_for_sessions(sessions: &parking_lot::Mutex<Vec<Weak<()>>>) {
    let start = Instant::now();
    while sessions.lock().iter().any(|w| w.strong_count() > 0) && start.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x006e_6470_6462);
    h.finish()
}

struct ActiveGuard(Arc<AtomicUsize>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The handlers of a connection over `--max-connections`: its startup gets
/// PostgreSQL's FATAL 53300 and the connection closes; a cancel request
/// (which comes on a connection of its own) still reaches the registry.
struct Refuse(Arc<registry::Registry>);

impl PgWireServerHandlers for Refuse {
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::new(Refuse(self.0.clone()))
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.0.clone()
    }
}

#[async_trait::async_trait]
impl StartupHandler for Refuse {
    async fn on_startup<C>(&self, _client: &mut C, _message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + futures::Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        Err(errors::fatal("53300", "sorry, too many clients already"))
    }
}

/// Binds and serves `engine` until `shutdown`; the CLI's entry point.
pub async fn serve(
    engine: Arc<Engine>,
    opts: ServerOptions,
    passwords: Option<Arc<auth::Passwords>>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let access = match &passwords {
        Some(p) => format!("SCRAM-SHA-256 for {} users", p.len()),
        None => "trust (loopback)".to_string(),
    };
    let server = Server::bind_with(engine, opts, passwords).await?;
    log::info(format_args!(
        "listening on {} (PostgreSQL protocol; server_version {SERVER_VERSION}; authentication: {access})",
        server.local_addr()?
    ));
    server.run(shutdown).await?;
    Ok(())
}
