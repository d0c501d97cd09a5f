//! From a plan to running operators: each node becomes a pipeline stage
//! (Filter, Project, a join's probe, a scan's leftover filter) or an
//! operator that ends the pipeline below it (everything else). Also the
//! leaf and streaming operators: Scan, Values, Filter, Project, Limit.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Array, BooleanArray, RecordBatch};

use super::metrics::MetricsNode;
use super::pipeline::{BoxOp, Morsel, Operator, Pipeline, Stage, Transform, VecSource};
use super::util::{arrow_err, concat, conform, empty_rows_batch, make_batch, rechunk};
use super::{ExecContext, ScanSpec, aggregate, check_interrupts, expr, join, series, setop, sort};
use crate::error::{Result, SqlError};
use crate::plan::{Access, Expr, Node, Plan, Schema};

/// The running operator tree of `plan` and its metrics tree.
pub fn build(plan: &Plan, ctx: &ExecContext) -> Result<(BoxOp, Arc<MetricsNode>)> {
    let (pipeline, node) = build_node(plan, ctx)?;
    Ok((pipeline.start(ctx), node))
}

/// `plan` as a pipeline still open for stages above it.
pub fn build_node(plan: &Plan, ctx: &ExecContext) -> Result<(Pipeline, Arc<MetricsNode>)> {
    check_interrupts(ctx)?;
    match &plan.node {
        Node::Scan { .. } => build_scan(plan, ctx),
        Node::Values { rows } => {
            let node = MetricsNode::new("Values", vec![]);
            let batches = values(rows, &plan.schema, ctx)?;
            Ok((Pipeline { source: metered(Box::new(VecSource(batches)), &node), stages: vec![] }, node))
        }
        Node::Series { start, stop, step } => {
            let node = MetricsNode::new("Function Scan", vec![]);
            let op = series::SeriesOp::new(start, stop, step, &plan.schema, ctx)?;
            Ok((Pipeline { source: metered(Box::new(op), &node), stages: vec![] }, node))
        }
        Node::Filter { input, predicate } => {
            let (mut pipeline, child) = build_node(input, ctx)?;
            let node = MetricsNode::new("Filter", vec![child]);
            let transform = Arc::new(FilterT { predicate: predicate.clone() });
            pipeline.stages.push(Stage { transform, metrics: node.clone() });
            Ok((pipeline, node))
        }
        Node::Project { input, exprs } => {
            let (mut pipeline, child) = build_node(input, ctx)?;
            let node = MetricsNode::new("Project", vec![child]);
            let transform = Arc::new(ProjectT { exprs: exprs.clone(), schema: plan.schema.clone() });
            pipeline.stages.push(Stage { transform, metrics: node.clone() });
            Ok((pipeline, node))
        }
        Node::Join { .. } => join::build_join(plan, ctx),
        Node::Aggregate { input, group_by, aggregates } => {
            let (input, child) = build_node(input, ctx)?;
            let node = MetricsNode::new("HashAggregate", vec![child]);
            let op = aggregate::AggregateOp::new(input, group_by, aggregates, &plan.schema, ctx, &node);
            Ok((op_pipeline(Box::new(op), &node), node))
        }
        Node::Sort { input, keys } => {
            let (input, child) = build(input, ctx)?;
            let node = MetricsNode::new("Sort", vec![child]);
            let op = sort::SortOp::new(input, keys.clone(), plan.schema.clone(), ctx, &node);
            Ok((op_pipeline(Box::new(op), &node), node))
        }
        Node::Limit { input, limit: Some(0), .. } => {
            // PostgreSQL's LIMIT 0 never starts its input: no hash table is
            // built and no subquery below runs (so none of their errors).
            let node = MetricsNode::new("Limit", vec![never_executed(input)]);
            Ok((op_pipeline(Box::new(VecSource(Vec::new())), &node), node))
        }
        Node::Limit { input, limit, offset } => {
            let (input, child) = build(input, ctx)?;
            let node = MetricsNode::new("Limit", vec![child]);
            let op = LimitOp { input: Some(input), skip: *offset, left: *limit, ctx: ctx.clone() };
            Ok((op_pipeline(Box::new(op), &node), node))
        }
        Node::Distinct { input } => {
            let (input, child) = build(input, ctx)?;
            let node = MetricsNode::new("HashDistinct", vec![child]);
            let op = setop::DistinctOp::new(input, plan.schema.clone(), ctx)?;
            Ok((op_pipeline(Box::new(op), &node), node))
        }
        Node::SetOp { op, all, left, right } => {
            let (l, lnode) = build(left, ctx)?;
            let (r, rnode) = build(right, ctx)?;
            let node = MetricsNode::new(format!("SetOp {op:?}{}", if *all { " All" } else { "" }), vec![lnode, rnode]);
            let op = setop::set_op(*op, *all, l, r, plan.schema.clone(), ctx)?;
            Ok((op_pipeline(op, &node), node))
        }
    }
}

/// An operator as a pipeline without stages, counted into `node`.
pub fn op_pipeline(op: BoxOp, node: &Arc<MetricsNode>) -> Pipeline {
    Pipeline { source: metered(op, node), stages: vec![] }
}

fn build_scan(plan: &Plan, ctx: &ExecContext) -> Result<(Pipeline, Arc<MetricsNode>)> {
    let Node::Scan { table, columns, filter, emit_vid, access } = &plan.node else {
        return Err(SqlError::internal("build_scan of a non-scan"));
    };
    let resolved = resolve_bounds(access, ctx)?;
    let access = resolved.as_ref().unwrap_or(access);
    let key_filter = ctx.runtime_filters.take(plan);
    let spec = ScanSpec {
        table,
        columns,
        filter: filter.as_ref(),
        emit_vid: *emit_vid,
        access,
        key_filter: key_filter.as_ref(),
    };
    let output = ctx.source.scan(&spec)?;
    let node = MetricsNode::new(format!("Scan {}", table.name), vec![]);
    *node.scan.lock() = Some(output.counters.clone());
    let source = Box::new(ScanOp { batches: output.batches, schema: plan.schema.clone() });
    // Only what the source did not apply (conjuncts it pushed down are
    // not evaluated twice).
    match output.remaining {
        Some(predicate) => {
            let transform = Arc::new(FilterT { predicate });
            Ok((Pipeline { source, stages: vec![Stage { transform, metrics: node.clone() }] }, node))
        }
        None => Ok((Pipeline { source: metered(source, &node), stages: vec![] }, node)),
    }
}

/// An index scan's bounds as literals (parameters and outer references
/// evaluated), so that the source needs no context; None for other scans.
fn resolve_bounds(access: &Access, ctx: &ExecContext) -> Result<Option<Access>> {
    let Access::Index { index, lower, upper, lower_inclusive, upper_inclusive } = access else { return Ok(None) };
    let one = empty_rows_batch(1);
    let resolve = |exprs: &[Expr]| -> Result<Vec<Expr>> {
        exprs
            .iter()
            .map(|e| {
                let a = conform(expr::evaluate(e, &one, ctx)?, &e.ty())?;
                Ok(Expr::literal(crate::types::arrow::value_at(a.as_ref(), 0)?))
            })
            .collect()
    };
    Ok(Some(Access::Index {
        index: index.clone(),
        lower: resolve(lower)?,
        upper: resolve(upper)?,
        lower_inclusive: *lower_inclusive,
        upper_inclusive: *upper_inclusive,
    }))
}

struct ScanOp {
    batches: Box<dyn Iterator<Item = Result<Morsel>> + Send>,
    schema: Schema,
}

/// The source's batch with the plan's schema.
fn scan_batch(batch: RecordBatch, schema: &Schema) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    make_batch(schema, batch.columns().to_vec(), rows)
}

impl Operator for ScanOp {
    /// Makes deferred morsels here, skipping those without rows.
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        for morsel in self.batches.by_ref() {
            let batch = morsel?.run()?;
            if batch.num_rows() > 0 {
                return scan_batch(batch, &self.schema).map(Some);
            }
        }
        Ok(None)
    }

    fn next_morsel(&mut self) -> Result<Option<Morsel>> {
        Ok(match self.batches.next().transpose()? {
            None => None,
            Some(Morsel::Ready(batch)) => Some(Morsel::Ready(scan_batch(batch, &self.schema)?)),
            Some(Morsel::Deferred(work)) => {
                let schema = self.schema.clone();
                Some(Morsel::Deferred(Box::new(move || scan_batch(work()?, &schema))))
            }
        })
    }
}

/// The rows of `VALUES`, evaluated once.
fn values(rows: &[Vec<Expr>], schema: &Schema, ctx: &ExecContext) -> Result<Vec<RecordBatch>> {
    let one = empty_rows_batch(1);
    let mut batches = Vec::with_capacity(rows.len());
    for row in rows {
        check_interrupts(ctx)?;
        let columns = row.iter().map(|e| expr::evaluate(e, &one, ctx)).collect::<Result<Vec<_>>>()?;
        batches.push(make_batch(schema, columns, 1)?);
    }
    let all = concat(schema, &batches)?;
    let mut chunks = rechunk(&all);
    chunks.reverse();
    Ok(chunks)
}

/// Counts an operator's rows and time (inclusive of its inputs).
struct Metered {
    inner: BoxOp,
    node: Arc<MetricsNode>,
}

pub fn metered(inner: BoxOp, node: &Arc<MetricsNode>) -> BoxOp {
    Box::new(Metered { inner, node: node.clone() })
}

impl Operator for Metered {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        let t0 = Instant::now();
        let out = self.inner.next();
        self.node.add_time(t0.elapsed());
        if let Ok(Some(b)) = &out {
            self.node.add_rows(b.num_rows());
        }
        out
    }

    /// A deferred morsel's time and rows count when it runs.
    fn next_morsel(&mut self) -> Result<Option<Morsel>> {
        let t0 = Instant::now();
        let out = self.inner.next_morsel();
        self.node.add_time(t0.elapsed());
        Ok(match out? {
            None => None,
            Some(Morsel::Ready(b)) => {
                self.node.add_rows(b.num_rows());
                Some(Morsel::Ready(b))
            }
            Some(Morsel::Deferred(work)) => {
                let node = self.node.clone();
                Some(Morsel::Deferred(Box::new(move || {
                    let t0 = Instant::now();
                    let out = work();
                    node.add_time(t0.elapsed());
                    if let Ok(b) = &out {
                        node.add_rows(b.num_rows());
                    }
                    out
                })))
            }
        })
    }
}

/// Evaluates `predicate` and keeps the rows where it is TRUE.
pub fn filter_batch(batch: &RecordBatch, predicate: &Expr, ctx: &ExecContext) -> Result<RecordBatch> {
    let mask = expr::evaluate(predicate, batch, ctx)?;
    let mask = as_bool(&mask)?;
    arrow_select::filter::filter_record_batch(batch, mask).map_err(arrow_err)
}

pub fn as_bool(array: &Arc<dyn Array>) -> Result<&BooleanArray> {
    array
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| SqlError::internal(format!("a condition evaluated to {}", array.data_type())))
}

struct FilterT {
    predicate: Expr,
}

impl Transform for FilterT {
    fn apply(&self, batch: RecordBatch, ctx: &ExecContext) -> Result<RecordBatch> {
        filter_batch(&batch, &self.predicate, ctx)
    }
}

struct ProjectT {
    exprs: Vec<Expr>,
    schema: Schema,
}

impl Transform for ProjectT {
    fn apply(&self, batch: RecordBatch, ctx: &ExecContext) -> Result<RecordBatch> {
        let columns = self
            .exprs
            .iter()
            .zip(self.schema.iter())
            .map(|(e, f)| conform(expr::evaluate(e, &batch, ctx)?, &f.ty))
            .collect::<Result<Vec<_>>>()?;
        make_batch(&self.schema, columns, batch.num_rows())
    }
}

/// Metrics (all zero) for `plan` and the nodes under it, which do not run.
fn never_executed(plan: &Plan) -> Arc<MetricsNode> {
    MetricsNode::new("never executed", plan.children().into_iter().map(never_executed).collect())
}

/// OFFSET then LIMIT; drops its input as soon as the limit is reached, so
/// the pipelines below stop pulling.
struct LimitOp {
    input: Option<BoxOp>,
    skip: u64,
    left: Option<u64>,
    ctx: ExecContext,
}

impl Operator for LimitOp {
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            check_interrupts(&self.ctx)?;
            if self.left == Some(0) {
                self.input = None;
                return Ok(None);
            }
            let Some(input) = &mut self.input else { return Ok(None) };
            let Some(mut batch) = input.next()? else {
                self.input = None;
                return Ok(None);
            };
            let rows = batch.num_rows() as u64;
            if self.skip >= rows {
                self.skip -= rows;
                continue;
            }
            let start = self.skip as usize;
            self.skip = 0;
            let mut len = batch.num_rows() - start;
            if let Some(left) = &mut self.left {
                len = len.min(*left as usize);
                *left -= len as u64;
            }
            batch = batch.slice(start, len);
            return Ok(Some(batch));
        }
    }
}
