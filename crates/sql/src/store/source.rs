//! The executor's [`TableSource`] over a session's transaction.
//!
//! ```text
//!  Access::Host / Unchosen ─► Txn::host_scan (heads, delta pages: once)
//!       └─ per morsel of HOST_MORSEL_ROWS VIDs: host_tuples_range ─► raw tuples
//!            ─► BatchBuilder::push_tuples (decoded column by column) ─► batch
//!  Access::Ndp ─► one NDP rows call (ndp.snapshot on the PEs) ─► rows
//!       └─ per BATCH_ROWS rows: BatchBuilder ─► batch
//! ```
//!
//! Host scans stream: each batch reads only the pages its VIDs' chains
//! reach, so a scan holds one morsel at a time. An NDP rows call's output is
//! one device memory range read back whole (that is the link transfer the
//! call models), so its rows are materialised; their conversion to Arrow is
//! done a batch at a time.
//!
//! Filters: the store (device or host) evaluates a conjunction of up to 16
//! comparisons of a column with a constant ([`ndpdb_format::ndp::Predicate`]):
//! integers, dates, timestamps, numerics (scaled integers) and booleans
//! (`=`, `<>` only) by their stored integers, char/varchar/text by their
//! bytes (the C collation, which ndpdb's text comparisons follow). A date
//! compared with a timestamp (`d::timestamp < t`, what `date + interval`
//! gives) becomes a comparison of the date with the day that bounds `t`.
//! [`pushdown`] takes every conjunct of the scan's filter that is one
//! ([`device_term`], which the optimizer's cost model uses too); the source
//! reports `filter_applied` only when they are the whole filter. Both paths
//! push the same predicate and evaluate it with `Predicate::eval`, so they
//! return the same rows.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use ndpdb_format::ndp::{CmpOp, MAX_OPERAND_BYTES, MAX_TERMS, Operand, Predicate, Term};
use ndpdb_format::schema::{self as fs, ColumnType};
use ndpdb_storage::{Freshness, HostScan, RangeWalk, ScanStats, Table, Tuples};
use ndpdb_txn::{ReadMode, TxnError};
use parking_lot::Mutex;

use super::index::read as index_read;
use super::index::{IndexKeys, IndexStore, KeyRange};
use super::mapping::{BatchBuilder, rescale, storage_type};
use super::txn::{SqlTxn, store_error, txn_error};
use super::zone_skip;
use crate::catalog::{IndexDef, TableDef};
use crate::error::{Result, SqlError, SqlState};
use crate::exec::pipeline::Morsel;
use crate::exec::runtime_filter::ScanKeyFilter;
use crate::exec::{BATCH_ROWS, IndexLookup, ScanCounters, ScanOutput, ScanSpec, SpanUnion, TableSource, ZoneCounts};
use crate::plan::{Access, BinaryOp, Expr};
use crate::types::{DataType, Value};

/// Reads tables in a [`SqlTxn`], on the host or the device.
pub struct TxnSource {
    pub txn: SqlTxn,
    /// PEs of an NDP call.
    pub pes: u32,
    pub freshness: Freshness,
    /// The database's indexes (index scans and lookups); None: none.
    pub indexes: Option<Arc<IndexStore>>,
}

impl TxnSource {
    pub fn new(txn: SqlTxn, pes: u32, freshness: Freshness) -> TxnSource {
        TxnSource { txn, pes, freshness, indexes: None }
    }

    /// The source with index scans and lookups through `indexes`.
    pub fn with_indexes(self, indexes: Arc<IndexStore>) -> TxnSource {
        TxnSource { indexes: Some(indexes), ..self }
    }

    fn index_store(&self, index: &IndexDef) -> Result<&Arc<IndexStore>> {
        self.indexes.as_ref().ok_or_else(|| {
            SqlError::internal(format!("index \"{}\" is planned, but this source reads no indexes", index.name))
        })
    }
}

/// The storage table behind a SQL table (by the store's table id).
pub fn storage_table(txn: &SqlTxn, def: &TableDef) -> Result<Arc<Table>> {
    txn.database().store().tables().into_iter().find(|t| t.id == def.id).ok_or_else(|| {
        SqlError::internal(format!(
            "table \"{}\" has no storage table {} (catalog and store disagree)",
            def.name, def.id
        ))
    })
}

impl TableSource for TxnSource {
    fn scan(&self, spec: &ScanSpec<'_>) -> Result<ScanOutput> {
        let table = storage_table(&self.txn, spec.table)?;
        let mut projection = Vec::with_capacity(spec.columns.len());
        let mut names = Vec::with_capacity(spec.columns.len());
        for &c in spec.columns {
            let col = spec.table.columns.get(c).ok_or_else(|| SqlError::internal(format!("scan of column {c}")))?;
            projection.push(c as u16);
            names.push((col.name.clone(), col.ty));
        }
        let (predicate, remaining) = match spec.filter {
            Some(f) => match pushdown(f, spec)? {
                Some((p, rest)) => (Some(p), rest),
                None => (None, Some(f.clone())),
            },
            None => (None, None),
        };
        let snapshot = self.txn.statement_snapshot()?;
        let counters = Arc::new(Mutex::new(ScanCounters::default()));
        let batches: Box<dyn Iterator<Item = Result<Morsel>> + Send> = match spec.access {
            Access::Host | Access::Unchosen => {
                let scan = self.txn.with(|t| t.host_scan(&table))?;
                let end = scan.vids();
                let shared = HostShared {
                    txn: self.txn.clone(),
                    table,
                    scan,
                    snapshot,
                    projection,
                    predicate,
                    names,
                    emit_vid: spec.emit_vid,
                    key_filter: spec.key_filter.cloned(),
                    spare: Mutex::new(Vec::new()),
                    counters: counters.clone(),
                    modelled: Mutex::new(SpanUnion::default()),
                };
                Box::new(HostBatches { shared: Arc::new(shared), next: 0, end })
            }
            Access::Ndp => {
                let mode = ReadMode::Ndp { pes: self.pes, freshness: self.freshness };
                let result = self.txn.with(|t| t.rows_at(&table, &snapshot, &projection, predicate.as_ref(), mode))?;
                add_stats(&mut counters.lock(), &result.stats, table.vids(), (result.stats.modelled_s * 1e12) as u64);
                let builder = BatchBuilder::new(&names, spec.emit_vid, BATCH_ROWS)?;
                Box::new(
                    RowBatches { rows: result.rows.into_iter(), builder, done: false }.map(|b| b.map(Morsel::Ready)),
                )
            }
            Access::Index { index, lower, upper, lower_inclusive, upper_inclusive } => {
                // NDP: index scans run on the host; the device's in-storage
                // lookup (kv.lookup on the index image) could serve them
                // (hybridNDP, the next issue).
                let keys = IndexKeys::of(spec.table, index)?;
                let (lower, upper) = (literals(lower)?, literals(upper)?);
                let range = KeyRange::between(&keys, &lower, *lower_inclusive, &upper, *upper_inclusive)?;
                let vids = index_read::distinct(self.index_store(index)?.vids(&range)?);
                let point = (index.unique && *lower_inclusive && *upper_inclusive && lower == upper)
                    .then(|| keys.key_of(&lower.iter().collect::<Vec<_>>()).ok().flatten())
                    .flatten()
                    .filter(|_| lower.len() == index.columns.len());
                match point {
                    Some(key) => index_read::note_key_read(&self.txn, &table, &vids, &key, |row| {
                        Ok(keys.stored_key(spec.table, row)?.0)
                    })?,
                    None => index_read::note_read(&self.txn, &table)?,
                }
                let builder = BatchBuilder::new(&names, spec.emit_vid, BATCH_ROWS.min(vids.len().max(1)))?;
                let projection = spec.columns.to_vec();
                return Ok(ScanOutput {
                    batches: Box::new(
                        index_read::IndexBatches {
                            db: self.txn.database().clone(),
                            table,
                            snapshot,
                            vids: vids.into_iter(),
                            projection,
                            builder,
                            counters: counters.clone(),
                            qp: self.txn.database().store().device().queue_pair(),
                        }
                        .map(|b| b.map(Morsel::Ready)),
                    ),
                    remaining: spec.filter.cloned(),
                    counters,
                });
            }
        };
        Ok(ScanOutput { batches, remaining, counters })
    }

    fn index_lookup(&self, spec: &ScanSpec<'_>, index: &IndexDef, keys: &[Vec<Value>]) -> Result<IndexLookup> {
        let table = storage_table(&self.txn, spec.table)?;
        let layout = IndexKeys::of(spec.table, index)?;
        let ix = self.index_store(index)?;
        let snapshot = self.txn.statement_snapshot()?;
        index_read::note_read(&self.txn, &table)?;
        let names: Vec<(String, DataType)> =
            spec.columns.iter().map(|&c| (spec.table.columns[c].name.clone(), spec.table.columns[c].ty)).collect();
        let mut builder = BatchBuilder::new(&names, false, BATCH_ROWS)?;
        let db = self.txn.database();
        // Every key's entries first, then, a batch at a time, their heap
        // pages read together (`prefetch_versions`) and the versions: one
        // device round trip per run of pages instead of one per row. A
        // queue pair of the lookup's own counts what it reads.
        let mut found: Vec<(u32, u64)> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let refs: Vec<&Value> = key.iter().collect();
            let Some(k) = layout.key_of(&refs)? else { continue };
            found.extend(ix.vids(&KeyRange::exact(&k))?.into_iter().map(|vid| (i as u32, vid)));
        }
        let mut qp = db.store().device().queue_pair();
        let (mut owners, mut row) = (Vec::with_capacity(found.len()), Vec::with_capacity(spec.columns.len()));
        for chunk in found.chunks(db.store().prefetch_pages_max()) {
            let heads = chunk.iter().filter_map(|&(_, vid)| table.head(vid)).map(|h| h.rid);
            db.store().prefetch_versions(&table, heads, &mut qp).map_err(store_error)?;
            for &(i, vid) in chunk {
                let Some(values) = index_read::visible_via(db, &table, &snapshot, vid, Some(&mut qp))? else {
                    continue;
                };
                row.clear();
                row.extend(spec.columns.iter().map(|&c| values.get(c).cloned().unwrap_or(fs::Value::Null)));
                builder.push(vid, &row)?;
                owners.push(i);
            }
        }
        let (counters, span_ps) = index_read::queue_pair_counters(&qp, found.len() as u64);
        Ok(IndexLookup { rows: builder.finish()?, owners, counters, span_ps })
    }
}

/// The values of an index scan's bounds, which the executor resolved to
/// literals.
fn literals(exprs: &[Expr]) -> Result<Vec<Value>> {
    exprs
        .iter()
        .map(|e| match e {
            Expr::Literal { value, .. } => Ok(value.clone()),
            other => Err(SqlError::internal(format!("an index bound left unresolved: {other:?}"))),
        })
        .collect()
}

/// Adds a store call's counters, with `modelled_ps` of modelled time.
fn add_stats(c: &mut ScanCounters, s: &ScanStats, examined: u64, modelled_ps: u64) {
    c.link_bytes_to_host += s.counters.link_bytes_to_host;
    c.link_bytes_to_device += s.counters.link_bytes_to_device;
    c.medium_bytes_read += s.counters.medium_bytes_read;
    c.pe_busy_ps += s.counters.pe_busy_ps.iter().sum::<u64>();
    c.modelled_ps += modelled_ps;
    c.rows_examined += examined;
}

/// What every morsel of a host scan reads with: the table as the scan
/// began, the snapshot, and builders and tuple buffers to reuse.
struct HostShared {
    txn: SqlTxn,
    table: Arc<Table>,
    scan: HostScan,
    snapshot: ndpdb_format::ndp::Snapshot,
    projection: Vec<u16>,
    predicate: Option<Predicate>,
    names: Vec<(String, DataType)>,
    emit_vid: bool,
    /// A hash join's keys: tuples without a partner are dropped before
    /// they are decoded (`exec/runtime_filter.rs`).
    key_filter: Option<Arc<ScanKeyFilter>>,
    /// Builders and tuple buffers of finished morsels (at most one per
    /// worker is out at a time), so a morsel allocates only its output.
    spare: Mutex<Vec<(BatchBuilder, Tuples)>>,
    counters: Arc<Mutex<ScanCounters>>,
    /// The model-clock spans of the morsels read so far. Workers read
    /// morsels at the same time, each through its own queue pair, whose
    /// counters are exact ([`ndpdb_device::QueuePair::counters`]); their
    /// spans overlap, so the scan's modelled time is their union (the
    /// model-clock time during which it had reads outstanding), not their
    /// sum. One worker gives the sum.
    modelled: Mutex<SpanUnion>,
}

impl HostShared {
    /// The batch of VIDs `vids` (empty when none is visible), read and
    /// converted on the calling thread, beside other workers' morsels.
    fn morsel(&self, vids: Range<u64>) -> Result<RecordBatch> {
        if !self.txn.is_open() {
            return Err(txn_error(TxnError::Ended));
        }
        let (mut builder, mut tuples) = match self.spare.lock().pop() {
            Some(spare) => spare,
            None => (BatchBuilder::new(&self.names, self.emit_vid, HOST_MORSEL_ROWS)?, Tuples::new()),
        };
        tuples.clear();
        let (stats, zone_blocks) = self.walk(vids, &mut tuples)?;
        let removed = match &self.key_filter {
            Some(f) => Some(self.drop_unmatched(f, &mut tuples)?),
            None => None,
        };
        let modelled_ps = self.modelled.lock().add(stats.span_ps);
        let mut counters = self.counters.lock();
        add_stats(&mut counters, &stats, stats.visited, modelled_ps);
        counters.add(&ScanCounters { runtime_filtered: removed, zone_blocks, ..ScanCounters::default() });
        drop(counters);
        builder.push_tuples(&self.table.layout, &self.projection, &tuples)?;
        let batch = builder.finish()?;
        self.spare.lock().push((builder, tuples));
        Ok(batch)
    }
}

impl HostShared {
    /// The store walk of morsel `vids` into `tuples`: with a key filter,
    /// only the blocks its zone maps do not rule out, building the zones
    /// it lacks on the way (`zone_skip.rs`).
    fn walk(&self, vids: Range<u64>, tuples: &mut Tuples) -> Result<(ScanStats, Option<ZoneCounts>)> {
        let mut zones = self
            .key_filter
            .as_ref()
            .map(|f| zone_skip::plan(&self.table, &self.scan, f.column, &f.filter, vids.clone()));
        let (ranges, build) = match zones.as_mut() {
            Some(z) => (std::mem::take(&mut z.ranges), z.build.as_mut()),
            None => (vec![vids], None),
        };
        let walk = RangeWalk { ranges: &ranges, zones: build };
        let stats = self
            .txn
            .database()
            .store()
            .host_tuples_ranges(&self.table, &self.scan, &self.snapshot, self.predicate.as_ref(), walk, tuples)
            .map_err(|e| txn_error(TxnError::from(e)))?;
        if let Some(built) = zones.as_ref().and_then(|z| z.build.as_ref()) {
            self.table.publish_zones(self.scan.epoch(), built);
        }
        Ok((stats, zones.map(|z| z.counts)))
    }

    /// Drops the tuples whose key column is NULL or not among `f`'s keys;
    /// returns how many it dropped.
    fn drop_unmatched(&self, f: &ScanKeyFilter, tuples: &mut Tuples) -> Result<u64> {
        let layout = &self.table.layout;
        let removed = tuples.retain(|vid, data| match layout.column(data, f.column) {
            Ok(fs::Value::Int(k)) => Ok(f.filter.contains(k)),
            Ok(_) => Ok(false),
            Err(e) => Err(SqlError::new(SqlState::DATA_CORRUPTED, format!("VID {vid}: {e}"))),
        })?;
        Ok(removed as u64)
    }
}

/// VIDs per host scan morsel (and rows at most per batch it makes): four
/// batches' worth. Each morsel's walk starts its page reads afresh, so
/// larger morsels keep more reads in flight; and a page whose tuples
/// straddle two morsels is read by both, so they also read fewer pages: a
/// lineitem scan at TPC-H SF 1 (Q6) read 130,671 pages (1,070,456,832 B) in
/// 2,048-VID morsels and 128,510 in 8,192-VID ones, and took 0.29 s
/// against 0.26 s (session 11, when each command still woke a device
/// thread).
const HOST_MORSEL_ROWS: usize = 4 * BATCH_ROWS;

/// A host scan: one morsel of [`HOST_MORSEL_ROWS`] VIDs per batch, each read
/// where it is run ([`Morsel::Deferred`]).
struct HostBatches {
    shared: Arc<HostShared>,
    next: u64,
    end: u64,
}

impl Iterator for HostBatches {
    type Item = Result<Morsel>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let vids = self.next..(self.next + HOST_MORSEL_ROWS as u64).min(self.end);
        self.next = vids.end;
        let shared = self.shared.clone();
        Some(Ok(Morsel::Deferred(Box::new(move || shared.morsel(vids)))))
    }
}

/// Rows already read (an NDP call's), BATCH_ROWS per batch.
struct RowBatches {
    rows: std::vec::IntoIter<(u64, Vec<fs::Value>)>,
    builder: BatchBuilder,
    done: bool,
}

impl Iterator for RowBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        for (vid, values) in self.rows.by_ref().take(BATCH_ROWS) {
            if let Err(e) = self.builder.push(vid, &values) {
                self.done = true;
                return Some(Err(e));
            }
        }
        if self.builder.is_empty() {
            self.done = true;
            return None;
        }
        Some(self.builder.finish())
    }
}

/// The conjuncts of `filter` (over the scan's output columns) the store
/// can evaluate, as one predicate (at most [`MAX_TERMS`] terms, in the
/// filter's order), and the conjuncts left for the executor (in order;
/// None when the predicate is the whole filter).
pub fn pushdown(filter: &Expr, spec: &ScanSpec<'_>) -> Result<Option<(Predicate, Option<Expr>)>> {
    let mut conjuncts = Vec::new();
    flatten_and(filter, &mut conjuncts);
    let (mut terms, mut rest) = (Vec::new(), Vec::new());
    for c in conjuncts {
        match store_term(c, spec)? {
            Some(term) if terms.len() < MAX_TERMS => terms.push(term),
            _ => rest.push(c.clone()),
        }
    }
    let rest = rest.into_iter().reduce(Expr::and);
    Ok((!terms.is_empty()).then_some((Predicate { terms }, rest)))
}

/// A conjunct as a store term, when the store's type of its column agrees
/// with the term's kind.
fn store_term(c: &Expr, spec: &ScanSpec<'_>) -> Result<Option<Term>> {
    let Some((index, op, value)) = device_term(c) else { return Ok(None) };
    let Some(&column) = spec.columns.get(index) else { return Ok(None) };
    let Some(def) = spec.table.columns.get(column) else { return Ok(None) };
    let st = storage_type(def)?;
    let text = matches!(st, ColumnType::Text(_) | ColumnType::Varchar(_));
    if text != matches!(value, Operand::Bytes(_)) || st == ColumnType::Float64 {
        return Ok(None);
    }
    Ok(Some(Term { column: column as u16, op, value }))
}

fn flatten_and<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Binary { op: BinaryOp::And, left, right, .. } => {
            flatten_and(left, out);
            flatten_and(right, out);
        }
        other => out.push(other),
    }
}

/// Microseconds of a day (a date as a timestamp is its midnight).
const US_PER_DAY: i64 = 86_400_000_000;

/// `column op constant` (or `constant op column`) as a store term: the
/// column's index in the scan's output, the operator and the constant,
/// when the store's comparison means exactly what SQL's does (exact
/// values of the column's type; text by bytes; a char column only against
/// a constant without trailing spaces, where bpchar and text agree). A
/// date column cast to timestamp against a timestamp compares the date
/// with the bounding day. The optimizer's cost model counts the same
/// conjuncts (`device_evaluable`).
pub fn device_term(e: &Expr) -> Option<(usize, CmpOp, Operand)> {
    let Expr::Binary { op, left, right, .. } = e else { return None };
    let (column, value, op) = match (left.as_ref(), right.as_ref()) {
        (c, Expr::Literal { value, .. }) => (c, value, *op),
        (Expr::Literal { value, .. }, c) => (c, value, op.commuted()),
        _ => return None,
    };
    let op = match op {
        BinaryOp::Eq => CmpOp::Eq,
        BinaryOp::NotEq => CmpOp::Ne,
        BinaryOp::Lt => CmpOp::Lt,
        BinaryOp::LtEq => CmpOp::Le,
        BinaryOp::Gt => CmpOp::Gt,
        BinaryOp::GtEq => CmpOp::Ge,
        _ => return None,
    };
    match column {
        Expr::Column { index, ty } => Some((*index, op, operand(value, *ty, op)?)),
        Expr::Cast { expr, ty: DataType::Timestamp } => match (expr.as_ref(), value) {
            (Expr::Column { index, ty: DataType::Date }, Value::Timestamp(t)) => {
                let (op, day) = date_bound(op, *t)?;
                Some((*index, op, Operand::Int(day)))
            }
            _ => None,
        },
        _ => None,
    }
}

/// `date::timestamp op t` as `date op' day`: the date's midnight is
/// `date · US_PER_DAY`. None when no day bounds it exactly (`=` or `<>` a
/// timestamp that is not a midnight).
fn date_bound(op: CmpOp, t: i64) -> Option<(CmpOp, i64)> {
    let floor = t.div_euclid(US_PER_DAY);
    let ceil = floor + i64::from(t.rem_euclid(US_PER_DAY) != 0);
    match op {
        CmpOp::Lt | CmpOp::Ge => Some((op, ceil)),
        CmpOp::Le | CmpOp::Gt => Some((op, floor)),
        CmpOp::Eq | CmpOp::Ne => (floor == ceil).then_some((op, floor)),
    }
}

/// A literal as the stored value of a column of type `ty` that `op`
/// compares exactly as SQL does.
fn operand(v: &Value, ty: DataType, op: CmpOp) -> Option<Operand> {
    match (ty, v) {
        (DataType::Char(_), Value::Text(t)) if !t.ends_with(' ') && t.len() <= MAX_OPERAND_BYTES => {
            Some(Operand::Bytes(t.as_bytes().to_vec()))
        }
        (DataType::Varchar(_) | DataType::Text, Value::Text(t)) if t.len() <= MAX_OPERAND_BYTES => {
            Some(Operand::Bytes(t.as_bytes().to_vec()))
        }
        (DataType::Bool, _) if !matches!(op, CmpOp::Eq | CmpOp::Ne) => None,
        (DataType::Float64 | DataType::Interval | DataType::Unknown, _) => None,
        _ => constant(v, ty).map(Operand::Int),
    }
}

/// A literal as the stored integer of a column of type `ty`, when the
/// comparison means the same on the stored integers (exact values only).
fn constant(v: &Value, ty: DataType) -> Option<i64> {
    let int = match v {
        Value::Int16(x) => Some(i64::from(*x)),
        Value::Int32(x) => Some(i64::from(*x)),
        Value::Int64(x) => Some(*x),
        _ => None,
    };
    match (ty, v) {
        (DataType::Int16 | DataType::Int32 | DataType::Int64, _) => int,
        (DataType::Numeric { scale, .. }, Value::Numeric { value, scale: from }) => {
            let scaled = rescale(*value, *from, scale)?;
            // Exact only: 1.234 against a scale-2 column is not 1.23.
            (rescale(scaled, scale, *from)? == *value).then_some(())?;
            i64::try_from(scaled).ok()
        }
        (DataType::Numeric { scale, .. }, _) => i64::try_from(rescale(i128::from(int?), 0, scale)?).ok(),
        (DataType::Date, Value::Date(d)) => Some(i64::from(*d)),
        (DataType::Timestamp, Value::Timestamp(t)) => Some(*t),
        (DataType::Bool, Value::Bool(b)) => Some(i64::from(*b)),
        _ => None,
    }
}
