//! What a `bench locks` run is asked to do, and the checks that refuse a
//! run before it starts: the experiments, their sizes and the device they
//! need. Every error names the flag to change, since the CLI passes the
//! user's flags through unchanged.

use anyhow::{Result, anyhow, bail, ensure};
use ndpdb_device::Profile;

/// The default size of ndpdb's table in these experiments: the table's own default.
pub use ndpdb_locktable::DEFAULT_TABLE_BYTES;

/// Limits on the configuration: samples take 8 bytes each on both sides.
pub const REQUESTS_MAX: u64 = 20_000_000;
pub const THREADS_MAX: usize = 64;

#[derive(Debug, Clone)]
pub struct Config {
    /// Which of the experiments 1, 2, 3 to run.
    pub experiments: Vec<u32>,
    /// Exp. 1's contention levels, percent.
    pub contention_pct: Vec<u32>,
    /// Exp. 1's device (it needs a `[coherent]` section).
    pub profile: Profile,
    /// Exp. 2's profiles.
    pub profiles: Vec<Profile>,
    /// Lock+unlock pairs per measurement (Exp. 1: per side and level).
    pub requests: u64,
    /// Host threads (Exp. 1: measuring or loading; Exp. 3: measuring).
    pub threads: usize,
    /// Exp. 1's PEs.
    pub pes: u32,
    /// Exp. 1's window of keys per side.
    pub keys: u64,
    /// Sizes of ndpdb's table in bytes, each a power of two
    /// (`ndpdb_locktable::DEFAULT_TABLE_BYTES` is neoDBMS's "few megabytes").
    /// Exp. 1 uses the first; Exp. 3 measures every one.
    pub table_bytes: Vec<usize>,
    /// Exp. 3 also times PostgreSQL's own lock manager in a private server
    /// (`ndpdb_baseline::pglocks`), when PostgreSQL, its server headers and
    /// a C compiler are installed.
    pub postgres: bool,
    pub seed: u64,
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        if let Some(e) = self.experiments.iter().find(|e| !(1..=3).contains(*e)) {
            bail!("--experiments {e}: the experiments are 1, 2 and 3");
        }
        ensure!(!self.experiments.is_empty(), "--experiments: name at least one of 1, 2, 3");
        if let Some(c) = self.contention_pct.iter().find(|c| **c > 100) {
            bail!("--contention {c}: a percentage, 0..=100");
        }
        ensure!((1..=REQUESTS_MAX).contains(&self.requests), "--requests {}: choose 1..={REQUESTS_MAX}", self.requests);
        ensure!((1..=THREADS_MAX).contains(&self.threads), "--threads {}: choose 1..={THREADS_MAX}", self.threads);
        ensure!(self.keys >= 1, "--keys must be at least 1");
        ensure!(!self.table_bytes.is_empty(), "--table-bytes: name at least one size");
        for (i, &bytes) in self.table_bytes.iter().enumerate() {
            ndpdb_locktable::bucket::bucket_count(bytes).map_err(|e| anyhow!("--table-bytes {bytes}: {e}"))?;
            ensure!(!self.table_bytes[..i].contains(&bytes), "--table-bytes {bytes}: the size is named twice");
        }
        if self.experiments.contains(&1) {
            self.validate_exp1()?;
        }
        if self.experiments.contains(&2) {
            ensure!(!self.profiles.is_empty(), "--profiles: name at least one profile for Exp. 2");
        }
        Ok(())
    }

    /// What Exp. 1 needs beyond the checks every run gets: two windows that
    /// fit its table, a contention level, and a device with a coherent path
    /// and the PEs asked for.
    fn validate_exp1(&self) -> Result<()> {
        let count = self.profile.pe.count;
        let buckets = (self.exp1_table_bytes() / ndpdb_locktable::BUCKET_BYTES) as u64;
        ensure!(
            2 * self.keys <= buckets,
            "--keys {}: Exp. 1's two windows must fit the table's {buckets} buckets (at most {}, or a larger \
             first --table-bytes)",
            self.keys,
            buckets / 2
        );
        ensure!(!self.contention_pct.is_empty(), "--contention: name at least one level for Exp. 1");
        ensure!(
            self.profile.coherent.is_some(),
            "Exp. 1 needs a device that shares the lock table over a coherent interconnect, and profile `{}` \
             has no [coherent] section; choose --profile u280-nvm or ideal, or leave Exp. 1 out (--experiments 2,3)",
            self.profile.name
        );
        ensure!(
            count > 0,
            "Exp. 1 needs processing elements on the device, and profile `{}` has none (pe.count = 0); \
             choose --profile u280-nvm or ideal, or leave Exp. 1 out (--experiments 2,3)",
            self.profile.name
        );
        ensure!(
            (1..=count).contains(&self.pes),
            "--pes {}: profile `{}` has 1..={count} PEs",
            self.pes,
            self.profile.name
        );
        Ok(())
    }

    /// Exp. 1's table size: the first of `table_bytes`.
    pub fn exp1_table_bytes(&self) -> usize {
        self.table_bytes[0]
    }

    /// Progress steps of a run (what `run`'s callback counts to).
    pub fn steps(&self) -> usize {
        let has = |e| usize::from(self.experiments.contains(&e));
        // Per access: ndpdb and its floor per size, conventional, PostgreSQL.
        let exp3 = 2 * (2 * self.table_bytes.len() + 1 + usize::from(self.postgres));
        has(1) * 2 * self.contention_pct.len() + has(2) * self.profiles.len() + has(3) * exp3
    }

    /// What makes the figures unreliable on this machine.
    pub fn warnings(&self) -> Vec<String> {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let mut out = Vec::new();
        if self.experiments.contains(&1) && self.threads + self.pes as usize > cores {
            out.push(format!(
                "Exp. 1 runs {} host threads and {} PEs (each a host thread) on {cores} cores: preempted lock \
                 holders will show in the tails; use --threads and --pes that add up to at most {cores}",
                self.threads, self.pes
            ));
        }
        if self.experiments.contains(&3) && self.threads > cores {
            out.push(format!("Exp. 3 runs {} threads on {cores} cores", self.threads));
        }
        out
    }
}
