//! Bound statements: what the binder hands to the session to run.

use std::sync::Arc;

use super::Plan;
use crate::catalog::{ColumnDef, TableDef};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsolationLevel {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// SELECT, VALUES, set operations.
    Query(Plan),
    /// `source` yields one row per new tuple, its columns in table order
    /// (the binder fills omitted columns with their DEFAULT or NULL).
    Insert {
        table: Arc<TableDef>,
        source: Plan,
        /// `ON CONFLICT [(cols)] DO NOTHING`: skip rows whose key a unique
        /// index holds (`Some(None)`: any unique index; `Some(Some(cols))`:
        /// the one on `cols`).
        skip_conflicts: Option<Option<Vec<usize>>>,
    },
    /// `source` yields the VID, then every column's new value in table order.
    Update {
        table: Arc<TableDef>,
        source: Plan,
    },
    /// `source` yields the VIDs to delete (one Int64 column).
    Delete {
        table: Arc<TableDef>,
        source: Plan,
    },
    CreateTable {
        name: String,
        columns: Vec<ColumnDef>,
        primary_key: Option<Vec<usize>>,
        unique: Vec<Vec<usize>>,
        if_not_exists: bool,
    },
    DropTable {
        names: Vec<String>,
        if_exists: bool,
    },
    /// `TRUNCATE t, ...`: every row of each table deleted in the
    /// transaction (one `Delete` per table, run in order).
    Truncate {
        deletes: Vec<Statement>,
    },
    /// `ALTER TABLE t ADD PRIMARY KEY (columns)`.
    AddPrimaryKey {
        table: Arc<TableDef>,
        columns: Vec<usize>,
    },
    CreateIndex {
        name: String,
        table: Arc<TableDef>,
        columns: Vec<usize>,
        unique: bool,
        if_not_exists: bool,
    },
    DropIndex {
        names: Vec<String>,
        if_exists: bool,
    },
    /// `sql` is the view's query text, re-bound at each use.
    CreateView {
        name: String,
        columns: Option<Vec<String>>,
        sql: String,
        or_replace: bool,
    },
    DropView {
        names: Vec<String>,
        if_exists: bool,
    },
    Begin {
        isolation: Option<IsolationLevel>,
    },
    Commit,
    Rollback,
    SetTransaction {
        isolation: IsolationLevel,
    },
    /// `SET name = value` / `SET name TO DEFAULT` (value None).
    Set {
        name: String,
        value: Option<String>,
    },
    Show {
        name: String,
    },
    /// Tables to analyze; empty = all.
    Analyze {
        tables: Vec<Arc<TableDef>>,
    },
    Explain {
        analyze: bool,
        statement: Box<Statement>,
    },
    /// `COPY table [(cols)] FROM 'path' WITH (FORMAT csv, HEADER, DELIMITER, NULL)`.
    Copy {
        table: Arc<TableDef>,
        columns: Vec<usize>,
        path: String,
        options: CopyOptions,
    },
    /// A statement with nothing to do (e.g. `SET client_encoding` values
    /// ndpdb accepts as they are).
    Empty,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CopyOptions {
    pub header: bool,
    pub delimiter: char,
    pub null: String,
    pub quote: char,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions { header: false, delimiter: ',', null: String::new(), quote: '"' }
    }
}
