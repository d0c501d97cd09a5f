//! Statements clients send that the SQL engine's parser does not take, run
//! here before it: pgbench's `VACUUM [ANALYZE] t` (ndpdb has no vacuum to
//! do: old versions are collected by the store's maintenance; ANALYZE
//! runs as asked), and pgbench's `copy .. from stdin with (freeze on)`,
//! whose `on` the parser does not take as a boolean (FREEZE has no effect:
//! a load is one transaction either way).

use ndpdb_sql::SqlError;
use ndpdb_sql::error::SqlState;
use ndpdb_sql::session::{CopyIn, Session, StatementResult, TxnStatus};
use parking_lot::Mutex;

use crate::cursor::{CursorCmd, Cursors};

/// One statement of a Query message.
pub enum Item {
    Sql(Box<sqlparser::ast::Statement>),
    /// DECLARE, FETCH, CLOSE (`cursor.rs`).
    Cursor(CursorCmd),
    /// VACUUM, with the tables to ANALYZE (None: no ANALYZE).
    Vacuum(Option<String>),
}

/// Whether `sql` is a statement kept as text until it runs (VACUUM, which
/// this module runs, and COPY, whose FROM STDIN needs the connection).
pub fn is_utility(sql: &str) -> bool {
    let w = first_word(sql);
    w.eq_ignore_ascii_case("vacuum") || w.eq_ignore_ascii_case("copy")
}

/// `DEALLOCATE [PREPARE] name | ALL` (one statement): Some(None) for ALL.
pub fn deallocate(sql: &str) -> Option<Option<String>> {
    let words: Vec<&str> = sql.trim().trim_end_matches(';').split_whitespace().collect();
    let rest = match words.as_slice() {
        [d, rest @ ..] if d.eq_ignore_ascii_case("deallocate") => rest,
        _ => return None,
    };
    let rest = match rest {
        [p, rest @ ..] if p.eq_ignore_ascii_case("prepare") => rest,
        r => r,
    };
    match rest {
        [all] if all.eq_ignore_ascii_case("all") => Some(None),
        [name] => Some(Some(name.trim_matches('"').to_string())),
        _ => None,
    }
}

/// Whether `sql` is a cursor statement (DECLARE, FETCH, CLOSE, MOVE).
pub fn is_cursor(sql: &str) -> bool {
    ["declare", "fetch", "close", "move"].iter().any(|w| first_word(sql).eq_ignore_ascii_case(w))
}

fn first_word(sql: &str) -> &str {
    sql.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("")
}

pub fn parse(sql: &str) -> Result<Vec<Item>, SqlError> {
    if first_word(sql).eq_ignore_ascii_case("vacuum") {
        return Ok(vec![vacuum(sql)]);
    }
    let text = if first_word(sql).eq_ignore_ascii_case("copy") { freeze_as_boolean(sql) } else { sql.to_string() };
    let mut items = Vec::new();
    for ast in ndpdb_sql::bind::parse(&text)? {
        items.push(match CursorCmd::of(&ast)? {
            Some(c) => Item::Cursor(c),
            None => Item::Sql(Box::new(ast)),
        });
    }
    Ok(items)
}

/// `FREEZE on|off` (PostgreSQL's boolean spelling pgbench uses) as `FREEZE
/// true|false`, which the parser takes.
fn freeze_as_boolean(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 4);
    let mut words = sql.split_inclusive(|c: char| c.is_whitespace() || c == '(' || c == ',' || c == ')').peekable();
    while let Some(w) = words.next() {
        out.push_str(w);
        if w.trim_end_matches(|c: char| c.is_whitespace() || c == '(' || c == ',').eq_ignore_ascii_case("freeze") {
            while let Some(ws) = words.next_if(|n| n.trim().is_empty()) {
                out.push_str(ws);
            }
            if let Some(v) = words.next_if(|n| {
                let t = n.trim_end_matches(|c: char| c.is_whitespace() || c == ')' || c == ',');
                t.eq_ignore_ascii_case("on") || t.eq_ignore_ascii_case("off")
            }) {
                let on = v.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("on"));
                out.push_str(if on { "true" } else { "false" });
                out.push_str(v.trim_start_matches(|c: char| c.is_ascii_alphabetic()));
            }
        }
    }
    out
}

/// A `COPY .. FROM STDIN` item, bound: the load to start (None: another statement).
pub fn copy_in(s: &mut Session, item: &Item) -> Result<Option<CopyIn>, SqlError> {
    match item {
        Item::Sql(ast) => s.copy_in_target(ast),
        Item::Vacuum(_) | Item::Cursor(_) => Ok(None),
    }
}

fn vacuum(sql: &str) -> Item {
    let words: Vec<&str> = sql.trim().trim_end_matches(';').split_whitespace().collect();
    let analyze = words.iter().any(|w| w.eq_ignore_ascii_case("analyze"));
    let tables: Vec<&str> = words[1..]
        .iter()
        .copied()
        .filter(|w| !["analyze", "verbose", "full", "freeze"].contains(&w.to_ascii_lowercase().as_str()))
        .collect();
    Item::Vacuum(analyze.then(|| tables.join(" ")))
}

pub fn run_one(s: &mut Session, cursors: &Mutex<Cursors>, item: &Item) -> Result<StatementResult, SqlError> {
    match item {
        Item::Sql(ast) => s.run_one(ast),
        Item::Vacuum(analyze) => {
            if let Some(tables) = analyze {
                let sql = format!("ANALYZE {tables}");
                for r in s.run(&sql) {
                    r?;
                }
            }
            Ok(StatementResult { tag: "VACUUM".into(), columns: vec![], rows: vec![], notices: vec![] })
        }
        Item::Cursor(c) => {
            let r = run_cursor(s, cursors, c);
            if r.is_err() {
                s.statement_failed();
            }
            r
        }
    }
}

fn run_cursor(s: &mut Session, cursors: &Mutex<Cursors>, c: &CursorCmd) -> Result<StatementResult, SqlError> {
    if s.txn_status() == TxnStatus::Failed {
        return Err(SqlError::new(
            SqlState::IN_FAILED_TRANSACTION,
            "current transaction is aborted, commands ignored until end of transaction block",
        ));
    }
    match c {
        CursorCmd::Declare { name, hold, query } => declare(s, cursors, name, *hold, |s| {
            let mut p = s.prepare(query)?;
            s.execute_prepared(&mut p, &[])
        }),
        CursorCmd::Fetch { name, count } => cursors.lock().fetch(name, *count),
        CursorCmd::Close { name } => cursors.lock().close(name.as_deref()),
    }
}

/// DECLARE: checks the cursor can open, runs its query (`run`), keeps the rows.
pub fn declare(
    s: &mut Session,
    cursors: &Mutex<Cursors>,
    name: &str,
    hold: bool,
    run: impl FnOnce(&mut Session) -> Result<StatementResult, SqlError>,
) -> Result<StatementResult, SqlError> {
    let status = s.txn_status();
    cursors.lock().check_declare(name, hold, status)?;
    let result = run(s)?;
    let work_mem = s.settings().work_mem;
    cursors.lock().declare(name, hold, status, result, work_mem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_freeze_on_is_a_boolean() {
        assert_eq!(
            freeze_as_boolean("copy pgbench_accounts from stdin with (freeze on)"),
            "copy pgbench_accounts from stdin with (freeze true)"
        );
        assert_eq!(
            freeze_as_boolean("COPY t FROM STDIN (FREEZE OFF, FORMAT csv)"),
            "COPY t FROM STDIN (FREEZE false, FORMAT csv)"
        );
        assert_eq!(freeze_as_boolean("copy t from stdin (freeze)"), "copy t from stdin (freeze)");
        assert_eq!(freeze_as_boolean("copy online from stdin"), "copy online from stdin");
        assert!(matches!(parse("copy t from stdin with (freeze on)").unwrap()[..], [Item::Sql(_)]));
    }

    #[test]
    fn deallocate_forms() {
        assert_eq!(deallocate("DEALLOCATE _pg3_0"), Some(Some("_pg3_0".into())));
        assert_eq!(deallocate("deallocate prepare \"s1\";"), Some(Some("s1".into())));
        assert_eq!(deallocate("DEALLOCATE ALL"), Some(None));
        assert_eq!(deallocate("SELECT 1"), None);
    }
}
