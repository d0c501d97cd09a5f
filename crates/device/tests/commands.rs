//! The command interface: bad commands are errors that name the problem,
//! counters are exact, the timing model gives the documented times, and
//! programs run on PEs within their DRAM budget.

use ndpdb_device::{
    CQE_BYTES, ClockKind, Command, Device, DeviceError, DeviceOptions, PeCtx, Profile, Program, ProgramLibrary, Reply,
    SQE_BYTES, params,
};
use proptest::prelude::*;

fn device(profile: &str, capacity: u64) -> (tempfile::TempDir, Device) {
    let dir = tempfile::tempdir().unwrap();
    let dev =
        Device::create(dir.path(), Profile::load(profile).unwrap(), Some(capacity), DeviceOptions::default()).unwrap();
    (dir, dev)
}

fn err(r: Result<Reply, DeviceError>) -> String {
    r.expect_err("command should fail").to_string()
}

#[test]
fn out_of_range_and_malformed_commands_are_refused() {
    let (_d, dev) = device("u280-nvm", 1 << 20);
    let mut qp = dev.queue_pair();
    assert!(err(qp.call(Command::PageRead { ppn: 128, host_addr: None })).contains("pages 0..128"));
    assert!(err(qp.call(Command::PageRead { ppn: u64::MAX, host_addr: None })).contains("page"));
    assert!(err(qp.call(Command::PageWrite { ppn: 0, data: vec![0; 100] })).contains("8192"));
    assert!(err(qp.call(Command::Read { addr: 100, len: 512 })).contains("sectors"));
    assert!(err(qp.call(Command::Read { addr: 7680, len: 1024 })).contains("one 8192-byte page"));
    assert!(err(qp.call(Command::Read { addr: 1 << 20, len: 512 })).contains("outside"));
    assert!(err(qp.call(Command::MemoryRead { range: 99, offset: 0, len: 1 })).contains("no memory range 99"));
    let r = match qp.call(Command::MemoryRangeCreate { bytes: 64 }).unwrap() {
        Reply::Range(r) => r,
        other => panic!("{other:?}"),
    };
    assert!(err(qp.call(Command::MemoryWrite { range: r, offset: 60, data: vec![1; 8] })).contains("60..68"));
    assert!(err(qp.call(Command::MemoryRead { range: r, offset: u64::MAX, len: 2 })).contains("range"));
    assert!(err(qp.call(Command::ProgramLoad { slot: 0, name: "nope".into() })).contains("profile.compute"));
    assert!(err(qp.call(Command::ProgramLoad { slot: 99, name: "profile.compute".into() })).contains("slots 0..16"));
    assert!(err(qp.call(Command::ProgramActivate { slot: 1, active: true })).contains("empty"));
    qp.call(Command::ProgramLoad { slot: 1, name: "profile.compute".into() }).unwrap();
    let exec = |pes| Command::Execute { slot: 1, pes, params: params(&[10]), ranges: vec![] };
    assert!(err(qp.call(exec(1))).contains("not active"));
    qp.call(Command::ProgramActivate { slot: 1, active: true }).unwrap();
    assert!(err(qp.call(exec(17))).contains("1..=16"));
    assert!(err(qp.call(exec(0))).contains("1..=16"));
    assert!(qp.call(exec(16)).is_ok());
    let bad_params = Command::Execute { slot: 1, pes: 1, params: vec![1, 2], ranges: vec![] };
    assert!(err(qp.call(bad_params)).contains("parameter 0"));
    // After all that the device still works.
    qp.call(Command::PageWrite { ppn: 1, data: vec![9; 8192] }).unwrap();
    assert_eq!(qp.call(Command::PageRead { ppn: 1, host_addr: None }).unwrap().into_data(), vec![9; 8192]);
}

#[test]
fn a_device_without_pes_runs_no_programs() {
    let (_d, dev) = device("nvme-ssd", 1 << 20);
    let mut qp = dev.queue_pair();
    qp.call(Command::ProgramLoad { slot: 0, name: "profile.compute".into() }).unwrap();
    qp.call(Command::ProgramActivate { slot: 0, active: true }).unwrap();
    let e = err(qp.call(Command::Execute { slot: 0, pes: 1, params: params(&[1]), ranges: vec![] }));
    assert!(e.contains("no processing elements"), "{e}");
}

#[test]
fn dram_budget_is_enforced() {
    // cosmos-plus: 400 MiB for NDP.
    let (_d, dev) = device("cosmos-plus", 1 << 20);
    let mut qp = dev.queue_pair();
    let e = err(qp.call(Command::MemoryRangeCreate { bytes: 401 << 20 }));
    assert!(e.contains("device DRAM exhausted") && e.contains("ndp_mib"), "{e}");
    let big = match qp.call(Command::MemoryRangeCreate { bytes: 300 << 20 }).unwrap() {
        Reply::Range(r) => r,
        other => panic!("{other:?}"),
    };
    // The memcpy program needs 2 x 60 MiB, more than the 100 MiB left.
    qp.call(Command::ProgramLoad { slot: 0, name: "profile.memcpy".into() }).unwrap();
    qp.call(Command::ProgramActivate { slot: 0, active: true }).unwrap();
    let exec = || Command::Execute { slot: 0, pes: 1, params: params(&[60 << 20, 1]), ranges: vec![] };
    let e = err(qp.call(exec()));
    assert!(e.contains("device DRAM exhausted"), "{e}");
    qp.call(Command::MemoryRangeDelete { range: big }).unwrap();
    qp.call(exec()).unwrap();
    assert_eq!(dev.info().dram_in_use_bytes, 0, "program scratch is released after the execution");
}

fn panicking(_: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    panic!("bug in an NDP program")
}

#[test]
fn a_panicking_program_fails_its_command_only() {
    let mut programs = ProgramLibrary::builtin();
    programs.register(Program { name: "test.panic", description: "panics", run: panicking }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let opts = DeviceOptions { programs, ..DeviceOptions::default() };
    let dev = Device::create(dir.path(), Profile::load("softssd").unwrap(), Some(1 << 20), opts).unwrap();
    let mut qp = dev.queue_pair();
    qp.call(Command::ProgramLoad { slot: 0, name: "test.panic".into() }).unwrap();
    qp.call(Command::ProgramActivate { slot: 0, active: true }).unwrap();
    let e = err(qp.call(Command::Execute { slot: 0, pes: 4, params: vec![], ranges: vec![] }));
    assert!(e.contains("test.panic") && e.contains("bug in an NDP program"), "{e}");
    assert!(qp.call(Command::Identify).is_ok());
}

#[test]
fn counters_are_exact() {
    let (_d, dev) = device("cosmos-plus", 1 << 20);
    let mut qp = dev.queue_pair();
    let before = dev.counters();
    qp.call(Command::PageWrite { ppn: 2, data: vec![1; 8192] }).unwrap();
    qp.call(Command::PageRead { ppn: 2, host_addr: None }).unwrap();
    qp.call(Command::Read { addr: 2 * 8192 + 512, len: 1024 }).unwrap();
    let _ = qp.call(Command::PageRead { ppn: 1 << 40, host_addr: None }); // refused: no data moves
    let c = dev.counters().since(&before);
    assert_eq!(c.link_bytes_to_device, 4 * SQE_BYTES + 8192);
    assert_eq!(c.link_bytes_to_host, 4 * CQE_BYTES + 8192 + 1024);
    assert_eq!((c.medium_reads, c.medium_bytes_read), (2, 8192 + 1024));
    assert_eq!((c.medium_writes, c.medium_bytes_written), (1, 8192));
    assert_eq!(c.commands.get("page_read"), Some(&2));
    assert_eq!(c.completions, 4);
}

#[test]
fn nvm_pe_reads_are_charged_per_transfer() {
    // "To check a version record, neoDBMS must read just 20B in five 32b transfers."
    let (_d, dev) = device("u280-nvm", 1 << 20);
    let mut qp = dev.queue_pair();
    qp.call(Command::ProgramLoad { slot: 0, name: "profile.medium-read".into() }).unwrap();
    qp.call(Command::ProgramActivate { slot: 0, active: true }).unwrap();
    let before = dev.counters();
    let r =
        qp.call(Command::Execute { slot: 0, pes: 1, params: params(&[1000, 4, 1, 1 << 20]), ranges: vec![] }).unwrap();
    let c = dev.counters().since(&before);
    assert_eq!((c.medium_reads, c.medium_bytes_read), (1000, 4000));
    let Reply::Executed(rep) = r else { panic!() };
    assert_eq!(rep.end_ps - rep.start_ps, 1000 * 142_857, "one PE waits 142.857 ns per transfer");
    assert_eq!(c.link_bytes_to_host, CQE_BYTES, "nothing but the completion reaches the host");
}

#[test]
fn flash_timing_follows_the_model() {
    // cosmos-plus: tR 50 us, 8 KiB at 200 MB/s = 40.96 us on the channel,
    // 8 KiB at 3400 MB/s on the link = 2.409 us, latency 1 us.
    let (_d, dev) = device("cosmos-plus", 64 << 20);
    let mut qp = dev.queue_pair();
    let c = qp.call_timed(Command::PageRead { ppn: 0, host_addr: None }).unwrap();
    let link_ps = (8192.0 * 1e12 / 3.4e9_f64).round() as u64;
    assert_eq!(c.completed_ps - c.submitted_ps, 50_000_000 + 40_960_000 + link_ps + 1_000_000);
    // Eight reads on eight channels overlap; eight on one chip do not.
    let t0 = dev.now_ps();
    let ids: Vec<u64> = (0..8).map(|ppn| qp.submit(Command::PageRead { ppn, host_addr: None }).unwrap()).collect();
    let parallel = ids.into_iter().map(|id| qp.wait(id).unwrap().completed_ps).max().unwrap() - t0;
    let t0 = dev.now_ps();
    let ids: Vec<u64> =
        (0..8).map(|k| qp.submit(Command::PageRead { ppn: k * 64, host_addr: None }).unwrap()).collect();
    let serial = ids.into_iter().map(|id| qp.wait(id).unwrap().completed_ps).max().unwrap() - t0;
    assert!(parallel < 100_000_000 + 8 * link_ps, "parallel {parallel}");
    assert!(serial >= 8 * 90_960_000, "serial {serial}");
}

#[test]
fn real_clock_holds_completions_until_their_modelled_time() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::create(
        dir.path(),
        Profile::load("cosmos-plus").unwrap(),
        Some(1 << 20),
        DeviceOptions::with_clock(ClockKind::Real),
    )
    .unwrap();
    let mut qp = dev.queue_pair();
    let wall = std::time::Instant::now();
    let c = qp.call_timed(Command::PageRead { ppn: 3, host_addr: None }).unwrap();
    let modelled_ns = (c.completed_ps - c.submitted_ps) / 1000;
    assert!(modelled_ns > 90_000);
    assert!(wall.elapsed().as_nanos() as u64 >= modelled_ns, "completion observed before its modelled time");
}

#[test]
fn scaling_saturates_the_medium_like_table_i() {
    let (_d, dev) = device("u280-nvm", 16 << 20);
    let mut qp = dev.queue_pair();
    qp.call(Command::ProgramLoad { slot: 0, name: "bench.insitu-transfers".into() }).unwrap();
    qp.call(Command::ProgramActivate { slot: 0, active: true }).unwrap();
    let rate = |qp: &mut ndpdb_device::QueuePair, pes: u32| {
        let n = 50_000;
        match qp.call(Command::Execute { slot: 0, pes, params: params(&[n, 16 << 20, 5, 0]), ranges: vec![] }).unwrap()
        {
            Reply::Executed(r) => (u64::from(pes) * n) as f64 / r.modelled_s() / 1e6,
            other => panic!("{other:?}"),
        }
    };
    for (pes, paper) in [(1, 7.0), (4, 27.0), (8, 53.5), (12, 77.5), (16, 83.2)] {
        let ours = rate(&mut qp, pes);
        assert!(((ours - paper) / paper).abs() < 0.15, "{pes} PEs: {ours:.1} M/s vs paper {paper}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Pages written in any order read back as a map of the last writes
    /// says, across a close and reopen.
    #[test]
    fn pages_match_a_model(ops in proptest::collection::vec((0u64..16, any::<u8>(), any::<bool>()), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("softssd").unwrap();
        let mut model = std::collections::BTreeMap::new();
        {
            let dev = Device::create(dir.path(), profile.clone(), Some(16 * 8192), DeviceOptions::default()).unwrap();
            let mut qp = dev.queue_pair();
            for &(ppn, byte, write) in &ops {
                if write {
                    qp.call(Command::PageWrite { ppn, data: vec![byte; 8192] }).unwrap();
                    model.insert(ppn, byte);
                } else {
                    let got = qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
                    prop_assert_eq!(got, vec![model.get(&ppn).copied().unwrap_or(0); 8192]);
                }
            }
        }
        let dev = Device::open(dir.path(), profile, DeviceOptions::default()).unwrap();
        let mut qp = dev.queue_pair();
        for ppn in 0..16 {
            let got = qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
            prop_assert_eq!(got, vec![model.get(&ppn).copied().unwrap_or(0); 8192]);
        }
    }
}

/// A page run returns each page in its own buffer, counts one submission
/// and one completion for all of them, and takes the time of the same page
/// reads submitted together, less the link latency of all but one
/// completion; bad runs are refused and move no data.
#[test]
fn a_page_run_reads_consecutive_pages_in_one_command() {
    for profile in ["u280-nvm", "cosmos-plus"] {
        let (_d, dev) = device(profile, 1 << 20);
        let page = dev.info().page_bytes as usize;
        let mut qp = dev.queue_pair();
        for ppn in 0..8u64 {
            qp.call(Command::PageWrite { ppn, data: vec![ppn as u8 + 1; page] }).unwrap();
        }
        let before = dev.counters();
        let c = qp.call_timed(Command::PageReadRun { first_ppn: 2, pages: 4 }).unwrap();
        let (run_ps, result) = (c.completed_ps - c.submitted_ps, c.result.unwrap());
        let Reply::Pages(pages) = result else { panic!("{profile}: a page run answered {result:?}") };
        assert_eq!(pages.len(), 4);
        for (i, p) in pages.iter().enumerate() {
            assert_eq!(p, &vec![i as u8 + 3; page], "{profile}: page {} of the run", i + 2);
        }
        let counted = dev.counters().since(&before);
        assert_eq!(counted.link_bytes_to_device, SQE_BYTES);
        assert_eq!(counted.link_bytes_to_host, CQE_BYTES + 4 * page as u64);
        assert_eq!((counted.medium_reads, counted.medium_bytes_read), (4, 4 * page as u64));
        assert_eq!(counted.commands.get("page_read_run"), Some(&1));

        // The same pages as four page reads submitted at once, on a device
        // with the same history (eight page writes; timing does not depend
        // on the data).
        let (_d2, dev2) = device(profile, 1 << 20);
        let mut qp2 = dev2.queue_pair();
        for ppn in 0..8u64 {
            qp2.call(Command::PageWrite { ppn, data: vec![0; page] }).unwrap();
        }
        let ids: Vec<u64> = (2..6).map(|ppn| qp2.submit(Command::PageRead { ppn, host_addr: None }).unwrap()).collect();
        let done: Vec<_> = ids.into_iter().map(|id| qp2.wait(id).unwrap()).collect();
        let last = done.iter().map(|c| c.completed_ps).max().unwrap();
        assert_eq!(last - done[0].submitted_ps, run_ps, "{profile}");

        let refused = dev.counters();
        assert!(err(qp.call(Command::PageReadRun { first_ppn: 0, pages: 0 })).contains("1 to"));
        let too_many = (ndpdb_device::RUN_BYTES_MAX / page as u64) as u32 + 1;
        assert!(err(qp.call(Command::PageReadRun { first_ppn: 0, pages: too_many })).contains("per command"));
        assert!(err(qp.call(Command::PageReadRun { first_ppn: 126, pages: 4 })).contains("pages 0..128"));
        assert!(err(qp.call(Command::PageReadRun { first_ppn: u64::MAX, pages: 2 })).contains("overflow"));
        let after = dev.counters().since(&refused);
        assert_eq!((after.medium_reads, after.link_bytes_to_host), (0, 4 * CQE_BYTES), "{profile}: no data moved");
    }
}
