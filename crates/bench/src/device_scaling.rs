//! Device scaling: in-situ 4-byte transfers per second with 1..16 PEs, beside
//! neoDBMS Table I ("On-device bandwidth utilization").
//!
//! Each PE runs `bench.insitu-transfers`: random, aligned, transfer-sized
//! reads over a span of the medium that was written first (so every read
//! returns real bytes). The rate is the number of transfers divided by the
//! execution's modelled time on the device (start of the PEs to the end of
//! the last PE or channel), which is what Table I reports.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use ndpdb_device::{
    ClockKind, Command, Device, DeviceOptions, ExecuteReport, Profile, QueuePair, RangeId, Reply, params,
};
use serde::Serialize;

use crate::late::{Lateness, warnings};
use crate::limits::check_pes;
use crate::report::{Report, progress_bar, scratch};

/// The shipped profile that models the paper's hardware (a Xilinx U280 with
/// NVM): only its rows are compared with Table I.
pub const PAPER_PROFILE: &str = "u280-nvm";

/// neoDBMS (ICDE'22) Table I: cores and million 4-byte transfers per second.
pub const PAPER_TABLE_I: &[(u32, f64)] = &[(1, 7.0), (4, 27.0), (8, 53.5), (12, 77.5), (16, 83.2)];

#[derive(Debug, Clone)]
pub struct Config {
    pub profile: Profile,
    pub clock: ClockKind,
    pub pes: Vec<u32>,
    pub transfers_per_pe: u64,
    pub span_bytes: u64,
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub experiment: &'static str,
    pub profile: String,
    pub clock: &'static str,
    pub pes: u32,
    pub transfers: u64,
    pub transfers_per_s: Option<f64>,
    pub paper_transfers_per_s: Option<f64>,
    pub deviation_pct: Option<f64>,
    /// Execution on the device (PEs start to last resource done).
    pub device_s: f64,
    /// Submission to completion on the model's clock.
    pub modelled_s: f64,
    /// Submission to completion on the wall clock.
    pub wall_s: f64,
    /// The execution's completions (one) and the late ones among them (real
    /// clock: the emulator set the pace; `late.rs`).
    pub completions: u64,
    pub late_completions: u64,
    pub bottleneck: String,
    pub link_bytes_to_device: u64,
    pub link_bytes_to_host: u64,
    pub medium_bytes_read: u64,
    pub medium_reads: u64,
}

pub fn paper_rate(pes: u32) -> Option<f64> {
    PAPER_TABLE_I.iter().find(|(p, _)| *p == pes).map(|(_, r)| r * 1e6)
}

impl Config {
    /// Fails when a PE count is not one of the profile's PEs (`limits.rs`),
    /// or there is nothing to transfer or no span to transfer from.
    pub fn validate(&self) -> Result<()> {
        if self.pes.is_empty() {
            bail!("--pes: give at least one PE count");
        }
        for &pes in &self.pes {
            check_pes("--pes", pes, &self.profile)?;
        }
        if self.transfers_per_pe == 0 {
            bail!("--transfers 0: each PE needs at least 1 transfer to time (a rate of no transfers is no rate)");
        }
        if self.span_bytes == 0 {
            bail!("--span-bytes 0: the random transfers need a span of the medium to read");
        }
        Ok(())
    }

    /// Runs the experiment on a scratch image under a progress bar.
    pub fn run_in_scratch(&self) -> Result<Vec<Row>> {
        let dir = scratch()?;
        let bar = progress_bar(self.pes.len() as u64, "{msg} [{bar:30}] {pos}/{len} PE counts");
        bar.set_message(format!("device scaling on {} ({} clock)", self.profile.name, self.clock.name()));
        let rows = run(self, dir.path(), |_| bar.inc(1))?;
        bar.finish_and_clear();
        Ok(rows)
    }

    /// [`Config::run_in_scratch`], then the table (and JSON lines) and the
    /// results directory with the plot.
    pub fn run_and_report(&self, report: &Report) -> Result<PathBuf> {
        let rows = self.run_in_scratch()?;
        let table = table(&rows);
        report.print(&rows, &table)?;
        let results = report.results("device-scaling")?;
        results.jsonl("results.jsonl", &rows)?;
        results.text("table.txt", &table)?;
        results.plot(|dir| plot(&rows, dir));
        Ok(results.announce(&[]))
    }
}

/// Runs the experiment on a fresh image in `dir`. `on_row` sees each row as
/// it is measured (for progress output).
pub fn run(cfg: &Config, dir: &Path, mut on_row: impl FnMut(&Row)) -> Result<Vec<Row>> {
    cfg.validate()?;
    let max_pes = cfg.profile.pe.count;
    let page = u64::from(cfg.profile.page_bytes());
    let span = cfg.span_bytes.div_ceil(page) * page;
    let capacity = span + page;
    let dev = Device::create(dir, cfg.profile.clone(), Some(capacity), DeviceOptions::with_clock(cfg.clock))
        .with_context(|| format!("creating the device image in {}", dir.display()))?;
    let mut qp = dev.queue_pair();
    fill(&mut qp, span / page, page)?;
    let out = match qp
        .call(Command::MemoryRangeCreate { bytes: ndpdb_format::programs::PE_PAIR_BYTES as u64 * u64::from(max_pes) })?
    {
        Reply::Range(r) => r,
        other => bail!("unexpected reply {other:?}"),
    };
    qp.call(Command::ProgramLoad { slot: 0, name: "bench.insitu-transfers".into() })?;
    qp.call(Command::ProgramActivate { slot: 0, active: true })?;
    let mut rows = Vec::new();
    for &pes in &cfg.pes {
        let row = measure(cfg, &dev, &mut qp, out, span, pes)?;
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// One execution of the program on `pes` PEs over `span` bytes, the PEs'
/// counts written to range `out`.
fn measure(cfg: &Config, dev: &Device, qp: &mut QueuePair, out: RangeId, span: u64, pes: u32) -> Result<Row> {
    let before = dev.counters();
    let wall = Instant::now();
    let c = qp.call_timed(Command::Execute {
        slot: 0,
        pes,
        params: params(&[cfg.transfers_per_pe, span, cfg.seed, 0]),
        ranges: vec![out],
    })?;
    let wall_s = wall.elapsed().as_secs_f64();
    let modelled_s = c.modelled_s();
    let report: ExecuteReport = match c.result? {
        Reply::Executed(r) => r,
        other => bail!("unexpected reply {other:?}"),
    };
    // Counters of the execution itself; fetching the per-PE results
    // afterwards is not part of the measurement.
    let delta = dev.counters().since(&before);
    let results = qp
        .call(Command::MemoryRead {
            range: out,
            offset: 0,
            len: ndpdb_format::programs::PE_PAIR_BYTES as u64 * u64::from(pes),
        })?
        .into_data();
    let done: u64 = ndpdb_format::programs::decode_pe_pairs(&results, pes as usize)?.iter().map(|p| p.0).sum();
    if done != cfg.transfers_per_pe * u64::from(pes) || done != delta.medium_reads {
        bail!(
            "the PEs report {done} transfers and the device counted {}; expected {}",
            delta.medium_reads,
            cfg.transfers_per_pe * u64::from(pes)
        );
    }
    let device_s = report.modelled_s();
    let rate = (device_s > 0.0).then(|| done as f64 / device_s);
    let paper = if cfg.profile.name == PAPER_PROFILE { paper_rate(pes) } else { None };
    Ok(Row {
        experiment: "device-scaling",
        profile: cfg.profile.name.clone(),
        clock: cfg.clock.name(),
        pes,
        transfers: done,
        transfers_per_s: rate,
        paper_transfers_per_s: paper,
        deviation_pct: rate.zip(paper).map(|(r, p)| (r - p) / p * 100.0),
        device_s,
        modelled_s,
        wall_s,
        completions: delta.completions,
        late_completions: delta.late_completions,
        bottleneck: report.bottleneck.clone(),
        link_bytes_to_device: delta.link_bytes_to_device,
        link_bytes_to_host: delta.link_bytes_to_host,
        medium_bytes_read: delta.medium_bytes_read,
        medium_reads: delta.medium_reads,
    })
}

/// Writes every page of the span so that reads return real bytes.
fn fill(qp: &mut QueuePair, pages: u64, page: u64) -> Result<()> {
    let mut ids = Vec::new();
    for ppn in 0..pages {
        let data: Vec<u8> = (0..page).map(|i| (i as u8) ^ (ppn as u8)).collect();
        ids.push(qp.submit(Command::PageWrite { ppn, data })?);
        if ids.len() == 64 {
            for id in ids.drain(..) {
                qp.wait(id)?.result?;
            }
        }
    }
    for id in ids {
        qp.wait(id)?.result?;
    }
    Ok(())
}

/// The terminal table: ours beside the paper's Table I.
pub fn table(rows: &[Row]) -> String {
    let fmt_rate = |r: Option<f64>| r.map(|r| format!("{:.1}", r / 1e6)).unwrap_or_else(|| "inf".into());
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.pes.to_string(),
                fmt_rate(r.transfers_per_s),
                r.paper_transfers_per_s.map(|p| format!("{:.1}", p / 1e6)).unwrap_or_else(|| "-".into()),
                r.deviation_pct.map(|d| format!("{d:+.1}%")).unwrap_or_else(|| "-".into()),
                format!("{:.4}", r.modelled_s),
                format!("{:.4}", r.wall_s),
                Lateness { late: r.late_completions, completions: r.completions }.cell(),
                r.medium_reads.to_string(),
                r.medium_bytes_read.to_string(),
                format!("{}/{}", r.link_bytes_to_device, r.link_bytes_to_host),
                r.bottleneck.clone(),
            ]
        })
        .collect();
    let title = match rows.first() {
        Some(r) => format!(
            "device scaling: 4-byte in-situ transfers, profile {}, {} clock (the rate is transfers over the \
             execution's modelled time; {})\n",
            r.profile,
            r.clock,
            crate::orderline::clock_note(r.clock)
        ),
        None => String::new(),
    };
    let late = rows
        .iter()
        .map(|r| (format!("{} PEs", r.pes), Lateness { late: r.late_completions, completions: r.completions }));
    title
        + &crate::output::table(
            &[
                "PEs",
                "ours M/s",
                "paper M/s",
                "dev",
                "modelled s",
                "wall s",
                "late/completions",
                "transfers",
                "medium B read",
                "link B to dev/host",
                "bottleneck",
            ],
            &body,
        )
        + &warnings(late)
}

/// Transfers per second against PEs, ours and (for u280-nvm) the paper's.
pub fn plot(rows: &[Row], dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    use crate::output::{Plot, Series};
    let Some(first) = rows.first() else { return Ok(vec![]) };
    let mut series = vec![Series {
        name: format!("ndpdb ({}, {} clock)", first.profile, first.clock),
        points: rows.iter().filter_map(|r| r.transfers_per_s.map(|t| (f64::from(r.pes), t / 1e6))).collect(),
        reference: false,
    }];
    if first.profile == PAPER_PROFILE {
        series.push(Series {
            name: "neoDBMS Table I (U280)".into(),
            points: PAPER_TABLE_I.iter().map(|&(p, r)| (f64::from(p), r)).collect(),
            reference: true,
        });
    }
    Plot {
        title: "In-situ 4-byte transfers per second",
        x_label: "processing elements",
        y_label: "million transfers per second",
        series,
    }
    .write(dir, "device-scaling")
}
