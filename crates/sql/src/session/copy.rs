//! `COPY table [(columns)] FROM 'file' | STDIN`: PostgreSQL's text and CSV
//! formats read in a stream and inserted in the session's transaction.
//!
//! ```text
//!  COPY .. FROM 'file' ─► copy_from_file ─┐
//!  COPY .. FROM STDIN ─► copy_in_target ─► CopyIn ─► Session::copy_in(reader)
//!                         (server: CopyInResponse; CopyData → reader)      │
//!                                                                          ▼
//!       records (text or CSV) ─► row_of (types' input functions) ─► insert_many
//! ```
//!
//! CSV as PostgreSQL reads it: fields split at the delimiter outside
//! quotes; a quoted field may hold delimiters, newlines and doubled quotes;
//! an unquoted field equal to the NULL string (default: empty) is NULL,
//! while a quoted empty field is the empty string.
//!
//! Text (the default format of `COPY .. FROM STDIN`): one line per row,
//! fields split at the delimiter (default: tab); a field whose raw text is
//! the NULL string (default `\N`) is NULL; backslash escapes `\b \f \n \r
//! \t \v`, `\` and one to three octal digits, `\x` and one or two hex
//! digits, and `\` before any other character for that character.
//!
//! From STDIN a line `\.` ends the data (psql's and pgbench's end marker);
//! the end of the reader ends it too. Each field is parsed by its column's
//! type input function; errors name the line and column, as PostgreSQL's
//! `CONTEXT:  COPY t, line 3, column b` does (the detail here: the server
//! sends it as CONTEXT). The rows go into the writer in chunks within the
//! statement's transaction, so a bad row anywhere loads nothing.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::sync::Arc;

use sqlparser::ast;

use super::{Session, StatementResult};
use crate::catalog::{Catalog, TableDef};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::statement::CopyOptions;
use crate::types::Value;

/// Rows inserted per call into the writer.
const CHUNK_ROWS: usize = 4096;

/// The longest line (or CSV record) COPY reads: longer is 54000, not an
/// unbounded buffer.
const MAX_RECORD_BYTES: usize = 64 << 20;

/// A bound `COPY t [(columns)] FROM STDIN`: where the rows go and how the
/// data is written. Made by [`Session::copy_in_target`], run by
/// [`Session::copy_in`].
#[derive(Debug, Clone)]
pub struct CopyIn {
    table: Arc<TableDef>,
    columns: Vec<usize>,
    csv: bool,
    opts: CopyOptions,
}

impl CopyIn {
    /// The number of columns each row carries (CopyInResponse's count).
    pub fn column_count(&self) -> usize {
        self.columns.len()
    }
}

pub(super) fn copy_from_file(
    session: &mut Session,
    table: &TableDef,
    columns: &[usize],
    path: &str,
    opts: &CopyOptions,
) -> Result<u64> {
    let file = File::open(path).map_err(|e| {
        SqlError::new(SqlState::UNDEFINED_FILE, format!("could not open file \"{path}\" for reading: {e}"))
            .with_hint("COPY FROM reads a file on the machine ndpdb runs on; give its absolute path")
    })?;
    let columns: Vec<usize> = if columns.is_empty() { (0..table.columns.len()).collect() } else { columns.to_vec() };
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let source = Source { name: format!("COPY file \"{path}\""), stdin: false };
    copy_rows(session, table, &columns, &mut reader, true, opts, &source)
}

impl Session {
    /// If `ast` is `COPY t [(columns)] FROM STDIN [options]`, what it loads,
    /// bound against the catalog the session sees; None for any other
    /// statement. The data then goes to [`Session::copy_in`].
    /// An error here counts as the statement's (a block fails).
    pub fn copy_in_target(&mut self, ast: &ast::Statement) -> Result<Option<CopyIn>> {
        let ast::Statement::Copy { source, to: false, target: ast::CopyTarget::Stdin, options, legacy_options, .. } =
            ast
        else {
            return Ok(None);
        };
        if self.txn.as_ref().is_some_and(|t| t.failed) {
            return Err(failed_block());
        }
        let r = self.bind_copy_in(source, options, legacy_options);
        if r.is_err() {
            self.note_error();
        }
        r.map(Some)
    }

    fn bind_copy_in(
        &self,
        source: &ast::CopySource,
        options: &[ast::CopyOption],
        legacy_options: &[ast::CopyLegacyOption],
    ) -> Result<CopyIn> {
        let ast::CopySource::Table { table_name, columns } = source else {
            return Err(SqlError::unsupported("COPY (query) is not supported yet"));
        };
        let name = crate::bind::object_name(table_name)?;
        let catalog = self.catalog();
        let table = catalog
            .table(&name)
            .ok_or_else(|| SqlError::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist")))?;
        let mut cols = Vec::with_capacity(columns.len());
        for c in columns {
            let col = crate::bind::ident(c);
            cols.push(table.column_index(&col).ok_or_else(|| {
                SqlError::new(
                    SqlState::UNDEFINED_COLUMN,
                    format!("column \"{col}\" of relation \"{}\" does not exist", table.name),
                )
            })?);
        }
        if cols.is_empty() {
            cols = (0..table.columns.len()).collect();
        }
        check_omitted_defaults(&table, &cols)?;
        let (csv, opts) = crate::bind::utility::copy_options(options, legacy_options)?;
        Ok(CopyIn { table, columns: cols, csv, opts })
    }

    /// Loads the rows of `data` (the client's CopyData, in `c`'s format) as
    /// one statement: in the open transaction, or an implicit one that
    /// commits when every row went in. Any error loads nothing.
    pub fn copy_in(&mut self, c: &CopyIn, data: &mut dyn BufRead) -> Result<StatementResult> {
        self.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        if self.txn.as_ref().is_some_and(|t| t.failed) {
            return Err(failed_block());
        }
        let source = Source { name: "COPY from STDIN".into(), stdin: true };
        let r = self.statement_in_txn(|s| {
            let n = copy_rows(s, &c.table, &c.columns, data, c.csv, &c.opts, &source)?;
            Ok(StatementResult::command(format!("COPY {n}")))
        });
        if r.is_err() {
            self.note_error();
        }
        r
    }
}

fn failed_block() -> SqlError {
    SqlError::new(
        SqlState::IN_FAILED_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

/// Where rows come from: a name for read errors, and whether a `\.` line
/// ends the data.
struct Source {
    name: String,
    stdin: bool,
}

/// Reads every record of `reader` and inserts the rows in chunks.
fn copy_rows(
    session: &mut Session,
    table: &TableDef,
    columns: &[usize],
    reader: &mut dyn BufRead,
    csv: bool,
    opts: &CopyOptions,
    source: &Source,
) -> Result<u64> {
    check_omitted_defaults(table, columns)?;
    let txn = session.sql_txn()?;
    let cancel = session.cancel.clone();
    let mut line_no = 0u64;
    let mut total = 0u64;
    let mut chunk = Vec::with_capacity(CHUNK_ROWS);
    let mut buf = Vec::new();
    loop {
        let fields = if csv {
            next_record(reader, opts, &mut buf, &mut line_no, source)?
        } else {
            next_text_record(reader, opts, &mut buf, &mut line_no, source)?
        };
        let Some(fields) = fields else { break };
        if opts.header && line_no == 1 {
            continue;
        }
        chunk.push(row_of(table, columns, &fields, line_no)?);
        if chunk.len() == CHUNK_ROWS {
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(SqlError::new(SqlState::QUERY_CANCELED, "canceling statement due to user request"));
            }
            total += session.engine.writer().insert_many(&txn, table, std::mem::take(&mut chunk))?;
        }
    }
    total += session.engine.writer().insert_many(&txn, table, chunk)?;
    Ok(total)
}

/// PostgreSQL fills omitted columns with their DEFAULT; ndpdb does not
/// evaluate defaults in COPY yet, so it refuses rather than store NULL.
fn check_omitted_defaults(table: &TableDef, columns: &[usize]) -> Result<()> {
    for (i, c) in table.columns.iter().enumerate() {
        if !columns.contains(&i) && c.default.is_some() {
            return Err(SqlError::unsupported(format!(
                "COPY that omits column \"{}\" (which has a DEFAULT) is not supported yet",
                c.name
            ))
            .with_hint("list every column in the file, or load with INSERT .. SELECT"));
        }
    }
    Ok(())
}

fn row_of(table: &TableDef, columns: &[usize], fields: &[Option<String>], line: u64) -> Result<Vec<Value>> {
    if fields.len() != columns.len() {
        let what = if fields.len() < columns.len() {
            "missing data for column"
        } else {
            "extra data after last expected column"
        };
        let col = columns.get(fields.len()).map(|&c| format!(" \"{}\"", table.columns[c].name)).unwrap_or_default();
        let msg = if fields.len() < columns.len() { format!("{what}{col}") } else { what.to_string() };
        return Err(SqlError::new(SqlState("22P04"), msg).with_detail(format!("COPY {}, line {line}", table.name)));
    }
    let mut row = vec![Value::Null; table.columns.len()];
    for (&c, f) in columns.iter().zip(fields) {
        if let Some(text) = f {
            let col = &table.columns[c];
            row[c] = crate::types::parse::parse_value(text, &col.ty).map_err(|e| {
                e.with_detail(format!("COPY {}, line {line}, column {}: \"{text}\"", table.name, col.name))
            })?;
        }
    }
    Ok(row)
}

/// Appends one line (with its `\n`) to `buf`; false at the end of the data.
fn read_line(reader: &mut dyn BufRead, buf: &mut Vec<u8>, source: &Source) -> Result<bool> {
    let start = buf.len();
    let mut limited = std::io::Read::take(&mut *reader, (MAX_RECORD_BYTES + 1 - start.min(MAX_RECORD_BYTES)) as u64);
    let n = limited
        .read_until(b'\n', buf)
        .map_err(|e| SqlError::new(SqlState::IO_ERROR, format!("could not read from {}: {e}", source.name)))?;
    if buf.len() > MAX_RECORD_BYTES {
        return Err(SqlError::new(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            format!("a COPY line is longer than {} MiB", MAX_RECORD_BYTES >> 20),
        ));
    }
    Ok(n > 0)
}

/// The next line without its line ending; None at the end of the data (or
/// at a `\.` line from STDIN).
fn next_line<'b>(
    reader: &mut dyn BufRead,
    buf: &'b mut Vec<u8>,
    line_no: &mut u64,
    source: &Source,
) -> Result<Option<&'b [u8]>> {
    buf.clear();
    if !read_line(reader, buf, source)? {
        return Ok(None);
    }
    *line_no += 1;
    let line = strip_eol(buf);
    if source.stdin && line == b"\\." {
        return Ok(None);
    }
    Ok(Some(line))
}

fn strip_eol(b: &[u8]) -> &[u8] {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    b.strip_suffix(b"\r").unwrap_or(b)
}

fn utf8(bytes: Vec<u8>, line_no: u64) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        SqlError::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\"")
            .with_detail(format!("COPY line {line_no}"))
    })
}

/// The next CSV record's fields (None = NULL), reading more lines while a
/// quoted field is open. None at the end of the data.
fn next_record(
    reader: &mut dyn BufRead,
    opts: &CopyOptions,
    buf: &mut Vec<u8>,
    line_no: &mut u64,
    source: &Source,
) -> Result<Option<Vec<Option<String>>>> {
    let first = *line_no + 1;
    let Some(line) = next_line(reader, buf, line_no, source)? else { return Ok(None) };
    let mut record = utf8(line.to_vec(), *line_no)?;
    loop {
        if let Some(fields) = split_csv(&record, opts) {
            return Ok(Some(fields));
        }
        record.push('\n');
        buf.clear();
        if !read_line(reader, buf, source)? {
            return Err(SqlError::new(SqlState("22P04"), "unterminated CSV quoted field")
                .with_detail(format!("COPY line {first}")));
        }
        *line_no += 1;
        record.push_str(&utf8(strip_eol(buf).to_vec(), *line_no)?);
        if record.len() > MAX_RECORD_BYTES {
            return Err(SqlError::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "a CSV record is longer than 64 MiB")
                .with_detail(format!("COPY line {first}")));
        }
    }
}

/// Fields of one record, or None when a quoted field is still open.
fn split_csv(record: &str, opts: &CopyOptions) -> Option<Vec<Option<String>>> {
    let record = record.strip_suffix('\n').map(|r| r.strip_suffix('\r').unwrap_or(r)).unwrap_or(record);
    let mut fields = Vec::new();
    let mut chars = record.chars().peekable();
    loop {
        let mut field = String::new();
        let (mut quoted, mut in_quotes, mut at_delimiter) = (false, false, false);
        while let Some(c) = chars.next() {
            if in_quotes {
                if c != opts.quote {
                    field.push(c);
                } else if chars.peek() == Some(&opts.quote) {
                    field.push(c);
                    chars.next();
                } else {
                    in_quotes = false;
                }
            } else if c == opts.quote {
                (in_quotes, quoted) = (true, true);
            } else if c == opts.delimiter {
                at_delimiter = true;
                break;
            } else {
                field.push(c);
            }
        }
        if in_quotes {
            return None;
        }
        fields.push(if !quoted && field == opts.null { None } else { Some(field) });
        if !at_delimiter {
            return Some(fields);
        }
    }
}

/// The next text-format record's fields (None = NULL); None at the end.
fn next_text_record(
    reader: &mut dyn BufRead,
    opts: &CopyOptions,
    buf: &mut Vec<u8>,
    line_no: &mut u64,
    source: &Source,
) -> Result<Option<Vec<Option<String>>>> {
    let Some(line) = next_line(reader, buf, line_no, source)? else { return Ok(None) };
    let n = *line_no;
    split_text(line, opts)
        .into_iter()
        .map(|f| f.map(|bytes| utf8(bytes, n)).transpose())
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// Fields of one text-format line, unescaped; a field whose raw bytes are
/// the NULL string is None.
fn split_text(line: &[u8], opts: &CopyOptions) -> Vec<Option<Vec<u8>>> {
    let mut delim = [0u8; 4];
    let delim = opts.delimiter.encode_utf8(&mut delim).as_bytes().to_vec();
    let mut fields = Vec::new();
    let mut i = 0;
    loop {
        let start = i;
        let mut field = Vec::new();
        let mut at_delimiter = false;
        while i < line.len() {
            if line[i..].starts_with(&delim) {
                at_delimiter = true;
                break;
            }
            if line[i] == b'\\' && i + 1 < line.len() {
                i += 1 + unescape(&line[i + 1..], &mut field);
            } else {
                field.push(line[i]);
                i += 1;
            }
        }
        let raw = &line[start..i];
        fields.push(if raw == opts.null.as_bytes() { None } else { Some(field) });
        if !at_delimiter {
            return fields;
        }
        i += delim.len();
    }
}

/// Decodes the escape after a backslash into `out`; the bytes it used.
fn unescape(s: &[u8], out: &mut Vec<u8>) -> usize {
    let digits = |s: &[u8], radix: u32, max: usize| {
        let n = s.iter().take(max).take_while(|b| (**b as char).is_digit(radix)).count();
        let v = s[..n].iter().fold(0u32, |v, b| v * radix + (*b as char).to_digit(radix).unwrap_or(0));
        (n, v as u8)
    };
    match s[0] {
        b'b' => out.push(8),
        b'f' => out.push(12),
        b'n' => out.push(b'\n'),
        b'r' => out.push(b'\r'),
        b't' => out.push(b'\t'),
        b'v' => out.push(11),
        b'0'..=b'7' => {
            let (n, v) = digits(s, 8, 3);
            out.push(v);
            return n;
        }
        b'x' if s.len() > 1 && s[1].is_ascii_hexdigit() => {
            let (n, v) = digits(&s[1..], 16, 2);
            out.push(v);
            return 1 + n;
        }
        other => out.push(other),
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|x| x.map(str::to_string)).collect()
    }

    #[test]
    fn csv_fields_as_postgresql_reads_them() {
        let o = CopyOptions::default();
        assert_eq!(split_csv("1,abc,\n", &o), Some(f(&[Some("1"), Some("abc"), None])));
        assert_eq!(split_csv("1,\"\",x", &o), Some(f(&[Some("1"), Some(""), Some("x")])));
        assert_eq!(split_csv("\"a,b\",\"say \"\"hi\"\"\"", &o), Some(f(&[Some("a,b"), Some("say \"hi\"")])));
        assert_eq!(split_csv("\"open\n", &o), None);
        assert_eq!(split_csv("\"two\nlines\",2\n", &o), Some(f(&[Some("two\nlines"), Some("2")])));
        assert_eq!(split_csv(",", &o), Some(f(&[None, None])));
        let pipe = CopyOptions { delimiter: '|', ..CopyOptions::default() };
        assert_eq!(split_csv("1|x|\n", &pipe), Some(f(&[Some("1"), Some("x"), None])));
    }

    fn text_opts() -> CopyOptions {
        CopyOptions { delimiter: '\t', null: "\\N".into(), ..CopyOptions::default() }
    }

    fn t(v: &[Option<&str>]) -> Vec<Option<Vec<u8>>> {
        v.iter().map(|x| x.map(|s| s.as_bytes().to_vec())).collect()
    }

    #[test]
    fn text_fields_as_postgresql_reads_them() {
        let o = text_opts();
        assert_eq!(split_text(b"1\tabc\t\\N", &o), t(&[Some("1"), Some("abc"), None]));
        assert_eq!(split_text(b"\t", &o), t(&[Some(""), Some("")]));
        assert_eq!(split_text(b"a\\tb\\nc\\\\d", &o), t(&[Some("a\tb\nc\\d")]));
        assert_eq!(split_text(b"tab\\\there", &o), t(&[Some("tab\there")]), "an escaped delimiter is data");
        assert_eq!(split_text(b"\\101\\x42\\x4g\\7", &o), t(&[Some("AB\x04g\x07")]));
        assert_eq!(split_text(b"\\\\N", &o), t(&[Some("\\N")]), "an escaped backslash is not the null string");
        let pipe = CopyOptions { delimiter: '|', null: "".into(), ..CopyOptions::default() };
        assert_eq!(split_text(b"1||x", &pipe), t(&[Some("1"), None, Some("x")]));
    }

    #[test]
    fn the_end_marker_and_line_endings() {
        let src = Source { name: "test".into(), stdin: true };
        let mut data: &[u8] = b"1\tx\r\n2\ty\n\\.\n3\tz\n";
        let (mut buf, mut n) = (Vec::new(), 0);
        let o = text_opts();
        let mut rows = Vec::new();
        while let Some(r) = next_text_record(&mut data, &o, &mut buf, &mut n, &src).unwrap() {
            rows.push(r);
        }
        assert_eq!(rows, vec![f(&[Some("1"), Some("x")]), f(&[Some("2"), Some("y")])]);
        let mut bad: &[u8] = b"\\xff\n";
        let e = next_text_record(&mut bad, &o, &mut buf, &mut n, &src).unwrap_err();
        assert_eq!(e.code.0, "22021");
    }
}
