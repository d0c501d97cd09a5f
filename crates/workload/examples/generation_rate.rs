//! Rough generation rates in release mode:
//! `cargo run --release -p ndpdb-workload --example generation_rate`.

use std::hint::black_box;
use std::time::Instant;

use ndpdb_workload::{KeyChoice, KeyPicker, OrderLineGen};

fn main() {
    const ROWS: u64 = 1_000_000;
    let start = Instant::now();
    let mut checksum = 0i64;
    for row in OrderLineGen::new(1, 0).take_rows(ROWS) {
        let row = black_box(row);
        checksum = checksum.wrapping_add(row.ol_amount ^ i64::from(row.ol_i_id) ^ i64::from(row.ol_dist_info[0]));
    }
    let s = start.elapsed().as_secs_f64();
    println!(
        "ORDER_LINE: {ROWS} tuples in {:.1} ms ({:.1} M tuples/s; checksum {checksum})",
        s * 1e3,
        ROWS as f64 / s / 1e6
    );

    const PICKS: u64 = 10_000_000;
    for choice in [KeyChoice::Uniform, KeyChoice::zipfian_default(), KeyChoice::scrambled_zipfian_default()] {
        let start = Instant::now();
        let mut picker = KeyPicker::new(1_000_000_000, choice, 1).expect("valid parameters");
        let setup = start.elapsed().as_secs_f64();
        let mut sum = 0u64;
        for _ in 0..PICKS {
            sum = sum.wrapping_add(black_box(picker.next()));
        }
        let s = start.elapsed().as_secs_f64() - setup;
        println!(
            "{choice:?} over 10^9 keys: setup {:.3} ms, {:.1} M picks/s (sum {sum})",
            setup * 1e3,
            PICKS as f64 / s / 1e6
        );
    }
}
