//! # The gate: holding the pool against new fixes during a Flush
//!
//! The experiment's Flush method (λ-IO) writes back every dirty page while
//! the buffer manager is held. Here an *operation* is what a thread does
//! between taking its first guard of a pool and releasing its last one
//! (a B+-tree lookup with latch coupling is one operation). The gate lets
//! operations in progress finish and keeps new ones out:
//!
//! ```text
//!  operation start (thread holds no guard)     flush_dirty
//!    active += 1             (SeqCst)            closed = true      (SeqCst)
//!    if closed (SeqCst):                          wait until active == 0
//!        active -= 1; wait until open; retry      write back every dirty page
//!  ... guards ...                                closed = false
//!  last guard released: active -= 1
//! ```
//!
//! The four SeqCst accesses are the store-buffering pattern: either the
//! flusher sees the operation's increment and waits for it, or the
//! operation sees the gate closed and backs off. So every operation lies
//! wholly before the flush's write-backs or wholly after them, and each
//! change made by an operation that ended before `flush_dirty` returned is
//! on the medium when it returns.
//!
//! A thread inside an operation is never held at the gate (its next fix
//! goes on), so an operation never waits for a flush that waits for it.
//! Guards are `!Send`: the count of guards a thread holds is thread-local.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::latch::Backoff;

thread_local! {
    /// Guards this thread holds, per pool id (rarely more than one entry).
    static HELD: RefCell<Vec<(u64, usize)>> = const { RefCell::new(Vec::new()) };
}

/// Guards the calling thread holds of pool `pool`.
pub(crate) fn held(pool: u64) -> usize {
    HELD.with(|h| h.borrow().iter().find(|(p, _)| *p == pool).map_or(0, |&(_, n)| n))
}

/// Counts one more guard; true if it is the thread's first of `pool`.
fn hold(pool: u64) -> bool {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        match h.iter_mut().find(|(p, _)| *p == pool) {
            Some((_, n)) => {
                *n += 1;
                false
            }
            None => {
                h.push((pool, 1));
                true
            }
        }
    })
}

/// Counts one guard fewer; true if it was the thread's last of `pool`.
fn unhold(pool: u64) -> bool {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        let i = h.iter().position(|(p, _)| *p == pool).expect("a guard of this pool is held");
        h[i].1 -= 1;
        let last = h[i].1 == 0;
        if last {
            h.swap_remove(i);
        }
        last
    })
}

pub(crate) struct Gate {
    pool: u64,
    closed: AtomicBool,
    active: AtomicUsize,
    /// One flush at a time.
    flushing: Mutex<()>,
}

impl Gate {
    pub(crate) fn new(pool: u64) -> Gate {
        Gate { pool, closed: AtomicBool::new(false), active: AtomicUsize::new(0), flushing: Mutex::new(()) }
    }

    /// Before a guard is made: counts it, and enters the gate if it is the
    /// thread's first (waiting while a flush holds the pool).
    pub(crate) fn hold(&self) {
        if !hold(self.pool) {
            return;
        }
        let mut backoff = Backoff::new();
        loop {
            self.active.fetch_add(1, Ordering::SeqCst);
            if !self.closed.load(Ordering::SeqCst) {
                return;
            }
            self.active.fetch_sub(1, Ordering::SeqCst);
            while self.closed.load(Ordering::Acquire) {
                backoff.snooze();
            }
        }
    }

    /// After a guard is gone (or a fix failed): leaves the gate with the
    /// thread's last guard.
    pub(crate) fn unhold(&self) {
        if unhold(self.pool) {
            self.active.fetch_sub(1, Ordering::Release);
        }
    }

    /// Runs `f` with the pool held: no operation in progress, none starting.
    pub(crate) fn closed<R>(&self, f: impl FnOnce() -> R) -> R {
        let _one = self.flushing.lock();
        self.closed.store(true, Ordering::SeqCst);
        let mut backoff = Backoff::new();
        while self.active.load(Ordering::SeqCst) != 0 {
            backoff.snooze();
        }
        struct Open<'a>(&'a AtomicBool);
        impl Drop for Open<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _open = Open(&self.closed);
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_per_pool_and_per_thread() {
        let (a, b) = (Gate::new(1001), Gate::new(1002));
        a.hold();
        a.hold();
        b.hold();
        assert_eq!((held(1001), held(1002)), (2, 1));
        assert_eq!(a.active.load(Ordering::Relaxed), 1, "one operation, however many guards");
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(held(1001), 0));
        });
        a.unhold();
        a.unhold();
        b.unhold();
        assert_eq!((held(1001), held(1002)), (0, 0));
        assert_eq!(a.active.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_closed_gate_holds_new_operations_until_it_opens() {
        let gate = Gate::new(1003);
        let entered = AtomicBool::new(false);
        std::thread::scope(|s| {
            gate.closed(|| {
                s.spawn(|| {
                    gate.hold();
                    entered.store(true, Ordering::SeqCst);
                    gate.unhold();
                });
                std::thread::sleep(std::time::Duration::from_millis(20));
                assert!(!entered.load(Ordering::SeqCst), "an operation started while the pool was held");
            });
        });
        assert!(entered.load(Ordering::SeqCst));
    }
}
