//! The rows a run produces, one JSON line each: a latency distribution
//! (Exp. 1 and 3) or a transfer (Exp. 2). Their keys and values are the
//! interface to whoever reads `results.jsonl` (`docs/locks-bench.md` lists
//! them), so the experiments fill them and the table and plots only read
//! them. Also the latency histogram a row carries, and the selectors the
//! reports share.

use anyhow::{Result, anyhow};
use ndpdb_locktable::LockCounters;
use serde::Serialize;

use super::host_bench::{LatencySummary, summarize};

/// Histogram buckets per decade of latency (Exp. 3).
pub(super) const BINS_PER_DECADE: f64 = 20.0;

/// One JSON line: a latency distribution (Exp. 1, 3) or a transfer (Exp. 2).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Row {
    Latency(Box<LatencyRow>),
    Transfer(TransferRow),
}

#[derive(Debug, Clone, Serialize)]
pub struct LatencyRow {
    pub experiment: u32,
    /// `ndpdb` (the shared table), `conventional` (ndpdb's PostgreSQL-style
    /// manager), `postgresql` (PostgreSQL's own, Exp. 3) or `floor` (Exp. 3:
    /// the pair's two CASes on the bucket line alone, no protocol).
    pub lock_table: &'static str,
    /// Who made the measured requests: `host` or `device`.
    pub side: &'static str,
    pub contention_pct: u32,
    /// Exp. 3: `sequential` or `random`; Exp. 1 draws at random (null).
    pub access: Option<&'static str>,
    /// Lock+unlock pairs measured.
    pub requests: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    /// `real` for host samples; the device clock's name for modelled ones.
    pub clock: &'static str,
    /// The device's profile (Exp. 1); null for host-only runs (Exp. 3).
    pub profile: Option<String>,
    /// Host threads (measuring, or loading when the device is measured).
    pub threads: usize,
    /// PEs (loading, or measuring); null without a device.
    pub pes: Option<u32>,
    /// Exp. 1: keys per side's window; Exp. 3: keys per thread.
    pub keys: u64,
    /// Bytes of ndpdb's table (and of a `floor` line's); null for the
    /// conventional manager and PostgreSQL's.
    pub table_bytes: Option<usize>,
    /// Exp. 1: the share of the measured side's window that the other side
    /// requests (the contention level, rounded to whole keys).
    pub shared_window_pct: Option<f64>,
    /// Exp. 1, host side: the share of its requests that went to shared keys.
    pub shared_requests_pct: Option<f64>,
    /// Exp. 1: lock+unlock pairs per second of real time that the other side
    /// completed during the measurement.
    pub other_side_pairs_per_s: Option<f64>,
    /// The cost of timing an empty interval, included in each host sample.
    pub timer_overhead_ns: Option<u64>,
    /// Host lines measured in this process: CPUs that other processes kept
    /// busy on average during the phase (`machine::CpuMark`); they compete
    /// for the shared cache. Null for modelled lines, PostgreSQL's (its
    /// backend is the measured work) and where Linux's counters are missing.
    pub other_cpus_busy: Option<f64>,
    /// What the shared table counted during the phase (both sides).
    pub lock_events: Option<LockEvents>,
    /// Real time of the phase.
    pub wall_s: f64,
    /// Device rows: the device's completions during the measured execution
    /// and the late ones (the virtual clock holds none: always 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_completions: Option<u64>,
    /// `postgresql` rows: the server that was timed (`pg_config --version`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres_version: Option<String>,
    /// Exp. 3: non-empty buckets of the latency histogram.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Vec<HistBin>>,
}

/// Events of the shared table during a phase (`LockCounters` differences).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LockEvents {
    pub acquired: u64,
    pub queued: u64,
    pub handovers: u64,
    pub full: u64,
    pub cas_failures: u64,
    pub busy_waits: u64,
    pub parks: u64,
}

impl LockEvents {
    /// What the table counted from `a` to `b`.
    pub(super) fn between(a: &LockCounters, b: &LockCounters) -> LockEvents {
        LockEvents {
            acquired: b.acquired - a.acquired,
            queued: b.queued - a.queued,
            handovers: b.handovers - a.handovers,
            full: b.full - a.full,
            cas_failures: b.cas_failures - a.cas_failures,
            busy_waits: b.busy_waits - a.busy_waits,
            parks: b.parks - a.parks,
        }
    }
}

/// Samples in `[lo_ns, hi_ns)`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct HistBin {
    pub lo_ns: f64,
    pub hi_ns: f64,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TransferRow {
    pub experiment: u32,
    pub profile: String,
    pub transfer_bytes: u64,
    /// `coherent` or `pcie`.
    pub path: &'static str,
    /// Null when the profile has no such path.
    pub latency_ns: Option<f64>,
    /// Coherent only: every line already in the device's coherence agent.
    pub cached_latency_ns: Option<f64>,
    /// The interconnect's name in the profile.
    pub interconnect: Option<String>,
    /// `model` (computed from the profile) or the device clock's name.
    pub clock: &'static str,
}

/// A latency row with the summary of `samples` and every optional field
/// empty: each experiment fills in what it knows.
pub(super) fn latency_row(
    experiment: u32,
    lock_table: &'static str,
    side: &'static str,
    clock: &'static str,
    samples: &[u64],
    wall_s: f64,
) -> Result<LatencyRow> {
    let s: LatencySummary = summarize(samples).ok_or_else(|| anyhow!("the run produced no samples"))?;
    Ok(LatencyRow {
        experiment,
        lock_table,
        side,
        contention_pct: 0,
        access: None,
        requests: s.count as u64,
        p50_ns: s.p50_ns,
        p90_ns: s.p90_ns,
        p99_ns: s.p99_ns,
        p999_ns: s.p999_ns,
        min_ns: s.min_ns,
        max_ns: s.max_ns,
        mean_ns: s.mean_ns,
        clock,
        profile: None,
        threads: 1,
        pes: None,
        keys: 0,
        table_bytes: None,
        shared_window_pct: None,
        shared_requests_pct: None,
        other_side_pairs_per_s: None,
        timer_overhead_ns: None,
        other_cpus_busy: None,
        lock_events: None,
        wall_s,
        completions: None,
        late_completions: None,
        postgres_version: None,
        histogram: None,
    })
}

/// The non-empty buckets of `samples` (ns) in log-scale buckets,
/// `BINS_PER_DECADE` per decade from 1 ns (a 0 counts as 1 ns).
pub fn histogram(samples: &[u64]) -> Vec<HistBin> {
    let bin_of = |ns: u64| ((ns.max(1) as f64).log10() * BINS_PER_DECADE).floor() as usize;
    let mut counts = vec![0u64; samples.iter().map(|&s| bin_of(s) + 1).max().unwrap_or(0)];
    for &s in samples {
        counts[bin_of(s)] += 1;
    }
    let edge = |i: usize| (10f64.powf(i as f64 / BINS_PER_DECADE) * 100.0).round() / 100.0;
    counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, &count)| HistBin { lo_ns: edge(i), hi_ns: edge(i + 1), count })
        .collect()
}

/// The latency rows of `experiment`, in run order.
pub(super) fn latency_rows(rows: &[Row], experiment: u32) -> Vec<&LatencyRow> {
    rows.iter()
        .filter_map(|r| if let Row::Latency(l) = r { Some(&**l) } else { None })
        .filter(|l| l.experiment == experiment)
        .collect()
}

/// The transfer rows (Exp. 2), in run order.
pub(super) fn transfer_rows(rows: &[Row]) -> Vec<&TransferRow> {
    rows.iter().filter_map(|r| if let Row::Transfer(t) = r { Some(t) } else { None }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_bins_are_log_scaled_and_count_everything() {
        let samples = [0, 1, 9, 10, 11, 100, 1000, 1000];
        let h = histogram(&samples);
        assert_eq!(h.iter().map(|b| b.count).sum::<u64>(), samples.len() as u64);
        assert_eq!((h[0].lo_ns, h[0].count), (1.0, 2));
        assert!(h.iter().all(|b| b.hi_ns > b.lo_ns && (b.hi_ns / b.lo_ns - 10f64.powf(0.05)).abs() < 0.01));
        assert!(h.windows(2).all(|w| w[0].hi_ns <= w[1].lo_ns));
    }
}
