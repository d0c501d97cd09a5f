//! The one rule for PE and host worker counts, shared by every command that
//! takes them (`bench orderline-sum`, `bench snapshot`, `bench
//! device-scaling`, `db aggregate`, `db update-ndp`): a PE count is one of
//! the profile's PEs, 1..=`pe.count`; a worker count is 1..=[`WORKERS_MAX`].
//! Zero is never "none": a run with no PEs or no workers would do nothing
//! and report a time for it.

use anyhow::{Result, bail};
use ndpdb_device::Profile;

/// Most host worker threads a block-stack scan may start.
pub const WORKERS_MAX: usize = 256;

/// Fails unless `pes` is one of `profile`'s PEs (`flag` names the argument).
pub fn check_pes(flag: &str, pes: u32, profile: &Profile) -> Result<()> {
    let max = profile.pe.count;
    if max == 0 {
        bail!(
            "profile `{}` has no processing elements (pe.count = 0), so NDP cannot run on it; choose a profile \
             with PEs (ndpdb profiles list)",
            profile.name
        );
    }
    if pes == 0 || pes > max {
        bail!("{flag} {pes}: profile `{}` has 1..={max} PEs", profile.name);
    }
    Ok(())
}

/// Fails unless `workers` is 1..=[`WORKERS_MAX`] (`flag` names the argument).
pub fn check_workers(flag: &str, workers: usize) -> Result<()> {
    if workers == 0 || workers > WORKERS_MAX {
        bail!("{flag} {workers}: the host-only block stack runs 1..={WORKERS_MAX} worker threads");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_too_many_are_refused_with_the_flag_and_the_range() {
        let p = Profile::load("u280-nvm").unwrap();
        assert!(check_pes("--pes", 16, &p).is_ok() && check_workers("--workers", 2).is_ok());
        assert_eq!(check_pes("--pes", 0, &p).unwrap_err().to_string(), "--pes 0: profile `u280-nvm` has 1..=16 PEs");
        assert!(check_pes("--pes", 17, &p).is_err());
        let e = check_workers("--workers", 0).unwrap_err().to_string();
        assert_eq!(e, "--workers 0: the host-only block stack runs 1..=256 worker threads");
        assert!(check_workers("--workers", WORKERS_MAX + 1).is_err());
    }
}
