//! `kv.lookup` reading a dirty node from host memory by DMA: a frame
//! caught in the middle of a change (front != rear) or holding another
//! page is read again (each retry counted), a frame that never settles is
//! an error naming the page after `MAX_RETRIES` reads and `RETRY_WAIT`, and every DMA read is
//! charged to the link (latency, bandwidth, bytes host -> device).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ndpdb_device::kv_lookup::MAX_RETRIES;
use ndpdb_device::mirror::View;
use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, HostMemory, Profile, Reply};
use ndpdb_format::btree::{self, NONE, NodeKind, NodeSpec};
use ndpdb_format::kv_log::{KIND_PAGE_REDO, KvOp, PageChange, Redo, frame_into};
use ndpdb_format::kv_lookup::{Call, PeStats, STATS_BYTES, decode_slot};

const FILE_FIRST: u64 = 64;
const LOG_FIRST: u64 = 8;
const SLOT: u32 = 3;

/// One frame at host address 0 holding a leaf; the first `torn` reads see
/// it with a rear version one ahead (a writer inside).
struct Frame {
    page: Vec<u8>,
    torn: AtomicU64,
}

impl HostMemory for Frame {
    fn dma_read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let src = self.page.get(addr as usize..addr as usize + out.len()).ok_or("outside the frame")?;
        out.copy_from_slice(src);
        if self.torn.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| t.checked_sub(1)).is_ok() {
            let n = out.len();
            out[n - 8] = out[n - 8].wrapping_add(1);
        }
        Ok(())
    }
}

fn leaf(page_bytes: usize, pid: u64, value: &[u8]) -> Vec<u8> {
    let mut p = btree::blank_page(page_bytes, pid);
    let spec = NodeSpec { kind: NodeKind::Leaf, level: 0, lower: NONE, right: NONE, low: None, high: None };
    btree::write_node(&mut p, pid, &spec, &[]).unwrap();
    btree::insert(&mut p, pid, 0, b"key", value).unwrap();
    p
}

/// A device whose mirror says page 0 is Dirty in the frame at host address
/// 0 (learned from a log write), its medium holding an older leaf.
fn setup(torn: u64) -> (tempfile::TempDir, Device, usize) {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::create(
        dir.path(),
        Profile::load("u280-nvm").unwrap(),
        Some(4 << 20),
        DeviceOptions::with_clock(ClockKind::Virtual),
    )
    .unwrap();
    let page = dev.info().page_bytes as usize;
    let mut qp = dev.queue_pair();
    qp.call(Command::PageWrite { ppn: FILE_FIRST, data: leaf(page, 0, b"old") }).unwrap();
    dev.attach_host_memory(Arc::new(Frame { page: leaf(page, 0, b"new"), torn: AtomicU64::new(torn) }));
    let configure = Command::MirrorConfigure {
        file_first_ppn: FILE_FIRST,
        file_pages: 16,
        log_first_ppn: LOG_FIRST,
        log_pages: 4,
        frames: 4,
        log_lsn: 0,
    };
    qp.call(configure).unwrap();
    let change = PageChange { pid: 0, frame_addr: 0, full_image: false, ranges: vec![] };
    let mut log = Vec::new();
    frame_into(&mut log, 0, KIND_PAGE_REDO, &Redo { op: KvOp::Put, pages: vec![change] }.encode());
    log.resize(page, 0);
    qp.call(Command::PageWrite { ppn: LOG_FIRST, data: log }).unwrap();
    assert_eq!(dev.mirror_view(0), Some(Ok(View::Host(0))));
    qp.call(Command::ProgramLoad { slot: SLOT, name: "kv.lookup".into() }).unwrap();
    qp.call(Command::ProgramActivate { slot: SLOT, active: true }).unwrap();
    (dir, dev, page)
}

fn run(dev: &Device, mirror: bool) -> Result<(Option<Vec<u8>>, PeStats, u64), String> {
    let call = Call {
        mirror,
        root_pid: 0,
        file_first_ppn: FILE_FIRST,
        file_pages: 16,
        slot_bytes: 64,
        keys: vec![b"key"],
        shadow: None,
    };
    let mut qp = dev.queue_pair();
    let Reply::Range(range) = qp.call(Command::MemoryRangeCreate { bytes: 128 }).unwrap() else { panic!() };
    let exec = qp.call_timed(Command::Execute { slot: SLOT, pes: 1, params: call.encode(), ranges: vec![range] });
    let exec = exec.unwrap().result.map_err(|e| e.to_string())?;
    let Reply::Executed(report) = exec else { panic!() };
    let out = qp.call(Command::MemoryRead { range, offset: 0, len: 128 }).unwrap().into_data();
    let value = decode_slot(&out[STATS_BYTES..]).unwrap().map(<[u8]>::to_vec);
    Ok((value, PeStats::decode(&out).unwrap(), report.end_ps - report.start_ps))
}

#[test]
fn a_torn_frame_is_read_again_and_each_retry_counted() {
    let (_dir, dev, page) = setup(3);
    let before = dev.counters();
    let (value, stats, with_dma_ps) = run(&dev, true).unwrap();
    assert_eq!(value.as_deref(), Some(&b"new"[..]), "the host's copy, once whole");
    assert_eq!((stats.retries, stats.host_reads), (3, 4));
    let c = dev.counters().since(&before);
    assert_eq!((c.dma_reads, c.dma_bytes_read), (4, 4 * page as u64));
    assert!(c.link_bytes_to_device >= 4 * page as u64, "DMA bytes cross the link host -> device");
    // Without the mirror: the medium's older copy, and no DMA.
    let (value, stats, _) = run(&dev, false).unwrap();
    assert_eq!((value.as_deref(), stats.host_reads), (Some(&b"old"[..]), 0));
    let link_latency_ps = (dev.profile().link.latency_ns * 1000.0) as u64;
    assert!(with_dma_ps >= 4 * link_latency_ps, "each DMA read waits the link latency ({with_dma_ps} ps)");
}

#[test]
fn a_frame_that_never_settles_is_an_error_naming_the_page() {
    let (_dir, dev, _) = setup(u64::MAX);
    let err = run(&dev, true).unwrap_err();
    assert!(err.contains("page 0") && err.contains("reads of its frame"), "{err}");
    let tries: u64 = err.split("page 0: ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    assert!(tries >= MAX_RETRIES, "at least {MAX_RETRIES} reads before giving up: {err}");
}
