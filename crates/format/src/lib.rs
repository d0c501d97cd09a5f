//! Byte formats shared by the ndpdb host and the emulated device.
//!
//! Every byte format that crosses the host/device boundary or reaches the
//! medium lives here, and only here: the device crate depends on this crate
//! and on nothing of the host, so the compiler keeps the boundary
//! (`docs/architecture.md`). Each format is specified byte by byte in
//! `docs/format/`; the layout is repeated on the code that builds it.
//!
//! ```text
//! image       the device image's superblock              docs/format/image.md
//! page        page header, heap (slotted) and map pages  docs/format/page.md
//! record      version records (chain links)              docs/format/record.md
//! schema      tuples and the layout descriptor           docs/format/record.md
//! ndp         the NDP call block, its ranges and outputs docs/format/ndp-call.md
//! lock        the tuple lock key's words                 docs/format/locktable.md
//! checkpoint  root slots, index pages, checkpoint blob   docs/format/checkpoint.md
//! wal         write-ahead log records and payloads       docs/format/wal.md
//! programs    outputs of the built-in benchmark programs docs/format/commands.md
//! btree       B+-tree nodes on buffer-managed pages      docs/format/btree.md
//! keys        memcomparable (order-preserving) keys      docs/format/btree.md
//! kv_log      the key-value store's redo records         docs/format/btree.md
//! kv_image    the key-value store's root slots and ring  docs/format/kv-image.md
//! kv_lookup   the in-storage point lookup's call          docs/format/kv_lookup.md
//! shadow      the Shadow method's sorted table            docs/format/kv_lookup.md
//! text        the text forms of aggregates, predicates   docs/composer.md
//!             and update expressions (CLI, composer)
//! ```
//!
//! Decoders never trust bytes. Every `decode` returns a [`FormatError`] that
//! names the structure and the field that is wrong; none of them panics on any
//! input (each has a property test that feeds it garbage).

pub mod btree;
mod bytes;
pub mod checkpoint;
pub mod image;
pub mod keys;
pub mod kv_image;
pub mod kv_log;
pub mod kv_lookup;
pub mod lock;
pub mod ndp;
pub mod page;
pub mod programs;
pub mod record;
pub mod schema;
pub mod shadow;
pub mod text;
pub mod wal;

/// A decoding failure. The bytes are corrupt, truncated, or were written by a
/// format version this build does not read; the caller must not use them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("{structure}: need {needed} bytes, found {found} (truncated)")]
    Truncated { structure: &'static str, needed: usize, found: usize },
    #[error("{structure}: bad magic {found:02x?} (not an ndpdb {structure})")]
    BadMagic { structure: &'static str, found: Vec<u8> },
    #[error(
        "{structure}: format version {found}, this build reads version {supported}; \
         open it with a matching ndpdb build"
    )]
    UnsupportedVersion { structure: &'static str, found: u32, supported: u32 },
    #[error("{structure}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x}): the bytes are corrupt")]
    Checksum { structure: &'static str, stored: u32, computed: u32 },
    #[error("{structure}: field `{field}` is invalid: {reason}")]
    InvalidField { structure: &'static str, field: &'static str, reason: String },
}

/// Little-endian field readers over a slice whose length the caller checked.
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("caller checked length"))
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("caller checked length"))
}
