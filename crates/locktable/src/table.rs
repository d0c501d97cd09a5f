//! The shared lock table: the region of buckets, the host's blocking lock
//! and unlock, the wake-ups, and the counters.
//!
//! Host waiting. A queued host transaction parks (parking_lot_core) keyed by
//! its bucket's address, and every step that can grant a lock or free a slot
//! ends with [`LockTable::notify`], whoever made it: a host thread, or a
//! device PE through its own [`BucketWords`]. Those steps are a release that
//! passes the lock on and a cancellation. A release that finds no waiter
//! (word 0 without the waiters bit) wakes nobody, because nobody can be
//! asleep on the bucket: a sleeping host thread is either in the queue or
//! behind a full one, and both set the bit. No wake-up is lost:
//!
//! ```text
//!  waiter                                   releaser
//!  parked[b] += 1; fence(SeqCst)            bucket words change (release/cancel)
//!  park(key b, validate: still waiting?)    fence(SeqCst); parked[b] != 0 ?
//!                                             ─► unpark_all(key b)
//! ```
//!
//! The two fences order the waiter's count before its re-check and the
//! releaser's bucket change before its look at the count, so either the
//! releaser sees the count and unparks, or the waiter's re-check (run under
//! the parking lot's queue lock, which `unpark_all` also takes) sees the
//! change and does not sleep. A woken waiter looks at the bucket again and
//! may park again. The count (striped, false sharing only costs a needless
//! `unpark_all`) spares uncontended releases the parking lot's lock.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
use std::time::Instant;

use parking_lot_core::{DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN, ParkResult};

use crate::bucket::{Bucket, DEFAULT_TABLE_BYTES, HostWords, LockKey, bucket_count, bucket_index};
use crate::error::{LockError, check_ts};
use crate::protocol::{
    self, Attempt, BucketWords, CancelOutcome, Poll, ReleaseOutcome, SLOTS, TS_MASK, Tally, Withdrawal,
};
use crate::{Grant, TupleLockTable};

/// Polls of the bucket before a queued host thread parks: a hand-over within
/// about a microsecond costs no sleep and wake-up.
const SPINS_BEFORE_PARK: u32 = 100;
/// Stripes of the parked-thread counts (power of two).
const PARK_STRIPES: usize = 1024;
/// Stripes of the counters (power of two), chosen by thread: agents that
/// lock disjoint keys then never write the same counter line (a stripe per
/// bucket made a host thread and a PE share lines, and doubled the host's
/// uncontended latency).
const COUNTER_STRIPES: usize = 64;

std::thread_local! {
    /// This thread's counter stripe, `usize::MAX` until its first count
    /// (a const-initialised cell: reading it is one thread-local load).
    static STRIPE: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// The calling thread's counter stripe: threads take stripes in turn.
#[inline]
fn thread_stripe() -> usize {
    STRIPE.with(|s| {
        let stripe = s.get();
        if stripe != usize::MAX {
            return stripe;
        }
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let stripe = NEXT.fetch_add(1, Ordering::Relaxed) % COUNTER_STRIPES;
        s.set(stripe);
        stripe
    })
}

/// What [`LockTable::release_all`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReleasedAll {
    /// Buckets whose lock the transaction held and released.
    pub released: u64,
    /// Buckets in whose queue it waited, and no longer does.
    pub cancelled: u64,
}

/// How the table is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockTableConfig {
    /// Bytes of the bucket region: a power of two from 64 B to 1 GiB.
    pub bytes: usize,
}

impl Default for LockTableConfig {
    fn default() -> Self {
        Self { bytes: DEFAULT_TABLE_BYTES }
    }
}

/// Totals of the table's events since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockCounters {
    /// Locks taken at once, from an empty bucket.
    pub acquired: u64,
    /// Locks passed to a waiter on release. Acquisitions = acquired + handovers.
    pub handovers: u64,
    /// Requests granted because the requester already was the holder.
    pub already_held: u64,
    /// Requests that joined a queue.
    pub queued: u64,
    /// Requests that found a full queue and had to wait for a slot.
    pub full: u64,
    /// Compare-and-swaps on word 0 that lost a race and were retried.
    pub cas_failures: u64,
    /// Turns spent waiting for another agent's structure token.
    pub busy_waits: u64,
    /// Times a host thread went to sleep.
    pub parks: u64,
    /// Waiters removed by cancellation (their own timeout, or another's call).
    pub cancels: u64,
    /// Host requests that gave up at their deadline.
    pub timeouts: u64,
}

#[repr(C, align(64))]
#[derive(Default)]
struct CounterStripe {
    acquired: AtomicU64,
    handovers: AtomicU64,
    already_held: AtomicU64,
    queued: AtomicU64,
    full: AtomicU64,
    cas_failures: AtomicU64,
    busy_waits: AtomicU64,
    parks: AtomicU64,
    cancels: AtomicU64,
    timeouts: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    if by != 0 {
        counter.fetch_add(by, Ordering::Relaxed);
    }
}

/// The cache-coherent shared lock table (ccSLT).
///
/// Share it as `Arc<LockTable>`: the host locks through [`LockTable::lock`]
/// and [`LockTable::unlock`]; a device PE runs the non-blocking steps
/// (`*_with`) over its own [`BucketWords`] on [`LockTable::buckets`].
pub struct LockTable {
    buckets: Box<[Bucket]>,
    mask: u64,
    parked: Box<[AtomicU32]>,
    counters: Box<[CounterStripe]>,
}

impl std::fmt::Debug for LockTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockTable").field("buckets", &self.buckets.len()).finish_non_exhaustive()
    }
}

impl LockTable {
    pub fn new(config: LockTableConfig) -> Result<Self, LockError> {
        let count = bucket_count(config.bytes)?;
        Ok(Self {
            buckets: (0..count).map(|_| Bucket::default()).collect(),
            mask: count as u64 - 1,
            parked: (0..PARK_STRIPES).map(|_| AtomicU32::new(0)).collect(),
            counters: (0..COUNTER_STRIPES).map(|_| CounterStripe::default()).collect(),
        })
    }

    /// A table of `bytes` (see [`LockTableConfig::bytes`]).
    pub fn with_bytes(bytes: usize) -> Result<Self, LockError> {
        Self::new(LockTableConfig { bytes })
    }

    /// The shared region: what a device maps and reaches through its own
    /// [`BucketWords`].
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    #[inline]
    pub fn bucket_of(&self, key: LockKey) -> usize {
        bucket_index(key, self.mask)
    }

    /// The host's access to the region.
    #[inline]
    pub fn host_words(&self) -> HostWords<'_> {
        HostWords::new(&self.buckets)
    }

    /// The holder of `key`'s bucket: the transaction a requester of `key`
    /// waits for (for wait-for graphs; a collision can name a holder of
    /// another key).
    pub fn holder(&self, key: LockKey) -> Option<u64> {
        protocol::holder(&self.host_words(), self.bucket_of(key))
    }

    /// Whom a request of `ts` for `key`, queued at `position` (as
    /// [`LockTable::try_acquire`] said), waits for: the holder and the
    /// waiters in the slots before `position`, `ts` left out (its position
    /// only decreases, so it may be among them by now). For a deadlock
    /// detector's waits-for graph; a collision can name a transaction that
    /// holds or waits for another key. Read slot by slot: a hint while the
    /// bucket changes.
    pub fn ahead_of(&self, key: LockKey, ts: u64, position: usize) -> Vec<u64> {
        let words = self.host_words();
        let bucket = self.bucket_of(key);
        (0..position.min(SLOTS))
            .map(|slot| words.load(bucket, slot, Ordering::Acquire) & TS_MASK)
            .filter(|&t| t != 0 && t != ts)
            .collect()
    }

    /// Buckets whose lock is held (tests and diagnostics; reads every
    /// bucket).
    pub fn held_buckets(&self) -> usize {
        let words = self.host_words();
        (0..self.buckets.len()).filter(|&b| protocol::holder(&words, b).is_some()).count()
    }

    /// The words of `key`'s bucket (tests and debugging).
    pub fn bucket_words(&self, key: LockKey) -> [u64; SLOTS] {
        self.buckets[self.bucket_of(key)].words()
    }

    pub fn counters(&self) -> LockCounters {
        let mut total = LockCounters::default();
        for s in self.counters.iter() {
            let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
            total.acquired += get(&s.acquired);
            total.handovers += get(&s.handovers);
            total.already_held += get(&s.already_held);
            total.queued += get(&s.queued);
            total.full += get(&s.full);
            total.cas_failures += get(&s.cas_failures);
            total.busy_waits += get(&s.busy_waits);
            total.parks += get(&s.parks);
            total.cancels += get(&s.cancels);
            total.timeouts += get(&s.timeouts);
        }
        total
    }

    #[inline]
    fn stripe(&self, _bucket: usize) -> &CounterStripe {
        &self.counters[thread_stripe()]
    }

    #[inline]
    fn count_tally(&self, bucket: usize, tally: &Tally) {
        if *tally == Tally::default() {
            return;
        }
        let s = self.stripe(bucket);
        bump(&s.cas_failures, tally.cas_failures);
        bump(&s.busy_waits, tally.busy_waits);
    }

    fn check_words<W: BucketWords + ?Sized>(&self) {
        debug_assert_eq!(W::SLOTS, SLOTS, "a table's bucket has {SLOTS} slots");
    }

    // ---- Non-blocking steps, for any agent (host words or a device's). ----

    /// Requests `key` for `ts` without waiting (see [`protocol::try_acquire`]).
    #[inline]
    pub fn try_acquire_with<W: BucketWords + ?Sized>(
        &self,
        words: &W,
        key: LockKey,
        ts: u64,
    ) -> Result<Attempt, LockError> {
        self.check_words::<W>();
        check_ts(ts)?;
        let bucket = self.bucket_of(key);
        let mut tally = Tally::default();
        let attempt = protocol::try_acquire(words, bucket, ts, &mut tally);
        let s = self.stripe(bucket);
        match attempt {
            Attempt::Acquired => bump(&s.acquired, 1),
            Attempt::AlreadyHeld => bump(&s.already_held, 1),
            Attempt::Queued { .. } => bump(&s.queued, 1),
            Attempt::Full => bump(&s.full, 1),
        }
        self.count_tally(bucket, &tally);
        Ok(attempt)
    }

    /// Where `ts` stands in `key`'s bucket (see [`protocol::poll`]).
    pub fn poll_with<W: BucketWords + ?Sized>(&self, words: &W, key: LockKey, ts: u64) -> Result<Poll, LockError> {
        self.check_words::<W>();
        check_ts(ts)?;
        Ok(protocol::poll(words, self.bucket_of(key), ts))
    }

    /// Whether `key`'s bucket has no free slot (a device polls this after
    /// [`Attempt::Full`]).
    pub fn is_full_with<W: BucketWords + ?Sized>(&self, words: &W, key: LockKey) -> bool {
        self.check_words::<W>();
        protocol::is_full(words, self.bucket_of(key))
    }

    /// Releases `key`'s bucket held by `ts` and, if the lock passed to a
    /// waiter, wakes the bucket's host waiters, whoever releases. Returns the
    /// new holder.
    #[inline]
    pub fn release_with<W: BucketWords + ?Sized>(
        &self,
        words: &W,
        key: LockKey,
        ts: u64,
    ) -> Result<Option<u64>, LockError> {
        self.check_words::<W>();
        check_ts(ts)?;
        let bucket = self.bucket_of(key);
        let mut tally = Tally::default();
        let outcome = protocol::release(words, bucket, ts, &mut tally);
        self.count_tally(bucket, &tally);
        match outcome {
            ReleaseOutcome::Released { next } => {
                if next.is_some() {
                    self.notify(bucket);
                    bump(&self.stripe(bucket).handovers, 1);
                }
                Ok(next)
            }
            ReleaseOutcome::NotHolder { holder } => Err(LockError::NotHolder { key, ts, holder }),
        }
    }

    /// Removes waiting `ts` from `key`'s bucket and wakes the bucket's host
    /// waiters (a slot became free, and a host thread waiting as `ts` learns
    /// it was cancelled).
    pub fn cancel_with<W: BucketWords + ?Sized>(
        &self,
        words: &W,
        key: LockKey,
        ts: u64,
    ) -> Result<CancelOutcome, LockError> {
        self.check_words::<W>();
        check_ts(ts)?;
        let bucket = self.bucket_of(key);
        let mut tally = Tally::default();
        let outcome = protocol::cancel(words, bucket, ts, &mut tally);
        self.count_tally(bucket, &tally);
        if outcome == CancelOutcome::Removed {
            bump(&self.stripe(bucket).cancels, 1);
            self.notify(bucket);
        }
        Ok(outcome)
    }

    /// Takes `ts` out of every bucket (see [`protocol::withdraw`]): releases
    /// each lock it holds, withdraws each request it has queued, and wakes
    /// the host waiters of every bucket that changed hands or freed a slot.
    /// For a transaction that ends without knowing every key it locked (a
    /// device PE may have failed half-way); no agent may run steps for `ts`
    /// meanwhile. Reads every bucket.
    pub fn release_all(&self, ts: u64) -> Result<ReleasedAll, LockError> {
        check_ts(ts)?;
        let words = self.host_words();
        let mut done = ReleasedAll::default();
        for bucket in 0..self.buckets.len() {
            let mut tally = Tally::default();
            let withdrawal = protocol::withdraw(&words, bucket, ts, &mut tally);
            self.count_tally(bucket, &tally);
            match withdrawal {
                Withdrawal::Absent => {}
                Withdrawal::Released { next } => {
                    done.released += 1;
                    if next.is_some() {
                        self.notify(bucket);
                        bump(&self.stripe(bucket).handovers, 1);
                    }
                }
                Withdrawal::Cancelled => {
                    done.cancelled += 1;
                    bump(&self.stripe(bucket).cancels, 1);
                    self.notify(bucket);
                }
            }
        }
        Ok(done)
    }

    /// Wakes the host threads parked on `bucket`. Every hand-over and
    /// cancellation ends with it (module docs); an agent that changes the
    /// bucket's words by other means must call it afterwards.
    pub fn notify(&self, bucket: usize) {
        // Orders the caller's bucket writes before the look at the count
        // (module docs).
        fence(Ordering::SeqCst);
        if self.parked[bucket % PARK_STRIPES].load(Ordering::Relaxed) != 0 {
            // SAFETY: the key is the address of a bucket this table owns;
            // nothing else parks on it.
            unsafe { parking_lot_core::unpark_all(self.park_key(bucket), DEFAULT_UNPARK_TOKEN) };
        }
    }

    fn park_key(&self, bucket: usize) -> usize {
        std::ptr::from_ref(&self.buckets[bucket]).addr()
    }

    /// Parks the calling thread while `waiting()` holds, until a notify of
    /// `bucket` or `deadline`. Returns whether the deadline passed.
    fn park_while(&self, bucket: usize, deadline: Option<Instant>, waiting: impl FnOnce() -> bool) -> bool {
        let parked = &self.parked[bucket % PARK_STRIPES];
        parked.fetch_add(1, Ordering::Relaxed);
        // Orders the count before the re-check in `waiting` (module docs).
        fence(Ordering::SeqCst);
        bump(&self.stripe(bucket).parks, 1);
        // SAFETY: the key is the address of a bucket this table owns; the
        // callbacks do not call into the parking lot and do not panic.
        let result = unsafe {
            parking_lot_core::park(self.park_key(bucket), waiting, || {}, |_, _| {}, DEFAULT_PARK_TOKEN, deadline)
        };
        parked.fetch_sub(1, Ordering::Relaxed);
        result == ParkResult::TimedOut
    }

    // ---- The host's steps and blocking lock. ----

    #[inline]
    pub fn try_acquire(&self, key: LockKey, ts: u64) -> Result<Attempt, LockError> {
        self.try_acquire_with(&self.host_words(), key, ts)
    }

    pub fn poll(&self, key: LockKey, ts: u64) -> Result<Poll, LockError> {
        self.poll_with(&self.host_words(), key, ts)
    }

    #[inline]
    pub fn release(&self, key: LockKey, ts: u64) -> Result<Option<u64>, LockError> {
        self.release_with(&self.host_words(), key, ts)
    }

    pub fn cancel(&self, key: LockKey, ts: u64) -> Result<CancelOutcome, LockError> {
        self.cancel_with(&self.host_words(), key, ts)
    }

    /// Locks `key` for `ts`, sleeping while it waits, until `deadline`.
    ///
    /// `Grant::AlreadyHeld` means `ts` already holds the bucket (another key
    /// of its own collides with `key`): do not unlock for this grant. On
    /// timeout the request is withdrawn (`LockError::Timeout`); if another
    /// thread cancels it, `LockError::Cancelled`. A full queue is waited out
    /// (not in FIFO order among the requesters that found it full).
    #[inline]
    pub fn lock(&self, key: LockKey, ts: u64, deadline: Option<Instant>) -> Result<Grant, LockError> {
        loop {
            match self.try_acquire(key, ts)? {
                Attempt::Acquired => return Ok(Grant::Acquired),
                Attempt::AlreadyHeld => return Ok(Grant::AlreadyHeld),
                Attempt::Queued { .. } => return self.wait_for_head(key, ts, deadline),
                Attempt::Full => self.wait_for_slot(key, ts, deadline)?,
            }
        }
    }

    /// Releases `key` held by `ts` (see [`LockTable::release_with`]).
    #[inline]
    pub fn unlock(&self, key: LockKey, ts: u64) -> Result<(), LockError> {
        self.release(key, ts).map(|_| ())
    }

    /// Sleeps until queued `ts` holds `key` (after [`LockTable::try_acquire`]
    /// said `Queued`), or until `deadline` (then withdraws, as `lock` does).
    /// Callers that check for deadlocks between queueing and sleeping use
    /// this instead of `lock`.
    pub fn wait_for_head(&self, key: LockKey, ts: u64, deadline: Option<Instant>) -> Result<Grant, LockError> {
        let words = self.host_words();
        let bucket = self.bucket_of(key);
        let mut spins = 0;
        loop {
            match protocol::poll(&words, bucket, ts) {
                Poll::Head => return Ok(Grant::Acquired),
                Poll::Absent => return Err(LockError::Cancelled { key, ts }),
                Poll::Waiting { .. } => {}
            }
            if spins < SPINS_BEFORE_PARK {
                spins += 1;
                std::hint::spin_loop();
                continue;
            }
            let waiting = || matches!(protocol::poll(&words, bucket, ts), Poll::Waiting { .. });
            if self.park_while(bucket, deadline, waiting) {
                return self.give_up(key, ts);
            }
        }
    }

    /// The deadline passed while queued: withdraw, unless granted meanwhile.
    fn give_up(&self, key: LockKey, ts: u64) -> Result<Grant, LockError> {
        bump(&self.stripe(self.bucket_of(key)).timeouts, 1);
        let holder = self.holder(key);
        match self.cancel(key, ts)? {
            CancelOutcome::Granted => Ok(Grant::Acquired),
            CancelOutcome::Removed => Err(LockError::Timeout { key, ts, holder }),
            CancelOutcome::NotQueued => Err(LockError::Cancelled { key, ts }),
        }
    }

    /// Sleeps until `key`'s bucket has a free slot (after `Full`), or until `deadline`.
    pub fn wait_for_slot(&self, key: LockKey, ts: u64, deadline: Option<Instant>) -> Result<(), LockError> {
        let words = self.host_words();
        let bucket = self.bucket_of(key);
        if self.park_while(bucket, deadline, || protocol::is_full(&words, bucket)) {
            bump(&self.stripe(bucket).timeouts, 1);
            return Err(LockError::Timeout { key, ts, holder: self.holder(key) });
        }
        Ok(())
    }
}

impl TupleLockTable for LockTable {
    fn name(&self) -> &'static str {
        "ccslt"
    }

    fn lock(&self, key: LockKey, ts: u64, deadline: Option<Instant>) -> Result<Grant, LockError> {
        LockTable::lock(self, key, ts, deadline)
    }

    fn unlock(&self, key: LockKey, ts: u64) -> Result<(), LockError> {
        LockTable::unlock(self, key, ts)
    }

    fn cancel(&self, key: LockKey, ts: u64) -> Result<CancelOutcome, LockError> {
        LockTable::cancel(self, key, ts)
    }
}
