//! The HTTP routes: each handler checks its input (`form.rs`, `sql.rs`),
//! does one thing, and answers JSON (or a file, or the event stream).

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use ndpdb_bench::compose::Workload;
use ndpdb_bench::snapshot;
use ndpdb_device::profile::{BUILTIN, DEFAULT_PROFILE};
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::assets;
use crate::error::{ApiError, FieldError};
use crate::form::{ComposerForm, EnginesForm};
use crate::runs::{Status, content_type};

type S = State<Arc<AppState>>;

/// The page's router over `state`.
pub fn router(state: Arc<AppState>) -> axum::Router {
    axum::Router::new()
        .route("/", get(|| async { assets::page("index.html") }))
        .route("/assets/{name}", get(|Path(name): Path<String>| async move { assets::page(&name) }))
        .route("/api/meta", get(meta))
        .route("/api/composer/check", post(check))
        .route("/api/composer/parse", post(parse_file))
        .route("/api/scenario/{n}", get(scenario))
        .route("/api/runs", post(start_run).get(list_runs))
        .route("/api/runs/{id}", get(run_detail))
        .route("/api/status", get(status))
        .route("/api/events", get(events))
        .route("/files/{id}/{name}", get(file))
        .route("/api/sql", post(sql))
        .with_state(state)
}

async fn meta(State(st): S) -> Json<serde_json::Value> {
    Json(json!({
        "profiles": BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "default_profile": DEFAULT_PROFILE,
        "db": st.db_name,
        "results": st.runs.root().display().to_string(),
    }))
}

#[derive(Deserialize)]
struct CheckRequest {
    composer: ComposerForm,
    engines: Option<EnginesForm>,
}

/// Checks a form (and engines, when given); answers the composer file.
async fn check(Json(req): Json<CheckRequest>) -> Result<Json<serde_json::Value>, ApiError> {
    let mut errors = Vec::new();
    let toml = match req.composer.parse() {
        Ok((_, text)) => Some(text),
        Err(ApiError::Fields(v)) => {
            errors.extend(v);
            None
        }
        Err(e) => return Err(e),
    };
    if let Some(engines) = &req.engines {
        match engines.config() {
            Ok(_) => {}
            Err(ApiError::Fields(v)) => errors.extend(v),
            Err(e) => return Err(e),
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::Fields(errors));
    }
    Ok(Json(json!({ "toml": toml })))
}

#[derive(Deserialize)]
struct ParseRequest {
    text: String,
    #[serde(default)]
    filename: String,
}

/// The most bytes an uploaded composer file may have.
const FILE_BYTES_MAX: usize = 1 << 20;

/// An uploaded composer file as a form; its errors belong to the `file` field.
async fn parse_file(Json(req): Json<ParseRequest>) -> Result<Json<ComposerForm>, ApiError> {
    if req.text.len() > FILE_BYTES_MAX {
        return Err(FieldError::new("file", format!("the file is larger than {FILE_BYTES_MAX} bytes")).into());
    }
    let source = if req.filename.is_empty() { "the file" } else { req.filename.as_str() };
    let w = Workload::parse(&req.text, source).map_err(|e| FieldError::new("file", e.to_string()))?;
    Ok(Json(ComposerForm::of(&w)))
}

#[derive(Deserialize)]
struct ScenarioQuery {
    rows: Option<u64>,
    rounds: Option<u32>,
    op: Option<String>,
}

/// The paper's scenario `n` as one composer file: its last (largest) point.
async fn scenario(Path(n): Path<u32>, Query(q): Query<ScenarioQuery>) -> Result<Json<ComposerForm>, ApiError> {
    let op = ndpdb_format::text::parse_aggregate(q.op.as_deref().unwrap_or("sum"))
        .map_err(|e| FieldError::new("query.op", e.to_string()))?;
    let points = snapshot::scenario(n, q.rows.unwrap_or(1000), q.rounds.unwrap_or(2), op, &[])
        .map_err(|e| FieldError::new("scenario", e.to_string()))?;
    let (_, w) = points.last().ok_or_else(|| FieldError::new("scenario", "the scenario has no point"))?;
    Ok(Json(ComposerForm::of(w)))
}

#[derive(Deserialize)]
struct RunRequest {
    composer: ComposerForm,
    engines: EnginesForm,
}

async fn start_run(State(st): S, Json(req): Json<RunRequest>) -> Result<Response, ApiError> {
    let parsed = req.composer.parse();
    let cfg = req.engines.config();
    let mut errors = Vec::new();
    for e in [parsed.as_ref().err(), cfg.as_ref().err()].into_iter().flatten() {
        match e {
            ApiError::Fields(v) => errors.extend(v.iter().cloned()),
            other => return Err(ApiError::Internal(other.to_string())),
        }
    }
    let (Ok((w, text)), Ok(cfg), true) = (parsed, cfg, errors.is_empty()) else {
        return Err(ApiError::Fields(errors));
    };
    st.runs.start(&w.name, text, cfg)?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "started": w.name }))).into_response())
}

async fn list_runs(State(st): S) -> Json<serde_json::Value> {
    let runs = st.runs.clone();
    let list = tokio::task::spawn_blocking(move || runs.list()).await.unwrap_or_default();
    Json(json!({ "runs": list }))
}

async fn run_detail(State(st): S, Path(id): Path<String>) -> Result<Response, ApiError> {
    let runs = st.runs.clone();
    let d = tokio::task::spawn_blocking(move || runs.detail(&id))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))??;
    Ok(Json(d).into_response())
}

async fn status(State(st): S) -> Json<Status> {
    Json(st.runs.subscribe().borrow().clone())
}

/// The run's status now, then at every change, as server-sent events.
async fn events(State(st): S) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = st.runs.subscribe();
    let stream = futures::stream::unfold((rx, true), |(mut rx, first)| async move {
        if !first && rx.changed().await.is_err() {
            return None;
        }
        let s = rx.borrow_and_update().clone();
        let event = Event::default().event("status").json_data(&s).unwrap_or_default();
        Some((Ok(event), (rx, false)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[derive(Deserialize)]
struct FileQuery {
    download: Option<u8>,
}

async fn file(
    State(st): S,
    Path((id, name)): Path<(String, String)>,
    Query(q): Query<FileQuery>,
) -> Result<Response, ApiError> {
    let path = st.runs.file(&id, &name)?;
    let bytes = tokio::task::spawn_blocking(move || std::fs::read(path))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .map_err(|e| ApiError::NotFound(format!("{name}: {e}")))?;
    let disposition =
        if q.download == Some(1) { format!("attachment; filename=\"{id}-{name}\"") } else { "inline".to_string() };
    Ok(([(header::CONTENT_TYPE, content_type(&name).to_string()), (header::CONTENT_DISPOSITION, disposition)], bytes)
        .into_response())
}

async fn sql(State(st): S, Json(req): Json<crate::sql::SqlRequest>) -> Result<Json<crate::sql::SqlResponse>, ApiError> {
    let engine = st
        .engine
        .clone()
        .ok_or_else(|| FieldError::new("sql", "no database: start `ndpdb web --db DIR` to use the SQL page"))?;
    tokio::task::spawn_blocking(move || crate::sql::run(&engine, &req))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .map(Json)
}
