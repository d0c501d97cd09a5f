//! Reading through an index: from entries to the versions a snapshot sees.
//!
//! ```text
//!  KeyRange ─► IndexStore::vids (key order; a VID once) ─► per VID: head ─► chain walk
//!     ─► the first version the snapshot sees (tombstone: none) ─► projected row ─► batch
//! ```
//!
//! Nothing here checks the key: the caller's filter or join condition does
//! (`mod.rs`, "MVCC").
//!
//! **Serializable reads.** SSI here has tuple marks and table marks, no
//! predicate locks on key ranges, so an index scan marks the whole table
//! read, as a sequential scan does, and is as safe as one. One case is
//! narrower ([`note_key_read`]): a lookup of the whole key of a *unique*
//! index that finds a row with that key whose newest version the snapshot
//! sees, live. Then only the tuples it looked at are marked. No other
//! tuple can take the key while that row is live (the unique check refuses
//! it), so every write that could change the lookup's answer writes one of
//! the marked tuples: an update or delete of the row, or of a tuple whose
//! stale entry the lookup passed. A lookup that finds no such row (none,
//! a dead one, or one a concurrent transaction changed) marks the table,
//! which covers a later insert of the key. This is what makes a
//! primary-key read conflict only with writers of that row, as in
//! PostgreSQL with an index scan.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::RecordBatch;
use ndpdb_device::QueuePair;
use ndpdb_format::ndp::Snapshot;
use ndpdb_format::schema as fs;
use ndpdb_storage::{CHAIN_MAX, StoreError, Table};
use ndpdb_txn::{Database, Isolation};
use parking_lot::Mutex;

use crate::error::Result;
use crate::exec::{BATCH_ROWS, ScanCounters};
use crate::store::mapping::BatchBuilder;
use crate::store::txn::{SqlTxn, store_error};

/// One version of a tuple: its creator's timestamp and its values (None: a
/// tombstone).
pub struct Version {
    pub create_ts: u64,
    pub values: Option<Vec<fs::Value>>,
}

/// The versions of `vid`, newest first, until `stop` says a version is the
/// last one wanted (it is included).
pub fn versions(db: &Database, table: &Table, vid: u64, stop: impl FnMut(&Version) -> bool) -> Result<Vec<Version>> {
    versions_via(db, table, vid, stop, None)
}

/// [`versions`], pages the store's cache does not hold read through `qp`
/// when given (the caller's queue pair counts them).
pub fn versions_via(
    db: &Database,
    table: &Table,
    vid: u64,
    mut stop: impl FnMut(&Version) -> bool,
    mut qp: Option<&mut QueuePair>,
) -> Result<Vec<Version>> {
    let Some(head) = table.head(vid) else { return Ok(vec![]) };
    let store = db.store();
    let (mut rid, mut out) = (head.rid, vec![]);
    while !rid.is_none() {
        if out.len() > CHAIN_MAX {
            return Err(store_error(StoreError::Corrupt(format!("VID {vid}: version chain does not end"))));
        }
        let (h, data) = store.read_version_via(table, rid, qp.as_deref_mut()).map_err(store_error)?;
        let values = if h.tombstone { None } else { Some(store.decode_values(table, &data).map_err(store_error)?) };
        let v = Version { create_ts: h.create_ts, values };
        let last = stop(&v);
        out.push(v);
        if last {
            break;
        }
        rid = h.prev;
    }
    Ok(out)
}

/// The values of the version of `vid` that `snapshot` sees; None if it sees
/// none or a tombstone.
pub fn visible(db: &Database, table: &Table, snapshot: &Snapshot, vid: u64) -> Result<Option<Vec<fs::Value>>> {
    visible_via(db, table, snapshot, vid, None)
}

/// [`visible`], pages read through `qp` when given.
pub fn visible_via(
    db: &Database,
    table: &Table,
    snapshot: &Snapshot,
    vid: u64,
    qp: Option<&mut QueuePair>,
) -> Result<Option<Vec<fs::Value>>> {
    let mut chain = versions_via(db, table, vid, |v| snapshot.visible(v.create_ts), qp)?;
    Ok(match chain.pop() {
        Some(v) if snapshot.visible(v.create_ts) => v.values,
        _ => None,
    })
}

/// `vids` without repeats, in their first order (a tuple whose key changed
/// within the range has two entries there).
pub fn distinct(vids: Vec<u64>) -> Vec<u64> {
    let mut seen = HashSet::with_capacity(vids.len());
    vids.into_iter().filter(|v| seen.insert(*v)).collect()
}

/// Marks the read of a unique key `key` through its entries' `vids` under
/// serializable isolation (module doc, "Serializable reads"): the tuples,
/// when one holds the key live in its newest version and the snapshot sees
/// it; else the table. `key_of` gives a version's key.
pub fn note_key_read(
    txn: &SqlTxn,
    table: &Arc<Table>,
    vids: &[u64],
    key: &[u8],
    key_of: impl Fn(&[fs::Value]) -> Result<Vec<u8>>,
) -> Result<()> {
    if txn.with(|t| Ok(t.isolation()))? != Isolation::Serializable {
        return Ok(());
    }
    let snapshot = txn.statement_snapshot()?;
    let db = txn.database();
    let mut held = false;
    for &vid in vids {
        let newest = versions(db, table, vid, |_| true)?.pop();
        if let Some(Version { create_ts, values: Some(values) }) = newest
            && snapshot.visible(create_ts)
            && key_of(&values)? == key
        {
            held = true;
            break;
        }
    }
    if !held {
        return note_read(txn, table);
    }
    txn.with(|t| {
        vids.iter().for_each(|&vid| t.note_tuple_read(table, vid));
        Ok(())
    })
}

/// Marks `table` read by a serializable transaction (module doc).
pub fn note_read(txn: &SqlTxn, table: &Arc<Table>) -> Result<()> {
    if txn.with(|t| Ok(t.isolation()))? == Isolation::Serializable {
        txn.with(|t| t.host_scan(table))?;
    }
    Ok(())
}

/// An index scan's rows: the VIDs of the entries, BATCH_ROWS per batch,
/// each batch's heap pages read together first (`prefetch_versions`)
/// through the scan's own queue pair, whose counters are the scan's.
pub struct IndexBatches {
    pub db: Arc<Database>,
    pub table: Arc<Table>,
    pub snapshot: Snapshot,
    pub vids: std::vec::IntoIter<u64>,
    pub projection: Vec<usize>,
    pub builder: BatchBuilder,
    pub counters: Arc<Mutex<ScanCounters>>,
    pub qp: QueuePair,
}

impl IndexBatches {
    fn batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut row = Vec::with_capacity(self.projection.len());
        while self.builder.len() < BATCH_ROWS {
            let vids: Vec<u64> = self.vids.by_ref().take(BATCH_ROWS - self.builder.len()).collect();
            if vids.is_empty() {
                break;
            }
            let heads = vids.iter().filter_map(|&vid| self.table.head(vid)).map(|h| h.rid);
            self.db.store().prefetch_versions(&self.table, heads, &mut self.qp).map_err(store_error)?;
            for &vid in &vids {
                let found = visible_via(&self.db, &self.table, &self.snapshot, vid, Some(&mut self.qp))?;
                let Some(values) = found else { continue };
                row.clear();
                row.extend(self.projection.iter().map(|&c| values.get(c).cloned().unwrap_or(fs::Value::Null)));
                self.builder.push(vid, &row)?;
            }
            self.add_counters(vids.len() as u64);
        }
        if self.builder.is_empty() { Ok(None) } else { self.builder.finish().map(Some) }
    }

    /// The scan's counters: its queue pair's so far, and `examined` more
    /// rows (an index scan runs on one thread: its modelled time is its
    /// queue pair's waits).
    fn add_counters(&self, examined: u64) {
        let mut t = self.counters.lock();
        let rows_examined = t.rows_examined + examined;
        *t = ScanCounters { rows_examined, ..queue_pair_counters(&self.qp, 0).0 };
    }
}

impl Iterator for IndexBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.batch() {
            Ok(b) => b.map(Ok),
            Err(e) => {
                self.vids = Vec::new().into_iter();
                Some(Err(e))
            }
        }
    }
}

/// What the point reads through `qp` cost: its counters, with `examined`
/// rows, and the span of its commands on the model clock.
pub fn queue_pair_counters(qp: &QueuePair, examined: u64) -> (ScanCounters, Option<(u64, u64)>) {
    let c = qp.counters();
    let counters = ScanCounters {
        link_bytes_to_host: c.link_bytes_to_host,
        link_bytes_to_device: c.link_bytes_to_device,
        medium_bytes_read: c.medium_bytes_read,
        pe_busy_ps: c.pe_busy_ps.iter().sum(),
        modelled_ps: qp.waited_ps(),
        rows_examined: examined,
        runtime_filtered: None,
        zone_blocks: None,
    };
    (counters, qp.waited_span_ps())
}
