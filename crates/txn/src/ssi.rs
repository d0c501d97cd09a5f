//! Serializable snapshot isolation's bookkeeping (Cahill et al., as
//! PostgreSQL applies it): each serializable transaction's SIREAD marks and
//! writes, and the read-write antidependencies between concurrent ones.
//!
//! ```text
//!   T1 ──rw──► T2 ──rw──► T3     T1 read a version T2 overwrote (or did not see),
//!                                T2 read one T3 overwrote:
//!   T2.in_from = {T1}, T2.out_to = {T3}
//!   T3 committed first  ⇒  T2 is a dangerous pivot: T2 fails at commit, and so
//!                          does T1 (it would complete the structure).
//! ```
//!
//! Pure: the transaction manager keeps one [`SsiGraph`] under its mutex,
//! `Txn` reports each read and write of a serializable transaction, and a
//! commit asks [`SsiGraph::commit_unsafe`]. Only serializable transactions
//! are tracked; an edge is recorded only between concurrent ones. A
//! committed transaction is kept while it overlaps an active one
//! ([`SsiGraph::cleanup`]); an aborted one is forgotten with its edges.

use std::collections::{HashMap, HashSet};

use ndpdb_storage::TableId;

/// A tuple: (table, VID).
pub(crate) type Key = (TableId, u64);

/// One serializable transaction's marks and edges.
#[derive(Debug, Default)]
struct Ssi {
    reads: HashSet<Key>,
    table_reads: HashSet<TableId>,
    writes: HashSet<Key>,
    tables_written: HashSet<TableId>,
    /// Readers that read what we overwrote (`reader -rw-> us`).
    in_from: HashSet<u64>,
    /// Writers that overwrote what we read (`us -rw-> writer`).
    out_to: HashSet<u64>,
    /// Commit sequence number, once committed.
    committed: Option<u64>,
}

/// The serializable transactions, active ones and committed ones that
/// overlapped a still active one, and the rw-antidependencies among them.
#[derive(Debug, Default)]
pub(crate) struct SsiGraph {
    txns: HashMap<u64, Ssi>,
}

impl SsiGraph {
    /// Starts tracking serializable transaction `t`.
    pub(crate) fn begin(&mut self, t: u64) {
        let fresh = self.txns.insert(t, Ssi::default()).is_none();
        debug_assert!(fresh, "transaction {t} began twice");
    }

    /// Whether `other` overlapped `me`: it was active when `me` started or
    /// started while `me` ran (committed transactions are kept only while
    /// they overlap a running one).
    fn concurrent(&self, me: u64, other: u64) -> bool {
        other != me && self.txns.get(&other).is_some_and(|s| s.committed.is_none_or(|c| c > me))
    }

    /// Records `reader -rw-> writer`.
    fn rw_conflict(&mut self, reader: u64, writer: u64) {
        if let Some(r) = self.txns.get_mut(&reader) {
            r.out_to.insert(writer);
        }
        if let Some(w) = self.txns.get_mut(&writer) {
            w.in_from.insert(reader);
        }
    }

    /// Records `r -rw-> writer` for each `r` in `readers` concurrent with
    /// `writer`.
    fn conflicts_with_readers(&mut self, readers: Vec<u64>, writer: u64) {
        for r in readers {
            if self.concurrent(writer, r) {
                self.rw_conflict(r, writer);
            }
        }
    }

    /// The tracked transactions whose marks satisfy `read`.
    fn readers(&self, read: impl Fn(&Ssi) -> bool) -> Vec<u64> {
        self.txns.iter().filter(|(_, s)| read(s)).map(|(t, _)| *t).collect()
    }

    /// Whether `t` committed. Edges never name aborted transactions
    /// (`forget` removes them), so one that is no longer tracked committed
    /// long ago and was cleaned up.
    fn committed(&self, t: u64) -> bool {
        self.txns.get(&t).is_none_or(|s| s.committed.is_some())
    }

    /// A pivot `in -rw-> t -rw-> out` whose `out` side has committed.
    fn dangerous_pivot(&self, t: u64) -> bool {
        self.txns.get(&t).is_some_and(|s| !s.in_from.is_empty() && s.out_to.iter().any(|&o| self.committed(o)))
    }

    /// Whether committing `t` would complete a dangerous structure
    /// `T1 -rw-> T2 -rw-> T3` in which T3 committed first (Cahill's rule as
    /// PostgreSQL applies it): `t` is the pivot, or `t` is T1 of a pivot
    /// whose T3 has committed.
    pub(crate) fn commit_unsafe(&self, t: u64) -> bool {
        self.dangerous_pivot(t)
            || self.txns.get(&t).is_some_and(|s| s.out_to.iter().any(|&p| p != t && self.dangerous_pivot(p)))
    }

    /// Marks `t` committed with commit sequence number `seq`.
    pub(crate) fn commit(&mut self, t: u64, seq: u64) {
        if let Some(s) = self.txns.get_mut(&t) {
            debug_assert!(s.committed.is_none(), "transaction {t} committed twice");
            s.committed = Some(seq);
        }
    }

    /// Forgets an aborted transaction's edges.
    pub(crate) fn forget(&mut self, t: u64) {
        self.txns.remove(&t);
        for s in self.txns.values_mut() {
            s.in_from.remove(&t);
            s.out_to.remove(&t);
        }
    }

    /// Drops the committed transactions that overlap no active one;
    /// `oldest_active` is the oldest active transaction, if any.
    pub(crate) fn cleanup(&mut self, oldest_active: Option<u64>) {
        let oldest = oldest_active.unwrap_or(u64::MAX);
        self.txns.retain(|_, s| s.committed.is_none_or(|c| c > oldest));
    }

    // ---- What a serializable transaction reports. ----

    /// `reader` read tuple `key` (its SIREAD mark).
    pub(crate) fn read_tuple(&mut self, reader: u64, key: Key) {
        if let Some(s) = self.txns.get_mut(&reader) {
            s.reads.insert(key);
        }
    }

    /// `reader` passed over a version `writer` created that its snapshot
    /// cannot see: it read "before" it.
    pub(crate) fn read_past(&mut self, reader: u64, writer: u64) {
        if self.concurrent(reader, writer) {
            self.rw_conflict(reader, writer);
        }
    }

    /// `reader` scanned `table` (a table-level mark): it read before every
    /// concurrent writer of the table.
    pub(crate) fn scan(&mut self, reader: u64, table: TableId) {
        if let Some(s) = self.txns.get_mut(&reader) {
            s.table_reads.insert(table);
        }
        let writers = self.readers(|s| s.tables_written.contains(&table));
        for w in writers {
            if self.concurrent(reader, w) {
                self.rw_conflict(reader, w);
            }
        }
    }

    /// `writer` is about to overwrite tuple `key`: every concurrent reader
    /// of it, or scanner of its table, read before it.
    pub(crate) fn overwrite(&mut self, writer: u64, key: Key) {
        let readers = self.readers(|s| s.reads.contains(&key) || s.table_reads.contains(&key.0));
        self.conflicts_with_readers(readers, writer);
    }

    /// `writer` inserted into `table`: a new tuple is a write "after" every
    /// concurrent scan of its table (the scan's predicate might have
    /// matched it), as PostgreSQL's predicate locks make it (G2).
    pub(crate) fn insert(&mut self, writer: u64, table: TableId) {
        let scanners = self.readers(|s| s.table_reads.contains(&table));
        self.conflicts_with_readers(scanners, writer);
    }

    /// `writer` wrote tuple `key`.
    pub(crate) fn wrote(&mut self, writer: u64, key: Key) {
        if let Some(s) = self.txns.get_mut(&writer) {
            s.writes.insert(key);
            s.tables_written.insert(key.0);
        }
    }

    /// `writer`'s update-NDP statement updated tuples `vids` of `table`:
    /// every concurrent scanner of the table or reader of one of them read
    /// before it.
    pub(crate) fn update_ndp(&mut self, writer: u64, table: TableId, vids: &[u64]) {
        let readers =
            self.readers(|s| s.table_reads.contains(&table) || vids.iter().any(|v| s.reads.contains(&(table, *v))));
        self.conflicts_with_readers(readers, writer);
        if let Some(s) = self.txns.get_mut(&writer) {
            s.writes.extend(vids.iter().map(|v| (table, *v)));
            s.tables_written.insert(table);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TableId = 1;

    fn graph(txns: &[u64]) -> SsiGraph {
        let mut g = SsiGraph::default();
        for &t in txns {
            g.begin(t);
        }
        g
    }

    fn edge(g: &SsiGraph, reader: u64, writer: u64) -> bool {
        g.txns[&reader].out_to.contains(&writer) && g.txns[&writer].in_from.contains(&reader)
    }

    /// Write skew: T1 and T2 each read both tuples and write one. The
    /// first to commit succeeds; the second is then a pivot whose out side
    /// committed.
    #[test]
    fn write_skew_fails_the_second_committer() {
        let mut g = graph(&[1, 2]);
        for t in [1, 2] {
            g.read_tuple(t, (T, 10));
            g.read_tuple(t, (T, 20));
        }
        g.overwrite(1, (T, 10));
        g.wrote(1, (T, 10));
        g.overwrite(2, (T, 20));
        g.wrote(2, (T, 20));
        assert!(edge(&g, 2, 1) && edge(&g, 1, 2));
        assert!(!g.commit_unsafe(1), "nothing committed yet");
        g.commit(1, 3);
        assert!(g.commit_unsafe(2));
    }

    /// One edge is no anomaly; a chain whose T3 has not committed is none
    /// yet.
    #[test]
    fn a_single_edge_or_an_uncommitted_out_side_is_safe() {
        let mut g = graph(&[1, 2, 3]);
        g.read_tuple(1, (T, 10));
        g.overwrite(2, (T, 10));
        assert!(edge(&g, 1, 2));
        assert!(!g.commit_unsafe(1) && !g.commit_unsafe(2));
        g.read_tuple(2, (T, 20));
        g.overwrite(3, (T, 20));
        assert!(!g.commit_unsafe(2), "T3 has not committed");
        g.commit(3, 4);
        assert!(g.commit_unsafe(2), "T2 is the pivot");
        assert!(g.commit_unsafe(1), "T1 would complete the structure");
    }

    /// Edges only between concurrent transactions: a reader that began
    /// after the writer committed read its version.
    #[test]
    fn no_edge_to_a_transaction_committed_before_the_reader_began() {
        let mut g = graph(&[1]);
        g.commit(1, 2);
        g.begin(3);
        g.read_past(3, 1);
        assert!(!g.txns[&3].out_to.contains(&1));
        // A transaction that committed after the reader began counts.
        g.begin(4);
        g.begin(5);
        g.commit(5, 6);
        g.read_past(4, 5);
        assert!(edge(&g, 4, 5));
        // Nor with itself, nor with an untracked one.
        g.read_past(4, 4);
        g.read_past(4, 99);
        assert_eq!(g.txns[&4].out_to.len(), 1);
    }

    #[test]
    fn scans_and_inserts_conflict_at_table_level() {
        let mut g = graph(&[1, 2, 3]);
        g.wrote(2, (T, 5));
        g.scan(1, T);
        assert!(edge(&g, 1, 2), "the scan read before T2's write");
        g.insert(3, T);
        assert!(edge(&g, 1, 3), "T3's insert is after T1's scan");
        g.insert(3, T + 1);
        g.overwrite(3, (T + 1, 7));
        assert_eq!(g.txns[&3].in_from.len(), 1, "another table conflicts with nobody");
    }

    #[test]
    fn update_ndp_conflicts_with_readers_of_its_tuples() {
        let mut g = graph(&[1, 2, 3]);
        g.read_tuple(1, (T, 10));
        g.read_tuple(2, (T, 11));
        g.update_ndp(3, T, &[10, 12]);
        assert!(edge(&g, 1, 3));
        assert!(!g.txns[&2].out_to.contains(&3));
        assert!(g.txns[&3].tables_written.contains(&T));
        assert!(g.txns[&3].writes.contains(&(T, 12)));
    }

    #[test]
    fn forget_removes_an_aborted_transaction_and_its_edges() {
        let mut g = graph(&[1, 2, 3]);
        g.read_tuple(1, (T, 10));
        g.overwrite(2, (T, 10));
        g.read_tuple(2, (T, 20));
        g.overwrite(3, (T, 20));
        g.commit(3, 4);
        assert!(g.commit_unsafe(1));
        g.forget(2);
        assert!(!g.txns.contains_key(&2));
        assert!(g.txns[&1].out_to.is_empty() && g.txns[&3].in_from.is_empty());
        assert!(!g.commit_unsafe(1));
    }

    #[test]
    fn cleanup_keeps_committed_transactions_that_overlap_an_active_one() {
        let mut g = graph(&[1, 2, 5]);
        g.commit(1, 3);
        g.commit(2, 6);
        // Oldest active is 5: T1 committed (3) before it began, T2 (6) after.
        g.cleanup(Some(5));
        assert!(!g.txns.contains_key(&1));
        assert!(g.txns.contains_key(&2) && g.txns.contains_key(&5));
        // Without active transactions only active (uncommitted) ones would stay.
        g.commit(5, 7);
        g.cleanup(None);
        assert!(g.txns.is_empty());
        // A forgotten transaction counts as committed long ago.
        assert!(g.committed(42));
    }
}
