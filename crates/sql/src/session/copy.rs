//! `COPY table [(columns)] FROM 'file' WITH (FORMAT csv, ...)`: PostgreSQL's
//! CSV format read in a stream and inserted in the session's transaction.
//!
//! CSV as PostgreSQL reads it: fields split at the delimiter outside
//! quotes; a quoted field may hold delimiters, newlines and doubled quotes;
//! an unquoted field equal to the NULL string (default: empty) is NULL,
//! while a quoted empty field is the empty string. Each field is parsed by
//! its column's type input function; errors name the line and column, as
//! PostgreSQL's `CONTEXT:  COPY t, line 3, column b` does.

use std::fs::File;
use std::io::{BufRead, BufReader};

use super::Session;
use crate::catalog::TableDef;
use crate::error::{Result, SqlError, SqlState};
use crate::plan::statement::CopyOptions;
use crate::types::Value;

/// Rows inserted per call into the writer.
const CHUNK_ROWS: usize = 4096;

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
    check_omitted_defaults(table, &columns)?;
    let txn = session.sql_txn()?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line_no = 0u64;
    let mut total = 0u64;
    let mut chunk = Vec::with_capacity(CHUNK_ROWS);
    let mut record = String::new();
    while let Some(fields) = next_record(&mut reader, opts, &mut record, &mut line_no, path)? {
        if opts.header && line_no == 1 {
            continue;
        }
        chunk.push(row_of(table, &columns, &fields, line_no)?);
        if chunk.len() == CHUNK_ROWS {
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

/// The next CSV record's fields (None = NULL), reading more lines while a
/// quoted field is open. None at the end of the file.
fn next_record(
    reader: &mut impl BufRead,
    opts: &CopyOptions,
    buf: &mut String,
    line_no: &mut u64,
    path: &str,
) -> Result<Option<Vec<Option<String>>>> {
    buf.clear();
    let read = |buf: &mut String, reader: &mut dyn BufRead| {
        reader
            .read_line(buf)
            .map_err(|e| SqlError::new(SqlState::IO_ERROR, format!("could not read from COPY file \"{path}\": {e}")))
    };
    if read(buf, reader)? == 0 {
        return Ok(None);
    }
    *line_no += 1;
    loop {
        match split_csv(buf, opts) {
            Some(fields) => return Ok(Some(fields)),
            None => {
                if read(buf, reader)? == 0 {
                    return Err(SqlError::new(SqlState("22P04"), "unterminated CSV quoted field")
                        .with_detail(format!("COPY line {line_no}")));
                }
            }
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
}
