//! The snapshot experiment on ndpdb: the plan applied in batched
//! transactions, a transaction held open at each marker, then the query in
//! each marker's snapshot with NDP (each PE count) and the host-only block
//! stack (each worker count).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use ndpdb_device::{Device, DeviceOptions};
use ndpdb_format::ndp::{Aggregate, Predicate};
use ndpdb_format::schema::{ColumnType, Value, format_timestamp};
use ndpdb_format::text::{self, decimal_scale, format_scaled};
use ndpdb_storage::{AggregateResult, Freshness, Store, Table};
use ndpdb_txn::{Database, Isolation, ReadMode, Txn};
use ndpdb_workload::{OL_AMOUNT, ORDER_LINE, OrderLineGen, order_line_columns};

use super::{Base, Config, LOAD_TIME_US, Row, median_index, plan_sizes, same_answers, settle_writeback};
use crate::compose::{Action, Level, Workload};
use crate::orderline;

/// Tuples per ndpdb transaction when applying steps.
const BATCH: usize = 5_000;

/// A marker's open transaction, and the live tuples it sees.
struct Marker<'db> {
    txn: Txn<'db>,
    label: String,
    rows: u64,
}

/// Runs `w`'s plan and query on a fresh ndpdb database in `dir`.
pub(super) fn run(
    w: &Workload,
    plan: &[Action],
    cfg: &Config,
    dir: &Path,
    base: &Base<'_>,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Vec<Row>> {
    let (inserted, changes) = plan_sizes(plan);
    let (capacity, opts) = orderline::sizing(inserted, inserted + changes);
    let dev = Device::create(dir, cfg.profile.clone(), Some(capacity), DeviceOptions::with_clock(cfg.clock))?;
    let db = Database::new(Store::new(dev, opts)?);
    if cfg.freshness.contains(&Freshness::Cbm) {
        // Before the load: every delta page is then started in a frame the
        // device's mirror knows, as in a store that runs CBM calls.
        db.store().prepare_cbm()?;
    }
    let table = db.create_table(ORDER_LINE, order_line_columns())?;
    let query = Query::new(w, &table)?;
    let mut markers = apply(&db, &table, plan, cfg.seed, progress)?;
    db.store().sync_device()?;
    settle_writeback();
    let rows = measure(&mut markers, &table, &query, cfg, base)?;
    for m in markers {
        m.txn.commit()?;
    }
    Ok(rows)
}

/// The workload's query on ndpdb's table, checked against its columns.
struct Query {
    func: Aggregate,
    column: usize,
    /// The column is a timestamp (min and max print as one).
    timestamp: bool,
    /// Decimals of the answer.
    scale: u32,
    predicate: Option<Predicate>,
}

impl Query {
    fn new(w: &Workload, table: &Table) -> Result<Query> {
        let func = w.query.op;
        let column = if func == Aggregate::CountStar {
            0
        } else {
            table
                .column_index(&w.query.column)
                .with_context(|| format!("ORDER_LINE has no column {}", w.query.column))?
        };
        let ty = table.columns[column].ty;
        let timestamp = ty == ColumnType::Timestamp && func != Aggregate::CountStar;
        if timestamp && matches!(func, Aggregate::Sum | Aggregate::Avg) {
            bail!(
                "query: {}({}) of a timestamp is not defined (as in PostgreSQL); use min, max or count",
                text::aggregate_name(func),
                w.query.column
            );
        }
        if !matches!(ty, ColumnType::Int32 | ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp)
            && func != Aggregate::CountStar
        {
            bail!("query column {} must be an integer, decimal or timestamp column", w.query.column);
        }
        let predicate =
            w.query.predicate.as_deref().map(|p| text::parse_predicate(&table.name, &table.columns, p)).transpose()?;
        let scale = if matches!(func, Aggregate::CountStar | Aggregate::Count) { 0 } else { decimal_scale(ty) };
        Ok(Query { func, column, timestamp, scale, predicate })
    }

    /// The answer as text, comparable with PostgreSQL's.
    fn answer(&self, r: &AggregateResult) -> Option<String> {
        match self.func {
            // AVG: the exact quotient to 12 places, comparable with PostgreSQL's.
            Aggregate::Avg => (r.partial.values > 0).then(|| {
                format!("{:.12}", r.partial.sum as f64 / r.partial.values as f64 / 10f64.powi(self.scale as i32))
            }),
            // min/max of a timestamp, as PostgreSQL prints one.
            Aggregate::Min | Aggregate::Max if self.timestamp => {
                r.value.map(|v| i64::try_from(v).map_or_else(|_| v.to_string(), format_timestamp))
            }
            _ => r.value.map(|v| format_scaled(v, self.scale)),
        }
    }
}

/// Applies the plan; returns the markers' open transactions.
fn apply<'db>(
    db: &'db Database,
    table: &Arc<Table>,
    plan: &[Action],
    seed: u64,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Vec<Marker<'db>>> {
    let amount = table.column_index(OL_AMOUNT).context("ol_amount")?;
    let mut tuples = OrderLineGen::new(seed, LOAD_TIME_US);
    let mut markers = Vec::new();
    let mut live = 0u64;
    for (i, a) in plan.iter().enumerate() {
        let phase = format!("ndpdb step {}", i + 1);
        match a {
            Action::Insert { count, .. } => {
                insert(db, table, &mut tuples, *count, &mut |done| progress(&phase, done, *count))?;
                live += count;
            }
            Action::Update(ups) => {
                update(db, table, amount, ups, &mut |done| progress(&phase, done, ups.len() as u64))?;
            }
            Action::Delete(vids) => {
                for chunk in vids.chunks(BATCH) {
                    let mut t = db.begin(Isolation::ReadCommitted);
                    for &vid in chunk {
                        t.delete(table, vid)?;
                    }
                    t.commit()?;
                }
                live -= vids.len() as u64;
            }
            Action::Marker { level, label } => {
                let iso = match level {
                    Level::RepeatableRead => Isolation::RepeatableRead,
                    Level::Serializable => Isolation::Serializable,
                };
                let mut txn = db.begin(iso);
                txn.statement_snapshot()?;
                markers.push(Marker { txn, label: label.clone(), rows: live });
            }
        }
    }
    Ok(markers)
}

/// Inserts the generator's next `count` tuples, [`BATCH`] a transaction.
fn insert(
    db: &Database,
    table: &Arc<Table>,
    tuples: &mut OrderLineGen,
    count: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<()> {
    let mut done = 0;
    while done < count {
        let mut t = db.begin(Isolation::ReadCommitted);
        for o in tuples.by_ref().take((count - done).min(BATCH as u64) as usize) {
            t.insert(table, &o.values())?;
            done += 1;
        }
        t.commit()?;
        progress(done);
    }
    Ok(())
}

/// Gives each (VID, amount) its new `ol_amount`, [`BATCH`] a transaction.
fn update(
    db: &Database,
    table: &Arc<Table>,
    amount: usize,
    ups: &[(u64, i64)],
    progress: &mut dyn FnMut(u64),
) -> Result<()> {
    for (k, chunk) in ups.chunks(BATCH).enumerate() {
        let mut t = db.begin(Isolation::ReadCommitted);
        for &(vid, a) in chunk {
            let mut row = t.get(table, vid)?.with_context(|| format!("VID {vid} vanished"))?;
            row[amount] = Value::Int(a);
            t.update(table, vid, &row)?;
        }
        t.commit()?;
        progress(((k + 1) * BATCH).min(ups.len()) as u64);
    }
    Ok(())
}

/// The query at every marker on every ndpdb engine, `cfg.repeat` runs each.
/// Flush runs after every other engine at every marker (it writes the
/// delta buffer the others read); the rows come in marker order.
fn measure(
    markers: &mut [Marker<'_>],
    table: &Arc<Table>,
    query: &Query,
    cfg: &Config,
    base: &Base<'_>,
) -> Result<Vec<Row>> {
    let ndp =
        |freshness| cfg.pes.iter().map(move |&pes| ("ndpdb-ndp", Some(pes), None, ReadMode::Ndp { pes, freshness }));
    let mut first: Vec<Mode> =
        [Freshness::Ship, Freshness::Cbm].into_iter().filter(|f| cfg.freshness.contains(f)).flat_map(ndp).collect();
    first.extend(cfg.workers.iter().map(|&w| ("ndpdb-host", None, Some(w), ReadMode::Host { workers: w })));
    let flush: Vec<Mode> =
        if cfg.freshness.contains(&Freshness::Flush) { ndp(Freshness::Flush).collect() } else { vec![] };
    let mut rows: Vec<(usize, usize, Row)> = Vec::new();
    for (pass, modes) in [first, flush].iter().enumerate() {
        for (i, m) in markers.iter_mut().enumerate() {
            rows.extend(measure_modes(m, table, query, cfg, base, modes)?.into_iter().map(|r| (i, pass, r)));
        }
    }
    rows.sort_by_key(|r| (r.0, r.1));
    Ok(rows.into_iter().map(|r| r.2).collect())
}

/// An ndpdb engine configuration: engine, PEs, workers, read mode.
type Mode = (&'static str, Option<u32>, Option<usize>, ReadMode);

/// The query at marker `m` on each of `modes`.
fn measure_modes(
    m: &mut Marker<'_>,
    table: &Arc<Table>,
    query: &Query,
    cfg: &Config,
    base: &Base<'_>,
    modes: &[Mode],
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &(engine, pes, workers, mode) in modes {
        let mut runs = Vec::new();
        for _ in 0..cfg.repeat.max(1) {
            runs.push(m.txn.aggregate(table, query.func, query.column as u16, query.predicate.as_ref(), mode)?);
        }
        let walls: Vec<f64> = runs.iter().map(|r| r.stats.wall_s).collect();
        let answers: Vec<Option<String>> = runs.iter().map(|r| query.answer(r)).collect();
        same_answers(engine, &m.label, &answers)?;
        let r = &runs[median_index(&walls)];
        let mut row = measured(base(engine, pes, workers, &m.label, m.rows), query.answer(r), r);
        row.wall_s_runs = walls;
        row.freshness = freshness(mode);
        row.control = Some(orderline::control(&mut m.txn, table, query.predicate.as_ref(), mode)?);
        rows.push(row);
    }
    Ok(rows)
}

fn measured(mut row: Row, result: Option<String>, r: &AggregateResult) -> Row {
    row.result = result;
    row.wall_s = r.stats.wall_s;
    row.modelled_s = Some(r.stats.modelled_s);
    row.link_bytes_to_host = Some(r.stats.counters.link_bytes_to_host);
    row.link_bytes_to_device = Some(r.stats.counters.link_bytes_to_device);
    row.dma_bytes_read = Some(r.stats.counters.dma_bytes_read);
    row.medium_bytes_read = Some(r.stats.counters.medium_bytes_read);
    row.completions = Some(r.stats.counters.completions);
    row.late_completions = Some(r.stats.counters.late_completions);
    row.versions_visited = Some(r.partial.visited);
    row.host_cpu_s = (row.engine == "ndpdb-host").then_some(r.stats.host_cpu_s);
    row
}

/// The freshness of a read mode, for its row (None: host-only).
fn freshness(mode: ReadMode) -> Option<&'static str> {
    match mode {
        ReadMode::Ndp { freshness, .. } => Some(freshness.name()),
        ReadMode::Host { .. } => None,
    }
}
