//! Per-operator measurements for EXPLAIN ANALYZE: a tree that mirrors the
//! plan. Operators count into a shared [`MetricsNode`] (atomics: pipeline
//! stages run on several workers); [`MetricsNode::snapshot`] copies it
//! into the plain [`OperatorMetrics`] the caller gets.
//!
//! Time is inclusive of the node's inputs where the node pulls them on
//! the same thread (as PostgreSQL's "actual time"); for stages inside a
//! parallel pipeline it is the time summed over the workers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use super::ScanCounters;

/// The measured tree, one node per plan node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OperatorMetrics {
    /// The operator's name (`Scan t`, `HashJoin Inner`, ...).
    pub name: String,
    pub rows_out: u64,
    pub elapsed: Duration,
    /// Scans only: the source's counters.
    pub scan: Option<ScanCounters>,
    /// Sorts, hash joins and aggregations that spilled: what went to disk.
    pub spill: Option<SpillStats>,
    pub children: Vec<OperatorMetrics>,
}

/// What an operator wrote to spill files (`spill.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpillStats {
    /// Spill files written.
    pub files: u64,
    /// Bytes written to them.
    pub bytes: u64,
    /// Rows written to them (a row spilled twice counts twice).
    pub rows: u64,
    /// Sort: merge passes; hash join and aggregation: the deepest
    /// repartitioning (1: partitioned once).
    pub passes: u64,
}

#[derive(Debug, Default)]
pub struct MetricsNode {
    pub name: String,
    rows_out: AtomicU64,
    elapsed_ns: AtomicU64,
    pub scan: Mutex<Option<Arc<Mutex<ScanCounters>>>>,
    spill: Mutex<Option<SpillStats>>,
    pub children: Vec<Arc<MetricsNode>>,
}

impl MetricsNode {
    pub fn new(name: impl Into<String>, children: Vec<Arc<MetricsNode>>) -> Arc<MetricsNode> {
        Arc::new(MetricsNode { name: name.into(), children, ..MetricsNode::default() })
    }

    pub fn add_rows(&self, rows: usize) {
        self.rows_out.fetch_add(rows as u64, Ordering::Relaxed);
    }

    pub fn add_time(&self, elapsed: Duration) {
        self.elapsed_ns.fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Counts spill files (each one's rows and bytes).
    pub fn add_spill_files<'a>(&self, files: impl IntoIterator<Item = &'a super::spill::SpillFile>) {
        let mut spill = self.spill.lock();
        let s = spill.get_or_insert_with(SpillStats::default);
        for f in files {
            s.files += 1;
            s.bytes += f.bytes;
            s.rows += f.rows;
        }
    }

    /// Records that the operator's spilling reached `passes`.
    pub fn note_spill_passes(&self, passes: u64) {
        let mut spill = self.spill.lock();
        let s = spill.get_or_insert_with(SpillStats::default);
        s.passes = s.passes.max(passes);
    }

    pub fn snapshot(&self) -> OperatorMetrics {
        OperatorMetrics {
            name: self.name.clone(),
            rows_out: self.rows_out.load(Ordering::Relaxed),
            elapsed: Duration::from_nanos(self.elapsed_ns.load(Ordering::Relaxed)),
            scan: self.scan.lock().as_ref().map(|c| *c.lock()),
            spill: *self.spill.lock(),
            children: self.children.iter().map(|c| c.snapshot()).collect(),
        }
    }
}

/// A union of model-clock spans `[start, end)`, kept as sorted, disjoint
/// spans.
#[derive(Debug, Default)]
pub struct SpanUnion {
    spans: Vec<(u64, u64)>,
}

impl SpanUnion {
    /// Adds `[start, end)`: returns the picoseconds it covers that no
    /// earlier span did.
    pub fn add(&mut self, (start, end): (u64, u64)) -> u64 {
        if end <= start {
            return 0;
        }
        // The spans that touch [start, end) are merged into it.
        let first = self.spans.partition_point(|&(_, e)| e < start);
        let last = self.spans.partition_point(|&(s, _)| s <= end);
        let covered: u64 = self.spans[first..last].iter().map(|&(s, e)| e.min(end).saturating_sub(s.max(start))).sum();
        let merged = match self.spans[first..last] {
            [] => (start, end),
            [(s, _), ..] => (s.min(start), self.spans[last - 1].1.max(end)),
        };
        self.spans.splice(first..last, [merged]);
        (end - start) - covered
    }
}

#[cfg(test)]
mod tests {
    use super::SpanUnion;

    #[test]
    fn a_span_union_counts_overlaps_once() {
        let mut u = SpanUnion::default();
        assert_eq!(u.add((10, 20)), 10);
        assert_eq!(u.add((20, 30)), 10, "adjacent");
        assert_eq!(u.add((15, 25)), 0, "inside");
        assert_eq!(u.add((40, 50)), 10);
        assert_eq!(u.add((5, 45)), 5 + 10, "bridges the gap and reaches before");
        assert_eq!(u.spans, vec![(5, 50)]);
        assert_eq!(u.add((60, 60)), 0, "empty");
        assert_eq!(u.add((0, 2)), 2);
        assert_eq!(u.spans, vec![(0, 2), (5, 50)]);
    }
}
