//! The database commands that shape the data: create, load ORDER_LINE,
//! update rounds, pin and drop snapshots, garbage collection, and the
//! summary of what the directory holds.

use anyhow::{Context, Result};
use ndpdb_bench::orderline;
use ndpdb_bench::outln;
use ndpdb_bench::report::progress_bar;
use ndpdb_device::profile::DEFAULT_PROFILE;
use ndpdb_device::{Device, DeviceOptions, Profile};
use ndpdb_storage::{Store, StoreOptions};
use ndpdb_txn::Database;
use ndpdb_workload::{ORDER_LINE, order_line_columns};

use super::Common;
use super::open::{close, open, open_for_reading};

/// A progress bar over `len` tuples, labelled `what`.
fn bar(len: u64, what: &str) -> indicatif::ProgressBar {
    let b = progress_bar(len, "{msg:>16} [{bar:30}] {pos}/{len} tuples ({per_sec}, {eta})");
    b.set_message(what.to_string());
    b
}

pub(super) fn create(common: &Common, capacity_mib: Option<u64>) -> Result<()> {
    let p = Profile::load(common.profile.as_deref().unwrap_or(DEFAULT_PROFILE))?;
    let capacity = capacity_mib.map(|m| m.saturating_mul(1 << 20));
    let dev = Device::create(&common.db, p, capacity, DeviceOptions::with_clock(common.clock))?;
    let db = Database::create(Store::new(dev, StoreOptions::default())?)?;
    close(db)?;
    outln!("created database {}", common.db.display());
    Ok(())
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
    for r in 0..rounds {
        let b = bar(t.vids(), &format!("round {}", r + 1));
        orderline::update_round(&db, &t, seed + u64::from(r), |n| b.set_position(n))?;
        b.finish_and_clear();
    }
    close(db)?;
    outln!("{rounds} update rounds over {} tuples", t.vids());
    Ok(())
}

/// Pins the current snapshot, or with `list` lists the pinned ones, or
/// drops snapshot `drop`.
pub(super) fn snapshot(common: &Common, drop: Option<u64>, list: bool) -> Result<()> {
    let db = open(common)?;
    if list {
        for (id, xmax) in db.pinned_snapshots() {
            outln!("snapshot {id}: transactions below {xmax}");
        }
    } else if let Some(id) = drop {
        db.drop_snapshot(id)?;
        outln!("dropped snapshot {id}");
    } else {
        outln!("snapshot {}", db.pin_snapshot()?);
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

/// Tables, pinned snapshots and the device's pages; a read-only command:
/// it opens the store read-only and writes nothing.
pub(super) fn info(common: &Common) -> Result<()> {
    let db = open_for_reading(common)?;
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
