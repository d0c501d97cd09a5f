//! Model checks of the slot-queue protocol with loom.
//!
//! The protocol is generic over `BucketWords`; here its words are loom's
//! atomics, so loom explores the interleavings and the weak-memory outcomes
//! of the real protocol code, with no `--cfg loom` (the rest of the crate is
//! built as usual and never touches loom). Each model is one bucket of two or
//! three slots, which exercises the same paths as eight (full queue, shift
//! from the middle, grant from word 1) with far fewer states.
//!
//! Checked in every execution: mutual exclusion (a loom `UnsafeCell` that the
//! holder increments; loom reports unordered accesses), presence (a waiter
//! never polls `Absent` before it is granted), FIFO where the scenario fixes
//! an order, the final words, and no lost wake-up (loom reports a deadlock if
//! every thread sleeps).
//!
//! Waiters sleep the way host threads do (`table.rs`): count themselves,
//! SeqCst fence, re-check under a lock, sleep on a condition variable; every
//! release and cancel fences, looks at the count and wakes. Spinning waiters
//! would let loom schedule two of them against each other without end; one
//! scenario polls as a device does, with a single poller.

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, AtomicUsize, fence};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use ndpdb_locktable::protocol::{
    self, Attempt, BucketWords, CancelOutcome, Poll, ReleaseOutcome, Tally, WAITERS, Withdrawal,
};
use std::sync::atomic::Ordering;

/// One bucket of `N` words over loom's atomics.
struct LoomWords<const N: usize> {
    words: [AtomicU64; N],
}

impl<const N: usize> BucketWords for LoomWords<N> {
    const SLOTS: usize = N;

    fn load(&self, bucket: usize, slot: usize, order: Ordering) -> u64 {
        assert_eq!(bucket, 0);
        self.words[slot].load(order)
    }

    fn store(&self, bucket: usize, slot: usize, value: u64, order: Ordering) {
        assert_eq!(bucket, 0);
        self.words[slot].store(value, order)
    }

    fn compare_exchange(
        &self,
        bucket: usize,
        slot: usize,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        assert_eq!(bucket, 0);
        self.words[slot].compare_exchange(current, new, success, failure)
    }

    fn backoff(&self, _turn: u32) {
        loom::thread::yield_now();
    }
}

/// The bucket, the data its lock protects, and the sleeping waiters.
struct Shared<const N: usize> {
    bucket: LoomWords<N>,
    data: UnsafeCell<u64>,
    parked: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
}

impl<const N: usize> Shared<N> {
    fn new(initial: [u64; N]) -> Arc<Self> {
        Arc::new(Self {
            bucket: LoomWords { words: initial.map(AtomicU64::new) },
            data: UnsafeCell::new(0),
            parked: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        })
    }

    /// Sleeps while `waiting()` holds, as `LockTable::park_while` does.
    fn sleep_while(&self, waiting: impl Fn() -> bool) {
        self.parked.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut guard = self.sleep.lock().unwrap();
        while waiting() {
            guard = self.wake.wait(guard).unwrap();
        }
        drop(guard);
        self.parked.fetch_sub(1, Ordering::Relaxed);
    }

    /// Wakes the sleepers after a release or cancel, as `LockTable::notify`.
    fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.parked.load(Ordering::Relaxed) != 0 {
            let _guard = self.sleep.lock().unwrap();
            self.wake.notify_all();
        }
    }

    fn cancel(&self, ts: u64) -> CancelOutcome {
        let outcome = protocol::cancel(&self.bucket, 0, ts, &mut Tally::default());
        self.notify();
        outcome
    }

    /// The holder's work: a plain read-modify-write.
    fn critical_section(&self) {
        // SAFETY: loom checks that no other access is concurrent with this one.
        self.data.with_mut(|p| unsafe { *p += 1 });
    }

    fn data(&self) -> u64 {
        // SAFETY: as above.
        self.data.with(|p| unsafe { *p })
    }

    fn words(&self) -> [u64; N] {
        std::array::from_fn(|i| self.bucket.words[i].load(Ordering::SeqCst))
    }

    /// Where `ts` stands; it must never vanish while it waits.
    fn waiting(&self, ts: u64) -> bool {
        match protocol::poll(&self.bucket, 0, ts) {
            Poll::Head => false,
            Poll::Waiting { .. } => true,
            Poll::Absent => panic!("waiter {ts} vanished from the queue"),
        }
    }

    /// Sleeps until `ts` holds the lock.
    fn wait_head(&self, ts: u64) {
        self.sleep_while(|| self.waiting(ts));
    }

    /// Polls until `ts` holds the lock, as a device PE does.
    fn poll_head(&self, ts: u64) {
        while self.waiting(ts) {
            thread::yield_now();
        }
    }

    /// A host-style lock: request, sleep until granted, retry after a full
    /// queue has a free slot.
    fn lock(&self, ts: u64) {
        loop {
            match protocol::try_acquire(&self.bucket, 0, ts, &mut Tally::default()) {
                Attempt::Acquired => return,
                Attempt::Queued { .. } => return self.wait_head(ts),
                Attempt::Full => self.sleep_while(|| protocol::is_full(&self.bucket, 0)),
                Attempt::AlreadyHeld => panic!("{ts} holds no lock yet"),
            }
        }
    }

    /// Releases; wakes sleepers only on a hand-over, as `release_with` does
    /// (a release without waiters has nobody to wake: loom checks that too).
    fn unlock(&self, ts: u64) -> Option<u64> {
        match protocol::release(&self.bucket, 0, ts, &mut Tally::default()) {
            ReleaseOutcome::Released { next } => {
                if next.is_some() {
                    self.notify();
                }
                next
            }
            ReleaseOutcome::NotHolder { holder } => panic!("{ts} released a lock held by {holder:?}"),
        }
    }
}

/// Runs `f` under loom with at most `preemptions` preemptions per execution
/// (`None`: exhaustive). Each scenario has the largest bound that finishes
/// in seconds in release mode (exhaustive where that is about a second);
/// `--nocapture` shows how many executions were explored.
fn model(preemptions: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = executions.clone();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemptions;
    builder.max_branches = 20_000;
    builder.check(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        f()
    });
    eprintln!("loom: {} executions", executions.load(Ordering::Relaxed));
}

/// Two device PEs request an empty bucket and poll: the CAS fast path
/// against an append, and a release with a waiter.
#[test]
fn two_polling_requesters_exclude_each_other() {
    model(None, || {
        let s = Shared::<2>::new([0; 2]);
        let threads: Vec<_> = [1, 2]
            .map(|ts| {
                let s = s.clone();
                thread::spawn(move || {
                    match protocol::try_acquire(&s.bucket, 0, ts, &mut Tally::default()) {
                        Attempt::Acquired => {}
                        Attempt::Queued { position } => {
                            assert_eq!(position, 1);
                            s.poll_head(ts);
                        }
                        other => panic!("{other:?} from a queue of at most one"),
                    }
                    s.critical_section();
                    s.unlock(ts);
                })
            })
            .into();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(s.data(), 2);
        assert_eq!(s.words(), [0; 2]);
    });
}

/// The holder releases while a requester appends into the tail: the append
/// lands behind the holder and is granted, or finds the bucket empty.
#[test]
fn release_races_with_append() {
    model(None, || {
        let s = Shared::<2>::new([1, 0]);
        let holder = {
            let s = s.clone();
            thread::spawn(move || {
                s.critical_section();
                s.unlock(1);
            })
        };
        s.lock(2);
        s.critical_section();
        assert_eq!(s.unlock(2), None);
        holder.join().unwrap();
        assert_eq!(s.data(), 2);
        assert_eq!(s.words(), [0; 2]);
    });
}

/// Three requesters on two slots: one may find the queue full and retry.
#[test]
fn full_queue_requester_waits_for_a_slot() {
    model(Some(1), || {
        let s = Shared::<2>::new([0; 2]);
        let threads: Vec<_> = [1, 2, 3]
            .map(|ts| {
                let s = s.clone();
                thread::spawn(move || {
                    s.lock(ts);
                    s.critical_section();
                    s.unlock(ts);
                })
            })
            .into();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(s.data(), 3);
        assert_eq!(s.words(), [0; 2]);
    });
}

/// FIFO: one agent queues T2 then T3 while T1 releases; T3 is never granted
/// before T2.
#[test]
fn handover_is_fifo() {
    model(Some(4), || {
        let s = Shared::<3>::new([1, 0, 0]);
        let holder = {
            let s = s.clone();
            thread::spawn(move || {
                s.critical_section();
                s.unlock(1);
            })
        };
        for ts in [2, 3] {
            let attempt = protocol::try_acquire(&s.bucket, 0, ts, &mut Tally::default());
            assert!(matches!(attempt, Attempt::Acquired | Attempt::Queued { .. }), "{attempt:?}");
        }
        s.sleep_while(|| {
            assert!(!protocol::is_head(&s.bucket, 0, 3), "T3 granted before T2");
            s.waiting(2)
        });
        s.critical_section();
        assert_eq!(s.unlock(2), Some(3));
        s.wait_head(3);
        s.critical_section();
        assert_eq!(s.unlock(3), None);
        holder.join().unwrap();
        assert_eq!(s.data(), 3);
        assert_eq!(s.words(), [0; 3]);
    });
}

/// A waiter in the middle gives up while the holder releases and the waiter
/// behind it polls: the cancel either removes it or finds it granted.
#[test]
fn cancel_races_with_release() {
    model(Some(3), || {
        let s = Shared::<3>::new([1 | WAITERS, 2, 3]);
        let canceller = {
            let s = s.clone();
            thread::spawn(move || match s.cancel(2) {
                CancelOutcome::Removed => 0,
                CancelOutcome::Granted => {
                    s.critical_section();
                    assert_eq!(s.unlock(2), Some(3));
                    1
                }
                CancelOutcome::NotQueued => panic!("T2 was queued"),
            })
        };
        let holder = {
            let s = s.clone();
            thread::spawn(move || {
                s.critical_section();
                s.unlock(1);
            })
        };
        s.wait_head(3);
        s.critical_section();
        assert_eq!(s.unlock(3), None);
        holder.join().unwrap();
        let granted = canceller.join().unwrap();
        assert_eq!(s.data(), 2 + granted);
        assert_eq!(s.words(), [0; 3]);
    });
}

/// A waiter gives up while a new requester appends: the queue ends compact,
/// holder first, the new requester right behind it.
#[test]
fn cancel_races_with_append() {
    model(None, || {
        let s = Shared::<3>::new([1 | WAITERS, 2, 0]);
        let canceller = {
            let s = s.clone();
            thread::spawn(move || {
                assert_eq!(s.cancel(2), CancelOutcome::Removed);
            })
        };
        let attempt = protocol::try_acquire(&s.bucket, 0, 3, &mut Tally::default());
        assert!(matches!(attempt, Attempt::Queued { position: 1 | 2 }), "{attempt:?}");
        canceller.join().unwrap();
        assert_eq!(s.words(), [1 | WAITERS, 3, 0]);
        assert_eq!(s.unlock(1), Some(3));
        assert_eq!(s.words(), [3, 0, 0]);
    });
}

/// A full queue frees a slot by cancellation; the requester that found it
/// full gets in and is granted after the holder.
#[test]
fn full_queue_slot_freed_by_cancel() {
    model(Some(6), || {
        let s = Shared::<2>::new([1 | WAITERS, 2]);
        let requester = {
            let s = s.clone();
            thread::spawn(move || {
                s.lock(3);
                s.critical_section();
                s.unlock(3);
            })
        };
        assert_eq!(s.cancel(2), CancelOutcome::Removed);
        s.critical_section();
        s.unlock(1);
        requester.join().unwrap();
        assert_eq!(s.data(), 2);
        assert_eq!(s.words(), [0; 2]);
    });
}

/// A transaction ends and sweeps for a request a failed PE left queued
/// (`LockTable::release_all`) while the holder releases and the waiter
/// behind it sleeps: the withdrawal removes the request, or finds it
/// granted and releases the lock, which then passes on; nobody is stranded.
#[test]
fn withdraw_races_with_release() {
    model(Some(3), || {
        let s = Shared::<3>::new([1 | WAITERS, 2, 3]);
        let sweeper = {
            let s = s.clone();
            thread::spawn(move || match protocol::withdraw(&s.bucket, 0, 2, &mut Tally::default()) {
                Withdrawal::Cancelled => s.notify(),
                Withdrawal::Released { next } => {
                    assert_eq!(next, Some(3));
                    s.notify();
                }
                Withdrawal::Absent => panic!("T2 was queued"),
            })
        };
        let holder = {
            let s = s.clone();
            thread::spawn(move || {
                s.critical_section();
                s.unlock(1);
            })
        };
        s.wait_head(3);
        s.critical_section();
        assert_eq!(s.unlock(3), None);
        holder.join().unwrap();
        sweeper.join().unwrap();
        assert_eq!(s.data(), 2);
        assert_eq!(s.words(), [0; 3]);
        assert_eq!(protocol::withdraw(&s.bucket, 0, 2, &mut Tally::default()), Withdrawal::Absent);
    });
}
