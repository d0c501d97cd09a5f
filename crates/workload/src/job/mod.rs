//! JOB-shaped data: the 21 tables of the Join-Order Benchmark's IMDB schema
//! at a scale factor, with witnesses planted so that each of its 113
//! queries returns rows (`docs/job-data.md`).
//!
//! The real IMDB snapshot is not available, and uniform synthetic data
//! makes almost every JOB query empty (they filter on literals such as
//! `k.keyword = 'marvel-cinematic-universe'` and join up to 17 tables). So
//! the generator makes two kinds of rows:
//!
//! ```text
//!   schema.sql ──► Schema ─────────────────────────────┐
//!   queries/*.sql ──► QuerySpec (aliases, joins,       │
//!                     per-alias filters, SELECT cols)  │
//!        │                                             ▼
//!        └──► plant: k witnesses per query ──► Plan ──► layout: ids ──► write: CSV per table
//!             (solve filters, link joins)        base rows (IMDB/40 × S)  ▲
//!                                                skewed foreign keys ─────┘
//! ```
//!
//! * base rows: IMDB's row counts divided by 40 times the scale factor,
//!   foreign keys drawn zipfian over the referenced table, IMDB's own
//!   dimension rows (`kind_type`, `info_type`, ...), IMDB-like text;
//! * witness rows: for each query, k = max(1, round(3·S)) joined tuples that
//!   satisfy every filter of the query (a LIKE gets a matching string, a
//!   range a value inside it), linked through its join equalities, with ids
//!   spread among the base rows' ids.
//!
//! A filter the planter cannot satisfy is an error naming the query and the
//! conjunct ([`JobError::Witnesses`]), never skipped. Everything is a pure
//! function of the seed, the scale and the files read.

mod plant;
mod pred;
mod query;
mod schema;
mod solve;
mod values;
mod vocab;
mod write;

use std::path::{Path, PathBuf};

pub use plant::WitnessFailure;
pub use pred::{Value, like_match};
pub use query::QuerySpec;
pub use schema::FOREIGN_KEYS;
pub use write::{TableFile, csv_line};

/// IMDB's row counts (the snapshot JOB was published with); S = 1 is these
/// divided by [`IMDB_DIVISOR`]. The six dimension tables keep IMDB's rows.
pub const IMDB_ROWS: &[(&str, u64)] = &[
    ("aka_name", 901_343),
    ("aka_title", 361_472),
    ("cast_info", 36_244_344),
    ("char_name", 3_140_339),
    ("company_name", 234_997),
    ("complete_cast", 135_086),
    ("keyword", 134_170),
    ("movie_companies", 2_609_129),
    ("movie_info", 14_835_720),
    ("movie_info_idx", 1_380_035),
    ("movie_keyword", 4_523_930),
    ("movie_link", 29_997),
    ("name", 4_167_491),
    ("person_info", 2_963_664),
    ("title", 2_528_312),
];

/// S = 1 has IMDB's rows divided by this (about 1.86 M rows).
pub const IMDB_DIVISOR: f64 = 40.0;
/// The largest scale factor accepted (40 would be IMDB's size).
pub const MAX_SCALE: f64 = 40.0;

/// What went wrong, and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("scale factor must be a number in (0, {MAX_SCALE}], got {0}")]
    Scale(f64),
    #[error(
        "cannot read {path}: {cause}; pass the JOB directory (holding schema.sql and queries/) with --queries, or set NDPDB_JOB_DIR"
    )]
    Io { path: PathBuf, cause: std::io::Error },
    #[error(
        "no JOB directory found (looked for shared/workloads/job above the current directory and the source tree); pass it with --queries or set NDPDB_JOB_DIR"
    )]
    NoJobDir,
    #[error("{dir} holds no .sql queries; pass the JOB directory with --queries")]
    NoQueries { dir: PathBuf },
    #[error("{file}: {detail}")]
    Schema { file: String, detail: String },
    #[error("query {query}: cannot parse: {detail}")]
    QueryParse { query: String, detail: String },
    #[error(
        "query {query}: `{conjunct}`: {reason} (the generator plants =, <>, <, >, BETWEEN, IN, LIKE, IS NULL and AND/OR of them over one table, and equality joins)"
    )]
    Unsupported { query: String, conjunct: String, reason: String },
    #[error("{} queries cannot get witness rows:{}", .0.len(), list_failures(.0))]
    Witnesses(Vec<WitnessFailure>),
    #[error("table {table} is in the schema but the generator has no row count for it; add it to IMDB_ROWS")]
    UnknownTable { table: String },
    #[error("writing {path}: {cause}; check that the output directory is writable and has space")]
    Write { path: PathBuf, cause: std::io::Error },
    #[error("internal error in the JOB generator (a bug, please report): {0}")]
    Internal(String),
}

fn list_failures(f: &[WitnessFailure]) -> String {
    f.iter().map(|w| format!("\n  query {}: `{}`: {}", w.query, w.conjunct, w.reason)).collect()
}

/// A generation run's parameters.
#[derive(Debug, Clone)]
pub struct JobConfig {
    pub scale: f64,
    pub seed: u64,
    /// The JOB directory: `schema.sql`, `fkindexes.sql`, `queries/*.sql`.
    pub dir: PathBuf,
}

/// The JOB directory when none is given: `$NDPDB_JOB_DIR`, else the first
/// `shared/workloads/job` found going up from the current directory, then
/// from this crate's source directory (the repo's `../shared`, also from a
/// worktree nested deeper).
pub fn default_job_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("NDPDB_JOB_DIR") {
        return Some(PathBuf::from(d));
    }
    let starts = [std::env::current_dir().ok(), Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")))];
    starts.into_iter().flatten().find_map(|start| {
        start.ancestors().map(|a| a.join("shared/workloads/job")).find(|d| d.join("schema.sql").is_file())
    })
}

/// Everything decided before writing: schema, queries, planted rows, ids.
#[derive(Debug)]
pub struct JobData {
    config: JobConfig,
    schema: schema::Schema,
    queries: Vec<QuerySpec>,
    plan: plant::Plan,
    layout: write::Layout,
}

impl JobData {
    /// Reads the schema and queries, plants the witnesses and lays out ids.
    pub fn prepare(config: JobConfig) -> Result<JobData, JobError> {
        if !(config.scale > 0.0 && config.scale <= MAX_SCALE) {
            return Err(JobError::Scale(config.scale));
        }
        let schema_path = config.dir.join("schema.sql");
        let sql =
            std::fs::read_to_string(&schema_path).map_err(|e| JobError::Io { path: schema_path.clone(), cause: e })?;
        let schema = schema::Schema::parse(&schema_path.display().to_string(), &sql)?;
        let queries = query::load_queries(&config.dir.join("queries"), &schema)?;
        let base = schema.tables.iter().map(|t| base_rows(&t.name, config.scale)).collect::<Result<Vec<_>, _>>()?;
        let mut rng = crate::seeded(config.seed, 0x4a4f_425f_504c_414e); // "JOB_PLAN"
        let plan = plant::plant(&schema, &queries, witnesses_per_query(config.scale), &mut rng)
            .map_err(JobError::Witnesses)?;
        let layout = write::layout(&schema, &base, &plan, &mut rng);
        Ok(JobData { config, schema, queries, plan, layout })
    }

    pub fn queries(&self) -> &[QuerySpec] {
        &self.queries
    }

    /// (table, rows) in schema order.
    pub fn table_rows(&self) -> Vec<(String, u64)> {
        self.schema.tables.iter().zip(&self.layout.rows).map(|(t, n)| (t.name.clone(), *n)).collect()
    }

    pub fn total_rows(&self) -> u64 {
        self.layout.rows.iter().sum()
    }

    /// How many rows are planted witnesses (all queries together).
    pub fn planted_rows(&self) -> usize {
        self.plan.rows.len()
    }

    /// Writes `<table>.csv` for every table into `out` (created if missing).
    pub fn write(&self, out: &Path, progress: &mut dyn FnMut(u64)) -> Result<Vec<TableFile>, JobError> {
        write::write_tables(&self.schema, &self.queries, &self.plan, &self.layout, self.config.seed, out, progress)
    }
}

/// k: witnesses per query at scale `s`.
pub fn witnesses_per_query(s: f64) -> usize {
    ((3.0 * s).round() as usize).max(1)
}

/// Base rows of a table at scale `s` (at least one); dimension tables: 0
/// here, their IMDB rows are added when laid out.
fn base_rows(table: &str, s: f64) -> Result<u64, JobError> {
    if vocab::dimension(table).is_some() {
        return Ok(0);
    }
    let imdb = IMDB_ROWS
        .iter()
        .find(|(t, _)| *t == table)
        .map(|(_, n)| *n)
        .ok_or_else(|| JobError::UnknownTable { table: table.to_string() })?;
    Ok(((imdb as f64 / IMDB_DIVISOR * s).round() as u64).max(1))
}

/// A JOB query's join graph by name: its FROM list as (alias, table,
/// filtered by a predicate of its own) and its equi-joins as (alias,
/// column, alias, column). What the join orderer's timing example plans.
#[derive(Debug, Clone)]
pub struct JoinGraphSpec {
    pub name: String,
    pub relations: Vec<(String, String, bool)>,
    pub joins: Vec<(String, String, String, String)>,
}

/// The join graphs of the queries in `dir` (the JOB directory), read and
/// parsed at run time, in JOB's order.
pub fn join_graphs(dir: &Path) -> Result<Vec<JoinGraphSpec>, JobError> {
    let schema_path = dir.join("schema.sql");
    let sql =
        std::fs::read_to_string(&schema_path).map_err(|e| JobError::Io { path: schema_path.clone(), cause: e })?;
    let schema = schema::Schema::parse(&schema_path.display().to_string(), &sql)?;
    let queries = query::load_queries(&dir.join("queries"), &schema)?;
    Ok(queries.iter().map(|q| join_graph(q, &schema)).collect())
}

fn join_graph(q: &QuerySpec, schema: &schema::Schema) -> JoinGraphSpec {
    let table = |a: usize| &schema.tables[q.aliases[a].table];
    let column = |(a, c): (usize, usize)| (q.aliases[a].name.clone(), table(a).columns[c].name.clone());
    let relations = q
        .aliases
        .iter()
        .enumerate()
        .map(|(i, a)| (a.name.clone(), table(i).name.clone(), !q.filters[i].is_empty()))
        .collect();
    let joins = q
        .joins
        .iter()
        .map(|&(l, r)| {
            let ((a, x), (b, y)) = (column(l), column(r));
            (a, x, b, y)
        })
        .collect();
    JoinGraphSpec { name: q.name.clone(), relations, joins }
}
