//! Latency distributions (HdrHistogram, 3 significant digits, in
//! nanoseconds) and the summaries the rows carry.

use hdrhistogram::Histogram;
use serde::Serialize;

/// A latency distribution.
#[derive(Debug, Clone)]
pub struct Latencies {
    hist: Histogram<u64>,
}

impl Default for Latencies {
    fn default() -> Latencies {
        Latencies::new()
    }
}

/// The summary of a distribution, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Summary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
}

impl Latencies {
    pub fn new() -> Latencies {
        // 1 ns to an hour (longer ones saturate); 3 digits is 0.1% resolution.
        let hist = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        Latencies { hist }
    }

    pub fn record_ns(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The latency at quantile `q` in µs (0 when empty).
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.hist.is_empty() { 0.0 } else { self.hist.value_at_quantile(q) as f64 / 1e3 }
    }

    pub fn summary(&self) -> Summary {
        Summary {
            count: self.hist.len(),
            mean_us: if self.hist.is_empty() { 0.0 } else { self.hist.mean() / 1e3 },
            p50_us: self.quantile_us(0.5),
            p90_us: self.quantile_us(0.9),
            p99_us: self.quantile_us(0.99),
            p999_us: self.quantile_us(0.999),
        }
    }

    /// The CDF at `points` quantiles spread over [0, 1] plus the tail:
    /// (latency µs, cumulative probability), increasing.
    pub fn cdf(&self, points: usize) -> Vec<(f64, f64)> {
        if self.hist.is_empty() {
            return Vec::new();
        }
        let mut qs: Vec<f64> = (1..=points).map(|i| i as f64 / points as f64).collect();
        qs.extend([0.995, 0.999, 0.9999]);
        qs.sort_by(f64::total_cmp);
        qs.dedup();
        qs.into_iter().map(|q| (self.quantile_us(q), q)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_cdf_follow_the_samples() {
        let mut l = Latencies::new();
        assert_eq!(l.summary(), Summary::default());
        for us in 1..=1000u64 {
            l.record_ns(us * 1000);
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50_us - 500.0).abs() < 1.0 && (s.p99_us - 990.0).abs() < 1.0, "{s:?}");
        assert!((s.mean_us - 500.5).abs() < 1.0, "{s:?}");
        let cdf = l.cdf(10);
        assert!(cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1), "{cdf:?}");
        assert_eq!(cdf.last().unwrap().1, 1.0);
    }
}
