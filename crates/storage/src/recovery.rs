//! Opening a database: which checkpoint to start from, what of the log to
//! replay, and what damage costs.
//!
//! ```text
//!  root slots ──newest readable first──► checkpoint (index pages, blob, CRC, decode)
//!      │ unusable: note it, try the other slot ──► older checkpoint: verify its pages
//!      ▼
//!  replay the log forward from the checkpoint's log_lsn ──► stops at LSN E
//!      ▼
//!  search the whole ring for valid records at LSN ≥ E
//!      none: E is the end (a torn tail there is cut off: never acknowledged)
//!      some, or unreadable log pages: committed records replay cannot reach
//!            ──► refuse (StoreError::LogDamaged), or with accept_loss
//!                open without them, list them, and erase them from the ring
//! ```
//!
//! **Why a record past the stop is a lost commit.** Records are appended in
//! LSN order and written in that order; a commit is acknowledged once its
//! record and everything before it are flushed. A crash can therefore
//! leave a torn record only at the very end: nothing valid follows it.
//! Records of earlier laps of the ring have smaller LSNs. So a whole, valid
//! record with an LSN at or past the stop was written, and flushed, after
//! the record replay could not read: its transaction (and perhaps the
//! unreadable one's) was acknowledged, and opening without it would lose
//! it silently; the next checkpoint would make that final. The search reads
//! the whole ring (up to 256 MiB) on every open, in page reads
//! `READ_AHEAD` at a time (40 ms for the largest ring, 256 MiB, from the
//! host's page cache).
//!
//! **Why an older checkpoint is verified.** Pages that only an older
//! checkpoint references are reused once a newer one is durable
//! (`reuse.rs`): recovery from the older root slot after the newer one is
//! lost (damaged root, damaged blob) could read pages that now hold
//! something else. So after such a fallback the integrity check runs over
//! the restored maps before anything is replayed; any problem makes the
//! older checkpoint unusable (with `accept_loss`: a listed problem). After
//! a torn root write (a crash while checkpointing) nothing was reused yet
//! and the check passes.

use ndpdb_device::{Command, Device};
use ndpdb_format::checkpoint::{Checkpoint, Root, index_entries};
use ndpdb_format::wal::Record;

use crate::alloc::ROOT_PPN;
use crate::checkpoint::{TxnMeta, validate};
use crate::error::{OrDamage, Result, StoreError, page_unreadable};
use crate::store::{Store, StoreOptions};
use crate::wal::{self, LogGeometry, LogRecord, LogScan, LogStop, UnreadablePage, Wal};

/// What opening a database found and did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recovery {
    /// Log records replayed after the checkpoint (commits, tables, snapshots).
    pub records: u64,
    pub commits: u64,
    /// Log bytes replayed.
    pub log_bytes: u64,
    /// A torn or damaged record at the end of the log, with nothing valid
    /// after it, that was cut off; and why.
    pub truncated: Option<String>,
    /// A root slot that could not be read (the other one was used).
    pub root_note: Option<String>,
    /// The checkpoint recovery started from: its generation and root slot.
    pub generation: u64,
    pub slot: u64,
    /// Damage recovery found and went around: a newer checkpoint it could
    /// not use, and, with `accept_loss`, the older one's problems.
    pub damage: Vec<String>,
    /// With `accept_loss`: the log records that could not be replayed.
    pub lost: Option<LogLoss>,
    /// Bytes of the log ring read looking for records past the end.
    pub ring_bytes_read: u64,
    pub wall_s: f64,
}

/// Committed log records that replay cannot reach: damage in the log with
/// valid records after it, or log pages that cannot be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogLoss {
    /// The checkpoint replay starts from, in words ("checkpoint 5 (root
    /// slot 1)"), with what was wrong with a newer one.
    pub checkpoint: String,
    /// Where replay stops.
    pub stop_lsn: u64,
    /// Why: the record there is damaged, or its page cannot be read.
    pub stop: String,
    /// LSN ranges from `stop_lsn` on that hold no readable record, each
    /// followed by a valid one: what they held is lost.
    pub damaged: Vec<(u64, u64)>,
    /// Log pages that cannot be read; they may hold committed records.
    pub unreadable_pages: Vec<UnreadablePage>,
    /// The valid records after the damage, which replay does not apply.
    pub dropped: Vec<DroppedRecord>,
}

/// A valid log record that replay stops short of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedRecord {
    pub lsn: u64,
    /// The LSN just past it.
    pub end: u64,
    /// The committing transaction, for a commit record.
    pub txn: Option<u64>,
    /// What it is, in words ("commit of transaction 17, 1000 operations").
    pub what: String,
}

impl LogLoss {
    /// The dropped commits: (transaction id, LSN of its record).
    pub fn commits(&self) -> Vec<(u64, u64)> {
        self.dropped.iter().filter_map(|d| d.txn.map(|t| (t, d.lsn))).collect()
    }

    /// The LSN past everything the loss covers (the last dropped record).
    fn end(&self) -> u64 {
        self.dropped.last().map_or(self.stop_lsn, |d| d.end)
    }
}

/// Dropped records a message lists before it says how many more there are.
const LISTED_MAX: usize = 20;

impl std::fmt::Display for LogLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "replay from {} stops at LSN {} ({})", self.checkpoint, self.stop_lsn, self.stop)?;
        if !self.dropped.is_empty() {
            let n = self.dropped.len();
            let listed: Vec<String> =
                self.dropped.iter().take(LISTED_MAX).map(|d| format!("{} at LSN {}", d.what, d.lsn)).collect();
            let more = if n > LISTED_MAX { format!(" and {} more", n - LISTED_MAX) } else { String::new() };
            write!(
                f,
                ", but {n} valid record{} follow{}, {} of them commits: {}{more}",
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" },
                self.commits().len(),
                listed.join(", ")
            )?;
            let ranges: Vec<String> = self.damaged.iter().map(|(a, b)| format!("{a}..{b}")).collect();
            write!(f, ". The log at LSN {} cannot be read: what it held is lost, commits included", ranges.join(", "))?;
        }
        if !self.unreadable_pages.is_empty() {
            let pages: Vec<String> = self.unreadable_pages.iter().map(|p| format!("{} ({})", p.ppn, p.why)).collect();
            write!(f, ". Log pages that cannot be read, and may hold committed records: {}", pages.join(", "))?;
        }
        Ok(())
    }
}

/// The readable root slots, newest first (slot, root), a note for each
/// one that does not decode (a torn root write after a crash looks the
/// same), and the slots the device cannot read: damage, since sector
/// writes are atomic and no crash leaves a media error.
struct Roots {
    slots: Vec<(u64, Root)>,
    notes: Vec<String>,
    unreadable: Vec<String>,
}

/// A checkpoint's blob and every page it and its index take.
struct Blob {
    bytes: Vec<u8>,
    pages: Vec<u64>,
}

/// The checkpoint recovery starts from.
struct Start {
    slot: u64,
    root: Root,
    cp: Checkpoint,
    /// Its index and blob pages.
    pages: Vec<u64>,
}

impl Store {
    /// Opens the store of an existing image from its newest usable
    /// checkpoint and replays the write-ahead log after it.
    pub fn open(dev: Device, opts: StoreOptions) -> Result<(Store, TxnMeta)> {
        Store::open_with_report(dev, opts).map(|(s, m, _)| (s, m))
    }

    /// [`Store::open`], saying what recovery did (see the module docs).
    pub fn open_with_report(dev: Device, opts: StoreOptions) -> Result<(Store, TxnMeta, Recovery)> {
        let t0 = std::time::Instant::now();
        let store = Store::new(dev, opts)?;
        let Roots { slots, notes, unreadable } = store.read_roots()?;
        let (start, mut damage) = store.choose_checkpoint(slots)?;
        damage.splice(0..0, unreadable);
        let Start { slot, root, cp, pages } = start;
        let mut rec = Recovery {
            generation: root.generation,
            slot,
            root_note: (!notes.is_empty()).then(|| notes.join("; ")),
            damage,
            ..Recovery::default()
        };
        let (mut store, mut meta) = store.restore(cp, root.generation)?;
        store.rebuild_free_pages(root.log_start + root.log_pages, &pages)?;
        store.checkpoints.pages.lock().durable = pages;
        store.maps.lock().last_checkpoint.blob_bytes = root.blob_bytes;
        if rec.root_note.is_some() || !rec.damage.is_empty() {
            store.verify_older_checkpoint(&root, slot, &mut rec)?;
        }
        let geo = LogGeometry { start: root.log_start, pages: root.log_pages, page_bytes: store.page_bytes as u64 };
        let scan = wal::scan(geo, root.log_lsn, store.qp.unordered())?;
        let loss = store.log_loss(geo, root.log_lsn, &scan, &mut rec)?;
        if let Some(loss) = &loss
            && !store.opts.accept_loss
        {
            return Err(StoreError::LogDamaged(Box::new(loss.clone())));
        }
        rec.records = scan.records.len() as u64;
        rec.log_bytes = scan.end - root.log_lsn;
        for r in &scan.records {
            store.replay(r, &mut meta, &mut rec).map_err(|e| match e {
                StoreError::Corrupt(m) => StoreError::Corrupt(format!("log record at LSN {}: {m}", r.lsn)),
                other => other,
            })?;
        }
        if let Some(loss) = loss {
            if !store.opts.read_only {
                store.erase_lost(geo, &scan, &loss)?;
            }
            rec.lost = Some(loss);
        } else {
            rec.truncated = scan.stop_reason();
        }
        store.wal = Wal::new(geo, scan.end, root.log_lsn, scan.tail_page);
        rec.wall_s = t0.elapsed().as_secs_f64();
        Ok((store, meta, rec))
    }

    /// Every readable root slot, newest first, and a note for each one
    /// that cannot be read.
    fn read_roots(&self) -> Result<Roots> {
        let mut slots = Vec::new();
        let mut notes = Vec::new();
        let mut unreadable = Vec::new();
        for ppn in [ROOT_PPN, ROOT_PPN + 1] {
            let bytes = match self.qp.lock().call(Command::PageRead { ppn, host_addr: None }) {
                Ok(reply) => reply.into_data(),
                Err(e) if page_unreadable(&e) => {
                    unreadable.push(format!("root slot {ppn} cannot be read ({e})"));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            match Root::decode(&bytes) {
                Ok(Some(r)) => slots.push((ppn, r)),
                Ok(None) => {}
                Err(ndpdb_format::FormatError::UnsupportedVersion { found, supported, .. }) => {
                    return Err(StoreError::InvalidInput(format!(
                        "root slot {ppn}: the database was written in format version {found}; this build reads \
                         version {supported}: open it with a matching ndpdb build"
                    )));
                }
                Err(e) => notes.push(format!("root slot {ppn} is unreadable ({e})")),
            }
        }
        if slots.is_empty() {
            notes.extend(unreadable);
            return Err(if notes.is_empty() {
                StoreError::InvalidInput(
                    "the image holds no database (no checkpoint in pages 0 and 1): create one with `ndpdb db create`"
                        .into(),
                )
            } else {
                StoreError::Corrupt(format!("both root slots are unreadable: {}", notes.join("; ")))
            });
        }
        slots.sort_by_key(|(_, r)| std::cmp::Reverse(r.generation));
        if slots.len() < 2 {
            notes.iter_mut().chain(&mut unreadable).for_each(|n| n.push_str("; the other slot was used"));
        }
        Ok(Roots { slots, notes, unreadable })
    }

    /// The newest checkpoint whose pages read back whole and decode, and a
    /// line for each newer one that does not.
    fn choose_checkpoint(&self, roots: Vec<(u64, Root)>) -> Result<(Start, Vec<String>)> {
        let mut unusable = Vec::new();
        for (slot, root) in roots {
            let why = match self.read_checkpoint(&root)? {
                Ok((cp, pages)) => match validate(&cp, self.total_pages()) {
                    Ok(()) => {
                        let damage = unusable
                            .into_iter()
                            .map(|u| {
                                format!("{u}; the older checkpoint {} (root slot {slot}) was used", root.generation)
                            })
                            .collect();
                        return Ok((Start { slot, root, cp, pages }, damage));
                    }
                    Err(e) => format!("its blob is inconsistent: {e}"),
                },
                Err(why) => why,
            };
            unusable.push(format!("checkpoint {} (root slot {slot}) cannot be used: {why}", root.generation));
        }
        Err(StoreError::Corrupt(format!(
            "no checkpoint can be used: {}. The image is left as it is; restore it from a copy (ndpdb dump cannot \
             salvage rows without a checkpoint)",
            unusable.join("; ")
        )))
    }

    fn total_pages(&self) -> u64 {
        self.maps.lock().alloc.total_pages
    }

    /// The checkpoint `root` names, and every page it and its index take;
    /// or what cannot be read.
    fn read_checkpoint(&self, root: &Root) -> Result<OrDamage<(Checkpoint, Vec<u64>)>> {
        let total = self.total_pages();
        if root.log_pages == 0 || root.log_start.checked_add(root.log_pages).is_none_or(|e| e > total) {
            return Ok(Err(format!(
                "its log pages {}..+{} lie outside the device's {total}",
                root.log_start, root.log_pages
            )));
        }
        let Blob { bytes, pages } = match self.read_blob(root)? {
            Ok(b) => b,
            Err(why) => return Ok(Err(why)),
        };
        Ok(match Checkpoint::decode(&bytes) {
            Ok(cp) => Ok((cp, pages)),
            Err(e) => Err(format!("its blob does not decode: {e}")),
        })
    }

    /// The blob the root's index pages list, checked against the root's
    /// length and CRC, and every page it and its index take.
    fn read_blob(&self, root: &Root) -> Result<OrDamage<Blob>> {
        let page = self.page_bytes;
        let total = self.total_pages();
        let needed = (root.blob_bytes as usize).div_ceil(page);
        let mut blob = Vec::with_capacity(needed * page);
        let mut blob_pages = Vec::with_capacity(needed);
        for &ip in &root.index_pages {
            let index = match self.read_meta_page(ip, total)? {
                Ok(p) => p,
                Err(why) => return Ok(Err(format!("its index page {ip} {why}"))),
            };
            for ppn in index_entries(&index) {
                if blob_pages.len() == needed {
                    break;
                }
                match self.read_meta_page(ppn, total)? {
                    Ok(data) => blob.extend_from_slice(&data),
                    Err(why) => {
                        let at = blob_pages.len() * page;
                        return Ok(Err(format!("its blob page {ppn} (blob bytes {at}..{}) {why}", at + page)));
                    }
                }
                blob_pages.push(ppn);
            }
        }
        if blob.len() < root.blob_bytes as usize {
            return Ok(Err(format!(
                "the root lists {} blob bytes but its index pages name {} pages of {page}",
                root.blob_bytes,
                blob_pages.len()
            )));
        }
        blob.truncate(root.blob_bytes as usize);
        let crc = crc32fast::hash(&blob);
        if crc != root.blob_crc {
            return Ok(Err(format!(
                "its blob ({} bytes on pages {}) fails its CRC ({crc:#010x}, the root says {:#010x}): one of \
                 these pages is damaged",
                root.blob_bytes,
                page_list(&blob_pages),
                root.blob_crc
            )));
        }
        let pages = root.index_pages.iter().copied().chain(blob_pages).collect();
        Ok(Ok(Blob { bytes: blob, pages }))
    }

    /// One page of a checkpoint, or why it cannot be read.
    fn read_meta_page(&self, ppn: u64, total: u64) -> Result<OrDamage<Vec<u8>>> {
        if ppn >= total {
            return Ok(Err(format!("lies beyond the device's {total} pages")));
        }
        match self.qp.lock().call(Command::PageRead { ppn, host_addr: None }) {
            Ok(reply) => Ok(Ok(reply.into_data())),
            Err(e) if page_unreadable(&e) => Ok(Err(format!("cannot be read ({e})"))),
            Err(e) => Err(e.into()),
        }
    }

    /// After a fallback to the older root slot: the integrity check over
    /// the maps just restored, before anything is replayed (see the module
    /// docs). A problem fails the open, or with `accept_loss` is listed in
    /// `rec.damage`.
    fn verify_older_checkpoint(&self, root: &Root, slot: u64, rec: &mut Recovery) -> Result<()> {
        let report = self.check()?;
        if report.error_count() == 0 {
            return Ok(());
        }
        let first: Vec<&str> = report.errors.iter().take(3).map(String::as_str).collect();
        let problem = format!(
            "checkpoint {} (root slot {slot}) references pages that no longer hold what it recorded (reused after the \
             newer checkpoint, or damaged): {} ({} problems in all)",
            root.generation,
            first.join("; "),
            report.error_count()
        );
        if !self.opts.accept_loss {
            let newer: Vec<&str> =
                rec.root_note.iter().map(String::as_str).chain(rec.damage.iter().map(String::as_str)).collect();
            return Err(StoreError::Corrupt(format!(
                "{}; {problem}. The image is left as it is: restore it from a copy, or open it as it is with \
                 --accept-loss (StoreOptions::accept_loss)",
                newer.join("; ")
            )));
        }
        rec.damage.push(problem);
        Ok(())
    }

    /// What the log holds past where replay stops (`scan`), if anything:
    /// the whole ring is searched (see the module docs).
    fn log_loss(
        &self,
        geo: LogGeometry,
        checkpoint_lsn: u64,
        scan: &LogScan,
        rec: &mut Recovery,
    ) -> Result<Option<LogLoss>> {
        let mut dropped = Vec::new();
        let search = wal::search_ring(geo, (scan.end, checkpoint_lsn + geo.capacity()), self.qp.unordered(), |r| {
            dropped.push(dropped_record(&r));
        })?;
        rec.ring_bytes_read = search.bytes_read;
        let unreadable_stop = matches!(scan.stop, LogStop::Unreadable(_));
        if dropped.is_empty() && search.unreadable.is_empty() && !unreadable_stop {
            return Ok(None);
        }
        let mut damaged = Vec::new();
        let mut at = scan.end;
        for d in &dropped {
            if d.lsn > at {
                damaged.push((at, d.lsn));
            }
            at = at.max(d.end);
        }
        let mut checkpoint = format!("checkpoint {} (root slot {})", rec.generation, rec.slot);
        for note in rec.root_note.iter().chain(&rec.damage) {
            checkpoint.push_str(&format!("; {note}"));
        }
        Ok(Some(LogLoss {
            checkpoint,
            stop_lsn: scan.end,
            stop: scan.stop_reason().unwrap_or_else(|| "no valid record there".into()),
            damaged,
            unreadable_pages: search.unreadable,
            dropped,
        }))
    }

    /// Zeros the dropped records and the unreadable log pages (an open with
    /// `accept_loss`), so that none of them is read back later as part of
    /// the log that continues at the stop.
    fn erase_lost(&self, geo: LogGeometry, scan: &LogScan, loss: &LogLoss) -> Result<()> {
        let q = self.qp.unordered();
        wal::erase(geo, (scan.end, loss.end()), &scan.tail_page, q)?;
        let tail_ppn = geo.start + (scan.end / geo.page_bytes) % geo.pages;
        for p in loss.unreadable_pages.iter().filter(|p| p.ppn != tail_ppn) {
            let data = vec![0; self.page_bytes];
            q.lock().call(Command::PageWrite { ppn: p.ppn, data })?;
        }
        q.lock().call(Command::Flush)?;
        Ok(())
    }
}

/// What a valid record past the stop is, in words.
fn dropped_record(r: &LogRecord) -> DroppedRecord {
    let (txn, what) = match Record::decode(r.kind, &r.payload) {
        Ok(Record::Commit { txn, ops }) => {
            (Some(txn), format!("commit of transaction {txn} ({} operations)", ops.len()))
        }
        Ok(Record::CreateTable(def)) => (None, format!("creation of table {}", def.name)),
        Ok(Record::PinSnapshot { id, .. }) => (None, format!("pinning of snapshot {id}")),
        Ok(Record::DropSnapshot { id, .. }) => (None, format!("drop of snapshot {id}")),
        Ok(Record::DeltaPage { table, lpn, .. }) => (None, format!("start of delta page {lpn} of table {table}")),
        Err(e) => (None, format!("a record whose payload does not decode ({e})")),
    };
    DroppedRecord { lsn: r.lsn, end: r.end(), txn, what }
}

/// Page numbers, runs shortened: `3701-3708, 3710`.
pub(crate) fn page_list(pages: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < pages.len() {
        let mut j = i;
        while j + 1 < pages.len() && pages[j + 1] == pages[j] + 1 {
            j += 1;
        }
        out.push(if j > i { format!("{}-{}", pages[i], pages[j]) } else { pages[i].to_string() });
        i = j + 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_lists_shorten_runs() {
        assert_eq!(page_list(&[]), "");
        assert_eq!(page_list(&[5]), "5");
        assert_eq!(page_list(&[3701, 3702, 3703, 3710, 3712, 3713]), "3701-3703, 3710, 3712-3713");
    }

    #[test]
    fn a_loss_names_the_stop_the_commits_and_the_damaged_range() {
        let loss = LogLoss {
            checkpoint: "checkpoint 4 (root slot 0)".into(),
            stop_lsn: 800,
            stop: "log record at LSN 800: checksum mismatch (torn or damaged)".into(),
            damaged: vec![(800, 1600)],
            unreadable_pages: vec![],
            dropped: vec![
                DroppedRecord {
                    lsn: 1600,
                    end: 2400,
                    txn: Some(17),
                    what: "commit of transaction 17 (9 operations)".into(),
                },
                DroppedRecord { lsn: 2400, end: 2440, txn: None, what: "pinning of snapshot 1".into() },
            ],
        };
        assert_eq!(loss.commits(), vec![(17, 1600)]);
        assert_eq!(loss.end(), 2440);
        let text = loss.to_string();
        assert_eq!(
            text,
            "replay from checkpoint 4 (root slot 0) stops at LSN 800 (log record at LSN 800: checksum mismatch (torn \
             or damaged)), but 2 valid records follow, 1 of them commits: commit of transaction 17 (9 operations) at \
             LSN 1600, pinning of snapshot 1 at LSN 2400. The log at LSN 800..1600 cannot be read: what it held is \
             lost, commits included"
        );
    }
}
