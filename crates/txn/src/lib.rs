//! # MVCC transactions
//!
//! Versions after neoDBMS (ICDE'22): each version carries the id of the
//! transaction that created it and the RecordId of its predecessor; a version
//! is invalidated by the existence of its successor; a delete is a tombstone
//! version. Example, one tuple updated by T3 and deleted by T9:
//!
//! ```text
//!  VID map[7] ──► [T9 tombstone] ──prev──► [T3: amount=20] ──prev──► [T1: amount=10] ──► NONE
//!  snapshot of T5 (xmax 6, active {}):  T9 invisible, T3 visible   → amount=20
//!  snapshot of T2 (xmax 3, active {}):  T9, T3 invisible, T1 visible → amount=10
//!  snapshot of T10 (xmax 11):           T9 visible, a tombstone    → no row
//! ```
//!
//! Transaction ids come from one counter; a snapshot is `(xmax, active, own)`
//! as in PostgreSQL, and `Snapshot::visible` (shared with the device) decides.
//!
//! - **Writes** take an exclusive tuple lock held to commit or abort; a writer
//!   that finds the lock taken waits until its holder ends (no polling), and a
//!   wait that would close a cycle fails with a deadlock error. Abort restores
//!   the chain heads it changed before releasing its locks, so no chain ever
//!   contains an aborted version and no visible trace remains.
//! - **Read committed** takes a snapshot per statement and updates the newest
//!   committed version. An update-NDP statement (`Txn::ndp_update`) whose PE
//!   updated a row from a version that a concurrent commit has since replaced
//!   re-evaluates that row on the host, as PostgreSQL's EvalPlanQual: the
//!   predicate is checked again and the expression applied to the newest
//!   version; a row deleted meanwhile or no longer qualifying is skipped.
//! - **Repeatable read** (snapshot isolation) takes its snapshot at its first
//!   statement; updating a tuple whose newest version it cannot see fails with
//!   "could not serialize access due to concurrent update", as in PostgreSQL.
//! - **Serializable** adds serializable snapshot isolation (Cahill et al.,
//!   as PostgreSQL does): reads leave SIREAD marks (per tuple, or per table
//!   for scans), and each read-write antidependency `reader -rw-> writer`
//!   between concurrent serializable transactions is recorded as an edge.
//!   A transaction fails at commit when committing it would complete a
//!   dangerous structure `T1 -rw-> T2 -rw-> T3` whose T3 committed first,
//!   which prevents write skew; an aborted transaction's edges are
//!   forgotten. Statements never fail for this reason, only commits; the
//!   table-level marks of scans make this more conservative than
//!   PostgreSQL's predicate locks on index ranges.
//!
//! - **Garbage collection** ([`Database::gc`]) removes versions no open or
//!   future snapshot can see: the horizon is the oldest transaction that was
//!   active when any open transaction began; `ndpdb-storage` cuts each chain
//!   below its first version older than the horizon.

//!
//! ## Layout
//!
//! | module | holds |
//! |---|---|
//! | `db` | [`Database`]: the store, the manager mutex, the commit gate; begin, tables, pinned snapshots |
//! | `txn` | [`Txn`]: snapshots, reads, writes, commit and abort |
//! | `locks` | tuple locks in the shared lock table, the wait and the release |
//! | `update_ndp` | [`Txn::ndp_update`] and read committed's re-check of overtaken rows |
//! | `maintenance` | the checkpoint trigger (pure), checkpoints, the GC and compaction driver |
//! | `manager` | ids, the active set, xmin, pinned snapshots (pure bookkeeping) |
//! | `ssi` | SIREAD marks, rw-antidependencies, dangerous structures (pure) |
//! | `deadlock` | the waits-for graph and its cycle check (pure) |
//! | `lock_order` | the order of the database's locks, asserted in debug builds |
//! | `error` | [`TxnError`] |

mod db;
mod deadlock;
mod error;
mod lock_order;
mod locks;
mod maintenance;
mod manager;
mod ssi;
mod txn;
mod update_ndp;

pub use db::Database;
pub use error::TxnError;
pub use locks::Current;
pub use txn::{Isolation, ReadMode, Txn};
