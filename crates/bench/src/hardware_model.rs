//! `ndpdb profile`: the hardware profiler (`ndpdb_profiler`, hybridNDP 3.1)
//! run on a scratch image of a profile, its hardware-model parameter file
//! written, and each figure it measured set beside what the profile says.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_profiler::HardwareModel;

use crate::late::{Lateness, warnings};
use crate::report::scratch;
use crate::{err, errln, out, outln};

#[derive(Debug, Clone)]
pub struct Config {
    pub profile: Profile,
    /// `virtual`: the model's own figures come back; `real`: with the
    /// emulation's overheads.
    pub clock: ClockKind,
    /// Fewer repetitions (a first look).
    pub quick: bool,
    /// The parameter file to write.
    pub out: PathBuf,
}

impl Config {
    /// Fails when the parameter file's directory does not exist, so that
    /// the command says so before its run, not after it.
    pub fn validate(&self) -> Result<()> {
        let dir = self.out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            bail!("--out {}: the directory {} does not exist; create it first", self.out.display(), dir.display());
        }
        Ok(())
    }

    /// Runs the profiler on a scratch image of the profile; returns the
    /// model and the late completions of its run.
    pub fn run(&self) -> Result<(HardwareModel, Lateness)> {
        let dir = scratch()?;
        let dev =
            Device::create(dir.path(), self.profile.clone(), Some(64 << 20), DeviceOptions::with_clock(self.clock))?;
        let effort = if self.quick { ndpdb_profiler::Effort::quick() } else { ndpdb_profiler::Effort::full() };
        let model = ndpdb_profiler::profile(&dev, effort)?;
        Ok((model, Lateness::of(&dev.counters())))
    }

    /// Checks, runs, writes the parameter file and prints the comparison
    /// (a table, or JSON lines when `json`).
    pub fn run_and_report(&self, json: bool) -> Result<()> {
        self.validate()?;
        let (model, late) = self.run()?;
        std::fs::write(&self.out, model.to_toml()).with_context(|| format!("writing {}", self.out.display()))?;
        if json {
            // Each line also says which profile and clock measured it, and the
            // run's late completions (`profile` is the profile's own figure).
            for c in ndpdb_profiler::compare(&model, &self.profile) {
                let mut v = serde_json::to_value(&c)?;
                if let Some(o) = v.as_object_mut() {
                    o.insert("profile_name".into(), self.profile.name.clone().into());
                    o.insert("clock".into(), self.clock.name().into());
                    o.insert("completions".into(), late.completions.into());
                    o.insert("late_completions".into(), late.late.into());
                }
                outln!("{v}");
            }
            err!("{}", warnings([("the profiler's run".to_string(), late)]));
        } else {
            out!("{}", comparison_table(&model, &self.profile, late));
        }
        errln!("hardware model written to {}", self.out.display());
        Ok(())
    }
}

/// Each measured figure beside the profile's, and how far apart they are,
/// under a heading with the profile, the clock and the run's late
/// completions.
pub fn comparison_table(model: &HardwareModel, profile: &Profile, late: Lateness) -> String {
    let fmt = |x: f64| if x.is_infinite() { "inf".to_string() } else { format!("{x:.3}") };
    let rows: Vec<Vec<String>> = ndpdb_profiler::compare(model, profile)
        .into_iter()
        .map(|c| {
            let dev = match c.profile {
                Some(p) if p.is_finite() && p != 0.0 => format!("{:+.1}%", (c.measured - p) / p * 100.0),
                _ => "-".into(),
            };
            vec![
                c.figure.to_string(),
                c.unit.to_string(),
                fmt(c.measured),
                c.profile.map(fmt).unwrap_or("-".into()),
                dev,
            ]
        })
        .collect();
    format!(
        "hardware profile of `{}` ({} clock, {} late of {} device completions)\n{}{}",
        profile.name,
        model.clock,
        late.late,
        late.completions,
        crate::output::table(&["figure", "unit", "measured", "profile", "dev"], &rows),
        warnings([("the profiler's run".to_string(), late)])
    )
}
