//! The PostgreSQL-style lock manager: the same contract as the shared table
//! (through `TupleLockTable`), lock objects freed when unused, FIFO
//! hand-over, timeouts and cancellation. Also runs the micro-benchmark API on
//! both tables.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ndpdb_locktable::bench::{self, Access, HostBench};
use ndpdb_locktable::{CancelOutcome, ConventionalLockTable, Grant, LockError, LockKey, LockTable, TupleLockTable};

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

#[test]
fn benchmark_runs_on_both_tables() {
    let tables: [Box<dyn TupleLockTable>; 2] =
        [Box::new(LockTable::with_bytes(1 << 16).unwrap()), Box::new(ConventionalLockTable::new())];
    for table in &tables {
        for access in [Access::Sequential, Access::Random] {
            let spec =
                HostBench { requests: 2000, access, threads: 2, contention_pct: 20, keys_per_thread: 100, seed: 7 };
            let samples = bench::bench_host(table.as_ref(), &spec).unwrap();
            assert_eq!(samples.len(), 2000);
            let s = bench::summarize(&samples).unwrap();
            assert!(s.min_ns <= s.p50_ns && s.p50_ns <= s.p99_ns && s.p99_ns <= s.max_ns, "{s:?}");
        }
    }
    assert_eq!(bench::summarize(&[]), None);
    let _ = bench::timer_overhead_ns(100);
}

#[test]
fn the_cache_line_floor_leaves_the_table_idle_and_refuses_a_used_one() {
    // 1 KiB = 16 buckets: two threads' keys share buckets all the time.
    let table = LockTable::with_bytes(1 << 10).unwrap();
    for access in [Access::Sequential, Access::Random] {
        let spec = HostBench { requests: 5000, access, threads: 2, contention_pct: 0, keys_per_thread: 1000, seed: 3 };
        assert_eq!(bench::bench_line_floor(&table, &spec).unwrap().len(), 5000);
        assert!(table.buckets().iter().all(|b| b.words() == [0; 8]), "a word was left set");
    }
    // A transaction's lock is not the benchmark's to take.
    assert_eq!(table.lock(key(5), 77, None), Ok(Grant::Acquired));
    let spec = HostBench {
        requests: 100,
        access: Access::Sequential,
        threads: 1,
        contention_pct: 0,
        keys_per_thread: 16,
        seed: 1,
    };
    let err = bench::bench_line_floor(&table, &spec).unwrap_err();
    assert_eq!(err, LockError::NotIdle { bucket: table.bucket_of(key(5)), found: 77 });
    assert!(err.to_string().contains("a table of its own"), "{err}");
    table.unlock(key(5), 77).unwrap();
}
