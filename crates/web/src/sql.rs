//! The SQL page: a statement on the database of `--db`, its result a page
//! at a time, and for a query its plan as a tree: each operator marked
//! host or device, estimated and actual rows, time, and for NDP scans the
//! link bytes the device saves (estimated) and the device's counters.
//!
//! Each request is a session of its own (`SET ndp = on|off|auto`, then the
//! statement); a query then runs once more as `EXPLAIN ANALYZE`, whose
//! plan the session keeps as a tree (`Session::last_explain`): the page
//! draws that, not EXPLAIN's text. Paging runs the statement again for
//! each page (the server keeps nothing between requests).

use std::sync::Arc;

use ndpdb_sql::exec::ScanCounters;
use ndpdb_sql::plan::explain::ExplainNode;
use ndpdb_sql::session::{Engine, ExplainTree};
use ndpdb_sql::types::format::pg_text;
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, FieldError};

/// The most rows a page holds.
pub const PAGE_ROWS_MAX: usize = 1000;
/// The longest statement the page may send, bytes.
const SQL_BYTES_MAX: usize = 100_000;

#[derive(Debug, Clone, Deserialize)]
pub struct SqlRequest {
    pub sql: String,
    /// `on`, `off` or `auto` (the `ndp` setting).
    #[serde(default = "auto")]
    pub ndp: String,
    /// 0-based page.
    #[serde(default)]
    pub page: usize,
    #[serde(default = "fifty")]
    pub page_size: usize,
}

fn auto() -> String {
    "auto".into()
}

fn fifty() -> usize {
    50
}

#[derive(Debug, Clone, Serialize)]
pub struct SqlResponse {
    pub tag: String,
    pub columns: Vec<String>,
    /// The page's rows, each value as PostgreSQL prints it (null: NULL).
    pub rows: Vec<Vec<Option<String>>>,
    pub total_rows: usize,
    pub page: usize,
    pub page_size: usize,
    pub plan: Option<PlanJson>,
    /// Why there is no plan (not a query, or EXPLAIN refused it).
    pub plan_note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanJson {
    pub analyzed: bool,
    pub profile: String,
    pub clock: &'static str,
    pub planning_ms: f64,
    pub execution_ms: Option<f64>,
    pub device: Option<Counters>,
    pub root: NodeJson,
}

#[derive(Debug, Clone, Serialize)]
pub struct Counters {
    pub link_bytes_to_host: u64,
    pub link_bytes_to_device: u64,
    pub medium_bytes_read: u64,
    pub pe_busy_ms: f64,
    pub modelled_ms: f64,
    pub rows_examined: u64,
}

impl From<ScanCounters> for Counters {
    fn from(c: ScanCounters) -> Counters {
        Counters {
            link_bytes_to_host: c.link_bytes_to_host,
            link_bytes_to_device: c.link_bytes_to_device,
            medium_bytes_read: c.medium_bytes_read,
            pe_busy_ms: c.pe_busy_ps as f64 / 1e9,
            modelled_ms: c.modelled_ps as f64 / 1e9,
            rows_examined: c.rows_examined,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeJson {
    pub title: String,
    /// `device` or `host`.
    pub runs_on: &'static str,
    pub est_rows: f64,
    pub cost_host_s: f64,
    pub cost_device_s: f64,
    pub details: Vec<String>,
    pub link_bytes_saved_est: Option<f64>,
    pub actual_rows: Option<u64>,
    pub actual_time_ms: Option<f64>,
    pub counters: Option<Counters>,
    pub children: Vec<NodeJson>,
}

impl From<&ExplainNode> for NodeJson {
    fn from(n: &ExplainNode) -> NodeJson {
        NodeJson {
            title: n.title.clone(),
            runs_on: if n.device { "device" } else { "host" },
            est_rows: n.est_rows,
            cost_host_s: n.cost_host_s,
            cost_device_s: n.cost_device_s,
            details: n.details.clone(),
            link_bytes_saved_est: n.link_bytes_saved_est,
            actual_rows: n.actual.map(|a| a.rows),
            actual_time_ms: n.actual.map(|a| a.time_s * 1e3),
            counters: n.actual.and_then(|a| a.scan).map(Counters::from),
            children: n.children.iter().map(NodeJson::from).collect(),
        }
    }
}

impl From<&ExplainTree> for PlanJson {
    fn from(t: &ExplainTree) -> PlanJson {
        PlanJson {
            analyzed: t.analyzed,
            profile: t.profile.clone(),
            clock: t.clock,
            planning_ms: t.planning_ms,
            execution_ms: t.execution_ms,
            device: t.device.map(Counters::from),
            root: NodeJson::from(&t.root),
        }
    }
}

impl SqlRequest {
    fn check(&self) -> Result<(), ApiError> {
        let mut errors = Vec::new();
        if !["on", "off", "auto"].contains(&self.ndp.as_str()) {
            errors.push(FieldError::new("ndp", format!("ndp = {:?}: choose on, off or auto", self.ndp)));
        }
        if self.sql.trim().is_empty() {
            errors.push(FieldError::new("sql", "type a statement"));
        } else if self.sql.len() > SQL_BYTES_MAX {
            errors.push(FieldError::new("sql", format!("at most {SQL_BYTES_MAX} bytes")));
        }
        if self.page_size == 0 || self.page_size > PAGE_ROWS_MAX {
            errors.push(FieldError::new("page_size", format!("rows a page: 1..={PAGE_ROWS_MAX}")));
        }
        if errors.is_empty() { Ok(()) } else { Err(ApiError::Fields(errors)) }
    }
}

/// Runs the request on `engine` (blocking: call it off the async runtime).
pub fn run(engine: &Arc<Engine>, req: &SqlRequest) -> Result<SqlResponse, ApiError> {
    req.check()?;
    let mut session = engine.session();
    let sql_error = |e: ndpdb_sql::SqlError| ApiError::Fields(vec![FieldError::new("sql", e.to_string())]);
    if let Some(r) = session.run(&format!("SET ndp = {}", req.ndp)).pop() {
        r.map_err(sql_error)?;
    }
    let mut last = None;
    for r in session.run(&req.sql) {
        last = Some(r.map_err(sql_error)?);
    }
    let result = last.ok_or_else(|| FieldError::new("sql", "no statement"))?;
    let total_rows = result.rows.len();
    let start = req.page.saturating_mul(req.page_size).min(total_rows);
    let end = start.saturating_add(req.page_size).min(total_rows);
    let rows = result.rows[start..end]
        .iter()
        .map(|r| r.iter().map(|v| if v.is_null() { None } else { Some(pg_text(v)) }).collect())
        .collect();
    let single = req.sql.trim().trim_end_matches(';');
    let (plan, plan_note) = if !result.tag.starts_with("SELECT") {
        (None, Some(format!("{}: only a query has a plan to show", result.tag)))
    } else if single.contains(';') {
        (None, Some("several statements: the plan is shown for one query alone".to_string()))
    } else {
        match session.run(&format!("EXPLAIN ANALYZE {single}")).pop() {
            Some(Ok(_)) => (session.last_explain().map(PlanJson::from), None),
            Some(Err(e)) => (None, Some(format!("EXPLAIN ANALYZE: {e}"))),
            None => (None, None),
        }
    };
    Ok(SqlResponse {
        tag: result.tag,
        columns: result.columns.iter().map(|c| c.name.clone()).collect(),
        rows,
        total_rows,
        page: req.page,
        page_size: req.page_size,
        plan,
        plan_note,
    })
}
