//! `ndpdb bench recovery`: log volume and recovery time. Loads ORDER_LINE
//! (batched insert transactions), runs one-tuple update transactions, then
//! crashes (the process forgets everything in memory, no checkpoint) and
//! reopens the database, timing recovery. Auto-checkpoints happen as they
//! would in production (when the log is half full at a commit), so recovery
//! replays the log since the last of them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::schema::Value;
use ndpdb_storage::{Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, TxnError};
use ndpdb_workload::{OL_AMOUNT, ORDER_LINE, order_line_columns};
use serde::Serialize;

use crate::late::Lateness;
use crate::orderline;
use crate::report::{Report, progress_bar, scratch};

#[derive(Debug, Clone)]
pub struct Config {
    pub rows: u64,
    pub txns: u64,
    pub profile: Profile,
    pub seed: u64,
    /// Image capacity in MiB.
    pub capacity_mib: u64,
}

impl Config {
    /// Fails when there is nothing to update or no image to hold it.
    pub fn validate(&self) -> Result<()> {
        if self.rows == 0 {
            bail!("--rows 0: the update transactions need ORDER_LINE tuples to update; load at least 1");
        }
        if self.capacity_mib == 0 {
            bail!("--capacity-mib 0: the image needs room for the table and its log");
        }
        Ok(())
    }

    /// Runs the experiment on a scratch image under a progress bar, prints
    /// its row as a table (and a JSON line) and writes the results
    /// directory; fails when the recovered database is not intact.
    pub fn run_and_report(&self, report: &Report) -> Result<PathBuf> {
        self.validate()?;
        let scratch = scratch()?;
        let bar = progress_bar(1, "{msg:>8} [{bar:30}] {pos}/{len}");
        let row = run(self, &scratch.path().join("db"), |what, done, of| {
            bar.set_length(of);
            bar.set_position(done);
            bar.set_message(what.to_string());
        })?;
        bar.finish_and_clear();
        let table = table(&row);
        report.print(std::slice::from_ref(&row), &table)?;
        let results = report.results("recovery")?;
        results.jsonl("recovery.jsonl", std::slice::from_ref(&row))?;
        results.text("table.txt", &table)?;
        let dir = results.announce(&[]);
        if row.integrity_errors > 0 {
            bail!(
                "the recovered database has {} integrity errors (`ndpdb check` on a copy says which)",
                row.integrity_errors
            );
        }
        Ok(dir)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub profile: String,
    /// Always `virtual`: the run measures the emulator's own speed, in wall
    /// time, and no completion is held or late.
    pub clock: &'static str,
    /// The device's completions during recovery, and the late ones.
    pub recovery_completions: u64,
    pub recovery_late_completions: u64,
    pub rows: u64,
    pub update_txns: u64,
    pub load_s: f64,
    pub load_log_bytes: u64,
    pub load_log_bytes_per_tuple: f64,
    pub update_s: f64,
    pub update_txns_per_s: f64,
    pub update_log_bytes: u64,
    pub log_bytes_per_update_txn: f64,
    pub log_flushes: u64,
    pub log_bytes_at_crash: u64,
    pub log_capacity_bytes: u64,
    pub recovery_s: f64,
    pub recovered_records: u64,
    pub recovered_commits: u64,
    pub recovered_log_bytes: u64,
    pub integrity_errors: u64,
}

/// Runs the experiment in `dir` (a fresh database directory).
pub fn run(cfg: &Config, dir: &Path, mut progress: impl FnMut(&str, u64, u64)) -> Result<Row> {
    let capacity = cfg.capacity_mib.saturating_mul(1 << 20);
    let dev = Device::create(dir, cfg.profile.clone(), Some(capacity), DeviceOptions::with_clock(ClockKind::Virtual))?;
    let db = Database::create(Store::new(dev, StoreOptions::default())?)?;
    let t = db.create_table(ORDER_LINE, order_line_columns())?;
    let w0 = db.store().wal_stats();
    let t0 = Instant::now();
    orderline::load(&db, &t, cfg.rows, cfg.seed, |n| progress("load", n, cfg.rows))?;
    let load_s = t0.elapsed().as_secs_f64();
    let w1 = db.store().wal_stats();
    let amount = t.column_index(OL_AMOUNT).context("no ol_amount")?;
    let mut rng = cfg.seed | 1;
    let t1 = Instant::now();
    let mut done = 0;
    while done < cfg.txns {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let vid = rng % cfg.rows.max(1);
        let mut tx = db.begin(Isolation::RepeatableRead);
        let r = (|| {
            let Some(mut row) = tx.get(&t, vid)? else { return Ok(()) };
            row[amount] = Value::Int((rng >> 20) as i64 % 1_000_000);
            tx.update(&t, vid, &row)
        })();
        match r {
            Ok(()) => tx.commit()?,
            Err(TxnError::Serialization(_) | TxnError::Deadlock) => continue,
            Err(e) => return Err(e.into()),
        }
        done += 1;
        if done % 1000 == 0 {
            progress("update", done, cfg.txns);
        }
    }
    let update_s = t1.elapsed().as_secs_f64();
    let w2 = db.store().wal_stats();
    let (at_crash, capacity) = db.store().wal_usage();
    // The crash: nothing in host memory survives, no checkpoint is written.
    drop(db);
    let dev = Device::open(dir, cfg.profile.clone(), DeviceOptions::with_clock(ClockKind::Virtual))?;
    let (store, meta, rec) = Store::open_with_report(dev, StoreOptions::default())?;
    let recovery = store.device().counters();
    let check = store.check()?;
    drop(Database::open(store, meta));
    Ok(Row {
        profile: cfg.profile.name.clone(),
        clock: ClockKind::Virtual.name(),
        recovery_completions: recovery.completions,
        recovery_late_completions: recovery.late_completions,
        rows: cfg.rows,
        update_txns: cfg.txns,
        load_s,
        load_log_bytes: w1.bytes - w0.bytes,
        load_log_bytes_per_tuple: (w1.bytes - w0.bytes) as f64 / cfg.rows.max(1) as f64,
        update_s,
        update_txns_per_s: cfg.txns as f64 / update_s.max(1e-9),
        update_log_bytes: w2.bytes - w1.bytes,
        log_bytes_per_update_txn: (w2.bytes - w1.bytes) as f64 / cfg.txns.max(1) as f64,
        log_flushes: w2.flushes - w0.flushes,
        log_bytes_at_crash: at_crash,
        log_capacity_bytes: capacity,
        recovery_s: rec.wall_s,
        recovered_records: rec.records,
        recovered_commits: rec.commits,
        recovered_log_bytes: rec.log_bytes,
        integrity_errors: check.error_count(),
    })
}

/// The terminal table: the row's log volumes, rates and recovery, under a
/// heading that says what its times are.
pub fn table(row: &Row) -> String {
    let late = Lateness { late: row.recovery_late_completions, completions: row.recovery_completions };
    let head = format!(
        "profile {}, {} clock: updates/s and recovery s are wall times of the emulator on this machine (the \
         virtual clock holds no completion; recovery: {} late of {} device completions)\n",
        row.profile, row.clock, late.late, late.completions
    );
    head + &crate::output::table(
        &[
            "rows",
            "update txns",
            "log B/tuple (load)",
            "log B/update txn",
            "updates/s",
            "log B at crash",
            "recovery s",
            "commits replayed",
            "integrity errors",
        ],
        &[vec![
            row.rows.to_string(),
            row.update_txns.to_string(),
            format!("{:.1}", row.load_log_bytes_per_tuple),
            format!("{:.1}", row.log_bytes_per_update_txn),
            format!("{:.0}", row.update_txns_per_s),
            row.log_bytes_at_crash.to_string(),
            format!("{:.3}", row.recovery_s),
            row.recovered_commits.to_string(),
            row.integrity_errors.to_string(),
        ]],
    )
}
