//! Laying the tables out and writing them as CSV.
//!
//! Each table of n rows has ids 1..=n. The planted rows of a table take
//! ids drawn uniformly from that range (so they sit among the base rows);
//! every other id is a base row. Columns are filled left to right, so a
//! value can depend on the row's earlier columns:
//!
//! ```text
//!   id            the row's id
//!   foreign key   a planted reference, else a skewed draw over the
//!                 referenced table's ids (for the big tables scrambled
//!                 zipfian, permuted per column: a few titles get many cast
//!                 entries, other few many keywords; for dimension rows
//!                 IMDB's frequencies, most common first)
//!   other         a planted value, else values.rs's base value
//! ```
//!
//! The CSV is PostgreSQL's `COPY ... WITH (FORMAT csv)`: no header, NULL as
//! an empty unquoted field, text quoted (`"`, doubled inside) when it is
//! empty or holds a comma, quote, CR, LF or backslash.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus as Rng;

use super::JobError;
use super::plant::{Cell, Plan, RowRef};
use super::pred::Value;
use super::query::QuerySpec;
use super::schema::{Schema, Table};
use super::values::{KIND_EPISODE, base_value, skewed_index};
use super::vocab::{MOVIE_INFO_IDX_TYPES, MOVIE_INFO_TYPES, PERSON_INFO_TYPES, dimension, info_type_id};
use crate::{KeyChoice, KeyPicker};

/// One CSV file written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableFile {
    pub table: String,
    pub path: PathBuf,
    pub rows: u64,
    pub bytes: u64,
}

/// Row counts and the ids of planted rows.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Rows per table (schema order).
    pub rows: Vec<u64>,
    /// The id of each planted row (`Plan::rows` order).
    pub planted_ids: Vec<i64>,
}

/// Gives each planted row an id among its table's `base + planted` ids.
pub fn layout(schema: &Schema, base: &[u64], plan: &Plan, rng: &mut Rng) -> Layout {
    let mut rows = base.to_vec();
    let mut planted_ids = vec![0; plan.rows.len()];
    for (t, table) in schema.tables.iter().enumerate() {
        if let Some(d) = dimension(&table.name) {
            rows[t] = d.rows.len() as u64;
            continue;
        }
        let mine: Vec<usize> = (0..plan.rows.len()).filter(|&i| plan.rows[i].table == t).collect();
        rows[t] = base[t] + mine.len() as u64;
        let mut ids: Vec<i64> =
            rand::seq::index::sample(rng, rows[t] as usize, mine.len()).into_iter().map(|i| i as i64 + 1).collect();
        ids.sort_unstable();
        for (i, id) in mine.into_iter().zip(ids) {
            planted_ids[i] = id;
        }
    }
    Layout { rows, planted_ids }
}

/// Skew of the foreign keys into the big tables (zipfian θ): movies and
/// people moderately hot, keywords and companies more so.
fn theta(target: &str) -> f64 {
    match target {
        "keyword" | "company_name" => 0.8,
        _ => 0.6,
    }
}

/// Writes every table's CSV into `out`; `progress` gets rows written since its last call.
pub fn write_tables(
    schema: &Schema,
    queries: &[QuerySpec],
    plan: &Plan,
    layout: &Layout,
    seed: u64,
    out: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<TableFile>, JobError> {
    std::fs::create_dir_all(out).map_err(|e| JobError::Write { path: out.to_path_buf(), cause: e })?;
    let mut files = Vec::new();
    for (t, table) in schema.tables.iter().enumerate() {
        let path = out.join(format!("{}.csv", table.name));
        let io = |e: std::io::Error| JobError::Write { path: path.clone(), cause: e };
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).map_err(io)?);
        let mut rng = crate::seeded(seed, 0x4a4f_425f_0000_0000 ^ t as u64);
        let mut rowgen = RowGen::new(schema, t, layout, seed);
        let planted: HashMap<i64, usize> =
            (0..plan.rows.len()).filter(|&i| plan.rows[i].table == t).map(|i| (layout.planted_ids[i], i)).collect();
        let mut line = Vec::with_capacity(256);
        let mut pending = 0u64;
        for id in 1..=layout.rows[t] as i64 {
            let mut preset = match planted.get(&id) {
                Some(&i) => resolve(&plan.rows[i].cells, layout),
                None => vec![None; table.columns.len()],
            };
            if let Some(d) = dimension(&table.name)
                && let Some(c) = table.column(d.column)
            {
                preset[c] = Some(Value::Text(d.rows[id as usize - 1].to_string()));
            }
            let row = rowgen.row(id, preset, &mut rng);
            if let Some(&i) = planted.get(&id) {
                check(table, &row, &plan.rows[i].checks, queries)?;
            }
            line.clear();
            csv_line(&row, &mut line);
            w.write_all(&line).map_err(io)?;
            pending += 1;
            if pending == 4096 {
                progress(pending);
                pending = 0;
            }
        }
        progress(pending);
        w.flush().map_err(io)?;
        let bytes = std::fs::metadata(&path).map_err(io)?.len();
        files.push(TableFile { table: table.name.clone(), path, rows: layout.rows[t], bytes });
    }
    Ok(files)
}

fn resolve(cells: &[Option<Cell>], layout: &Layout) -> Vec<Option<Value>> {
    cells
        .iter()
        .map(|c| match c {
            None => None,
            Some(Cell::Value(v)) => Some(v.clone()),
            Some(Cell::Ref(RowRef::Fixed(id))) => Some(Value::Int(*id)),
            Some(Cell::Ref(RowRef::Planted(i))) => Some(Value::Int(layout.planted_ids[*i])),
        })
        .collect()
}

/// The planted row's filters, evaluated on the finished row: a failure is a
/// bug in the planter, reported rather than written.
fn check(
    table: &Table,
    row: &[Value],
    checks: &[(usize, super::pred::Pred)],
    queries: &[QuerySpec],
) -> Result<(), JobError> {
    let lookup = |c: &str| table.column(c).map_or(Value::Null, |i| row[i].clone());
    for (q, p) in checks {
        if p.eval(&lookup) != Some(true) {
            return Err(JobError::Internal(format!(
                "query {}: the planted {} row {:?} does not satisfy `{p}`",
                queries[*q].name, table.name, row
            )));
        }
    }
    Ok(())
}

/// Fills rows of one table.
struct RowGen<'a> {
    schema: &'a Schema,
    table: &'a Table,
    /// Per column: a zipfian picker over the referenced big table, and the
    /// column's own permutation of the picked index.
    pickers: Vec<Option<(KeyPicker, Affine)>>,
}

impl<'a> RowGen<'a> {
    fn new(schema: &'a Schema, t: usize, layout: &Layout, seed: u64) -> Self {
        let table = &schema.tables[t];
        let pickers = table
            .columns
            .iter()
            .enumerate()
            .map(|(c, col)| {
                let target = col.references?;
                let name = &schema.tables[target].name;
                if dimension(name).is_some() {
                    return None;
                }
                let choice = KeyChoice::ScrambledZipfian { theta: theta(name) };
                let stream = seed ^ ((t as u64) << 32 | c as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let n = layout.rows[target].max(1);
                Some((KeyPicker::new(n, choice, stream).ok()?, Affine::new(n, stream)))
            })
            .collect();
        RowGen { schema, table, pickers }
    }

    fn row(&mut self, id: i64, mut row: Vec<Option<Value>>, rng: &mut Rng) -> Vec<Value> {
        for c in 0..row.len() {
            if row[c].is_some() {
                continue;
            }
            let col = &self.table.columns[c];
            let v = if col.name == "id" {
                Value::Int(id)
            } else if let Some(target) = col.references {
                self.foreign_key(c, target, &row, rng)
            } else {
                base_value(self.table, c, &row, rng)
            };
            row[c] = Some(v);
        }
        row.into_iter().map(|v| v.unwrap_or(Value::Null)).collect()
    }

    fn foreign_key(&mut self, c: usize, target: usize, row: &[Option<Value>], rng: &mut Rng) -> Value {
        let col = &self.table.columns[c];
        let kind = self.table.column("kind_id").and_then(|k| row[k].clone());
        let null = match (self.table.name.as_str(), col.name.as_str()) {
            ("title", "episode_of_id") => kind != Some(Value::Int(KIND_EPISODE)),
            ("aka_title", "episode_of_id") => rng.random_bool(0.95),
            ("cast_info", "person_role_id") => rng.random_bool(0.5),
            _ => false,
        };
        if null && col.nullable {
            return Value::Null;
        }
        let target_name = self.schema.tables[target].name.as_str();
        let Some(dim) = dimension(target_name) else {
            let (picker, perm) = self.pickers[c].as_mut().expect("a picker for every big-table foreign key");
            return Value::Int(perm.apply(picker.next()) as i64 + 1);
        };
        let named = |list: &[&str], rng: &mut Rng| info_type_id(list[skewed_index(list.len(), rng)]);
        Value::Int(match (self.table.name.as_str(), col.name.as_str()) {
            ("movie_info", _) => named(MOVIE_INFO_TYPES, rng),
            ("movie_info_idx", _) => named(MOVIE_INFO_IDX_TYPES, rng),
            ("person_info", _) => named(PERSON_INFO_TYPES, rng),
            ("title" | "aka_title", "kind_id") => {
                // episode, movie, then the rest (IMDB: ~60% episodes).
                const KINDS: [i64; 7] = [7, 1, 2, 4, 3, 5, 6];
                KINDS[skewed_index(KINDS.len(), rng)]
            }
            ("complete_cast", "subject_id") => rng.random_range(1..=2),
            ("complete_cast", "status_id") => rng.random_range(3..=4),
            _ => skewed_index(dim.rows.len(), rng) as i64 + 1,
        })
    }
}

/// A bijection of 0..n, x -> (a·x + b) mod n with gcd(a, n) = 1: each
/// foreign key column gets its own, so the title hottest in cast_info is
/// not also the hottest in movie_info, movie_keyword and movie_companies
/// (with one hot title in all of them, a JOB query joining them on
/// movie_id multiplies their fan-outs: 10^12 rows at S = 1).
#[derive(Debug, Clone, Copy)]
struct Affine {
    n: u64,
    a: u64,
    b: u64,
}

impl Affine {
    fn new(n: u64, seed: u64) -> Affine {
        let mut rng = crate::seeded(seed, 0x4146_4649_4e45); // "AFFINE"
        let b = rng.random_range(0..n);
        let mut a = rng.random_range(1..n.max(2));
        while gcd(a, n) != 1 {
            a = a % n + 1;
        }
        Affine { n, a, b }
    }

    fn apply(&self, x: u64) -> u64 {
        ((self.a as u128 * x as u128 + self.b as u128) % self.n as u128) as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// One CSV line, PostgreSQL's `FORMAT csv` conventions.
pub fn csv_line(row: &[Value], out: &mut Vec<u8>) {
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match v {
            Value::Null => {}
            Value::Int(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Value::Text(s) => {
                let quote = s.is_empty() || s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r' | b'\\'));
                if quote {
                    out.push(b'"');
                    for b in s.bytes() {
                        if b == b'"' {
                            out.push(b'"');
                        }
                        out.push(b);
                    }
                    out.push(b'"');
                } else {
                    out.extend_from_slice(s.as_bytes());
                }
            }
        }
    }
    out.push(b'\n');
}
