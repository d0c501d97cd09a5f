//! `ndpdb demo`, the README's main command: a short version of the neoDBMS
//! demonstration (scenarios 1-3: data volume, versions per tuple, snapshot
//! position) on the default profile with the real-time clock, side by side
//! with PostgreSQL when it is installed, then the device's scaling beside
//! neoDBMS Table I. It ends with the table and the paths of the plots.
//!
//! The real clock makes ndpdb's wall times the modelled device's only where
//! the emulator kept up with it; [`CLOCK_NOTE`] says so before the table,
//! and the table's late column and warnings say where it did not.

use anyhow::Result;
use ndpdb_bench::report::Report;
use ndpdb_bench::{device_scaling, outln, snapshot};
use ndpdb_device::profile::DEFAULT_PROFILE;
use ndpdb_device::{ClockKind, Profile};

/// What the demo's times mean, said before its table.
const CLOCK_NOTE: &str = "\
What the times mean: the device runs on the real clock. It does each command's work, then holds the
completion until the modelled u280-nvm would have finished it, so an ndpdb wall time is the modelled
device's time plus the host's real work, but only where the emulator on this machine kept up. A completion
it could not finish in its modelled time is late (column late/completions): there the emulator, not the
modelled device, set the pace. The host-only block stack reads every page with a command of its own, and
on most machines each of those is late, so its times measure the emulator. ndpdb NDP sends about ten
commands a query, and the small ones around the device program (memory ranges, copies) may come late by
microseconds; `ndpdb bench snapshot` on the virtual clock gives its modelled times to compare with.
PostgreSQL's times are its own wall times on this machine. Under the table a warning names each engine
with more than 1% late completions; compare wall times only between engines without one.";

pub fn run(report: &Report) -> Result<()> {
    let started = std::time::Instant::now();
    outln!("ndpdb demo: in-situ snapshot computation (neoDBMS, ICDE'22) on the emulated u280-nvm device");
    outln!("ORDER_LINE (TPC-C), 100,000 tuples, up to 4 versions per tuple; SUM(ol_amount) in each snapshot.");
    outln!(
        "Engines: ndpdb NDP on 16 PEs, ndpdb host-only block stack with 2 workers, PostgreSQL with 0 and 2 parallel workers."
    );
    outln!("{CLOCK_NOTE}\n");
    let cfg = snapshot::Config {
        profile: Profile::load(DEFAULT_PROFILE)?,
        clock: ClockKind::Real,
        pes: vec![16],
        workers: vec![2],
        postgres_workers: vec![0, 2],
        seed: 1,
        repeat: 3,
        freshness: vec![ndpdb_storage::Freshness::Ship],
    };
    let scenarios =
        snapshot::Scenarios { list: vec![1, 2, 3], rows: 100_000, rounds: 3, op: "sum".into(), positions: vec![] };
    let dir = cfg.run_and_report(&snapshot::Points::Scenarios(scenarios), report)?;

    outln!("\nThe device: 4-byte in-situ transfers with 1..16 PEs, beside neoDBMS Table I (virtual clock)\n");
    let cfg = device_scaling::Config {
        profile: Profile::load(DEFAULT_PROFILE)?,
        clock: ClockKind::Virtual,
        pes: vec![1, 4, 8, 12, 16],
        transfers_per_pe: 500_000,
        span_bytes: 16 << 20,
        seed: 1,
    };
    let rows = cfg.run_in_scratch()?;
    let table = device_scaling::table(&rows);
    outln!("{table}");
    std::fs::write(dir.join("device-scaling.txt"), &table)?;
    if let Err(e) = device_scaling::plot(&rows, &dir) {
        outln!("no plot: {e:#}");
    }
    outln!(
        "Done in {:.0} s. Results, JSON lines and plots (SVG, PNG) are in {}",
        started.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(())
}
