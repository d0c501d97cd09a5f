//! The timing model's parameters in picoseconds, and the busy-until timeline.
//!
//! Every resource (each link direction, each medium channel, each flash chip,
//! each PE) has a busy-until time on the device's modelled clock. A command
//! reserves the resources it uses in the order data flows through them and
//! completes when the last one is done, plus the link's command latency.
//! Times are integer picoseconds so that millions of 142.857 ns transfers add
//! up without drift; `u64` picoseconds last 213 days of modelled time.
//!
//! Inside one program execution the PEs and channels form a closed pipeline
//! that runs far too fast to reserve transfer by transfer (tens of millions a
//! second), so an execution is charged as a fluid model: each PE adds its
//! own demand (its critical path: latencies it waits for, compute) and each
//! channel or chip adds the occupancy all PEs put on it. The execution ends
//! when the slowest of them is done:
//!
//! ```text
//!   end = max( start + max_pe(pe_demand),
//!              max_c( max(start, busy_until[c]) + channel_demand[c] ),
//!              max_k( max(start, busy_until[k]) + chip_demand[k] ) )   (flash chips)
//! ```
//!
//! This is the bottleneck (roofline) bound of a closed queueing network. It is
//! exact far from the knee (few PEs: latency-bound; many PEs: channel-bound)
//! and optimistic near it, where real PEs also queue behind each other.
//! `docs/device-model.md` compares it with the paper's Table I.

use crate::profile::{MB, MediumProfile, Profile};

pub(crate) const PS_PER_NS: f64 = 1_000.0;

pub(crate) fn ns_to_ps(ns: f64) -> u64 {
    (ns * PS_PER_NS).round() as u64
}

/// Picoseconds per byte for a bandwidth in MB/s (0 for `inf`).
fn ps_per_byte(mb_s: f64) -> f64 {
    if mb_s.is_infinite() { 0.0 } else { 1e12 / (mb_s * MB) }
}

pub(crate) fn bytes_ps(bytes: u64, ps_per_byte: f64) -> u64 {
    (bytes as f64 * ps_per_byte).round() as u64
}

#[derive(Debug, Clone)]
pub(crate) struct Timing {
    pub link_latency_ps: u64,
    pub link_ps_per_byte: f64,
    pub medium: MediumTiming,
    pub pe_slowdown: f64,
    pub pe_ps_per_cycle: f64,
    pub memcpy_ps_per_byte: f64,
    /// Coherent shared memory (0 when the profile has none: then no lock
    /// table can be attached).
    pub coherent_local_ps: u64,
    pub coherent_remote_ps: u64,
}

#[derive(Debug, Clone)]
pub(crate) enum MediumTiming {
    Nvm {
        channels: u64,
        /// `channels - 1` when `channels` is a power of two, else 0.
        channel_mask: u64,
        interleave_shift: u32,
        transfer_bytes: u64,
        transfer_shift: u32,
        read_latency_ps: u64,
        write_latency_ps: u64,
        occupancy_ps: u64,
        ps_per_byte: f64,
    },
    Flash {
        channels: u64,
        chips_per_channel: u64,
        read_ps: u64,
        program_ps: u64,
        ps_per_byte: f64,
    },
}

impl Timing {
    pub fn from_profile(p: &Profile) -> Timing {
        let medium = match &p.medium {
            MediumProfile::Nvm(m) => MediumTiming::Nvm {
                channels: u64::from(m.channels),
                channel_mask: if m.channels.is_power_of_two() { u64::from(m.channels) - 1 } else { 0 },
                interleave_shift: m.interleave_bytes.trailing_zeros(),
                transfer_bytes: u64::from(m.transfer_bytes),
                transfer_shift: m.transfer_bytes.trailing_zeros(),
                read_latency_ps: ns_to_ps(m.read_latency_ns),
                write_latency_ps: ns_to_ps(m.write_latency_ns),
                occupancy_ps: ns_to_ps(m.access_occupancy_ns),
                ps_per_byte: ps_per_byte(m.channel_bandwidth_mb_s),
            },
            MediumProfile::Flash(m) => MediumTiming::Flash {
                channels: u64::from(m.channels),
                chips_per_channel: u64::from(m.chips_per_channel),
                read_ps: ns_to_ps(m.read_latency_us * 1000.0),
                program_ps: ns_to_ps(m.program_latency_us * 1000.0),
                ps_per_byte: ps_per_byte(m.channel_bandwidth_mb_s),
            },
        };
        Timing {
            link_latency_ps: ns_to_ps(p.link.latency_ns),
            link_ps_per_byte: ps_per_byte(p.link.bandwidth_mb_s),
            medium,
            pe_slowdown: p.pe.slowdown,
            pe_ps_per_cycle: if p.pe.clock_mhz.is_infinite() { 0.0 } else { 1e6 / p.pe.clock_mhz },
            memcpy_ps_per_byte: ps_per_byte(p.pe.memcpy_bandwidth_mb_s),
            coherent_local_ps: p.coherent.as_ref().map_or(0, |c| ns_to_ps(c.local_hit_ns)),
            coherent_remote_ps: p.coherent.as_ref().map_or(0, |c| ns_to_ps(c.remote_atomic_ns)),
        }
    }

    pub fn channels(&self) -> usize {
        match self.medium {
            MediumTiming::Nvm { channels, .. } | MediumTiming::Flash { channels, .. } => channels as usize,
        }
    }

    /// Flash chips in total; NVM has no chips of its own (0).
    pub fn chips(&self) -> usize {
        match self.medium {
            MediumTiming::Nvm { .. } => 0,
            MediumTiming::Flash { channels, chips_per_channel, .. } => (channels * chips_per_channel) as usize,
        }
    }

    pub fn link_ps(&self, bytes: u64) -> u64 {
        bytes_ps(bytes, self.link_ps_per_byte)
    }
}

/// Busy-until per resource, in modelled picoseconds.
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    pub to_device: u64,
    pub to_host: u64,
    pub channels: Vec<u64>,
    pub chips: Vec<u64>,
    pub pes: Vec<u64>,
}

impl Timeline {
    pub fn new(timing: &Timing, pes: usize) -> Timeline {
        Timeline {
            to_device: 0,
            to_host: 0,
            channels: vec![0; timing.channels()],
            chips: vec![0; timing.chips()],
            pes: vec![0; pes],
        }
    }

    /// Reserves `dur` on a resource no earlier than `at`; returns the end.
    pub fn reserve(busy_until: &mut u64, at: u64, dur: u64) -> u64 {
        let start = at.max(*busy_until);
        debug_assert!(start.checked_add(dur).is_some(), "modelled time fits u64 picoseconds");
        *busy_until = start + dur;
        start + dur
    }
}
