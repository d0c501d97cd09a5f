//! The store's errors, by what the caller must do: `Corrupt`, the image is
//! damaged (report it); `InvalidInput`, the caller's mistake; `DeviceFull`,
//! make room (a checkpoint, garbage collection, a larger device);
//! `LogFull`, end open transactions so that a checkpoint can run; `Device`,
//! a device command failed; `LogDamaged`, opening would lose committed
//! records (restore the image, or accept the loss); `ReadOnly`, the store
//! was opened read-only and the call would write.

use ndpdb_device::DeviceError;
use ndpdb_format::FormatError;

use crate::recovery::LogLoss;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("corrupt data: {0}")]
    Corrupt(String),
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error(
        "the device is full: no free physical pages left of {pages}{}{}; create the database with a larger capacity",
        reserve_hint(*reserved),
        waiting_hint(*waiting)
    )]
    DeviceFull {
        pages: u64,
        /// Superseded pages that are not free yet: a durable checkpoint
        /// (and the end of older readers) would free them.
        waiting: u64,
        /// Free pages held back for the next checkpoint, which only it may
        /// write (`AllocClass` in `alloc.rs`); 0 when the checkpoint itself
        /// ran out.
        reserved: u64,
    },
    #[error(
        "the write-ahead log is full ({used} of {bytes} bytes since the last checkpoint, {needed} more needed): \
         end open transactions so that a checkpoint can run, or create the database with a larger log"
    )]
    LogFull { bytes: u64, needed: u64, used: u64 },
    #[error(
        "the write-ahead log is damaged: {0}. Nothing was changed: restore the image from a copy, or open it \
         without these records with --accept-loss (StoreOptions::accept_loss)"
    )]
    LogDamaged(Box<LogLoss>),
    #[error(
        "the device's mirror of the delta frames lost track of the log ({0}); the NDP call failed: call it again \
         (the store configures the mirror anew), or use Ship or Flush freshness"
    )]
    MirrorLost(String),
    #[error("the database is open read-only: {what} would write to the device; open it for writing")]
    ReadOnly { what: &'static str },
}

/// What recovery and salvage read: the value, or (the inner error) why the
/// bytes cannot be used, in words; the outer `Result` fails only when the
/// device stopped.
pub(crate) type OrDamage<T> = std::result::Result<T, String>;

/// Whether a device command that failed means that the page it read cannot
/// be read (a media error, a page out of range), as opposed to the device
/// having stopped (shut down, or an injected crash), after which nothing
/// more can be learned from it.
pub(crate) fn page_unreadable(e: &DeviceError) -> bool {
    !matches!(e, DeviceError::ShutDown | DeviceError::InjectedFault { .. })
}

/// The part of a full device's message about the checkpoint's reserve.
fn reserve_hint(reserved: u64) -> String {
    match reserved {
        0 => String::new(),
        n => format!(" for writes; {n} are held back so that a checkpoint can still run"),
    }
}

/// The part of a full device's message about pages on their way back.
fn waiting_hint(waiting: u64) -> String {
    match waiting {
        0 => String::new(),
        n => format!(
            " ({n} superseded pages are not free yet: a checkpoint frees them once it is durable and readers that \
             began before it have ended; garbage collection gives up more)"
        ),
    }
}

impl StoreError {
    pub(crate) fn corrupt(what: impl std::fmt::Display, e: FormatError) -> StoreError {
        StoreError::Corrupt(format!("{what}: {e}"))
    }
}

pub(crate) type Result<T> = std::result::Result<T, StoreError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A full device's message names the reserve and the pages on their way
    /// back only when there are some.
    #[test]
    fn a_full_device_says_what_would_make_room() {
        let full = |reserved, waiting| StoreError::DeviceFull { pages: 512, waiting, reserved }.to_string();
        assert_eq!(
            full(0, 0),
            "the device is full: no free physical pages left of 512; create the database with a larger capacity"
        );
        assert_eq!(
            full(45, 0),
            "the device is full: no free physical pages left of 512 for writes; 45 are held back so that a \
             checkpoint can still run; create the database with a larger capacity"
        );
        let waiting = full(0, 7);
        assert!(waiting.starts_with("the device is full: no free physical pages left of 512 (7 superseded pages"));
        assert!(waiting.ends_with("garbage collection gives up more); create the database with a larger capacity"));
    }
}
