//! The two clocks of the device model.
//!
//! - `Real`: modelled time is anchored to the wall clock (picoseconds since
//!   the device was opened). A completion is held until the wall clock reaches
//!   its modelled time ("compute, then hold"), so host and device overlap for
//!   real and end-to-end wall time is measured. A completion whose compute ran
//!   past its modelled time is posted late and counted.
//! - `Virtual`: modelled time only advances when the host consumes a
//!   completion (to that completion's time). Nothing waits and runs are fast.
//!   Modelled times repeat exactly when one host thread submits and programs
//!   charge compute by `charge_cycles`; measured compute (`PeCtx::compute`)
//!   varies with the host's CPU time from run to run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockKind {
    Real,
    Virtual,
}

impl ClockKind {
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Real => "real",
            ClockKind::Virtual => "virtual",
        }
    }
}

impl std::str::FromStr for ClockKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "real" => Ok(ClockKind::Real),
            "virtual" => Ok(ClockKind::Virtual),
            other => Err(format!("unknown clock `{other}`: use `real` or `virtual`")),
        }
    }
}

/// The last stretch of a hold is spun rather than slept: sleeping overshoots
/// by tens of microseconds on a loaded machine.
const SPIN_PS: u64 = 60_000_000;

#[derive(Debug)]
pub(crate) struct Clock {
    kind: ClockKind,
    epoch: Instant,
    virtual_now_ps: AtomicU64,
}

impl Clock {
    pub fn new(kind: ClockKind) -> Clock {
        Clock { kind, epoch: Instant::now(), virtual_now_ps: AtomicU64::new(0) }
    }

    pub fn kind(&self) -> ClockKind {
        self.kind
    }

    pub fn wall_ps(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64 * 1000
    }

    /// The host's current time on the model's clock.
    pub fn now_ps(&self) -> u64 {
        match self.kind {
            ClockKind::Real => self.wall_ps(),
            ClockKind::Virtual => self.virtual_now_ps.load(Ordering::Acquire),
        }
    }

    /// The host observes a completion at `ps`: in real time, wait for it; in
    /// virtual time, move the clock forward to it.
    pub fn hold_until(&self, ps: u64) {
        match self.kind {
            ClockKind::Virtual => {
                self.virtual_now_ps.fetch_max(ps, Ordering::AcqRel);
            }
            ClockKind::Real => loop {
                let now = self.wall_ps();
                if now >= ps {
                    return;
                }
                let left = ps - now;
                if left > SPIN_PS {
                    std::thread::sleep(Duration::from_nanos((left - SPIN_PS) / 1000));
                } else {
                    std::hint::spin_loop();
                }
            },
        }
    }
}
