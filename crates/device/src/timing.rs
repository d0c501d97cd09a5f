//! The timing model's parameters in picoseconds, and the timeline of
//! reservations.
//!
//! Every resource (each link direction, each medium channel, each flash chip,
//! each PE) keeps its reservations on the device's modelled clock. A command
//! reserves the resources it uses in the order data flows through them, each
//! at the earliest free gap no earlier than it can start ([`Busy`]: with
//! reservations arriving in modelled-time order this is the plain
//! `max(at, busy_until)`), and completes when the last one is done, plus
//! the link's command latency.
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
//!              max_c( gap_c(start, channel_demand[c]) + channel_demand[c] ),
//!              max_k( gap_k(start, chip_demand[k]) + chip_demand[k] ) )   (flash chips)
//!
//!   gap_r(t, d): the earliest free stretch of length d on resource r at or after t
//! ```
//!
//! This is the bottleneck (roofline) bound of a closed queueing network. It is
//! exact far from the knee (few PEs: latency-bound; many PEs: channel-bound)
//! and optimistic near it, where real PEs also queue behind each other.
//! `docs/device-model.md` compares it with the paper's Table I.

use std::collections::VecDeque;

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

/// How many reservations a resource remembers. Older ones are forgotten into
/// the resource's floor (all time before it counts as taken), so a very late
/// booking waits as it would have under a plain busy-until time. Adjacent
/// reservations merge, so back-to-back traffic keeps few of them.
const SPANS_KEPT: usize = 1024;

/// One resource's reservations on the modelled clock: the busy intervals
/// `[start, end)`, sorted and disjoint, and a floor below which every
/// picosecond counts as taken.
///
/// A reservation takes the earliest free gap at or after the time it asks
/// for, not the end of the latest reservation. Commands reach the emulator in
/// wall-time order, which is not the order of their modelled times: a program
/// execution settles its reads only after it ran (in wall time), by which
/// time another thread's commands may have booked the same chip at later
/// modelled times. Under a single busy-until time the execution's reads would
/// queue behind those later programs; here they take the gap before them,
/// as they would on the device. When reservations arrive in modelled-time
/// order (one host thread), this is exactly `start = max(at, busy_until)`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Busy {
    spans: VecDeque<(u64, u64)>,
    floor: u64,
}

impl Busy {
    /// The earliest start no earlier than `at` at which `dur` fits. A
    /// reservation of no duration fits only strictly before a busy span, so
    /// that one asked for at a span's start waits for the span's end, as
    /// under a busy-until time.
    pub fn earliest(&self, at: u64, dur: u64) -> u64 {
        let mut s = at.max(self.floor);
        let first = self.spans.partition_point(|&(_, end)| end <= s);
        for &(start, end) in self.spans.range(first..) {
            if s + dur.max(1) <= start {
                return s;
            }
            s = s.max(end);
        }
        s
    }

    /// Marks `[start, start + dur)` taken; it must be free.
    pub fn take(&mut self, start: u64, dur: u64) {
        if dur == 0 {
            return;
        }
        debug_assert!(start.checked_add(dur).is_some(), "modelled time fits u64 picoseconds");
        debug_assert_eq!(self.earliest(start, dur), start, "a reservation takes a free gap");
        let end = start + dur;
        let i = self.spans.partition_point(|&(s, _)| s < start);
        let joins_prev = i > 0 && self.spans[i - 1].1 == start;
        let joins_next = i < self.spans.len() && self.spans[i].0 == end;
        match (joins_prev, joins_next) {
            (true, true) => {
                self.spans[i - 1].1 = self.spans[i].1;
                self.spans.remove(i);
            }
            (true, false) => self.spans[i - 1].1 = end,
            (false, true) => self.spans[i].0 = start,
            (false, false) => self.spans.insert(i, (start, end)),
        }
        while self.spans.len() > SPANS_KEPT {
            let (_, forgotten) = self.spans.pop_front().expect("more spans than kept");
            self.floor = self.floor.max(forgotten);
        }
    }

    /// Reserves `dur` at the earliest free gap no earlier than `at`; returns
    /// the reservation's end.
    pub fn reserve(&mut self, at: u64, dur: u64) -> u64 {
        let start = self.earliest(at, dur);
        self.take(start, dur);
        start + dur
    }

    /// The end of the latest reservation.
    #[cfg(test)]
    pub fn until(&self) -> u64 {
        self.spans.back().map_or(self.floor, |&(_, end)| end)
    }
}

/// The device's resources on the modelled clock. The PEs keep a plain
/// busy-until time: executions take them exclusively, one after another in
/// both wall and modelled time.
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    pub to_device: Busy,
    pub to_host: Busy,
    pub channels: Vec<Busy>,
    pub chips: Vec<Busy>,
    pub pes: Vec<u64>,
}

impl Timeline {
    pub fn new(timing: &Timing, pes: usize) -> Timeline {
        Timeline {
            to_device: Busy::default(),
            to_host: Busy::default(),
            channels: vec![Busy::default(); timing.channels()],
            chips: vec![Busy::default(); timing.chips()],
            pes: vec![0; pes],
        }
    }

    /// A flash page read: the chip senses the page (`read_ps`), then the
    /// page crosses the channel (`xfer`) while the chip still holds it. The
    /// chip is taken for both, the channel for the transfer, back to back.
    /// Returns when the data is in the controller.
    pub fn flash_read(&mut self, at: u64, ch: usize, chip: usize, read_ps: u64, xfer: u64) -> u64 {
        self.chip_then_channel(at, chip, read_ps + xfer, ch, read_ps, xfer)
    }

    /// A flash page program: the page crosses the channel (`xfer`), then the
    /// chip programs it (`program_ps`); the chip is taken for both. Returns
    /// when the page is durable.
    pub fn flash_program(&mut self, at: u64, ch: usize, chip: usize, program_ps: u64, xfer: u64) -> u64 {
        self.chip_then_channel(at, chip, xfer + program_ps, ch, 0, xfer)
    }

    /// Takes `chip` for `chip_ps` from the earliest start `s >= at` at which
    /// channel `ch` is also free for `xfer` from `s + offset`; returns the
    /// chip's end.
    fn chip_then_channel(&mut self, at: u64, chip: usize, chip_ps: u64, ch: usize, offset: u64, xfer: u64) -> u64 {
        let mut s = at;
        loop {
            s = self.chips[chip].earliest(s, chip_ps);
            let on_channel = self.channels[ch].earliest(s + offset, xfer);
            if on_channel == s + offset {
                break;
            }
            s = on_channel - offset;
        }
        self.chips[chip].take(s, chip_ps);
        self.channels[ch].take(s + offset, xfer);
        s + chip_ps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_reservations_queue_as_a_busy_until_time() {
        // Requests in modelled-time order (`at` never decreasing), some
        // before the resource is free, some after, one of no duration.
        let mut b = Busy::default();
        let mut until = 0u64;
        for (at, dur) in [(0, 5), (3, 4), (20, 1), (20, 0), (21, 7), (25, 2), (40, 3)] {
            let want = at.max(until) + dur;
            assert_eq!(b.reserve(at, dur), want, "at {at}");
            until = want;
        }
        assert_eq!(b.until(), 43);
    }

    #[test]
    fn an_earlier_reservation_takes_the_gap_before_a_later_one() {
        let mut b = Busy::default();
        assert_eq!(b.reserve(1_000, 800), 1_800);
        // Fits before the later reservation.
        assert_eq!(b.reserve(100, 300), 400);
        // Does not fit in [400, 1000): waits for the later one.
        assert_eq!(b.reserve(500, 600), 2_400);
        // Fits exactly in the gap left.
        assert_eq!(b.reserve(0, 100), 100);
        assert_eq!(b.reserve(400, 600), 1_000);
        assert_eq!(b.spans.len(), 1, "adjacent reservations merge");
        assert_eq!(b.earliest(0, 1), 2_400);
    }

    #[test]
    fn forgotten_reservations_become_the_floor() {
        let mut b = Busy::default();
        for i in 0..(SPANS_KEPT as u64 + 10) {
            b.reserve(i * 10, 5);
        }
        assert_eq!(b.spans.len(), SPANS_KEPT);
        assert_eq!(b.floor, 9 * 10 + 5);
        // A booking below the floor starts at the floor, the gap after it.
        assert_eq!(b.reserve(0, 5), 100);
    }

    fn flash_timeline() -> Timeline {
        Timeline {
            to_device: Busy::default(),
            to_host: Busy::default(),
            channels: vec![Busy::default(); 2],
            chips: vec![Busy::default(); 4],
            pes: vec![],
        }
    }

    #[test]
    fn a_flash_read_waits_for_its_chip_and_its_channel_back_to_back() {
        let mut tl = flash_timeline();
        // A program on chip 0 booked later in modelled time.
        assert_eq!(tl.flash_program(10_000, 0, 0, 800, 50), 10_850);
        // A read asked for before it fits in front of it.
        assert_eq!(tl.flash_read(0, 0, 0, 60, 50), 110);
        // A read that would overlap the program waits for it.
        assert_eq!(tl.flash_read(9_900, 0, 0, 60, 50), 10_960);
        // Another chip on the same channel: sensing overlaps the program, the
        // transfer waits for the channel the program's transfer holds.
        // [10_000, 10_050): the read's transfer follows at 10_050.
        assert_eq!(tl.flash_read(9_960, 0, 1, 60, 50), 10_100);
        assert_eq!(tl.channels[0].earliest(10_000, 1), 10_100);
    }
}
