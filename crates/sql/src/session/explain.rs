//! EXPLAIN [ANALYZE]: the optimized plan as text, one row per line, each
//! operator marked host or device; with ANALYZE the statement runs and the
//! lines carry actual rows, time and the device's counters, followed by the
//! profile, the clock and the modelled time. Both end with PostgreSQL's
//! "Planning Time" (the optimizer's wall time, `Session::last_planning_time`).

use std::time::{Duration, Instant};

use super::{Session, StatementResult};
use crate::error::{Result, SqlError};
use crate::exec::OperatorMetrics;
use crate::exec::ScanCounters;
use crate::plan::explain::{ExplainOptions, NodeActuals, explain};
use crate::plan::{Field, Plan, Statement};
use crate::types::{DataType, Value};

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
        let mut lines = explain(&plan, &ExplainOptions { costs: true, analyze: None, ctx: Some(&ctx) });
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
        let mut lines = explain(&plan, &ExplainOptions { costs: true, analyze: Some(&actuals), ctx: Some(&ctx) });
        let device = actuals.iter().filter_map(|a| a.scan).fold(ScanCounters::default(), |t, c| ScanCounters {
            link_bytes_to_host: t.link_bytes_to_host + c.link_bytes_to_host,
            link_bytes_to_device: t.link_bytes_to_device + c.link_bytes_to_device,
            medium_bytes_read: t.medium_bytes_read + c.medium_bytes_read,
            pe_busy_ps: t.pe_busy_ps + c.pe_busy_ps,
            modelled_ps: t.modelled_ps + c.modelled_ps,
            rows_examined: t.rows_examined + c.rows_examined,
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
        Ok(lines)
    }
}

/// PostgreSQL's summary line: the optimizer's wall time.
fn planning_line(planning: Duration) -> String {
    format!("Planning Time: {:.3} ms", planning.as_secs_f64() * 1e3)
}

/// The executor's metrics tree as the per-node actuals EXPLAIN takes, in
/// pre-order (the plan's order).
fn preorder(m: &OperatorMetrics, out: &mut Vec<NodeActuals>) {
    out.push(NodeActuals { rows: m.rows_out, time_s: m.elapsed.as_secs_f64(), loops: 1, scan: m.scan });
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
