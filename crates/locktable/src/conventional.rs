//! A conventional lock manager, built the way PostgreSQL's is: the baseline
//! of the paper's Experiment 3.
//!
//! ```text
//!  key ─hash─► partition p = (h >> 32) mod 16       (NUM_LOCK_PARTITIONS)
//!  partition p: Mutex ─► hash map key ─► LockObject { holder, waiters: FIFO of (ts, thread) }
//! ```
//!
//! As in PostgreSQL's lock manager (`lock.c`, `proc.c`): the lock table is a
//! shared hash table split into 16 partitions, each behind its own lock; a
//! lock object is made when a key is first locked and freed when its last
//! holder leaves with no waiter; a requester that must wait appends itself to
//! the object's wait queue and sleeps on its own semaphore (here: thread
//! park); the releaser grants the lock to the first waiter itself and wakes
//! it (`ProcLockWakeup`), so the waiter finds the lock already its own.
//! Exclusive locks only, as tuple locks for updates are.

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
}

#[repr(align(64))]
#[derive(Default)]
struct Partition {
    locks: Mutex<KeyMap<LockObject>>,
}

/// The PostgreSQL-style lock manager.
pub struct ConventionalLockTable {
    partitions: Box<[Partition]>,
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
        Self { partitions: (0..LOCK_PARTITIONS).map(|_| Partition::default()).collect() }
    }

    fn partition(&self, key: LockKey) -> &Mutex<KeyMap<LockObject>> {
        &self.partitions[(key_hash(key) >> 32) as usize % LOCK_PARTITIONS].locks
    }

    /// Lock objects now allocated (held keys).
    pub fn lock_objects(&self) -> usize {
        self.partitions.iter().map(|p| p.locks.lock().len()).sum()
    }

    /// The holder of `key`, if any.
    pub fn holder(&self, key: LockKey) -> Option<u64> {
        self.partition(key).lock().get(&key).map(|o| o.holder)
    }

    /// Requesters waiting for `key`.
    pub fn waiters(&self, key: LockKey) -> usize {
        self.partition(key).lock().get(&key).map_or(0, |o| o.waiters.len())
    }

    /// Locks `key` for `ts`, sleeping in FIFO order behind earlier requesters,
    /// until `deadline`.
    pub fn lock(&self, key: LockKey, ts: u64, deadline: Option<Instant>) -> Result<Grant, LockError> {
        check_ts(ts)?;
        let partition = self.partition(key);
        let mut locks = partition.lock();
        match locks.get_mut(&key) {
            None => {
                locks.insert(key, LockObject { holder: ts, waiters: VecDeque::new() });
                return Ok(Grant::Acquired);
            }
            Some(object) if object.holder == ts => return Ok(Grant::AlreadyHeld),
            Some(object) => object.waiters.push_back(Waiter { ts, thread: thread::current() }),
        }
        drop(locks);
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
            let mut locks = partition.lock();
            let Some(object) = locks.get_mut(&key) else { return Err(LockError::Cancelled { key, ts }) };
            if object.holder == ts {
                return Ok(Grant::Acquired);
            }
            let Some(position) = object.waiters.iter().position(|w| w.ts == ts) else {
                return Err(LockError::Cancelled { key, ts });
            };
            if timed_out {
                object.waiters.remove(position);
                return Err(LockError::Timeout { key, ts, holder: Some(object.holder) });
            }
        }
    }

    /// Releases `key` held by `ts`: grants it to the first waiter, or frees
    /// the lock object.
    pub fn unlock(&self, key: LockKey, ts: u64) -> Result<(), LockError> {
        check_ts(ts)?;
        let mut locks = self.partition(key).lock();
        let Some(object) = locks.get_mut(&key).filter(|o| o.holder == ts) else {
            let holder = locks.get(&key).map(|o| o.holder);
            return Err(LockError::NotHolder { key, ts, holder });
        };
        match object.waiters.pop_front() {
            Some(next) => {
                object.holder = next.ts;
                drop(locks);
                next.thread.unpark();
            }
            None => {
                locks.remove(&key);
            }
        }
        Ok(())
    }

    /// Withdraws waiting `ts` from `key`'s queue; its sleeping thread wakes
    /// with `LockError::Cancelled`.
    pub fn cancel(&self, key: LockKey, ts: u64) -> Result<CancelOutcome, LockError> {
        check_ts(ts)?;
        let mut locks = self.partition(key).lock();
        let Some(object) = locks.get_mut(&key) else { return Ok(CancelOutcome::NotQueued) };
        if object.holder == ts {
            return Ok(CancelOutcome::Granted);
        }
        let Some(position) = object.waiters.iter().position(|w| w.ts == ts) else {
            return Ok(CancelOutcome::NotQueued);
        };
        let waiter = object.waiters.remove(position).expect("position is in the queue");
        drop(locks);
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
