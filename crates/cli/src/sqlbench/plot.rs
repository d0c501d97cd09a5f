//! The SQL benchmarks' plot: grouped bars, one group per query and one bar
//! per engine, median wall time on a log axis (TPC-H's queries span four
//! orders of magnitude), as SVG and PNG. ndpdb's modelled times, where the
//! profile has costs, get a second plot beside PostgreSQL's wall times.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};

use super::report::Row;

/// One bar chart: `bars[g][e]` is query `groups[g]` on engine `engines[e]`.
struct Bars<'a> {
    title: String,
    y_label: &'a str,
    groups: Vec<String>,
    engines: Vec<String>,
    bars: Vec<Vec<Option<f64>>>,
}

/// Draws `<workload>.svg/.png` (wall times) and, when any modelled time is
/// above zero, `<workload>-modelled.svg/.png`; returns the paths.
pub fn draw(rows: &[Row], workload: &str, dir: &Path) -> Result<Vec<PathBuf>> {
    ndpdb_bench::output::ensure_font()?;
    let Some(first) = rows.first() else { return Ok(Vec::new()) };
    let title = format!("{workload} scale {} ({}, {} clock)", first.scale, first.profile, first.clock);
    let mut paths = bars(rows, title.clone(), "median wall time (s, log)", |r| Some(r.wall_s)).write(dir, workload)?;
    if rows.iter().any(|r| r.modelled_s.is_some_and(|m| m > 0.0)) {
        let modelled = bars(rows, format!("{title}: ndpdb modelled"), "s (log): ndpdb modelled, others wall", |r| {
            if r.engine.starts_with("ndpdb") { r.modelled_s } else { Some(r.wall_s) }
        });
        paths.extend(modelled.write(dir, &format!("{workload}-modelled"))?);
    }
    Ok(paths)
}

fn bars<'a>(rows: &[Row], title: String, y_label: &'a str, value: impl Fn(&Row) -> Option<f64>) -> Bars<'a> {
    let mut groups: Vec<String> = Vec::new();
    let mut engines: Vec<String> = Vec::new();
    for r in rows {
        if !groups.contains(&r.query) {
            groups.push(r.query.clone());
        }
        if !engines.iter().any(|e| e == r.engine) {
            engines.push(r.engine.to_string());
        }
    }
    let bars = groups
        .iter()
        .map(|g| {
            engines
                .iter()
                .map(|e| {
                    let r = rows.iter().find(|r| &r.query == g && r.engine == e && r.error.is_none())?;
                    value(r).filter(|v| *v > 0.0)
                })
                .collect()
        })
        .collect();
    Bars { title, y_label, groups, engines, bars }
}

impl Bars<'_> {
    fn write(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>> {
        use plotters::prelude::*;
        let width = (200 + 60 * self.groups.len() as u32).clamp(900, 4000);
        let svg = dir.join(format!("{stem}.svg"));
        let png = dir.join(format!("{stem}.png"));
        self.draw(SVGBackend::new(&svg, (width, 600)).into_drawing_area())?;
        self.draw(BitMapBackend::new(&png, (width, 600)).into_drawing_area())?;
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
        let values = self.bars.iter().flatten().flatten().copied();
        let (lo, hi) = values.fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (lo, hi) = if lo.is_finite() { (lo / 2.0, hi * 2.0) } else { (1e-4, 1.0) };
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing plot: {e:?}");
        root.fill(&WHITE).map_err(err)?;
        let n = self.groups.len().max(1);
        let groups = self.groups.clone();
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..n as f64, (lo..hi).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n * 2 + 1)
            .x_label_formatter(&move |x| {
                let i = x.floor() as usize;
                let centred = (x - x.floor() - 0.5).abs() < 1e-6;
                if centred { groups.get(i).cloned().unwrap_or_default() } else { String::new() }
            })
            .y_desc(self.y_label)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;
        let k = self.engines.len().max(1) as f64;
        let bar_width = 0.8 / k;
        for (e, name) in self.engines.iter().enumerate() {
            let color = Palette99::pick(e).to_rgba();
            let rects = self.bars.iter().enumerate().filter_map(|(g, vals)| {
                let v = vals.get(e).copied().flatten()?;
                let x0 = g as f64 + 0.1 + e as f64 * bar_width;
                Some(Rectangle::new([(x0, lo), (x0 + bar_width, v)], color.filled()))
            });
            chart
                .draw_series(rects)
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
        }
        ndpdb_bench::output::finish_plot(&mut chart, &root, SeriesLabelPosition::UpperRight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_bars_are_drawn_as_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows = Vec::new();
        for (q, e, w) in [("Q1", "postgresql", 0.5), ("Q1", "ndpdb-host", 0.25), ("Q6", "postgresql", 0.01)] {
            let mut r = Row::new("tpch", q, e, 0.1, "u280-nvm", "virtual", None);
            r.wall_s = w;
            r.modelled_s = e.starts_with("ndpdb").then_some(0.002);
            rows.push(r);
        }
        let paths = match draw(&rows, "tpch", dir.path()) {
            Ok(p) => p,
            Err(e) if e.to_string().contains("font") => return, // no font on this machine: said by the report
            Err(e) => panic!("{e:#}"),
        };
        assert_eq!(paths.len(), 4, "wall and modelled plots, SVG and PNG each");
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        assert!(svg.contains("Q6") && svg.contains("ndpdb-host"), "labels and legend in the SVG");
    }
}
