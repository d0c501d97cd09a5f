//! The physical pass: one bottom-up walk that orders inner joins, chooses
//! each scan's [`Access`] and each join's [`JoinAlgorithm`], and puts an
//! estimate (rows, `Cost { host, device }`) on every node.
//!
//! - **Scans.** `SET ndp = on`: NDP; `off`: host; `auto`: the cheaper of
//!   the two by `cost.rs` (the device saves the link every page the filter
//!   or the projection drops). In every mode an index range scan replaces
//!   the choice when the filter bounds a prefix of an index's key and the
//!   index scan is cheaper (a selective predicate). No index: no change.
//! - **Joins.** Equalities between the two inputs become hash keys (the
//!   rest of the condition is checked on each matching pair); the build side
//!   (right) is the smaller estimated input: an inner or full join swaps its
//!   inputs under a Project that restores the column order, a left join
//!   becomes a right join and back; a Semi or Anti join may build on its
//!   left (outer) input instead (`HashBuild::Left`), when that is the
//!   cheaper (EXISTS over a big table). Without equalities, and for Mark joins
//!   (whose NULL comparisons matter): nested loop. With an
//!   index on the inner side's key columns and a cheaper cost than hashing
//!   (a small outer side): index nested loop.
//! - **Subqueries** left in expressions are optimized as plans of their own.

use std::sync::Arc;

use super::cardinality::{column_info, node_rows, selectivity};
use super::cost::{ScanShape, host_scan, index_scan, ndp_scan};
use super::util::{columns_used, conjoin, conjuncts, has_subquery, mk_join, mk_select, node_exprs_mut, remap};
use super::{NdpMode, OptimizerContext};
use crate::catalog::{IndexDef, TableDef};
use crate::error::Result;
use crate::plan::{Access, BinaryOp, Cost, Expr, HashBuild, JoinAlgorithm, JoinKind, Node, Plan};
use crate::types::DataType;

/// Plans `plan` bottom-up (see the module doc).
pub fn physical(plan: Plan, ctx: &OptimizerContext<'_>) -> Result<Plan> {
    // Alternatives of the same join, each planned, the cheapest kept: a
    // Semi/Anti join may run inside its left input's inner-join tree
    // (`semipush.rs`); an aggregate joined on its group key may aggregate
    // only the keys its partner can hold (`aggreduce.rs`).
    let mut alternatives = Vec::new();
    if let Some(pushed) = super::semipush::pushed(&plan) {
        alternatives.push(physical(pushed, ctx)?);
    }
    if let Some(reduced) = super::aggreduce::reduced(&plan) {
        alternatives.push(physical_here(reduced, ctx)?);
    }
    Ok(cheapest(physical_here(plan, ctx)?, alternatives))
}

/// The plan of least estimated cost (host + device), `first` on ties.
fn cheapest(first: Plan, others: impl IntoIterator<Item = Plan>) -> Plan {
    let objective = |p: &Plan| p.est.cost.host + p.est.cost.device;
    others.into_iter().fold(first, |best, p| if objective(&p) < objective(&best) { p } else { best })
}

fn physical_here(mut plan: Plan, ctx: &OptimizerContext<'_>) -> Result<Plan> {
    optimize_subqueries(&mut plan, ctx)?;
    if super::reorder::is_unplanned_inner(&plan) {
        let ordered = super::reorder::reorder(plan, ctx, &mut |leaf| physical(leaf, ctx))?;
        return finish_ordered(ordered, ctx);
    }
    let mut plan = plan;
    for c in super::util::plan_children_mut(&mut plan) {
        let taken = super::util::take_plan(c);
        *c = physical(taken, ctx)?;
    }
    choose(plan, ctx)
}

fn optimize_subqueries(plan: &mut Plan, ctx: &OptimizerContext<'_>) -> Result<()> {
    for e in node_exprs_mut(&mut plan.node) {
        optimize_in_expr(e, ctx)?;
    }
    Ok(())
}

fn optimize_in_expr(e: &mut Expr, ctx: &OptimizerContext<'_>) -> Result<()> {
    for c in super::util::children_mut(e) {
        optimize_in_expr(c, ctx)?;
    }
    if let Expr::Subquery { plan, .. } = e {
        let taken = super::util::take_plan(plan.as_mut());
        **plan = super::optimize(taken, ctx)?;
    }
    Ok(())
}

/// Plans the joins reorder built (its leaves are planned) and the Project
/// and Filter above them.
fn finish_ordered(plan: Plan, ctx: &OptimizerContext<'_>) -> Result<Plan> {
    if super::reorder::is_unplanned_inner(&plan) {
        let mut plan = plan;
        for c in super::util::plan_children_mut(&mut plan) {
            let taken = super::util::take_plan(c);
            *c = finish_ordered(taken, ctx)?;
        }
        return choose(plan, ctx);
    }
    match plan.node {
        Node::Filter { .. } | Node::Project { .. } if plan.est.rows < 0.0 => {
            let mut plan = plan;
            for c in super::util::plan_children_mut(&mut plan) {
                let taken = super::util::take_plan(c);
                *c = finish_ordered(taken, ctx)?;
            }
            choose(plan, ctx)
        }
        _ => Ok(plan),
    }
}

/// Chooses the physical operator of a node whose children are planned, and
/// estimates it.
fn choose(plan: Plan, ctx: &OptimizerContext<'_>) -> Result<Plan> {
    let plan = merge_projects(plan);
    match &plan.node {
        Node::Scan { .. } => Ok(choose_scan(plan, ctx)),
        Node::Join { algorithm: JoinAlgorithm::Unchosen, .. } => Ok(choose_join(plan, ctx)),
        _ => Ok(estimate(plan, ctx)),
    }
}

/// A Project over a Project (join reordering and swapping add them) becomes
/// one, when the lower one holds no subquery, and the upper one's
/// subqueries (whose outer references `substitute` does not rewrite) read
/// only plain columns of it (renumbered with `remap`, which does).
fn merge_projects(plan: Plan) -> Plan {
    let Plan { node, schema, est } = plan;
    let column = |e: &Expr| if let Expr::Column { index, .. } = e { Some(*index) } else { None };
    match node {
        Node::Project { input, exprs } => match input.node {
            Node::Project { input: inner, exprs: lower }
                if !lower.iter().any(has_subquery)
                    && (!exprs.iter().any(has_subquery) || lower.iter().all(|e| column(e).is_some())) =>
            {
                let exprs = if exprs.iter().any(has_subquery) {
                    let map: Vec<usize> = lower.iter().filter_map(column).collect();
                    let mut exprs = exprs;
                    for e in &mut exprs {
                        remap(e, &|i| map.get(i).copied().unwrap_or(i));
                    }
                    exprs
                } else {
                    exprs.iter().map(|e| super::util::substitute(e, &lower)).collect()
                };
                Plan { node: Node::Project { input: inner, exprs }, schema, est }
            }
            other => {
                Plan { node: Node::Project { input: Box::new(Plan { node: other, ..*input }), exprs }, schema, est }
            }
        },
        node => Plan { node, schema, est },
    }
}

/// Sets `est` of a node from its children's.
pub fn estimate(mut plan: Plan, ctx: &OptimizerContext<'_>) -> Plan {
    let keep_rows = plan.est.rows >= 0.0 && matches!(plan.node, Node::Join { kind: JoinKind::Inner, .. });
    let rows = if keep_rows { plan.est.rows } else { node_rows(&plan, ctx) };
    plan.est.rows = rows;
    plan.est.cost = node_cost(&plan, ctx);
    plan
}

fn children_cost(plan: &Plan) -> Cost {
    plan.children().into_iter().fold(Cost::ZERO, |acc, c| acc + c.est.cost)
}

fn terms(e: &Expr) -> f64 {
    conjuncts(e.clone()).len() as f64
}

fn node_cost(plan: &Plan, ctx: &OptimizerContext<'_>) -> Cost {
    let p = &ctx.cost;
    let below = children_cost(plan);
    let rows_of = |x: &Plan| x.est.rows.max(0.0);
    let own = match &plan.node {
        Node::Scan { .. } | Node::Values { .. } | Node::Limit { .. } => 0.0,
        Node::Series { .. } => plan.est.rows.max(0.0) * p.host_expr_s,
        Node::Filter { input, predicate } => rows_of(input) * terms(predicate) * p.host_expr_s,
        Node::Project { input, exprs } => {
            let computed = exprs.iter().filter(|e| !matches!(e, Expr::Column { .. })).count() as f64;
            rows_of(input) * computed * p.host_expr_s
        }
        Node::Aggregate { input, aggregates, .. } => {
            rows_of(input) * p.agg_row_s * (aggregates.len().max(1) as f64) + plan.est.rows * p.output_row_s
        }
        Node::Sort { input, keys } => {
            let n = rows_of(input).max(1.0);
            n * n.log2().max(1.0) * p.sort_compare_s * keys.len().max(1) as f64
        }
        Node::Distinct { input } => rows_of(input) * p.agg_row_s,
        Node::SetOp { left, right, all, .. } => {
            if *all {
                0.0
            } else {
                (rows_of(left) + rows_of(right)) * p.agg_row_s
            }
        }
        Node::Join { left, right, algorithm, on, .. } => {
            let (l, r, out) = (rows_of(left), rows_of(right), plan.est.rows.max(0.0));
            match algorithm {
                JoinAlgorithm::Hash { build: HashBuild::Left, .. } => {
                    p.hash_build_row_s * l + p.hash_probe_row_s * r + p.output_row_s * out
                }
                JoinAlgorithm::Hash { .. } | JoinAlgorithm::Unchosen => {
                    p.hash_build_row_s * r + p.hash_probe_row_s * l + p.output_row_s * out
                }
                JoinAlgorithm::NestedLoop => {
                    l * r * p.host_expr_s * on.as_ref().map_or(1.0, terms) + p.output_row_s * out
                }
                JoinAlgorithm::IndexNestedLoop { index, keys } => {
                    // The inner scan's own cost is replaced by the lookups,
                    // which read every row of the key (prefix) before the
                    // right filter and the rest of the condition.
                    let (fetched, sizes) = match &right.node {
                        Node::Scan { table, .. } => (
                            rows_per_key(table, &index.columns[..keys.len()]).map(|k| l * k),
                            LookupSizes {
                                table_bytes: scan_shape(right, ctx).map_or(0.0, |s| s.table_bytes()),
                                index_bytes: index_bytes(table, index, ctx),
                            },
                        ),
                        _ => (None, LookupSizes { table_bytes: 0.0, index_bytes: 0.0 }),
                    };
                    let lookups = index_lookup_cost(ctx, l, fetched.unwrap_or(out).max(out), sizes);
                    return left.est.cost + lookups;
                }
            }
        }
    };
    below + Cost::host(own)
}

/// Rows of `table` per value of the key `columns` (ANALYZE's row count
/// over the product of the columns' distinct counts, at least 1); None
/// without statistics.
fn rows_per_key(table: &TableDef, columns: &[usize]) -> Option<f64> {
    let stats = table.stats.as_ref()?;
    let mut distinct = 1.0f64;
    for &c in columns {
        distinct *= stats.columns.get(c)?.distinct.max(1.0);
    }
    Some((stats.rows / distinct.min(stats.rows.max(1.0))).max(1.0))
}

/// The sizes an index lookup's cache misses depend on.
struct LookupSizes {
    table_bytes: f64,
    index_bytes: f64,
}

/// Bytes of `index` on `table`: per row its key columns, the VID and an
/// entry's slot and length fields (`docs/format/btree.md`), in leaves left
/// about 70 % full.
fn index_bytes(table: &TableDef, index: &IndexDef, ctx: &OptimizerContext<'_>) -> f64 {
    let key: f64 = index.columns.iter().map(|&c| column_width(table, c)).sum();
    super::cardinality::table_rows(table, ctx) * (key + 16.0) / 0.7
}

/// `outer_rows` index lookups yielding `matched` rows in all: a descent per
/// lookup whose leaf misses the index pool as a fetch misses the heap
/// cache, and a page read per fetched row that misses the heap cache.
fn index_lookup_cost(ctx: &OptimizerContext<'_>, outer_rows: f64, matched: f64, sizes: LookupSizes) -> Cost {
    let p = &ctx.cost;
    let page_read = p.medium_page_latency_s + p.page_bytes / p.medium_bandwidth_bytes_s.max(1.0);
    let (table, index) = (sizes.table_bytes, sizes.index_bytes);
    Cost {
        device: (outer_rows * p.fetch_miss(index) + matched * p.fetch_miss(table)) * page_read,
        host: outer_rows * p.index_descent_s
            + p.fetch_host_s(outer_rows, index)
            + p.fetch_host_s(matched, table)
            + matched * (p.host_row_s + p.output_row_s),
    }
}

/// Bytes of a value of `ty` when statistics do not say.
pub fn default_width(ty: DataType) -> f64 {
    match ty {
        DataType::Bool => 1.0,
        DataType::Int16 | DataType::Int32 | DataType::Date => 4.0,
        DataType::Int64 | DataType::Float64 | DataType::Timestamp | DataType::Numeric { .. } => 8.0,
        DataType::Interval => 16.0,
        DataType::Char(n) => f64::from(n),
        DataType::Varchar(Some(n)) => f64::from(n).min(32.0),
        DataType::Varchar(None) | DataType::Text | DataType::Unknown => 32.0,
    }
}

fn column_width(table: &TableDef, pos: usize) -> f64 {
    let stat = table.stats.as_ref().and_then(|s| s.columns.get(pos)).map(|c| c.avg_width).filter(|w| *w > 0.0);
    stat.unwrap_or_else(|| table.columns.get(pos).map_or(8.0, |c| default_width(c.ty)))
}

/// True when the device can evaluate conjunct `c` of a scan's filter: the
/// conjuncts an NDP scan pushes down (`store::source::device_term`:
/// comparisons of a column with a constant; integers, dates, timestamps,
/// numerics, booleans by `=`/`<>`, text by bytes; never double precision).
pub fn device_evaluable(c: &Expr) -> bool {
    crate::store::source::device_term(c).is_some()
}

/// The shape of a scan for the cost formulas.
pub fn scan_shape(plan: &Plan, ctx: &OptimizerContext<'_>) -> Option<ScanShape> {
    let Node::Scan { table, columns, filter, .. } = &plan.node else { return None };
    let table_rows = super::cardinality::table_rows(table, ctx);
    let tuple_bytes =
        ctx.cost.tuple_header_bytes + (0..table.columns.len()).map(|c| column_width(table, c)).sum::<f64>();
    let out_row_bytes = columns.iter().map(|&c| column_width(table, c)).sum::<f64>().max(1.0);
    let parts = filter.clone().map(conjuncts).unwrap_or_default();
    let unclamped = Plan { est: crate::plan::Estimate::UNKNOWN, ..plan.clone() };
    let info = |c: usize| column_info(&unclamped, c, ctx);
    let device: Vec<Expr> =
        parts.iter().filter(|c| device_evaluable(c)).take(ndpdb_format::ndp::MAX_TERMS).cloned().collect();
    let sel_all = filter.as_ref().map_or(1.0, |f| selectivity(f, &info));
    let sel_device = conjoin(device.clone()).map_or(1.0, |f| selectivity(&f, &info));
    // What a PE reads per tuple: each device term's column (every tuple,
    // an upper bound: the first failing term ends the row), the projection
    // for the tuples that pass; a text column reads the whole tuple.
    let read_bytes = |c: usize| match table.columns.get(c).map(|d| d.ty) {
        Some(DataType::Char(_) | DataType::Varchar(_) | DataType::Text) => tuple_bytes,
        _ => column_width(table, c),
    };
    let term_columns: Vec<usize> = device
        .iter()
        .filter_map(|c| crate::store::source::device_term(c).and_then(|(i, _, _)| columns.get(i).copied()))
        .collect();
    let column_bytes_read = term_columns.iter().map(|&c| read_bytes(c)).sum::<f64>()
        + sel_device * columns.iter().map(|&c| read_bytes(c)).sum::<f64>();
    Some(ScanShape {
        table_rows,
        tuple_bytes,
        out_rows: table_rows * sel_all,
        device_out_rows: table_rows * sel_device,
        out_row_bytes,
        predicate_terms: parts.len() as f64,
        device_predicate_terms: device.len() as f64,
        out_columns: columns.len() as f64,
        column_bytes_read,
        column_reads: term_columns.len() as f64 + sel_device * columns.len() as f64,
    })
}

fn choose_scan(mut plan: Plan, ctx: &OptimizerContext<'_>) -> Plan {
    let rows = node_rows(&plan, ctx);
    let Some(shape) = scan_shape(&plan, ctx) else { return plan };
    let host = host_scan(&ctx.cost, &shape);
    let ndp = ndp_scan(&ctx.cost, &shape);
    let objective = |c: Cost| c.host + c.device;
    let (mut access, mut cost) = match ctx.ndp {
        NdpMode::On if ctx.cost.ndp_possible() => (Access::Ndp, ndp),
        NdpMode::Auto if ctx.cost.ndp_possible() && objective(ndp) < objective(host) => (Access::Ndp, ndp),
        _ => (Access::Host, host),
    };
    if let Some((index_access, matched)) = index_choice(&plan, ctx) {
        let c = index_scan(&ctx.cost, &shape, matched);
        let point = is_unique_point(&index_access) && ctx.ndp != NdpMode::On;
        if point || objective(c) < objective(cost) {
            access = index_access;
            cost = c;
        }
    }
    if let Node::Scan { access: a, .. } = &mut plan.node {
        *a = access;
    }
    plan.est.rows = rows;
    plan.est.cost = cost;
    plan
}

/// Whether `access` looks up the whole key of a unique index: at most one
/// row, at a cost that does not grow with the table, so it is taken even
/// where the model finds a scan of a tiny table cheaper (as PostgreSQL's
/// planner does in practice). It also lets a serializable transaction mark
/// the row read instead of the table (`store/index/read.rs`).
fn is_unique_point(access: &Access) -> bool {
    matches!(access, Access::Index { index, lower, upper, lower_inclusive: true, upper_inclusive: true }
        if index.unique && lower == upper && lower.len() == index.columns.len())
}

/// A range on a prefix of an index's key that the scan's filter bounds
/// (equalities on leading key columns, then one range on the next), and
/// the rows it yields.
fn index_choice(plan: &Plan, ctx: &OptimizerContext<'_>) -> Option<(Access, f64)> {
    let Node::Scan { table, columns, filter: Some(filter), .. } = &plan.node else { return None };
    let parts = conjuncts(filter.clone());
    let unclamped = Plan { est: crate::plan::Estimate::UNKNOWN, ..plan.clone() };
    let info = |c: usize| column_info(&unclamped, c, ctx);
    let rows = super::cardinality::table_rows(table, ctx);
    let mut best: Option<(Access, f64)> = None;
    for index in &table.indexes {
        let Some((access, used)) = index_bounds(index, columns, &parts) else { continue };
        let matched = rows * conjoin(used).map_or(1.0, |f| selectivity(&f, &info));
        if best.as_ref().is_none_or(|(_, m)| matched < *m) {
            best = Some((access, matched));
        }
    }
    best
}

/// `(column, op, constant)` of a conjunct comparing a scan column with a
/// literal or parameter, the column on the left.
fn bound_of(c: &Expr) -> Option<(usize, BinaryOp, Expr)> {
    let Expr::Binary { op, left, right, .. } = c else { return None };
    let is_const = |e: &Expr| matches!(e, Expr::Literal { .. } | Expr::Param { .. });
    match (left.as_ref(), right.as_ref()) {
        (Expr::Column { index, .. }, r) if is_const(r) => Some((*index, *op, r.clone())),
        (l, Expr::Column { index, .. }) if is_const(l) => Some((*index, op.commuted(), l.clone())),
        _ => None,
    }
}

fn index_bounds(index: &Arc<IndexDef>, columns: &[usize], parts: &[Expr]) -> Option<(Access, Vec<Expr>)> {
    let bounds: Vec<(usize, BinaryOp, Expr, &Expr)> = parts
        .iter()
        .filter_map(|c| bound_of(c).map(|(col, op, k)| (columns.get(col).copied(), op, k, c)))
        .filter_map(|(t, op, k, c)| t.map(|t| (t, op, k, c)))
        .collect();
    let (mut lower, mut upper) = (Vec::new(), Vec::new());
    let (mut lower_inclusive, mut upper_inclusive) = (true, true);
    let mut used = Vec::new();
    for &key_col in &index.columns {
        if let Some((_, _, k, c)) = bounds.iter().find(|(t, op, _, _)| *t == key_col && *op == BinaryOp::Eq) {
            lower.push(k.clone());
            upper.push(k.clone());
            used.push((*c).clone());
            continue;
        }
        let (mut lower_set, mut upper_set) = (false, false);
        for (t, op, k, c) in &bounds {
            if *t != key_col {
                continue;
            }
            match op {
                BinaryOp::Gt | BinaryOp::GtEq if !lower_set => {
                    lower.push(k.clone());
                    lower_inclusive = *op == BinaryOp::GtEq;
                    lower_set = true;
                    used.push((*c).clone());
                }
                BinaryOp::Lt | BinaryOp::LtEq if !upper_set => {
                    upper.push(k.clone());
                    upper_inclusive = *op == BinaryOp::LtEq;
                    upper_set = true;
                    used.push((*c).clone());
                }
                _ => {}
            }
        }
        break;
    }
    if used.is_empty() {
        return None;
    }
    let access = Access::Index { index: index.clone(), lower, upper, lower_inclusive, upper_inclusive };
    Some((access, used))
}

/// Equalities between the two inputs: (left keys, right keys over the
/// right input, the rest of the condition).
fn split_keys(on: Option<&Expr>, l: usize) -> (Vec<Expr>, Vec<Expr>, Vec<Expr>) {
    let (mut lk, mut rk, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for c in on.cloned().map(conjuncts).unwrap_or_default() {
        if let Expr::Binary { op: BinaryOp::Eq, left, right, .. } = &c
            && !has_subquery(&c)
        {
            let (a, b) = (columns_used(left), columns_used(right));
            let side = |s: &std::collections::BTreeSet<usize>| {
                if s.is_empty() {
                    0
                } else if s.iter().all(|&x| x < l) {
                    1
                } else if s.iter().all(|&x| x >= l) {
                    2
                } else {
                    0
                }
            };
            let pair = match (side(&a), side(&b)) {
                (1, 2) => Some((left.as_ref().clone(), right.as_ref().clone())),
                (2, 1) => Some((right.as_ref().clone(), left.as_ref().clone())),
                _ => None,
            };
            if let Some((x, mut y)) = pair {
                remap(&mut y, &|i| i - l);
                lk.push(x);
                rk.push(y);
                continue;
            }
        }
        rest.push(c);
    }
    (lk, rk, rest)
}

/// Plans a join both ways round where its kind can be mirrored (inner,
/// left ↔ right, full) and keeps the cheaper: usually the smaller input
/// builds the hash table, but a small outer side over an indexed inner one
/// may probe the index instead.
fn choose_join(plan: Plan, ctx: &OptimizerContext<'_>) -> Plan {
    let schema = plan.schema.clone();
    let keep_rows = plan.est.rows;
    let Node::Join { left, right, kind, on, .. } = plan.node else { return plan };
    let mirrored = match kind {
        JoinKind::Inner => Some(JoinKind::Inner),
        JoinKind::Left => Some(JoinKind::Right),
        JoinKind::Right => Some(JoinKind::Left),
        JoinKind::Full => Some(JoinKind::Full),
        _ => None,
    };
    let swapped = match mirrored {
        Some(mkind) if !on.as_ref().is_some_and(has_subquery) => {
            let (lw, rw) = (left.schema.len(), right.schema.len());
            let mut on = on.clone();
            if let Some(on) = on.as_mut() {
                remap(on, &|i| if i < lw { i + rw } else { i - lw });
            }
            let mut swapped = mk_join(right.as_ref().clone(), left.as_ref().clone(), mkind, on);
            swapped.est.rows = keep_rows;
            let swapped = choose_algorithm(swapped, ctx);
            let cols: Vec<usize> = (0..lw).map(|i| rw + i).chain(0..rw).collect();
            let mut project = mk_select(swapped, &cols);
            project.schema = schema.clone();
            Some(estimate(project, ctx))
        }
        _ => None,
    };
    let mut joined = mk_join(*left, *right, kind, on);
    joined.est.rows = keep_rows;
    joined.schema = schema;
    cheapest(choose_algorithm(joined, ctx), swapped)
}

fn choose_algorithm(plan: Plan, ctx: &OptimizerContext<'_>) -> Plan {
    let Node::Join { left, right, kind, on, .. } = &plan.node else { return plan };
    let kind = *kind;
    let (lk, rk, rest) = split_keys(on.as_ref(), left.schema.len());
    // The plan with `algorithm` checking `on` on its pairs.
    let with = |algorithm: JoinAlgorithm, on: Option<Expr>| {
        let mut p = plan.clone();
        if let Node::Join { on: o, algorithm: a, .. } = &mut p.node {
            (*a, *o) = (algorithm, on);
        }
        estimate(p, ctx)
    };
    // A Mark join's NULL comparisons decide its mark (NOT IN, ALL): a hash
    // table never finds a NULL key's partners, so it runs as a nested loop.
    if lk.is_empty() || kind == JoinKind::Mark {
        return with(JoinAlgorithm::NestedLoop, on.clone());
    }
    let hashed = |build: HashBuild| {
        with(JoinAlgorithm::Hash { left_keys: lk.clone(), right_keys: rk.clone(), build }, conjoin(rest.clone()))
    };
    // Ties keep the plain hash join.
    let mut others = Vec::new();
    if matches!(kind, JoinKind::Semi | JoinKind::Anti) {
        others.push(hashed(HashBuild::Left));
    }
    if let Some(inl) = index_nested_loop(left, right, kind, &lk, &rk) {
        others.push(with(inl, on.clone()));
    }
    cheapest(hashed(HashBuild::Right), others)
}

/// Index nested loop when the right input is a plain scan of a table with
/// an index whose leading key columns (one or more) are right keys: each
/// left row looks its key prefix up (the encoding is prefix-free,
/// `docs/format/btree.md`, so a prefix's range holds exactly the entries
/// that start with it); the join condition is checked on every pair.
fn index_nested_loop(left: &Plan, right: &Plan, kind: JoinKind, lk: &[Expr], rk: &[Expr]) -> Option<JoinAlgorithm> {
    if !matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti) {
        return None;
    }
    let _ = left;
    let Node::Scan { table, columns, emit_vid: false, .. } = &right.node else { return None };
    for index in &table.indexes {
        let mut keys = Vec::new();
        for &key_col in &index.columns {
            let found =
                rk.iter().position(|e| matches!(e, Expr::Column { index: c, .. } if columns.get(*c) == Some(&key_col)));
            match found {
                Some(i) => keys.push(lk[i].clone()),
                None => break,
            }
        }
        if !keys.is_empty() {
            return Some(JoinAlgorithm::IndexNestedLoop { index: index.clone(), keys });
        }
    }
    None
}
