//! The device: its options, its shared state, and its lifetime (creating or
//! opening the image, starting and stopping the workers).
//!
//! ```text
//!  host thread                      device
//!  QueuePair::submit ──SQE──► run(cmd) on the submitting thread (or a command worker)
//!       │                        │  reserve timeline (link, channels, chips)
//!       │                        │  do the real work on the medium / DRAM
//!       │                        └► completion with modelled time, kept by the queue pair
//!       └─ Execute ──► execution worker ──► PEs on the host's cores ──► completion channel
//!  QueuePair::wait ◄──CQE── the completion
//!       └── hold until the modelled time (real clock) or advance to it (virtual)
//! ```
//!
//! Page, memory and control commands run on the thread that submits them
//! (`process.rs`), inside `QueuePair::submit`: the emulation's work is the
//! caller's, and no command crosses threads (a hand-over costs two thread
//! wake-ups, which on a 2-core VM cost more than reading a page). With
//! `DeviceOptions::command_workers` > 0 a pool of worker threads runs them
//! instead. Program executions always have a worker of their own, take the
//! PEs exclusively (one at a time) and spread their PEs over the host's
//! cores (`execute.rs`). The model is the same either way: a command
//! reserves the timeline from its submission time. Queue pairs are
//! `queue.rs`'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;
use parking_lot::Mutex;

use crate::clock::{Clock, ClockKind};
use crate::command::{CountersReading, DeviceInfo, PROGRAM_SLOTS};
use crate::counters::{Cells, Counters, metered};
use crate::error::DeviceError;
use crate::medium::{Medium, OpenMode};
use crate::memory::{Budget, Ranges};
use crate::pe::{Program, ProgramLibrary};
use crate::profile::Profile;
use crate::queue::{QueuePair, Queues, Work};
use crate::timing::{Timeline, Timing};

/// The image's file name inside a database directory.
pub const IMAGE_FILE: &str = "device.img";

/// New images hold the profile's capacity, but at most this much unless the
/// caller asks for more: images are reserved on disk in full.
pub const DEFAULT_CAPACITY_MAX: u64 = 4 << 30;

#[derive(Debug, Clone)]
pub struct DeviceOptions {
    pub clock: ClockKind,
    /// Threads that process commands other than program executions. 0 (the
    /// default): each such command runs on the thread that submits it,
    /// inside `QueuePair::submit` (no hand-over between threads; see
    /// `queue.rs`). Program executions always have a worker of their own.
    pub command_workers: usize,
    /// Host threads that PEs are spread over during an execution.
    pub pe_threads: usize,
    pub programs: ProgramLibrary,
    /// Faults to inject (crash testing); none by default.
    pub faults: Faults,
    /// Open the image read-only (`Device::open` only): the file opened and
    /// mapped read-only under a shared lock, so that readers coexist with
    /// each other and with no writer; every command that would write the
    /// medium fails with `DeviceError::ReadOnly`. For inspecting an image
    /// (`info`, `check`), also on read-only media.
    pub read_only: bool,
    /// Crash testing: stop in the middle of one sector write, as a process
    /// killed there would; none by default.
    pub sector_kill: Option<SectorKill>,
}

/// Where the emulator stops in a sector write (crash testing): after that
/// point nothing more reaches the medium, the command fails with
/// `InjectedKill` and every later command with `InjectedFault`. Reopen the
/// image to see what a process killed there leaves
/// (`docs/format/image.md`, "Sector writes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectorKill {
    /// The sector write, counted from 0 since the image was opened (a page
    /// write is one sector write per 512 bytes).
    pub write: u64,
    pub point: KillPoint,
}

/// A point in one sector write (the steps of `medium/journal.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillPoint {
    /// Half of the journal slot's bytes are written; the slot is not pending.
    SlotHalf,
    /// The journal slot is written and pending; the sector is untouched.
    SlotWritten,
    /// Half of the sector's words are written.
    SectorHalf,
    /// The sector's words are written, its code is not.
    SectorWritten,
    /// The sector and its code are written; the slot is still pending.
    CodeWritten,
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
            command_workers: 0,
            pe_threads: cores,
            programs: ProgramLibrary::builtin(),
            faults: Faults::default(),
            read_only: false,
            sector_kill: None,
        }
    }
}

impl DeviceOptions {
    /// Options for `clock`, commands run on the submitting threads. On
    /// the virtual clock, commands submitted from one thread reserve the
    /// timeline in submission order, so its modelled times repeat.
    pub fn with_clock(clock: ClockKind) -> Self {
        DeviceOptions { clock, ..DeviceOptions::default() }
    }
}

fn open_mode(opts: &DeviceOptions) -> OpenMode {
    OpenMode { read_only: opts.read_only, kill: opts.sector_kill }
}

/// A program slot: the program loaded into it, and whether it may run.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Slot {
    pub(crate) program: Option<Program>,
    pub(crate) active: bool,
}

/// The device's state, shared by the `Device`, its queue pairs and its
/// workers. The command workers run commands on it (`process.rs`), the
/// execution worker runs programs (`execute.rs`).
pub(crate) struct Inner {
    pub(crate) profile: Profile,
    pub(crate) timing: Timing,
    pub(crate) clock: Clock,
    pub(crate) medium: Medium,
    pub(crate) budget: Arc<Budget>,
    pub(crate) ranges: Ranges,
    pub(crate) programs: ProgramLibrary,
    pub(crate) slots: Mutex<Vec<Slot>>,
    pub(crate) timeline: Mutex<Timeline>,
    /// Held by a program execution: executions take the PEs one at a time.
    pub(crate) exec: Mutex<()>,
    pub(crate) cells: Cells,
    pub(crate) pe_threads: usize,
    /// Commands but executions run on the submitting thread
    /// (`DeviceOptions::command_workers` 0).
    pub(crate) inline_commands: bool,
    pub(crate) next_id: AtomicU64,
    /// The host's lock table, shared through coherent memory.
    pub(crate) lock_table: parking_lot::RwLock<Option<Arc<ndpdb_locktable::LockTable>>>,
    pub(crate) faults: Faults,
    /// Commands seen (for `faults`), and whether a fault has struck.
    pub(crate) commands_seen: AtomicU64,
    pub(crate) crashed: std::sync::atomic::AtomicBool,
    /// Host memory PEs may read by DMA (`host_memory.rs`).
    pub(crate) host_memory: parking_lot::RwLock<Option<Arc<dyn crate::host_memory::HostMemory>>>,
    /// The mirror of the host's buffer pool, once configured (`mirror.rs`).
    pub(crate) mirror: Mutex<Option<crate::mirror::Mirror>>,
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
        if opts.read_only {
            return Err(DeviceError::InvalidCommand {
                what: format!("cannot create an image in {} read-only; open an existing one", dir.display()),
            });
        }
        std::fs::create_dir_all(dir).map_err(|e| DeviceError::io(dir, e))?;
        let capacity = capacity_bytes.unwrap_or_else(|| profile.capacity_bytes().min(DEFAULT_CAPACITY_MAX));
        let medium = Medium::create(&dir.join(IMAGE_FILE), &profile, capacity, open_mode(&opts))?;
        Ok(Device::start(dir, profile, medium, opts))
    }

    /// Opens the image in `dir`; never creates it, and writes nothing but
    /// the sector writes a killed process left unfinished (none on a
    /// read-only open, which finishes them in a private copy).
    pub fn open(dir: &Path, profile: Profile, opts: DeviceOptions) -> Result<Device, DeviceError> {
        let medium = Medium::open(&dir.join(IMAGE_FILE), &profile, open_mode(&opts))?;
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
            .map_err(|source| crate::medium::superblock_error(&path, source))?;
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
            inline_commands: opts.command_workers == 0,
            next_id: AtomicU64::new(1),
            lock_table: parking_lot::RwLock::new(None),
            faults: opts.faults,
            commands_seen: AtomicU64::new(0),
            crashed: std::sync::atomic::AtomicBool::new(false),
            host_memory: parking_lot::RwLock::new(None),
            mirror: Mutex::new(None),
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
                        let c = metered(&w.meter, || inner.process(w.id, w.cmd, w.submitted_ps));
                        let _ = w.cq.send(c);
                    }
                })
                .expect("spawn device worker")
        };
        let mut workers: Vec<JoinHandle<()>> =
            (0..opts.command_workers).map(|i| spawn(format!("ndpdb-device-{i}"), rx.clone())).collect();
        workers.push(spawn("ndpdb-device-exec".into(), exec_rx));
        let queues = Queues { io: tx, exec: exec_tx };
        Device { inner, work: Arc::new(Mutex::new(Some(queues))), workers, dir: dir.to_owned() }
    }

    /// A new submission/completion queue pair. One host thread uses it.
    pub fn queue_pair(&self) -> QueuePair {
        QueuePair::new(self.inner.clone(), self.work.clone(), self.inner.profile.queues.depth as usize)
    }

    pub fn counters(&self) -> Counters {
        Counters::read(&self.inner.cells)
    }

    pub fn counters_reading(&self) -> CountersReading {
        CountersReading { now_ps: self.now_ps(), counters: self.counters() }
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

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// What the mirror of the host pool has seen (None before a
    /// `MirrorConfigure`): a diagnostic, changes nothing.
    pub fn mirror_stats(&self) -> Option<crate::mirror::MirrorStats> {
        self.inner.mirror.lock().as_ref().map(|m| m.stats())
    }

    /// Where the mirror says page `pid`'s newest copy is (None before a
    /// `MirrorConfigure`): a diagnostic, changes nothing.
    pub fn mirror_view(&self, pid: u64) -> Option<Result<crate::mirror::View, String>> {
        self.inner.mirror.lock().as_ref().map(|m| m.view(pid))
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

impl Inner {
    pub(crate) fn info(&self) -> DeviceInfo {
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
            read_only: self.medium.read_only(),
        }
    }
}
