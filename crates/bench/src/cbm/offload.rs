//! # The seam between the experiment and the device's lookup
//!
//! Everything the experiment needs from the store on the device and from
//! the device's in-storage lookup goes through [`Offload`]: the rest of
//! `cbm/` (workload, threads, freshness, shadow memtable, output) knows
//! nothing else about them. Two parts of issue 16 fill it in for real:
//!
//! | method of the seam | backed by (when merged) |
//! |---|---|
//! | [`StoreSpec::create`] | `KvStore::create_on` (store, log ring and mirror layout on the image) |
//! | [`Offload::prepare`] | `KvStore::configure_mirror` (CBM, once) |
//! | [`Offload::encode_shadow`] | `format::shadow::encode` (Shadow) |
//! | [`Offload::lookup`] | `KvStore::offload_lookup` with one key |
//!
//! **Today** ([`InterimOffload`]) only what exists on main backs it: the
//! store on `bufmgr::DevicePageIo` over a real `softssd` device with an
//! in-memory log, and a lookup that walks the tree's pages *from the
//! medium* (`Command::PageRead`, through the device's queues, timed by the
//! device model) with the shared `format::btree::search::lookup`. That is a
//! real Baseline (no synchronisation: it reads stale pages) and, after
//! `flush_dirty`, a real Flush. It is the interim until the device program
//! lands: the lookup runs on the host, not on the PEs, so its latency is
//! the page reads' round trips rather than one `Execute`, and it moves
//! every page it reads over the link. CBM and Shadow are refused with
//! [`NotBuilt`]; no figure of theirs is ever invented.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use ndpdb_bufmgr::{BufferPool, DevicePageIo, PoolConfig};
use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile, Reply};
use ndpdb_format::btree::{LookupError, lookup};
use ndpdb_kv::{KvLog, KvOptions, KvStore, MemoryKvLog, PoolLog};
use parking_lot::Mutex;

use super::Method;

/// Where a store goes and how large its pool is.
#[derive(Debug, Clone)]
pub struct StoreSpec {
    pub profile: Profile,
    pub clock: ClockKind,
    /// Frames of the host pool.
    pub frames: usize,
    /// Pages the store's file may grow to.
    pub file_pages: u64,
}

/// The first physical page of the store's file (pages before it are left
/// for the image's own use and, with `create_on`, the root slots and log).
pub const FIRST_PPN: u64 = 16;

/// The interim store's log (in memory; bounded like `create_on`'s ring, so
/// the store checkpoints when it is half full and memory stays bounded at
/// the paper's size).
pub const LOG_BYTES: u64 = 256 << 20;

/// A method this build cannot run yet, and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotBuilt {
    pub method: Method,
    pub needs: &'static str,
}

impl std::fmt::Display for NotBuilt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: not built yet (needs {})", self.method.name(), self.needs)
    }
}

impl std::error::Error for NotBuilt {}

/// One lookup call's freshness options (the seam's `LookupCall` of one key).
#[derive(Debug, Clone, Copy, Default)]
pub struct Call<'a> {
    /// CBM: read dirty nodes from host memory through the mirror.
    pub mirror: bool,
    /// Shadow: a `format::shadow` table, searched first.
    pub shadow: Option<&'a [u8]>,
}

/// One completed lookup (the seam's `LookupResult` of one key).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lookup {
    pub value: Option<Vec<u8>>,
    /// Optimistic reads of host frames that saw front != rear (CBM).
    pub retries: u64,
    /// DMA reads of host frames, and their bytes (CBM).
    pub host_reads: u64,
    pub host_read_bytes: u64,
    /// Node reads from the medium.
    pub medium_reads: u64,
    /// Device commands the call issued (the interim: one page read per
    /// node; the device program: one `Execute`, plus the shadow table's
    /// transfer).
    pub commands: u64,
    /// On the device's model clock.
    pub start_ps: u64,
    pub end_ps: u64,
}

/// The store and the device's lookup, as the experiment uses them.
pub trait Offload: Send + Sync {
    fn store(&self) -> &KvStore;
    fn device(&self) -> &Arc<Device>;
    /// How lookups are answered, for every row (`lookup_path`).
    fn lookup_path(&self) -> &'static str;
    /// Whether `method` runs on this implementation.
    fn built(&self, method: Method) -> Result<(), NotBuilt>;
    /// Before each cell of `method`; idempotent (CBM: configure the mirror
    /// the first time).
    fn prepare(&self, method: Method) -> Result<()>;
    /// The shadow memtable's pairs (sorted, `None` a delete) as the table
    /// shipped with each Shadow call.
    fn encode_shadow(&self, pairs: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<Vec<u8>>;
    /// One in-storage point lookup. `Err` is a lookup that could not
    /// finish (a node that does not parse: a torn view of the tree).
    fn lookup(&self, key: &[u8], call: Call<'_>) -> Result<Lookup>;
}

/// Today's [`Offload`]: the store on the device through `DevicePageIo`, the
/// lookup on the host from the medium (see the module's note).
pub struct InterimOffload {
    device: Arc<Device>,
    io: Arc<DevicePageIo>,
    store: KvStore,
    /// The lookup's queue pair (one OLAP thread).
    qp: Mutex<ndpdb_device::QueuePair>,
}

impl StoreSpec {
    /// A new device image in `dir` with an empty store on it.
    pub fn create(&self, dir: &Path) -> Result<InterimOffload> {
        let page_bytes = u64::from(self.profile.page_bytes());
        let capacity = (FIRST_PPN + self.file_pages) * page_bytes;
        let opts = DeviceOptions::with_clock(self.clock);
        let device = Arc::new(Device::create(dir, self.profile.clone(), Some(capacity), opts)?);
        let io = Arc::new(DevicePageIo::new(device.clone(), FIRST_PPN, 0, self.file_pages)?);
        let log: Arc<dyn KvLog> = Arc::new(MemoryKvLog::with_capacity(LOG_BYTES));
        let config = PoolConfig { frames: self.frames, page_bytes: io.page_bytes() };
        let pool = Arc::new(BufferPool::new(config, io.clone(), Arc::new(PoolLog(log.clone())))?);
        let store = KvStore::create(pool, log, KvOptions { sync: true, ..KvOptions::default() })
            .context("creating the key-value store on the device")?;
        let qp = Mutex::new(device.queue_pair());
        Ok(InterimOffload { device, io, store, qp })
    }
}

impl Offload for InterimOffload {
    fn store(&self) -> &KvStore {
        &self.store
    }

    fn device(&self) -> &Arc<Device> {
        &self.device
    }

    fn lookup_path(&self) -> &'static str {
        "interim: host walks the tree from the medium with PageRead"
    }

    fn built(&self, method: Method) -> Result<(), NotBuilt> {
        match method {
            Method::Baseline | Method::Flush => Ok(()),
            Method::Shadow => Err(NotBuilt {
                method,
                needs: "format::shadow::encode and KvStore::offload_lookup with a shadow table (issue 16, mirror)",
            }),
            Method::Cbm => Err(NotBuilt {
                method,
                needs: "the device's mirror cache, KvStore::configure_mirror and offload_lookup (issue 16, mirror)",
            }),
        }
    }

    fn prepare(&self, method: Method) -> Result<()> {
        self.built(method)?;
        Ok(())
    }

    fn encode_shadow(&self, _pairs: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<Vec<u8>> {
        Err(self.built(Method::Shadow).unwrap_err().into())
    }

    fn lookup(&self, key: &[u8], call: Call<'_>) -> Result<Lookup> {
        if call.mirror {
            return Err(self.built(Method::Cbm).unwrap_err().into());
        }
        if call.shadow.is_some() {
            return Err(self.built(Method::Shadow).unwrap_err().into());
        }
        let mut qp = self.qp.lock();
        let start_ps = self.device.now_ps();
        let (mut end_ps, mut reads) = (start_ps, 0);
        let found = lookup(self.store.root(), key, |pid| {
            let c = qp.call_timed(Command::PageRead { ppn: self.io.ppn(pid), host_addr: None })?;
            end_ps = end_ps.max(c.completed_ps);
            reads += 1;
            match c.result? {
                Reply::Data(page) => Ok(page),
                other => Err(anyhow::anyhow!("the device answered a page read with {other:?}")),
            }
        });
        let found = found.map_err(|e| match e {
            LookupError::Fetch { pid, source } => source.context(format!("reading B+-tree page {pid}")),
            LookupError::Corrupt(e) => anyhow::Error::new(e).context("the tree on the medium"),
        })?;
        Ok(Lookup {
            value: found.map(|f| f.value().to_vec()),
            medium_reads: reads,
            commands: reads,
            start_ps,
            end_ps,
            ..Lookup::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use ndpdb_workload::ycsb::{key, value};

    use super::*;

    /// Baseline's staleness, deterministically: an update the pool holds
    /// dirty is not on the medium; after `flush_dirty` it is.
    #[test]
    fn the_interim_lookup_reads_the_medium_stale_until_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let (profile, _) = super::super::Config::quick().profile_16k();
        let spec = StoreSpec { profile, clock: ClockKind::Virtual, frames: 32, file_pages: 512 };
        let off = spec.create(dir.path()).unwrap();
        for i in 0..500 {
            off.store().put(&key(i), &value(i, 0, 1024)).unwrap();
        }
        off.store().checkpoint().unwrap();
        let k = key(7);
        assert_eq!(off.lookup(&k, Call::default()).unwrap().value, Some(value(7, 0, 1024)));
        assert!(off.store().update(&k, &value(7, 1, 1024)).unwrap());
        let l = off.lookup(&k, Call::default()).unwrap();
        assert_eq!(l.value, Some(value(7, 0, 1024)), "stale: the new value is in a dirty frame only");
        assert!(l.medium_reads >= 2 && l.commands == l.medium_reads && l.end_ps > l.start_ps, "{l:?}");
        off.store().pool().flush_dirty().unwrap();
        assert_eq!(off.lookup(&k, Call::default()).unwrap().value, Some(value(7, 1, 1024)));
        assert_eq!(off.lookup(&key(10_000), Call::default()).unwrap().value, None);
        for call in [Call { mirror: true, shadow: None }, Call { mirror: false, shadow: Some(b"t") }] {
            let e = off.lookup(&k, call).unwrap_err();
            assert!(e.downcast_ref::<NotBuilt>().is_some(), "{e}");
        }
        assert!(off.built(Method::Baseline).is_ok() && off.built(Method::Flush).is_ok());
        assert!(off.encode_shadow(&[]).is_err());
    }
}
