//! The write-ahead log's bytes: how a record is framed in the log ring, and
//! what each kind of record holds (`docs/format/wal.md`). The ring, the
//! appends, group commit and the recovery scan are the storage manager's
//! (`ndpdb-storage`, `wal.rs`); the commit path encodes a [`Record`] and
//! recovery decodes the same type.
//!
//! **Record** (starts at a multiple of 8; little-endian):
//!
//! ```text
//! offset size field
//!      0    4 magic    b"NDPL"
//!      4    4 len      payload bytes
//!      8    8 lsn      this record's own LSN (a stale record from an earlier
//!                      lap of the ring has another)
//!     16    4 crc      CRC-32 of bytes 0..16 and the payload
//!     20    4 kind     1 commit, 2 create table, 3 pin snapshot, 4 drop snapshot,
//!                      5 delta page
//!     24  len payload  then zero padding to a multiple of 8
//! ```
//!
//! **Payloads:**
//!
//! ```text
//! commit           txn u64, n u32, then n operations in the order they were made:
//!                  kind u8 (1 insert, 2 update, 3 delete), table u32, vid u64,
//!                  len u32, len bytes of the new tuple (none for a delete)
//! create table     id u32, name (u16 length + UTF-8), layout descriptor
//!                  (u32 length + bytes), column names (u16 count, then u16 length + UTF-8 each)
//! pin snapshot     id u64, xmax u64
//! drop snapshot    id u64, xmax u64
//! delta page       table u32, lpn u64, frame_addr u64 (a delta-buffer page
//!                  started in the host frame at frame_addr; for the device's
//!                  mirror, docs/cbm.md; recovery skips it)
//! ```
//!
//! A payload decodes only if every byte belongs to a field.

use std::borrow::Cow;

use crate::FormatError;
use crate::bytes::{Reader, Writer, put_table_def, take_table_def};

/// Bytes of a record header.
pub const RECORD_HEADER_BYTES: usize = 24;
/// The first bytes of every record.
pub const MAGIC: [u8; 4] = *b"NDPL";
const S: &str = "log record";

/// What a log record says (the header's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    Commit = 1,
    CreateTable = 2,
    PinSnapshot = 3,
    DropSnapshot = 4,
    DeltaPage = 5,
}

impl RecordKind {
    pub fn from_u32(v: u32) -> Option<RecordKind> {
        Some(match v {
            1 => RecordKind::Commit,
            2 => RecordKind::CreateTable,
            3 => RecordKind::PinSnapshot,
            4 => RecordKind::DropSnapshot,
            5 => RecordKind::DeltaPage,
            _ => return None,
        })
    }
}

/// Bytes a record with a payload of `payload_len` bytes takes in the log,
/// header and padding included.
pub fn record_bytes(payload_len: usize) -> usize {
    (RECORD_HEADER_BYTES + payload_len).div_ceil(8) * 8
}

/// Puts log bytes `data`, which start at LSN `from`, on a ring of
/// `page`-byte pages written whole: calls `write(lsn, image)` for each page
/// they cover, in order, with `lsn` the first new byte on that page and
/// `image` the page's full contents (earlier bytes of the page from `tail`,
/// zeros after the data). `tail` holds the bytes of `from`'s page before
/// `from`, and afterwards those of the page the data ends on (empty when it
/// ends on a page boundary). Returns the pages written.
pub fn page_images<E>(
    page: usize,
    from: u64,
    data: &[u8],
    tail: &mut Vec<u8>,
    mut write: impl FnMut(u64, Vec<u8>) -> Result<(), E>,
) -> Result<u64, E> {
    let (mut at, mut rest, mut pages) = (from, data, 0);
    while !rest.is_empty() {
        let off = (at % page as u64) as usize;
        if off == 0 {
            tail.clear();
        }
        debug_assert_eq!(tail.len(), off, "the tail page holds the bytes before `at`");
        let n = (page - off).min(rest.len());
        tail.extend_from_slice(&rest[..n]);
        let mut image = tail.clone();
        image.resize(page, 0);
        write(at, image)?;
        pages += 1;
        at += n as u64;
        rest = &rest[n..];
    }
    if at.is_multiple_of(page as u64) {
        tail.clear();
    }
    Ok(pages)
}

/// Appends the whole record, at log position `lsn`, to `out`.
pub fn frame_into(out: &mut Vec<u8>, lsn: u64, kind: RecordKind, payload: &[u8]) {
    debug_assert!(lsn.is_multiple_of(8), "records start at multiples of 8");
    debug_assert!(u32::try_from(payload.len()).is_ok(), "payload lengths are u32s");
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    let crc = checksum(&out[start..start + 16], payload);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&(kind as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out.resize(start + record_bytes(payload.len()), 0);
}

fn checksum(head: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(head);
    h.update(payload);
    h.finalize()
}

/// A record header with the right magic; its other fields unchecked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Payload bytes.
    pub len: u32,
    pub lsn: u64,
    pub crc: u32,
    /// The record kind's code ([`RecordKind::from_u32`]).
    pub kind: u32,
}

impl RecordHeader {
    /// The header in the first [`RECORD_HEADER_BYTES`] of `b`.
    pub fn decode(b: &[u8]) -> Result<RecordHeader, FormatError> {
        if b.len() < RECORD_HEADER_BYTES {
            return Err(FormatError::Truncated { structure: S, needed: RECORD_HEADER_BYTES, found: b.len() });
        }
        if b[0..4] != MAGIC {
            return Err(FormatError::BadMagic { structure: S, found: b[0..4].to_vec() });
        }
        let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        Ok(RecordHeader {
            len: word(4),
            lsn: u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
            crc: word(16),
            kind: word(20),
        })
    }

    /// Bytes the whole record takes in the log, padding included.
    pub fn record_bytes(&self) -> u64 {
        record_bytes(self.len as usize) as u64
    }

    /// Whether `payload` (the header's `len` bytes) matches the CRC.
    pub fn checks(&self, payload: &[u8]) -> bool {
        let mut head = [0u8; 16];
        head[0..4].copy_from_slice(&MAGIC);
        head[4..8].copy_from_slice(&self.len.to_le_bytes());
        head[8..16].copy_from_slice(&self.lsn.to_le_bytes());
        payload.len() == self.len as usize && checksum(&head, payload) == self.crc
    }
}

/// What a transaction did to one tuple, as the log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Insert = 1,
    Update = 2,
    Delete = 3,
}

/// One write of a committed transaction, in the order it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOp {
    pub kind: OpKind,
    pub table: u32,
    pub vid: u64,
    /// The new tuple (empty for a delete).
    pub data: Vec<u8>,
}

/// A table's definition, as its create-table record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDef {
    pub id: u32,
    pub name: String,
    /// The layout descriptor (`schema.rs`).
    pub layout_descriptor: Vec<u8>,
    pub column_names: Vec<String>,
}

/// A log record's payload, typed. A commit borrows its operations when the
/// commit path encodes it; decoding gives owned ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// A committed transaction's writes (redo only).
    Commit {
        txn: u64,
        ops: Cow<'a, [LogOp]>,
    },
    CreateTable(TableDef),
    PinSnapshot {
        id: u64,
        xmax: u64,
    },
    DropSnapshot {
        id: u64,
        xmax: u64,
    },
    /// A delta-buffer page `lpn` of `table` started in the host frame at
    /// `frame_addr` (CBM freshness, `docs/cbm.md`): the device's mirror
    /// marks the page Dirty there. Describes host memory of the run that
    /// wrote it, so recovery skips it.
    DeltaPage {
        table: u32,
        lpn: u64,
        frame_addr: u64,
    },
}

/// Payload bytes of a delta-page record.
pub const DELTA_PAGE_BYTES: usize = 20;

/// The `(lpn, frame address)` a record of `kind` (a header's code) names
/// for the device's mirror (`docs/cbm.md`): a delta-page record's; no page
/// for the other kinds. An error: the payload does not decode.
pub fn delta_page_named(kind: u32, payload: &[u8]) -> Result<Option<(u64, u64)>, FormatError> {
    if kind != RecordKind::DeltaPage as u32 {
        return Ok(None);
    }
    match Record::decode(RecordKind::DeltaPage, payload)? {
        Record::DeltaPage { lpn, frame_addr, .. } => Ok(Some((lpn, frame_addr))),
        _ => unreachable!("a delta-page payload decodes to a delta-page record"),
    }
}

/// Fixed bytes of one commit operation before its data.
const OP_FIXED_BYTES: usize = 17;

impl Record<'_> {
    pub fn kind(&self) -> RecordKind {
        match self {
            Record::Commit { .. } => RecordKind::Commit,
            Record::CreateTable(_) => RecordKind::CreateTable,
            Record::PinSnapshot { .. } => RecordKind::PinSnapshot,
            Record::DropSnapshot { .. } => RecordKind::DropSnapshot,
            Record::DeltaPage { .. } => RecordKind::DeltaPage,
        }
    }

    /// The payload bytes (the record's header is [`frame_into`]'s).
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Record::Commit { txn, ops } => encode_commit(*txn, ops),
            Record::CreateTable(t) => {
                let mut w = Writer(Vec::new());
                put_table_def(&mut w, t.id, &t.name, &t.layout_descriptor, &t.column_names);
                w.0
            }
            Record::PinSnapshot { id, xmax } | Record::DropSnapshot { id, xmax } => {
                let mut w = Writer(Vec::with_capacity(16));
                w.u64(*id);
                w.u64(*xmax);
                w.0
            }
            Record::DeltaPage { table, lpn, frame_addr } => {
                let mut w = Writer(Vec::with_capacity(DELTA_PAGE_BYTES));
                w.u32(*table);
                w.u64(*lpn);
                w.u64(*frame_addr);
                w.0
            }
        }
    }

    /// Decodes the payload of a record of `kind`.
    pub fn decode(kind: RecordKind, payload: &[u8]) -> Result<Record<'static>, FormatError> {
        let mut r = Reader::new(payload, S);
        let record = match kind {
            RecordKind::Commit => decode_commit(&mut r)?,
            RecordKind::CreateTable => {
                let (id, name, layout_descriptor, column_names) = take_table_def(&mut r)?;
                Record::CreateTable(TableDef { id, name, layout_descriptor, column_names })
            }
            RecordKind::PinSnapshot => Record::PinSnapshot { id: r.u64()?, xmax: r.u64()? },
            RecordKind::DropSnapshot => Record::DropSnapshot { id: r.u64()?, xmax: r.u64()? },
            RecordKind::DeltaPage => Record::DeltaPage { table: r.u32()?, lpn: r.u64()?, frame_addr: r.u64()? },
        };
        r.finish()?;
        Ok(record)
    }
}

fn encode_commit(txn: u64, ops: &[LogOp]) -> Vec<u8> {
    debug_assert!(u32::try_from(ops.len()).is_ok(), "operation counts are u32s");
    let mut w = Writer(Vec::with_capacity(12 + ops.iter().map(|o| OP_FIXED_BYTES + o.data.len()).sum::<usize>()));
    w.u64(txn);
    w.u32(ops.len() as u32);
    for o in ops {
        debug_assert!(o.kind != OpKind::Delete || o.data.is_empty(), "a delete logs no tuple");
        w.u8(o.kind as u8);
        w.u32(o.table);
        w.u64(o.vid);
        w.u32(o.data.len() as u32);
        w.bytes(&o.data);
    }
    w.0
}

fn decode_commit(r: &mut Reader<'_>) -> Result<Record<'static>, FormatError> {
    let txn = r.u64()?;
    let n = r.u32()?;
    let n = r.count(n.into(), OP_FIXED_BYTES)?;
    let mut ops = Vec::with_capacity(n);
    for _ in 0..n {
        let (kind, table, vid) = (r.u8()?, r.u32()?, r.u64()?);
        let len = r.u32()? as usize;
        let data = r.take(len)?.to_vec();
        let kind = match kind {
            1 => OpKind::Insert,
            2 => OpKind::Update,
            3 => OpKind::Delete,
            k => {
                return Err(FormatError::InvalidField {
                    structure: S,
                    field: "operation kind",
                    reason: format!("{k}"),
                });
            }
        };
        ops.push(LogOp { kind, table, vid, data });
    }
    Ok(Record::Commit { txn, ops: Cow::Owned(ops) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Log bytes split over whole pages: the first page keeps its earlier
    /// bytes, the last is zero-filled, and the tail carries over.
    #[test]
    fn page_images_rewrite_the_tail_page_and_zero_fill_the_last() {
        let mut tail = vec![1u8; 3];
        let mut images = Vec::new();
        let mut write = |at, image| -> Result<(), ()> {
            images.push((at, image));
            Ok(())
        };
        assert_eq!(page_images(8, 19, &[2; 10], &mut tail, &mut write), Ok(2));
        assert_eq!(images[0], (19, vec![1, 1, 1, 2, 2, 2, 2, 2]));
        assert_eq!(images[1], (24, vec![2, 2, 2, 2, 2, 0, 0, 0]));
        assert_eq!(tail, vec![2; 5]);
        assert_eq!(page_images(8, 29, &[3; 3], &mut tail, |_, _| Ok::<(), ()>(())), Ok(1));
        assert!(tail.is_empty(), "the data ended on a page boundary");
    }

    fn op() -> impl Strategy<Value = LogOp> {
        (0u8..3, any::<u32>(), any::<u64>(), proptest::collection::vec(any::<u8>(), 0..30)).prop_map(
            |(k, table, vid, data)| {
                let kind = [OpKind::Insert, OpKind::Update, OpKind::Delete][usize::from(k)];
                let data = if kind == OpKind::Delete { Vec::new() } else { data };
                LogOp { kind, table, vid, data }
            },
        )
    }

    fn record() -> impl Strategy<Value = Record<'static>> {
        let name = "[a-z_]{0,12}";
        prop_oneof![
            (any::<u64>(), proptest::collection::vec(op(), 0..6))
                .prop_map(|(txn, ops)| Record::Commit { txn, ops: Cow::Owned(ops) }),
            (any::<u32>(), name, proptest::collection::vec(any::<u8>(), 0..20), proptest::collection::vec(name, 0..4))
                .prop_map(|(id, name, layout_descriptor, column_names)| Record::CreateTable(TableDef {
                    id,
                    name,
                    layout_descriptor,
                    column_names
                })),
            (any::<u64>(), any::<u64>()).prop_map(|(id, xmax)| Record::PinSnapshot { id, xmax }),
            (any::<u64>(), any::<u64>()).prop_map(|(id, xmax)| Record::DropSnapshot { id, xmax }),
            (any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(table, lpn, frame_addr)| Record::DeltaPage {
                table,
                lpn,
                frame_addr
            }),
        ]
    }

    /// The bytes of docs/format/wal.md, written out by hand.
    #[test]
    fn a_commit_record_has_the_documented_bytes() {
        let ops = [LogOp { kind: OpKind::Update, table: 2, vid: 5, data: vec![0xaa, 0xbb] }];
        let rec = Record::Commit { txn: 9, ops: Cow::Borrowed(&ops) };
        let payload = rec.encode();
        let mut expect = vec![9, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        expect.extend_from_slice(&[2, 2, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0xaa, 0xbb]);
        assert_eq!(payload, expect);
        let mut log = Vec::new();
        frame_into(&mut log, 64, rec.kind(), &payload);
        assert_eq!(log.len(), 56, "24 + 31 bytes, padded to 8");
        assert_eq!(&log[0..8], b"NDPL\x1f\0\0\0");
        assert_eq!(&log[8..16], &64u64.to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&log[0..16]);
        crc.update(&payload);
        assert_eq!(&log[16..20], &crc.finalize().to_le_bytes());
        assert_eq!(&log[20..24], &1u32.to_le_bytes());
        assert_eq!(&log[24..55], &payload[..]);
        assert_eq!(log[55], 0);
        let h = RecordHeader::decode(&log).unwrap();
        assert_eq!((h.len, h.lsn, h.kind), (31, 64, 1));
        assert!(h.checks(&payload) && !h.checks(&log[24..54]));
        assert_eq!(Record::decode(RecordKind::Commit, &payload).unwrap(), rec);
        let mut longer = payload.clone();
        longer.push(0);
        assert!(Record::decode(RecordKind::Commit, &longer).is_err(), "every byte belongs to a field");
    }

    /// docs/format/wal.md's delta-page record, byte by byte.
    #[test]
    fn a_delta_page_record_has_the_documented_bytes() {
        let rec = Record::DeltaPage { table: 3, lpn: 0x0102, frame_addr: 0x2040 };
        let payload = rec.encode();
        let mut expect = vec![3, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0];
        expect.extend_from_slice(&[0x40, 0x20, 0, 0, 0, 0, 0, 0]);
        assert_eq!(payload, expect);
        assert_eq!(rec.kind() as u32, 5);
        assert_eq!(delta_page_named(5, &payload).unwrap(), Some((0x0102, 0x2040)));
        assert_eq!(delta_page_named(1, &payload).unwrap(), None, "other kinds name no page");
        assert!(delta_page_named(5, &payload[..19]).is_err());
    }

    proptest! {
        #[test]
        fn records_roundtrip(rec in record(), lsn in (0u64..1 << 40).prop_map(|l| l * 8)) {
            let payload = rec.encode();
            let mut log = vec![7u8; 8];
            frame_into(&mut log, lsn, rec.kind(), &payload);
            prop_assert_eq!(log.len() - 8, record_bytes(payload.len()));
            prop_assert!((log.len() - 8).is_multiple_of(8));
            let h = RecordHeader::decode(&log[8..]).unwrap();
            prop_assert_eq!((h.lsn, h.record_bytes()), (lsn, (log.len() - 8) as u64));
            let body = &log[8 + RECORD_HEADER_BYTES..8 + RECORD_HEADER_BYTES + h.len as usize];
            prop_assert!(h.checks(body));
            let kind = RecordKind::from_u32(h.kind).unwrap();
            prop_assert_eq!(Record::decode(kind, body).unwrap(), rec);
        }

        #[test]
        fn decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..120), k in 0u32..6, at in 0usize..200, x in any::<u8>()) {
            if let Ok(h) = RecordHeader::decode(&b) {
                let _ = h.checks(&b[RECORD_HEADER_BYTES..]);
            }
            for kind in [RecordKind::Commit, RecordKind::CreateTable, RecordKind::PinSnapshot, RecordKind::DropSnapshot, RecordKind::DeltaPage] {
                let _ = Record::decode(kind, &b);
            }
            let _ = delta_page_named(5, &b);
            let names = vec!["a".to_string(), "bc".to_string()];
            let table = Record::CreateTable(TableDef { id: 1, name: "t".into(), layout_descriptor: vec![1, 2], column_names: names });
            let ops = vec![LogOp { kind: OpKind::Insert, table: 1, vid: 2, data: vec![3; 5] }; 2];
            for rec in [table, Record::Commit { txn: 4, ops: Cow::Owned(ops) }] {
                let mut good = rec.encode();
                let i = at % good.len();
                good[i] ^= x;
                if let Some(kind) = RecordKind::from_u32(k) {
                    let _ = Record::decode(kind, &good);
                }
            }
        }
    }
}
