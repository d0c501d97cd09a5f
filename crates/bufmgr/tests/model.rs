//! The pool against a model, under random fixes, writes, moves, releases,
//! downgrades, allocations, log progress, flushes and write-backs (fixed
//! seeds), on a small pool over pages in memory.
//!
//! Checked at every step:
//! - every guard's bytes equal the model's page (and its pid word);
//! - `Full` exactly when every frame is pinned by a guard and the page is
//!   not cached (or for `allocate`, whenever every frame is pinned);
//! - every write-back happens with the log durable up to the page's LSN
//!   (the write-ahead rule) and writes exactly the model's page;
//! - a page this test holds a guard of is never read (pinned pages are
//!   never evicted);
//! - after `flush_dirty`/`write_back_all`, the file equals the model.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{Rng, pid_word};
use ndpdb_bufmgr::{
    BufferPool, ExclusiveGuard, HEADER_BYTES, LogSync, MemoryLog, MemoryPageIo, PageIo, Pid, PoolConfig, PoolError,
    SharedGuard, TRAILER_BYTES, seqlock,
};
use parking_lot::Mutex;

const PAGE: usize = 128;
const BODY: std::ops::Range<usize> = HEADER_BYTES..PAGE - TRAILER_BYTES;
const PAGES_MAX: u64 = 40;

/// What the test knows, shared with the checking I/O.
#[derive(Default)]
struct Model {
    /// Each page's body as the test last wrote it.
    pages: HashMap<Pid, Vec<u8>>,
    /// The LSN of each page's newest change.
    lsns: HashMap<Pid, u64>,
    /// Guards the test holds, per page.
    pinned: HashMap<Pid, usize>,
}

/// Pages in memory, checking every read and write against the model.
struct CheckedIo {
    inner: MemoryPageIo,
    log: Arc<MemoryLog>,
    model: Arc<Mutex<Model>>,
}

impl PageIo for CheckedIo {
    fn read(&self, pid: Pid, host_addr: u64) -> Result<Vec<u8>, PoolError> {
        let pinned = self.model.lock().pinned.get(&pid).copied().unwrap_or(0);
        assert_eq!(pinned, 0, "page {pid} was read while the test pins it: a pinned page was evicted");
        self.inner.read(pid, host_addr)
    }

    fn write(&self, pid: Pid, page: &[u8]) -> Result<(), PoolError> {
        let model = self.model.lock();
        let lsn = model.lsns.get(&pid).copied().unwrap_or(0);
        let durable = self.log.durable_lsn();
        assert!(durable >= lsn, "page {pid} (LSN {lsn}) written back with the log durable to {durable}");
        assert_eq!(&page[BODY], &model.pages[&pid][..], "page {pid} written back with other bytes than the model's");
        assert_eq!(pid_word(page), pid);
        assert!(seqlock::versions_match(page), "page {pid} written back mid-change");
        drop(model);
        self.inner.write(pid, page)
    }

    fn pages(&self) -> u64 {
        self.inner.pages()
    }

    fn extend(&self) -> Result<Pid, PoolError> {
        self.inner.extend()
    }
}

enum Held<'a> {
    S(SharedGuard<'a>),
    X(ExclusiveGuard<'a>),
}

impl Held<'_> {
    fn pid(&self) -> Pid {
        match self {
            Held::S(g) => g.pid(),
            Held::X(g) => g.pid(),
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Held::S(g) => g.bytes(),
            Held::X(g) => g.bytes(),
        }
    }
}

struct Run<'a> {
    pool: &'a BufferPool,
    io: &'a CheckedIo,
    log: &'a MemoryLog,
    model: Arc<Mutex<Model>>,
    held: Vec<Held<'a>>,
    rng: Rng,
}

impl<'a> Run<'a> {
    fn pinned_frames(&self) -> usize {
        self.model.lock().pinned.values().filter(|&&n| n > 0).count()
    }

    fn holds(&self, pid: Pid) -> (usize, bool) {
        let n = self.held.iter().filter(|h| h.pid() == pid).count();
        let x = self.held.iter().any(|h| h.pid() == pid && matches!(h, Held::X(_)));
        (n, x)
    }

    fn pin(&mut self, guard: Held<'a>) {
        *self.model.lock().pinned.entry(guard.pid()).or_default() += 1;
        self.held.push(guard);
    }

    fn unpin(&mut self, i: usize) {
        let guard = self.held.swap_remove(i);
        *self.model.lock().pinned.get_mut(&guard.pid()).unwrap() -= 1;
        drop(guard);
    }

    /// A fix of an existing page; Full exactly when it must be.
    fn fix(&mut self, exclusive: bool) {
        let pages = self.io.pages();
        if pages == 0 {
            return;
        }
        let pid = self.rng.below(pages);
        let (n, x) = self.holds(pid);
        if x || (exclusive && n > 0) {
            return; // it would wait for this thread's own latch
        }
        let must_be_full = self.pool.resident(pid).is_none() && self.pinned_frames() == self.pool.frames();
        let fixed =
            if exclusive { self.pool.fix_exclusive(pid).map(Held::X) } else { self.pool.fix_shared(pid).map(Held::S) };
        match fixed {
            Ok(g) => {
                assert!(!must_be_full, "fixed page {pid} with every frame pinned");
                self.pin(g);
            }
            Err(PoolError::Full { frames }) => {
                assert!(must_be_full, "Full with {} of {frames} frames pinned", self.pinned_frames());
            }
            Err(e) => panic!("fix of page {pid}: {e}"),
        }
    }

    fn allocate(&mut self) {
        let full = self.pinned_frames() == self.pool.frames();
        let at_limit = self.io.pages() == PAGES_MAX;
        match self.pool.allocate() {
            Ok(g) => {
                assert!(!full && !at_limit);
                let pid = g.pid();
                assert!(g.bytes()[BODY].iter().all(|&b| b == 0));
                self.model.lock().pages.insert(pid, vec![0; BODY.len()]);
                self.pin(Held::X(g));
            }
            Err(PoolError::Full { .. }) => assert!(full, "Full with a frame unpinned"),
            Err(PoolError::DeviceFull { pages_max }) => assert!(at_limit && !full && pages_max == PAGES_MAX),
            Err(e) => panic!("allocate: {e}"),
        }
    }

    /// A write or a move on a random exclusive guard, logged.
    fn change(&mut self) {
        let xs: Vec<usize> = (0..self.held.len()).filter(|&i| matches!(self.held[i], Held::X(_))).collect();
        if xs.is_empty() {
            return;
        }
        let i = xs[self.rng.below(xs.len() as u64) as usize];
        let len = 1 + self.rng.below(24) as usize;
        let at = BODY.start + self.rng.below((BODY.len() - len) as u64) as usize;
        let lsn = self.log.append();
        let Held::X(g) = &mut self.held[i] else { unreachable!() };
        let pid = g.pid();
        let mut model = self.model.lock();
        let page = model.pages.get_mut(&pid).unwrap();
        if self.rng.chance(70) {
            let data: Vec<u8> = (0..len).map(|_| self.rng.next() as u8).collect();
            g.write(at, &data);
            page[at - BODY.start..at - BODY.start + len].copy_from_slice(&data);
        } else {
            let to = BODY.start + self.rng.below((BODY.len() - len) as u64) as usize;
            g.copy_within(at..at + len, to);
            page.copy_within(at - BODY.start..at - BODY.start + len, to - BODY.start);
        }
        g.set_lsn(lsn);
        model.lsns.insert(pid, lsn);
    }

    fn release_or_downgrade(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let i = self.rng.below(self.held.len() as u64) as usize;
        if matches!(self.held[i], Held::X(_)) && self.rng.chance(30) {
            let Held::X(g) = self.held.swap_remove(i) else { unreachable!() };
            self.held.push(Held::S(g.downgrade()));
        } else {
            self.unpin(i);
        }
    }

    /// `flush_dirty` or `write_back_all`; refused while guards are held.
    fn write_back(&mut self) {
        let flush = self.rng.chance(50);
        let result = if flush { self.pool.flush_dirty().map(|_| ()) } else { self.pool.write_back_all() };
        match result {
            Ok(()) => {
                assert!(self.held.is_empty());
                assert_eq!(self.pool.stats().dirty, 0);
                self.check_file();
            }
            Err(PoolError::GuardsHeld { guards, .. }) => assert_eq!(guards, self.held.len()),
            Err(e) => panic!("write-back: {e}"),
        }
    }

    fn check_guards(&self) {
        let model = self.model.lock();
        for h in &self.held {
            assert_eq!(&h.bytes()[BODY], &model.pages[&h.pid()][..], "page {} differs from the model", h.pid());
            assert_eq!(pid_word(h.bytes()), h.pid());
        }
    }

    fn check_file(&self) {
        for (&pid, body) in &self.model.lock().pages {
            let stored = self.io.inner.page(pid).unwrap();
            assert_eq!(&stored[BODY], &body[..], "page {pid} in the file");
        }
    }

    fn step(&mut self) {
        match self.rng.below(100) {
            0..20 => self.fix(false),
            20..32 => self.fix(true),
            32..40 => self.allocate(),
            40..65 => self.change(),
            65..90 => self.release_or_downgrade(),
            90..95 => {
                let appended = self.log.append();
                self.log.make_durable(self.rng.below(appended + 1));
            }
            _ => self.write_back(),
        }
        self.check_guards();
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let frames = 2 + rng.below(5) as usize;
    let log = Arc::new(MemoryLog::new());
    let model = Arc::new(Mutex::new(Model::default()));
    let io = Arc::new(CheckedIo { inner: MemoryPageIo::new(PAGE, PAGES_MAX), log: log.clone(), model: model.clone() });
    let pool = BufferPool::new(PoolConfig { frames, page_bytes: PAGE }, io.clone(), log.clone()).unwrap();
    let mut run = Run { pool: &pool, io: &io, log: &log, model, held: Vec::new(), rng };
    for _ in 0..steps {
        run.step();
    }
    while !run.held.is_empty() {
        run.unpin(0);
    }
    pool.write_back_all().unwrap();
    run.check_file();
    for pid in 0..io.pages() {
        let g = pool.fix_shared(pid).unwrap();
        assert_eq!(&g.bytes()[BODY], &run.model.lock().pages[&pid][..]);
    }
    let s = pool.stats();
    assert_eq!(s.misses, io.inner.reads(), "seed {seed}: {s:?}");
    assert_eq!(s.write_backs, io.inner.writes(), "seed {seed}: {s:?}");
    assert!(s.evictions > 0 && s.full > 0 && s.log_flushes > 0, "seed {seed} exercised too little: {s:?}");
}

#[test]
fn the_pool_agrees_with_the_model() {
    for seed in 0..24 {
        run(seed, 3000);
    }
}
