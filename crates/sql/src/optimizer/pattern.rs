//! Selectivity of `LIKE` / `ILIKE` with wildcards, from the column's
//! statistics, as PostgreSQL's `patternsel` does with its
//! `histogram_selectivity`: the pattern is matched against the sampled
//! values ANALYZE kept.
//!
//! ```text
//!  sel = Σ frequencies of the MCVs that match
//!      + rest × (w · matched bounds / bounds + (1 - w) · DEFAULT_MATCH_SEL)
//!  rest = 1 - Σ mcv frequencies - null_frac
//!  w    = min(1, bounds / 100)          (0 below 10 bounds: the default alone)
//! ```
//!
//! The histogram's bounds are an equi-depth sample of the values outside
//! the MCV list, so the share of them a pattern matches estimates its share
//! of those rows; PostgreSQL trusts a histogram of 100 entries fully and
//! blends smaller ones with the default, and so does this. A histogram that
//! matches nothing counts as half a bound (a pattern the sample missed is
//! rare, not absent). The matching is arrow-string's, the executor's own
//! LIKE kernel, so estimate and execution agree on what matches; `char(n)`
//! values lose their padding first, as the executor's LIKE does.

use arrow_array::{Array, BooleanArray, StringArray};

use super::cardinality::{ColumnInfo, DEFAULT_MATCH_SEL};
use crate::types::Value;

/// Histogram size from which PostgreSQL uses the histogram alone.
const FULL_TRUST_BOUNDS: f64 = 100.0;
/// Fewer bounds than this: the default selectivity alone.
const MIN_BOUNDS: usize = 10;

/// What a pattern is matched as.
#[derive(Debug, Clone, Copy)]
pub struct PatternKind {
    pub case_insensitive: bool,
    /// The column is `char(n)`: its values are compared without padding.
    pub padded: bool,
}

/// Selectivity of `column LIKE pattern` (not negated; NULLs match nothing;
/// backslash escapes, the caller keeps other escape characters away) when
/// `info` has statistics; None without them or when the LIKE kernel refuses
/// the pattern.
pub fn like_selectivity(info: &ColumnInfo, pattern: &str, kind: PatternKind) -> Option<f64> {
    let stats = info.stats.as_ref()?;
    let mcv_values: Vec<&Value> = stats.mcv.iter().map(|(v, _)| v).collect();
    let mcv_hits = matches(&mcv_values, pattern, kind)?;
    let mcv_sel: f64 = stats.mcv.iter().zip(&mcv_hits).filter(|(_, hit)| **hit).map(|((_, f), _)| *f).sum();
    let mcv_total: f64 = stats.mcv.iter().map(|(_, f)| *f).sum();
    let rest = (1.0 - mcv_total - stats.null_frac).max(0.0);
    let bounds: Vec<&Value> = stats.histogram.iter().collect();
    let rest_sel = if bounds.len() < MIN_BOUNDS {
        DEFAULT_MATCH_SEL
    } else {
        let hits = matches(&bounds, pattern, kind)?.iter().filter(|h| **h).count() as f64;
        let n = bounds.len() as f64;
        let hist = hits.max(0.5) / n;
        let w = (n / FULL_TRUST_BOUNDS).min(1.0);
        w * hist + (1.0 - w) * DEFAULT_MATCH_SEL
    };
    Some((mcv_sel + rest * rest_sel).clamp(0.0, 1.0))
}

/// Which of `values` match `pattern` (a non-text value never does).
fn matches(values: &[&Value], pattern: &str, kind: PatternKind) -> Option<Vec<bool>> {
    if values.is_empty() {
        return Some(Vec::new());
    }
    let texts: StringArray = values
        .iter()
        .map(|v| match v {
            Value::Text(s) if kind.padded => Some(s.trim_end_matches(' ')),
            Value::Text(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    let patterns = StringArray::new_scalar(pattern);
    let out: BooleanArray = if kind.case_insensitive {
        arrow_string::like::ilike(&texts, &patterns).ok()?
    } else {
        arrow_string::like::like(&texts, &patterns).ok()?
    };
    Some((0..out.len()).map(|i| out.is_valid(i) && out.value(i)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ColumnStats;

    fn info(mcv: Vec<(&str, f64)>, histogram: Vec<String>, null_frac: f64) -> ColumnInfo {
        ColumnInfo {
            stats: Some(ColumnStats {
                distinct: 1000.0,
                null_frac,
                mcv: mcv.into_iter().map(|(v, f)| (Value::Text(v.to_string()), f)).collect(),
                histogram: histogram.into_iter().map(Value::Text).collect(),
                avg_width: 10.0,
            }),
            ndv: 1000.0,
            null_frac,
            table_rows: 1e6,
        }
    }

    const PLAIN: PatternKind = PatternKind { case_insensitive: false, padded: false };

    #[test]
    fn a_full_histogram_gives_the_share_of_bounds_that_match() {
        // 101 bounds, every tenth holds "green".
        let h = (0..101).map(|i| if i % 10 == 0 { format!("a green {i}") } else { format!("b {i}") }).collect();
        let s = like_selectivity(&info(vec![], h, 0.0), "%green%", PLAIN).unwrap();
        assert!((s - 11.0 / 101.0).abs() < 1e-9, "{s}");
    }

    #[test]
    fn mcvs_count_by_frequency_and_the_rest_by_the_histogram() {
        let h: Vec<String> = (0..100).map(|i| format!("v{i:03}")).collect();
        let i = info(vec![("forest", 0.2), ("desert", 0.3)], h, 0.1);
        let s = like_selectivity(&i, "for%", PLAIN).unwrap();
        // 0.2 from the MCV; the rest (0.4) matches no bound: half a bound of 100.
        assert!((s - (0.2 + 0.4 * 0.005)).abs() < 1e-9, "{s}");
    }

    #[test]
    fn a_small_histogram_blends_with_the_default() {
        let h: Vec<String> = (0..20).map(|i| format!("x{i}")).collect();
        let s = like_selectivity(&info(vec![], h, 0.0), "x1%", PLAIN).unwrap();
        // x1, x10..x19: 11 of 20; weight 0.2.
        let want = 0.2 * (11.0 / 20.0) + 0.8 * DEFAULT_MATCH_SEL;
        assert!((s - want).abs() < 1e-9, "{s}");
    }

    #[test]
    fn padding_and_case_are_handled_as_the_executor_does() {
        let h: Vec<String> = (0..100).map(|i| format!("{:<10}", if i < 50 { "SM BOX" } else { "LG CASE" })).collect();
        let padded = PatternKind { case_insensitive: false, padded: true };
        assert!((like_selectivity(&info(vec![], h.clone(), 0.0), "%BOX", padded).unwrap() - 0.5).abs() < 1e-9);
        let ci = PatternKind { case_insensitive: true, padded: true };
        assert!((like_selectivity(&info(vec![], h, 0.0), "lg%", ci).unwrap() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn without_statistics_there_is_no_estimate() {
        let none = ColumnInfo { stats: None, ndv: 200.0, null_frac: 0.0, table_rows: 1000.0 };
        assert!(like_selectivity(&none, "%x%", PLAIN).is_none());
    }
}
