//! Program execution (`Execute`): a program runs on PEs `0..pes` spread
//! over the host's threads, each with its own `PeCtx` and account; the
//! accounts then settle on the timeline (the fluid model of `timing.rs`).
//! Executions take the PEs exclusively, one at a time.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::command::{ExecuteReport, PARAMS_BYTES_MAX, Reply};
use crate::counters::Cells;
use crate::device::Inner;
use crate::error::DeviceError;
use crate::pe::{PeAccount, PeCtx, PeRun, Program};
use crate::timing::Busy;

impl Inner {
    pub(crate) fn execute(
        &self,
        t0: u64,
        slot: u32,
        pes: u32,
        params: Vec<u8>,
        range_ids: Vec<u32>,
    ) -> Result<(Reply, u64), DeviceError> {
        let count = self.profile.pe.count;
        if count == 0 {
            return Err(DeviceError::NoProcessingElements { profile: self.profile.name.clone() });
        }
        if pes == 0 || pes > count {
            return Err(DeviceError::OutOfRange { what: format!("{pes} PEs requested; the device has 1..={count}") });
        }
        if params.len() > PARAMS_BYTES_MAX {
            return Err(DeviceError::InvalidCommand {
                what: format!("{} parameter bytes; at most {PARAMS_BYTES_MAX}", params.len()),
            });
        }
        let s = *self.slot(slot)?;
        let program = match (s.program, s.active) {
            (Some(p), true) => p,
            (Some(_), false) => return Err(DeviceError::SlotNotReady { slot, state: "loaded but not active" }),
            (None, _) => return Err(DeviceError::SlotNotReady { slot, state: "empty" }),
        };
        let ranges = range_ids.iter().map(|&r| self.ranges.get(r)).collect::<Result<Vec<_>, _>>()?;
        let _exclusive = self.exec.lock();
        let arrived = self.to_device(t0, params.len() as u64);
        let start = self.timeline.lock().pes[..pes as usize].iter().fold(arrived, |a, &b| a.max(b));
        let outcomes = self.run_pes(program, pes, &params, &ranges);
        let (accounts, failures): (Vec<PeAccount>, Vec<Option<DeviceError>>) = outcomes.into_iter().unzip();
        // A failed execution still took its time and made its accesses: settle
        // them, then report the failure.
        debug_assert_eq!(accounts.len(), pes as usize, "every PE ran and has an account");
        let report = self.settle(program, start, &accounts);
        if let Some(e) = first_failure(failures) {
            return Err(e);
        }
        let end = report.end_ps;
        Ok((Reply::Executed(report), end))
    }

    /// Runs `program` on PEs 0..pes over the host's threads: each PE's
    /// account, and its failure if it failed.
    fn run_pes(
        &self,
        program: Program,
        pes: u32,
        params: &[u8],
        ranges: &[Arc<crate::memory::Range>],
    ) -> Vec<PeOutcome> {
        let next = AtomicU64::new(0);
        let results: Mutex<Vec<Option<PeOutcome>>> = Mutex::new((0..pes).map(|_| None).collect());
        let lock_table = self.lock_table.read().clone();
        let host_memory = self.host_memory.read().clone();
        let threads = (pes as usize).min(self.pe_threads);
        let run = PeRun {
            pes,
            program: program.name,
            params,
            ranges,
            medium: &self.medium,
            timing: &self.timing,
            budget: &self.budget,
            lock_table: lock_table.as_deref(),
            host_memory: host_memory.as_deref(),
            mirror: &self.mirror,
        };
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    loop {
                        let pe = next.fetch_add(1, Ordering::Relaxed) as u32;
                        if pe >= pes {
                            break;
                        }
                        let mut ctx = PeCtx::new(&run, pe);
                        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| (program.run)(&mut ctx)));
                        let failure = match outcome {
                            // A media error fails the PE whatever the program made of it.
                            _ if ctx.media_error().is_some() => ctx.media_error(),
                            Ok(Ok(())) => None,
                            Ok(Err(e)) => Some(e),
                            Err(panic) => Some(DeviceError::ProgramFailed {
                                program: program.name.to_string(),
                                pe,
                                message: format!("panicked: {}", panic_message(&panic)),
                            }),
                        };
                        // What the PE did before a failure happened all the same.
                        results.lock()[pe as usize] = Some((ctx.take_account(), failure));
                    }
                });
            }
        });
        results.into_inner().into_iter().map(|r| r.expect("every PE ran")).collect()
    }

    /// Turns the PEs' accounts into the execution's end time (the fluid model
    /// of `timing.rs`), reserves the resources and updates the counters.
    fn settle(&self, program: Program, start: u64, accounts: &[PeAccount]) -> ExecuteReport {
        let mut tl = self.timeline.lock();
        let (mut end, mut bottleneck) = (start, "pe 0".to_string());
        for (i, a) in accounts.iter().enumerate() {
            if start + a.demand_ps > end {
                end = start + a.demand_ps;
                bottleneck = format!("pe {i}");
            }
        }
        let mut sum_into = |busy: &mut Vec<Busy>, name: &str, demand: &dyn Fn(&PeAccount) -> &Vec<u64>| {
            for (r, b) in busy.iter_mut().enumerate() {
                let d: u64 = accounts.iter().map(|a| demand(a)[r]).sum();
                if d == 0 {
                    continue;
                }
                let done = b.reserve(start, d);
                if done > end {
                    end = done;
                    bottleneck = format!("{name} {r}");
                }
            }
        };
        sum_into(&mut tl.channels, "channel", &|a| &a.channel_ps);
        sum_into(&mut tl.chips, "chip", &|a| &a.chip_ps);
        // DMA reads of host memory share the link's host -> device direction.
        let link: u64 = accounts.iter().map(|a| a.link_to_device_ps).sum();
        if link > 0 {
            let done = tl.to_device.reserve(start, link);
            if done > end {
                end = done;
                bottleneck = "link to device".to_string();
            }
        }
        for b in tl.pes[..accounts.len()].iter_mut() {
            *b = end;
        }
        drop(tl);
        debug_assert!(end >= start, "an execution ends after it starts");
        let mut report = ExecuteReport {
            program: program.name.to_string(),
            pes: accounts.len() as u32,
            start_ps: start,
            end_ps: end,
            pe_demand_ps: accounts.iter().map(|a| a.demand_ps).collect(),
            bottleneck,
            medium_reads: 0,
            medium_bytes_read: 0,
            medium_writes: 0,
            medium_bytes_written: 0,
            dma_reads: 0,
            dma_bytes_read: 0,
        };
        for a in accounts {
            report.medium_reads += a.medium_reads;
            report.medium_bytes_read += a.medium_bytes_read;
            report.medium_writes += a.medium_writes;
            report.medium_bytes_written += a.medium_bytes_written;
            report.dma_reads += a.dma_reads;
            report.dma_bytes_read += a.dma_bytes_read;
            let c = &self.cells;
            Cells::count(c, |c| &c.coherent_local_hits, a.coherent_local_hits);
            Cells::count(c, |c| &c.coherent_remote, a.coherent_remote);
            Cells::count(c, |c| &c.dma_reads, a.dma_reads);
            Cells::count(c, |c| &c.dma_bytes_read, a.dma_bytes_read);
            Cells::count(c, |c| &c.host_page_retries, a.host_page_retries);
            Cells::count(c, |c| &c.link_bytes_to_device, a.dma_bytes_read);
        }
        Cells::add_pe_busy(&self.cells, &report.pe_demand_ps);
        self.count_medium(false, report.medium_reads, report.medium_bytes_read);
        self.count_medium(true, report.medium_writes, report.medium_bytes_written);
        report
    }
}

/// What a PE did, and how it failed if it did.
type PeOutcome = (PeAccount, Option<DeviceError>);

/// The error an execution fails with: the lowest-numbered PE's media error
/// if any PE met damaged data (the host must learn that the medium is
/// damaged, not only that a program stopped), else the lowest-numbered
/// PE's failure.
fn first_failure(failures: Vec<Option<DeviceError>>) -> Option<DeviceError> {
    let media = failures.iter().position(|f| matches!(f, Some(DeviceError::UnrecoveredRead { .. })));
    let first = media.or_else(|| failures.iter().position(Option::is_some))?;
    failures.into_iter().nth(first).flatten()
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}
