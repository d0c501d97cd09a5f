//! The corruption campaign (issue 15): one small ORDER_LINE database, and
//! many runs that each overwrite random bytes (1..64 of them, random
//! values, at a random offset) in one page of one kind, then open it,
//! aggregate on the host and by NDP, and check it.
//!
//! Each kind is damaged two ways: **raw**, bytes written into the image
//! file as a failing medium would leave them (the device's check codes no
//! longer match: a media error), and **resealed**, the same bytes with
//! the codes recomputed (`format::image::reseal`), so that only the storage
//! layer can notice (a stray write, a firmware bug).
//!
//! Every run must either answer exactly as the undamaged database (count
//! and sum, on the host and by NDP, now and at a pinned snapshot) or fail
//! with an error that names what is damaged; the integrity check
//! (`ndpdb check`'s verdict) must never pass a database on which an answer
//! differed or failed; nothing may panic. Damage in bytes nothing reads
//! (free space in a page, a stale part of the log ring) answers the same,
//! which is right.
//!
//! Runs damage an image in place and undo the damage afterwards (opening
//! read-only, as `ndpdb check` and `ndpdb dump` do, writes nothing), which
//! is much faster than copying the image per run; two threads each damage
//! their own copy. A sample of runs also copies the damaged image and runs
//! the `ndpdb check` binary on the copy (its exit code against the
//! in-process verdict) and a read-write open.
//!
//! Two outcomes are allowed that are not "the same answer" and not an
//! error, each counted in its own column and explained where it is
//! allowed: [`NDP_UNVERIFIED`] and [`TAIL_CUT`]. `--nocapture` prints the
//! table of outcomes.
//!
//! The delta buffer has no page of its own on the device: a checkpoint
//! writes it out as heap pages, and after a crash the log records after
//! the checkpoint rebuild it. Its kind here is those log pages ("delta").

use std::fmt::Write as _;
use std::os::unix::fs::FileExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ndpdb_bench::orderline;
use ndpdb_device::{ClockKind, Device, DeviceOptions, IMAGE_FILE, Profile};
use ndpdb_format::checkpoint::{Checkpoint, Root, index_entries};
use ndpdb_format::image::{HEADER_BYTES, SECTOR_BYTES, Superblock, sector_code};
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::Value;
use ndpdb_storage::{Freshness, ROOT_PPN, Store, StoreOptions, Table};
use ndpdb_txn::{Database, Isolation, ReadMode};
use ndpdb_workload::{OL_AMOUNT, ORDER_LINE, order_line_columns};

const PROFILE: &str = "u280-nvm";
const PAGE: u64 = 8192;
const CAPACITY_MIB: u64 = 16;
const ROWS: u64 = 3000;
/// Runs per page kind and variant.
const SEEDS: u64 = 200;
/// Heap damage under valid check codes: an NDP call reads a version's
/// header and the columns it needs, byte by byte, and never the whole page,
/// so it cannot verify the page's checksum; bytes that pass the device's
/// check codes are what it computes with. Such runs may answer differently
/// by NDP (counted as `ndp-unverified`, never as `same`), provided the
/// host's answers are right or name the page and `check` fails. Every
/// other difference is a wrong answer.
const NDP_UNVERIFIED: bool = true;
/// Damage in the log's last record under valid check codes: recovery
/// cannot tell it from a record torn by a crash (which was never
/// acknowledged), so it cuts it off as the log's tail, says so
/// (`Recovery::truncated`, printed by every command), and `ndpdb check`
/// passes. Such runs (`tail-cut`) may lose that one commit, provided the
/// cut is reported with its LSN.
const TAIL_CUT: bool = true;
/// Threads, each damaging its own copy of the image.
const WORKERS: u64 = 2;
/// Every this many runs also copy the image for `ndpdb check` and a
/// read-write open.
const CLI_SAMPLE_EVERY: u64 = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Heap,
    VidMap,
    L2pMap,
    Log,
    Root,
    Blob,
    Delta,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Heap => "heap",
            Kind::VidMap => "VID map",
            Kind::L2pMap => "L2P map",
            Kind::Log => "log ring",
            Kind::Root => "checkpoint root",
            Kind::Blob => "checkpoint blob+index",
            Kind::Delta => "delta (log after ckpt)",
        }
    }
}

/// SplitMix64: a seeded stream, so that a failing run can be repeated.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn device(dir: &Path, create: bool, read_only: bool) -> Device {
    let p = Profile::load(PROFILE).unwrap();
    let o = DeviceOptions { read_only, ..DeviceOptions::with_clock(ClockKind::Virtual) };
    if create { Device::create(dir, p, Some(CAPACITY_MIB << 20), o).unwrap() } else { Device::open(dir, p, o).unwrap() }
}

/// The database every run damages: 3000 rows, two update rounds and a
/// checkpoint after each (both root slots hold one), a snapshot pinned
/// between them (older versions stay reachable), and 30 small commits that
/// only the log holds (the delta buffer recovery rebuilds). Small delta
/// buffers and map deltas, so that heap, VID map and L2P pages are
/// written between checkpoints too. Returns the pinned snapshot's id.
fn build(dir: &Path) -> u64 {
    let opts = StoreOptions { delta_pages: 4, map_delta_max: 64, log_bytes: 1 << 20, ..StoreOptions::default() };
    let db = Database::new(Store::new(device(dir, true, false), opts).unwrap());
    let t = db.create_table(ORDER_LINE, order_line_columns()).unwrap();
    orderline::load(&db, &t, ROWS, 1, |_| {}).unwrap();
    orderline::update_round(&db, &t, 2, |_| {}).unwrap();
    db.checkpoint().unwrap();
    let pinned = db.pin_snapshot().unwrap();
    orderline::update_round(&db, &t, 3, |_| {}).unwrap();
    db.checkpoint().unwrap();
    // A tenth of the tuples in 30 commits, so that most VID map entries on
    // the device stay the ones NDP calls read (dirty entries are shipped
    // instead), and the log after the checkpoint holds many records.
    let amount = t.column_index(OL_AMOUNT).unwrap();
    for first in (0..ROWS).step_by(100) {
        let mut txn = db.begin(Isolation::RepeatableRead);
        for vid in (first..first + 100).step_by(10) {
            let mut row = txn.get(&t, vid).unwrap().unwrap();
            row[amount] = Value::Int(100 + vid as i64);
            txn.update(&t, vid, &row).unwrap();
        }
        txn.commit().unwrap();
    }
    pinned
}

/// What a run answers: (count, sum of ol_amount) now and at the pinned
/// snapshot, each on the host and by NDP; an error as its text.
type Answers = Vec<Result<(Option<i128>, Option<i128>), String>>;

fn answers(db: &Database, t: &Arc<Table>, pinned: u64) -> Answers {
    let amount = t.column_index(OL_AMOUNT).unwrap() as u16;
    let modes = [ReadMode::Host { workers: 2 }, ReadMode::Ndp { pes: 4, freshness: Freshness::Ship }];
    let mut out = Vec::new();
    for at in [None, Some(pinned)] {
        for mode in modes {
            let one = || -> Result<(Option<i128>, Option<i128>), String> {
                let mut txn = match at {
                    None => db.begin(Isolation::RepeatableRead),
                    Some(id) => db.begin_at(id).map_err(|e| e.to_string())?,
                };
                let count = txn.aggregate(t, Aggregate::CountStar, 0, None, mode).map_err(|e| e.to_string())?;
                let sum = txn.aggregate(t, Aggregate::Sum, amount, None, mode).map_err(|e| e.to_string())?;
                txn.abort().map_err(|e| e.to_string())?;
                Ok((count.value, sum.value))
            };
            out.push(one());
        }
    }
    out
}

/// Opens `dir` read-only as the commands that only read do, and answers.
fn open_and_answer(dir: &Path, pinned: u64, read_only: bool) -> Result<Opened, String> {
    let dev = Device::open(
        dir,
        Profile::load(PROFILE).unwrap(),
        DeviceOptions { read_only, ..DeviceOptions::with_clock(ClockKind::Virtual) },
    )
    .map_err(|e| e.to_string())?;
    let (store, meta, rec) = Store::open_with_report(dev, StoreOptions { read_only, ..StoreOptions::default() })
        .map_err(|e| e.to_string())?;
    let db = Database::open(store, meta);
    let t = db.table(ORDER_LINE).map_err(|e| e.to_string())?;
    let answers = answers(&db, &t, pinned);
    // `ndpdb check`'s verdict on the same open: it opened without
    // `accept_loss`, so nothing was lost.
    let check_ok = rec.damage.is_empty() && db.store().check().is_ok_and(|r| r.error_count() == 0);
    Ok(Opened { answers, truncated: rec.truncated, check_ok })
}

/// A run's answers, and the log tail recovery cut off, if it did.
#[derive(Debug)]
struct Opened {
    answers: Answers,
    truncated: Option<String>,
    /// Whether the integrity check passed after the answers.
    check_ok: bool,
}

/// `ndpdb check`'s verdict, in process: opened read-only with what can be
/// opened, nothing damaged or lost on the way, no integrity error (for a
/// database that did not open without `accept_loss`).
fn check_passes(dir: &Path) -> bool {
    let Ok(dev) = Device::open(
        dir,
        Profile::load(PROFILE).unwrap(),
        DeviceOptions { read_only: true, ..DeviceOptions::with_clock(ClockKind::Virtual) },
    ) else {
        return false;
    };
    let opts = StoreOptions { read_only: true, accept_loss: true, ..StoreOptions::default() };
    let Ok((store, _, rec)) = Store::open_with_report(dev, opts) else { return false };
    rec.damage.is_empty() && rec.lost.is_none() && store.check().is_ok_and(|r| r.error_count() == 0)
}

/// An error names what is damaged: a page, a checkpoint, a log position
/// or a root slot, with its number.
fn names_damage(e: &str) -> bool {
    let words = ["page", "checkpoint", "LSN", "log", "slot", "sector"];
    words.iter().any(|w| e.contains(w)) && e.chars().any(|c| c.is_ascii_digit())
}

/// The physical pages of each kind in the undamaged image, from its newest
/// checkpoint (the pages an open uses) and the log's extent after it.
struct Layout {
    pages: Vec<(Kind, Vec<u64>)>,
}

fn read_page(img: &[u8], ppn: u64) -> &[u8] {
    let at = HEADER_BYTES + (ppn * PAGE) as usize;
    &img[at..at + PAGE as usize]
}

fn layout(img: &[u8], log_bytes_replayed: u64) -> Layout {
    let (slot, root) = (0..2)
        .filter_map(|s| Root::decode(read_page(img, ROOT_PPN + s)).ok().flatten().map(|r| (ROOT_PPN + s, r)))
        .max_by_key(|(_, r)| r.generation)
        .unwrap();
    let blob_pages: Vec<u64> = root
        .index_pages
        .iter()
        .flat_map(|&p| index_entries(read_page(img, p)).collect::<Vec<_>>())
        .take(root.blob_bytes.div_ceil(PAGE) as usize)
        .collect();
    let blob: Vec<u8> = blob_pages.iter().flat_map(|&p| read_page(img, p).to_vec()).collect();
    let ckpt = Checkpoint::decode(&blob[..root.blob_bytes as usize]).unwrap();
    let mapped = |lpns: &[u64]| lpns.iter().map(|&l| ckpt.l2p[l as usize]).collect::<Vec<_>>();
    let table = &ckpt.tables[0];
    let ring = |lsn: u64| root.log_start + (lsn / PAGE) % root.log_pages;
    let end = root.log_lsn + log_bytes_replayed;
    let delta: Vec<u64> = (root.log_lsn / PAGE..end.div_ceil(PAGE)).map(|p| ring(p * PAGE)).collect();
    let mut blob_and_index = root.index_pages.clone();
    blob_and_index.extend(&blob_pages);
    Layout {
        pages: vec![
            (Kind::Heap, mapped(&table.heap_pages)),
            (Kind::VidMap, mapped(&table.vid_pages)),
            (Kind::L2pMap, ckpt.l2p_pages.iter().copied().filter(|&p| p != u64::MAX).collect()),
            (Kind::Log, (root.log_start..root.log_start + root.log_pages).collect()),
            (Kind::Root, vec![slot]),
            (Kind::Blob, blob_and_index),
            (Kind::Delta, delta),
        ],
    }
}

/// One run's damage: `bytes` at medium address `addr`.
struct Damage {
    addr: u64,
    bytes: Vec<u8>,
}

fn damage(rng: &mut Rng, pages: &[u64]) -> Damage {
    let ppn = pages[rng.below(pages.len() as u64) as usize];
    let len = 1 + rng.below(64);
    let offset = rng.below(PAGE - len + 1);
    let bytes = (0..len).map(|_| rng.next() as u8).collect();
    Damage { addr: ppn * PAGE + offset, bytes }
}

/// The image file under test and its undamaged bytes.
struct Image {
    file: std::fs::File,
    clean: Vec<u8>,
    codes_offset: u64,
}

impl Image {
    /// Writes `d` into the image; `reseal`: with the touched sectors' codes
    /// recomputed. Returns what `undo` must restore.
    fn apply(&self, d: &Damage, reseal: bool) -> Vec<(u64, usize)> {
        let data_at = HEADER_BYTES as u64 + d.addr;
        self.file.write_all_at(&d.bytes, data_at).unwrap();
        let mut touched = vec![(data_at, d.bytes.len())];
        if reseal {
            let sector = u64::from(SECTOR_BYTES);
            let (first, end) = (d.addr / sector, (d.addr + d.bytes.len() as u64).div_ceil(sector));
            for s in first..end {
                let mut data = [0u8; SECTOR_BYTES as usize];
                self.file.read_exact_at(&mut data, HEADER_BYTES as u64 + s * sector).unwrap();
                let code_at = self.codes_offset + 4 * s;
                self.file.write_all_at(&sector_code(s, &data).to_le_bytes(), code_at).unwrap();
                touched.push((code_at, 4));
            }
        }
        touched
    }

    fn undo(&self, touched: &[(u64, usize)]) {
        for &(at, len) in touched {
            self.file.write_all_at(&self.clean[at as usize..at as usize + len], at).unwrap();
        }
    }
}

/// Counts of outcomes for one kind and variant.
#[derive(Default, Clone, Copy)]
struct Tally {
    runs: u64,
    same: u64,
    failed_named: u64,
    failed_unnamed: u64,
    wrong: u64,
    check_false_ok: u64,
    panics: u64,
    cli_checked: u64,
    /// Runs whose NDP answers differed under [`NDP_UNVERIFIED`].
    ndp_unverified: u64,
    /// Runs that lost the last commit under [`TAIL_CUT`].
    tail_cut: u64,
    /// Runs the integrity check passed (all of them answered the same).
    check_ok: u64,
}

impl Tally {
    fn add(mut self, o: &Tally) -> Tally {
        self.runs += o.runs;
        self.same += o.same;
        self.failed_named += o.failed_named;
        self.failed_unnamed += o.failed_unnamed;
        self.wrong += o.wrong;
        self.check_false_ok += o.check_false_ok;
        self.panics += o.panics;
        self.cli_checked += o.cli_checked;
        self.ndp_unverified += o.ndp_unverified;
        self.tail_cut += o.tail_cut;
        self.check_ok += o.check_ok;
        self
    }
}

/// What one run found, and (for the failures) why, to print.
/// `ndp_unverified`: NDP answers may differ (see [`NDP_UNVERIFIED`]).
fn judge(
    expected: &Answers,
    got: &Result<Opened, String>,
    check_ok: bool,
    ndp_unverified: bool,
    t: &mut Tally,
) -> Option<String> {
    t.runs += 1;
    t.check_ok += u64::from(check_ok);
    let differs = |i: usize| got.as_ref().is_ok_and(|o| o.answers[i].is_ok() && o.answers[i] != expected[i]);
    let (wrong_host, wrong_ndp) = ((0..4).step_by(2).any(differs), (1..4).step_by(2).any(differs));
    let errors: Vec<String> = match got {
        Err(e) => vec![e.clone()],
        Ok(o) => o.answers.iter().filter_map(|g| g.as_ref().err().cloned()).collect(),
    };
    let cut = got.as_ref().ok().and_then(|o| o.truncated.clone());
    if let Some(cut) = cut.filter(|_| (wrong_host || wrong_ndp) && errors.is_empty()) {
        // See [`TAIL_CUT`]: the last record was cut off as a torn tail.
        t.tail_cut += 1;
        return (!TAIL_CUT || !names_damage(&cut)).then(|| format!("a cut-off tail answered differently: {cut}"));
    }
    let wrong = wrong_host || wrong_ndp && !ndp_unverified;
    let unnamed = errors.iter().find(|e| !names_damage(e));
    let mut why = None;
    if wrong_ndp && !wrong {
        t.ndp_unverified += 1;
    }
    if wrong {
        t.wrong += 1;
        why = Some(format!("wrong answer: {got:?}, expected {expected:?}"));
    } else if let Some(e) = unnamed {
        t.failed_unnamed += 1;
        why = Some(format!("an error that names nothing damaged: {e}"));
    } else if errors.is_empty() && !wrong_ndp {
        t.same += 1;
    } else if !errors.is_empty() {
        t.failed_named += 1;
    }
    if check_ok && (wrong_host || wrong_ndp || !errors.is_empty()) {
        t.check_false_ok += 1;
        why = Some(format!("check passed, but the run answered {got:?}"));
    }
    why
}

fn table(tallies: &[((Kind, bool), Tally)]) -> String {
    let mut s = String::new();
    writeln!(
        s,
        "{:<24} {:<9} {:>5} {:>6} {:>13} {:>15} {:>6} {:>15} {:>7} {:>15} {:>9} {:>9} {:>11}",
        "page kind",
        "variant",
        "runs",
        "same",
        "failed-named",
        "failed-unnamed",
        "wrong",
        "check-false-ok",
        "panics",
        "ndp-unverified",
        "tail-cut",
        "check-ok",
        "ndpdb-check"
    )
    .unwrap();
    for ((kind, reseal), t) in tallies {
        writeln!(
            s,
            "{:<24} {:<9} {:>5} {:>6} {:>13} {:>15} {:>6} {:>15} {:>7} {:>15} {:>9} {:>9} {:>11}",
            kind.name(),
            if *reseal { "resealed" } else { "raw" },
            t.runs,
            t.same,
            t.failed_named,
            t.failed_unnamed,
            t.wrong,
            t.check_false_ok,
            t.panics,
            t.ndp_unverified,
            t.tail_cut,
            t.check_ok,
            t.cli_checked
        )
        .unwrap();
    }
    s
}

/// The `ndpdb check` binary on a copy of the damaged image: it exits 0
/// exactly when the in-process verdict passes.
fn cli_check_agrees(c: &Campaign, check_ok: bool, ndp_unverified: bool) -> Option<String> {
    let (db, scratch, pinned, expected) = (&c.db, &c.scratch, c.pinned, &c.expected);
    let copy = scratch.join("copy");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir(&copy).unwrap();
    std::fs::copy(db.join(IMAGE_FILE), copy.join(IMAGE_FILE)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ndpdb")).arg("check").arg(&copy).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() != check_ok || text.contains("panicked") {
        return Some(format!("ndpdb check exited {:?}, the in-process verdict is {check_ok}: {text}", out.status));
    }
    // A read-write open (what `ndpdb db aggregate` does) answers as the
    // read-only one may: the same, or an error naming the damage.
    match open_and_answer(&copy, pinned, false) {
        Ok(o)
            if o.truncated.is_none()
                && o.answers
                    .iter()
                    .zip(expected)
                    .enumerate()
                    .any(|(i, (g, e))| g.is_ok() && g != e && !(ndp_unverified && i % 2 == 1)) =>
        {
            Some(format!("a read-write open answered {:?}, expected {expected:?}", o.answers))
        }
        Err(e) if !names_damage(&e) => Some(format!("a read-write open failed naming nothing: {e}")),
        _ => None,
    }
}

struct Campaign {
    db: PathBuf,
    scratch: PathBuf,
    image: Image,
    pinned: u64,
    expected: Answers,
}

impl Campaign {
    /// The runs of one kind and variant whose seeds are `worker` modulo
    /// `WORKERS`.
    fn run(&self, worker: u64, kind: Kind, pages: &[u64], reseal: bool, t: &mut Tally, failures: &mut Vec<String>) {
        let ndp_unverified = reseal && kind == Kind::Heap && NDP_UNVERIFIED;
        for seed in (worker..SEEDS).step_by(WORKERS as usize) {
            let mut rng = Rng(seed ^ (kind as u64) << 32 ^ u64::from(reseal) << 40);
            let d = damage(&mut rng, pages);
            let touched = self.image.apply(&d, reseal);
            let run = catch_unwind(AssertUnwindSafe(|| {
                let got = open_and_answer(&self.db, self.pinned, true);
                let check_ok = got.as_ref().map_or_else(|_| check_passes(&self.db), |o| o.check_ok);
                let mut why = judge(&self.expected, &got, check_ok, ndp_unverified, t);
                if seed % CLI_SAMPLE_EVERY == 0 {
                    t.cli_checked += 1;
                    why = why.or_else(|| cli_check_agrees(self, check_ok, ndp_unverified));
                }
                why
            }));
            let why = match run {
                Ok(why) => why,
                Err(_) => {
                    t.runs += 1;
                    t.panics += 1;
                    Some("panicked".to_string())
                }
            };
            if let Some(why) = why {
                let place = format!("page {} + {}, {} bytes", d.addr / PAGE, d.addr % PAGE, d.bytes.len());
                let variant = if reseal { "resealed" } else { "raw" };
                failures.push(format!("{} {variant} seed {seed} ({place}): {why}", kind.name()));
            }
            self.image.undo(&touched);
        }
    }

    /// A worker's runs: every kind and variant, its share of the seeds.
    fn run_all(&self, worker: u64, layout: &Layout) -> (Vec<Tally>, Vec<String>) {
        let mut tallies = Vec::new();
        let mut failures = Vec::new();
        for (kind, pages) in &layout.pages {
            for reseal in [false, true] {
                let mut t = Tally::default();
                self.run(worker, *kind, pages, reseal, &mut t, &mut failures);
                tallies.push(t);
            }
        }
        (tallies, failures)
    }
}

/// A worker's own copy of the database directory, damaged in place.
fn campaign(dir: &Path, worker: u64, clean: &[u8], pinned: u64, expected: &Answers) -> Campaign {
    let scratch = dir.join(format!("worker-{worker}"));
    let db = scratch.join("db");
    std::fs::create_dir_all(&db).unwrap();
    std::fs::write(db.join(IMAGE_FILE), clean).unwrap();
    let file = std::fs::OpenOptions::new().read(true).write(true).open(db.join(IMAGE_FILE)).unwrap();
    let codes_offset = Superblock::decode(clean).unwrap().codes_offset();
    let image = Image { file, clean: clean.to_vec(), codes_offset };
    Campaign { db, scratch, image, pinned, expected: expected.clone() }
}

#[test]
fn random_damage_in_every_kind_of_page_is_answered_right_or_named() {
    let start = std::time::Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    std::fs::create_dir(&db).unwrap();
    let pinned = build(&db);
    // Recovery once, read-only, to learn the log's extent and the answers.
    let dev = device(&db, false, true);
    let (_, _, rec) =
        Store::open_with_report(dev, StoreOptions { read_only: true, ..StoreOptions::default() }).unwrap();
    assert!(rec.commits > 0 && rec.damage.is_empty(), "the last round is only in the log: {rec:?}");
    let expected = open_and_answer(&db, pinned, true).unwrap().answers;
    assert!(expected.iter().all(|a| a.as_ref().is_ok_and(|(_, s)| s.is_some_and(|s| s != 0))), "{expected:?}");
    assert_ne!(expected[0], expected[2], "the pinned snapshot sees other values");
    assert!(check_passes(&db));
    let clean = std::fs::read(db.join(IMAGE_FILE)).unwrap();
    let layout = layout(&clean, rec.log_bytes);
    for (kind, pages) in &layout.pages {
        assert!(!pages.is_empty(), "no {} pages", kind.name());
    }
    let workers: Vec<Campaign> = (0..WORKERS).map(|w| campaign(dir.path(), w, &clean, pinned, &expected)).collect();
    let results: Vec<(Vec<Tally>, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .iter()
            .zip(0..)
            .map(|(c, w)| {
                let layout = &layout;
                s.spawn(move || c.run_all(w, layout))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let cells = layout.pages.iter().flat_map(|(k, _)| [(*k, false), (*k, true)]);
    let tallies: Vec<((Kind, bool), Tally)> = cells
        .enumerate()
        .map(|(i, cell)| (cell, results.iter().fold(Tally::default(), |a, r| a.add(&r.0[i]))))
        .collect();
    let failures: Vec<&String> = results.iter().flat_map(|r| &r.1).collect();
    let kinds: Vec<String> = layout.pages.iter().map(|(k, p)| format!("{} {}", k.name(), p.len())).collect();
    println!("pages of each kind: {}", kinds.join(", "));
    println!("{}", table(&tallies));
    let total = |f: fn(&Tally) -> u64| tallies.iter().map(|(_, t)| f(t)).sum::<u64>();
    let (wrong, false_ok, panics) = (total(|t| t.wrong), total(|t| t.check_false_ok), total(|t| t.panics));
    assert_eq!((wrong, false_ok, panics), (0, 0, 0), "wrong answers, check-false-ok, panics");
    println!(
        "campaign: {} runs in {:.1} s",
        tallies.iter().map(|(_, t)| t.runs).sum::<u64>(),
        start.elapsed().as_secs_f64()
    );
    for f in failures.iter().take(40) {
        println!("FAILURE {f}");
    }
    assert!(failures.is_empty(), "{} failing runs (the first are printed above)", failures.len());
}
