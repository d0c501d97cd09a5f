//! The crash harness on the B+-tree store (`ndpdb bench crash --store kv`):
//! the same crash points as the MVCC mode (SIGKILL, a failed command, a
//! torn page write), on a `KvStore` on the device image (`create_on`,
//! `open_on`: its log is the ring on the device).
//!
//! The worker (`ndpdb bench crash-worker --store kv`) opens the store
//! (recovering the previous crash) and runs an asynchronous store: puts,
//! updates and deletes of keys `k00000000042`, values of 8 to 1,508 bytes
//! that name their key and version; every one to four writes it calls
//! `sync` (group commit). Before each write it prints it (`W seq op`), after
//! each `sync` returns it prints `A seq`: every write up to `seq` is
//! acknowledged. Every 300 writes it checkpoints (and the store checkpoints
//! on its own when the ring is half full).
//!
//! The harness recovers the store, runs its integrity check, reads every
//! pair (a value that does not match its key and version is an integrity
//! error) and compares with the model: the state before the point, every
//! acknowledged write, and a prefix of the unacknowledged ones (one thread
//! writes, so the log holds its writes in order and a crash keeps a prefix
//! of them). A state no prefix explains loses acknowledged writes.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Faults, Profile};
use ndpdb_kv::{KvOptions, KvStore};

use super::model::State;
use super::{Point, XorShift, profile};

/// Writes between the worker's explicit checkpoints.
const CHECKPOINT_EVERY: u64 = 300;
/// The kv mode's image.
pub(super) const CAPACITY_BYTES: u64 = 64 << 20;

pub(super) fn options() -> KvOptions {
    KvOptions { sync: false, frames: 64, first_ppn: 0, pages: None, log_pages: 128, ..KvOptions::default() }
}

fn key(k: i64) -> Vec<u8> {
    format!("k{k:011}").into_bytes()
}

/// The value of version `v` of key `k`: `v`, then bytes that name both.
fn value(k: i64, v: i64) -> Vec<u8> {
    let len = (v.unsigned_abs() % 1500) as usize;
    let mut out = v.to_le_bytes().to_vec();
    out.extend((0..len).map(|i| (k as usize).wrapping_mul(31).wrapping_add(i).wrapping_add(v as usize) as u8));
    out
}

/// The key and version a stored pair holds; None if its bytes do not match.
fn decode(k: &[u8], v: &[u8]) -> Option<(i64, i64)> {
    let k: i64 = std::str::from_utf8(k.strip_prefix(b"k")?).ok()?.parse().ok()?;
    let ver = i64::from_le_bytes(v.get(..8)?.try_into().ok()?);
    (value(k, ver) == v).then_some((k, ver))
}

/// Creates the image and the store with `rows` pairs, checkpointed.
pub(super) fn create(dir: &Path, prof: &Profile, rows: u64) -> Result<State> {
    let opts = DeviceOptions::with_clock(ClockKind::Virtual);
    let dev = Arc::new(Device::create(dir, prof.clone(), Some(CAPACITY_BYTES), opts)?);
    let store = KvStore::create_on(dev, options())?;
    let mut state = State::new();
    for k in 0..rows as i64 {
        store.put(&key(k), &value(k, 1000))?;
        state.insert(k, 1000);
    }
    store.sync()?;
    store.checkpoint()?;
    Ok(state)
}

/// One write, as the worker prints it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Put(i64, i64),
    Update(i64, i64),
    Delete(i64),
}

fn apply(state: &mut State, op: Op) {
    match op {
        Op::Put(k, v) => drop(state.insert(k, v)),
        Op::Update(k, v) => {
            if let Some(x) = state.get_mut(&k) {
                *x = v;
            }
        }
        Op::Delete(k) => drop(state.remove(&k)),
    }
}

/// The worker: open (recovering), then write until killed or the device
/// fails.
pub fn worker(dir: &Path, profile_name: &str, seed: u64, faults: Faults) -> Result<()> {
    let opts = DeviceOptions { faults, ..DeviceOptions::with_clock(ClockKind::Virtual) };
    let dev = Arc::new(Device::open(dir, profile(profile_name)?, opts)?);
    let (store, _) = KvStore::open_on(dev, options())?;
    let mut rng = XorShift::new(seed);
    let keys = 4000;
    let stdout = std::io::stdout();
    let mut batch = 0;
    for seq in 1.. {
        let k = (rng.next_u64() % keys) as i64;
        let v = (rng.next_u64() % 100_000) as i64;
        let op = match rng.next_u64() % 10 {
            0..=6 => Op::Put(k, v),
            7 => Op::Update(k, v),
            _ => Op::Delete(k),
        };
        {
            let mut o = stdout.lock();
            match op {
                Op::Put(k, v) => writeln!(o, "W {seq} S {k} {v}")?,
                Op::Update(k, v) => writeln!(o, "W {seq} U {k} {v}")?,
                Op::Delete(k) => writeln!(o, "W {seq} D {k}")?,
            }
            o.flush()?;
        }
        match op {
            Op::Put(k, v) => store.put(&key(k), &value(k, v))?,
            Op::Update(k, v) => drop(store.update(&key(k), &value(k, v))?),
            Op::Delete(k) => drop(store.delete(&key(k))?),
        }
        if batch == 0 {
            batch = 1 + rng.next_u64() % 4;
        }
        batch -= 1;
        if batch == 0 {
            store.sync()?;
            let mut o = stdout.lock();
            writeln!(o, "A {seq}")?;
            o.flush()?;
        }
        if seq % CHECKPOINT_EVERY == 0 {
            store.checkpoint()?;
        }
    }
    Ok(())
}

/// The worker's writes: acknowledged ones, then the rest in order.
#[derive(Debug, Default)]
struct Transcript {
    acked: Vec<Op>,
    pending: Vec<Op>,
}

impl Transcript {
    fn parse(lines: &[String]) -> Result<Transcript> {
        let mut t = Transcript::default();
        let mut last_w = 0u64;
        for l in lines {
            let w: Vec<&str> = l.split_whitespace().collect();
            let num = |i: usize| -> Result<i64> { Ok(w.get(i).context("truncated line")?.parse()?) };
            match w.first().copied() {
                Some("W") => {
                    last_w = num(1)? as u64;
                    t.pending.push(match w.get(2).copied() {
                        Some("S") => Op::Put(num(3)?, num(4)?),
                        Some("U") => Op::Update(num(3)?, num(4)?),
                        Some("D") => Op::Delete(num(3)?),
                        other => bail!("unknown op {other:?} in `{l}`"),
                    });
                }
                Some("A") => {
                    if num(1)? as u64 != last_w {
                        bail!("acknowledgement `{l}` after write {last_w}");
                    }
                    t.acked.append(&mut t.pending);
                }
                _ => {}
            }
        }
        Ok(t)
    }

    /// (lost acknowledged writes, unacknowledged writes that survived):
    /// `state` must be `before`, the acknowledged writes and a prefix of the
    /// others.
    fn verify(&self, before: &State, state: &State) -> (u64, u64) {
        let mut expected = before.clone();
        self.acked.iter().for_each(|&op| apply(&mut expected, op));
        for n in 0..=self.pending.len() {
            if *state == expected {
                return (0, n as u64);
            }
            if let Some(&op) = self.pending.get(n) {
                apply(&mut expected, op);
            }
        }
        let mut acked_only = before.clone();
        self.acked.iter().for_each(|&op| apply(&mut acked_only, op));
        let lost = self
            .acked
            .iter()
            .filter(|op| {
                let (Op::Put(k, _) | Op::Update(k, _) | Op::Delete(k)) = **op;
                state.get(&k) != acked_only.get(&k)
            })
            .count() as u64;
        (lost.max(1), 0)
    }
}

/// Recovers after point `point`, checks, compares with the model, and
/// checkpoints; the recovered state becomes the model.
pub(super) fn recover(
    dir: &Path,
    prof: &Profile,
    model: &mut State,
    lines: &[String],
    point: u32,
    crash: &'static str,
    at: u64,
) -> Result<Point> {
    let transcript = Transcript::parse(lines)?;
    let dev = Arc::new(Device::open(dir, prof.clone(), DeviceOptions::with_clock(ClockKind::Virtual))?);
    let t0 = Instant::now();
    let (store, stats) = KvStore::open_on(dev.clone(), options()).context("recovery")?;
    let wall_s = t0.elapsed().as_secs_f64();
    let recovery = dev.counters();
    let mut integrity_errors = 0;
    if let Err(e) = store.check() {
        crate::errln!("crash point {point}: integrity: {e}");
        integrity_errors += 1;
    }
    let mut state = State::new();
    for pair in store.scan(b"") {
        let (k, v) = pair?;
        match decode(&k, &v) {
            Some((k, v)) => drop(state.insert(k, v)),
            None => {
                crate::errln!(
                    "crash point {point}: the pair under key {:?} does not match its key",
                    String::from_utf8_lossy(&k)
                );
                integrity_errors += 1;
            }
        }
    }
    let (lost_commits, survived) = transcript.verify(model, &state);
    *model = state;
    store.checkpoint().context("checkpoint after recovery")?;
    Ok(Point {
        point,
        crash,
        at,
        acknowledged_commits: transcript.acked.len() as u64,
        unacknowledged_survived: survived > 0,
        lost_commits,
        integrity_errors,
        recovered_records: stats.records,
        log_truncated: false,
        recovery_s: wall_s,
        recovery_completions: recovery.completions,
        recovery_late_completions: recovery.late_completions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_prefix_of_the_unacknowledged_writes_may_survive_and_acknowledged_ones_must() {
        let before = State::from([(1, 10), (2, 20)]);
        let t = Transcript::parse(&lines("W 1 S 1 11\nW 2 D 2\nA 2\nW 3 U 1 12\nW 4 S 5 50\n")).unwrap();
        assert_eq!((t.acked.len(), t.pending.len()), (2, 2));
        assert_eq!(t.verify(&before, &State::from([(1, 11)])), (0, 0));
        assert_eq!(t.verify(&before, &State::from([(1, 12)])), (0, 1));
        assert_eq!(t.verify(&before, &State::from([(1, 12), (5, 50)])), (0, 2));
        assert_eq!(t.verify(&before, &State::from([(1, 11), (5, 50)])).0, 1, "not a prefix");
        assert_eq!(t.verify(&before, &before).0, 2, "both acknowledged writes are lost");
        assert!(Transcript::parse(&lines("W 1 S 1 1\nA 2\n")).is_err());
    }

    #[test]
    fn values_name_their_key_and_version() {
        let v = value(42, 77);
        assert_eq!(decode(&key(42), &v), Some((42, 77)));
        assert_eq!(decode(&key(43), &v), None);
        let mut bad = v.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(decode(&key(42), &bad), None);
    }
}
