//! `ndpdb bench locks`: the three experiments of ccSLT (Bernhardt et al.,
//! EDBT'22, section 4, Figs. 4-6) on ndpdb's shared lock table
//! (`ndpdb_locktable`). `docs/locks-bench.md` is the user's guide; this is
//! the design.
//!
//! **Exp. 1 (Fig. 4), lock latency under contention from the other side.**
//! The host and the device's PEs lock and unlock keys `(k, 1)` of one shared
//! table, as `bench.lock-latency` does on the device. Each side draws its
//! keys uniformly from a window of `keys` VIDs; at contention `c` the host's
//! window is shifted so that `c`% of it is the device's window:
//!
//! ```text
//!   VID      0                 keys               2 keys
//!   device   [=================)                            always [0, keys)
//!   host c=0                   [==================)
//!   host c=50         [==================)                  half of it shared
//!   host c=100 [=================)                          the same window
//! ```
//!
//! So `c` is the share of the measured side's requests that go to keys the
//! other side is requesting during the measurement (exactly `c`% of the
//! window; `c`% of the requests in expectation, which host rows verify in
//! `shared_requests_pct`). The other side's load is the same at every `c`:
//! only where it lands moves. `2 * keys` consecutive VIDs of one version
//! never share a bucket, so sharing happens through keys only, never through
//! collisions. Each level runs two phases:
//!
//! - host side: host threads time `requests` lock+unlock pairs (real clock)
//!   while the device repeats executions of `bench.lock-latency` on its
//!   window until they are done;
//! - device side: one execution of `requests` pairs on the PEs, whose
//!   modelled latencies (virtual clock, the profile's `[coherent]` charges)
//!   are the samples, while host threads lock and unlock their window until
//!   it ends.
//!
//! Each phase waits until the loading side has begun before it measures.
//!
//! **Exp. 2 (Fig. 5), 64 B and 8 KiB over the coherent path and over PCIe.**
//! Coherent: the profile's model, one `remote_atomic_ns` per 64-byte line
//! (and `local_hit_ns` per line when all lines are cached in the device's
//! agent). PCIe: a `MemoryRead` of that many bytes from a device memory range,
//! its completion time on the device's virtual clock, from a run.
//!
//! **Exp. 3 (Fig. 6), one million lock requests.** `bench_host` on the
//! shared table at each configured size and on the conventional
//! (PostgreSQL-style) lock manager, which has no size, sequential and random
//! keys, without contention; percentiles and a histogram over log-scale
//! buckets. The size matters for random keys: each request touches a random
//! line of the table, so whether the table stays in the caches decides the
//! median, while the conventional manager only holds the locks alive. With
//! `postgres`, PostgreSQL's own lock manager is timed too, inside a private
//! server by a C function ndpdb compiles against its headers
//! (`ndpdb_baseline::pglocks`), on the same key sequences: the paper's
//! actual baseline, beside ndpdb's Rust rendering of its structure.
//!
//! Beside each size of ndpdb's table, a `floor` line times only the two
//! compare-and-swaps an uncontended pair makes on the key's bucket line
//! (`bench_line_floor`), in a table of that size: what reaching the line
//! costs on this machine, which no table of that size can beat. The ratio
//! lines name the best ratio each baseline could give at that size, so a
//! reader sees how much of a shortfall is the protocol and how much the
//! machine (`docs/locks-bench.md`, "The cache-line floor").
//!
//! Every run ends by checking that its table is empty again; a lock left
//! behind fails the experiment. Host threads and PEs are all host threads:
//! more of them than cores measures the scheduler (a holder preempted), not
//! the table ([`Config::warnings`]).
//!
//! The files follow the experiments and the reports: `config` (what a run
//! is asked to do, and its checks), `exp1_contention`, `exp2_transfer` and
//! `exp3_managers` (one experiment each), [`host_bench`] (the host-side
//! lock+unlock loops Exp. 3 times every table with), `rows` (the JSON
//! lines), `table` (the terminal table) and `plot`. The experiments only
//! produce rows; the table and the plots only read them.

mod config;
mod exp1_contention;
mod exp2_transfer;
mod exp3_managers;
pub mod host_bench;
mod plot;
mod rows;
mod table;

use std::path::Path;

use anyhow::{Result, bail};
use ndpdb_device::{Command, QueuePair, RangeId, Reply};
use ndpdb_locktable::LockTable;

pub use config::{Config, DEFAULT_TABLE_BYTES, REQUESTS_MAX, THREADS_MAX};
pub use exp1_contention::windows;
pub use exp2_transfer::TRANSFER_BYTES;
pub use plot::plot;
pub use rows::{HistBin, LatencyRow, LockEvents, Row, TransferRow, histogram};
pub use table::{size_label, table};

/// What a run measured, and what it could not measure on this machine.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<Row>,
    /// For the user: a part of the run that was skipped, and why.
    pub notes: Vec<String>,
}

/// Runs the configured experiments, with scratch images under `dir`.
/// `on_step(done, total, label)` is called as each step begins.
pub fn run(cfg: &Config, dir: &Path, mut on_step: impl FnMut(usize, usize, &str)) -> Result<Outcome> {
    cfg.validate()?;
    let total = cfg.steps();
    let mut done = 0;
    let mut step = |label: String| {
        on_step(done, total, &label);
        done += 1;
    };
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    if cfg.experiments.contains(&1) {
        rows.extend(
            exp1_contention::exp1(cfg, &dir.join("exp1"), &mut step)?.into_iter().map(|r| Row::Latency(Box::new(r))),
        );
    }
    if cfg.experiments.contains(&2) {
        rows.extend(exp2_transfer::exp2(cfg, dir, &mut step)?.into_iter().map(Row::Transfer));
    }
    if cfg.experiments.contains(&3) {
        rows.extend(exp3_managers::exp3(cfg, &mut notes, &mut step)?.into_iter().map(|r| Row::Latency(Box::new(r))));
    }
    Ok(Outcome { rows, notes })
}

/// Fails unless every word of every bucket is zero: no lock is held or
/// waited for after a run.
pub fn check_empty(table: &LockTable) -> Result<()> {
    let left = table.buckets().iter().enumerate().find(|(_, b)| b.words().iter().any(|w| *w != 0));
    if let Some((i, b)) = left {
        bail!(
            "the lock table is not empty after the run: bucket {i} holds {:?}; a lock was left behind (a bug in the \
             lock table or in this benchmark)",
            b.words()
        );
    }
    Ok(())
}

/// A device memory range of `bytes`, for a program's output or a transfer.
fn create_range(qp: &mut QueuePair, bytes: u64) -> Result<RangeId> {
    match qp.call(Command::MemoryRangeCreate { bytes })? {
        Reply::Range(r) => Ok(r),
        other => bail!("memory range create replied {other:?}"),
    }
}
