//! The order in which a thread may take a [`Database`](crate::Database)'s
//! locks, checked in debug builds.
//!
//! ```text
//!  commit gate  ──►  manager mutex  ──►  the store's own locks
//!  (RwLock: shared    (ids, snapshots,    (taken inside Store calls,
//!   by writes and      SSI, waits-for)     which never call back)
//!   commits, exclusive
//!   by checkpoint and compaction)
//! ```
//!
//! A thread holding one of them takes only those to its right, and takes
//! none twice: the gate is a `parking_lot` RwLock, whose shared side
//! taken again behind a queued exclusive request would deadlock. Waiting
//! for a tuple lock (on the host, or the device's PEs during update-NDP)
//! happens with neither held: the transaction ahead must be able to take
//! them to commit.
//!
//! Each guard is taken through [`Ordered::take`], which records its level
//! in a per-thread set (debug builds only) and asserts the order; dropping
//! the guard clears it. Release builds keep only the guard.

use std::ops::{Deref, DerefMut};

/// A lock of the order above, left to right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    CommitGate = 0,
    Manager = 1,
}

#[cfg(debug_assertions)]
std::thread_local! {
    /// Bit `level` set while this thread holds that level.
    static HELD: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// The levels the calling thread holds (always empty in release builds).
fn held() -> u8 {
    #[cfg(debug_assertions)]
    {
        HELD.with(|h| h.get())
    }
    #[cfg(not(debug_assertions))]
    {
        0
    }
}

#[cfg_attr(not(debug_assertions), allow(unused_variables))]
fn set_held(levels: u8) {
    #[cfg(debug_assertions)]
    HELD.with(|h| h.set(levels));
}

fn bit(level: Level) -> u8 {
    1 << level as u8
}

/// Asserts that the calling thread holds none of the ordered locks, before
/// it waits for something whose owner may need them (`what`).
pub(crate) fn assert_none_held(what: &str) {
    debug_assert_eq!(held(), 0, "lock order: {what} while holding a database lock (levels {:#b})", held());
}

/// A lock guard taken in the order above.
pub(crate) struct Ordered<G> {
    level: Level,
    guard: G,
}

impl<G> Ordered<G> {
    /// Takes a lock of `level` with `lock`, after asserting that the thread
    /// holds no lock of this level or a later one.
    pub(crate) fn take(level: Level, lock: impl FnOnce() -> G) -> Self {
        let levels = held();
        debug_assert!(
            levels & !(bit(level) - 1) == 0,
            "lock order: taking {level:?} while holding levels {levels:#b} (gate = 1, manager = 2)"
        );
        let guard = lock();
        set_held(levels | bit(level));
        Ordered { level, guard }
    }
}

impl<G> Drop for Ordered<G> {
    fn drop(&mut self) {
        let levels = held();
        debug_assert!(levels & bit(self.level) != 0, "lock order: {:?} released but not held", self.level);
        set_held(levels & !bit(self.level));
    }
}

impl<G: Deref> Deref for Ordered<G> {
    type Target = G::Target;

    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: DerefMut> DerefMut for Ordered<G> {
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;

    fn gate() -> Ordered<()> {
        Ordered::take(Level::CommitGate, || ())
    }

    fn manager() -> Ordered<()> {
        Ordered::take(Level::Manager, || ())
    }

    #[test]
    fn gate_then_manager_is_allowed() {
        let g = gate();
        let m = manager();
        drop(m);
        drop(g);
        assert_eq!(held(), 0);
        assert_none_held("nothing");
        // Each alone, again.
        drop(manager());
        drop(gate());
    }

    #[test]
    #[should_panic(expected = "lock order: taking CommitGate")]
    fn gate_under_manager_panics() {
        let _m = manager();
        let _g = gate();
    }

    #[test]
    #[should_panic(expected = "lock order: taking CommitGate")]
    fn gate_twice_panics() {
        let _g = gate();
        let _again = gate();
    }

    #[test]
    #[should_panic(expected = "waiting for a tuple lock while holding")]
    fn waiting_under_a_lock_panics() {
        let _m = manager();
        assert_none_held("waiting for a tuple lock");
    }
}
