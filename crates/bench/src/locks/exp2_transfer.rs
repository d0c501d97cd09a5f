//! Exp. 2 (Fig. 5): what moving 64 B (a lock bucket) and 8 KiB (a page)
//! between host and device costs over the coherent path and over PCIe. The
//! coherent figures are the profile's model, computed here; the PCIe
//! figures are `MemoryRead` completion times on the device's virtual clock,
//! taken from a run, so they include whatever the link model charges.

use std::path::Path;

use anyhow::{Context, Result, ensure};
use ndpdb_device::{ClockKind, Command, Device, DeviceOptions, Profile};

use super::rows::TransferRow;
use super::{Config, create_range};

/// Transfer sizes of Exp. 2: a cache line (one lock bucket) and a page.
pub const TRANSFER_BYTES: [u64; 2] = [64, 8192];
const LINE_BYTES: u64 = 64;
/// PCIe reads per size in Exp. 2 (the virtual clock makes them equal; the
/// median guards against a reservation left by earlier commands).
const PCIE_READS: usize = 5;

/// Per profile and transfer size, a coherent row and a PCIe row.
pub(super) fn exp2(cfg: &Config, dir: &Path, step: &mut dyn FnMut(String)) -> Result<Vec<TransferRow>> {
    let mut rows = Vec::new();
    for (i, profile) in cfg.profiles.iter().enumerate() {
        step(format!("Exp. 2: {}", profile.name));
        let pcie = pcie_latencies_ns(profile, &dir.join(format!("exp2-{i}")))?;
        for (&bytes, pcie_ns) in TRANSFER_BYTES.iter().zip(pcie) {
            let lines = bytes.div_ceil(LINE_BYTES) as f64;
            let coherent = profile.coherent.as_ref();
            rows.push(TransferRow {
                experiment: 2,
                profile: profile.name.clone(),
                transfer_bytes: bytes,
                path: "coherent",
                latency_ns: coherent.map(|c| lines * c.remote_atomic_ns),
                cached_latency_ns: coherent.map(|c| lines * c.local_hit_ns),
                interconnect: coherent.map(|c| c.name.clone()),
                clock: "model",
            });
            rows.push(TransferRow {
                experiment: 2,
                profile: profile.name.clone(),
                transfer_bytes: bytes,
                path: "pcie",
                latency_ns: Some(pcie_ns),
                cached_latency_ns: None,
                interconnect: Some(profile.link.name.clone()),
                clock: ClockKind::Virtual.name(),
            });
        }
    }
    Ok(rows)
}

/// Per size of [`TRANSFER_BYTES`], the median modelled completion time of a
/// `MemoryRead` of that many bytes from device memory to the host.
fn pcie_latencies_ns(profile: &Profile, dir: &Path) -> Result<Vec<f64>> {
    let dev = Device::create(dir, profile.clone(), Some(1 << 20), DeviceOptions::with_clock(ClockKind::Virtual))
        .with_context(|| format!("creating Exp. 2's device for profile {}", profile.name))?;
    let mut qp = dev.queue_pair();
    let range = create_range(&mut qp, TRANSFER_BYTES[1])?;
    let mut out = Vec::new();
    for &len in &TRANSFER_BYTES {
        let mut ps = Vec::with_capacity(PCIE_READS);
        for _ in 0..PCIE_READS {
            let c = qp.call_timed(Command::MemoryRead { range, offset: 0, len })?;
            let (submitted, completed) = (c.submitted_ps, c.completed_ps);
            ensure!(c.result?.into_data().len() as u64 == len, "a {len}-byte memory read returned another length");
            ps.push(completed - submitted);
        }
        ps.sort_unstable();
        out.push(ps[ps.len() / 2] as f64 / 1000.0);
    }
    Ok(out)
}
