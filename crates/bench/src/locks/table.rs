//! The terminal table: one section per experiment that ran, each a heading
//! that states the run's fixed parameters and a table of its rows, and
//! after Exp. 3 the ratio lines that compare each baseline's median with
//! ndpdb's and with the cache-line floor. It reads rows only, so a table
//! can be rebuilt from `results.jsonl`.

use super::rows::{LatencyRow, Row, TransferRow, latency_rows, transfer_rows};

/// The terminal table: one section per experiment that ran.
pub fn table(rows: &[Row]) -> String {
    let sections = [exp1_section(rows), exp2_section(rows), exp3_section(rows)];
    sections.into_iter().flatten().collect::<Vec<_>>().join("\n")
}

fn exp1_section(rows: &[Row]) -> Option<String> {
    let exp1 = latency_rows(rows, 1);
    let first = exp1.first()?;
    let device = exp1.iter().filter(|r| r.side == "device");
    let late: u64 = device.clone().filter_map(|r| r.late_completions).sum();
    let completions: u64 = device.filter_map(|r| r.completions).sum();
    let mut out = format!(
        "Exp. 1 (Fig. 4): lock+unlock latency with c% of requests on keys the other side requests \
         (profile {}, {} host threads, {} PEs, {} keys per side, {} KiB table; host: real clock, measured; device: \
         modelled on the virtual clock, {late} late of {completions} device completions)\n",
        first.profile.as_deref().unwrap_or("-"),
        first.threads,
        first.pes.unwrap_or(0),
        first.keys,
        first.table_bytes.unwrap_or(0) >> 10
    );
    out += &crate::output::table(&LATENCY_HEADERS, &exp1.iter().map(|r| latency_cells(r)).collect::<Vec<_>>());
    Some(out)
}

fn exp2_section(rows: &[Row]) -> Option<String> {
    let exp2 = transfer_rows(rows);
    if exp2.is_empty() {
        return None;
    }
    let mut out =
        "Exp. 2 (Fig. 5): transfer latency, coherent path (the profile's model) and PCIe (MemoryRead completion \
         times on the virtual clock: the model's, none late)\n"
            .to_string();
    out += &crate::output::table(
        &["profile", "bytes", "coherent ns", "coherent cached ns", "PCIe ns", "link"],
        &exp2_cells(&exp2),
    );
    Some(out)
}

fn exp3_section(rows: &[Row]) -> Option<String> {
    let exp3 = latency_rows(rows, 3);
    let first = exp3.first()?;
    let mut out = format!(
        "Exp. 3 (Fig. 6): lock+unlock pairs on the host, {} thread(s), {} keys per thread, no contention, \
         ndpdb's table at each size (real clock)\n",
        first.threads, first.keys,
    );
    let mut headers = LATENCY_HEADERS.to_vec();
    headers.insert(1, "size");
    let cells = |r: &LatencyRow| {
        let mut c = latency_cells(r);
        c.insert(1, r.table_bytes.map_or("-".into(), size_label));
        c
    };
    out += &crate::output::table(&headers, &exp3.iter().map(|r| cells(r)).collect::<Vec<_>>());
    out += &exp3_ratios(&exp3);
    Some(out)
}

/// One line per baseline (the conventional manager, PostgreSQL's own),
/// access and size of ndpdb's table: the baseline's median over ndpdb's,
/// and, where the size has a `floor` line, over the floor's: the best ratio
/// any table of that size could reach on this machine.
fn exp3_ratios(exp3: &[&LatencyRow]) -> String {
    let mut out = String::new();
    for baseline in ["conventional", "postgresql"] {
        for access in ["sequential", "random"] {
            let of_access = || exp3.iter().filter(move |r| r.access == Some(access));
            let Some(c) = of_access().find(|r| r.lock_table == baseline).map(|r| r.p50_ns) else { continue };
            for r in of_access().filter(|r| r.lock_table == "ndpdb") {
                let n = r.p50_ns;
                let size = r.table_bytes.map_or("-".into(), size_label);
                out += &format!(
                    "median {baseline}/ndpdb, {access}, {size} table: {:.2}x ({c} / {n} ns)",
                    c as f64 / n.max(1) as f64
                );
                let floor = of_access().find(|f| f.lock_table == "floor" && f.table_bytes == r.table_bytes);
                if let Some(f) = floor {
                    let f = f.p50_ns;
                    out += &format!(
                        "; at most {:.2}x over the cache-line floor ({c} / {f} ns)",
                        c as f64 / f.max(1) as f64
                    );
                }
                out += "\n";
            }
        }
    }
    out
}

const LATENCY_HEADERS: [&str; 14] = [
    "table",
    "side",
    "access",
    "contention",
    "requests",
    "p50 ns",
    "p90 ns",
    "p99 ns",
    "p99.9 ns",
    "max ns",
    "clock",
    "other side pairs/s",
    "queued/parks",
    "others",
];

fn latency_cells(r: &LatencyRow) -> Vec<String> {
    vec![
        r.lock_table.to_string(),
        r.side.to_string(),
        r.access.unwrap_or("random").to_string(),
        format!("{}%", r.contention_pct),
        r.requests.to_string(),
        r.p50_ns.to_string(),
        r.p90_ns.to_string(),
        r.p99_ns.to_string(),
        r.p999_ns.to_string(),
        r.max_ns.to_string(),
        r.clock.to_string(),
        r.other_side_pairs_per_s.map_or("-".into(), |p| format!("{:.2}M", p / 1e6)),
        r.lock_events.map_or("-".into(), |e| format!("{}/{}", e.queued, e.parks)),
        r.other_cpus_busy.map_or("-".into(), |c| format!("{c:.2}")),
    ]
}

fn exp2_cells(rows: &[&TransferRow]) -> Vec<Vec<String>> {
    let ns = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.0}"));
    let mut body = Vec::new();
    for pcie in rows.iter().filter(|r| r.path == "pcie") {
        let coherent = rows
            .iter()
            .find(|r| r.path == "coherent" && r.profile == pcie.profile && r.transfer_bytes == pcie.transfer_bytes);
        let c = coherent.and_then(|c| c.latency_ns);
        let cached = coherent.and_then(|c| c.cached_latency_ns);
        let name = coherent.and_then(|c| c.interconnect.clone()).unwrap_or_else(|| "-".into());
        body.push(vec![
            pcie.profile.clone(),
            pcie.transfer_bytes.to_string(),
            ns(c),
            ns(cached),
            ns(pcie.latency_ns),
            format!("{} / {}", name, pcie.interconnect.as_deref().unwrap_or("-")),
        ]);
    }
    body
}

/// `64 B`, `256 KiB`, `4 MiB`: bytes in the largest unit that divides them.
pub fn size_label(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let (mut n, mut unit) = (bytes, 0);
    while unit + 1 < UNITS.len() && n >= 1024 && n % 1024 == 0 {
        n /= 1024;
        unit += 1;
    }
    format!("{n} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::super::rows::latency_row;
    use super::*;

    fn exp3_row(lock_table: &'static str, table_bytes: Option<usize>, ns: u64) -> Row {
        let mut row = latency_row(3, lock_table, "host", "real", &[ns], 0.0).unwrap();
        row.access = Some("random");
        row.table_bytes = table_bytes;
        Row::Latency(Box::new(row))
    }

    #[test]
    fn sections_are_separated_by_one_blank_line_and_ratios_close_exp3() {
        let mut exp1 = latency_row(1, "ndpdb", "host", "real", &[100, 300], 0.0).unwrap();
        exp1.profile = Some("u280-nvm".into());
        let transfer = TransferRow {
            experiment: 2,
            profile: "u280-nvm".into(),
            transfer_bytes: 64,
            path: "pcie",
            latency_ns: Some(900.0),
            cached_latency_ns: None,
            interconnect: Some("pcie".into()),
            clock: "virtual",
        };
        let rows = vec![
            Row::Latency(Box::new(exp1)),
            Row::Transfer(transfer),
            exp3_row("ndpdb", Some(4 << 20), 100),
            exp3_row("floor", Some(4 << 20), 50),
            exp3_row("conventional", None, 200),
        ];
        let text = table(&rows);
        let sections: Vec<&str> = text.split("\n\n").collect();
        assert_eq!(sections.len(), 3, "{text}");
        for (section, heading) in sections.iter().zip(["Exp. 1 (Fig. 4)", "Exp. 2 (Fig. 5)", "Exp. 3 (Fig. 6)"]) {
            assert!(section.starts_with(heading), "{section}");
        }
        assert!(sections[1].contains("900"), "{}", sections[1]);
        let ratio = "median conventional/ndpdb, random, 4 MiB table: 2.00x (200 / 100 ns); at most 4.00x over the \
                     cache-line floor (200 / 50 ns)\n";
        assert!(text.ends_with(ratio), "{text}");
        // Without the earlier experiments, Exp. 3 opens the table; no rows, no table.
        assert!(table(&rows[2..]).starts_with("Exp. 3 (Fig. 6)"));
        assert_eq!(table(&[]), "");
    }

    #[test]
    fn size_labels_use_the_largest_whole_unit() {
        let labels: Vec<String> = [64, 1 << 10, 256 << 10, 1 << 20, 4 << 20, 1 << 30].map(size_label).to_vec();
        assert_eq!(labels, ["64 B", "1 KiB", "256 KiB", "1 MiB", "4 MiB", "1 GiB"]);
        assert_eq!(size_label(1536), "1536 B");
    }
}
