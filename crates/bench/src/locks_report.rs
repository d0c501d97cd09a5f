//! `ndpdb bench locks` end to end, around the experiments of `locks`:
//! Exp. 2's profiles from the names given (every shipped profile when none
//! is), the checks and warnings before the run, a progress bar, then the
//! table with the run's notes, the JSON lines and the plots.

use std::path::PathBuf;

use anyhow::Result;
use ndpdb_device::Profile;

use crate::errln;
use crate::locks;
use crate::report::{Report, progress_bar, scratch};

/// The named profiles, or every shipped profile when `names` is empty.
pub fn profiles(names: &[String]) -> Result<Vec<Profile>> {
    let loaded = if names.is_empty() {
        ndpdb_device::profile::BUILTIN.iter().map(|(name, _)| Profile::load(name)).collect::<Result<Vec<_>, _>>()
    } else {
        names.iter().map(|p| Profile::load(p)).collect::<Result<Vec<_>, _>>()
    };
    Ok(loaded?)
}

/// Checks `cfg`, warns of what would make its figures unreliable here,
/// runs it on scratch images and reports; returns the results directory.
pub fn run_and_report(cfg: &locks::Config, report: &Report) -> Result<PathBuf> {
    cfg.validate()?;
    for w in cfg.warnings() {
        errln!("warning: {w}");
    }
    let dir = scratch()?;
    let bar = progress_bar(cfg.steps() as u64, "{msg:<40} [{bar:30}] {pos}/{len} steps");
    let outcome = locks::run(cfg, dir.path(), |done, _, label| {
        bar.set_position(done as u64);
        bar.set_message(label.to_string());
    })?;
    bar.finish_and_clear();
    let rows = outcome.rows;
    let mut table = locks::table(&rows);
    for n in &outcome.notes {
        table += &format!("note: {n}\n");
    }
    report.print(&rows, &table)?;
    let results = report.results("locks")?;
    results.jsonl("results.jsonl", &rows)?;
    results.text("table.txt", &table)?;
    let plots = results.plot(|dir| locks::plot(&rows, dir));
    Ok(results.announce(&plots))
}
