//! The call block (range 0): the operation, the predicate, the snapshot,
//! and the shared state the device lacks (map deltas, the list of shipped
//! delta pages). Version 2 (`docs/format/ndp-call.md`).
//!
//! ```text
//! offset size field
//!      0    4 magic            b"NDPC"
//!      4    2 version          2
//!      6    1 op               1 aggregate, 2 rows, 3 update
//!      7    1 update_expr      op 3: 0 `col = v`, 1 `col = col + v`, 2 `col = col * v`; else 0
//!      8    8 xmax             snapshot: ids >= xmax are invisible
//!     16    8 own              snapshot: the reading transaction's id (its own writes are visible), 0 none
//!     24    2 update_column    op 3: the updated column; else 0
//!     26    1 term_count       0..=16 terms of the predicate (a conjunction)
//!     27    1 aggregate_count  op 1: 1..=16; else 0
//!     28    2 projection_count op 2: columns of a rows call; else 0
//!     30    2 reserved         0
//!     32    8 update_value     op 3: the expression's i64 `v`; else 0
//!     40    8 vids             tuples of the table (VID map length)
//!     48    4 active_count     in-progress transaction ids (sorted u64s)
//!     52    4 l2p_pages        ppns of the L2P map pages (u64s), in order
//!     56    4 l2p_delta        (lpn, ppn) pairs not yet in the L2P pages, sorted by lpn
//!     60    4 vid_pages        lpns of the table's VID map pages (u64s), in order
//!     64    4 vid_delta        (vid, RecordId) pairs not yet in the VID map pages, sorted by vid
//!     68    4 delta_pages      lpns of the delta-buffer pages shipped in range 2, in order
//!     72    4 terms_bytes      bytes of the terms array (a multiple of 8)
//!     76    4 reserved         0
//!     80    . arrays in the order: projection (u16s, padded to 8), aggregates (u8 function,
//!             u8 0, u16 column; padded to 8), terms, active, l2p_pages, l2p_delta,
//!             vid_pages, vid_delta, delta_pages
//!
//! a term:  0 2 column | 2 1 op (1 = .. 6 >=) | 3 1 kind (1 integer, 2 bytes) | 4 4 length
//!          8 . integer: 8 bytes, i64 (length 8); bytes: `length` bytes (at most 4096),
//!              zero padded to a multiple of 8
//! ```

use super::{
    Aggregate, CmpOp, MAX_AGGREGATES, MAX_OPERAND_BYTES, MAX_TERMS, Operand, Operation, Predicate, Snapshot, Term,
    UpdateExpr,
};
use crate::{FormatError, u32_at, u64_at};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NdpCall {
    pub op: Operation,
    /// The rows the call reads (None: all; an empty conjunction is the same).
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
const VERSION: u16 = 2;
const FIXED: usize = 80;
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
        let (mut projection, mut aggregates): (&[u16], &[(Aggregate, u16)]) = (&[], &[]);
        match &self.op {
            Operation::Aggregate { aggregates: a } => {
                b[6] = 1;
                aggregates = a;
            }
            Operation::Rows { projection: p } => {
                b[6] = 2;
                projection = p;
            }
            Operation::Update { column, expr } => {
                let (code, v) = expr.code();
                b[6] = 3;
                b[7] = code;
                b[24..26].copy_from_slice(&column.to_le_bytes());
                b[32..40].copy_from_slice(&v.to_le_bytes());
            }
        }
        let terms = self.terms();
        debug_assert!(terms.len() <= MAX_TERMS && aggregates.len() <= MAX_AGGREGATES, "the decoder refuses more");
        debug_assert!(projection.len() <= usize::from(u16::MAX), "projection_count is a u16");
        b[8..16].copy_from_slice(&self.snapshot.xmax.to_le_bytes());
        b[16..24].copy_from_slice(&self.snapshot.own.to_le_bytes());
        b[26] = terms.len() as u8;
        b[27] = aggregates.len() as u8;
        b[28..30].copy_from_slice(&(projection.len() as u16).to_le_bytes());
        b[40..48].copy_from_slice(&self.vids.to_le_bytes());
        for (i, c) in self.counts().iter().enumerate() {
            debug_assert!(u32::try_from(*c).is_ok(), "array counts are u32s");
            b[COUNTS_AT + 4 * i..COUNTS_AT + 4 + 4 * i].copy_from_slice(&(*c as u32).to_le_bytes());
        }
        for c in projection {
            b.extend_from_slice(&c.to_le_bytes());
        }
        pad8(&mut b);
        for (f, c) in aggregates {
            b.extend_from_slice(&[f.code(), 0]);
            b.extend_from_slice(&c.to_le_bytes());
        }
        pad8(&mut b);
        let terms_at = b.len();
        terms.iter().for_each(|t| encode_term(t, &mut b));
        let terms_bytes = (b.len() - terms_at) as u32;
        b[72..76].copy_from_slice(&terms_bytes.to_le_bytes());
        self.encode_arrays(&mut b);
        b
    }

    fn terms(&self) -> &[Term] {
        self.predicate.as_ref().map_or(&[], |p| &p.terms)
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
    /// version, the length the counts imply, the operation, the terms, and
    /// sorted arrays.
    pub fn decode(b: &[u8]) -> Result<NdpCall, FormatError> {
        let (lens, counts) = check_lengths(b)?;
        let projection: Vec<u16> = (0..lens.projection).map(|i| u16_at(b, FIXED + 2 * i)).collect();
        let mut at = FIXED + pad8_len(2 * lens.projection);
        let aggregates = decode_aggregates(&b[at..at + 4 * lens.aggregates])?;
        at += pad8_len(4 * lens.aggregates);
        let op = decode_op(b, projection, aggregates)?;
        let predicate = decode_terms(&b[at..at + lens.terms_bytes], usize::from(b[26]))?;
        at += lens.terms_bytes;
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

/// Lengths of the arrays before the six u64 arrays: projection and
/// aggregate elements, and bytes of the terms.
struct Lens {
    projection: usize,
    aggregates: usize,
    terms_bytes: usize,
}

fn pad8_len(n: usize) -> usize {
    n.div_ceil(8) * 8
}

fn pad8(b: &mut Vec<u8>) {
    b.resize(pad8_len(b.len()), 0);
}

/// Checks length, magic and version, and that the block holds what its
/// counts say; returns the lengths of the first arrays and the six array
/// counts.
fn check_lengths(b: &[u8]) -> Result<(Lens, [usize; 6]), FormatError> {
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
    let lens = Lens {
        projection: usize::from(u16_at(b, 28)),
        aggregates: usize::from(b[27]),
        terms_bytes: u32_at(b, 72) as usize,
    };
    if !lens.terms_bytes.is_multiple_of(8) {
        return Err(invalid("terms_bytes", format!("{} is not a multiple of 8", lens.terms_bytes)));
    }
    let counts: [usize; 6] = std::array::from_fn(|i| u32_at(b, COUNTS_AT + 4 * i) as usize);
    let needed = array_words(&counts)
        .checked_mul(8)
        .and_then(|w| w.checked_add(FIXED + pad8_len(2 * lens.projection) + pad8_len(4 * lens.aggregates)))
        .and_then(|n| n.checked_add(lens.terms_bytes))
        .unwrap_or(usize::MAX);
    if b.len() < needed {
        return Err(FormatError::Truncated { structure: S, needed, found: b.len() });
    }
    Ok((lens, counts))
}

/// The aggregates array: `(u8 function, u8 0, u16 column)` each.
fn decode_aggregates(b: &[u8]) -> Result<Vec<(Aggregate, u16)>, FormatError> {
    b.chunks_exact(4)
        .map(|a| {
            let f = Aggregate::from_code(a[0]).ok_or_else(|| invalid("aggregate", format!("code {}", a[0])))?;
            Ok((f, u16_at(a, 2)))
        })
        .collect()
}

/// The operation (`op`, `update_expr`, `update_column`, `update_value`,
/// and the counts that must be 0 for it).
fn decode_op(b: &[u8], projection: Vec<u16>, aggregates: Vec<(Aggregate, u16)>) -> Result<Operation, FormatError> {
    let op = b[6];
    if op != 1 && !aggregates.is_empty() {
        return Err(invalid("aggregate_count", format!("{} for op {op} (must be 0)", aggregates.len())));
    }
    if op != 2 && !projection.is_empty() {
        return Err(invalid("projection_count", format!("{} for op {op} (must be 0)", projection.len())));
    }
    match op {
        1 if aggregates.is_empty() || aggregates.len() > MAX_AGGREGATES => Err(invalid(
            "aggregate_count",
            format!("{} (an aggregate call computes 1 to {MAX_AGGREGATES})", aggregates.len()),
        )),
        1 => Ok(Operation::Aggregate { aggregates }),
        2 => Ok(Operation::Rows { projection }),
        3 => {
            let code = b[7];
            let expr = UpdateExpr::from_code(code, u64_at(b, 32) as i64)
                .ok_or_else(|| invalid("update_expr", format!("code {code}")))?;
            Ok(Operation::Update { column: u16_at(b, 24), expr })
        }
        other => Err(invalid("op", format!("code {other}"))),
    }
}

const KIND_INT: u8 = 1;
const KIND_BYTES: u8 = 2;
const TERM_HEAD: usize = 8;

fn encode_term(t: &Term, b: &mut Vec<u8>) {
    b.extend_from_slice(&t.column.to_le_bytes());
    b.push(t.op.code());
    match &t.value {
        Operand::Int(v) => {
            b.push(KIND_INT);
            b.extend_from_slice(&8u32.to_le_bytes());
            b.extend_from_slice(&v.to_le_bytes());
        }
        Operand::Bytes(v) => {
            debug_assert!(v.len() <= MAX_OPERAND_BYTES, "the decoder refuses longer constants");
            b.push(KIND_BYTES);
            b.extend_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(v);
            pad8(b);
        }
    }
}

/// The terms array: exactly `count` terms filling `b`. None when there
/// are no terms.
fn decode_terms(b: &[u8], count: usize) -> Result<Option<Predicate>, FormatError> {
    if count > MAX_TERMS {
        return Err(invalid("term_count", format!("{count} (at most {MAX_TERMS})")));
    }
    let mut terms = Vec::with_capacity(count);
    let mut at = 0;
    for i in 0..count {
        let head = b
            .get(at..at + TERM_HEAD)
            .ok_or_else(|| invalid("terms_bytes", format!("term {i} of {count} starts at byte {at} of {}", b.len())))?;
        let op = CmpOp::from_code(head[2]).ok_or_else(|| invalid("term op", format!("term {i}: code {}", head[2])))?;
        let len = u32_at(head, 4) as usize;
        let value = match head[3] {
            KIND_INT if len == 8 => None,
            KIND_INT => return Err(invalid("term length", format!("term {i}: an integer of {len} bytes"))),
            KIND_BYTES if len <= MAX_OPERAND_BYTES => Some(len),
            KIND_BYTES => {
                return Err(invalid("term length", format!("term {i}: {len} bytes (at most {MAX_OPERAND_BYTES})")));
            }
            k => return Err(invalid("term kind", format!("term {i}: kind {k}"))),
        };
        let body = at + TERM_HEAD;
        let n = value.unwrap_or(8);
        let bytes = b
            .get(body..body + n)
            .ok_or_else(|| invalid("terms_bytes", format!("term {i} ends past byte {}", b.len())))?;
        let value = match value {
            None => Operand::Int(u64_at(bytes, 0) as i64),
            Some(_) => Operand::Bytes(bytes.to_vec()),
        };
        terms.push(Term { column: u16_at(head, 0), op, value });
        at = body + pad8_len(n);
    }
    if at != b.len() {
        return Err(invalid("terms_bytes", format!("the terms end at byte {at}, terms_bytes says {}", b.len())));
    }
    Ok((count > 0).then_some(Predicate { terms }))
}
