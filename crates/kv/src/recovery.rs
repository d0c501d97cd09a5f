//! Recovery: redo the log from the checkpoint into the pool.
//!
//! Each record names the pages an operation changed and their new bytes
//! (`format::kv_log`); `kv_log::redo_page` applies one page's part when the
//! page's LSN is older than the record's end (a full image always). This
//! module only finds the pages: it creates pages past the end of the file
//! (allocated by an operation, never written back), and replaces a page the
//! crash left torn on the medium by a blank one when the record has its
//! full image (the pool refuses to cache a torn page; the log's first
//! record for any page changed after the checkpoint is a full image, so a
//! torn page is always one of those).

use ndpdb_bufmgr::{BufferPool, PageIo, PoolError};
use ndpdb_format::btree::blank_page;
use ndpdb_format::kv_log::{KIND_PAGE_REDO, PageChange, Redo, redo_page};

use crate::error::KvError;
use crate::log::KvLog;
use crate::tracked::Untracked;

/// What recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryStats {
    /// The checkpoint it started from and the end of the last record.
    pub from_lsn: u64,
    pub to_lsn: u64,
    pub records: u64,
    /// Records of other kinds (a shared ring), skipped.
    pub other_records: u64,
    pub pages_applied: u64,
    /// Page changes the page already held.
    pub pages_skipped: u64,
    /// Pages added to the file because a record names them.
    pub pages_created: u64,
    /// Torn pages replaced from a full image.
    pub torn_pages_replaced: u64,
    /// What opening passed over: a root slot it could not use, a log page
    /// it could not read (stores on a device).
    pub notes: Vec<String>,
}

/// Redoes `log` from its checkpoint into `pool` (whose file is `io`).
pub fn recover(pool: &BufferPool, io: &dyn PageIo, log: &dyn KvLog) -> Result<RecoveryStats, KvError> {
    let from = log.checkpoint_lsn();
    let mut stats = RecoveryStats { from_lsn: from, to_lsn: from, ..RecoveryStats::default() };
    log.scan(from, &mut |rec| {
        stats.to_lsn = rec.end;
        if rec.kind != KIND_PAGE_REDO {
            stats.other_records += 1;
            return Ok(());
        }
        let redo = Redo::decode(rec.payload)
            .map_err(|e| KvError::Recovery(format!("the log record at LSN {} is corrupt: {e}", rec.lsn)))?;
        stats.records += 1;
        for change in &redo.pages {
            redo_change(pool, io, change, rec.end, &mut stats)?;
        }
        Ok(())
    })?;
    Ok(stats)
}

fn redo_change(
    pool: &BufferPool,
    io: &dyn PageIo,
    change: &PageChange<'_>,
    end: u64,
    stats: &mut RecoveryStats,
) -> Result<(), KvError> {
    let pid = change.pid;
    while pool.pages() <= pid {
        drop(pool.allocate()?);
        stats.pages_created += 1;
    }
    let mut g = match pool.fix_exclusive(pid) {
        Ok(g) => g,
        Err(PoolError::Corrupt { .. }) if change.full_image => {
            io.write(pid, &blank_page(pool.page_bytes(), pid))?;
            stats.torn_pages_replaced += 1;
            pool.fix_exclusive(pid)?
        }
        Err(PoolError::Corrupt { what, .. }) => {
            return Err(KvError::Recovery(format!(
                "page {pid} is corrupt on the medium ({what}) and the log since the checkpoint holds no full \
                 image of it before LSN {end}; restore the image"
            )));
        }
        Err(e) => return Err(e.into()),
    };
    if redo_page(&mut Untracked(&mut g), change, end)? {
        g.set_lsn(end);
        stats.pages_applied += 1;
    } else {
        stats.pages_skipped += 1;
    }
    Ok(())
}
