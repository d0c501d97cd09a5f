//! `ndpdb web`: the neoDBMS demonstration's GUI (ICDE'22, section III,
//! Fig. 5) and an EXPLAIN view, as one web page served by the binary.
//!
//! ```text
//!  browser ── GET /            index.html, app.css, app.js (compiled in: include_str!)
//!     │   ── POST /api/composer/check   form ─► composer file ─► Workload::parse   (form.rs)
//!     │   ── POST /api/composer/parse   uploaded file ─► form
//!     │   ── GET  /api/scenario/N       the paper's scenario N as a form
//!     │   ── POST /api/runs             start a run (one at a time: 409)          (runs.rs)
//!     │   ── GET  /api/events           the run's progress (server-sent events)
//!     │   ── GET  /api/runs[/ID]        runs in the results directory, a run's rows
//!     │   ── GET  /files/ID/NAME        a run's file (JSON lines, SVG, PNG, table)
//!     └── ── POST /api/sql              a statement on --db, its plan as a tree    (sql.rs)
//! ```
//!
//! The page is plain HTML, CSS and JavaScript with no build step; it
//! draws the charts itself as SVG from the run's JSON lines (each point's
//! counters in its `<title>`, shown on hover) and links the plots the run
//! drew (plotters, as the CLI draws them). The server trusts nothing the
//! page sends: the composer form is checked by the composer's own parser,
//! the engines by `bench snapshot`'s `Config::validate`, errors come back
//! as `{field, message}` for the page to show beside the field
//! (`error.rs`), and files are served only from the results directory.

pub mod error;
pub mod form;
pub mod runs;
pub mod sql;

mod assets;
mod routes;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use ndpdb_sql::session::Engine;

pub use routes::router;

/// How `ndpdb web` was started.
#[derive(Clone)]
pub struct WebOptions {
    pub listen: SocketAddr,
    /// Where runs are written and listed from (`bench snapshot --out`).
    pub results: PathBuf,
    /// The database of the SQL page, opened by the caller.
    pub engine: Option<Arc<Engine>>,
    /// The database's directory, to name it on the page.
    pub db_name: Option<String>,
}

/// What every request handler shares.
pub struct AppState {
    pub runs: Arc<runs::Runs>,
    pub engine: Option<Arc<Engine>>,
    pub db_name: Option<String>,
}

impl AppState {
    pub fn new(opts: &WebOptions) -> Arc<AppState> {
        Arc::new(AppState {
            runs: runs::Runs::new(opts.results.clone()),
            engine: opts.engine.clone(),
            db_name: opts.db_name.clone(),
        })
    }
}

/// Serves the page on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state)).with_graceful_shutdown(shutdown).await
}
