//! `ndpdb dump --db DIR --table T`: every readable committed row of a
//! table as CSV, to salvage what a damaged database still holds.
//!
//! The database is opened read-only, with what can be opened (as
//! `--accept-loss` would: log records past damage are left out, and said
//! so), and the rows are read by `Store::salvage`, which goes on past pages
//! it cannot read. The CSV follows PostgreSQL's `COPY ... TO ... CSV
//! HEADER`: a header line with the column names, NULL as an empty field,
//! a field quoted (`"`, doubled inside) when it holds a comma, a quote, a
//! line break, or is an empty string; numerics with their scale and
//! timestamps as `ndpdb db aggregate` prints them; `char(n)` padded to n.
//! What could not be read is counted on stderr, with its pages, and makes
//! the exit status non-zero.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use ndpdb_bench::errln;
use ndpdb_device::ClockKind;
use ndpdb_format::schema::{Column, ColumnType, Value, format_timestamp};
use ndpdb_format::text::format_scaled;
use ndpdb_storage::{Recovery, SalvageReport, Table};

use crate::db::Common;
use crate::db::open::{open_read_only, report_recovery};

#[derive(Args)]
pub struct DumpArgs {
    /// Database directory
    #[arg(long, default_value = "ndpdb-data")]
    db: PathBuf,
    /// Profile name or .toml path (default: the profile the image was created with)
    #[arg(long)]
    profile: Option<String>,
    /// The table to dump
    #[arg(long)]
    table: String,
    /// Write the CSV here instead of to stdout
    #[arg(long)]
    out: Option<PathBuf>,
    /// Dump the rows pinned snapshot ID sees (default: the newest committed rows)
    #[arg(long)]
    snapshot: Option<u64>,
}

/// Unreadable tuples listed on stderr before the rest are only counted.
const LISTED_MAX: usize = 20;

pub fn run(a: DumpArgs) -> Result<()> {
    let c = Common { db: a.db.clone(), profile: a.profile.clone(), clock: ClockKind::Virtual, accept_loss: true };
    let (store, meta, rec) = open_read_only(&c, true)?;
    report_recovery(&rec);
    let Some(table) = store.table(&a.table) else {
        let names: Vec<String> = store.tables().iter().map(|t| t.name.clone()).collect();
        bail!("no table {} in {} (tables: {})", a.table, a.db.display(), names.join(", "));
    };
    let xmax = match a.snapshot {
        None => None,
        Some(id) => Some(meta.snapshots.iter().find(|&&(i, _)| i == id).map(|&(_, x)| x).with_context(|| {
            format!("no pinned snapshot {id} (pinned: {:?}; `ndpdb db snapshot --list`)", meta.snapshots)
        })?),
    };
    let target = a.out.as_ref().map_or("stdout".to_string(), |p| p.display().to_string());
    let out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut csv = Csv { out: std::io::BufWriter::new(out), failed: None, not_text: Vec::new() };
    csv.line(&header(&table.columns));
    let report = store.salvage(&table, xmax, |vid, values| csv.row(&table.columns, vid, &values))?;
    csv.finish();
    if let Some(e) = csv.failed.filter(|e| e.kind() != std::io::ErrorKind::BrokenPipe) {
        bail!("writing the CSV to {target}: {e}");
    }
    summarize(&table, &target, &report, &csv.not_text, &rec)
}

/// Says on stderr what was written and what could not be read; fails if
/// anything could not.
fn summarize(table: &Table, target: &str, r: &SalvageReport, not_text: &[u64], rec: &Recovery) -> Result<()> {
    let rows = r.rows - not_text.len() as u64;
    errln!("dump: {rows} rows of table {} to {target} ({} tuples have no row: deleted)", table.name, r.no_row);
    for u in r.unreadable.iter().take(LISTED_MAX) {
        let ppn = u.ppn.map_or("not mapped".to_string(), |p| format!("physical {p}"));
        errln!("dump: VID {} cannot be read: logical page {} ({ppn}): {}", u.vid, u.lpn, u.why);
    }
    if r.unreadable_count > LISTED_MAX as u64 {
        errln!("dump: ... and {} more", r.unreadable_count - LISTED_MAX as u64);
    }
    for vid in not_text.iter().take(LISTED_MAX) {
        errln!("dump: VID {vid}: a text column is not UTF-8; the row was left out");
    }
    let mut missing = Vec::new();
    if r.unreadable_count > 0 {
        let pages: Vec<String> = r.pages.iter().map(u64::to_string).collect();
        missing.push(format!("{} tuples cannot be read (logical pages {})", r.unreadable_count, pages.join(", ")));
    }
    if !not_text.is_empty() {
        missing.push(format!("{} rows hold text that is not UTF-8", not_text.len()));
    }
    if let Some(loss) = &rec.lost {
        missing.push(format!(
            "the write-ahead log is damaged at LSN {}: the {} commits after it, and what the damaged records held, \
             are not in the dump",
            loss.stop_lsn,
            loss.commits().len()
        ));
    }
    if missing.is_empty() {
        return Ok(());
    }
    bail!("the dump of table {} is incomplete: {}", table.name, missing.join("; "))
}

/// The CSV being written; the first write error ends the output.
struct Csv {
    out: std::io::BufWriter<Box<dyn Write>>,
    failed: Option<std::io::Error>,
    /// VIDs whose row holds text that is not UTF-8.
    not_text: Vec<u64>,
}

impl Csv {
    fn line(&mut self, line: &[u8]) {
        if self.failed.is_none()
            && let Err(e) = self.out.write_all(line).and_then(|()| self.out.write_all(b"\n"))
        {
            self.failed = Some(e);
        }
    }

    /// One row; stops the dump once the output has failed.
    fn row(&mut self, columns: &[Column], vid: u64, values: &[Value]) -> ControlFlow<()> {
        match row(columns, values) {
            Some(line) => self.line(&line),
            None => self.not_text.push(vid),
        }
        if self.failed.is_some() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    }

    fn finish(&mut self) {
        if self.failed.is_none()
            && let Err(e) = self.out.flush()
        {
            self.failed = Some(e);
        }
    }
}

fn header(columns: &[Column]) -> Vec<u8> {
    let mut line = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        field(&mut line, c.name.as_bytes());
    }
    line
}

/// One CSV line; None if a text value is not UTF-8.
fn row(columns: &[Column], values: &[Value]) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    for (i, (c, v)) in columns.iter().zip(values).enumerate() {
        if i > 0 {
            line.push(b',');
        }
        match (v, c.ty) {
            (Value::Null, _) => {}
            (Value::Int(x), ColumnType::Timestamp) => line.extend_from_slice(format_timestamp(*x).as_bytes()),
            (Value::Int(x), ColumnType::Decimal { scale, .. }) => {
                line.extend_from_slice(format_scaled(i128::from(*x), u32::from(scale)).as_bytes())
            }
            (Value::Int(x), _) => line.extend_from_slice(x.to_string().as_bytes()),
            (Value::Text(t), ty) => {
                let mut text = std::str::from_utf8(t).ok()?.to_string();
                if let ColumnType::Text(n) = ty {
                    while text.len() < usize::from(n) {
                        text.push(' ');
                    }
                }
                field(&mut line, text.as_bytes());
            }
        }
    }
    Some(line)
}

/// A text field, quoted as PostgreSQL's CSV output quotes it.
fn field(line: &mut Vec<u8>, text: &[u8]) {
    let quote = text.is_empty() || text == b"\\." || text.iter().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'));
    if !quote {
        line.extend_from_slice(text);
        return;
    }
    line.push(b'"');
    for &b in text {
        if b == b'"' {
            line.push(b'"');
        }
        line.push(b);
    }
    line.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(columns: &[Column], values: &[Value]) -> String {
        String::from_utf8(row(columns, values).unwrap()).unwrap()
    }

    #[test]
    fn fields_are_quoted_as_postgresql_quotes_them() {
        let cols = vec![
            Column::new("a", ColumnType::Varchar(20), true),
            Column::new("b", ColumnType::Decimal { precision: 6, scale: 2 }, true),
            Column::new("c", ColumnType::Timestamp, true),
            Column::new("d", ColumnType::Text(4), true),
        ];
        let text = |s: &str| Value::Text(s.as_bytes().to_vec());
        assert_eq!(
            csv(&cols, &[text("plain"), Value::Int(-5), Value::Int(0), text("ab")]),
            "plain,-0.05,1970-01-01 00:00:00,ab  "
        );
        assert_eq!(csv(&cols, &[Value::Null, Value::Null, Value::Null, Value::Null]), ",,,");
        assert_eq!(csv(&cols, &[text(""), Value::Int(12345), Value::Null, text("")]), "\"\",123.45,,    ");
        assert_eq!(csv(&cols, &[text("a,\"b\"\nc"), Value::Null, Value::Null, Value::Null]), "\"a,\"\"b\"\"\nc\",,,");
        assert_eq!(row(&cols[..1], &[Value::Text(vec![0xff])]), None, "not UTF-8");
        assert_eq!(String::from_utf8(header(&cols)).unwrap(), "a,b,c,d");
    }
}
