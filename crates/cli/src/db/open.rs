//! Opening and closing a database directory for one command: the profile
//! (the image's own unless one is named), recovery said on stderr when it
//! did anything, a checkpoint at the end; and `ndpdb check`, recovery then
//! the integrity check.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use ndpdb_bench::{errln, outln};
use ndpdb_device::{ClockKind, Device, DeviceError, DeviceOptions, Profile};
use ndpdb_storage::{Store, StoreOptions};
use ndpdb_txn::Database;

use super::Common;

pub(super) fn profile(c: &Common) -> Result<Profile> {
    let name = match &c.profile {
        Some(p) => p.clone(),
        None => Device::image_profile(&c.db).map_err(|e| no_database(c, e))?,
    };
    Profile::load(&name).with_context(|| format!("loading profile `{name}` (pass --profile to choose another)"))
}

/// A missing image, said as a missing database: the device's own message
/// names `ndpdb device create`, whose bare image holds no database.
fn no_database(c: &Common, e: DeviceError) -> anyhow::Error {
    match e {
        DeviceError::ImageMissing { path } => anyhow!(
            "no database in {}: no device image at {}; create one with `ndpdb db create --db {}`",
            c.db.display(),
            path.display(),
            c.db.display()
        ),
        e => e.into(),
    }
}

/// Opens the database, recovering it if it crashed.
pub(super) fn open(c: &Common) -> Result<Database> {
    let dev = Device::open(&c.db, profile(c)?, DeviceOptions::with_clock(c.clock)).map_err(|e| no_database(c, e))?;
    let (store, meta, rec) = Store::open_with_report(dev, StoreOptions::default())?;
    report_recovery(&rec);
    Ok(Database::open(store, meta))
}

/// Closes the database cleanly: a checkpoint, so the next command has no
/// log to replay.
pub(super) fn close(db: Database) -> Result<()> {
    db.checkpoint().context("writing the checkpoint")
}

/// Says on stderr what recovery did, when it did anything.
fn report_recovery(rec: &ndpdb_storage::Recovery) {
    if rec.records > 0 {
        errln!(
            "recovery: replayed {} log records ({} commits, {} bytes) in {:.3} s",
            rec.records,
            rec.commits,
            rec.log_bytes,
            rec.wall_s
        );
    }
    if let Some(t) = &rec.truncated {
        errln!("recovery: cut off the log's tail: {t}");
    }
    if let Some(n) = &rec.root_note {
        errln!("recovery: {n}");
    }
}

/// `ndpdb check DIR`: recovery, then the integrity check; fails when it
/// finds anything wrong.
pub fn check(dir: &Path, profile_name: Option<&str>, json: bool) -> Result<()> {
    let c = Common { db: dir.to_path_buf(), profile: profile_name.map(str::to_string), clock: ClockKind::Virtual };
    let dev = Device::open(&c.db, profile(&c)?, DeviceOptions::with_clock(c.clock))?;
    let (store, _meta, rec) = Store::open_with_report(dev, StoreOptions::default())?;
    report_recovery(&rec);
    let t0 = std::time::Instant::now();
    let r = store.check()?;
    let wall_s = t0.elapsed().as_secs_f64();
    if json {
        let v = serde_json::json!({
            "db": dir.display().to_string(), "tables": r.tables, "pages": r.pages, "vids": r.vids,
            "versions": r.versions, "integrity_errors": r.error_count(), "errors": r.errors,
            "log_records_replayed": rec.records, "log_truncated": rec.truncated, "root_note": rec.root_note,
            "wall_s": wall_s,
        });
        outln!("{v}");
    } else {
        for e in &r.errors {
            outln!("error: {e}");
        }
        if r.more_errors > 0 {
            outln!("... and {} more errors", r.more_errors);
        }
        outln!(
            "checked {} tables, {} pages, {} VIDs, {} versions in {:.3} s: {} errors",
            r.tables,
            r.pages,
            r.vids,
            r.versions,
            wall_s,
            r.error_count()
        );
    }
    if r.error_count() > 0 {
        bail!("{} integrity errors in {}", r.error_count(), dir.display());
    }
    Ok(())
}
