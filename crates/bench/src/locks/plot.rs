//! The plots of a run, as SVG and PNG: Exp. 1's medians against contention,
//! Exp. 3's latency histograms (the paper's Fig. 6) and, with more than one
//! size of ndpdb's table, Exp. 3 against the table's size with the
//! cache-line floor and the baselines beside it. Like the table, they read
//! rows only. Exp. 2 has no plot: two sizes per path read better as a table.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use plotters::chart::ChartContext;
use plotters::coord::Shift;
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::combinators::LogCoord;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::{DrawingArea, DrawingBackend};

use super::rows::{BINS_PER_DECADE, HistBin, LatencyRow, Row, latency_rows};
use super::table::size_label;
use crate::output::{Plot, Series};

/// Exp. 1: p50 against contention (host and device, and the host's p99);
/// Exp. 3: a histogram per access with every table, and with more than one
/// size of ndpdb's table, latency against its size. Returns the files.
pub fn plot(rows: &[Row], dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let exp1 = latency_rows(rows, 1);
    if !exp1.is_empty() {
        files.extend(exp1_plots(&exp1, dir)?);
    }
    let exp3 = latency_rows(rows, 3);
    for access in ["sequential", "random"] {
        // The histograms are the paper's Fig. 6: the lock tables, not the floor.
        let of_access: Vec<&LatencyRow> =
            exp3.iter().copied().filter(|r| r.access == Some(access) && r.lock_table != "floor").collect();
        if !of_access.is_empty() {
            files.extend(histogram_plot(&of_access, access, dir)?);
        }
    }
    let mut sizes: Vec<usize> = exp3.iter().filter_map(|r| r.table_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() > 1 {
        files.extend(table_size_plot(&exp3, dir)?);
    }
    Ok(files)
}

/// Exp. 1: the host's and the device's p50 against contention, and the
/// host's p50 and p99.
fn exp1_plots(exp1: &[&LatencyRow], dir: &Path) -> Result<Vec<PathBuf>> {
    let series = |side: &str, name: &str, y: fn(&LatencyRow) -> u64| Series {
        name: name.into(),
        points: exp1.iter().filter(|r| r.side == side).map(|r| (f64::from(r.contention_pct), y(r) as f64)).collect(),
        reference: false,
    };
    let profile = exp1[0].profile.clone().unwrap_or_default();
    let title = format!("Exp. 1: lock+unlock median under contention ({profile})");
    let all = vec![
        series("host", "host p50 (real clock)", |r| r.p50_ns),
        series("device", "device p50 (modelled)", |r| r.p50_ns),
    ];
    let plot =
        Plot { title: &title, x_label: "requests on keys the other side requests (%)", y_label: "ns", series: all };
    let mut files = plot.write(dir, "exp1-p50")?;
    let host = vec![series("host", "host p50", |r| r.p50_ns), series("host", "host p99", |r| r.p99_ns)];
    let title = format!("Exp. 1: host lock+unlock latency under contention ({profile})");
    let plot =
        Plot { title: &title, x_label: "requests on keys the other side requests (%)", y_label: "ns", series: host };
    files.extend(plot.write(dir, "exp1-host")?);
    Ok(files)
}

/// Exp. 3 against the size of ndpdb's table (log2 axis): per access, ndpdb's
/// p50 and p99 and the cache-line floor's p50, and the baselines' p50 as
/// horizontal lines (dashed: the conventional manager, dotted: PostgreSQL's).
fn table_size_plot(rows: &[&LatencyRow], dir: &Path) -> Result<Vec<PathBuf>> {
    use plotters::prelude::*;
    crate::output::ensure_font()?;
    let title = format!("Exp. 3: {} lock+unlock pairs against the size of ndpdb's table", rows[0].requests);
    let svg = dir.join("exp3-table-size.svg");
    let png = dir.join("exp3-table-size.png");
    draw_table_size(SVGBackend::new(&svg, (900, 600)).into_drawing_area(), &title, rows)?;
    draw_table_size(BitMapBackend::new(&png, (900, 600)).into_drawing_area(), &title, rows)?;
    Ok(vec![svg, png])
}

/// How a line of the table-size plot is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mark {
    /// ndpdb's p50: thick, with circles.
    P50,
    /// ndpdb's p99: thin, with triangles.
    P99,
    /// The cache-line floor's p50: thin, with squares.
    Floor,
    /// The conventional manager's p50: dashed across the whole axis.
    Reference,
    /// PostgreSQL's own manager's p50: dotted across the whole axis.
    PostgresReference,
}

/// One line of the table-size plot: (table bytes, ns) points, or one point
/// whose y a [`Mark::Reference`] line holds across the axis.
struct SizeLine {
    name: String,
    /// Palette index: one colour per access.
    color: usize,
    mark: Mark,
    points: Vec<(f64, f64)>,
}

/// What the table-size plot shows, per access: ndpdb's p50 and p99 and the
/// cache-line floor's p50 by size, and the baselines' p50.
fn table_size_lines(rows: &[&LatencyRow]) -> Vec<SizeLine> {
    let mut lines = Vec::new();
    for (color, access) in ["sequential", "random"].into_iter().enumerate() {
        let mut ndpdb: Vec<&LatencyRow> =
            rows.iter().copied().filter(|r| r.lock_table == "ndpdb" && r.access == Some(access)).collect();
        ndpdb.sort_by_key(|r| r.table_bytes);
        let points = |y: fn(&LatencyRow) -> u64| -> Vec<(f64, f64)> {
            ndpdb.iter().map(|r| (r.table_bytes.unwrap_or(0) as f64, y(r) as f64)).collect()
        };
        let line = |name: String, mark, points| SizeLine { name, color, mark, points };
        lines.push(line(format!("ndpdb p50, {access}"), Mark::P50, points(|r| r.p50_ns)));
        lines.push(line(format!("ndpdb p99, {access}"), Mark::P99, points(|r| r.p99_ns)));
        let mut floor: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.lock_table == "floor" && r.access == Some(access))
            .map(|r| (r.table_bytes.unwrap_or(0) as f64, r.p50_ns as f64))
            .collect();
        floor.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !floor.is_empty() {
            lines.push(line(format!("cache-line floor p50, {access}"), Mark::Floor, floor));
        }
        for baseline in ["conventional", "postgresql"] {
            if let Some(c) = rows.iter().find(|r| r.lock_table == baseline && r.access == Some(access)) {
                let (name, at) = (format!("{baseline} p50, {access}"), vec![(0.0, c.p50_ns as f64)]);
                let mark = if baseline == "conventional" { Mark::Reference } else { Mark::PostgresReference };
                lines.push(line(name, mark, at));
            }
        }
    }
    lines
}

/// The table-size plot's axes: the sizes with half a doubling of margin on
/// each side (log2), how many size labels, and the top of the ns axis.
struct SizeAxes {
    x_lo: f64,
    x_hi: f64,
    labels: usize,
    y_hi: f64,
}

impl SizeAxes {
    fn of(lines: &[SizeLine]) -> SizeAxes {
        let sizes = || {
            lines
                .iter()
                .filter(|l| !matches!(l.mark, Mark::Reference | Mark::PostgresReference))
                .flat_map(|l| l.points.iter().map(|p| p.0))
        };
        let (x_min, x_max) = (sizes().fold(f64::INFINITY, f64::min), sizes().fold(0.0, f64::max));
        // Half a doubling of margin on each side; a label per power of two, or
        // per second one beyond a dozen.
        let (x_lo, x_hi) = (x_min / 2f64.sqrt(), x_max * 2f64.sqrt());
        let labels = ((x_max / x_min).log2().round() as usize + 1).min(12);
        let y_hi = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.1;
        SizeAxes { x_lo, x_hi, labels, y_hi }
    }
}

fn draw_table_size<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, rows: &[&LatencyRow]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;
    let lines = table_size_lines(rows);
    let axes = SizeAxes::of(&lines);
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing plot: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((axes.x_lo..axes.x_hi).log_scale().base(2.0), 0f64..axes.y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels(axes.labels)
        .x_desc("ndpdb's table (bytes, log2 scale)")
        .x_label_formatter(&|x| size_label(x.round() as usize))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .y_desc("ns")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    for l in &lines {
        draw_size_line(&mut chart, l, (axes.x_lo, axes.x_hi))?;
    }
    crate::output::finish_plot(&mut chart, &root, SeriesLabelPosition::UpperLeft)
}

/// The table-size plot's chart: table bytes on a log axis, ns.
type SizeChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<LogCoord<f64>, RangedCoordf64>>;

/// Draws `l` as its [`Mark`] says, reference lines from `x_lo` to `x_hi`.
/// Each legend sample repeats its line's stroke and marker.
fn draw_size_line<'a, DB: DrawingBackend + 'a>(
    chart: &mut SizeChart<'a, DB>,
    l: &SizeLine,
    (x_lo, x_hi): (f64, f64),
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing plot: {e:?}");
    let color = Palette99::pick(l.color).to_rgba();
    let (thick, thin, name) = (color.stroke_width(2), color.stroke_width(1), l.name.clone());
    let stroke = move |(x, y): (i32, i32), style, gap| {
        EmptyElement::at((x, y))
            + PathElement::new(vec![(0, 0), (10 - gap, 0)], style)
            + PathElement::new(vec![(10 + gap, 0), (20, 0)], style)
    };
    match l.mark {
        Mark::P50 => {
            chart.draw_series(LineSeries::new(l.points.clone(), thick)).map_err(err)?;
            let dots = l.points.iter().map(|&p| Circle::new(p, 4, color.filled()));
            chart
                .draw_series(dots)
                .map_err(err)?
                .label(name)
                .legend(move |at| stroke(at, thick, 0) + Circle::new((10, 0), 4, color.filled()));
        }
        Mark::P99 => {
            chart.draw_series(LineSeries::new(l.points.clone(), thin)).map_err(err)?;
            let dots = l.points.iter().map(|&p| TriangleMarker::new(p, 5, color.filled()));
            chart
                .draw_series(dots)
                .map_err(err)?
                .label(name)
                .legend(move |at| stroke(at, thin, 0) + TriangleMarker::new((10, 0), 5, color.filled()));
        }
        Mark::Floor => {
            chart.draw_series(LineSeries::new(l.points.clone(), thin)).map_err(err)?;
            let dots = l
                .points
                .iter()
                .map(|&(x, y)| EmptyElement::at((x, y)) + Rectangle::new([(-3, -3), (3, 3)], color.filled()));
            chart
                .draw_series(dots)
                .map_err(err)?
                .label(name)
                .legend(move |at| stroke(at, thin, 0) + Rectangle::new([(7, -3), (13, 3)], color.filled()));
        }
        Mark::Reference | Mark::PostgresReference => {
            // Dashes for the conventional manager, dots for PostgreSQL's.
            let (dash, space, gap) = if l.mark == Mark::Reference { (8, 5, 3) } else { (2, 4, 6) };
            let y = l.points[0].1;
            let line = DashedLineSeries::new([(x_lo, y), (x_hi, y)], dash, space, thick);
            chart.draw_series(line).map_err(err)?.label(name).legend(move |at| stroke(at, thick, gap));
        }
    }
    Ok(())
}

fn histogram_plot(rows: &[&LatencyRow], access: &str, dir: &Path) -> Result<Vec<PathBuf>> {
    use plotters::prelude::*;
    crate::output::ensure_font()?;
    let title = format!("Exp. 3: {} lock+unlock pairs, {access} access", rows[0].requests);
    let svg = dir.join(format!("exp3-histogram-{access}.svg"));
    let png = dir.join(format!("exp3-histogram-{access}.png"));
    draw_histogram(SVGBackend::new(&svg, (900, 600)).into_drawing_area(), &title, rows)?;
    draw_histogram(BitMapBackend::new(&png, (900, 600)).into_drawing_area(), &title, rows)?;
    Ok(vec![svg, png])
}

fn draw_histogram<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, rows: &[&LatencyRow]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;
    let bins = |r: &LatencyRow| r.histogram.clone().unwrap_or_default();
    let share = |r: &LatencyRow, b: &HistBin| b.count as f64 * 100.0 / r.requests.max(1) as f64;
    let all: Vec<(&LatencyRow, HistBin)> =
        rows.iter().flat_map(|r| bins(r).into_iter().map(move |b| (*r, b))).collect();
    let pad = 10f64.powf(1.0 / BINS_PER_DECADE);
    let x_lo = (all.iter().map(|(_, b)| b.lo_ns).fold(f64::INFINITY, f64::min) / pad).max(1.0);
    // The axis ends a little past the largest p99.9: the rare stalls of
    // milliseconds (preemption, page faults) would squeeze the distribution
    // into a corner. The legend says how many samples lie beyond.
    let x_hi = rows.iter().map(|r| r.p999_ns as f64 * 2.0).fold(x_lo * 10.0, f64::max);
    let shown = |b: &HistBin| b.hi_ns <= x_hi;
    let y_hi = all.iter().filter(|(_, b)| shown(b)).map(|(r, b)| share(r, b)).fold(1.0, f64::max) * 1.1;
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing plot: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), 0f64..y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("latency (ns, log scale)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc("share of requests (%)")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    for (i, r) in rows.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let beyond: u64 = bins(r).iter().filter(|b| !shown(b)).map(|b| b.count).sum();
        let bars = bins(r)
            .into_iter()
            .filter(shown)
            .map(|b| Rectangle::new([(b.lo_ns, 0.0), (b.hi_ns, share(r, &b))], color.mix(0.5).filled()));
        let table = match r.table_bytes {
            Some(b) => format!("{} {}", r.lock_table, size_label(b)),
            None => r.lock_table.to_string(),
        };
        let name = format!(
            "{table} (p50 {} ns, p99 {} ns, {} beyond the axis, max {} ns)",
            r.p50_ns, r.p99_ns, beyond, r.max_ns
        );
        chart
            .draw_series(bars)
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
    }
    crate::output::finish_plot(&mut chart, &root, SeriesLabelPosition::UpperRight)
}
