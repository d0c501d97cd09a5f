//! `ndpdb bench snapshot`: the neoDBMS demonstration (ICDE'22, section III,
//! Figs. 6-8) as an experiment. A composer workload (`compose.rs`) is planned
//! once and applied to every engine: ndpdb with NDP on the device's PEs
//! (`ndpdb.rs`), ndpdb's host-only block stack, and a real PostgreSQL with
//! REPEATABLE READ or SERIALIZABLE sessions held open for the snapshot
//! markers (`postgres.rs`). The query then runs in every marker's snapshot on
//! every engine; all answers must agree, or the run fails. `scenario.rs`
//! writes the paper's scenarios as workloads, `report.rs` turns rows into the
//! table and plots, and `command.rs` runs a series of points end to end.

mod command;
mod ndpdb;
mod postgres;
mod report;
mod scenario;

use std::path::Path;

use anyhow::{Result, bail};
use ndpdb_device::{ClockKind, Profile};
use ndpdb_format::ndp::Aggregate;
use ndpdb_storage::Freshness;
use serde::Serialize;

use crate::compose::{Action, Workload};
use crate::limits::{check_pes, check_workers};

pub use command::{Points, Progress, Scenarios, Watch};
pub use postgres::Postgres;
pub use report::{plot, speedups, table};
pub use scenario::{Figure, scenario, x_of};

/// The largest `max_parallel_workers_per_gather` PostgreSQL accepts.
const PG_WORKERS_MAX: usize = 1024;

/// `OL_DELIVERY_D` of delivered lines: one load time for every engine.
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
    /// How ndpdb's NDP calls get the host's shared state: a row per
    /// freshness and PE count (`--freshness`; `[Ship]` by default).
    pub freshness: Vec<Freshness>,
}

impl Config {
    /// Fails when a PE count is not one of the profile's PEs or a worker
    /// count is not 1..=`WORKERS_MAX` (`limits.rs`).
    pub fn validate(&self) -> Result<()> {
        if self.pes.is_empty() {
            bail!("--pes: give at least one PE count");
        }
        if self.freshness.is_empty() {
            bail!("--freshness: give at least one of ship, flush, cbm");
        }
        for &pes in &self.pes {
            check_pes("--pes", pes, &self.profile)?;
        }
        for &workers in &self.workers {
            check_workers("--workers", workers)?;
        }
        if let Some(w) = self.postgres_workers.iter().find(|&&w| w > PG_WORKERS_MAX) {
            bail!("--pg-workers {w}: PostgreSQL's max_parallel_workers_per_gather takes 0..={PG_WORKERS_MAX}");
        }
        Ok(())
    }
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
    /// ndpdb NDP: how the call got the host's shared state (`ship`,
    /// `flush`, `cbm`); None for the other engines.
    pub freshness: Option<&'static str>,
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
    /// Of `link_bytes_to_device`, the bytes the PEs read from host memory
    /// by DMA (CBM freshness: the delta pages they reached).
    pub dma_bytes_read: Option<u64>,
    pub medium_bytes_read: Option<u64>,
    /// The device's completions during the query, and those of them that
    /// were late (real clock: the emulator set the pace; `late.rs`).
    pub completions: Option<u64>,
    pub late_completions: Option<u64>,
    pub versions_visited: Option<u64>,
    /// ndpdb host-only: the host CPU time of the chain walk (the slowest
    /// worker's), measured; on the virtual clock it is not part of
    /// `modelled_s`.
    pub host_cpu_s: Option<f64>,
    /// `count(*)` and `sum(ol_i_id)` of the rows the query reads, compared
    /// across engines beside `result`: nonzero at every size, where the
    /// answer itself may be 0 on every engine (`ol_amount` is 0 on TPC-C's
    /// delivered lines, the first 2,100 orders of a district).
    pub control: Option<String>,
}

/// What the run says besides its rows.
#[derive(Debug, Default)]
pub struct Notes {
    pub postgres: Option<String>,
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
    let op = ndpdb_format::text::aggregate_name(w.query.op);
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
        op: format!("{op}({})", if w.query.op == Aggregate::CountStar { "*" } else { &w.query.column }),
        ..Row::default()
    };
    let mut rows = ndpdb::run(w, &plan, cfg, dir, &base, &mut progress)?;
    let mut notes = Notes::default();
    if !cfg.postgres_workers.is_empty() {
        if let Some(server) = postgres.server()? {
            rows.extend(postgres::run(server, w, &plan, cfg, &base, &mut progress)?);
        }
        notes.postgres = postgres.note().map(str::to_string);
    }
    check_agreement(w, &rows)?;
    Ok((rows, notes))
}

/// A row of an engine at a marker, all but the measurements: (engine,
/// PEs, workers, marker label, live tuples at the marker).
type Base<'a> = dyn Fn(&'static str, Option<u32>, Option<usize>, &str, u64) -> Row + 'a;

fn check_agreement(w: &Workload, rows: &[Row]) -> Result<()> {
    for m in rows.iter().map(|r| &r.snapshot_position).collect::<std::collections::BTreeSet<_>>() {
        let at: Vec<&Row> = rows.iter().filter(|r| &r.snapshot_position == m).collect();
        let first = at[0];
        for r in &at[1..] {
            if !agree(w.query.op, &first.result, &r.result) || first.control != r.control {
                let says = |r: &Row| {
                    format!(
                        "{} (pes {:?}, workers {:?}, freshness {}) says {:?} over {}",
                        r.engine,
                        r.pes,
                        r.workers,
                        r.freshness.unwrap_or("-"),
                        r.result,
                        r.control.as_deref().unwrap_or("-")
                    )
                };
                bail!("ENGINES DISAGREE at snapshot {m:?} of {}: {}, {}", w.name, says(first), says(r));
            }
        }
    }
    Ok(())
}

/// What the run's agreement covered, to say after its table: every
/// engine's answer and the rows it read (the control) at each point, and
/// the points where the answer was 0 or NULL on every engine, where only
/// the control told the engines apart.
pub fn agreement_note(rows: &[(f64, Row)]) -> String {
    let mut points: Vec<(&str, u64, u64, &str, bool)> = Vec::new();
    for (_, r) in rows {
        let zero = r.result.as_deref().is_none_or(|v| v.parse::<f64>().is_ok_and(|v| v == 0.0));
        let key = (r.scenario.as_str(), r.rows, r.versions_per_tuple.to_bits(), r.snapshot_position.as_str());
        match points.iter_mut().find(|p| (p.0, p.1, p.2, p.3) == key) {
            Some(p) => p.4 &= zero,
            None => points.push((key.0, key.1, key.2, key.3, zero)),
        }
    }
    let engines: std::collections::BTreeSet<_> =
        rows.iter().map(|(_, r)| (r.engine, r.pes, r.workers, r.freshness)).collect();
    if engines.len() < 2 {
        return "only one engine ran, so no answer was compared with another".to_string();
    }
    let trivial = points.iter().filter(|p| p.4).count();
    let mut note = format!(
        "all engines agree at all {} points: on the answer, and on count(*) and sum(ol_i_id) of the rows it reads",
        points.len()
    );
    if trivial > 0 {
        note += &format!(
            "; at {trivial} of them the answer is 0 or NULL on every engine (TPC-C gives the delivered lines, the \
             first 2,100 orders of each district or about 21,000 tuples, an ol_amount of 0), so there the rows \
             read carried the check"
        );
    }
    note
}

/// Whether two answers agree: exactly, or for AVG to 1e-9 relative (the
/// engines round the quotient differently).
fn agree(op: Aggregate, a: &Option<String>, b: &Option<String>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) if op == Aggregate::Avg => match (x.parse::<f64>(), y.parse::<f64>()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of engine `engine` at one point ("scenario 3", 10 tuples, 5
    /// versions, snapshot "m"), with `result`.
    pub(super) fn test_row(engine: &'static str, result: Option<&str>) -> Row {
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
        // Equal answers over different rows disagree too.
        let with = |engine, control: &str| Row { control: Some(control.into()), ..row(engine, "0.00") };
        let e = check_agreement(&w, &[with("ndpdb-ndp", "9 rows"), with("postgresql", "10 rows")]).unwrap_err();
        assert!(e.to_string().contains("over 10 rows"), "{e}");
        assert!(agree(Aggregate::Avg, &Some("912.987654321000".into()), &Some("912.9876543210000000".into())));
        assert!(!agree(Aggregate::Avg, &Some("912.98".into()), &Some("912.99".into())));
        assert_eq!(ndpdb_format::schema::format_timestamp(1_700_000_000_000_001), "2023-11-14 22:13:20.000001");
        assert_eq!(ndpdb_format::text::parse_scaled("-1.5", 2), Some(-150));
    }

    /// The note after a run says where agreement rested on the rows read
    /// alone, and that one engine alone agreed with nothing.
    #[test]
    fn the_agreement_note_says_what_was_compared() {
        let at = |engine, result: &str| (0.0, test_row(engine, Some(result)));
        let note = agreement_note(&[at("ndpdb-ndp", "0.00"), at("postgresql", "0.00")]);
        assert!(note.starts_with("all engines agree at all 1 points") && note.contains("at 1 of them"), "{note}");
        let note = agreement_note(&[at("ndpdb-ndp", "5.00"), at("postgresql", "5.00")]);
        assert!(!note.contains("of them"), "{note}");
        assert!(agreement_note(&[at("ndpdb-ndp", "5.00")]).starts_with("only one engine ran"));
    }
}
