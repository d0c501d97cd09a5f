//! A full disk under a database: the statement that meets it fails with
//! SQLSTATE 53100 (disk_full) and a message that says what to do, the
//! session goes on, and every commit before it survives a reopen.

use std::sync::Arc;

use ndpdb_sql::SqlState;
use ndpdb_sql::session::{Engine, EngineOptions};

mod session_support;
#[path = "../../device/tests/small_disk/mod.rs"]
mod small_disk;

use session_support::{ok, text};
use small_disk::{SmallDisk, skipped};

/// A 512 MiB database (a 256 MiB index image beside it) on a disk of
/// 96 MiB, which holds them only while they are mostly empty.
fn engine(disk: &SmallDisk) -> Arc<Engine> {
    let opts = EngineOptions { dir: disk.path().join("db"), capacity_mib: Some(512), ..EngineOptions::default() };
    Engine::open(&opts).expect("open")
}

#[test]
fn inserts_into_a_full_disk_fail_with_53100_and_commits_survive() {
    let Some(disk) = SmallDisk::ext4(96) else { return skipped("an ext4 loop device") };
    let eng = engine(&disk);
    let mut s = eng.session();
    ok(&mut s, "create table t (a integer primary key, b text)");
    let mut committed = 0i64;
    let err = loop {
        let rows: Vec<String> = (committed..committed + 2000).map(|a| format!("({a}, repeat('x', 400))")).collect();
        match s.run(&format!("insert into t values {}", rows.join(", "))).pop().unwrap() {
            Ok(_) => committed += 2000,
            Err(e) => break e,
        }
        assert!(committed < 1_000_000, "a 96 MiB disk took {committed} rows of 400 bytes");
    };
    assert_eq!(err.code, SqlState::DISK_FULL, "{err:?}");
    assert!(err.message.contains("is full") && err.message.contains("free space"), "{}", err.message);
    assert!(committed > 0, "not one batch fitted");

    assert_eq!(text(&ok(&mut s, "select count(*) from t")), [committed.to_string()]);
    drop(s);
    let _ = eng.close(); // its checkpoint may meet the full disk too
    drop(eng);

    let eng = engine(&disk);
    let mut s = eng.session();
    assert_eq!(
        text(&ok(&mut s, "select count(*), min(a), max(a) from t")),
        [format!("{committed}|0|{}", committed - 1)]
    );
    assert_eq!(text(&ok(&mut s, "select b from t where a = 7")), ["x".repeat(400)]);
}
