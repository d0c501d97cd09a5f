//! # A B+-tree key-value store on the host buffer pool
//!
//! The store keeps variable-length byte keys and values in a B+-tree whose
//! nodes are pages of an `ndpdb-bufmgr` pool. It is the index structure the
//! cooperative buffer manager experiment runs on (`docs/buffer-manager.md`)
//! and that the SQL engine's indexes will be (keys from `format::keys`).
//!
//! ```text
//!            KvStore ── get / scan ─────────► read.rs   (shared latch coupling)
//!               │    ── put / update / delete ► write.rs (optimistic leaf, then
//!               │                                         exclusive coupling)
//!               │                               split.rs (planned cascade, B-link)
//!               │    ── one record per write ─► tracked.rs (ranges written)
//!               ▼                                     │
//!         BufferPool (frames in host memory)      KvLog (log.rs: the trait,
//!               │ write-back after the log ◄──────────  in-memory log;
//!               ▼                                     │ ring.rs: the ring on
//!            PageIo (the device)                      │ the device)
//!                                               recovery.rs (redo from the
//!                                                        checkpoint)
//! ```
//!
//! **On a device** (`image.rs`): `KvStore::create_on` / `open_on` lay the
//! store out as two root slots, the log ring and the file
//! (`docs/format/kv-image.md`); `layout()` says where, for the device.
//!
//! **Nodes** are B-link nodes (`docs/format/btree.md`): sorted slots, a high
//! key and a right link. The host needs neither for its own point lookups
//! (latch coupling keeps each split invisible until it is whole), but the
//! device's lookup reads one node at a time with no latch, straight from
//! host memory or the medium, and moves right past splits it sees only
//! half of. Pages never leave the tree: a delete leaves an empty leaf in
//! place (no merges), so a link never points to a reused page, and the
//! root's pid never changes.
//!
//! **Concurrency** is latch coupling with an optimistic first try: a write
//! descends with shared latches and takes only its leaf exclusively; only
//! if the leaf must split does it descend again with exclusive latches,
//! keeping the ancestors a split may reach (`write.rs`).
//!
//! **Logging** is physical redo (`format::kv_log`): one record per write,
//! naming every page it changed with the frame it is in (the device's mirror
//! learns from it which pages are dirty where) and the bytes it changed; the
//! first change of a page after a checkpoint logs the whole page, so a torn
//! page write cannot defeat recovery. The pool writes a page back only after
//! its record is durable. **Checkpoints** write back every dirty page and
//! then move the log's checkpoint (`store.rs`).
//!
//! **Limits.** Keys up to a sixteenth and entries (key and value) up to a
//! quarter of a page's usable bytes: at 16 KiB pages, 1019-byte keys and,
//! with a 24-byte key, 4038-byte values; larger ones get an error that
//! gives the limit.

mod check;
mod error;
mod image;
mod log;
mod offload;
mod read;
mod recovery;
mod ring;
mod split;
mod store;
mod tracked;
mod write;

pub use check::TreeShape;
pub use error::KvError;
pub use image::{DeviceLayout, LOG_PAGES_MIN};
pub use log::{KvLog, LogRecord, MemoryKvLog, PoolLog, record_at};
pub use offload::{KvOffload, LOOKUP_SLOT, LookupCall, LookupResult};
pub use read::Scan;
pub use recovery::{RecoveryStats, recover};
pub use ring::{DeviceKvLog, RingStats};
pub use store::{KvOptions, KvStats, KvStore};
