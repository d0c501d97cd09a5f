//! SQL cursors, as psycopg's server-side cursors use them:
//! `DECLARE c [BINARY] [NO SCROLL] CURSOR [WITH HOLD | WITHOUT HOLD] FOR q`,
//! `FETCH [FORWARD | NEXT] [n | ALL] [FROM | IN] c`, `CLOSE c | ALL`.
//!
//! ```text
//!  DECLARE c CURSOR FOR q ─► q runs now ─► rows kept in the connection ─┐
//!  FETCH FORWARD n FROM c ◄─ the next n rows, in order ◄────────────────┘
//!  COMMIT / ROLLBACK ─► cursors WITHOUT HOLD close;  CLOSE c ─► gone
//! ```
//!
//! The query's result is materialised at DECLARE (the session returns
//! whole results), so a cursor holds at most `work_mem` bytes of rows; a
//! bigger result is a clear error (54000) that says to raise `work_mem`
//! or narrow the query, not an unbounded buffer. The rows are those of
//! the transaction's snapshot at DECLARE, as PostgreSQL's cursors see.
//! Only forward fetching is supported (a NO SCROLL cursor's operations).
//! Cursors belong to the connection, not the engine: `ndpdb sql` has none.

use std::collections::{HashMap, VecDeque};

use ndpdb_sql::SqlError;
use ndpdb_sql::error::SqlState;
use ndpdb_sql::plan::Field;
use ndpdb_sql::session::{StatementResult, TxnStatus};
use ndpdb_sql::types::Value;
use sqlparser::ast;

/// A cursor statement.
#[derive(Debug, Clone, PartialEq)]
pub enum CursorCmd {
    /// The cursor's name, WITH HOLD, and its query's text.
    Declare { name: String, hold: bool, query: String },
    /// The cursor, and how many rows (None: ALL).
    Fetch { name: String, count: Option<u64> },
    /// None: CLOSE ALL.
    Close { name: Option<String> },
}

impl CursorCmd {
    /// The cursor statement `ast` is, if it is one.
    pub fn of(ast: &ast::Statement) -> Result<Option<CursorCmd>, SqlError> {
        Ok(Some(match ast {
            ast::Statement::Declare { stmts, .. } => declare(stmts)?,
            ast::Statement::Fetch { name, direction, into: None, .. } => {
                CursorCmd::Fetch { name: name.value.clone(), count: fetch_count(direction)? }
            }
            ast::Statement::Close { cursor: ast::CloseCursor::All } => CursorCmd::Close { name: None },
            ast::Statement::Close { cursor: ast::CloseCursor::Specific { name } } => {
                CursorCmd::Close { name: Some(name.value.clone()) }
            }
            _ => return Ok(None),
        }))
    }
}

fn declare(stmts: &[ast::Declare]) -> Result<CursorCmd, SqlError> {
    let [d] = stmts else { return Err(SqlError::unsupported("DECLARE of several names")) };
    let (Some(query), [name]) = (&d.for_query, d.names.as_slice()) else {
        return Err(SqlError::unsupported("DECLARE other than DECLARE name CURSOR FOR query"));
    };
    if d.scroll == Some(true) {
        return Err(SqlError::unsupported("SCROLL cursors are not supported: cursors only fetch forward")
            .with_hint("Declare the cursor NO SCROLL (psycopg: scrollable=False)."));
    }
    Ok(CursorCmd::Declare { name: name.value.clone(), hold: d.hold == Some(true), query: query.to_string() })
}

fn fetch_count(d: &ast::FetchDirection) -> Result<Option<u64>, SqlError> {
    use ast::FetchDirection as F;
    let number = |v: &ast::ValueWithSpan| match &v.value {
        ast::Value::Number(n, _) => n.parse::<u64>().map_err(|_| SqlError::syntax(format!("bad FETCH count {n}"))),
        other => Err(SqlError::syntax(format!("bad FETCH count {other}"))),
    };
    match d {
        F::Next | F::Forward { limit: None } => Ok(Some(1)),
        F::Count { limit } | F::Forward { limit: Some(limit) } => number(limit).map(Some),
        F::All | F::ForwardAll => Ok(None),
        other => Err(SqlError::unsupported(format!("FETCH {other}: cursors only fetch forward"))),
    }
}

struct Cursor {
    columns: Vec<Field>,
    rows: VecDeque<Vec<Value>>,
    hold: bool,
}

/// A connection's open cursors.
#[derive(Default)]
pub struct Cursors {
    open: HashMap<String, Cursor>,
}

impl Cursors {
    /// Opens `name` over `result` (its query's rows), within `work_mem`.
    pub fn declare(
        &mut self,
        name: &str,
        hold: bool,
        status: TxnStatus,
        result: StatementResult,
        work_mem: usize,
    ) -> Result<StatementResult, SqlError> {
        self.check_declare(name, hold, status)?;
        let bytes: usize = result.rows.iter().map(|r| r.iter().map(value_bytes).sum::<usize>()).sum();
        if bytes > work_mem {
            return Err(SqlError::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("the result of cursor \"{name}\" ({bytes} bytes) exceeds work_mem ({work_mem} bytes)"),
            )
            .with_hint("Cursors keep their query's result in memory: raise work_mem or narrow the query."));
        }
        let cursor = Cursor { columns: result.columns, rows: result.rows.into(), hold };
        self.open.insert(name.to_string(), cursor);
        Ok(command("DECLARE CURSOR"))
    }

    /// Whether `name` can be declared now (before its query runs).
    pub fn check_declare(&self, name: &str, hold: bool, status: TxnStatus) -> Result<(), SqlError> {
        if !hold && status == TxnStatus::Idle {
            return Err(SqlError::new(SqlState("25P01"), "DECLARE CURSOR can only be used in transaction blocks")
                .with_hint("Run it after BEGIN, or declare the cursor WITH HOLD."));
        }
        if self.open.contains_key(name) {
            return Err(SqlError::new(SqlState("42P03"), format!("cursor \"{name}\" already exists")));
        }
        Ok(())
    }

    /// The next `count` rows of `name` (None: all that are left).
    pub fn fetch(&mut self, name: &str, count: Option<u64>) -> Result<StatementResult, SqlError> {
        let c = self.open.get_mut(name).ok_or_else(|| no_cursor(name))?;
        let n = count.map_or(c.rows.len(), |n| (n as usize).min(c.rows.len()));
        let rows: Vec<Vec<Value>> = c.rows.drain(..n).collect();
        Ok(StatementResult { tag: format!("FETCH {}", rows.len()), columns: c.columns.clone(), rows, notices: vec![] })
    }

    pub fn close(&mut self, name: Option<&str>) -> Result<StatementResult, SqlError> {
        match name {
            None => self.open.clear(),
            Some(n) => {
                self.open.remove(n).ok_or_else(|| no_cursor(n))?;
            }
        }
        Ok(command("CLOSE CURSOR"))
    }

    /// The columns FETCH from `name` returns (a Describe before it runs).
    pub fn columns(&self, name: &str) -> Option<Vec<Field>> {
        self.open.get(name).map(|c| c.columns.clone())
    }

    /// After a statement: a transaction that ended closes its cursors
    /// WITHOUT HOLD.
    pub fn after_statement(&mut self, status: TxnStatus) {
        if status == TxnStatus::Idle {
            self.open.retain(|_, c| c.hold);
        }
    }
}

fn no_cursor(name: &str) -> SqlError {
    SqlError::new(SqlState("34000"), format!("cursor \"{name}\" does not exist"))
}

fn command(tag: &str) -> StatementResult {
    StatementResult { tag: tag.into(), columns: vec![], rows: vec![], notices: vec![] }
}

/// A value's size in memory, roughly (the enum and its heap bytes).
fn value_bytes(v: &Value) -> usize {
    std::mem::size_of::<Value>()
        + match v {
            Value::Text(s) => s.len(),
            _ => 0,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(sql: &str) -> Option<CursorCmd> {
        let stmts = ndpdb_sql::bind::parse(sql).unwrap();
        CursorCmd::of(&stmts[0]).unwrap()
    }

    #[test]
    fn psycopg_cursor_statements_parse() {
        assert_eq!(
            cmd("DECLARE \"c1\" CURSOR WITHOUT HOLD FOR SELECT a FROM t"),
            Some(CursorCmd::Declare { name: "c1".into(), hold: false, query: "SELECT a FROM t".into() })
        );
        assert!(matches!(
            cmd("DECLARE c NO SCROLL CURSOR WITH HOLD FOR SELECT 1"),
            Some(CursorCmd::Declare { hold: true, .. })
        ));
        assert_eq!(
            cmd("FETCH FORWARD 100 FROM \"c1\""),
            Some(CursorCmd::Fetch { name: "c1".into(), count: Some(100) })
        );
        assert_eq!(cmd("FETCH FORWARD ALL FROM c1"), Some(CursorCmd::Fetch { name: "c1".into(), count: None }));
        assert_eq!(cmd("FETCH NEXT FROM c1"), Some(CursorCmd::Fetch { name: "c1".into(), count: Some(1) }));
        assert_eq!(cmd("FETCH 5 IN c1"), Some(CursorCmd::Fetch { name: "c1".into(), count: Some(5) }));
        assert_eq!(cmd("CLOSE \"c1\""), Some(CursorCmd::Close { name: Some("c1".into()) }));
        assert_eq!(cmd("CLOSE ALL"), Some(CursorCmd::Close { name: None }));
        assert_eq!(cmd("SELECT 1"), None);
    }

    #[test]
    fn fetch_walks_forward_and_transactions_close_cursors_without_hold() {
        let mut c = Cursors::default();
        let rows = |n: i32| StatementResult {
            tag: "SELECT".into(),
            columns: vec![],
            rows: (0..n).map(|i| vec![Value::Int32(i)]).collect(),
            notices: vec![],
        };
        assert_eq!(c.declare("a", false, TxnStatus::Idle, rows(3), 1 << 20).unwrap_err().code.0, "25P01");
        c.declare("a", false, TxnStatus::InBlock, rows(5), 1 << 20).unwrap();
        c.declare("h", true, TxnStatus::InBlock, rows(1), 1 << 20).unwrap();
        assert_eq!(c.declare("a", false, TxnStatus::InBlock, rows(1), 1 << 20).unwrap_err().code.0, "42P03");
        assert_eq!(c.fetch("a", Some(2)).unwrap().rows, vec![vec![Value::Int32(0)], vec![Value::Int32(1)]]);
        assert_eq!(c.fetch("a", None).unwrap().tag, "FETCH 3");
        assert_eq!(c.fetch("a", Some(10)).unwrap().tag, "FETCH 0");
        c.after_statement(TxnStatus::Idle);
        assert_eq!(c.fetch("a", Some(1)).unwrap_err().code.0, "34000");
        assert_eq!(c.fetch("h", Some(1)).unwrap().rows.len(), 1);
        let big = c.declare("b", true, TxnStatus::Idle, rows(1000), 1000).unwrap_err();
        assert_eq!(big.code.0, "54000");
    }
}
