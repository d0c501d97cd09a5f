//! The NDP call (`CALL_NDP` in neoDBMS): what the host ships to the
//! device's `ndp.snapshot` and `ndp.update` programs, and what they return
//! (`docs/format/ndp-call.md`).
//!
//! Visibility is decided by one function, [`Snapshot::visible`], that host
//! scans and device programs share, so that NDP and host-only execution apply
//! the same rule (the differential tests check both against a separate
//! reference model).
//!
//! An `Execute` of either program passes these device memory ranges, in
//! this order (little-endian throughout):
//!
//! ```text
//! range        written by  contents
//!     0 CALL   host        the call block ([`NdpCall`], `call.rs`)
//!     1 LAYOUT host        the table's layout descriptor (`schema.rs`), once per table
//!     2 DELTA  host        the delta-buffer pages, in the call's `delta_pages` order
//!     3 OUTPUT PEs         partial aggregates ([`Partial`]), rows ([`RowsWriter`])
//!                          or updated tuples ([`UpdateWriter`])
//!     4 PAGES  host        `ndp.update` only: pages for the new versions ([`encode_page_runs`])
//! ```

mod call;
mod partial;
mod rows;
mod update;

pub use call::NdpCall;
pub use partial::{PARTIAL_BYTES, Partial};
pub use rows::{Row, RowsWriter, decode_rows};
pub use update::{UpdateOutput, UpdateWriter, UpdatedTuple, encode_page_runs, read_page_run};

/// Memory range of the call block.
pub const RANGE_CALL: usize = 0;
/// Memory range of the table's layout descriptor.
pub const RANGE_LAYOUT: usize = 1;
/// Memory range of the shipped delta-buffer pages.
pub const RANGE_DELTA: usize = 2;
/// Memory range the PEs write their output to.
pub const RANGE_OUTPUT: usize = 3;
/// Memory range of `ndp.update`'s pages for new versions.
pub const RANGE_PAGES: usize = 4;

use crate::schema::ColumnType;

/// Ids of transactions whose writes a reader may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Ids at or above `xmax` had not begun when the snapshot was taken.
    pub xmax: u64,
    /// Transactions in progress when the snapshot was taken (sorted).
    pub active: Vec<u64>,
    /// The reader itself: its own writes are visible.
    pub own: u64,
}

impl Snapshot {
    /// Whether a version created by transaction `ts` is visible. Aborted
    /// transactions never appear here: their versions are unlinked from every
    /// chain before their locks are released.
    #[inline]
    pub fn visible(&self, ts: u64) -> bool {
        ts == self.own || (ts < self.xmax && self.active.binary_search(&ts).is_err())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
}

impl Aggregate {
    /// The call block's aggregate code (the declaration order).
    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(code: u8) -> Option<Aggregate> {
        use Aggregate::*;
        [CountStar, Count, Sum, Min, Max, Avg].get(usize::from(code)).copied()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// The call block's `predicate_op` code: 1 `=` .. 6 `>=`, the declaration order.
    fn code(self) -> u8 {
        self as u8 + 1
    }

    fn from_code(code: u8) -> Option<CmpOp> {
        use CmpOp::*;
        [Eq, Ne, Lt, Le, Gt, Ge].get(usize::from(code).wrapping_sub(1)).copied()
    }

    pub fn eval(self, a: i64, b: i64) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

/// `column op value` on a numeric column; NULL never qualifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predicate {
    pub column: u16,
    pub op: CmpOp,
    pub value: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    Aggregate {
        func: Aggregate,
        column: u16,
    },
    Rows {
        projection: Vec<u16>,
    },
    /// `UPDATE .. SET column = expr WHERE predicate` in the call's snapshot
    /// (update-NDP); the writing transaction is the snapshot's `own`.
    Update {
        column: u16,
        expr: UpdateExpr,
    },
}

/// The new value of an updated numeric column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateExpr {
    /// `column = v`
    Set(i64),
    /// `column = column + v`
    Add(i64),
    /// `column = column * v`
    Mul(i64),
}

impl UpdateExpr {
    /// The new value, or None when it overflows an i64.
    pub fn apply(self, old: i64) -> Option<i64> {
        match self {
            UpdateExpr::Set(v) => Some(v),
            UpdateExpr::Add(v) => old.checked_add(v),
            UpdateExpr::Mul(v) => old.checked_mul(v),
        }
    }

    /// The new value of a column of type `ty` under SQL's rules, wherever
    /// the update runs (a PE, or the host re-evaluating a row under read
    /// committed): `old` is None for NULL; NULL + v and NULL * v stay NULL;
    /// a result outside an i64, or outside the column's type (an `integer`'s
    /// 32 bits, a `numeric(p,s)`'s p digits: [`ColumnType::check_int`]), is
    /// an error, as in PostgreSQL.
    pub fn new_value(self, old: Option<i64>, ty: ColumnType) -> Result<Option<i64>, String> {
        let v = match (self, old) {
            (UpdateExpr::Add(_) | UpdateExpr::Mul(_), None) => return Ok(None),
            (UpdateExpr::Set(v), _) => v,
            (e, Some(old)) => e.apply(old).ok_or_else(|| format!("{e:?} of {old} overflows a bigint"))?,
        };
        ty.check_int(v)?;
        Ok(Some(v))
    }

    /// The call block's expression code and operand.
    fn code(self) -> (u8, i64) {
        match self {
            UpdateExpr::Set(v) => (0, v),
            UpdateExpr::Add(v) => (1, v),
            UpdateExpr::Mul(v) => (2, v),
        }
    }

    fn from_code(code: u8, v: i64) -> Option<UpdateExpr> {
        Some(match code {
            0 => UpdateExpr::Set(v),
            1 => UpdateExpr::Add(v),
            2 => UpdateExpr::Mul(v),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn update_values_follow_sql() {
        use UpdateExpr::*;
        let (i64_, i32_) = (ColumnType::Int64, ColumnType::Int32);
        let amount = ColumnType::Decimal { precision: 6, scale: 2 };
        assert_eq!(Add(5).new_value(Some(10), i64_), Ok(Some(15)));
        assert_eq!(Mul(3).new_value(Some(-2), i32_), Ok(Some(-6)));
        assert_eq!(Add(5).new_value(None, i64_), Ok(None), "NULL + 5 is NULL");
        assert_eq!(Mul(5).new_value(None, i32_), Ok(None), "NULL * 5 is NULL");
        assert_eq!(Set(7).new_value(None, i64_), Ok(Some(7)), "SET replaces a NULL");
        assert!(Add(1).new_value(Some(i64::MAX), i64_).unwrap_err().contains("overflows"));
        assert!(Set(1 << 31).new_value(Some(0), i32_).unwrap_err().contains("integer"));
        assert_eq!(Set(1 << 31).new_value(Some(0), i64_), Ok(Some(1 << 31)));
        // numeric(6,2): 9999.99 is the largest value, as in PostgreSQL.
        assert_eq!(Add(1).new_value(Some(999_998), amount), Ok(Some(999_999)));
        let e = Add(150).new_value(Some(999_999), amount).unwrap_err();
        assert!(e.contains("numeric field overflow: 10001.49 does not fit numeric(6,2)"), "{e}");
        assert!(Mul(2).new_value(Some(-600_000), amount).unwrap_err().contains("-12000.00"));
    }

    fn sample() -> NdpCall {
        NdpCall {
            op: Operation::Rows { projection: vec![0, 3, 2] },
            predicate: Some(Predicate { column: 2, op: CmpOp::Ge, value: -5 }),
            snapshot: Snapshot { xmax: 100, active: vec![3, 7, 99], own: 7 },
            vids: 1000,
            l2p_pages: vec![10, 11],
            l2p_delta: vec![(1, 2), (5, 9)],
            vid_pages: vec![4],
            vid_delta: vec![(0, 77), (999, 78)],
            delta_pages: vec![40, 41, 42],
        }
    }

    #[test]
    fn roundtrip_and_visibility() {
        let c = sample();
        assert_eq!(NdpCall::decode(&c.encode()).unwrap(), c);
        let agg = NdpCall { op: Operation::Aggregate { func: Aggregate::Avg, column: 4 }, predicate: None, ..sample() };
        assert_eq!(NdpCall::decode(&agg.encode()).unwrap(), agg);
        for expr in [UpdateExpr::Set(-7), UpdateExpr::Add(i64::MIN), UpdateExpr::Mul(i64::MAX)] {
            let up = NdpCall { op: Operation::Update { column: 5, expr }, ..sample() };
            assert_eq!(NdpCall::decode(&up.encode()).unwrap(), up);
        }
        assert_eq!(UpdateExpr::Add(i64::MAX).apply(1), None);
        let s = &c.snapshot;
        assert!(s.visible(1) && s.visible(7) && !s.visible(3) && !s.visible(100) && !s.visible(99));
    }

    #[test]
    fn partial_results_follow_sql() {
        let mut p = Partial::default();
        p.add_row(None);
        assert_eq!(
            (p.result(Aggregate::CountStar), p.result(Aggregate::Count), p.result(Aggregate::Sum)),
            (Some(1), Some(0), None)
        );
        p.add_row(Some(4));
        p.add_row(Some(-1));
        assert_eq!(p.result(Aggregate::Avg), Some(1));
        assert_eq!(Partial::decode(&p.encode()).unwrap(), p);
    }

    fn operation() -> impl Strategy<Value = Operation> {
        use Aggregate::*;
        prop_oneof![
            (0usize..6, any::<u16>()).prop_map(|(f, column)| Operation::Aggregate {
                func: [CountStar, Count, Sum, Min, Max, Avg][f],
                column
            }),
            proptest::collection::vec(any::<u16>(), 0..9).prop_map(|projection| Operation::Rows { projection }),
            (0u8..3, any::<i64>(), any::<u16>()).prop_map(|(code, v, column)| Operation::Update {
                column,
                expr: UpdateExpr::from_code(code, v).unwrap()
            }),
        ]
    }

    fn sorted(max: usize) -> impl Strategy<Value = Vec<u64>> {
        proptest::collection::btree_set(any::<u64>(), 0..max).prop_map(|s| s.into_iter().collect())
    }

    fn call() -> impl Strategy<Value = NdpCall> {
        let predicate =
            proptest::option::of((any::<u16>(), 1u8..7, any::<i64>()).prop_map(|(column, op, value)| Predicate {
                column,
                op: CmpOp::from_code(op).unwrap(),
                value,
            }));
        let arrays = (sorted(5), proptest::collection::vec(any::<u64>(), 0..5), sorted(5), sorted(5));
        (operation(), predicate, (any::<u64>(), any::<u64>(), any::<u64>()), arrays).prop_map(
            |(op, predicate, (xmax, own, vids), (active, pages, l2p, vid))| NdpCall {
                op,
                predicate,
                snapshot: Snapshot { xmax, active, own },
                vids,
                l2p_pages: pages.clone(),
                l2p_delta: l2p.iter().map(|&l| (l, l ^ 1)).collect(),
                vid_pages: pages.iter().rev().copied().collect(),
                vid_delta: vid.iter().map(|&v| (v, !v)).collect(),
                delta_pages: pages,
            },
        )
    }

    proptest! {
        #[test]
        fn calls_roundtrip(c in call()) {
            prop_assert_eq!(NdpCall::decode(&c.encode()).unwrap(), c);
        }

        #[test]
        fn partials_roundtrip(values in proptest::collection::vec(proptest::option::of(any::<i64>()), 0..20), visited in any::<u64>()) {
            let mut p = Partial { visited, ..Partial::default() };
            values.into_iter().for_each(|v| p.add_row(v));
            prop_assert_eq!(Partial::decode(&p.encode()).unwrap(), p);
        }

        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = NdpCall::decode(&b);
            let mut m = sample().encode();
            let n = m.len();
            for (i, x) in b.iter().enumerate() {
                m[(i * 7919) % n] ^= x;
            }
            let _ = NdpCall::decode(&m);
            let _ = Partial::decode(&b);
        }
    }
}
