//! Bad images: each gives an error that names the problem, and the file is
//! never modified.

use std::path::Path;

use ndpdb_device::{ClockKind, Command, Device, DeviceError, DeviceOptions, IMAGE_FILE, Profile, Reply};

fn opts() -> DeviceOptions {
    DeviceOptions::with_clock(ClockKind::Virtual)
}

fn make(dir: &Path, profile: &str) -> Vec<u8> {
    let p = Profile::load(profile).unwrap();
    let dev = Device::create(dir, p, Some(1 << 20), opts()).unwrap();
    let mut qp = dev.queue_pair();
    qp.call(Command::PageWrite { ppn: 3, data: vec![7; 8192] }).unwrap();
    drop(qp);
    drop(dev);
    std::fs::read(dir.join(IMAGE_FILE)).unwrap()
}

fn open(dir: &Path, profile: &str) -> Result<Device, DeviceError> {
    Device::open(dir, Profile::load(profile).unwrap(), opts())
}

/// Opens a damaged image, expects an error whose text contains `needle`, and
/// checks that the file is byte-for-byte what it was.
fn expect_refused(dir: &Path, profile: &str, needle: &str) {
    let before = std::fs::read(dir.join(IMAGE_FILE)).unwrap();
    let err = open(dir, profile).err().expect("damaged image was accepted");
    let text = err.to_string();
    assert!(text.contains(needle), "error `{text}` does not mention `{needle}`");
    assert_eq!(std::fs::read(dir.join(IMAGE_FILE)).unwrap(), before, "the image was modified");
}

#[test]
fn reopen_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), "u280-nvm");
    let dev = open(dir.path(), "u280-nvm").unwrap();
    let mut qp = dev.queue_pair();
    assert_eq!(qp.call(Command::PageRead { ppn: 3, host_addr: None }).unwrap().into_data(), vec![7; 8192]);
    assert_eq!(qp.call(Command::PageRead { ppn: 4, host_addr: None }).unwrap().into_data(), vec![0; 8192]);
}

#[test]
fn timing_parameters_may_change_between_runs() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), "u280-nvm");
    // ideal is also NVM with 8 KiB pages: same geometry, other speeds.
    assert!(open(dir.path(), "ideal").is_ok());
}

#[test]
fn missing_image() {
    let dir = tempfile::tempdir().unwrap();
    let err = open(dir.path(), "u280-nvm").err().unwrap();
    assert!(matches!(err, DeviceError::ImageMissing { .. }), "{err}");
    assert!(err.to_string().contains("device create"));
    assert!(!dir.path().join(IMAGE_FILE).exists(), "open must not create an image");
}

#[test]
fn create_refuses_existing_image() {
    let dir = tempfile::tempdir().unwrap();
    let before = make(dir.path(), "u280-nvm");
    let err = Device::create(dir.path(), Profile::load("u280-nvm").unwrap(), None, opts()).err().unwrap();
    assert!(matches!(err, DeviceError::ImageExists { .. }), "{err}");
    assert_eq!(std::fs::read(dir.path().join(IMAGE_FILE)).unwrap(), before);
}

#[test]
fn truncated_image() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = make(dir.path(), "u280-nvm");
    std::fs::write(dir.path().join(IMAGE_FILE), &bytes[..bytes.len() - 8192]).unwrap();
    expect_refused(dir.path(), "u280-nvm", "truncated");
    std::fs::write(dir.path().join(IMAGE_FILE), &bytes[..100]).unwrap();
    expect_refused(dir.path(), "u280-nvm", "truncated");
    std::fs::write(dir.path().join(IMAGE_FILE), b"").unwrap();
    expect_refused(dir.path(), "u280-nvm", "truncated");
}

#[test]
fn corrupt_superblock() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = make(dir.path(), "u280-nvm");
    let mut bad = bytes.clone();
    bad[30] ^= 0x10;
    std::fs::write(dir.path().join(IMAGE_FILE), &bad).unwrap();
    expect_refused(dir.path(), "u280-nvm", "checksum");
    let mut bad = bytes.clone();
    bad[0..8].copy_from_slice(b"POSTGRES");
    std::fs::write(dir.path().join(IMAGE_FILE), &bad).unwrap();
    expect_refused(dir.path(), "u280-nvm", "magic");
    std::fs::write(dir.path().join(IMAGE_FILE), vec![0xff; bytes.len()]).unwrap();
    expect_refused(dir.path(), "u280-nvm", "corrupt");
}

#[test]
fn other_format_versions_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = make(dir.path(), "u280-nvm");
    // Version 1 images had no check codes: they cannot be verified.
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    std::fs::write(dir.path().join(IMAGE_FILE), &bytes).unwrap();
    expect_refused(dir.path(), "u280-nvm", "format version 1, this build reads version 2");
    expect_refused(dir.path(), "u280-nvm", "recreate the database");
    let err = Device::image_profile(dir.path()).err().unwrap();
    assert!(matches!(err, DeviceError::ImageVersion { found: 1, supported: 2, .. }), "{err}");
    bytes[8..12].copy_from_slice(&3u32.to_le_bytes());
    std::fs::write(dir.path().join(IMAGE_FILE), &bytes).unwrap();
    expect_refused(dir.path(), "u280-nvm", "newer ndpdb build");
}

#[test]
fn a_new_image_reads_as_zeros_through_its_check_codes() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), "cosmos-plus");
    let dev = open(dir.path(), "cosmos-plus").unwrap();
    let mut qp = dev.queue_pair();
    for ppn in (0..128).filter(|&p| p != 3) {
        assert_eq!(
            qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data(),
            vec![0; 8192],
            "page {ppn}"
        );
    }
}

fn read_only() -> DeviceOptions {
    DeviceOptions { read_only: true, ..opts() }
}

/// A read-only open reads (through the check codes), refuses every write
/// with an error naming the image, coexists with other readers and with no
/// writer, and leaves the file exactly as it was, also when the image is not
/// writable.
#[test]
fn a_read_only_open_reads_and_refuses_writes() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let before = make(dir.path(), "u280-nvm");
    let path = dir.path().join(IMAGE_FILE);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // root may write anyway; anyone else is told to open it read-only.
        let err = open(dir.path(), "u280-nvm").err().unwrap();
        assert!(matches!(err, DeviceError::ImageNotWritable { .. }) && err.to_string().contains("read-only"), "{err}");
    }
    let profile = || Profile::load("u280-nvm").unwrap();
    let dev = Device::open(dir.path(), profile(), read_only()).unwrap();
    let second = Device::open(dir.path(), profile(), read_only()).expect("readers share the image");
    assert!(dev.info().read_only);
    let mut qp = dev.queue_pair();
    assert_eq!(qp.call(Command::PageRead { ppn: 3, host_addr: None }).unwrap().into_data(), vec![7; 8192]);
    let err = qp.call(Command::PageWrite { ppn: 3, data: vec![1; 8192] }).err().unwrap();
    assert!(matches!(err, DeviceError::ReadOnly { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("device.img is open read-only") && text.contains("write page 3"), "{text}");
    qp.call(Command::ProgramLoad { slot: 0, name: "profile.medium-write".into() }).unwrap();
    qp.call(Command::ProgramActivate { slot: 0, active: true }).unwrap();
    let exec = Command::Execute { slot: 0, pes: 2, params: ndpdb_device::params(&[10, 1, 0, 8192]), ranges: vec![] };
    let err = qp.call(exec).err().unwrap();
    assert!(matches!(err, DeviceError::ReadOnly { .. }) && err.to_string().contains("medium-write"), "{err}");
    qp.call(Command::Flush).unwrap();
    // Readers exclude a writer, and a writer excludes readers.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(open(dir.path(), "u280-nvm").err().unwrap(), DeviceError::ImageLocked { .. }));
    drop((qp, dev, second));
    assert_eq!(std::fs::read(&path).unwrap(), before, "a read-only open never writes");
    let _writer = open(dir.path(), "u280-nvm").unwrap();
    let err = Device::open(dir.path(), profile(), read_only()).err().unwrap();
    assert!(matches!(err, DeviceError::ImageLocked { .. }), "{err}");
    let err = Device::create(&dir.path().join("new"), profile(), Some(1 << 20), read_only()).err().unwrap();
    assert!(err.to_string().contains("read-only"), "{err}");
}

#[test]
fn other_geometry() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), "u280-nvm");
    expect_refused(dir.path(), "cosmos-plus", "nvm with 8192-byte pages");
}

#[test]
fn image_is_locked_while_open() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), "u280-nvm");
    let _first = open(dir.path(), "u280-nvm").unwrap();
    let err = open(dir.path(), "u280-nvm").err().unwrap();
    assert!(matches!(err, DeviceError::ImageLocked { .. }), "{err}");
}

#[test]
fn image_in_unwritable_place_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let err = Device::create(&file, Profile::load("ideal").unwrap(), Some(1 << 20), opts()).err().unwrap();
    assert!(err.to_string().contains("not-a-dir"), "{err}");
}

#[test]
fn identify_reports_geometry() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::create(dir.path(), Profile::load("cosmos-plus").unwrap(), Some(64 << 20), opts()).unwrap();
    let info = match dev.queue_pair().call(Command::Identify).unwrap() {
        Reply::Identify(i) => i,
        other => panic!("{other:?}"),
    };
    assert_eq!((info.medium_kind, info.capacity_bytes, info.pes, info.channels), ("flash", 64 << 20, 1, 8));
    assert!(info.programs.iter().any(|p| p == "profile.compute"));
}

#[test]
fn an_image_larger_than_the_disk_is_refused_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let err = Device::create(dir.path(), Profile::load("ideal").unwrap(), Some(1 << 52), opts()).err().unwrap();
    assert!(matches!(err, DeviceError::DiskFull { .. }), "{err}");
    assert!(err.to_string().contains("smaller capacity"), "{err}");
    assert!(!dir.path().join(IMAGE_FILE).exists(), "a half-made image is left behind");
}

mod garbage {
    use super::*;
    use ndpdb_format::image::{JOURNAL_PENDING, JOURNAL_SLOT_BYTES, SLOT_STATE_AT, Superblock, sector_code};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Garbage in a journal slot never panics an open: a pending slot
        /// that is whole is finished (its sector then holds its bytes),
        /// anything else is emptied, and every page still reads or fails
        /// with a media error.
        #[test]
        fn journal_garbage_is_finished_or_emptied(slot in 0u64..64, body in proptest::collection::vec(any::<u8>(), 524),
                                                  pending in any::<bool>(), whole in any::<bool>(), sector in 0u64..4096) {
            let dir = tempfile::tempdir().unwrap();
            let mut bytes = make(dir.path(), "u280-nvm");
            let sb = Superblock::decode(&bytes).unwrap();
            let at = (sb.journal_offset() + slot * u64::from(JOURNAL_SLOT_BYTES)) as usize;
            let mut body = body;
            if whole {
                let sector = sector % sb.sectors();
                body[512..520].copy_from_slice(&sector.to_le_bytes());
                let code = sector_code(sector, body[..512].try_into().unwrap());
                body[520..524].copy_from_slice(&code.to_le_bytes());
            }
            bytes[at..at + SLOT_STATE_AT].copy_from_slice(&body);
            let state = if pending { JOURNAL_PENDING } else { u32::from_le_bytes(body[..4].try_into().unwrap()) };
            bytes[at + SLOT_STATE_AT..at + SLOT_STATE_AT + 4].copy_from_slice(&state.to_le_bytes());
            std::fs::write(dir.path().join(IMAGE_FILE), &bytes).unwrap();
            let dev = open(dir.path(), "u280-nvm").unwrap();
            let mut qp = dev.queue_pair();
            for ppn in 0..128 {
                match qp.call(Command::PageRead { ppn, host_addr: None }) {
                    Ok(_) | Err(DeviceError::UnrecoveredRead { .. }) => {}
                    Err(e) => prop_assert!(false, "page {ppn}: {e}"),
                }
            }
            if pending && whole {
                let sector = sector % sb.sectors();
                let got = qp.call(Command::Read { addr: sector * 512, len: 512 }).unwrap().into_data();
                prop_assert_eq!(&got[..], &body[..512], "a whole pending slot is finished");
            }
            drop(qp);
            drop(dev);
            let after = std::fs::read(dir.path().join(IMAGE_FILE)).unwrap();
            prop_assert_ne!(u32::from_le_bytes(after[at + SLOT_STATE_AT..at + SLOT_STATE_AT + 4].try_into().unwrap()),
                            JOURNAL_PENDING, "the slot is empty after the open");
        }

        /// Any value in the superblock's fields after the profile name (with
        /// a matching checksum) opens or is refused as corrupt, naming a
        /// field; it never panics.
        #[test]
        fn superblock_media_fields_are_checked(at in 112usize..4092, value in any::<u32>()) {
            let dir = tempfile::tempdir().unwrap();
            let mut bytes = make(dir.path(), "u280-nvm");
            let at = at & !3;
            bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            let crc = crc32(&bytes[..4092]);
            bytes[4092..4096].copy_from_slice(&crc.to_le_bytes());
            std::fs::write(dir.path().join(IMAGE_FILE), &bytes).unwrap();
            match open(dir.path(), "u280-nvm") {
                Ok(_) => {}
                Err(DeviceError::ImageCorrupt { source, .. }) => prop_assert!(source.to_string().contains("field"), "{source}"),
                Err(DeviceError::ImageSize { .. }) => {} // another journal_slots moves the file's end
                Err(e) => prop_assert!(false, "{e}"),
            }
        }
    }

    /// CRC-32 (IEEE), bitwise: the superblock's checksum.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }
}
