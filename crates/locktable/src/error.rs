//! Lock errors. Each variant says what the caller must do: fix its
//! configuration or input (`InvalidSize`, `InvalidTimestamp`), abort the
//! transaction (`Timeout`, `Cancelled`), or fix its own bookkeeping
//! (`NotHolder` is a caller bug).

use crate::bucket::LockKey;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    #[error(
        "lock table size {bytes} B is {reason}; choose a power of two between 64 B and 1 GiB (the default is 4 MiB)"
    )]
    InvalidSize { bytes: usize, reason: &'static str },
    #[error(
        "transaction timestamp {ts:#x} cannot be locked with: timestamps must be in 1..=2^62-1 \
         (0 marks an empty slot, bits 62 and 63 are the bucket's flags)"
    )]
    InvalidTimestamp { ts: u64 },
    #[error(
        "transaction {ts} gave up waiting for the lock on {key} (held by {holder:?}); abort it and retry \
         (a deadlock, or a long-running holder)"
    )]
    Timeout { key: LockKey, ts: u64, holder: Option<u64> },
    #[error("transaction {ts}'s request for the lock on {key} was cancelled (deadlock victim or abort); abort it")]
    Cancelled { key: LockKey, ts: u64 },
    #[error(
        "transaction {ts} does not hold the lock on {key} (holder {holder:?}): a bug in the caller, which may \
         unlock only keys whose `lock` returned `Grant::Acquired`, once"
    )]
    NotHolder { key: LockKey, ts: u64, holder: Option<u64> },
    #[error(
        "bucket {bucket} of the lock table holds {found:#x} in word 0: the cache-line floor measurement \
         (`ndpdb_bench::locks::host_bench::bench_line_floor`) needs a table no transaction uses; run it on a \
         table of its own"
    )]
    NotIdle { bucket: usize, found: u64 },
}

/// Rejects timestamps the slots cannot hold.
pub(crate) fn check_ts(ts: u64) -> Result<(), LockError> {
    if crate::protocol::valid_ts(ts) { Ok(()) } else { Err(LockError::InvalidTimestamp { ts }) }
}
