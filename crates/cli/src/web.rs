//! `ndpdb web`: the workload composer, its runs and an SQL page with the
//! plan view, served on one address (the `ndpdb-web` crate). This module
//! parses the flags, opens `--db` for the SQL page (taking its directory's
//! lock), prints the address, and serves until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow};
use clap::Args;
use ndpdb_bench::report::Report;
use ndpdb_bench::{errln, outln};
use ndpdb_server::DirLock;
use ndpdb_sql::session::{Engine, EngineOptions};
use ndpdb_web::{AppState, WebOptions};

#[derive(Args)]
pub struct WebArgs {
    /// Address and port to listen on
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Directory the runs are written to and listed from (as `bench snapshot --out`)
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Database directory for the SQL page (none: the SQL page says how to give one)
    #[arg(long)]
    pub db: Option<PathBuf>,
}

pub fn run(a: WebArgs) -> Result<()> {
    // The results root must be writable before anything runs.
    Report::new(false, a.results.clone())?;
    let (engine, _lock) = match &a.db {
        Some(dir) => {
            if !dir.join(ndpdb_device::IMAGE_FILE).exists() {
                anyhow::bail!(
                    "--db {}: no database there; create one with `ndpdb sql --db DIR` or `ndpdb load tpch --db DIR`",
                    dir.display()
                );
            }
            let lock = DirLock::acquire(dir)?;
            let opts = EngineOptions { dir: dir.clone(), create_if_missing: false, ..EngineOptions::default() };
            let engine = Engine::open(&opts).with_context(|| format!("opening database {}", dir.display()))?;
            (Some(engine), Some(lock))
        }
        None => (None, None),
    };
    let opts = WebOptions {
        listen: a.listen,
        results: a.results.clone(),
        engine: engine.clone(),
        db_name: a.db.as_ref().map(|d| d.display().to_string()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the web server's runtime")?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(opts.listen)
            .await
            .with_context(|| format!("listening on {}: choose another --listen", opts.listen))?;
        let addr = listener.local_addr()?;
        outln!("ndpdb web: http://{addr}/");
        errln!("results in {}; stop with Ctrl-C", a.results.display());
        ndpdb_web::serve(listener, AppState::new(&opts), shutdown_signal()).await.map_err(|e| anyhow!("serving: {e}"))
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    if let Some(e) = engine {
        e.close().context("closing the database (checkpoint)")?;
    }
    served
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            errln!("ndpdb web: cannot watch SIGTERM ({e}); stop with Ctrl-C");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
