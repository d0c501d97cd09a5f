//! `ndpdb db ...`: a database in a directory, used one command at a time.
//! Each command opens the image, reopens the store from its checkpoint, does
//! its work and writes a new checkpoint (a clean close). This module holds
//! the commands' arguments and dispatch; `open` opens and closes a database
//! (also read-only, for `ndpdb check`, `ndpdb dump` and `db info`), `admin`
//! the commands that shape the data, `query` the ones that run NDP calls.

mod admin;
pub(crate) mod open;
mod query;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use ndpdb_device::ClockKind;

#[derive(Args)]
pub struct Common {
    /// Database directory
    #[arg(long, default_value = "ndpdb-data")]
    pub(crate) db: PathBuf,
    /// Profile name or .toml path (default: the profile the image was created with)
    #[arg(long)]
    pub(crate) profile: Option<String>,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    pub(crate) clock: ClockKind,
    /// Open even if recovery finds committed log records it cannot replay (damage in the middle of
    /// the log, an older checkpoint whose pages were reused): says exactly what is dropped, then
    /// goes on without it. Without this flag such a database is refused and left as it is
    #[arg(long)]
    pub(crate) accept_loss: bool,
}

#[derive(Subcommand)]
pub enum DbCmd {
    /// Create a database: a device image, reserved on disk at its full size now, with an empty
    /// catalog (or the catalog alone, in a bare image `ndpdb device create` made)
    Create {
        #[command(flatten)]
        common: Common,
        /// Image capacity in MiB (default: the profile's capacity, at most 4096)
        #[arg(long)]
        capacity_mib: Option<u64>,
    },
    /// Load TPC-C ORDER_LINE tuples (population rules of TPC-C 4.3.3.1)
    LoadOrderline {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Update rounds: each gives every ORDER_LINE tuple a new ol_amount (one more version)
    Update {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 1)]
        rounds: u32,
        /// Seed of the new values, mixed with the database's next transaction id: each call writes
        /// new values, and the same commands from the same start write the same ones
        #[arg(long, default_value_t = 2)]
        seed: u64,
    },
    /// Pin the current snapshot (prints its id), drop one, or list the pinned ones
    Snapshot {
        #[command(flatten)]
        common: Common,
        /// Drop this pinned snapshot instead of pinning a new one
        #[arg(long)]
        drop: Option<u64>,
        /// List the pinned snapshots (after --drop, if given; without it nothing is pinned)
        #[arg(long)]
        list: bool,
        /// Print one JSON object instead of text
        #[arg(long)]
        json: bool,
    },
    /// Run an aggregate in a snapshot, on the device (ndp) or the host (host)
    Aggregate(AggregateArgs),
    /// Update-NDP (ccSLT): `UPDATE table SET column = expr WHERE predicate` on
    /// the device's PEs, which lock and write the new versions; the host
    /// installs them and commits. Needs a profile with a coherent
    /// interconnect (u280-nvm, ideal)
    UpdateNdp(UpdateNdpArgs),
    /// Remove versions no pinned snapshot can see
    Gc {
        #[command(flatten)]
        common: Common,
    },
    /// Tables, tuples and pinned snapshots
    Info {
        #[command(flatten)]
        common: Common,
        /// Print one JSON object instead of text
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct AggregateArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, default_value = "order_line")]
    table: String,
    /// count-star, count, sum, min, max or avg
    #[arg(long, default_value = "sum")]
    func: String,
    #[arg(long, default_value = "ol_amount")]
    column: String,
    /// A predicate `COLUMN OP VALUE` with OP one of = <> < <= > >=, e.g. "ol_quantity>=5"
    #[arg(long = "where")]
    predicate: Option<String>,
    /// Pinned snapshot id (default: the newest state)
    #[arg(long)]
    snapshot: Option<u64>,
    /// `ndp` (the device's PEs) or `host` (the block stack)
    #[arg(long, default_value = "ndp")]
    mode: String,
    /// PEs for --mode ndp: 1 up to the profile's PEs
    #[arg(long, default_value_t = 16)]
    pes: u32,
    /// Host worker threads for --mode host: 1 up to 256
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Run the query this many times in one process and report each run:
    /// the first run pays for mapping the image, later runs are warm
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Print one JSON object per run instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct UpdateNdpArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, default_value = "order_line")]
    table: String,
    /// `COLUMN = VALUE`, `COLUMN = COLUMN + VALUE`, `COLUMN = COLUMN - VALUE` or
    /// `COLUMN = COLUMN * INTEGER` on a numeric column, e.g. "ol_amount = ol_amount + 1.50"
    #[arg(long)]
    set: String,
    /// A predicate `COLUMN OP VALUE` with OP one of = <> < <= > >=, e.g. "ol_quantity>=5"
    #[arg(long = "where")]
    predicate: Option<String>,
    /// PEs: 1 up to the profile's PEs
    #[arg(long, default_value_t = 16)]
    pes: u32,
    /// read-committed, repeatable-read or serializable
    #[arg(long, default_value = "read-committed")]
    isolation: String,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: DbCmd) -> Result<()> {
    match cmd {
        DbCmd::Create { common, capacity_mib } => admin::create(&common, capacity_mib),
        DbCmd::LoadOrderline { common, rows, seed } => admin::load_orderline(&common, rows, seed),
        DbCmd::Update { common, rounds, seed } => admin::update(&common, rounds, seed),
        DbCmd::Snapshot { common, drop, list, json } => admin::snapshot(&common, drop, list, json),
        DbCmd::Aggregate(a) => query::aggregate(a),
        DbCmd::UpdateNdp(a) => query::update_ndp(a),
        DbCmd::Gc { common } => admin::gc(&common),
        DbCmd::Info { common, json } => admin::info(&common, json),
    }
}
