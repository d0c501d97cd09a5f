//! A host-side micro-benchmark of any [`TupleLockTable`]: the latency of each
//! lock+unlock pair, as in the paper's Experiments 1 and 3.
//!
//! Each thread is a stream of one-lock transactions (timestamp = thread + 1).
//! A request goes to one shared hot key with probability `contention_pct`,
//! else to the thread's own key range, in order (`Sequential`, as tuples were
//! inserted) or uniformly at random (`Random`). Each pair is timed with two
//! `Instant::now()` calls, whose own cost ([`timer_overhead_ns`]) is in every
//! sample. Programs report the summary; tests never assert timings.
//!
//! It uses only the lock table's public API, so it lives with the
//! experiments rather than in `ndpdb_locktable`, whose API serves the engine.
//! Exp. 3 times every table with it; PostgreSQL's lock manager is timed on
//! the same keys by starting from [`HostBench::thread_seed`].

use std::sync::atomic::Ordering;
use std::time::Instant;

use ndpdb_locktable::{Grant, LockError, LockKey, LockTable, TupleLockTable};

/// The key every thread contends for.
pub const HOT_KEY: LockKey = LockKey { vid: u64::MAX, version: 0 };

/// The order in which a thread visits its own keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Sequential,
    Random,
}

/// One benchmark run.
#[derive(Debug, Clone, Copy)]
pub struct HostBench {
    /// Lock+unlock pairs in total, split evenly over the threads.
    pub requests: usize,
    pub access: Access,
    pub threads: usize,
    /// Percentage (0..=100) of requests that go to [`HOT_KEY`].
    pub contention_pct: u32,
    /// Size of each thread's own key range (VIDs, version 0).
    pub keys_per_thread: u64,
    /// Seed of the random choices.
    pub seed: u64,
}

impl Default for HostBench {
    fn default() -> Self {
        Self {
            requests: 1_000_000,
            access: Access::Random,
            threads: 1,
            contention_pct: 0,
            keys_per_thread: 1 << 20,
            seed: 42,
        }
    }
}

impl HostBench {
    /// Requests of thread `t`: the total split evenly, the remainder to the
    /// first threads.
    pub fn thread_requests(&self, t: usize) -> usize {
        self.requests / self.threads + usize::from(t < self.requests % self.threads)
    }

    /// Thread `t`'s first key: the threads' ranges follow each other.
    pub fn thread_base(&self, t: usize) -> u64 {
        t as u64 * self.keys_per_thread
    }

    /// Thread `t`'s generator state before its first request (the
    /// generator is [`splitmix`]; another implementation of the benchmark,
    /// such as the one timing PostgreSQL's lock manager, starts from it to
    /// draw the same keys).
    pub fn thread_seed(&self, t: usize) -> u64 {
        self.seed ^ (t as u64).wrapping_mul(0xA24B_AED4_963E_E407)
    }
}

/// Percentiles of latency samples, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySummary {
    pub count: usize,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
}

/// SplitMix64: a tiny, good-enough generator that keeps the crate free of
/// `rand`.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs `spec` against `table`; returns one latency sample (ns) per
/// lock+unlock pair, thread after thread.
pub fn bench_host(table: &dyn TupleLockTable, spec: &HostBench) -> Result<Vec<u64>, LockError> {
    assert!(spec.threads >= 1 && spec.keys_per_thread >= 1 && spec.contention_pct <= 100, "bad spec {spec:?}");
    run_threads(spec, |key, ts| {
        let grant = table.lock(key, ts, None)?;
        debug_assert_eq!(grant, Grant::Acquired);
        table.unlock(key, ts)
    })
}

/// Runs `pair(key, ts)` for each request of each thread of `spec` (thread
/// `t` is transaction `t + 1`, drawing its keys from [`KeyStream`]), timing
/// each call with two `Instant::now()`; returns the samples (ns), thread
/// after thread. The first error ends its thread's run and is returned.
fn run_threads<F>(spec: &HostBench, pair: F) -> Result<Vec<u64>, LockError>
where
    F: Fn(LockKey, u64) -> Result<(), LockError> + Sync,
{
    let pair = &pair;
    let runs = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..spec.threads)
            .map(|t| {
                scope.spawn(move || {
                    let ts = t as u64 + 1;
                    let mut keys = KeyStream::new(spec, t);
                    let requests = spec.thread_requests(t);
                    let mut samples = Vec::with_capacity(requests);
                    for _ in 0..requests {
                        let key = keys.next_key();
                        let start = Instant::now();
                        pair(key, ts)?;
                        samples.push(start.elapsed().as_nanos() as u64);
                    }
                    Ok(samples)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("benchmark thread panicked")).collect::<Vec<_>>()
    });
    let mut samples = Vec::with_capacity(spec.requests);
    for run in runs {
        samples.extend(run?);
    }
    Ok(samples)
}

/// The keys thread `t` of a [`HostBench`] requests, in order.
struct KeyStream {
    rng: u64,
    base: u64,
    keys: u64,
    access: Access,
    contention_pct: u32,
    i: u64,
}

impl KeyStream {
    fn new(spec: &HostBench, thread: usize) -> Self {
        Self {
            rng: spec.thread_seed(thread),
            base: spec.thread_base(thread),
            keys: spec.keys_per_thread,
            access: spec.access,
            contention_pct: spec.contention_pct,
            i: 0,
        }
    }

    #[inline]
    fn next_key(&mut self) -> LockKey {
        let i = self.i;
        self.i += 1;
        if self.contention_pct > 0 && splitmix(&mut self.rng) % 100 < u64::from(self.contention_pct) {
            return HOT_KEY;
        }
        let offset = match self.access {
            Access::Sequential => i % self.keys,
            Access::Random => splitmix(&mut self.rng) % self.keys,
        };
        LockKey::new(self.base + offset, 0)
    }
}

/// What the memory of `table` alone costs a lock+unlock pair: for each key
/// of `spec`, exactly the two compare-and-swaps of an uncontended pair
/// (`word 0: 0 → ts`, then `ts → 0`) on the key's bucket, timed as
/// [`bench_host`] times the table, with none of the protocol around them (no
/// queue, no counters, no dynamic dispatch). Every lock table whose buckets
/// fill a region of this size takes at least this long on this machine, so
/// the line shows how much of a pair is the protocol and how much is reaching
/// the line (`docs/locks-bench.md`, "The cache-line floor"). Uncontended
/// specs only; the table must be idle, and is left as it was;
/// threads whose keys share a bucket spin on its word in turn.
pub fn bench_line_floor(table: &LockTable, spec: &HostBench) -> Result<Vec<u64>, LockError> {
    assert!(spec.threads >= 1 && spec.keys_per_thread >= 1 && spec.contention_pct == 0, "bad spec {spec:?}");
    let buckets = table.buckets();
    run_threads(spec, |key, ts| {
        let bucket = table.bucket_of(key);
        let word = buckets[bucket].slot(0);
        // Another thread of this run may hold the word for an instant (its
        // key shares the bucket): spin, as the pair would wait. Anything
        // else is not ours.
        while let Err(found) = word.compare_exchange(0, ts, Ordering::AcqRel, Ordering::Acquire) {
            if found > spec.threads as u64 {
                return Err(LockError::NotIdle { bucket, found });
            }
            std::hint::spin_loop();
        }
        match word.compare_exchange(ts, 0, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(()),
            Err(found) => Err(LockError::NotIdle { bucket, found }),
        }
    })
}

/// The median cost of timing an empty interval, included in every sample.
pub fn timer_overhead_ns(samples: usize) -> u64 {
    let mut v: Vec<u64> = (0..samples.max(1))
        .map(|_| {
            let start = Instant::now();
            start.elapsed().as_nanos() as u64
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

/// Percentiles of `samples`; `None` if there are none.
pub fn summarize(samples: &[u64]) -> Option<LatencySummary> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    Some(LatencySummary {
        count: v.len(),
        min_ns: v[0],
        p50_ns: at(0.50),
        p90_ns: at(0.90),
        p99_ns: at(0.99),
        p999_ns: at(0.999),
        max_ns: v[v.len() - 1],
        mean_ns: v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64,
    })
}
