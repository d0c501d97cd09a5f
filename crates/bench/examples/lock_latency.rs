//! Lock+unlock latency of the shared table and the conventional manager on
//! the host (the paper's Experiment 3 without the device): one line per
//! table, access order and thread count, with percentiles in ns.
//!
//! `cargo run --release -p ndpdb-bench --example lock_latency [requests] [threads] [contention_pct] [table_bytes]`

use ndpdb_bench::locks::host_bench::{self as bench, Access, HostBench};
use ndpdb_locktable::{ConventionalLockTable, LockTable, TupleLockTable};

fn main() {
    let arg = |i: usize, default: usize| std::env::args().nth(i).map_or(default, |a| a.parse().expect("a number"));
    let requests = arg(1, 1_000_000);
    let threads = arg(2, 1);
    let contention_pct = arg(3, 0) as u32;
    let table_bytes = arg(4, ndpdb_locktable::DEFAULT_TABLE_BYTES);
    println!("timer overhead (in every sample): {} ns", bench::timer_overhead_ns(100_000));
    println!(
        "{:<13} {:<10} {:>7} {:>6} {:>6} {:>6} {:>7} {:>8} {:>8}",
        "table", "access", "threads", "p50", "p90", "p99", "p99.9", "max", "mean"
    );
    let tables: [Box<dyn TupleLockTable>; 2] = [
        Box::new(LockTable::with_bytes(table_bytes).expect("a valid table size")),
        Box::new(ConventionalLockTable::new()),
    ];
    for table in &tables {
        for access in [Access::Sequential, Access::Random] {
            let spec = HostBench { requests, access, threads, contention_pct, ..HostBench::default() };
            let samples = bench::bench_host(table.as_ref(), &spec).expect("no lock errors in a benchmark");
            let s = bench::summarize(&samples).expect("samples");
            println!(
                "{:<13} {:<10} {:>7} {:>6} {:>6} {:>6} {:>7} {:>8} {:>8.1}",
                table.name(),
                format!("{access:?}"),
                threads,
                s.p50_ns,
                s.p90_ns,
                s.p99_ns,
                s.p999_ns,
                s.max_ns,
                s.mean_ns
            );
        }
    }
}
