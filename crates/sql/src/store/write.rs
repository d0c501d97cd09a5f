//! Writing rows: INSERT (one row or many), UPDATE and DELETE by VID, with
//! NOT NULL, type, length and key checks, in the caller's transaction.
//!
//! PRIMARY KEY and UNIQUE are enforced by in-memory key sets, one per
//! constraint (B+-tree indexes do not check keys yet). A table's sets are
//! built at its first write after the database opens, from a scan of its
//! committed rows; then every write goes through them:
//!
//! ```text
//!  key → (VID, deleted by)      insert k:  k absent, or deleted by me → reserve k
//!                               delete:    mark k deleted by me
//!  at commit: drop marked keys   at abort:  undo my reservations and marks
//! ```
//!
//! A key reserved by a transaction that has not ended is taken: a second
//! insert of it fails at once with 23505, where PostgreSQL waits for the
//! first to end and fails only if it commits. A key deleted by an open
//! transaction stays taken for others until that one commits. NULL keys
//! are never equal (PostgreSQL's rule). Writes that bypass this module (the
//! embedded API writing the store directly) are not seen.

use std::collections::HashMap;
use std::sync::Arc;

use ndpdb_format::schema::{self as fs, ColumnType};
use ndpdb_storage::Table;
use ndpdb_txn::{Isolation, ReadMode};
use parking_lot::Mutex;

use super::mapping::{from_storage, storage_type, to_storage};
use super::source::storage_table;
use super::txn::SqlTxn;
use crate::catalog::TableDef;
use crate::error::{Result, SqlError, SqlState};
use crate::types::Value;

/// (VID holding the key, transaction that deleted it and has not ended).
type KeyMap = HashMap<Vec<fs::Value>, (u64, Option<u64>)>;

/// One PRIMARY KEY or UNIQUE constraint's key set.
struct KeySet {
    name: String,
    columns: Vec<usize>,
    keys: Arc<Mutex<KeyMap>>,
}

/// The key sets of every table written since the database opened.
#[derive(Default)]
pub struct Writer {
    tables: Mutex<HashMap<u32, Arc<Vec<KeySet>>>>,
}

/// A table being written: its storage table, storage types and key sets.
struct Target {
    table: Arc<Table>,
    types: Vec<ColumnType>,
    sets: Arc<Vec<KeySet>>,
}

impl Writer {
    pub fn new() -> Writer {
        Writer::default()
    }

    fn target(&self, txn: &SqlTxn, def: &TableDef) -> Result<Target> {
        let table = storage_table(txn, def)?;
        let types = def.columns.iter().map(storage_type).collect::<Result<Vec<_>>>()?;
        let mut tables = self.tables.lock();
        let sets = match tables.get(&def.id) {
            Some(s) => s.clone(),
            None => {
                let s = Arc::new(build_sets(txn, def, &table)?);
                tables.insert(def.id, s.clone());
                s
            }
        };
        Ok(Target { table, types, sets })
    }

    /// INSERT of one row (values in table order). Returns its VID.
    pub fn insert(&self, txn: &SqlTxn, def: &TableDef, row: &[Value]) -> Result<u64> {
        let t = self.target(txn, def)?;
        insert_row(txn, def, &t, row)
    }

    /// INSERT of many rows (COPY, INSERT .. SELECT); returns how many.
    pub fn insert_many(&self, txn: &SqlTxn, def: &TableDef, rows: impl IntoIterator<Item = Vec<Value>>) -> Result<u64> {
        let t = self.target(txn, def)?;
        let mut n = 0;
        for row in rows {
            insert_row(txn, def, &t, &row)?;
            n += 1;
        }
        Ok(n)
    }

    /// UPDATE of the tuple `vid` to `row` (every column, table order).
    pub fn update(&self, txn: &SqlTxn, def: &TableDef, vid: u64, row: &[Value]) -> Result<()> {
        let t = self.target(txn, def)?;
        let stored = encode(def, &t, row)?;
        let old = if t.sets.is_empty() { None } else { read(txn, &t.table, vid)? };
        for set in t.sets.iter() {
            let new_key = key(&stored, &set.columns);
            let old_key = old.as_ref().and_then(|o| key(o, &set.columns));
            if new_key != old_key {
                if let Some(k) = new_key {
                    reserve(txn, def, set, k, vid)?;
                }
                if let Some(k) = old_key {
                    mark_deleted(txn, set, k, vid)?;
                }
            }
        }
        let table = &t.table;
        txn.with(|x| x.update(table, vid, &stored))
    }

    /// DELETE of the tuple `vid`.
    pub fn delete(&self, txn: &SqlTxn, def: &TableDef, vid: u64) -> Result<()> {
        let t = self.target(txn, def)?;
        if !t.sets.is_empty()
            && let Some(old) = read(txn, &t.table, vid)?
        {
            for set in t.sets.iter() {
                if let Some(k) = key(&old, &set.columns) {
                    mark_deleted(txn, set, k, vid)?;
                }
            }
        }
        let table = &t.table;
        txn.with(|x| x.delete(table, vid))
    }
}

fn insert_row(txn: &SqlTxn, def: &TableDef, t: &Target, row: &[Value]) -> Result<u64> {
    let stored = encode(def, t, row)?;
    let table = &t.table;
    // The VID comes from the store; keys are reserved for it right after
    // (a failed reservation fails the statement, and the session rolls the
    // transaction back, taking the row with it).
    let vid = txn.with(|x| x.insert(table, &stored))?;
    for set in t.sets.iter() {
        if let Some(k) = key(&stored, &set.columns) {
            reserve(txn, def, set, k, vid)?;
        }
    }
    Ok(vid)
}

/// Checks NOT NULL and converts the row to stored values.
fn encode(def: &TableDef, t: &Target, row: &[Value]) -> Result<Vec<fs::Value>> {
    if row.len() != def.columns.len() {
        return Err(SqlError::internal(format!(
            "{} values for the {} columns of {}",
            row.len(),
            def.columns.len(),
            def.name
        )));
    }
    let mut out = Vec::with_capacity(row.len());
    for ((v, c), &ty) in row.iter().zip(&def.columns).zip(&t.types) {
        if v.is_null() && c.not_null {
            return Err(SqlError::new(
                SqlState::NOT_NULL_VIOLATION,
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    c.name, def.name
                ),
            )
            .with_detail(format!("Failing row contains ({}).", row.iter().map(show).collect::<Vec<_>>().join(", "))));
        }
        out.push(to_storage(v, c, ty)?);
    }
    Ok(out)
}

fn read(txn: &SqlTxn, table: &Arc<Table>, vid: u64) -> Result<Option<Vec<fs::Value>>> {
    txn.with(|x| x.get(table, vid))
}

/// The key of `row` on `columns`; None if a key column is NULL.
fn key(row: &[fs::Value], columns: &[usize]) -> Option<Vec<fs::Value>> {
    columns.iter().map(|&c| row.get(c).filter(|v| **v != fs::Value::Null).cloned()).collect()
}

/// Takes `k` for `vid`, or fails with 23505.
fn reserve(txn: &SqlTxn, def: &TableDef, set: &KeySet, k: Vec<fs::Value>, vid: u64) -> Result<()> {
    let me = txn.id().unwrap_or(0);
    let previous = {
        let mut keys = set.keys.lock();
        match keys.get(&k) {
            Some(&(_, Some(by))) if by == me => {}
            Some(&(holder, _)) if holder != vid => {
                drop(keys);
                return Err(duplicate(def, set, &k));
            }
            _ => {}
        }
        keys.insert(k.clone(), (vid, None))
    };
    let keys = set.keys.clone();
    txn.on_end(Box::new(move |committed| {
        if !committed {
            let mut keys = keys.lock();
            if keys.get(&k).is_some_and(|e| e.0 == vid) {
                match previous {
                    Some((v, _)) => keys.insert(k, (v, None)),
                    None => keys.remove(&k),
                };
            }
        }
    }));
    Ok(())
}

/// Marks `k` (held by `vid`) deleted by this transaction.
fn mark_deleted(txn: &SqlTxn, set: &KeySet, k: Vec<fs::Value>, vid: u64) -> Result<()> {
    let me = txn.id().unwrap_or(0);
    {
        let mut keys = set.keys.lock();
        match keys.get_mut(&k) {
            Some(e) if e.0 == vid => e.1 = Some(me),
            _ => return Ok(()),
        }
    }
    let keys = set.keys.clone();
    txn.on_end(Box::new(move |committed| {
        let mut keys = keys.lock();
        if let Some(e) = keys.get_mut(&k)
            && e.0 == vid
            && e.1 == Some(me)
        {
            if committed {
                keys.remove(&k);
            } else {
                e.1 = None;
            }
        }
    }));
    Ok(())
}

fn duplicate(def: &TableDef, set: &KeySet, k: &[fs::Value]) -> SqlError {
    let names: Vec<&str> = set.columns.iter().map(|&c| def.columns[c].name.as_str()).collect();
    let values: Vec<String> = set
        .columns
        .iter()
        .zip(k)
        .map(|(&c, v)| from_storage(v, def.columns[c].ty).map_or_else(|_| format!("{v:?}"), |v| show(&v)))
        .collect();
    SqlError::new(
        SqlState::UNIQUE_VIOLATION,
        format!("duplicate key value violates unique constraint \"{}\"", set.name),
    )
    .with_detail(format!("Key ({})=({}) already exists.", names.join(", "), values.join(", ")))
}

/// The key sets of a table, from its committed rows.
fn build_sets(txn: &SqlTxn, def: &TableDef, table: &Arc<Table>) -> Result<Vec<KeySet>> {
    let mut sets = vec![];
    if let Some(pk) = &def.primary_key {
        sets.push((format!("{}_pkey", def.name), pk.clone()));
    }
    for u in &def.unique {
        let cols: Vec<&str> = u.iter().map(|&c| def.columns[c].name.as_str()).collect();
        sets.push((format!("{}_{}_key", def.name, cols.join("_")), u.clone()));
    }
    if sets.is_empty() {
        return Ok(vec![]);
    }
    let reader = SqlTxn::begin(txn.database().clone(), Isolation::ReadCommitted);
    let snapshot = reader.fresh_snapshot()?;
    let all: Vec<u16> = (0..def.columns.len() as u16).collect();
    let rows = reader.with(|x| x.rows_at(table, &snapshot, &all, None, ReadMode::Host { workers: 1 }))?;
    reader.commit()?;
    Ok(sets
        .into_iter()
        .map(|(name, columns)| {
            let keys: KeyMap =
                rows.rows.iter().filter_map(|(vid, r)| Some((key(r, &columns)?, (*vid, None)))).collect();
            KeySet { name, columns, keys: Arc::new(Mutex::new(keys)) }
        })
        .collect())
}

/// A value as PostgreSQL prints it in a message's detail.
pub fn show(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => if *b { "t" } else { "f" }.into(),
        Value::Int16(x) => x.to_string(),
        Value::Int32(x) => x.to_string(),
        Value::Int64(x) => x.to_string(),
        Value::Numeric { value, scale } => {
            let d = 10u128.pow(u32::from(*scale));
            let sign = if *value < 0 { "-" } else { "" };
            let (i, f) = (value.unsigned_abs() / d, value.unsigned_abs() % d);
            if *scale == 0 { format!("{sign}{i}") } else { format!("{sign}{i}.{f:0w$}", w = usize::from(*scale)) }
        }
        Value::Float64(f) => f.to_string(),
        Value::Date(d) => fs::format_timestamp(i64::from(*d) * 86_400_000_000)[..10].to_owned(),
        Value::Timestamp(t) => fs::format_timestamp(*t),
        Value::Interval(i) => format!("{} mons {} days {} us", i.months, i.days, i.micros),
        Value::Text(s) => s.clone(),
    }
}
