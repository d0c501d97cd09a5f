//! Experiment output: a results directory per run, a terminal table, JSON
//! lines and line plots (SVG and PNG).
//!
//! Plots need a TrueType font for their labels; ndpdb loads DejaVu Sans at
//! run time (Debian: `fonts-dejavu-core`). Without it the run still writes
//! its table and JSON lines and says why there is no plot.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, Result, anyhow};
use serde::Serialize;

/// Where a run's files go: `<root>/<experiment>-<UTC timestamp>/`.
pub struct ResultsDir {
    pub path: PathBuf,
}

impl ResultsDir {
    pub fn create(root: &Path, experiment: &str) -> Result<ResultsDir> {
        let base = root.join(format!("{experiment}-{}", utc_stamp()));
        let mut path = base.clone();
        let mut n = 1;
        while path.exists() {
            n += 1;
            path = PathBuf::from(format!("{}-{n}", base.display()));
        }
        std::fs::create_dir_all(&path).with_context(|| format!("creating results directory {}", path.display()))?;
        Ok(ResultsDir { path })
    }

    /// Fails when results could not be written under `root` (a file in the
    /// way, no permission), so a command can say so before its run rather
    /// than after it: `root` is created, and a file made and removed in it.
    pub fn check_root(root: &Path) -> Result<()> {
        let fail = |e: std::io::Error| {
            anyhow!("--out {}: results cannot be written there ({e}); choose another --out", root.display())
        };
        std::fs::create_dir_all(root).map_err(fail)?;
        let probe = root.join(format!(".ndpdb-write-check-{}", std::process::id()));
        std::fs::write(&probe, b"").map_err(fail)?;
        let _ = std::fs::remove_file(&probe);
        Ok(())
    }

    pub fn write_jsonl<T: Serialize>(&self, name: &str, rows: &[T]) -> Result<PathBuf> {
        let path = self.path.join(name);
        let mut f = std::fs::File::create(&path).with_context(|| format!("writing {}", path.display()))?;
        for r in rows {
            writeln!(f, "{}", serde_json::to_string(r)?)?;
        }
        Ok(path)
    }

    pub fn write_text(&self, name: &str, text: &str) -> Result<PathBuf> {
        let path = self.path.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}

/// `YYYYmmdd-HHMMSS` in UTC.
pub fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = ndpdb_format::schema::civil_from_days(days as i64);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

/// A plain text table with right-aligned columns.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect::<Vec<_>>().join("  ")
    };
    let mut out = line(headers.to_vec());
    out.push('\n');
    out.push_str(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

/// One line of a plot.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed and without markers (a reference such as a paper's figures).
    pub reference: bool,
}

pub struct Plot<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: Vec<Series>,
}

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Registers DejaVu Sans as plotters' `sans-serif` (once); every plot calls it.
pub fn ensure_font() -> Result<()> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let path = FONT_PATHS.iter().find(|p| Path::new(p).exists()).ok_or_else(|| {
            "no DejaVu Sans font found for plot labels; install it (Debian: apt-get install fonts-dejavu-core)"
                .to_string()
        })?;
        let bytes = std::fs::read(path).map_err(|e| format!("reading font {path}: {e}"))?;
        plotters::style::register_font(
            "sans-serif",
            plotters::style::FontStyle::Normal,
            Box::leak(bytes.into_boxed_slice()),
        )
        .map_err(|_| format!("font {path} is not a usable TrueType font"))
    })
    .clone()
    .map_err(|e| anyhow!(e))
}

impl Plot<'_> {
    /// Writes `<stem>.svg` and `<stem>.png` into `dir`; returns both paths.
    pub fn write(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>> {
        use plotters::prelude::*;
        ensure_font()?;
        let svg = dir.join(format!("{stem}.svg"));
        let png = dir.join(format!("{stem}.png"));
        self.draw(SVGBackend::new(&svg, (900, 600)).into_drawing_area())?;
        self.draw(BitMapBackend::new(&png, (900, 600)).into_drawing_area())?;
        Ok(vec![svg, png])
    }

    fn draw<DB: plotters::prelude::DrawingBackend>(
        &self,
        root: plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        use plotters::prelude::*;
        let pts = self.series.iter().flat_map(|s| s.points.iter());
        let (mut x_min, mut x_max, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY, 0f64);
        for &(x, y) in pts {
            x_min = x_min.min(x);
            x_max = x_max.max(x);
            y_max = y_max.max(y);
        }
        if !x_min.is_finite() {
            (x_min, x_max) = (0.0, 0.0);
        }
        // Points all at one x: an axis around it, not from it.
        if x_max <= x_min {
            (x_min, x_max) = (x_min - 1.0, x_min + 1.0);
        }
        let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing plot: {e:?}");
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(self.title, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(x_min..x_max, 0f64..y_max)
            .map_err(err)?;
        // Small whole-number axes (versions, rounds) get one label per value,
        // not fractions between them.
        let whole = self.series.iter().flat_map(|s| s.points.iter()).all(|p| p.0.fract() == 0.0);
        let x_labels = if whole && x_max - x_min <= 20.0 { (x_max - x_min) as usize + 1 } else { 10 };
        chart
            .configure_mesh()
            .x_desc(self.x_label)
            .x_labels(x_labels)
            .x_label_formatter(&|x| trim_number(*x))
            .y_desc(self.y_label)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;
        for (i, s) in self.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let style = ShapeStyle::from(&color).stroke_width(2);
            let anno = if s.reference {
                chart.draw_series(DashedLineSeries::new(s.points.iter().copied(), 8, 5, style)).map_err(err)?
            } else {
                chart.draw_series(LineSeries::new(s.points.iter().copied(), style)).map_err(err)?;
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled()))).map_err(err)?
            };
            anno.label(s.name.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        finish_plot(&mut chart, &root, SeriesLabelPosition::UpperLeft)
    }
}

/// The common end of every plot: the legend at `position`, then the drawing
/// written out.
pub fn finish_plot<'a, DB, CT>(
    chart: &mut plotters::chart::ChartContext<'a, DB, CT>,
    root: &plotters::drawing::DrawingArea<DB, plotters::coord::Shift>,
    position: plotters::chart::SeriesLabelPosition,
) -> Result<()>
where
    DB: plotters::backend::DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: plotters::coord::CoordTranslate,
{
    use plotters::prelude::*;
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing plot: {e:?}");
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(position)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// `2` rather than `2.0` on axes of whole numbers.
fn trim_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 { format!("{}", x as i64) } else { format!("{x:.2}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_has_date_shape() {
        let s = utc_stamp();
        assert_eq!(s.len(), 15, "{s}");
        assert!(s.starts_with("20"));
    }

    #[test]
    fn table_aligns() {
        let t = table(&["a", "bbb"], &[vec!["1234".into(), "5".into()]]);
        assert_eq!(t, "   a  bbb\n----  ---\n1234    5\n");
    }

    #[test]
    fn plot_writes_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let plot = Plot {
            title: "t",
            x_label: "x",
            y_label: "y",
            series: vec![
                Series { name: "a".into(), points: vec![(1.0, 1.0), (2.0, 3.0)], reference: false },
                Series { name: "b".into(), points: vec![(1.0, 2.0), (2.0, 2.5)], reference: true },
            ],
        };
        match plot.write(dir.path(), "p") {
            Ok(paths) => {
                for p in paths {
                    assert!(std::fs::metadata(&p).unwrap().len() > 1000, "{} is too small", p.display());
                }
            }
            // Only a missing font may stop a plot, and not in CI (`.ci/run`
            // installs it); the message says what to install.
            Err(e) => {
                assert!(std::env::var_os("CI").is_none(), "CI must draw plots: {e}");
                assert!(e.to_string().contains("fonts-dejavu-core"), "{e}");
            }
        }
    }
}
