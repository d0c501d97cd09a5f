//! Salvage: every readable row of a table, for `ndpdb dump`, on a database
//! that may be damaged.
//!
//! A scan stops at the first page it cannot read; salvage goes on. Each
//! tuple's row is its newest version (with a pinned snapshot's `xmax`: the
//! newest version a transaction below `xmax` created), read by VID from the
//! delta buffer or from its heap page. A version that cannot be read (its
//! page unreadable, failing its checksum, or holding another page; its
//! record or tuple not decoding; a chain that does not end) makes its tuple
//! *unreadable*: counted and listed with the page, never replaced by an
//! older version, which would be a wrong answer presented as a right one.
//! A deletion is no row. Pages are read once each as long as the tuples on
//! one page come in a run (a cache of [`CACHE_PAGES`]), as they do after a
//! load and after update rounds in VID order.

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;

use ndpdb_device::Command;
use ndpdb_format::page::{self, PageKind, RecordId};
use ndpdb_format::record::{HEADER_BYTES, VersionHeader};
use ndpdb_format::schema::Value;

use crate::check::ERRORS_MAX;
use crate::error::{OrDamage, Result, page_unreadable};
use crate::store::Store;
use crate::table::{CHAIN_MAX, Table};

/// Heap pages salvage keeps while it reads.
const CACHE_PAGES: usize = 1024;

/// A tuple whose row could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub vid: u64,
    /// The logical page of the version that could not be read, and the
    /// physical page behind it (None: not mapped, or in the delta buffer).
    pub lpn: u64,
    pub ppn: Option<u64>,
    pub why: String,
}

/// What salvage read and what it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SalvageReport {
    /// Rows handed out.
    pub rows: u64,
    /// Tuples with no row: deleted, or not yet inserted at the snapshot.
    pub no_row: u64,
    /// Tuples that could not be read, up to [`ERRORS_MAX`] listed.
    pub unreadable: Vec<Unreadable>,
    pub unreadable_count: u64,
    /// Every logical page behind an unreadable tuple.
    pub pages: BTreeSet<u64>,
}

/// A heap page as salvage found it: its bytes, or why it cannot be used.
type PageRead = OrDamage<Vec<u8>>;

/// A tuple's row: its values, or None when it has none at the snapshot
/// (deleted, or inserted later).
type Row = Option<Vec<Value>>;

impl Store {
    /// Hands every readable row of `table` to `emit` with its VID, in VID
    /// order (see the module docs), until `emit` breaks; `xmax` reads as a
    /// pinned snapshot does. No transaction may be open (salvage reads
    /// committed heads).
    pub fn salvage(
        &self,
        table: &Table,
        xmax: Option<u64>,
        mut emit: impl FnMut(u64, Vec<Value>) -> ControlFlow<()>,
    ) -> Result<SalvageReport> {
        let mut report = SalvageReport::default();
        let mut cache: HashMap<u64, PageRead> = HashMap::new();
        for vid in 0..table.vids() {
            let head = table.head(vid).expect("below vids()");
            match self.salvage_tuple(table, head.rid, xmax, &mut cache)? {
                Ok(Some(values)) => {
                    report.rows += 1;
                    if emit(vid, values).is_break() {
                        break;
                    }
                }
                Ok(None) => report.no_row += 1,
                Err((lpn, why)) => {
                    report.unreadable_count += 1;
                    report.pages.insert(lpn);
                    if report.unreadable.len() < ERRORS_MAX {
                        report.unreadable.push(Unreadable { vid, lpn, ppn: self.physical_page(lpn), why });
                    }
                }
            }
        }
        Ok(report)
    }

    /// One tuple's row from its chain at `rid`, or the logical page of the
    /// version that cannot be read and why.
    fn salvage_tuple(
        &self,
        table: &Table,
        mut rid: RecordId,
        xmax: Option<u64>,
        cache: &mut HashMap<u64, PageRead>,
    ) -> Result<std::result::Result<Row, (u64, String)>> {
        for _ in 0..CHAIN_MAX {
            if rid.is_none() {
                return Ok(Ok(None));
            }
            let (h, data) = match self.salvage_version(table, rid, cache)? {
                Ok(v) => v,
                Err(why) => return Ok(Err((rid.lpn(), why))),
            };
            if xmax.is_some_and(|x| h.create_ts >= x) {
                rid = h.prev;
                continue;
            }
            if h.tombstone {
                return Ok(Ok(None));
            }
            return Ok(match table.layout.decode(&data) {
                Ok(values) => Ok(Some(values)),
                Err(e) => Err((rid.lpn(), format!("the tuple at slot {} does not decode: {e}", rid.slot()))),
            });
        }
        Ok(Err((rid.lpn(), "the version chain does not end (a cycle?)".into())))
    }

    /// One version's header and tuple bytes, or why they cannot be read.
    fn salvage_version(
        &self,
        table: &Table,
        rid: RecordId,
        cache: &mut HashMap<u64, PageRead>,
    ) -> Result<OrDamage<(VersionHeader, Vec<u8>)>> {
        let lpn = rid.lpn();
        let slot = rid.slot();
        let buffered = {
            let s = table.state.lock();
            s.delta.iter().find(|p| p.lpn() == lpn).map(|p| p.record(slot).map(<[u8]>::to_vec))
        };
        let record = match buffered {
            Some(Some(record)) => record,
            Some(None) => return Ok(Err(format!("no slot {slot} on the delta-buffer page"))),
            None => {
                if !cache.contains_key(&lpn) {
                    if cache.len() >= CACHE_PAGES {
                        cache.clear();
                    }
                    let read = self.salvage_page(table, lpn)?;
                    cache.insert(lpn, read);
                }
                let page = match &cache[&lpn] {
                    Ok(p) => p,
                    Err(why) => return Ok(Err(why.clone())),
                };
                match page::PageHeader::decode(page).and_then(|h| page::heap_record(page, &h, slot).map(<[u8]>::to_vec))
                {
                    Ok(r) => r,
                    Err(e) => return Ok(Err(format!("slot {slot}: {e}"))),
                }
            }
        };
        Ok(match VersionHeader::decode(&record, record.len()) {
            Ok(h) => Ok((h, record[HEADER_BYTES..HEADER_BYTES + usize::from(h.data_len)].to_vec())),
            Err(e) => Err(format!("the record at slot {slot}: {e}")),
        })
    }

    /// A written heap page of `table`, checked to be what the maps say it
    /// is; or why it is not. Fails only if the device stopped.
    fn salvage_page(&self, table: &Table, lpn: u64) -> Result<PageRead> {
        let Some(ppn) = self.physical_page(lpn) else {
            return Ok(Err(format!("logical page {lpn} is not mapped")));
        };
        let bytes = match self.qp.lock().call(Command::PageRead { ppn, host_addr: None }) {
            Ok(reply) => reply.into_data(),
            Err(e) if page_unreadable(&e) => return Ok(Err(format!("physical page {ppn} cannot be read ({e})"))),
            Err(e) => return Err(e.into()),
        };
        Ok(match page::verify(&bytes) {
            Err(e) => Err(format!("physical page {ppn}: {e}")),
            Ok(h) if h.kind != PageKind::Heap || h.object_id != table.id || h.lpn != lpn => Err(format!(
                "physical page {ppn} holds {:?} page {} of object {}, not heap page {lpn} of table {}",
                h.kind, h.lpn, h.object_id, table.name
            )),
            Ok(_) => Ok(bytes),
        })
    }
}
