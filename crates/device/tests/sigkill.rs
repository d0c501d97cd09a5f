//! Sector writes are atomic with respect to a real SIGKILL: a child process
//! writes pages as fast as it can and is killed at random points; after each
//! kill every sector of every page is one write's bytes throughout and passes
//! its check. (Its own test binary: a child spawned while another test of the
//! same process has an image open would hold that image's lock until exec.)

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::time::Duration;

use ndpdb_device::{Command, Device, DeviceOptions};

mod sectors;

use sectors::{generations, page_of, profile, read_page};

/// The child side of [`sigkilled_writers_never_tear_a_sector`]: writes pages
/// 0..16 over and over, 16 commands outstanding, each round a new generation.
#[test]
fn sigkill_child_writer() {
    let Some(dir) = std::env::var_os("NDPDB_SECTOR_WRITER_DIR") else { return };
    let opts = DeviceOptions { command_workers: 2, ..DeviceOptions::default() };
    let dev = Device::open(Path::new(&dir), profile(), opts).unwrap();
    let mut qp = dev.queue_pair();
    let first: u32 = std::env::var("NDPDB_SECTOR_WRITER_GENERATION").unwrap().parse().unwrap();
    println!("\nwriter ready");
    for generation in first.. {
        let page = page_of(generation);
        let ids: Vec<u64> =
            (0..16).map(|ppn| qp.submit(Command::PageWrite { ppn, data: page.clone() }).unwrap()).collect();
        for id in ids {
            qp.wait(id).unwrap().result.unwrap();
        }
    }
}

/// Kills of the writer: on a build that wrote sectors without the journal,
/// about one kill in ten tore a sector.
const KILLS: u32 = 32;

#[test]
fn sigkilled_writers_never_tear_a_sector() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::create(dir.path(), profile(), Some(1 << 20), DeviceOptions::default()).unwrap();
    let mut qp = dev.queue_pair();
    for ppn in 0..16 {
        qp.call(Command::PageWrite { ppn, data: page_of(0) }).unwrap();
    }
    drop((qp, dev));
    let exe = std::env::current_exe().unwrap();
    let mut interrupted = 0;
    for kill in 0u32..KILLS {
        let mut child = Process::new(&exe)
            .args(["sigkill_child_writer", "--exact", "--nocapture", "--test-threads", "1"])
            .env("NDPDB_SECTOR_WRITER_DIR", dir.path())
            .env("NDPDB_SECTOR_WRITER_GENERATION", (1 + kill * 100_000).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        assert!(out.lines().map_while(Result::ok).any(|l| l.contains("writer ready")), "the writer did not start");
        std::thread::sleep(Duration::from_micros(500 + u64::from(kill % 8) * 700));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let dev = Device::open(dir.path(), profile(), DeviceOptions::default()).unwrap();
        // Each sector is whole (one generation) and passes its check.
        let seen: Vec<u32> = (0..16).flat_map(|ppn| generations(&read_page(&dev, ppn))).collect();
        if seen.iter().any(|&g| g > kill * 100_000) {
            interrupted += 1;
        }
    }
    assert!(interrupted >= KILLS / 2, "the writer wrote before only {interrupted} of {KILLS} kills");
}
