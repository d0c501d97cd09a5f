//! Whether a run's times measure the modelled device or the emulator.
//!
//! On the real clock the device does a command's work first and then holds
//! its completion until the modelled completion time. When the work took
//! longer than the modelled device would have, the completion is posted
//! late (`Counters::late_completions`): the emulator on this machine, not
//! the profile's device, set the pace, and a wall time measured across such
//! completions says how fast the emulator is. On the virtual clock nothing
//! waits and nothing is ever late; its modelled times are the model's.
//!
//! Every table that shows a time shows the profile, the clock and
//! [`Lateness::cell`] beside it, and a run whose share of late completions
//! is above [`LATE_SHARE_MAX`] prints [`Lateness::warning`] under its
//! table (and into its `table.txt`). The JSON lines carry `clock`,
//! `completions` and `late_completions`.

use ndpdb_device::Counters;

/// Share of late completions above which a run's times are said to measure
/// the emulator (1%: a few stragglers leave a wall time meaningful, a
/// steady stream does not).
pub const LATE_SHARE_MAX: f64 = 0.01;

/// Late completions out of all completions of a measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lateness {
    pub late: u64,
    pub completions: u64,
}

impl Lateness {
    /// The late completions of a counter difference (`Counters::since`).
    pub fn of(c: &Counters) -> Lateness {
        Lateness { late: c.late_completions, completions: c.completions }
    }

    /// `late/completions`, the table cell.
    pub fn cell(self) -> String {
        format!("{}/{}", self.late, self.completions)
    }

    /// Whether more than [`LATE_SHARE_MAX`] of the completions were late.
    pub fn emulator_bound(self) -> bool {
        self.late as f64 > LATE_SHARE_MAX * self.completions as f64
    }

    /// The warning for `what` (an engine, a PE count) when it is
    /// [`Lateness::emulator_bound`].
    pub fn warning(self, what: &str) -> Option<String> {
        self.emulator_bound().then(|| {
            format!(
                "warning: {what}: {} of {} device completions were late (more than {}%): for them the emulator on \
                 this machine, not the modelled device, set the pace, so these times measure the emulator, not the \
                 profile's device alone",
                self.late,
                self.completions,
                LATE_SHARE_MAX * 100.0
            )
        })
    }
}

/// Both measurements together.
impl std::ops::Add for Lateness {
    type Output = Lateness;
    fn add(self, other: Lateness) -> Lateness {
        Lateness { late: self.late + other.late, completions: self.completions + other.completions }
    }
}

/// The warnings of `(what, lateness)` pairs, one line each (empty when
/// none is emulator-bound), to print under a table.
pub fn warnings(of: impl IntoIterator<Item = (String, Lateness)>) -> String {
    of.into_iter().filter_map(|(what, l)| l.warning(&what)).map(|w| w + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_one_percent_late_is_a_warning_that_says_how_many() {
        let l = |late, completions| Lateness { late, completions };
        assert_eq!(l(0, 0).warning("x"), None);
        assert_eq!(l(1, 100).warning("x"), None, "exactly 1% is not above it");
        let w = l(1152, 1152).warning("ndpdb host-only, 2 workers").unwrap();
        assert!(w.contains("ndpdb host-only, 2 workers: 1152 of 1152") && w.contains("measure the emulator"), "{w}");
        assert!(w.starts_with("warning: "), "{w}");
        assert_eq!(l(2, 100).cell(), "2/100");
        assert_eq!(l(2, 100) + l(1, 50), l(3, 150));
        assert_eq!(warnings([("a".to_string(), l(0, 9)), ("b".to_string(), l(9, 9))]).lines().count(), 1);
    }
}
