//! Runs of composed workloads: started in the background, one at a time,
//! through `bench snapshot --workload`'s own code path
//! (`snapshot::Config::run_and_report_watched`), so a run from the page
//! writes the same results directory the CLI writes
//! (`<results>/snapshot-<UTC time>/`: `results.jsonl`, `table.txt`, the
//! plots), plus the composer file it ran (`workload.toml`).
//!
//! ```text
//!  POST /api/runs ─► validate (form.rs) ─► slot free? ──no──► 409
//!                                             │yes
//!                    thread: run_and_report_watched ──progress──► watch channel ─► SSE /api/events
//!                               │ Ok(dir)                                         (page: bar, then table)
//!                               └─► dir/workload.toml; status done {run: dir name}
//! ```
//!
//! Runs are listed from the results directory itself (every
//! `snapshot-*` directory with a `results.jsonl`), so runs of the CLI show
//! up too. Files are served only by run id and file name, each one plain
//! name (letters, digits, `.`, `-`, `_`; no leading dot), resolved inside the
//! results directory and refused if a symlink leads out of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ndpdb_bench::compose::Workload;
use ndpdb_bench::report::Report;
use ndpdb_bench::snapshot::{self, Points, Progress};
use serde::Serialize;
use tokio::sync::watch;

use crate::error::ApiError;

/// What the page sees of the current (or last) run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Status {
    /// `idle`, `running`, `done` or `failed`.
    pub state: &'static str,
    /// The workload's name.
    pub workload: String,
    pub phase: String,
    pub done: u64,
    pub total: u64,
    /// When done: the run's id (its results directory's name).
    pub run: Option<String>,
    /// When failed: why, as the CLI would say it.
    pub error: Option<String>,
}

/// The run slot and the results directory.
pub struct Runs {
    root: PathBuf,
    busy: AtomicBool,
    status: watch::Sender<Status>,
}

/// Frees the run slot when the run's thread ends, however it ends.
struct Slot(Arc<Runs>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

impl Runs {
    pub fn new(root: PathBuf) -> Arc<Runs> {
        let (status, _) = watch::channel(Status { state: "idle", ..Status::default() });
        Arc::new(Runs { root, busy: AtomicBool::new(false), status })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn subscribe(&self) -> watch::Receiver<Status> {
        self.status.subscribe()
    }

    /// Starts `workload` (a checked composer file) on `cfg` in the
    /// background; refuses while another run is in progress.
    pub fn start(self: &Arc<Self>, name: &str, workload: String, cfg: snapshot::Config) -> Result<(), ApiError> {
        if self.busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            let current = self.status.borrow().workload.clone();
            return Err(ApiError::Busy(format!(
                "a run is in progress ({current:?}): one run at a time; wait for it to finish, then start yours"
            )));
        }
        let slot = Slot(self.clone());
        let report = Report::new(false, self.root.clone()).map_err(|e| ApiError::Internal(format!("{e:#}")))?;
        self.status.send_replace(Status { state: "running", workload: name.to_string(), ..Status::default() });
        let name = name.to_string();
        std::thread::Builder::new()
            .name("ndpdb-web-run".into())
            .spawn(move || {
                let runs = slot.0.clone();
                let status = match runs.run(&name, &workload, &cfg, &report) {
                    Ok(id) => Status { state: "done", workload: name, run: Some(id), ..Status::default() },
                    Err(e) => {
                        Status { state: "failed", workload: name, error: Some(format!("{e:#}")), ..Status::default() }
                    }
                };
                runs.status.send_replace(status);
                drop(slot);
            })
            .map_err(|e| ApiError::Internal(format!("starting the run's thread: {e}")))?;
        Ok(())
    }

    /// The run itself, on this thread; returns the run's id.
    fn run(&self, name: &str, workload: &str, cfg: &snapshot::Config, report: &Report) -> anyhow::Result<String> {
        let scratch = tempfile::Builder::new().prefix("ndpdb-web-").tempdir()?;
        let file = scratch.path().join("workload.toml");
        std::fs::write(&file, workload)?;
        let watch = |p: &Progress<'_>| {
            self.status.send_replace(Status {
                state: "running",
                workload: name.to_string(),
                phase: p.phase.to_string(),
                done: p.done,
                total: p.total,
                ..Status::default()
            });
        };
        let dir = cfg.run_and_report_watched(&Points::File(file), report, &watch)?;
        std::fs::write(dir.join("workload.toml"), workload)?;
        Ok(dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string())
    }
}

/// A run as the list shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub id: String,
    pub name: String,
    pub points: usize,
    pub files: Vec<String>,
}

/// A run's results: its rows (the JSON lines), table, workload and files.
#[derive(Debug, Clone, Serialize)]
pub struct RunDetail {
    #[serde(flatten)]
    pub summary: RunSummary,
    pub rows: Vec<serde_json::Value>,
    pub table: String,
    pub workload: String,
}

/// Whether `s` is a plain file or directory name the server will serve.
pub fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 200
        && !s.starts_with('.')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

impl Runs {
    /// Every run in the results directory, newest first.
    pub fn list(&self) -> Vec<RunSummary> {
        let Ok(entries) = std::fs::read_dir(&self.root) else { return Vec::new() };
        let mut ids: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.starts_with("snapshot-") && plain_name(n))
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.into_iter().filter_map(|id| self.detail(&id).ok().map(|d| d.summary)).collect()
    }

    /// One run, by id.
    pub fn detail(&self, id: &str) -> Result<RunDetail, ApiError> {
        let rows_text = std::fs::read_to_string(self.file(id, "results.jsonl")?)
            .map_err(|e| ApiError::NotFound(format!("run {id}: no results.jsonl ({e})")))?;
        let mut rows: Vec<serde_json::Value> = rows_text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let read = |name: &str| self.file(id, name).ok().and_then(|p| std::fs::read_to_string(p).ok());
        let workload = read("workload.toml").unwrap_or_default();
        // Each row's marker as its step in the file: the x of Fig. 8's chart.
        if let Ok(w) = Workload::parse(&workload, id) {
            for r in &mut rows {
                let step = r["snapshot_position"].as_str().and_then(|m| w.marker_step(m));
                r["marker_step"] = step.into();
            }
        }
        let name = toml::from_str::<toml::Table>(&workload)
            .ok()
            .and_then(|t| t.get("name").and_then(|n| n.as_str()).map(str::to_string))
            .or_else(|| rows.first().and_then(|r| r["scenario"].as_str()).map(str::to_string))
            .unwrap_or_else(|| id.to_string());
        let mut files: Vec<String> = std::fs::read_dir(self.root.join(id))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str().map(str::to_string)).filter(|n| plain_name(n)).collect()
            })
            .unwrap_or_default();
        files.sort();
        let summary = RunSummary { id: id.to_string(), name, points: rows.len(), files };
        Ok(RunDetail { summary, rows, table: read("table.txt").unwrap_or_default(), workload })
    }

    /// The path of file `name` of run `id`, only if it lies inside the
    /// results directory (no `..`, no absolute path, no symlink out).
    pub fn file(&self, id: &str, name: &str) -> Result<PathBuf, ApiError> {
        let refuse = || ApiError::NotFound(format!("no file {name:?} in run {id:?}"));
        if !plain_name(id) || !plain_name(name) {
            return Err(refuse());
        }
        let path = self.root.join(id).join(name);
        let root = std::fs::canonicalize(&self.root).map_err(|_| refuse())?;
        let real = std::fs::canonicalize(&path).map_err(|_| refuse())?;
        if !real.starts_with(&root) || !real.is_file() {
            return Err(refuse());
        }
        Ok(real)
    }
}

/// The content type of a file the server sends.
pub fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or("") {
        "json" => "application/json",
        "jsonl" => "application/x-ndjson",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        _ => "text/plain; charset=utf-8",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_inside_the_results_are_served() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("results");
        std::fs::create_dir_all(root.join("snapshot-1")).unwrap();
        std::fs::write(root.join("snapshot-1/results.jsonl"), "{\"x\":1}\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("snapshot-1/link.txt")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("snapshot-out")).unwrap();
        let runs = Runs::new(root.clone());
        assert!(runs.file("snapshot-1", "results.jsonl").is_ok());
        for (id, name) in [
            ("snapshot-1", "../../secret.txt"),
            ("..", "secret.txt"),
            ("snapshot-1", "link.txt"),
            ("snapshot-out", "secret.txt"),
            ("/etc", "passwd"),
            ("snapshot-1", ".hidden"),
            ("snapshot-1", "nope.json"),
        ] {
            assert!(runs.file(id, name).is_err(), "{id}/{name} was served");
        }
        let list = runs.list();
        assert_eq!(list.len(), 1, "{list:?}");
        assert_eq!((list[0].id.as_str(), list[0].points), ("snapshot-1", 1));
    }

    /// While a run holds the slot, a second is refused with a message that
    /// says what to do, and nothing starts.
    #[test]
    fn one_run_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let runs = Runs::new(dir.path().to_path_buf());
        runs.busy.store(true, Ordering::Release);
        runs.status.send_replace(Status { state: "running", workload: "first".into(), ..Status::default() });
        let cfg = snapshot::Config {
            profile: ndpdb_device::Profile::load("u280-nvm").unwrap(),
            clock: ndpdb_device::ClockKind::Virtual,
            pes: vec![2],
            workers: vec![1],
            postgres_workers: vec![],
            seed: 1,
            repeat: 1,
            freshness: vec![ndpdb_storage::Freshness::Ship],
        };
        let e = runs.start("second", String::new(), cfg).unwrap_err();
        assert!(matches!(&e, ApiError::Busy(m) if m.contains("\"first\"") && m.contains("wait")), "{e}");
        assert_eq!(runs.subscribe().borrow().workload, "first");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
