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
