//! Data for the SQL benchmarks: generating the CSV files, loading them into
//! ndpdb, PostgreSQL and DuckDB, and the cache that lets a second run skip
//! all but PostgreSQL's and DuckDB's loads.
//!
//! ndpdb loads a table with `COPY ... FROM 'file'` in transactions of at
//! most [`CHUNK_ROWS`] rows: a larger file is cut into chunk files first,
//! each committed on its own, so that no transaction's log grows with the
//! scale factor: the log ring is 128 MiB and a lineitem row logs about 165
//! bytes, so one COPY of SF 0.1's 600,000 lineitem rows already overflows
//! it ( SF 1's 6 million lineitem rows are thirty transactions; the store
//! checkpoints between them when half the ring is used). Then `ANALYZE`.
//!
//! The cache, `<out>/data/<workload>-sf<S>/`: `csv/` with the generated
//! files and `ndpdb/` with the loaded database, each complete only when
//! its marker file (`csv.complete`, `ndpdb.complete`, holding the row
//! counts) exists; an incomplete one is removed and made again.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use ndpdb_bench::report::progress_bar;
use ndpdb_bench::{errln, outln};
use ndpdb_device::ClockKind;
use ndpdb_sql::session::{Engine, EngineOptions, Session};
use ndpdb_workload::tpch;

use super::LoadTpchArgs;
use super::engines::BenchEngine;

/// Rows per COPY transaction into ndpdb.
pub const CHUNK_ROWS: u64 = 200_000;

/// One table to load: its `CREATE TABLE`, its CSV file, whether the file
/// has a header line.
#[derive(Debug, Clone)]
pub struct TableLoad {
    pub name: String,
    pub create: String,
    pub csv: PathBuf,
    pub header: bool,
}

/// The TPC-H tables of the CSV files in `dir`.
pub fn tpch_tables(dir: &Path) -> Vec<TableLoad> {
    tpch::TABLES
        .iter()
        .map(|t| TableLoad {
            name: t.to_string(),
            create: tpch::create_table(t).unwrap_or_default().to_string(),
            csv: dir.join(format!("{t}.csv")),
            header: true,
        })
        .collect()
}

/// Image capacity of a new benchmark database: room for the data at
/// `scale` several times over (SF 0.1's 110 MB of CSV load into 1 GiB).
/// The image is written in full, so this is disk space taken.
pub fn capacity_mib(scale: f64) -> u64 {
    ((scale * 8192.0).ceil() as u64).max(1024)
}

/// `ndpdb load tpch`.
pub fn load_tpch_command(a: &LoadTpchArgs) -> Result<()> {
    let started = Instant::now();
    prepare_db_dir(&a.db, a.replace)?;
    let csv = tempfile::Builder::new().prefix("ndpdb-tpch-csv-").tempdir().context("a directory for the CSV files")?;
    generate_tpch(a.scale, csv.path())?;
    let opts = EngineOptions {
        dir: a.db.clone(),
        profile: Some(a.profile.clone()),
        clock: ClockKind::Virtual,
        create_if_missing: true,
        capacity_mib: Some(capacity_mib(a.scale)),
    };
    let engine = Engine::open(&opts).with_context(|| format!("creating database {}", a.db.display()))?;
    let counts = load_ndpdb(&engine, &tpch_tables(csv.path()))?;
    engine.close().context("closing the database (checkpoint)")?;
    outln!("{:<10} {:>10}", "table", "rows");
    for (t, n) in &counts {
        outln!("{t:<10} {n:>10}");
    }
    outln!(
        "TPC-H scale {} loaded into {} (profile {}) in {:.1} s",
        a.scale,
        a.db.display(),
        a.profile,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Refuses a directory that holds a database unless `replace`, which
/// removes it first.
fn prepare_db_dir(db: &Path, replace: bool) -> Result<()> {
    let non_empty = std::fs::read_dir(db).map(|mut d| d.next().is_some()).unwrap_or(false);
    if !non_empty {
        return Ok(());
    }
    if !replace {
        bail!(
            "{} is not empty (it holds a database or other files); give another --db, or --replace to remove \
             what is there first",
            db.display()
        );
    }
    if !db.join(ndpdb_device::IMAGE_FILE).exists() {
        bail!("--replace: {} holds no ndpdb database; remove it yourself if you mean it", db.display());
    }
    std::fs::remove_dir_all(db).with_context(|| format!("removing {}", db.display()))
}

/// Writes the eight TPC-H files into `dir`, with a progress bar.
pub fn generate_tpch(scale: f64, dir: &Path) -> Result<Vec<tpch::TableFile>> {
    let total: u64 = tpch::TABLES.iter().map(|t| tpch::expected_rows(t, scale)).sum();
    let bar = progress_bar(total, "{msg:>10} [{bar:30}] {pos}/{len} rows ({rate} rows/s, {eta} left)");
    let mut done_before = 0u64;
    let mut current = String::new();
    let files = tpch::generate(scale, dir, &mut |p| {
        if p.table != current {
            done_before = bar.position();
            current = p.table.to_string();
            bar.set_message(p.table.to_string());
        }
        bar.set_position(done_before + p.rows);
    })?;
    bar.finish_and_clear();
    Ok(files)
}

/// Creates and loads `tables` into `engine`, then ANALYZE; returns the
/// rows per table.
pub fn load_ndpdb(engine: &Arc<Engine>, tables: &[TableLoad]) -> Result<Vec<(String, u64)>> {
    let mut session = engine.session();
    let mut counts = Vec::with_capacity(tables.len());
    for t in tables {
        exec(&mut session, &t.create)?;
        let n = copy_in_chunks(&mut session, t)?;
        counts.push((t.name.clone(), n));
    }
    let bar = progress_bar(1, "{msg}");
    bar.set_message("ANALYZE");
    exec(&mut session, "ANALYZE")?;
    bar.finish_and_clear();
    Ok(counts)
}

fn exec(session: &mut Session, sql: &str) -> Result<u64> {
    let mut n = 0;
    for r in session.run(sql) {
        let r = r.map_err(|e| anyhow!("ndpdb: {}: {}", first_line(sql), e.message))?;
        n = r.tag.rsplit(' ').next().and_then(|c| c.parse().ok()).unwrap_or(0);
    }
    Ok(n)
}

fn first_line(sql: &str) -> &str {
    sql.lines().next().unwrap_or(sql)
}

/// COPY of one table's file, cut into transactions of [`CHUNK_ROWS`].
fn copy_in_chunks(session: &mut Session, t: &TableLoad) -> Result<u64> {
    let copy = |file: &Path, header: bool| {
        let opts = if header { "FORMAT csv, HEADER true" } else { "FORMAT csv" };
        format!("COPY {} FROM '{}' WITH ({opts})", t.name, file.display().to_string().replace('\'', "''"))
    };
    let reader = BufReader::with_capacity(1 << 20, std::fs::File::open(&t.csv).context(t.csv.display().to_string())?);
    let bar = progress_bar(0, "{msg:>10} {pos} rows ({rate} rows/s)");
    bar.set_message(t.name.clone());
    let chunks = tempfile::Builder::new().prefix("ndpdb-copy-").tempdir().context("a directory for COPY chunks")?;
    let chunk_path = chunks.path().join("chunk.csv");
    let mut lines = reader.lines();
    if t.header {
        lines.next().transpose().context(t.csv.display().to_string())?;
    }
    let mut total = 0u64;
    loop {
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&chunk_path).context("a chunk file")?);
        let mut rows = 0u64;
        // A record may span lines (a quoted newline): cut only where a line
        // ends outside quotes.
        let mut open_quotes = false;
        for line in lines.by_ref() {
            let line = line.context(t.csv.display().to_string())?;
            open_quotes ^= line.bytes().filter(|&b| b == b'"').count() % 2 == 1;
            writeln!(out, "{line}").context("writing a chunk file")?;
            if !open_quotes {
                rows += 1;
                if rows == CHUNK_ROWS {
                    break;
                }
            }
        }
        out.flush().context("writing a chunk file")?;
        drop(out);
        if rows == 0 {
            break;
        }
        total += exec(session, &copy(&chunk_path, false))?;
        bar.set_position(total);
        if rows < CHUNK_ROWS {
            break;
        }
    }
    bar.finish_and_clear();
    Ok(total)
}

/// Loads `tables` into a benchmark engine (PostgreSQL, DuckDB) by the
/// statements `copy_sql` makes, then `analyze` if given.
pub fn load_engine(
    engine: &mut dyn BenchEngine,
    tables: &[TableLoad],
    copy_sql: &dyn Fn(&TableLoad) -> String,
    analyze: Option<&str>,
) -> Result<()> {
    let bar = progress_bar(tables.len() as u64, "{msg:>10} [{bar:30}] {pos}/{len} tables");
    for t in tables {
        bar.set_message(format!("{} {}", engine.name(), t.name));
        engine.run(&format!("DROP TABLE IF EXISTS {} CASCADE", t.name))?;
        engine.run(&t.create)?;
        engine.run(&copy_sql(t))?;
        bar.inc(1);
    }
    if let Some(a) = analyze {
        engine.run(a)?;
    }
    bar.finish_and_clear();
    Ok(())
}

/// A cached, loaded ndpdb database for a workload at a scale factor.
pub struct Cached {
    pub csv: PathBuf,
    pub db: PathBuf,
}

/// The cache directory of `workload` at `scale` under `out`.
pub fn cache_dir(out: &Path, workload: &str, scale: f64) -> PathBuf {
    out.join("data").join(format!("{workload}-sf{scale}"))
}

/// Makes (or reuses) the cached CSV files and ndpdb database: `generate`
/// writes the CSV files into a directory and returns the tables to load.
pub fn cached(
    dir: &Path,
    generate: &dyn Fn(&Path) -> Result<Vec<TableLoad>>,
    tables: &dyn Fn(&Path) -> Vec<TableLoad>,
    capacity_mib: u64,
) -> Result<Cached> {
    let csv = dir.join("csv");
    let csv_marker = dir.join("csv.complete");
    if !csv_marker.exists() {
        let _ = std::fs::remove_dir_all(&csv);
        let _ = std::fs::remove_file(dir.join("ndpdb.complete"));
        std::fs::create_dir_all(&csv).with_context(|| format!("creating {}", csv.display()))?;
        errln!("generating data into {}", csv.display());
        let loads = generate(&csv)?;
        let names: Vec<String> = loads.iter().map(|t| t.name.clone()).collect();
        std::fs::write(&csv_marker, names.join("\n")).context("writing the cache marker")?;
    } else {
        errln!("reusing the data in {}", csv.display());
    }
    let db = dir.join("ndpdb");
    let db_marker = dir.join("ndpdb.complete");
    if !db_marker.exists() {
        let _ = std::fs::remove_dir_all(&db);
        let started = Instant::now();
        let opts = EngineOptions {
            dir: db.clone(),
            profile: Some(ndpdb_device::profile::DEFAULT_PROFILE.to_string()),
            clock: ClockKind::Virtual,
            create_if_missing: true,
            capacity_mib: Some(capacity_mib),
        };
        let engine = Engine::open(&opts).with_context(|| format!("creating database {}", db.display()))?;
        let counts = load_ndpdb(&engine, &tables(&csv))?;
        engine.close().context("closing the database (checkpoint)")?;
        let text: Vec<String> = counts.iter().map(|(t, n)| format!("{t} {n}")).collect();
        std::fs::write(&db_marker, text.join("\n")).context("writing the cache marker")?;
        errln!("loaded ndpdb in {:.1} s ({})", started.elapsed().as_secs_f64(), db.display());
    } else {
        errln!("reusing the ndpdb database in {}", db.display());
    }
    Ok(Cached { csv, db })
}
