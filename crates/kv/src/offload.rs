//! # Offloading point lookups to the device (the cooperative buffer manager)
//!
//! The host side of program `kv.lookup` (`ndpdb_device::kv_lookup`): it
//! configures the device's mirror of this store's pool once, and ships
//! lookups (`format::kv_lookup` calls) to the PEs.
//!
//! ```text
//!  configure_mirror:  attach the pool's frames (DMA-readable host memory)
//!                     MirrorConfigure { file, log ring, frames, log end LSN }
//!                     write back every dirty page (their records predate the
//!                     mirror, which reads the log from that LSN on)
//!  lookup:            Execute kv.lookup { keys, mirror?, shadow table? } ─► PEs
//!                     MemoryRead of the output range ◄── values + PE stats
//! ```
//!
//! Without the mirror (`mirror: false`: the Baseline method) the device
//! reads every node from the medium, so it misses what the host changed
//! and has not written back: its answers may be stale. That is the point of
//! the experiment, not a bug.
//!
//! The program lives in slot [`LOOKUP_SLOT`], loaded once per
//! [`KvOffload`]; its output range is kept and reused between calls, so a
//! lookup costs two commands (Execute, MemoryRead) whatever the method.

use std::sync::Arc;

use ndpdb_device::{Command, Device, HostMemory, QueuePair, RangeId, Reply};
use ndpdb_format::btree;
use ndpdb_format::kv_lookup::{Call, PeStats, SLOT_HEADER_BYTES, STATS_BYTES, decode_slot};
use parking_lot::Mutex;

use crate::error::KvError;
use crate::image::DeviceLayout;
use crate::store::KvStore;

/// The program slot `kv.lookup` is loaded into.
pub const LOOKUP_SLOT: u32 = 15;

/// One offloaded lookup call.
pub struct LookupCall<'a> {
    pub keys: &'a [Vec<u8>],
    pub pes: u32,
    /// CBM: read dirty nodes from host memory through the mirror.
    pub mirror: bool,
    /// Shadow: a `format::shadow` table, searched first.
    pub shadow: Option<&'a [u8]>,
}

/// What a lookup call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupResult {
    pub values: Vec<Option<Vec<u8>>>,
    /// Optimistic reads that found front != rear or a wrong pid.
    pub retries: u64,
    /// DMA reads of frames, and their bytes.
    pub host_reads: u64,
    pub host_read_bytes: u64,
    /// Medium reads the PEs made.
    pub medium_reads: u64,
    /// Nodes the PEs read.
    pub nodes: u64,
    /// Device commands the call submitted (counted on its queue pair).
    pub commands: u64,
    /// Modelled, device clock: the Execute's submission and the output's
    /// arrival at the host (end to end).
    pub start_ps: u64,
    pub end_ps: u64,
    /// The execution alone on the PEs.
    pub exec_start_ps: u64,
    pub exec_end_ps: u64,
}

/// A store's connection to its device for offloaded lookups.
pub struct KvOffload {
    device: Arc<Device>,
    layout: DeviceLayout,
    qp: Mutex<(QueuePair, Option<(RangeId, u64)>)>,
}

fn device_err(what: &str, e: impl std::fmt::Display) -> KvError {
    KvError::Offload(format!("{what}: {e}"))
}

impl KvOffload {
    /// Loads and activates `kv.lookup` in slot [`LOOKUP_SLOT`].
    pub fn new(device: Arc<Device>, layout: DeviceLayout) -> Result<KvOffload, KvError> {
        let mut qp = device.queue_pair();
        let load = Command::ProgramLoad { slot: LOOKUP_SLOT, name: "kv.lookup".into() };
        qp.call(load).map_err(|e| device_err("loading program kv.lookup", e))?;
        qp.call(Command::ProgramActivate { slot: LOOKUP_SLOT, active: true })
            .map_err(|e| device_err("activating program kv.lookup", e))?;
        Ok(KvOffload { device, layout, qp: Mutex::new((qp, None)) })
    }

    pub fn layout(&self) -> &DeviceLayout {
        &self.layout
    }

    /// Starts the device's mirror of `store`'s pool: registers the frames as
    /// host memory, sends `MirrorConfigure` naming the log's end, then
    /// writes back every dirty page (the mirror reads no record before that
    /// LSN). The calling thread must hold no guards of the pool.
    pub fn configure_mirror(&self, store: &KvStore) -> Result<(), KvError> {
        let l = &self.layout;
        // Splits force their records from now on: no link to a page the
        // mirror has not heard of (set before the mirror starts; splits
        // before it are written back below).
        store.mirrored.store(true, std::sync::atomic::Ordering::SeqCst);
        let frames: Arc<dyn HostMemory> = store.pool().host_memory();
        self.device.attach_host_memory(frames);
        let cmd = Command::MirrorConfigure {
            file_first_ppn: l.file_first_ppn,
            file_pages: l.file_pages,
            log_first_ppn: l.log_first_ppn,
            log_pages: l.log_pages,
            frames: l.frames,
            log_lsn: store.log().end_lsn(),
        };
        self.qp.lock().0.call(cmd).map_err(|e| device_err("configuring the mirror", e))?;
        store.pool().write_back_all()?;
        Ok(())
    }

    /// Looks `call.keys` up on the device's PEs.
    pub fn lookup(&self, call: &LookupCall<'_>) -> Result<LookupResult, KvError> {
        let l = &self.layout;
        let slot_bytes = (SLOT_HEADER_BYTES + btree::max_entry_bytes(l.page_bytes)) as u32;
        let params = Call {
            mirror: call.mirror,
            root_pid: l.root_pid,
            file_first_ppn: l.file_first_ppn,
            file_pages: l.file_pages,
            slot_bytes,
            keys: call.keys.iter().map(Vec::as_slice).collect(),
            shadow: call.shadow,
        };
        let out_bytes = params.output_bytes(call.pes);
        let mut guard = self.qp.lock();
        let (qp, kept) = &mut *guard;
        let submitted_before = qp.submitted();
        let range = match *kept {
            Some((r, bytes)) if bytes >= out_bytes => r,
            _ => {
                if let Some((r, _)) = kept.take() {
                    qp.call(Command::MemoryRangeDelete { range: r }).map_err(|e| device_err("freeing a range", e))?;
                }
                let reply = qp.call(Command::MemoryRangeCreate { bytes: out_bytes });
                let Reply::Range(r) = reply.map_err(|e| device_err("reserving the output range", e))? else {
                    return Err(KvError::Offload("the device answered a range request without a range".into()));
                };
                *kept = Some((r, out_bytes));
                r
            }
        };
        let exec = Command::Execute { slot: LOOKUP_SLOT, pes: call.pes, params: params.encode(), ranges: vec![range] };
        let done = qp.call_timed(exec).map_err(|e| device_err("submitting the lookup", e))?;
        let done = match done.result {
            Ok(Reply::Executed(report)) => (done.submitted_ps, report),
            Ok(_) => return Err(KvError::Offload("the device answered Execute without a report".into())),
            Err(e) => {
                let message = format!("the lookup program: {e}");
                let retries = failed_retries(qp, range, call.pes);
                let commands = qp.submitted() - submitted_before;
                return Err(KvError::LookupFailed { message, retries, commands });
            }
        };
        let (submitted_ps, report) = done;
        let read = qp
            .call_timed(Command::MemoryRead { range, offset: 0, len: out_bytes })
            .map_err(|e| device_err("reading the lookup's output", e))?;
        let end_ps = read.completed_ps;
        let out = read.result.map_err(|e| device_err("reading the lookup's output", e))?.into_data();
        let commands = qp.submitted() - submitted_before;
        drop(guard);
        let mut result = LookupResult {
            values: Vec::with_capacity(call.keys.len()),
            retries: 0,
            host_reads: 0,
            host_read_bytes: 0,
            medium_reads: report.medium_reads,
            nodes: 0,
            commands,
            start_ps: submitted_ps,
            end_ps,
            exec_start_ps: report.start_ps,
            exec_end_ps: report.end_ps,
        };
        for pe in 0..call.pes as usize {
            let s = PeStats::decode(&out[pe * STATS_BYTES..]).map_err(|e| device_err("the lookup's output", e))?;
            result.retries += s.retries;
            result.host_reads += s.host_reads;
            result.host_read_bytes += s.host_read_bytes;
            result.nodes += s.nodes;
        }
        let base = call.pes as usize * STATS_BYTES;
        for i in 0..call.keys.len() {
            let at = base + i * slot_bytes as usize;
            let slot = decode_slot(&out[at..at + slot_bytes as usize]).map_err(|e| device_err("a lookup slot", e))?;
            result.values.push(slot.map(<[u8]>::to_vec));
        }
        Ok(result)
    }
}

/// The retries a failed call's PEs left in its output range (the program
/// writes its statistics before it fails); 0 if they cannot be read. One
/// more command, on failures only.
fn failed_retries(qp: &mut QueuePair, range: RangeId, pes: u32) -> u64 {
    let len = u64::from(pes) * STATS_BYTES as u64;
    let Ok(reply) = qp.call(Command::MemoryRead { range, offset: 0, len }) else {
        return 0;
    };
    let out = reply.into_data();
    (0..pes as usize)
        .filter_map(|pe| out.get(pe * STATS_BYTES..).and_then(|b| PeStats::decode(b).ok()))
        .map(|s| s.retries)
        .sum()
}
