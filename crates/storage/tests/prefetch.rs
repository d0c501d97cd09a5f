//! `Store::prefetch_versions`: a batch of point reads' heap pages read
//! together into the page cache, after which the reads need no device
//! command and return what they return without it.

mod common;

use common::{insert, kv_table, new_store, row, write};
use ndpdb_format::page::RecordId;
use ndpdb_storage::{Store, Table};

/// 6,000 rows (some 30 heap pages, more than the test cache's 16), every
/// seventh updated (its newest version later, or in the delta buffer).
fn filled(dir: &std::path::Path) -> (Store, std::sync::Arc<Table>) {
    let store = new_store(dir, 16);
    let t = kv_table(&store, "t");
    for k in 0..6000 {
        insert(&store, &t, 1, &row(k, Some(k as i64)));
    }
    for k in (0..6000).step_by(7) {
        write(&store, &t, k, 2, Some(&row(k, Some(-(k as i64)))));
    }
    (store, t)
}

fn heads(t: &Table, vids: std::ops::Range<u64>) -> Vec<RecordId> {
    vids.map(|v| t.head(v).unwrap().rid).collect()
}

#[test]
fn prefetched_versions_are_read_without_the_device() {
    // The same rows twice: one store reads them the ordinary way, the
    // other prefetches first.
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ((plain, tp), (fetched, tf)) = (filled(a.path()), filled(b.path()));
    // The first VIDs: their head pages were written first, so the cache
    // (16 pages, the newest writes) no longer holds them. Some 6 pages,
    // fewer than the cache holds.
    let window = 0..1200;
    let want: Vec<_> = heads(&tp, window.clone()).into_iter().map(|r| plain.read_version(&tp, r).unwrap()).collect();
    let rids = heads(&tf, window);
    let mut qp = fetched.device().queue_pair();
    let device_before = fetched.device().counters();
    fetched.prefetch_versions(&tf, rids.iter().copied(), &mut qp).unwrap();
    assert_eq!(
        qp.counters(),
        fetched.device().counters().since(&device_before),
        "the caller's queue pair counts it all"
    );
    assert!(qp.counters().medium_bytes_read > 0);
    let before = fetched.device().counters().completions;
    let got: Vec<_> = rids.iter().map(|&r| fetched.read_version(&tf, r).unwrap()).collect();
    assert_eq!(fetched.device().counters().completions, before, "a prefetched page was read again");
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.0.create_ts, g.0.tombstone, &g.1), (w.0.create_ts, w.0.tombstone, &w.1));
    }
}

/// More pages than the cache holds: the evicted ones are read again one by
/// one, and every version is still right.
#[test]
fn a_batch_larger_than_the_cache_still_reads_every_version() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ((plain, tp), (fetched, tf)) = (filled(a.path()), filled(b.path()));
    let rids = heads(&tf, 0..6000);
    fetched.prefetch_versions(&tf, rids.iter().copied(), &mut fetched.device().queue_pair()).unwrap();
    for (v, &r) in rids.iter().enumerate() {
        let (g, w) =
            (fetched.read_version(&tf, r).unwrap(), plain.read_version(&tp, tp.head(v as u64).unwrap().rid).unwrap());
        assert_eq!((g.0.create_ts, &g.1), (w.0.create_ts, &w.1), "VID {v}");
    }
}
