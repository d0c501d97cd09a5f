//! `ndpdb demo`: what ndpdb can show today, in about a minute. The snapshot
//! experiments of the neoDBMS paper (its scenarios 1-3 against PostgreSQL)
//! are not built yet; until they are, the demo shows the emulated device:
//! its profiles, its scaling beside neoDBMS Table I on both clocks, its
//! counters, and the hardware profiler recovering a profile.

use std::path::Path;

use anyhow::Result;
use ndpdb_bench::{device_scaling, output};
use ndpdb_device::{ClockKind, Profile};

pub fn run(out: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    println!("ndpdb demo: the emulated computational-storage device");
    println!("(not built yet: MVCC storage, in-situ snapshots, the PostgreSQL comparison; they come next)\n");
    println!("1. Hardware profiles (ndpdb profiles show NAME prints one to copy and edit)\n");
    println!("{}", crate::profiles_table()?);

    let dir = output::ResultsDir::create(out, "demo")?;
    let u280 = Profile::load("u280-nvm")?;
    let mut cfg = device_scaling::Config {
        profile: u280.clone(),
        clock: ClockKind::Virtual,
        pes: vec![1, 4, 8, 12, 16],
        transfers_per_pe: 1_000_000,
        span_bytes: 16 << 20,
        seed: 1,
    };
    println!("2. In-situ 4-byte transfers with 1..16 PEs on u280-nvm, beside neoDBMS Table I\n");
    let mut rows = crate::run_scaling(&cfg)?;
    println!("{}", device_scaling::table(&rows));

    println!("3. The same at 16 PEs on the real-time clock (completions held to their modelled time)\n");
    cfg.clock = ClockKind::Real;
    cfg.pes = vec![16];
    cfg.transfers_per_pe = 2_000_000;
    let real = crate::run_scaling(&cfg)?;
    println!("{}", device_scaling::table(&real));
    let r = &real[0];
    println!(
        "wall {:.3} s for {:.3} s modelled ({:+.1}%), {} late completions\n",
        r.wall_s,
        r.modelled_s,
        (r.wall_s - r.modelled_s) / r.modelled_s * 100.0,
        r.late_completions
    );
    let last = &rows[rows.len() - 1];
    println!(
        "Counters of the 16-PE virtual run: the PEs read {} bytes of the medium in {} transfers;",
        last.medium_bytes_read, last.medium_reads
    );
    println!(
        "the link carried {} bytes to the device and {} bytes to the host (commands, parameters, results).\n",
        last.link_bytes_to_device, last.link_bytes_to_host
    );
    rows.extend(real);

    println!("4. The hardware profiler (hybridNDP 3.1) on cosmos-plus, virtual clock\n");
    let cosmos = Profile::load("cosmos-plus")?;
    let model = crate::run_profiler(&cosmos, ClockKind::Virtual, true)?;
    println!("{}", crate::comparison_table(&model, &cosmos));
    let model_path = dir.write_text("hardware-model-cosmos-plus.toml", &model.to_toml())?;

    dir.write_jsonl("device-scaling.jsonl", &rows)?;
    let table = device_scaling::table(&rows);
    dir.write_text("device-scaling.txt", &table)?;
    let plots = match device_scaling::plot(&rows[..5], &dir.path) {
        Ok(p) => p,
        Err(e) => {
            println!("no plot: {e:#}");
            vec![]
        }
    };
    println!("Results in {} ({:.0} s):", dir.path.display(), started.elapsed().as_secs_f64());
    println!("  {}", dir.path.join("device-scaling.jsonl").display());
    println!("  {}", model_path.display());
    for p in plots {
        println!("  {}", p.display());
    }
    Ok(())
}
