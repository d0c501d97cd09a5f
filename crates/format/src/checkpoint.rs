//! The checkpoint: the maps, the catalog and the chain heads as of one
//! write-ahead-log position (`log_lsn`). Opening a database reads the newest
//! valid checkpoint and replays the log from that position (`wal.rs`). A
//! checkpoint is written on a clean close, and by the transaction layer to
//! free the log ring or superseded pages; `docs/format/checkpoint.md` is the
//! spec.
//!
//! Physical pages 0 and 1 are the two **root slots**; they never move. A
//! checkpoint writes the slot its generation selects (`generation % 2`), so
//! a torn root write leaves the other slot, the previous checkpoint, intact;
//! opening takes the valid slot with the higher generation.
//!
//! ```text
//! offset size field
//!      0    4 magic          b"NDPR"
//!      4    4 version        u32 LE, 2
//!      8    8 blob_bytes     u64 LE: length of the checkpoint blob
//!     16    4 blob_crc       CRC-32 of the blob
//!     20    4 index_pages    u32 LE: pages listing the blob's pages
//!     24    8 generation     u64 LE: checkpoints written so far
//!     32    8 log_start      u64 LE: first physical page of the write-ahead log
//!     40    8 log_pages      u64 LE: pages of the log (a ring)
//!     48    8 log_lsn        u64 LE: log position the checkpoint reflects; recovery replays from here
//!     56    . index page ppns, u64 LE each, then zero
//!   P-4     4 crc32          CRC-32 of bytes 0..P-4
//! ```
//!
//! Each **index page** is `page_bytes / 8` u64 ppns of blob pages (unused
//! entries all ones); the blob is the concatenation of its pages, cut to
//! `blob_bytes`. The **blob** (all integers LE):
//!
//! ```text
//! magic b"NDPM", version u32 = 2 (the root's version)
//! next_lpn u64, next_txn u64, next_region u64
//! cursors: u32 count, then (object u64, next u64, end u64) each
//! l2p: u64 count, then ppn u64 each (u64::MAX = unmapped)
//! l2p_pages: u32 count, then ppn u64 each
//! tables: u32 count, then per table:
//!   id u32, name (u16 length, UTF-8), layout descriptor (u32 length, bytes; schema.rs),
//!   column names (u16 count, then u16 length + UTF-8 each),
//!   heads: u64 count, then (rid u64, create_ts u64, flags u8: bit 0 tombstone) each,
//!   vid_pages: u32 count + u64 each, heap_pages: u32 count + u64 each
//! snapshots: u32 count, then (id u64, xmax u64) each
//! ```

use crate::bytes::{Reader, Writer, put_table_def, take_table_def};
use crate::{FormatError, u32_at, u64_at};

const ROOT_MAGIC: [u8; 4] = *b"NDPR";
const BLOB_MAGIC: [u8; 4] = *b"NDPM";
pub const VERSION: u32 = 2;
const ROOT_HEADER: usize = 56;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub blob_bytes: u64,
    pub blob_crc: u32,
    pub generation: u64,
    pub log_start: u64,
    pub log_pages: u64,
    pub log_lsn: u64,
    pub index_pages: Vec<u64>,
}

impl Root {
    /// Index pages a root page can list.
    pub fn capacity(page_bytes: usize) -> usize {
        (page_bytes - ROOT_HEADER - 4) / 8
    }

    pub fn encode(&self, page_bytes: usize) -> Vec<u8> {
        assert!(self.index_pages.len() <= Root::capacity(page_bytes));
        let mut b = vec![0u8; page_bytes];
        b[0..4].copy_from_slice(&ROOT_MAGIC);
        b[4..8].copy_from_slice(&VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&self.blob_bytes.to_le_bytes());
        b[16..20].copy_from_slice(&self.blob_crc.to_le_bytes());
        b[20..24].copy_from_slice(&(self.index_pages.len() as u32).to_le_bytes());
        b[24..32].copy_from_slice(&self.generation.to_le_bytes());
        b[32..40].copy_from_slice(&self.log_start.to_le_bytes());
        b[40..48].copy_from_slice(&self.log_pages.to_le_bytes());
        b[48..56].copy_from_slice(&self.log_lsn.to_le_bytes());
        for (i, p) in self.index_pages.iter().enumerate() {
            b[ROOT_HEADER + 8 * i..ROOT_HEADER + 8 * i + 8].copy_from_slice(&p.to_le_bytes());
        }
        let crc = crc32fast::hash(&b[..page_bytes - 4]);
        b[page_bytes - 4..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a root page; `Ok(None)` for a page of zeros (never written).
    pub fn decode(b: &[u8]) -> Result<Option<Root>, FormatError> {
        const S: &str = "root page";
        if b.len() < ROOT_HEADER + 4 {
            return Err(FormatError::Truncated { structure: S, needed: ROOT_HEADER + 4, found: b.len() });
        }
        if b.iter().all(|&x| x == 0) {
            return Ok(None);
        }
        if b[0..4] != ROOT_MAGIC {
            return Err(FormatError::BadMagic { structure: S, found: b[0..4].to_vec() });
        }
        // The CRC before the version: every version keeps it in the last 4
        // bytes, so a damaged version field is damage (the other slot is
        // used), never taken for a newer format.
        let stored = u32_at(b, b.len() - 4);
        let computed = crc32fast::hash(&b[..b.len() - 4]);
        if stored != computed {
            return Err(FormatError::Checksum { structure: S, stored, computed });
        }
        let version = u32_at(b, 4);
        if version != VERSION {
            return Err(FormatError::UnsupportedVersion { structure: S, found: version, supported: VERSION });
        }
        let n = u32_at(b, 20) as usize;
        if n > Root::capacity(b.len()) {
            return Err(FormatError::InvalidField {
                structure: S,
                field: "index_pages",
                reason: format!("{n} index pages in a {}-byte root", b.len()),
            });
        }
        Ok(Some(Root {
            blob_bytes: u64_at(b, 8),
            blob_crc: u32_at(b, 16),
            generation: u64_at(b, 24),
            log_start: u64_at(b, 32),
            log_pages: u64_at(b, 40),
            log_lsn: u64_at(b, 48),
            index_pages: (0..n).map(|i| u64_at(b, ROOT_HEADER + 8 * i)).collect(),
        }))
    }
}

/// An index page listing `blob_pages` (at most `page_bytes / 8`); the
/// unused entries are all ones.
pub fn index_page(page_bytes: usize, blob_pages: &[u64]) -> Vec<u8> {
    assert!(blob_pages.len() <= page_bytes / 8, "an index page lists at most page_bytes / 8 pages");
    let mut b = vec![0xff; page_bytes];
    for (e, p) in b.chunks_exact_mut(8).zip(blob_pages) {
        e.copy_from_slice(&p.to_le_bytes());
    }
    b
}

/// Every entry of an index page, in order, unused ones (all ones) included:
/// the reader takes as many as the blob has pages.
pub fn index_entries(page: &[u8]) -> impl Iterator<Item = u64> + '_ {
    page.chunks_exact(8).map(|e| u64::from_le_bytes(e.try_into().expect("8 bytes")))
}

/// A checkpointed table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMeta {
    pub id: u32,
    pub name: String,
    pub layout_descriptor: Vec<u8>,
    pub column_names: Vec<String>,
    /// (rid, create_ts, tombstone) per VID.
    pub heads: Vec<(u64, u64, bool)>,
    pub vid_pages: Vec<u64>,
    pub heap_pages: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checkpoint {
    pub next_lpn: u64,
    pub next_txn: u64,
    pub next_region: u64,
    pub cursors: Vec<(u64, u64, u64)>,
    pub l2p: Vec<u64>,
    pub l2p_pages: Vec<u64>,
    pub tables: Vec<TableMeta>,
    pub snapshots: Vec<(u64, u64)>,
}

const S: &str = "checkpoint";

impl Checkpoint {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.bytes(&BLOB_MAGIC);
        w.u32(VERSION);
        w.u64(self.next_lpn);
        w.u64(self.next_txn);
        w.u64(self.next_region);
        w.u32(self.cursors.len() as u32);
        for &(o, n, e) in &self.cursors {
            w.u64(o);
            w.u64(n);
            w.u64(e);
        }
        w.u64(self.l2p.len() as u64);
        self.l2p.iter().for_each(|&x| w.u64(x));
        w.u64s(&self.l2p_pages);
        w.u32(self.tables.len() as u32);
        for t in &self.tables {
            put_table_def(&mut w, t.id, &t.name, &t.layout_descriptor, &t.column_names);
            w.u64(t.heads.len() as u64);
            for &(rid, ts, tomb) in &t.heads {
                w.u64(rid);
                w.u64(ts);
                w.u8(u8::from(tomb));
            }
            w.u64s(&t.vid_pages);
            w.u64s(&t.heap_pages);
        }
        w.u32(self.snapshots.len() as u32);
        for &(id, xmax) in &self.snapshots {
            w.u64(id);
            w.u64(xmax);
        }
        w.0
    }

    pub fn decode(b: &[u8]) -> Result<Checkpoint, FormatError> {
        let mut r = Reader::new(b, S);
        if r.take(4)? != BLOB_MAGIC {
            return Err(FormatError::BadMagic { structure: S, found: b[..4].to_vec() });
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(FormatError::UnsupportedVersion { structure: S, found: version, supported: VERSION });
        }
        let mut c =
            Checkpoint { next_lpn: r.u64()?, next_txn: r.u64()?, next_region: r.u64()?, ..Checkpoint::default() };
        let n = r.u32()?;
        for _ in 0..r.count(n.into(), 24)? {
            c.cursors.push((r.u64()?, r.u64()?, r.u64()?));
        }
        let n = r.u64()?;
        let n = r.count(n, 8)?;
        c.l2p = (0..n).map(|_| r.u64()).collect::<Result<_, _>>()?;
        c.l2p_pages = r.u64s()?;
        let tables = r.u32()?;
        for _ in 0..r.count(tables.into(), 16)? {
            let (id, name, layout_descriptor, column_names) = take_table_def(&mut r)?;
            let n = r.u64()?;
            let n = r.count(n, 17)?;
            let mut heads = Vec::with_capacity(n);
            for _ in 0..n {
                let (rid, ts, flags) = (r.u64()?, r.u64()?, r.u8()?);
                if flags > 1 {
                    return Err(FormatError::InvalidField {
                        structure: S,
                        field: "head flags",
                        reason: format!("{flags:#x}"),
                    });
                }
                heads.push((rid, ts, flags == 1));
            }
            c.tables.push(TableMeta {
                id,
                name,
                layout_descriptor,
                column_names,
                heads,
                vid_pages: r.u64s()?,
                heap_pages: r.u64s()?,
            });
        }
        let n = r.u32()?;
        for _ in 0..r.count(n.into(), 16)? {
            c.snapshots.push((r.u64()?, r.u64()?));
        }
        r.finish()?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Checkpoint {
        Checkpoint {
            next_lpn: 9,
            next_txn: 77,
            next_region: 3,
            cursors: vec![(1, 2, 3)],
            l2p: vec![5, u64::MAX, 7],
            l2p_pages: vec![12],
            tables: vec![TableMeta {
                id: 1,
                name: "order_line".into(),
                layout_descriptor: vec![1, 2, 3],
                column_names: vec!["a".into(), "b".into()],
                heads: vec![(1 << 16, 5, false), (u64::MAX, 0, false), (2 << 16, 9, true)],
                vid_pages: vec![3],
                heap_pages: vec![0, 1],
            }],
            snapshots: vec![(1, 50)],
        }
    }

    #[test]
    fn roundtrips() {
        let c = sample();
        assert_eq!(Checkpoint::decode(&c.encode()).unwrap(), c);
        let root = Root {
            blob_bytes: 100,
            blob_crc: 7,
            generation: 3,
            log_start: 64,
            log_pages: 128,
            log_lsn: 4096,
            index_pages: vec![4, 5],
        };
        assert_eq!(Root::decode(&root.encode(8192)).unwrap(), Some(root));
        assert_eq!(Root::decode(&[0u8; 8192]).unwrap(), None);
    }

    #[test]
    fn index_pages_list_blob_pages_then_all_ones() {
        let page = index_page(32, &[7, 1 << 40]);
        assert_eq!(&page[..8], &7u64.to_le_bytes());
        assert_eq!(index_entries(&page).collect::<Vec<_>>(), [7, 1 << 40, u64::MAX, u64::MAX]);
    }

    proptest! {
        #[test]
        fn decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..600), at in 0usize..1000, x in any::<u8>()) {
            let _ = Checkpoint::decode(&b);
            let _ = Root::decode(&b);
            let mut good = sample().encode();
            let i = at % good.len();
            good[i] ^= x;
            let _ = Checkpoint::decode(&good);
            let mut r = Root { blob_bytes: 1, blob_crc: 2, generation: 3, log_start: 1, log_pages: 2, log_lsn: 3, index_pages: vec![9] }.encode(512);
            r[at % 512] ^= x;
            let _ = Root::decode(&r);
            let _ = index_entries(&b).count();
        }
    }
}
