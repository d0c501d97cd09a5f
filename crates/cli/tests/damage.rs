//! Damaged images end to end (issue 15, defects 2 and 3): damage in the
//! middle of the log is refused and named, and `--accept-loss` opens
//! without what it names; a damaged newest checkpoint falls back to the
//! older one; `ndpdb check --json` prints one JSON object in every failure
//! and exits non-zero unless everything was verified; `ndpdb dump` writes
//! every readable row as CSV and counts what it cannot read.

use std::path::Path;
use std::process::{Command, Output};

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::checkpoint::{Root, index_entries};
use ndpdb_storage::{ROOT_PPN, Store, StoreOptions};
use serde_json::Value;

const PAGE: u64 = 8192;

fn ndpdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ndpdb")).args(args).output().expect("run ndpdb")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a command that must succeed; returns its stdout.
fn ok(args: &[&str]) -> String {
    let o = ndpdb(args);
    assert!(o.status.success(), "{args:?} failed: {}{}", stdout(&o), stderr(&o));
    stdout(&o)
}

/// Runs a command that must fail with a message (exit 1, no panic);
/// returns its stderr.
fn refused(args: &[&str]) -> String {
    let o = ndpdb(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?} should fail: {}{err}", stdout(&o));
    assert!(err.contains("error: ") && !err.contains("panicked"), "{err}");
    err
}

/// `check --json`: exits 1 (unless `ok`), and stdout is one JSON object.
fn check_json(db: &str, ok: bool) -> Value {
    let o = ndpdb(&["check", db, "--json"]);
    assert_eq!(o.status.success(), ok, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "one line: {out}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(v.is_object(), "{v}");
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    v
}

/// A 64 MiB database with 3000 ORDER_LINE rows, updated once.
fn database(dir: &Path) -> String {
    let db = dir.join("db").to_str().unwrap().to_string();
    ok(&["db", "create", "--db", &db, "--capacity-mib", "64"]);
    ok(&["db", "load-orderline", "--db", &db, "--rows", "3000"]);
    ok(&["db", "update", "--db", &db, "--rounds", "1"]);
    db
}

fn device(db: &str) -> Device {
    let p = Profile::load(&Device::image_profile(Path::new(db)).unwrap()).unwrap();
    Device::open(Path::new(db), p, DeviceOptions::with_clock(ClockKind::Virtual)).unwrap()
}

/// The root slots that decode, newest first: (slot, root).
fn roots(db: &str) -> Vec<(u64, Root)> {
    let dev = device(db);
    let mut qp = dev.queue_pair();
    let mut out: Vec<(u64, Root)> = (0..2)
        .filter_map(|s| {
            let b =
                qp.call(ndpdb_device::Command::PageRead { ppn: ROOT_PPN + s, host_addr: None }).unwrap().into_data();
            Root::decode(&b).ok().flatten().map(|r| (ROOT_PPN + s, r))
        })
        .collect();
    out.sort_by_key(|(_, r)| std::cmp::Reverse(r.generation));
    out
}

/// Writes `data` into physical page `ppn` at `offset`, through the device.
fn write_through_device(db: &str, ppn: u64, offset: usize, data: &[u8]) {
    let dev = device(db);
    let mut qp = dev.queue_pair();
    let mut page = qp.call(ndpdb_device::Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
    page[offset..offset + data.len()].copy_from_slice(data);
    qp.call(ndpdb_device::Command::PageWrite { ppn, data: page }).unwrap();
}

/// Overwrites up to `len` log bytes from LSN `at` (to the end of its page)
/// with 0x5a, through the device.
fn damage_log(db: &str, root: &Root, at: u64, len: u64) {
    let len = len.min(PAGE - at % PAGE) as usize;
    write_through_device(db, root.log_start + (at / PAGE) % root.log_pages, (at % PAGE) as usize, &vec![0x5a; len]);
}

/// A copy of database directory `db` named `name` beside it.
fn copy_db(db: &str, name: &str) -> String {
    let to = Path::new(db).with_file_name(name);
    std::fs::create_dir(&to).unwrap();
    std::fs::copy(Path::new(db).join("device.img"), to.join("device.img")).unwrap();
    to.to_str().unwrap().to_string()
}

/// Overwrites bytes of `device.img` directly, as the reproductions
/// do (the medium starts after the 4 KiB superblock).
fn write_into_file(db: &str, ppn: u64, offset: u64, data: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(Path::new(db).join("device.img")).unwrap();
    f.write_all_at(data, 4096 + ppn * PAGE + offset).unwrap();
}

/// `sum(ol_amount)` as `db aggregate` prints it.
fn sum(db: &str, extra: &[&str]) -> String {
    let mut args = vec!["db", "aggregate", "--db", db, "--mode", "host"];
    args.extend_from_slice(extra);
    ok(&args).lines().next().unwrap().trim_start_matches("sum(ol_amount) = ").to_string()
}

/// The sum of a CSV's `ol_amount` column, in cents, and its rows.
fn csv_sum(csv: &str) -> (i64, usize) {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|&c| c == "ol_amount").unwrap();
    let mut total = 0;
    let mut n = 0;
    for l in lines {
        total += l.split(',').nth(col).unwrap().replace('.', "").parse::<i64>().unwrap();
        n += 1;
    }
    (total, n)
}

fn cents(s: &str) -> i64 {
    s.replace('.', "").parse().unwrap()
}

/// Defect 2: a crash leaves the log with commits after the last checkpoint
/// (made here by taking back the root slot the last close wrote); then a
/// byte in the middle of the first commit is damaged. On main, `check`
/// cut the second commit off as a "torn tail" and exited 0.
#[test]
fn damage_in_the_middle_of_the_log_is_refused_and_named_and_accept_loss_opens() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    ok(&["db", "create", "--db", &db, "--capacity-mib", "64"]);
    ok(&["db", "load-orderline", "--db", &db, "--rows", "3000"]);
    let before = sum(&db, &[]);
    ok(&["db", "update", "--db", &db, "--rounds", "2"]);
    let (slot, newest) = roots(&db).remove(0);
    write_through_device(&db, slot, 0, &vec![0; PAGE as usize]); // as if the close had not happened
    let (_, root) = roots(&db).remove(0);
    assert_eq!(root.generation + 1, newest.generation);
    damage_log(&db, &root, root.log_lsn + 40, 64);

    let err = refused(&["check", &db]);
    assert!(err.contains("opening would lose 1 committed records") && err.contains("--accept-loss"), "{err}");
    assert!(err.contains(&format!("stops at LSN {}", root.log_lsn)) && err.contains("commit of transaction"), "{err}");
    let v = check_json(&db, false);
    assert_eq!(v["status"], "damaged", "{v}");
    assert_eq!(v["lost"]["stop_lsn"], root.log_lsn, "{v}");
    assert_eq!(v["lost"]["commits"].as_array().unwrap().len(), 1, "{v}");
    assert!(v["not_verified"][0].as_str().unwrap().contains("cannot be replayed"), "{v}");

    let err = refused(&["db", "aggregate", "--db", &db]);
    assert!(err.contains("the write-ahead log is damaged") && err.contains("--accept-loss"), "{err}");
    let o = ndpdb(&["dump", "--db", &db, "--table", "order_line"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("incomplete") && stderr(&o).contains("commits after it"), "{}", stderr(&o));
    assert_eq!(csv_sum(&stdout(&o)), (cents(&before), 3000), "the dump holds the checkpoint's rows");

    let o = ndpdb(&["db", "aggregate", "--db", &db, "--mode", "host", "--accept-loss"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("left out") && stderr(&o).contains("commit of transaction"), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().next().unwrap(), format!("sum(ol_amount) = {before}"));
    assert_eq!(check_json(&db, true)["status"], "ok");
}

/// `check --accept-loss` checks the database an `--accept-loss` open gives,
/// lists what it drops, and passes if the rest is intact.
#[test]
fn check_with_accept_loss_lists_the_loss_and_checks_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db").to_str().unwrap().to_string();
    ok(&["db", "create", "--db", &db, "--capacity-mib", "64"]);
    ok(&["db", "load-orderline", "--db", &db, "--rows", "3000"]);
    ok(&["db", "update", "--db", &db, "--rounds", "2"]);
    let (slot, _) = roots(&db).remove(0);
    write_through_device(&db, slot, 0, &vec![0; PAGE as usize]);
    let (_, root) = roots(&db).remove(0);
    damage_log(&db, &root, root.log_lsn + 40, 8);
    let o = ndpdb(&["check", &db, "--json", "--accept-loss"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!((v["status"].as_str(), v["integrity_errors"].as_u64()), (Some("loss_accepted"), Some(0)), "{v}");
    assert_eq!(v["lost"]["commits"].as_array().unwrap().len(), 1, "{v}");
}

/// Defect 3: 4 KiB overwritten in the newest checkpoint's blob made every
/// command fail on main, `check` included. The older checkpoint and the
/// log since it hold every commit: commands answer as before, `check`
/// names the damage and fails until a command writes a new checkpoint.
#[test]
fn a_damaged_newest_checkpoint_falls_back_to_the_older_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let healthy = copy_db(&db, "healthy");
    let (_, newest) = roots(&db).remove(0);
    let dev = device(&db);
    let index =
        dev.queue_pair().call(ndpdb_device::Command::PageRead { ppn: newest.index_pages[0], host_addr: None }).unwrap();
    drop(dev);
    let pages: Vec<u64> = index_entries(&index.into_data()).take(newest.blob_bytes.div_ceil(PAGE) as usize).collect();
    write_into_file(&db, pages[pages.len() / 2], 2048, &[0xaa; 4096]);

    let v = check_json(&db, false);
    assert_eq!(v["status"], "damaged", "{v}");
    let damage = v["damage"][0].as_str().unwrap();
    assert!(damage.contains(&format!("checkpoint {} (root slot", newest.generation)), "{damage}");
    assert!(damage.contains(&pages[pages.len() / 2].to_string()) || damage.contains("CRC"), "{damage}");
    assert_eq!(v["integrity_errors"], 0, "{v}");
    let dump = |db: &str| ok(&["dump", "--db", db, "--table", "order_line"]);
    assert_eq!(dump(&db), dump(&healthy), "the same rows");
    let o = ndpdb(&["db", "aggregate", "--db", &db, "--mode", "host"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("damage: checkpoint"), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().next().unwrap(), format!("sum(ol_amount) = {}", sum(&healthy, &[])));
    assert_eq!(check_json(&db, true)["status"], "ok", "the aggregate's close wrote a new checkpoint");
}

/// Every way `check` can fail still prints one JSON object, with a status
/// and the error, and exits 1.
#[test]
fn check_json_is_one_object_in_every_failure() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let v = check_json(missing.to_str().unwrap(), false);
    assert_eq!(v["status"], "error");
    assert!(v["error"].as_str().unwrap().contains("no device image"), "{v}");
    assert_eq!(v["not_verified"][0], "everything: the database did not open");

    let bare = dir.path().join("bare").to_str().unwrap().to_string();
    ok(&["device", "create", "--db", &bare, "--profile", "u280-nvm", "--capacity-mib", "64"]);
    let v = check_json(&bare, false);
    assert!(v["error"].as_str().unwrap().contains("holds no database"), "{v}");

    let healthy = database(dir.path());
    let db = copy_db(&healthy, "heap");
    // A stray write into a heap page: integrity errors.
    let (store, _) = Store::open(device(&db), StoreOptions::default()).unwrap();
    let t = store.table("order_line").unwrap();
    let (lpn, ppn) = (t.head(0).unwrap().rid.lpn(), store.physical_page(t.head(0).unwrap().rid.lpn()).unwrap());
    drop((t, store));
    write_through_device(&db, ppn, 5000, b"stray");
    let v = check_json(&db, false);
    assert_eq!(v["status"], "damaged");
    assert!(v["integrity_errors"].as_u64().unwrap() > 0, "{v}");
    let o = ndpdb(&["dump", "--db", &db, "--table", "order_line"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&format!("logical page {lpn} (physical {ppn})")) && err.contains("cannot be read"), "{err}");
    assert!(csv_sum(&stdout(&o)).1 < 3000, "{err}");

    // Both root slots damaged; both saying a newer format version.
    let (roots_db, newer_db) = (copy_db(&healthy, "roots"), copy_db(&healthy, "newer"));
    for slot in 0..2 {
        write_into_file(&roots_db, ROOT_PPN + slot, 100, &[0xee; 16]);
        // As a newer build would write it: version 99, and the root's CRC
        // (its last 4 bytes in every version) over it.
        let dev = device(&newer_db);
        let mut qp = dev.queue_pair();
        let mut page =
            qp.call(ndpdb_device::Command::PageRead { ppn: ROOT_PPN + slot, host_addr: None }).unwrap().into_data();
        page[4..8].copy_from_slice(&99u32.to_le_bytes());
        let crc = crc32fast::hash(&page[..PAGE as usize - 4]);
        page[PAGE as usize - 4..].copy_from_slice(&crc.to_le_bytes());
        qp.call(ndpdb_device::Command::PageWrite { ppn: ROOT_PPN + slot, data: page }).unwrap();
    }
    let v = check_json(&roots_db, false);
    assert!(v["error"].as_str().unwrap().contains("both root slots are unreadable"), "{v}");
    let v = check_json(&newer_db, false);
    assert!(v["error"].as_str().unwrap().contains("format version 99"), "{v}");
}

/// `dump` on a healthy database: a header, every row, the sums and counts
/// `db aggregate` gives, now and at a pinned snapshot.
#[test]
fn dump_writes_every_committed_row_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    ok(&["db", "snapshot", "--db", &db]);
    let at_snapshot = sum(&db, &["--snapshot", "1"]);
    ok(&["db", "update", "--db", &db, "--rounds", "1", "--seed", "9"]);
    let newest = sum(&db, &[]);
    assert_ne!(newest, at_snapshot);
    let csv = dir.path().join("rows.csv");
    let o = ndpdb(&["dump", "--db", &db, "--table", "order_line", "--out", csv.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("3000 rows of table order_line"), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("ol_o_id,ol_d_id,ol_w_id,ol_number,ol_i_id,ol_supply_w_id,ol_delivery_d,"), "{text}");
    assert_eq!(csv_sum(&text), (cents(&newest), 3000));
    let old = ok(&["dump", "--db", &db, "--table", "order_line", "--snapshot", "1"]);
    assert_eq!(csv_sum(&old), (cents(&at_snapshot), 3000));
    let err = refused(&["dump", "--db", &db, "--table", "nope"]);
    assert!(err.contains("no table nope") && err.contains("order_line"), "{err}");
    let err = refused(&["dump", "--db", &db, "--table", "order_line", "--snapshot", "7"]);
    assert!(err.contains("no pinned snapshot 7"), "{err}");
}
