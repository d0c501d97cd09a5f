//! The store on a device image (`KvStore::create_on` / `open_on`): its log
//! is the ring on the device, its root slots say where recovery starts.
//! Against a `BTreeMap` model under random operations: clean reopens,
//! crashes (the store dropped without a checkpoint), and crashes the device
//! injects (every command from the Nth on fails; a page write there torn
//! at a sector; a sector write killed half-way). Every acknowledged write is
//! there after recovery, and only writes that were issued.

use std::path::Path;
use std::sync::Arc;

use ndpdb_device::{ClockKind, Device, DeviceOptions, Faults, KillPoint, Profile, SectorKill};
use ndpdb_kv::{KvError, KvOptions, KvStore};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

type Model = std::collections::BTreeMap<Vec<u8>, Vec<u8>>;

const FIRST_PPN: u64 = 8;

fn options() -> KvOptions {
    KvOptions { frames: 16, first_ppn: FIRST_PPN, pages: Some(1200), log_pages: 48, ..KvOptions::default() }
}

fn device(dir: &Path, create: bool, opts: DeviceOptions) -> Arc<Device> {
    let p = Profile::load("u280-nvm").unwrap();
    Arc::new(if create {
        Device::create(dir, p, Some(16 << 20), opts).unwrap()
    } else {
        Device::open(dir, p, opts).unwrap()
    })
}

fn plain() -> DeviceOptions {
    DeviceOptions::with_clock(ClockKind::Virtual)
}

fn key(n: u64) -> Vec<u8> {
    format!("user{:020}", n * 2654435761 % 1_000_003).into_bytes()
}

/// What a run of writes left: the model of acknowledged writes, and the
/// write under way when one failed (its record may or may not be durable).
struct Run {
    model: Model,
    unsure: Option<(Vec<u8>, Option<Vec<u8>>)>,
}

/// Random puts, updates and deletes from `model` on, until `ops` or the
/// first error (returned in `Run::unsure` with the error).
fn work(store: &KvStore, mut model: Model, seed: u64, ops: u64) -> (Run, Option<KvError>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    for i in 0..ops {
        let k = key(rng.random_range(0..600));
        let (result, after) = match rng.random_range(0..8) {
            0 => (store.delete(&k).map(drop), None),
            1 => {
                let v = vec![(i % 251) as u8; rng.random_range(1..300)];
                let had = model.contains_key(&k);
                (store.update(&k, &v).map(drop), if had { Some(v) } else { None })
            }
            _ => {
                let v = vec![(i % 251) as u8; rng.random_range(1..1500)];
                (store.put(&k, &v).map(drop), Some(v))
            }
        };
        match result {
            Ok(()) => match after {
                Some(v) => drop(model.insert(k, v)),
                None => drop(model.remove(&k)),
            },
            Err(e) => return (Run { model, unsure: Some((k, after)) }, Some(e)),
        }
    }
    (Run { model, unsure: None }, None)
}

/// The store holds the model, with the unsure write either applied or not;
/// returns the state it holds (the model of the next round).
fn check(store: &KvStore, run: &Run) -> Model {
    store.check().unwrap_or_else(|e| panic!("integrity check: {e}"));
    let held: Model = store.scan(b"").map(Result::unwrap).collect();
    let mut with = run.model.clone();
    if let Some((k, v)) = &run.unsure {
        match v {
            Some(v) => drop(with.insert(k.clone(), v.clone())),
            None => drop(with.remove(k)),
        }
    }
    assert!(held == run.model || held == with, "the store holds {} entries, the model {}", held.len(), run.model.len());
    held
}

#[test]
fn a_store_reopens_from_its_image_cleanly_and_after_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let store = KvStore::create_on(device(dir.path(), true, plain()), options()).unwrap();
    let layout = store.layout().unwrap();
    assert_eq!(
        (layout.log_first_ppn, layout.log_pages, layout.file_first_ppn, layout.file_pages, layout.root_pid),
        (FIRST_PPN + 2, 48, FIRST_PPN + 50, 1150, 0)
    );
    assert_eq!((layout.page_bytes, layout.frames), (8192, 16));
    let mut model = Model::new();
    let mut store = Some(store);
    let mut checkpoints = 0;
    for round in 0..6u64 {
        let s = store.take().unwrap();
        let (run, err) = work(&s, model, round, 200);
        assert!(err.is_none(), "{err:?}");
        if round % 2 == 0 {
            s.checkpoint().unwrap();
        }
        checkpoints += s.stats().checkpoints;
        let ring = s.ring_stats().unwrap();
        assert!(ring.flushes > 0 && ring.page_writes >= ring.flushes);
        drop(s);
        let (s, stats) = KvStore::open_on(device(dir.path(), false, plain()), options()).unwrap();
        assert!(stats.notes.is_empty(), "{:?}", stats.notes);
        if round % 2 == 1 {
            assert!(stats.records > 0, "a crash without a checkpoint replays the log");
        }
        model = check(&s, &run);
        assert_eq!(model, run.model, "nothing was unsure");
        store = Some(s);
    }
    assert!(checkpoints > 4, "the ring filled and the store checkpointed on its own: {checkpoints}");
}

/// Crash points spread over a run: the device fails from command N on,
/// tears a page write there, or is killed in the middle of a sector write;
/// the store recovers on the image the crash left and nothing acknowledged
/// is lost. Each point continues on the image the previous one recovered.
#[test]
fn device_crashes_lose_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = KvStore::create_on(device(dir.path(), true, plain()), options()).unwrap();
    let (run, _) = work(&store, Model::new(), 99, 300);
    store.checkpoint().unwrap();
    drop(store);
    let mut model = run.model;
    let (mut crashed, mut torn) = (0, 0);
    for point in 0..24u64 {
        let at = 20 + point * 19;
        let mut opts = plain();
        match point % 3 {
            0 => opts.faults = Faults { fail_from: Some(at), torn_write: None },
            1 => opts.faults = Faults { fail_from: None, torn_write: Some((at, 1 + (point % 15) as u32)) },
            _ => {
                let kill =
                    [KillPoint::SlotHalf, KillPoint::SlotWritten, KillPoint::SectorHalf, KillPoint::SectorWritten];
                opts.sector_kill = Some(SectorKill { write: at * 8, point: kill[(point / 3 % 4) as usize] });
            }
        }
        let (run, err) = match KvStore::open_on(device(dir.path(), false, opts), options()) {
            Ok((s, _)) => work(&s, model.clone(), point, 2000),
            Err(_) => (Run { model: model.clone(), unsure: None }, None),
        };
        crashed += u64::from(err.is_some());
        let (s, stats) = KvStore::open_on(device(dir.path(), false, plain()), options()).unwrap();
        torn += stats.torn_pages_replaced;
        model = check(&s, &run);
    }
    assert!(crashed >= 20, "most points crashed the run: {crashed}");
    assert!(torn > 0, "some crash tore a page that recovery replaced from the log");
}

#[test]
fn a_full_file_is_an_error_that_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let small = KvOptions { pages: Some(2 + 32 + 12), log_pages: 32, ..options() };
    let store = KvStore::create_on(device(dir.path(), true, plain()), small).unwrap();
    let mut model = Model::new();
    let mut full = None;
    for n in 0..2000 {
        match store.put(&key(n), &[n as u8; 700]) {
            Ok(()) => drop(model.insert(key(n), vec![n as u8; 700])),
            Err(e) => {
                full = Some(e);
                break;
            }
        }
    }
    let err = full.expect("12 pages fill up");
    let msg = err.to_string();
    assert!(msg.contains("file is full") && msg.contains("12 pages"), "{msg}");
    let run = Run { model, unsure: None };
    assert_eq!(check(&store, &run), run.model, "the refused put changed nothing");
    store.delete(&key(0)).unwrap();
    let mut model = run.model;
    model.remove(&key(0));

    drop(store);
    let (store, _) = KvStore::open_on(device(dir.path(), false, plain()), small).unwrap();
    let run = Run { model, unsure: None };
    assert_eq!(check(&store, &run), run.model);
}

#[test]
fn a_pinned_pool_refuses_with_an_error_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let opts = KvOptions { frames: 8, ..options() };
    let store = KvStore::create_on(device(dir.path(), true, plain()), opts).unwrap();
    let (run, err) = work(&store, Model::new(), 5, 300);
    assert!(err.is_none());
    let pages = store.pool().pages();
    assert!(pages > 8, "more pages than frames: {pages}");
    // Every frame pinned by pages other than the root (which is then not
    // cached): any operation needs a frame for the root and is refused.
    let pool = store.pool();
    let guards: Vec<_> = (1..9).map(|pid| pool.fix_shared(pid).unwrap()).collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            for n in 0..50 {
                let e = store.put(&key(n), b"while pinned").unwrap_err();
                assert!(e.is_pool_full() && e.to_string().contains("all 8 frames are pinned"), "{e}");
            }
            assert!(store.get(&key(1)).unwrap_err().is_pool_full());
        });
    });
    drop(guards);
    assert_eq!(check(&store, &run), run.model, "the refused puts changed nothing");
    drop(store);
    let (store, _) = KvStore::open_on(device(dir.path(), false, plain()), opts).unwrap();
    assert_eq!(check(&store, &run), run.model, "nor did they reach the log");
}

#[test]
fn bad_geometry_and_missing_or_damaged_images_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path(), true, plain());
    let msg = |r: Result<KvStore, KvError>| r.unwrap_err().to_string();
    let no = KvStore::open_on(dev.clone(), options()).unwrap_err().to_string();
    assert!(no.contains("both root slots are empty") && no.contains("create_on"), "{no}");
    let m = msg(KvStore::create_on(dev.clone(), KvOptions { pages: Some(1 << 40), ..options() }));
    assert!(m.contains("not on the device"), "{m}");
    let m = msg(KvStore::create_on(dev.clone(), KvOptions { log_pages: 4, ..options() }));
    assert!(m.contains("at least 32"), "{m}");
    let m = msg(KvStore::create_on(dev.clone(), KvOptions { pages: Some(40), ..options() }));
    assert!(m.contains("holds no file"), "{m}");
    let store = KvStore::create_on(dev.clone(), options()).unwrap();
    store.put(b"k", b"v").unwrap();
    drop(store);
    let m = msg(KvStore::create_on(dev.clone(), options()));
    assert!(m.contains("already hold data"), "{m}");
    let wrong = KvStore::open_on(dev.clone(), KvOptions { first_ppn: FIRST_PPN + 1, ..options() }).unwrap_err();
    assert!(wrong.to_string().contains("root slot"), "{wrong}");
    drop(dev);
    let (store, _) = KvStore::open_on(device(dir.path(), false, plain()), options()).unwrap();
    assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}
