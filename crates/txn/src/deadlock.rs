//! The waits-for graph of host transactions queued for tuple locks, and the
//! deadlock check a request makes before it sleeps.
//!
//! ```text
//!  T1 waits for [T2]          T3 asks to wait for [T1]:
//!  T2 waits for [T3, T4]      T3 → T1 → T2 → T3 is a cycle: refused, T3 fails
//!                             with a deadlock error instead of sleeping.
//! ```
//!
//! A queued request names whom it waits for: the holder of its lock-table
//! bucket and the waiters ahead of it (`LockTable::ahead_of`; a collision
//! can name a transaction that wants another key, which makes the check
//! conservative). Device transactions never wait here: a PE
//! that cannot get a lock gives up after a bounded number of polls. Pure:
//! the transaction manager keeps the graph under its mutex.

use std::collections::{HashMap, HashSet};

/// Who each waiting host transaction waits for.
#[derive(Debug, Default)]
pub(crate) struct WaitsFor {
    edges: HashMap<u64, Vec<u64>>,
}

impl WaitsFor {
    /// Records that `t` waits for `ahead`, unless that closes a cycle
    /// through `t`: then returns false and records nothing.
    pub(crate) fn wait(&mut self, t: u64, ahead: &[u64]) -> bool {
        if self.closes_cycle(t, ahead) {
            return false;
        }
        self.edges.insert(t, ahead.to_vec());
        true
    }

    /// Whether `t` waiting for `ahead` would close a cycle: `t` is
    /// reachable from `ahead` in the graph.
    fn closes_cycle(&self, t: u64, ahead: &[u64]) -> bool {
        let mut stack: Vec<u64> = ahead.to_vec();
        let mut seen = HashSet::new();
        while let Some(u) = stack.pop() {
            if u == t {
                return true;
            }
            if seen.insert(u)
                && let Some(next) = self.edges.get(&u)
            {
                stack.extend(next.iter().copied());
            }
        }
        false
    }

    /// `t` no longer waits (granted, or its wait failed).
    pub(crate) fn stop_waiting(&mut self, t: u64) {
        self.edges.remove(&t);
    }

    /// Whether `t` waits for a transaction that has not ended. Once every
    /// transaction ahead of it ended, `t` is about to be granted (the lock
    /// passes to the queue's head), even if its thread has not woken yet:
    /// so a caller that just committed the holder sees the waiter as
    /// running, not blocked.
    pub(crate) fn is_waiting(&self, t: u64) -> bool {
        self.edges.get(&t).is_some_and(|ahead| !ahead.is_empty())
    }

    /// `t` ended: it waits no longer, and whoever waited for it waits no
    /// longer for it (the graph keeps the others ahead of them).
    pub(crate) fn forget(&mut self, t: u64) {
        self.edges.remove(&t);
        for ahead in self.edges.values_mut() {
            ahead.retain(|&u| u != t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_that_closes_no_cycle_is_recorded() {
        let mut g = WaitsFor::default();
        assert!(g.wait(1, &[2]));
        assert!(g.wait(2, &[3, 4]));
        assert!(g.is_waiting(1) && g.is_waiting(2) && !g.is_waiting(3));
        // T4 waiting for T3 makes a chain, not a cycle.
        assert!(g.wait(4, &[3]));
        assert!(g.wait(5, &[]));
    }

    #[test]
    fn two_and_three_transaction_cycles_are_refused() {
        let mut g = WaitsFor::default();
        assert!(g.wait(1, &[2]));
        assert!(!g.wait(2, &[1]), "T1 → T2 → T1");
        assert!(!g.is_waiting(2), "a refused wait is not recorded");
        assert!(g.wait(2, &[3, 4]));
        assert!(!g.wait(4, &[1]), "T4 → T1 → T2 → T4");
        assert!(g.wait(3, &[5]));
        assert!(!g.wait(5, &[6, 1]), "through the second of two");
        assert!(!g.wait(7, &[7]), "waiting for itself");
    }

    #[test]
    fn shared_paths_are_walked_once() {
        // A diamond T1 → {T2, T3} → T4, and a long chain: no cycle, ends.
        let mut g = WaitsFor::default();
        assert!(g.wait(2, &[4]));
        assert!(g.wait(3, &[4]));
        assert!(g.wait(1, &[2, 3]));
        for t in 10..1000 {
            assert!(g.wait(t, &[t + 1, 1]));
        }
        assert!(g.wait(5, &[10]));
        assert!(!g.wait(4, &[10]), "T4 → T10 → … → T1 → T2 → T4");
    }

    #[test]
    fn an_ended_transaction_is_no_longer_waited_for() {
        let mut g = WaitsFor::default();
        assert!(g.wait(1, &[2, 3]));
        assert!(g.wait(2, &[4]));
        g.forget(2);
        assert!(!g.is_waiting(2));
        // T1 still waits for T3, no longer for T2: T2 may now wait for T1.
        assert!(g.wait(2, &[1]));
        assert!(!g.wait(3, &[1]));
        g.stop_waiting(1);
        assert!(!g.is_waiting(1));
        assert!(g.wait(3, &[1]));
    }

    #[test]
    fn a_waiter_whose_queue_ahead_ended_is_no_longer_waiting() {
        let mut g = WaitsFor::default();
        assert!(g.wait(2, &[1, 3]));
        g.forget(1);
        assert!(g.is_waiting(2), "T3 is still ahead");
        g.forget(3);
        assert!(!g.is_waiting(2), "granted, even before its thread wakes");
    }
}
