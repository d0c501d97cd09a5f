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

use crate::schema::{ColumnType, Value};

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
    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_code(code: u8) -> Option<Aggregate> {
        use Aggregate::*;
        [CountStar, Count, Sum, Min, Max, Avg].get(usize::from(code)).copied()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

    #[inline]
    pub fn eval(self, a: i64, b: i64) -> bool {
        self.holds(a.cmp(&b))
    }

    /// Whether `a op b` holds where `a.cmp(b)` is `ord`.
    #[inline]
    pub fn holds(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CmpOp::Eq => ord == Equal,
            CmpOp::Ne => ord != Equal,
            CmpOp::Lt => ord == Less,
            CmpOp::Le => ord != Greater,
            CmpOp::Gt => ord == Greater,
            CmpOp::Ge => ord != Less,
        }
    }
}

/// The most terms a call's predicate holds.
pub const MAX_TERMS: usize = 16;
/// The most aggregates one aggregate call computes.
pub const MAX_AGGREGATES: usize = 16;
/// The longest byte constant of a term (a char/varchar/text value).
pub const MAX_OPERAND_BYTES: usize = 4096;

/// The constant a term compares a column with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The stored integer of an integer, date (days), timestamp (µs),
    /// numeric (scaled) or bool (0/1) column.
    Int(i64),
    /// The bytes of a char (trailing spaces stripped), varchar or text
    /// column, compared byte by byte (the C collation).
    Bytes(Vec<u8>),
}

/// `column op value`; NULL never qualifies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Term {
    pub column: u16,
    pub op: CmpOp,
    pub value: Operand,
}

impl Term {
    /// Whether a column value meets the term. NULL never does, nor a value
    /// of the other kind (the host and the device refuse such a term before
    /// anything is read: `check_columns`).
    #[inline]
    pub fn matches(&self, v: &Value) -> bool {
        let ord = match (v, &self.value) {
            (Value::Int(a), Operand::Int(b)) => a.cmp(b),
            (Value::Text(a), Operand::Bytes(b)) => a.as_slice().cmp(b.as_slice()),
            _ => return false,
        };
        self.op.holds(ord)
    }
}

/// A conjunction of comparisons of columns with constants, which both the
/// device's PEs and the host's scans evaluate with [`Predicate::eval`] (so
/// both paths return the same rows). At most [`MAX_TERMS`] terms; none:
/// every row qualifies.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct Predicate {
    pub terms: Vec<Term>,
}

impl Predicate {
    /// The one-term predicate `column op value` on an integer-valued column.
    pub fn int(column: u16, op: CmpOp, value: i64) -> Predicate {
        Predicate { terms: vec![Term { column, op, value: Operand::Int(value) }] }
    }

    /// The conjunction of `self` and `other`'s terms.
    pub fn and(mut self, other: Predicate) -> Predicate {
        self.terms.extend(other.terms);
        self
    }

    /// Whether a row qualifies: every term, in order, on the value `value`
    /// gives for the term's column (read only for the terms reached: the
    /// first term that fails ends the evaluation).
    #[inline]
    pub fn eval<E>(&self, mut value: impl FnMut(&Term) -> Result<Value, E>) -> Result<bool, E> {
        for t in &self.terms {
            if !t.matches(&value(t)?) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Aggregates of the qualifying rows, 1 to [`MAX_AGGREGATES`]: each a
    /// function and its column (ignored for `count(*)`).
    Aggregate {
        aggregates: Vec<(Aggregate, u16)>,
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
            predicate: Some(Predicate::int(2, CmpOp::Ge, -5).and(Predicate {
                terms: vec![Term { column: 1, op: CmpOp::Lt, value: Operand::Bytes(b"MAIL".to_vec()) }],
            })),
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
        let aggregates = vec![(Aggregate::Avg, 4), (Aggregate::CountStar, 0), (Aggregate::Sum, 2)];
        let agg = NdpCall { op: Operation::Aggregate { aggregates }, predicate: None, ..sample() };
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
    fn terms_follow_sql() {
        let p = Predicate::int(0, CmpOp::Ge, 5)
            .and(Predicate { terms: vec![Term { column: 1, op: CmpOp::Lt, value: Operand::Bytes(b"b".to_vec()) }] });
        let row = |a: Value, b: Value| {
            move |t: &Term| -> Result<Value, ()> { Ok(if t.column == 0 { a.clone() } else { b.clone() }) }
        };
        let text = |s: &str| Value::Text(s.as_bytes().to_vec());
        assert_eq!(p.eval(row(Value::Int(5), text("abc"))), Ok(true));
        assert_eq!(p.eval(row(Value::Int(4), text("abc"))), Ok(false));
        assert_eq!(p.eval(row(Value::Int(9), text("b"))), Ok(false), "b < b is false");
        assert_eq!(p.eval(row(Value::Int(9), text("B"))), Ok(true), "bytes: B (0x42) sorts before b");
        assert_eq!(p.eval(row(Value::Null, text("a"))), Ok(false), "NULL never qualifies");
        assert_eq!(p.eval(row(Value::Int(9), Value::Null)), Ok(false));
        assert_eq!(p.eval(row(Value::Int(9), Value::Int(0))), Ok(false), "a kind mismatch never qualifies");
        // The first failing term ends the evaluation: column 1 is not read.
        let mut read = vec![];
        let _ = p.eval(|t| -> Result<Value, ()> {
            read.push(t.column);
            Ok(Value::Int(0))
        });
        assert_eq!(read, vec![0]);
        for (op, want) in [
            (CmpOp::Eq, [false, true, false]),
            (CmpOp::Ne, [true, false, true]),
            (CmpOp::Lt, [true, false, false]),
            (CmpOp::Le, [true, true, false]),
            (CmpOp::Gt, [false, false, true]),
            (CmpOp::Ge, [false, true, true]),
        ] {
            assert_eq!([4, 5, 6].map(|a| op.eval(a, 5)), want, "{op:?}");
        }
    }

    #[test]
    fn the_block_follows_the_spec() {
        let c = NdpCall {
            op: Operation::Aggregate { aggregates: vec![(Aggregate::Sum, 3), (Aggregate::CountStar, 0)] },
            predicate: Some(Predicate::int(2, CmpOp::Lt, 7).and(Predicate {
                terms: vec![Term { column: 5, op: CmpOp::Eq, value: Operand::Bytes(b"AIR".to_vec()) }],
            })),
            snapshot: Snapshot { xmax: 12, active: vec![], own: 0 },
            vids: 3,
            l2p_pages: vec![],
            l2p_delta: vec![],
            vid_pages: vec![],
            vid_delta: vec![],
            delta_pages: vec![],
        };
        let b = c.encode();
        assert_eq!(&b[..8], &[b'N', b'D', b'P', b'C', 2, 0, 1, 0]);
        assert_eq!(&b[26..30], &[2, 2, 0, 0], "2 terms, 2 aggregates, no projection");
        assert_eq!(&b[72..76], &[32, 0, 0, 0], "terms_bytes: 16 + 16");
        assert_eq!(&b[80..88], &[2, 0, 3, 0, 0, 0, 0, 0], "sum(3), count(*)");
        assert_eq!(&b[88..96], &[2, 0, 3, 1, 8, 0, 0, 0], "column 2 <, an integer of 8 bytes");
        assert_eq!(&b[96..104], &7i64.to_le_bytes());
        assert_eq!(&b[104..120], &[5, 0, 1, 2, 3, 0, 0, 0, b'A', b'I', b'R', 0, 0, 0, 0, 0]);
        assert_eq!(b.len(), 120);
        assert_eq!(NdpCall::decode(&b).unwrap(), c);
        let bad = |at: usize, v: u8| {
            let mut m = b.clone();
            m[at] = v;
            NdpCall::decode(&m).unwrap_err().to_string()
        };
        assert!(bad(26, 17).contains("term_count"), "{}", bad(26, 17));
        assert!(bad(27, 0).contains("aggregate_count"));
        assert!(bad(90, 9).contains("term op"));
        assert!(bad(91, 3).contains("term kind"));
        assert!(bad(92, 9).contains("term length"));
        assert!(bad(108, 9).contains("terms"), "{}", bad(108, 9));
        assert!(bad(80, 6).contains("aggregate"));
        assert!(bad(4, 1).contains("version"));
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
            proptest::collection::vec((0usize..6, any::<u16>()), 1..=MAX_AGGREGATES).prop_map(|a| {
                Operation::Aggregate {
                    aggregates: a.into_iter().map(|(f, c)| ([CountStar, Count, Sum, Min, Max, Avg][f], c)).collect(),
                }
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
        let operand = prop_oneof![
            any::<i64>().prop_map(Operand::Int),
            proptest::collection::vec(any::<u8>(), 0..20).prop_map(Operand::Bytes),
        ];
        let term = (any::<u16>(), 1u8..7, operand).prop_map(|(column, op, value)| Term {
            column,
            op: CmpOp::from_code(op).unwrap(),
            value,
        });
        let predicate =
            proptest::option::of(proptest::collection::vec(term, 1..=MAX_TERMS).prop_map(|terms| Predicate { terms }));
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
