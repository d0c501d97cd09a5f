//! `ndpdb gen job --scale S --out DIR [--queries DIR] [--seed N]`: JOB-shaped
//! data as one CSV per table (`ndpdb_workload::job`, `docs/job-data.md`),
//! loadable with PostgreSQL's `COPY t FROM 'DIR/t.csv' WITH (FORMAT csv)`.
//! Prints the files written, rows and bytes per table, and the time.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::{Args, Subcommand};
use ndpdb_bench::report::progress_bar;
use ndpdb_bench::{errln, outln};
use ndpdb_workload::job::{JobConfig, JobData, JobError, default_job_dir, witnesses_per_query};

#[derive(Subcommand)]
pub enum GenCmd {
    /// The Join-Order Benchmark's 21 IMDB tables at scale S (S = 1: IMDB's rows / 40, about 1.9 M
    /// rows), with rows planted so that each of the 113 queries returns rows
    Job(JobArgs),
}

#[derive(Args)]
pub struct JobArgs {
    /// Scale factor: S = 1 is IMDB's row counts divided by 40; CI uses 0.01-0.05
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Directory for the CSV files (created if missing; files there are overwritten)
    #[arg(long)]
    out: PathBuf,
    /// The JOB directory with schema.sql and queries/ (default: $NDPDB_JOB_DIR, else
    /// shared/workloads/job found above the current directory)
    #[arg(long)]
    queries: Option<PathBuf>,
    /// Seed of every random choice: the same seed, scale and queries give the same bytes
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(cmd: GenCmd) -> Result<()> {
    match cmd {
        GenCmd::Job(a) => job(a),
    }
}

fn job(a: JobArgs) -> Result<()> {
    let started = Instant::now();
    let dir = match a.queries {
        Some(d) => d,
        None => default_job_dir().ok_or(JobError::NoJobDir)?,
    };
    // `--queries` may name the queries directory itself.
    let dir = if dir.join("schema.sql").is_file() || !dir.parent().is_some_and(|p| p.join("schema.sql").is_file()) {
        dir
    } else {
        dir.parent().map(PathBuf::from).unwrap_or(dir)
    };
    errln!("reading {} and planting {} witness(es) per query", dir.display(), witnesses_per_query(a.scale));
    let data = JobData::prepare(JobConfig { scale: a.scale, seed: a.seed, dir })?;
    let bar = progress_bar(data.total_rows(), "{msg:>10} [{bar:30}] {pos}/{len} rows ({rate} rows/s, {eta} left)");
    bar.set_message("writing");
    let files = data.write(&a.out, &mut |n| bar.inc(n))?;
    bar.finish_and_clear();
    outln!("{:<16} {:>10} {:>12}  file", "table", "rows", "bytes");
    let (mut rows, mut bytes) = (0, 0);
    for f in &files {
        outln!("{:<16} {:>10} {:>12}  {}", f.table, f.rows, f.bytes, f.path.display());
        rows += f.rows;
        bytes += f.bytes;
    }
    outln!("{:<16} {:>10} {:>12}", "total", rows, bytes);
    outln!(
        "scale {} seed {}: {} queries, {} planted rows; {:.2} s",
        a.scale,
        a.seed,
        data.queries().len(),
        data.planted_rows(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
