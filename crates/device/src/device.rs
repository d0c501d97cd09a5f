//! The device: command processing, queue pairs and program execution.
//!
//! ```text
//!  host thread                      device
//!  QueuePair::submit ──SQE──► work channel ──► command worker ──► run(cmd)
//!       │                                         │  reserve timeline (link, channels, chips, PEs)
//!       │                                         │  do the real work on the medium / DRAM
//!  QueuePair::wait ◄──CQE── completion channel ◄──┘  completion with modelled time
//!       └── hold until the modelled time (real clock) or advance to it (virtual)
//! ```
//!
//! Commands from all queue pairs are executed by a small pool of command
//! workers; program executions take the PEs exclusively (one at a time) and
//! spread their PEs over the host's cores.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::clock::{Clock, ClockKind};
use crate::command::{
    Command, Completion, DeviceInfo, ExecuteReport, PARAMS_BYTES_MAX, PROGRAM_SLOTS, Reply, SECTOR_BYTES, Snapshot,
};
use crate::counters::{CQE_BYTES, Cells, Counters, SQE_BYTES};
use crate::error::DeviceError;
use crate::medium::Medium;
use crate::memory::{Budget, Ranges, check_span};
use crate::pe::{PeAccount, PeCtx, Program, ProgramLibrary, flash_place};
use crate::profile::Profile;
use crate::timing::{MediumTiming, Timeline, Timing, bytes_ps};

/// The image's file name inside a database directory.
pub const IMAGE_FILE: &str = "device.img";

/// New images hold the profile's capacity, but at most this much unless the
/// caller asks for more: images are reserved on disk in full.
pub const DEFAULT_CAPACITY_MAX: u64 = 4 << 30;

/// Bytes of the identify structure returned to the host.
const IDENTIFY_BYTES: u64 = 4096;

#[derive(Debug, Clone)]
pub struct DeviceOptions {
    pub clock: ClockKind,
    /// Threads that process commands (not PEs).
    pub command_workers: usize,
    /// Host threads that PEs are spread over during an execution.
    pub pe_threads: usize,
    pub programs: ProgramLibrary,
    /// Faults to inject (crash testing); none by default.
    pub faults: Faults,
}

/// Faults the device injects, counted in commands since it was opened
/// (every command counts, reads included). After the first injected fault
/// every later command fails too, as after a power loss: what reached the
/// medium until then is the crash image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Command number `n` (0-based) and every command after it fail.
    pub fail_from: Option<u64>,
    /// If command number `n` is a page write, only its first `sectors`
    /// 512-byte sectors reach the medium (a torn write), and it and every
    /// later command fail. Any other command there just fails.
    pub torn_write: Option<(u64, u32)>,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        DeviceOptions {
            clock: ClockKind::Virtual,
            command_workers: 1,
            pe_threads: cores,
            programs: ProgramLibrary::builtin(),
            faults: Faults::default(),
        }
    }
}

impl DeviceOptions {
    /// The virtual clock gets one command worker, so that commands reserve
    /// the timeline in submission order and modelled times repeat; the real
    /// clock gets two. Program executions have a worker of their own on
    /// either clock (see `Device::open`).
    pub fn with_clock(clock: ClockKind) -> Self {
        let command_workers = match clock {
            ClockKind::Virtual => 1,
            ClockKind::Real => 2,
        };
        DeviceOptions { clock, command_workers, ..DeviceOptions::default() }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    program: Option<Program>,
    active: bool,
}

struct Inner {
    profile: Profile,
    timing: Timing,
    clock: Clock,
    medium: Medium,
    budget: Arc<Budget>,
    ranges: Ranges,
    programs: ProgramLibrary,
    slots: Mutex<Vec<Slot>>,
    timeline: Mutex<Timeline>,
    exec: Mutex<()>,
    cells: Cells,
    pe_threads: usize,
    next_id: AtomicU64,
    /// The host's lock table, shared through coherent memory.
    lock_table: parking_lot::RwLock<Option<Arc<ndpdb_locktable::LockTable>>>,
    faults: Faults,
    /// Commands seen (for `faults`), and whether a fault has struck.
    commands_seen: AtomicU64,
    crashed: std::sync::atomic::AtomicBool,
}

/// Where submissions go: the command workers, or the execution worker.
#[derive(Clone)]
struct Queues {
    io: Sender<Work>,
    exec: Sender<Work>,
}

struct Work {
    id: u64,
    cmd: Command,
    submitted_ps: u64,
    cq: Sender<Completion>,
}

/// An emulated computational-storage device on an image in a database directory.
pub struct Device {
    inner: Arc<Inner>,
    work: Arc<Mutex<Option<Queues>>>,
    workers: Vec<JoinHandle<()>>,
    dir: PathBuf,
}

impl Device {
    /// Creates a new image in `dir` (which may not exist yet).
    pub fn create(
        dir: &Path,
        profile: Profile,
        capacity_bytes: Option<u64>,
        opts: DeviceOptions,
    ) -> Result<Device, DeviceError> {
        std::fs::create_dir_all(dir).map_err(|e| DeviceError::io(dir, e))?;
        let capacity = capacity_bytes.unwrap_or_else(|| profile.capacity_bytes().min(DEFAULT_CAPACITY_MAX));
        let medium = Medium::create(&dir.join(IMAGE_FILE), &profile, capacity)?;
        Ok(Device::start(dir, profile, medium, opts))
    }

    /// Opens the image in `dir`; never creates or rewrites it.
    pub fn open(dir: &Path, profile: Profile, opts: DeviceOptions) -> Result<Device, DeviceError> {
        let medium = Medium::open(&dir.join(IMAGE_FILE), &profile)?;
        Ok(Device::start(dir, profile, medium, opts))
    }

    /// The profile name recorded in the image in `dir` (reads only its
    /// superblock; takes no lock).
    pub fn image_profile(dir: &Path) -> Result<String, DeviceError> {
        use std::io::Read;
        let path = dir.join(IMAGE_FILE);
        let mut f = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(DeviceError::ImageMissing { path }),
            Err(e) => return Err(DeviceError::io(&path, e)),
        };
        let mut header = Vec::new();
        f.by_ref()
            .take(ndpdb_format::image::HEADER_BYTES as u64)
            .read_to_end(&mut header)
            .map_err(|e| DeviceError::io(&path, e))?;
        let sb = ndpdb_format::image::Superblock::decode(&header)
            .map_err(|source| DeviceError::ImageCorrupt { path, source })?;
        Ok(sb.profile_name)
    }

    /// Opens the image in `dir`, creating it on first use. Returns whether it
    /// was created.
    pub fn open_or_create(
        dir: &Path,
        profile: Profile,
        capacity_bytes: Option<u64>,
        opts: DeviceOptions,
    ) -> Result<(Device, bool), DeviceError> {
        if dir.join(IMAGE_FILE).exists() {
            Ok((Device::open(dir, profile, opts)?, false))
        } else {
            Ok((Device::create(dir, profile, capacity_bytes, opts)?, true))
        }
    }

    fn start(dir: &Path, profile: Profile, medium: Medium, opts: DeviceOptions) -> Device {
        let timing = Timing::from_profile(&profile);
        let pes = profile.pe.count as usize;
        let budget = Budget::new(profile.dram.ndp_mib * (1 << 20));
        let inner = Arc::new(Inner {
            timeline: Mutex::new(Timeline::new(&timing, pes)),
            clock: Clock::new(opts.clock),
            ranges: Ranges::new(budget.clone()),
            budget,
            medium,
            programs: opts.programs,
            slots: Mutex::new(vec![Slot::default(); PROGRAM_SLOTS as usize]),
            exec: Mutex::new(()),
            cells: Cells { pe_busy_ps: Mutex::new(vec![0; pes]), ..Cells::default() },
            pe_threads: opts.pe_threads.max(1),
            next_id: AtomicU64::new(1),
            lock_table: parking_lot::RwLock::new(None),
            faults: opts.faults,
            commands_seen: AtomicU64::new(0),
            crashed: std::sync::atomic::AtomicBool::new(false),
            timing,
            profile,
        });
        let (tx, rx) = crossbeam_channel::bounded::<Work>(inner.profile.queues.depth as usize);
        let (exec_tx, exec_rx) = crossbeam_channel::bounded::<Work>(inner.profile.queues.depth as usize);
        // Command workers take every command but program executions, which
        // have a worker of their own: a long execution (an update-NDP call
        // waiting for a host transaction's lock) never holds up the page
        // commands that transaction needs to commit.
        let spawn = |name: String, rx: Receiver<Work>| {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name(name)
                .spawn(move || {
                    for w in rx {
                        let c = inner.process(w.id, w.cmd, w.submitted_ps);
                        let _ = w.cq.send(c);
                    }
                })
                .expect("spawn device worker")
        };
        let mut workers: Vec<JoinHandle<()>> =
            (0..opts.command_workers.max(1)).map(|i| spawn(format!("ndpdb-device-{i}"), rx.clone())).collect();
        workers.push(spawn("ndpdb-device-exec".into(), exec_rx));
        let queues = Queues { io: tx, exec: exec_tx };
        Device { inner, work: Arc::new(Mutex::new(Some(queues))), workers, dir: dir.to_owned() }
    }

    /// A new submission/completion queue pair. One host thread uses it.
    pub fn queue_pair(&self) -> QueuePair {
        let depth = self.inner.profile.queues.depth as usize;
        let (cq_tx, cq_rx) = crossbeam_channel::bounded(depth);
        QueuePair {
            inner: self.inner.clone(),
            work: self.work.clone(),
            cq_tx,
            cq_rx,
            depth,
            outstanding: 0,
            done: Vec::new(),
        }
    }

    pub fn counters(&self) -> Counters {
        Counters::read(&self.inner.cells)
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot { now_ps: self.now_ps(), counters: self.counters() }
    }

    /// Host compute on the model's clock: on the virtual clock the host's time
    /// advances by `cpu_ns` (measured host CPU time, not scaled); on the real
    /// clock the time has passed already and nothing changes. Host-side
    /// experiments call this for work that runs between device commands, so
    /// that modelled times of host-only and NDP execution compare.
    pub fn charge_host(&self, cpu_ns: u64) {
        if self.inner.clock.kind() == ClockKind::Virtual {
            let now = self.inner.clock.now_ps();
            self.inner.clock.hold_until(now + cpu_ns * 1000);
        }
    }

    /// The host's time on the model's clock, in picoseconds.
    pub fn now_ps(&self) -> u64 {
        self.inner.clock.now_ps()
    }

    pub fn profile(&self) -> &Profile {
        &self.inner.profile
    }

    /// Shares the host's lock table with the device's PEs through coherent
    /// memory (ccSLT). Needs a profile with a `[coherent]` interconnect.
    pub fn attach_lock_table(&self, table: Arc<ndpdb_locktable::LockTable>) -> Result<(), DeviceError> {
        if self.inner.profile.coherent.is_none() {
            return Err(DeviceError::Unsupported {
                what: format!(
                    "profile {} has no coherent interconnect (no [coherent] section), so the device cannot share \
                     the host's lock table; use a profile with one (u280-nvm, ideal) or add the section",
                    self.inner.profile.name
                ),
            });
        }
        *self.inner.lock_table.write() = Some(table);
        Ok(())
    }

    /// The lock table attached with [`Device::attach_lock_table`].
    pub fn lock_table(&self) -> Option<Arc<ndpdb_locktable::LockTable>> {
        self.inner.lock_table.read().clone()
    }

    pub fn clock(&self) -> ClockKind {
        self.inner.clock.kind()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn info(&self) -> DeviceInfo {
        self.inner.info()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.work.lock().take();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        let _ = self.inner.medium.flush();
    }
}

/// A submission queue and its completion queue (NVMe I/O queue pair).
pub struct QueuePair {
    inner: Arc<Inner>,
    work: Arc<Mutex<Option<Queues>>>,
    cq_tx: Sender<Completion>,
    cq_rx: Receiver<Completion>,
    depth: usize,
    outstanding: usize,
    done: Vec<Completion>,
}

impl QueuePair {
    /// Submits a command; blocks while the queue holds `depth` commands.
    pub fn submit(&mut self, cmd: Command) -> Result<u64, DeviceError> {
        while self.outstanding >= self.depth {
            let c = self.recv()?;
            self.done.push(c);
        }
        let queues = self.work.lock().clone().ok_or(DeviceError::ShutDown)?;
        let sender = if matches!(cmd, Command::Execute { .. }) { queues.exec } else { queues.io };
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let kind = cmd.kind();
        let work = Work { id, cmd, submitted_ps: self.inner.clock.now_ps(), cq: self.cq_tx.clone() };
        sender.send(work).map_err(|_| DeviceError::ShutDown)?;
        Cells::add(&self.inner.cells.link_bytes_to_device, SQE_BYTES);
        *self.inner.cells.commands.lock().entry(kind).or_insert(0) += 1;
        self.outstanding += 1;
        Ok(id)
    }

    fn recv(&mut self) -> Result<Completion, DeviceError> {
        let c = self.cq_rx.recv().map_err(|_| DeviceError::ShutDown)?;
        self.outstanding -= 1;
        Ok(c)
    }

    /// Waits for command `id` and returns its completion once it is due.
    pub fn wait(&mut self, id: u64) -> Result<Completion, DeviceError> {
        let c = loop {
            if let Some(i) = self.done.iter().position(|c| c.id == id) {
                break self.done.swap_remove(i);
            }
            if self.outstanding == 0 {
                return Err(DeviceError::InvalidCommand {
                    what: format!("command {id} is not outstanding on this queue pair"),
                });
            }
            let c = self.recv()?;
            self.done.push(c);
        };
        self.inner.clock.hold_until(c.completed_ps);
        Ok(c)
    }

    /// The next completion in modelled-time order among those computed, or
    /// None when nothing is outstanding.
    pub fn reap(&mut self) -> Result<Option<Completion>, DeviceError> {
        if self.done.is_empty() {
            if self.outstanding == 0 {
                return Ok(None);
            }
            let c = self.recv()?;
            self.done.push(c);
        }
        while let Ok(c) = self.cq_rx.try_recv() {
            self.outstanding -= 1;
            self.done.push(c);
        }
        let i = (0..self.done.len()).min_by_key(|&i| self.done[i].completed_ps).expect("not empty");
        let c = self.done.swap_remove(i);
        self.inner.clock.hold_until(c.completed_ps);
        Ok(Some(c))
    }

    /// Submits and waits: the command's reply.
    pub fn call(&mut self, cmd: Command) -> Result<Reply, DeviceError> {
        self.call_timed(cmd)?.result
    }

    /// Submits and waits: the whole completion, with its modelled times.
    pub fn call_timed(&mut self, cmd: Command) -> Result<Completion, DeviceError> {
        let id = self.submit(cmd)?;
        self.wait(id)
    }

    pub fn outstanding(&self) -> usize {
        self.outstanding
    }
}

impl Inner {
    fn process(&self, id: u64, cmd: Command, submitted_ps: u64) -> Completion {
        let kind = cmd.kind();
        let outcome = match self.inject(&cmd) {
            Some(e) => Err(e),
            None => self.run(cmd, submitted_ps),
        };
        let (result, completed_ps) = match outcome {
            Ok((reply, end_ps)) => (Ok(reply), end_ps + self.timing.link_latency_ps),
            Err(e) => (Err(e), submitted_ps + self.timing.link_latency_ps),
        };
        Cells::add(&self.cells.link_bytes_to_host, CQE_BYTES);
        Cells::add(&self.cells.completions, 1);
        let late = self.clock.kind() == ClockKind::Real && self.clock.wall_ps() > completed_ps;
        if late {
            Cells::add(&self.cells.late_completions, 1);
        }
        Completion { id, kind, result, submitted_ps, completed_ps, late }
    }

    /// The fault `faults` injects into this command, if any (a torn write
    /// has written its sectors when this returns).
    fn inject(&self, cmd: &Command) -> Option<DeviceError> {
        if self.faults == Faults::default() {
            return None;
        }
        let n = self.commands_seen.fetch_add(1, Ordering::SeqCst);
        if self.crashed.load(Ordering::SeqCst) {
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
                self.medium.write(addr, &data[..keep]);
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
        let page = u64::from(self.medium.superblock().page_bytes);
        match cmd {
            Command::Identify => {
                let end = self.to_host(t0, IDENTIFY_BYTES);
                Ok((Reply::Identify(Box::new(self.info())), end))
            }
            Command::PageRead { ppn } => {
                let addr = self.page_addr(ppn)?;
                let mut data = vec![0u8; page as usize];
                self.medium.read(addr, &mut data);
                let ready = self.medium_bulk(t0, addr, page, false);
                self.count_medium(false, 1, page);
                let end = self.to_host(ready, page);
                Ok((Reply::Data(data), end))
            }
            Command::Read { addr, len } => {
                let len = u64::from(len);
                if len == 0
                    || addr % SECTOR_BYTES != 0
                    || len % SECTOR_BYTES != 0
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
                self.medium.read(addr, &mut data);
                let ready = self.medium_bulk(t0, addr, len, false);
                self.count_medium(false, 1, len);
                let end = self.to_host(ready, len);
                Ok((Reply::Data(data), end))
            }
            Command::PageWrite { ppn, data } => {
                let addr = self.page_addr(ppn)?;
                if data.len() as u64 != page {
                    return Err(DeviceError::InvalidCommand {
                        what: format!("page_write carries {} bytes; pages are {page} bytes", data.len()),
                    });
                }
                let arrived = self.to_device(t0, page);
                self.medium.write(addr, &data);
                let end = self.medium_bulk(arrived, addr, page, true);
                self.count_medium(true, 1, page);
                Ok((Reply::Done, end))
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
            Command::ProgramLoad { slot, name } => {
                let program = *self.programs.get(&name).ok_or_else(|| DeviceError::NoSuchProgram {
                    name: name.clone(),
                    known: self.programs.names().join(", "),
                })?;
                *self.slot(slot)? = Slot { program: Some(program), active: false };
                Ok((Reply::Done, self.to_device(t0, name.len() as u64)))
            }
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

    fn slot(&self, slot: u32) -> Result<parking_lot::MappedMutexGuard<'_, Slot>, DeviceError> {
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

    fn to_device(&self, at: u64, bytes: u64) -> u64 {
        Cells::add(&self.cells.link_bytes_to_device, bytes);
        Timeline::reserve(&mut self.timeline.lock().to_device, at, self.timing.link_ps(bytes))
    }

    fn to_host(&self, at: u64, bytes: u64) -> u64 {
        Cells::add(&self.cells.link_bytes_to_host, bytes);
        Timeline::reserve(&mut self.timeline.lock().to_host, at, self.timing.link_ps(bytes))
    }

    fn count_medium(&self, write: bool, accesses: u64, bytes: u64) {
        let c = &self.cells;
        if write {
            Cells::add(&c.medium_writes, accesses);
            Cells::add(&c.medium_bytes_written, bytes);
        } else {
            Cells::add(&c.medium_reads, accesses);
            Cells::add(&c.medium_bytes_read, bytes);
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
                    let end = Timeline::reserve(&mut tl.channels[ch], at, bytes_ps(n, ps_per_byte).max(occupancy_ps));
                    ready = ready.max(end);
                    a += n;
                }
                ready + if write { write_latency_ps } else { read_latency_ps }
            }
            MediumTiming::Flash { channels, chips_per_channel, read_ps, program_ps, ps_per_byte, .. } => {
                let ppn = addr / u64::from(self.medium.superblock().page_bytes);
                let (ch, chip) = flash_place(ppn, channels, chips_per_channel);
                let xfer = bytes_ps(len, ps_per_byte);
                if write {
                    let start = at.max(tl.channels[ch]).max(tl.chips[chip]);
                    tl.channels[ch] = start + xfer;
                    tl.chips[chip] = start + xfer + program_ps;
                    start + xfer + program_ps
                } else {
                    let sensed = at.max(tl.chips[chip]) + read_ps;
                    let start = sensed.max(tl.channels[ch]);
                    tl.channels[ch] = start + xfer;
                    tl.chips[chip] = start + xfer;
                    start + xfer
                }
            }
        }
    }

    fn execute(
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
        // them, then report the first PE's failure.
        let report = self.settle(program, start, &accounts);
        if let Some(e) = failures.into_iter().flatten().next() {
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
        let threads = (pes as usize).min(self.pe_threads);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    loop {
                        let pe = next.fetch_add(1, Ordering::Relaxed) as u32;
                        if pe >= pes {
                            break;
                        }
                        let mut ctx = PeCtx::new(
                            pe,
                            pes,
                            program.name,
                            params,
                            ranges,
                            &self.medium,
                            &self.timing,
                            &self.budget,
                            lock_table.as_deref(),
                        );
                        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| (program.run)(&mut ctx)));
                        let failure = match outcome {
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
        let mut sum_into = |busy: &mut Vec<u64>, name: &str, demand: &dyn Fn(&PeAccount) -> &Vec<u64>| {
            for (r, b) in busy.iter_mut().enumerate() {
                let d: u64 = accounts.iter().map(|a| demand(a)[r]).sum();
                if d == 0 {
                    continue;
                }
                *b = start.max(*b) + d;
                if *b > end {
                    end = *b;
                    bottleneck = format!("{name} {r}");
                }
            }
        };
        sum_into(&mut tl.channels, "channel", &|a| &a.channel_ps);
        sum_into(&mut tl.chips, "chip", &|a| &a.chip_ps);
        for b in tl.pes[..accounts.len()].iter_mut() {
            *b = end;
        }
        drop(tl);
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
        };
        let mut busy = self.cells.pe_busy_ps.lock();
        for (i, a) in accounts.iter().enumerate() {
            busy[i] += a.demand_ps;
            report.medium_reads += a.medium_reads;
            report.medium_bytes_read += a.medium_bytes_read;
            report.medium_writes += a.medium_writes;
            report.medium_bytes_written += a.medium_bytes_written;
            Cells::add(&self.cells.coherent_local_hits, a.coherent_local_hits);
            Cells::add(&self.cells.coherent_remote, a.coherent_remote);
        }
        self.count_medium(false, report.medium_reads, report.medium_bytes_read);
        self.count_medium(true, report.medium_writes, report.medium_bytes_written);
        report
    }

    fn info(&self) -> DeviceInfo {
        let sb = self.medium.superblock();
        DeviceInfo {
            profile: self.profile.name.clone(),
            medium_kind: sb.medium_kind.name(),
            capacity_bytes: sb.capacity_bytes,
            page_bytes: sb.page_bytes,
            channels: self.profile.channels(),
            chips_per_channel: self.profile.chips_per_channel(),
            pes: self.profile.pe.count,
            dram_ndp_bytes: self.profile.dram.ndp_mib << 20,
            dram_in_use_bytes: self.budget.used(),
            queue_depth: self.profile.queues.depth,
            clock: self.clock.kind().name(),
            programs: self.programs.names(),
        }
    }
}

/// What a PE did, and how it failed if it did.
type PeOutcome = (PeAccount, Option<DeviceError>);

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}
