//! Check codes on the medium: a sector damaged while the device was closed
//! fails every read the device makes of it (host page and sector reads, and
//! every kind of PE read) with an unrecovered read error naming the page and
//! sector, never with its bytes; other sectors still read; writing the page
//! again heals it; and verifying changes no counter and no modelled time.

use std::path::Path;

use ndpdb_device::{
    Command, Counters, Device, DeviceError, DeviceOptions, IMAGE_FILE, PeCtx, Profile, Program, ProgramLibrary, Reply,
    params,
};

const PAGE: u64 = 8192;
/// The page and the sector of it that the tests damage.
const DAMAGED_PAGE: u64 = 3;
const DAMAGED_SECTOR: u64 = 5;
const SECTORS_PER_PAGE: u64 = PAGE / 512;

/// Reads at `param 1` by the way `param 0` names: 0 `read` of one byte,
/// 1 `read_u32`, 2 `read_words` of 3 words, 3 `gather_u32`, 4 `read_page`,
/// 5 `read` of one byte whose error the program ignores, 6 `write` of 4
/// bytes, 7 `write` of 4 bytes whose error the program ignores.
/// Writes the word it read to range 0 when one is passed.
fn reader(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    let (how, addr) = (ctx.param_u64(0)?, ctx.param_u64(1)?);
    let word = match how {
        0 => {
            let mut b = [0u8; 1];
            ctx.read(addr, &mut b)?;
            u32::from(b[0])
        }
        1 => ctx.read_u32(addr)?,
        2 => {
            let mut w = [0u32; 3];
            ctx.read_words(addr, &mut w)?;
            w[0]
        }
        3 => {
            let mut w = [0u32; 2];
            ctx.gather_u32(&[addr - addr % 512, addr], &mut w)?;
            w[1]
        }
        4 => {
            let mut page = vec![0u8; ctx.page_bytes() as usize];
            ctx.read_page(addr / ctx.page_bytes(), &mut page)?;
            u32::from(page[(addr % ctx.page_bytes()) as usize])
        }
        5 => {
            let mut b = [0u8; 1];
            let _ = ctx.read(addr, &mut b);
            u32::from(b[0])
        }
        6 => {
            ctx.write(addr, &[1, 2, 3, 4])?;
            0
        }
        _ => {
            let _ = ctx.write(addr, &[1, 2, 3, 4]);
            0
        }
    };
    if ctx.ranges() > 0 {
        ctx.range_write(0, 0, &word.to_le_bytes())?;
    }
    Ok(())
}

fn options() -> DeviceOptions {
    let mut programs = ProgramLibrary::builtin();
    programs.register(Program { name: "test.reader", description: "reads one way", run: reader }).unwrap();
    DeviceOptions { programs, ..DeviceOptions::default() }
}

/// An image whose pages hold `fill(page)`, closed.
fn make(dir: &Path, profile: &str, pages: u64) {
    let dev = Device::create(dir, Profile::load(profile).unwrap(), Some(pages * PAGE), options()).unwrap();
    let mut qp = dev.queue_pair();
    for ppn in 0..pages {
        qp.call(Command::PageWrite { ppn, data: fill(ppn) }).unwrap();
    }
}

fn fill(ppn: u64) -> Vec<u8> {
    (0..PAGE).map(|i| (i as u8).wrapping_mul(7).wrapping_add(ppn as u8)).collect()
}

/// Flips one byte in the middle of `DAMAGED_SECTOR` of `DAMAGED_PAGE` in
/// the image file, as damage to the medium would.
fn damage(dir: &Path) {
    let path = dir.join(IMAGE_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = 4096 + (DAMAGED_PAGE * PAGE + DAMAGED_SECTOR * 512 + 200) as usize;
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
}

fn open(dir: &Path, profile: &str) -> Device {
    Device::open(dir, Profile::load(profile).unwrap(), options()).unwrap()
}

/// The error is the unrecovered read error of the damaged sector.
fn assert_media_error(r: Result<Reply, DeviceError>) {
    let err = r.expect_err("a read of the damaged sector must fail");
    assert!(matches!(err, DeviceError::UnrecoveredRead { ppn: DAMAGED_PAGE, sector: DAMAGED_SECTOR, .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("unrecovered read error on page 3, sector 5") && text.contains("not returned"), "{text}");
}

fn run(qp: &mut ndpdb_device::QueuePair, how: u64, addr: u64, out: Option<u32>) -> Result<Reply, DeviceError> {
    let ranges = out.into_iter().collect();
    qp.call(Command::Execute { slot: 0, pes: 1, params: params(&[how, addr]), ranges })
}

fn load_reader(qp: &mut ndpdb_device::QueuePair) {
    qp.call(Command::ProgramLoad { slot: 0, name: "test.reader".into() }).unwrap();
    qp.call(Command::ProgramActivate { slot: 0, active: true }).unwrap();
}

#[test]
fn a_damaged_sector_fails_host_reads_and_other_sectors_still_read() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), "u280-nvm", 8);
    damage(dir.path());
    let dev = open(dir.path(), "u280-nvm");
    let mut qp = dev.queue_pair();
    assert_media_error(qp.call(Command::PageRead { ppn: DAMAGED_PAGE, host_addr: None }));
    let sector = DAMAGED_PAGE * PAGE + DAMAGED_SECTOR * 512;
    assert_media_error(qp.call(Command::Read { addr: sector, len: 512 }));
    assert_media_error(qp.call(Command::Read { addr: sector - 1024, len: 2048 }));
    // The sectors beside it, and the other pages, read as written.
    let page = fill(DAMAGED_PAGE);
    for (addr, len) in [(sector - 512, 512u32), (sector + 512, 1024)] {
        let got = qp.call(Command::Read { addr, len }).unwrap().into_data();
        let from = (addr - DAMAGED_PAGE * PAGE) as usize;
        assert_eq!(got, page[from..from + len as usize]);
    }
    for ppn in [0, 2, 4, 7] {
        assert_eq!(qp.call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data(), fill(ppn));
    }
    // Writing the page again heals it, also across a reopen.
    qp.call(Command::PageWrite { ppn: DAMAGED_PAGE, data: fill(9) }).unwrap();
    assert_eq!(qp.call(Command::PageRead { ppn: DAMAGED_PAGE, host_addr: None }).unwrap().into_data(), fill(9));
    drop(qp);
    drop(dev);
    let dev = open(dir.path(), "u280-nvm");
    assert_eq!(
        dev.queue_pair().call(Command::PageRead { ppn: DAMAGED_PAGE, host_addr: None }).unwrap().into_data(),
        fill(9)
    );
}

#[test]
fn every_kind_of_pe_read_of_a_damaged_sector_fails_the_execution() {
    for profile in ["u280-nvm", "cosmos-plus"] {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), profile, 8);
        damage(dir.path());
        let dev = open(dir.path(), profile);
        let mut qp = dev.queue_pair();
        load_reader(&mut qp);
        let bad = DAMAGED_PAGE * PAGE + DAMAGED_SECTOR * 512 + 200;
        // The program that ignores the error fails all the same; a partial
        // write needs the sector's old bytes, which cannot be read.
        for how in 0..=7 {
            if how >= 6 && profile == "cosmos-plus" {
                continue; // flash takes whole pages only
            }
            let addr = if how == 0 || how == 4 || how == 5 { bad } else { bad & !3 };
            assert_media_error(run(&mut qp, how, addr, None));
        }
        // Reads of other sectors of the same page return what was written.
        let out = match qp.call(Command::MemoryRangeCreate { bytes: 4 }).unwrap() {
            Reply::Range(r) => r,
            other => panic!("{other:?}"),
        };
        let good = DAMAGED_PAGE * PAGE + (DAMAGED_SECTOR + 1) * 512 + 8;
        let want = u32::from_le_bytes(fill(DAMAGED_PAGE)[(good % PAGE) as usize..][..4].try_into().unwrap());
        for how in [1, 2, 3] {
            run(&mut qp, how, good, Some(out)).unwrap();
            let got = qp.call(Command::MemoryRead { range: out, offset: 0, len: 4 }).unwrap().into_data();
            assert_eq!(u32::from_le_bytes(got.try_into().unwrap()), want, "{profile}, read {how}");
        }
    }
}

/// The check code covers the sector's number: a sector's bytes and code
/// copied to another sector (a misdirected write) fail there.
#[test]
fn a_sector_copied_to_another_place_fails_its_check() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), "u280-nvm", 8);
    let path = dir.path().join(IMAGE_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    let sb = ndpdb_format::image::Superblock::decode(&bytes).unwrap();
    let (from, to) = (2 * SECTORS_PER_PAGE, DAMAGED_PAGE * SECTORS_PER_PAGE + DAMAGED_SECTOR);
    let data = |s: u64| 4096 + (s * 512) as usize;
    let code = |s: u64| (sb.codes_offset() + 4 * s) as usize;
    bytes.copy_within(data(from)..data(from) + 512, data(to));
    bytes.copy_within(code(from)..code(from) + 4, code(to));
    std::fs::write(&path, &bytes).unwrap();
    let dev = open(dir.path(), "u280-nvm");
    let mut qp = dev.queue_pair();
    assert_media_error(qp.call(Command::PageRead { ppn: DAMAGED_PAGE, host_addr: None }));
    assert_eq!(
        qp.call(Command::PageRead { ppn: 2, host_addr: None }).unwrap().into_data(),
        fill(2),
        "the original still reads"
    );
}

/// Counters and modelled times of a read pass over every page, by the host
/// and by a PE: the first pass after opening verifies every sector, the
/// second verifies none; both count and cost the same.
#[test]
fn verifying_changes_no_counter_and_no_modelled_time() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), "u280-nvm", 8);
    let dev = open(dir.path(), "u280-nvm");
    let mut qp = dev.queue_pair();
    load_reader(&mut qp);
    let mut pass = || {
        let before = dev.counters();
        let mut times = Vec::new();
        for ppn in 0..8 {
            for (how, at) in [(0, 3), (1, 516), (2, 1028), (3, 2052), (4, 4000)] {
                let c = qp.call(Command::Execute {
                    slot: 0,
                    pes: 1,
                    params: params(&[how, ppn * PAGE + at]),
                    ranges: vec![],
                });
                let Ok(Reply::Executed(r)) = c else { panic!("{c:?}") };
                times.push(r.end_ps - r.start_ps);
            }
            let c = qp.call_timed(Command::PageRead { ppn, host_addr: None }).unwrap();
            times.push(c.completed_ps - c.submitted_ps);
        }
        (dev.counters().since(&before), times)
    };
    let (first, first_times) = pass();
    let (second, second_times) = pass();
    let key = |c: &Counters| {
        (c.link_bytes_to_device, c.link_bytes_to_host, c.medium_reads, c.medium_bytes_read, c.medium_writes)
    };
    assert_eq!(key(&first), key(&second));
    // Per page on u280-nvm (4-byte transfers): one byte and one word are a
    // transfer each, three words three, a gather of two two, a page 2048;
    // and the host's page read one access of 8192 bytes.
    assert_eq!(
        (first.medium_reads, first.medium_bytes_read),
        (8 * (1 + 1 + 3 + 2 + 2048 + 1), 8 * (4 + 4 + 12 + 8 + 2 * PAGE))
    );
    assert_eq!(first_times, second_times);
}
