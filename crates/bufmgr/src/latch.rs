//! The latch operations: `state.rs`'s transitions run in CAS loops on a
//! frame's state word, and the backoff every wait in the pool uses (spin,
//! then yield, then short sleeps, so a long hold costs no core).

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::state::{Frame, Mode, State};

/// Spin, then yield, then sleep up to 1 ms per turn.
pub(crate) struct Backoff {
    turn: u32,
}

impl Backoff {
    pub(crate) fn new() -> Backoff {
        Backoff { turn: 0 }
    }

    pub(crate) fn snooze(&mut self) {
        if self.turn < 6 {
            for _ in 0..1u32 << self.turn {
                std::hint::spin_loop();
            }
        } else if self.turn < 16 {
            std::thread::yield_now();
        } else {
            let us = 10u64 << (self.turn - 16).min(7);
            std::thread::sleep(Duration::from_micros(us));
        }
        self.turn = self.turn.saturating_add(1);
    }
}

/// How a first attempt to fix a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// The latch is ours.
    Latched,
    /// We wait for the latch (pinned as a waiter): call [`wait_latch`].
    Waiting,
    /// The pool is evicting the frame: look the page up again.
    Evicting,
}

/// Applies `f` to the state word until it succeeds or declines.
fn update(frame: &Frame, f: impl Fn(State) -> Option<State>) -> Result<State, State> {
    frame
        .state
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| f(State(s)).map(|n| n.0))
        .map(State)
        .map_err(State)
}

/// Latches `frame` at once or pins it as a waiter (one CAS either way).
#[inline]
pub(crate) fn attempt(frame: &Frame, mode: Mode) -> Attempt {
    match update(frame, |s| s.fix(mode).or_else(|| s.wait())) {
        Err(_) => Attempt::Evicting,
        // The transition is a function of the old word: it latched iff it could.
        Ok(old) if old.fix(mode).is_some() => Attempt::Latched,
        Ok(_) => Attempt::Waiting,
    }
}

/// Waits (pinned as a waiter) until the latch is ours.
pub(crate) fn wait_latch(frame: &Frame, mode: Mode) {
    let mut backoff = Backoff::new();
    loop {
        if update(frame, |s| s.acquire_waiting(mode)).is_ok() {
            return;
        }
        backoff.snooze();
    }
}

/// Pins `frame` as a waiter unless it is being evicted (for write-backs
/// that find a frame by scanning, not through the page table).
pub(crate) fn pin_waiting(frame: &Frame) -> bool {
    update(frame, State::wait).is_ok()
}

/// Releases the latch: one atomic add (see `State::release_delta`).
#[inline]
pub(crate) fn release(frame: &Frame, mode: Mode) {
    let delta = State::release_delta(mode);
    let old = State(frame.state.fetch_add(delta, Ordering::Release));
    debug_assert_eq!(old.release(mode).0, old.0.wrapping_add(delta));
}

pub(crate) fn downgrade(frame: &Frame) {
    update(frame, |s| Some(s.downgrade())).expect("always applies");
}

/// Claims an unpinned frame for the pool (eviction or reuse).
pub(crate) fn claim(frame: &Frame) -> bool {
    update(frame, State::claim).is_ok()
}

/// Gives a claimed frame back, free.
pub(crate) fn unclaim(frame: &Frame) {
    update(frame, |s| Some(s.unclaim())).expect("always applies");
}

/// Turns a claimed frame into one exclusively latched by the loader.
pub(crate) fn claim_to_load(frame: &Frame) {
    update(frame, |s| Some(s.load())).expect("always applies");
}
