//! Exp. 3 (Fig. 6): lock+unlock pairs on the host without contention, on
//! ndpdb's table at each configured size (each beside its cache-line floor),
//! on the conventional (PostgreSQL-style) manager, and, when this machine
//! can build it, on PostgreSQL's own lock manager inside a private server.
//! Every table is timed on the same key sequences (`host_bench`), after a
//! warm-up on other keys, and left empty, or the run fails.

use std::time::Instant;

use anyhow::{Context, Result, ensure};
use ndpdb_baseline::pglocks::{PgLockRun, PgLockTimer};
use ndpdb_baseline::postgres::{PgError, PgServer};
use ndpdb_locktable::{ConventionalLockTable, LockTable};

use super::host_bench::{Access, HostBench, bench_host, bench_line_floor, timer_overhead_ns};
use super::rows::{LatencyRow, LockEvents, histogram, latency_row};
use super::table::size_label;
use super::{Config, check_empty};
use crate::machine::CpuMark;

/// Each Exp. 3 thread's key range (the `bench_host` default).
const EXP3_KEYS_PER_THREAD: u64 = 1 << 20;
/// Exp. 3 warms each table with this share of the requests (at most
/// [`WARMUP_MAX`]) before it measures.
const WARMUP_DIVISOR: u64 = 10;
const WARMUP_MAX: u64 = 100_000;

/// Per access: ndpdb's table at each size, each followed by the cache-line
/// floor of that size, then the conventional manager (which has no size)
/// once, then PostgreSQL's own lock manager when configured and available
/// (else a note says why not).
pub(super) fn exp3(cfg: &Config, notes: &mut Vec<String>, step: &mut dyn FnMut(String)) -> Result<Vec<LatencyRow>> {
    let postgres = if cfg.postgres { start_postgres(notes)? } else { None };
    let mut rows = Vec::new();
    for access in [Access::Sequential, Access::Random] {
        let sized = cfg.table_bytes.iter().flat_map(|&b| [Exp3Table::Ndpdb(b), Exp3Table::Floor(b)]);
        for table in sized.chain([Exp3Table::Conventional]) {
            step(format!("Exp. 3: {}, {} access", table.label(), access_name(access)));
            rows.push(exp3_run(cfg, table, access)?);
        }
        if cfg.postgres {
            step(format!("Exp. 3: postgresql, {} access", access_name(access)));
        }
        if let Some((server, timer)) = &postgres {
            rows.push(exp3_postgres(cfg, server, timer, access)?);
        }
    }
    if let Some((server, _)) = postgres {
        server.stop()?;
    }
    let busiest = rows.iter().filter_map(|r| r.other_cpus_busy).fold(0.0, f64::max);
    if busiest >= BUSY_NOTE_CPUS {
        notes.push(format!(
            "other processes kept up to {busiest:.1} CPUs busy during Exp. 3 (column `others`): they compete for \
             the shared cache that random keys reach ndpdb's table through, and its random medians can be several \
             times the idle machine's; measure on an otherwise idle machine (docs/locks-bench.md)"
        ));
    }
    Ok(rows)
}

/// Other processes' CPUs at which Exp. 3 says its figures are disturbed.
const BUSY_NOTE_CPUS: f64 = 0.25;

/// What an Exp. 3 line in this process measures.
#[derive(Debug, Clone, Copy)]
enum Exp3Table {
    /// ndpdb's table of this many bytes.
    Ndpdb(usize),
    /// The two CASes of an uncontended pair on the bucket's line of a table
    /// of this many bytes, without the protocol (`bench_line_floor`).
    Floor(usize),
    /// The PostgreSQL-style lock manager.
    Conventional,
}

impl Exp3Table {
    fn label(self) -> String {
        match self {
            Exp3Table::Ndpdb(b) => format!("ndpdb {}", size_label(b)),
            Exp3Table::Floor(b) => format!("cache-line floor {}", size_label(b)),
            Exp3Table::Conventional => "conventional".into(),
        }
    }
}

/// A private server with the lock-timing function loaded; `None` (and a
/// note) when this machine lacks PostgreSQL, its headers or a compiler.
fn start_postgres(notes: &mut Vec<String>) -> Result<Option<(PgServer, PgLockTimer)>> {
    let skipped = |e: PgError| format!("Exp. 3 without PostgreSQL's own lock manager: {e}");
    let server = match PgServer::start() {
        Ok(s) => s,
        Err(e @ (PgError::NotInstalled | PgError::NoPostgresUser)) => {
            notes.push(skipped(e));
            return Ok(None);
        }
        Err(e) => return Err(e).context("starting the private PostgreSQL server for Exp. 3"),
    };
    match PgLockTimer::load(&server) {
        Ok(timer) => Ok(Some((server, timer))),
        Err(e @ (PgError::NoServerHeaders { .. } | PgError::NoCompiler { .. })) => {
            notes.push(skipped(e));
            Ok(None)
        }
        Err(e) => Err(e).context("loading the lock-timing function into PostgreSQL"),
    }
}

/// PostgreSQL's own lock manager: each thread a backend (one psql session)
/// that times the same requests as `bench_host` would, warm-up first.
fn exp3_postgres(cfg: &Config, server: &PgServer, timer: &PgLockTimer, access: Access) -> Result<LatencyRow> {
    let spec = exp3_spec(cfg, access);
    let warmup = exp3_warmup(cfg, &spec);
    let wall = Instant::now();
    let mut sessions = (0..cfg.threads).map(|_| server.session()).collect::<Result<Vec<_>, _>>()?;
    let runs = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .iter_mut()
            .enumerate()
            .map(|(t, session)| {
                scope.spawn(move || -> Result<Vec<u64>, PgError> {
                    let run = |b: &HostBench| PgLockRun {
                        requests: b.thread_requests(t),
                        random: b.access == Access::Random,
                        rng: b.thread_seed(t),
                        base: b.thread_base(t),
                        keys: b.keys_per_thread,
                    };
                    timer.time(session, run(&warmup))?;
                    timer.time(session, run(&spec))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("PostgreSQL lock-timing thread panicked")).collect::<Vec<_>>()
    });
    let mut samples = Vec::with_capacity(spec.requests);
    for run in runs {
        samples.extend(run?);
    }
    let held = PgLockTimer::tuple_locks_held(&mut sessions[0])?;
    ensure!(held == 0, "PostgreSQL holds {held} tuple locks after the run; a lock was left behind");
    let mut row = exp3_row(cfg, "postgresql", access, &samples, wall)?;
    row.postgres_version = Some(timer.server_version.clone());
    Ok(row)
}

/// An Exp. 3 line: what every table's line has.
fn exp3_row(
    cfg: &Config,
    lock_table: &'static str,
    access: Access,
    samples: &[u64],
    wall: Instant,
) -> Result<LatencyRow> {
    let mut row = latency_row(3, lock_table, "host", "real", samples, wall.elapsed().as_secs_f64())?;
    row.access = Some(access_name(access));
    row.threads = cfg.threads;
    row.keys = EXP3_KEYS_PER_THREAD;
    row.timer_overhead_ns = Some(timer_overhead_ns(10_000));
    row.histogram = Some(histogram(samples));
    Ok(row)
}

/// The measured requests of `access`: each thread its own key range, no
/// contention.
fn exp3_spec(cfg: &Config, access: Access) -> HostBench {
    HostBench {
        requests: cfg.requests as usize,
        access,
        threads: cfg.threads,
        contention_pct: 0,
        keys_per_thread: EXP3_KEYS_PER_THREAD,
        seed: cfg.seed,
    }
}

/// The warm-up before each measurement: a share of the requests, other keys.
fn exp3_warmup(cfg: &Config, spec: &HostBench) -> HostBench {
    HostBench {
        requests: (cfg.requests / WARMUP_DIVISOR).min(WARMUP_MAX) as usize,
        seed: cfg.seed.rotate_left(29),
        ..*spec
    }
}

fn access_name(access: Access) -> &'static str {
    match access {
        Access::Sequential => "sequential",
        Access::Random => "random",
    }
}

/// One measurement in this process (PostgreSQL's runs in its server).
fn exp3_run(cfg: &Config, table: Exp3Table, access: Access) -> Result<LatencyRow> {
    let spec = exp3_spec(cfg, access);
    let warmup = exp3_warmup(cfg, &spec);
    let cpu = CpuMark::now();
    let wall = Instant::now();
    let (lock_table, table_bytes, samples, events) = match table {
        Exp3Table::Ndpdb(bytes) => {
            let table = LockTable::with_bytes(bytes)?;
            bench_host(&table, &warmup)?;
            let before = table.counters();
            let samples = bench_host(&table, &spec)?;
            check_empty(&table)?;
            ("ndpdb", Some(bytes), samples, Some(LockEvents::between(&before, &table.counters())))
        }
        Exp3Table::Floor(bytes) => {
            let table = LockTable::with_bytes(bytes)?;
            bench_line_floor(&table, &warmup)?;
            let samples = bench_line_floor(&table, &spec)?;
            check_empty(&table)?;
            ("floor", Some(bytes), samples, None)
        }
        Exp3Table::Conventional => {
            let table = ConventionalLockTable::new();
            bench_host(&table, &warmup)?;
            let samples = bench_host(&table, &spec)?;
            let left = table.lock_objects();
            ensure!(
                left == 0,
                "the conventional lock table holds {left} lock objects after the run; a lock was left behind"
            );
            ("conventional", None, samples, None)
        }
    };
    let mut row = exp3_row(cfg, lock_table, access, &samples, wall)?;
    row.other_cpus_busy = cpu.and_then(|c| c.others_since());
    row.table_bytes = table_bytes;
    row.lock_events = events;
    Ok(row)
}
