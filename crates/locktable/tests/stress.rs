//! Many threads lock and unlock few keys and increment a per-key counter
//! without atomics inside the critical section; a lost update would show as
//! a short total. Run against the shared table (host threads that sleep, and
//! device-style threads that poll) and against the conventional manager.

use std::cell::UnsafeCell;
use std::sync::Arc;
use std::thread;

use ndpdb_locktable::{Attempt, ConventionalLockTable, Grant, LockKey, LockTable, Poll, TupleLockTable};

/// Per-key counters protected only by the lock under test.
struct Racy {
    cells: Vec<UnsafeCell<u64>>,
}

// SAFETY: every access to a cell happens while holding the lock of its key.
unsafe impl Sync for Racy {}

impl Racy {
    fn new(keys: usize) -> Self {
        Self { cells: (0..keys).map(|_| UnsafeCell::new(0)).collect() }
    }

    /// A read-modify-write that loses updates without mutual exclusion: the
    /// read and the write are separate volatile accesses, with a yield
    /// between them now and then to widen the window.
    fn bump(&self, key: usize, i: usize) {
        let p = self.cells[key].get();
        // SAFETY: the caller holds the lock of `key`.
        unsafe {
            let v = std::ptr::read_volatile(p);
            if i.is_multiple_of(64) {
                thread::yield_now();
            }
            std::ptr::write_volatile(p, v + 1);
        }
    }

    fn total(&self) -> u64 {
        // SAFETY: all threads have been joined.
        self.cells.iter().map(|c| unsafe { *c.get() }).sum()
    }
}

const KEYS: usize = 3;
const ITERATIONS: usize = 3000;

fn key(i: usize) -> LockKey {
    LockKey::new(i as u64, 0)
}

fn hammer(table: Arc<dyn TupleLockTable>, threads: usize) {
    let racy = Arc::new(Racy::new(KEYS));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (table, racy) = (table.clone(), racy.clone());
            thread::spawn(move || {
                let ts = t as u64 + 1;
                for i in 0..ITERATIONS {
                    let k = (i * 7 + t) % KEYS;
                    assert_eq!(table.lock(key(k), ts, None), Ok(Grant::Acquired));
                    racy.bump(k, i);
                    table.unlock(key(k), ts).unwrap();
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(racy.total(), (threads * ITERATIONS) as u64, "{}: lost updates", table.name());
}

#[test]
fn shared_table_excludes_under_contention() {
    hammer(Arc::new(LockTable::with_bytes(1 << 12).unwrap()), 4);
}

#[test]
fn shared_table_one_bucket_excludes_under_contention() {
    // Every key in one bucket: collisions serialize everything.
    hammer(Arc::new(LockTable::with_bytes(64).unwrap()), 4);
}

#[test]
fn shared_table_full_queues_under_contention() {
    // Twelve threads on one eight-slot bucket: some always find it full.
    let table = Arc::new(LockTable::with_bytes(64).unwrap());
    hammer(table.clone(), 12);
    assert!(table.counters().full > 0, "{:?}", table.counters());
    assert_eq!(table.buckets()[0].words(), [0; 8]);
}

#[test]
fn conventional_excludes_under_contention() {
    let table = Arc::new(ConventionalLockTable::new());
    hammer(table.clone(), 4);
    assert_eq!(table.lock_objects(), 0, "lock objects are freed when unused");
}

#[test]
fn polling_and_sleeping_agents_share_buckets() {
    // Two device-style agents poll through the non-blocking steps while two
    // host threads sleep in `lock`; device releases must wake the host.
    let table = Arc::new(LockTable::with_bytes(128).unwrap());
    let racy = Arc::new(Racy::new(KEYS));
    let mut handles = Vec::new();
    for t in 0..4usize {
        let (table, racy) = (table.clone(), racy.clone());
        handles.push(thread::spawn(move || {
            let ts = t as u64 + 1;
            for i in 0..ITERATIONS {
                let k = (i * 5 + t) % KEYS;
                if t % 2 == 0 {
                    table.lock(key(k), ts, None).unwrap();
                } else {
                    device_lock(&table, key(k), ts);
                }
                racy.bump(k, i);
                table.release(key(k), ts).unwrap();
            }
        }));
    }
    handles.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(racy.total(), (4 * ITERATIONS) as u64);
    assert!(table.buckets().iter().all(|b| b.words() == [0; 8]));
}

/// A device PE's lock: request, then poll (yielding between polls).
fn device_lock(table: &LockTable, key: LockKey, ts: u64) {
    loop {
        match table.try_acquire(key, ts).unwrap() {
            Attempt::Acquired => return,
            Attempt::AlreadyHeld => unreachable!("one key at a time"),
            Attempt::Queued { .. } => {
                while table.poll(key, ts).unwrap() != Poll::Head {
                    thread::yield_now();
                }
                return;
            }
            Attempt::Full => thread::yield_now(),
        }
    }
}
