//! # A frame's state word and what else a frame keeps
//!
//! One `AtomicU64` per frame decides who may touch it, vmcache-style:
//!
//! ```text
//!  63                     32 31          16 15            0
//!  ┌─────────────────────────┬──────────────┬──────────────┐
//!  │ version                 │ waiters      │ latch        │
//!  └─────────────────────────┴──────────────┴──────────────┘
//!  latch: 0 free · 1..=0xFFFD that many shared holders · 0xFFFE exclusive
//!         · 0xFFFF evicting (the pool owns the frame; nobody may pin it)
//!  waiters: threads that pinned the frame and wait for its latch
//!  version: +1 at every exclusive release (vmcache's optimistic version)
//! ```
//!
//! A frame is *pinned* while its latch is held or anyone waits for it: a
//! guard's latch is its pin, and a waiter's count is its pin, so a fix is
//! one CAS and an unfix one more. Eviction claims a frame only from "free,
//! no waiters" (`claim`), and a claimed frame refuses pins, so a pinned
//! frame is never evicted. Shared fixes do not barge past waiters, so a
//! waiting exclusive fix is not starved by a stream of readers.
//!
//! The functions here are pure transitions on the word; `latch.rs` runs
//! them in CAS loops. Beside the word a frame keeps its pid, dirty flag,
//! page LSN and clock bit, each read and written under the latch or the
//! claim (atomics only so the clock hand may peek without one).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::Pid;

/// The pid of a frame that holds no page.
pub(crate) const NO_PID: Pid = u64::MAX;

const LATCH_MASK: u64 = 0xFFFF;
/// Most shared holders a frame counts; more wait.
pub(crate) const SHARED_MAX: u64 = 0xFFFD;
const EXCLUSIVE: u64 = 0xFFFE;
const EVICTING: u64 = 0xFFFF;
const WAITER_ONE: u64 = 1 << 16;
const WAITERS_MAX: u64 = 0xFFFF;
const VERSION_ONE: u64 = 1 << 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Shared,
    Exclusive,
}

/// A value of the state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State(pub u64);

impl State {
    pub(crate) fn latch(self) -> u64 {
        self.0 & LATCH_MASK
    }

    pub(crate) fn waiters(self) -> u64 {
        (self.0 >> 16) & WAITERS_MAX
    }

    #[cfg(test)]
    pub(crate) fn version(self) -> u64 {
        self.0 >> 32
    }

    pub(crate) fn evicting(self) -> bool {
        self.latch() == EVICTING
    }

    pub(crate) fn exclusive(self) -> bool {
        self.latch() == EXCLUSIVE
    }

    /// Shared holders (0 unless shared-latched).
    pub(crate) fn shared(self) -> u64 {
        if self.latch() <= SHARED_MAX { self.latch() } else { 0 }
    }

    /// Latched, or somebody waits for the latch.
    pub(crate) fn pinned(self) -> bool {
        self.waiters() > 0 || (self.latch() != 0 && !self.evicting())
    }

    fn with_latch(self, latch: u64) -> State {
        State((self.0 & !LATCH_MASK) | latch)
    }

    /// Whether `mode` may take the latch now (waiters aside).
    fn compatible(self, mode: Mode) -> bool {
        match mode {
            Mode::Shared => self.latch() < SHARED_MAX,
            Mode::Exclusive => self.latch() == 0,
        }
    }

    fn latched(self, mode: Mode) -> State {
        match mode {
            Mode::Shared => State(self.0 + 1),
            Mode::Exclusive => self.with_latch(EXCLUSIVE),
        }
    }

    /// The fast path of a fix: the latch at once, if nobody waits for it.
    pub(crate) fn fix(self, mode: Mode) -> Option<State> {
        (self.waiters() == 0 && self.compatible(mode)).then(|| self.latched(mode))
    }

    /// Pin as a waiter (not on a frame being evicted).
    pub(crate) fn wait(self) -> Option<State> {
        (!self.evicting() && self.waiters() < WAITERS_MAX).then_some(State(self.0 + WAITER_ONE))
    }

    /// A waiter takes the latch (and stops waiting).
    pub(crate) fn acquire_waiting(self, mode: Mode) -> Option<State> {
        debug_assert!(self.waiters() > 0 && !self.evicting());
        self.compatible(mode).then(|| State(self.latched(mode).0 - WAITER_ONE))
    }

    pub(crate) fn release(self, mode: Mode) -> State {
        match mode {
            Mode::Shared => {
                debug_assert!(self.shared() > 0, "shared release of {self:?}");
                State(self.0 - 1)
            }
            Mode::Exclusive => {
                debug_assert!(self.exclusive(), "exclusive release of {self:?}");
                State(self.with_latch(0).0.wrapping_add(VERSION_ONE))
            }
        }
    }

    /// What [`State::release`] adds to the word (wrapping), so that a
    /// release is one atomic add however the waiters change meanwhile.
    pub(crate) fn release_delta(mode: Mode) -> u64 {
        match mode {
            Mode::Shared => 1u64.wrapping_neg(),
            Mode::Exclusive => VERSION_ONE.wrapping_sub(EXCLUSIVE),
        }
    }

    /// Exclusive to one shared holder, as a release would count it.
    pub(crate) fn downgrade(self) -> State {
        debug_assert!(self.exclusive(), "downgrade of {self:?}");
        State(self.with_latch(1).0.wrapping_add(VERSION_ONE))
    }

    /// The pool claims a free frame nobody waits for (to evict or reuse it).
    pub(crate) fn claim(self) -> Option<State> {
        (self.latch() == 0 && self.waiters() == 0).then(|| self.with_latch(EVICTING))
    }

    /// The pool gives a claimed frame back unlatched.
    pub(crate) fn unclaim(self) -> State {
        debug_assert!(self.evicting() && self.waiters() == 0);
        self.with_latch(0)
    }

    /// The pool keeps a claimed frame, exclusively latched, to load a page.
    pub(crate) fn load(self) -> State {
        debug_assert!(self.evicting() && self.waiters() == 0);
        self.with_latch(EXCLUSIVE)
    }
}

/// What the clock hand does with a frame (the policy, apart from the CAS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sweep {
    /// Pinned, or claimed by another thread: pass it by.
    Skip,
    /// Used since the hand last passed: clear its bit and pass it by.
    SecondChance,
    /// Try to claim it.
    Claim,
}

pub(crate) fn sweep(state: State, referenced: bool) -> Sweep {
    if state.pinned() || state.evicting() {
        Sweep::Skip
    } else if referenced {
        Sweep::SecondChance
    } else {
        Sweep::Claim
    }
}

/// One frame's bookkeeping (the page bytes live in `HostFrames`).
#[repr(align(64))]
pub(crate) struct Frame {
    pub(crate) state: AtomicU64,
    pub(crate) pid: AtomicU64,
    /// The LSN of the newest change to the cached page (write-ahead rule).
    pub(crate) page_lsn: AtomicU64,
    pub(crate) dirty: AtomicBool,
    pub(crate) referenced: AtomicBool,
}

impl Frame {
    pub(crate) fn new() -> Frame {
        Frame {
            state: AtomicU64::new(0),
            pid: AtomicU64::new(NO_PID),
            page_lsn: AtomicU64::new(0),
            dirty: AtomicBool::new(false),
            referenced: AtomicBool::new(false),
        }
    }

    pub(crate) fn state(&self) -> State {
        State(self.state.load(Ordering::Acquire))
    }

    pub(crate) fn pid(&self) -> Pid {
        self.pid.load(Ordering::Relaxed)
    }

    /// Sets the clock bit (a load first keeps a hot frame's line shared).
    pub(crate) fn touch(&self) {
        if !self.referenced.load(Ordering::Relaxed) {
            self.referenced.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_holders_count_and_exclude_the_exclusive_latch() {
        let s = State(0).fix(Mode::Shared).unwrap().fix(Mode::Shared).unwrap();
        assert_eq!(s.shared(), 2);
        assert!(s.pinned());
        assert_eq!(s.fix(Mode::Exclusive), None);
        let s = s.release(Mode::Shared).release(Mode::Shared);
        assert_eq!(s, State(0));
        let x = s.fix(Mode::Exclusive).unwrap();
        assert!(x.exclusive());
        assert_eq!(x.fix(Mode::Shared), None);
        assert_eq!(x.fix(Mode::Exclusive), None);
        let r = x.release(Mode::Exclusive);
        assert_eq!((r.latch(), r.version()), (0, 1));
    }

    #[test]
    fn waiters_pin_and_block_barging() {
        let x = State(0).fix(Mode::Exclusive).unwrap();
        let w = x.wait().unwrap();
        assert_eq!(w.waiters(), 1);
        assert_eq!(w.acquire_waiting(Mode::Shared), None, "the latch is still exclusive");
        let freed = w.release(Mode::Exclusive);
        assert!(freed.pinned(), "a waiter pins the frame");
        assert_eq!(freed.claim(), None, "a pinned frame is never claimed");
        assert_eq!(freed.fix(Mode::Shared), None, "no barging past a waiter");
        let s = freed.acquire_waiting(Mode::Shared).unwrap();
        assert_eq!((s.shared(), s.waiters()), (1, 0));
    }

    #[test]
    fn a_claimed_frame_refuses_pins() {
        let c = State(5 << 32).claim().unwrap();
        assert!(c.evicting() && !c.pinned());
        assert_eq!(c.fix(Mode::Shared), None);
        assert_eq!(c.fix(Mode::Exclusive), None);
        assert_eq!(c.wait(), None);
        assert_eq!(c.unclaim(), State(5 << 32));
        let l = c.load();
        assert!(l.exclusive());
        assert_eq!(l.downgrade().shared(), 1);
        assert_eq!(l.downgrade().version(), 6);
    }

    #[test]
    fn the_shared_count_saturates_into_waiting() {
        let full = State(SHARED_MAX);
        assert_eq!(full.fix(Mode::Shared), None);
        assert!(full.wait().unwrap().acquire_waiting(Mode::Shared).is_none());
        assert!(State(SHARED_MAX - 1).fix(Mode::Shared).is_some());
    }

    #[test]
    fn a_release_is_one_add() {
        for s in [
            State(3),
            State((9 << 32) | (2 * WAITER_ONE) | 1),
            State(EXCLUSIVE),
            State((u64::MAX << 32) | WAITER_ONE | EXCLUSIVE),
        ] {
            let mode = if s.exclusive() { Mode::Exclusive } else { Mode::Shared };
            assert_eq!(s.release(mode).0, s.0.wrapping_add(State::release_delta(mode)), "{s:?}");
        }
    }

    #[test]
    fn the_version_wraps_without_touching_the_latch() {
        let top = State((u64::MAX << 32) | EXCLUSIVE);
        let r = top.release(Mode::Exclusive);
        assert_eq!((r.version(), r.latch(), r.waiters()), (0, 0, 0));
    }

    #[test]
    fn the_clock_passes_pinned_frames_and_gives_a_second_chance() {
        assert_eq!(sweep(State(1), false), Sweep::Skip);
        assert_eq!(sweep(State(WAITER_ONE), false), Sweep::Skip);
        assert_eq!(sweep(State(EVICTING), false), Sweep::Skip);
        assert_eq!(sweep(State(0), true), Sweep::SecondChance);
        assert_eq!(sweep(State(7 << 32), false), Sweep::Claim);
    }
}
