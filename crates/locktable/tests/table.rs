//! The shared lock table's behaviour, one scenario per test: sizing, hashing,
//! acquire and release, FIFO hand-over, full queues, cancellation,
//! collisions, timeouts, wake-ups by a release that did not come from a
//! host lock call, and what a transaction's end uses: the sweep of all its
//! locks and the list of whom a request waits for.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use ndpdb_locktable::bucket::{self, bucket_index};
use ndpdb_locktable::protocol::WAITERS;
use ndpdb_locktable::{
    Attempt, BUCKET_BYTES, Bucket, CancelOutcome, Grant, LockError, LockKey, LockTable, LockTableConfig, Poll,
    ReleasedAll,
};

fn key(vid: u64) -> LockKey {
    LockKey::new(vid, 0)
}

/// A table of one bucket: every key collides.
fn one_bucket() -> LockTable {
    LockTable::with_bytes(64).unwrap()
}

/// Waits (bounded) until `cond` holds; tests use it to order threads.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for: {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn bucket_is_one_cache_line() {
    assert_eq!(size_of::<Bucket>(), 64);
    assert_eq!(align_of::<Bucket>(), 64);
    let table = LockTable::with_bytes(4096).unwrap();
    for b in table.buckets() {
        assert_eq!(std::ptr::from_ref(b).addr() % 64, 0);
    }
}

#[test]
fn sizing_from_bytes() {
    assert_eq!(LockTable::new(LockTableConfig::default()).unwrap().bucket_count(), 65_536);
    assert_eq!(bucket::bucket_count(64).unwrap(), 1);
    assert_eq!(bucket::bucket_count(1 << 20).unwrap(), (1 << 20) / BUCKET_BYTES);
    for (bytes, reason) in [
        (0, "smaller"),
        (32, "smaller"),
        (63, "smaller"),
        (100, "power of two"),
        (192, "power of two"),
        (1 << 31, "1 GiB"),
    ] {
        let err = LockTable::with_bytes(bytes).unwrap_err();
        assert!(matches!(err, LockError::InvalidSize { bytes: b, .. } if b == bytes), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(reason) && message.contains("power of two between 64 B and 1 GiB"), "{message}");
    }
}

#[test]
fn hash_spreads_sequential_vids_and_versions() {
    let mask = 1023;
    // Consecutive VIDs of one version take consecutive buckets: no collisions.
    let buckets: Vec<usize> = (5000..5000 + 1024).map(|vid| bucket_index(key(vid), mask)).collect();
    let mut sorted = buckets.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 1024);
    assert!(buckets.windows(2).all(|w| (w[0] + 1) & mask as usize == w[1]));
    // Versions of one tuple land apart, including versions 2^32 apart.
    let versions: Vec<usize> =
        [0, 1, 2, 3, 1 << 32, 2 << 32].iter().map(|&v| bucket_index(LockKey::new(7, v), mask)).collect();
    let mut distinct = versions.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), versions.len(), "{versions:?}");
    // One bucket: everything maps to it.
    assert_eq!(bucket_index(LockKey::new(u64::MAX, u64::MAX), 0), 0);
}

#[test]
fn timestamps_must_be_nonzero_without_flag_bits() {
    let table = one_bucket();
    for ts in [0, 1 << 62, 1 << 63, u64::MAX] {
        assert_eq!(table.try_acquire(key(1), ts), Err(LockError::InvalidTimestamp { ts }));
        assert!(matches!(table.lock(key(1), ts, None), Err(LockError::InvalidTimestamp { .. })));
    }
    assert_eq!(table.try_acquire(key(1), (1 << 62) - 1), Ok(Attempt::Acquired));
}

#[test]
fn acquire_and_release() {
    let table = LockTable::with_bytes(4096).unwrap();
    assert_eq!(table.lock(key(1), 10, None), Ok(Grant::Acquired));
    assert_eq!(table.holder(key(1)), Some(10));
    assert_eq!(table.bucket_words(key(1)), [10, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(table.poll(key(1), 10), Ok(Poll::Head));
    // Another key, another bucket: independent.
    assert_eq!(table.lock(key(2), 11, None), Ok(Grant::Acquired));
    assert_eq!(table.lock(key(1), 10, None), Ok(Grant::AlreadyHeld));
    table.unlock(key(1), 10).unwrap();
    assert_eq!(table.bucket_words(key(1)), [0; 8]);
    assert_eq!(table.unlock(key(1), 10), Err(LockError::NotHolder { key: key(1), ts: 10, holder: None }));
    assert_eq!(table.unlock(key(2), 10), Err(LockError::NotHolder { key: key(2), ts: 10, holder: Some(11) }));
    table.unlock(key(2), 11).unwrap();
    let c = table.counters();
    assert_eq!((c.acquired, c.already_held, c.handovers), (2, 1, 0));
}

#[test]
fn handover_is_fifo() {
    let table = one_bucket();
    assert_eq!(table.try_acquire(key(1), 1), Ok(Attempt::Acquired));
    for ts in 2..=5 {
        assert_eq!(table.try_acquire(key(1), ts), Ok(Attempt::Queued { position: ts as usize - 1 }));
    }
    // Asking again while queued is idempotent.
    assert_eq!(table.try_acquire(key(1), 3), Ok(Attempt::Queued { position: 2 }));
    assert_eq!(table.bucket_words(key(1)), [1 | WAITERS, 2, 3, 4, 5, 0, 0, 0]);
    for ts in 1..=5 {
        assert_eq!(table.poll(key(1), ts), Ok(Poll::Head));
        let next = (ts < 5).then_some(ts + 1);
        assert_eq!(table.release(key(1), ts), Ok(next));
        if let Some(next) = next {
            assert_eq!(table.poll(key(1), next), Ok(Poll::Head));
        }
    }
    assert_eq!(table.bucket_words(key(1)), [0; 8]);
    assert_eq!(table.counters().handovers, 4);
}

#[test]
fn blocked_host_threads_are_granted_in_arrival_order() {
    let table = Arc::new(one_bucket());
    table.lock(key(0), 1, None).unwrap();
    let order = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for ts in 2..=6u64 {
        let (t, order) = (table.clone(), order.clone());
        threads.push(thread::spawn(move || {
            // Different keys, one bucket: they queue on the same line.
            assert_eq!(t.lock(key(ts), ts, None), Ok(Grant::Acquired));
            order.lock().push(ts);
            t.unlock(key(ts), ts).unwrap();
        }));
        // Let it queue before the next one starts.
        eventually("queued", || matches!(table.poll(key(ts), ts), Ok(Poll::Waiting { .. })));
    }
    table.unlock(key(0), 1).unwrap();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*order.lock(), vec![2, 3, 4, 5, 6]);
}

#[test]
fn ninth_requester_waits_for_a_free_slot() {
    let table = Arc::new(one_bucket());
    for ts in 1..=8 {
        assert!(matches!(table.try_acquire(key(ts), ts), Ok(Attempt::Acquired | Attempt::Queued { .. })));
    }
    assert_eq!(table.try_acquire(key(9), 9), Ok(Attempt::Full));
    assert!(table.is_full_with(&table.host_words(), key(9)));
    let done = Arc::new(AtomicBool::new(false));
    let ninth = {
        let (table, done) = (table.clone(), done.clone());
        thread::spawn(move || {
            let grant = table.lock(key(9), 9, None);
            done.store(true, Ordering::SeqCst);
            grant
        })
    };
    thread::sleep(Duration::from_millis(20));
    assert!(!done.load(Ordering::SeqCst), "the ninth requester got in with a full queue");
    // Releasing the head frees a slot: the ninth joins the tail...
    assert_eq!(table.release(key(1), 1), Ok(Some(2)));
    eventually("ninth queued", || table.poll(key(9), 9) == Ok(Poll::Waiting { position: 7 }));
    // ...and is granted after the seven ahead of it.
    for ts in 2..=8 {
        assert_eq!(table.release(key(ts), ts), Ok(Some(ts + 1)));
    }
    assert_eq!(ninth.join().unwrap(), Ok(Grant::Acquired));
    table.unlock(key(9), 9).unwrap();
    assert_eq!(table.bucket_words(key(9)), [0; 8]);
    assert!(table.counters().full >= 1);
}

#[test]
fn cancel_from_the_middle_of_the_queue() {
    let table = one_bucket();
    for ts in 1..=5 {
        table.try_acquire(key(0), ts).unwrap();
    }
    assert_eq!(table.cancel(key(0), 3), Ok(CancelOutcome::Removed));
    assert_eq!(table.bucket_words(key(0)), [1 | WAITERS, 2, 4, 5, 0, 0, 0, 0]);
    assert_eq!(table.poll(key(0), 3), Ok(Poll::Absent));
    assert_eq!(table.cancel(key(0), 5), Ok(CancelOutcome::Removed));
    assert_eq!(table.cancel(key(0), 5), Ok(CancelOutcome::NotQueued));
    assert_eq!(table.cancel(key(0), 1), Ok(CancelOutcome::Granted));
    assert_eq!(table.bucket_words(key(0)), [1 | WAITERS, 2, 4, 0, 0, 0, 0, 0]);
    assert_eq!(table.release(key(0), 1), Ok(Some(2)));
    assert_eq!(table.release(key(0), 2), Ok(Some(4)));
    assert_eq!(table.release(key(0), 4), Ok(None));
    assert_eq!(table.cancel(key(0), 4), Ok(CancelOutcome::NotQueued));
    assert_eq!(table.counters().cancels, 2);
}

#[test]
fn collisions_serialize_and_reentry_is_already_held() {
    let table = Arc::new(one_bucket());
    // T1 holds key 1; T1 asking for key 2 (same bucket) is granted at once.
    assert_eq!(table.lock(key(1), 1, None), Ok(Grant::Acquired));
    assert_eq!(table.lock(key(2), 1, None), Ok(Grant::AlreadyHeld));
    // T2 wants key 3, unrelated to T1's tuples: it waits behind T1.
    let t2 = {
        let table = table.clone();
        thread::spawn(move || {
            table.lock(key(3), 2, None).unwrap();
            table.unlock(key(3), 2).unwrap();
        })
    };
    eventually("T2 queued", || table.poll(key(3), 2) == Ok(Poll::Waiting { position: 1 }));
    // One unlock releases the bucket; a second (for the AlreadyHeld grant) is
    // the caller's bug and changes nothing.
    table.unlock(key(1), 1).unwrap();
    t2.join().unwrap();
    assert!(matches!(table.unlock(key(2), 1), Err(LockError::NotHolder { .. })));
    assert_eq!(table.bucket_words(key(1)), [0; 8]);
}

#[test]
fn timeout_withdraws_the_request() {
    let table = one_bucket();
    table.lock(key(1), 1, None).unwrap();
    table.try_acquire(key(1), 2).unwrap();
    let deadline = Instant::now() + Duration::from_millis(30);
    let err = table.lock(key(1), 3, Some(deadline)).unwrap_err();
    assert_eq!(err, LockError::Timeout { key: key(1), ts: 3, holder: Some(1) });
    assert!(Instant::now() >= deadline);
    assert_eq!(table.bucket_words(key(1)), [1 | WAITERS, 2, 0, 0, 0, 0, 0, 0]);
    // A deadline in the past on a full queue fails at once.
    for ts in 3..=8 {
        table.try_acquire(key(1), ts).unwrap();
    }
    let past = Instant::now() - Duration::from_millis(1);
    assert!(matches!(table.lock(key(1), 9, Some(past)), Err(LockError::Timeout { ts: 9, .. })));
    assert_eq!(table.counters().timeouts, 2);
}

#[test]
fn cancel_by_another_thread_wakes_the_waiter() {
    let table = Arc::new(one_bucket());
    table.lock(key(1), 1, None).unwrap();
    let waiter = {
        let table = table.clone();
        thread::spawn(move || table.lock(key(1), 2, None))
    };
    eventually("T2 asleep", || table.counters().parks >= 1);
    assert_eq!(table.cancel(key(1), 2), Ok(CancelOutcome::Removed));
    assert_eq!(waiter.join().unwrap(), Err(LockError::Cancelled { key: key(1), ts: 2 }));
    assert_eq!(table.bucket_words(key(1)), [1, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn host_waiter_is_woken_by_a_release_through_other_words() {
    // A device PE releases through its own word access; the host must wake.
    struct DeviceWords<'a>(ndpdb_locktable::HostWords<'a>);
    impl ndpdb_locktable::BucketWords for DeviceWords<'_> {
        fn load(&self, b: usize, s: usize, o: Ordering) -> u64 {
            self.0.load(b, s, o)
        }
        fn store(&self, b: usize, s: usize, v: u64, o: Ordering) {
            self.0.store(b, s, v, o)
        }
        fn compare_exchange(&self, b: usize, s: usize, c: u64, n: u64, ok: Ordering, f: Ordering) -> Result<u64, u64> {
            self.0.compare_exchange(b, s, c, n, ok, f)
        }
    }
    let table = Arc::new(LockTable::with_bytes(1 << 12).unwrap());
    let device = DeviceWords(table.host_words());
    assert_eq!(table.try_acquire_with(&device, key(7), 100), Ok(Attempt::Acquired));
    let host = {
        let table = table.clone();
        thread::spawn(move || table.lock(key(7), 1, None))
    };
    eventually("host asleep", || table.counters().parks >= 1);
    assert_eq!(table.release_with(&device, key(7), 100), Ok(Some(1)));
    assert_eq!(host.join().unwrap(), Ok(Grant::Acquired));
    table.unlock(key(7), 1).unwrap();
}

#[test]
fn ahead_of_names_the_holder_and_earlier_waiters() {
    let table = one_bucket();
    assert_eq!(table.try_acquire(key(0), 1), Ok(Attempt::Acquired));
    assert_eq!(table.try_acquire(key(1), 2), Ok(Attempt::Queued { position: 1 }));
    assert_eq!(table.try_acquire(key(2), 3), Ok(Attempt::Queued { position: 2 }));
    assert_eq!(table.try_acquire(key(3), 4), Ok(Attempt::Queued { position: 3 }));
    assert_eq!(table.ahead_of(key(1), 2, 1), vec![1]);
    assert_eq!(table.ahead_of(key(2), 3, 2), vec![1, 2]);
    // T3 moved up after T1 released: it is left out of its own list, and
    // the waiter now behind it at position 2 is not named.
    assert_eq!(table.release(key(0), 1), Ok(Some(2)));
    assert_eq!(table.ahead_of(key(2), 3, 2), vec![2]);
    // A position past the last slot reads the whole bucket.
    assert_eq!(table.ahead_of(key(0), 9, 100), vec![2, 3, 4]);
    assert_eq!(LockTable::with_bytes(64).unwrap().ahead_of(key(0), 1, 8), Vec::<u64>::new());
}

#[test]
fn held_buckets_counts_buckets_with_a_holder() {
    let table = LockTable::with_bytes(4096).unwrap();
    assert_eq!(table.held_buckets(), 0);
    table.lock(key(1), 1, None).unwrap();
    table.lock(key(2), 1, None).unwrap();
    table.try_acquire(key(2), 2).unwrap();
    assert_eq!(table.held_buckets(), 2);
    table.unlock(key(1), 1).unwrap();
    assert_eq!(table.held_buckets(), 1);
}

#[test]
fn release_all_sweeps_every_bucket_for_the_transaction() {
    let table = LockTable::with_bytes(4096).unwrap();
    // T5 holds keys 1 and 2 (key 2 with T6 waiting), waits behind T7 for
    // key 3 and behind T7 and T8 for key 4; key 9 is none of its business.
    table.lock(key(1), 5, None).unwrap();
    table.lock(key(2), 5, None).unwrap();
    table.try_acquire(key(2), 6).unwrap();
    table.lock(key(3), 7, None).unwrap();
    table.try_acquire(key(3), 5).unwrap();
    table.lock(key(4), 7, None).unwrap();
    for ts in [5, 8] {
        table.try_acquire(key(4), ts).unwrap();
    }
    table.lock(key(9), 9, None).unwrap();
    let before = table.counters();
    assert_eq!(table.release_all(5), Ok(ReleasedAll { released: 2, cancelled: 2 }));
    assert_eq!(table.bucket_words(key(1)), [0; 8]);
    assert_eq!(table.bucket_words(key(2)), [6, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(table.bucket_words(key(3)), [7, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(table.bucket_words(key(4)), [7 | WAITERS, 8, 0, 0, 0, 0, 0, 0]);
    assert_eq!(table.bucket_words(key(9)), [9, 0, 0, 0, 0, 0, 0, 0]);
    let after = table.counters();
    assert_eq!((after.handovers - before.handovers, after.cancels - before.cancels), (1, 2));
    // Nothing left: a second sweep finds nothing.
    assert_eq!(table.release_all(5), Ok(ReleasedAll::default()));
    assert_eq!(table.release_all(0), Err(LockError::InvalidTimestamp { ts: 0 }));
}

#[test]
fn release_all_wakes_a_host_waiter() {
    let table = Arc::new(one_bucket());
    table.lock(key(1), 1, None).unwrap();
    let waiter = {
        let table = table.clone();
        thread::spawn(move || table.lock(key(2), 2, None))
    };
    eventually("T2 asleep", || table.counters().parks >= 1);
    assert_eq!(table.release_all(1), Ok(ReleasedAll { released: 1, cancelled: 0 }));
    assert_eq!(waiter.join().unwrap(), Ok(Grant::Acquired));
    table.unlock(key(2), 2).unwrap();
}
