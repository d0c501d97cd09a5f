//! A full device keeps the next checkpoint's reserve: writes fail with a
//! message that says so while pages are left, the checkpoint then runs on
//! the reserve (taking no more than it), and the data reopens.

mod common;

use common::{kv_table, new_store, reopen, row, snapshot};
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::page::RecordId;
use ndpdb_format::record::VersionHeader;
use ndpdb_storage::{CommittedHeads, Freshness, Head, NdpScan, Store, StoreError, Table, TxnMeta};

/// Inserts rows as transaction 1 until the device refuses one; returns how
/// many it took and the error.
fn fill(store: &Store, t: &Table) -> (u64, StoreError) {
    for k in 0.. {
        let data = t.layout.encode(&row(k, Some(1))).unwrap();
        let header =
            VersionHeader { create_ts: 1, prev: RecordId::NONE, tombstone: false, data_len: data.len() as u16 };
        let vid = store.new_vid(t);
        match store.append_version(t, header, &data) {
            Ok(rid) => store.set_head(t, vid, Head { rid, create_ts: 1, tombstone: false }),
            Err(e) => return (k, e),
        }
    }
    unreachable!()
}

fn count(store: &Store, t: &Table) -> Option<i128> {
    let snap = snapshot(2, &[]);
    let ndp = store
        .ndp_aggregate(
            &NdpScan { table: t, snapshot: &snap, predicate: None, pes: 4, freshness: Freshness::Ship },
            Aggregate::CountStar,
            0,
        )
        .unwrap();
    let host = store.host_aggregate(t, &snap, Aggregate::CountStar, 0, None, 2).unwrap();
    assert_eq!(ndp.value, host.value);
    host.value
}

#[test]
fn a_full_device_still_checkpoints_on_its_reserve() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 4);
    let t = kv_table(&store, "t");
    let (rows, e) = fill(&store, &t);
    let before = store.headroom();
    assert!(matches!(e, StoreError::DeviceFull { reserved, .. } if reserved > 0), "{e}");
    assert!(e.to_string().contains("held back so that a checkpoint can still run"), "{e}");
    assert!(rows > 10_000, "{rows} rows in 4 MiB");
    assert!(before.reserve > 0 && before.writes <= 1, "{before:?}");
    // The checkpoint writes the delta buffer, the maps and its blob on the
    // reserve, and takes no more than it.
    let meta = TxnMeta { next_txn: 2, snapshots: vec![] };
    store.checkpoint(&meta, &CommittedHeads::new()).unwrap();
    assert!(store.checkpoint_allocated() <= before.reserve, "{} > {before:?}", store.checkpoint_allocated());
    store.checkpoint(&meta, &CommittedHeads::new()).unwrap();
    assert_eq!(count(&store, &t), Some(i128::from(rows as u32)));
    drop(store);
    let (store, _, _) = reopen(dir.path());
    assert_eq!(count(&store, &store.table("t").unwrap()), Some(i128::from(rows as u32)));
    assert!(store.check().unwrap().errors.is_empty());
}
