//! The log ring on the device (`DeviceKvLog`) on its own: group commit,
//! laps around the ring, the space rule (`LogFull` before a byte after the
//! checkpoint's page would be overwritten), and reading back after a
//! reopen up to the first record that is not whole.

use std::sync::Arc;

use ndpdb_bufmgr::MemoryPageIo;
use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile};
use ndpdb_format::kv_image::KvRoot;
use ndpdb_kv::{DeviceKvLog, KvError, KvLog};

const KIND: u32 = 16;

fn setup(dir: &std::path::Path) -> (Arc<Device>, KvRoot) {
    let p = Profile::load("u280-nvm").unwrap();
    let dev = Arc::new(Device::create(dir, p, Some(8 << 20), DeviceOptions::with_clock(ClockKind::Virtual)).unwrap());
    let root = KvRoot {
        generation: 0,
        root_pid: 0,
        log_first_ppn: 2,
        log_pages: 4,
        file_first_ppn: 6,
        file_page_limit: 100,
        checkpoint_lsn: 0,
        file_pages: 0,
        page_bytes: 8192,
    };
    (dev, root)
}

fn file() -> Arc<MemoryPageIo> {
    Arc::new(MemoryPageIo::new(8192, 100))
}

fn payload(i: u64) -> Vec<u8> {
    vec![(i % 251) as u8; (i * 37 % 1500) as usize]
}

/// Every record from the checkpoint on: (lsn, payload).
fn records(log: &dyn KvLog) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    log.scan(0, &mut |r| {
        out.push((r.lsn, r.payload.to_vec()));
        Ok(())
    })
    .unwrap();
    out
}

#[test]
fn one_flush_makes_every_waiting_record_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, root) = setup(dir.path());
    let log = DeviceKvLog::create(&dev, root, file());
    let ends: Vec<u64> = (0..10).map(|i| log.append(KIND, &payload(i)).unwrap().1).collect();
    assert_eq!(log.durable_lsn(), 0, "appends are not durable by themselves");
    log.flush_to(ends[0]).unwrap();
    assert_eq!(log.durable_lsn(), ends[9], "the flush took every record appended before it");
    assert_eq!((log.stats().flushes, log.stats().records), (1, 10));
    log.flush_to(ends[5]).unwrap();
    assert_eq!(log.stats().flushes, 1, "nothing more to write");
}

#[test]
fn concurrent_writers_share_flushes_and_every_record_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, mut root) = setup(dir.path());
    root.log_pages = 64;
    let log = Arc::new(DeviceKvLog::create(&dev, root, file()));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let log = log.clone();
            s.spawn(move || {
                for i in 0..100 {
                    let (_, end) = log.append(KIND, &payload(t * 1000 + i)).unwrap();
                    log.flush_to(end).unwrap();
                    assert!(log.durable_lsn() >= end);
                }
            });
        }
    });
    let st = log.stats();
    assert_eq!(st.records, 400);
    assert!(st.flushes <= 400 && st.page_writes >= st.flushes);
    let before = records(&*log);
    drop(log);
    let reopened = DeviceKvLog::open(&dev, root, file()).unwrap();
    assert_eq!(records(&reopened), before);
    assert_eq!(before.len(), 400);
}

#[test]
fn the_ring_laps_refuses_to_overwrite_the_checkpoint_and_reopens_at_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, root) = setup(dir.path());
    let log = DeviceKvLog::create(&dev, root, file());
    let capacity = log.capacity().unwrap();
    assert_eq!(capacity, 3 * 8192, "one page less than the ring: the checkpoint's page is kept");
    let mut i = 0;
    let mut full = 0;
    while log.end_lsn() < 10 * 4 * 8192 {
        match log.append(KIND, &payload(i)) {
            Ok(_) => i += 1,
            Err(KvError::LogFull { checkpoint, .. }) => {
                full += 1;
                assert!(log.end_lsn() + 1500 > checkpoint - checkpoint % 8192 + 4 * 8192 - 1600);
                log.flush_to(u64::MAX).unwrap();
                let last = records(&log).last().unwrap().0;
                log.set_checkpoint(last).unwrap();
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(full >= 9, "the ring filled on every lap: {full}");
    log.flush_to(u64::MAX).unwrap();
    let want = records(&log);
    let root = log.root();
    assert_eq!(root.generation, full);
    drop(log);
    // A torn tail: the last record's page loses its bytes from the last
    // record on; the log ends before it.
    let reopened = DeviceKvLog::open(&dev, root, file()).unwrap();
    assert_eq!(records(&reopened), want);
    let (last, _) = *want.last().unwrap();
    let ppn = root.log_ppn(last);
    let mut qp = dev.queue_pair();
    let mut page = qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data();
    let off = (last % 8192) as usize;
    page[off + 30] ^= 0xff;
    qp.call(Command::PageWrite { ppn, data: page }).unwrap();
    drop(reopened);
    let reopened = DeviceKvLog::open(&dev, root, file()).unwrap();
    assert_eq!(records(&reopened), want[..want.len() - 1]);
    assert_eq!(reopened.end_lsn(), last, "appends continue where the torn record was");
}
