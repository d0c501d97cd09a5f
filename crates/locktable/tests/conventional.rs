//! The PostgreSQL-style lock manager: the same contract as the shared table
//! (through `TupleLockTable`), lock objects freed when unused, FIFO
//! hand-over, timeouts and cancellation.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ndpdb_locktable::{CancelOutcome, ConventionalLockTable, Grant, LockError, LockKey};

fn key(vid: u64) -> LockKey {
    LockKey::new(vid, 0)
}

fn eventually(what: &str, cond: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for: {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn lock_objects_live_while_held() {
    let table = ConventionalLockTable::new();
    assert_eq!(table.lock(key(1), 1, None), Ok(Grant::Acquired));
    assert_eq!(table.lock(key(1), 1, None), Ok(Grant::AlreadyHeld));
    assert_eq!(table.lock(key(2), 1, None), Ok(Grant::Acquired));
    assert_eq!(table.lock_objects(), 2);
    table.unlock(key(1), 1).unwrap();
    assert_eq!(table.lock_objects(), 1);
    assert_eq!(table.unlock(key(1), 1), Err(LockError::NotHolder { key: key(1), ts: 1, holder: None }));
    assert_eq!(table.unlock(key(2), 9), Err(LockError::NotHolder { key: key(2), ts: 9, holder: Some(1) }));
    table.unlock(key(2), 1).unwrap();
    assert_eq!(table.lock_objects(), 0);
    assert!(matches!(table.lock(key(1), 0, None), Err(LockError::InvalidTimestamp { ts: 0 })));
}

#[test]
fn waiters_are_granted_in_arrival_order() {
    let table = Arc::new(ConventionalLockTable::new());
    table.lock(key(0), 1, None).unwrap();
    let order = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for ts in 2..=5u64 {
        let (t, order) = (table.clone(), order.clone());
        threads.push(thread::spawn(move || {
            t.lock(key(0), ts, None).unwrap();
            order.lock().push(ts);
            t.unlock(key(0), ts).unwrap();
        }));
        // Let it queue before the next one starts.
        eventually("queued", || table.waiters(key(0)) == ts as usize - 1);
    }
    table.unlock(key(0), 1).unwrap();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*order.lock(), vec![2, 3, 4, 5]);
    assert_eq!(table.lock_objects(), 0);
}

#[test]
fn timeout_and_cancel() {
    let table = Arc::new(ConventionalLockTable::new());
    table.lock(key(0), 1, None).unwrap();
    let err = table.lock(key(0), 2, Some(Instant::now() + Duration::from_millis(20))).unwrap_err();
    assert_eq!(err, LockError::Timeout { key: key(0), ts: 2, holder: Some(1) });
    let waiter = {
        let table = table.clone();
        thread::spawn(move || table.lock(key(0), 3, None))
    };
    eventually("T3 queued", || table.cancel(key(0), 3) == Ok(CancelOutcome::Removed));
    assert_eq!(waiter.join().unwrap(), Err(LockError::Cancelled { key: key(0), ts: 3 }));
    assert_eq!(table.cancel(key(0), 1), Ok(CancelOutcome::Granted));
    table.unlock(key(0), 1).unwrap();
    assert_eq!(table.lock_objects(), 0);
}
