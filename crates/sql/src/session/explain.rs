//! EXPLAIN [ANALYZE]: the optimized plan as text, one row per line, each
//! operator marked host or device; with ANALYZE the statement runs and the
//! lines carry actual rows, time and the device's counters, followed by the
//! profile, the clock and the modelled time. Both end with PostgreSQL's
//! "Planning Time" (the optimizer's wall time, `Session::last_planning_time`).
//! The same content as a tree ([`ExplainTree`], `Session::last_explain`)
//! is kept for callers that draw the plan themselves (`ndpdb web`).

use std::time::{Duration, Instant};

use super::{Session, StatementResult};
use crate::error::{Result, SqlError};
use crate::exec::OperatorMetrics;
use crate::exec::ScanCounters;
use crate::plan::explain::{ExplainNode, ExplainOptions, NodeActuals, explain, explain_tree};
use crate::plan::{Field, Plan, Statement};
use crate::types::{DataType, Value};

/// The last EXPLAIN's plan as a tree, with its summary lines' numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainTree {
    pub root: ExplainNode,
    /// EXPLAIN ANALYZE: the statement ran, nodes carry actuals.
    pub analyzed: bool,
    pub profile: String,
    pub clock: &'static str,
    /// The device counters of every scan, summed (ANALYZE).
    pub device: Option<ScanCounters>,
    pub planning_ms: f64,
    /// ANALYZE: the statement's wall time.
    pub execution_ms: Option<f64>,
}

impl Session {
    pub(super) fn explain(&mut self, analyze: bool, stmt: Statement) -> Result<StatementResult> {
        let plan = match stmt {
            Statement::Query(p) => p,
            Statement::Insert { source, .. } | Statement::Update { source, .. } | Statement::Delete { source, .. }
                if !analyze =>
            {
                source
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "EXPLAIN{} of {} is not supported yet",
                    if analyze { " ANALYZE" } else { "" },
                    statement_kind(&other)
                )));
            }
        };
        self.last_explain = None;
        let lines = if analyze { self.explain_analyze(plan)? } else { self.explain_plan(plan)? };
        let rows = lines.into_iter().map(|l| vec![Value::Text(l)]).collect();
        let column = Field { name: "QUERY PLAN".into(), qualifier: None, ty: DataType::Text, nullable: false };
        Ok(StatementResult { tag: "EXPLAIN".into(), columns: vec![column], rows, notices: vec![] })
    }

    fn explain_plan(&mut self, plan: Plan) -> Result<Vec<String>> {
        let catalog = self.catalog();
        let rows = self.table_rows()?;
        let mut ctx = self.optimizer_context(&*catalog);
        ctx.table_rows = Some(&rows);
        let t0 = Instant::now();
        let plan = crate::optimizer::optimize(plan, &ctx)?;
        let planning = t0.elapsed();
        self.planning_time = Some(planning);
        let opts = ExplainOptions { costs: true, analyze: None, ctx: Some(&ctx) };
        let mut lines = explain(&plan, &opts);
        let tree = self.explain_tree(explain_tree(&plan, &opts), None, planning, None);
        self.last_explain = Some(tree);
        lines.push(planning_line(planning));
        Ok(lines)
    }

    fn explain_analyze(&mut self, plan: Plan) -> Result<Vec<String>> {
        let t0 = Instant::now();
        let (plan, out) = self.execute_plan(plan)?;
        let wall = t0.elapsed();
        let mut actuals = Vec::new();
        preorder(&out.metrics, &mut actuals);
        let catalog = self.catalog();
        let rows = self.table_rows()?;
        let mut ctx = self.optimizer_context(&*catalog);
        ctx.table_rows = Some(&rows);
        let opts = ExplainOptions { costs: true, analyze: Some(&actuals), ctx: Some(&ctx) };
        let mut lines = explain(&plan, &opts);
        let device = actuals.iter().filter_map(|a| a.scan).fold(ScanCounters::default(), |mut t, c| {
            t.add(&c);
            t
        });
        lines.push(format!(
            "Device: profile {}, clock {}, modelled {:.3} ms, link {} B to host, {} B to device, medium {} B read, PE busy {:.3} ms",
            self.engine().profile_name(),
            self.engine().clock_name(),
            device.modelled_ps as f64 / 1e9,
            device.link_bytes_to_host,
            device.link_bytes_to_device,
            device.medium_bytes_read,
            device.pe_busy_ps as f64 / 1e9,
        ));
        if let Some(planning) = self.planning_time {
            lines.push(planning_line(planning));
        }
        lines.push(format!("Execution Time: {:.3} ms", wall.as_secs_f64() * 1e3));
        let planning = self.planning_time.unwrap_or_default();
        let tree = self.explain_tree(explain_tree(&plan, &opts), Some(device), planning, Some(wall));
        self.last_explain = Some(tree);
        Ok(lines)
    }

    fn explain_tree(
        &self,
        root: ExplainNode,
        device: Option<ScanCounters>,
        planning: Duration,
        wall: Option<Duration>,
    ) -> ExplainTree {
        ExplainTree {
            root,
            analyzed: wall.is_some(),
            profile: self.engine().profile_name().to_string(),
            clock: self.engine().clock_name(),
            device,
            planning_ms: planning.as_secs_f64() * 1e3,
            execution_ms: wall.map(|w| w.as_secs_f64() * 1e3),
        }
    }
}

/// PostgreSQL's summary line: the optimizer's wall time.
fn planning_line(planning: Duration) -> String {
    format!("Planning Time: {:.3} ms", planning.as_secs_f64() * 1e3)
}

/// The executor's metrics tree as the per-node actuals EXPLAIN takes, in
/// pre-order (the plan's order).
fn preorder(m: &OperatorMetrics, out: &mut Vec<NodeActuals>) {
    out.push(NodeActuals { rows: m.rows_out, time_s: m.elapsed.as_secs_f64(), loops: 1, scan: m.scan, spill: m.spill });
    for c in &m.children {
        preorder(c, out);
    }
}

fn statement_kind(s: &Statement) -> &'static str {
    match s {
        Statement::Insert { .. } => "INSERT",
        Statement::Update { .. } => "UPDATE",
        Statement::Delete { .. } => "DELETE",
        Statement::Truncate { .. } => "TRUNCATE",
        Statement::AddPrimaryKey { .. } => "ALTER TABLE",
        Statement::CreateTable { .. } | Statement::CreateIndex { .. } | Statement::CreateView { .. } => "CREATE",
        Statement::DropTable { .. } | Statement::DropIndex { .. } | Statement::DropView { .. } => "DROP",
        _ => "this statement",
    }
}
