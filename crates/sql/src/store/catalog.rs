//! The SQL catalog, persisted as rows of the system table `ndpdb_catalog`.
//!
//! ```text
//!  ndpdb_catalog(kind int32, name varchar(256), part int32, definition varchar(4096))
//!   kind 0 "lock"   one row; every DDL updates it first (serializes DDL)
//!   kind 1 table    {storage name, store id, columns, keys}     JSON
//!   kind 2 index    {table, columns, unique}                    JSON
//!   kind 3 view     {columns, sql}                              JSON
//!   kind 4 stats    TableStats of table `name`                  JSON
//!  a definition longer than 4096 bytes continues in rows part 1, 2, ...
//! ```
//!
//! (`docs/format/sql-catalog.md` has the byte-level format.) Every change
//! is written in the caller's transaction, so DDL commits or rolls back
//! with it and is recovered by the store's log like any row. A transaction
//! reads the catalog as its snapshot sees it ([`CatalogStore::load`]): its
//! own uncommitted DDL included, others' not.
//!
//! DDL first updates the lock row: two transactions changing the catalog
//! at once conflict there (the second waits, and under repeatable read
//! fails with 40001), and then reads the catalog at a fresh snapshot, so
//! that a name created by a transaction it waited for is seen.
//!
//! Storage tables: the store cannot drop tables, so each SQL table gets a
//! storage table of its own, named `name#k` with the smallest free `k`;
//! DROP TABLE removes the catalog rows only. The storage table stays, with
//! its rows, unreachable from SQL (its pages are not reclaimed), and so does
//! the storage table of a CREATE TABLE whose transaction rolled back (store
//! tables are created outside transactions). DROP then CREATE of one name
//! gets a new, empty storage table.

use std::collections::BTreeMap;
use std::sync::Arc;

use ndpdb_format::ndp::Snapshot;
use ndpdb_format::schema::{self as fs, ColumnType, TEXT_MAX};
use ndpdb_storage::Table;
use ndpdb_txn::{Database, Isolation, ReadMode};
use serde::{Deserialize, Serialize};

use super::mapping::storage_columns;
use super::txn::{SqlTxn, store_error, txn_error};
use crate::catalog::{ColumnDef, ColumnStats, IndexDef, MemCatalog, TableDef, TableStats, ViewDef};
use crate::error::{Result, SqlError, SqlState};
use crate::types::{DataType, Interval, Value};

/// The system table's storage name.
pub const CATALOG_TABLE: &str = "ndpdb_catalog";
const NAME_MAX: u16 = 256;

const KIND_LOCK: i64 = 0;
const KIND_TABLE: i64 = 1;
const KIND_INDEX: i64 = 2;
const KIND_VIEW: i64 = 3;
const KIND_STATS: i64 = 4;

/// The persistent catalog of one database.
pub struct CatalogStore {
    db: Arc<Database>,
    table: Arc<Table>,
    lock_vid: u64,
}

/// One catalog entry's rows: (part, VID, chunk), by part.
type Entry = Vec<(i64, u64, String)>;
/// Every entry's rows, by (kind, name).
type Entries = BTreeMap<(i64, String), Entry>;

impl CatalogStore {
    /// Opens the catalog of `db`, creating its system table on first use.
    pub fn open(db: Arc<Database>) -> Result<CatalogStore> {
        let store = db.store();
        let table = match store.table(CATALOG_TABLE) {
            Some(t) => t,
            None => {
                let columns = vec![
                    fs::Column::new("kind", ColumnType::Int32, false),
                    fs::Column::new("name", ColumnType::Varchar(NAME_MAX), false),
                    fs::Column::new("part", ColumnType::Int32, false),
                    fs::Column::new("definition", ColumnType::Varchar(TEXT_MAX), false),
                ];
                db.create_table(CATALOG_TABLE, columns).map_err(txn_error)?
            }
        };
        let mut cat = CatalogStore { db: db.clone(), table, lock_vid: 0 };
        let txn = SqlTxn::begin(db, Isolation::ReadCommitted);
        let snapshot = txn.fresh_snapshot()?;
        let entries = cat.entries(&txn, &snapshot)?;
        match entries.get(&(KIND_LOCK, "lock".to_owned())) {
            Some(rows) => cat.lock_vid = rows[0].1,
            None => {
                // A new catalog, or one whose creation did not commit.
                let t = cat.table.clone();
                cat.lock_vid = txn.with(|x| x.insert(&t, &lock_row()))?;
            }
        }
        txn.commit()?;
        Ok(cat)
    }

    /// The catalog as the statement's snapshot of `txn` sees it.
    pub fn load(&self, txn: &SqlTxn) -> Result<MemCatalog> {
        let snapshot = txn.statement_snapshot()?;
        self.load_at(txn, &snapshot)
    }

    fn load_at(&self, txn: &SqlTxn, snapshot: &Snapshot) -> Result<MemCatalog> {
        let entries = self.entries(txn, snapshot)?;
        let mut cat = MemCatalog::default();
        let mut indexes: Vec<IndexDef> = vec![];
        let mut stats: BTreeMap<String, TableStats> = BTreeMap::new();
        for ((kind, name), rows) in &entries {
            let json: String = rows.iter().map(|r| r.2.as_str()).collect();
            let bad = |e: serde_json::Error| {
                SqlError::new(SqlState::DATA_CORRUPTED, format!("catalog entry {kind}/{name}: {e}"))
            };
            match *kind {
                KIND_TABLE => {
                    let t: StoredTable = serde_json::from_str(&json).map_err(bad)?;
                    cat.tables.insert(name.clone(), Arc::new(t.into_def(name)?));
                }
                KIND_INDEX => {
                    let i: StoredIndex = serde_json::from_str(&json).map_err(bad)?;
                    indexes.push(IndexDef { name: name.clone(), table: i.table, columns: i.columns, unique: i.unique });
                }
                KIND_VIEW => {
                    let v: StoredView = serde_json::from_str(&json).map_err(bad)?;
                    cat.views
                        .insert(name.clone(), Arc::new(ViewDef { name: name.clone(), columns: v.columns, sql: v.sql }));
                }
                KIND_STATS => {
                    let s: StoredStats = serde_json::from_str(&json).map_err(bad)?;
                    stats.insert(name.clone(), s.into_stats()?);
                }
                _ => {}
            }
        }
        for (name, t) in cat.tables.iter_mut() {
            let t = Arc::make_mut(t);
            // The constraints' indexes first (`store/index`), then CREATE INDEX's.
            let mut all = super::index::build::constraint_indexes(t);
            all.extend(indexes.iter().filter(|i| &i.table == name).cloned().map(Arc::new));
            t.indexes = all;
            t.stats = stats.remove(name).map(Arc::new);
        }
        Ok(cat)
    }

    /// Every entry's rows visible at `snapshot`, by (kind, name).
    fn entries(&self, txn: &SqlTxn, snapshot: &Snapshot) -> Result<Entries> {
        let t = &self.table;
        let rows = txn.with(|x| x.rows_at(t, snapshot, &[0, 1, 2, 3], None, ReadMode::Host { workers: 1 }))?;
        let mut out: Entries = BTreeMap::new();
        for (vid, v) in rows.rows {
            let (fs::Value::Int(kind), fs::Value::Text(name), fs::Value::Int(part), fs::Value::Text(def)) =
                (&v[0], &v[1], &v[2], &v[3])
            else {
                return Err(SqlError::new(SqlState::DATA_CORRUPTED, format!("catalog row {vid}: {v:?}")));
            };
            let text = |b: &[u8]| {
                String::from_utf8(b.to_vec())
                    .map_err(|_| SqlError::new(SqlState::DATA_CORRUPTED, format!("catalog row {vid} is not UTF-8")))
            };
            out.entry((*kind, text(name)?)).or_default().push((*part, vid, text(def)?));
        }
        for rows in out.values_mut() {
            rows.sort_by_key(|r| r.0);
        }
        Ok(out)
    }

    /// Takes the catalog's lock row and reads the catalog at a fresh
    /// snapshot, with its entries (module docs).
    fn lock(&self, txn: &SqlTxn) -> Result<(MemCatalog, Entries)> {
        let (t, vid) = (&self.table, self.lock_vid);
        txn.with(|x| x.update(t, vid, &lock_row()))?;
        let snapshot = txn.fresh_snapshot()?;
        Ok((self.load_at(txn, &snapshot)?, self.entries(txn, &snapshot)?))
    }

    fn write(&self, txn: &SqlTxn, kind: i64, name: &str, json: &str) -> Result<()> {
        if name.len() > usize::from(NAME_MAX) {
            return Err(SqlError::new(SqlState::PROGRAM_LIMIT_EXCEEDED, format!("name \"{name}\" is too long"))
                .with_hint(format!("use at most {NAME_MAX} bytes")));
        }
        let t = &self.table;
        for (part, chunk) in chunks(json, usize::from(TEXT_MAX)).into_iter().enumerate() {
            let row = [
                fs::Value::Int(kind),
                fs::Value::Text(name.as_bytes().to_vec()),
                fs::Value::Int(part as i64),
                fs::Value::Text(chunk.as_bytes().to_vec()),
            ];
            txn.with(|x| x.insert(t, &row))?;
        }
        Ok(())
    }

    fn remove(&self, txn: &SqlTxn, entries: &Entries, kind: i64, name: &str) -> Result<()> {
        let t = &self.table;
        for (_, vid, _) in entries.get(&(kind, name.to_owned())).into_iter().flatten() {
            txn.with(|x| x.delete(t, *vid))?;
        }
        Ok(())
    }

    /// CREATE TABLE: a new storage table and its catalog entry. Primary-key
    /// columns become NOT NULL, as in PostgreSQL. Returns the definition;
    /// `Ok(None)` when `if_not_exists` and the name is taken.
    pub fn create_table(
        &self,
        txn: &SqlTxn,
        name: &str,
        mut columns: Vec<ColumnDef>,
        primary_key: Option<Vec<usize>>,
        unique: Vec<Vec<usize>>,
        if_not_exists: bool,
    ) -> Result<Option<Arc<TableDef>>> {
        let (cat, _) = self.lock(txn)?;
        if cat.tables.contains_key(name) || cat.views.contains_key(name) || index_named(&cat, name) {
            if if_not_exists {
                return Ok(None);
            }
            return Err(SqlError::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
        }
        for &c in primary_key.iter().flatten() {
            columns.get_mut(c).ok_or_else(|| SqlError::internal("primary key column"))?.not_null = true;
        }
        let storage = storage_columns(&columns)?;
        let store = self.db.store();
        let storage_name =
            (0u64..).map(|k| format!("{name}#{k}")).find(|n| store.table(n).is_none()).expect("a free name");
        let table = self.db.create_table(&storage_name, storage).map_err(txn_error)?;
        let mut def = TableDef {
            id: table.id,
            name: name.to_owned(),
            columns,
            primary_key,
            unique,
            indexes: vec![],
            stats: None,
        };
        def.indexes = super::index::build::constraint_indexes(&def);
        let json = serde_json::to_string(&StoredTable::of(&def, &storage_name))
            .map_err(|e| SqlError::internal(e.to_string()))?;
        self.write(txn, KIND_TABLE, name, &json)?;
        Ok(Some(Arc::new(def)))
    }

    /// DROP TABLE: its entry, its indexes' and its statistics. Ok(false)
    /// when it does not exist and `if_exists`.
    pub fn drop_table(&self, txn: &SqlTxn, name: &str, if_exists: bool) -> Result<bool> {
        let (cat, entries) = self.lock(txn)?;
        let Some(t) = cat.tables.get(name) else {
            if if_exists {
                return Ok(false);
            }
            return Err(SqlError::new(SqlState::UNDEFINED_TABLE, format!("table \"{name}\" does not exist")));
        };
        for i in &t.indexes {
            self.remove(txn, &entries, KIND_INDEX, &i.name)?;
        }
        self.remove(txn, &entries, KIND_STATS, name)?;
        self.remove(txn, &entries, KIND_TABLE, name)?;
        Ok(true)
    }

    /// ALTER TABLE ADD PRIMARY KEY: the table's entry rewritten with the
    /// key, its columns NOT NULL. Checking the rows (no NULLs, no repeats)
    /// and building `t_pkey` are the caller's. Returns the new definition.
    pub fn add_primary_key(&self, txn: &SqlTxn, name: &str, columns: &[usize]) -> Result<Arc<TableDef>> {
        let (cat, entries) = self.lock(txn)?;
        let Some(def) = cat.tables.get(name) else {
            return Err(SqlError::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist")));
        };
        let index = format!("{name}_pkey");
        if cat.tables.contains_key(&index) || cat.views.contains_key(&index) || index_named(&cat, &index) {
            return Err(SqlError::new(SqlState::DUPLICATE_TABLE, format!("relation \"{index}\" already exists")));
        }
        let json: String =
            entries.get(&(KIND_TABLE, name.to_owned())).into_iter().flatten().map(|r| r.2.as_str()).collect();
        let mut stored: StoredTable = serde_json::from_str(&json)
            .map_err(|e| SqlError::new(SqlState::DATA_CORRUPTED, format!("catalog entry of table {name}: {e}")))?;
        stored.primary_key = Some(columns.to_vec());
        for &c in columns {
            stored.columns.get_mut(c).ok_or_else(|| SqlError::internal("primary key column"))?.not_null = true;
        }
        self.remove(txn, &entries, KIND_TABLE, name)?;
        let json = serde_json::to_string(&stored).map_err(|e| SqlError::internal(e.to_string()))?;
        self.write(txn, KIND_TABLE, name, &json)?;
        let mut new = (**def).clone();
        new.primary_key = Some(columns.to_vec());
        for &c in columns {
            new.columns[c].not_null = true;
        }
        Ok(Arc::new(new))
    }

    /// CREATE INDEX (the definition; building the B+-tree is the index
    /// module's). Ok(false) when `if_not_exists` and the name is taken.
    pub fn create_index(&self, txn: &SqlTxn, index: &IndexDef, if_not_exists: bool) -> Result<bool> {
        let (cat, _) = self.lock(txn)?;
        let name = &index.name;
        if cat.tables.contains_key(name) || cat.views.contains_key(name) || index_named(&cat, name) {
            if if_not_exists {
                return Ok(false);
            }
            return Err(SqlError::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
        }
        if !cat.tables.contains_key(&index.table) {
            return Err(SqlError::new(
                SqlState::UNDEFINED_TABLE,
                format!("relation \"{}\" does not exist", index.table),
            ));
        }
        let stored = StoredIndex { table: index.table.clone(), columns: index.columns.clone(), unique: index.unique };
        let json = serde_json::to_string(&stored).map_err(|e| SqlError::internal(e.to_string()))?;
        self.write(txn, KIND_INDEX, name, &json)?;
        Ok(true)
    }

    /// DROP INDEX. Ok(false) when it does not exist and `if_exists`.
    pub fn drop_index(&self, txn: &SqlTxn, name: &str, if_exists: bool) -> Result<bool> {
        let (cat, entries) = self.lock(txn)?;
        if !index_named(&cat, name) {
            if if_exists {
                return Ok(false);
            }
            return Err(SqlError::new(SqlState::UNDEFINED_OBJECT, format!("index \"{name}\" does not exist")));
        }
        self.remove(txn, &entries, KIND_INDEX, name)?;
        Ok(true)
    }

    /// CREATE [OR REPLACE] VIEW.
    pub fn create_view(&self, txn: &SqlTxn, view: &ViewDef, or_replace: bool) -> Result<()> {
        let (cat, entries) = self.lock(txn)?;
        let name = &view.name;
        let exists = cat.views.contains_key(name);
        if cat.tables.contains_key(name) || index_named(&cat, name) || (exists && !or_replace) {
            return Err(SqlError::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
        }
        self.remove(txn, &entries, KIND_VIEW, name)?;
        let stored = StoredView { columns: view.columns.clone(), sql: view.sql.clone() };
        let json = serde_json::to_string(&stored).map_err(|e| SqlError::internal(e.to_string()))?;
        self.write(txn, KIND_VIEW, name, &json)
    }

    /// DROP VIEW. Ok(false) when it does not exist and `if_exists`.
    pub fn drop_view(&self, txn: &SqlTxn, name: &str, if_exists: bool) -> Result<bool> {
        let (cat, entries) = self.lock(txn)?;
        if !cat.views.contains_key(name) {
            if if_exists {
                return Ok(false);
            }
            return Err(SqlError::new(SqlState::UNDEFINED_TABLE, format!("view \"{name}\" does not exist")));
        }
        self.remove(txn, &entries, KIND_VIEW, name)?;
        Ok(true)
    }

    /// Saves `ANALYZE`'s statistics of table `name`, replacing older ones.
    pub fn save_stats(&self, txn: &SqlTxn, name: &str, stats: &TableStats) -> Result<()> {
        let (cat, entries) = self.lock(txn)?;
        if !cat.tables.contains_key(name) {
            return Err(SqlError::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist")));
        }
        self.remove(txn, &entries, KIND_STATS, name)?;
        let json = serde_json::to_string(&StoredStats::of(stats)).map_err(|e| SqlError::internal(e.to_string()))?;
        self.write(txn, KIND_STATS, name, &json)
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }
}

fn lock_row() -> [fs::Value; 4] {
    [fs::Value::Int(KIND_LOCK), fs::Value::Text(b"lock".to_vec()), fs::Value::Int(0), fs::Value::Text(vec![])]
}

fn index_named(cat: &MemCatalog, name: &str) -> bool {
    cat.tables.values().any(|t| t.indexes.iter().any(|i| i.name == name))
}

/// `s` in pieces of at most `max` bytes, cut at character boundaries.
fn chunks(s: &str, max: usize) -> Vec<&str> {
    let mut out = vec![];
    let mut rest = s;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

#[derive(Serialize, Deserialize)]
struct StoredColumn {
    name: String,
    ty: String,
    not_null: bool,
    default: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct StoredTable {
    storage: String,
    id: u32,
    columns: Vec<StoredColumn>,
    primary_key: Option<Vec<usize>>,
    unique: Vec<Vec<usize>>,
}

impl StoredTable {
    fn of(t: &TableDef, storage: &str) -> StoredTable {
        StoredTable {
            storage: storage.to_owned(),
            id: t.id,
            columns: t
                .columns
                .iter()
                .map(|c| StoredColumn {
                    name: c.name.clone(),
                    ty: type_code(c.ty),
                    not_null: c.not_null,
                    default: c.default.clone(),
                })
                .collect(),
            primary_key: t.primary_key.clone(),
            unique: t.unique.clone(),
        }
    }

    fn into_def(self, name: &str) -> Result<TableDef> {
        let columns = self
            .columns
            .into_iter()
            .map(|c| Ok(ColumnDef { ty: parse_type(&c.ty)?, name: c.name, not_null: c.not_null, default: c.default }))
            .collect::<Result<_>>()?;
        Ok(TableDef {
            id: self.id,
            name: name.to_owned(),
            columns,
            primary_key: self.primary_key,
            unique: self.unique,
            indexes: vec![],
            stats: None,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct StoredIndex {
    table: String,
    columns: Vec<usize>,
    unique: bool,
}

#[derive(Serialize, Deserialize)]
struct StoredView {
    columns: Option<Vec<String>>,
    sql: String,
}

/// A SQL value in JSON: exact for every type (floats by their bits,
/// numerics as decimal strings of the scaled integer).
#[derive(Serialize, Deserialize)]
enum StoredValue {
    Null,
    Bool(bool),
    I16(i16),
    I32(i32),
    I64(i64),
    Numeric(String, u8),
    Float(u64),
    Date(i32),
    Timestamp(i64),
    Interval(i32, i32, i64),
    Text(String),
}

impl StoredValue {
    fn of(v: &Value) -> StoredValue {
        match v {
            Value::Null => StoredValue::Null,
            Value::Bool(b) => StoredValue::Bool(*b),
            Value::Int16(x) => StoredValue::I16(*x),
            Value::Int32(x) => StoredValue::I32(*x),
            Value::Int64(x) => StoredValue::I64(*x),
            Value::Numeric { value, scale } => StoredValue::Numeric(value.to_string(), *scale),
            Value::Float64(f) => StoredValue::Float(f.to_bits()),
            Value::Date(d) => StoredValue::Date(*d),
            Value::Timestamp(t) => StoredValue::Timestamp(*t),
            Value::Interval(i) => StoredValue::Interval(i.months, i.days, i.micros),
            Value::Text(s) => StoredValue::Text(s.clone()),
        }
    }

    fn into_value(self) -> Result<Value> {
        Ok(match self {
            StoredValue::Null => Value::Null,
            StoredValue::Bool(b) => Value::Bool(b),
            StoredValue::I16(x) => Value::Int16(x),
            StoredValue::I32(x) => Value::Int32(x),
            StoredValue::I64(x) => Value::Int64(x),
            StoredValue::Numeric(v, scale) => Value::Numeric {
                value: v
                    .parse()
                    .map_err(|_| SqlError::new(SqlState::DATA_CORRUPTED, format!("catalog numeric {v}")))?,
                scale,
            },
            StoredValue::Float(bits) => Value::Float64(f64::from_bits(bits)),
            StoredValue::Date(d) => Value::Date(d),
            StoredValue::Timestamp(t) => Value::Timestamp(t),
            StoredValue::Interval(months, days, micros) => Value::Interval(Interval { months, days, micros }),
            StoredValue::Text(s) => Value::Text(s),
        })
    }
}

#[derive(Serialize, Deserialize)]
struct StoredColumnStats {
    distinct: f64,
    null_frac: f64,
    mcv: Vec<(StoredValue, f64)>,
    histogram: Vec<StoredValue>,
    avg_width: f64,
}

#[derive(Serialize, Deserialize)]
struct StoredStats {
    rows: f64,
    columns: Vec<StoredColumnStats>,
}

impl StoredStats {
    fn of(s: &TableStats) -> StoredStats {
        StoredStats {
            rows: s.rows,
            columns: s
                .columns
                .iter()
                .map(|c| StoredColumnStats {
                    distinct: c.distinct,
                    null_frac: c.null_frac,
                    mcv: c.mcv.iter().map(|(v, f)| (StoredValue::of(v), *f)).collect(),
                    histogram: c.histogram.iter().map(StoredValue::of).collect(),
                    avg_width: c.avg_width,
                })
                .collect(),
        }
    }

    fn into_stats(self) -> Result<TableStats> {
        let columns = self
            .columns
            .into_iter()
            .map(|c| {
                Ok(ColumnStats {
                    distinct: c.distinct,
                    null_frac: c.null_frac,
                    mcv: c.mcv.into_iter().map(|(v, f)| Ok((v.into_value()?, f))).collect::<Result<_>>()?,
                    histogram: c.histogram.into_iter().map(StoredValue::into_value).collect::<Result<_>>()?,
                    avg_width: c.avg_width,
                })
            })
            .collect::<Result<_>>()?;
        Ok(TableStats { rows: self.rows, columns })
    }
}

/// A SQL type's code in the catalog (`docs/format/sql-catalog.md`).
pub fn type_code(ty: DataType) -> String {
    match ty {
        DataType::Bool => "bool".into(),
        DataType::Int16 => "int16".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::Numeric { precision: Some(p), scale } => format!("numeric({p},{scale})"),
        DataType::Numeric { precision: None, scale } => format!("numeric(,{scale})"),
        DataType::Float64 => "float64".into(),
        DataType::Date => "date".into(),
        DataType::Timestamp => "timestamp".into(),
        DataType::Interval => "interval".into(),
        DataType::Char(n) => format!("char({n})"),
        DataType::Varchar(Some(n)) => format!("varchar({n})"),
        DataType::Varchar(None) => "varchar".into(),
        DataType::Text => "text".into(),
        DataType::Unknown => "unknown".into(),
    }
}

/// The type of a catalog type code.
pub fn parse_type(s: &str) -> Result<DataType> {
    let bad = || SqlError::new(SqlState::DATA_CORRUPTED, format!("catalog type code \"{s}\""));
    let arg = |prefix: &str| s.strip_prefix(prefix).and_then(|r| r.strip_suffix(')'));
    Ok(match s {
        "bool" => DataType::Bool,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "float64" => DataType::Float64,
        "date" => DataType::Date,
        "timestamp" => DataType::Timestamp,
        "interval" => DataType::Interval,
        "varchar" => DataType::Varchar(None),
        "text" => DataType::Text,
        "unknown" => DataType::Unknown,
        _ => {
            if let Some(a) = arg("numeric(") {
                let (p, sc) = a.split_once(',').ok_or_else(bad)?;
                let precision = if p.is_empty() { None } else { Some(p.parse().map_err(|_| bad())?) };
                DataType::Numeric { precision, scale: sc.parse().map_err(|_| bad())? }
            } else if let Some(n) = arg("char(") {
                DataType::Char(n.parse().map_err(|_| bad())?)
            } else if let Some(n) = arg("varchar(") {
                DataType::Varchar(Some(n.parse().map_err(|_| bad())?))
            } else {
                return Err(bad());
            }
        }
    })
}

/// Reports a store error opening the catalog (used by callers that open
/// the store themselves).
pub fn open_error(e: ndpdb_storage::StoreError) -> SqlError {
    store_error(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_codes_roundtrip() {
        for ty in [
            DataType::Bool,
            DataType::Int16,
            DataType::Int32,
            DataType::Int64,
            DataType::Numeric { precision: Some(15), scale: 2 },
            DataType::Numeric { precision: None, scale: 16 },
            DataType::Float64,
            DataType::Date,
            DataType::Timestamp,
            DataType::Char(3),
            DataType::Varchar(Some(7)),
            DataType::Varchar(None),
            DataType::Text,
        ] {
            assert_eq!(parse_type(&type_code(ty)).unwrap(), ty);
        }
        assert!(parse_type("numeric(x,2)").is_err() && parse_type("char(").is_err());
    }

    #[test]
    fn chunks_cut_at_characters() {
        let s = "aä".repeat(3000);
        let parts = chunks(&s, 4096);
        assert!(parts.iter().all(|p| p.len() <= 4096));
        assert_eq!(parts.concat(), s);
    }
}
