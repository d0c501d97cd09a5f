//! CBM freshness (`docs/cbm.md`, "CBM for the MVCC engine"): NDP calls that
//! read the delta pages from host memory through the device's mirror
//! answer as shipping them does and as the host-only scan does, ship no
//! delta page, survive writers that fill and write delta pages (frames
//! reused) while they run, and leave a log that recovery reads.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::{commit, device, inserts, kv_table, opts, reopen, row, snapshot};
use ndpdb_format::ndp::Snapshot;
use ndpdb_storage::{CommittedHeads, Freshness, NdpScan, RowsResult, Store, StoreOptions, Table, TxnMeta};

fn cbm_opts(frames: usize) -> StoreOptions {
    StoreOptions { delta_pages: 3, delta_frames: frames, ..opts() }
}

fn ndp(store: &Store, t: &Table, snap: &Snapshot, freshness: Freshness) -> RowsResult {
    store.ndp_rows(&NdpScan { table: t, snapshot: snap, predicate: None, pes: 4, freshness }, &[0, 1]).unwrap()
}

fn updates(vids: impl Iterator<Item = u64>, v: i64) -> Vec<(Option<u64>, Option<Vec<ndpdb_format::schema::Value>>)> {
    vids.map(|vid| (Some(vid), Some(row(vid, Some(v))))).collect()
}

#[test]
fn cbm_calls_read_delta_pages_from_host_memory_and_agree_with_ship_and_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(device(dir.path(), true, 16), cbm_opts(32)).unwrap();
    let t = kv_table(&store, "t");
    commit(&store, &t, 1, &inserts(0..400));
    // The first CBM call configures the mirror; the pages started before
    // it have no frame, so it writes them.
    let snap = snapshot(2, &[]);
    let first = ndp(&store, &t, &snap, Freshness::Cbm);
    assert_eq!(first.rows, store.host_rows(&t, &snap, &[0, 1], None, 2).unwrap().rows);
    assert_eq!(first.stats.counters.dma_reads, 0, "nothing was in a frame yet");
    // Pages started now are in frames: updates, deletes left in the buffer.
    commit(&store, &t, 2, &updates((0..400).step_by(3), 7));
    commit(&store, &t, 3, &(0..400).step_by(11).map(|v| (Some(v), None)).collect::<Vec<_>>());
    let frames = store.delta_frame_stats().unwrap();
    assert!(frames.frames - frames.free >= 1, "delta pages hold frames: {frames:?}");
    for snap in [snapshot(4, &[]), snapshot(4, &[2]), snapshot(3, &[]), snapshot(1, &[])] {
        let host = store.host_rows(&t, &snap, &[0, 1], None, 2).unwrap();
        let cbm = ndp(&store, &t, &snap, Freshness::Cbm);
        let ship = ndp(&store, &t, &snap, Freshness::Ship);
        assert_eq!(cbm.rows, host.rows, "CBM in {snap:?}");
        assert_eq!(ship.rows, host.rows, "Ship in {snap:?}");
        if snap.xmax > 2 {
            assert!(cbm.stats.counters.dma_reads > 0, "CBM read delta pages from host memory in {snap:?}");
        }
        let (c, s) = (&cbm.stats.counters, &ship.stats.counters);
        assert!(
            c.link_bytes_to_device + 8192 <= s.link_bytes_to_device - c.dma_bytes_read,
            "CBM's commands carry no delta page: {} B (+{} B by DMA) against Ship's {} B",
            c.link_bytes_to_device - c.dma_bytes_read,
            c.dma_bytes_read,
            s.link_bytes_to_device
        );
    }
    let stats = store.device().mirror_stats().unwrap();
    assert!(stats.records > 0 && stats.lost.is_none(), "{stats:?}");
}

/// Writers fill delta buffers (pages written, frames retired and reused)
/// while CBM calls run; each call's answer equals a host-only scan of the
/// same snapshot.
#[test]
fn cbm_calls_under_concurrent_writers_agree_with_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(device(dir.path(), true, 32), cbm_opts(24)).unwrap();
    let t = kv_table(&store, "t");
    commit(&store, &t, 1, &inserts(0..600));
    ndp(&store, &t, &snapshot(2, &[]), Freshness::Cbm);
    let committed = AtomicU64::new(1);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for txn in 2..=120u64 {
                let first = (txn * 37) % 600;
                commit(&store, &t, txn, &updates((first..first + 60).map(|v| v % 600), txn as i64));
                committed.store(txn, Ordering::Release);
            }
            done.store(true, Ordering::Release);
        });
        let mut calls = 0;
        while !done.load(Ordering::Acquire) || calls < 3 {
            let snap = snapshot(committed.load(Ordering::Acquire) + 1, &[]);
            let cbm = ndp(&store, &t, &snap, Freshness::Cbm);
            let host = store.host_rows(&t, &snap, &[0, 1], None, 2).unwrap();
            assert_eq!(cbm.rows, host.rows, "CBM call {calls} in {snap:?}");
            calls += 1;
        }
        assert!(calls >= 3);
    });
    let stats = store.device().mirror_stats().unwrap();
    assert!(stats.reused_frames > 0, "frames were reused: {stats:?}");
    assert!(stats.lost.is_none(), "{stats:?}");
    let snap = snapshot(121, &[]);
    assert_eq!(ndp(&store, &t, &snap, Freshness::Cbm).rows, ndp(&store, &t, &snap, Freshness::Ship).rows);
}

/// The log holds delta-page records after CBM calls; a reopen without a
/// clean close replays past them to the same rows.
#[test]
fn recovery_skips_delta_page_records() {
    let dir = tempfile::tempdir().unwrap();
    let want = {
        let store = Store::new(device(dir.path(), true, 16), cbm_opts(32)).unwrap();
        let t = kv_table(&store, "t");
        store.checkpoint(&TxnMeta { next_txn: 1, snapshots: vec![] }, &CommittedHeads::new()).unwrap();
        ndp(&store, &t, &snapshot(1, &[]), Freshness::Cbm);
        commit(&store, &t, 1, &inserts(0..300));
        commit(&store, &t, 2, &updates((0..300).step_by(2), -1));
        let rows = ndp(&store, &t, &snapshot(3, &[]), Freshness::Cbm).rows;
        assert!(store.wal_stats().records >= 4, "creates, commits and delta-page records");
        rows
    };
    let (store, _, recovery) = reopen(dir.path());
    assert_eq!(recovery.commits, 2, "{recovery:?}");
    let t = store.table("t").unwrap();
    assert_eq!(store.host_rows(&t, &snapshot(3, &[]), &[0, 1], None, 2).unwrap().rows, want);
    assert_eq!(ndp(&store, &t, &snapshot(3, &[]), Freshness::Cbm).rows, want);
}

/// Too few frames for the delta pages a table holds: a clear error.
#[test]
fn no_free_frame_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(device(dir.path(), true, 16), cbm_opts(1)).unwrap();
    let t = kv_table(&store, "t");
    let u = kv_table(&store, "u");
    ndp(&store, &t, &snapshot(1, &[]), Freshness::Cbm);
    commit(&store, &t, 1, &inserts(0..10));
    store.new_vid(&u);
    let header = ndpdb_format::record::VersionHeader {
        create_ts: 2,
        prev: ndpdb_format::page::RecordId::NONE,
        tombstone: false,
        data_len: 0,
    };
    let err = store.append_version(&u, header, &[]).unwrap_err().to_string();
    assert!(err.contains("no free delta frame") && err.contains("delta_frames"), "{err}");
}

/// A commit record longer than the mirror's window of pages ahead (16) and
/// than a key-value record may be (64 pages) does not lose the mirror: the
/// delta pages around it are still read from host memory.
#[test]
fn a_long_commit_record_does_not_lose_the_mirror() {
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions { log_bytes: 8 << 20, ..cbm_opts(64) };
    let store = Store::new(device(dir.path(), true, 32), opts).unwrap();
    let t = kv_table(&store, "t");
    store.prepare_cbm().unwrap();
    commit(&store, &t, 1, &inserts(0..20_000));
    commit(&store, &t, 2, &updates((0..20_000).step_by(50), 3));
    let snap = snapshot(3, &[]);
    let cbm = ndp(&store, &t, &snap, Freshness::Cbm);
    let stats = store.device().mirror_stats().unwrap();
    assert!(stats.lost.is_none(), "{stats:?}");
    assert!(cbm.stats.counters.dma_reads > 0, "the delta pages came from host memory");
    assert_eq!(cbm.rows, store.host_rows(&t, &snap, &[0, 1], None, 2).unwrap().rows);
}
