//! The host-side micro-benchmark (`ndpdb_bench::locks::host_bench`) on both
//! of ndpdb's lock tables: every request yields a sample, the summary is
//! ordered, and the cache-line floor leaves the table as it found it and
//! refuses a table a transaction uses. No timing is asserted.

use ndpdb_bench::locks::host_bench::{self as bench, Access, HostBench};
use ndpdb_locktable::{ConventionalLockTable, Grant, LockError, LockKey, LockTable, TupleLockTable};

fn key(vid: u64) -> LockKey {
    LockKey::new(vid, 0)
}

#[test]
fn benchmark_runs_on_both_tables() {
    let tables: [Box<dyn TupleLockTable>; 2] =
        [Box::new(LockTable::with_bytes(1 << 16).unwrap()), Box::new(ConventionalLockTable::new())];
    for table in &tables {
        for access in [Access::Sequential, Access::Random] {
            let spec =
                HostBench { requests: 2000, access, threads: 2, contention_pct: 20, keys_per_thread: 100, seed: 7 };
            let samples = bench::bench_host(table.as_ref(), &spec).unwrap();
            assert_eq!(samples.len(), 2000);
            let s = bench::summarize(&samples).unwrap();
            assert!(s.min_ns <= s.p50_ns && s.p50_ns <= s.p99_ns && s.p99_ns <= s.max_ns, "{s:?}");
        }
    }
    assert_eq!(bench::summarize(&[]), None);
    let _ = bench::timer_overhead_ns(100);
}

#[test]
fn the_cache_line_floor_leaves_the_table_idle_and_refuses_a_used_one() {
    // 1 KiB = 16 buckets: two threads' keys share buckets all the time.
    let table = LockTable::with_bytes(1 << 10).unwrap();
    for access in [Access::Sequential, Access::Random] {
        let spec = HostBench { requests: 5000, access, threads: 2, contention_pct: 0, keys_per_thread: 1000, seed: 3 };
        assert_eq!(bench::bench_line_floor(&table, &spec).unwrap().len(), 5000);
        assert!(table.buckets().iter().all(|b| b.words() == [0; 8]), "a word was left set");
    }
    // A transaction's lock is not the benchmark's to take.
    assert_eq!(table.lock(key(5), 77, None), Ok(Grant::Acquired));
    let spec = HostBench {
        requests: 100,
        access: Access::Sequential,
        threads: 1,
        contention_pct: 0,
        keys_per_thread: 16,
        seed: 1,
    };
    let err = bench::bench_line_floor(&table, &spec).unwrap_err();
    assert_eq!(err, LockError::NotIdle { bucket: table.bucket_of(key(5)), found: 77 });
    assert!(err.to_string().contains("a table of its own"), "{err}");
    table.unlock(key(5), 77).unwrap();
}
