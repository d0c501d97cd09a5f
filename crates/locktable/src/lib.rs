//! # The cache-coherent shared lock table (ccSLT)
//!
//! neoDBMS (Bernhardt et al., EDBT'22, section 3) lets host transactions and
//! near-data-processing (NDP) transactions on the storage device update the
//! same tuples. To keep them from creating two successors of one version
//! (a write/write conflict the host cannot see), both sides lock the tuple
//! version `(VID, version)` in one lock table that lives in host memory
//! shared with the device over CCIX (coherent, with atomic CAS, 80–100 ns per
//! cached access, ~800 ns per non-local atomic from the device). This crate
//! is that table for ndpdb's emulated device, plus a PostgreSQL-style lock
//! manager as the baseline of the paper's Experiment 3 ([`conventional`]).
//! Both implement [`TupleLockTable`], so benchmarks swap them.
//!
//! ## Layout
//!
//! A hash table of 64-byte, cache-line aligned buckets; its size is a power
//! of two of bytes (default 4 MiB = 65,536 buckets). Each bucket is a FIFO of
//! up to eight transaction timestamps, one per 8-byte word. Word 0 holds the
//! lock, words 1..7 wait in arrival order, zeros follow:
//!
//! ```text
//!           word 0           word 1   word 2   word 3   word 4 .. word 7
//!  ┌─┬─┬───────────────┐  ┌────────┬────────┬────────┬────────┬───┬──────┐
//!  │B│W│ holder T17    │  │  T23   │  T31   │   0    │   0    │ … │  0   │
//!  └─┴─┴───────────────┘  └────────┴────────┴────────┴────────┴───┴──────┘
//!   B = bit 63: the structure token, set while one agent rewrites words 1..7
//!   W = bit 62: someone waits (word 1 is nonzero)
//! ```
//!
//! A key goes to bucket `(vid + mix(version)) mod buckets`
//! ([`bucket::bucket_index`]): dense, increasing VIDs never collide within a
//! window of `buckets` VIDs, and a sequential sweep touches consecutive lines.
//! Byte-level details: `docs/format/locktable.md`.
//!
//! ## Protocol ([`protocol`])
//!
//! Each step is a sequence of single-word loads, stores and CASes, made
//! through [`BucketWords`], so host threads and device PEs run the same code
//! on the same memory, and loom checks it on its own atomics.
//!
//! - **acquire**: if word 0 is 0, `CAS(w0, 0 → T)`: the lock is taken with
//!   one CAS (the paper's fast path).
//! - **append**: otherwise take the token, `CAS(w0, H → H|B)`; write T into
//!   the first zero word (or find T already there, or find none: `Full`);
//!   hand the token back with the waiters bit, `store(w0, H|W)`.
//! - **release** by holder T without waiters: `CAS(w0, T → 0)`, one CAS.
//!   With waiters (`T|W`): take the token, grant, `store(w0, X|B)` for X in
//!   word 1, shift words 2..7 down by one slot (each word copied down before
//!   it is overwritten), and `store(w0, X)`, with W if word 1 is still
//!   nonzero.
//! - **cancel** by waiter T: take the token; find T in word i, shift words
//!   i+1..7 down by one, hand the token back (W cleared if nobody is left).
//!   If T is in word 0 it was granted before it gave up (`Granted`): it
//!   holds the lock.
//! - **poll**: scan words 7..1 for T, then word 0 (no token, no write).
//! - **withdraw** T, wherever it is (a transaction that ends without knowing
//!   every bucket it is in, [`LockTable::release_all`]): poll; release if
//!   T holds the lock, cancel if it waits, and release if the cancel finds
//!   it granted.
//!
//! An uncontended lock and unlock is thus two CASes on one line.
//!
//! Invariants, with why they hold:
//!
//! - **X (mutual exclusion).** Word 0's timestamp changes only by the CAS
//!   `0 → T` of an acquirer or by its holder's release. So at most one
//!   transaction is in word 0 from its grant to its own release, and "T
//!   holds the lock" is one load (`w0 & !(B|W) == T`). Handover: the
//!   releaser's writes of word 0 are Release (CAS or store), the next
//!   holder's read of it is Acquire, so the critical sections are ordered.
//! - **T (token).** Bit 63 set means one agent owns words 1..7; only it
//!   writes them, and only it writes word 0 until it stores word 0 without
//!   the bit. Everyone else's CAS on word 0 expects a value without the bit,
//!   so it fails until then. Each decision about words 1..7 is made on loads
//!   taken under the token, never on earlier ones (no ABA: a token taken on
//!   `H` after `H → H|B → H` reads the words afresh).
//! - **C (compact).** Without the token, the nonzero words are a prefix
//!   0..n, all distinct; word 0 is zero only if the bucket is empty (release
//!   grants word 1 before it clears anything), and W is set exactly when
//!   word 1 is nonzero. Appends write word n under the token; shifts keep
//!   the order. So a word 0 of exactly `T` (no B, no W) means nobody else is
//!   in the bucket and nobody can enter without changing word 0 first: the
//!   release fast path's CAS `T → 0` cannot strand a waiter.
//! - **F (FIFO).** A waiter's position only decreases and the order of
//!   waiters never changes, so the lock is granted in the order the appends
//!   took the token. Requesters that found the queue `Full` retry without
//!   order among themselves.
//! - **P (presence).** A waiter is in some word from its append to its
//!   removal: a shift copies each word down before overwriting it, and the
//!   grant writes word 0 before word 1 is overwritten. Shift stores are
//!   Release and the poll's loads Acquire, and the poll scans against the
//!   direction waiters move, so it cannot step over a present waiter: its
//!   `Absent` is exact for a transaction not itself running a step on the
//!   bucket. (An upward scan could miss one moving down past it.)
//!
//! The alternative, appends as a bare CAS into the next free word while a
//! release shifts, was rejected: a requester that read "word k−1 taken, word
//! k free" before a shift can CAS word k after the shift emptied word k−1,
//! leaving a hole that a later requester fills ahead of it. Closing that
//! needs tentative marks and seals in the words, and waiting for the
//! tentative requester anyway. The token keeps one writer per bucket; its
//! cost falls on contended buckets only (one more CAS and store, on a line
//! the appender owns by then).
//!
//! **Reentrancy.** A transaction already in word 0 gets `AlreadyHeld`: it
//! holds another key of this bucket (a collision, or a second request). It
//! must unlock the bucket once, for the grant that said `Acquired`. A
//! transaction already waiting gets its position again.
//!
//! **Timestamps** are `1..=2^62−1`: 0 is an empty word, bits 63 and 62 are
//! word 0's flags.
//!
//! ## Waiting
//!
//! The host does not poll: a queued host transaction parks, keyed by the
//! bucket's address, after a short spin, and every hand-over and cancel
//! wakes the bucket's parked threads with [`LockTable::notify`], whoever made
//! it: a host thread, or a device PE whose release goes through
//! [`LockTable::release_with`]. A release without waiters wakes nobody:
//! nobody can be asleep on a bucket whose W bit is clear. Parked threads
//! re-check the bucket before sleeping under the parking lot's lock, and a
//! fence pair orders the parked count against the bucket change, so no
//! wake-up is lost (`table.rs`). A full queue is waited out the same way. A
//! deadline withdraws the request (cancel); another thread may cancel it too
//! (a deadlock victim), and the waiter returns an error.
//!
//! A device PE polls: `try_acquire_with`, then `poll_with` (or `is_head`)
//! until `Head`; on `Full`, `is_full_with` until false. Under CCIX the polled
//! line stays in the device's cache until the host writes it, so polling is
//! local; the device's [`BucketWords`] charges that cost.
//!
//! ## Collisions
//!
//! Keys that share a bucket share one queue: their requesters serialize,
//! which costs concurrency but never consistency (each tuple still has one
//! holder at a time), and a transaction holding one key of a bucket is
//! granted the others (`AlreadyHeld`). Collisions can make two transactions
//! wait for each other without a tuple in common; [`LockTable::holder`]
//! names whom a requester waits for, for the caller's deadlock detection,
//! and deadlines bound every wait.
//!
//! ## What differs from CCIX hardware
//!
//! The region is ordinary host memory and the device's accesses are
//! ordinary atomics on it; their latency is a model charged by the device's
//! `BucketWords`, not a coherence protocol. The paper's hardware tuple
//! locking module on the FPGA (hashing, CAS, telling PEs about changes) is
//! these functions run on a PE thread. The structure token and the waiters
//! bit are this emulation's choices; the paper does not say how a release's
//! shift and a concurrent append agree. A host thread can be preempted while it holds
//! the token, which hardware cannot; others spin, then yield. An agent that
//! dies holding the token wedges the bucket (recovery is out of scope, as in
//! the paper).
//!
//! ## Use
//!
//! ```
//! use ndpdb_locktable::{Attempt, Grant, LockKey, LockTable, Poll};
//! let table = LockTable::with_bytes(1 << 20).unwrap();
//! let tuple = LockKey::new(42, 3);
//! // A host transaction locks and unlocks, sleeping if it has to wait.
//! assert_eq!(table.lock(tuple, 7, None), Ok(Grant::Acquired));
//! // A device PE runs the non-blocking steps (here over the host's words;
//! // a device passes its own `BucketWords`).
//! let words = table.host_words();
//! assert_eq!(table.try_acquire_with(&words, tuple, 9), Ok(Attempt::Queued { position: 1 }));
//! assert_eq!(table.release_with(&words, tuple, 7), Ok(Some(9)));
//! assert_eq!(table.poll_with(&words, tuple, 9), Ok(Poll::Head));
//! table.unlock(tuple, 9).unwrap();
//! ```

pub mod bucket;
pub mod conventional;
mod error;
pub mod protocol;
mod table;

use std::time::Instant;

pub use bucket::{BUCKET_BYTES, Bucket, DEFAULT_TABLE_BYTES, HostWords, LockKey};
pub use conventional::ConventionalLockTable;
pub use error::LockError;
pub use protocol::{Attempt, BucketWords, CancelOutcome, Poll, Withdrawal};
pub use table::{LockCounters, LockTable, LockTableConfig, ReleasedAll};

/// What a successful `lock` granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// The lock is the caller's now: unlock it once.
    Acquired,
    /// The caller already held it (same key, or in the shared table another
    /// key of the same bucket): do not unlock for this grant.
    AlreadyHeld,
}

/// An exclusive tuple lock table: the shared table and the conventional one.
pub trait TupleLockTable: Send + Sync {
    /// A short name for reports: `ccslt` or `conventional`.
    fn name(&self) -> &'static str;

    /// Locks `key` for transaction `ts`, waiting until `deadline` (forever
    /// if `None`).
    fn lock(&self, key: LockKey, ts: u64, deadline: Option<Instant>) -> Result<Grant, LockError>;

    /// Releases `key` held by `ts`, granting it to the next waiter.
    fn unlock(&self, key: LockKey, ts: u64) -> Result<(), LockError>;

    /// Withdraws waiting `ts` from `key`'s queue; its `lock` call returns
    /// `LockError::Cancelled`.
    fn cancel(&self, key: LockKey, ts: u64) -> Result<CancelOutcome, LockError>;
}
