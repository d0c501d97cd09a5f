//! Thin provisioning: an image takes disk space as its medium is written,
//! and a write that meets a full disk fails with an error (never a SIGBUS)
//! and leaves everything written before it readable.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use ndpdb_device::{ClockKind, Command, Device, DeviceError, DeviceOptions, IMAGE_FILE, Profile};

mod small_disk;

use small_disk::{SmallDisk, skipped};

fn opts() -> DeviceOptions {
    DeviceOptions::with_clock(ClockKind::Virtual)
}

const PAGE: usize = 8192;

fn page(ppn: u64) -> Vec<u8> {
    (0..PAGE).map(|i| (ppn as usize * 31 + i) as u8).collect()
}

/// Bytes of disk the file holds.
fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn a_new_image_holds_its_codes_and_journal_not_its_capacity() {
    let Some(disk) = SmallDisk::ext4(64) else { return skipped("an ext4 loop device") };
    let capacity = 1u64 << 30;
    let dev = Device::create(disk.path(), Profile::load("ideal").unwrap(), Some(capacity), opts()).unwrap();
    let image = disk.path().join(IMAGE_FILE);
    let fresh = allocated(&image);
    assert!(fresh < capacity / 64, "a new 1 GiB image takes {fresh} bytes of disk");
    let mut qp = dev.queue_pair();
    qp.call(Command::PageWrite { ppn: 10_000, data: page(10_000) }).unwrap();
    let grown = allocated(&image) - fresh;
    assert!((8 << 20..=9 << 20).contains(&grown), "one page write reserved {grown} bytes, not one 8 MiB extent");
    assert_eq!(qp.call(Command::PageRead { ppn: 10_000, host_addr: None }).unwrap().into_data(), page(10_000));
    assert_eq!(qp.call(Command::PageRead { ppn: 3, host_addr: None }).unwrap().into_data(), vec![0; PAGE]);
}

#[test]
fn a_write_into_a_full_disk_fails_and_keeps_what_was_written() {
    let Some(disk) = SmallDisk::ext4(64) else { return skipped("an ext4 loop device") };
    let root = disk.path();
    let dev = Device::create(root, Profile::load("ideal").unwrap(), Some(256 << 20), opts()).unwrap();
    let mut qp = dev.queue_pair();
    let mut written = 0u64;
    let err = loop {
        match qp.call(Command::PageWrite { ppn: written, data: page(written) }) {
            Ok(_) => written += 1,
            Err(e) => break e,
        }
        assert!(written < (256 << 20) / PAGE as u64, "a 64 MiB disk took a 256 MiB image's every page");
    };
    assert!(matches!(err, DeviceError::DiskFullOnWrite { .. }), "{err}");
    assert!(err.is_disk_full());
    assert!(err.to_string().contains("free space"), "{err}");
    let mib = (written * PAGE as u64) >> 20;
    assert!((24..64).contains(&mib), "{mib} MiB written before the disk was full");
    for ppn in [0, written / 2, written - 1] {
        assert_eq!(qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data(), page(ppn));
    }
    // Reads of the medium no write reached take no space.
    assert_eq!(qp.call(Command::PageRead { ppn: written + 4096, host_addr: None }).unwrap().into_data(), vec![0; PAGE]);
    qp.call(Command::Flush).unwrap();
    drop(qp);
    drop(dev);
    let dev = Device::open(root, Profile::load("ideal").unwrap(), opts()).unwrap();
    let mut qp = dev.queue_pair();
    for ppn in [0, written - 1, written + 4096] {
        let want = if ppn < written { page(ppn) } else { vec![0; PAGE] };
        assert_eq!(qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data(), want);
    }
    let again = qp.call(Command::PageWrite { ppn: written + 8192, data: page(1) }).err().unwrap();
    assert!(again.is_disk_full(), "{again}");
}

#[test]
fn on_a_tmpfs_the_image_is_reserved_whole() {
    let Some(disk) = SmallDisk::tmpfs() else { return skipped("a tmpfs") };
    let profile = || Profile::load("ideal").unwrap();
    let err = Device::create(disk.path(), profile(), Some(256 << 20), opts()).err().unwrap();
    assert!(matches!(err, DeviceError::DiskFull { .. }), "{err}");
    assert!(err.to_string().contains("tmpfs"), "{err}");
    assert!(!disk.path().join(IMAGE_FILE).exists(), "a half-made image is left behind");
    let dev = Device::create(disk.path(), profile(), Some(32 << 20), opts()).unwrap();
    assert!(allocated(&disk.path().join(IMAGE_FILE)) >= 32 << 20);
    let mut qp = dev.queue_pair();
    let last = (32 << 20) / PAGE as u64 - 1;
    qp.call(Command::PageWrite { ppn: last, data: page(last) }).unwrap();
    assert_eq!(qp.call(Command::PageRead { ppn: last, host_addr: None }).unwrap().into_data(), page(last));
}
