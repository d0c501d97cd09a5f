//! The hardware-model parameter file the optimizer reads (hybridNDP Table 2).
//!
//! A TOML file written by `ndpdb profile`. Mapping to the paper's parameters:
//! `link.*` stands for hw_IPL/hw_IPV and c_fpcie (the profiler measures the
//! link instead of deriving it from lane count and version); `medium.*` for
//! the flash figures ndp_hw_FCF/host_hw_FCF; `pe.count` for hw_CCN;
//! `pe.slowdown` for the compute factor calc_pcf against the host;
//! `pe.memcpy_bandwidth_mb_s` for hw_CME; `dram_ndp_bytes` for hw_MSS/hw_MSJ.

use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareModel {
    pub format_version: u32,
    /// The profile of the device that was measured, and the clock used.
    pub profile: String,
    pub clock: String,
    pub dram_ndp_bytes: u64,
    pub link: LinkModel,
    pub medium: MediumModel,
    /// Absent for a device without processing elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pe: Option<PeModel>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkModel {
    pub bandwidth_to_device_mb_s: f64,
    pub bandwidth_to_host_mb_s: f64,
    pub latency_ns: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediumModel {
    pub kind: String,
    pub page_bytes: u32,
    pub channels: u32,
    pub chips_per_channel: u32,
    pub capacity_bytes: u64,
    /// NVM: one access; flash: sensing a page into the chip's register (tR).
    pub read_latency_ns: f64,
    /// NVM: one PE transfer; flash: programming a page (tPROG).
    pub write_latency_ns: f64,
    pub channel_bandwidth_mb_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeModel {
    pub count: u32,
    /// Device compute time / host CPU time for the same work.
    pub slowdown: f64,
    pub memcpy_bandwidth_mb_s: f64,
    /// One PE reading one transfer (NVM) or one page (flash).
    pub transfer_latency_ns: f64,
    /// All PEs reading random transfers: the medium's internal rate.
    pub insitu_transfers_per_s: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("hardware-model file {path}: {message}")]
    Parse { path: String, message: String },
    #[error(
        "hardware-model file {path} has format version {found}; this build reads {FORMAT_VERSION}: rerun `ndpdb profile`"
    )]
    Version { path: String, found: u32 },
}

impl HardwareModel {
    pub fn to_toml(&self) -> String {
        let body = toml::to_string_pretty(self).expect("hardware models always serialize");
        format!(
            "# ndpdb hardware model (hybridNDP, EDBT'25, section 3.1), written by `ndpdb profile`.\n\
             # Measured through the device's command interface on the {} clock; see\n\
             # crates/profiler/src/lib.rs for how each figure is measured. Units are in the names.\n\n{body}",
            self.clock
        )
    }

    pub fn parse(text: &str, path: &str) -> Result<HardwareModel, ModelError> {
        let m: HardwareModel =
            toml::from_str(text).map_err(|e| ModelError::Parse { path: path.into(), message: e.to_string() })?;
        if m.format_version != FORMAT_VERSION {
            return Err(ModelError::Version { path: path.into(), found: m.format_version });
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,300}") {
            let _ = HardwareModel::parse(&s, "fuzz");
        }

        #[test]
        fn mutated_file_never_panics(pos in 0usize..2000, byte in proptest::prelude::any::<u8>()) {
            let m = HardwareModel {
                format_version: FORMAT_VERSION,
                profile: "p".into(),
                clock: "virtual".into(),
                dram_ndp_bytes: 1,
                link: LinkModel { bandwidth_to_device_mb_s: 1.0, bandwidth_to_host_mb_s: 2.0, latency_ns: 3.0 },
                medium: MediumModel {
                    kind: "nvm".into(), page_bytes: 8192, channels: 2, chips_per_channel: 1,
                    capacity_bytes: 1 << 20, read_latency_ns: 1.0, write_latency_ns: 1.0, channel_bandwidth_mb_s: f64::INFINITY,
                },
                pe: Some(PeModel { count: 1, slowdown: 2.0, memcpy_bandwidth_mb_s: 3.0, transfer_latency_ns: 4.0, insitu_transfers_per_s: 5.0 }),
            };
            let mut bytes = m.to_toml().into_bytes();
            let at = pos % bytes.len();
            bytes[at] = byte;
            if let Ok(text) = String::from_utf8(bytes) {
                let _ = HardwareModel::parse(&text, "fuzz");
            }
        }
    }
}
