fn main() {
    let clock = std::env::args().nth(1).unwrap_or("virtual".into()).parse().unwrap();
    let cfg = ndpdb_bench::device_scaling::Config {
        profile: ndpdb_device::Profile::load("u280-nvm").unwrap(),
        clock,
        pes: vec![1, 4, 8, 12, 16],
        transfers_per_pe: 2_000_000,
        span_bytes: std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(16 << 20),
        seed: 1,
    };
    let dir = tempfile::tempdir().unwrap();
    ndpdb_bench::device_scaling::run(&cfg, dir.path(), |r| println!("{}", serde_json_line(r))).unwrap();
}
fn serde_json_line(r: &ndpdb_bench::device_scaling::Row) -> String {
    format!("{:?}", (r.pes, r.transfers_per_s, r.device_s, r.modelled_s, r.wall_s, r.late_completions, &r.bottleneck))
}
