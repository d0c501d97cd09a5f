//! # The seam between the experiment and the device's lookup
//!
//! Everything the experiment needs from the store on the device and from
//! the device's in-storage lookup goes through [`Offload`]: the rest of
//! `cbm/` (workload, threads, freshness, shadow memtable, output) knows
//! nothing else about them. [`DeviceOffload`] fills it in with the real
//! parts of `ndpdb-kv`:
//!
//! | method of the seam | backed by |
//! |---|---|
//! | [`StoreSpec::create`] | `KvStore::create_on` (root slots, log ring and file on the image) and `KvOffload::new` (loads `kv.lookup`) |
//! | [`Offload::prepare`] | `KvOffload::configure_mirror` (CBM, once) |
//! | [`Offload::encode_shadow`] | `format::shadow::encode` (Shadow) |
//! | [`Offload::lookup`] | `KvOffload::lookup` with one key on the PEs |
//!
//! ```text
//!  image:  [root slots | log ring (LOG_PAGES) | file (file_pages)]
//!  host:   KvStore ── pool frames (DMA-readable) ── PageRead/PageWrite, log PageWrites
//!  device: mirror (CBM) ◄── the same commands;  kv.lookup on the PEs
//! ```
//!
//! The store's log is the on-device ring, so every commit is a device
//! command: the mirror reads the PIDs it makes dirty from those writes, and
//! the commands per host operation compare across methods. The mirror is
//! configured the first time a CBM cell prepares (after the load and the
//! checkpoint, with no guard held) and stays in device memory for the rest
//! of the run; the other methods never ask for it, so it changes nothing
//! for them (it costs no command).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_kv::{KvOffload, KvOptions, KvStore, LookupCall};

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

/// The store's root slots (`create_on` uses the first two pages).
pub const FIRST_PPN: u64 = 0;

/// Pages of the store's log ring (128 MiB at 16 KiB pages): the store
/// checkpoints when it is half full.
pub const LOG_PAGES: u64 = 8192;

/// The root slots before the log (`ndpdb-kv`'s image layout).
const SLOT_PAGES: u64 = 2;

/// Processing elements per lookup call (one key per call).
pub const LOOKUP_PES: u32 = 1;

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
    /// Device commands the call issued, counted on its queue pair: `Execute`
    /// (the shadow table in its parameters) and the `MemoryRead` of its
    /// output, and the output range's reservation when a call first needs it.
    pub commands: u64,
    /// On the device's model clock: the `Execute`'s submission and the
    /// output's arrival.
    pub start_ps: u64,
    pub end_ps: u64,
}

/// The store and the device's lookup, as the experiment uses them.
pub trait Offload: Send + Sync {
    fn store(&self) -> &KvStore;
    fn device(&self) -> &Arc<Device>;
    /// How lookups are answered, for every row (`lookup_path`).
    fn lookup_path(&self) -> &'static str;
    /// Before each cell of `method`; idempotent (CBM: configure the mirror
    /// the first time). The caller holds no guard of the pool.
    fn prepare(&self, method: Method) -> Result<()>;
    /// The shadow memtable's pairs (sorted, `None` a delete) as the table
    /// shipped with each Shadow call.
    fn encode_shadow(&self, pairs: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<Vec<u8>>;
    /// One in-storage point lookup. `Err` is a lookup that could not
    /// finish (a node that does not parse, retries exhausted).
    fn lookup(&self, key: &[u8], call: Call<'_>) -> Result<Lookup>;
}

/// The [`Offload`] of the real parts: the store on the device image and
/// `kv.lookup` on the device's PEs.
pub struct DeviceOffload {
    device: Arc<Device>,
    store: KvStore,
    offload: KvOffload,
    mirror_configured: AtomicBool,
}

impl StoreSpec {
    /// A new device image in `dir` with an empty store on it
    /// (`KvStore::create_on`) and the lookup program loaded.
    pub fn create(&self, dir: &Path) -> Result<DeviceOffload> {
        let page_bytes = u64::from(self.profile.page_bytes());
        let pages = SLOT_PAGES + LOG_PAGES + self.file_pages;
        let opts = DeviceOptions::with_clock(self.clock);
        let device = Arc::new(Device::create(dir, self.profile.clone(), Some(pages * page_bytes), opts)?);
        let kv = KvOptions {
            sync: true,
            frames: self.frames,
            first_ppn: FIRST_PPN,
            pages: Some(pages),
            log_pages: LOG_PAGES,
            ..KvOptions::default()
        };
        let store =
            KvStore::create_on(device.clone(), kv).context("creating the key-value store on the device image")?;
        let layout = store.layout().context("a store made by create_on has a device layout")?;
        let offload = KvOffload::new(device.clone(), layout).context("loading the lookup program")?;
        Ok(DeviceOffload { device, store, offload, mirror_configured: AtomicBool::new(false) })
    }
}

impl Offload for DeviceOffload {
    fn store(&self) -> &KvStore {
        &self.store
    }

    fn device(&self) -> &Arc<Device> {
        &self.device
    }

    fn lookup_path(&self) -> &'static str {
        "device program kv.lookup on the PEs (one key per call)"
    }

    fn prepare(&self, method: Method) -> Result<()> {
        if method == Method::Cbm && !self.mirror_configured.swap(true, Ordering::SeqCst) {
            let done = self.offload.configure_mirror(&self.store).context("configuring the device's mirror");
            if done.is_err() {
                self.mirror_configured.store(false, Ordering::SeqCst);
            }
            done?;
        }
        Ok(())
    }

    fn encode_shadow(&self, pairs: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<Vec<u8>> {
        Ok(ndpdb_format::shadow::encode(pairs))
    }

    fn lookup(&self, key: &[u8], call: Call<'_>) -> Result<Lookup> {
        let keys = [key.to_vec()];
        let call = LookupCall { keys: &keys, pes: LOOKUP_PES, mirror: call.mirror, shadow: call.shadow };
        let r = self.offload.lookup(&call)?;
        let value = r.values.into_iter().next().context("the lookup answered no slot for its one key")?;
        Ok(Lookup {
            value,
            retries: r.retries,
            host_reads: r.host_reads,
            host_read_bytes: r.host_read_bytes,
            medium_reads: r.medium_reads,
            commands: r.commands,
            start_ps: r.start_ps,
            end_ps: r.end_ps,
        })
    }
}

#[cfg(test)]
mod tests {
    use ndpdb_workload::ycsb::{key, value};

    use super::*;

    /// The four methods on one store: a value the pool holds dirty is stale
    /// without synchronisation, fresh through the mirror, through a shadow
    /// table, and after a flush.
    #[test]
    fn each_method_sees_what_it_should_of_a_dirty_page() {
        let dir = tempfile::tempdir().unwrap();
        let (profile, _) = super::super::Config::quick().profile_16k();
        let spec = StoreSpec { profile, clock: ClockKind::Virtual, frames: 32, file_pages: 512 };
        let off = spec.create(dir.path()).unwrap();
        for i in 0..500 {
            off.store().put(&key(i), &value(i, 0, 1024)).unwrap();
        }
        off.store().checkpoint().unwrap();
        off.prepare(Method::Cbm).unwrap();
        off.prepare(Method::Cbm).unwrap();
        let k = key(7);
        let (old, new) = (value(7, 0, 1024), value(7, 1, 1024));
        assert_eq!(off.lookup(&k, Call::default()).unwrap().value, Some(old.clone()));
        assert!(off.store().update(&k, &new).unwrap());
        let base = off.lookup(&k, Call::default()).unwrap();
        assert_eq!(base.value, Some(old), "Baseline: the new value is in a dirty frame only");
        assert!(base.medium_reads >= 2 && base.host_reads == 0 && base.end_ps > base.start_ps, "{base:?}");
        assert_eq!(base.commands, 2, "Execute and MemoryRead (an earlier lookup reserved the output range)");
        let cbm = off.lookup(&k, Call { mirror: true, shadow: None }).unwrap();
        assert_eq!(cbm.value, Some(new.clone()), "CBM reads the dirty leaf from host memory");
        assert!(cbm.host_reads >= 1 && cbm.host_read_bytes >= 16 << 10, "{cbm:?}");
        let table = off.encode_shadow(&[(k.to_vec(), Some(new.clone()))]).unwrap();
        let shadow = off.lookup(&k, Call { mirror: false, shadow: Some(&table) }).unwrap();
        assert_eq!(shadow.value, Some(new.clone()), "Shadow finds the pair in the table");
        off.store().pool().flush_dirty().unwrap();
        assert_eq!(off.lookup(&k, Call::default()).unwrap().value, Some(new), "Flush: on the medium now");
        assert_eq!(off.lookup(&key(10_000), Call { mirror: true, shadow: None }).unwrap().value, None);
    }
}
