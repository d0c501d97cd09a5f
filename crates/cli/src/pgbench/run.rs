//! One engine's pgbench run: `pgbench -i`, the timed run, and the TPC-B
//! invariants read back with psql. pgbench's own summary is parsed, never
//! re-computed: the figures are the ones pgbench printed.

use std::process::{Command, Output};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

use super::targets::Endpoint;

/// What pgbench reported for one timed run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub transactions: u64,
    pub failed: u64,
    pub retried: u64,
    pub tps: f64,
    pub latency_avg_ms: f64,
    pub latency_stddev_ms: Option<f64>,
    /// `-P 1`'s lines: (seconds since the start, tps in that second).
    pub progress: Vec<(f64, f64)>,
}

/// The sums TPC-B keeps equal, and history's row count.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Invariants {
    pub accounts: i64,
    pub tellers: i64,
    pub branches: i64,
    pub history: i64,
    pub history_rows: u64,
}

impl Invariants {
    /// Whether the four sums agree and history holds one row per
    /// transaction pgbench counted.
    pub fn hold(&self, transactions: u64) -> bool {
        self.accounts == self.tellers
            && self.tellers == self.branches
            && self.branches == self.history
            && self.history_rows == transactions
    }
}

fn run(program: &str, args: &[String]) -> Result<Output> {
    let out =
        Command::new(program).args(args).env("PGCONNECT_TIMEOUT", "30").output().with_context(|| {
            format!("running {program}; is PostgreSQL's client installed (Debian: postgresql-client)?")
        })?;
    if !out.status.success() {
        bail!(
            "{program} {} failed ({}):\n{}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out)
}

/// `pgbench -i -s scale`; returns its wall time in seconds.
pub fn init(endpoint: &Endpoint, scale: u32) -> Result<f64> {
    let mut args = vec!["-i".to_string(), "-q".into(), "-s".into(), scale.to_string()];
    args.extend(endpoint.args());
    let t0 = Instant::now();
    run("pgbench", &args)?;
    Ok(t0.elapsed().as_secs_f64())
}

/// The timed run's flags beyond the connection.
#[derive(Debug, Clone)]
pub struct RunFlags {
    pub clients: u32,
    pub jobs: u32,
    pub seconds: u32,
    pub select_only: bool,
    pub max_tries: u32,
}

/// The timed run, with per-second progress.
pub fn timed(endpoint: &Endpoint, f: &RunFlags) -> Result<Summary> {
    let mut args = vec![
        "-c".to_string(),
        f.clients.to_string(),
        "-j".into(),
        f.jobs.to_string(),
        "-T".into(),
        f.seconds.to_string(),
        "-P".into(),
        "1".into(),
        "--max-tries".into(),
        f.max_tries.to_string(),
    ];
    if f.select_only {
        args.push("-S".into());
    }
    args.extend(endpoint.args());
    let out = run("pgbench", &args)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    parse_summary(&stdout, &stderr).with_context(|| format!("reading pgbench's output:\n{stdout}{stderr}"))
}

/// Parses pgbench 15's summary (stdout) and progress lines (stderr).
pub fn parse_summary(stdout: &str, stderr: &str) -> Result<Summary> {
    let field =
        |prefix: &str| -> Option<&str> { stdout.lines().find_map(|l| l.trim().strip_prefix(prefix)).map(str::trim) };
    let number = |prefix: &str| -> Result<f64> {
        let text = field(prefix).ok_or_else(|| anyhow!("no \"{prefix}\" line"))?;
        let first = text.split_whitespace().next().unwrap_or("");
        first.parse::<f64>().map_err(|_| anyhow!("\"{prefix}\" is followed by {text:?}, not a number"))
    };
    let transactions = field("number of transactions actually processed:")
        .and_then(|t| t.split('/').next())
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| anyhow!("no count of processed transactions"))?;
    let progress = stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("progress: ")?;
            let mut parts = rest.split(',');
            let t = parts.next()?.trim().strip_suffix(" s")?.parse().ok()?;
            let tps = parts.next()?.trim().strip_suffix(" tps")?.parse().ok()?;
            Some((t, tps))
        })
        .collect();
    Ok(Summary {
        transactions,
        failed: number("number of failed transactions:").map_or(0, |n| n as u64),
        retried: number("number of transactions retried:").map_or(0, |n| n as u64),
        tps: number("tps =")?,
        latency_avg_ms: number("latency average =")?,
        latency_stddev_ms: number("latency stddev =").ok(),
        progress,
    })
}

/// Reads the TPC-B sums and history's row count with psql.
pub fn invariants(endpoint: &Endpoint) -> Result<Invariants> {
    let sql = "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), \
               (SELECT sum(bbalance) FROM pgbench_branches), (SELECT coalesce(sum(delta), 0) FROM pgbench_history), \
               (SELECT count(*) FROM pgbench_history)";
    let mut args = vec!["-X".to_string(), "-A".into(), "-t".into(), "-v".into(), "ON_ERROR_STOP=1".into()];
    args.extend(endpoint.args());
    args.extend(["-c".into(), sql.into()]);
    let out = run("psql", &args)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let cells: Vec<&str> = text.trim().split('|').collect();
    let [a, t, b, h, n] = cells.as_slice() else { bail!("psql answered {text:?}, not five columns") };
    let int = |s: &str| -> Result<i64> { s.parse().map_err(|_| anyhow!("{s:?} is not an integer")) };
    Ok(Invariants {
        accounts: int(a)?,
        tellers: int(t)?,
        branches: int(b)?,
        history: int(h)?,
        history_rows: n.parse().map_err(|_| anyhow!("{n:?} is not a row count"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STDOUT: &str = "pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 1
query mode: simple
number of clients: 8
number of threads: 2
maximum number of tries: 3
duration: 5 s
number of transactions actually processed: 4321
number of failed transactions: 2 (0.046%)
number of transactions retried: 17 (0.393%)
total number of retries: 20
latency average = 9.263 ms
latency stddev = 4.120 ms
initial connection time = 5.610 ms
tps = 863.708125 (without initial connection time)
";

    #[test]
    fn reads_pgbench_15s_summary_and_progress() {
        let stderr = "starting vacuum...end.\nprogress: 1.0 s, 850.9 tps, lat 9.300 ms stddev 4.000, 0 failed\n\
                      progress: 2.0 s, 870.0 tps, lat 9.1 ms stddev 4.2, 1 failed, 3 retried, 4 retries\n";
        let s = parse_summary(STDOUT, stderr).unwrap();
        assert_eq!((s.transactions, s.failed, s.retried), (4321, 2, 17));
        assert_eq!((s.tps, s.latency_avg_ms, s.latency_stddev_ms), (863.708125, 9.263, Some(4.12)));
        assert_eq!(s.progress, vec![(1.0, 850.9), (2.0, 870.0)]);
    }

    #[test]
    fn a_summary_without_tps_is_an_error() {
        let cut = STDOUT.replace("tps = 863.708125 (without initial connection time)\n", "");
        assert!(parse_summary(&cut, "").is_err());
    }

    #[test]
    fn invariants_need_equal_sums_and_one_history_row_per_transaction() {
        let ok = Invariants { accounts: -5, tellers: -5, branches: -5, history: -5, history_rows: 9 };
        assert!(ok.hold(9));
        assert!(!ok.hold(10));
        assert!(!Invariants { branches: 0, ..ok }.hold(9));
    }
}
