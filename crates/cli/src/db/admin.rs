//! The database commands that shape the data: create, load ORDER_LINE,
//! update rounds, pin and drop snapshots, garbage collection, and the
//! summary of what the directory holds.

use anyhow::{Context, Result, bail};
use ndpdb_bench::orderline;
use ndpdb_bench::outln;
use ndpdb_bench::report::progress_bar;
use ndpdb_device::profile::DEFAULT_PROFILE;
use ndpdb_device::{Command, Device, DeviceOptions, IMAGE_FILE, Profile};
use ndpdb_storage::{ROOT_PPN, Store, StoreOptions};
use ndpdb_txn::{Database, Isolation};
use ndpdb_workload::{ORDER_LINE, order_line_columns};

use super::Common;
use super::open::{close, open, open_for_reading, profile};
use crate::device::capacity_bytes;

/// A progress bar over `len` tuples, labelled `what`.
fn bar(len: u64, what: &str) -> indicatif::ProgressBar {
    let b = progress_bar(len, "{msg:>16} [{bar:30}] {pos}/{len} tuples ({rate} tuples/s, {eta} left)");
    b.set_message(what.to_string());
    b
}

/// Creates the database, and its image unless `ndpdb device create` made a
/// bare one there; says how much disk the image reserves, and where.
pub(super) fn create(common: &Common, capacity_mib: Option<u64>) -> Result<()> {
    let image = common.db.join(IMAGE_FILE);
    let (dev, made) = if image.exists() {
        (open_bare_image(common, capacity_mib)?, "in the existing image")
    } else {
        let p = Profile::load(common.profile.as_deref().unwrap_or(DEFAULT_PROFILE))?;
        let dev =
            Device::create(&common.db, p, capacity_bytes(capacity_mib)?, DeviceOptions::with_clock(common.clock))?;
        (dev, "with the image")
    };
    let info = dev.info();
    let db = Database::create(Store::new(dev, StoreOptions::default())?)?;
    close(db)?;
    let why = match capacity_mib {
        Some(_) => "--capacity-mib".to_string(),
        None => format!(
            "profile {}'s capacity, at most {} MiB; choose with --capacity-mib",
            info.profile,
            ndpdb_device::DEFAULT_CAPACITY_MAX >> 20
        ),
    };
    outln!(
        "created database {} {made} {}: {} MiB reserved on disk ({why})",
        common.db.display(),
        image.display(),
        info.capacity_bytes >> 20
    );
    Ok(())
}

/// The image `ndpdb device create` made in the directory, for `db create`
/// to put a database in: only while both root slots are blank (never
/// written, so nothing was ever committed there). An image that holds a
/// database, or what is left of one, is refused, as is a `--capacity-mib`
/// other than the image's.
fn open_bare_image(common: &Common, capacity_mib: Option<u64>) -> Result<Device> {
    let image = common.db.join(IMAGE_FILE);
    let dev = Device::open(&common.db, profile(common)?, DeviceOptions::with_clock(common.clock))?;
    let mut qp = dev.queue_pair();
    for ppn in [ROOT_PPN, ROOT_PPN + 1] {
        if qp.call(Command::PageRead { ppn, host_addr: None })?.into_data().iter().any(|&b| b != 0) {
            bail!(
                "{} already holds a database (or what is left of one); use the other `ndpdb db` commands on it, or \
                 remove it to start over",
                image.display()
            );
        }
    }
    let mib = dev.info().capacity_bytes >> 20;
    if let Some(m) = capacity_mib.filter(|&m| m != mib) {
        bail!(
            "{} exists with {mib} MiB (an image without a database, as `ndpdb device create` makes); --capacity-mib \
             {m} cannot resize it: leave --capacity-mib out, or remove the image to start over",
            image.display()
        );
    }
    Ok(dev)
}

pub(super) fn load_orderline(common: &Common, rows: u64, seed: u64) -> Result<()> {
    let db = open(common)?;
    let t = match db.table(ORDER_LINE) {
        Ok(t) => t,
        Err(_) => db.create_table(ORDER_LINE, order_line_columns())?,
    };
    let b = bar(rows, "load");
    orderline::load(&db, &t, rows, seed, |n| b.set_position(n))?;
    b.finish_and_clear();
    close(db)?;
    outln!("loaded {rows} ORDER_LINE tuples; the table has {}", t.vids());
    Ok(())
}

pub(super) fn update(common: &Common, rounds: u32, seed: u64) -> Result<()> {
    let db = open(common)?;
    let t = db.table(ORDER_LINE).context("load ORDER_LINE first (ndpdb db load-orderline)")?;
    let seed = history_seed(&db, seed)?;
    for r in 0..rounds {
        let b = bar(t.vids(), &format!("round {}", r + 1));
        orderline::update_round(&db, &t, seed.wrapping_add(u64::from(r)), |n| b.set_position(n))?;
        b.finish_and_clear();
    }
    close(db)?;
    outln!("{rounds} update rounds over {} tuples", t.vids());
    Ok(())
}

/// The seed of one `db update` call's values: `seed` mixed with the
/// database's next transaction id. The id is part of the database's
/// durable state and grows with every call, so each call writes new values,
/// and the same history of commands writes the same ones.
fn history_seed(db: &Database, seed: u64) -> Result<u64> {
    let probe = db.begin(Isolation::ReadCommitted);
    let next_txn = probe.id();
    probe.abort()?;
    Ok(seed ^ next_txn.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Pins the current snapshot, or drops snapshot `drop`, or neither with
/// just `list`; with `list`, then lists the pinned ones. `json`: one JSON
/// object (`snapshot` pinned, `dropped`, `pinned_snapshots`).
pub(super) fn snapshot(common: &Common, drop: Option<u64>, list: bool, json: bool) -> Result<()> {
    let db = open(common)?;
    let mut obj = serde_json::Map::new();
    let mut text = Vec::new();
    if let Some(id) = drop {
        db.drop_snapshot(id)?;
        obj.insert("dropped".into(), id.into());
        text.push(format!("dropped snapshot {id}"));
    } else if !list {
        let id = db.pin_snapshot()?;
        obj.insert("snapshot".into(), id.into());
        text.push(format!("snapshot {id}"));
    }
    if list {
        let pinned = db.pinned_snapshots();
        let v = pinned.iter().map(|(id, xmax)| serde_json::json!({ "snapshot": id, "xmax": xmax })).collect();
        obj.insert("pinned_snapshots".into(), serde_json::Value::Array(v));
        text.extend(pinned.iter().map(|(id, xmax)| format!("snapshot {id}: transactions below {xmax}")));
        if pinned.is_empty() {
            text.push("no pinned snapshots".into());
        }
    }
    match json {
        true => outln!("{}", serde_json::Value::Object(obj)),
        false => text.iter().for_each(|l| outln!("{l}")),
    }
    close(db)
}

pub(super) fn gc(common: &Common) -> Result<()> {
    let db = open(common)?;
    let s = db.gc()?;
    close(db)?;
    outln!(
        "removed {} versions: {} chains cut, {} tuples removed, {} pages rewritten, {} pages unmapped \
         ({} of them compacted: {} tuples moved off them)",
        s.versions_removed,
        s.chains_cut,
        s.tuples_removed,
        s.pages_rewritten,
        s.pages_unmapped,
        s.pages_compacted,
        s.versions_moved
    );
    Ok(())
}

/// Tables, pinned snapshots and the device's pages, as text or (`json`)
/// one JSON object; a read-only command: it opens the store read-only and
/// writes nothing.
pub(super) fn info(common: &Common, json: bool) -> Result<()> {
    let db = open_for_reading(common)?;
    if json {
        outln!("{}", info_json(common, &db));
        return Ok(());
    }
    outln!("database {} on profile {}", common.db.display(), db.store().device().profile().name);
    for t in db.store().tables() {
        let cols: Vec<String> = t.columns.iter().map(|c| format!("{} {}", c.name, c.ty.sql_name())).collect();
        outln!("table {} ({} tuples): {}", t.name, t.vids(), cols.join(", "));
    }
    for (id, xmax) in db.pinned_snapshots() {
        outln!("pinned snapshot {id}: transactions below {xmax}");
    }
    let info = db.store().device().info();
    let page = u64::from(info.page_bytes);
    let h = db.store().headroom();
    let r = db.store().page_reuse();
    outln!(
        "device: {} pages of {page} B; {} free for writes, {} held back for the next \
         checkpoint, {} superseded pages waiting for a checkpoint ({} pages reused so far)",
        info.capacity_bytes / page,
        h.writes,
        h.reserve,
        r.superseded + r.awaiting + r.limbo,
        r.reused
    );
    Ok(())
}

/// `db info --json`: what the text says, as one object.
fn info_json(common: &Common, db: &Database) -> serde_json::Value {
    let tables: Vec<_> = db
        .store()
        .tables()
        .iter()
        .map(|t| {
            let columns: Vec<_> =
                t.columns.iter().map(|c| serde_json::json!({ "name": c.name, "type": c.ty.sql_name() })).collect();
            serde_json::json!({ "name": t.name, "tuples": t.vids(), "columns": columns })
        })
        .collect();
    let pinned: Vec<_> =
        db.pinned_snapshots().iter().map(|(id, xmax)| serde_json::json!({ "snapshot": id, "xmax": xmax })).collect();
    let info = db.store().device().info();
    let (h, r) = (db.store().headroom(), db.store().page_reuse());
    serde_json::json!({
        "db": common.db.display().to_string(), "profile": info.profile, "tables": tables, "pinned_snapshots": pinned,
        "page_bytes": info.page_bytes, "pages": info.capacity_bytes / u64::from(info.page_bytes),
        "pages_free_for_writes": h.writes, "pages_reserved_for_checkpoint": h.reserve,
        "pages_superseded_waiting": r.superseded + r.awaiting + r.limbo, "pages_reused": r.reused,
    })
}
