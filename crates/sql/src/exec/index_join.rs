//! Index nested-loop join: for each left row, the right table's rows found
//! through an index on the join key, in the left input's pipeline.
//!
//! ```text
//!  left batch ─► key values per row (NULL: no lookup)
//!     ─► TableSource::index_lookup (one lookup of the key, or of a leading part
//!        of it, per row) ─► right rows + owner row
//!     ─► right scan's filter ─► pairs (left row, right row) ─► join condition (whole `on`)
//!     ─► by kind: Inner pairs │ Left pairs + unmatched padded │ Semi / Anti left rows
//! ```
//!
//! The whole join condition is evaluated on each pair, key equalities
//! included: an index entry may be stale (`store/index/mod.rs`), and the
//! key's type may differ from the column's (an integer probe of a bigint
//! column is converted exactly; a value no stored key can equal finds
//! nothing). The right side is a plain Scan (the optimizer's rule); it is
//! never read whole. Right rows are read on the host (the device's
//! in-storage lookup could serve them later: hybridNDP).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array, new_null_array};
use parking_lot::Mutex;

use super::build::{as_bool, build_node};
use super::metrics::MetricsNode;
use super::pipeline::{Pipeline, Stage, Transform};
use super::util::{make_batch, take_columns};
use super::{ExecContext, IndexLookup, ScanCounters, ScanSpec, SpanUnion, expr};
use crate::catalog::{IndexDef, TableDef};
use crate::error::{Result, SqlError};
use crate::plan::{Access, Expr, JoinAlgorithm, JoinKind, Node, Plan, Schema};
use crate::types::arrow::value_at;

pub fn build_index_join(plan: &Plan, ctx: &ExecContext) -> Result<(Pipeline, Arc<MetricsNode>)> {
    let Node::Join { left, right, kind, on, algorithm: JoinAlgorithm::IndexNestedLoop { index, keys } } = &plan.node
    else {
        return Err(SqlError::internal("build_index_join of a join that is not an index nested loop"));
    };
    let Node::Scan { table, columns, filter, emit_vid: false, .. } = &right.node else {
        return Err(SqlError::internal("an index nested-loop join whose right input is not a plain scan"));
    };
    if !matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti) {
        return Err(SqlError::internal(format!("an index nested-loop {kind:?} join")));
    }
    let (mut pipeline, left_node) = build_node(left, ctx)?;
    let right_node = MetricsNode::new(format!("Index Scan using {} on {}", index.name, table.name), vec![]);
    let lookups = Arc::new(Mutex::new(ScanCounters::default()));
    *right_node.scan.lock() = Some(lookups.clone());
    let node = MetricsNode::new(format!("IndexNestedLoop {kind:?}"), vec![left_node, right_node.clone()]);
    let mut combined: Vec<_> = left.schema.iter().cloned().collect();
    combined.extend(right.schema.iter().cloned());
    let probe = IndexProbe {
        kind: *kind,
        keys: keys.clone(),
        table: table.clone(),
        columns: columns.clone(),
        index: index.clone(),
        right_filter: filter.clone(),
        on: on.clone(),
        left_width: left.schema.len(),
        right_schema: right.schema.clone(),
        combined: Arc::new(combined),
        schema: plan.schema.clone(),
        right_node,
        lookups,
        modelled: Mutex::new(SpanUnion::default()),
    };
    pipeline.stages.push(Stage { transform: Arc::new(probe), metrics: node.clone() });
    Ok((pipeline, node))
}

struct IndexProbe {
    kind: JoinKind,
    /// Over the left input, one per index column.
    keys: Vec<Expr>,
    table: Arc<TableDef>,
    columns: Vec<usize>,
    index: Arc<IndexDef>,
    /// Over the right scan's output.
    right_filter: Option<Expr>,
    /// Over left ‖ right.
    on: Option<Expr>,
    left_width: usize,
    right_schema: Schema,
    combined: Schema,
    schema: Schema,
    right_node: Arc<MetricsNode>,
    /// The device counters of every lookup's page reads; their modelled
    /// time is the union of the lookups' spans (workers probe at once).
    lookups: Arc<Mutex<ScanCounters>>,
    modelled: Mutex<SpanUnion>,
}

impl IndexProbe {
    /// Pairs (left row, right row) that satisfy the right filter and `on`.
    fn pairs(&self, left: &RecordBatch, ctx: &ExecContext) -> Result<(Vec<u32>, RecordBatch, Vec<u32>)> {
        let key_arrays: Vec<ArrayRef> =
            self.keys.iter().map(|k| expr::evaluate(k, left, ctx)).collect::<Result<_>>()?;
        let (mut probes, mut probe_rows) = (Vec::new(), Vec::new());
        'rows: for row in 0..left.num_rows() {
            let mut key = Vec::with_capacity(key_arrays.len());
            for a in &key_arrays {
                let v = value_at(a.as_ref(), row)?;
                if v.is_null() {
                    continue 'rows;
                }
                key.push(v);
            }
            probes.push(key);
            probe_rows.push(row as u32);
        }
        let access = Access::Host;
        let spec = ScanSpec {
            table: &self.table,
            columns: &self.columns,
            filter: None,
            emit_vid: false,
            access: &access,
            key_filter: None,
        };
        let found = ctx.source.index_lookup(&spec, &self.index, &probes)?;
        self.count(&found);
        let rows = make_batch(&self.right_schema, found.rows.columns().to_vec(), found.rows.num_rows())?;
        let mut li: Vec<u32> = found.owners.iter().map(|&p| probe_rows[p as usize]).collect();
        let mut ri: Vec<u32> = (0..rows.num_rows() as u32).collect();
        if let Some(f) = &self.right_filter {
            let mask = expr::evaluate(f, &rows, ctx)?;
            let mask = as_bool(&mask)?;
            let keep: Vec<usize> = (0..ri.len()).filter(|&i| mask.is_valid(i) && mask.value(i)).collect();
            li = keep.iter().map(|&i| li[i]).collect();
            ri = keep.iter().map(|&i| ri[i]).collect();
        }
        if let Some(on) = &self.on {
            let pairs = self.pair_batch(left, &rows, &li, &ri)?;
            let mask = expr::evaluate(on, &pairs, ctx)?;
            let mask = as_bool(&mask)?;
            let keep: Vec<usize> = (0..li.len()).filter(|&i| mask.is_valid(i) && mask.value(i)).collect();
            li = keep.iter().map(|&i| li[i]).collect();
            ri = keep.iter().map(|&i| ri[i]).collect();
        }
        self.right_node.add_rows(ri.len());
        Ok((li, rows, ri))
    }

    fn count(&self, found: &IndexLookup) {
        let modelled_ps = found.span_ps.map_or(0, |span| self.modelled.lock().add(span));
        self.lookups.lock().add(&ScanCounters { modelled_ps, ..found.counters });
    }

    fn pair_batch(&self, left: &RecordBatch, right: &RecordBatch, li: &[u32], ri: &[u32]) -> Result<RecordBatch> {
        let mut columns = take_columns(left, &UInt32Array::from(li.to_vec()))?;
        columns.extend(take_columns(right, &UInt32Array::from(ri.to_vec()))?);
        make_batch(&self.combined, columns, li.len())
    }
}

impl Transform for IndexProbe {
    fn apply(&self, left: RecordBatch, ctx: &ExecContext) -> Result<RecordBatch> {
        let n = left.num_rows();
        let (li, right, ri) = self.pairs(&left, ctx)?;
        let mut matched = vec![false; n];
        for &l in &li {
            matched[l as usize] = true;
        }
        match self.kind {
            JoinKind::Inner => {
                let b = self.pair_batch(&left, &right, &li, &ri)?;
                make_batch(&self.schema, b.columns().to_vec(), b.num_rows())
            }
            JoinKind::Left => {
                let pairs = self.pair_batch(&left, &right, &li, &ri)?;
                let lone: Vec<u32> = (0..n as u32).filter(|&i| !matched[i as usize]).collect();
                let lone_idx = UInt32Array::from(lone);
                let mut pad = take_columns(&left, &lone_idx)?;
                pad.extend(
                    self.combined[self.left_width..].iter().map(|f| new_null_array(&f.ty.arrow(), lone_idx.len())),
                );
                let padded = make_batch(&self.combined, pad, lone_idx.len())?;
                let all = arrow_select::concat::concat_batches(&pairs.schema(), [&pairs, &padded])
                    .map_err(super::util::arrow_err)?;
                make_batch(&self.schema, all.columns().to_vec(), all.num_rows())
            }
            JoinKind::Semi | JoinKind::Anti => {
                let want = self.kind == JoinKind::Semi;
                let keep =
                    UInt32Array::from((0..n as u32).filter(|&i| matched[i as usize] == want).collect::<Vec<_>>());
                make_batch(&self.schema, take_columns(&left, &keep)?, keep.len())
            }
            other => Err(SqlError::internal(format!("an index nested-loop {other:?} join"))),
        }
    }
}
