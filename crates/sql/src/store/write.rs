//! Writing rows: INSERT (one row or many), UPDATE and DELETE by VID, with
//! NOT NULL, type, length and key checks, in the caller's transaction, and
//! the table's indexes kept up to date (`store/index/mod.rs`).
//!
//! ```text
//!  insert:  tuple ─► VID ─► per index: key ─► unique? check (stripe lock) ─► put (key, VID)
//!  update:  per index whose key changed: the same with the new key (the old entry stays)
//!  delete:  the tuple only (its entries stay; readers re-check)
//!  first write of a transaction: sync the index log before its commit
//!                                record; at abort, delete the entries it made
//! ```
//!
//! PRIMARY KEY and UNIQUE constraints are unique indexes (`t_pkey`,
//! `t_a_key`). A key taken by a transaction that has not ended (its
//! insert, or its delete of the tuple holding it) fails at once with
//! 23505, where PostgreSQL waits for the other transaction to end and
//! fails only if it commits. NULL keys are never equal (PostgreSQL's
//! rule). Writes that bypass this module (the embedded API writing the
//! store directly) are not indexed.

use std::collections::HashMap;
use std::sync::Arc;

use ndpdb_format::schema::{self as fs, ColumnType};
use ndpdb_storage::Table;
use parking_lot::Mutex;

use super::index::build::{conflict, duplicate};
use super::index::{ABORT_UNDO_MAX, IndexKeys, IndexStore};
use super::mapping::{storage_type, to_storage};
use super::source::storage_table;
use super::txn::SqlTxn;
use crate::catalog::{IndexDef, TableDef};
use crate::error::{Result, SqlError, SqlState};
use crate::types::Value;

/// Entries a running transaction made, deleted if it aborts.
type Undo = Arc<Mutex<Vec<Vec<u8>>>>;

/// Maintains the indexes of every table written.
pub struct Writer {
    indexes: Arc<IndexStore>,
    /// Transaction id → the entries it made (present from its first
    /// index write to its end).
    undo: Arc<Mutex<HashMap<u64, Undo>>>,
}

/// One index to maintain: its layout, and for a unique one the name its
/// errors give.
struct Maintained {
    keys: IndexKeys,
    unique: Option<String>,
}

/// A table being written: its storage table, storage types and indexes.
struct Target {
    table: Arc<Table>,
    types: Vec<ColumnType>,
    indexes: Vec<Maintained>,
}

impl Writer {
    pub fn new(indexes: Arc<IndexStore>) -> Writer {
        Writer { indexes, undo: Arc::default() }
    }

    pub fn indexes(&self) -> &Arc<IndexStore> {
        &self.indexes
    }

    fn target(&self, txn: &SqlTxn, def: &TableDef) -> Result<Target> {
        let table = storage_table(txn, def)?;
        let types = def.columns.iter().map(storage_type).collect::<Result<Vec<_>>>()?;
        // Indexes on the same columns share their entries: maintain them
        // once, checked if any of them is unique.
        let mut indexes: Vec<Maintained> = vec![];
        for i in &def.indexes {
            let unique = i.unique.then(|| i.name.clone());
            match indexes.iter_mut().find(|m| m.keys.columns == i.columns) {
                Some(m) => m.unique = m.unique.take().or(unique),
                None => indexes.push(Maintained { keys: IndexKeys::of(def, i)?, unique }),
            }
        }
        Ok(Target { table, types, indexes })
    }

    /// The entries `txn` made so far; the first call registers its hooks:
    /// sync before the commit record, delete the entries if it aborts.
    fn undo_of(&self, txn: &SqlTxn) -> Result<Undo> {
        let id = txn.id().ok_or_else(|| crate::store::txn::txn_error(ndpdb_txn::TxnError::Ended))?;
        let mut map = self.undo.lock();
        if let Some(u) = map.get(&id) {
            return Ok(u.clone());
        }
        let undo: Undo = Arc::default();
        map.insert(id, undo.clone());
        drop(map);
        let ix = self.indexes.clone();
        txn.before_commit(Box::new(move || ix.sync()));
        let (ix, all, mine) = (self.indexes.clone(), self.undo.clone(), undo.clone());
        txn.on_end(Box::new(move |committed| {
            all.lock().remove(&id);
            if !committed {
                // Best effort: an entry left behind is garbage, never wrong.
                for e in mine.lock().iter() {
                    let _ = ix.delete(e);
                }
            }
        }));
        Ok(undo)
    }

    /// INSERT of one row (values in table order). Returns its VID.
    pub fn insert(&self, txn: &SqlTxn, def: &TableDef, row: &[Value]) -> Result<u64> {
        let t = self.target(txn, def)?;
        self.insert_row(txn, def, &t, row)
    }

    /// INSERT of many rows (COPY, INSERT .. SELECT); returns how many.
    pub fn insert_many(&self, txn: &SqlTxn, def: &TableDef, rows: impl IntoIterator<Item = Vec<Value>>) -> Result<u64> {
        let t = self.target(txn, def)?;
        let mut n = 0;
        for row in rows {
            self.insert_row(txn, def, &t, &row)?;
            n += 1;
        }
        Ok(n)
    }

    /// INSERT .. ON CONFLICT DO NOTHING: a row whose key is already in a
    /// unique index (`arbiter`: the one on those columns; None: any) is
    /// skipped; returns how many were inserted. The check reads a fresh
    /// snapshot (this transaction's rows and committed ones) before the
    /// row is written; a concurrent transaction inserting the same key
    /// between the check and the write still gets 23505 (PostgreSQL's
    /// speculative insertion would wait and skip).
    pub fn insert_many_skipping_conflicts(
        &self,
        txn: &SqlTxn,
        def: &TableDef,
        rows: impl IntoIterator<Item = Vec<Value>>,
        arbiter: Option<&[usize]>,
    ) -> Result<u64> {
        let t = self.target(txn, def)?;
        let mut n = 0;
        for row in rows {
            let stored = encode(def, &t, &row)?;
            if self.has_conflict(txn, def, &t, &stored, arbiter)? {
                continue;
            }
            self.insert_row(txn, def, &t, &row)?;
            n += 1;
        }
        Ok(n)
    }

    fn has_conflict(
        &self,
        txn: &SqlTxn,
        def: &TableDef,
        t: &Target,
        stored: &[fs::Value],
        arbiter: Option<&[usize]>,
    ) -> Result<bool> {
        for m in t.indexes.iter().filter(|m| m.unique.is_some()) {
            if arbiter.is_some_and(|a| a != m.keys.columns.as_slice()) {
                continue;
            }
            let (key, has_null) = m.keys.stored_key(def, stored)?;
            if has_null {
                continue;
            }
            let fresh = txn.fresh_snapshot()?;
            if conflict(&self.indexes, txn.database(), &t.table, def, &m.keys, (&key, u64::MAX), &fresh)?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// UPDATE of the tuple `vid` to `row` (every column, table order).
    pub fn update(&self, txn: &SqlTxn, def: &TableDef, vid: u64, row: &[Value]) -> Result<()> {
        let t = self.target(txn, def)?;
        let stored = encode(def, &t, row)?;
        let old = if t.indexes.is_empty() { None } else { txn.with(|x| x.get(&t.table, vid))? };
        let table = &t.table;
        txn.with(|x| x.update(table, vid, &stored))?;
        for m in &t.indexes {
            let new_key = m.keys.stored_key(def, &stored)?;
            let old_key = old.as_ref().map(|o| m.keys.stored_key(def, o)).transpose()?;
            if old_key.as_ref() != Some(&new_key) {
                self.add_entry(txn, def, &t, m, new_key, vid, &stored, false)?;
            }
        }
        Ok(())
    }

    /// DELETE of the tuple `vid` (its index entries stay: module doc).
    pub fn delete(&self, txn: &SqlTxn, def: &TableDef, vid: u64) -> Result<()> {
        let table = storage_table(txn, def)?;
        txn.with(|x| x.delete(&table, vid))
    }

    fn insert_row(&self, txn: &SqlTxn, def: &TableDef, t: &Target, row: &[Value]) -> Result<u64> {
        let stored = encode(def, t, row)?;
        let table = &t.table;
        // The VID comes from the store; entries follow it (a failed unique
        // check fails the statement, and the session rolls the transaction
        // back, taking the row and the entries with it).
        let vid = txn.with(|x| x.insert(table, &stored))?;
        for m in &t.indexes {
            let key = m.keys.stored_key(def, &stored)?;
            self.add_entry(txn, def, t, m, key, vid, &stored, true)?;
        }
        Ok(vid)
    }

    /// Puts (key, vid) after a unique index's check; `new_vid`: the VID is
    /// new, so the entry cannot exist yet.
    #[allow(clippy::too_many_arguments)]
    fn add_entry(
        &self,
        txn: &SqlTxn,
        def: &TableDef,
        t: &Target,
        m: &Maintained,
        (key, has_null): (Vec<u8>, bool),
        vid: u64,
        stored: &[fs::Value],
        new_vid: bool,
    ) -> Result<()> {
        let undo = self.undo_of(txn)?;
        let mut entry = key.clone();
        entry.extend_from_slice(&vid.to_be_bytes());
        let _stripe = match (&m.unique, has_null) {
            (Some(name), false) => {
                let guard = self.indexes.stripe(&key);
                let fresh = txn.fresh_snapshot()?;
                let db = txn.database();
                if conflict(&self.indexes, db, &t.table, def, &m.keys, (&key, vid), &fresh)?.is_some() {
                    return Err(duplicate(def, name, &m.keys.columns, stored));
                }
                Some(guard)
            }
            _ => None,
        };
        if !new_vid && self.indexes.contains(&entry)? {
            return Ok(());
        }
        self.indexes.put(&entry)?;
        let mut undo = undo.lock();
        if undo.len() < ABORT_UNDO_MAX {
            undo.push(entry);
        }
        Ok(())
    }

    /// CREATE INDEX on a table that may hold rows: builds its entries (a
    /// unique index fails with 23505 on a duplicate key). If the transaction
    /// aborts and no other index shares the entries, they are deleted.
    pub fn create_index(&self, txn: &SqlTxn, def: &TableDef, index: &IndexDef) -> Result<()> {
        let table = storage_table(txn, def)?;
        let fresh = txn.fresh_snapshot()?;
        let shared = def.indexes.iter().any(|i| i.name != index.name && i.columns == index.columns);
        let ix = self.indexes.clone();
        let range = IndexKeys::of(def, index)?.all();
        txn.before_commit(Box::new(move || ix.sync()));
        if !shared {
            let ix = self.indexes.clone();
            let range = range.clone();
            txn.on_end(Box::new(move |committed| {
                if !committed {
                    let _ = ix.delete_range(&range);
                }
            }));
        }
        super::index::build::build(&self.indexes, txn.database(), def, &table, index, &fresh)?;
        Ok(())
    }

    /// DROP INDEX: the entries go when the transaction commits, unless
    /// another index of the table shares them.
    pub fn drop_index(&self, txn: &SqlTxn, def: &TableDef, index: &IndexDef) -> Result<()> {
        if def.indexes.iter().any(|i| i.name != index.name && i.columns == index.columns) {
            return Ok(());
        }
        let range = IndexKeys::of(def, index)?.all();
        self.delete_at_commit(txn, range);
        Ok(())
    }

    /// DROP TABLE: every entry of its indexes goes when the transaction
    /// commits.
    pub fn drop_table(&self, txn: &SqlTxn, def: &TableDef) {
        let prefix = def.id.to_be_bytes().to_vec();
        let end = super::index::keys::successor(&prefix);
        self.delete_at_commit(txn, super::index::KeyRange { start: prefix, end });
    }

    fn delete_at_commit(&self, txn: &SqlTxn, range: super::index::KeyRange) {
        let ix = self.indexes.clone();
        txn.on_end(Box::new(move |committed| {
            if committed {
                // Left behind on an error: garbage, never wrong.
                let _ = ix.delete_range(&range);
            }
        }));
    }

    /// Builds every index of `tables` (a new index image at open).
    pub fn build_all(&self, txn: &SqlTxn, tables: &[Arc<TableDef>]) -> Result<()> {
        let fresh = txn.fresh_snapshot()?;
        for def in tables {
            let table = storage_table(txn, def)?;
            let mut done: Vec<&Vec<usize>> = vec![];
            for index in &def.indexes {
                if !done.contains(&&index.columns) {
                    done.push(&index.columns);
                    let plain = IndexDef { unique: false, ..index.as_ref().clone() };
                    super::index::build::build(&self.indexes, txn.database(), def, &table, &plain, &fresh)?;
                }
            }
        }
        self.indexes.sync()
    }
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
