//! A SQL benchmark's rows: one per query and engine, printed as a table
//! with a per-engine summary, written as JSON lines, and drawn as grouped
//! bars (`plot.rs`).

use anyhow::Result;
use ndpdb_bench::report::Report;
use serde::Serialize;

use super::engines::Answer;

/// One query on one engine. JSON field names are the issue's; times are
/// the median of the timed runs.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub workload: &'static str,
    pub query: String,
    pub engine: &'static str,
    pub scale: f64,
    pub wall_s: f64,
    pub wall_s_runs: Vec<f64>,
    /// ndpdb: the modelled time of the plan's device work (scans).
    pub modelled_s: Option<f64>,
    pub rows: u64,
    /// ndpdb: whether the answer equals PostgreSQL's; None for the others.
    pub matches_postgresql: Option<bool>,
    pub link_bytes_to_host: Option<u64>,
    pub link_bytes_to_device: Option<u64>,
    pub medium_bytes_read: Option<u64>,
    /// ndpdb: the optimizer's time for the query.
    pub plan_ms: Option<f64>,
    /// JOB: tables joined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relations: Option<usize>,
    pub profile: String,
    pub clock: &'static str,
    /// ndpdb's and PostgreSQL's `work_mem` (`--work-mem`); None for DuckDB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_mem: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Row {
    pub fn new(
        workload: &'static str,
        query: &str,
        engine: &'static str,
        scale: f64,
        profile: &str,
        clock: &'static str,
        relations: Option<usize>,
    ) -> Row {
        Row {
            workload,
            query: query.to_string(),
            engine,
            scale,
            wall_s: 0.0,
            wall_s_runs: Vec::new(),
            modelled_s: None,
            rows: 0,
            matches_postgresql: None,
            link_bytes_to_host: None,
            link_bytes_to_device: None,
            medium_bytes_read: None,
            plan_ms: None,
            relations,
            profile: profile.to_string(),
            clock,
            work_mem: None,
            error: None,
        }
    }

    /// The first timed run's counters and the median of `walls`.
    pub fn set_answer(&mut self, a: &Answer, walls: Vec<f64>) {
        self.wall_s = median(&walls);
        self.wall_s_runs = walls;
        self.rows = a.row_count;
        self.modelled_s = a.modelled_s;
        self.link_bytes_to_host = a.link_bytes_to_host;
        self.link_bytes_to_device = a.link_bytes_to_device;
        self.medium_bytes_read = a.medium_bytes_read;
        self.plan_ms = a.plan_ms;
    }
}

/// The median (the mean of the middle two for an even count); 0 for none.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// Prints the table and summary (and JSON lines when asked), writes them
/// and the plot into the run's results directory.
pub fn write(report: &Report, workload: &str, rows: &[Row]) -> Result<()> {
    let text = table(rows) + &summary(rows);
    report.print(rows, &text)?;
    let results = report.results(&format!("bench-{workload}"))?;
    results.jsonl(&format!("{workload}.jsonl"), rows)?;
    results.text("table.txt", &text)?;
    let plots = results.plot(|dir| super::plot::draw(rows, workload, dir));
    results.announce(&plots);
    Ok(())
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

/// One line per query and engine.
pub fn table(rows: &[Row]) -> String {
    let head = rows.first().map_or(String::new(), |r| {
        let work_mem = rows.iter().find_map(|r| r.work_mem.as_deref()).unwrap_or("-");
        format!(
            "{} scale {}: ndpdb on profile {}, {} clock (modelled s: the device model's time of the plan's \
             scans); PostgreSQL and DuckDB: wall times on this machine; work_mem {work_mem} for ndpdb and \
             PostgreSQL\n",
            r.workload, r.scale, r.profile, r.clock
        )
    });
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.query.clone(),
                r.engine.to_string(),
                opt(r.relations),
                if r.error.is_some() { "error".into() } else { r.rows.to_string() },
                format!("{:.4}", r.wall_s),
                r.modelled_s.map_or("-".into(), |m| format!("{m:.4}")),
                opt(r.link_bytes_to_host),
                r.plan_ms.map_or("-".into(), |m| format!("{m:.2}")),
                r.matches_postgresql.map_or("-", |m| if m { "yes" } else { "NO" }).to_string(),
            ]
        })
        .collect();
    let headers = [
        "query",
        "engine",
        "relations",
        "rows",
        "wall s (median)",
        "modelled s",
        "link B to host",
        "plan ms",
        "= PostgreSQL",
    ];
    head + &ndpdb_bench::output::table(&headers, &body)
}

/// Per engine: total median wall time over the queries every engine
/// answered, the largest ratio to PostgreSQL, and how many answers matched.
pub fn summary(rows: &[Row]) -> String {
    let mut engines: Vec<&'static str> = Vec::new();
    for r in rows {
        if !engines.contains(&r.engine) {
            engines.push(r.engine);
        }
    }
    let queries: Vec<&str> = {
        let mut q: Vec<&str> = Vec::new();
        for r in rows {
            if !q.contains(&r.query.as_str()) {
                q.push(&r.query);
            }
        }
        q
    };
    let find = |q: &str, e: &str| rows.iter().find(|r| r.query == q && r.engine == e && r.error.is_none());
    let common: Vec<&str> = queries.iter().copied().filter(|q| engines.iter().all(|e| find(q, e).is_some())).collect();
    let mut body = Vec::new();
    for e in &engines {
        let total: f64 = common.iter().filter_map(|q| find(q, e)).map(|r| r.wall_s).sum();
        let pg_total: f64 = common.iter().filter_map(|q| find(q, "postgresql")).map(|r| r.wall_s).sum();
        let worst = common
            .iter()
            .filter_map(|q| Some((q, find(q, e)?.wall_s / find(q, "postgresql")?.wall_s.max(1e-9))))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let mine: Vec<&Row> = rows.iter().filter(|r| r.engine == *e).collect();
        let checked = mine.iter().filter(|r| r.matches_postgresql.is_some()).count();
        let matched = mine.iter().filter(|r| r.matches_postgresql == Some(true)).count();
        body.push(vec![
            e.to_string(),
            format!("{total:.3}"),
            if pg_total > 0.0 { format!("{:.2}", total / pg_total) } else { "-".into() },
            worst.map_or("-".into(), |(q, x)| format!("{x:.2} ({q})")),
            if checked > 0 { format!("{matched}/{checked}") } else { "-".into() },
        ]);
    }
    let headers = ["engine", "total wall s", "/ PostgreSQL", "worst query / PostgreSQL", "= PostgreSQL"];
    format!(
        "\nsummary over the {} queries every engine answered\n{}",
        common.len(),
        ndpdb_bench::output::table(&headers, &body)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(q: &str, engine: &'static str, wall_s: f64, matches: Option<bool>) -> Row {
        let mut r = Row::new("tpch", q, engine, 0.1, "ideal", "virtual", None);
        r.wall_s = wall_s;
        r.matches_postgresql = matches;
        r
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn summary_totals_ratios_and_matches() {
        let rows = vec![
            row("Q1", "postgresql", 1.0, None),
            row("Q1", "ndpdb-host", 2.0, Some(true)),
            row("Q6", "postgresql", 1.0, None),
            row("Q6", "ndpdb-host", 0.5, Some(false)),
        ];
        let s = summary(&rows);
        let host = s.lines().find(|l| l.starts_with("ndpdb-host")).unwrap();
        assert!(host.contains("2.500") && host.contains("1.25") && host.contains("2.00 (Q1)"), "{s}");
        assert!(host.contains("1/2"), "{s}");
        let t = table(&rows);
        assert!(t.contains("NO") && t.contains("yes"), "{t}");
    }

    #[test]
    fn json_lines_have_the_issues_fields() {
        let v = serde_json::to_value(row("Q1", "ndpdb-ndp", 1.0, Some(true))).unwrap();
        for f in [
            "query",
            "engine",
            "scale",
            "wall_s",
            "modelled_s",
            "rows",
            "matches_postgresql",
            "link_bytes_to_host",
            "profile",
            "clock",
            "plan_ms",
        ] {
            assert!(v.get(f).is_some(), "{f} missing in {v}");
        }
    }
}
