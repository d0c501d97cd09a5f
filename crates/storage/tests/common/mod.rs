//! A store on a small emulated device in a temporary directory, and writes
//! through the store's own API as a transaction layer makes them: each
//! version is appended by a transaction id and made its tuple's head.

#![allow(dead_code)] // each test binary uses a part

use std::path::Path;
use std::sync::Arc;

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::Snapshot;
use ndpdb_format::page::RecordId;
use ndpdb_format::record::VersionHeader;
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, Head, LogOp, NdpScan, OpKind, Store, StoreOptions, Table};

/// The device every test uses: coherent, with PEs (NDP calls and the lock
/// table both work), 8 KiB pages, regions of 8 pages.
pub const PROFILE: &str = "u280-nvm";

pub fn device(dir: &Path, create: bool, mib: u64) -> Device {
    let p = Profile::load(PROFILE).unwrap();
    let o = DeviceOptions::with_clock(ClockKind::Virtual);
    if create { Device::create(dir, p, Some(mib << 20), o).unwrap() } else { Device::open(dir, p, o).unwrap() }
}

/// Small buffers and map deltas, so that a few thousand rows exercise
/// delta-buffer writes and map flushes; a 256 KiB log.
pub fn opts() -> StoreOptions {
    StoreOptions { delta_pages: 2, cache_pages: 16, map_delta_max: 64, log_bytes: 256 << 10, ..StoreOptions::default() }
}

pub fn new_store(dir: &Path, mib: u64) -> Store {
    Store::new(device(dir, true, mib), opts()).unwrap()
}

pub fn reopen(dir: &Path) -> (Store, ndpdb_storage::TxnMeta, ndpdb_storage::Recovery) {
    Store::open_with_report(device(dir, false, 0), opts()).unwrap()
}

/// `k int32 not null, v int64 null`.
pub fn kv_table(store: &Store, name: &str) -> Arc<Table> {
    store
        .create_table(name, vec![Column::new("k", ColumnType::Int32, false), Column::new("v", ColumnType::Int64, true)])
        .unwrap()
}

pub fn row(k: u64, v: Option<i64>) -> Vec<Value> {
    vec![Value::Int(k as i64), v.map_or(Value::Null, Value::Int)]
}

/// Transaction `txn` writes `values` (None: deletes) as `vid`'s newest
/// version on top of its head.
pub fn write(store: &Store, table: &Table, vid: u64, txn: u64, values: Option<&[Value]>) -> RecordId {
    let head = table.head(vid).unwrap();
    let data = match values {
        Some(v) => table.layout.encode(v).unwrap(),
        None => Vec::new(),
    };
    let header =
        VersionHeader { create_ts: txn, prev: head.rid, tombstone: values.is_none(), data_len: data.len() as u16 };
    let rid = store.append_version(table, header, &data).unwrap();
    store.set_head(table, vid, Head { rid, create_ts: txn, tombstone: values.is_none() });
    rid
}

/// Transaction `txn` inserts a tuple; returns its VID.
pub fn insert(store: &Store, table: &Table, txn: u64, values: &[Value]) -> u64 {
    let vid = store.new_vid(table);
    write(store, table, vid, txn, Some(values));
    vid
}

/// Sees every transaction below `xmax` but those in `active`.
pub fn snapshot(xmax: u64, active: &[u64]) -> Snapshot {
    Snapshot { xmax, active: active.to_vec(), own: 0 }
}

pub type Rows = Vec<(u64, Vec<Value>)>;

/// Every row a snapshot after all of `txns` sees, on the host and by NDP
/// (which must agree).
pub fn rows(store: &Store, t: &Table, txns: u64) -> Rows {
    let snap = snapshot(txns + 1, &[]);
    let host = store.host_rows(t, &snap, &[0, 1], None, 2).unwrap().rows;
    let ndp = store
        .ndp_rows(&NdpScan { table: t, snapshot: &snap, predicate: None, pes: 4, freshness: Freshness::Ship }, &[0, 1])
        .unwrap()
        .rows;
    assert_eq!(ndp, host, "NDP and host rows of {}", t.name);
    host
}

/// Transaction `txn` writes `ops` ((VID or None to insert, values or None
/// to delete)) as the transaction layer does, and commits them to the log.
pub fn commit(store: &Store, t: &Table, txn: u64, ops: &[(Option<u64>, Option<Vec<Value>>)]) -> Vec<u64> {
    let mut log = Vec::new();
    let mut vids = Vec::new();
    for (vid, values) in ops {
        let (vid, kind) = match (vid, values) {
            (None, Some(v)) => (insert(store, t, txn, v), OpKind::Insert),
            (Some(vid), Some(v)) => {
                write(store, t, *vid, txn, Some(v));
                (*vid, OpKind::Update)
            }
            (Some(vid), None) => {
                write(store, t, *vid, txn, None);
                (*vid, OpKind::Delete)
            }
            (None, None) => unreachable!("a delete names its tuple"),
        };
        let data = values.as_ref().map_or(Vec::new(), |v| t.layout.encode(v).unwrap());
        log.push(LogOp { kind, table: t.id, vid, data });
        vids.push(vid);
    }
    store.log_commit(txn, &log).unwrap();
    vids
}

pub fn inserts(range: std::ops::Range<u64>) -> Vec<(Option<u64>, Option<Vec<Value>>)> {
    range.map(|k| (None, Some(row(k, Some(k as i64))))).collect()
}
