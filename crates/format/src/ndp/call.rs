//! The call block (range 0): the operation, the snapshot, and the shared
//! state the device lacks (map deltas, the list of shipped delta pages).
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

use super::{Aggregate, CmpOp, Operation, Predicate, Snapshot, UpdateExpr};
use crate::{FormatError, u32_at, u64_at};

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
const VERSION: u16 = 1;
const FIXED: usize = 72;
/// Where the six array counts start (u32 each).
const COUNTS_AT: usize = 48;
const S: &str = "NDP call";

fn invalid(field: &'static str, reason: String) -> FormatError {
    FormatError::InvalidField { structure: S, field, reason }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

impl NdpCall {
    pub fn encode(&self) -> Vec<u8> {
        debug_assert!(self.check_sorted().is_ok(), "the decoder refuses unsorted arrays");
        let mut b = vec![0u8; FIXED];
        b[0..4].copy_from_slice(&MAGIC);
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        let update_words: [u16; 4];
        let projection: &[u16] = match &self.op {
            Operation::Aggregate { func, column } => {
                b[6] = 1;
                b[7] = func.code();
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
            b[27] = p.op.code();
            b[28..30].copy_from_slice(&p.column.to_le_bytes());
            b[32..40].copy_from_slice(&p.value.to_le_bytes());
        }
        debug_assert!(projection.len() <= usize::from(u16::MAX), "projection_count is a u16");
        b[30..32].copy_from_slice(&(projection.len() as u16).to_le_bytes());
        b[40..48].copy_from_slice(&self.vids.to_le_bytes());
        for (i, c) in self.counts().iter().enumerate() {
            debug_assert!(u32::try_from(*c).is_ok(), "array counts are u32s");
            b[COUNTS_AT + 4 * i..COUNTS_AT + 4 + 4 * i].copy_from_slice(&(*c as u32).to_le_bytes());
        }
        for c in projection {
            b.extend_from_slice(&c.to_le_bytes());
        }
        b.resize(b.len().div_ceil(8) * 8, 0);
        self.encode_arrays(&mut b);
        debug_assert_eq!(b.len(), FIXED + (2 * projection.len()).div_ceil(8) * 8 + 8 * self.array_words());
        b
    }

    /// Elements of the six arrays after the projection, in block order.
    fn counts(&self) -> [usize; 6] {
        [
            self.snapshot.active.len(),
            self.l2p_pages.len(),
            self.l2p_delta.len(),
            self.vid_pages.len(),
            self.vid_delta.len(),
            self.delta_pages.len(),
        ]
    }

    fn array_words(&self) -> usize {
        array_words(&self.counts())
    }

    fn encode_arrays(&self, b: &mut Vec<u8>) {
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
    }

    /// Decodes and checks a call block, in this order: length, magic,
    /// version, the length the counts imply, the operation, the predicate,
    /// and sorted arrays.
    pub fn decode(b: &[u8]) -> Result<NdpCall, FormatError> {
        let (nproj, counts) = check_lengths(b)?;
        let projection: Vec<u16> = (0..nproj).map(|i| u16_at(b, FIXED + 2 * i)).collect();
        let op = decode_op(b, projection)?;
        let predicate = decode_predicate(b)?;
        let mut at = FIXED + (2 * nproj).div_ceil(8) * 8;
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
        call.check_sorted()?;
        Ok(call)
    }

    fn check_sorted(&self) -> Result<(), FormatError> {
        if !self.snapshot.active.windows(2).all(|w| w[0] < w[1]) {
            return Err(invalid("active", "transaction ids are not strictly increasing".into()));
        }
        if !self.l2p_delta.windows(2).all(|w| w[0].0 < w[1].0) || !self.vid_delta.windows(2).all(|w| w[0].0 < w[1].0) {
            return Err(invalid("delta", "map deltas are not sorted by key".into()));
        }
        Ok(())
    }
}

/// u64 words of the six arrays with these element counts (pairs are two).
fn array_words(counts: &[usize; 6]) -> usize {
    counts[0] + counts[1] + 2 * counts[2] + counts[3] + 2 * counts[4] + counts[5]
}

/// Checks length, magic and version, and that the block holds what its
/// counts say; returns the projection count and the six array counts.
fn check_lengths(b: &[u8]) -> Result<(usize, [usize; 6]), FormatError> {
    if b.len() < FIXED {
        return Err(FormatError::Truncated { structure: S, needed: FIXED, found: b.len() });
    }
    if b[0..4] != MAGIC {
        return Err(FormatError::BadMagic { structure: S, found: b[0..4].to_vec() });
    }
    let version = u16_at(b, 4);
    if version != VERSION {
        return Err(FormatError::UnsupportedVersion { structure: S, found: version.into(), supported: VERSION.into() });
    }
    let nproj = usize::from(u16_at(b, 30));
    let counts: [usize; 6] = std::array::from_fn(|i| u32_at(b, COUNTS_AT + 4 * i) as usize);
    let proj_bytes = (2 * nproj).div_ceil(8) * 8;
    let needed =
        array_words(&counts).checked_mul(8).and_then(|w| w.checked_add(FIXED + proj_bytes)).unwrap_or(usize::MAX);
    if b.len() < needed {
        return Err(FormatError::Truncated { structure: S, needed, found: b.len() });
    }
    Ok((nproj, counts))
}

/// The operation (`op`, `aggregate`, `agg_column`; an update's operand is
/// in the projection words).
fn decode_op(b: &[u8], projection: Vec<u16>) -> Result<Operation, FormatError> {
    match (b[6], b[7]) {
        (1, code) => {
            let func = Aggregate::from_code(code).ok_or_else(|| invalid("aggregate", format!("code {code}")))?;
            Ok(Operation::Aggregate { func, column: u16_at(b, 24) })
        }
        (2, _) => Ok(Operation::Rows { projection }),
        (3, code) => {
            if projection.len() != 4 {
                return Err(invalid("projection_count", format!("{} for an update (must be 4)", projection.len())));
            }
            let mut vb = [0u8; 8];
            for (i, w) in projection.iter().enumerate() {
                vb[2 * i..2 * i + 2].copy_from_slice(&w.to_le_bytes());
            }
            let expr = UpdateExpr::from_code(code, i64::from_le_bytes(vb))
                .ok_or_else(|| invalid("update expression", format!("code {code}")))?;
            Ok(Operation::Update { column: u16_at(b, 24), expr })
        }
        (other, _) => Err(invalid("op", format!("code {other}"))),
    }
}

fn decode_predicate(b: &[u8]) -> Result<Option<Predicate>, FormatError> {
    match b[26] {
        0 => Ok(None),
        1 => {
            let op = CmpOp::from_code(b[27]).ok_or_else(|| invalid("predicate_op", format!("code {}", b[27])))?;
            Ok(Some(Predicate { column: u16_at(b, 28), op, value: u64_at(b, 32) as i64 }))
        }
        other => Err(invalid("has_predicate", format!("{other}"))),
    }
}
