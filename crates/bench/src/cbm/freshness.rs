//! # The freshness checker
//!
//! Proves which methods answer with fresh data: every in-storage lookup's
//! answer is compared with the values the host committed around it.
//!
//! One counter orders everything. A write takes a number when it starts
//! (`announce`) and another when its commit returned (`commit`); a lookup
//! reads the counter at dispatch (`d`) and at completion (`c`):
//!
//! ```text
//!  key k:   v1 committed ──── v2 announced ── v2 committed ── v3 announced ...
//!                        d ▲                                 ▲ c
//!                 lookup dispatched                   lookup completed
//!  fresh answers: v1 (the last committed before d), v2 (committed in [d, c]),
//!                 v3 (announced before c: in flight, may already be visible)
//! ```
//!
//! An answer is fresh iff it equals the value of the write committed last
//! before `d`, or of any write committed or in flight between `d` and `c`.
//! Writes still in flight at `c` are accepted because the store makes a
//! write visible before its commit returns (the log is flushed after the
//! latches are released): such a value races the lookup, as a commit in
//! `[d, c]` does. Values carry their write's sequence number, so no two
//! writes of a key have equal values and a stale answer cannot pass for a
//! fresh one. A lookup that finds nothing is fresh only if the key had no
//! committed value (none of the experiment's keys is ever deleted).
//!
//! The check itself ([`fresh`]) is a pure function over one key's history.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// A value's fingerprint (the checker keeps no values).
pub fn fingerprint(value: &[u8]) -> u64 {
    // FNV-1a 64 over the bytes: values differ in their first 8 bytes.
    value.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// One write of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    pub announced: u64,
    /// `None` while the write is in flight.
    pub committed: Option<u64>,
    pub value: u64,
}

/// Whether `answer` (a fingerprint, `None`: not found) is fresh for a lookup
/// dispatched at `d` and completed at `c`, given the key's writes in
/// announce order.
pub fn fresh(history: &[Version], answer: Option<u64>, d: u64, c: u64) -> bool {
    // The newest write committed before dispatch.
    let base = history.iter().rev().find(|v| v.committed.is_some_and(|s| s < d));
    let racing = history.iter().filter(|v| v.announced < c && v.committed.is_none_or(|s| s >= d));
    match answer {
        None => base.is_none(),
        Some(a) => base.is_some_and(|v| v.value == a) || racing.into_iter().any(|v| v.value == a),
    }
}

/// A write between `announce` and `commit`.
#[derive(Debug)]
#[must_use = "commit the write once the store acknowledged it"]
pub struct Ticket {
    key: u64,
    index: usize,
}

/// The checker: each key's value before the run, the writes of the run,
/// and the counter.
#[derive(Debug, Default)]
pub struct Checker {
    counter: AtomicU64,
    /// Fingerprints of the values committed before the run, by key number
    /// (committed at 0).
    base: Vec<u64>,
    keys: Mutex<HashMap<u64, Vec<Version>>>,
    checked: AtomicU64,
    violations: AtomicU64,
}

impl Checker {
    /// Keys `0..base.len()` hold values with these fingerprints.
    pub fn new(base: Vec<u64>) -> Checker {
        Checker { counter: AtomicU64::new(1), base, ..Checker::default() }
    }

    /// The fingerprints after the run: each key's last committed value.
    pub fn into_base(self) -> Vec<u64> {
        let mut base = self.base;
        for (k, h) in self.keys.into_inner() {
            if let (Some(slot), Some(v)) = (base.get_mut(k as usize), h.iter().rev().find(|v| v.committed.is_some())) {
                *slot = v.value;
            }
        }
        base
    }

    /// The counter now: a lookup's dispatch or completion.
    pub fn now(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::SeqCst)
    }

    /// A write of `value` to `key` starts.
    pub fn announce(&self, key: u64, value: &[u8]) -> Ticket {
        let announced = self.now();
        let mut keys = self.keys.lock();
        let h = keys.entry(key).or_default();
        h.push(Version { announced, committed: None, value: fingerprint(value) });
        Ticket { key, index: h.len() - 1 }
    }

    /// The write's commit returned.
    pub fn commit(&self, t: Ticket) {
        let committed = self.now();
        let mut keys = self.keys.lock();
        if let Some(v) = keys.get_mut(&t.key).and_then(|h| h.get_mut(t.index)) {
            v.committed = Some(committed);
        }
    }

    /// Checks a lookup's answer; true if fresh. Counts checks and violations.
    pub fn check(&self, key: u64, answer: Option<&[u8]>, dispatched: u64, completed: u64) -> bool {
        let ok = {
            let keys = self.keys.lock();
            let base = self.base.get(key as usize).map(|&value| Version { announced: 0, committed: Some(0), value });
            let run = keys.get(&key).map_or(&[][..], Vec::as_slice);
            let history: Vec<Version> = base.into_iter().chain(run.iter().copied()).collect();
            fresh(&history, answer.map(fingerprint), dispatched, completed)
        };
        self.checked.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.violations.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    pub fn violations(&self) -> u64 {
        self.violations.load(Ordering::Relaxed)
    }

    pub fn checked(&self) -> u64 {
        self.checked.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_answer_is_a_violation() {
        let c = Checker::new(vec![fingerprint(b"x"), fingerprint(b"v0")]);
        let t = c.announce(1, b"v1");
        c.commit(t);
        let d = c.now();
        let e = c.now();
        assert!(!c.check(1, Some(b"v0"), d, e), "v0 was overwritten before dispatch");
        assert!(c.check(1, Some(b"v1"), d, e));
        assert!(!c.check(1, None, d, e), "the key exists");
        assert!(!c.check(1, Some(b"garbage"), d, e));
        assert_eq!((c.violations(), c.checked()), (3, 4));
    }

    #[test]
    fn a_racing_commit_is_accepted_either_way() {
        let c = Checker::new(vec![fingerprint(b"x"), fingerprint(b"v0")]);
        let d = c.now();
        let t = c.announce(1, b"v1");
        // In flight at completion: both the old and the new value are fresh.
        let e = c.now();
        assert!(c.check(1, Some(b"v0"), d, e));
        assert!(c.check(1, Some(b"v1"), d, e));
        c.commit(t);
        let e2 = c.now();
        assert!(c.check(1, Some(b"v0"), d, e2));
        assert!(c.check(1, Some(b"v1"), d, e2));
        // A write announced after completion cannot have been seen.
        let t2 = c.announce(1, b"v2");
        assert!(!c.check(1, Some(b"v2"), d, e2));
        c.commit(t2);
        assert_eq!(c.violations(), 1);
        assert_eq!(c.into_base(), vec![fingerprint(b"x"), fingerprint(b"v2")]);
    }

    #[test]
    fn the_pure_check_over_a_history() {
        let v = |a, c: Option<u64>, x| Version { announced: a, committed: c, value: x };
        let h = [v(0, Some(0), 10), v(3, Some(4), 11), v(6, Some(9), 12), v(11, None, 13)];
        assert!(fresh(&h, Some(11), 5, 8), "the last committed before dispatch");
        assert!(!fresh(&h, Some(10), 5, 8), "overwritten before dispatch");
        assert!(fresh(&h, Some(12), 5, 8), "announced and in flight before completion");
        assert!(!fresh(&h, Some(13), 5, 8), "announced after completion");
        assert!(fresh(&h, Some(13), 5, 12));
        assert!(fresh(&[], None, 1, 2), "a key never written is not found");
        assert!(!fresh(&h, None, 1, 2));
        assert_eq!(fingerprint(b"a"), fingerprint(b"a"));
        assert_ne!(fingerprint(b"a"), fingerprint(b"b"));
    }
}
