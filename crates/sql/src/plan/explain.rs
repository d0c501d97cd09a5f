//! EXPLAIN: a plan as a PostgreSQL-like indented tree, each operator marked
//! `[host]` or `[device]`, with its estimated rows and host and device
//! costs; scans show their pushed-down filter, the columns they read and,
//! for NDP scans, the link bytes the device saves. The ANALYZE form adds,
//! per node, what the executor measured ([`NodeActuals`]).
//!
//! ```text
//! Hash Inner Join [host]  (rows=600 cost: host=1.2e-3s device=4.0e-4s)
//!   Hash Cond: (o.o_custkey = c.c_custkey)
//!   ->  NDP Scan on orders o [device]  (rows=1500 cost: ...)
//!         Filter: (o.o_orderdate < 1995-03-15)
//!         Columns: o_orderkey, o_custkey
//!         Link bytes saved (est.): 187000
//!   ->  Seq Scan on customer c [host]  (rows=150 cost: ...)
//! ```
//!
//! Nodes are numbered in pre-order (a node, then its children left to
//! right); [`ExplainOptions::analyze`] holds the actuals in that order.

use super::{Access, Expr, HashBuild, JoinAlgorithm, JoinKind, Node, Plan, SetOpKind, SubqueryKind, UnaryOp};
use crate::exec::ScanCounters;
use crate::optimizer::OptimizerContext;
use crate::types::Value;

/// What the executor measured for one node (the executor's metrics convert
/// into this).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NodeActuals {
    pub rows: u64,
    /// Wall time inside the node and its children, seconds.
    pub time_s: f64,
    /// Times the node was started (per outer row for subqueries).
    pub loops: u64,
    /// Device and link counters of a scan.
    pub scan: Option<ScanCounters>,
    /// What a sort, hash join or aggregation spilled.
    pub spill: Option<crate::exec::SpillStats>,
}

/// How to print.
#[derive(Clone, Copy, Default)]
pub struct ExplainOptions<'a> {
    /// Print estimated rows and costs.
    pub costs: bool,
    /// EXPLAIN ANALYZE: the actuals of every node, in pre-order.
    pub analyze: Option<&'a [NodeActuals]>,
    /// The optimizer's context, for the estimated link bytes NDP saves.
    pub ctx: Option<&'a OptimizerContext<'a>>,
}

/// One operator as EXPLAIN shows it, for callers that draw the tree
/// themselves (`ndpdb web`): the text form's head line taken apart, its
/// detail lines, and the node's actuals under ANALYZE.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainNode {
    /// The operator without its mark (`Hash Inner Join`, `NDP Scan on t`).
    pub title: String,
    /// Marked `[device]`: the operator runs on the device's PEs.
    pub device: bool,
    pub est_rows: f64,
    pub cost_host_s: f64,
    pub cost_device_s: f64,
    /// The text form's lines under the head (`Filter: ...`, `Columns: ...`).
    pub details: Vec<String>,
    /// An NDP scan's estimate of the link bytes the device saves.
    pub link_bytes_saved_est: Option<f64>,
    pub actual: Option<NodeActuals>,
    pub children: Vec<ExplainNode>,
}

/// The plan as a tree of [`ExplainNode`]s, numbered as [`explain`] numbers
/// them (pre-order) for the actuals.
pub fn explain_tree(plan: &Plan, opts: &ExplainOptions<'_>) -> ExplainNode {
    fn node(plan: &Plan, opts: &ExplainOptions<'_>, n: &mut usize) -> ExplainNode {
        let id = *n;
        *n += 1;
        let full = title(plan);
        let device = full.ends_with(" [device]");
        let title = full.trim_end_matches(" [device]").trim_end_matches(" [host]").to_string();
        let details = details(plan, opts);
        let link_bytes_saved_est = details
            .iter()
            .find_map(|l| l.strip_prefix("Link bytes saved (est.): "))
            .and_then(|v| v.parse::<f64>().ok());
        let children = plan.children().iter().map(|c| node(c, opts, n)).collect();
        ExplainNode {
            title,
            device,
            est_rows: plan.est.rows.max(0.0),
            cost_host_s: plan.est.cost.host,
            cost_device_s: plan.est.cost.device,
            details,
            link_bytes_saved_est,
            actual: opts.analyze.and_then(|all| all.get(id)).copied(),
            children,
        }
    }
    node(plan, opts, &mut 0)
}

/// The plan as lines of text.
pub fn explain(plan: &Plan, opts: &ExplainOptions<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut counter = 0;
    write_node(plan, opts, 0, true, &mut counter, &mut out);
    out
}

fn write_node(plan: &Plan, opts: &ExplainOptions<'_>, depth: usize, root: bool, n: &mut usize, out: &mut Vec<String>) {
    let id = *n;
    *n += 1;
    // PostgreSQL's layout: a child's arrow 6 columns right of its parent's.
    let pad = if root { String::new() } else { format!("{}->  ", " ".repeat(6 * depth - 4)) };
    let detail_pad = " ".repeat(if root { 2 } else { 6 * depth + 2 });
    let mut head = format!("{pad}{}", title(plan));
    if opts.costs {
        let e = &plan.est;
        head.push_str(&format!(
            "  (rows={:.0} cost: host={:.3e}s device={:.3e}s)",
            e.rows.max(0.0),
            e.cost.host,
            e.cost.device
        ));
    }
    if let Some(a) = opts.analyze.and_then(|all| all.get(id)) {
        head.push_str(&format!(" (actual rows={} time={:.3}ms loops={})", a.rows, a.time_s * 1e3, a.loops));
    }
    out.push(head);
    for line in details(plan, opts) {
        out.push(format!("{detail_pad}{line}"));
    }
    if let Some(c) = opts.analyze.and_then(|all| all.get(id)).and_then(|a| a.scan) {
        out.push(format!(
            "{detail_pad}Device: link bytes to host={} to device={}, medium bytes={}, PE busy={:.3}ms, modelled={:.3}ms, rows examined={}",
            c.link_bytes_to_host,
            c.link_bytes_to_device,
            c.medium_bytes_read,
            c.pe_busy_ps as f64 / 1e9,
            c.modelled_ps as f64 / 1e9,
            c.rows_examined
        ));
        if let Some(n) = c.runtime_filtered {
            out.push(format!(
                "{detail_pad}Runtime Filter: {n} rows without a partner among the hash join's keys removed"
            ));
        }
        if let Some(z) = c.zone_blocks {
            out.push(format!(
                "{detail_pad}Zone Map: {} of {} blocks of {} VIDs skipped ({} VIDs), their pages not read",
                z.skipped,
                z.blocks,
                ndpdb_storage::ZONE_VIDS,
                z.skipped_vids
            ));
        }
    }
    if let Some(s) = opts.analyze.and_then(|all| all.get(id)).and_then(|a| a.spill) {
        out.push(format!("{detail_pad}{}", spill_line(plan, &s)));
    }
    for child in plan.children() {
        write_node(child, opts, depth + 1, false, n, out);
    }
}

/// PostgreSQL's words for what went to disk ("Sort Method: external
/// merge  Disk: ...kB"; a hash node's batches), with ndpdb's exact counts.
fn spill_line(plan: &Plan, s: &crate::exec::SpillStats) -> String {
    let disk = format!("Disk: {}kB ({} files, {} rows written)", s.bytes.div_ceil(1024), s.files, s.rows);
    match plan.node {
        Node::Sort { .. } => format!("Sort Method: external merge  {disk}  Merge Passes: {}", s.passes),
        _ => format!("Spilled: {disk}  Partitioning Levels: {}", s.passes),
    }
}

fn kind_name(kind: JoinKind) -> &'static str {
    match kind {
        JoinKind::Inner => "Inner",
        JoinKind::Left => "Left",
        JoinKind::Right => "Right",
        JoinKind::Full => "Full",
        JoinKind::Semi => "Semi",
        JoinKind::Anti => "Anti",
        JoinKind::Single => "Single",
        JoinKind::Mark => "Mark",
    }
}

fn title(plan: &Plan) -> String {
    match &plan.node {
        Node::Scan { table, access, .. } => match access {
            Access::Host => format!("Seq Scan on {} [host]", table.name),
            Access::Ndp => format!("NDP Scan on {} [device]", table.name),
            Access::Index { index, .. } => format!("Index Scan using {} on {} [host]", index.name, table.name),
            Access::Unchosen => format!("Scan on {} [host]", table.name),
        },
        Node::Values { rows } => format!("Values ({} rows) [host]", rows.len()),
        Node::Series { .. } => "Function Scan on generate_series [host]".into(),
        Node::Filter { .. } => "Filter [host]".into(),
        Node::Project { .. } => "Project [host]".into(),
        Node::Join { kind, algorithm, .. } => {
            let alg = match algorithm {
                JoinAlgorithm::Hash { .. } => "Hash ",
                JoinAlgorithm::NestedLoop => "Nested Loop ",
                JoinAlgorithm::IndexNestedLoop { .. } => "Index Nested Loop ",
                JoinAlgorithm::Unchosen => "",
            };
            format!("{alg}{} Join [host]", kind_name(*kind))
        }
        Node::Aggregate { group_by, .. } => {
            if group_by.is_empty() {
                "Aggregate [host]".into()
            } else {
                "HashAggregate [host]".into()
            }
        }
        Node::Sort { .. } => "Sort [host]".into(),
        Node::Limit { .. } => "Limit [host]".into(),
        Node::Distinct { .. } => "Distinct [host]".into(),
        Node::SetOp { op, all, .. } => {
            let name = match op {
                SetOpKind::Union => "Union",
                SetOpKind::Intersect => "Intersect",
                SetOpKind::Except => "Except",
            };
            format!("{name}{} [host]", if *all { " All" } else { "" })
        }
    }
}

/// Column names of a node's input (a join's: left then right).
fn input_names(plan: &Plan) -> Vec<String> {
    let name = |f: &super::Field| match &f.qualifier {
        Some(q) => format!("{q}.{}", f.name),
        None => f.name.clone(),
    };
    plan.children().iter().flat_map(|c| c.schema.iter().map(name)).collect()
}

fn details(plan: &Plan, opts: &ExplainOptions<'_>) -> Vec<String> {
    let names = input_names(plan);
    let show = |e: &Expr| fmt_expr(e, &names);
    let mut v = Vec::new();
    match &plan.node {
        Node::Scan { .. } => v.extend(scan_details(plan, opts)),
        Node::Filter { predicate, .. } => v.push(format!("Filter: {}", show(predicate))),
        Node::Project { exprs, .. } => {
            v.push(format!("Output: {}", exprs.iter().map(show).collect::<Vec<_>>().join(", ")))
        }
        Node::Join { .. } => v.extend(join_details(plan, &names)),
        Node::Aggregate { group_by, aggregates, .. } => {
            if !group_by.is_empty() {
                v.push(format!("Group Key: {}", group_by.iter().map(show).collect::<Vec<_>>().join(", ")));
            }
            let aggs: Vec<String> = aggregates
                .iter()
                .map(|a| {
                    let arg = a.arg.as_ref().map_or("*".to_string(), show);
                    format!("{:?}({}{arg})", a.func, if a.distinct { "DISTINCT " } else { "" }).to_lowercase()
                })
                .collect();
            if !aggs.is_empty() {
                v.push(format!("Aggregates: {}", aggs.join(", ")));
            }
        }
        Node::Sort { keys, .. } => v.push(format!(
            "Sort Key: {}",
            keys.iter()
                .map(|k| format!("{}{}", show(&k.expr), if k.asc { "" } else { " DESC" }))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Node::Limit { limit, offset, .. } => {
            v.push(format!("Limit: {} Offset: {offset}", limit.map_or("ALL".to_string(), |l| l.to_string())))
        }
        Node::Series { start, stop, step } => {
            v.push(format!("Function Call: generate_series({}, {}, {})", show(start), show(stop), show(step)))
        }
        Node::Values { .. } | Node::Distinct { .. } | Node::SetOp { .. } => {}
    }
    v
}

/// An expression in SQL-like text, columns by `names`.
pub fn fmt_expr(e: &Expr, names: &[String]) -> String {
    let f = |x: &Expr| fmt_expr(x, names);
    match e {
        Expr::Column { index, .. } => names.get(*index).cloned().unwrap_or_else(|| format!("#{index}")),
        Expr::Outer { depth, index, .. } => format!("outer{depth}.#{index}"),
        Expr::Param { index, .. } => format!("${}", index + 1),
        Expr::Literal { value, .. } => fmt_value(value),
        Expr::Unary { op, expr, .. } => match op {
            UnaryOp::Neg => format!("(-{})", f(expr)),
            UnaryOp::Not => format!("(NOT {})", f(expr)),
            UnaryOp::IsNull => format!("({} IS NULL)", f(expr)),
            UnaryOp::IsNotNull => format!("({} IS NOT NULL)", f(expr)),
            UnaryOp::IsTrue => format!("({} IS TRUE)", f(expr)),
            UnaryOp::IsNotTrue => format!("({} IS NOT TRUE)", f(expr)),
            UnaryOp::IsFalse => format!("({} IS FALSE)", f(expr)),
            UnaryOp::IsNotFalse => format!("({} IS NOT FALSE)", f(expr)),
        },
        Expr::Binary { op, left, right, .. } => format!("({} {} {})", f(left), op.sql(), f(right)),
        Expr::Cast { expr, ty } => format!("({})::{}", f(expr), ty.pg_name()),
        Expr::Case { operand, whens, else_, .. } => {
            let mut s = "CASE".to_string();
            if let Some(o) = operand {
                s.push_str(&format!(" {}", f(o)));
            }
            for (w, t) in whens {
                s.push_str(&format!(" WHEN {} THEN {}", f(w), f(t)));
            }
            if let Some(e) = else_ {
                s.push_str(&format!(" ELSE {}", f(e)));
            }
            s + " END"
        }
        Expr::Like { expr, pattern, negated, case_insensitive, .. } => format!(
            "({} {}{} {})",
            f(expr),
            if *negated { "NOT " } else { "" },
            if *case_insensitive { "ILIKE" } else { "LIKE" },
            f(pattern)
        ),
        Expr::InList { expr, list, negated } => format!(
            "({} {}IN ({}))",
            f(expr),
            if *negated { "NOT " } else { "" },
            list.iter().map(f).collect::<Vec<_>>().join(", ")
        ),
        Expr::Function { func, args, .. } => {
            format!("{}({})", format!("{func:?}").to_lowercase(), args.iter().map(f).collect::<Vec<_>>().join(", "))
        }
        Expr::Subquery { kind, .. } => match kind {
            SubqueryKind::Scalar => "(SubPlan)".into(),
            SubqueryKind::Array => "ARRAY(SubPlan)".into(),
            SubqueryKind::Exists { negated } => format!("({}EXISTS SubPlan)", if *negated { "NOT " } else { "" }),
            SubqueryKind::In { expr, negated } => {
                format!("({} {}IN SubPlan)", f(expr), if *negated { "NOT " } else { "" })
            }
            SubqueryKind::Quantified { expr, op, all } => {
                format!("({} {} {} SubPlan)", f(expr), op.sql(), if *all { "ALL" } else { "ANY" })
            }
        },
    }
}

fn fmt_value(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int16(x) => x.to_string(),
        Value::Int32(x) => x.to_string(),
        Value::Int64(x) => x.to_string(),
        Value::Numeric { value, scale } => {
            let s = 10i128.pow(u32::from(*scale));
            if *scale == 0 {
                value.to_string()
            } else {
                let sign = if *value < 0 { "-" } else { "" };
                let a = value.unsigned_abs();
                format!("{sign}{}.{:0w$}", a / s.unsigned_abs(), a % s.unsigned_abs(), w = usize::from(*scale))
            }
        }
        Value::Float64(x) => x.to_string(),
        Value::Date(d) => format!("'{}'", date(*d)),
        Value::Timestamp(t) => {
            let (days, us) = (t.div_euclid(86_400_000_000), t.rem_euclid(86_400_000_000));
            let s = us / 1_000_000;
            format!("'{} {:02}:{:02}:{:02}'", date(days as i32), s / 3600, s / 60 % 60, s % 60)
        }
        Value::Interval(i) => format!("'{} mons {} days {} us'", i.months, i.days, i.micros),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
    }
}

/// `yyyy-mm-dd` of days since 1970-01-01 (proleptic Gregorian; Howard
/// Hinnant's civil_from_days).
fn date(days: i32) -> String {
    let z = i64::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn scan_details(plan: &Plan, opts: &ExplainOptions<'_>) -> Vec<String> {
    let mut v = Vec::new();
    let Node::Scan { table, columns, filter, access, emit_vid } = &plan.node else { return v };
    let own: Vec<String> = plan.schema.iter().map(|f| f.name.clone()).collect();
    if let Some(f) = filter {
        v.push(format!("Filter: {}", fmt_expr(f, &own)));
    }
    let mut cols: Vec<String> =
        columns.iter().map(|&c| table.columns.get(c).map_or(format!("#{c}"), |d| d.name.clone())).collect();
    if *emit_vid {
        cols.push("vid".into());
    }
    v.push(format!("Columns: {}", cols.join(", ")));
    if let Access::Index { index, lower, upper, lower_inclusive, upper_inclusive } = access {
        v.push(index_cond(table, index, (lower, *lower_inclusive), (upper, *upper_inclusive), &own));
    }
    if *access == Access::Ndp
        && let Some(ctx) = opts.ctx
        && let Some(shape) = crate::optimizer::physical_scan_shape(plan, ctx)
    {
        let device: Vec<String> = filter
            .iter()
            .flat_map(|f| crate::optimizer::util::conjuncts(f.clone()))
            .filter(|c| crate::store::source::device_term(c).is_some())
            .take(ndpdb_format::ndp::MAX_TERMS)
            .map(|c| fmt_expr(&c, &own))
            .collect();
        if !device.is_empty() {
            v.push(format!("Device Filter: {}", device.join(" AND ")));
        }
        v.push(format!("Link bytes saved (est.): {:.0}", shape.link_bytes_saved()));
    }
    v
}

/// `Index Cond: (a = 1 AND b >= 2)`, PostgreSQL's line, from an index
/// scan's bounds (equal bounds on a key column are one equality).
fn index_cond(
    table: &crate::catalog::TableDef,
    index: &crate::catalog::IndexDef,
    (lower, li): (&[Expr], bool),
    (upper, ui): (&[Expr], bool),
    names: &[String],
) -> String {
    let col = |i: usize| {
        let c = index.columns.get(i).copied().unwrap_or(usize::MAX);
        table.columns.get(c).map_or(format!("#{c}"), |d| d.name.clone())
    };
    let mut conds = Vec::new();
    for i in 0..lower.len().max(upper.len()) {
        let (l, u) = (lower.get(i), upper.get(i));
        let last_l = i + 1 == lower.len();
        let last_u = i + 1 == upper.len();
        if let (Some(a), Some(b)) = (l, u)
            && a == b
            && (!last_l || li)
            && (!last_u || ui)
        {
            conds.push(format!("{} = {}", col(i), fmt_expr(a, names)));
            continue;
        }
        if let Some(a) = l {
            conds.push(format!("{} {} {}", col(i), if last_l && !li { ">" } else { ">=" }, fmt_expr(a, names)));
        }
        if let Some(b) = u {
            conds.push(format!("{} {} {}", col(i), if last_u && !ui { "<" } else { "<=" }, fmt_expr(b, names)));
        }
    }
    format!("Index Cond: ({})", conds.join(" AND "))
}

fn join_details(plan: &Plan, names: &[String]) -> Vec<String> {
    let show = |e: &Expr| fmt_expr(e, names);
    let mut v = Vec::new();
    let Node::Join { on, algorithm, left, .. } = &plan.node else { return v };
    match algorithm {
        JoinAlgorithm::Hash { left_keys, right_keys, build } => {
            let l = left.schema.len();
            let pairs: Vec<String> = left_keys
                .iter()
                .zip(right_keys)
                .map(|(a, b)| {
                    let mut b = b.clone();
                    crate::optimizer::util::remap(&mut b, &|i| i + l);
                    format!("{} = {}", show(a), show(&b))
                })
                .collect();
            v.push(format!("Hash Cond: ({})", pairs.join(" AND ")));
            if *build == HashBuild::Left {
                v.push("Hash Table: outer (left) input, probed by the inner".into());
            }
        }
        JoinAlgorithm::IndexNestedLoop { index, keys } => {
            v.push(format!("Index Cond: {} = ({})", index.name, keys.iter().map(show).collect::<Vec<_>>().join(", ")))
        }
        _ => {}
    }
    if let Some(on) = on {
        v.push(format!("Join Filter: {}", show(on)));
    }
    v
}
