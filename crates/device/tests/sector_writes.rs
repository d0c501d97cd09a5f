//! Sector writes are atomic with respect to a kill of the process: a
//! process killed anywhere in a sector write leaves the sector wholly old or
//! wholly new, and its check code valid, after the next open. Checked here
//! at each step of the write with the device's kill hook; `sigkill.rs`
//! checks it with real SIGKILLs.

use ndpdb_device::{Command, Device, DeviceError, DeviceOptions, KillPoint, SectorKill};

mod sectors;

use sectors::{SECTORS, generations, page_of, profile, read_page};

#[test]
fn a_kill_at_any_step_of_a_sector_write_leaves_it_old_or_new() {
    let points = [
        (KillPoint::SlotHalf, 1),
        (KillPoint::SlotWritten, 2),
        (KillPoint::SectorHalf, 2),
        (KillPoint::SectorWritten, 2),
        (KillPoint::CodeWritten, 2),
    ];
    for (point, sector_3) in points {
        let dir = tempfile::tempdir().unwrap();
        let dev = Device::create(dir.path(), profile(), Some(1 << 20), DeviceOptions::default()).unwrap();
        dev.queue_pair().call(Command::PageWrite { ppn: 5, data: page_of(1) }).unwrap();
        drop(dev);
        // Sector write 3 of the next page write is the page's sector 3.
        let opts = DeviceOptions { sector_kill: Some(SectorKill { write: 3, point }), ..DeviceOptions::default() };
        let dev = Device::open(dir.path(), profile(), opts).unwrap();
        let mut qp = dev.queue_pair();
        let err = qp.call(Command::PageWrite { ppn: 5, data: page_of(2) }).err().unwrap();
        assert!(matches!(err, DeviceError::InjectedKill { write: 3 }), "{err}");
        let err = qp.call(Command::PageRead { ppn: 5, host_addr: None }).err().unwrap();
        assert!(matches!(err, DeviceError::InjectedFault { .. }), "a killed device does nothing more: {err}");
        drop((qp, dev));
        let want: Vec<u32> = (0..SECTORS)
            .map(|s| {
                if s < 3 {
                    2
                } else if s == 3 {
                    sector_3
                } else {
                    1
                }
            })
            .collect();
        let image = std::fs::read(dir.path().join("device.img")).unwrap();
        // A read-only open finishes the write in a private copy only.
        let reader = DeviceOptions { read_only: true, ..DeviceOptions::default() };
        let dev = Device::open(dir.path(), profile(), reader).unwrap();
        assert_eq!(generations(&read_page(&dev, 5)), want, "{point:?}, read-only");
        drop(dev);
        assert!(std::fs::read(dir.path().join("device.img")).unwrap() == image, "{point:?}: the reader wrote");
        let dev = Device::open(dir.path(), profile(), DeviceOptions::default()).unwrap();
        assert_eq!(generations(&read_page(&dev, 5)), want, "{point:?}");
        drop(dev);
        let dev = Device::open(dir.path(), profile(), DeviceOptions::default()).unwrap();
        assert_eq!(generations(&read_page(&dev, 5)), want, "{point:?}, opened again");
    }
}

/// The injected torn write (`Faults::torn_write`) still tears a page
/// between sectors: the sectors it keeps are whole and pass their check.
#[test]
fn an_injected_torn_write_tears_between_sectors() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::create(dir.path(), profile(), Some(1 << 20), DeviceOptions::default()).unwrap();
    dev.queue_pair().call(Command::PageWrite { ppn: 5, data: page_of(1) }).unwrap();
    drop(dev);
    let faults = ndpdb_device::Faults { torn_write: Some((0, 5)), ..Default::default() };
    let dev = Device::open(dir.path(), profile(), DeviceOptions { faults, ..DeviceOptions::default() }).unwrap();
    let err = dev.queue_pair().call(Command::PageWrite { ppn: 5, data: page_of(2) }).err().unwrap();
    assert!(matches!(err, DeviceError::InjectedFault { command: 0 }), "{err}");
    drop(dev);
    let dev = Device::open(dir.path(), profile(), DeviceOptions::default()).unwrap();
    let want: Vec<u32> = (0..SECTORS).map(|s| if s < 5 { 2 } else { 1 }).collect();
    assert_eq!(generations(&read_page(&dev, 5)), want);
}
