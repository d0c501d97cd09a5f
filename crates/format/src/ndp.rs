//! The NDP snapshot call (`CALL_NDP` in neoDBMS): what the host ships to the
//! device, and what the device returns.
//!
//! Visibility is decided by one function, [`Snapshot::visible`], that host
//! scans and device programs share, so that NDP and host-only execution apply
//! the same rule (the differential tests check both against a separate
//! reference model).
//!
//! The call block (a device memory range, little-endian throughout):
//!
//! ```text
//! offset size field
//!      0    4 magic            b"NDPC"
//!      4    2 version          1
//!      6    1 op               1 aggregate, 2 rows, 3 update
//!      7    1 aggregate        0 count(*), 1 count(col), 2 sum, 3 min, 4 max, 5 avg;
//!                              update: the expression, 0 `col = v`, 1 `col = col + v`, 2 `col = col * v`
//!      8    8 xmax             snapshot: ids >= xmax are invisible
//!     16    8 own              snapshot: the reading transaction's id (its own writes are visible), 0 none
//!     24    2 agg_column       column of the aggregate (ignored for count(*)), or the updated column
//!     26    1 has_predicate    0 or 1
//!     27    1 predicate_op     1 =, 2 <>, 3 <, 4 <=, 5 >, 6 >=
//!     28    2 predicate_column
//!     30    2 projection_count columns of a rows call, then that many u16 column indexes (below);
//!                              update: 4, and the four u16s are the expression's i64 `v`
//!     32    8 predicate_value  i64
//!     40    8 vids             tuples of the table (VID map length)
//!     48    4 active_count     in-progress transaction ids (sorted u64s)
//!     52    4 l2p_pages        ppns of the L2P map pages (u64s), in order
//!     56    4 l2p_delta        (lpn, ppn) pairs not yet in the L2P pages, sorted by lpn
//!     60    4 vid_pages        lpns of the table's VID map pages (u64s), in order
//!     64    4 vid_delta        (vid, RecordId) pairs not yet in the VID map pages, sorted by vid
//!     68    4 delta_pages      lpns of the delta-buffer pages shipped in range 2, in order
//!     72    . arrays in the order: projection (u16, padded to 8), active, l2p_pages,
//!             l2p_delta, vid_pages, vid_delta, delta_pages
//! ```

use crate::schema::ColumnType;
use crate::{FormatError, u32_at, u64_at};

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

    fn code(self) -> (u8, i64) {
        match self {
            UpdateExpr::Set(v) => (0, v),
            UpdateExpr::Add(v) => (1, v),
            UpdateExpr::Mul(v) => (2, v),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NdpCall {
    pub op: Operation,
    pub predicate: Option<Predicate>,
    pub snapshot: Snapshot,
    pub vids: u64,
    pub l2p_pages: Vec<u64>,
    pub l2p_delta: Vec<(u64, u64)>,
    pub vid_pages: Vec<u64>,
    pub vid_delta: Vec<(u64, u64)>,
    pub delta_pages: Vec<u64>,
}

const MAGIC: [u8; 4] = *b"NDPC";
const FIXED: usize = 72;
const S: &str = "NDP call";

fn invalid(field: &'static str, reason: String) -> FormatError {
    FormatError::InvalidField { structure: S, field, reason }
}

impl NdpCall {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; FIXED];
        b[0..4].copy_from_slice(&MAGIC);
        b[4..6].copy_from_slice(&1u16.to_le_bytes());
        let update_words: [u16; 4];
        let projection: &[u16] = match &self.op {
            Operation::Aggregate { func, column } => {
                b[6] = 1;
                b[7] = *func as u8;
                b[24..26].copy_from_slice(&column.to_le_bytes());
                &[]
            }
            Operation::Rows { projection } => {
                b[6] = 2;
                projection
            }
            Operation::Update { column, expr } => {
                let (code, v) = expr.code();
                b[6] = 3;
                b[7] = code;
                b[24..26].copy_from_slice(&column.to_le_bytes());
                let vb = v.to_le_bytes();
                update_words = std::array::from_fn(|i| u16::from_le_bytes([vb[2 * i], vb[2 * i + 1]]));
                &update_words
            }
        };
        b[8..16].copy_from_slice(&self.snapshot.xmax.to_le_bytes());
        b[16..24].copy_from_slice(&self.snapshot.own.to_le_bytes());
        if let Some(p) = self.predicate {
            b[26] = 1;
            b[27] = p.op as u8 + 1;
            b[28..30].copy_from_slice(&p.column.to_le_bytes());
            b[32..40].copy_from_slice(&p.value.to_le_bytes());
        }
        b[30..32].copy_from_slice(&(projection.len() as u16).to_le_bytes());
        b[40..48].copy_from_slice(&self.vids.to_le_bytes());
        let counts = [
            self.snapshot.active.len(),
            self.l2p_pages.len(),
            self.l2p_delta.len(),
            self.vid_pages.len(),
            self.vid_delta.len(),
            self.delta_pages.len(),
        ];
        for (i, c) in counts.iter().enumerate() {
            b[48 + 4 * i..52 + 4 * i].copy_from_slice(&(*c as u32).to_le_bytes());
        }
        for c in projection {
            b.extend_from_slice(&c.to_le_bytes());
        }
        b.resize(b.len().div_ceil(8) * 8, 0);
        let mut put = |v: u64| b.extend_from_slice(&v.to_le_bytes());
        self.snapshot.active.iter().for_each(|&v| put(v));
        self.l2p_pages.iter().for_each(|&v| put(v));
        self.l2p_delta.iter().for_each(|&(l, p)| {
            put(l);
            put(p)
        });
        self.vid_pages.iter().for_each(|&v| put(v));
        self.vid_delta.iter().for_each(|&(v, r)| {
            put(v);
            put(r)
        });
        self.delta_pages.iter().for_each(|&v| put(v));
        b
    }

    /// Decodes and checks a call block: lengths, codes, and sorted arrays.
    pub fn decode(b: &[u8]) -> Result<NdpCall, FormatError> {
        if b.len() < FIXED {
            return Err(FormatError::Truncated { structure: S, needed: FIXED, found: b.len() });
        }
        if b[0..4] != MAGIC {
            return Err(FormatError::BadMagic { structure: S, found: b[0..4].to_vec() });
        }
        let version = u16::from_le_bytes([b[4], b[5]]);
        if version != 1 {
            return Err(FormatError::UnsupportedVersion { structure: S, found: version.into(), supported: 1 });
        }
        let u16_at = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
        let nproj = usize::from(u16_at(30));
        let counts: Vec<usize> = (0..6).map(|i| u32_at(b, 48 + 4 * i) as usize).collect();
        let words: usize = counts[0] + counts[1] + 2 * counts[2] + counts[3] + 2 * counts[4] + counts[5];
        let proj_bytes = (2 * nproj).div_ceil(8) * 8;
        let needed = words.checked_mul(8).and_then(|w| w.checked_add(FIXED + proj_bytes)).unwrap_or(usize::MAX);
        if b.len() < needed {
            return Err(FormatError::Truncated { structure: S, needed, found: b.len() });
        }
        let projection: Vec<u16> = (0..nproj).map(|i| u16_at(FIXED + 2 * i)).collect();
        let op = match (b[6], b[7]) {
            (1, f) => {
                let func = match f {
                    0 => Aggregate::CountStar,
                    1 => Aggregate::Count,
                    2 => Aggregate::Sum,
                    3 => Aggregate::Min,
                    4 => Aggregate::Max,
                    5 => Aggregate::Avg,
                    other => return Err(invalid("aggregate", format!("code {other}"))),
                };
                Operation::Aggregate { func, column: u16_at(24) }
            }
            (2, _) => Operation::Rows { projection },
            (3, code) => {
                if projection.len() != 4 {
                    return Err(invalid("projection_count", format!("{} for an update (must be 4)", projection.len())));
                }
                let mut vb = [0u8; 8];
                for (i, w) in projection.iter().enumerate() {
                    vb[2 * i..2 * i + 2].copy_from_slice(&w.to_le_bytes());
                }
                let v = i64::from_le_bytes(vb);
                let expr = match code {
                    0 => UpdateExpr::Set(v),
                    1 => UpdateExpr::Add(v),
                    2 => UpdateExpr::Mul(v),
                    other => return Err(invalid("update expression", format!("code {other}"))),
                };
                Operation::Update { column: u16_at(24), expr }
            }
            (other, _) => return Err(invalid("op", format!("code {other}"))),
        };
        let predicate = match b[26] {
            0 => None,
            1 => {
                let op = match b[27] {
                    1 => CmpOp::Eq,
                    2 => CmpOp::Ne,
                    3 => CmpOp::Lt,
                    4 => CmpOp::Le,
                    5 => CmpOp::Gt,
                    6 => CmpOp::Ge,
                    other => return Err(invalid("predicate_op", format!("code {other}"))),
                };
                Some(Predicate { column: u16_at(28), op, value: u64_at(b, 32) as i64 })
            }
            other => return Err(invalid("has_predicate", format!("{other}"))),
        };
        let mut at = FIXED + proj_bytes;
        let mut take = |n: usize| -> Vec<u64> {
            let v = (0..n).map(|i| u64_at(b, at + 8 * i)).collect();
            at += 8 * n;
            v
        };
        let active = take(counts[0]);
        let l2p_pages = take(counts[1]);
        let l2p_flat = take(2 * counts[2]);
        let vid_pages = take(counts[3]);
        let vid_flat = take(2 * counts[4]);
        let delta_pages = take(counts[5]);
        let pairs = |f: Vec<u64>| -> Vec<(u64, u64)> { f.chunks(2).map(|c| (c[0], c[1])).collect() };
        let call = NdpCall {
            op,
            predicate,
            snapshot: Snapshot { xmax: u64_at(b, 8), active, own: u64_at(b, 16) },
            vids: u64_at(b, 40),
            l2p_pages,
            l2p_delta: pairs(l2p_flat),
            vid_pages,
            vid_delta: pairs(vid_flat),
            delta_pages,
        };
        let sorted = |v: &[u64]| v.windows(2).all(|w| w[0] < w[1]);
        if !sorted(&call.snapshot.active) {
            return Err(invalid("active", "transaction ids are not strictly increasing".into()));
        }
        if !call.l2p_delta.windows(2).all(|w| w[0].0 < w[1].0) || !call.vid_delta.windows(2).all(|w| w[0].0 < w[1].0) {
            return Err(invalid("delta", "map deltas are not sorted by key".into()));
        }
        Ok(call)
    }
}

/// One PE's partial aggregate (the device writes one per PE), 72 bytes.
///
/// ```text
/// 0  8 rows      qualifying visible tuples
/// 8  8 values    non-NULL values among them
/// 16 16 sum      i128 LE
/// 32 8 min       i64 (i64::MAX when values = 0)
/// 40 8 max       i64 (i64::MIN when values = 0)
/// 48 8 visited   versions visited (chain steps)
/// 56 8 extra_bytes medium bytes read for VID-map entries, L2P entries, column values and null
///             bitmaps (NVM: whole transfers; flash: the bytes used from cached pages)
/// 64 8 dram_visits versions visited in shipped delta-buffer pages (device DRAM, not the medium)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partial {
    pub rows: u64,
    pub values: u64,
    pub sum: i128,
    pub min: i64,
    pub max: i64,
    pub visited: u64,
    pub extra_bytes: u64,
    pub dram_visits: u64,
}

pub const PARTIAL_BYTES: usize = 72;

impl Default for Partial {
    fn default() -> Self {
        Partial { rows: 0, values: 0, sum: 0, min: i64::MAX, max: i64::MIN, visited: 0, extra_bytes: 0, dram_visits: 0 }
    }
}

impl Partial {
    pub fn add_row(&mut self, value: Option<i64>) {
        self.rows += 1;
        if let Some(v) = value {
            self.values += 1;
            self.sum += i128::from(v);
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
    }

    pub fn merge(&mut self, o: &Partial) {
        self.rows += o.rows;
        self.values += o.values;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.visited += o.visited;
        self.extra_bytes += o.extra_bytes;
        self.dram_visits += o.dram_visits;
    }

    pub fn encode(&self) -> [u8; PARTIAL_BYTES] {
        let mut b = [0u8; PARTIAL_BYTES];
        b[0..8].copy_from_slice(&self.rows.to_le_bytes());
        b[8..16].copy_from_slice(&self.values.to_le_bytes());
        b[16..32].copy_from_slice(&self.sum.to_le_bytes());
        b[32..40].copy_from_slice(&self.min.to_le_bytes());
        b[40..48].copy_from_slice(&self.max.to_le_bytes());
        b[48..56].copy_from_slice(&self.visited.to_le_bytes());
        b[56..64].copy_from_slice(&self.extra_bytes.to_le_bytes());
        b[64..72].copy_from_slice(&self.dram_visits.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<Partial, FormatError> {
        if b.len() < PARTIAL_BYTES {
            return Err(FormatError::Truncated {
                structure: "partial aggregate",
                needed: PARTIAL_BYTES,
                found: b.len(),
            });
        }
        let p = Partial {
            rows: u64_at(b, 0),
            values: u64_at(b, 8),
            sum: i128::from_le_bytes(b[16..32].try_into().expect("16 bytes")),
            min: u64_at(b, 32) as i64,
            max: u64_at(b, 40) as i64,
            visited: u64_at(b, 48),
            extra_bytes: u64_at(b, 56),
            dram_visits: u64_at(b, 64),
        };
        if p.values > p.rows {
            return Err(FormatError::InvalidField {
                structure: "partial aggregate",
                field: "values",
                reason: format!("{} values in {} rows", p.values, p.rows),
            });
        }
        Ok(p)
    }

    /// The aggregate's SQL result: None is SQL NULL (no values). AVG is
    /// returned as the exact quotient rounded toward zero in the column's
    /// units; callers format it.
    pub fn result(&self, func: Aggregate) -> Option<i128> {
        match func {
            Aggregate::CountStar => Some(i128::from(self.rows)),
            Aggregate::Count => Some(i128::from(self.values)),
            _ if self.values == 0 => None,
            Aggregate::Sum => Some(self.sum),
            Aggregate::Min => Some(i128::from(self.min)),
            Aggregate::Max => Some(i128::from(self.max)),
            Aggregate::Avg => Some(self.sum / i128::from(self.values)),
        }
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

    proptest! {
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
