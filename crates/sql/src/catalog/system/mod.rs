//! The system catalogs clients read: `pg_catalog.pg_class` and friends and
//! `information_schema.tables`/`columns`/`schemata`, as virtual tables
//! computed from the session's [`Catalog`].
//!
//! psql's `\d` family, drivers' type lookups and pgbench read PostgreSQL's
//! catalogs with ordinary SELECTs. ndpdb keeps its catalog as JSON rows of
//! `ndpdb_catalog` (`docs/format/sql-catalog.md`); these tables present it
//! in PostgreSQL's shape.
//!
//! ## Design: rows built at bind time
//!
//! ```text
//!  SELECT .. FROM pg_class c JOIN pg_namespace n ON ..
//!                  │                 │
//!  binder: relation "pg_class" ──► system::lookup ──► SystemTable
//!                  │                     rows(&Relations)  ◄── Relations::new(catalog)
//!                  ▼                                          (the transaction's view)
//!  Node::Values { rows of literals }  (then filters, joins, sorts as any table)
//! ```
//!
//! When the binder meets a system table's name it asks this module for the
//! table's rows and binds a `Values` node of literals in their place. That
//! is the simplest design that is real: the rows come from the very catalog
//! the statement binds against (the transaction's, so DDL in an open
//! transaction shows, and a rolled-back CREATE disappears), the optimizer
//! and executor need nothing new, and the catalogs are small (one row per
//! relation, column, index). The price: a prepared statement over a system
//! table keeps the rows of its bind (PostgreSQL's plans see later DDL; ours
//! are re-bound when the catalog changes, as any prepared plan).
//!
//! ## OIDs
//!
//! OIDs are stable across sessions and restarts (see [`oids`] and
//! `docs/format/sql-catalog.md`, "OIDs of the system catalogs"):
//! PostgreSQL's own for types, namespaces, access methods and the catalogs
//! themselves; `16384 + store table id` for tables; a hash of the name for
//! indexes, views and constraints.
//!
//! ## Types
//!
//! `oid` columns are `bigint` (PostgreSQL's oid is an unsigned 32-bit
//! integer: every OID here fits), `name` and `"char"` are `text`, and array
//! columns (`aclitem[]`, `oid[]`, `int2vector`) are `text` holding
//! PostgreSQL's text form of the array (`{a,b}`, or `1 2` for int2vector);
//! `array_to_string` reads that form.

mod activity;
pub mod oids;
mod rows;
mod schema;

use std::sync::Arc;

pub use activity::{ActivitySource, SessionActivity};
pub use rows::constraint_type;
pub use schema::{SystemTable, lookup, tables};

use crate::catalog::{Catalog, IndexDef, TableDef, ViewDef};
use crate::types::DataType;

/// The name of the one role: owner of everything, the user of every session.
pub const OWNER: &str = "ndpdb";
/// The name of the one database (`current_database()`).
pub const DATABASE: &str = "ndpdb";

/// What a relation is, with its definition.
#[derive(Debug, Clone)]
pub enum RelKind {
    Table(Arc<TableDef>),
    /// An index and the table it indexes.
    Index(Arc<IndexDef>, Arc<TableDef>),
    View(Arc<ViewDef>),
    /// One of this module's tables (pg_catalog's are tables, information_schema's views).
    System(&'static SystemTable),
}

/// One row of `pg_class`: a relation with its OID and columns.
#[derive(Debug, Clone)]
pub struct Relation {
    pub oid: i64,
    pub name: String,
    pub namespace: i64,
    pub kind: RelKind,
    pub columns: Vec<Column>,
}

/// One column of a relation (a row of `pg_attribute`).
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: DataType,
    pub not_null: bool,
    /// The DEFAULT as `pg_get_expr` prints it.
    pub default: Option<String>,
}

impl Relation {
    /// `pg_class.relkind`.
    pub fn relkind(&self) -> &'static str {
        match &self.kind {
            RelKind::Table(_) => "r",
            RelKind::Index(..) => "i",
            RelKind::View(_) => "v",
            RelKind::System(t) if t.schema == "information_schema" => "v",
            RelKind::System(_) => "r",
        }
    }
}

/// Every relation the session sees, sorted by OID, with a lookup of
/// relations by name.
#[derive(Debug, Clone)]
pub struct Relations {
    pub all: Vec<Relation>,
    /// The sessions `pg_stat_activity` lists ([`Catalog::activity`]).
    pub activity: Vec<SessionActivity>,
}

impl Relations {
    /// The relations of `catalog`; `view_columns` gives a view's output
    /// columns (the binder binds the view's query for them).
    pub fn new(catalog: &dyn Catalog, view_columns: &mut dyn FnMut(&ViewDef) -> Vec<Column>) -> Relations {
        let mut all = Vec::new();
        for t in catalog.tables() {
            let columns = t
                .columns
                .iter()
                .map(|c| Column {
                    name: c.name.clone(),
                    ty: c.ty,
                    not_null: c.not_null,
                    default: c.default.as_deref().map(|d| oids::deparse_default(d, c.ty)),
                })
                .collect();
            for ix in &t.indexes {
                let columns = ix.columns.iter().filter_map(|&i| t.columns.get(i)).map(|c| Column {
                    name: c.name.clone(),
                    ty: c.ty,
                    not_null: false,
                    default: None,
                });
                all.push(Relation {
                    oid: oids::index_oid(&ix.name),
                    name: ix.name.clone(),
                    namespace: oids::PUBLIC,
                    kind: RelKind::Index(ix.clone(), t.clone()),
                    columns: columns.collect(),
                });
            }
            all.push(Relation {
                oid: oids::table_oid(t.id),
                name: t.name.clone(),
                namespace: oids::PUBLIC,
                kind: RelKind::Table(t.clone()),
                columns,
            });
        }
        for name in catalog.view_names() {
            if let Some(v) = catalog.view(&name) {
                let columns = view_columns(&v);
                all.push(Relation {
                    oid: oids::view_oid(&name),
                    name,
                    namespace: oids::PUBLIC,
                    kind: RelKind::View(v),
                    columns,
                });
            }
        }
        for (i, t) in tables().iter().enumerate() {
            all.push(Relation {
                oid: t.oid(i),
                name: t.name.to_string(),
                namespace: oids::namespace_oid(t.schema).unwrap_or(oids::PG_CATALOG),
                kind: RelKind::System(t),
                columns: t
                    .columns
                    .iter()
                    .map(|(n, ty)| Column { name: n.to_string(), ty: *ty, not_null: false, default: None })
                    .collect(),
            });
        }
        all.sort_by_key(|r| r.oid);
        Relations { all, activity: catalog.activity() }
    }

    /// The relation named `name` in the public schema or pg_catalog.
    pub fn by_name(&self, name: &str) -> Option<&Relation> {
        self.all.iter().find(|r| r.name == name && r.namespace != oids::INFORMATION_SCHEMA)
    }

    pub fn by_oid(&self, oid: i64) -> Option<&Relation> {
        self.all.iter().find(|r| r.oid == oid)
    }
}
