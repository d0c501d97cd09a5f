//! Page reuse keeps an image bounded: rounds that rewrite every tuple,
//! collect garbage and checkpoint write many times the image's pages, and
//! every read in between (on the device and on the host) sees the right
//! data, so no page was written again while something could still read it.

mod common;

use common::{insert, kv_table, new_store, reopen, row, snapshot, write};
use ndpdb_format::ndp::Aggregate;
use ndpdb_storage::{CommittedHeads, Freshness, NdpScan, Store, Table, TxnMeta};

const ROWS: u64 = 2000;

/// The sum of `v` in a snapshot after transaction `txn`, on the device and
/// on the host (which must agree).
fn sum(store: &Store, t: &Table, txn: u64) -> Option<i128> {
    let snap = snapshot(txn + 1, &[]);
    let ndp = store
        .ndp_aggregate(
            &NdpScan { table: t, snapshot: &snap, predicate: None, pes: 4, freshness: Freshness::Ship },
            Aggregate::Sum,
            1,
        )
        .unwrap();
    let host = store.host_aggregate(t, &snap, Aggregate::Sum, 1, None, 2).unwrap();
    assert_eq!(ndp.value, host.value, "after transaction {txn}");
    host.value
}

#[test]
fn rewriting_an_image_many_times_over_reuses_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 4);
    let image_pages = 4 << 20 >> 13;
    let t = kv_table(&store, "t");
    for k in 0..ROWS {
        insert(&store, &t, 1, &row(k, Some(1)));
    }
    let rounds = 60;
    for txn in 2..2 + rounds {
        for k in 0..ROWS {
            write(&store, &t, k, txn, Some(&row(k, Some(txn as i64))));
        }
        assert_eq!(sum(&store, &t, txn), Some(i128::from(txn) * i128::from(ROWS as u32)));
        assert_eq!(sum(&store, &t, txn - 1), Some(i128::from(txn - 1) * i128::from(ROWS as u32)), "older snapshot");
        // Every version up to `txn`'s is visible to every snapshot from now on.
        let gc = store.gc(&t, txn + 1).unwrap();
        assert_eq!(gc.chains_cut, ROWS, "round {txn}");
        store.checkpoint(&TxnMeta { next_txn: txn + 1, snapshots: vec![] }, &CommittedHeads::new()).unwrap();
    }
    let reuse = store.page_reuse();
    assert!(reuse.reused > 2 * image_pages, "{reuse:?}: pages written again, of an image of {image_pages}");
    assert!(store.headroom().writes > 0, "{:?}", store.headroom());
    assert!(store.check().unwrap().errors.is_empty());
    let last = 1 + rounds;
    drop(store);
    let (store, _, _) = reopen(dir.path());
    let t = store.table("t").unwrap();
    assert_eq!(sum(&store, &t, last), Some(i128::from(last) * i128::from(ROWS as u32)));
    assert!(store.page_reuse().free > 0, "the pages on their way back are free at open");
}
