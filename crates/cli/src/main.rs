//! `ndpdb`: the command-line front end. It only parses arguments and
//! dispatches: each subcommand's arguments become a configuration of the
//! library crate that runs it (the experiments' in `ndpdb_bench`, which
//! check themselves, run and report), or go to the module of their command
//! (`db`, `check`, `dump`, `device`, `profiles`, `demo`). Output goes through `ndpdb_bench`'s
//! `outln!`, which treats a closed stdout as the end of the reader's
//! interest; any other failure to write makes `ndpdb` exit 1.

mod bench;
mod bench_lookup;
mod check;
mod db;
mod demo;
mod device;
mod dump;
mod r#gen;
mod pgbench;
mod profiles;
mod serve;
mod sql;
mod sqlbench;
mod web;
mod ycsb;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use ndpdb_bench::report::Report;
use ndpdb_bench::{errln, hardware_model};
use ndpdb_device::profile::DEFAULT_PROFILE;
use ndpdb_device::{ClockKind, Profile};

#[derive(Parser)]
#[command(name = "ndpdb", version, about = "A database engine for near-data processing on computational storage", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The neoDBMS demonstration in short: scenarios 1-3 beside PostgreSQL, then the device's scaling
    Demo(DemoArgs),
    /// List or print the hardware profiles that ship with ndpdb
    Profiles {
        #[command(subcommand)]
        command: profiles::ProfilesCmd,
    },
    /// Run the hardware profiler (hybridNDP 3.1) and write the hardware-model parameter file
    Profile(ProfileArgs),
    /// An interactive SQL shell on a database directory (psql-like), or run SQL with -c / -f
    Sql(sql::SqlArgs),
    /// Serve a database over PostgreSQL's wire protocol (psql, pgbench, psycopg, drivers)
    Serve(serve::ServeArgs),
    /// The workload composer, its runs and an SQL page with the plan view, as a web page
    Web(web::WebArgs),
    /// Run an experiment
    Bench {
        #[command(subcommand)]
        command: bench::BenchCmd,
    },
    /// A database in a directory: create, load ORDER_LINE, update, pin snapshots, aggregate, gc
    Db {
        #[command(subcommand)]
        command: db::DbCmd,
    },
    /// Recover a database if it crashed (in memory: the image is not changed), then check its
    /// integrity: every page decoded, every version chain, VID map and L2P map entry walked; says what
    /// it could and could not verify, and exits non-zero unless everything was verified (damage in the
    /// log or a checkpoint included)
    Check {
        /// Database directory
        dir: PathBuf,
        /// Profile name or .toml path (default: the profile the image was created with)
        #[arg(long)]
        profile: Option<String>,
        /// Print one JSON object instead of text, also when the check fails
        #[arg(long)]
        json: bool,
        /// Check the database an `--accept-loss` open would give: committed log records that cannot be
        /// replayed are listed, and do not by themselves make the check fail
        #[arg(long)]
        accept_loss: bool,
    },
    /// Write every readable committed row of a table as CSV (PostgreSQL's conventions, with a header),
    /// also from a damaged database: opens it read-only with what can be read, counts what cannot (with
    /// its pages) on stderr, and exits non-zero if anything could not be read
    Dump(dump::DumpArgs),
    /// Generate a benchmark's data and load it into an ndpdb database (TPC-H)
    Load {
        #[command(subcommand)]
        command: sqlbench::LoadCmd,
    },
    /// Generate benchmark data as CSV files (JOB: the Join-Order Benchmark's IMDB tables)
    Gen {
        #[command(subcommand)]
        command: r#gen::GenCmd,
    },
    /// Create or inspect a device image in a database directory
    Device {
        #[command(subcommand)]
        command: device::DeviceCmd,
    },
}

#[derive(Args)]
struct DemoArgs {
    /// Directory under which the run's results directory is made
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

#[derive(Args)]
struct ProfileArgs {
    /// Profile name (see `ndpdb profiles list`) or path to a .toml file
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// `virtual`: the model's clock only (exact, fast); `real`: completions held to wall-clock time
    #[arg(long, default_value = "virtual")]
    clock: ClockKind,
    /// Where to write the hardware-model parameter file
    #[arg(long, default_value = "hardware-model.toml")]
    out: PathBuf,
    /// Fewer repetitions (for a first look)
    #[arg(long)]
    quick: bool,
    /// Print the comparison as JSON lines instead of a table
    #[arg(long)]
    json: bool,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        errln!("error: {e:#}");
        std::process::exit(1);
    }
    if ndpdb_bench::console::stdout_failed() {
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Cmd::Demo(a) => demo::run(&Report::new(false, a.out)?),
        Cmd::Db { command } => db::run(command),
        Cmd::Profiles { command } => profiles::run(command),
        Cmd::Profile(a) => {
            let cfg = hardware_model::Config {
                profile: Profile::load(&a.profile)?,
                clock: a.clock,
                quick: a.quick,
                out: a.out,
            };
            cfg.run_and_report(a.json)
        }
        Cmd::Bench { command } => bench::run(command),
        Cmd::Check { dir, profile, json, accept_loss } => check::run(&dir, profile.as_deref(), json, accept_loss),
        Cmd::Dump(a) => dump::run(a),
        Cmd::Device { command } => device::run(command),
        Cmd::Gen { command } => r#gen::run(command),
        Cmd::Load { command } => sqlbench::run_load(command),
        Cmd::Sql(a) => sql::run(a),
        Cmd::Serve(a) => serve::run(a),
        Cmd::Web(a) => web::run(a),
    }
}
