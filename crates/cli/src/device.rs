//! `ndpdb device ...`: create a device image in a database directory, or
//! open one and print what the device says of itself.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ndpdb_bench::{out, outln};
use ndpdb_device::profile::DEFAULT_PROFILE;
use ndpdb_device::{Device, DeviceOptions, Profile};

/// Largest `--capacity-mib` (1 PiB).
const CAPACITY_MIB_MAX: u64 = 1 << 30;

#[derive(Subcommand)]
pub enum DeviceCmd {
    /// Create a bare device image (no database: `ndpdb db create` makes the image and the database,
    /// or puts the database into this image)
    Create(DeviceCreateArgs),
    /// Open an existing image and print what the device says of itself
    Info(DeviceInfoArgs),
}

#[derive(Args)]
pub struct DeviceCreateArgs {
    /// Database directory
    #[arg(long, default_value = "ndpdb-data")]
    db: PathBuf,
    /// Profile name or path to a .toml file
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// Image capacity in MiB (default: the profile's capacity, at most 4096)
    #[arg(long)]
    capacity_mib: Option<u64>,
}

#[derive(Args)]
pub struct DeviceInfoArgs {
    /// Database directory
    #[arg(long, default_value = "ndpdb-data")]
    db: PathBuf,
    /// Profile name or path to a .toml file (default: the profile the image was created with)
    #[arg(long)]
    profile: Option<String>,
    /// Print one JSON object instead of a table
    #[arg(long)]
    json: bool,
}

/// `--capacity-mib` in bytes (None: the profile's capacity), refused when
/// 0 or above [`CAPACITY_MIB_MAX`].
pub(crate) fn capacity_bytes(capacity_mib: Option<u64>) -> Result<Option<u64>> {
    let Some(m) = capacity_mib else { return Ok(None) };
    if m == 0 || m > CAPACITY_MIB_MAX {
        bail!("--capacity-mib {m}: give 1..={CAPACITY_MIB_MAX} MiB");
    }
    Ok(Some(m << 20))
}

pub fn run(cmd: DeviceCmd) -> Result<()> {
    match cmd {
        DeviceCmd::Create(a) => create(a),
        DeviceCmd::Info(a) => info(a),
    }
}

fn create(a: DeviceCreateArgs) -> Result<()> {
    let profile = Profile::load(&a.profile)?;
    let dev = Device::create(&a.db, profile, capacity_bytes(a.capacity_mib)?, DeviceOptions::default())?;
    let info = dev.info();
    outln!(
        "created {}: {} MiB {} medium reserved on disk, profile {}; it holds no database yet (ndpdb db create \
         --db {} puts one in it)",
        a.db.join(ndpdb_device::IMAGE_FILE).display(),
        info.capacity_bytes >> 20,
        info.medium_kind,
        info.profile,
        a.db.display()
    );
    Ok(())
}

fn info(a: DeviceInfoArgs) -> Result<()> {
    let name = match &a.profile {
        Some(p) => p.clone(),
        None => Device::image_profile(&a.db)?,
    };
    let profile =
        Profile::load(&name).with_context(|| format!("loading profile `{name}` (pass --profile to choose another)"))?;
    let dev = Device::open(&a.db, profile, DeviceOptions::default())?;
    let mut qp = dev.queue_pair();
    let info = match qp.call(ndpdb_device::Command::Identify)? {
        ndpdb_device::Reply::Identify(i) => i,
        other => bail!("identify replied {other:?}"),
    };
    if a.json {
        outln!("{}", serde_json::to_string(&info)?);
    } else {
        out!("{}", info_table(&info));
    }
    Ok(())
}

/// What the device says of itself, a line per field.
fn info_table(i: &ndpdb_device::DeviceInfo) -> String {
    let mib = |b: u64| format!("{} MiB", b >> 20);
    let rows = [
        ("profile", i.profile.clone()),
        ("medium", i.medium_kind.to_string()),
        (
            "capacity",
            format!(
                "{} ({} pages of {} B)",
                mib(i.capacity_bytes),
                i.capacity_bytes / u64::from(i.page_bytes),
                i.page_bytes
            ),
        ),
        ("channels x chips", format!("{} x {}", i.channels, i.chips_per_channel)),
        ("PEs", i.pes.to_string()),
        ("NDP DRAM", format!("{} ({} in use)", mib(i.dram_ndp_bytes), mib(i.dram_in_use_bytes))),
        ("queue depth", i.queue_depth.to_string()),
        ("clock", i.clock.to_string()),
        ("programs", i.programs.join(", ")),
    ];
    let body: Vec<Vec<String>> = rows.into_iter().map(|(k, v)| vec![k.to_string(), v]).collect();
    ndpdb_bench::output::table(&["field", "value"], &body)
}
