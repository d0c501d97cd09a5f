//! `thread_io`: each host thread's own commands and modelled waits (what
//! `ndpdb bench cbm` charges its OLTP thread with on the virtual clock).

use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile, thread_io};

fn device() -> (tempfile::TempDir, Device) {
    let dir = tempfile::tempdir().unwrap();
    let p = Profile::load("softssd").unwrap();
    let capacity = 64 * u64::from(p.page_bytes());
    let dev = Device::create(dir.path(), p, Some(capacity), DeviceOptions::with_clock(ClockKind::Virtual)).unwrap();
    (dir, dev)
}

#[test]
fn a_thread_is_charged_its_own_commands_and_overlapping_waits_once() {
    let (_dir, dev) = device();
    let page = dev.info().page_bytes as usize;
    let mut qp = dev.queue_pair();
    let before = thread_io();
    // Sequential: each wait is the command's own span.
    let c = qp.call_timed(Command::PageWrite { ppn: 0, data: vec![1; page] }).unwrap();
    let after = thread_io();
    assert_eq!(after.submitted - before.submitted, 1);
    assert_eq!(after.waited_ps - before.waited_ps, c.completed_ps - c.submitted_ps);
    assert!(c.completed_ps - c.submitted_ps >= 800_000_000, "a flash program on softssd");
    // Two programs on different chips at once: waited for once, not twice.
    let ids = [1, 2].map(|ppn| qp.submit(Command::PageWrite { ppn, data: vec![2; page] }).unwrap());
    let done = ids.map(|id| qp.wait(id).unwrap());
    let waited = thread_io().waited_ps - after.waited_ps;
    let first = done.iter().map(|c| c.submitted_ps).min().unwrap();
    let last = done.iter().map(|c| c.completed_ps).max().unwrap();
    assert_eq!(waited, last - first, "the union of the two spans");
    assert_eq!(thread_io().submitted - after.submitted, 2);
    // Another thread's commands are its own.
    let mine = thread_io();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut qp = dev.queue_pair();
            qp.call(Command::PageRead { ppn: 0, host_addr: None }).unwrap();
            assert_eq!(thread_io().submitted, 1);
        });
    });
    assert_eq!(thread_io(), mine);
}

/// A queue pair's counters are the device's counters for its own commands:
/// alone, they equal the device's change; with another thread's queue pair
/// reading at the same time, the two sum to the device's change and each
/// holds exactly what its own commands moved.
#[test]
fn a_queue_pair_counts_its_own_commands_while_others_run() {
    let (_dir, dev) = device();
    let page = dev.info().page_bytes as usize;
    let mut qp = dev.queue_pair();
    for ppn in 0..8 {
        qp.call(Command::PageWrite { ppn, data: vec![ppn as u8; page] }).unwrap();
    }
    let before = dev.counters();
    let mut alone = dev.queue_pair();
    let start = dev.now_ps();
    for ppn in 0..4 {
        alone.call(Command::PageRead { ppn, host_addr: None }).unwrap();
    }
    assert_eq!(alone.counters(), dev.counters().since(&before));
    assert_eq!(alone.waited_ps(), dev.now_ps() - start, "one caller: the clock's advance");
    let (from, until) = alone.waited_span_ps().unwrap();
    assert_eq!((from, until), (start, dev.now_ps()));

    let before = dev.counters();
    let reads = |first: u64, n: u64| {
        let dev = &dev;
        move || {
            let mut qp = dev.queue_pair();
            for i in 0..n {
                let ids: Vec<u64> = (0..4)
                    .map(|k| qp.submit(Command::PageRead { ppn: (first + i + k) % 8, host_addr: None }).unwrap())
                    .collect();
                for id in ids {
                    qp.wait(id).unwrap();
                }
            }
            qp.counters()
        }
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(reads(0, 50));
        let b = s.spawn(reads(3, 30));
        (a.join().unwrap(), b.join().unwrap())
    });
    let all = dev.counters().since(&before);
    assert_eq!(a.commands.get("page_read"), Some(&200));
    assert_eq!(b.commands.get("page_read"), Some(&120));
    assert_eq!(a.medium_bytes_read, 200 * page as u64);
    assert_eq!(b.medium_bytes_read, 120 * page as u64);
    assert_eq!(a.link_bytes_to_host + b.link_bytes_to_host, all.link_bytes_to_host);
    assert_eq!(a.link_bytes_to_device + b.link_bytes_to_device, all.link_bytes_to_device);
    assert_eq!(a.medium_bytes_read + b.medium_bytes_read, all.medium_bytes_read);
    assert_eq!(a.completions + b.completions, all.completions);
}
