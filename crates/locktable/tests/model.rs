//! The shared table against a sequential model: one `VecDeque` per bucket.
//! Random sequences of requests, releases, cancellations and sweeps of a
//! transaction's locks on a table of one or two buckets (so collisions and
//! full queues are common) must give the model's answers and leave the
//! model's words in every bucket, flag bits included; a queued request
//! waits for the model's queue ahead of it.

use std::collections::VecDeque;

use ndpdb_locktable::bucket::bucket_index;
use ndpdb_locktable::protocol::WAITERS;
use ndpdb_locktable::{Attempt, CancelOutcome, LockError, LockKey, LockTable, ReleasedAll};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Acquire { vid: u64, ts: u64 },
    Release { vid: u64, ts: u64 },
    Cancel { vid: u64, ts: u64 },
    ReleaseAll { ts: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    let args = (0u64..4, 1u64..=12);
    prop_oneof![
        3 => args.clone().prop_map(|(vid, ts)| Op::Acquire { vid, ts }),
        2 => args.clone().prop_map(|(vid, ts)| Op::Release { vid, ts }),
        1 => args.prop_map(|(vid, ts)| Op::Cancel { vid, ts }),
        1 => (1u64..=12).prop_map(|ts| Op::ReleaseAll { ts }),
    ]
}

struct Model {
    queues: Vec<VecDeque<u64>>,
}

impl Model {
    fn acquire(&mut self, b: usize, ts: u64) -> Attempt {
        let q = &mut self.queues[b];
        if q.front() == Some(&ts) {
            return Attempt::AlreadyHeld;
        }
        if let Some(position) = q.iter().position(|&x| x == ts) {
            return Attempt::Queued { position };
        }
        if q.len() == 8 {
            return Attempt::Full;
        }
        q.push_back(ts);
        if q.len() == 1 { Attempt::Acquired } else { Attempt::Queued { position: q.len() - 1 } }
    }

    fn release(&mut self, b: usize, ts: u64) -> Result<Option<u64>, Option<u64>> {
        let q = &mut self.queues[b];
        if q.front() != Some(&ts) {
            return Err(q.front().copied());
        }
        q.pop_front();
        Ok(q.front().copied())
    }

    fn cancel(&mut self, b: usize, ts: u64) -> CancelOutcome {
        let q = &mut self.queues[b];
        match q.iter().position(|&x| x == ts) {
            Some(0) => CancelOutcome::Granted,
            Some(i) => {
                q.remove(i);
                CancelOutcome::Removed
            }
            None => CancelOutcome::NotQueued,
        }
    }

    /// Takes `ts` out of every queue; counts the queues it held and waited in.
    fn release_all(&mut self, ts: u64) -> ReleasedAll {
        let mut done = ReleasedAll::default();
        for q in &mut self.queues {
            match q.iter().position(|&x| x == ts) {
                Some(0) => done.released += 1,
                Some(_) => done.cancelled += 1,
                None => continue,
            }
            q.retain(|&x| x != ts);
        }
        done
    }

    fn words(&self, b: usize) -> [u64; 8] {
        let mut words = [0; 8];
        for (w, &ts) in words.iter_mut().zip(&self.queues[b]) {
            *w = ts;
        }
        // The waiters bit: set exactly when someone waits behind the holder.
        if words[1] != 0 {
            words[0] |= WAITERS;
        }
        words
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn table_matches_sequential_model(buckets in prop_oneof![Just(1usize), Just(2)], ops in prop::collection::vec(op(), 1..200)) {
        let table = LockTable::with_bytes(buckets * 64).unwrap();
        let mut model = Model { queues: vec![VecDeque::new(); buckets] };
        for op in ops {
            match op {
                Op::Acquire { vid, ts } => {
                    let key = LockKey::new(vid, 0);
                    let b = bucket_index(key, buckets as u64 - 1);
                    let attempt = table.try_acquire(key, ts).unwrap();
                    prop_assert_eq!(attempt, model.acquire(b, ts));
                    if let Attempt::Queued { position } = attempt {
                        let ahead: Vec<u64> = model.queues[b].iter().take(position).copied().collect();
                        prop_assert_eq!(table.ahead_of(key, ts, position), ahead);
                    }
                }
                Op::Release { vid, ts } => {
                    let key = LockKey::new(vid, 0);
                    let b = bucket_index(key, buckets as u64 - 1);
                    let expected = model.release(b, ts).map_err(|holder| LockError::NotHolder { key, ts, holder });
                    prop_assert_eq!(table.release(key, ts), expected);
                }
                Op::Cancel { vid, ts } => {
                    let key = LockKey::new(vid, 0);
                    let b = bucket_index(key, buckets as u64 - 1);
                    prop_assert_eq!(table.cancel(key, ts).unwrap(), model.cancel(b, ts));
                }
                Op::ReleaseAll { ts } => {
                    prop_assert_eq!(table.release_all(ts).unwrap(), model.release_all(ts));
                }
            }
            for b in 0..buckets {
                prop_assert_eq!(table.buckets()[b].words(), model.words(b));
            }
        }
    }
}
