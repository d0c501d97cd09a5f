//! What else ran on this machine during a measurement.
//!
//! Host latencies that reach memory through a shared cache (Exp. 3's random
//! keys on a 4 MiB lock table) depend on what other processes do: a process
//! streaming memory on the other core of a 2-vCPU guest takes the table out
//! of the last-level cache, and random lock pairs slow from about 50 ns to
//! 130-160 ns (`docs/locks-bench.md`). So a measurement records how many
//! CPUs other processes kept busy meanwhile: the machine's busy time from
//! `/proc/stat` less this process's own CPU time (`getrusage`), over the
//! phase's wall time. Linux only; elsewhere, or when either source cannot be
//! read, there is no figure (`None`), never a guess.

use std::time::Instant;

/// The shortest phase [`CpuMark::others_since`] gives a figure for.
pub const MIN_WALL_S: f64 = 0.05;

/// A point to measure other processes' CPU use from.
#[derive(Debug, Clone, Copy)]
pub struct CpuMark {
    machine_s: f64,
    own_s: f64,
    at: Instant,
}

impl CpuMark {
    /// Now; `None` if the machine's or the process's CPU time is unreadable.
    pub fn now() -> Option<CpuMark> {
        Some(CpuMark { machine_s: machine_busy_s()?, own_s: own_cpu_s()?, at: Instant::now() })
    }

    /// CPUs that other processes kept busy on average since `self` (CPU
    /// seconds per second of wall time, at least 0). `/proc/stat` counts in
    /// clock ticks (10 ms of CPU time at 100 Hz), so a phase shorter than
    /// [`MIN_WALL_S`] gets no figure: a tick or two would be most of it.
    pub fn others_since(&self) -> Option<f64> {
        let now = CpuMark::now()?;
        let wall = now.at.duration_since(self.at).as_secs_f64();
        if wall < MIN_WALL_S {
            return None;
        }
        let others = (now.machine_s - self.machine_s) - (now.own_s - self.own_s);
        Some((others / wall).max(0.0))
    }
}

/// Seconds all CPUs spent busy since boot: the `cpu` line of `/proc/stat`,
/// user + nice + system + irq + softirq (not idle, iowait or steal).
fn machine_busy_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line.split_whitespace().skip(1).map(|v| v.parse().ok()).collect::<Option<_>>()?;
    let busy = f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)?;
    // SAFETY: sysconf takes a constant and has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| busy as f64 / hz as f64)
}

/// CPU seconds this process (all its threads) has used.
fn own_cpu_s() -> Option<f64> {
    // SAFETY: getrusage writes into the zeroed struct we pass and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(tv(u.ru_utime) + tv(u.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn our_own_spinning_counts_as_ours_and_as_the_machines() {
        let (machine0, own0) = (machine_busy_s().unwrap(), own_cpu_s().unwrap());
        let mark = CpuMark::now().unwrap();
        // Spin until 300 ms of our own CPU time have passed (not wall time:
        // on a loaded machine the scheduler may give us less than that).
        let t = Instant::now();
        let mut x = 0u64;
        while own_cpu_s().unwrap() - own0 < 0.3 {
            for _ in 0..10_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            assert!(t.elapsed().as_secs() < 60, "300 ms of CPU not granted in 60 s");
        }
        std::hint::black_box(x);
        let (machine, own) = (machine_busy_s().unwrap() - machine0, own_cpu_s().unwrap() - own0);
        assert!(own >= 0.3, "we spun until 300 ms of CPU were ours: {own}");
        // The machine's busy time includes ours (less a clock tick or two).
        assert!(machine >= own - 0.05, "machine {machine} < own {own}");
        let others = mark.others_since().unwrap();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!((0.0..=cpus).contains(&others), "{others}");
    }
}
