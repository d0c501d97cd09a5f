//! Hardware profiles: what the emulated device is made of and how fast each
//! part is. Profiles are TOML files; the ones that ship with ndpdb live in the
//! repository's `profiles/` folder (and are compiled into the binary), and
//! users copy and edit them (`ndpdb profiles show NAME > mine.toml`, then
//! `--profile mine.toml`). `docs/profiles.md` says where every number of the
//! shipped profiles comes from.
//!
//! Parsing is strict: an unknown key is an error naming the key (serde's
//! `deny_unknown_fields`), and [`Profile::validate`] rejects impossible values
//! naming the key and the value. Bandwidths may be `inf` (no limit, as in the
//! `ideal` profile); latencies must be finite and non-negative.

use serde::{Deserialize, Serialize};

pub use ndpdb_format::image::MediumKind;

/// Bytes in a MB as the profiles use it (decimal, as link and disk vendors do).
pub const MB: f64 = 1_000_000.0;
pub const GIB: u64 = 1 << 30;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub medium: MediumProfile,
    pub pe: PeProfile,
    pub dram: DramProfile,
    pub link: LinkProfile,
    /// Coherent shared memory (CCIX/CXL); absent when the device has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coherent: Option<CoherentProfile>,
    #[serde(default)]
    pub queues: QueueProfile,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum MediumProfile {
    Nvm(NvmProfile),
    Flash(FlashProfile),
}

/// Byte-addressable NVM. A PE reads and writes in transfers of
/// `transfer_bytes` (its load/store width); each transfer waits
/// `read_latency_ns` (or `write_latency_ns`) on the PE and occupies its
/// channel for `access_occupancy_ns`. Bulk page transfers by the controller
/// pay the latency once and stream at `channel_bandwidth_mb_s`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmProfile {
    pub capacity_gib: f64,
    pub page_bytes: u32,
    pub channels: u32,
    /// Consecutive bytes mapped to one channel before the next one.
    pub interleave_bytes: u32,
    pub transfer_bytes: u32,
    pub read_latency_ns: f64,
    pub write_latency_ns: f64,
    pub access_occupancy_ns: f64,
    pub channel_bandwidth_mb_s: f64,
}

/// NAND flash: pages on `channels` x `chips_per_channel` chips. A read senses
/// the page into the chip's register (`read_latency_us`, chip busy), then
/// moves the requested bytes over the channel bus; a program moves the page
/// over the bus, then the chip is busy for `program_latency_us`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlashProfile {
    pub capacity_gib: f64,
    pub page_bytes: u32,
    pub channels: u32,
    pub chips_per_channel: u32,
    pub read_latency_us: f64,
    pub program_latency_us: f64,
    pub channel_bandwidth_mb_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeProfile {
    /// Processing elements; 0 for a conventional SSD.
    pub count: u32,
    pub clock_mhz: f64,
    /// Modelled PE compute time = measured host CPU time x slowdown.
    pub slowdown: f64,
    /// A PE's copy bandwidth within device DRAM.
    pub memcpy_bandwidth_mb_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramProfile {
    /// Device DRAM in total (informational).
    pub total_mib: u64,
    /// What NDP programs and host-created memory ranges may hold at once.
    pub ndp_mib: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkProfile {
    pub name: String,
    /// Per direction.
    pub bandwidth_mb_s: f64,
    /// Command round trip at queue depth 1 for a zero-byte transfer.
    pub latency_ns: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoherentProfile {
    pub name: String,
    pub local_hit_ns: f64,
    pub remote_atomic_ns: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueProfile {
    /// Entries per submission queue (and its completion queue).
    pub depth: u32,
}

impl Default for QueueProfile {
    fn default() -> Self {
        QueueProfile { depth: 256 }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("profile {source_name}: {message}")]
    Parse { source_name: String, message: String },
    #[error("profile {source_name}: `{key}` = {value} is invalid: {reason}")]
    Invalid { source_name: String, key: &'static str, value: String, reason: &'static str },
    #[error("no built-in profile `{name}` (built-in: {known}); pass a path to a .toml file for your own")]
    Unknown { name: String, known: String },
    #[error("cannot read profile file {path}: {source}")]
    Read { path: String, source: std::io::Error },
}

/// The profiles that ship with ndpdb, in the order `ndpdb profiles` lists them.
pub const BUILTIN: &[(&str, &str)] = &[
    ("ideal", include_str!("../../../profiles/ideal.toml")),
    ("u280-nvm", include_str!("../../../profiles/u280-nvm.toml")),
    ("cosmos-plus", include_str!("../../../profiles/cosmos-plus.toml")),
    ("softssd", include_str!("../../../profiles/softssd.toml")),
    ("nvme-ssd", include_str!("../../../profiles/nvme-ssd.toml")),
];

pub const DEFAULT_PROFILE: &str = "u280-nvm";

impl Profile {
    /// A built-in profile by name, or a TOML file by path (anything with a
    /// `/` or ending in `.toml`).
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if name_or_path.contains('/') || name_or_path.ends_with(".toml") {
            let text = std::fs::read_to_string(name_or_path)
                .map_err(|source| ProfileError::Read { path: name_or_path.to_owned(), source })?;
            return Profile::parse(&text, name_or_path);
        }
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name_or_path).ok_or_else(|| ProfileError::Unknown {
            name: name_or_path.to_owned(),
            known: BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
        })?;
        Profile::parse(text, name_or_path)
    }

    pub fn builtin_text(name: &str) -> Option<&'static str> {
        BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    }

    pub fn parse(text: &str, source_name: &str) -> Result<Profile, ProfileError> {
        let profile: Profile = toml::from_str(text)
            .map_err(|e| ProfileError::Parse { source_name: source_name.to_owned(), message: e.to_string() })?;
        profile.validate(source_name)?;
        Ok(profile)
    }

    pub fn validate(&self, source_name: &str) -> Result<(), ProfileError> {
        let v = Validator { source_name };
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self.name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        v.check("name", &self.name, name_ok, "must be 1 to 64 of the characters a-z A-Z 0-9 - _ .")?;
        match &self.medium {
            MediumProfile::Nvm(m) => {
                v.capacity("medium.capacity_gib", m.capacity_gib)?;
                v.page_bytes("medium.page_bytes", m.page_bytes)?;
                v.count("medium.channels", m.channels, 1, 1024)?;
                v.check(
                    "medium.interleave_bytes",
                    &m.interleave_bytes,
                    m.interleave_bytes.is_power_of_two() && m.interleave_bytes >= m.transfer_bytes,
                    "must be a power of two no smaller than transfer_bytes",
                )?;
                v.check(
                    "medium.transfer_bytes",
                    &m.transfer_bytes,
                    m.transfer_bytes.is_power_of_two() && (4..=m.page_bytes).contains(&m.transfer_bytes),
                    "must be a power of two from 4 to page_bytes",
                )?;
                v.latency("medium.read_latency_ns", m.read_latency_ns)?;
                v.latency("medium.write_latency_ns", m.write_latency_ns)?;
                v.latency("medium.access_occupancy_ns", m.access_occupancy_ns)?;
                v.bandwidth("medium.channel_bandwidth_mb_s", m.channel_bandwidth_mb_s)?;
            }
            MediumProfile::Flash(m) => {
                v.capacity("medium.capacity_gib", m.capacity_gib)?;
                v.page_bytes("medium.page_bytes", m.page_bytes)?;
                v.count("medium.channels", m.channels, 1, 1024)?;
                v.count("medium.chips_per_channel", m.chips_per_channel, 1, 1024)?;
                v.latency("medium.read_latency_us", m.read_latency_us)?;
                v.latency("medium.program_latency_us", m.program_latency_us)?;
                v.bandwidth("medium.channel_bandwidth_mb_s", m.channel_bandwidth_mb_s)?;
            }
        }
        v.count("pe.count", self.pe.count, 0, 1024)?;
        v.bandwidth("pe.clock_mhz", self.pe.clock_mhz)?;
        v.latency("pe.slowdown", self.pe.slowdown)?;
        v.bandwidth("pe.memcpy_bandwidth_mb_s", self.pe.memcpy_bandwidth_mb_s)?;
        v.check(
            "dram.total_mib",
            &self.dram.total_mib,
            self.dram.total_mib <= 1 << 24,
            "must be at most 16777216 (16 TiB)",
        )?;
        v.check(
            "dram.ndp_mib",
            &self.dram.ndp_mib,
            self.dram.ndp_mib <= self.dram.total_mib,
            "must not exceed dram.total_mib",
        )?;
        v.bandwidth("link.bandwidth_mb_s", self.link.bandwidth_mb_s)?;
        v.latency("link.latency_ns", self.link.latency_ns)?;
        if let Some(c) = &self.coherent {
            v.latency("coherent.local_hit_ns", c.local_hit_ns)?;
            v.latency("coherent.remote_atomic_ns", c.remote_atomic_ns)?;
        }
        v.count("queues.depth", self.queues.depth, 1, 65536)?;
        Ok(())
    }

    pub fn kind(&self) -> MediumKind {
        match self.medium {
            MediumProfile::Nvm(_) => MediumKind::Nvm,
            MediumProfile::Flash(_) => MediumKind::Flash,
        }
    }

    pub fn page_bytes(&self) -> u32 {
        match &self.medium {
            MediumProfile::Nvm(m) => m.page_bytes,
            MediumProfile::Flash(m) => m.page_bytes,
        }
    }

    /// Capacity of the real device the profile describes.
    pub fn capacity_bytes(&self) -> u64 {
        let gib = match &self.medium {
            MediumProfile::Nvm(m) => m.capacity_gib,
            MediumProfile::Flash(m) => m.capacity_gib,
        };
        let bytes = (gib * GIB as f64) as u64;
        bytes - bytes % u64::from(self.page_bytes())
    }

    pub fn channels(&self) -> u32 {
        match &self.medium {
            MediumProfile::Nvm(m) => m.channels,
            MediumProfile::Flash(m) => m.channels,
        }
    }

    pub fn chips_per_channel(&self) -> u32 {
        match &self.medium {
            MediumProfile::Nvm(_) => 1,
            MediumProfile::Flash(m) => m.chips_per_channel,
        }
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("profiles always serialize")
    }
}

struct Validator<'a> {
    source_name: &'a str,
}

impl Validator<'_> {
    fn check<T: std::fmt::Display>(
        &self,
        key: &'static str,
        value: &T,
        ok: bool,
        reason: &'static str,
    ) -> Result<(), ProfileError> {
        if ok {
            Ok(())
        } else {
            Err(ProfileError::Invalid {
                source_name: self.source_name.to_owned(),
                key,
                value: value.to_string(),
                reason,
            })
        }
    }

    fn latency(&self, key: &'static str, x: f64) -> Result<(), ProfileError> {
        self.check(key, &x, x.is_finite() && x >= 0.0, "must be a finite number >= 0")
    }

    fn bandwidth(&self, key: &'static str, x: f64) -> Result<(), ProfileError> {
        self.check(key, &x, x > 0.0 && !x.is_nan(), "must be > 0 (inf for no limit)")
    }

    fn capacity(&self, key: &'static str, x: f64) -> Result<(), ProfileError> {
        self.check(key, &x, x.is_finite() && x > 0.0 && x <= 1_048_576.0, "must be > 0 and at most 1048576 (1 PiB)")
    }

    fn page_bytes(&self, key: &'static str, x: u32) -> Result<(), ProfileError> {
        use ndpdb_format::image::{PAGE_BYTES_MAX, PAGE_BYTES_MIN};
        self.check(
            key,
            &x,
            x.is_power_of_two() && (PAGE_BYTES_MIN..=PAGE_BYTES_MAX).contains(&x),
            "must be a power of two from 512 to 32768",
        )
    }

    fn count(&self, key: &'static str, x: u32, min: u32, max: u32) -> Result<(), ProfileError> {
        self.check(
            key,
            &x,
            (min..=max).contains(&x),
            if min == 0 { "must be from 0 to 1024" } else { "out of range (see docs/profiles.md)" },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_and_is_named_after_its_file() {
        for (name, _) in BUILTIN {
            let p = Profile::load(name).unwrap();
            assert_eq!(&p.name, name);
            let again = Profile::parse(&p.to_toml(), "roundtrip").unwrap();
            assert_eq!(again, p);
        }
    }

    #[test]
    fn unknown_key_is_named() {
        let text = Profile::builtin_text("u280-nvm").unwrap().replace("[pe]\n", "[pe]\nturbo = true\n");
        let err = Profile::parse(&text, "x.toml").unwrap_err().to_string();
        assert!(err.contains("turbo"), "{err}");
    }

    #[test]
    fn impossible_value_is_named() {
        let text = Profile::builtin_text("cosmos-plus").unwrap().replace("channels = 8", "channels = 0");
        let err = Profile::parse(&text, "x.toml").unwrap_err().to_string();
        assert!(err.contains("medium.channels") && err.contains("= 0"), "{err}");
        let text = Profile::builtin_text("u280-nvm").unwrap().replace("latency_ns = 737", "latency_ns = -1");
        let err = Profile::parse(&text, "x.toml").unwrap_err().to_string();
        assert!(err.contains("link.latency_ns"), "{err}");
    }

    #[test]
    fn unknown_name_lists_builtins() {
        let err = Profile::load("warp-drive").unwrap_err().to_string();
        assert!(err.contains("u280-nvm") && err.contains("cosmos-plus"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,400}") {
            let _ = Profile::parse(&s, "fuzz");
        }

        #[test]
        fn mutated_builtin_never_panics(idx in 0usize..5, pos in 0usize..4000, byte in proptest::prelude::any::<u8>()) {
            let mut bytes = BUILTIN[idx].1.as_bytes().to_vec();
            let at = pos % bytes.len();
            bytes[at] = byte;
            if let Ok(text) = String::from_utf8(bytes) {
                let _ = Profile::parse(&text, "fuzz");
            }
        }
    }
}
