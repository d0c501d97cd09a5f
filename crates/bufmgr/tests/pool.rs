//! The pool's behaviour, one scenario per test, over pages in memory:
//! allocation, hits and misses, eviction and write-back after the log,
//! latches and downgrade, a full pool, and every bad read or failed write.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{memory_pool, pid_word};
use ndpdb_bufmgr::{
    BufferPool, HEADER_BYTES, LogSync, MemoryLog, MemoryPageIo, PageIo, PoolConfig, PoolError, seqlock,
};

const PAGE: usize = 128;

#[test]
fn an_allocated_page_is_zero_but_its_header_and_dirty() {
    let (pool, io, _) = memory_pool(2, PAGE, 10);
    let g = pool.allocate().unwrap();
    assert_eq!(g.pid(), 0);
    assert_eq!(pid_word(g.bytes()), 0);
    assert!(g.bytes()[HEADER_BYTES..PAGE - 8].iter().all(|&b| b == 0));
    assert!(g.wrote());
    drop(g);
    assert_eq!(pool.stats().dirty, 1);
    let g = pool.allocate().unwrap();
    assert_eq!((g.pid(), pid_word(g.bytes())), (1, 1));
    drop(g);
    pool.write_back_all().unwrap();
    let stored = io.page(1).unwrap();
    assert_eq!(pid_word(&stored), 1);
    assert!(seqlock::versions_match(&stored));
    assert_eq!(pool.stats().dirty, 0);
}

#[test]
fn pages_survive_eviction_and_come_back_from_the_file() {
    let (pool, io, _) = memory_pool(3, PAGE, 100);
    for i in 0..20u8 {
        let mut g = pool.allocate().unwrap();
        g.write(HEADER_BYTES + 3, &[i; 40]);
    }
    let s = pool.stats();
    assert_eq!((s.allocations, s.evictions, s.resident), (20, 17, 3));
    assert_eq!(s.eviction_write_backs, 17, "every evicted page was dirty");
    for i in (0..20u8).rev() {
        let g = pool.fix_shared(u64::from(i)).unwrap();
        assert_eq!(&g.bytes()[HEADER_BYTES + 3..HEADER_BYTES + 43], &[i; 40], "page {i}");
        assert_eq!(&g.bytes()[HEADER_BYTES..HEADER_BYTES + 3], &[0; 3]);
    }
    let s = pool.stats();
    assert_eq!(s.hits + s.misses, 20);
    assert_eq!(s.misses, io.reads());
    assert!(s.hits >= 3, "the last three allocated were still cached: {s:?}");
}

#[test]
fn a_dirty_page_is_written_back_only_after_the_log() {
    let (pool, io, log) = memory_pool(1, PAGE, 10);
    let mut g = pool.allocate().unwrap();
    let lsn = log.append();
    g.write(HEADER_BYTES, b"logged change");
    g.set_lsn(lsn);
    drop(g);
    assert_eq!(log.durable_lsn(), 0);
    let _other = pool.allocate().unwrap(); // evicts page 0
    assert_eq!(log.durable_lsn(), lsn, "eviction flushed the log first");
    assert_eq!(pool.stats().log_flushes, 1);
    assert_eq!(&io.page(0).unwrap()[HEADER_BYTES..HEADER_BYTES + 13], b"logged change");
}

#[test]
fn a_failing_log_keeps_the_page_dirty_and_cached() {
    let (pool, io, log) = memory_pool(1, PAGE, 10);
    let mut g = pool.allocate().unwrap();
    g.write(HEADER_BYTES, &[7; 8]);
    g.set_lsn(log.append());
    drop(g);
    log.set_failing(true);
    let err = pool.allocate().unwrap_err();
    assert!(matches!(err, PoolError::Log { .. }), "{err}");
    assert_eq!(io.pages(), 1, "the file did not grow for the refused allocation");
    assert_eq!(io.writes(), 0);
    let g = pool.fix_shared(0).unwrap();
    assert_eq!(&g.bytes()[HEADER_BYTES..HEADER_BYTES + 8], &[7; 8], "nothing lost");
    drop(g);
    log.set_failing(false);
    pool.allocate().unwrap();
    assert_eq!(io.page(0).unwrap()[HEADER_BYTES], 7);
}

#[test]
fn a_log_that_does_not_reach_the_lsn_is_an_error() {
    let (pool, _, log) = memory_pool(1, PAGE, 10);
    let mut g = pool.allocate().unwrap();
    g.write(HEADER_BYTES, &[1]);
    g.set_lsn(log.append() + 5); // an LSN the log never handed out
    drop(g);
    let err = pool.write_back_all().unwrap_err();
    assert!(matches!(err, PoolError::LogBehind { pid: 0, lsn: 6, durable: 1 }), "{err}");
    assert!(err.to_string().contains("write-ahead rule"));
}

#[test]
fn a_failed_write_back_loses_nothing() {
    let (pool, io, _) = memory_pool(2, PAGE, 10);
    for i in 0..2u8 {
        pool.allocate().unwrap().write(HEADER_BYTES, &[i + 1; 16]);
    }
    io.fail_after(Some(0));
    let err = pool.allocate().unwrap_err();
    assert!(matches!(err, PoolError::Io { .. }), "{err}");
    io.fail_after(None);
    for pid in 0..2 {
        let g = pool.fix_shared(pid).unwrap();
        assert_eq!(g.bytes()[HEADER_BYTES], pid as u8 + 1);
    }
    assert_eq!(pool.stats().dirty, 2, "both pages still wait for their write-back");
    pool.write_back_all().unwrap();
    assert_eq!(io.page(1).unwrap()[HEADER_BYTES], 2);
}

#[test]
fn a_failed_read_caches_nothing_and_a_retry_reads_again() {
    let (pool, io, _) = memory_pool(2, PAGE, 10);
    pool.allocate().unwrap().write(HEADER_BYTES, &[9]);
    pool.write_back_all().unwrap();
    pool.allocate().unwrap();
    pool.allocate().unwrap(); // page 0 evicted
    pool.write_back_all().unwrap(); // so that the next miss evicts without a write
    io.fail_after(Some(0));
    assert!(matches!(pool.fix_shared(0), Err(PoolError::Io { pid: 0, .. })));
    assert_eq!(pool.resident(0), None);
    io.fail_after(None);
    assert_eq!(pool.fix_exclusive(0).unwrap().bytes()[HEADER_BYTES], 9);
}

#[test]
fn a_full_pool_is_an_error_naming_its_size_and_recovers() {
    let (pool, io, _) = memory_pool(3, PAGE, 10);
    let held: Vec<_> = (0..3).map(|_| pool.allocate().unwrap()).collect();
    let err = pool.allocate().unwrap_err();
    assert!(matches!(err, PoolError::Full { frames: 3 }), "{err}");
    assert!(err.to_string().contains("all 3 frames"), "{err}");
    assert_eq!(io.pages(), 3, "a refused allocation does not grow the file");
    drop(held);
    // Three pages pinned shared (one twice) still fill the pool.
    let a = pool.fix_shared(0).unwrap();
    let b = pool.fix_shared(0).unwrap();
    let c = pool.fix_shared(1).unwrap();
    let d = pool.fix_shared(2).unwrap();
    assert!(matches!(pool.allocate(), Err(PoolError::Full { .. })));
    drop(a);
    assert!(matches!(pool.allocate(), Err(PoolError::Full { .. })), "page 0 is still pinned by b");
    drop(b);
    let e = pool.allocate().unwrap();
    assert_eq!(e.pid(), 3);
    assert_eq!(pool.stats().full, 3);
    drop((c, d, e));
}

#[test]
fn fixing_a_page_past_the_end_of_the_file_is_refused() {
    let (pool, _, _) = memory_pool(2, PAGE, 10);
    pool.allocate().unwrap();
    let err = pool.fix_shared(5).unwrap_err();
    assert!(matches!(err, PoolError::NoSuchPage { pid: 5, pages: 1 }), "{err}");
}

#[test]
fn a_misdirected_or_torn_page_is_refused_by_pid() {
    let (pool, io, _) = memory_pool(1, PAGE, 10);
    pool.allocate().unwrap();
    pool.allocate().unwrap();
    pool.allocate().unwrap(); // pages 0 and 1 written back
    let page1 = io.page(1).unwrap();
    io.put(0, page1.clone());
    let err = pool.fix_shared(0).unwrap_err();
    assert!(err.to_string().contains("page 0 is corrupt") && err.to_string().contains("says 1"), "{err}");
    let mut torn = page1;
    torn[PAGE - 8] ^= 1;
    io.put(1, torn);
    let err = pool.fix_exclusive(1).unwrap_err();
    assert!(err.to_string().contains("page 1 is corrupt") && err.to_string().contains("torn"), "{err}");
    assert_eq!(pool.stats().resident, 0, "neither bad page was cached (page 2 made room)");
    assert_eq!(pid_word(&io.page(2).unwrap()), 2, "page 2 was written back when it made room");
}

#[test]
fn a_page_never_written_back_reads_as_an_empty_page() {
    let (pool, io, _) = memory_pool(1, PAGE, 10);
    // Extended but never written (a crash before its first write-back).
    io.extend().unwrap();
    let g = pool.fix_shared(0).unwrap();
    assert_eq!(pid_word(g.bytes()), 0);
    assert!(seqlock::versions_match(g.bytes()));
    assert!(g.bytes()[HEADER_BYTES..PAGE - 8].iter().all(|&b| b == 0));
    drop(g);
    let s = pool.stats();
    assert_eq!((s.never_written_reads, s.dirty), (1, 0), "cached clean: nothing to write back");
}

#[test]
fn a_shared_latch_excludes_the_exclusive_one_until_released() {
    let (pool, _, _) = memory_pool(2, PAGE, 10);
    pool.allocate().unwrap();
    let shared = pool.fix_shared(0).unwrap();
    let also = pool.fix_shared(0).unwrap();
    let got = AtomicBool::new(false);
    std::thread::scope(|s| {
        let t = s.spawn(|| {
            let mut g = pool.fix_exclusive(0).unwrap();
            got.store(true, Ordering::SeqCst);
            g.write(HEADER_BYTES, &[5]);
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!got.load(Ordering::SeqCst), "the exclusive latch was granted under two shared ones");
        drop(shared);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(!got.load(Ordering::SeqCst), "the exclusive latch was granted under a shared one");
        assert_eq!(also.bytes()[HEADER_BYTES], 0);
        drop(also);
        t.join().unwrap();
    });
    assert!(got.load(Ordering::SeqCst));
    assert!(pool.stats().latch_waits >= 1);
    assert_eq!(pool.fix_shared(0).unwrap().bytes()[HEADER_BYTES], 5);
}

#[test]
fn downgrade_publishes_the_change_and_keeps_writers_out() {
    let (pool, _, _) = memory_pool(2, PAGE, 10);
    pool.allocate().unwrap();
    let before = seqlock::versions(pool.fix_shared(0).unwrap().bytes()).unwrap();
    let mut x = pool.fix_exclusive(0).unwrap();
    x.write(HEADER_BYTES, &[42]);
    assert_eq!(seqlock::versions(x.bytes()).unwrap(), (before.0, before.0 + 1), "rear ahead while changing");
    let s = x.downgrade();
    assert_eq!(seqlock::versions(s.bytes()).unwrap(), (before.0 + 1, before.0 + 1));
    assert_eq!(s.bytes()[HEADER_BYTES], 42);
    let writer_done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let t = scope.spawn(|| {
            pool.fix_exclusive(0).unwrap().write(HEADER_BYTES, &[43]);
            writer_done.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!writer_done.load(Ordering::SeqCst), "a writer got in under the downgraded latch");
        assert_eq!(s.bytes()[HEADER_BYTES], 42);
        drop(s);
        t.join().unwrap();
    });
    assert_eq!(pool.fix_shared(0).unwrap().bytes()[HEADER_BYTES], 43);
}

#[test]
fn an_exclusive_latch_that_wrote_nothing_leaves_the_page_as_it_was() {
    let (pool, _, _) = memory_pool(2, PAGE, 10);
    pool.allocate().unwrap();
    pool.write_back_all().unwrap();
    let before = pool.fix_shared(0).unwrap().bytes().to_vec();
    let x = pool.fix_exclusive(0).unwrap();
    assert!(!x.wrote());
    drop(x);
    assert_eq!(pool.fix_shared(0).unwrap().bytes(), &before[..]);
    assert_eq!(pool.stats().dirty, 0, "still clean");
    let x = pool.fix_exclusive(0).unwrap();
    assert_eq!(x.downgrade().bytes(), &before[..]);
}

#[test]
fn copy_within_moves_body_bytes() {
    let (pool, _, _) = memory_pool(1, PAGE, 10);
    let mut g = pool.allocate().unwrap();
    let data: Vec<u8> = (1..=50).collect();
    g.write(HEADER_BYTES + 1, &data);
    g.copy_within(HEADER_BYTES + 1..HEADER_BYTES + 51, HEADER_BYTES + 7);
    assert_eq!(&g.bytes()[HEADER_BYTES + 7..HEADER_BYTES + 57], &data[..]);
    assert_eq!(&g.bytes()[HEADER_BYTES + 1..HEADER_BYTES + 7], &data[..6]);
}

#[test]
#[should_panic(expected = "outside the page body")]
fn a_write_into_the_header_is_a_programmer_error() {
    let (pool, _, _) = memory_pool(1, PAGE, 10);
    pool.allocate().unwrap().write(8, &[1]);
}

#[test]
#[should_panic(expected = "outside the page body")]
fn a_write_into_the_rear_version_is_a_programmer_error() {
    let (pool, _, _) = memory_pool(1, PAGE, 10);
    pool.allocate().unwrap().write(PAGE - 10, &[1; 3]);
}

#[test]
fn flush_and_write_back_refuse_a_thread_that_holds_guards() {
    let (pool, _, _) = memory_pool(2, PAGE, 10);
    let g = pool.allocate().unwrap();
    let err = pool.flush_dirty().unwrap_err();
    assert!(matches!(err, PoolError::GuardsHeld { guards: 1, operation: "flush_dirty" }), "{err}");
    assert!(matches!(pool.write_back_all(), Err(PoolError::GuardsHeld { .. })));
    drop(g);
    let f = pool.flush_dirty().unwrap();
    assert_eq!(f.pages_written, 1);
    assert_eq!(pool.flush_dirty().unwrap().pages_written, 0);
}

#[test]
fn bad_configurations_say_what_fits() {
    let io = Arc::new(MemoryPageIo::new(100, 1));
    let log = Arc::new(MemoryLog::new());
    for (frames, page_bytes, wanted) in
        [(0, 128, "0 frames"), (4, 100, "multiple of 8"), (4, 32, "64 to"), (4, 1 << 21, "64 to")]
    {
        let err = BufferPool::new(PoolConfig { frames, page_bytes }, io.clone(), log.clone()).unwrap_err();
        assert!(err.to_string().contains(wanted), "{err}");
    }
}

#[test]
fn host_memory_is_the_frames_and_guards_name_their_frame() {
    let (pool, _, _) = memory_pool(4, PAGE, 10);
    let mem = pool.host_memory();
    assert_eq!(mem.len(), 4 * PAGE as u64);
    let mut g = pool.allocate().unwrap();
    g.write(HEADER_BYTES, b"dma me");
    let addr = g.frame_addr();
    assert_eq!(addr % PAGE as u64, 0);
    assert_eq!(pool.resident(0), Some(addr));
    drop(g);
    let mut copy = vec![0; PAGE];
    mem.dma_read(addr, &mut copy).unwrap();
    assert_eq!(&copy[HEADER_BYTES..HEADER_BYTES + 6], b"dma me");
    assert_eq!(pid_word(&copy), 0);
    assert!(seqlock::versions_match(&copy));
}
