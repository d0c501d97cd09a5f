//! The optimizer's planning time on the 113 JOB queries over loaded data:
//! generates JOB data at SCALE, loads it into an embedded ndpdb (schema,
//! COPY, the foreign-key indexes, ANALYZE, as the JOB test), then plans
//! each query RUNS times with `EXPLAIN` (which optimizes without running)
//! and prints per query its number of relations, the median of
//! `Session::last_planning_time` (the optimizer's wall time) and the median
//! thread CPU time of the whole EXPLAIN statement (parse, bind, optimize,
//! format: an upper bound on the optimizer's CPU, steady under load), then
//! the slowest query and the queries with the most relations.
//!
//! ```text
//! cargo run --release -p ndpdb-sqltest --example job_plan_time -- [SCALE [RUNS [QUERY,...]]]
//! ```
//! Defaults: scale 1, 20 runs, every query.

use std::time::{Duration, Instant};

use ndpdb_sql::session::{Engine, EngineOptions};
use ndpdb_sqltest::SqlEngine;
use ndpdb_sqltest::job::load_job;
use ndpdb_sqltest::ndpdb::NdpdbSession;
use ndpdb_workload::job::{JobConfig, JobData, default_job_dir, join_graphs};

/// CPU time of the calling thread: under load (other processes on the two
/// cores) wall time overstates the optimizer's own work.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant
    // the kernel knows. On failure `ts` stays zero (and so do the figures).
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scale: f64 = args.first().map_or(Ok(1.0), |s| s.parse()).map_err(|e| format!("SCALE: {e}"))?;
    let runs: usize = args.get(1).map_or(Ok(20), |s| s.parse()).map_err(|e| format!("RUNS: {e}"))?;
    let only: Vec<&str> = args.get(2).map(|s| s.split(',').collect()).unwrap_or_default();
    let dir = default_job_dir().ok_or("no JOB directory: set NDPDB_JOB_DIR")?;
    let t0 = Instant::now();
    let data = JobData::prepare(JobConfig { scale, seed: 17, dir: dir.clone() }).map_err(|e| e.to_string())?;
    let csv = tempfile::tempdir().map_err(|e| e.to_string())?;
    let files = data.write(csv.path(), &mut |_| {}).map_err(|e| e.to_string())?;
    let db_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let opts = EngineOptions { dir: db_dir.path().to_path_buf(), capacity_mib: Some(4096), ..EngineOptions::default() };
    let engine = Engine::open(&opts).map_err(|e| e.to_string())?;
    let mut ndpdb = NdpdbSession(engine.session());
    load_job(&mut ndpdb, &dir, &files, true)?;
    eprintln!("scale {scale}: {} rows generated and loaded in {:.1?}", data.total_rows(), t0.elapsed());
    let relations: std::collections::HashMap<String, usize> = join_graphs(&dir)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|g| (g.name.clone(), g.relations.len()))
        .collect();
    let mut results = Vec::new();
    for q in data.queries().iter().filter(|q| only.is_empty() || only.contains(&q.name.as_str())) {
        let explain = format!("EXPLAIN {}", q.sql.trim().trim_end_matches(';'));
        let (mut times, mut cpu) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        for _ in 0..runs {
            let c0 = thread_cpu();
            ndpdb.run(&explain).map_err(|e| format!("{}: {e}", q.name))?;
            cpu.push(thread_cpu().saturating_sub(c0));
            times.push(ndpdb.0.last_planning_time().ok_or("no planning time")?);
        }
        let n = relations.get(&q.name).copied().unwrap_or(0);
        let m = median(times);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{:>4} relations={n:<2} planning median {:>8.3} ms wall; whole EXPLAIN median {:>8.3} ms CPU",
            q.name,
            ms(m),
            ms(median(cpu))
        );
        results.push((n, m, q.name.clone()));
    }
    results.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    let slowest = results.iter().max_by_key(|r| r.1).ok_or("no queries")?;
    println!("slowest: {} ({} relations) {:.3} ms", slowest.2, slowest.0, slowest.1.as_secs_f64() * 1e3);
    for (n, m, name) in results.iter().take(3) {
        println!("most relations: {name} ({n}) {:.3} ms", m.as_secs_f64() * 1e3);
    }
    Ok(())
}
