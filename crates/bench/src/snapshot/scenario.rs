//! The paper's scenarios 1-3 (neoDBMS, ICDE'22, Figs. 6-8) as composer
//! workloads, and where a row sits on its scenario's plot.

use anyhow::{Result, bail};
use ndpdb_format::ndp::Aggregate;
use ndpdb_workload::OL_AMOUNT;

use super::Row;
use crate::compose::{Choice, Level, Query, Step, Workload};

/// Scenario `n` of the paper as composer workloads: (x value of the point,
/// workload), the query `op` of `ol_amount`. `positions` picks scenario 3's
/// snapshot markers, as update rounds before the snapshot (`0..=rounds`);
/// empty: all of them.
pub fn scenario(n: u32, rows: u64, rounds: u32, op: Aggregate, positions: &[u32]) -> Result<Vec<(f64, Workload)>> {
    if rows == 0 {
        bail!("--rows 0: a scenario loads ORDER_LINE tuples; choose at least 1");
    }
    if let Some(p) = positions.iter().find(|&&p| p > rounds) {
        bail!("--positions {p}: scenario 3's snapshots lie after 0..={rounds} update rounds (--rounds {rounds})");
    }
    let query = Query { op, column: OL_AMOUNT.into(), predicate: None };
    let w = |name: String, steps: Vec<Step>| Workload { name, steps, query: query.clone() };
    Ok(match n {
        // Fig. 6: time against data volume, one version per tuple.
        1 => {
            let mut sizes: Vec<u64> = (1..=4).map(|i| rows * i / 4).filter(|&r| r > 0).collect();
            sizes.dedup();
            sizes
                .into_iter()
                .map(|r| {
                    (r as f64, w(format!("scenario 1: {r} tuples"), vec![Step::Insert(r), marker("newest".into())]))
                })
                .collect()
        }
        // Fig. 7: time against versions per tuple, the newest version visible.
        2 => (0..=rounds)
            .map(|k| {
                let mut steps = vec![Step::Insert(rows)];
                steps.extend((0..k).map(|_| Step::Update(None, Choice::Uniform)));
                steps.push(marker("newest".into()));
                (f64::from(k + 1), w(format!("scenario 2: {} versions per tuple", k + 1), steps))
            })
            .collect(),
        // Fig. 8: time against the snapshot's position on chains of rounds+1 versions.
        3 => {
            let at = |j: u32| positions.is_empty() || positions.contains(&j);
            let mut steps = vec![Step::Insert(rows)];
            for j in 0..rounds {
                if at(j) {
                    steps.push(marker(format!("after {j} rounds")));
                }
                steps.push(Step::Update(None, Choice::Uniform));
            }
            if at(rounds) {
                steps.push(marker(format!("after {rounds} rounds")));
            }
            vec![(0.0, w(format!("scenario 3: snapshots along chains of {} versions", rounds + 1), steps))]
        }
        other => bail!("there is no scenario {other}: the paper has scenarios 1, 2 and 3"),
    })
}

fn marker(label: String) -> Step {
    Step::Snapshot(Level::RepeatableRead, label)
}

/// The x value of a row for its plot: scenario 3's update rounds before
/// the snapshot, a composer file's (scenario 0) step number of the row's
/// marker, the point's own x value otherwise.
pub fn x_of(scenario: u32, point_x: f64, w: &Workload, row: &Row) -> f64 {
    match scenario {
        0 => w.marker_step(&row.snapshot_position).map_or(point_x, |s| s as f64),
        3 => row.snapshot_position.trim_start_matches("after ").trim_end_matches(" rounds").parse().unwrap_or(point_x),
        _ => point_x,
    }
}

/// How a run's plot is drawn: its title, x axis and file name.
pub struct Figure {
    pub title: String,
    pub x_label: &'static str,
    /// The file name without extension.
    pub stem: String,
}

impl Figure {
    /// Scenario `n`'s figure, or (`n` = 0) composer workload `w`'s, named
    /// after the workload.
    pub fn of(n: u32, w: &Workload) -> Figure {
        let (title, x_label) = match n {
            1 => ("Scenario 1: snapshot creation with increasing data volume".to_string(), "ORDER_LINE tuples"),
            2 => ("Scenario 2: newest version of chains of increasing length".to_string(), "versions per tuple"),
            3 => (
                "Scenario 3: snapshots at positions along the version chains".to_string(),
                "update rounds before the snapshot",
            ),
            _ => (format!("{}: the query at each snapshot marker", w.name), "workload step of the snapshot marker"),
        };
        let stem = if n == 0 { format!("workload-{}", slug(&w.name)) } else { format!("scenario-{n}") };
        Figure { title, x_label, stem }
    }
}

/// `name` as a file name: lower-case letters, digits and dashes, at most 48
/// characters (a path's file stem when the name is the file's path).
fn slug(name: &str) -> String {
    let name = match name.strip_suffix(".toml") {
        Some(path) => std::path::Path::new(path).file_name().and_then(|s| s.to_str()).unwrap_or(path),
        None => name,
    };
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(48);
    let out = out.trim_end_matches('-');
    if out.is_empty() { "unnamed".to_string() } else { out.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_3_positions_pick_its_markers() {
        let markers = |positions: &[u32]| -> Vec<String> {
            let (_, w) = scenario(3, 10, 4, Aggregate::Sum, positions).unwrap().remove(0);
            w.steps
                .iter()
                .filter_map(|s| match s {
                    Step::Snapshot(_, label) => Some(label.clone()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(markers(&[]).len(), 5);
        assert_eq!(markers(&[0, 4]), vec!["after 0 rounds".to_string(), "after 4 rounds".to_string()]);
        let e = scenario(3, 10, 2, Aggregate::Sum, &[3]).unwrap_err().to_string();
        assert!(e.contains("--positions 3") && e.contains("0..=2"), "{e}");
    }

    /// A composer file's markers sit at their steps, and its plot is named
    /// and titled after the workload.
    #[test]
    fn a_composer_plot_places_markers_at_their_steps_and_is_named_after_the_workload() {
        let text = "name = \"Long report, while orders change!\"\n[[step]]\nload = 10\n[[step]]\nsnapshot = \"rr\"\n\
                    label = \"start\"\n[[step]]\nupdate = 5\n[[step]]\nsnapshot = \"rr\"\n[query]\nop = \"sum\"\n";
        let w = Workload::parse(text, "dir/w.toml").unwrap();
        let row = |label: &str| Row { snapshot_position: label.into(), ..Row::default() };
        assert_eq!(x_of(0, 0.0, &w, &row("start")), 2.0);
        assert_eq!(x_of(0, 0.0, &w, &row("marker 2")), 4.0);
        let f = Figure::of(0, &w);
        assert_eq!(f.stem, "workload-long-report-while-orders-change");
        assert!(f.title.starts_with("Long report, while orders change!: "), "{}", f.title);
        let unnamed =
            Workload::parse(&text.replace("name = \"Long report, while orders change!\"\n", ""), "dir/My W.toml");
        assert_eq!(Figure::of(0, &unnamed.unwrap()).stem, "workload-my-w");
        assert_eq!(Figure::of(2, &w).stem, "scenario-2");
    }
}
