//! The harness's model of the database: key -> value of every live tuple,
//! the worker's transcript of writes and acknowledgements, and the
//! comparison of a recovered state with what the transcript allows.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};

/// Key -> value of every live tuple.
pub(super) type State = BTreeMap<i64, i64>;

/// One write of a logged transaction, as the worker prints it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Op {
    Set(i64, i64),
    Insert(i64, i64),
    Delete(i64),
    Add(i64, i64),
}

impl Op {
    fn key(&self) -> i64 {
        let (Op::Set(k, _) | Op::Insert(k, _) | Op::Delete(k) | Op::Add(k, _)) = *self;
        k
    }
}

pub(super) fn apply(state: &mut State, ops: &[Op]) {
    for op in ops {
        match *op {
            Op::Set(k, v) | Op::Insert(k, v) => {
                state.insert(k, v);
            }
            Op::Delete(k) => {
                state.remove(&k);
            }
            Op::Add(k, d) => {
                if let Some(v) = state.get_mut(&k) {
                    *v += d;
                }
            }
        }
    }
}

fn parse_ops(words: &[&str]) -> Result<Vec<Op>> {
    let mut ops = Vec::new();
    let mut it = words.iter();
    let num = |w: Option<&&str>| -> Result<i64> { Ok(w.context("truncated op")?.parse()?) };
    while let Some(&w) = it.next() {
        ops.push(match w {
            "S" => Op::Set(num(it.next())?, num(it.next())?),
            "I" => Op::Insert(num(it.next())?, num(it.next())?),
            "D" => Op::Delete(num(it.next())?),
            "+" => Op::Add(num(it.next())?, num(it.next())?),
            other => bail!("unknown op `{other}`"),
        });
    }
    Ok(ops)
}

/// What the worker said before it crashed: its acknowledged transactions in
/// order, and the one whose commit was under way.
#[derive(Debug, Default)]
pub(super) struct Transcript {
    pub(super) acked: Vec<Vec<Op>>,
    pub(super) pending: Option<(u64, Vec<Op>)>,
}

impl Transcript {
    /// Reads the worker's `W seq ops..` (about to commit) and `A seq`
    /// (committed) lines; other lines are ignored.
    pub(super) fn parse(lines: &[String]) -> Result<Transcript> {
        let mut t = Transcript::default();
        for l in lines {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.first().copied() {
                Some("W") => t.pending = Some((w[1].parse()?, parse_ops(&w[2..])?)),
                Some("A") => {
                    let seq: u64 = w[1].parse()?;
                    match t.pending.take() {
                        Some((s, ops)) if s == seq => t.acked.push(ops),
                        other => bail!("worker acknowledged {seq} but was writing {other:?}"),
                    }
                }
                _ => {}
            }
        }
        Ok(t)
    }

    /// Compares the recovered `state` with `before` plus the acknowledged
    /// transactions, and possibly the pending one: (lost commits, whether
    /// the pending commit survived).
    pub(super) fn verify(&self, before: &State, state: &State) -> (u64, bool) {
        let mut expected = before.clone();
        for ops in &self.acked {
            apply(&mut expected, ops);
        }
        let mut with_pending = expected.clone();
        if let Some((_, ops)) = &self.pending {
            apply(&mut with_pending, ops);
        }
        if *state == expected {
            return (0, false);
        }
        if self.pending.is_some() && *state == with_pending {
            return (0, true);
        }
        // Count acknowledged transactions with a write the state lacks
        // (at least one: the state matches neither model).
        let lost = self
            .acked
            .iter()
            .filter(|ops| {
                ops.iter().any(|o| {
                    let k = o.key();
                    state.get(&k) != with_pending.get(&k) && state.get(&k) != expected.get(&k)
                })
            })
            .count() as u64;
        (lost.max(1), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn transcripts_allow_the_pending_commit_and_count_lost_ones() {
        let before = State::from([(0, 10), (1, 20)]);
        let t = Transcript::parse(&lines("W 1 S 0 11 + 1 5\nA 1\nW 2 I 2 7 D 0\nstray\n")).unwrap();
        assert_eq!(t.acked, vec![vec![Op::Set(0, 11), Op::Add(1, 5)]]);
        assert_eq!(t.pending, Some((2, vec![Op::Insert(2, 7), Op::Delete(0)])));
        assert_eq!(t.verify(&before, &State::from([(0, 11), (1, 25)])), (0, false));
        assert_eq!(t.verify(&before, &State::from([(1, 25), (2, 7)])), (0, true));
        assert_eq!(t.verify(&before, &before), (1, false), "the acknowledged commit is lost");
        assert!(Transcript::parse(&lines("W 1 S 0 1\nA 2\n")).is_err(), "an acknowledgement of another write");
        assert!(Transcript::parse(&lines("W 1 X 0\n")).is_err(), "an unknown op");
    }
}
