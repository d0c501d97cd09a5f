//! `ndpdb demo`, the README's main command: a short version of the neoDBMS
//! demonstration (scenarios 1-3: data volume, versions per tuple, snapshot
//! position) on the default profile with the real-time clock, side by side
//! with PostgreSQL when it is installed, then the device's scaling beside
//! neoDBMS Table I. It ends with the table and the paths of the plots.

use anyhow::Result;
use ndpdb_bench::report::Report;
use ndpdb_bench::{device_scaling, outln, snapshot};
use ndpdb_device::profile::DEFAULT_PROFILE;
use ndpdb_device::{ClockKind, Profile};

pub fn run(report: &Report) -> Result<()> {
    let started = std::time::Instant::now();
    outln!("ndpdb demo: in-situ snapshot computation (neoDBMS, ICDE'22) on the emulated u280-nvm device");
    outln!("ORDER_LINE (TPC-C), 100,000 tuples, up to 4 versions per tuple; SUM(ol_amount) in each snapshot.");
    outln!(
        "Engines: ndpdb NDP on 16 PEs, ndpdb host-only block stack with 2 workers, PostgreSQL with 0 and 2 parallel workers."
    );
    outln!("Real-time clock: the device's completions are held to their modelled time, so wall times compare.\n");
    let cfg = snapshot::Config {
        profile: Profile::load(DEFAULT_PROFILE)?,
        clock: ClockKind::Real,
        pes: vec![16],
        workers: vec![2],
        postgres_workers: vec![0, 2],
        seed: 1,
        repeat: 3,
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
