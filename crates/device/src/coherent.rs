//! The coherent shared-memory region: how PEs reach the host's lock table.
//!
//! ccSLT (EDBT'22) puts the tuple lock table in cache-coherent shared
//! virtual memory (CCIX there, CXL later): host and device read and CAS the
//! same 64-byte buckets, and the interconnect keeps both sides' caches
//! coherent. The emulation has one address space, so the table is simply
//! host memory ([`ndpdb_locktable::LockTable`]) that the host attaches to the
//! device ([`crate::Device::attach_lock_table`]); host threads use it with
//! real atomics at real cost.
//!
//! A PE reaches it only through [`DeviceWords`], which performs the same
//! atomics and charges the profile's `[coherent]` costs to the PE's clock:
//!
//! | access | charge |
//! |---|---|
//! | load of a line unchanged since this PE last saw it (cached in its coherence agent) | `local_hit_ns` |
//! | load of a line another agent changed, or never seen | `remote_atomic_ns` |
//! | store or compare-and-swap | `remote_atomic_ns` |
//!
//! "Unchanged" is decided by content: the PE's agent keeps a copy of each
//! bucket it read, and a load is a hit when the bucket still holds those
//! words. That is what an invalidation protocol gives, except after an ABA
//! change (another agent changed the line and changed it back), which a
//! real agent would count as a miss; the difference is one miss per ABA.
//!
//! A PE that waits for a lock polls its bucket: each poll of an unchanged
//! bucket costs a local hit, as in the paper. The number of polls depends on
//! how long the host takes in real time, so the modelled length of a wait on
//! a host transaction is not meaningful under the virtual clock; latencies
//! of uncontended and handed-over requests are.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

use ndpdb_locktable::protocol::SLOTS;
use ndpdb_locktable::{BucketWords, LockTable};

/// A PE's access to the lock table's words, with its coherence charges.
pub struct DeviceWords<'a> {
    table: &'a LockTable,
    local_ps: u64,
    remote_ps: u64,
    /// Buckets in this PE's coherence agent, with the words it last saw.
    cached: RefCell<HashMap<usize, [u64; SLOTS]>>,
    charged_ps: Cell<u64>,
    local_hits: Cell<u64>,
    remote: Cell<u64>,
}

impl<'a> DeviceWords<'a> {
    pub(crate) fn new(table: &'a LockTable, local_ps: u64, remote_ps: u64) -> DeviceWords<'a> {
        DeviceWords {
            table,
            local_ps,
            remote_ps,
            cached: RefCell::new(HashMap::new()),
            charged_ps: Cell::new(0),
            local_hits: Cell::new(0),
            remote: Cell::new(0),
        }
    }

    pub fn table(&self) -> &'a LockTable {
        self.table
    }

    /// Charges taken since the last call: (picoseconds, local hits, remote accesses).
    pub(crate) fn take_charges(&self) -> (u64, u64, u64) {
        (self.charged_ps.replace(0), self.local_hits.replace(0), self.remote.replace(0))
    }

    fn charge_remote(&self, bucket: usize) {
        self.charged_ps.set(self.charged_ps.get() + self.remote_ps);
        self.remote.set(self.remote.get() + 1);
        self.cached.borrow_mut().insert(bucket, self.table.buckets()[bucket].words());
    }
}

impl BucketWords for DeviceWords<'_> {
    fn load(&self, bucket: usize, slot: usize, order: Ordering) -> u64 {
        let now = self.table.buckets()[bucket].words();
        let hit = self.cached.borrow().get(&bucket) == Some(&now);
        if hit {
            self.charged_ps.set(self.charged_ps.get() + self.local_ps);
            self.local_hits.set(self.local_hits.get() + 1);
        } else {
            self.charge_remote(bucket);
        }
        self.table.buckets()[bucket].slot(slot).load(order)
    }

    fn store(&self, bucket: usize, slot: usize, value: u64, order: Ordering) {
        self.table.buckets()[bucket].slot(slot).store(value, order);
        self.charge_remote(bucket);
    }

    fn compare_exchange(
        &self,
        bucket: usize,
        slot: usize,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        let r = self.table.buckets()[bucket].slot(slot).compare_exchange(current, new, success, failure);
        self.charge_remote(bucket);
        r
    }
}
