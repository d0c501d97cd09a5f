//! `work_mem` accounting: each hash table and sort owns a [`Reservation`]
//! and grows it by the bytes it keeps (Arrow buffers it holds, encoded
//! keys, per-group states). Over the limit the operator fails with 53200
//! and a hint naming `work_mem`, or, where it can, spills
//! ([`Reservation::try_grow`] tells it when; `spill.rs`,
//! `docs/execution.md`).
//!
//! The counts are estimates of the heap bytes the operator keeps alive,
//! not of the allocator's footprint: an Arrow array's
//! `get_array_memory_size`, a key's byte length plus a fixed per-entry
//! overhead for the hash map.

use crate::error::{Result, SqlError, SqlState};

/// Bytes a hash-map entry costs besides its key (bucket, group id, Vec).
pub const ENTRY_OVERHEAD_BYTES: usize = 48;

/// The bytes one operator holds against `work_mem`.
#[derive(Debug)]
pub struct Reservation {
    operator: &'static str,
    limit_bytes: usize,
    used_bytes: usize,
}

impl Reservation {
    pub fn new(operator: &'static str, limit_bytes: usize) -> Reservation {
        Reservation { operator, limit_bytes, used_bytes: 0 }
    }

    /// Counts `bytes` more; fails once the total passes the limit.
    pub fn grow(&mut self, bytes: usize) -> Result<()> {
        self.used_bytes = self.used_bytes.saturating_add(bytes);
        if self.used_bytes > self.limit_bytes {
            return Err(out_of_memory(self.operator, self.used_bytes, self.limit_bytes));
        }
        Ok(())
    }

    /// Counts `bytes` more if the total stays within the limit; false
    /// (and nothing counted) otherwise: the caller spills.
    pub fn try_grow(&mut self, bytes: usize) -> bool {
        match self.used_bytes.checked_add(bytes) {
            Some(total) if total <= self.limit_bytes => {
                self.used_bytes = total;
                true
            }
            _ => false,
        }
    }

    /// Counts `bytes` more even past the limit: the least an operator
    /// that spills must hold (one batch) when that alone is over it.
    pub fn force_grow(&mut self, bytes: usize) {
        self.used_bytes = self.used_bytes.saturating_add(bytes);
    }

    /// Counts nothing held any more (the operator spilled it).
    pub fn release_all(&mut self) {
        self.used_bytes = 0;
    }

    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }

    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }
}

fn out_of_memory(operator: &str, used: usize, limit: usize) -> SqlError {
    SqlError::new(SqlState::OUT_OF_MEMORY, "out of memory")
        .with_detail(format!("{operator} needs more than {used} bytes; work_mem is {limit} bytes"))
        .with_hint("Raise work_mem (SET work_mem = '256MB'), or make the query's hash tables and sorts smaller.")
}
