//! `ndpdb bench snapshot` end to end: the points to run (the paper's
//! scenarios or a composer file), each on a scratch image of its own with
//! one PostgreSQL server for all of them, under one progress bar; then the
//! table, NDP's speed-ups, the JSON lines and a plot per scenario in the
//! run's results directory.

use std::path::PathBuf;

use anyhow::{Context, Result};
use ndpdb_format::text;

use super::{Config, Figure, Postgres, Row, agreement_note, plot, run, scenario, speedups, table, x_of};
use crate::compose::Workload;
use crate::report::{Report, Results, progress_bar, scratch};
use crate::{errln, outln};

/// The paper's scenarios, from the command line's values.
#[derive(Debug, Clone)]
pub struct Scenarios {
    /// Scenario numbers, in the order they run.
    pub list: Vec<u32>,
    pub rows: u64,
    pub rounds: u32,
    /// The query's aggregate, by name ([`text::parse_aggregate`]).
    pub op: String,
    /// Scenario 3's snapshot positions (empty: all).
    pub positions: Vec<u32>,
}

impl Scenarios {
    /// Prints scenario `n` as composer files (`--print-workload`).
    pub fn print(&self, n: u32) -> Result<()> {
        for (_, w) in self.points(n)? {
            outln!("# {}\n{}", w.name, w.to_toml());
        }
        Ok(())
    }

    fn points(&self, n: u32) -> Result<Vec<(f64, Workload)>> {
        scenario(n, self.rows, self.rounds, text::parse_aggregate(&self.op)?, &self.positions)
    }
}

/// What a run measures.
#[derive(Debug, Clone)]
pub enum Points {
    Scenarios(Scenarios),
    /// A composer file (TOML, `docs/composer.md`).
    File(PathBuf),
}

/// Workloads by scenario (0: a composer file), each with its x value.
type Runs = Vec<(u32, Vec<(f64, Workload)>)>;

impl Points {
    fn load(&self) -> Result<Runs> {
        match self {
            Points::File(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                Ok(vec![(0, vec![(0.0, Workload::parse(&text, &path.display().to_string())?)])])
            }
            Points::Scenarios(s) => s.list.iter().map(|&n| Ok((n, s.points(n)?))).collect(),
        }
    }
}

/// One step of a run's progress: the workload running, its phase and how
/// far the phase is (what the progress bar shows).
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub workload: &'a str,
    pub phase: &'a str,
    pub done: u64,
    pub total: u64,
}

/// Who is told of a run's progress besides the progress bar.
pub type Watch<'a> = dyn Fn(&Progress<'_>) + 'a;

/// Every point's rows, with their x values, and what the run says and drew.
struct Measured {
    rows: Vec<(f64, Row)>,
    notes: Vec<String>,
    plots: Vec<PathBuf>,
}

impl Config {
    /// Runs every point and reports them; returns the results directory.
    pub fn run_and_report(&self, points: &Points, report: &Report) -> Result<PathBuf> {
        self.run_and_report_watched(points, report, &|_: &Progress<'_>| {})
    }

    /// [`Config::run_and_report`], telling `watch` each step of the
    /// progress bar as well (`ndpdb web` streams it to the page).
    pub fn run_and_report_watched(&self, points: &Points, report: &Report, watch: &Watch<'_>) -> Result<PathBuf> {
        self.validate()?;
        let runs = points.load()?;
        let results = report.results("snapshot")?;
        let m = self.run_points(runs, &results, watch)?;
        let mut table = table(&m.rows);
        if let Some(s) = speedups(&m.rows) {
            table = format!("{table}\n{s}");
        }
        let rows: Vec<&Row> = m.rows.iter().map(|(_, r)| r).collect();
        report.print(&rows, &table)?;
        for n in &m.notes {
            errln!("{n}");
        }
        errln!("{}", agreement_note(&m.rows));
        results.jsonl("results.jsonl", &rows)?;
        results.text("table.txt", &table)?;
        Ok(results.announce(&m.plots))
    }

    /// Runs the points, plotting each scenario into `results` as it ends.
    fn run_points(&self, runs: Runs, results: &Results, watch: &Watch<'_>) -> Result<Measured> {
        let bar = progress_bar(1, "{prefix} {msg:>20} [{bar:30}] {pos}/{len}");
        let mut m = Measured { rows: Vec::new(), notes: Vec::new(), plots: Vec::new() };
        let mut postgres = Postgres::default();
        for (n, points) in runs {
            let mut scenario_rows = Vec::new();
            let figure = points.first().map(|(_, w)| Figure::of(n, w));
            for (x, w) in points {
                bar.set_prefix(w.name.clone());
                let dir = scratch()?;
                let label = if n == 0 { w.name.clone() } else { format!("scenario {n}") };
                let (rows, note) = run(&w, &label, self, dir.path(), &mut postgres, |phase, done, total| {
                    bar.set_message(phase.to_string());
                    bar.set_length(total.max(1));
                    bar.set_position(done);
                    watch(&Progress { workload: &w.name, phase, done, total });
                })?;
                if let Some(p) = note.postgres
                    && !m.notes.contains(&p)
                {
                    m.notes.push(p);
                }
                scenario_rows.extend(rows.into_iter().map(|r| (x_of(n, x, &w, &r), r)));
            }
            if let Some(f) = figure {
                m.plots.extend(results.plot(|dir| plot(&f, &scenario_rows, dir)));
            }
            m.rows.extend(scenario_rows);
        }
        bar.finish_and_clear();
        postgres.stop()?;
        Ok(m)
    }
}
