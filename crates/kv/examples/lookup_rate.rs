//! Cached point lookups per second on one core: 24-byte keys, 1 KiB values,
//! 16 KiB pages, every page of the tree in the pool (the issue's target:
//! 1,000,000 a second).
//!
//! ```text
//! cargo run --release -p ndpdb-kv --example lookup_rate [-- KEYS [LOOKUPS]]
//! ```
//!
//! Loads KEYS pairs into a pool large enough to hold the whole tree (no
//! evictions), then times LOOKUPS lookups of uniformly random present keys
//! on this thread, five times, and prints each rate and the median. Without
//! arguments it runs 10,000 keys (a 15 MiB tree: it stays in the CPU's
//! caches) and 100,000 keys (a 147 MiB tree: each lookup then waits for
//! main memory on the pages it touches), 2,000,000 lookups each.

use std::sync::Arc;
use std::time::Instant;

use ndpdb_bufmgr::{BufferPool, MemoryPageIo, PoolConfig};
use ndpdb_kv::{KvLog, KvOptions, KvStore, MemoryKvLog, PoolLog};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

const PAGE_BYTES: usize = 16384;
const VALUE_BYTES: usize = 1024;

/// YCSB-style keys: "user" and 20 digits of a hash of the record number, so
/// the key order is not the insertion order.
fn key(n: u64) -> [u8; 24] {
    let mut k = [0u8; 24];
    k[..4].copy_from_slice(b"user");
    let h = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 10u64.pow(19);
    k[4..].copy_from_slice(format!("{h:020}").as_bytes());
    k
}

fn main() {
    let args: Vec<u64> =
        std::env::args().skip(1).map(|a| a.parse().expect("arguments are numbers: KEYS LOOKUPS")).collect();
    let lookups = args.get(1).copied().unwrap_or(2_000_000);
    let sizes = match args.first() {
        Some(&keys) => vec![keys],
        None => vec![10_000, 100_000],
    };
    for keys in sizes {
        run(keys, lookups);
    }
}

fn run(keys: u64, lookups: u64) {
    // About 14 entries a leaf, half to full after random inserts: a page a
    // 7 keys holds the tree with room to spare.
    let frames = (keys / 7 + 64) as usize;
    let io = Arc::new(MemoryPageIo::new(PAGE_BYTES, 1 << 30));
    let log: Arc<dyn KvLog> = Arc::new(MemoryKvLog::new());
    let pool = BufferPool::new(PoolConfig { frames, page_bytes: PAGE_BYTES }, io, Arc::new(PoolLog(log.clone())));
    let pool = Arc::new(pool.expect("pool"));
    let store = KvStore::create(pool.clone(), log, KvOptions { sync: false, ..KvOptions::default() }).expect("store");
    let all: Vec<[u8; 24]> = (0..keys).map(key).collect();
    for (n, k) in all.iter().enumerate() {
        store.put(k, &[(n % 251) as u8; VALUE_BYTES]).expect("put");
    }
    let stats = pool.stats();
    let mib = pool.pages() as f64 * PAGE_BYTES as f64 / f64::from(1 << 20);
    println!("{keys} pairs: {} pages ({mib:.0} MiB), {} evictions", pool.pages(), stats.evictions);
    assert_eq!(stats.evictions, 0, "the pool holds the whole tree");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut out = Vec::with_capacity(VALUE_BYTES);
    let mut rates = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut found = 0u64;
        for _ in 0..lookups {
            let k = &all[rng.random_range(0..keys) as usize];
            found += u64::from(store.get_into(k, &mut out).expect("get"));
        }
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(found, lookups);
        rates.push(lookups as f64 / secs);
    }
    let each: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
    rates.sort_by(f64::total_cmp);
    println!(
        "  lookups/s: {} -> median {:.0} (one core, 24-byte keys, 1 KiB values, 16 KiB pages)",
        each.join(", "),
        rates[2]
    );
}
