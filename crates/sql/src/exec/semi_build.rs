//! Semi and Anti hash joins that build on their left (outer) input.
//!
//! ```text
//!  left ──► BuildSide: all left rows, keys encoded, chains by key; a flag per row
//!                 ▲ probe: mark the rows a right row matches
//!  right ─► (right input's pipeline, every worker) ─► key lookup ─► condition ─► flags
//!                                                    once the right input is done:
//!                                   Semi: the flagged left rows; Anti: the others
//! ```
//!
//! `EXISTS (SELECT … FROM lineitem WHERE l_orderkey = o_orderkey …)` over a
//! quarter's orders (TPC-H Q4) joins 57,000 outer rows to 3.8 million inner
//! ones; `join.rs` would hash the 3.8 million. This operator hashes the
//! 57,000 and streams the inner side past them, as PostgreSQL's "Hash Right
//! Semi Join" does. The optimizer picks it when it is the cheaper
//! (`optimizer/physical.rs`, `HashBuild::Left`).
//!
//! A left input over `work_mem` is not built on: it is partitioned to disk,
//! its keys (one integer key) filter the right input's scan as the in-memory
//! build's do, and a grace hash join builds on the right input's partitions
//! (`grace.rs`), with the same rows.
//!
//! Semantics are those of `join.rs`: a left row is kept (Semi) or dropped
//! (Anti) when some right row's keys equal its keys (a NULL key equals
//! nothing) and the residual condition on the pair is TRUE. A row once
//! flagged is not checked again, so a residual runs at most once per
//! (left row, right row) pair and usually far less. Workers probe different
//! right morsels at once; the flags are atomic, and the output is emitted by
//! [`Transform::finish`] after every worker is done, in left-row order.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};

use super::build::{as_bool, build, build_node, op_pipeline};
use super::grace::{BuildPartitions, GraceJoin, ProbeInput, chained, partition_probe};
use super::join::{BuildInput, BuildSide, JoinSpec, PAIR_CHUNK, eval_keys, key_type};
use super::metrics::MetricsNode;
use super::pipeline::{Pipeline, Stage, Transform};
use super::util::{any_null, arrow_schema, make_batch, take_columns};
use super::{ExecContext, check_interrupts, expr};
use crate::error::{Result, SqlError};
use crate::plan::{Expr, JoinAlgorithm, JoinKind, Node, Plan, Schema};
use crate::types::DataType;

pub fn build_semi_left(plan: &Plan, ctx: &ExecContext) -> Result<(Pipeline, Arc<MetricsNode>)> {
    let Node::Join { left, right, kind, on, algorithm: JoinAlgorithm::Hash { left_keys, right_keys, .. } } = &plan.node
    else {
        return Err(SqlError::internal("build_semi_left of a non-hash join"));
    };
    if !matches!(kind, JoinKind::Semi | JoinKind::Anti) {
        return Err(SqlError::internal(format!("a {kind:?} join cannot build on its left input")));
    }
    let key_types: Vec<DataType> = left_keys.iter().zip(right_keys).map(|(l, r)| key_type(l.ty(), r.ty())).collect();
    let (left_op, left_node) = build(left, ctx)?;
    let batches = match BuildInput::read(left_op, ctx)? {
        BuildInput::Whole(batches) => batches,
        BuildInput::Over(read, rest) => {
            // Too large to build on: partition it, let its keys filter the
            // right input's scan, and run a grace join that builds on the
            // (partitioned) right input.
            let spec = JoinSpec::new(plan, left_keys.clone(), right_keys.clone(), on.clone())?;
            let want_filter = ctx.runtime_filters.would_reach(right, right_keys);
            let (lefts, filter) = partition_probe(&spec, chained(read, rest), ctx, want_filter)?;
            if let Some(filter) = filter {
                ctx.runtime_filters.offer_built(right, right_keys, filter);
            }
            let (right_op, right_node) = build(right, ctx)?;
            let node = MetricsNode::new(format!("HashJoin {kind:?} (build left)"), vec![left_node, right_node]);
            let built = BuildPartitions::write(&spec, right_op, ctx, false)?;
            let op = GraceJoin::new(spec, built, ProbeInput::Partitioned(lefts), ctx, &node)?;
            return Ok((op_pipeline(Box::new(op), &node), node));
        }
    };
    let build_side = BuildSide::from_batches(&batches, &left.schema, left_keys, &key_types, ctx)?;
    drop(batches);
    // A right row without a partner flags nothing (runtime_filter.rs).
    ctx.runtime_filters.offer(right, right_keys, &build_side.keys);
    let (mut pipeline, right_node) = build_node(right, ctx)?;
    let node = MetricsNode::new(format!("HashJoin {kind:?} (build left)"), vec![left_node, right_node]);
    let mut combined: Vec<_> = left.schema.iter().cloned().collect();
    combined.extend(right.schema.iter().cloned());
    let matched = (0..build_side.rows()).map(|_| AtomicBool::new(false)).collect();
    let probe = ProbeRight {
        semi: *kind == JoinKind::Semi,
        right_keys: right_keys.clone(),
        key_types,
        residual: on.clone(),
        build: build_side,
        combined: Arc::new(combined),
        schema: plan.schema.clone(),
        matched,
    };
    pipeline.stages.push(Stage { transform: Arc::new(probe), metrics: node.clone() });
    Ok((pipeline, node))
}

/// The probe stage: right batches in, flags set, nothing out until
/// `finish`.
struct ProbeRight {
    semi: bool,
    right_keys: Vec<Expr>,
    key_types: Vec<DataType>,
    residual: Option<Expr>,
    build: BuildSide,
    /// Left columns then right columns: what the residual reads.
    combined: Schema,
    /// The join's output: the left input's columns.
    schema: Schema,
    matched: Vec<AtomicBool>,
}

impl ProbeRight {
    fn is_matched(&self, row: u32) -> bool {
        self.matched[row as usize].load(Ordering::Relaxed)
    }

    fn mark(&self, row: u32) {
        self.matched[row as usize].store(true, Ordering::Relaxed);
    }

    /// Checks `residual` on (build row, right row) pairs and flags the
    /// build rows of the TRUE ones.
    fn check(
        &self,
        residual: &Expr,
        right: &RecordBatch,
        pairs: (Vec<u32>, Vec<u32>),
        ctx: &ExecContext,
    ) -> Result<()> {
        check_interrupts(ctx)?;
        let (bi, ri) = (UInt32Array::from(pairs.0), UInt32Array::from(pairs.1));
        let mut columns = take_columns(&self.build.batch, &bi)?;
        columns.extend(take_columns(right, &ri)?);
        let batch = make_batch(&self.combined, columns, bi.len())?;
        let verdict = expr::evaluate(residual, &batch, ctx)?;
        let verdict = as_bool(&verdict)?;
        for (k, &b) in bi.values().iter().enumerate() {
            if verdict.is_valid(k) && verdict.value(k) {
                self.mark(b);
            }
        }
        Ok(())
    }
}

impl Transform for ProbeRight {
    fn apply(&self, right: RecordBatch, ctx: &ExecContext) -> Result<RecordBatch> {
        let empty = RecordBatch::new_empty(arrow_schema(&self.schema));
        let (Some(encoder), Some(index)) = (&self.build.encoder, &self.build.index) else {
            return Err(SqlError::internal("a hash join without its index"));
        };
        if self.build.rows() == 0 || right.num_rows() == 0 {
            return Ok(empty);
        }
        let keys: Vec<ArrayRef> = eval_keys(&self.right_keys, &self.key_types, &right, ctx)?;
        let rows = encoder.encode(&keys)?;
        let nulls = any_null(&keys, right.num_rows());
        let mut hits = Vec::new();
        index.probe(&rows, &nulls, &mut hits);
        let Some(residual) = &self.residual else {
            for (_, b) in hits {
                self.mark(b);
            }
            return Ok(empty);
        };
        let mut pairs: (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for (i, b) in hits {
            if self.is_matched(b) {
                continue;
            }
            pairs.0.push(b);
            pairs.1.push(i);
            if pairs.0.len() >= PAIR_CHUNK {
                self.check(residual, &right, std::mem::take(&mut pairs), ctx)?;
            }
        }
        if !pairs.0.is_empty() {
            self.check(residual, &right, pairs, ctx)?;
        }
        Ok(empty)
    }

    fn finish(&self, _ctx: &ExecContext) -> Result<Option<RecordBatch>> {
        let keep: Vec<u32> = (0..self.build.rows() as u32).filter(|&r| self.is_matched(r) == self.semi).collect();
        if keep.is_empty() {
            return Ok(None);
        }
        let keep = UInt32Array::from(keep);
        make_batch(&self.schema, take_columns(&self.build.batch, &keep)?, keep.len()).map(Some)
    }
}
