//! The store's mutexes and the one order they are taken in.
//!
//! A thread that holds one of these may take only a mutex of a later
//! [`Level`], never an earlier one or a second of the same level (two
//! tables' states are never held together):
//!
//! ```text
//!   Catalog ─► TableState ─► QueuePair ─► Maps ─► CheckpointPages ─► PageReaders ─► PageCache ─► Generation ─► DeltaFrames ─► Zones
//!   (tables)   (one table)   (the store's  (L2P,    (checkpoint.rs)   (reuse.rs)      (read.rs)   (checkpoint.rs) (delta_frames.rs)  (zones.rs)
//!                             own)         allocator, reuse)
//! ```
//!
//! The steps that need it: a writer holds its table's state while the
//! delta buffer is written (`write_delta`: allocation takes the maps, the
//! write the queue pair), and while an update is installed (the maps); a
//! point read holds the queue pair while it looks the page up in the maps
//! (`read_page`); the checkpoint's reserve is computed under the maps and
//! counts the checkpoint's free pages (`CheckpointPages`); freeing pages
//! under the maps asks which page readers run. Everything else takes one
//! mutex at a time. No device command is waited for under the maps.
//!
//! The log's mutex and its queue pair (`wal.rs`) are taken with none of
//! these held.
//!
//! [`OrderedMutex`] checks the order in debug builds: each thread keeps the
//! levels it holds, and taking a mutex asserts that every level held is
//! earlier. Release builds keep nothing and check nothing.

use std::ops::{Deref, DerefMut};

use parking_lot::{Mutex, MutexGuard};

/// Where a mutex stands in the order (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// `Store::tables`.
    Catalog,
    /// `Table::state`.
    TableState,
    /// `Store::qp`.
    QueuePair,
    /// `Store::maps`.
    Maps,
    /// `Checkpoints::pages`.
    CheckpointPages,
    /// `Store::page_readers`.
    PageReaders,
    /// `PageCache::pages`.
    PageCache,
    /// `Checkpoints::generation`.
    Generation,
    /// `DeltaFrames::state` (`delta_frames.rs`): holds nothing.
    DeltaFrames,
    /// `Table::zones` (`zones.rs`): taken last, holds nothing.
    Zones,
}

/// A mutex with a place in the store's lock order.
pub(crate) struct OrderedMutex<T> {
    level: Level,
    inner: Mutex<T>,
}

/// A held [`OrderedMutex`]; dropping it releases the level.
pub(crate) struct OrderedGuard<'a, T> {
    guard: MutexGuard<'a, T>,
    level: Level,
}

impl<T> OrderedMutex<T> {
    pub(crate) fn new(level: Level, value: T) -> OrderedMutex<T> {
        OrderedMutex { level, inner: Mutex::new(value) }
    }

    /// Takes the mutex; in debug builds, asserts the lock order first.
    pub(crate) fn lock(&self) -> OrderedGuard<'_, T> {
        held::acquire(self.level);
        OrderedGuard { guard: self.inner.lock(), level: self.level }
    }

    /// The mutex itself, for code that takes a plain `parking_lot` mutex
    /// (`wal.rs` reads the log through the store's queue pair at open).
    /// Its caller holds none of the store's locks.
    pub(crate) fn unordered(&self) -> &Mutex<T> {
        held::assert_none();
        &self.inner
    }
}

impl<T> Deref for OrderedGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for OrderedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> Drop for OrderedGuard<'_, T> {
    fn drop(&mut self) {
        held::release(self.level);
    }
}

/// Asserts (in debug builds) that this thread holds none of the store's
/// locks: before the log is appended to or flushed.
pub(crate) fn assert_none_held() {
    held::assert_none();
}

#[cfg(debug_assertions)]
mod held {
    use std::cell::RefCell;

    use super::Level;

    thread_local! {
        /// The levels this thread holds, in the order it took them.
        static HELD: RefCell<Vec<Level>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn acquire(level: Level) {
        HELD.with_borrow_mut(|held| {
            debug_assert!(
                held.iter().all(|&h| h < level),
                "lock order: taking {level:?} while holding {held:?} (lock_order.rs)"
            );
            held.push(level);
        });
    }

    pub(super) fn release(level: Level) {
        HELD.with_borrow_mut(|held| {
            let at = held.iter().rposition(|&h| h == level);
            debug_assert!(at.is_some(), "lock order: releasing {level:?}, which is not held");
            if let Some(at) = at {
                held.remove(at);
            }
        });
    }

    pub(super) fn assert_none() {
        HELD.with_borrow(|held| debug_assert!(held.is_empty(), "lock order: holding {held:?}"));
    }
}

#[cfg(not(debug_assertions))]
mod held {
    use super::Level;

    pub(super) fn acquire(_: Level) {}
    pub(super) fn release(_: Level) {}
    pub(super) fn assert_none() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_taken_in_order_may_be_released_in_any_order() {
        let (maps, readers, cache) = (
            OrderedMutex::new(Level::Maps, 1),
            OrderedMutex::new(Level::PageReaders, 2),
            OrderedMutex::new(Level::PageCache, 3),
        );
        let m = maps.lock();
        let r = readers.lock();
        drop(m);
        let c = cache.lock();
        assert_eq!((*r, *c), (2, 3));
        drop(r);
        drop(c);
        // Nothing held: any level may be taken again.
        *maps.lock() += 1;
        assert_eq!(*maps.lock(), 2);
        assert_none_held();
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "lock order: taking TableState while holding [Maps]")]
    fn taking_an_earlier_level_fails() {
        let (state, maps) = (OrderedMutex::new(Level::TableState, ()), OrderedMutex::new(Level::Maps, ()));
        let _m = maps.lock();
        let _s = state.lock();
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "lock order: taking TableState while holding [TableState]")]
    fn two_of_one_level_fail() {
        let (a, b) = (OrderedMutex::new(Level::TableState, ()), OrderedMutex::new(Level::TableState, ()));
        let _a = a.lock();
        let _b = b.lock();
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "lock order: holding [QueuePair]")]
    fn the_log_is_reached_with_nothing_held() {
        let qp = OrderedMutex::new(Level::QueuePair, ());
        let _q = qp.lock();
        assert_none_held();
    }
}
