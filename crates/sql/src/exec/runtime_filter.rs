//! Runtime key filters: a hash join's build keys, handed to the scan that
//! feeds its probe side.
//!
//! ```text
//!  build input ──► BuildSide (read whole first) ──► keys ──► KeyFilter (bitmap)
//!                                                               │ offer(probe plan, probe key)
//!  probe scan ──► store walk ──► tuples ──► drop keys not in it ─┘ ──► Arrow ──► probe
//! ```
//!
//! A hash join reads its build side whole before its probe side starts.
//! When the join drops the probe rows whose key has no partner among the
//! build rows (Inner, Right and Semi joins that build on the right; Semi and
//! Anti joins that build on the left, `semi_build.rs`), such rows may as
//! well never leave the scan: the host scan drops them right after its store
//! walk, on the raw tuples, before they are decoded into Arrow, filtered,
//! projected and probed. TPC-H Q21 scans lineitem three times; the second
//! and third scans feed joins whose build side holds 75,871 rows of one
//! nation's suppliers, and keep about a tenth of lineitem's 6 million rows.
//!
//! The filter is exact, so it changes no result: a bitmap over the build
//! keys' range, `[min, max]`, one bit per value. It is made only when the
//! range is at most [`BITS_PER_KEY`] bits per build row or
//! [`BITS_MIN`] bits (8 MiB) in all, so its memory stays within 8 bytes per
//! build row or 8 MiB. It is offered only where it is sure to be right:
//!
//! - one equi-key, integer (`smallint`, `integer`, `bigint`) on both sides;
//! - the probe key is a plain column that Filter and Project nodes carry
//!   unchanged down to a scan that walks the store on the host (an NDP
//!   scan's rows were chosen on the device, an index scan's by its range);
//! - the scan reads the column as it is stored (the same integer).
//!
//! A grace join (`grace.rs`) never holds its build keys in one array: it
//! makes the same bitmap batch by batch while it partitions them
//! ([`KeyFilterBuilder`]), before the probe side's scan is built.
//!
//! A NULL key matches nothing, so rows with one are dropped too. The scan
//! reports the rows it dropped (EXPLAIN ANALYZE: `Runtime Filter`).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType as ArrowType;
use parking_lot::Mutex;

use crate::plan::{Access, Expr, Node, Plan};
use crate::types::DataType;

/// Bits of the bitmap per build row at most.
pub const BITS_PER_KEY: u64 = 64;
/// Bits of the bitmap allowed whatever the build side's size (8 MiB: TPC-H
/// SF 1's 6 million order keys take 0.75 MiB).
pub const BITS_MIN: u64 = 1 << 26;

/// The set of a build side's integer keys, exact.
#[derive(Debug)]
pub struct KeyFilter {
    min: i64,
    /// Bit `k - min` is set for every key `k`.
    bits: Vec<u64>,
    /// Distinct keys in the set.
    keys: u64,
}

impl KeyFilter {
    /// The filter of the non-NULL values of `keys` (an Int16, Int32 or
    /// Int64 array), or None when their range is too wide for a bitmap or
    /// the array is of another type.
    pub fn of(keys: &ArrayRef) -> Option<KeyFilter> {
        let values = int_values(keys)?;
        let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
            // No non-NULL key: nothing can match.
            return Some(KeyFilter { min: 0, bits: vec![], keys: 0 });
        };
        let span = u64::try_from(i128::from(max) - i128::from(min) + 1).ok()?;
        if span > BITS_MIN.max(BITS_PER_KEY.saturating_mul(values.len() as u64)) {
            return None;
        }
        let mut bits = vec![0u64; span.div_ceil(64) as usize];
        let mut keys = 0;
        for v in values {
            let at = (v - min) as u64;
            let (word, bit) = ((at / 64) as usize, 1u64 << (at % 64));
            keys += u64::from(bits[word] & bit == 0);
            bits[word] |= bit;
        }
        Some(KeyFilter { min, bits, keys })
    }

    /// Whether `key` is one of the build side's keys.
    #[inline]
    pub fn contains(&self, key: i64) -> bool {
        let Some(at) = key.checked_sub(self.min) else { return false };
        let Ok(at) = u64::try_from(at) else { return false };
        self.bits.get((at / 64) as usize).is_some_and(|w| w & (1 << (at % 64)) != 0)
    }

    /// Distinct keys in the set.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Whether some key lies in `[lo, hi]` (false when `lo > hi`). Ranges
    /// wider than [`OVERLAP_WORDS_MAX`] words of the bitmap answer true
    /// without looking: a zone map skips nothing there (`store/zone_skip.rs`).
    pub fn overlaps(&self, lo: i64, hi: i64) -> bool {
        let top = i128::from(self.min) + self.bits.len() as i128 * 64 - 1;
        let (lo, hi) = (i128::from(lo).max(i128::from(self.min)), i128::from(hi).min(top));
        if lo > hi {
            return false;
        }
        let (a, b) = ((lo - i128::from(self.min)) as u64, (hi - i128::from(self.min)) as u64);
        let (wa, wb) = ((a / 64) as usize, (b / 64) as usize);
        if wb - wa > OVERLAP_WORDS_MAX {
            return true;
        }
        (wa..=wb).any(|w| {
            let from = if w == wa { a % 64 } else { 0 };
            let to = if w == wb { b % 64 } else { 63 };
            let mask = (u64::MAX >> (63 - to)) & (u64::MAX << from);
            self.bits[w] & mask != 0
        })
    }
}

/// Words of a [`KeyFilter`] an overlap test reads at most (64 Ki keys).
pub const OVERLAP_WORDS_MAX: usize = 1024;

/// The non-NULL values of an Int16, Int32 or Int64 array; None for
/// another type.
fn int_values(keys: &ArrayRef) -> Option<Vec<i64>> {
    Some(match keys.data_type() {
        ArrowType::Int16 => keys.as_primitive::<Int16Type>().iter().flatten().map(i64::from).collect(),
        ArrowType::Int32 => keys.as_primitive::<Int32Type>().iter().flatten().map(i64::from).collect(),
        ArrowType::Int64 => keys.as_primitive::<Int64Type>().iter().flatten().collect(),
        _ => return None,
    })
}

/// A [`KeyFilter`] made batch by batch, for a build side that goes to disk
/// rather than into one array (`grace.rs`): its bitmap grows, doubling, to
/// cover the keys seen so far, and it gives up (no filter) once their range
/// passes [`BITS_MIN`] bits, so it never takes more than 8 MiB.
#[derive(Debug, Default)]
pub struct KeyFilterBuilder {
    /// Bit `k - min` is set for every key `k` seen; empty before the first.
    min: i64,
    bits: Vec<u64>,
    gave_up: bool,
}

impl KeyFilterBuilder {
    /// Adds the non-NULL values of `keys` (an Int16, Int32 or Int64 array;
    /// another type gives up).
    pub fn add(&mut self, keys: &ArrayRef) {
        if self.gave_up {
            return;
        }
        let Some(values) = int_values(keys) else { return self.give_up() };
        let (Some(&lo), Some(&hi)) = (values.iter().min(), values.iter().max()) else { return };
        if !self.cover(lo, hi) {
            return self.give_up();
        }
        for v in values {
            let at = (v - self.min) as u64;
            self.bits[(at / 64) as usize] |= 1 << (at % 64);
        }
    }

    /// Grows the bitmap to cover `[lo, hi]`; false if it would pass
    /// [`BITS_MIN`] bits. Words added below are at least as many as there
    /// are (doubling, so keys in descending order cost linear time); above,
    /// `Vec::resize` doubles the capacity by itself.
    fn cover(&mut self, lo: i64, hi: i64) -> bool {
        if self.bits.is_empty() {
            self.min = lo;
        }
        let limit = i128::from(BITS_MIN / 64);
        let (words, min) = (self.bits.len() as i128, i128::from(self.min));
        let (lo, hi) = (i128::from(lo), i128::from(hi));
        let need_below = if lo < min { (min - lo + 63) / 64 } else { 0 };
        let need_above = ((hi - min) / 64 + 1 - words).max(0);
        let need = words + need_below + need_above;
        if need > limit {
            return false;
        }
        let mut below = if need_below > 0 { need_below.max(words).min(limit - need + need_below) } else { 0 };
        if min - 64 * below < i128::from(i64::MIN) {
            below = need_below;
        }
        let new_min = min - 64 * below;
        if new_min < i128::from(i64::MIN) {
            return false;
        }
        if below > 0 {
            self.bits.splice(0..0, std::iter::repeat_n(0, below as usize));
        }
        self.bits.resize((words + below + need_above) as usize, 0);
        self.min = new_min as i64;
        true
    }

    fn give_up(&mut self) {
        self.gave_up = true;
        self.bits = Vec::new();
    }

    /// The filter of every key added; None if it gave up.
    pub fn finish(self) -> Option<KeyFilter> {
        if self.gave_up {
            return None;
        }
        let keys = self.bits.iter().map(|w| u64::from(w.count_ones())).sum();
        Some(KeyFilter { min: self.min, bits: self.bits, keys })
    }
}

/// A filter for one scan: rows whose table column `column` is not in
/// `filter` have no partner in the join above.
#[derive(Debug)]
pub struct ScanKeyFilter {
    pub column: usize,
    pub filter: KeyFilter,
}

/// Filters offered by joins while their pipelines are built, until the scan
/// they are for is built and takes its own. Keyed by the scan plan node's
/// address: the plan outlives the building of its pipelines.
#[derive(Debug, Default)]
pub struct RuntimeFilters {
    pending: Mutex<HashMap<usize, Arc<ScanKeyFilter>>>,
}

impl RuntimeFilters {
    /// Offers the build keys `build_keys` of a join to the scan under
    /// `probe` that reads probe key `probe_key` (one key only), when the
    /// module docs' conditions hold; does nothing otherwise.
    pub fn offer(&self, probe: &Plan, probe_keys: &[Expr], build_keys: &[ArrayRef]) {
        let [keys] = build_keys else { return };
        if let Some(at) = offer_target(probe, probe_keys) {
            self.pending_insert(at, KeyFilter::of(keys));
        }
    }

    /// Whether a filter on `probe_keys` would reach a scan under `probe`.
    pub fn would_reach(&self, probe: &Plan, probe_keys: &[Expr]) -> bool {
        offer_target(probe, probe_keys).is_some()
    }

    /// [`RuntimeFilters::offer`] of a filter made as the build rows went
    /// past ([`KeyFilterBuilder`]: a grace join's build side).
    pub fn offer_built(&self, probe: &Plan, probe_keys: &[Expr], filter: KeyFilterBuilder) {
        if let Some(at) = offer_target(probe, probe_keys) {
            self.pending_insert(at, filter.finish());
        }
    }

    fn pending_insert(&self, (scan, column): (&Plan, usize), filter: Option<KeyFilter>) {
        if let Some(filter) = filter {
            self.pending.lock().insert(scan as *const Plan as usize, Arc::new(ScanKeyFilter { column, filter }));
        }
    }

    /// The filter offered to `scan`, once.
    pub fn take(&self, scan: &Plan) -> Option<Arc<ScanKeyFilter>> {
        self.pending.lock().remove(&(scan as *const Plan as usize))
    }
}

/// The scan and table column a filter on `probe_keys` (one integer column)
/// would be for.
fn offer_target<'p>(probe: &'p Plan, probe_keys: &[Expr]) -> Option<(&'p Plan, usize)> {
    let [Expr::Column { index, ty }] = probe_keys else { return None };
    if !matches!(ty, DataType::Int16 | DataType::Int32 | DataType::Int64) {
        return None;
    }
    scan_column(probe, *index)
}

/// The host scan under `plan` whose output column `col` is `plan`'s
/// column `col`, and the table column it reads; None if Filters and
/// Projects do not carry it down unchanged.
fn scan_column(plan: &Plan, col: usize) -> Option<(&Plan, usize)> {
    match &plan.node {
        Node::Scan { columns, access: Access::Host | Access::Unchosen, .. } => columns.get(col).map(|&c| (plan, c)),
        Node::Filter { input, .. } => scan_column(input, col),
        Node::Project { input, exprs } => match exprs.get(col)? {
            Expr::Column { index, ty } if input.schema.get(*index).is_some_and(|f| f.ty == *ty) => {
                scan_column(input, *index)
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray};

    use super::*;

    #[test]
    fn a_filter_holds_exactly_the_non_null_keys() {
        let keys: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), None, Some(-3), Some(5), Some(130)]));
        let f = KeyFilter::of(&keys).unwrap();
        assert_eq!(f.keys(), 3);
        let inside: Vec<i64> = (-200..300).filter(|&k| f.contains(k)).collect();
        assert_eq!(inside, vec![-3, 5, 130]);
        assert!(!f.contains(i64::MIN) && !f.contains(i64::MAX));
    }

    #[test]
    fn no_keys_match_nothing_and_wide_or_non_integer_keys_make_no_filter() {
        let none: ArrayRef = Arc::new(Int32Array::from(vec![None, None]));
        let f = KeyFilter::of(&none).unwrap();
        assert!(!f.contains(0) && f.keys() == 0);
        let wide: ArrayRef = Arc::new(Int64Array::from(vec![0, i64::MAX]));
        assert!(KeyFilter::of(&wide).is_none());
        let sparse: ArrayRef = Arc::new(Int64Array::from(vec![0, (BITS_MIN as i64) * 4]));
        assert!(KeyFilter::of(&sparse).is_none(), "two keys may span at most BITS_MIN bits");
        let text: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        assert!(KeyFilter::of(&text).is_none());
    }

    proptest::proptest! {
        #[test]
        fn a_filter_built_batch_by_batch_holds_the_keys_of_all_batches(
            batches in proptest::collection::vec(proptest::collection::vec(proptest::option::of(-5000i64..5000), 0..50), 0..12),
            shift in proptest::prop_oneof![proptest::strategy::Just(0i64), proptest::strategy::Just(i64::MIN + 10_000), proptest::strategy::Just(i64::MAX - 10_000)],
        ) {
            let mut b = KeyFilterBuilder::default();
            let mut all = Vec::new();
            for keys in &batches {
                let keys: Vec<Option<i64>> = keys.iter().map(|k| k.map(|k| k.saturating_add(shift))).collect();
                b.add(&(Arc::new(Int64Array::from(keys.clone())) as ArrayRef));
                all.extend(keys);
            }
            let built = b.finish().unwrap();
            let whole = KeyFilter::of(&(Arc::new(Int64Array::from(all.clone())) as ArrayRef)).unwrap();
            proptest::prop_assert_eq!(built.keys(), whole.keys());
            for k in all.iter().flatten() {
                proptest::prop_assert!(built.contains(*k));
                for probe in [k.saturating_sub(1), k.saturating_add(1)] {
                    proptest::prop_assert_eq!(built.contains(probe), whole.contains(probe));
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn overlaps_is_true_exactly_when_a_key_lies_in_the_range(
            keys in proptest::collection::vec(-700i64..700, 0..40),
            lo in -1000i64..1000,
            len in -5i64..600,
        ) {
            let f = KeyFilter::of(&(Arc::new(Int64Array::from(keys.clone())) as ArrayRef)).unwrap();
            let hi = lo + len;
            let want = keys.iter().any(|&k| lo <= k && k <= hi);
            proptest::prop_assert_eq!(f.overlaps(lo, hi), want, "keys {:?} in [{}, {}]", keys, lo, hi);
        }
    }

    #[test]
    fn overlaps_answers_true_over_wide_ranges_and_handles_the_extremes() {
        let f = KeyFilter::of(&(Arc::new(Int64Array::from(vec![0, 1 << 20])) as ArrayRef)).unwrap();
        assert!(f.overlaps(1, (1 << 20) - 1), "wider than OVERLAP_WORDS_MAX words: true without looking");
        assert!(!f.overlaps(1, 100));
        assert!(f.overlaps(i64::MIN, i64::MAX));
        assert!(!f.overlaps(i64::MAX, i64::MIN), "an empty zone holds no key");
        assert!(!f.overlaps((1 << 20) + 1, i64::MAX));
        let none = KeyFilter::of(&(Arc::new(Int64Array::from(vec![None::<i64>])) as ArrayRef)).unwrap();
        assert!(!none.overlaps(i64::MIN, i64::MAX));
    }

    #[test]
    fn a_built_filter_gives_up_past_bits_min_and_on_other_types() {
        let mut b = KeyFilterBuilder::default();
        b.add(&(Arc::new(Int64Array::from(vec![0])) as ArrayRef));
        b.add(&(Arc::new(Int64Array::from(vec![BITS_MIN as i64 * 2])) as ArrayRef));
        assert!(b.finish().is_none());
        let mut b = KeyFilterBuilder::default();
        b.add(&(Arc::new(StringArray::from(vec!["a"])) as ArrayRef));
        assert!(b.finish().is_none());
        let mut b = KeyFilterBuilder::default();
        // Keys in descending order: the bitmap grows downwards.
        for k in (0..100i64).rev().map(|i| i * 1000) {
            b.add(&(Arc::new(Int64Array::from(vec![k])) as ArrayRef));
        }
        let f = b.finish().unwrap();
        assert_eq!(f.keys(), 100);
        assert!(f.contains(99_000) && f.contains(0) && !f.contains(500));
    }
}
