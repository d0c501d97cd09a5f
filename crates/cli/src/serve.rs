//! `ndpdb serve`: one database directory behind PostgreSQL's wire protocol
//! (the `ndpdb-server` crate). This module parses the flags, opens the
//! engine, takes the directory's lock, runs the server on a tokio runtime
//! until SIGINT or SIGTERM, and closes the engine (a checkpoint).
//!
//! Access is checked before anything is opened or bound: a non-loopback
//! `--listen` without `--password-file` is an error that says to pass one.
//! There is no opt-out flag: trust on a network address lets anyone who
//! can reach the port read and change the database, and a password file
//! of one line is cheap (see docs/server.md).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use clap::{Args, ValueEnum};
use ndpdb_bench::errln;
use ndpdb_device::ClockKind;
use ndpdb_server::auth::Passwords;
use ndpdb_server::{DirLock, LogLevel, ServerOptions};
use ndpdb_sql::session::{Engine, EngineOptions};

#[derive(Args)]
pub struct ServeArgs {
    /// Database directory (created if missing)
    #[arg(long, default_value = "ndpdb-data")]
    pub db: PathBuf,
    /// Address and port to listen on (a non-loopback address needs --password-file)
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: SocketAddr,
    /// SCRAM-SHA-256 for every client: lines `user:password` or `user:SCRAM-SHA-256$...` (mode 600)
    #[arg(long)]
    pub password_file: Option<PathBuf>,
    /// Connections served at once; one more gets "too many clients" (53300)
    #[arg(long, default_value_t = 100)]
    pub max_connections: usize,
    /// error: errors only; info: and connections; statement: and every statement
    #[arg(long, value_enum, default_value = "info")]
    pub log_level: Level,
    /// Profile name or .toml path (default: the image's own; `default` for a new database)
    #[arg(long)]
    pub profile: Option<String>,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    pub clock: ClockKind,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Level {
    Error,
    Info,
    Statement,
}

pub fn run(a: ServeArgs) -> Result<()> {
    if a.max_connections == 0 {
        return Err(anyhow!("--max-connections must be at least 1"));
    }
    ndpdb_server::log::set_level(match a.log_level {
        Level::Error => LogLevel::Error,
        Level::Info => LogLevel::Info,
        Level::Statement => LogLevel::Statement,
    });
    let passwords = match &a.password_file {
        Some(path) => Some(Arc::new(Passwords::load(path)?)),
        None => None,
    };
    ndpdb_server::check_access(a.listen, passwords.is_some())?;
    std::fs::create_dir_all(&a.db).with_context(|| format!("creating {}", a.db.display()))?;
    let _lock = DirLock::acquire(&a.db)?;
    let opts = EngineOptions {
        dir: a.db.clone(),
        profile: a.profile.clone(),
        clock: a.clock,
        create_if_missing: true,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&opts).with_context(|| format!("opening database {}", a.db.display()))?;
    errln!(
        "ndpdb serve: database {} (profile {}, {} clock)",
        a.db.display(),
        engine.profile_name(),
        engine.clock_name()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the server's runtime")?;
    let server_opts = ServerOptions { listen: a.listen, max_connections: a.max_connections };
    let served = runtime.block_on(ndpdb_server::serve(engine.clone(), server_opts, passwords, shutdown_signal()));
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    let closed = engine.close().context("closing the database (checkpoint)");
    served.map_err(|e| anyhow!("{e}"))?;
    closed?;
    errln!("ndpdb serve: stopped; database checkpointed");
    Ok(())
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            errln!("ndpdb serve: cannot watch SIGTERM ({e}); stop with Ctrl-C");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
