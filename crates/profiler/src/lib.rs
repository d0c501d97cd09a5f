//! # The hardware profiler (hybridNDP, EDBT'25, section 3.1)
//!
//! hybridNDP's cost model needs a hardware model: how fast the link, the
//! medium, the device's compute and its memory are (the paper's Table 2). The
//! profiler finds those numbers by running micro-benchmarks through the
//! device's command interface only, as a host-side tool would against a real
//! device, and writes them to a parameter file ([`HardwareModel`], TOML) that
//! the optimizer reads.
//!
//! Every figure is a difference or a regression of observed times, so the
//! fixed costs of a command (its link latency, parameter transfer) cancel out:
//!
//! | figure | method |
//! |---|---|
//! | link bandwidth and latency, each way | memory-range writes / reads of 4 KiB..4 MiB at queue depth 1; least squares of time on bytes: slope = 1 / bandwidth, intercept = latency |
//! | medium read latency, channel bandwidth | host `Read`s of 512 B and 4 KiB at random addresses, QD1; slope minus the link's = 1 / channel bandwidth; intercept minus the link latency = read latency (flash: tR, time to the page register) |
//! | PE transfer latency | one PE, N vs 2N random reads of one transfer: per-read time (NVM: the profile's `read_latency_ns`) |
//! | medium write latency | one PE, N vs 2N random writes of one transfer (NVM) or page (flash, minus the channel transfer); without PEs, host page writes minus link and channel |
//! | in-situ transfer rate | all PEs reading random transfers: the medium's internal rate (neoDBMS Table I) |
//! | PE slowdown | the same floating-point kernel on one PE and on the host, I vs 2I iterations: device time / host CPU time |
//! | device memcpy bandwidth | one PE copying 1 MiB 4 vs 8 times in device DRAM |
//!
//! On the virtual clock the model's own parameters come back (a test checks
//! every shipped profile); on the real clock the figures include the
//! emulation's overheads, which is what a real-time run will see.

mod model;

pub use model::{HardwareModel, LinkModel, MediumModel, PeModel};

use ndpdb_device::programs::{SplitMix64, compute_kernel};
use ndpdb_device::{Command, Device, DeviceError, QueuePair, RangeId, Reply, params, thread_cpu_ns};

#[derive(Debug, thiserror::Error)]
pub enum ProfilerError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("profiler: {0}")]
    Unexpected(String),
}

type Result<T> = std::result::Result<T, ProfilerError>;

/// How much work each micro-benchmark does. `quick()` is for tests.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    pub repetitions: u32,
    pub medium_reads: u64,
    pub insitu_transfers_per_pe: u64,
    pub compute_iterations: u64,
}

impl Effort {
    pub fn full() -> Effort {
        Effort { repetitions: 5, medium_reads: 4000, insitu_transfers_per_pe: 200_000, compute_iterations: 20_000_000 }
    }

    pub fn quick() -> Effort {
        Effort { repetitions: 3, medium_reads: 500, insitu_transfers_per_pe: 20_000, compute_iterations: 5_000_000 }
    }
}

const LINK_SIZES: [u64; 4] = [4 << 10, 64 << 10, 512 << 10, 4 << 20];
const READ_SIZES: [u64; 2] = [512, 4096];

/// Runs every micro-benchmark on `dev` and returns the hardware model.
pub fn profile(dev: &Device, effort: Effort) -> Result<HardwareModel> {
    let mut p = Profiler { dev, qp: dev.queue_pair(), effort, rng: SplitMix64::new(0x006e_6470_6462) };
    let info = dev.info();
    let link = p.link()?;
    let (read_latency_ns, channel_bandwidth_mb_s) =
        p.medium_host_reads(&link, info.page_bytes.into(), info.capacity_bytes)?;
    let pes = if info.pes > 0 { Some(p.pes(info.pes, channel_bandwidth_mb_s)?) } else { None };
    let write_latency_ns = match &pes {
        Some((_, w)) => *w,
        None => p.host_page_write(&link, info.page_bytes.into(), info.capacity_bytes, channel_bandwidth_mb_s)?,
    };
    Ok(HardwareModel {
        format_version: model::FORMAT_VERSION,
        profile: info.profile,
        clock: info.clock.to_string(),
        link,
        medium: MediumModel {
            kind: info.medium_kind.to_string(),
            page_bytes: info.page_bytes,
            channels: info.channels,
            chips_per_channel: info.chips_per_channel,
            capacity_bytes: info.capacity_bytes,
            read_latency_ns,
            write_latency_ns,
            channel_bandwidth_mb_s,
        },
        pe: pes.map(|(pe, _)| pe),
        dram_ndp_bytes: info.dram_ndp_bytes,
    })
}

struct Profiler<'a> {
    dev: &'a Device,
    qp: QueuePair,
    effort: Effort,
    rng: SplitMix64,
}

impl Profiler<'_> {
    /// Modelled time of one command at queue depth 1, as the host sees it.
    fn time(&mut self, cmd: Command) -> Result<(f64, Reply)> {
        let t0 = self.dev.now_ps();
        let reply = self.qp.call(cmd)?;
        Ok(((self.dev.now_ps() - t0) as f64 / 1000.0, reply))
    }

    /// The fastest of `repetitions` runs (the least disturbed on a real clock).
    fn best(&mut self, mut cmd: impl FnMut(&mut Self) -> Command) -> Result<f64> {
        let mut best = f64::INFINITY;
        for _ in 0..self.effort.repetitions {
            let c = cmd(self);
            best = best.min(self.time(c)?.0);
        }
        Ok(best)
    }

    fn range(&mut self, bytes: u64) -> Result<RangeId> {
        match self.qp.call(Command::MemoryRangeCreate { bytes })? {
            Reply::Range(r) => Ok(r),
            other => Err(ProfilerError::Unexpected(format!("memory_range_create replied {other:?}"))),
        }
    }

    fn link(&mut self) -> Result<LinkModel> {
        let range = self.range(*LINK_SIZES.last().expect("sizes"))?;
        let (mut down, mut up) = (Vec::new(), Vec::new());
        for bytes in LINK_SIZES {
            let t = self.best(|_| Command::MemoryWrite { range, offset: 0, data: vec![0x5a; bytes as usize] })?;
            down.push((bytes as f64, t));
            let t = self.best(|_| Command::MemoryRead { range, offset: 0, len: bytes })?;
            up.push((bytes as f64, t));
        }
        self.qp.call(Command::MemoryRangeDelete { range })?;
        let (down_slope, down_icpt) = fit(&down);
        let (up_slope, up_icpt) = fit(&up);
        Ok(LinkModel {
            bandwidth_to_device_mb_s: mb_s(down_slope),
            bandwidth_to_host_mb_s: mb_s(up_slope),
            latency_ns: ((down_icpt + up_icpt) / 2.0).max(0.0),
        })
    }

    /// Read latency and channel bandwidth from host reads of two sizes.
    fn medium_host_reads(&mut self, link: &LinkModel, page: u64, capacity: u64) -> Result<(f64, f64)> {
        let mut pts = Vec::new();
        for len in READ_SIZES {
            let t = self.best(|p| {
                let addr = p.rng.below(capacity / page) * page;
                Command::Read { addr, len: len as u32 }
            })?;
            pts.push((len as f64, t));
        }
        let (slope, icpt) = fit(&pts);
        let channel_ns_per_byte = slope - ns_per_byte(link.bandwidth_to_host_mb_s);
        Ok(((icpt - link.latency_ns).max(0.0), mb_s(channel_ns_per_byte)))
    }

    fn host_page_write(&mut self, link: &LinkModel, page: u64, capacity: u64, channel_mb_s: f64) -> Result<f64> {
        let t = self.best(|p| {
            let ppn = p.rng.below(capacity / page);
            Command::PageWrite { ppn, data: vec![0xa5; page as usize] }
        })?;
        let fixed =
            link.latency_ns + page as f64 * (ns_per_byte(link.bandwidth_to_device_mb_s) + ns_per_byte(channel_mb_s));
        Ok((t - fixed).max(0.0))
    }

    /// Runs `program` on `pes` PEs and returns the execution's device time in ns.
    fn exec(&mut self, slot: u32, pes: u32, args: &[u64], ranges: Vec<RangeId>) -> Result<f64> {
        match self.qp.call(Command::Execute { slot, pes, params: params(args), ranges })? {
            Reply::Executed(r) => Ok((r.end_ps - r.start_ps) as f64 / 1000.0),
            other => Err(ProfilerError::Unexpected(format!("execute replied {other:?}"))),
        }
    }

    fn load(&mut self, slot: u32, name: &str) -> Result<()> {
        self.qp.call(Command::ProgramLoad { slot, name: name.into() })?;
        self.qp.call(Command::ProgramActivate { slot, active: true })?;
        Ok(())
    }

    /// PE figures, and the medium write latency seen by a PE.
    fn pes(&mut self, count: u32, channel_mb_s: f64) -> Result<(PeModel, f64)> {
        let info = self.dev.info();
        let capacity = info.capacity_bytes;
        let page = u64::from(info.page_bytes);
        let nvm = info.medium_kind == "nvm";
        self.load(0, "profile.medium-read")?;
        self.load(1, "profile.medium-write")?;
        self.load(2, "bench.insitu-transfers")?;
        self.load(3, "profile.compute")?;
        self.load(4, "profile.memcpy")?;
        let n = self.effort.medium_reads;
        let unit = if nvm { 4 } else { page };
        let per_op = |p: &mut Self, slot: u32, args: &dyn Fn(u64) -> Vec<u64>| -> Result<f64> {
            let mut best = f64::INFINITY;
            for _ in 0..p.effort.repetitions {
                let t1 = p.exec(slot, 1, &args(n), vec![])?;
                let t2 = p.exec(slot, 1, &args(2 * n), vec![])?;
                best = best.min((t2 - t1) / n as f64);
            }
            Ok(best)
        };
        let transfer_latency_ns = per_op(self, 0, &|k| vec![k, unit, 7, capacity])?;
        let write_ns = per_op(self, 1, &|k| vec![k, 11, 0, capacity])?;
        let write_latency_ns =
            if nvm { write_ns } else { (write_ns - page as f64 * ns_per_byte(channel_mb_s)).max(0.0) };
        let span = capacity.min(64 << 20);
        // Flash transfers are whole pages: fewer of them give as stable a rate.
        let transfers =
            if nvm { self.effort.insitu_transfers_per_pe } else { self.effort.insitu_transfers_per_pe / 64 };
        let t = self.exec(2, count, &[transfers, span, 3, 0], vec![])?;
        let insitu_transfers_per_s =
            if t > 0.0 { (transfers * u64::from(count)) as f64 / (t / 1e9) } else { f64::INFINITY };
        let slowdown = self.slowdown()?;
        let mut best = f64::INFINITY;
        for _ in 0..self.effort.repetitions {
            let t4 = self.exec(4, 1, &[1 << 20, 4], vec![])?;
            let t8 = self.exec(4, 1, &[1 << 20, 8], vec![])?;
            best = best.min(t8 - t4);
        }
        let memcpy_bandwidth_mb_s = mb_s(best / (4 << 20) as f64);
        let pe = PeModel { count, slowdown, memcpy_bandwidth_mb_s, transfer_latency_ns, insitu_transfers_per_s };
        Ok((pe, write_latency_ns))
    }

    /// Device time over host CPU time for the same kernel.
    ///
    /// Both sides are CPU times, so a neighbour on the same cores (another
    /// test, a build) slows both. Each repetition measures the device and
    /// the host back to back and keeps their ratio; the median of the
    /// ratios is the answer. Minima taken separately, as before, paired a
    /// quiet device moment with a loaded host one (19.6 against 40 in CI).
    fn slowdown(&mut self) -> Result<f64> {
        let i = self.effort.compute_iterations;
        let mut ratios = Vec::new();
        for _ in 0..self.effort.repetitions.max(SLOWDOWN_REPETITIONS) {
            let d = self.exec(3, 1, &[2 * i], vec![])? - self.exec(3, 1, &[i], vec![])?;
            let h0 = thread_cpu_ns();
            std::hint::black_box(compute_kernel(i));
            let h1 = thread_cpu_ns();
            std::hint::black_box(compute_kernel(2 * i));
            let h2 = thread_cpu_ns();
            let h = ((h2 - h1) as f64 - (h1 - h0) as f64).max(1.0);
            ratios.push((d / h).max(0.0));
        }
        ratios.sort_by(f64::total_cmp);
        Ok(ratios[ratios.len() / 2])
    }
}

/// Repetitions of the slowdown measurement at least (its median needs a few).
const SLOWDOWN_REPETITIONS: u32 = 7;

/// Least squares fit of y = slope * x + intercept.
fn fit(pts: &[(f64, f64)]) -> (f64, f64) {
    let n = pts.len() as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, y) in pts {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (slope, my - slope * mx)
}

/// MB/s from ns per byte (inf when the cost is not measurable).
fn mb_s(ns_per_byte: f64) -> f64 {
    if ns_per_byte <= 1e-9 { f64::INFINITY } else { 1e3 / ns_per_byte }
}

fn ns_per_byte(mb_s: f64) -> f64 {
    if mb_s.is_infinite() { 0.0 } else { 1e3 / mb_s }
}

/// One line of a comparison between a measured model and the profile it ran on.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Comparison {
    pub figure: &'static str,
    pub unit: &'static str,
    pub measured: f64,
    pub profile: Option<f64>,
}

/// The measured figures beside the profile's own values, where it has one.
pub fn compare(m: &HardwareModel, p: &ndpdb_device::Profile) -> Vec<Comparison> {
    use ndpdb_device::profile::MediumProfile;
    let (read_ns, write_ns, channel) = match &p.medium {
        MediumProfile::Nvm(n) => (n.read_latency_ns, n.write_latency_ns, n.channel_bandwidth_mb_s),
        MediumProfile::Flash(f) => (f.read_latency_us * 1e3, f.program_latency_us * 1e3, f.channel_bandwidth_mb_s),
    };
    let c = |figure, unit, measured, profile| Comparison { figure, unit, measured, profile };
    let mut rows = vec![
        c("link bandwidth to device", "MB/s", m.link.bandwidth_to_device_mb_s, Some(p.link.bandwidth_mb_s)),
        c("link bandwidth to host", "MB/s", m.link.bandwidth_to_host_mb_s, Some(p.link.bandwidth_mb_s)),
        c("link latency", "ns", m.link.latency_ns, Some(p.link.latency_ns)),
        c("medium read latency", "ns", m.medium.read_latency_ns, Some(read_ns)),
        c("medium write latency", "ns", m.medium.write_latency_ns, Some(write_ns)),
        c("medium channel bandwidth", "MB/s", m.medium.channel_bandwidth_mb_s, Some(channel)),
    ];
    if let Some(pe) = &m.pe {
        rows.push(c("PE slowdown", "x", pe.slowdown, Some(p.pe.slowdown)));
        rows.push(c("PE memcpy bandwidth", "MB/s", pe.memcpy_bandwidth_mb_s, Some(p.pe.memcpy_bandwidth_mb_s)));
        rows.push(c("PE transfer latency", "ns", pe.transfer_latency_ns, None));
        rows.push(c("in-situ transfers (all PEs)", "1/s", pe.insitu_transfers_per_s, None));
    }
    rows
}
