//! The snapshot experiment's rows as a terminal table, NDP's speed-ups over
//! the other engines, and plots in the style of the paper's Figs. 6-8.

use std::path::Path;

use anyhow::Result;

use super::{Figure, Row};
use crate::late::{Lateness, warnings};

/// Plots in the style of Figs. 6-8, a series per engine configuration:
/// `<stem>` shows every engine's wall time. On the virtual clock, when the
/// profile has costs (ndpdb's modelled times are not all 0, as they are on
/// `ideal`), `<stem>-modelled` also shows ndpdb's modelled time (what the
/// profile's device would take; for the host-only block stack, the modelled
/// page reads plus the chain walk's measured host CPU time) beside
/// PostgreSQL's wall time.
pub fn plot(figure: &Figure, points: &[(f64, Row)], dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    use crate::output::{Plot, Series};
    let series = |modelled: bool| {
        let mut series: Vec<Series> = Vec::new();
        for (x, r) in points {
            let engine = engine_name(r);
            let (name, y) = match (r.engine, modelled) {
                (_, false) => (engine, r.wall_s),
                ("ndpdb-ndp", true) => (format!("{engine} (modelled)"), r.modelled_s.unwrap_or(0.0)),
                ("ndpdb-host", true) => (
                    format!("{engine} (modelled reads + measured walk)"),
                    r.modelled_s.unwrap_or(0.0) + r.host_cpu_s.unwrap_or(0.0),
                ),
                (_, true) => (format!("{engine} (wall)"), r.wall_s),
            };
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push((*x, y)),
                None => series.push(Series { name, points: vec![(*x, y)], reference: false }),
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        series
    };
    let (title, x_label) = (&figure.title, figure.x_label);
    let first = &points.first().map(|p| &p.1);
    let (profile, clock) = (first.map_or("", |r| r.profile.as_str()), first.map_or("", |r| r.clock));
    let wall_title = format!("{title} ({profile}, {clock} clock)");
    let name = &figure.stem;
    let mut paths =
        Plot { title: &wall_title, x_label, y_label: "query wall time (s)", series: series(false) }.write(dir, name)?;
    if clock == "virtual" && points.iter().any(|(_, r)| r.modelled_s.is_some_and(|m| m > 0.0)) {
        let title = format!("{title} (modelled on {profile})");
        let plot = Plot {
            title: &title,
            x_label,
            y_label: "query time (s): ndpdb modelled, PostgreSQL wall",
            series: series(true),
        };
        paths.extend(plot.write(dir, &format!("{name}-modelled"))?);
    }
    Ok(paths)
}

/// The results table: a heading with the profile and the clock and what
/// its times mean, a line per engine and point, and a warning under it for
/// each engine configuration whose times measure the emulator (`late.rs`).
pub fn table(rows: &[(f64, Row)]) -> String {
    let head = rows.first().map_or(String::new(), |(_, r)| {
        format!(
            "profile {}, {} clock ({}; {}); PostgreSQL: wall times on this machine\n",
            r.profile,
            r.clock,
            crate::orderline::clock_note(r.clock),
            crate::orderline::HOST_CPU_NOTE
        )
    });
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(_, r)| {
            let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            vec![
                r.scenario.clone(),
                r.rows.to_string(),
                format!("{:.0}", r.versions_per_tuple),
                r.snapshot_position.clone(),
                r.engine.to_string(),
                r.freshness.unwrap_or("-").to_string(),
                r.pes.map(|p| format!("{p} PEs")).or(r.workers.map(|w| format!("{w} workers"))).unwrap_or_default(),
                r.result.clone().unwrap_or_else(|| "NULL".into()),
                format!("{:.4}", r.wall_s),
                r.modelled_s.map_or("-".into(), |m| format!("{m:.4}")),
                lateness(r).map_or("-".into(), Lateness::cell),
                r.host_cpu_s.map_or("-".into(), |s| format!("{s:.4}")),
                opt(r.link_bytes_to_host),
                opt(r.link_bytes_to_device),
                opt(r.dma_bytes_read),
                opt(r.medium_bytes_read),
            ]
        })
        .collect();
    head + &crate::output::table(
        &[
            "scenario",
            "tuples",
            "versions",
            "snapshot",
            "engine",
            "freshness",
            "parallelism",
            "result",
            "wall s (median)",
            "modelled s",
            "late/completions",
            "host CPU s",
            "link B to host",
            "link B to device",
            "of it DMA B",
            "medium B read",
        ],
        &body,
    ) + &late_warnings(rows)
}

/// The late completions of a row's median run (ndpdb's rows only).
fn lateness(r: &Row) -> Option<Lateness> {
    Some(Lateness { late: r.late_completions?, completions: r.completions? })
}

/// A warning for each ndpdb engine configuration whose runs, summed over
/// the points, had more than 1% late completions.
fn late_warnings(rows: &[(f64, Row)]) -> String {
    warnings(lateness_by_engine(rows))
}

/// Each ndpdb engine configuration's late completions, summed over the
/// points, in the order the rows first show it.
fn lateness_by_engine(rows: &[(f64, Row)]) -> Vec<(String, Lateness)> {
    let mut per: Vec<(String, Lateness)> = Vec::new();
    for (_, r) in rows {
        let Some(l) = lateness(r) else { continue };
        let name = engine_name(r);
        match per.iter_mut().find(|p| p.0 == name) {
            Some(p) => p.1 = p.1 + l,
            None => per.push((name, l)),
        }
    }
    per
}

/// An engine configuration's name in plots and warnings.
fn engine_name(r: &Row) -> String {
    match r.engine {
        // Ship keeps the name runs before --freshness had.
        "ndpdb-ndp" => match r.freshness {
            Some(f) if f != "ship" => format!("ndpdb NDP {f}, {} PEs", r.pes.unwrap_or(0)),
            _ => format!("ndpdb NDP, {} PEs", r.pes.unwrap_or(0)),
        },
        "ndpdb-host" => format!("ndpdb host-only, {} workers", r.workers.unwrap_or(0)),
        _ => format!("PostgreSQL, {} parallel workers", r.workers.unwrap_or(0)),
    }
}

/// How many times faster ndpdb NDP ran than every other engine at each
/// point (median wall times; above 1: NDP was faster), one line per point
/// and PE count. An engine configuration whose times measure the emulator
/// (`late.rs`) is marked, and a note under the table says so. None without
/// NDP rows or without other engines.
pub fn speedups(rows: &[(f64, Row)]) -> Option<String> {
    let bound = emulator_bound(rows);
    let mark = |r: &Row| if bound.contains(&engine_name(r)) { " (emulator)" } else { "" };
    let label = |r: &Row| match r.engine {
        "ndpdb-host" => format!("ndpdb host {} w{}", r.workers.unwrap_or(0), mark(r)),
        "postgresql" => format!("PostgreSQL {} w", r.workers.unwrap_or(0)),
        other => other.to_string(),
    };
    let point = |r: &Row| (r.scenario.clone(), r.rows, r.versions_per_tuple.to_bits(), r.snapshot_position.clone());
    let mut columns: Vec<String> = Vec::new();
    for (_, r) in rows.iter().filter(|(_, r)| r.engine != "ndpdb-ndp") {
        if !columns.contains(&label(r)) {
            columns.push(label(r));
        }
    }
    let mut body = Vec::new();
    for (_, ndp) in rows.iter().filter(|(_, r)| r.engine == "ndpdb-ndp") {
        let at = point(ndp);
        let mut line = vec![
            ndp.scenario.clone(),
            ndp.rows.to_string(),
            format!("{:.0}", ndp.versions_per_tuple),
            ndp.snapshot_position.clone(),
            format!("{} PEs {}{}", ndp.pes.unwrap_or(0), ndp.freshness.unwrap_or("ship"), mark(ndp)),
        ];
        for c in &columns {
            let other = rows.iter().find(|(_, r)| point(r) == at && r.engine != "ndpdb-ndp" && &label(r) == c);
            line.push(match other {
                Some((_, o)) if ndp.wall_s > 0.0 => format!("{:.1}x", o.wall_s / ndp.wall_s),
                _ => "-".to_string(),
            });
        }
        body.push(line);
    }
    if body.is_empty() || columns.is_empty() {
        return None;
    }
    let mut header: Vec<String> =
        ["scenario", "tuples", "versions", "snapshot", "NDP"].iter().map(|h| h.to_string()).collect();
    header.extend(columns.iter().map(|c| format!("vs {c}")));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let note = if bound.is_empty() {
        ""
    } else {
        "(emulator): more than 1% of the engine's device completions were late, so its wall times measure the \
         emulator on this machine and a ratio with them compares the emulator, not the modelled device\n"
    };
    Some(format!(
        "NDP speed-up (median wall time of the other engine / NDP's; above 1: NDP faster)\n{}{note}",
        crate::output::table(&header, &body)
    ))
}

/// The ndpdb engine configurations ([`engine_name`]) whose runs had more
/// than 1% late completions, summed over the points.
fn emulator_bound(rows: &[(f64, Row)]) -> Vec<String> {
    lateness_by_engine(rows).into_iter().filter(|(_, l)| l.emulator_bound()).map(|(name, _)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::tests::test_row;

    #[test]
    fn speedups_divide_every_other_engine_by_ndp_at_the_same_point() {
        let row = |engine, pes, workers, position: &str, wall_s| Row {
            pes,
            workers,
            snapshot_position: position.into(),
            wall_s,
            wall_s_runs: vec![wall_s],
            ..test_row(engine, None)
        };
        let rows: Vec<(f64, Row)> = vec![
            (0.0, row("ndpdb-ndp", Some(2), None, "oldest", 0.1)),
            (0.0, row("postgresql", None, Some(2), "oldest", 0.25)),
            (0.0, row("ndpdb-ndp", Some(2), None, "newest", 0.04)),
            (0.0, row("ndpdb-host", None, Some(2), "newest", 0.4)),
            (0.0, row("postgresql", None, Some(2), "newest", 0.2)),
        ];
        let t = speedups(&rows).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].contains("vs PostgreSQL 2 w") && lines[1].contains("vs ndpdb host 2 w"), "{t}");
        let oldest = lines.iter().find(|l| l.contains("oldest")).unwrap();
        assert!(oldest.contains("2.5x") && oldest.trim_end().ends_with('-'), "{t}");
        let newest = lines.iter().find(|l| l.contains("newest")).unwrap();
        assert!(newest.contains("5.0x") && newest.contains("10.0x"), "{t}");
        assert_eq!(speedups(&rows[1..2]), None, "no NDP, no speed-ups");
    }
}
