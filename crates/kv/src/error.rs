//! The store's errors. Each says what the caller must do: shorten the key
//! or value (`KeyTooLong`, `ValueTooLong`), release guards or give the pool
//! more frames (`Pool` with `PoolError::Full`), checkpoint or give the log
//! more room (`LogFull`), or restore the image (`Corrupt`).

use ndpdb_bufmgr::PoolError;
use ndpdb_format::FormatError;

#[derive(Debug, thiserror::Error)]
pub enum KvError {
    #[error(
        "a key of {len} bytes is too long: keys hold at most {max} bytes at {page_bytes}-byte pages; use a shorter key"
    )]
    KeyTooLong { len: usize, max: usize, page_bytes: usize },
    #[error(
        "a value of {len} bytes is too long: with a {key_len}-byte key, values hold at most {max} bytes at \
         {page_bytes}-byte pages (key and value together at most a quarter of a page); store a shorter value \
         or split it over several keys"
    )]
    ValueTooLong { len: usize, key_len: usize, max: usize, page_bytes: usize },
    #[error("buffer pool: {0}")]
    Pool(#[from] PoolError),
    #[error("the B+-tree is corrupt: {0}; restore the image or recover it from the log")]
    Corrupt(#[from] FormatError),
    #[error(
        "the log is full: {needed} more bytes do not fit its {capacity} bytes after the checkpoint at LSN {checkpoint}; take a checkpoint (KvStore::checkpoint) or give the log more room"
    )]
    LogFull { needed: u64, capacity: u64, checkpoint: u64 },
    #[error("the log failed: {message}")]
    Log { message: String },
    /// A log write met a full disk under the device image (nothing was
    /// acknowledged); free space and reopen.
    #[error("the log failed: {message}")]
    LogDiskFull { message: String },
    #[error("recovery: {0}")]
    Recovery(String),
    #[error("the in-storage lookup failed: {0}")]
    Offload(String),
    /// The lookup program failed on the device; its PEs' retries and the
    /// commands the call issued are counted all the same.
    #[error("the in-storage lookup failed: {message} ({retries} optimistic reads retried); retry the lookup")]
    LookupFailed { message: String, retries: u64, commands: u64 },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("internal error: {0} (a bug in ndpdb-kv; please report it)")]
    Internal(String),
}

impl KvError {
    /// Whether the pool refused because all its frames are pinned.
    pub fn is_pool_full(&self) -> bool {
        matches!(self, KvError::Pool(PoolError::Full { .. }))
    }

    /// Whether the disk under the device image is full.
    pub fn is_disk_full(&self) -> bool {
        match self {
            KvError::LogDiskFull { .. } => true,
            KvError::Pool(PoolError::Device { source, .. }) => source.is_disk_full(),
            _ => false,
        }
    }

    /// A log error for device error `e`, met while `doing`.
    pub(crate) fn log(doing: std::fmt::Arguments<'_>, e: &ndpdb_device::DeviceError) -> KvError {
        let message = format!("{doing}: {e}");
        if e.is_disk_full() { KvError::LogDiskFull { message } } else { KvError::Log { message } }
    }
}
