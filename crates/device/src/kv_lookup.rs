//! # `kv.lookup`: the in-storage point lookup (cooperative buffer manager)
//!
//! Looks keys up in the key-value store's B+-tree on the PEs, in place,
//! with the same search the host uses (`format::btree::lookup`: B-link,
//! moving right past splits it sees only half of). Each node is read where
//! its newest copy is (the CBM paper's Algorithm 1):
//!
//! ```text
//!   fetch(pid):                                    mirror off ─┐
//!     view = mirror.view(pid)  ── Medium (no descriptor, Clean) ┴─► read_page(file_first_ppn + pid)
//!          └─ Host(addr) (Dirty) ─► host_read(addr, page)        (PE medium read)
//!                                   front == rear and pid word == pid ? ─ yes ─► the node
//!                                   no: a writer was inside, or the frame was
//!                                   reused: retry from the mirror (counted),
//!                                   at most MAX_RETRIES, then an error naming the page
//! ```
//!
//! With a shadow table in the call (the Shadow method), a key is first
//! searched there (`format::shadow`); a hit answers without the tree.
//! Parameters and output: `format::kv_lookup` (`docs/format/kv_lookup.md`).
//!
//! **Charged**: medium reads as every PE medium read (`pe.rs`); DMA reads as
//! link transfers (`host_memory.rs`); a mirror lookup
//! [`MIRROR_LOOKUP_CYCLES`](crate::pe::MIRROR_LOOKUP_CYCLES); each node's
//! search [`NODE_SEARCH_CYCLES`] and a shadow search [`SHADOW_SEARCH_CYCLES`]
//! (deterministic charges rather than measured CPU time, so repeated runs
//! give the same modelled latency).
//!
//! A call that fails still leaves its PE's statistics (retries, DMA reads)
//! in the output range, so the host can count the retries of failed
//! lookups too.
//!
//! Nothing read is trusted: every node passes `Node::parse`'s checks (which
//! name the page), the pid word is compared, and a bad call is an error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ndpdb_format::btree;
use ndpdb_format::kv_lookup::{Call, PeStats, SLOT_HEADER_BYTES, STATS_BYTES, encode_slot};

use crate::error::DeviceError;
use crate::mirror::View;
use crate::pe::PeCtx;

/// Optimistic reads of one node before the lookup may give up (and only
/// once [`RETRY_WAIT`] has passed too).
pub const MAX_RETRIES: u64 = 1000;
/// PE cycles charged per node searched (a binary search over the slots).
pub const NODE_SEARCH_CYCLES: u64 = 2000;
/// PE cycles charged per shadow table search (index and one block).
pub const SHADOW_SEARCH_CYCLES: u64 = 4000;

/// How long a lookup keeps asking about one node (wall time, from its first
/// retry) before it fails, once it has retried [`MAX_RETRIES`] times: a
/// writer may hold the page's exclusive latch across a synchronous log
/// write (a split's record is made durable before its latches are
/// released), and on a loaded host that thread may be descheduled for
/// milliseconds. Counting tries alone gave up after about 1000 yields, a
/// few milliseconds.
pub const RETRY_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
/// Retries past this many sleep between reads (growing to
/// [`RETRY_SLEEP_MAX`]) rather than yield.
const RETRY_SPIN: u64 = 64;
const RETRY_SLEEP_MAX: std::time::Duration = std::time::Duration::from_micros(100);

/// Process-wide count of optimistic reads of host frames that were retried
/// (every lookup's, failed ones too); for tests and diagnostics.
static FRAME_RETRIES: AtomicU64 = AtomicU64::new(0);

/// How many optimistic frame reads, in this process, found the frame
/// changing or holding another page and asked the mirror again.
pub fn frame_retries_in_process() -> u64 {
    FRAME_RETRIES.load(Ordering::Relaxed)
}

pub fn run(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    let params = ctx.params();
    let call = Call::decode(params).map_err(|e| ctx.fail(format!("bad parameters: {e}")))?;
    let (pe, pes) = (ctx.pe() as usize, ctx.pes() as usize);
    let need = call.output_bytes(pes as u32);
    if ctx.ranges() == 0 || ctx.range_len(0)? < need {
        return Err(ctx.fail(format!("the output needs memory range 0 of at least {need} bytes")));
    }
    if call.mirror && ctx.mirror_config().is_none() {
        return Err(ctx.fail("the call reads through the mirror, but none is configured (MirrorConfigure)"));
    }
    let mut stats = PeStats::default();
    // Zero first: a failure below leaves this call's statistics, not an
    // earlier call's.
    ctx.range_write(0, (pe * STATS_BYTES) as u64, &stats.encode())?;
    for i in (pe..call.keys.len()).step_by(pes) {
        let key = call.keys[i];
        let shadowed = match call.shadow {
            Some(table) => {
                ctx.charge_cycles(SHADOW_SEARCH_CYCLES);
                ndpdb_format::shadow::search(table, key).map_err(|e| ctx.fail(format!("the shadow table: {e}")))?
            }
            None => None,
        };
        let value = match shadowed {
            Some(v) => v.map(<[u8]>::to_vec),
            None => match lookup(ctx, &call, key, &mut stats) {
                Ok(v) => v,
                Err(e) => {
                    // The host reads the stats of a failed call too (its
                    // retries count); a failure to write them changes nothing.
                    let _ = ctx.range_write(0, (pe * STATS_BYTES) as u64, &stats.encode());
                    return Err(e);
                }
            },
        };
        let max = call.slot_bytes as usize - SLOT_HEADER_BYTES;
        if value.as_ref().is_some_and(|v| v.len() > max) {
            return Err(ctx.fail(format!("key {i}'s value has more than the slot's {max} bytes")));
        }
        let offset = (pes * STATS_BYTES) as u64 + i as u64 * u64::from(call.slot_bytes);
        ctx.range_write(0, offset, &encode_slot(value.as_deref()))?;
    }
    ctx.range_write(0, (pe * STATS_BYTES) as u64, &stats.encode())
}

/// One key through the tree; its value if found.
fn lookup(
    ctx: &mut PeCtx<'_>,
    call: &Call<'_>,
    key: &[u8],
    stats: &mut PeStats,
) -> Result<Option<Vec<u8>>, DeviceError> {
    let mut failure: Option<DeviceError> = None;
    let found = btree::lookup(call.root_pid, key, |pid| {
        let mut page = vec![0u8; ctx.page_bytes() as usize];
        match fetch(ctx, call, pid, &mut page, stats) {
            Ok(()) => Ok(page),
            Err(e) => {
                failure = Some(e);
                Err(())
            }
        }
    });
    match found {
        Ok(found) => Ok(found.map(|f| f.value().to_vec())),
        Err(btree::LookupError::Fetch { pid, .. }) => {
            Err(failure.unwrap_or_else(|| ctx.fail(format!("reading page {pid} failed"))))
        }
        Err(btree::LookupError::Corrupt(e)) => Err(ctx.fail(format!("the B+-tree is corrupt: {e}"))),
    }
}

/// Reads node `pid` into `page` from where the mirror says its newest copy is.
fn fetch(
    ctx: &mut PeCtx<'_>,
    call: &Call<'_>,
    pid: u64,
    page: &mut [u8],
    stats: &mut PeStats,
) -> Result<(), DeviceError> {
    if pid >= call.file_pages {
        return Err(ctx.fail(format!("page {pid} is outside the file's {} pages (a corrupt link)", call.file_pages)));
    }
    stats.nodes += 1;
    ctx.charge_cycles(NODE_SEARCH_CYCLES);
    let mut tries = 0;
    let mut first_retry: Option<Instant> = None;
    loop {
        let view = if call.mirror { ctx.mirror_view(pid)? } else { View::Medium };
        let addr = match view {
            View::Medium => return ctx.read_page(call.file_first_ppn + pid, page),
            View::Host(addr) => addr,
        };
        ctx.host_read(addr, page)?;
        stats.host_reads += 1;
        stats.host_read_bytes += page.len() as u64;
        let n = page.len();
        let word = |at: usize| u64::from_le_bytes(page[at..at + 8].try_into().expect("8 bytes"));
        if word(btree::at::FRONT) == word(n - 8) && word(btree::at::PID) == pid {
            return Ok(());
        }
        stats.retries += 1;
        FRAME_RETRIES.fetch_add(1, Ordering::Relaxed);
        tries += 1;
        let waited = first_retry.get_or_insert_with(Instant::now).elapsed();
        if tries >= MAX_RETRIES && waited >= RETRY_WAIT {
            return Err(ctx.fail(format!(
                "page {pid}: {tries} reads of its frame at host address {addr:#x} over {waited:.1?} found it \
                 changing or holding another page (front {}, rear {}, pid word {}); retry the lookup",
                word(btree::at::FRONT),
                word(n - 8),
                word(btree::at::PID)
            )));
        }
        back_off(tries);
    }
}

/// Between two reads of a frame: yield at first, then sleep, growing to
/// [`RETRY_SLEEP_MAX`] (the writer may be descheduled, not just busy).
fn back_off(tries: u64) {
    if tries <= RETRY_SPIN {
        std::thread::yield_now();
    } else {
        let shift = (tries - RETRY_SPIN).min(7) as u32;
        std::thread::sleep(std::time::Duration::from_micros(1 << shift).min(RETRY_SLEEP_MAX));
    }
}
