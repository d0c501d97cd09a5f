//! A conventional lock manager, built the way PostgreSQL's is: the baseline
//! of the paper's Experiment 3.
//!
//! ```text
//!  backend-local table (LOCALLOCK): (table, key) ─► times this thread holds it
//!  key ─hash─► partition p = (h >> 32) mod 16       (NUM_LOCK_PARTITIONS)
//!  partition p: Mutex ─► LOCK hash:     key ─► LockObject { holder, waiters: FIFO of (ts, thread) }
//!                       PROCLOCK hash: (key, ts) ─► ProcLock (one per holder or waiter)
//! ```
//!
//! As in PostgreSQL's lock manager (`lock.c`, `proc.c`), step for step for an
//! exclusive tuple lock (`LockAcquireExtended`, `LockRelease`, `CleanUpLock`):
//! a request first looks in the backend's own LOCALLOCK hash (a lock it holds
//! already is granted again there); otherwise it takes the partition lock
//! (an LWLock in PostgreSQL), finds or makes the LOCK object in the shared
//! hash, finds or makes its PROCLOCK entry in the second shared hash, checks
//! for conflicts and grants, or appends itself to the LOCK's wait queue and
//! sleeps on its own semaphore (here: thread park); the releaser grants the
//! lock to the first waiter itself and wakes it (`ProcLockWakeup`). Release
//! removes the PROCLOCK entry, the LOCK object once nobody holds or waits for
//! it, and the LOCALLOCK entry. Exclusive locks only, as tuple locks for
//! updates are; no fast path (PostgreSQL has none for tuple locks).

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::thread::{self, Thread};
use std::time::Instant;

use parking_lot::Mutex;

use crate::bucket::LockKey;
use crate::error::{LockError, check_ts};
use crate::protocol::CancelOutcome;
use crate::{Grant, TupleLockTable};

/// Partitions of the table, PostgreSQL's `NUM_LOCK_PARTITIONS`.
pub const LOCK_PARTITIONS: usize = 16;

/// An FxHash-style hasher for lock keys (PostgreSQL hashes its lock tags with
/// its own fast hash, not a keyed one).
#[derive(Default)]
pub struct KeyHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.hash
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

type KeyMap<V> = HashMap<LockKey, V, BuildHasherDefault<KeyHasher>>;

fn key_hash(key: LockKey) -> u64 {
    let mut h = KeyHasher::default();
    h.write_u64(key.vid);
    h.write_u64(key.version);
    h.finish()
}

struct Waiter {
    ts: u64,
    thread: Thread,
}

struct LockObject {
    holder: u64,
    waiters: VecDeque<Waiter>,
    /// Requests granted or waiting (PostgreSQL's `nRequested`).
    requested: u32,
}

/// PostgreSQL's PROCLOCK: one per (lock, backend) holding or awaiting it.
struct ProcLock {
    /// Granted (true) or awaited.
    holds: bool,
}

/// What one partition lock protects: the LOCK and PROCLOCK hashes.
#[derive(Default)]
struct Shared {
    locks: KeyMap<LockObject>,
    proclocks: HashMap<(LockKey, u64), ProcLock, BuildHasherDefault<KeyHasher>>,
}

impl Shared {
    /// `CleanUpLock`: drops `ts`'s PROCLOCK, and the LOCK when it is unused.
    fn clean_up(&mut self, key: LockKey, ts: u64) {
        self.proclocks.remove(&(key, ts));
        if let Some(object) = self.locks.get_mut(&key) {
            object.requested = object.requested.saturating_sub(1);
            if object.requested == 0 {
                self.locks.remove(&key);
            }
        }
    }
}

#[repr(align(64))]
#[derive(Default)]
struct Partition {
    shared: Mutex<Shared>,
}

/// The backend-local LOCALLOCK hash: (table, key, ts) -> times granted.
type LocalLocks = HashMap<(u64, LockKey, u64), u32, BuildHasherDefault<KeyHasher>>;

std::thread_local! {
    static LOCAL_LOCKS: std::cell::RefCell<LocalLocks> = std::cell::RefCell::new(HashMap::default());
}

static NEXT_TABLE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The PostgreSQL-style lock manager.
pub struct ConventionalLockTable {
    partitions: Box<[Partition]>,
    /// Tells this table's entries in the thread-local LOCALLOCK hash apart.
    id: u64,
}

impl Default for ConventionalLockTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ConventionalLockTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConventionalLockTable").field("locks", &self.lock_objects()).finish()
    }
}

impl ConventionalLockTable {
    pub fn new() -> Self {
        Self {
            partitions: (0..LOCK_PARTITIONS).map(|_| Partition::default()).collect(),
            id: NEXT_TABLE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    fn partition(&self, key: LockKey) -> &Mutex<Shared> {
        &self.partitions[(key_hash(key) >> 32) as usize % LOCK_PARTITIONS].shared
    }

    /// Lock objects now allocated (held keys).
    pub fn lock_objects(&self) -> usize {
        self.partitions.iter().map(|p| p.shared.lock().locks.len()).sum()
    }

    /// The holder of `key`, if any.
    pub fn holder(&self, key: LockKey) -> Option<u64> {
        self.partition(key).lock().locks.get(&key).map(|o| o.holder)
    }

    /// Requesters waiting for `key`.
    pub fn waiters(&self, key: LockKey) -> usize {
        self.partition(key).lock().locks.get(&key).map_or(0, |o| o.waiters.len())
    }

    /// The LOCALLOCK count of `(key, ts)` in this thread, changed by `f`.
    fn local<R>(&self, key: LockKey, ts: u64, f: impl FnOnce(&mut u32) -> R) -> R {
        LOCAL_LOCKS.with(|l| {
            let mut l = l.borrow_mut();
            let entry = l.entry((self.id, key, ts)).or_insert(0);
            let r = f(entry);
            if *entry == 0 {
                l.remove(&(self.id, key, ts));
            }
            r
        })
    }

    /// Locks `key` for `ts`, sleeping in FIFO order behind earlier requesters,
    /// until `deadline`.
    pub fn lock(&self, key: LockKey, ts: u64, deadline: Option<Instant>) -> Result<Grant, LockError> {
        check_ts(ts)?;
        if self.local(key, ts, |n| *n) > 0 {
            return Ok(Grant::AlreadyHeld);
        }
        let partition = self.partition(key);
        let mut shared = partition.lock();
        let Shared { locks, proclocks } = &mut *shared;
        let object =
            locks.entry(key).or_insert_with(|| LockObject { holder: 0, waiters: VecDeque::new(), requested: 0 });
        object.requested += 1;
        let free = object.holder == 0;
        proclocks.insert((key, ts), ProcLock { holds: free });
        if free {
            object.holder = ts;
            drop(shared);
            self.local(key, ts, |n| *n += 1);
            return Ok(Grant::Acquired);
        }
        if object.holder == ts {
            // Held by the same transaction from another thread.
            object.requested -= 1;
            return Ok(Grant::AlreadyHeld);
        }
        object.waiters.push_back(Waiter { ts, thread: thread::current() });
        drop(shared);
        loop {
            let timed_out = match deadline {
                Some(deadline) => {
                    let now = Instant::now();
                    if now < deadline {
                        thread::park_timeout(deadline - now);
                    }
                    Instant::now() >= deadline
                }
                None => {
                    thread::park();
                    false
                }
            };
            let mut shared = partition.lock();
            let Some(object) = shared.locks.get_mut(&key) else { return Err(LockError::Cancelled { key, ts }) };
            if object.holder == ts {
                if let Some(p) = shared.proclocks.get_mut(&(key, ts)) {
                    p.holds = true;
                }
                drop(shared);
                self.local(key, ts, |n| *n += 1);
                return Ok(Grant::Acquired);
            }
            let Some(position) = object.waiters.iter().position(|w| w.ts == ts) else {
                return Err(LockError::Cancelled { key, ts });
            };
            if timed_out {
                object.waiters.remove(position);
                let holder = Some(object.holder);
                shared.clean_up(key, ts);
                return Err(LockError::Timeout { key, ts, holder });
            }
        }
    }

    /// Releases `key` held by `ts`: grants it to the first waiter, or frees
    /// the lock object.
    pub fn unlock(&self, key: LockKey, ts: u64) -> Result<(), LockError> {
        check_ts(ts)?;
        let mut shared = self.partition(key).lock();
        let Some(object) = shared.locks.get_mut(&key).filter(|o| o.holder == ts) else {
            let holder = shared.locks.get(&key).map(|o| o.holder);
            return Err(LockError::NotHolder { key, ts, holder });
        };
        let next = object.waiters.pop_front();
        object.holder = next.as_ref().map_or(0, |w| w.ts);
        shared.clean_up(key, ts);
        drop(shared);
        self.local(key, ts, |n| *n = 0);
        if let Some(next) = next {
            next.thread.unpark();
        }
        Ok(())
    }

    /// Withdraws waiting `ts` from `key`'s queue; its sleeping thread wakes
    /// with `LockError::Cancelled`.
    pub fn cancel(&self, key: LockKey, ts: u64) -> Result<CancelOutcome, LockError> {
        check_ts(ts)?;
        let mut shared = self.partition(key).lock();
        let Some(object) = shared.locks.get_mut(&key) else { return Ok(CancelOutcome::NotQueued) };
        if object.holder == ts {
            return Ok(CancelOutcome::Granted);
        }
        let Some(position) = object.waiters.iter().position(|w| w.ts == ts) else {
            return Ok(CancelOutcome::NotQueued);
        };
        let waiter = object.waiters.remove(position).expect("position is in the queue");
        shared.clean_up(key, ts);
        drop(shared);
        waiter.thread.unpark();
        Ok(CancelOutcome::Removed)
    }
}

impl TupleLockTable for ConventionalLockTable {
    fn name(&self) -> &'static str {
        "conventional"
    }

    fn lock(&self, key: LockKey, ts: u64, deadline: Option<Instant>) -> Result<Grant, LockError> {
        ConventionalLockTable::lock(self, key, ts, deadline)
    }

    fn unlock(&self, key: LockKey, ts: u64) -> Result<(), LockError> {
        ConventionalLockTable::unlock(self, key, ts)
    }

    fn cancel(&self, key: LockKey, ts: u64) -> Result<CancelOutcome, LockError> {
        ConventionalLockTable::cancel(self, key, ts)
    }
}
