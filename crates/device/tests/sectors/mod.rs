//! Pages whose sectors say which write they came from, shared by the
//! sector-write tests (`sector_writes.rs`, `sigkill.rs`).

use ndpdb_device::{Command, Device, Profile};

pub const PAGE: usize = 8192;
pub const SECTORS: usize = PAGE / 512;

pub fn profile() -> Profile {
    Profile::load("u280-nvm").unwrap()
}

/// A page whose every sector is filled with the word `generation << 8 | sector`.
pub fn page_of(generation: u32) -> Vec<u8> {
    (0..SECTORS).flat_map(|s| ((generation << 8) | s as u32).to_le_bytes().repeat(128)).collect()
}

/// The generation each sector of `page` holds, checking that each sector is
/// one generation throughout and sits where it belongs.
pub fn generations(page: &[u8]) -> Vec<u32> {
    page.chunks_exact(512)
        .enumerate()
        .map(|(s, sector)| {
            let first = u32::from_le_bytes(sector[..4].try_into().unwrap());
            let other = sector.chunks_exact(4).position(|w| w != first.to_le_bytes());
            assert!(other.is_none(), "sector {s} is torn: word 0 is {first:#x}, word {other:?} differs");
            assert_eq!(first & 0xff, s as u32, "sector {s} holds another sector's bytes");
            first >> 8
        })
        .collect()
}

pub fn read_page(dev: &Device, ppn: u64) -> Vec<u8> {
    dev.queue_pair().call(Command::PageRead { ppn, host_addr: None }).unwrap().into_data()
}
