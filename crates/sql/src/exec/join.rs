//! Joins: hash join (equi-keys, build on the right input) and nested loop
//! (any condition), every [`JoinKind`]. A Semi or Anti hash join that
//! builds on its left input instead is `semi_build.rs`.
//!
//! ```text
//!            probe stage (in the left input's pipeline, on every worker)
//!  left ───► candidates (hash lookup, or every right row) ─► condition ─► output by kind
//!                 ▲
//!  right ──► BuildSide: all right rows, keys encoded with arrow-row, chains by key
//! ```
//!
//! The right input is read whole before the left starts (counted against
//! `work_mem`). A probe turns each left batch into candidate pairs, checks
//! the residual condition on them in chunks (three-valued), and emits by
//! kind: matched pairs, left rows padded with NULLs (Left, Full, Single),
//! left rows alone (Semi, Anti) or with a mark (Mark). Right and Full
//! joins record matched build rows in shared flags; the stage's `finish`
//! emits the unmatched ones once every worker is done.
//!
//! NULL keys never match. Mark (`x IN (subquery)`): TRUE if some pair's
//! condition is TRUE; else NULL if some pair's condition is NULL, where a
//! left row with a NULL key is compared with every right row and any left
//! row with the right rows having a NULL key; else FALSE.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt32Array, new_null_array};
use arrow_ord::cmp;

use super::build::{as_bool, build, build_node};
use super::grace::{BuildPartitions, GraceJoin, ProbeInput, chained};
use super::hashing::{KeyIndex, NO_ROW};
use super::join_keys;
use super::metrics::MetricsNode;
use super::pipeline::{BoxOp, Pipeline, Stage, Transform};
use super::util::{KeyEncoder, any_null, arrow_err, concat, conform, make_batch, slice_bytes, take_columns};
use super::work_mem::Reservation;
use super::{ExecContext, check_interrupts, expr};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Expr, HashBuild, JoinAlgorithm, JoinKind, Node, Plan, Schema};
use crate::types::DataType;

/// Candidate pairs checked against the condition at once.
pub(super) const PAIR_CHUNK: usize = 16 * 1024;

pub fn build_join(plan: &Plan, ctx: &ExecContext) -> Result<(Pipeline, Arc<MetricsNode>)> {
    let Node::Join { left, right, kind, on, algorithm } = &plan.node else {
        return Err(SqlError::internal("build_join of a non-join"));
    };
    let (left_keys, right_keys, residual) = match algorithm {
        JoinAlgorithm::Hash { build: HashBuild::Left, .. } => return super::semi_build::build_semi_left(plan, ctx),
        JoinAlgorithm::Hash { left_keys, right_keys, .. } => (left_keys.clone(), right_keys.clone(), on.clone()),
        JoinAlgorithm::NestedLoop => (vec![], vec![], on.clone()),
        JoinAlgorithm::Unchosen => join_keys::extract(on.as_ref(), left.schema.len()),
        JoinAlgorithm::IndexNestedLoop { .. } => return super::index_join::build_index_join(plan, ctx),
    };
    let name = if left_keys.is_empty() { "NestedLoop" } else { "HashJoin" };
    let spec = JoinSpec::new(plan, left_keys, right_keys, residual)?;
    let (right_op, right_node) = build(right, ctx)?;
    // A left row without a partner is dropped: the build keys may filter
    // the left input's scan (runtime_filter.rs).
    let drops_unmatched = matches!(kind, JoinKind::Inner | JoinKind::Semi | JoinKind::Right);
    let batches = match BuildInput::read(right_op, ctx)? {
        BuildInput::Whole(batches) => batches,
        // Mark's NULL keys compare with every row: it cannot partition.
        over @ BuildInput::Over(..) if spec.left_keys.is_empty() || *kind == JoinKind::Mark => {
            over.whole(&format!("{name} {kind:?}"), ctx)?
        }
        BuildInput::Over(read, rest) => {
            let right_op = chained(read, rest);
            let filter = drops_unmatched && ctx.runtime_filters.would_reach(left, &spec.left_keys);
            let mut built = BuildPartitions::write(&spec, right_op, ctx, filter)?;
            if let Some(filter) = built.take_filter() {
                ctx.runtime_filters.offer_built(left, &spec.left_keys, filter);
            }
            let (left_op, left_node) = build(left, ctx)?;
            let node = MetricsNode::new(format!("{name} {kind:?}"), vec![left_node, right_node]);
            let op = GraceJoin::new(spec, built, ProbeInput::Op(left_op), ctx, &node)?;
            return Ok((super::build::op_pipeline(Box::new(op), &node), node));
        }
    };
    let build_side = BuildSide::from_batches(&batches, &right.schema, &spec.right_keys, &spec.key_types, ctx)?;
    drop(batches);
    if drops_unmatched {
        ctx.runtime_filters.offer(left, &spec.left_keys, &build_side.keys);
    }
    let (mut pipeline, left_node) = build_node(left, ctx)?;
    let node = MetricsNode::new(format!("{name} {kind:?}"), vec![left_node, right_node]);
    let probe = Probe::new(&spec, build_side);
    pipeline.stages.push(Stage { transform: Arc::new(probe), metrics: node.clone() });
    Ok((pipeline, node))
}

/// What a hash or nested-loop join computes, apart from its build rows.
#[derive(Clone)]
pub(super) struct JoinSpec {
    pub(super) kind: JoinKind,
    pub(super) left_keys: Vec<Expr>,
    pub(super) right_keys: Vec<Expr>,
    /// The type each key pair is compared (and encoded) in.
    pub(super) key_types: Vec<DataType>,
    pub(super) residual: Option<Expr>,
    pub(super) left_schema: Schema,
    pub(super) right_schema: Schema,
    pub(super) schema: Schema,
}

impl JoinSpec {
    /// The spec of join `plan` with these keys and residual condition.
    pub(super) fn new(
        plan: &Plan,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        residual: Option<Expr>,
    ) -> Result<Self> {
        let Node::Join { left, right, kind, .. } = &plan.node else {
            return Err(SqlError::internal("a join spec of a non-join"));
        };
        let key_types = left_keys.iter().zip(&right_keys).map(|(l, r)| key_type(l.ty(), r.ty())).collect();
        Ok(JoinSpec {
            kind: *kind,
            left_keys,
            right_keys,
            key_types,
            residual,
            left_schema: left.schema.clone(),
            right_schema: right.schema.clone(),
            schema: plan.schema.clone(),
        })
    }
}

/// The type both sides of a key are compared in.
pub(super) fn key_type(l: DataType, r: DataType) -> DataType {
    match (l, r) {
        _ if l == r => l,
        _ if l.is_integer() && r.is_integer() => DataType::Int64,
        (DataType::Numeric { scale: a, .. }, DataType::Numeric { scale: b, .. }) => {
            DataType::Numeric { precision: None, scale: a.max(b) }
        }
        (DataType::Numeric { .. }, _) if r.is_integer() => l,
        _ => r,
    }
}

pub(super) fn eval_keys(
    keys: &[Expr],
    types: &[DataType],
    batch: &RecordBatch,
    ctx: &ExecContext,
) -> Result<Vec<ArrayRef>> {
    keys.iter().zip(types).map(|(k, t)| conform(expr::evaluate(k, batch, ctx)?, t)).collect()
}

/// The build input (the right one, or a Semi/Anti join's left one:
/// `semi_build.rs`), whole, with its rows indexed by key.
pub(super) struct BuildSide {
    pub(super) batch: RecordBatch,
    pub(super) keys: Vec<ArrayRef>,
    pub(super) encoder: Option<KeyEncoder>,
    /// Encoded key → the rows with it, ascending (`hashing::KeyIndex`).
    pub(super) index: Option<KeyIndex>,
    /// Rows with a NULL in some key (they match nothing; Mark needs them).
    null_key_rows: Vec<u32>,
}

/// Bytes a build row's index entry is counted at while the build input is
/// read (`hashing::KeyIndex`: hash, chain link, at most four bucket heads,
/// and an encoded key of about 16 bytes with its offset).
const INDEX_ROW_BYTES: usize = 48;

/// A build input read up to `work_mem`: all of it, or the batches read
/// when the limit was reached (the last one over it) and the rest.
pub(super) enum BuildInput {
    Whole(Vec<RecordBatch>),
    Over(Vec<RecordBatch>, BoxOp),
}

impl BuildInput {
    pub(super) fn read(mut input: BoxOp, ctx: &ExecContext) -> Result<BuildInput> {
        let mut reservation = Reservation::new("Hash join", ctx.work_mem);
        let mut batches = Vec::new();
        while let Some(batch) = input.next()? {
            check_interrupts(ctx)?;
            // The rows' own bytes: `from_batches` copies them into one batch.
            let fits = reservation.try_grow(slice_bytes(&batch) + batch.num_rows() * INDEX_ROW_BYTES);
            batches.push(batch);
            if !fits {
                return Ok(BuildInput::Over(batches, input));
            }
        }
        Ok(BuildInput::Whole(batches))
    }

    /// All of it, or 53200 for an input over `work_mem` (operators that
    /// do not spill).
    pub(super) fn whole(self, operator: &str, ctx: &ExecContext) -> Result<Vec<RecordBatch>> {
        match self {
            BuildInput::Whole(batches) => Ok(batches),
            BuildInput::Over(..) => Err(SqlError::new(SqlState::OUT_OF_MEMORY, "out of memory")
                .with_detail(format!("{operator}'s build side needs more than work_mem ({} bytes)", ctx.work_mem))
                .with_hint("Raise work_mem (SET work_mem = '256MB'), or make the query's hash tables smaller.")),
        }
    }
}

impl BuildSide {
    /// `batches`, indexed by key (their memory counted by the caller).
    pub(super) fn from_batches(
        batches: &[RecordBatch],
        schema: &Schema,
        keys: &[Expr],
        types: &[DataType],
        ctx: &ExecContext,
    ) -> Result<BuildSide> {
        let batch = concat(schema, batches)?;
        if batch.num_rows() >= NO_ROW as usize {
            return Err(SqlError::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "a hash join's build side exceeds 2^32 rows"));
        }
        let key_arrays = eval_keys(keys, types, &batch, ctx)?;
        let mut side = BuildSide { batch, keys: key_arrays, encoder: None, index: None, null_key_rows: Vec::new() };
        if !keys.is_empty() {
            side.index(types, ctx)?;
        }
        Ok(side)
    }

    fn index(&mut self, types: &[DataType], ctx: &ExecContext) -> Result<()> {
        let encoder = KeyEncoder::new(&types.iter().map(|t| t.arrow()).collect::<Vec<_>>())?;
        let rows = encoder.encode(&self.keys)?;
        check_interrupts(ctx)?;
        let nulls = any_null(&self.keys, rows.num_rows());
        self.null_key_rows = (0..nulls.len() as u32).filter(|&i| nulls[i as usize]).collect();
        self.index = Some(KeyIndex::new(rows, &nulls));
        self.encoder = Some(encoder);
        Ok(())
    }

    pub(super) fn rows(&self) -> usize {
        self.batch.num_rows()
    }
}

pub(super) struct Probe {
    kind: JoinKind,
    left_keys: Vec<Expr>,
    key_types: Vec<DataType>,
    residual: Option<Expr>,
    build: BuildSide,
    left_width: usize,
    /// Left columns then right columns: what the condition reads.
    combined: Schema,
    schema: Schema,
    /// Right and Full: build rows that matched some left row.
    matched: Vec<AtomicBool>,
}

/// What the condition said about one left batch's candidates.
struct Outcome {
    /// Pairs whose condition is TRUE, in left-row order.
    pairs: (Vec<u32>, Vec<u32>),
    true_count: Vec<u32>,
    /// Some candidate's condition was NULL (Mark only).
    some_null: Vec<bool>,
}

impl Probe {
    pub(super) fn new(spec: &JoinSpec, build: BuildSide) -> Probe {
        let mut combined: Vec<_> = spec.left_schema.iter().cloned().collect();
        combined.extend(spec.right_schema.iter().cloned());
        let matched = (0..if matches!(spec.kind, JoinKind::Right | JoinKind::Full) { build.rows() } else { 0 })
            .map(|_| AtomicBool::new(false))
            .collect();
        Probe {
            kind: spec.kind,
            left_keys: spec.left_keys.clone(),
            key_types: spec.key_types.clone(),
            residual: spec.residual.clone(),
            build,
            left_width: spec.left_schema.len(),
            combined: Arc::new(combined),
            schema: spec.schema.clone(),
            matched,
        }
    }

    /// The left batch's rows at `li` beside the right rows at `ri`
    /// (`None` = NULLs), under `schema` (left then right columns).
    fn pair_batch(&self, left: &RecordBatch, li: &UInt32Array, ri: &UInt32Array) -> Result<RecordBatch> {
        let mut columns = take_columns(left, li)?;
        columns.extend(take_columns(&self.build.batch, ri)?);
        make_batch(&self.combined, columns, li.len())
    }

    /// The condition on pairs: the residual, AND key equality when
    /// `with_keys` (pairs not found through the hash table).
    fn check(
        &self,
        left: &RecordBatch,
        lkeys: &[ArrayRef],
        li: &[u32],
        ri: &[u32],
        with_keys: bool,
        ctx: &ExecContext,
    ) -> Result<BooleanArray> {
        let (li, ri) = (UInt32Array::from(li.to_vec()), UInt32Array::from(ri.to_vec()));
        let mut result: Option<BooleanArray> = None;
        let mut and = |b: BooleanArray| -> Result<()> {
            result = Some(match result.take() {
                None => b,
                Some(a) => arrow_arith::boolean::and_kleene(&a, &b).map_err(arrow_err)?,
            });
            Ok(())
        };
        if with_keys {
            for (lk, rk) in lkeys.iter().zip(&self.build.keys) {
                let l = arrow_select::take::take(lk.as_ref(), &li, None).map_err(arrow_err)?;
                let r = arrow_select::take::take(rk.as_ref(), &ri, None).map_err(arrow_err)?;
                and(cmp::eq(&l, &r).map_err(arrow_err)?)?;
            }
        }
        if let Some(residual) = &self.residual {
            let batch = self.pair_batch(left, &li, &ri)?;
            and(as_bool(&expr::evaluate(residual, &batch, ctx)?)?.clone())?;
        }
        Ok(result.unwrap_or_else(|| BooleanArray::from(vec![true; li.len()])))
    }

    /// Runs candidate pairs through the condition chunk by chunk.
    fn evaluate(
        &self,
        left: &RecordBatch,
        lkeys: &[ArrayRef],
        candidates: impl Iterator<Item = (u32, u32)>,
        with_keys: bool,
        out: &mut Outcome,
        ctx: &ExecContext,
    ) -> Result<()> {
        if self.residual.is_none() && !with_keys {
            // Every candidate's condition is TRUE: no chunks to check.
            for (l, r) in candidates {
                out.pairs.0.push(l);
                out.pairs.1.push(r);
                out.true_count[l as usize] += 1;
            }
            return check_interrupts(ctx);
        }
        let mut chunk: (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        let mut candidates = candidates.peekable();
        while candidates.peek().is_some() {
            chunk.0.clear();
            chunk.1.clear();
            for (l, r) in candidates.by_ref().take(PAIR_CHUNK) {
                chunk.0.push(l);
                chunk.1.push(r);
            }
            check_interrupts(ctx)?;
            let verdict = self.check(left, lkeys, &chunk.0, &chunk.1, with_keys, ctx)?;
            for (k, (&l, &r)) in chunk.0.iter().zip(&chunk.1).enumerate() {
                match (verdict.is_valid(k), verdict.value(k)) {
                    (true, true) => {
                        out.pairs.0.push(l);
                        out.pairs.1.push(r);
                        out.true_count[l as usize] += 1;
                    }
                    (false, _) => out.some_null[l as usize] = true,
                    (true, false) => {}
                }
            }
        }
        Ok(())
    }

    fn outcome(&self, left: &RecordBatch, ctx: &ExecContext) -> Result<Outcome> {
        let n = left.num_rows();
        let mut out = Outcome { pairs: (Vec::new(), Vec::new()), true_count: vec![0; n], some_null: vec![false; n] };
        let right_rows = self.build.rows() as u32;
        let Some(encoder) = &self.build.encoder else {
            let all = (0..n as u32).flat_map(|l| (0..right_rows).map(move |r| (l, r)));
            self.evaluate(left, &[], all, false, &mut out, ctx)?;
            return Ok(out);
        };
        let lkeys = eval_keys(&self.left_keys, &self.key_types, left, ctx)?;
        let rows = encoder.encode(&lkeys)?;
        let nulls = any_null(&lkeys, n);
        let index = self.build.index.as_ref().ok_or_else(|| SqlError::internal("a hash join without its index"))?;
        let build = &self.build;
        let mut hits = Vec::new();
        index.probe(&rows, &nulls, &mut hits);
        self.evaluate(left, &lkeys, hits.into_iter(), false, &mut out, ctx)?;
        if self.kind == JoinKind::Mark && right_rows > 0 {
            // Pairs whose key comparison is NULL, for rows not yet TRUE.
            let unmatched: Vec<u32> = (0..n as u32).filter(|&i| out.true_count[i as usize] == 0).collect();
            let null_rows = &build.null_key_rows;
            let extra = unmatched.into_iter().flat_map(|i| {
                let all: Box<dyn Iterator<Item = u32>> =
                    if nulls[i as usize] { Box::new(0..right_rows) } else { Box::new(null_rows.iter().copied()) };
                all.map(move |r| (i, r))
            });
            self.evaluate(left, &lkeys, extra, true, &mut out, ctx)?;
        }
        Ok(out)
    }
}

impl Transform for Probe {
    fn apply(&self, left: RecordBatch, ctx: &ExecContext) -> Result<RecordBatch> {
        let n = left.num_rows();
        let out = self.outcome(&left, ctx)?;
        if !self.matched.is_empty() {
            for &r in &out.pairs.1 {
                self.matched[r as usize].store(true, Ordering::Relaxed);
            }
        }
        match self.kind {
            JoinKind::Inner | JoinKind::Right => {
                let (li, ri) = (UInt32Array::from(out.pairs.0), UInt32Array::from(out.pairs.1));
                self.pair_batch(&left, &li, &ri)
            }
            JoinKind::Left | JoinKind::Full | JoinKind::Single => {
                if self.kind == JoinKind::Single && out.true_count.iter().any(|&c| c > 1) {
                    return Err(SqlError::new(
                        SqlState::CARDINALITY_VIOLATION,
                        "more than one row returned by a subquery used as an expression",
                    ));
                }
                self.padded(&left, &out)
            }
            JoinKind::Semi | JoinKind::Anti => {
                let want = self.kind == JoinKind::Semi;
                let keep: Vec<u32> = (0..n as u32).filter(|&i| (out.true_count[i as usize] > 0) == want).collect();
                let keep = UInt32Array::from(keep);
                make_batch(&self.schema, take_columns(&left, &keep)?, keep.len())
            }
            JoinKind::Mark => {
                let mark: BooleanArray = (0..n)
                    .map(|i| match (out.true_count[i] > 0, out.some_null[i]) {
                        (true, _) => Some(true),
                        (false, true) => None,
                        (false, false) => Some(false),
                    })
                    .collect();
                let mut columns = left.columns().to_vec();
                columns.push(Arc::new(mark));
                make_batch(&self.schema, columns, n)
            }
        }
    }

    fn finish(&self, _ctx: &ExecContext) -> Result<Option<RecordBatch>> {
        if self.matched.is_empty() {
            return Ok(None);
        }
        let unmatched: Vec<u32> =
            (0..self.matched.len() as u32).filter(|&r| !self.matched[r as usize].load(Ordering::Relaxed)).collect();
        if unmatched.is_empty() {
            return Ok(None);
        }
        let ri = UInt32Array::from(unmatched);
        let mut columns: Vec<ArrayRef> =
            self.combined[..self.left_width].iter().map(|f| new_null_array(&f.ty.arrow(), ri.len())).collect();
        columns.extend(take_columns(&self.build.batch, &ri)?);
        make_batch(&self.combined, columns, ri.len()).map(Some)
    }
}

impl Probe {
    /// Matched pairs and, for left rows without one, the row with NULLs,
    /// in left-row order.
    fn padded(&self, left: &RecordBatch, out: &Outcome) -> Result<RecordBatch> {
        let mut li = Vec::with_capacity(out.pairs.0.len());
        let mut ri: Vec<Option<u32>> = Vec::with_capacity(out.pairs.0.len());
        let mut at = 0;
        for i in 0..left.num_rows() as u32 {
            if out.true_count[i as usize] == 0 {
                li.push(i);
                ri.push(None);
            }
            while at < out.pairs.0.len() && out.pairs.0[at] == i {
                li.push(i);
                ri.push(Some(out.pairs.1[at]));
                at += 1;
            }
        }
        self.pair_batch(left, &UInt32Array::from(li), &UInt32Array::from(ri))
    }
}
