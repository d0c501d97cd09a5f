//! `ndp.update`: transactionally consistent update-NDP (ccSLT, EDBT'22).
//!
//! `UPDATE table SET column = expr WHERE predicate`, run by the device's PEs
//! in the writing transaction's snapshot. Each PE takes its share of the VIDs
//! and, per tuple (the chain walk is `chain.rs`'s, shared with `ndp.snapshot`):
//!
//! 1. finds the version the snapshot sees and checks the predicate on it;
//! 2. locks that version in the host's lock table, in coherent shared memory:
//!    key (VID, creating transaction of the version), the writer's id in the
//!    bucket's queue. A queued PE polls its bucket (local hits while nothing
//!    changes); after `poll_limit` polls it withdraws and the program fails,
//!    so a device transaction never waits forever on a host one (that is how
//!    a deadlock between them ends);
//! 3. writes the new version (old data with the column replaced; header:
//!    the writer's id, `prev` = the locked version) into the next free slot
//!    of one of its pages, and programs full pages to the medium;
//! 4. reports `(vid, base RecordId, new RecordId)` to the host.
//!
//! The device installs nothing and releases nothing: the host checks that
//! each base version is still the tuple's newest (first updater wins; under
//! read committed the host re-evaluates the rows whose base a later commit
//! replaced, on their newest version, as PostgreSQL does),
//! points the VID map at the new versions, maps the pages, and commits or
//! aborts; then it releases every lock the transaction holds, the device's
//! included. A failed or aborted device transaction therefore leaves pages
//! that nothing points to, and no locks.
//!
//! Ranges: 0 call block (op 3), 1 layout descriptor, 2 delta-buffer pages,
//! 3 output, 4 pages for new versions. Range 4 lists `(lpn, ppn)` pages and
//! `pes + 1` bounds: PE `p` fills pages `first[p]..first[p + 1]` in order
//! (the host sizes each run by counting the PE's qualifying tuples first).
//! Each PE writes, in an equal share of range 3, its entries
//! `(vid, base RecordId, new RecordId)` and how many of its pages it
//! programmed. Both layouts are `ndpdb_format::ndp`'s (`ndp/update.rs`).
//! Parameters: `[0]` the table's object id (for page headers and lock keys),
//! `[1]` poll limit, `[2]` (optional, default 0) 1 to read delta pages
//! through the mirror instead of range 2 (CBM, `chain.rs`).

use ndpdb_format::lock::tuple_key_word;
use ndpdb_format::ndp::{RANGE_OUTPUT, RANGE_PAGES, UpdateExpr, UpdateWriter, UpdatedTuple, read_page_run};
use ndpdb_format::page::{HeapPage, RecordId};
use ndpdb_format::record::{HEADER_BYTES, VersionHeader};
use ndpdb_locktable::{Attempt, CancelOutcome, LockKey, Poll};

use crate::chain::{Found, Scan};
use crate::error::DeviceError;

/// The lock-table key of version `version` (its creating transaction) of
/// tuple `vid` of table `table` (`ndpdb_format::lock`).
fn tuple_lock_key(table: u32, vid: u64, version: u64) -> LockKey {
    LockKey::new(tuple_key_word(table, vid), version)
}

impl Scan<'_, '_> {
    pub(crate) fn update(&mut self, first: u64, end: u64, column: u16, expr: UpdateExpr) -> Result<(), DeviceError> {
        let (pe, pes) = (u64::from(self.ctx.pe()), u64::from(self.ctx.pes()));
        let object = u32::try_from(self.ctx.param_u64(0)?).map_err(|_| self.fail("object id above u32".into()))?;
        let poll_limit = self.ctx.param_u64(1)?;
        let own = self.call.snapshot.own;
        if own == 0 {
            return Err(self.fail("an update needs the writing transaction's id in the call's `own`".into()));
        }
        let pages = self.pages(pe, pes)?;
        let share = self.ctx.range_len(RANGE_OUTPUT)? / pes / 8 * 8;
        let mut out = UpdateWriter::default();
        let mut next_page = 0usize;
        let mut page: Option<HeapPage> = None;
        let mut written = 0u64;
        self.each_qualifying(first, end, |scan, vid, rec| {
            scan.lock(object, vid, rec, own, poll_limit)?;
            let record = scan.new_version(vid, rec, own, column, expr)?;
            let slot = loop {
                if let Some(p) = page.as_mut()
                    && let Some(slot) = p.insert(&record)
                {
                    break slot;
                }
                if let Some(full) = page.take() {
                    scan.program_page(&pages, next_page - 1, &full)?;
                    written += 1;
                }
                let Some(&(lpn, _)) = pages.get(next_page) else {
                    return Err(scan.fail(format!(
                        "VID {vid}: the {} pages the call gave PE {pe} are full; give the call more pages",
                        pages.len()
                    )));
                };
                page = Some(HeapPage::new(scan.page as usize, object, lpn));
                next_page += 1;
            };
            let lpn = page.as_ref().expect("a page is open").lpn();
            out.push(&UpdatedTuple { vid, base: RecordId::new(rec.lpn, rec.slot), new: RecordId::new(lpn, slot) });
            scan.fits_share(out.bytes_used(), share)
        })?;
        if let Some(last) = page.take() {
            self.program_page(&pages, next_page - 1, &last)?;
            written += 1;
        }
        debug_assert!(written as usize == next_page && next_page <= pages.len(), "each opened page is programmed once");
        self.ctx.range_write(RANGE_OUTPUT, pe * share, &out.finish(written))
    }

    /// This PE's pages for new versions: `(lpn, ppn)`, its run
    /// `first[pe]..first[pe + 1]` of range 4's pages.
    fn pages(&mut self, pe: u64, pes: u64) -> Result<Vec<(u64, u64)>, DeviceError> {
        let len = self.ctx.range_len(RANGE_PAGES)?;
        let ctx = &mut *self.ctx;
        let mine = read_page_run(len, pe, pes, |at, buf| ctx.range_read(RANGE_PAGES, at, buf))?
            .map_err(|e| self.fail(format!("range 4: {e}")))?;
        for &(lpn, ppn) in &mine {
            if lpn > RecordId::LPN_MAX || ppn.checked_mul(self.page).is_none_or(|a| a >= self.ctx.capacity_bytes()) {
                return Err(self.fail(format!("range 4: page ({lpn}, {ppn}) is outside the device")));
            }
        }
        Ok(mine)
    }

    fn program_page(&mut self, pages: &[(u64, u64)], index: usize, page: &HeapPage) -> Result<(), DeviceError> {
        let (_, ppn) = pages[index];
        self.ctx.write_page(ppn, &page.sealed())
    }

    /// Locks the version `rec` of `vid` for transaction `own`, polling while
    /// others hold or wait for it.
    fn lock(&mut self, object: u32, vid: u64, rec: &Found, own: u64, poll_limit: u64) -> Result<(), DeviceError> {
        let key = tuple_lock_key(object, vid, rec.create_ts);
        let mut polls = 0u64;
        loop {
            let attempt = {
                let w = self.ctx.coherent()?;
                w.table().try_acquire_with(w, key, own).map_err(|e| self.fail(format!("VID {vid}: {e}")))?
            };
            self.ctx.settle_coherent();
            match attempt {
                Attempt::Acquired | Attempt::AlreadyHeld => return Ok(()),
                Attempt::Queued { .. } => loop {
                    let poll = {
                        let w = self.ctx.coherent()?;
                        w.table().poll_with(w, key, own).map_err(|e| self.fail(format!("VID {vid}: {e}")))?
                    };
                    self.ctx.settle_coherent();
                    match poll {
                        Poll::Head => return Ok(()),
                        Poll::Absent => {
                            return Err(self.fail(format!("VID {vid}: the lock request was withdrawn by the host")));
                        }
                        Poll::Waiting { .. } => {}
                    }
                    polls += 1;
                    if polls > poll_limit {
                        let outcome = {
                            let w = self.ctx.coherent()?;
                            w.table().cancel_with(w, key, own).map_err(|e| self.fail(format!("VID {vid}: {e}")))?
                        };
                        self.ctx.settle_coherent();
                        if outcome == CancelOutcome::Granted {
                            return Ok(());
                        }
                        let holder = self.ctx.coherent()?.table().holder(key);
                        return Err(self.fail(format!(
                            "VID {vid}: lock wait timed out after {poll_limit} polls (held by transaction {})",
                            holder.map_or("none".to_string(), |h| h.to_string())
                        )));
                    }
                    backoff(polls);
                },
                Attempt::Full => {
                    polls += 1;
                    if polls > poll_limit {
                        return Err(self.fail(format!("VID {vid}: the lock bucket stayed full for {poll_limit} polls")));
                    }
                    backoff(polls);
                }
            }
        }
    }

    /// The new version's record: `rec`'s data with `column` set by `expr`.
    fn new_version(
        &mut self,
        vid: u64,
        rec: &Found,
        own: u64,
        column: u16,
        expr: UpdateExpr,
    ) -> Result<Vec<u8>, DeviceError> {
        let mut data = vec![0u8; rec.len - HEADER_BYTES];
        self.field(rec, 0, &mut data)?;
        let (col, ty) = (usize::from(column), self.layout.slots[usize::from(column)].ty);
        let old = self.layout.int_column(&data, col).map_err(|e| self.fail(format!("VID {vid}: {e}")))?;
        let new = expr.new_value(old, ty).map_err(|e| self.fail(format!("VID {vid}: column {column}: {e}")))?;
        if let Some(v) = new {
            self.layout.set_int(&mut data, col, v).map_err(|e| self.fail(format!("VID {vid}: {e}")))?;
        }
        let header = VersionHeader {
            create_ts: own,
            prev: RecordId::new(rec.lpn, rec.slot),
            tombstone: false,
            data_len: data.len() as u16,
        };
        Ok(header.record(&data))
    }
}

/// Between polls of a bucket: spin a little, then give the host CPU away,
/// then sleep briefly (a host transaction may hold the lock for long; the
/// model charges each poll as a local hit however long the emulation waits).
fn backoff(polls: u64) {
    if polls < 64 {
        std::hint::spin_loop();
    } else if polls < 1024 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
}
