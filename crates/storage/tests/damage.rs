//! Damage at rest, and what opening makes of it: a damaged newest
//! checkpoint falls back to the older one when the log still reaches back
//! to it and its pages were not reused; damage in the middle of the log is
//! refused, never cut off as a torn tail; a read-only open writes nothing;
//! salvage reads every row it can and names the pages it cannot.

mod common;

use std::ops::ControlFlow;
use std::path::Path;

use common::{Rows, commit, device, inserts, kv_table, new_store, opts, reopen, row, rows};
use ndpdb_device::Command;
use ndpdb_format::checkpoint::{Root, index_entries};
use ndpdb_storage::{CommittedHeads, ROOT_PPN, Store, StoreError, StoreOptions, Table, TxnMeta};

fn meta(next_txn: u64) -> TxnMeta {
    TxnMeta { next_txn, snapshots: vec![] }
}

/// The root slots that decode, newest first: (slot, root).
fn roots(dir: &Path) -> Vec<(u64, Root)> {
    let dev = device(dir, false, 0);
    let mut qp = dev.queue_pair();
    let mut out: Vec<(u64, Root)> = (0..2)
        .filter_map(|s| {
            let b = qp.call(Command::PageRead { ppn: ROOT_PPN + s, host_addr: None }).unwrap().into_data();
            Root::decode(&b).ok().flatten().map(|r| (ROOT_PPN + s, r))
        })
        .collect();
    out.sort_by_key(|(_, r)| std::cmp::Reverse(r.generation));
    out
}

/// The blob pages of `root`, in blob order.
fn blob_pages(dir: &Path, root: &Root) -> Vec<u64> {
    let dev = device(dir, false, 0);
    let mut qp = dev.queue_pair();
    let page = dev.info().page_bytes as u64;
    let index = qp.call(Command::PageRead { ppn: root.index_pages[0], host_addr: None }).unwrap().into_data();
    index_entries(&index).take(root.blob_bytes.div_ceil(page) as usize).collect()
}

/// Writes `bytes` into physical page `ppn` at `offset`, through the device
/// (damage its own checks would not see: a misdirected or stray write).
fn overwrite(dir: &Path, ppn: u64, offset: usize, bytes: &[u8]) {
    let dev = device(dir, false, 0);
    let mut qp = dev.queue_pair();
    let mut data = qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
    data[offset..offset + bytes.len()].copy_from_slice(bytes);
    qp.call(Command::PageWrite { ppn, data }).unwrap();
}

/// Overwrites 4 KiB in the middle of the newest checkpoint's blob.
fn damage_newest_blob(dir: &Path) -> (u64, Vec<u64>) {
    let (_, newest) = roots(dir).remove(0);
    let pages = blob_pages(dir, &newest);
    overwrite(dir, pages[pages.len() / 2], 2048, &[0xaa; 4096]);
    (newest.generation, pages)
}

fn open(dir: &Path, opts: StoreOptions) -> Result<(Store, TxnMeta, ndpdb_storage::Recovery), StoreError> {
    Store::open_with_report(device(dir, false, 0), opts)
}

/// Defect 3 of issue 15: 4 KiB overwritten in the newest checkpoint's blob
/// made the database unopenable. The older checkpoint and the log since it
/// hold every commit, so the open falls back to them and says so.
#[test]
fn a_damaged_newest_blob_falls_back_to_the_older_checkpoint_and_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let expected = {
        let store = new_store(dir.path(), 16);
        let t = kv_table(&store, "t");
        commit(&store, &t, 1, &inserts(0..3000));
        store.checkpoint(&meta(2), &CommittedHeads::new()).unwrap();
        commit(&store, &t, 2, &(0..3000).step_by(3).map(|k| (Some(k), Some(row(k, Some(7))))).collect::<Vec<_>>());
        store.checkpoint(&meta(3), &CommittedHeads::new()).unwrap();
        commit(&store, &t, 3, &inserts(3000..3100));
        rows(&store, &t, 3)
    };
    let older = roots(dir.path())[1].1.generation;
    let (newest, pages) = damage_newest_blob(dir.path());
    assert!(pages.len() >= 3, "a blob of several pages: {pages:?}");
    let (store, meta, rec) = open(dir.path(), opts()).expect("the older checkpoint opens");
    assert_eq!((rec.generation, rec.commits, meta.next_txn), (older, 2, 4), "{rec:?}");
    let damage = rec.damage.join("; ");
    assert!(
        damage.contains(&format!("checkpoint {newest} (root slot")) && damage.contains("fails its CRC"),
        "{damage}"
    );
    assert!(damage.contains(&format!("{}", pages[0])), "the blob's pages are named: {damage}");
    assert_eq!(rows(&store, &store.table("t").unwrap(), 3), expected);
    assert_eq!(store.check().unwrap().errors, Vec::<String>::new());
    // The next checkpoint replaces the damaged one; the open after it is clean.
    store.checkpoint(&meta, &CommittedHeads::new()).unwrap();
    drop(store);
    let (store, _, rec) = reopen(dir.path());
    assert_eq!((rec.damage.len(), rec.generation), (0, newest), "{rec:?}");
    assert_eq!(rows(&store, &store.table("t").unwrap(), 3), expected);
}

/// The same damage when the log has been overwritten since the older
/// checkpoint: falling back would lose commits, so the open is refused,
/// naming the damaged checkpoint and the commits; `accept_loss` opens the
/// older checkpoint's state.
#[test]
fn a_damaged_blob_is_refused_when_the_log_no_longer_reaches_the_older_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let older_rows: Rows = {
        let store = new_store(dir.path(), 16);
        let t = kv_table(&store, "t");
        commit(&store, &t, 1, &inserts(0..200));
        store.checkpoint(&meta(2), &CommittedHeads::new()).unwrap();
        let older = rows(&store, &t, 1);
        // About 7 KB a commit, 150 KB between the checkpoints and 150 KB
        // after: more than the 256 KiB ring since the older one.
        let update = |v: i64| (0..200).map(|k| (Some(k), Some(row(k, Some(v))))).collect::<Vec<_>>();
        for txn in 2..24 {
            commit(&store, &t, txn, &update(txn as i64));
        }
        store.checkpoint(&meta(24), &CommittedHeads::new()).unwrap();
        for txn in 24..46 {
            commit(&store, &t, txn, &update(txn as i64));
        }
        older
    };
    let (newest, _) = damage_newest_blob(dir.path());
    let err = open(dir.path(), opts()).err().expect("refused");
    let StoreError::LogDamaged(loss) = &err else { panic!("{err}") };
    let text = err.to_string();
    assert!(text.contains(&format!("checkpoint {newest} (root slot")) && text.contains("fails its CRC"), "{text}");
    assert!(!loss.commits().is_empty(), "{text}");
    let (store, _, rec) = open(dir.path(), StoreOptions { accept_loss: true, ..opts() }).unwrap();
    assert_eq!(rec.lost.as_ref().map(|l| l.commits()), Some(loss.commits()));
    assert_eq!(rows(&store, &store.table("t").unwrap(), 100), older_rows);
}

/// Pages only the older checkpoint referenced are reused once the newer
/// one is durable; after the newer blob is damaged, the older checkpoint
/// would read pages that now hold something else. The open verifies it
/// and refuses.
#[test]
fn an_older_checkpoint_whose_pages_were_reused_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = new_store(dir.path(), 16);
        let t = kv_table(&store, "t");
        commit(&store, &t, 1, &inserts(0..3000));
        store.checkpoint(&meta(2), &CommittedHeads::new()).unwrap();
        let update = |v: i64| (0..3000).map(|k| (Some(k), Some(row(k, Some(v))))).collect::<Vec<_>>();
        commit(&store, &t, 2, &update(2));
        store.checkpoint(&meta(3), &CommittedHeads::new()).unwrap();
        let before = store.page_reuse().reused;
        commit(&store, &t, 3, &update(3));
        assert!(store.page_reuse().reused > before, "the writes after the newer checkpoint reused pages");
    }
    damage_newest_blob(dir.path());
    let err = open(dir.path(), opts()).err().expect("refused").to_string();
    assert!(err.contains("no longer hold what it recorded") && err.contains("--accept-loss"), "{err}");
    let (_, _, rec) = open(dir.path(), StoreOptions { accept_loss: true, ..opts() }).unwrap();
    assert!(rec.damage.iter().any(|d| d.contains("no longer hold what it recorded")), "{rec:?}");
}

/// Zeros where a record's header should be look like the log's end; the
/// commit after them shows they are not.
#[test]
fn a_zeroed_record_header_with_a_commit_after_it_is_lost_commits() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = new_store(dir.path(), 16);
        let t = kv_table(&store, "t");
        commit(&store, &t, 1, &inserts(0..100));
        store.checkpoint(&meta(2), &CommittedHeads::new()).unwrap();
        commit(&store, &t, 2, &inserts(100..200));
        commit(&store, &t, 3, &inserts(200..300));
    }
    let (_, root) = roots(dir.path()).remove(0);
    let page = 8192;
    overwrite(dir.path(), root.log_start + root.log_lsn / page, (root.log_lsn % page) as usize, &[0; 24]);
    let err = open(dir.path(), opts()).err().expect("refused");
    let StoreError::LogDamaged(loss) = &err else { panic!("{err}") };
    assert_eq!(loss.commits().iter().map(|c| c.0).collect::<Vec<_>>(), vec![3], "{err}");
    assert_eq!(loss.stop_lsn, root.log_lsn);
}

/// A read-only open replays the log into memory (more than the delta
/// buffer holds), answers reads and the integrity check, refuses writes,
/// and sends the device no write and no flush: the image is unchanged.
#[test]
fn a_read_only_open_replays_in_memory_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let expected = {
        let store = new_store(dir.path(), 16);
        let t = kv_table(&store, "t");
        commit(&store, &t, 1, &inserts(0..100));
        store.checkpoint(&meta(2), &CommittedHeads::new()).unwrap();
        commit(&store, &t, 2, &inserts(100..3000));
        commit(&store, &t, 3, &(0..3000).step_by(2).map(|k| (Some(k), None)).collect::<Vec<_>>());
        rows(&store, &t, 3)
    };
    let image = std::fs::read(dir.path().join("device.img")).unwrap();
    let read_only = StoreOptions { read_only: true, ..opts() };
    let (store, meta, rec) = open(dir.path(), read_only).unwrap();
    assert_eq!(rec.commits, 2);
    let t = store.table("t").unwrap();
    assert_eq!(rows(&store, &t, 3), expected);
    assert_eq!(store.check().unwrap().errors, Vec::<String>::new());
    for e in [
        store.checkpoint(&meta, &CommittedHeads::new()).unwrap_err(),
        store.log_commit(4, &[]).unwrap_err(),
        store.gc(&t, 4).unwrap_err(),
        store.sync_device().unwrap_err(),
    ] {
        assert!(matches!(e, StoreError::ReadOnly { .. }), "{e}");
    }
    let commands = store.device().counters().commands;
    assert_eq!((commands.get("page_write"), commands.get("flush")), (None, None), "{commands:?}");
    drop(store);
    assert!(std::fs::read(dir.path().join("device.img")).unwrap() == image, "the image is unchanged");
}

/// Every row salvage hands out, by VID.
fn salvaged(store: &Store, t: &Table, xmax: Option<u64>) -> (Rows, ndpdb_storage::SalvageReport) {
    let mut out = Vec::new();
    let report = store
        .salvage(t, xmax, |vid, values| {
            out.push((vid, values));
            ControlFlow::Continue(())
        })
        .unwrap();
    (out, report)
}

/// Salvage reads what a scan reads on a healthy table (newest rows, and at
/// a snapshot); on a damaged heap page it goes on, and names the page.
#[test]
fn salvage_reads_every_readable_row_and_names_the_pages_it_cannot() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = new_store(dir.path(), 16);
        let t = kv_table(&store, "t");
        commit(&store, &t, 1, &inserts(0..2000));
        commit(&store, &t, 2, &(0..2000).step_by(5).map(|k| (Some(k), Some(row(k, Some(-1))))).collect::<Vec<_>>());
        commit(&store, &t, 3, &(0..2000).step_by(7).map(|k| (Some(k), None)).collect::<Vec<_>>());
        store.checkpoint(&meta(4), &CommittedHeads::new()).unwrap();
    }
    let (store, _, _) = reopen(dir.path());
    let t = store.table("t").unwrap();
    let (all, report) = salvaged(&store, &t, None);
    assert_eq!(all, rows(&store, &t, 3));
    assert_eq!((report.rows, report.no_row, report.unreadable_count), (all.len() as u64, 286, 0));
    assert_eq!(salvaged(&store, &t, Some(2)).0, rows(&store, &t, 1), "as a snapshot of transaction 1 sees");
    // A stray write into the first heap page.
    let lpn = t.head(0).unwrap().rid.lpn();
    let ppn = store.physical_page(lpn).unwrap();
    drop((t, store));
    overwrite(dir.path(), ppn, 4000, b"stray bytes");
    let (store, _, _) = reopen(dir.path());
    let t = store.table("t").unwrap();
    let (some, report) = salvaged(&store, &t, None);
    assert!(report.unreadable_count > 0 && report.pages.iter().eq([&lpn]), "{report:?}");
    assert!(report.unreadable[0].why.contains(&format!("physical page {ppn}")), "{report:?}");
    assert_eq!(some.len() as u64 + report.no_row + report.unreadable_count, 2000);
    assert!(some.iter().all(|r| all.contains(r)), "every row salvaged is right");
}

/// Two checkpoints of the same rows, the older one still covered by the
/// log; returns the rows.
fn two_checkpoints(dir: &Path) -> Rows {
    let store = new_store(dir, 16);
    let t = kv_table(&store, "t");
    commit(&store, &t, 1, &inserts(0..300));
    store.checkpoint(&meta(2), &CommittedHeads::new()).unwrap();
    commit(&store, &t, 2, &inserts(300..400));
    store.checkpoint(&meta(3), &CommittedHeads::new()).unwrap();
    rows(&store, &t, 2)
}

/// Writes `bytes` at `offset` of physical page `ppn` straight into the
/// image file, as a failing medium leaves them: the sectors' check codes
/// no longer match.
fn write_into_file(dir: &Path, ppn: u64, offset: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(dir.join("device.img")).unwrap();
    f.write_all_at(bytes, 4096 + ppn * 8192 + offset).unwrap();
}

/// A root slot the device cannot read is damage (sector writes are atomic,
/// so no crash leaves one): the older slot is used, and the open says so
/// in `Recovery::damage`, which `ndpdb check` fails on; a root that only
/// fails its CRC may be a torn root write and stays a note.
#[test]
fn a_root_slot_with_a_media_error_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let expected = two_checkpoints(dir.path());
    let (slot, newest) = roots(dir.path()).remove(0);
    write_into_file(dir.path(), slot, 100, &[0x5a; 8]);
    let (store, _, rec) = open(dir.path(), StoreOptions { read_only: true, ..opts() }).unwrap();
    assert!(rec.generation < newest.generation && rec.root_note.is_none(), "{rec:?}");
    let damage = rec.damage.join("; ");
    assert!(damage.contains(&format!("root slot {slot} cannot be read")), "{damage}");
    assert_eq!(rows(&store, &store.table("t").unwrap(), 2), expected);
}

/// Campaign finding: bytes damaged under valid check codes in a root's
/// version field made the root look like a newer format, and the open was
/// refused without trying the other slot or naming the page. The root's
/// CRC is checked first, so it is damage and the older slot is used.
#[test]
fn a_root_whose_version_field_is_damaged_is_not_a_newer_format() {
    let dir = tempfile::tempdir().unwrap();
    let expected = two_checkpoints(dir.path());
    let (slot, newest) = roots(dir.path()).remove(0);
    overwrite(dir.path(), slot, 5, &[0x77; 3]);
    let (store, _, rec) = open(dir.path(), opts()).unwrap();
    let note = rec.root_note.clone().unwrap_or_default();
    assert!(rec.generation < newest.generation && note.contains(&format!("root slot {slot}")), "{rec:?}");
    assert!(note.contains("checksum"), "{note}");
    assert_eq!(rows(&store, &store.table("t").unwrap(), 2), expected);
}

/// Campaign finding: an NDP call that met a damaged version header (bytes
/// that pass the device's check codes) failed naming the VID only; it
/// names the page, logical and physical, too.
#[test]
fn an_ndp_call_names_the_page_of_a_damaged_version_header() {
    let dir = tempfile::tempdir().unwrap();
    let (lpn, ppn) = {
        let store = new_store(dir.path(), 16);
        let t = kv_table(&store, "t");
        commit(&store, &t, 1, &inserts(0..300));
        store.checkpoint(&meta(2), &CommittedHeads::new()).unwrap();
        let lpn = t.head(0).unwrap().rid.lpn();
        (lpn, store.physical_page(lpn).unwrap())
    };
    // The flags of the record in slot 0 (byte 16 of its header).
    let page = {
        let dev = device(dir.path(), false, 0);
        let mut qp = dev.queue_pair();
        qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data()
    };
    let at = ndpdb_format::page::slot_at(0);
    let raw = u32::from_le_bytes(page[at..at + 4].try_into().unwrap());
    let (off, _) = ndpdb_format::page::split_slot(raw);
    overwrite(dir.path(), ppn, off + 16, &[0xee]);
    let (store, _, _) = open(dir.path(), StoreOptions { read_only: true, ..opts() }).unwrap();
    let t = store.table("t").unwrap();
    let scan = ndpdb_storage::NdpScan {
        table: &t,
        snapshot: &common::snapshot(2, &[]),
        predicate: None,
        pes: 1,
        freshness: ndpdb_storage::Freshness::Ship,
    };
    let err = store.ndp_rows(&scan, &[0, 1]).unwrap_err().to_string();
    assert!(err.contains(&format!("page {lpn} (physical {ppn})")) && err.contains("flags"), "{err}");
}
