//! How one command runs (on the submitting thread or a command worker): fault injection, the I/O and
//! memory commands, and the timeline reservations (link, medium channels and
//! chips) that give each command its modelled end. Program executions are
//! `execute.rs`'s.

use std::sync::atomic::Ordering;

use crate::clock::ClockKind;
use crate::command::{Command, Completion, PROGRAM_SLOTS, RUN_BYTES_MAX, Reply, SECTOR_BYTES};
use crate::counters::{CQE_BYTES, Cells};
use crate::device::{Faults, Inner, Slot};
use crate::error::DeviceError;
use crate::memory::check_span;
use crate::mirror::{Mirror, MirrorConfig, MirrorKind};
use crate::pe::flash_place;
use crate::timing::{MediumTiming, bytes_ps};

/// Bytes of the identify structure returned to the host.
const IDENTIFY_BYTES: u64 = 4096;

impl Inner {
    pub(crate) fn process(&self, id: u64, cmd: Command, submitted_ps: u64) -> Completion {
        let kind = cmd.kind();
        let outcome = match self.inject(&cmd) {
            Some(e) => Err(e),
            None => self.run(cmd, submitted_ps),
        };
        let (result, completed_ps) = match outcome {
            Ok((reply, end_ps)) => (Ok(reply), end_ps + self.timing.link_latency_ps),
            Err(e) => (Err(e), submitted_ps + self.timing.link_latency_ps),
        };
        Cells::count(&self.cells, |c| &c.link_bytes_to_host, CQE_BYTES);
        Cells::count(&self.cells, |c| &c.completions, 1);
        let late = self.clock.kind() == ClockKind::Real && self.clock.wall_ps() > completed_ps;
        if late {
            Cells::count(&self.cells, |c| &c.late_completions, 1);
        }
        Completion { id, kind, result, submitted_ps, completed_ps, late }
    }

    /// The fault `faults` injects into this command, if any (a torn write
    /// has written its sectors when this returns).
    fn inject(&self, cmd: &Command) -> Option<DeviceError> {
        if self.faults == Faults::default() && !self.medium.dead() {
            return None;
        }
        let n = self.commands_seen.fetch_add(1, Ordering::SeqCst);
        if self.crashed.load(Ordering::SeqCst) || self.medium.dead() {
            return Some(DeviceError::InjectedFault { command: n });
        }
        if let Some((at, sectors)) = self.faults.torn_write
            && n == at
        {
            self.crashed.store(true, Ordering::SeqCst);
            if let Command::PageWrite { ppn, data } = cmd
                && let Ok(addr) = self.page_addr(*ppn)
            {
                let keep = (sectors as usize * SECTOR_BYTES as usize).min(data.len());
                // Whole sectors, each atomic: the tear falls between sectors.
                let _ = self.medium.write(addr, &data[..keep]);
            }
            return Some(DeviceError::InjectedFault { command: n });
        }
        if self.faults.fail_from.is_some_and(|f| n >= f) {
            self.crashed.store(true, Ordering::SeqCst);
            return Some(DeviceError::InjectedFault { command: n });
        }
        None
    }

    /// Executes one command: the real work, and its end on the model's clock
    /// (before the completion's link latency).
    fn run(&self, cmd: Command, t0: u64) -> Result<(Reply, u64), DeviceError> {
        match cmd {
            Command::Identify => {
                let end = self.to_host(t0, IDENTIFY_BYTES);
                Ok((Reply::Identify(Box::new(self.info())), end))
            }
            Command::PageRead { ppn, host_addr } => {
                let done = self.page_read(t0, ppn)?;
                if let Some(m) = self.mirror.lock().as_mut() {
                    m.on_page_read(ppn, host_addr);
                }
                Ok(done)
            }
            Command::PageReadRun { first_ppn, pages } => self.page_read_run(t0, first_ppn, pages),
            Command::Read { addr, len } => self.read(t0, addr, u64::from(len)),
            Command::PageWrite { ppn, data } => self.page_write(t0, ppn, data),
            Command::MirrorConfigure { file_first_ppn, file_pages, log_first_ppn, log_pages, frames, log_lsn } => {
                let page_bytes = self.page_bytes();
                let config = MirrorConfig {
                    kind: MirrorKind::Kv,
                    frame_bytes: page_bytes,
                    file_first_ppn,
                    file_pages,
                    log_first_ppn,
                    log_pages,
                    frames,
                    log_lsn,
                    page_bytes,
                };
                self.mirror_configure(t0, config)
            }
            Command::MirrorConfigureHeap { log_first_ppn, log_pages, frames, frame_bytes, log_lsn } => {
                let page_bytes = self.page_bytes();
                let config = MirrorConfig {
                    kind: MirrorKind::Heap,
                    frame_bytes,
                    file_first_ppn: 0,
                    file_pages: 0,
                    log_first_ppn,
                    log_pages,
                    frames,
                    log_lsn,
                    page_bytes,
                };
                self.mirror_configure(t0, config)
            }
            Command::Flush => {
                self.medium.flush()?;
                Ok((Reply::Done, t0))
            }
            Command::MemoryRangeCreate { bytes } => Ok((Reply::Range(self.ranges.create(bytes)?), t0)),
            Command::MemoryRangeDelete { range } => {
                self.ranges.delete(range)?;
                Ok((Reply::Done, t0))
            }
            Command::MemoryWrite { range, offset, data } => {
                let r = self.ranges.get(range)?;
                let mut bytes = r.bytes.write();
                check_span("memory_write", offset, data.len() as u64, bytes.len())?;
                bytes[offset as usize..offset as usize + data.len()].copy_from_slice(&data);
                Ok((Reply::Done, self.to_device(t0, data.len() as u64)))
            }
            Command::MemoryRead { range, offset, len } => {
                let r = self.ranges.get(range)?;
                let bytes = r.bytes.read();
                check_span("memory_read", offset, len, bytes.len())?;
                let data = bytes[offset as usize..(offset + len) as usize].to_vec();
                Ok((Reply::Data(data), self.to_host(t0, len)))
            }
            Command::ProgramLoad { slot, name } => self.program_load(t0, slot, name),
            Command::ProgramActivate { slot, active } => {
                let mut s = self.slot(slot)?;
                if s.program.is_none() {
                    return Err(DeviceError::SlotNotReady { slot, state: "empty" });
                }
                s.active = active;
                Ok((Reply::Done, t0))
            }
            Command::Execute { slot, pes, params, ranges } => self.execute(t0, slot, pes, params, ranges),
        }
    }

    fn page_bytes(&self) -> u64 {
        u64::from(self.medium.superblock().page_bytes)
    }

    fn page_read(&self, t0: u64, ppn: u64) -> Result<(Reply, u64), DeviceError> {
        let page = self.page_bytes();
        let addr = self.page_addr(ppn)?;
        let mut data = vec![0u8; page as usize];
        self.medium.read(addr, &mut data).map_err(|bad| self.medium.media_error(bad))?;
        let ready = self.medium_bulk(t0, addr, page, false);
        self.count_medium(false, 1, page);
        let end = self.to_host(ready, page);
        Ok((Reply::Data(data), end))
    }

    /// Consecutive pages, each timed as its own page read from `t0` (the
    /// medium reads in parallel where its channels and chips allow, the
    /// link carries the pages one after another): the run completes when
    /// its last page has crossed. Nothing is returned unless every page
    /// reads.
    fn page_read_run(&self, t0: u64, first_ppn: u64, pages: u32) -> Result<(Reply, u64), DeviceError> {
        let page = self.page_bytes();
        if pages == 0 || u64::from(pages) * page > RUN_BYTES_MAX {
            return Err(DeviceError::InvalidCommand {
                what: format!(
                    "page_read_run of {pages} pages: read 1 to {} pages of {page} bytes ({RUN_BYTES_MAX} bytes) per command",
                    (RUN_BYTES_MAX / page).max(1)
                ),
            });
        }
        let last = first_ppn.checked_add(u64::from(pages) - 1).ok_or_else(|| DeviceError::OutOfRange {
            what: format!("pages {first_ppn}+{pages} overflow the page numbers"),
        })?;
        self.page_addr(last)?;
        let mut data = Vec::with_capacity(pages as usize);
        for ppn in first_ppn..=last {
            let mut buf = vec![0u8; page as usize];
            self.medium.read(self.page_addr(ppn)?, &mut buf).map_err(|bad| self.medium.media_error(bad))?;
            data.push(buf);
        }
        // As `pages` page reads submitted together: each page's medium
        // read, then its transfer, in page order.
        let mut end = t0;
        for ppn in first_ppn..=last {
            let ready = self.medium_bulk(t0, ppn * page, page, false);
            end = end.max(self.to_host(ready, page));
        }
        self.count_medium(false, u64::from(pages), u64::from(pages) * page);
        Ok((Reply::Pages(data), end))
    }

    /// A read of whole sectors within one page.
    fn read(&self, t0: u64, addr: u64, len: u64) -> Result<(Reply, u64), DeviceError> {
        let page = self.page_bytes();
        if len == 0
            || !addr.is_multiple_of(SECTOR_BYTES)
            || !len.is_multiple_of(SECTOR_BYTES)
            || addr / page != (addr + len - 1) / page
        {
            return Err(DeviceError::InvalidCommand {
                what: format!(
                    "read of {len} bytes at {addr}: use whole {SECTOR_BYTES}-byte sectors within one {page}-byte page"
                ),
            });
        }
        self.medium.check_range(addr, len)?;
        let mut data = vec![0u8; len as usize];
        self.medium.read(addr, &mut data).map_err(|bad| self.medium.media_error(bad))?;
        let ready = self.medium_bulk(t0, addr, len, false);
        self.count_medium(false, 1, len);
        let end = self.to_host(ready, len);
        Ok((Reply::Data(data), end))
    }

    fn page_write(&self, t0: u64, ppn: u64, data: Vec<u8>) -> Result<(Reply, u64), DeviceError> {
        let page = self.page_bytes();
        let addr = self.page_addr(ppn)?;
        if data.len() as u64 != page {
            return Err(DeviceError::InvalidCommand {
                what: format!("page_write carries {} bytes; pages are {page} bytes", data.len()),
            });
        }
        if self.medium.read_only() {
            return Err(DeviceError::ReadOnly {
                path: self.medium.path().to_owned(),
                what: format!("write page {ppn}"),
            });
        }
        let arrived = self.to_device(t0, page);
        self.medium.write(addr, &data)?;
        if let Some(m) = self.mirror.lock().as_mut() {
            m.on_page_write(ppn, &data);
        }
        let end = self.medium_bulk(arrived, addr, page, true);
        self.count_medium(true, 1, page);
        Ok((Reply::Done, end))
    }

    /// `MirrorConfigure`: a new mirror of the host pool (`mirror.rs`).
    fn mirror_configure(&self, t0: u64, c: MirrorConfig) -> Result<(Reply, u64), DeviceError> {
        let pages = self.medium.capacity_bytes() / c.page_bytes;
        for (what, first, n) in [("file", c.file_first_ppn, c.file_pages), ("log", c.log_first_ppn, c.log_pages)] {
            if first.checked_add(n).is_none_or(|end| end > pages) {
                return Err(DeviceError::OutOfRange {
                    what: format!("mirror_configure: the {what}'s pages {first}+{n}; the device has pages 0..{pages}"),
                });
            }
        }
        *self.mirror.lock() = Some(Mirror::new(c)?);
        Ok((Reply::Done, t0))
    }

    fn program_load(&self, t0: u64, slot: u32, name: String) -> Result<(Reply, u64), DeviceError> {
        let program = *self.programs.get(&name).ok_or_else(|| DeviceError::NoSuchProgram {
            name: name.clone(),
            known: self.programs.names().join(", "),
        })?;
        *self.slot(slot)? = Slot { program: Some(program), active: false };
        Ok((Reply::Done, self.to_device(t0, name.len() as u64)))
    }

    pub(crate) fn slot(&self, slot: u32) -> Result<parking_lot::MappedMutexGuard<'_, Slot>, DeviceError> {
        if slot >= PROGRAM_SLOTS {
            return Err(DeviceError::OutOfRange {
                what: format!("program slot {slot}; the device has slots 0..{PROGRAM_SLOTS}"),
            });
        }
        Ok(parking_lot::MutexGuard::map(self.slots.lock(), |s| &mut s[slot as usize]))
    }

    fn page_addr(&self, ppn: u64) -> Result<u64, DeviceError> {
        let page = u64::from(self.medium.superblock().page_bytes);
        let pages = self.medium.capacity_bytes() / page;
        if ppn >= pages {
            return Err(DeviceError::OutOfRange { what: format!("page {ppn}; the device has pages 0..{pages}") });
        }
        Ok(ppn * page)
    }

    pub(crate) fn to_device(&self, at: u64, bytes: u64) -> u64 {
        Cells::count(&self.cells, |c| &c.link_bytes_to_device, bytes);
        self.timeline.lock().to_device.reserve(at, self.timing.link_ps(bytes))
    }

    fn to_host(&self, at: u64, bytes: u64) -> u64 {
        Cells::count(&self.cells, |c| &c.link_bytes_to_host, bytes);
        self.timeline.lock().to_host.reserve(at, self.timing.link_ps(bytes))
    }

    pub(crate) fn count_medium(&self, write: bool, accesses: u64, bytes: u64) {
        let c = &self.cells;
        if write {
            Cells::count(c, |c| &c.medium_writes, accesses);
            Cells::count(c, |c| &c.medium_bytes_written, bytes);
        } else {
            Cells::count(c, |c| &c.medium_reads, accesses);
            Cells::count(c, |c| &c.medium_bytes_read, bytes);
        }
    }

    /// A controller (DMA) transfer of `len` bytes at `addr`: returns when the
    /// data is in the controller (read) or durable on the medium (write).
    fn medium_bulk(&self, at: u64, addr: u64, len: u64, write: bool) -> u64 {
        let mut tl = self.timeline.lock();
        match self.timing.medium {
            MediumTiming::Nvm {
                channels,
                interleave_shift,
                read_latency_ps,
                write_latency_ps,
                occupancy_ps,
                ps_per_byte,
                ..
            } => {
                let chunk = 1u64 << interleave_shift;
                let mut ready = at;
                let mut a = addr;
                while a < addr + len {
                    let n = (a / chunk + 1) * chunk - a;
                    let n = n.min(addr + len - a);
                    let ch = ((a >> interleave_shift) % channels) as usize;
                    let end = tl.channels[ch].reserve(at, bytes_ps(n, ps_per_byte).max(occupancy_ps));
                    ready = ready.max(end);
                    a += n;
                }
                ready + if write { write_latency_ps } else { read_latency_ps }
            }
            MediumTiming::Flash { channels, chips_per_channel, read_ps, program_ps, ps_per_byte, .. } => {
                let page = u64::from(self.medium.superblock().page_bytes);
                debug_assert!(len > 0 && addr / page == (addr + len - 1) / page, "flash transfers stay in one page");
                let ppn = addr / page;
                let (ch, chip) = flash_place(ppn, channels, chips_per_channel);
                let xfer = bytes_ps(len, ps_per_byte);
                if write {
                    tl.flash_program(at, ch, chip, program_ps, xfer)
                } else {
                    tl.flash_read(at, ch, chip, read_ps, xfer)
                }
            }
        }
    }
}
