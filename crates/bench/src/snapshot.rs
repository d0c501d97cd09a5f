//! `ndpdb bench snapshot`: the neoDBMS demonstration (ICDE'22, section III,
//! Figs. 6-8) as an experiment. A composer workload (`compose.rs`) is planned
//! once and applied to every engine: ndpdb with NDP on the device's PEs,
//! ndpdb's host-only block stack, and a real PostgreSQL with REPEATABLE READ
//! or SERIALIZABLE sessions held open for the snapshot markers. The query
//! then runs in every marker's snapshot on every engine; all answers must
//! agree, or the run fails.

use std::path::Path;

use anyhow::{Context, Result, bail};
use ndpdb_baseline::postgres::{PgError, PgServer, Session};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::{Aggregate, CmpOp, Predicate};
use ndpdb_format::schema::{ColumnType, Value, format_timestamp, parse_timestamp};
use ndpdb_storage::{Freshness, Store, Table};
use ndpdb_txn::{Database, Isolation, ReadMode, Txn};
use ndpdb_workload::{OrderLine, OrderLineGen};
use serde::Serialize;

use crate::compose::{Action, Level, Workload};
use crate::orderline;

/// Tuples per ndpdb transaction when applying steps.
const BATCH: usize = 5_000;
/// Tuples per PostgreSQL statement (one transaction) when applying updates
/// and deletes.
const PG_CHUNK: usize = 100_000;
const LOAD_TIME_US: i64 = 1_700_000_000_000_000;

#[derive(Debug, Clone)]
pub struct Config {
    pub profile: Profile,
    pub clock: ClockKind,
    pub pes: Vec<u32>,
    pub workers: Vec<usize>,
    /// PostgreSQL max_parallel_workers_per_gather values; empty: no PostgreSQL.
    pub postgres_workers: Vec<usize>,
    pub seed: u64,
    /// Times each engine runs each query; a row reports the run with the
    /// median wall time (the answers of all runs must agree).
    pub repeat: u32,
}

/// `Default`: empty text, zeros and nulls, for the fields a caller does
/// not know yet (the measurements, filled in when they are taken).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub scenario: String,
    pub engine: &'static str,
    pub profile: String,
    pub clock: &'static str,
    pub pes: Option<u32>,
    pub workers: Option<usize>,
    pub rows: u64,
    pub versions_per_tuple: f64,
    pub snapshot_position: String,
    pub op: String,
    pub result: Option<String>,
    /// The median of `wall_s_runs`.
    pub wall_s: f64,
    /// Every run's wall time, in order (`--repeat`).
    pub wall_s_runs: Vec<f64>,
    pub modelled_s: Option<f64>,
    pub link_bytes_to_host: Option<u64>,
    pub link_bytes_to_device: Option<u64>,
    pub medium_bytes_read: Option<u64>,
    pub late_completions: Option<u64>,
    pub versions_visited: Option<u64>,
}

/// What the run says besides its rows.
#[derive(Debug, Default)]
pub struct Notes {
    pub postgres: Option<String>,
}

/// The PostgreSQL baseline of a series of [`run`]s: one private server,
/// started by the first run that needs it and shared by the rest. Each run
/// drops the previous run's table before it loads its own. (A server per
/// run cost `initdb` and a start and a stop each time, about 2 s, more than
/// a small point's whole measurement: most of `ndpdb demo`.)
#[derive(Default)]
pub struct Postgres {
    server: Option<PgServer>,
    /// What the baseline is ("PostgreSQL 15.x"), or why it was skipped.
    note: Option<String>,
}

impl Postgres {
    /// The server, started on first use; `None` when PostgreSQL is not
    /// installed or cannot be run here (the note says why).
    fn server(&mut self) -> Result<Option<&PgServer>> {
        if self.server.is_none() && self.note.is_none() {
            match PgServer::start() {
                Ok(server) => {
                    self.note = Some(format!("PostgreSQL {}", server.version().unwrap_or_default()));
                    self.server = Some(server);
                }
                Err(e @ (PgError::NotInstalled | PgError::NoPostgresUser)) => {
                    self.note = Some(format!("PostgreSQL baseline skipped: {e}"));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(self.server.as_ref())
    }

    /// Stops the server, if one was started (dropping it stops it too, but
    /// without reporting a failure).
    pub fn stop(self) -> Result<()> {
        if let Some(server) = self.server {
            server.stop()?;
        }
        Ok(())
    }
}

fn parse_op(op: &str) -> Result<Aggregate> {
    Ok(match op {
        "count-star" => Aggregate::CountStar,
        "count" => Aggregate::Count,
        "sum" => Aggregate::Sum,
        "min" => Aggregate::Min,
        "max" => Aggregate::Max,
        "avg" => Aggregate::Avg,
        other => bail!("unknown op {other}"),
    })
}

/// `COLUMN OP INTEGER` (decimal columns take a decimal value).
pub fn parse_predicate(t: &Table, s: &str) -> Result<Predicate> {
    let ops =
        [("<>", CmpOp::Ne), ("<=", CmpOp::Le), (">=", CmpOp::Ge), ("=", CmpOp::Eq), ("<", CmpOp::Lt), (">", CmpOp::Gt)];
    let (at, sym, op) = ops
        .iter()
        .filter_map(|(sym, op)| s.find(sym).map(|i| (i, *sym, *op)))
        .min_by_key(|(i, sym, _)| (*i, usize::MAX - sym.len()))
        .with_context(|| format!("where {s:?}: expected COLUMN OP VALUE with OP one of = <> < <= > >="))?;
    let name = s[..at].trim();
    let col = t.column_index(name).with_context(|| format!("where: table {} has no column {name}", t.name))?;
    let text = s[at + sym.len()..].trim();
    if t.columns[col].ty == ColumnType::Timestamp {
        let literal = text.trim_matches('\'');
        let value = parse_timestamp(literal).with_context(|| {
            format!("where: `{text}` is not a timestamp; write YYYY-MM-DD or YYYY-MM-DD HH:MM:SS[.ffffff]")
        })?;
        return Ok(Predicate { column: col as u16, op, value });
    }
    let sc = scale(t, col);
    let value = parse_scaled(text, sc)
        .with_context(|| format!("where: `{text}` is not a number with at most {sc} decimals"))?;
    Ok(Predicate { column: col as u16, op, value })
}

pub fn scale(t: &Table, col: usize) -> u32 {
    match t.columns[col].ty {
        ColumnType::Decimal { scale, .. } => u32::from(scale),
        _ => 0,
    }
}

pub fn parse_scaled(text: &str, scale: u32) -> Option<i64> {
    let (neg, digits) = text.strip_prefix('-').map_or((false, text), |d| (true, d));
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > scale as usize || int.is_empty() && frac.is_empty() {
        return None;
    }
    let v = int.parse::<i64>().ok()?.checked_mul(10i64.checked_pow(scale)?)?;
    let f = if frac.is_empty() { 0 } else { frac.parse::<i64>().ok()? * 10i64.pow(scale - frac.len() as u32) };
    let v = v.checked_add(f)?;
    Some(if neg { -v } else { v })
}

pub fn format_scaled(v: i128, scale: u32) -> String {
    if scale == 0 {
        return v.to_string();
    }
    let d = 10u128.pow(scale);
    format!("{}{}.{:0w$}", if v < 0 { "-" } else { "" }, v.unsigned_abs() / d, v.unsigned_abs() % d, w = scale as usize)
}

/// The query's SQL for PostgreSQL.
fn sql(w: &Workload) -> String {
    let agg = match w.query.op.as_str() {
        "count-star" => "count(*)".to_string(),
        op => format!("{op}({})", w.query.column),
    };
    let pred = w.query.predicate.as_ref().map(|p| format!(" WHERE {p}")).unwrap_or_default();
    format!("SELECT {agg} FROM order_line{pred}")
}

/// Whether two answers agree: exactly, or for AVG to 1e-9 relative (the
/// engines round the quotient differently).
fn agree(op: &str, a: &Option<String>, b: &Option<String>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) if op == "avg" => match (x.parse::<f64>(), y.parse::<f64>()) {
            (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
            _ => false,
        },
        _ => a == b,
    }
}

/// Tuples a plan inserts, and versions its updates and deletes add.
fn plan_sizes(plan: &[Action]) -> (u64, u64) {
    plan.iter().fold((0, 0), |(i, c), a| match a {
        Action::Insert { count, .. } => (i + count, c),
        Action::Update(u) => (i, c + u.len() as u64),
        Action::Delete(d) => (i, c + d.len() as u64),
        Action::Marker { .. } => (i, c),
    })
}

struct Marker<'db> {
    txn: Txn<'db>,
    label: String,
    rows: u64,
}

/// Runs `w` on every engine of `cfg`, PostgreSQL on `postgres`'s server;
/// `progress` sees (phase, done, total).
pub fn run(
    w: &Workload,
    scenario: &str,
    cfg: &Config,
    dir: &Path,
    postgres: &mut Postgres,
    mut progress: impl FnMut(&str, u64, u64),
) -> Result<(Vec<Row>, Notes)> {
    let plan =
        w.plan(cfg.seed).map_err(|e| anyhow::anyhow!("workload {}: step {}: {}", w.name, e.step + 1, e.message))?;
    let (inserted, changes) = plan_sizes(&plan);
    let versions_per_tuple = if inserted == 0 { 0.0 } else { (inserted + changes) as f64 / inserted as f64 };
    let base = |engine, pes, workers, m: &str, rows| Row {
        scenario: scenario.to_string(),
        engine,
        profile: cfg.profile.name.clone(),
        clock: cfg.clock.name(),
        pes,
        workers,
        rows,
        versions_per_tuple,
        snapshot_position: m.to_string(),
        op: format!("{}({})", w.query.op, if w.query.op == "count-star" { "*" } else { &w.query.column }),
        ..Row::default()
    };
    let mut rows = run_ndpdb(w, &plan, cfg, dir, &base, &mut progress)?;
    let mut notes = Notes::default();
    if !cfg.postgres_workers.is_empty() {
        if let Some(server) = postgres.server()? {
            rows.extend(run_postgres(server, w, &plan, cfg, &base, &mut progress)?);
        }
        notes.postgres = postgres.note.clone();
    }
    check_agreement(w, &rows)?;
    Ok((rows, notes))
}

fn check_agreement(w: &Workload, rows: &[Row]) -> Result<()> {
    for m in rows.iter().map(|r| &r.snapshot_position).collect::<std::collections::BTreeSet<_>>() {
        let at: Vec<&Row> = rows.iter().filter(|r| &r.snapshot_position == m).collect();
        let first = at[0];
        for r in &at[1..] {
            if !agree(&w.query.op, &first.result, &r.result) {
                bail!(
                    "ENGINES DISAGREE at snapshot {m:?} of {}: {} (pes {:?}, workers {:?}) says {:?}, {} (pes {:?}, workers {:?}) says {:?}",
                    w.name,
                    first.engine,
                    first.pes,
                    first.workers,
                    first.result,
                    r.engine,
                    r.pes,
                    r.workers,
                    r.result
                );
            }
        }
    }
    Ok(())
}

type Base<'a> = dyn Fn(&'static str, Option<u32>, Option<usize>, &str, u64) -> Row + 'a;

fn run_ndpdb(
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
    let table = db.create_table("order_line", orderline::columns())?;
    let amount = table.column_index(orderline::AMOUNT).context("ol_amount")?;
    let func = parse_op(&w.query.op)?;
    let column = if func == Aggregate::CountStar {
        0
    } else {
        table.column_index(&w.query.column).with_context(|| format!("ORDER_LINE has no column {}", w.query.column))?
    };
    let ty = table.columns[column].ty;
    let timestamp = ty == ColumnType::Timestamp && func != Aggregate::CountStar;
    if timestamp && matches!(func, Aggregate::Sum | Aggregate::Avg) {
        bail!(
            "query: {}({}) of a timestamp is not defined (as in PostgreSQL); use min, max or count",
            w.query.op,
            w.query.column
        );
    }
    if !matches!(ty, ColumnType::Int32 | ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp)
        && func != Aggregate::CountStar
    {
        bail!("query column {} must be an integer, decimal or timestamp column", w.query.column);
    }
    let predicate = w.query.predicate.as_deref().map(|p| parse_predicate(&table, p)).transpose()?;
    let mut tuples = OrderLineGen::new(cfg.seed, LOAD_TIME_US);
    let mut markers: Vec<Marker<'_>> = Vec::new();
    let mut live = 0u64;
    for (i, a) in plan.iter().enumerate() {
        let phase = format!("ndpdb step {}", i + 1);
        match a {
            Action::Insert { count, .. } => {
                let mut done = 0;
                while done < *count {
                    let mut t = db.begin(Isolation::ReadCommitted);
                    for o in tuples.by_ref().take((*count - done).min(BATCH as u64) as usize) {
                        t.insert(&table, &orderline::values(&o))?;
                        done += 1;
                    }
                    t.commit()?;
                    progress(&phase, done, *count);
                }
                live += count;
            }
            Action::Update(ups) => {
                for (k, chunk) in ups.chunks(BATCH).enumerate() {
                    let mut t = db.begin(Isolation::ReadCommitted);
                    for &(vid, a) in chunk {
                        let mut row = t.get(&table, vid)?.with_context(|| format!("VID {vid} vanished"))?;
                        row[amount] = Value::Int(a);
                        t.update(&table, vid, &row)?;
                    }
                    t.commit()?;
                    progress(&phase, ((k + 1) * BATCH).min(ups.len()) as u64, ups.len() as u64);
                }
            }
            Action::Delete(vids) => {
                for chunk in vids.chunks(BATCH) {
                    let mut t = db.begin(Isolation::ReadCommitted);
                    for &vid in chunk {
                        t.delete(&table, vid)?;
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
    db.store().sync_device()?;
    settle_writeback();
    let mut rows = Vec::new();
    let sc = if matches!(func, Aggregate::CountStar | Aggregate::Count) { 0 } else { scale(&table, column) };
    let fmt = |r: &ndpdb_storage::AggregateResult| match func {
        // AVG: the exact quotient to 12 places, comparable with PostgreSQL's.
        Aggregate::Avg => (r.partial.values > 0)
            .then(|| format!("{:.12}", r.partial.sum as f64 / r.partial.values as f64 / 10f64.powi(sc as i32))),
        // min/max of a timestamp, as PostgreSQL prints one.
        Aggregate::Min | Aggregate::Max if timestamp => {
            r.value.map(|v| i64::try_from(v).map_or_else(|_| v.to_string(), format_timestamp))
        }
        _ => r.value.map(|v| format_scaled(v, sc)),
    };
    for m in &mut markers {
        let modes = cfg
            .pes
            .iter()
            .map(|&pes| ("ndpdb-ndp", Some(pes), None, ReadMode::Ndp { pes, freshness: Freshness::Ship }));
        let modes =
            modes.chain(cfg.workers.iter().map(|&w| ("ndpdb-host", None, Some(w), ReadMode::Host { workers: w })));
        for (engine, pes, workers, mode) in modes {
            let mut runs = Vec::new();
            for _ in 0..cfg.repeat.max(1) {
                runs.push(m.txn.aggregate(&table, func, column as u16, predicate, mode)?);
            }
            let walls: Vec<f64> = runs.iter().map(|r| r.stats.wall_s).collect();
            let answers: Vec<Option<String>> = runs.iter().map(&fmt).collect();
            same_answers(engine, &m.label, &answers)?;
            let r = &runs[median_index(&walls)];
            let mut row = measured(base(engine, pes, workers, &m.label, m.rows), fmt(r), r);
            row.wall_s_runs = walls;
            rows.push(row);
        }
    }
    for m in markers {
        m.txn.commit()?;
    }
    Ok(rows)
}

/// The index of the median of `v` (the lower one of an even count).
fn median_index(v: &[f64]) -> usize {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    order[(v.len() - 1) / 2]
}

/// Repeated runs of one query on one engine must give one answer.
fn same_answers(engine: &str, snapshot: &str, answers: &[Option<String>]) -> Result<()> {
    if let Some(other) = answers.iter().find(|a| *a != &answers[0]) {
        bail!(
            "{engine} GAVE DIFFERENT ANSWERS to the same query at snapshot {snapshot:?}: {:?}, then {other:?}",
            answers[0]
        );
    }
    Ok(())
}

fn measured(mut row: Row, result: Option<String>, r: &ndpdb_storage::AggregateResult) -> Row {
    row.result = result;
    row.wall_s = r.stats.wall_s;
    row.modelled_s = Some(r.stats.modelled_s);
    row.link_bytes_to_host = Some(r.stats.counters.link_bytes_to_host);
    row.link_bytes_to_device = Some(r.stats.counters.link_bytes_to_device);
    row.medium_bytes_read = Some(r.stats.counters.medium_bytes_read);
    row.late_completions = Some(r.stats.counters.late_completions);
    row.versions_visited = Some(r.partial.visited);
    row
}

const PG_COLUMNS: &str = "vid bigint PRIMARY KEY, ol_o_id integer NOT NULL, ol_d_id integer NOT NULL, ol_w_id integer NOT NULL, \
    ol_number integer NOT NULL, ol_i_id integer NOT NULL, ol_supply_w_id integer NOT NULL, ol_delivery_d timestamp, \
    ol_quantity integer NOT NULL, ol_amount numeric(6,2) NOT NULL, ol_dist_info char(24) NOT NULL";

fn copy_line(vid: u64, o: &OrderLine) -> String {
    let ts = o.ol_delivery_d.map_or("\\N".to_string(), format_timestamp);
    format!(
        "{vid}\t{}\t{}\t{}\t{}\t{}\t{}\t{ts}\t{}\t{}\t{}",
        o.ol_o_id,
        o.ol_d_id,
        o.ol_w_id,
        o.ol_number,
        o.ol_i_id,
        o.ol_supply_w_id,
        o.ol_quantity,
        format_scaled(o.ol_amount.into(), 2),
        String::from_utf8_lossy(&o.ol_dist_info)
    )
}

/// Microseconds since 1970 as PostgreSQL timestamp text (UTC).
/// Writes every dirty page of every file system back before an engine's
/// queries are timed (`sync(2)`): loading and updating leave hundreds of MB
/// dirty in the page cache (the image, PostgreSQL's files and the previous
/// point's, which run with `fsync = off`), and the kernel writing them back
/// during a query took the CPU from it: NDP's median moved between 0.019
/// and 0.030 s from point to point with PostgreSQL in the run, against
/// 0.019-0.021 s without it.
fn settle_writeback() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

fn run_postgres(
    server: &PgServer,
    w: &Workload,
    plan: &[Action],
    cfg: &Config,
    base: &Base<'_>,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Vec<Row>> {
    let mut s = server.session()?;
    // The previous run's table, on a shared server (its sessions are gone;
    // a backend still ending holds its lock for a moment, and DROP waits).
    s.exec("DROP TABLE IF EXISTS order_line")?;
    s.exec(&format!("CREATE TABLE order_line ({PG_COLUMNS})"))?;
    s.exec("CREATE TEMP TABLE ndpdb_step (vid bigint, a numeric(6,2))")?;
    let mut tuples = OrderLineGen::new(cfg.seed, LOAD_TIME_US);
    let mut markers: Vec<(Session, String, u64)> = Vec::new();
    let mut live = 0u64;
    for (i, a) in plan.iter().enumerate() {
        let phase = format!("postgres step {}", i + 1);
        match a {
            Action::Insert { first, count } => {
                let lines = (0..*count).map(|k| copy_line(first + k, &tuples.next().expect("endless generator")));
                s.copy_in("COPY order_line FROM STDIN", lines)?;
                live += count;
                progress(&phase, *count, *count);
            }
            Action::Update(ups) => {
                // COPY the step's changes into a scratch table and join, a
                // statement (a transaction) per chunk: 3-4x faster than
                // UPDATE .. FROM (VALUES ..) lists, and the same versions.
                for (k, chunk) in ups.chunks(PG_CHUNK).enumerate() {
                    let lines = chunk.iter().map(|(v, a)| format!("{v}\t{}", format_scaled((*a).into(), 2)));
                    s.exec("TRUNCATE ndpdb_step")?;
                    s.copy_in("COPY ndpdb_step (vid, a) FROM STDIN", lines)?;
                    s.exec("UPDATE order_line SET ol_amount = u.a FROM ndpdb_step u WHERE order_line.vid = u.vid")?;
                    progress(&phase, ((k + 1) * PG_CHUNK).min(ups.len()) as u64, ups.len() as u64);
                }
            }
            Action::Delete(vids) => {
                for chunk in vids.chunks(PG_CHUNK) {
                    s.exec("TRUNCATE ndpdb_step")?;
                    s.copy_in("COPY ndpdb_step (vid) FROM STDIN", chunk.iter().map(u64::to_string))?;
                    s.exec("DELETE FROM order_line USING ndpdb_step u WHERE order_line.vid = u.vid")?;
                }
                live -= vids.len() as u64;
            }
            Action::Marker { level, label } => {
                let mut m = server.session()?;
                m.exec(&format!("BEGIN ISOLATION LEVEL {}", level.sql()))?;
                m.exec("SELECT 1 FROM order_line LIMIT 1")?;
                markers.push((m, label.clone(), live));
            }
        }
    }
    s.exec("ANALYZE order_line")?;
    // PostgreSQL's dirty buffers to its files, then everything to disk.
    s.exec("CHECKPOINT")?;
    settle_writeback();
    let query = sql(w);
    let mut rows = Vec::new();
    for (m, label, live) in &mut markers {
        for &workers in &cfg.postgres_workers {
            m.exec(&format!(
                "SET max_parallel_workers_per_gather = {workers}; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0"
            ))?;
            let mut walls = Vec::new();
            let mut answers = Vec::new();
            for _ in 0..cfg.repeat.max(1) {
                let (out, took) = m.timed(&query)?;
                answers.push(out.into_iter().next().filter(|v| !v.is_empty()));
                walls.push(took.as_secs_f64());
            }
            same_answers("postgresql", label, &answers)?;
            let mut row = base("postgresql", None, Some(workers), label, *live);
            row.result = answers.swap_remove(0);
            row.wall_s = walls[median_index(&walls)];
            row.wall_s_runs = walls;
            rows.push(row);
        }
        m.exec("COMMIT")?;
    }
    Ok(rows)
}

/// Scenario `n` of the paper as composer workloads: (x value of the point,
/// workload). `positions` picks scenario 3's snapshot markers, as update
/// rounds before the snapshot (`0..=rounds`); empty: all of them.
pub fn scenario(n: u32, rows: u64, rounds: u32, op: &str, positions: &[u32]) -> Result<Vec<(f64, Workload)>> {
    if rows == 0 {
        bail!("--rows 0: a scenario loads ORDER_LINE tuples; choose at least 1");
    }
    if let Some(p) = positions.iter().find(|&&p| p > rounds) {
        bail!("--positions {p}: scenario 3's snapshots lie after 0..={rounds} update rounds (--rounds {rounds})");
    }
    let at = |j: u32| positions.is_empty() || positions.contains(&j);
    use crate::compose::{Choice, Query, Step};
    let query = Query { op: op.to_string(), column: "ol_amount".into(), predicate: None };
    let marker = |label: String| Step::Snapshot(Level::RepeatableRead, label);
    let w = |name: String, steps: Vec<Step>| Workload { name, steps, query: query.clone() };
    Ok(match n {
        // Fig. 6: time against data volume, one version per tuple.
        1 => {
            let mut sizes: Vec<u64> = (1..=4).map(|i| rows * i / 4).filter(|&r| r > 0).collect();
            sizes.dedup();
            sizes
                .into_iter()
                .map(|r| {
                    (r as f64, w(format!("scenario 1: {r} tuples"), vec![Step::Insert(r), marker("newest".into())]))
                })
                .collect()
        }
        // Fig. 7: time against versions per tuple, the newest version visible.
        2 => (0..=rounds)
            .map(|k| {
                let mut steps = vec![Step::Insert(rows)];
                steps.extend((0..k).map(|_| Step::Update(None, Choice::Uniform)));
                steps.push(marker("newest".into()));
                (f64::from(k + 1), w(format!("scenario 2: {} versions per tuple", k + 1), steps))
            })
            .collect(),
        // Fig. 8: time against the snapshot's position on chains of rounds+1 versions.
        3 => {
            let mut steps = vec![Step::Insert(rows)];
            for j in 0..rounds {
                if at(j) {
                    steps.push(marker(format!("after {j} rounds")));
                }
                steps.push(Step::Update(None, Choice::Uniform));
            }
            if at(rounds) {
                steps.push(marker(format!("after {rounds} rounds")));
            }
            vec![(0.0, w(format!("scenario 3: snapshots along chains of {} versions", rounds + 1), steps))]
        }
        other => bail!("there is no scenario {other}: the paper has scenarios 1, 2 and 3"),
    })
}

/// The x value of a row for the scenario's plot.
pub fn x_of(scenario: u32, point_x: f64, row: &Row) -> f64 {
    match scenario {
        3 => row.snapshot_position.trim_start_matches("after ").trim_end_matches(" rounds").parse().unwrap_or(point_x),
        _ => point_x,
    }
}

/// Plots in the style of Figs. 6-8, a series per engine configuration:
/// `scenario-N` shows every engine's wall time. On the virtual clock, when
/// the profile has costs, `scenario-N-modelled` also shows ndpdb's modelled
/// time (what the profile's device would take) beside PostgreSQL's wall time.
pub fn plot(scenario: u32, points: &[(f64, Row)], dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    use crate::output::{Plot, Series};
    let series = |modelled: bool| {
        let mut series: Vec<Series> = Vec::new();
        for (x, r) in points {
            let (name, y) = match (r.engine, modelled) {
                ("ndpdb-ndp", false) => (format!("ndpdb NDP, {} PEs", r.pes.unwrap_or(0)), r.wall_s),
                ("ndpdb-ndp", true) => {
                    (format!("ndpdb NDP, {} PEs (modelled)", r.pes.unwrap_or(0)), r.modelled_s.unwrap_or(0.0))
                }
                ("ndpdb-host", false) => (format!("ndpdb host-only, {} workers", r.workers.unwrap_or(0)), r.wall_s),
                ("ndpdb-host", true) => (
                    format!("ndpdb host-only, {} workers (modelled)", r.workers.unwrap_or(0)),
                    r.modelled_s.unwrap_or(0.0),
                ),
                (_, false) => (format!("PostgreSQL, {} parallel workers", r.workers.unwrap_or(0)), r.wall_s),
                (_, true) => (format!("PostgreSQL, {} parallel workers (wall)", r.workers.unwrap_or(0)), r.wall_s),
            };
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push((*x, y)),
                None => series.push(Series { name, points: vec![(*x, y)], reference: false }),
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        series
    };
    let (title, x_label) = match scenario {
        1 => ("Scenario 1: snapshot creation with increasing data volume", "ORDER_LINE tuples"),
        2 => ("Scenario 2: newest version of chains of increasing length", "versions per tuple"),
        3 => ("Scenario 3: snapshots at positions along the version chains", "update rounds before the snapshot"),
        _ => ("Workload", "snapshot marker"),
    };
    let first = &points.first().map(|p| &p.1);
    let (profile, clock) = (first.map_or("", |r| r.profile.as_str()), first.map_or("", |r| r.clock));
    let wall_title = format!("{title} ({profile}, {clock} clock)");
    let name = format!("scenario-{scenario}");
    let mut paths = Plot { title: &wall_title, x_label, y_label: "query wall time (s)", series: series(false) }
        .write(dir, &name)?;
    if clock == "virtual" && points.iter().any(|(_, r)| r.modelled_s.is_some_and(|m| m > 0.0)) {
        let title = format!("{title} (modelled on {profile})");
        let plot = Plot {
            title: &title,
            x_label,
            y_label: "query time (s): ndpdb modelled, PostgreSQL wall",
            series: series(true),
        };
        paths.extend(plot.write(dir, &format!("{name}-modelled"))?);
    }
    Ok(paths)
}

pub fn table(rows: &[(f64, Row)]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(_, r)| {
            let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            vec![
                r.scenario.clone(),
                r.rows.to_string(),
                format!("{:.0}", r.versions_per_tuple),
                r.snapshot_position.clone(),
                r.engine.to_string(),
                r.pes.map(|p| format!("{p} PEs")).or(r.workers.map(|w| format!("{w} workers"))).unwrap_or_default(),
                r.result.clone().unwrap_or_else(|| "NULL".into()),
                format!("{:.4}", r.wall_s),
                r.modelled_s.map_or("-".into(), |m| format!("{m:.4}")),
                opt(r.link_bytes_to_host),
                opt(r.medium_bytes_read),
            ]
        })
        .collect();
    crate::output::table(
        &[
            "scenario",
            "tuples",
            "versions",
            "snapshot",
            "engine",
            "parallelism",
            "result",
            "wall s (median)",
            "modelled s",
            "link B to host",
            "medium B read",
        ],
        &body,
    )
}

/// How many times faster ndpdb NDP ran than every other engine at each
/// point (median wall times; above 1: NDP was faster), one line per point
/// and PE count. None without NDP rows or without other engines.
pub fn speedups(rows: &[(f64, Row)]) -> Option<String> {
    let label = |r: &Row| match r.engine {
        "ndpdb-host" => format!("ndpdb host {} w", r.workers.unwrap_or(0)),
        "postgresql" => format!("PostgreSQL {} w", r.workers.unwrap_or(0)),
        other => other.to_string(),
    };
    let point = |r: &Row| (r.scenario.clone(), r.rows, r.versions_per_tuple.to_bits(), r.snapshot_position.clone());
    let mut columns: Vec<String> = Vec::new();
    for (_, r) in rows.iter().filter(|(_, r)| r.engine != "ndpdb-ndp") {
        if !columns.contains(&label(r)) {
            columns.push(label(r));
        }
    }
    let mut body = Vec::new();
    for (_, ndp) in rows.iter().filter(|(_, r)| r.engine == "ndpdb-ndp") {
        let at = point(ndp);
        let mut line = vec![
            ndp.scenario.clone(),
            ndp.rows.to_string(),
            format!("{:.0}", ndp.versions_per_tuple),
            ndp.snapshot_position.clone(),
            format!("{} PEs", ndp.pes.unwrap_or(0)),
        ];
        for c in &columns {
            let other = rows.iter().find(|(_, r)| point(r) == at && r.engine != "ndpdb-ndp" && &label(r) == c);
            line.push(match other {
                Some((_, o)) if ndp.wall_s > 0.0 => format!("{:.1}x", o.wall_s / ndp.wall_s),
                _ => "-".to_string(),
            });
        }
        body.push(line);
    }
    if body.is_empty() || columns.is_empty() {
        return None;
    }
    let mut header: Vec<String> =
        ["scenario", "tuples", "versions", "snapshot", "NDP"].iter().map(|h| h.to_string()).collect();
    header.extend(columns.iter().map(|c| format!("vs {c}")));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Some(format!(
        "NDP speed-up (median wall time of the other engine / NDP's; above 1: NDP faster)\n{}",
        crate::output::table(&header, &body)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of engine `engine` at one point ("scenario 3", 10 tuples, 5
    /// versions, snapshot "m"), with `result`.
    fn test_row(engine: &'static str, result: Option<&str>) -> Row {
        Row {
            scenario: "scenario 3".into(),
            engine,
            profile: "ideal".into(),
            clock: "virtual",
            rows: 10,
            versions_per_tuple: 5.0,
            snapshot_position: "m".into(),
            op: "sum(ol_amount)".into(),
            result: result.map(str::to_string),
            ..Row::default()
        }
    }

    #[test]
    fn scenario_3_positions_pick_its_markers() {
        let markers = |positions: &[u32]| -> Vec<String> {
            let (_, w) = scenario(3, 10, 4, "sum", positions).unwrap().remove(0);
            w.steps
                .iter()
                .filter_map(|s| match s {
                    crate::compose::Step::Snapshot(_, label) => Some(label.clone()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(markers(&[]).len(), 5);
        assert_eq!(markers(&[0, 4]), vec!["after 0 rounds".to_string(), "after 4 rounds".to_string()]);
        let e = scenario(3, 10, 2, "sum", &[3]).unwrap_err().to_string();
        assert!(e.contains("--positions 3") && e.contains("0..=2"), "{e}");
    }

    #[test]
    fn speedups_divide_every_other_engine_by_ndp_at_the_same_point() {
        let row = |engine, pes, workers, position: &str, wall_s| Row {
            pes,
            workers,
            snapshot_position: position.into(),
            wall_s,
            wall_s_runs: vec![wall_s],
            ..test_row(engine, None)
        };
        let rows: Vec<(f64, Row)> = vec![
            (0.0, row("ndpdb-ndp", Some(2), None, "oldest", 0.1)),
            (0.0, row("postgresql", None, Some(2), "oldest", 0.25)),
            (0.0, row("ndpdb-ndp", Some(2), None, "newest", 0.04)),
            (0.0, row("ndpdb-host", None, Some(2), "newest", 0.4)),
            (0.0, row("postgresql", None, Some(2), "newest", 0.2)),
        ];
        let t = speedups(&rows).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].contains("vs PostgreSQL 2 w") && lines[1].contains("vs ndpdb host 2 w"), "{t}");
        let oldest = lines.iter().find(|l| l.contains("oldest")).unwrap();
        assert!(oldest.contains("2.5x") && oldest.trim_end().ends_with('-'), "{t}");
        let newest = lines.iter().find(|l| l.contains("newest")).unwrap();
        assert!(newest.contains("5.0x") && newest.contains("10.0x"), "{t}");
        assert_eq!(speedups(&rows[1..2]), None, "no NDP, no speed-ups");
    }

    #[test]
    fn disagreement_fails_loudly_and_avg_tolerates_rounding() {
        let w = Workload::parse(
            "[[step]]\nload = 1\n[[step]]\nsnapshot = \"rr\"\n[query]\nop = \"sum\"\ncolumn = \"ol_amount\"\n",
            "w",
        )
        .unwrap();
        let row = |engine, result: &str| test_row(engine, Some(result));
        assert!(check_agreement(&w, &[row("ndpdb-ndp", "1.00"), row("postgresql", "1.00")]).is_ok());
        assert!(same_answers("postgresql", "m", &[Some("1".into()), Some("1".into())]).is_ok());
        let e = same_answers("ndpdb-ndp", "m", &[Some("1".into()), Some("2".into())]).unwrap_err().to_string();
        assert!(e.contains("DIFFERENT ANSWERS"), "{e}");
        assert_eq!(median_index(&[0.3, 0.1, 0.2]), 2);
        assert_eq!(median_index(&[0.4, 0.1, 0.2, 0.3]), 2);
        let e = check_agreement(&w, &[row("ndpdb-ndp", "1.00"), row("postgresql", "1.01")]).unwrap_err().to_string();
        assert!(e.contains("ENGINES DISAGREE") && e.contains("postgresql"), "{e}");
        assert!(agree("avg", &Some("912.987654321000".into()), &Some("912.9876543210000000".into())));
        assert!(!agree("avg", &Some("912.98".into()), &Some("912.99".into())));
        assert_eq!(format_timestamp(1_700_000_000_000_001), "2023-11-14 22:13:20.000001");
        assert_eq!(parse_scaled("-1.5", 2), Some(-150));
    }
}
