//! The snapshot experiment's rows as a terminal table, NDP's speed-ups over
//! the other engines, and plots in the style of the paper's Figs. 6-8.

use std::path::Path;

use anyhow::Result;

use super::Row;

/// Plots in the style of Figs. 6-8, a series per engine configuration:
/// `scenario-N` shows every engine's wall time. On the virtual clock, when
/// the profile has costs, `scenario-N-modelled` also shows ndpdb's modelled
/// time (what the profile's device would take) beside PostgreSQL's wall time.
pub fn plot(scenario: u32, points: &[(f64, Row)], dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    use crate::output::{Plot, Series};
    let series = |modelled: bool| {
        let mut series: Vec<Series> = Vec::new();
        for (x, r) in points {
            let (name, y) = match (r.engine, modelled) {
                ("ndpdb-ndp", false) => (format!("ndpdb NDP, {} PEs", r.pes.unwrap_or(0)), r.wall_s),
                ("ndpdb-ndp", true) => {
                    (format!("ndpdb NDP, {} PEs (modelled)", r.pes.unwrap_or(0)), r.modelled_s.unwrap_or(0.0))
                }
                ("ndpdb-host", false) => (format!("ndpdb host-only, {} workers", r.workers.unwrap_or(0)), r.wall_s),
                ("ndpdb-host", true) => (
                    format!("ndpdb host-only, {} workers (modelled)", r.workers.unwrap_or(0)),
                    r.modelled_s.unwrap_or(0.0),
                ),
                (_, false) => (format!("PostgreSQL, {} parallel workers", r.workers.unwrap_or(0)), r.wall_s),
                (_, true) => (format!("PostgreSQL, {} parallel workers (wall)", r.workers.unwrap_or(0)), r.wall_s),
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
    let (title, x_label) = match scenario {
        1 => ("Scenario 1: snapshot creation with increasing data volume", "ORDER_LINE tuples"),
        2 => ("Scenario 2: newest version of chains of increasing length", "versions per tuple"),
        3 => ("Scenario 3: snapshots at positions along the version chains", "update rounds before the snapshot"),
        _ => ("Workload", "snapshot marker"),
    };
    let first = &points.first().map(|p| &p.1);
    let (profile, clock) = (first.map_or("", |r| r.profile.as_str()), first.map_or("", |r| r.clock));
    let wall_title = format!("{title} ({profile}, {clock} clock)");
    let name = format!("scenario-{scenario}");
    let mut paths = Plot { title: &wall_title, x_label, y_label: "query wall time (s)", series: series(false) }
        .write(dir, &name)?;
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

pub fn table(rows: &[(f64, Row)]) -> String {
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
                r.pes.map(|p| format!("{p} PEs")).or(r.workers.map(|w| format!("{w} workers"))).unwrap_or_default(),
                r.result.clone().unwrap_or_else(|| "NULL".into()),
                format!("{:.4}", r.wall_s),
                r.modelled_s.map_or("-".into(), |m| format!("{m:.4}")),
                opt(r.link_bytes_to_host),
                opt(r.medium_bytes_read),
            ]
        })
        .collect();
    crate::output::table(
        &[
            "scenario",
            "tuples",
            "versions",
            "snapshot",
            "engine",
            "parallelism",
            "result",
            "wall s (median)",
            "modelled s",
            "link B to host",
            "medium B read",
        ],
        &body,
    )
}

/// How many times faster ndpdb NDP ran than every other engine at each
/// point (median wall times; above 1: NDP was faster), one line per point
/// and PE count. None without NDP rows or without other engines.
pub fn speedups(rows: &[(f64, Row)]) -> Option<String> {
    let label = |r: &Row| match r.engine {
        "ndpdb-host" => format!("ndpdb host {} w", r.workers.unwrap_or(0)),
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
            format!("{} PEs", ndp.pes.unwrap_or(0)),
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
    Some(format!(
        "NDP speed-up (median wall time of the other engine / NDP's; above 1: NDP faster)\n{}",
        crate::output::table(&header, &body)
    ))
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
