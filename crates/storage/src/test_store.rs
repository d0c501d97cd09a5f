//! A store on a small device in a temporary directory, for unit tests.

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};

use crate::store::{Store, StoreOptions};

/// A store on a new 16 MiB `u280-nvm` image in `dir`, with a 1 MiB log.
pub(crate) fn store(dir: &std::path::Path) -> Store {
    let dev = Device::create(
        dir,
        Profile::load("u280-nvm").unwrap(),
        Some(16 << 20),
        DeviceOptions::with_clock(ClockKind::Virtual),
    )
    .unwrap();
    Store::new(dev, StoreOptions { log_bytes: 1 << 20, ..StoreOptions::default() }).unwrap()
}
