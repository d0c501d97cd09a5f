//! The slot-queue protocol on one bucket, as non-blocking steps.
//!
//! Every step is a sequence of single-word loads, stores and compare-and-swaps
//! on the bucket's words, made through [`BucketWords`]. The host implements it
//! over the table's own atomics ([`crate::HostWords`]); a device processing
//! element implements it over the same memory, charging modelled coherence
//! latency; the loom tests implement it over loom's atomics. The layout and
//! the invariants are in the crate's design essay (`lib.rs`) and in
//! `docs/format/locktable.md`:
//!
//! ```text
//!  word 0: [B|W|holder ts]   word 1..N-1: waiting ts in FIFO order, then zeros
//!  B = bit 63, the structure token ("busy"): set while one agent rewrites words 1..N-1
//!  W = bit 62, "waiters": word 1 is nonzero (kept exact whenever B is clear)
//! ```
//!
//! Nothing here blocks on the operating system: a step that finds the token
//! taken spins with [`BucketWords::backoff`] until the agent holding it puts
//! word 0 back (a handful of word operations later). Waiting for the lock
//! itself, or for a free slot, is the caller's business: the host parks
//! (`table.rs`), a device polls [`poll`] and [`is_full`].

use std::sync::atomic::Ordering::{self, Acquire, Relaxed, Release};

/// Slots per bucket: eight 8-byte words fill one 64-byte cache line.
pub const SLOTS: usize = 8;
/// Bit 63 of word 0: the structure token.
pub const BUSY: u64 = 1 << 63;
/// Bit 62 of word 0: someone waits (word 1 is nonzero).
pub const WAITERS: u64 = 1 << 62;
/// The timestamp bits of a word; timestamps never have the flag bits set.
pub const TS_MASK: u64 = !(BUSY | WAITERS);
/// The largest valid transaction timestamp (0 marks an empty slot).
pub const TS_MAX: u64 = TS_MASK;

/// Whether `ts` may enter a bucket: nonzero, and bits 62 and 63 clear.
pub fn valid_ts(ts: u64) -> bool {
    ts != 0 && ts <= TS_MAX
}

/// Word 0 for `holder` with a waiter in word 1 or not.
fn head_word(holder: u64, word1: u64) -> u64 {
    if word1 == 0 { holder } else { holder | WAITERS }
}

/// How the protocol reaches the words of the lock table's buckets.
///
/// Orderings follow `std::sync::atomic`; an implementation over coherent
/// memory that is sequentially consistent anyway (a device model) may ignore
/// them, but must make each call one indivisible access to one word.
pub trait BucketWords {
    /// Words per bucket. The table has [`SLOTS`]; model checks use fewer.
    const SLOTS: usize = SLOTS;

    fn load(&self, bucket: usize, slot: usize, order: Ordering) -> u64;

    fn store(&self, bucket: usize, slot: usize, value: u64, order: Ordering);

    /// Replaces `current` by `new` if the word holds `current`; returns the
    /// value found either way, as `AtomicU64::compare_exchange` does.
    fn compare_exchange(
        &self,
        bucket: usize,
        slot: usize,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;

    /// Called on each turn of a loop waiting for another agent to put word 0
    /// back. The default spins, then yields the CPU (a host thread holding the
    /// token may have been preempted).
    fn backoff(&self, turn: u32) {
        if turn < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// What a request found (see [`try_acquire`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The bucket was empty: the requester is in word 0 and holds the lock.
    Acquired,
    /// The requester already is in word 0 (it holds another key that hashes
    /// to this bucket, or asked twice). It must not release for this request.
    AlreadyHeld,
    /// The requester waits in word `position` (1..SLOTS) and is granted the
    /// lock when the queue ahead of it has drained ([`poll`] says `Head`).
    Queued { position: usize },
    /// All slots are taken: the requester is not in the queue; retry once a
    /// slot is free ([`is_full`] is false).
    Full,
}

/// Where a transaction stands in a bucket (see [`poll`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll {
    /// In word 0: it holds the lock.
    Head,
    /// Waiting in word `position`; the position is a hint (it only decreases).
    Waiting { position: usize },
    /// Not in the bucket: never queued, already released, or cancelled.
    Absent,
}

/// What a release did (see [`release`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// The lock passed to `next`, or the bucket is empty (`None`: nobody
    /// waited, so no host thread sleeps on the bucket and none need waking).
    Released { next: Option<u64> },
    /// The releaser was not in word 0; `holder` is who was. Nothing changed.
    NotHolder { holder: Option<u64> },
}

/// What a cancellation did (see [`cancel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The waiter was removed; the ones behind it moved up by one slot.
    Removed,
    /// The lock was granted before the cancellation took effect: the
    /// transaction holds it and must release it (or keep it).
    Granted,
    /// The transaction was not in the bucket.
    NotQueued,
}

/// Per-call counts of contention, for the caller to add up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Compare-and-swaps on word 0 that lost a race and were retried.
    pub cas_failures: u64,
    /// Turns spent waiting for another agent's structure token.
    pub busy_waits: u64,
}

/// What a step makes of word 0 before it takes the token.
enum Decision<T> {
    /// Take the token (once word 0 is not busy).
    Take,
    /// A fast-path CAS found word 0 changed to this value: look again.
    Retry(u64),
    /// The step is over without the token.
    Done(T),
}

/// Takes the structure token: waits until word 0 is neither busy nor empty,
/// then sets its busy bit; returns word 0 as it was (holder and waiters
/// bit). `word0` is what the caller last saw of word 0 (with Acquire), so a
/// step that begins with a fast-path CAS passes on the value its failure
/// found instead of loading the line again. `decide` sees each word 0 first
/// and may end the step, or try a fast path; it gets the tally to count its
/// own CAS failures.
fn take_token<W: BucketWords + ?Sized, T>(
    w: &W,
    bucket: usize,
    tally: &mut Tally,
    mut word0: u64,
    mut decide: impl FnMut(u64, &mut Tally) -> Decision<T>,
) -> Result<u64, T> {
    let mut turn = 0;
    loop {
        match decide(word0, tally) {
            Decision::Take => {}
            Decision::Retry(found) => {
                word0 = found;
                continue;
            }
            Decision::Done(outcome) => return Err(outcome),
        }
        debug_assert_ne!(word0, 0, "an empty bucket has no token to take");
        if word0 & BUSY != 0 {
            tally.busy_waits += 1;
            w.backoff(turn);
            turn = turn.saturating_add(1);
            word0 = w.load(bucket, 0, Acquire);
            continue;
        }
        // Acquire: the previous token holder's slot writes, published by its
        // release store of word 0, are visible to our plain slot accesses.
        match w.compare_exchange(bucket, 0, word0, word0 | BUSY, Acquire, Acquire) {
            Ok(_) => return Ok(word0),
            Err(found) => {
                tally.cas_failures += 1;
                word0 = found;
            }
        }
    }
}

/// Moves the words after `from` up by one slot, overwriting word `from`
/// (a waiter leaving, or the old copy of the new holder); returns word 1
/// afterwards. Runs under the token. Each word is first copied down, then
/// overwritten by its successor, so a waiter is always in some word
/// ("presence", see `poll`); the stores are Release so a reader that sees an
/// overwrite also sees the copy before it.
fn close_gap<W: BucketWords + ?Sized>(w: &W, bucket: usize, from: usize) -> u64 {
    debug_assert!(from >= 1);
    let mut word1 = if from > 1 { w.load(bucket, 1, Relaxed) } else { 0 };
    for slot in from..W::SLOTS {
        let next = if slot + 1 < W::SLOTS { w.load(bucket, slot + 1, Relaxed) } else { 0 };
        w.store(bucket, slot, next, Release);
        if slot == 1 {
            word1 = next;
        }
        if next == 0 {
            break;
        }
    }
    word1
}

/// Requests the lock of `bucket` for `ts`: one CAS into word 0 when the
/// bucket is empty, else an append behind the last waiter under the token.
/// A transaction already queued gets its position again (the step is
/// idempotent).
#[inline]
pub fn try_acquire<W: BucketWords + ?Sized>(w: &W, bucket: usize, ts: u64, tally: &mut Tally) -> Attempt {
    debug_assert!(valid_ts(ts), "invalid timestamp {ts:#x}");
    // The common case first, inlined into the caller: an empty bucket (word
    // 0 is zero only when the whole bucket is empty, invariant C) is taken
    // with this one access. Its failure is the first look at word 0, not a
    // lost race.
    match w.compare_exchange(bucket, 0, 0, ts, Acquire, Acquire) {
        Ok(_) => Attempt::Acquired,
        Err(found) => try_acquire_after(w, bucket, ts, tally, found),
    }
}

/// [`try_acquire`] once the bucket was found holding `first`.
#[inline(never)]
fn try_acquire_after<W: BucketWords + ?Sized>(w: &W, bucket: usize, ts: u64, tally: &mut Tally, first: u64) -> Attempt {
    let taken = take_token(w, bucket, tally, first, |word0, tally| {
        if word0 & TS_MASK == ts {
            return Decision::Done(Attempt::AlreadyHeld);
        }
        if word0 != 0 {
            return Decision::Take;
        }
        // Emptied since the last look.
        match w.compare_exchange(bucket, 0, 0, ts, Acquire, Acquire) {
            Ok(_) => Decision::Done(Attempt::Acquired),
            Err(found) => {
                tally.cas_failures += 1;
                Decision::Retry(found)
            }
        }
    });
    let word0 = match taken {
        Ok(word0) => word0,
        Err(attempt) => return attempt,
    };
    let mut attempt = Attempt::Full;
    for slot in 1..W::SLOTS {
        let word = w.load(bucket, slot, Relaxed);
        if word == ts || word == 0 {
            if word == 0 {
                w.store(bucket, slot, ts, Release);
            }
            attempt = Attempt::Queued { position: slot };
            break;
        }
    }
    // Release: publishes the append to the next token holder. Anyone in
    // word 1 now sets the waiters bit.
    let waiting = if matches!(attempt, Attempt::Queued { .. }) { WAITERS } else { 0 };
    w.store(bucket, 0, word0 | waiting, Release);
    attempt
}

/// Releases the lock `ts` holds in `bucket`. Without waiters that is one
/// CAS, `ts → 0`; with waiters the queue moves up by one slot and its first
/// waiter becomes the holder, and the caller must then wake host waiters of
/// the bucket (`LockTable::release_with` does).
#[inline]
pub fn release<W: BucketWords + ?Sized>(w: &W, bucket: usize, ts: u64, tally: &mut Tally) -> ReleaseOutcome {
    debug_assert!(valid_ts(ts), "invalid timestamp {ts:#x}");
    // The common case first, inlined into the caller: word 0 exactly `ts`
    // (no token, no waiter) is released with this one access. Release: the
    // critical section happens before the next acquirer's CAS.
    match w.compare_exchange(bucket, 0, ts, 0, Release, Acquire) {
        Ok(_) => ReleaseOutcome::Released { next: None },
        Err(found) => release_after(w, bucket, ts, tally, found),
    }
}

/// [`release`] once word 0 was found holding `first`, not exactly `ts`.
#[inline(never)]
fn release_after<W: BucketWords + ?Sized>(
    w: &W,
    bucket: usize,
    ts: u64,
    tally: &mut Tally,
    first: u64,
) -> ReleaseOutcome {
    let taken = take_token(w, bucket, tally, first, |word0, tally| {
        let holder = word0 & TS_MASK;
        if holder != ts {
            return Decision::Done(ReleaseOutcome::NotHolder { holder: (holder != 0).then_some(holder) });
        }
        if word0 != ts {
            return Decision::Take;
        }
        // The waiter or the token left since the last look.
        match w.compare_exchange(bucket, 0, ts, 0, Release, Acquire) {
            Ok(_) => Decision::Done(ReleaseOutcome::Released { next: None }),
            Err(found) => {
                tally.cas_failures += 1;
                Decision::Retry(found)
            }
        }
    });
    if let Err(outcome) = taken {
        return outcome;
    }
    // Under the token with the waiters bit set: word 1 is a waiter.
    let next = w.load(bucket, 1, Relaxed);
    debug_assert_ne!(next, 0, "waiters bit without a waiter");
    if next == 0 {
        w.store(bucket, 0, 0, Release);
        return ReleaseOutcome::Released { next: None };
    }
    // Grant first (the new holder is in words 0 and 1 for a moment), then
    // close the gap, then hand back the token.
    w.store(bucket, 0, next | BUSY, Release);
    let word1 = close_gap(w, bucket, 1);
    w.store(bucket, 0, head_word(next, word1), Release);
    ReleaseOutcome::Released { next: Some(next) }
}

/// Removes waiting `ts` from `bucket` (it gives up: abort, deadlock victim,
/// timeout). The caller must then wake host waiters of the bucket, since a
/// slot became free (`LockTable::cancel_with` does).
pub fn cancel<W: BucketWords + ?Sized>(w: &W, bucket: usize, ts: u64, tally: &mut Tally) -> CancelOutcome {
    debug_assert!(valid_ts(ts), "invalid timestamp {ts:#x}");
    let first = w.load(bucket, 0, Acquire);
    let taken = take_token(w, bucket, tally, first, |word0, _| match word0 & TS_MASK {
        0 => Decision::Done(CancelOutcome::NotQueued),
        holder if holder == ts => Decision::Done(CancelOutcome::Granted),
        // No waiters bit and no token: nobody waits, `ts` included.
        _ if word0 & (WAITERS | BUSY) == 0 => Decision::Done(CancelOutcome::NotQueued),
        _ => Decision::Take,
    });
    let mut word0 = match taken {
        Ok(word0) => word0,
        Err(outcome) => return outcome,
    };
    let mut outcome = CancelOutcome::NotQueued;
    for slot in 1..W::SLOTS {
        let word = w.load(bucket, slot, Relaxed);
        if word == 0 {
            break;
        }
        if word == ts {
            let word1 = close_gap(w, bucket, slot);
            word0 = head_word(word0 & TS_MASK, word1);
            outcome = CancelOutcome::Removed;
            break;
        }
    }
    w.store(bucket, 0, word0, Release);
    outcome
}

/// What [`withdraw`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withdrawal {
    /// `ts` held the lock, or was granted it before its request could be
    /// withdrawn, and released it: the lock passed to `next`, or the bucket
    /// is empty (`None`).
    Released { next: Option<u64> },
    /// `ts` waited; its request was removed.
    Cancelled,
    /// `ts` was not in the bucket.
    Absent,
}

/// Takes `ts` out of `bucket`, whatever its place: releases the lock if it
/// holds it, withdraws its request if it waits, and releases the lock if it
/// was granted while its request was being withdrawn. For a transaction
/// that ends without knowing every bucket it is in (a device PE may have
/// failed between a request and its release); it must not itself run
/// another step on the bucket meanwhile. As after [`release`] and
/// [`cancel`], the caller must wake host waiters of the bucket if the lock
/// passed on or a request was removed (`LockTable::release_all` does).
pub fn withdraw<W: BucketWords + ?Sized>(w: &W, bucket: usize, ts: u64, tally: &mut Tally) -> Withdrawal {
    debug_assert!(valid_ts(ts), "invalid timestamp {ts:#x}");
    // Exact for `ts`, which runs no other step here (see `poll`).
    match poll(w, bucket, ts) {
        Poll::Absent => Withdrawal::Absent,
        Poll::Head => release_held(w, bucket, ts, tally),
        Poll::Waiting { .. } => match cancel(w, bucket, ts, tally) {
            CancelOutcome::Removed => Withdrawal::Cancelled,
            CancelOutcome::Granted => release_held(w, bucket, ts, tally),
            CancelOutcome::NotQueued => {
                debug_assert!(false, "waiter {ts} left the queue of bucket {bucket} by itself");
                Withdrawal::Absent
            }
        },
    }
}

/// [`release`] by a `ts` that holds the lock: only `ts` can release it.
fn release_held<W: BucketWords + ?Sized>(w: &W, bucket: usize, ts: u64, tally: &mut Tally) -> Withdrawal {
    match release(w, bucket, ts, tally) {
        ReleaseOutcome::Released { next } => Withdrawal::Released { next },
        ReleaseOutcome::NotHolder { holder } => {
            debug_assert!(false, "{ts} held bucket {bucket}, yet {holder:?} released it");
            Withdrawal::Absent
        }
    }
}

/// Where `ts` stands in `bucket`, without taking the token.
///
/// The scan runs from the last slot down to word 0. Waiters only ever move
/// down, each move copying a word down before overwriting it (Release), and
/// the scan reads with Acquire; so a scan moving against the waiters cannot
/// step over a present one: `Absent` is exact for a transaction whose own
/// request is not running concurrently. (A scan upwards could miss a waiter
/// moving down past it.)
pub fn poll<W: BucketWords + ?Sized>(w: &W, bucket: usize, ts: u64) -> Poll {
    for slot in (1..W::SLOTS).rev() {
        if w.load(bucket, slot, Acquire) == ts {
            return Poll::Waiting { position: slot };
        }
    }
    // Acquire: seeing ts in word 0 orders the previous holder's critical
    // section before ours.
    if w.load(bucket, 0, Acquire) & TS_MASK == ts { Poll::Head } else { Poll::Absent }
}

/// Whether `ts` holds the lock of `bucket`: one load of word 0.
pub fn is_head<W: BucketWords + ?Sized>(w: &W, bucket: usize, ts: u64) -> bool {
    w.load(bucket, 0, Acquire) & TS_MASK == ts
}

/// Whether all slots of `bucket` are taken (its last word is nonzero).
pub fn is_full<W: BucketWords + ?Sized>(w: &W, bucket: usize) -> bool {
    w.load(bucket, W::SLOTS - 1, Acquire) != 0
}

/// The holder of `bucket`, if any (for wait-for graphs and error messages).
pub fn holder<W: BucketWords + ?Sized>(w: &W, bucket: usize) -> Option<u64> {
    let word0 = w.load(bucket, 0, Acquire) & TS_MASK;
    (word0 != 0).then_some(word0)
}
