//! Device DRAM: the budget the profile gives NDP (`[dram] ndp_mib`) and the
//! memory ranges the host creates in it (NVMe Subsystem Local Memory).
//!
//! Every byte a program or a range holds is reserved against the budget first;
//! a request that does not fit fails with `DeviceMemoryExhausted`. Emulated
//! DRAM is host memory: a profile whose budget exceeds what the host can give
//! fails with `HostMemory` when an allocation cannot be made, never with an
//! abort. Reservations are released when their holder drops.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::error::DeviceError;

#[derive(Debug)]
pub(crate) struct Budget {
    limit: u64,
    used: AtomicU64,
}

impl Budget {
    pub fn new(limit: u64) -> Arc<Budget> {
        Arc::new(Budget { limit, used: AtomicU64::new(0) })
    }

    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Result<Reservation, DeviceError> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = used
                .checked_add(bytes)
                .filter(|n| *n <= self.limit)
                .ok_or(DeviceError::DeviceMemoryExhausted { requested: bytes, in_use: used, budget: self.limit })?;
            match self.used.compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    debug_assert!(next <= self.limit);
                    return Ok(Reservation { budget: self.clone(), bytes });
                }
                Err(now) => used = now,
            }
        }
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

/// Device DRAM held until drop.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let before = self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
        debug_assert!(before >= self.bytes, "a release matches its reservation");
    }
}

/// A host-created memory range: bytes in device DRAM.
#[derive(Debug)]
pub(crate) struct Range {
    pub bytes: RwLock<Vec<u8>>,
    _reservation: Reservation,
}

#[derive(Debug)]
pub(crate) struct Ranges {
    budget: Arc<Budget>,
    next: Mutex<(u32, BTreeMap<u32, Arc<Range>>)>,
}

/// Ranges a single host may hold at once (a limit on everything).
pub const RANGES_MAX: usize = 4096;

impl Ranges {
    pub fn new(budget: Arc<Budget>) -> Ranges {
        Ranges { budget, next: Mutex::new((1, BTreeMap::new())) }
    }

    pub fn create(&self, bytes: u64) -> Result<u32, DeviceError> {
        let reservation = self.budget.reserve(bytes)?;
        let mut g = self.next.lock();
        if g.1.len() >= RANGES_MAX {
            return Err(DeviceError::InvalidCommand {
                what: format!("at most {RANGES_MAX} memory ranges may exist at once; delete some"),
            });
        }
        let id = g.0;
        g.0 = g.0.wrapping_add(1).max(1);
        let range = Range { bytes: RwLock::new(zeroed(bytes)?), _reservation: reservation };
        g.1.insert(id, Arc::new(range));
        Ok(id)
    }

    pub fn delete(&self, id: u32) -> Result<(), DeviceError> {
        self.next.lock().1.remove(&id).map(|_| ()).ok_or(DeviceError::NoSuchRange { range: id })
    }

    pub fn get(&self, id: u32) -> Result<Arc<Range>, DeviceError> {
        self.next.lock().1.get(&id).cloned().ok_or(DeviceError::NoSuchRange { range: id })
    }
}

/// `bytes` zero bytes of host memory, or `HostMemory` if there are none.
/// The allocator's zeroed allocation: a large range is mapped lazily, so
/// creating it costs no memset and only the pages a program writes are
/// ever touched (a rows call's output range is sized for every VID and
/// mostly unused).
pub(crate) fn zeroed(bytes: u64) -> Result<Vec<u8>, DeviceError> {
    let n = usize::try_from(bytes).map_err(|_| DeviceError::HostMemory { bytes })?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(n).map_err(|_| DeviceError::HostMemory { bytes })?;
    // SAFETY: `layout` has a non-zero size (n > 0).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(DeviceError::HostMemory { bytes });
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout
    // of `n` u8s (so capacity n), and all n bytes are initialised (zero).
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

pub(crate) fn check_span(what: &str, offset: u64, len: u64, size: usize) -> Result<(), DeviceError> {
    match offset.checked_add(len) {
        Some(end) if end <= size as u64 => Ok(()),
        _ => Err(DeviceError::OutOfRange {
            what: format!("{what}: bytes {offset}..{} of a {size}-byte range", offset.saturating_add(len)),
        }),
    }
}
