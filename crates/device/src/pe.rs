//! Processing elements and the programs they run.
//!
//! An NDP program is a Rust function registered under a name in the device's
//! [`ProgramLibrary`]; it stands for the papers' pre-compiled PE binaries.
//! The host loads a program into a slot by name, activates it and executes it
//! on PEs `0..n`; each PE runs the function once with its own [`PeCtx`].
//!
//! `PeCtx` is the only way a program touches the device, and every access is
//! charged to the model as it happens:
//!
//! | access | PE demand | channel / chip occupancy |
//! |---|---|---|
//! | NVM read or write of L bytes | `ceil(span / transfer_bytes)` x latency | each transfer: `access_occupancy_ns` on its channel |
//! | flash read of L bytes of a page | `read_latency_us` + L / channel bandwidth | chip: tR; channel: L / bandwidth |
//! | flash page program | page / channel bandwidth + `program_latency_us` | channel: page / bandwidth; chip: tPROG |
//! | memory range or scratch copy of L bytes | L / `memcpy_bandwidth_mb_s` | - |
//! | `compute(f)` | host CPU time of `f` x `slowdown` | - |
//! | `charge_cycles(n)` | n / `clock_mhz` | - |
//!
//! How a PE's demand and the channels' occupancy become the execution's time
//! is in `timing.rs`. Programs never see the host: their inputs are the
//! command's parameters and memory ranges, their outputs the memory ranges.

use std::sync::Arc;

use ndpdb_locktable::LockTable;

use crate::coherent::DeviceWords;
use crate::error::DeviceError;
use crate::host_memory::HostMemory;
use crate::medium::{BadSector, Medium};
use crate::memory::{Budget, Range, Reservation, check_span};
use crate::mirror::{Mirror, MirrorConfig, View};
use crate::timing::{MediumTiming, Timing, bytes_ps};

pub type ProgramFn = fn(&mut PeCtx<'_>) -> Result<(), DeviceError>;

#[derive(Clone, Copy)]
pub struct Program {
    pub name: &'static str,
    pub description: &'static str,
    pub run: ProgramFn,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program").field("name", &self.name).finish()
    }
}

/// The device-defined programs a device can load.
#[derive(Debug, Clone, Default)]
pub struct ProgramLibrary {
    programs: Vec<Program>,
}

impl ProgramLibrary {
    /// The programs every ndpdb device carries (`crate::programs`).
    pub fn builtin() -> ProgramLibrary {
        let mut lib = ProgramLibrary::default();
        for p in crate::programs::BUILTIN {
            lib.register(*p).expect("built-in program names are unique");
        }
        lib
    }

    pub fn register(&mut self, program: Program) -> Result<(), String> {
        if self.get(program.name).is_some() {
            return Err(format!("a program named `{}` is already registered", program.name));
        }
        self.programs.push(program);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Program> {
        self.programs.iter().find(|p| p.name == name)
    }

    pub fn names(&self) -> Vec<String> {
        self.programs.iter().map(|p| p.name.to_string()).collect()
    }
}

/// What one PE did during one execution.
#[derive(Debug, Default, Clone)]
pub(crate) struct PeAccount {
    pub demand_ps: u64,
    pub channel_ps: Vec<u64>,
    pub chip_ps: Vec<u64>,
    pub medium_reads: u64,
    pub medium_bytes_read: u64,
    pub medium_writes: u64,
    pub medium_bytes_written: u64,
    pub coherent_local_hits: u64,
    pub coherent_remote: u64,
    /// DMA reads of host memory: their occupancy of the host -> device
    /// direction of the link, their count and bytes.
    pub link_to_device_ps: u64,
    pub dma_reads: u64,
    pub dma_bytes_read: u64,
    pub host_page_retries: u64,
}

/// Scratch memory in device DRAM, reserved against the profile's budget.
#[derive(Debug)]
pub struct Scratch {
    data: Vec<u8>,
    _reservation: Reservation,
}

impl std::ops::Deref for Scratch {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.data
    }
}

impl std::ops::DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }
}

/// What every PE of one execution shares: the program, its inputs and the
/// device's parts it may reach.
#[derive(Clone, Copy)]
pub(crate) struct PeRun<'a> {
    pub pes: u32,
    pub program: &'static str,
    pub params: &'a [u8],
    pub ranges: &'a [Arc<Range>],
    pub medium: &'a Medium,
    pub timing: &'a Timing,
    pub budget: &'a Arc<Budget>,
    pub lock_table: Option<&'a LockTable>,
    pub host_memory: Option<&'a dyn HostMemory>,
    pub mirror: &'a parking_lot::Mutex<Option<Mirror>>,
}

/// A PE's view of the device during one execution.
pub struct PeCtx<'a> {
    pe: u32,
    pes: u32,
    program: &'static str,
    params: &'a [u8],
    ranges: &'a [Arc<Range>],
    medium: &'a Medium,
    timing: &'a Timing,
    budget: &'a Arc<Budget>,
    page_bytes: u64,
    capacity_bytes: u64,
    /// The host's lock table in coherent shared memory, if one is attached.
    coherent: Option<DeviceWords<'a>>,
    host_memory: Option<&'a dyn HostMemory>,
    mirror: &'a parking_lot::Mutex<Option<Mirror>>,
    /// The NVM charge in its common case, precomputed (None on flash).
    nvm: Option<NvmCharge>,
    /// Transfers read on the [`PeCtx::read_words`] fast path, in total and
    /// per channel, not yet in `acc`: each costs the same, so the charge is
    /// a product taken once, in [`PeCtx::take_account`].
    fast_transfers: u64,
    fast_channel_transfers: Vec<u64>,
    acc: PeAccount,
    /// The first sector this PE read that did not match its check code: the
    /// execution fails with it whatever the program does with the error.
    bad_sector: Option<BadSector>,
}

/// What [`PeCtx::read_words`] needs to charge an NVM read that stays in
/// one interleave stripe of a power-of-two channel count.
#[derive(Debug, Clone, Copy)]
struct NvmCharge {
    transfer_shift: u32,
    interleave_shift: u32,
    /// `interleave_bytes - 1`: two addresses are in one stripe when they
    /// differ only in these bits.
    stripe_low: u64,
    channel_mask: u64,
    transfer_bytes: u64,
    read_latency_ps: u64,
    occupancy_ps: u64,
}

impl<'a> PeCtx<'a> {
    pub(crate) fn new(run: &PeRun<'a>, pe: u32) -> PeCtx<'a> {
        let PeRun { pes, program, params, ranges, medium, timing, budget, lock_table, host_memory, mirror } = *run;
        let acc = PeAccount {
            channel_ps: vec![0; timing.channels()],
            chip_ps: vec![0; timing.chips()],
            ..PeAccount::default()
        };
        let page_bytes = u64::from(medium.superblock().page_bytes);
        let nvm = match timing.medium {
            MediumTiming::Nvm {
                channels,
                channel_mask,
                interleave_shift,
                transfer_bytes,
                transfer_shift,
                read_latency_ps,
                occupancy_ps,
                ..
            } if channels.is_power_of_two() && interleave_shift >= transfer_shift => Some(NvmCharge {
                transfer_shift,
                interleave_shift,
                stripe_low: (1u64 << interleave_shift) - 1,
                channel_mask,
                transfer_bytes,
                read_latency_ps,
                occupancy_ps,
            }),
            _ => None,
        };
        let capacity_bytes = medium.capacity_bytes();
        let coherent = lock_table.map(|t| DeviceWords::new(t, timing.coherent_local_ps, timing.coherent_remote_ps));
        PeCtx {
            pe,
            pes,
            program,
            params,
            ranges,
            medium,
            timing,
            budget,
            page_bytes,
            capacity_bytes,
            coherent,
            host_memory,
            mirror,
            nvm,
            fast_transfers: 0,
            fast_channel_transfers: vec![0; timing.channels()],
            acc,
            bad_sector: None,
        }
    }

    /// The media error this PE met, if it met one.
    pub(crate) fn media_error(&self) -> Option<DeviceError> {
        self.bad_sector.map(|b| self.medium.media_error(b))
    }

    /// Records a sector that failed its check; the error the read returns.
    #[cold]
    fn bad(&mut self, bad: BadSector) -> DeviceError {
        self.bad_sector.get_or_insert(bad);
        self.medium.media_error(bad)
    }

    /// Records the media error a partial-sector write met (it reads the
    /// sector's old bytes); passes any error on.
    fn write_error(&mut self, e: DeviceError) -> DeviceError {
        if let DeviceError::UnrecoveredRead { ppn, sector, .. } = e {
            let first = ppn * (self.page_bytes / crate::command::SECTOR_BYTES);
            self.bad_sector.get_or_insert(BadSector { sector: first + sector });
        }
        e
    }

    /// The error a write by this PE gets on a read-only device.
    fn refuse_write(&self) -> Result<(), DeviceError> {
        if !self.medium.read_only() {
            return Ok(());
        }
        Err(DeviceError::ReadOnly {
            path: self.medium.path().to_owned(),
            what: format!("let program `{}` on PE {} write the medium", self.program, self.pe),
        })
    }

    /// What this PE did: the account, with the fast path's transfers and the
    /// coherent region's charges settled into it.
    pub(crate) fn take_account(&mut self) -> PeAccount {
        self.settle_coherent();
        if let Some(c) = self.nvm {
            let n = std::mem::take(&mut self.fast_transfers);
            self.acc.demand_ps += n * c.read_latency_ps;
            self.acc.medium_reads += n;
            self.acc.medium_bytes_read += n * c.transfer_bytes;
            for (ps, t) in self.acc.channel_ps.iter_mut().zip(self.fast_channel_transfers.iter_mut()) {
                *ps += std::mem::take(t) * c.occupancy_ps;
            }
        }
        std::mem::take(&mut self.acc)
    }

    /// This PE's index in `0..pes()`.
    pub fn pe(&self) -> u32 {
        self.pe
    }

    pub fn pes(&self) -> u32 {
        self.pes
    }

    pub fn params(&self) -> &'a [u8] {
        self.params
    }

    /// The `i`-th little-endian u64 of the parameters.
    pub fn param_u64(&self, i: usize) -> Result<u64, DeviceError> {
        self.params.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or_else(|| {
            self.fail(format!(
                "parameter {i} (a u64 at byte {}) is missing: {} parameter bytes given",
                i * 8,
                self.params.len()
            ))
        })
    }

    /// A program-specific failure, named after program and PE.
    pub fn fail(&self, message: impl Into<String>) -> DeviceError {
        DeviceError::ProgramFailed { program: self.program.to_string(), pe: self.pe, message: message.into() }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.medium.capacity_bytes()
    }

    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
    }

    /// The medium's access granularity for PE reads and writes.
    pub fn transfer_bytes(&self) -> u64 {
        match self.timing.medium {
            MediumTiming::Nvm { transfer_bytes, .. } => transfer_bytes,
            MediumTiming::Flash { .. } => self.page_bytes,
        }
    }

    /// Reads medium bytes in place. NVM: whole transfers. Flash: each page
    /// touched is sensed into its chip's register (tR) and the bytes asked
    /// for cross the channel; there is no register cache, so reading the same
    /// page twice pays tR twice.
    pub fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.medium.check_range(addr, buf.len() as u64)?;
        if buf.is_empty() {
            return Ok(());
        }
        self.charge_read(addr, buf.len() as u64);
        self.medium.read(addr, buf).map_err(|b| self.bad(b))
    }

    /// Reads consecutive aligned little-endian u32s starting at `addr`:
    /// charged exactly like [`PeCtx::read`] of the same bytes, without the
    /// byte copying. The hot path of chain walks, so its common case (NVM,
    /// one interleave stripe) is a handful of instructions.
    #[inline(always)]
    pub fn read_words(&mut self, addr: u64, out: &mut [u32]) -> Result<(), DeviceError> {
        let bytes = 4 * out.len() as u64;
        let end = addr.wrapping_add(bytes);
        if let Some(c) = self.nvm
            && addr & 3 == 0
            && addr < end
            && end <= self.capacity_bytes
            && (addr ^ (end - 1)) <= c.stripe_low
        {
            let n = if c.transfer_shift == 2 {
                out.len() as u64
            } else {
                ((end - 1) >> c.transfer_shift) - (addr >> c.transfer_shift) + 1
            };
            let ch = ((addr >> c.interleave_shift) & c.channel_mask) as usize;
            self.fast_channel_transfers[ch] += n;
            self.fast_transfers += n;
            return self.medium.read_words(addr, out).map_err(|b| self.bad(b));
        }
        self.read_words_slow(addr, out)
    }

    #[cold]
    #[inline(never)]
    fn read_words_slow(&mut self, addr: u64, out: &mut [u32]) -> Result<(), DeviceError> {
        if !addr.is_multiple_of(4) {
            return Err(self.fail(format!("read_words at {addr} is not 4-byte aligned")));
        }
        self.medium.check_range(addr, 4 * out.len() as u64)?;
        if out.is_empty() {
            return Ok(());
        }
        self.charge_read(addr, 4 * out.len() as u64);
        self.medium.read_words(addr, out).map_err(|b| self.bad(b))
    }

    /// Hints the host CPU to fetch the medium word at `addr` into its cache.
    /// It stands for nothing on the device (no charge, no counter): programs
    /// use it to overlap the emulation's own memory misses.
    #[inline(always)]
    pub fn prefetch(&self, addr: u64) {
        self.medium.prefetch(addr);
    }

    /// Reads one aligned little-endian u32: one transfer on NVM.
    #[inline]
    pub fn read_u32(&mut self, addr: u64) -> Result<u32, DeviceError> {
        if !addr.is_multiple_of(4) {
            return Err(self.fail(format!("read_u32 at {addr} is not 4-byte aligned")));
        }
        self.medium.check_range(addr, 4)?;
        self.charge_read(addr, 4);
        self.medium.read_word(addr).map_err(|b| self.bad(b))
    }

    /// Reads many aligned little-endian u32s, one transfer each: the same
    /// charge as calling [`PeCtx::read_u32`] for each address, but the loads
    /// are issued together so the emulation keeps up with the modelled rate.
    pub fn gather_u32(&mut self, addrs: &[u64], out: &mut [u32]) -> Result<(), DeviceError> {
        if addrs.len() != out.len() {
            return Err(self.fail(format!("gather_u32: {} addresses but {} outputs", addrs.len(), out.len())));
        }
        for &a in addrs {
            if !a.is_multiple_of(4) {
                return Err(self.fail(format!("gather_u32 at {a} is not 4-byte aligned")));
            }
            self.medium.check_range(a, 4)?;
        }
        if let MediumTiming::Nvm { channels, interleave_shift, transfer_bytes, read_latency_ps, occupancy_ps, .. } =
            self.timing.medium
            && transfer_bytes == 4
        {
            for &a in addrs {
                self.medium.prefetch(a);
            }
            let channel_ps = &mut self.acc.channel_ps;
            if channels.is_power_of_two() {
                let mask = channels - 1;
                for &a in addrs {
                    channel_ps[((a >> interleave_shift) & mask) as usize] += occupancy_ps;
                }
            } else {
                for &a in addrs {
                    channel_ps[((a >> interleave_shift) % channels) as usize] += occupancy_ps;
                }
            }
            let n = addrs.len() as u64;
            self.acc.demand_ps += n * read_latency_ps;
            self.acc.medium_reads += n;
            self.acc.medium_bytes_read += n * 4;
            return self.medium.gather(addrs, out).map_err(|b| self.bad(b));
        }
        for (o, &a) in out.iter_mut().zip(addrs) {
            self.charge_read(a, 4);
            *o = self.medium.read_word(a).map_err(|b| self.bad(b))?;
        }
        Ok(())
    }

    pub fn read_page(&mut self, ppn: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        if buf.len() as u64 != self.page_bytes {
            return Err(self.fail(format!("read_page needs a {}-byte buffer, got {}", self.page_bytes, buf.len())));
        }
        let addr = ppn.checked_mul(self.page_bytes).ok_or_else(|| self.fail("page number overflows"))?;
        self.read(addr, buf)
    }

    /// Writes medium bytes (NVM only; flash pages are programmed whole with
    /// [`PeCtx::write_page`]).
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.medium.check_range(addr, data.len() as u64)?;
        self.refuse_write()?;
        match self.timing.medium {
            MediumTiming::Nvm {
                channels, interleave_shift, transfer_bytes, write_latency_ps, occupancy_ps, ..
            } => {
                if data.is_empty() {
                    return Ok(());
                }
                let first = addr / transfer_bytes;
                let last = (addr + data.len() as u64 - 1) / transfer_bytes;
                for unit in first..=last {
                    let ch = ((unit * transfer_bytes) >> interleave_shift) % channels;
                    self.acc.demand_ps += write_latency_ps;
                    self.acc.channel_ps[ch as usize] += occupancy_ps;
                }
                self.acc.medium_writes += last - first + 1;
                self.acc.medium_bytes_written += (last - first + 1) * transfer_bytes;
            }
            MediumTiming::Flash { .. } => {
                return Err(self.fail("flash is programmed in whole pages: use write_page"));
            }
        }
        self.medium.write(addr, data).map_err(|e| self.write_error(e))
    }

    pub fn write_page(&mut self, ppn: u64, data: &[u8]) -> Result<(), DeviceError> {
        if data.len() as u64 != self.page_bytes {
            return Err(self.fail(format!("write_page needs {} bytes, got {}", self.page_bytes, data.len())));
        }
        let addr = ppn.checked_mul(self.page_bytes).ok_or_else(|| self.fail("page number overflows"))?;
        self.medium.check_range(addr, self.page_bytes)?;
        self.refuse_write()?;
        match self.timing.medium {
            MediumTiming::Nvm { .. } => return self.write(addr, data),
            MediumTiming::Flash { channels, chips_per_channel, program_ps, ps_per_byte, .. } => {
                let (ch, chip) = flash_place(ppn, channels, chips_per_channel);
                let xfer = bytes_ps(self.page_bytes, ps_per_byte);
                self.acc.channel_ps[ch] += xfer;
                self.acc.chip_ps[chip] += program_ps;
                self.acc.demand_ps += xfer + program_ps;
                self.acc.medium_writes += 1;
                self.acc.medium_bytes_written += self.page_bytes;
            }
        }
        self.medium.write(addr, data)
    }

    #[inline]
    fn charge_read(&mut self, addr: u64, len: u64) {
        match self.timing.medium {
            MediumTiming::Nvm {
                channels,
                channel_mask,
                interleave_shift,
                transfer_bytes,
                transfer_shift,
                read_latency_ps,
                occupancy_ps,
                ..
            } => {
                let first = addr >> transfer_shift;
                let last = (addr + len - 1) >> transfer_shift;
                let n = last - first + 1;
                let channel = |unit: u64| {
                    let stripe = (unit << transfer_shift) >> interleave_shift;
                    (if channel_mask != 0 || channels == 1 { stripe & channel_mask } else { stripe % channels })
                        as usize
                };
                let (c0, c1) = (channel(first), channel(last));
                if c0 == c1 && n <= 1 << (interleave_shift.saturating_sub(transfer_shift)) {
                    // The common case: the span lies in one interleave stripe.
                    self.acc.channel_ps[c0] += n * occupancy_ps;
                } else {
                    for unit in first..=last {
                        self.acc.channel_ps[channel(unit)] += occupancy_ps;
                    }
                }
                self.acc.demand_ps += n * read_latency_ps;
                self.acc.medium_reads += n;
                self.acc.medium_bytes_read += n * transfer_bytes;
            }
            MediumTiming::Flash { channels, chips_per_channel, read_ps, ps_per_byte, .. } => {
                let mut at = addr;
                let end = addr + len;
                while at < end {
                    let ppn = at / self.page_bytes;
                    let n = ((ppn + 1) * self.page_bytes).min(end) - at;
                    let (ch, chip) = flash_place(ppn, channels, chips_per_channel);
                    let xfer = bytes_ps(n, ps_per_byte);
                    self.acc.chip_ps[chip] += read_ps;
                    self.acc.channel_ps[ch] += xfer;
                    self.acc.demand_ps += read_ps + xfer;
                    self.acc.medium_reads += 1;
                    self.acc.medium_bytes_read += n;
                    at += n;
                }
            }
        }
    }

    /// The host's lock table in coherent shared memory, reached through this
    /// PE's coherence agent (`coherent.rs`: every access is charged). Fails
    /// when the host attached none.
    pub fn coherent(&self) -> Result<&DeviceWords<'a>, DeviceError> {
        self.coherent.as_ref().ok_or_else(|| {
            self.fail(
                "no lock table is attached in coherent memory: the host attaches one with \
                 Device::attach_lock_table (the profile needs a [coherent] section)",
            )
        })
    }

    /// Moves the coherent accesses made since the last call into this PE's
    /// account; returns their modelled time in picoseconds.
    pub fn settle_coherent(&mut self) -> u64 {
        let Some(w) = &self.coherent else { return 0 };
        let (ps, local, remote) = w.take_charges();
        self.acc.demand_ps += ps;
        self.acc.coherent_local_hits += local;
        self.acc.coherent_remote += remote;
        ps
    }

    /// Reads `buf.len()` bytes of host memory at `addr` by DMA
    /// (`host_memory.rs`): the PE waits the link latency and the bytes at
    /// the link bandwidth; the bytes occupy the host -> device link.
    pub fn host_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        let Some(mem) = self.host_memory else {
            return Err(
                self.fail("no host memory is attached: the host registers its frames with Device::attach_host_memory")
            );
        };
        mem.dma_read(addr, buf)
            .map_err(|e| self.fail(format!("DMA read of {} bytes at host address {addr:#x}: {e}", buf.len())))?;
        let xfer = self.timing.link_ps(buf.len() as u64);
        self.acc.demand_ps += self.timing.link_latency_ps + xfer;
        self.acc.link_to_device_ps += xfer;
        self.acc.dma_reads += 1;
        self.acc.dma_bytes_read += buf.len() as u64;
        Ok(())
    }

    /// The mirror's configuration, if the host configured one.
    pub fn mirror_config(&self) -> Option<MirrorConfig> {
        self.mirror.lock().as_ref().map(|m| *m.config())
    }

    /// Where the mirror says page `pid`'s newest copy is (charged as
    /// [`MIRROR_LOOKUP_CYCLES`] PE cycles: two hash probes in controller
    /// DRAM). Fails if no mirror is configured or it lost track of the log.
    pub fn mirror_view(&mut self, pid: u64) -> Result<View, DeviceError> {
        self.charge_cycles(MIRROR_LOOKUP_CYCLES);
        let view = match self.mirror.lock().as_ref() {
            None => Err("no mirror is configured: the host sends MirrorConfigure first".to_string()),
            Some(m) => m.view(pid),
        };
        view.map_err(|e| self.fail(format!("page {pid}: {e}")))
    }

    /// Page `pid`'s mirror descriptor, Clean or Dirty (charged as
    /// [`PeCtx::mirror_view`]); fails as it does.
    pub fn mirror_descriptor(&mut self, pid: u64) -> Result<Option<crate::mirror::Descriptor>, DeviceError> {
        self.charge_cycles(MIRROR_LOOKUP_CYCLES);
        let d = match self.mirror.lock().as_ref() {
            None => Err("no mirror is configured: the host sends MirrorConfigure first".to_string()),
            Some(m) => m.lookup(pid),
        };
        d.map_err(|e| self.fail(format!("page {pid}: {e}")))
    }

    /// Counts a DMA read of a host page that found it changing
    /// (`Counters::host_page_retries`).
    pub fn count_host_page_retry(&mut self) {
        self.acc.host_page_retries += 1;
    }

    /// Reserves device DRAM for the rest of the execution (or until dropped).
    pub fn alloc(&mut self, bytes: u64) -> Result<Scratch, DeviceError> {
        let reservation = self.budget.reserve(bytes)?;
        Ok(Scratch { data: crate::memory::zeroed(bytes)?, _reservation: reservation })
    }

    /// Number of memory ranges the command passed.
    pub fn ranges(&self) -> usize {
        self.ranges.len()
    }

    pub fn range_len(&self, index: usize) -> Result<u64, DeviceError> {
        Ok(self.range(index)?.bytes.read().len() as u64)
    }

    fn range(&self, index: usize) -> Result<&Arc<Range>, DeviceError> {
        self.ranges
            .get(index)
            .ok_or_else(|| self.fail(format!("memory range {index} was not passed ({} given)", self.ranges.len())))
    }

    pub fn range_read(&mut self, index: usize, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        let range = self.range(index)?.clone();
        let bytes = range.bytes.read();
        check_span("range_read", offset, buf.len() as u64, bytes.len())?;
        buf.copy_from_slice(&bytes[offset as usize..offset as usize + buf.len()]);
        self.charge_memcpy(buf.len() as u64);
        Ok(())
    }

    pub fn range_write(&mut self, index: usize, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let range = self.range(index)?.clone();
        let mut bytes = range.bytes.write();
        check_span("range_write", offset, data.len() as u64, bytes.len())?;
        bytes[offset as usize..offset as usize + data.len()].copy_from_slice(data);
        self.charge_memcpy(data.len() as u64);
        Ok(())
    }

    /// Copies between two places in device DRAM.
    pub fn memcpy(&mut self, dst: &mut [u8], src: &[u8]) {
        dst.copy_from_slice(src);
        self.charge_memcpy(src.len() as u64);
    }

    fn charge_memcpy(&mut self, bytes: u64) {
        self.acc.demand_ps += bytes_ps(bytes, self.timing.memcpy_ps_per_byte);
    }

    /// Runs `f` as PE compute: its host CPU time x the profile's slowdown.
    pub fn compute<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let t0 = thread_cpu_ns();
        let r = f();
        let cpu_ns = thread_cpu_ns().saturating_sub(t0);
        self.acc.demand_ps += (cpu_ns as f64 * 1000.0 * self.timing.pe_slowdown).round() as u64;
        r
    }

    /// Charges `cycles` PE clock cycles (a documented per-operation cost).
    pub fn charge_cycles(&mut self, cycles: u64) {
        self.acc.demand_ps += self.cycles_ps(cycles);
    }

    /// The time `charge_cycles(cycles)` charges, for a program that charges
    /// the same operation many times (`charge_ps`): the same picoseconds
    /// without a multiplication and a rounding per charge.
    pub fn cycles_ps(&self, cycles: u64) -> u64 {
        (cycles as f64 * self.timing.pe_ps_per_cycle).round() as u64
    }

    /// Charges `ps` picoseconds of PE compute, as [`PeCtx::cycles_ps`] gave them.
    #[inline(always)]
    pub fn charge_ps(&mut self, ps: u64) {
        self.acc.demand_ps += ps;
    }
}

/// PE cycles one mirror lookup is charged (a hash probe and a descriptor
/// load in controller DRAM).
pub const MIRROR_LOOKUP_CYCLES: u64 = 100;

/// Flash placement: consecutive pages go round-robin over channels, then
/// over the chips of a channel. Returns (channel, global chip index).
#[inline]
pub(crate) fn flash_place(ppn: u64, channels: u64, chips_per_channel: u64) -> (usize, usize) {
    let ch = ppn % channels;
    let chip = (ppn / channels) % chips_per_channel;
    (ch as usize, (ch * chips_per_channel + chip) as usize)
}

/// CPU time of the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
