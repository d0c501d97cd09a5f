//! Exact counters. Everything that crosses the link, touches the medium or
//! runs on a PE is counted here, deterministically: the same commands give
//! the same counts on every clock and every machine.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::Serialize;

/// Bytes of one submission queue entry and one completion queue entry, as in
/// NVMe; every command moves one of each over the link.
pub const SQE_BYTES: u64 = 64;
pub const CQE_BYTES: u64 = 16;

#[derive(Debug, Default)]
pub(crate) struct Cells {
    pub link_bytes_to_device: AtomicU64,
    pub link_bytes_to_host: AtomicU64,
    pub medium_bytes_read: AtomicU64,
    pub medium_bytes_written: AtomicU64,
    pub medium_reads: AtomicU64,
    pub medium_writes: AtomicU64,
    pub completions: AtomicU64,
    pub late_completions: AtomicU64,
    pub coherent_local_hits: AtomicU64,
    pub coherent_remote: AtomicU64,
    pub dma_reads: AtomicU64,
    pub dma_bytes_read: AtomicU64,
    pub host_page_retries: AtomicU64,
    pub commands: Mutex<BTreeMap<&'static str, u64>>,
    pub pe_busy_ps: Mutex<Vec<u64>>,
}

impl Cells {
    pub fn add(cell: &AtomicU64, n: u64) {
        cell.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds `n` to the counter `field` picks, in the device's cells and in
    /// the meter of the queue pair whose command the calling worker runs
    /// ([`metered`]).
    pub fn count(device: &Cells, field: impl Fn(&Cells) -> &AtomicU64, n: u64) {
        Cells::add(field(device), n);
        METER.with(|m| {
            if let Some(m) = &*m.borrow() {
                Cells::add(field(m), n);
            }
        });
    }

    /// Adds PE busy times, in the device's cells and in the running
    /// command's meter.
    pub fn add_pe_busy(device: &Cells, busy_ps: &[u64]) {
        let add = |to: &mut Vec<u64>| {
            if to.len() < busy_ps.len() {
                to.resize(busy_ps.len(), 0);
            }
            for (t, b) in to.iter_mut().zip(busy_ps) {
                *t += b;
            }
        };
        add(&mut device.pe_busy_ps.lock());
        METER.with(|m| {
            if let Some(m) = &*m.borrow() {
                add(&mut m.pe_busy_ps.lock());
            }
        });
    }
}

thread_local! {
    /// The meter of the queue pair whose command this thread runs.
    static METER: RefCell<Option<Arc<Cells>>> = const { RefCell::new(None) };
}

/// Runs `f` (one command being run) with `meter`, the
/// submitting queue pair's own cells, counting beside the device's: every
/// count made on this thread meanwhile goes to both. A thread runs one
/// command at a time (its own submission, or a worker's), so the thread is
/// the command. This is how a caller
/// gets exact counters for its own commands while other threads use the
/// device ([`crate::QueuePair::counters`]).
pub(crate) fn metered<R>(meter: &Arc<Cells>, f: impl FnOnce() -> R) -> R {
    METER.with(|m| *m.borrow_mut() = Some(meter.clone()));
    let r = f();
    METER.with(|m| *m.borrow_mut() = None);
    r
}

/// A snapshot of the counters. Subtract two snapshots with [`Counters::since`]
/// to get what one experiment did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Bytes host -> device: submission entries and data.
    pub link_bytes_to_device: u64,
    /// Bytes device -> host: completion entries and data.
    pub link_bytes_to_host: u64,
    pub medium_bytes_read: u64,
    pub medium_bytes_written: u64,
    /// Medium read accesses: NVM transfers, or flash page reads.
    pub medium_reads: u64,
    /// Medium write accesses: NVM transfers, or flash page programs.
    pub medium_writes: u64,
    pub completions: u64,
    /// Completions posted after their modelled time (real-time clock only).
    pub late_completions: u64,
    /// PE loads of a lock-table bucket unchanged since the PE last saw it
    /// (coherent shared memory, `local_hit_ns` each).
    pub coherent_local_hits: u64,
    /// PE loads of a changed or unseen bucket, stores and compare-and-swaps
    /// (`remote_atomic_ns` each).
    pub coherent_remote: u64,
    /// DMA reads of host memory by PEs (`host_memory.rs`), and their bytes
    /// (also counted in `link_bytes_to_device`: the data crosses the link
    /// host -> device).
    pub dma_reads: u64,
    pub dma_bytes_read: u64,
    /// DMA reads of a host page found changing (front != rear) and taken
    /// again, by the MVCC programs reading delta pages through the mirror
    /// (`chain.rs`; the key-value lookup reports its own).
    pub host_page_retries: u64,
    pub commands: BTreeMap<String, u64>,
    /// Modelled busy time per PE, in picoseconds.
    pub pe_busy_ps: Vec<u64>,
}

impl Counters {
    pub(crate) fn read(c: &Cells) -> Counters {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counters {
            link_bytes_to_device: get(&c.link_bytes_to_device),
            link_bytes_to_host: get(&c.link_bytes_to_host),
            medium_bytes_read: get(&c.medium_bytes_read),
            medium_bytes_written: get(&c.medium_bytes_written),
            medium_reads: get(&c.medium_reads),
            medium_writes: get(&c.medium_writes),
            completions: get(&c.completions),
            late_completions: get(&c.late_completions),
            coherent_local_hits: get(&c.coherent_local_hits),
            coherent_remote: get(&c.coherent_remote),
            dma_reads: get(&c.dma_reads),
            dma_bytes_read: get(&c.dma_bytes_read),
            host_page_retries: get(&c.host_page_retries),
            commands: c.commands.lock().iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            pe_busy_ps: c.pe_busy_ps.lock().clone(),
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            link_bytes_to_device: self.link_bytes_to_device - earlier.link_bytes_to_device,
            link_bytes_to_host: self.link_bytes_to_host - earlier.link_bytes_to_host,
            medium_bytes_read: self.medium_bytes_read - earlier.medium_bytes_read,
            medium_bytes_written: self.medium_bytes_written - earlier.medium_bytes_written,
            medium_reads: self.medium_reads - earlier.medium_reads,
            medium_writes: self.medium_writes - earlier.medium_writes,
            completions: self.completions - earlier.completions,
            late_completions: self.late_completions - earlier.late_completions,
            coherent_local_hits: self.coherent_local_hits - earlier.coherent_local_hits,
            coherent_remote: self.coherent_remote - earlier.coherent_remote,
            dma_reads: self.dma_reads - earlier.dma_reads,
            dma_bytes_read: self.dma_bytes_read - earlier.dma_bytes_read,
            host_page_retries: self.host_page_retries - earlier.host_page_retries,
            commands: self
                .commands
                .iter()
                .map(|(k, v)| (k.clone(), v - earlier.commands.get(k).copied().unwrap_or(0)))
                .filter(|(_, v)| *v > 0)
                .collect(),
            pe_busy_ps: self
                .pe_busy_ps
                .iter()
                .enumerate()
                .map(|(i, v)| v - earlier.pe_busy_ps.get(i).copied().unwrap_or(0))
                .collect(),
        }
    }

    /// PE busy time summed over PEs, in seconds.
    pub fn pe_busy_s(&self) -> f64 {
        self.pe_busy_ps.iter().sum::<u64>() as f64 / 1e12
    }

    /// A compact multi-line rendering for terminals (the coherent line only
    /// when PEs reached the lock table).
    pub fn render(&self) -> String {
        let cmds: Vec<String> = self.commands.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let coherent = if self.coherent_local_hits + self.coherent_remote > 0 {
            format!(
                "\ncoherent lock table: {} remote accesses, {} local hits",
                self.coherent_remote, self.coherent_local_hits
            )
        } else {
            String::new()
        };
        let base = format!(
            "link: {} B to device, {} B to host\nmedium: {} B read in {} accesses, {} B written in {} accesses\n\
             commands: {} ({} completions, {} late)\nPE busy: {:.6} s summed over PEs",
            self.link_bytes_to_device,
            self.link_bytes_to_host,
            self.medium_bytes_read,
            self.medium_reads,
            self.medium_bytes_written,
            self.medium_writes,
            if cmds.is_empty() { "none".to_string() } else { cmds.join(" ") },
            self.completions,
            self.late_completions,
            self.pe_busy_s()
        );
        base + &coherent
    }
}
