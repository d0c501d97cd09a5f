//! One go-ycsb phase (`load` or `run`) against one server, and what its
//! output says.
//!
//! go-ycsb prints, every `-interval` seconds and once at the end (after
//! "Run finished, takes …"), one line per operation:
//!
//! ```text
//!  READ   - Takes(s): 10.0, Count: 49871, OPS: 4987.3, Avg(us): 791, Min(us): 201, Max(us): 28000,
//!           50th(us): 700, 90th(us): 1200, 95th(us): 1500, 99th(us): 2900, 99.9th(us): …, 99.99th(us): …
//!  UPDATE - …
//!  TOTAL  - …
//!  UPDATE_ERROR - Takes(s): …, Count: 3, …
//! ```
//!
//! The figures reported are go-ycsb's own (parsed, not recomputed); the
//! periodic lines' cumulative counts give ops/s per interval for the plot.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Serialize;

/// One operation's figures in go-ycsb's summary.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OpStats {
    pub op: String,
    pub count: u64,
    pub ops_per_s: f64,
    pub avg_us: f64,
    pub p99_us: f64,
}

/// A phase's output: the final summary and ops/s per interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    pub ops: Vec<OpStats>,
    /// (seconds since start, ops/s in the interval ending there).
    pub progress: Vec<(f64, f64)>,
}

impl Output {
    /// The TOTAL line (go-ycsb prints it when more than one operation ran)
    /// or the one operation's.
    pub fn total(&self) -> Option<&OpStats> {
        self.ops.iter().find(|o| o.op == "TOTAL").or_else(|| self.ops.iter().find(|o| !o.op.ends_with("_ERROR")))
    }

    /// Failed operations (the `*_ERROR` lines' counts).
    pub fn errors(&self) -> u64 {
        self.ops.iter().filter(|o| o.op.ends_with("_ERROR")).map(|o| o.count).sum()
    }
}

/// Parses go-ycsb's plain output.
pub fn parse(text: &str) -> Output {
    let mut out = Output::default();
    let mut periodic: Vec<(f64, OpStats)> = Vec::new();
    let mut finished = false;
    for line in text.lines() {
        if line.starts_with("Run finished") {
            finished = true;
        } else if let Some((t, op)) = parse_line(line) {
            if finished {
                out.ops.push(op);
            } else {
                periodic.push((t, op));
            }
        }
    }
    out.progress = progress(&periodic);
    out
}

/// Ops/s per interval from the periodic blocks. A block lists operations
/// in name order, so a name not after the previous one starts the next
/// block; each operation's `Takes(s)` counts from its own first call, so
/// a block's time is its largest.
fn progress(lines: &[(f64, OpStats)]) -> Vec<(f64, f64)> {
    let mut blocks: Vec<(f64, Vec<&OpStats>)> = Vec::new();
    for (t, op) in lines {
        match blocks.last_mut() {
            Some((bt, ops)) if ops.last().is_some_and(|last| last.op < op.op) => {
                *bt = bt.max(*t);
                ops.push(op);
            }
            _ => blocks.push((*t, vec![op])),
        }
    }
    let (mut last_t, mut last_count) = (0.0, 0u64);
    let mut out = Vec::new();
    for (t, ops) in blocks {
        let count = match ops.iter().find(|o| o.op == "TOTAL") {
            Some(o) => o.count,
            None => ops.iter().filter(|o| !o.op.ends_with("_ERROR")).map(|o| o.count).sum(),
        };
        if t > last_t {
            out.push((t, count.saturating_sub(last_count) as f64 / (t - last_t)));
            (last_t, last_count) = (t, count);
        }
    }
    out
}

/// `OP - Takes(s): 1.0, Count: 5, OPS: 5.0, Avg(us): …, 99th(us): …`.
fn parse_line(line: &str) -> Option<(f64, OpStats)> {
    let (op, rest) = line.split_once(" - ")?;
    let op = op.trim();
    if op.is_empty() || !op.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
        return None;
    }
    let field = |name: &str| -> Option<f64> {
        rest.split(", ").find_map(|kv| kv.strip_prefix(name)?.strip_prefix(": ")?.trim().parse().ok())
    };
    let stats = OpStats {
        op: op.to_string(),
        count: field("Count")? as u64,
        ops_per_s: field("OPS")?,
        avg_us: field("Avg(us)")?,
        p99_us: field("99th(us)").unwrap_or(f64::NAN),
    };
    Some((field("Takes(s)")?, stats))
}

/// How go-ycsb reaches a server (lib/pq: a host name, or a Unix socket
/// directory through PGHOST with `pg.host` empty).
pub struct Conn<'a> {
    pub host: &'a str,
    pub port: u16,
    pub user: &'a str,
    pub database: &'a str,
}

/// Runs `go-ycsb <phase> pg -P <workload> -p k=v ...`; returns its stdout.
pub fn phase(binary: &Path, phase: &str, workload: &Path, conn: &Conn, props: &[(String, String)]) -> Result<String> {
    let mut cmd = Command::new(binary);
    cmd.args([phase, "pg", "-P"]).arg(workload).args(["--interval", "1"]);
    let socket = conn.host.starts_with('/');
    let mut all = vec![
        ("pg.host".to_string(), if socket { String::new() } else { conn.host.to_string() }),
        ("pg.port".into(), conn.port.to_string()),
        ("pg.user".into(), conn.user.to_string()),
        ("pg.db".into(), conn.database.to_string()),
        ("pg.sslmode".into(), "disable".into()),
    ];
    all.extend(props.iter().cloned());
    for (k, v) in &all {
        cmd.arg("-p").arg(format!("{k}={v}"));
    }
    if socket {
        cmd.env("PGHOST", conn.host);
    }
    let out = cmd.output().with_context(|| format!("running {}", binary.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || !stdout.contains("Run finished") {
        bail!(
            "go-ycsb {phase} failed ({}):\n{}\n{}",
            out.status,
            tail(&stdout, 20),
            tail(&String::from_utf8_lossy(&out.stderr), 20)
        );
    }
    Ok(stdout)
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "\
***************** properties *****************
\"threadcount\"=\"8\"
**********************************************
READ   - Takes(s): 1.0, Count: 900, OPS: 900.0, Avg(us): 700, Min(us): 100, Max(us): 9000, 50th(us): 600, 90th(us): 900, 95th(us): 1000, 99th(us): 2000, 99.9th(us): 5000, 99.99th(us): 9000
TOTAL  - Takes(s): 1.0, Count: 1000, OPS: 1000.0, Avg(us): 710, Min(us): 100, Max(us): 9000, 50th(us): 600, 90th(us): 900, 95th(us): 1000, 99th(us): 2000, 99.9th(us): 5000, 99.99th(us): 9000
UPDATE - Takes(s): 1.0, Count: 100, OPS: 100.0, Avg(us): 800, Min(us): 100, Max(us): 9000, 50th(us): 600, 90th(us): 900, 95th(us): 1000, 99th(us): 2100, 99.9th(us): 5000, 99.99th(us): 9000
READ   - Takes(s): 2.0, Count: 2700, OPS: 1350.0, Avg(us): 700, Min(us): 100, Max(us): 9000, 50th(us): 600, 90th(us): 900, 95th(us): 1000, 99th(us): 2000, 99.9th(us): 5000, 99.99th(us): 9000
TOTAL  - Takes(s): 2.0, Count: 3000, OPS: 1500.0, Avg(us): 710, Min(us): 100, Max(us): 9000, 50th(us): 600, 90th(us): 900, 95th(us): 1000, 99th(us): 2000, 99.9th(us): 5000, 99.99th(us): 9000
**********************************************
Run finished, takes 2.5s
READ   - Takes(s): 2.5, Count: 3600, OPS: 1440.0, Avg(us): 690, Min(us): 100, Max(us): 9000, 50th(us): 600, 90th(us): 900, 95th(us): 1000, 99th(us): 1900, 99.9th(us): 5000, 99.99th(us): 9000
TOTAL  - Takes(s): 2.5, Count: 4000, OPS: 1600.0, Avg(us): 700, Min(us): 100, Max(us): 9000, 50th(us): 600, 90th(us): 900, 95th(us): 1000, 99th(us): 2000, 99.9th(us): 5000, 99.99th(us): 9000
UPDATE - Takes(s): 2.5, Count: 398, OPS: 159.2, Avg(us): 800, Min(us): 100, Max(us): 9000, 50th(us): 600, 90th(us): 900, 95th(us): 1000, 99th(us): 2500, 99.9th(us): 5000, 99.99th(us): 9000
UPDATE_ERROR - Takes(s): 2.5, Count: 2, OPS: 0.8, Avg(us): 800, Min(us): 100, Max(us): 9000, 50th(us): 600, 90th(us): 900, 95th(us): 1000, 99th(us): 2500, 99.9th(us): 5000, 99.99th(us): 9000
";

    #[test]
    fn the_summary_and_the_per_second_rates_are_go_ycsbs() {
        let o = parse(OUT);
        assert_eq!(o.ops.len(), 4);
        let total = o.total().unwrap();
        assert_eq!((total.count, total.ops_per_s, total.avg_us, total.p99_us), (4000, 1600.0, 700.0, 2000.0));
        assert_eq!(o.errors(), 2);
        assert_eq!(
            o.ops[2],
            OpStats { op: "UPDATE".into(), count: 398, ops_per_s: 159.2, avg_us: 800.0, p99_us: 2500.0 }
        );
        // Interval rates from the cumulative TOTAL counts: 1000/1 s, 2000/1 s.
        assert_eq!(o.progress, vec![(1.0, 1000.0), (2.0, 2000.0)]);
        assert_eq!(parse("no summary here\n"), Output::default());
    }
}
