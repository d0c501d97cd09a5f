//! Transaction errors. Each variant says what the caller must do.

use ndpdb_locktable::LockError;
use ndpdb_storage::StoreError;

/// Errors say what the caller must do: `Serialization` and `Deadlock` mean
/// retry the transaction; `NotFound` and `InvalidInput` are the caller's
/// mistake; `Store` wraps device and corruption errors.
#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    #[error("could not serialize access due to {0}; retry the transaction")]
    Serialization(&'static str),
    #[error("deadlock detected; retry the transaction")]
    Deadlock,
    #[error("tuple {vid} of {table} does not exist in this transaction's snapshot")]
    NotFound { table: String, vid: u64 },
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("the transaction has ended (it committed, aborted or failed); begin a new one")]
    Ended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub(crate) type Result<T> = std::result::Result<T, TxnError>;

/// A lock-table failure: the caller misused it (a bug) or was cancelled.
pub(crate) fn lock_error(e: LockError) -> TxnError {
    TxnError::InvalidInput(format!("tuple lock: {e}"))
}
