//! `ndpdb device ...`: create a device image in a database directory, or
//! open one and print what the device says of itself.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ndpdb_bench::outln;
use ndpdb_device::profile::DEFAULT_PROFILE;
use ndpdb_device::{Device, DeviceOptions, Profile};

/// Largest `--capacity-mib` (1 PiB).
const CAPACITY_MIB_MAX: u64 = 1 << 30;

#[derive(Subcommand)]
pub enum DeviceCmd {
    /// Create a device image in a database directory
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
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: DeviceCmd) -> Result<()> {
    match cmd {
        DeviceCmd::Create(a) => create(a),
        DeviceCmd::Info(a) => info(a),
    }
}

fn create(a: DeviceCreateArgs) -> Result<()> {
    let profile = Profile::load(&a.profile)?;
    let capacity = match a.capacity_mib {
        Some(m) => Some(
            m.checked_mul(1 << 20)
                .filter(|b| *b <= CAPACITY_MIB_MAX << 20)
                .ok_or_else(|| anyhow::anyhow!("--capacity-mib {m} is too large: at most {CAPACITY_MIB_MAX} MiB"))?,
        ),
        None => None,
    };
    let dev = Device::create(&a.db, profile, capacity, DeviceOptions::default())?;
    let info = dev.info();
    outln!(
        "created {} : {} MiB {} medium, profile {}",
        a.db.join(ndpdb_device::IMAGE_FILE).display(),
        info.capacity_bytes >> 20,
        info.medium_kind,
        info.profile
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
        outln!("{}", serde_json::to_string_pretty(&info)?);
        outln!("{}", dev.counters().render());
    }
    Ok(())
}
