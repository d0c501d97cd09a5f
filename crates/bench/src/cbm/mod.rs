//! # `ndpdb bench cbm`: the cooperative buffer manager's YCSB experiment
//!
//! The CBM paper (Xue et al.; `docs/cbm-bench.md`) runs a B+-tree key-value
//! store whose host buffer pool caches and changes pages, beside a device
//! that answers point lookups in storage. Four methods keep (or fail to
//! keep) the device's answers fresh: Baseline (nothing), Flush (write back
//! every dirty page before each offload, λ-IO), Shadow (ship a 128 KiB
//! memtable of the updated pairs with each call, update-aware NDP) and CBM
//! (the device's mirror of the pool's page states).
//!
//! ```text
//!  load N pairs (24 B keys, 1 KiB values; bulk, in key order) ─► checkpoint
//!  per cell (method × mix × distribution × update value size):
//!    OLTP thread: YCSB gets/updates, each update committed ──► checker.commit
//!                 (Shadow: + memtable)                              │
//!    OLAP thread: until M lookups:  d = checker.now()               │
//!                 Flush: flush_dirty │ Shadow: encode memtable      ▼
//!                 offload.lookup(key) ─► answer ─► checker.check(key, answer, d, c)
//!    row: host ops/s and latencies, lookup latencies (virtual clock: each
//!         thread's model time, its commands' modelled waits + CPU time;
//!         real clock: wall and clock spans), retries, violations, commands
//!         (the OLTP thread's own per op) and link bytes (device counters)
//! ```
//!
//! Modules: `offload.rs` (the one seam to the store on the device and its
//! lookup program, and its implementation on `ndpdb-kv`), `run.rs`
//! (one cell: the two threads), `freshness.rs` (the checker), `shadow.rs`
//! (Shadow's memtable and its size policy), `latency.rs` (histograms),
//! `report.rs` (rows, table, JSON lines, plots).

mod freshness;
mod latency;
mod offload;
mod report;
mod run;
mod shadow;

use std::path::PathBuf;

use anyhow::{Result, bail};
use ndpdb_device::profile::MediumProfile;
use ndpdb_device::{ClockKind, Profile};
use ndpdb_workload::ycsb::{Distribution, Mix};

pub use freshness::{Checker, Version, fingerprint, fresh};
pub use latency::{Latencies, Summary};
pub use offload::{Call, DeviceOffload, FIRST_PPN, LOG_PAGES, Lookup, Offload, StoreSpec};
pub use report::{CdfRow, Row};
pub use run::{Cell, Measured};
pub use shadow::{Admit, CAPACITY_BYTES as SHADOW_CAPACITY_BYTES, Memtable, admit};

/// The paper's page size (its store's nodes and the pool's pages).
pub const PAGE_BYTES: u32 = 16 << 10;
/// The loaded values' size (the paper loads 1 KiB values; the cells'
/// value sizes are the updates').
pub const LOAD_VALUE_BYTES: usize = 1024;
/// The paper's update value sizes.
pub const VALUE_BYTES: [usize; 3] = [500, 1024, 2048];

/// A freshness method of the paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Baseline,
    Flush,
    Shadow,
    Cbm,
}

impl Method {
    pub const ALL: [Method; 4] = [Method::Baseline, Method::Flush, Method::Shadow, Method::Cbm];

    pub fn name(self) -> &'static str {
        match self {
            Method::Baseline => "baseline",
            Method::Flush => "flush",
            Method::Shadow => "shadow",
            Method::Cbm => "cbm",
        }
    }

    pub fn parse(s: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// The experiment's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// `softssd` (or another); its page size is set to [`PAGE_BYTES`].
    pub profile: Profile,
    pub clock: ClockKind,
    pub methods: Vec<Method>,
    pub mixes: Vec<Mix>,
    pub distributions: Vec<Distribution>,
    pub value_bytes: Vec<usize>,
    /// Pairs loaded.
    pub keys: u64,
    /// Lookups per cell.
    pub lookups: u64,
    /// OLTP operations per cell before the lookups start and measuring
    /// begins.
    pub warmup_ops: u64,
    /// Frames of the host pool; `None`: `file_pages()`, so the pool never
    /// evicts a page, the paper's setup ("the capacity of the host buffer
    /// manager is set to be large enough so that no dirty pages will be
    /// written back to the device"). Frames are zeroed memory the kernel
    /// maps on first touch, so frames the store never fills cost nothing.
    pub frames: Option<usize>,
    pub seed: u64,
}

impl Config {
    /// The profile with the paper's 16 KiB pages, and its name for output.
    pub fn profile_16k(&self) -> (Profile, String) {
        let mut p = self.profile.clone();
        match &mut p.medium {
            MediumProfile::Nvm(m) => m.page_bytes = PAGE_BYTES,
            MediumProfile::Flash(m) => m.page_bytes = PAGE_BYTES,
        }
        let name = format!("{} ({} KiB pages)", p.name, PAGE_BYTES >> 10);
        (p, name)
    }

    /// Fails on a grid or size the run cannot honour, saying what to pass.
    pub fn validate(&self) -> Result<()> {
        let empty = [
            ("--methods", self.methods.is_empty()),
            ("--mixes", self.mixes.is_empty()),
            ("--distributions", self.distributions.is_empty()),
            ("--value-bytes", self.value_bytes.is_empty()),
        ];
        if let Some((flag, _)) = empty.iter().find(|(_, e)| *e) {
            bail!("{flag} is empty: name at least one");
        }
        if self.keys < 100 {
            bail!("--keys {}: load at least 100 pairs", self.keys);
        }
        if self.lookups == 0 {
            bail!("--lookups 0: each cell runs until that many lookups completed; use at least 1");
        }
        if let Some(frames) = self.frames.filter(|&f| f < 16) {
            bail!("--frames {frames}: the pool needs at least 16 frames (a descent and a split pin several)");
        }
        if let Some(v) = self.value_bytes.iter().find(|&&v| !(8..=VALUE_BYTES_MAX).contains(&v)) {
            bail!(
                "--value-bytes {v}: values of 8 to {VALUE_BYTES_MAX} bytes (16 KiB pages hold entries up to a quarter page)"
            );
        }
        self.profile_16k()
            .0
            .validate(&self.profile.name)
            .map_err(|e| anyhow::anyhow!("the profile with 16 KiB pages: {e}"))?;
        Ok(())
    }

    /// The host pool's frames: `--frames`, or the whole file.
    pub fn pool_frames(&self) -> usize {
        self.frames.unwrap_or_else(|| usize::try_from(self.file_pages()).unwrap_or(usize::MAX))
    }

    /// Pages the store's file may grow to: every pair at the largest value
    /// size in half-full leaves, plus inner nodes and slack.
    pub fn file_pages(&self) -> u64 {
        let largest = self.value_bytes.iter().copied().chain([LOAD_VALUE_BYTES]).max().unwrap_or(LOAD_VALUE_BYTES);
        let entry = (24 + largest + 48) as u64;
        self.keys * entry * 2 / u64::from(PAGE_BYTES) + 256
    }

    /// The cells in the order they run: per value size and distribution,
    /// the mixes, each under every method.
    pub fn cells(&self) -> Vec<Cell> {
        let mut cells = Vec::new();
        for &value_bytes in &self.value_bytes {
            for &distribution in &self.distributions {
                for &mix in &self.mixes {
                    for &method in &self.methods {
                        cells.push(Cell { method, mix, distribution, value_bytes });
                    }
                }
            }
        }
        cells
    }

    /// The CI subset (`--quick`): all four methods, read-only and
    /// update-only, zipfian keys (hot keys stay dirty in the pool, so
    /// Baseline's staleness shows even in a short run), 1 KiB updates; a
    /// pool of 32 frames under a store of about 300 pages, so the host
    /// keeps dirty pages.
    pub fn quick() -> Config {
        Config {
            profile: Profile::load("softssd").expect("softssd ships with ndpdb"),
            clock: ClockKind::Virtual,
            methods: Method::ALL.to_vec(),
            mixes: vec![Mix::ReadOnly, Mix::UpdateOnly],
            distributions: vec![Distribution::Zipfian],
            value_bytes: vec![1024],
            keys: 3000,
            lookups: 300,
            warmup_ops: 2000,
            frames: Some(32),
            seed: 1,
        }
    }

    /// Runs the experiment and reports it (see `report.rs`).
    pub fn run_and_report(&self, report: &crate::report::Report) -> Result<PathBuf> {
        report::run_and_report(self, report)
    }
}

/// The largest value the 16 KiB pages take with a 24-byte key (an entry is
/// at most a quarter of the usable page: `ndpdb-kv`'s limit) rounded down.
pub const VALUE_BYTES_MAX: usize = 4000;
