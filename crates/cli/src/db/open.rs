//! Opening and closing a database directory for one command: the profile
//! (the image's own unless one is named), recovery said on stderr when it
//! did anything, a checkpoint at the end. Commands that only read (`db
//! info`, `ndpdb check`, `ndpdb dump`) open the store read-only, and the
//! image too when it cannot be opened for writing.

use anyhow::{Context, Result, anyhow};
use ndpdb_bench::errln;
use ndpdb_device::{Device, DeviceError, DeviceOptions, Profile};
use ndpdb_storage::{Recovery, Store, StoreOptions, TxnMeta};
use ndpdb_txn::Database;

use super::Common;

pub(crate) fn profile(c: &Common) -> Result<Profile> {
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
    let opts = StoreOptions { accept_loss: c.accept_loss, ..StoreOptions::default() };
    let (store, meta, rec) = Store::open_with_report(dev, opts)?;
    report_recovery(&rec);
    Ok(Database::open(store, meta))
}

/// [`open_read_only`] as a database, recovery said on stderr (`db info`).
pub(super) fn open_for_reading(c: &Common) -> Result<Database> {
    let (store, meta, rec) = open_read_only(c, c.accept_loss)?;
    report_recovery(&rec);
    Ok(Database::open(store, meta))
}

/// Opens the database for reading only: recovery replays into memory and
/// nothing is written (`StoreOptions::read_only`). With `accept_loss`, a
/// database whose log or checkpoint is damaged opens with what can be read.
pub(crate) fn open_read_only(c: &Common, accept_loss: bool) -> Result<(Store, TxnMeta, Recovery)> {
    let dev = open_device_for_reading(c)?;
    let opts = StoreOptions { read_only: true, accept_loss, ..StoreOptions::default() };
    Ok(Store::open_with_report(dev, opts)?)
}

/// The image opened for writing, so that no other process writes it while
/// it is read; if it cannot be (read-only media, no write permission), the
/// device's read-only open (`DeviceOptions::read_only`), said on stderr.
fn open_device_for_reading(c: &Common) -> Result<Device> {
    let p = profile(c)?;
    let opts = DeviceOptions::with_clock(c.clock);
    match Device::open(&c.db, p.clone(), opts.clone()) {
        Err(e @ DeviceError::ImageNotWritable { .. }) => {
            errln!("note: {e}; opening it read-only");
            let opts = DeviceOptions { read_only: true, ..opts };
            Device::open(&c.db, p, opts).map_err(|e| no_database(c, e))
        }
        other => other.map_err(|e| no_database(c, e)),
    }
}

/// Closes the database cleanly: a checkpoint, so the next command has no
/// log to replay.
pub(super) fn close(db: Database) -> Result<()> {
    db.checkpoint().context("writing the checkpoint")
}

/// Says on stderr what recovery did, when it did anything, and what it
/// dropped or went around.
pub(crate) fn report_recovery(rec: &Recovery) {
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
    for d in &rec.damage {
        errln!("recovery: damage: {d}");
    }
    if let Some(loss) = &rec.lost {
        errln!("recovery: committed log records that cannot be replayed were left out: {loss}");
    }
}
