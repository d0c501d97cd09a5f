//! Checkpoints and recovery: a checkpoint reopens with every table, head
//! and row; the log replays what was committed after it (and nothing that
//! was not); a damaged newest root falls back to the older slot and the
//! log; an image without a database is refused.

mod common;

use common::{Rows, commit, device, insert, inserts, kv_table, new_store, opts, reopen, row, rows, write};
use ndpdb_device::Command;
use ndpdb_storage::{CommittedHeads, Head, ROOT_PPN, Store, StoreError, Table, TxnMeta};

fn heads(t: &Table) -> Vec<Head> {
    (0..t.vids()).map(|v| t.head(v).unwrap()).collect()
}

#[test]
fn a_checkpoint_reopens_every_table_with_its_heads_rows_and_transaction_state() {
    let dir = tempfile::tempdir().unwrap();
    let meta = TxnMeta { next_txn: 7, snapshots: vec![(1, 3)] };
    let before: Vec<(String, Vec<Head>, Rows)> = {
        let store = new_store(dir.path(), 16);
        let (t, u) = (kv_table(&store, "t"), kv_table(&store, "u"));
        for k in 0..800 {
            insert(&store, &t, 1, &row(k, (k % 5 != 0).then_some(k as i64)));
        }
        for k in (0..800).step_by(4) {
            write(&store, &t, k, 3, Some(&row(k, Some(-1))));
        }
        for k in (0..800).step_by(9) {
            write(&store, &t, k, 5, None);
        }
        for k in 0..10 {
            insert(&store, &u, 6, &row(k, None));
        }
        store.checkpoint(&meta, &CommittedHeads::new()).unwrap();
        store.tables().iter().map(|t| (t.name.clone(), heads(t), rows(&store, t, 6))).collect()
    };
    let (store, restored, recovery) = reopen(dir.path());
    assert_eq!(restored, meta, "the transaction counter and the pinned snapshots");
    assert_eq!((recovery.records, recovery.root_note), (0, None));
    let after: Vec<(String, Vec<Head>, Rows)> =
        store.tables().iter().map(|t| (t.name.clone(), heads(t), rows(&store, t, 6))).collect();
    assert_eq!(after, before);
    assert_eq!(after[0].2.len(), 800 - 89);
    let report = store.check().unwrap();
    assert_eq!((report.tables, report.vids, report.errors), (2, 810, Vec::<String>::new()));
}

#[test]
fn the_log_replays_what_was_committed_after_the_checkpoint_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (t_rows, u_rows) = {
        let store = new_store(dir.path(), 16);
        let t = kv_table(&store, "t");
        commit(&store, &t, 1, &inserts(0..300));
        store.checkpoint(&TxnMeta { next_txn: 2, snapshots: vec![] }, &CommittedHeads::new()).unwrap();
        commit(&store, &t, 2, &(0..300).step_by(7).map(|k| (Some(k), Some(row(k, Some(70))))).collect::<Vec<_>>());
        let u = kv_table(&store, "u");
        commit(&store, &u, 3, &inserts(0..5));
        commit(&store, &t, 4, &[(Some(1), None), (Some(2), None), (None, Some(row(300, None)))]);
        store.log_snapshot(1, 5, false).unwrap();
        // Transaction 5 never commits: its version is in the store, not in the log.
        write(&store, &t, 0, 5, Some(&row(0, Some(-5))));
        (rows(&store, &t, 4), rows(&store, &u, 4))
    };
    let (store, meta, recovery) = reopen(dir.path());
    assert_eq!((recovery.commits, recovery.records, recovery.truncated), (3, 5, None));
    assert_eq!(meta, TxnMeta { next_txn: 5, snapshots: vec![(1, 5)] });
    let (t, u) = (store.table("t").unwrap(), store.table("u").unwrap());
    assert_eq!(rows(&store, &t, 4), t_rows);
    assert_eq!(rows(&store, &u, 4), u_rows);
    assert_eq!(rows(&store, &t, 5), t_rows, "the uncommitted write is gone");
    assert_eq!(t_rows.len(), 300 - 2 + 1);
    assert_eq!(t_rows[0], (0, row(0, Some(70))));
    assert!(store.check().unwrap().errors.is_empty());
}

#[test]
fn a_damaged_newest_root_falls_back_to_the_older_slot_and_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let expected = {
        let store = new_store(dir.path(), 16);
        let t = kv_table(&store, "t");
        commit(&store, &t, 1, &inserts(0..200));
        store.checkpoint(&TxnMeta { next_txn: 2, snapshots: vec![] }, &CommittedHeads::new()).unwrap();
        commit(&store, &t, 2, &inserts(200..400));
        store.checkpoint(&TxnMeta { next_txn: 3, snapshots: vec![] }, &CommittedHeads::new()).unwrap();
        commit(&store, &t, 3, &[(Some(0), None)]);
        rows(&store, &t, 3)
    };
    {
        // The second checkpoint's root is in slot 2 % 2.
        let dev = device(dir.path(), false, 0);
        let mut qp = dev.queue_pair();
        let mut root = qp.call(Command::PageRead { ppn: ROOT_PPN, host_addr: None }).unwrap().into_data();
        root[40] ^= 1;
        qp.call(Command::PageWrite { ppn: ROOT_PPN, data: root }).unwrap();
    }
    let (store, meta, recovery) = reopen(dir.path());
    let note = recovery.root_note.unwrap_or_default();
    assert!(note.starts_with("root slot 0 is unreadable"), "{note}");
    assert_eq!((recovery.commits, meta.next_txn), (2, 4), "replayed from the first checkpoint");
    assert_eq!(rows(&store, &store.table("t").unwrap(), 3), expected);
    assert_eq!(expected.len(), 399);
}

#[test]
fn an_image_without_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(new_store(dir.path(), 16));
    let e = Store::open(device(dir.path(), false, 0), opts()).map(|_| ()).unwrap_err();
    assert!(matches!(e, StoreError::InvalidInput(_)), "{e}");
    assert!(e.to_string().contains("the image holds no database"), "{e}");
}
