//! Maintenance: when to checkpoint, the checkpoint itself, and the driver
//! of garbage collection and compaction.
//!
//! The checkpoint decision is a pure function of numbers read from the
//! store ([`CheckpointPressure`]), so it is tested without a device; the
//! `Database` methods here read those numbers and do the I/O. Two things
//! only a checkpoint gives back:
//!
//! ```text
//!  log ring   [■■■■■■■■■■□□□□□□□□□]   used ≥ capacity / 2          → checkpoint
//!  free pages [writes ........|reserve]  superseded pages (freed by the next
//!                                        checkpoint) ≥ reserve / 4, and
//!                                        ≥ writes, or writes < reserve → checkpoint
//! ```

use ndpdb_storage::{CommittedHeads, GcStats, Store, StoreError};

use crate::db::Database;
use crate::error::Result;

/// What the checkpoint trigger looks at, read from the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckpointPressure {
    /// Log bytes since the last checkpoint.
    pub(crate) log_used: u64,
    /// Bytes of the log's ring.
    pub(crate) log_capacity: u64,
    /// Free pages ordinary writes may still take (`Headroom::writes`).
    pub(crate) pages_writes: u64,
    /// Free pages held back for the next checkpoint (`Headroom::reserve`).
    pub(crate) pages_reserve: u64,
    /// Pages given up that only a checkpoint makes free again
    /// (`Headroom::superseded`).
    pub(crate) pages_superseded: u64,
}

/// Why a checkpoint is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckpointReason {
    /// The log since the last checkpoint fills half its ring or more.
    LogHalfFull,
    /// Superseded pages are at least a quarter of the reserve and as many
    /// as the free pages writes have left.
    Superseded,
    /// Superseded pages are at least a quarter of the reserve, and writes
    /// are down to less than the reserve.
    WritesBelowReserve,
}

impl CheckpointPressure {
    pub(crate) fn read(store: &Store) -> CheckpointPressure {
        let (log_used, log_capacity) = store.wal_usage();
        let h = store.headroom();
        CheckpointPressure {
            log_used,
            log_capacity,
            pages_writes: h.writes,
            pages_reserve: h.reserve,
            pages_superseded: h.superseded,
        }
    }

    /// Why a checkpoint is due now, if it is.
    pub(crate) fn due(&self) -> Option<CheckpointReason> {
        if self.log_used * 2 >= self.log_capacity {
            return Some(CheckpointReason::LogHalfFull);
        }
        let superseded = self.pages_superseded;
        if superseded == 0 || superseded * 4 < self.pages_reserve {
            return None;
        }
        if superseded >= self.pages_writes {
            Some(CheckpointReason::Superseded)
        } else if self.pages_writes < self.pages_reserve {
            Some(CheckpointReason::WritesBelowReserve)
        } else {
            None
        }
    }
}

impl Database {
    /// Writes a checkpoint, also while transactions are open (a fuzzy
    /// checkpoint): for every tuple an open transaction has written it
    /// records the newest committed head, so it holds committed state only.
    /// It waits for commits in flight and holds off new ones and the manager
    /// throughout: the checkpoint reflects exactly the log up to its
    /// position, and an open transaction's writes reach the log only when
    /// it commits, after that position.
    pub fn checkpoint(&self) -> Result<()> {
        let _gate = self.gate_exclusive();
        let m = self.manager();
        let meta = m.meta();
        let mut committed = CommittedHeads::new();
        if !m.active.is_empty() {
            for t in self.store().tables() {
                let heads = self.store().committed_heads(&t, &m.active)?;
                if !heads.is_empty() {
                    committed.insert(t.id, heads);
                }
            }
        }
        self.store().checkpoint(&meta, &committed)?;
        drop(m);
        Ok(())
    }

    /// Checkpoints (after commits and GC) when [`CheckpointPressure::due`]
    /// says so; never on a read-only store, which cannot write one.
    pub(crate) fn maybe_checkpoint(&self) -> Result<()> {
        let due = !self.store().read_only() && CheckpointPressure::read(self.store()).due().is_some();
        if due { self.checkpoint() } else { Ok(()) }
    }

    /// Versions created by transactions below this id are visible to every
    /// open and future snapshot.
    pub fn gc_horizon(&self) -> u64 {
        self.manager().gc_horizon()
    }

    /// Removes versions no open snapshot can see, in every table.
    ///
    /// Each page GC patches takes a free page before it gives its old one
    /// up, and only a checkpoint makes given-up pages free. So on a device
    /// too full for the next patch, GC checkpoints and goes on, as long as
    /// the last attempt gave pages up; the pages it unmaps at the end (the
    /// old versions') are most of what it frees.
    pub fn gc(&self) -> Result<GcStats> {
        let horizon = self.gc_horizon();
        let store = self.store();
        let mut total = GcStats::default();
        for t in store.tables() {
            loop {
                let given_up = store.page_reuse().superseded;
                match store.gc_into(&t, horizon, &mut total) {
                    Ok(()) => break,
                    Err(StoreError::DeviceFull { .. }) if store.page_reuse().superseded > given_up => {
                        self.checkpoint()?;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        self.compact(&mut total)?;
        self.maybe_checkpoint()?;
        Ok(total)
    }

    /// Compaction (`Store::compact_into`), only while no transaction is open:
    /// it holds commits (the gate, as a checkpoint does) and new
    /// transactions (the manager) off while it moves tuples. A device too
    /// full for the copies ends it early; the checkpoint after GC gives the
    /// pages back.
    fn compact(&self, total: &mut GcStats) -> Result<()> {
        let _gate = self.gate_exclusive();
        let m = self.manager();
        if !m.active.is_empty() {
            return Ok(());
        }
        for t in self.store().tables() {
            match self.store().compact_into(&t, total) {
                Ok(()) => {}
                Err(StoreError::DeviceFull { .. }) => break,
                Err(e) => return Err(e.into()),
            }
        }
        drop(m);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idle store: an empty log, plenty of free pages, none superseded.
    fn idle() -> CheckpointPressure {
        CheckpointPressure {
            log_used: 0,
            log_capacity: 1 << 20,
            pages_writes: 1000,
            pages_reserve: 40,
            pages_superseded: 0,
        }
    }

    #[test]
    fn nothing_due_on_an_idle_store() {
        assert_eq!(idle().due(), None);
        // Just under half the log, and superseded pages below a quarter of
        // the reserve even with writes below the reserve.
        let p = CheckpointPressure { log_used: (1 << 19) - 1, pages_writes: 5, pages_superseded: 9, ..idle() };
        assert_eq!(p.due(), None);
        // Enough superseded pages, but writes have plenty left.
        assert_eq!(CheckpointPressure { pages_superseded: 500, ..idle() }.due(), None);
        // Writes below the reserve, but nothing a checkpoint would give back.
        assert_eq!(CheckpointPressure { pages_writes: 0, ..idle() }.due(), None);
    }

    #[test]
    fn log_half_full_triggers() {
        let p = CheckpointPressure { log_used: 1 << 19, ..idle() };
        assert_eq!(p.due(), Some(CheckpointReason::LogHalfFull));
        let full = CheckpointPressure { log_used: 1 << 20, pages_superseded: 1000, ..idle() };
        assert_eq!(full.due(), Some(CheckpointReason::LogHalfFull), "the log is looked at first");
    }

    #[test]
    fn superseded_as_many_as_writes_left_triggers() {
        let p = CheckpointPressure { pages_superseded: 1000, ..idle() };
        assert_eq!(p.due(), Some(CheckpointReason::Superseded));
        let q = CheckpointPressure { pages_writes: 10, pages_superseded: 10, ..idle() };
        assert_eq!(q.due(), Some(CheckpointReason::Superseded));
        let under = CheckpointPressure { pages_writes: 1000, pages_superseded: 999, ..idle() };
        assert_eq!(under.due(), None);
    }

    #[test]
    fn writes_below_the_reserve_trigger() {
        // A quarter of the reserve superseded, writes one page short of it.
        let p = CheckpointPressure { pages_writes: 39, pages_superseded: 10, ..idle() };
        assert_eq!(p.due(), Some(CheckpointReason::WritesBelowReserve));
        let at_reserve = CheckpointPressure { pages_writes: 40, ..p };
        assert_eq!(at_reserve.due(), None);
    }

    /// The trigger agrees with the rule it replaced, written as one
    /// expression, on a grid around every threshold.
    #[test]
    fn trigger_matches_the_rule_on_a_grid() {
        for log_used in [0, 499, 500, 1000] {
            for pages_writes in [0, 1, 3, 4, 5, 8, 9] {
                for pages_reserve in [0, 1, 4, 8] {
                    for pages_superseded in [0, 1, 2, 4, 8, 9] {
                        let p = CheckpointPressure {
                            log_used,
                            log_capacity: 1000,
                            pages_writes,
                            pages_reserve,
                            pages_superseded,
                        };
                        let rule = log_used * 2 >= 1000
                            || pages_superseded > 0
                                && pages_superseded * 4 >= pages_reserve
                                && (pages_superseded >= pages_writes || pages_writes < pages_reserve);
                        assert_eq!(p.due().is_some(), rule, "{p:?}");
                    }
                }
            }
        }
    }
}
