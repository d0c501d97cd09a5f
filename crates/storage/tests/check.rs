//! The integrity check finds nothing wrong with a sound store, counts what
//! it looked at, and reports a damaged heap page with where it is.

mod common;

use common::{insert, kv_table, new_store, row, write};
use ndpdb_device::Command;

#[test]
fn check_reports_a_damaged_heap_page_by_table_and_page() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 16);
    let t = kv_table(&store, "t");
    for k in 0..1000 {
        insert(&store, &t, 1, &row(k, Some(k as i64)));
    }
    for k in (0..1000).step_by(2) {
        write(&store, &t, k, 2, Some(&row(k, None)));
    }
    write(&store, &t, 3, 3, None);
    store.flush(&t).unwrap();
    let sound = store.check().unwrap();
    assert_eq!((sound.tables, sound.vids, sound.versions), (1, 1000, 1501));
    assert!(sound.pages > 5, "{sound:?}");
    assert!(sound.errors.is_empty(), "{:?}", sound.errors);

    // Flip one byte of the page holding tuple 999's newest version.
    let lpn = t.head(999).unwrap().rid.lpn();
    let ppn = store.physical_page(lpn).unwrap();
    let mut qp = store.device().queue_pair();
    let mut page = qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
    page[4000] ^= 0x10;
    qp.call(Command::PageWrite { ppn, data: page }).unwrap();

    let damaged = store.check().unwrap();
    let first = &damaged.errors[0];
    assert!(
        first.starts_with(&format!("table t: heap page {lpn}: corrupt data: page {lpn} (physical {ppn})")),
        "{first}"
    );
    assert!(
        damaged.errors[1..].iter().any(|e| e.starts_with("table t: VID 999: version at page")),
        "{:?}",
        damaged.errors
    );
    assert!(damaged.errors.iter().all(|e| e.starts_with("table t: ")), "{:?}", damaged.errors);
    assert_eq!(damaged.error_count(), damaged.errors.len() as u64);
}
