//! The catalog: tables, columns with their SQL types, constraints, indexes,
//! views and statistics, as the binder and the optimizer see them.
//!
//! The store knows tables only as storage layouts (`format::schema`); what
//! SQL adds (declared types such as `smallint` over an int32 slot, NOT NULL,
//! DEFAULT, keys, indexes, views, `ANALYZE` statistics) is kept in the
//! catalog, persisted as rows of a system table in the same store and
//! written in the DDL statement's transaction (`docs/sql.md`, "The
//! catalog"). The binder reads it through the [`Catalog`] trait, so that
//! the binder and the optimizer are tested on an in-memory [`MemCatalog`]
//! as well as on the persistent one.

pub mod system;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::types::{DataType, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: DataType,
    pub not_null: bool,
    /// The DEFAULT expression's SQL text (bound at each INSERT).
    pub default: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableDef {
    /// The store's table id.
    pub id: u32,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    pub primary_key: Option<Vec<usize>>,
    /// UNIQUE constraints (column positions).
    pub unique: Vec<Vec<usize>>,
    pub indexes: Vec<Arc<IndexDef>>,
    /// From the last `ANALYZE`; None before it.
    pub stats: Option<Arc<TableStats>>,
}

impl TableDef {
    /// The position of column `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct IndexDef {
    pub name: String,
    pub table: String,
    /// Key columns (positions in the table), in key order.
    pub columns: Vec<usize>,
    pub unique: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ViewDef {
    pub name: String,
    /// Column names given in `CREATE VIEW v (a, b)`.
    pub columns: Option<Vec<String>>,
    /// The query's text, re-bound at each use.
    pub sql: String,
}

/// `ANALYZE`'s statistics of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableStats {
    pub rows: f64,
    /// One per column, in table order.
    pub columns: Vec<ColumnStats>,
}

/// Statistics of one column, PostgreSQL's pg_stats in short.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnStats {
    /// Distinct non-NULL values (estimated).
    pub distinct: f64,
    /// Fraction of rows that are NULL.
    pub null_frac: f64,
    /// Most common values with their frequencies (fraction of all rows).
    pub mcv: Vec<(Value, f64)>,
    /// Bounds of equal-frequency buckets over the values not in `mcv`,
    /// ascending.
    pub histogram: Vec<Value>,
    /// Average width in bytes of non-NULL values.
    pub avg_width: f64,
}

/// What the binder and optimizer read.
pub trait Catalog {
    fn table(&self, name: &str) -> Option<Arc<TableDef>>;
    fn view(&self, name: &str) -> Option<Arc<ViewDef>>;
    /// The index called `name` (index names are global, as in PostgreSQL's
    /// schema).
    fn index(&self, name: &str) -> Option<Arc<IndexDef>>;
    /// All tables, by name.
    fn tables(&self) -> Vec<Arc<TableDef>>;
    /// The names of all views, sorted.
    fn view_names(&self) -> Vec<String>;
    /// The sessions `pg_stat_activity` shows: a session's catalog lists
    /// the live ones (`session/activity.rs`); a bare catalog none.
    fn activity(&self) -> Vec<system::SessionActivity> {
        Vec::new()
    }
}

/// A catalog held in memory: the persistent catalog's snapshot, and the
/// fixture of binder and optimizer tests.
#[derive(Debug, Clone, Default)]
pub struct MemCatalog {
    pub tables: BTreeMap<String, Arc<TableDef>>,
    pub views: BTreeMap<String, Arc<ViewDef>>,
}

impl Catalog for MemCatalog {
    fn table(&self, name: &str) -> Option<Arc<TableDef>> {
        self.tables.get(name).cloned()
    }

    fn view(&self, name: &str) -> Option<Arc<ViewDef>> {
        self.views.get(name).cloned()
    }

    fn index(&self, name: &str) -> Option<Arc<IndexDef>> {
        self.tables.values().flat_map(|t| t.indexes.iter()).find(|i| i.name == name).cloned()
    }

    fn tables(&self) -> Vec<Arc<TableDef>> {
        self.tables.values().cloned().collect()
    }

    fn view_names(&self) -> Vec<String> {
        self.views.keys().cloned().collect()
    }
}
