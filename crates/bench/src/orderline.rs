//! TPC-C ORDER_LINE in ndpdb: loading with the TPC-C population rules (the
//! table's schema is `ndpdb_workload`'s), update rounds, and the in-situ SUM
//! experiment of issue 3: the same aggregate at the newest and the oldest
//! snapshot, on the device's PEs and with the host-only block stack, with
//! the counters that show what moved.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::{Aggregate, Predicate};
use ndpdb_format::schema::Value;
use ndpdb_format::text::format_scaled;
use ndpdb_storage::{AggregateResult, Freshness, Store, StoreOptions, Table};
use ndpdb_txn::{Database, Isolation, ReadMode, Txn};
use ndpdb_workload::{OL_AMOUNT, OL_I_ID, ORDER_LINE, OrderLineGen, ValueGen, order_line_columns};
use serde::Serialize;

use crate::late::{Lateness, warnings};
use crate::limits::{check_pes, check_workers};
use crate::report::{Report, progress_bar, scratch};

/// Tuples per loading or updating transaction.
const BATCH: u64 = 10_000;

/// Loads `rows` tuples; `progress` sees the count loaded so far.
pub fn load(db: &Database, table: &Arc<Table>, rows: u64, seed: u64, mut progress: impl FnMut(u64)) -> Result<()> {
    let mut tuples = OrderLineGen::new(seed, 1_700_000_000_000_000).take_rows(rows);
    let batch = batch_rows(db, table);
    let mut done = 0;
    while done < rows {
        let mut t = db.begin(Isolation::ReadCommitted);
        for o in tuples.by_ref().take(batch as usize) {
            t.insert(table, &o.values())?;
            done += 1;
        }
        t.commit()?;
        progress(done);
    }
    Ok(())
}

/// One update round: every tuple gets a new `ol_amount`, in VID order.
pub fn update_round(db: &Database, table: &Arc<Table>, seed: u64, mut progress: impl FnMut(u64)) -> Result<()> {
    let amount = table.column_index(OL_AMOUNT).context("no ol_amount")?;
    let mut vals = ValueGen::new(seed);
    let n = table.vids();
    let batch = batch_rows(db, table);
    let mut vid = 0;
    while vid < n {
        let mut t = db.begin(Isolation::RepeatableRead);
        for v in vid..(vid + batch).min(n) {
            let Some(mut row) = t.get(table, v)? else { continue };
            row[amount] = Value::Int(vals.new_amount());
            t.update(table, v, &row)?;
        }
        t.commit()?;
        vid = (vid + batch).min(n);
        progress(vid);
    }
    Ok(())
}

/// The agreement checks' control: `count(*)` and `sum(ol_i_id)` of the rows
/// `predicate` selects in `txn`'s snapshot ([`control_text`]). Engines that
/// agree on it read the same rows; it is nonzero at every size, where a sum
/// of `ol_amount` is 0 on every engine below about 21,000 tuples (TPC-C
/// gives the delivered lines, orders 1..=2,100 of each district, an amount
/// of 0), so agreement on that answer alone would say nothing.
pub fn control(txn: &mut Txn<'_>, table: &Arc<Table>, predicate: Option<&Predicate>, mode: ReadMode) -> Result<String> {
    let item = table.column_index(OL_I_ID).context("ORDER_LINE has no ol_i_id")? as u16;
    let r = txn.aggregate(table, Aggregate::Sum, item, predicate, mode)?;
    Ok(control_text(r.partial.rows, r.value))
}

/// The control's text: `N rows, sum(ol_i_id) S` (S is NULL without rows).
pub fn control_text(rows: u64, sum: Option<i128>) -> String {
    format!("{rows} rows, sum(ol_i_id) {}", sum.map_or_else(|| "NULL".to_string(), |s| s.to_string()))
}

/// Tuples written per transaction: [`BATCH`], or fewer when one commit's
/// log record would fill more than a quarter of the write-ahead log (the
/// log is an eighth of the image, so a small image has a small log, and a
/// commit record larger than the log can never be written).
fn batch_rows(db: &Database, table: &Table) -> u64 {
    let (_, log_bytes) = db.store().wal_usage();
    // Per tuple in a commit record: kind, table, VID, length, then the data.
    let per_tuple = 17 + table.layout.max_tuple_bytes() as u64;
    (log_bytes / 4 / per_tuple).clamp(1, BATCH)
}

/// Image capacity and store options for an experiment that keeps `tuples`
/// ORDER_LINE tuples with `versions` versions in all: 140 bytes a version
/// (record, slot, page slack), and a log that holds every version's log
/// record (about 110 bytes) plus 64 MiB, so that no checkpoint interrupts
/// the steps (each costs fresh pages, about 20 bytes a tuple, until a later
/// checkpoint frees the pages it superseded); room for a few checkpoints is
/// added.
pub fn sizing(tuples: u64, versions: u64) -> (u64, StoreOptions) {
    let log = versions * 128 + (64 << 20);
    let checkpoints = 8;
    let bytes = versions * 140 + log + checkpoints * tuples * 20 + (64 << 20);
    (bytes.div_ceil(1 << 20) << 20, StoreOptions { log_bytes: log, ..StoreOptions::default() })
}

#[derive(Debug, Clone)]
pub struct Config {
    pub profile: Profile,
    pub clock: ClockKind,
    pub rows: u64,
    pub rounds: u32,
    pub pes: u32,
    pub workers: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub experiment: &'static str,
    pub profile: String,
    pub clock: &'static str,
    pub engine: &'static str,
    pub pes: Option<u32>,
    pub workers: Option<usize>,
    pub rows: u64,
    pub versions_per_tuple: u32,
    pub snapshot: &'static str,
    pub op: &'static str,
    pub result: Option<String>,
    pub wall_s: f64,
    pub modelled_s: f64,
    pub link_bytes_to_host: u64,
    pub link_bytes_to_device: u64,
    pub medium_bytes_read: u64,
    pub medium_reads: u64,
    /// The device's completions during the query, and the late ones among
    /// them (real clock: the emulator set the pace; `late.rs`).
    pub completions: u64,
    pub late_completions: u64,
    pub versions_visited: u64,
    /// Host-only: the chain walk's host CPU time, measured; on the virtual
    /// clock it is not part of `modelled_s`.
    pub host_cpu_s: Option<f64>,
    /// `count(*)` and `sum(ol_i_id)` of the rows summed ([`control`]),
    /// which both engines must agree on as on `result`.
    pub control: String,
    /// NVM, NDP only: the device's medium bytes read, less what the program
    /// reports it read for VID-map and L2P entries and column values, per
    /// version visited on the medium. The format's slot entry plus header is
    /// 24 bytes (`docs/format/ndp-call.md`).
    pub chain_bytes_per_visited_version: Option<f64>,
}

impl Config {
    /// Fails when `pes` is not one of the profile's PEs, the worker count
    /// is not 1..=`WORKERS_MAX` (`limits.rs`) or there is nothing to sum.
    pub fn validate(&self) -> Result<()> {
        check_pes("--pes", self.pes, &self.profile)?;
        check_workers("--workers", self.workers)?;
        if self.rows == 0 {
            bail!("--rows 0: the experiment sums ORDER_LINE tuples; load at least 1");
        }
        Ok(())
    }

    /// Runs the experiment on a scratch image under a progress bar, prints
    /// the table (and JSON lines) and writes the results directory.
    pub fn run_and_report(&self, report: &Report) -> Result<PathBuf> {
        let dir = scratch()?;
        let bar = progress_bar(self.rows, "{msg:>16} [{bar:30}] {pos}/{len} tuples ({rate} tuples/s)");
        let rows = run(self, dir.path(), |phase, n, total| {
            bar.set_length(total);
            if bar.message() != phase {
                bar.set_message(phase.to_string());
                bar.reset();
            }
            bar.set_position(n);
        })?;
        bar.finish_and_clear();
        let table = table(&rows);
        report.print(&rows, &table)?;
        let results = report.results("orderline-sum")?;
        results.jsonl("results.jsonl", &rows)?;
        results.text("table.txt", &table)?;
        Ok(results.announce(&[]))
    }
}

/// Builds the database, runs the updates and measures both snapshots.
pub fn run(cfg: &Config, dir: &Path, mut progress: impl FnMut(&str, u64, u64)) -> Result<Vec<Row>> {
    cfg.validate()?;
    let versions = cfg.rounds + 1;
    let (capacity, opts) = sizing(cfg.rows, cfg.rows * u64::from(versions));
    let dev = Device::create(dir, cfg.profile.clone(), Some(capacity), DeviceOptions::with_clock(cfg.clock))?;
    let db = Database::new(Store::new(dev, opts)?);
    let table = db.create_table(ORDER_LINE, order_line_columns())?;
    load(&db, &table, cfg.rows, cfg.seed, |n| progress("load", n, cfg.rows))?;
    let mut oldest = db.begin(Isolation::RepeatableRead);
    oldest.statement_snapshot()?;
    for r in 0..cfg.rounds {
        update_round(&db, &table, cfg.seed + 1 + u64::from(r), |n| {
            progress(&format!("update round {}", r + 1), n, cfg.rows)
        })?;
    }
    let mut newest = db.begin(Isolation::RepeatableRead);
    newest.statement_snapshot()?;
    db.store().sync_device()?;
    let column = table.column_index(OL_AMOUNT).context("no ol_amount")? as u16;
    let mut out = Vec::new();
    let ndp_mode = ReadMode::Ndp { pes: cfg.pes, freshness: Freshness::Ship };
    let host_mode = ReadMode::Host { workers: cfg.workers };
    for (name, txn) in [("newest", &mut newest), ("oldest", &mut oldest)] {
        let ndp = measure(txn, &table, column, ndp_mode)?;
        let host = measure(txn, &table, column, host_mode)?;
        let (ndp_control, host_control) =
            (control(txn, &table, None, ndp_mode)?, control(txn, &table, None, host_mode)?);
        if ndp.value != host.value || ndp_control != host_control {
            bail!(
                "ENGINES DISAGREE at the {name} snapshot: NDP says SUM(ol_amount) = {:?} over {ndp_control}, the \
                 host says {:?} over {host_control}",
                ndp.value,
                host.value
            );
        }
        out.push(row(cfg, name, "ndpdb-ndp", &ndp, &ndp_control));
        out.push(row(cfg, name, "ndpdb-host", &host, &host_control));
    }
    oldest.commit()?;
    newest.commit()?;
    Ok(out)
}

/// The row of `engine` at snapshot `name`.
fn row(cfg: &Config, name: &'static str, engine: &'static str, r: &AggregateResult, control: &str) -> Row {
    let is_ndp = engine == "ndpdb-ndp";
    let chain =
        (is_ndp && cfg.profile.kind() == ndpdb_device::profile::MediumKind::Nvm && r.partial.visited > 0).then(|| {
            let c = &r.stats.counters;
            let on_medium = r.partial.visited - r.partial.dram_visits;
            (c.medium_bytes_read - r.partial.extra_bytes) as f64 / on_medium as f64
        });
    Row {
        experiment: "orderline-sum",
        profile: cfg.profile.name.clone(),
        clock: cfg.clock.name(),
        engine,
        pes: is_ndp.then_some(cfg.pes),
        workers: (!is_ndp).then_some(cfg.workers),
        rows: cfg.rows,
        versions_per_tuple: cfg.rounds + 1,
        snapshot: name,
        op: "sum(ol_amount)",
        result: r.value.map(|v| format_scaled(v, 2)),
        wall_s: r.stats.wall_s,
        modelled_s: r.stats.modelled_s,
        link_bytes_to_host: r.stats.counters.link_bytes_to_host,
        link_bytes_to_device: r.stats.counters.link_bytes_to_device,
        medium_bytes_read: r.stats.counters.medium_bytes_read,
        medium_reads: r.stats.counters.medium_reads,
        completions: r.stats.counters.completions,
        late_completions: r.stats.counters.late_completions,
        versions_visited: r.partial.visited,
        host_cpu_s: (!is_ndp).then_some(r.stats.host_cpu_s),
        control: control.to_string(),
        chain_bytes_per_visited_version: chain,
    }
}

fn measure(txn: &mut Txn<'_>, table: &Arc<Table>, column: u16, mode: ReadMode) -> Result<AggregateResult> {
    Ok(txn.aggregate(table, Aggregate::Sum, column, None, mode)?)
}

pub fn table(rows: &[Row]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.snapshot.to_string(),
                r.engine.to_string(),
                r.pes.map(|p| p.to_string()).or(r.workers.map(|w| format!("{w}w"))).unwrap_or_default(),
                r.result.clone().unwrap_or("null".into()),
                format!("{:.4}", r.modelled_s),
                format!("{:.4}", r.wall_s),
                Lateness { late: r.late_completions, completions: r.completions }.cell(),
                r.host_cpu_s.map_or("-".into(), |s| format!("{s:.4}")),
                r.link_bytes_to_host.to_string(),
                r.medium_bytes_read.to_string(),
                r.versions_visited.to_string(),
                r.chain_bytes_per_visited_version.map(|b| format!("{b:.2}")).unwrap_or("-".into()),
            ]
        })
        .collect();
    let head = match rows.first() {
        Some(r) => format!(
            "SUM(ol_amount) over {} ORDER_LINE tuples x {} versions, profile {}, {} clock ({}; {HOST_CPU_NOTE})\n",
            r.rows,
            r.versions_per_tuple,
            r.profile,
            r.clock,
            clock_note(r.clock)
        ),
        None => String::new(),
    };
    let late = rows.iter().map(|r| {
        (
            format!("{} snapshot, {}", r.snapshot, r.engine),
            Lateness { late: r.late_completions, completions: r.completions },
        )
    });
    head + &crate::output::table(
        &[
            "snapshot",
            "engine",
            "PEs/workers",
            "result",
            "modelled s",
            "wall s",
            "late/completions",
            "host CPU s",
            "link B to host",
            "medium B read",
            "versions",
            "chain B/version",
        ],
        &body,
    ) + &warnings(late)
}

/// What a table's times mean on `clock` (a [`ndpdb_device::ClockKind`]
/// name), for its heading.
pub fn clock_note(clock: &str) -> &'static str {
    if clock == "real" {
        "completions held to their modelled time: modelled = wall, a measurement"
    } else {
        "modelled times are the model's, exact; wall times are the emulator's on this machine"
    }
}

/// What a table's `host CPU s` column is, for its heading.
pub const HOST_CPU_NOTE: &str =
    "host CPU s: the block stack's chain walk, measured (on the virtual clock not part of modelled s)";
