//! The pool on the emulated device (`DevicePageIo`): pages survive
//! eviction and re-reading, and a new pool over the same file; the file
//! ends at its page limit with `DeviceFull` and loses nothing; the device's
//! command counters agree with the pool's; a corrupt page on the medium is
//! refused by pid.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::pid_word;
use ndpdb_bufmgr::{
    BufferPool, DevicePageIo, HEADER_BYTES, MemoryLog, PageIo, PoolConfig, PoolError, page_read, seqlock,
};
use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile};

const FIRST_PPN: u64 = 100;
const LIMIT: u64 = 24;

fn device(dir: &Path) -> Arc<Device> {
    let profile = Profile::load("softssd").unwrap();
    Arc::new(Device::create(dir, profile, Some(16 << 20), DeviceOptions::with_clock(ClockKind::Virtual)).unwrap())
}

fn pool(dev: &Arc<Device>, pages: u64, frames: usize) -> (BufferPool, Arc<DevicePageIo>) {
    let io = Arc::new(DevicePageIo::new(dev.clone(), FIRST_PPN, pages, LIMIT).unwrap());
    let config = PoolConfig { frames, page_bytes: io.page_bytes() };
    (BufferPool::new(config, io.clone(), Arc::new(MemoryLog::new())).unwrap(), io)
}

/// Page `pid`'s body: a pattern that names it.
fn pattern(pid: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (pid as usize * 31 + i * 7) as u8).collect()
}

fn count(dev: &Device, kind: &str) -> u64 {
    dev.counters().commands.get(kind).copied().unwrap_or(0)
}

#[test]
fn pages_survive_eviction_a_full_file_and_a_new_pool() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let (pool, io) = pool(&dev, 0, 4);
    let len = 1000;
    for pid in 0..LIMIT {
        let mut g = pool.allocate().unwrap();
        assert_eq!(g.pid(), pid);
        g.write(HEADER_BYTES + 100, &pattern(pid, len));
    }
    let err = pool.allocate().unwrap_err();
    assert!(matches!(err, PoolError::DeviceFull { pages_max: LIMIT }), "{err}");
    assert!(err.to_string().contains("24 pages"), "{err}");
    assert_eq!(io.pages(), LIMIT);
    for pid in (0..LIMIT).rev() {
        let g = pool.fix_shared(pid).unwrap();
        assert_eq!(&g.bytes()[HEADER_BYTES + 100..HEADER_BYTES + 100 + len], &pattern(pid, len)[..], "page {pid}");
    }
    let s = pool.stats();
    assert_eq!(count(&dev, "page_write"), s.write_backs, "{s:?}");
    assert_eq!(count(&dev, "page_read"), s.misses, "{s:?}");
    assert!(s.evictions >= LIMIT - 4 && s.misses >= LIMIT - 4, "{s:?}");
    pool.write_back_all().unwrap();
    drop(pool);

    // A new pool over the same file (its length kept by the caller).
    let (again, _) = self::pool(&dev, LIMIT, 3);
    for pid in 0..LIMIT {
        let g = again.fix_shared(pid).unwrap();
        assert_eq!(pid_word(g.bytes()), pid);
        assert_eq!(&g.bytes()[HEADER_BYTES + 100..HEADER_BYTES + 100 + len], &pattern(pid, len)[..], "page {pid}");
    }
}

#[test]
fn written_pages_lie_at_first_ppn_plus_pid() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let (pool, io) = pool(&dev, 0, 2);
    for _ in 0..3 {
        pool.allocate().unwrap().write(HEADER_BYTES, b"hello");
    }
    pool.write_back_all().unwrap();
    let mut qp = dev.queue_pair();
    let page = qp.call(page_read(io.ppn(2), 0)).unwrap().into_data();
    assert_eq!(io.ppn(2), FIRST_PPN + 2);
    assert_eq!(pid_word(&page), 2);
    assert_eq!(&page[HEADER_BYTES..HEADER_BYTES + 5], b"hello");
    assert!(seqlock::versions_match(&page));
}

#[test]
fn a_corrupt_page_on_the_medium_is_refused_by_pid() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let (pool, io) = pool(&dev, 0, 2);
    for _ in 0..2 {
        pool.allocate().unwrap();
    }
    pool.write_back_all().unwrap();
    let mut garbage = vec![0xA5u8; io.page_bytes()];
    garbage[8..16].copy_from_slice(&7u64.to_le_bytes());
    dev.queue_pair().call(Command::PageWrite { ppn: io.ppn(1), data: garbage }).unwrap();
    drop(pool);
    let (pool, _) = self::pool(&dev, 2, 2);
    let err = pool.fix_shared(1).unwrap_err();
    assert!(err.to_string().contains("page 1 is corrupt") && err.to_string().contains("says 7"), "{err}");
    assert_eq!(pid_word(pool.fix_shared(0).unwrap().bytes()), 0, "the other page still reads");
}

#[test]
fn a_file_past_the_device_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let device_pages = dev.info().capacity_bytes / u64::from(dev.info().page_bytes);
    let err = DevicePageIo::new(dev.clone(), device_pages - 10, 0, 11).err().unwrap();
    assert!(matches!(err, PoolError::Config { .. }), "{err}");
    assert!(DevicePageIo::new(dev.clone(), device_pages - 10, 0, 10).is_ok());
    assert!(DevicePageIo::new(dev, 0, 11, 10).is_err(), "more pages than the limit");
}

#[test]
fn reading_past_the_file_asks_nothing_of_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let (_, io) = pool(&dev, 3, 2);
    let before = count(&dev, "page_read");
    assert!(matches!(io.read(3, 0), Err(PoolError::NoSuchPage { pid: 3, pages: 3 })));
    assert!(matches!(io.write(9, &vec![0; io.page_bytes()]), Err(PoolError::NoSuchPage { .. })));
    assert!(matches!(io.write(0, &[0; 10]), Err(PoolError::PageSize { .. })));
    assert_eq!(count(&dev, "page_read"), before);
}
