//! Building an index from its table, the indexes constraints imply, and the
//! unique check (`mod.rs` has the protocol).
//!
//! ```text
//!  CREATE INDEX: every VID ─► every version in its chain ─► entry ─► sort ─► put_many
//!       unique: the versions from the newest to the newest committed one,
//!               non-NULL keys, one per VID ─► sort ─► a repeat is 23505
//! ```
//!
//! A build indexes every version, not only those a snapshot sees: an older
//! snapshot or a transaction still running may read any of them.

use std::sync::Arc;

use ndpdb_format::ndp::Snapshot;
use ndpdb_storage::Table;
use ndpdb_txn::Database;

use super::IndexStore;
use super::keys::{IndexKeys, KeyRange};
use super::read::versions;
use crate::catalog::{IndexDef, TableDef};
use crate::error::{Result, SqlError, SqlState};
use crate::store::mapping::from_storage;
use crate::store::write::show;

/// The indexes of a table's PRIMARY KEY and UNIQUE constraints, named as
/// PostgreSQL names them (`t_pkey`, `t_a_b_key`).
pub fn constraint_indexes(def: &TableDef) -> Vec<Arc<IndexDef>> {
    let mut out = vec![];
    let mk = |name: String, columns: &Vec<usize>| {
        Arc::new(IndexDef { name, table: def.name.clone(), columns: columns.clone(), unique: true })
    };
    if let Some(pk) = &def.primary_key {
        out.push(mk(format!("{}_pkey", def.name), pk));
    }
    for u in &def.unique {
        let cols: Vec<&str> = u.iter().filter_map(|&c| def.columns.get(c)).map(|c| c.name.as_str()).collect();
        out.push(mk(format!("{}_{}_key", def.name, cols.join("_")), u));
    }
    out
}

/// DROP INDEX of a constraint's index: refused as PostgreSQL does (2BP01).
pub fn refuse_constraint_drop(def: &TableDef, name: &str) -> Result<()> {
    if constraint_indexes(def).iter().any(|i| i.name == name) {
        return Err(SqlError::new(
            SqlState("2BP01"),
            format!("cannot drop index {name} because constraint {name} on table {} requires it", def.name),
        )
        .with_hint(format!("You can drop constraint {name} on table {} instead.", def.name)));
    }
    Ok(())
}

/// The VID of a tuple other than `vid` that holds `key` (prefix ‖ key
/// columns) in a version not older than the newest one `fresh` sees.
pub fn conflict(
    ix: &IndexStore,
    db: &Database,
    table: &Table,
    def: &TableDef,
    keys: &IndexKeys,
    (key, vid): (&[u8], u64),
    fresh: &Snapshot,
) -> Result<Option<u64>> {
    for other in ix.vids(&KeyRange::exact(key))? {
        if other == vid {
            continue;
        }
        for v in versions(db, table, other, |v| fresh.visible(v.create_ts))? {
            if let Some(values) = &v.values
                && keys.stored_key(def, values)?.0 == key
            {
                return Ok(Some(other));
            }
        }
    }
    Ok(None)
}

/// 23505 for a duplicate of `key_row`'s key in the unique index `name`.
pub fn duplicate(def: &TableDef, name: &str, columns: &[usize], row: &[ndpdb_format::schema::Value]) -> SqlError {
    let (names, values) = key_text(def, columns, row);
    SqlError::new(SqlState::UNIQUE_VIOLATION, format!("duplicate key value violates unique constraint \"{name}\""))
        .with_detail(format!("Key ({names})=({values}) already exists."))
}

fn key_text(def: &TableDef, columns: &[usize], row: &[ndpdb_format::schema::Value]) -> (String, String) {
    let names: Vec<&str> = columns.iter().filter_map(|&c| def.columns.get(c)).map(|c| c.name.as_str()).collect();
    let values: Vec<String> = columns
        .iter()
        .filter_map(|&c| Some((row.get(c)?, def.columns.get(c)?.ty)))
        .map(|(v, ty)| from_storage(v, ty).map_or_else(|_| format!("{v:?}"), |v| show(&v)))
        .collect();
    (names.join(", "), values.join(", "))
}

/// Builds `index` of `def` (stored as `table`) from every version of every
/// tuple; a unique index first checks that no two live tuples share a
/// non-NULL key (23505 naming one).
pub fn build(
    ix: &IndexStore,
    db: &Database,
    def: &TableDef,
    table: &Table,
    index: &IndexDef,
    fresh: &Snapshot,
) -> Result<u64> {
    let keys = IndexKeys::of(def, index)?;
    let mut entries = Vec::new();
    let mut live: Vec<(Vec<u8>, u64)> = Vec::new();
    for vid in 0..table.vids() {
        let chain = versions(db, table, vid, |_| false)?;
        let mut newest_seen = false;
        let mut vid_keys: Vec<Vec<u8>> = vec![];
        for v in &chain {
            let Some(values) = &v.values else {
                newest_seen |= fresh.visible(v.create_ts);
                continue;
            };
            let (key, has_null) = keys.stored_key(def, values)?;
            if index.unique && !newest_seen && !has_null && !vid_keys.contains(&key) {
                vid_keys.push(key.clone());
            }
            newest_seen |= fresh.visible(v.create_ts);
            let mut e = key;
            e.extend_from_slice(&vid.to_be_bytes());
            entries.push(e);
        }
        live.extend(vid_keys.into_iter().map(|k| (k, vid)));
    }
    if index.unique {
        live.sort();
        if let Some(w) = live.windows(2).find(|w| w[0].0 == w[1].0) {
            let row = versions(db, table, w[0].1, |v| fresh.visible(v.create_ts))?
                .into_iter()
                .find_map(|v| v.values)
                .unwrap_or_default();
            let (names, values) = key_text(def, &index.columns, &row);
            return Err(SqlError::new(
                SqlState::UNIQUE_VIOLATION,
                format!("could not create unique index \"{}\"", index.name),
            )
            .with_detail(format!("Key ({names})=({values}) is duplicated.")));
        }
    }
    entries.sort();
    entries.dedup();
    ix.put_many(&entries)
}
