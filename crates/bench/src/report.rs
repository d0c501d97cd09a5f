//! How a command reports an experiment, the same way for every experiment:
//! the results root is checked before the run ([`Report::new`]), the rows
//! are printed as a table (and JSON lines when asked), and the run's files
//! (JSON lines, the table, plots) go into one results directory whose path
//! is said at the end ([`Results`]). Progress bars share one look
//! ([`progress_bar`]), and every experiment runs on a scratch image of its own
//! ([`scratch`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::output::ResultsDir;
use crate::{err, errln, out, outln};

/// Where an experiment's results go and whether stdout gets JSON lines.
#[derive(Debug, Clone)]
pub struct Report {
    json: bool,
    out: PathBuf,
}

impl Report {
    /// Fails when results could not be written under `out` (a file in the
    /// way, no permission), so that a command says so before its run rather
    /// than after it.
    pub fn new(json: bool, out: PathBuf) -> Result<Report> {
        ResultsDir::check_root(&out)?;
        Ok(Report { json, out })
    }

    /// Whether the rows go to stdout as JSON lines (the table to stderr).
    pub fn json(&self) -> bool {
        self.json
    }

    /// Prints the table, and the rows as JSON lines when asked to.
    pub fn print<T: Serialize>(&self, rows: &[T], table: &str) -> Result<()> {
        let lines = if self.json { rows.iter().map(serde_json::to_string).collect::<Result<_, _>>()? } else { vec![] };
        self.print_lines(&lines, table);
        Ok(())
    }

    /// [`Report::print`] of rows already serialized (rows of several types).
    pub fn print_lines(&self, json_lines: &[String], table: &str) {
        if self.json {
            for l in json_lines {
                outln!("{l}");
            }
            err!("{table}");
        } else {
            out!("{table}");
        }
    }

    /// Creates the run's results directory, `<out>/<experiment>-<UTC time>/`.
    pub fn results(&self, experiment: &str) -> Result<Results> {
        Ok(Results { dir: ResultsDir::create(&self.out, experiment)?, kept: false })
    }
}

/// One run's results directory. A run that fails before it says where its
/// results are ([`Results::announce`]) leaves no directory behind: dropping
/// an unannounced `Results` removes the directory and whatever the run had
/// written into it, since it would be an empty or half-written one.
pub struct Results {
    dir: ResultsDir,
    kept: bool,
}

impl Drop for Results {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_dir_all(&self.dir.path);
        }
    }
}

impl Results {
    pub fn path(&self) -> &Path {
        &self.dir.path
    }

    /// Writes `rows` as JSON lines into file `name`.
    pub fn jsonl<T: Serialize>(&self, name: &str, rows: &[T]) -> Result<()> {
        self.dir.write_jsonl(name, rows).map(drop)
    }

    /// Writes `text` into file `name`.
    pub fn text(&self, name: &str, text: &str) -> Result<()> {
        self.dir.write_text(name, text).map(drop)
    }

    /// Draws plots into the directory; returns their paths. Plots that
    /// cannot be drawn (no font) are said on stderr, and the run goes on
    /// without them.
    pub fn plot(&self, draw: impl FnOnce(&Path) -> Result<Vec<PathBuf>>) -> Vec<PathBuf> {
        draw(&self.dir.path).unwrap_or_else(|e| {
            errln!("no plot: {e:#}");
            Vec::new()
        })
    }

    /// Says on stderr where the results are, then each of `listed` on a line
    /// of its own; returns the directory, which stays.
    pub fn announce(mut self, listed: &[PathBuf]) -> PathBuf {
        errln!("results: {}", self.dir.path.display());
        for p in listed {
            errln!("  {}", p.display());
        }
        self.kept = true;
        self.dir.path.clone()
    }
}

/// A progress bar on stderr for `len` steps, drawn with `template`
/// (indicatif's syntax, plus `{rate}`: steps per second as [`rate_text`]
/// writes them; the templates are constants, so a bad one is a
/// programmer's error). On a stderr that is no terminal (a pipe, a file)
/// it draws nothing.
pub fn progress_bar(len: u64, template: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    let style = indicatif::ProgressStyle::with_template(template).expect("template").with_key(
        "rate",
        |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&rate_text(s.per_sec()));
        },
    );
    bar.set_style(style);
    bar
}

/// Steps per second, rounded to a whole number with thousands separators
/// (`391,026`; indicatif's own `{per_sec}` prints `391,026.0391/s`).
pub fn rate_text(per_sec: f64) -> String {
    if !per_sec.is_finite() || per_sec < 0.0 {
        return "-".to_string();
    }
    let digits = format!("{:.0}", per_sec);
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A scratch directory for an experiment's own image (removed afterwards),
/// so that experiments never write into a user's database.
pub fn scratch() -> Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix("ndpdb-scratch-").tempdir().context("creating a scratch directory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_rounded_whole_numbers_with_separators() {
        assert_eq!(rate_text(391_026.039_1), "391,026");
        assert_eq!(rate_text(999.6), "1,000");
        assert_eq!(rate_text(12.0), "12");
        assert_eq!(rate_text(1_234_567.0), "1,234,567");
        assert_eq!(rate_text(f64::NAN), "-");
    }

    #[test]
    fn a_bad_root_is_refused_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"").unwrap();
        let e = Report::new(false, file.clone()).unwrap_err().to_string();
        assert!(e.starts_with(&format!("--out {}: ", file.display())) && e.ends_with("choose another --out"), "{e}");
    }

    #[test]
    fn each_run_gets_a_directory_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let report = Report::new(true, dir.path().join("results")).unwrap();
        assert!(report.json());
        let (a, b) = (report.results("x").unwrap(), report.results("x").unwrap());
        assert_ne!(a.path(), b.path(), "two runs in one second");
        assert!(a.path().file_name().unwrap().to_str().unwrap().starts_with("x-"));
        a.jsonl("rows.jsonl", &[serde_json::json!({"k": 1}), serde_json::json!({"k": 2})]).unwrap();
        a.text("table.txt", "t\n").unwrap();
        assert_eq!(std::fs::read_to_string(a.path().join("rows.jsonl")).unwrap(), "{\"k\":1}\n{\"k\":2}\n");
        assert_eq!(std::fs::read_to_string(a.path().join("table.txt")).unwrap(), "t\n");
        // A plot that cannot be drawn is said and left out; the run goes on.
        assert!(a.plot(|_| Err(anyhow::anyhow!("no font"))).is_empty());
        let drawn = a.plot(|d| Ok(vec![d.join("p.svg")]));
        assert_eq!(drawn, vec![a.path().join("p.svg")]);
        let path = a.path().to_path_buf();
        assert_eq!(a.announce(&drawn), path);
        assert!(path.join("table.txt").exists(), "an announced run keeps its directory");
        // A run that fails before it announces its results leaves nothing.
        let failed = b.path().to_path_buf();
        b.text("table.txt", "half\n").unwrap();
        drop(b);
        assert!(!failed.exists(), "{} is left behind", failed.display());
    }
}
