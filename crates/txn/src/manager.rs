//! The transaction manager's state: the id counter, the active set with
//! each active transaction's xmin, the pinned snapshots, the waits-for
//! graph and the SSI graph.
//!
//! ```text
//!  next_id 12   active {7, 9, 11}   xmin {7: 7, 9: 7, 11: 7}   pinned {1: 5}
//!  snapshot for 9 = (xmax 12, active {7, 11}, own 9)
//!  GC horizon     = min(xmin ∪ pinned xmax ∪ {next_id}) = 5
//! ```
//!
//! One counter numbers transactions and commits: a commit takes the next
//! id as its sequence number, so "committed after T began" is `seq > T`
//! (SSI's concurrency test). Pure bookkeeping: `Database` keeps it under
//! its manager mutex and does the I/O (logging pins, checkpoints) around
//! it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ndpdb_format::ndp::Snapshot;
use ndpdb_storage::TxnMeta;

use crate::deadlock::WaitsFor;
use crate::ssi::SsiGraph;
use crate::txn::Isolation;

#[derive(Default)]
pub(crate) struct Manager {
    pub(crate) next_id: u64,
    pub(crate) active: BTreeSet<u64>,
    /// Per active transaction, the smallest id it may not see: the oldest
    /// transaction active when it began (or itself).
    xmin: HashMap<u64, u64>,
    /// Host transactions queued for a tuple lock, and the transactions
    /// ahead of them in its bucket (the deadlock detector's graph).
    pub(crate) waits_for: WaitsFor,
    /// Serializable transactions and their rw-antidependencies.
    pub(crate) ssi: SsiGraph,
    /// Pinned snapshots, kept across restarts: id -> xmax.
    pub(crate) pinned: BTreeMap<u64, u64>,
}

impl Manager {
    /// The manager of a database whose checkpoint or log left `meta`.
    pub(crate) fn new(meta: TxnMeta) -> Manager {
        Manager { next_id: meta.next_txn.max(1), pinned: meta.snapshots.into_iter().collect(), ..Manager::default() }
    }

    /// What a checkpoint keeps of the manager.
    pub(crate) fn meta(&self) -> TxnMeta {
        TxnMeta { next_txn: self.next_id, snapshots: self.pinned_snapshots() }
    }

    /// Pinned snapshots as (id, xmax), by id.
    pub(crate) fn pinned_snapshots(&self) -> Vec<(u64, u64)> {
        self.pinned.iter().map(|(&i, &x)| (i, x)).collect()
    }

    /// Starts a transaction; returns its id.
    pub(crate) fn begin(&mut self, isolation: Isolation) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let xmin = self.active.iter().next().copied().unwrap_or(id).min(id);
        self.active.insert(id);
        self.xmin.insert(id, xmin);
        if isolation == Isolation::Serializable {
            self.ssi.begin(id);
        }
        id
    }

    /// The snapshot of transaction `own` now.
    pub(crate) fn snapshot(&self, own: u64) -> Snapshot {
        Snapshot { xmax: self.next_id, active: self.active.iter().copied().filter(|&t| t != own).collect(), own }
    }

    /// Active transaction `id` commits: it leaves the active set with the
    /// next sequence number.
    pub(crate) fn commit(&mut self, id: u64) {
        debug_assert!(self.active.contains(&id), "transaction {id} commits but is not active");
        debug_assert!(!self.waits_for.is_waiting(id), "transaction {id} commits while waiting for a lock");
        let seq = self.next_id;
        self.next_id += 1;
        self.active.remove(&id);
        self.xmin.remove(&id);
        self.waits_for.forget(id);
        self.ssi.commit(id, seq);
        self.ssi.cleanup(self.oldest_active());
    }

    /// Active transaction `id` aborts: it leaves the active set, and the
    /// SSI graph forgets it.
    pub(crate) fn abort(&mut self, id: u64) {
        debug_assert!(self.active.contains(&id), "transaction {id} aborts but is not active");
        self.active.remove(&id);
        self.xmin.remove(&id);
        self.waits_for.forget(id);
        self.ssi.forget(id);
        self.ssi.cleanup(self.oldest_active());
    }

    fn oldest_active(&self) -> Option<u64> {
        self.active.iter().next().copied()
    }

    /// Versions created by transactions below this id are visible to every
    /// open and future snapshot.
    pub(crate) fn gc_horizon(&self) -> u64 {
        self.xmin.values().chain(self.pinned.values()).copied().min().unwrap_or(self.next_id).min(self.next_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Manager {
        Manager::new(TxnMeta { next_txn: 0, snapshots: vec![] })
    }

    #[test]
    fn ids_snapshots_and_xmin() {
        let mut m = fresh();
        assert_eq!(m.next_id, 1, "id 0 is never used");
        let a = m.begin(Isolation::ReadCommitted);
        let b = m.begin(Isolation::RepeatableRead);
        assert_eq!((a, b), (1, 2));
        let s = m.snapshot(b);
        assert_eq!((s.xmax, s.active.as_slice(), s.own), (3, &[1][..], 2));
        assert_eq!(m.gc_horizon(), 1);
        m.commit(a);
        assert_eq!(m.next_id, 4, "the commit took sequence number 3");
        assert_eq!(m.snapshot(b).active, Vec::<u64>::new());
        // b's xmin is still a: what a saw may be what b reads.
        assert_eq!(m.gc_horizon(), 1);
        let c = m.begin(Isolation::Serializable);
        assert_eq!(c, 4);
        m.abort(b);
        assert_eq!(m.gc_horizon(), 2, "b was active when c began");
        m.commit(c);
        assert!(m.active.is_empty());
        assert_eq!(m.gc_horizon(), m.next_id);
    }

    #[test]
    fn pinned_snapshots_hold_the_horizon_and_survive_in_meta() {
        let mut m = Manager::new(TxnMeta { next_txn: 20, snapshots: vec![(1, 8), (2, 15)] });
        assert_eq!(m.gc_horizon(), 8);
        let t = m.begin(Isolation::ReadCommitted);
        assert_eq!(t, 20);
        m.pinned.remove(&1);
        assert_eq!(m.gc_horizon(), 15);
        let meta = m.meta();
        assert_eq!((meta.next_txn, meta.snapshots), (21, vec![(2, 15)]));
    }

    #[test]
    fn an_ended_transaction_leaves_the_waits_for_graph() {
        let mut m = fresh();
        let a = m.begin(Isolation::ReadCommitted);
        let b = m.begin(Isolation::ReadCommitted);
        let c = m.begin(Isolation::ReadCommitted);
        assert!(m.waits_for.wait(b, &[a]));
        assert!(m.waits_for.wait(c, &[b]));
        m.abort(b);
        assert!(!m.waits_for.is_waiting(b));
        // c no longer waits for b, so a may wait for c.
        assert!(m.waits_for.wait(a, &[c]));
        m.waits_for.stop_waiting(a);
        m.commit(a);
        assert!(m.waits_for.wait(c, &[]));
    }

    #[test]
    fn serializable_write_skew_through_the_manager() {
        let mut m = fresh();
        let a = m.begin(Isolation::Serializable);
        let b = m.begin(Isolation::Serializable);
        for t in [a, b] {
            m.ssi.read_tuple(t, (1, 1));
            m.ssi.read_tuple(t, (1, 2));
        }
        m.ssi.overwrite(a, (1, 1));
        m.ssi.overwrite(b, (1, 2));
        assert!(!m.ssi.commit_unsafe(a));
        m.commit(a);
        assert!(m.ssi.commit_unsafe(b), "a is kept while it overlaps b");
        m.abort(b);
        // Nothing overlaps a any more: it is cleaned up.
        let c = m.begin(Isolation::Serializable);
        assert!(!m.ssi.commit_unsafe(c));
    }
}
