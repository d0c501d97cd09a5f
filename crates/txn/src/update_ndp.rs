//! Update-NDP: `UPDATE table SET column = expr WHERE predicate` run by the
//! device's PEs (ccSLT, EDBT'22) and installed by the host, with read
//! committed's re-check of the rows a concurrent commit overtook
//! (PostgreSQL's EvalPlanQual).
//!
//! ```text
//!  PEs: per qualifying tuple, lock (VID, visible version) under our id,
//!       write the new version, report (vid, base, new)
//!  host, under the commit gate: install each new version whose base is still the head
//!       read committed:  a row whose base a commit replaced is "stale" ─►
//!                        re-evaluated on the host on its newest version
//!       otherwise:       any such row fails the transaction (first updater wins)
//!  host: read the new versions back for the commit's log record; SSI conflicts
//! ```
//!
//! The device releases nothing: the end of the transaction sweeps the lock
//! table for its id (`locks.rs`).

use std::sync::Arc;

use ndpdb_format::ndp::{Predicate, UpdateExpr};
use ndpdb_format::schema::Value;
use ndpdb_storage::{
    DEFAULT_POLL_LIMIT, Freshness, Head, LogOp, NdpUpdate, NdpUpdateCall, OpKind, ScanStats, StoreError, Table,
    UpdatedTuple,
};

use crate::error::{Result, TxnError};
use crate::lock_order;
use crate::txn::{Isolation, Txn};

/// What installing an update-NDP statement's versions left: the installed
/// rows with their old heads, and under read committed the stale rows to
/// re-evaluate.
type Installed = (Vec<(u64, Head)>, Vec<UpdatedTuple>);

impl Txn<'_> {
    /// `UPDATE table SET column = expr WHERE predicate` on the device's PEs
    /// (update-NDP, ccSLT): the PEs lock and write the new versions, the host
    /// installs them if no other writer got there first; returns the number
    /// of tuples updated. A tuple another transaction changed since the
    /// statement's snapshot fails the transaction with a serialization error
    /// under repeatable read and serializable; under read committed the host
    /// re-evaluates that row on its newest version, as PostgreSQL does
    /// ([`Txn::ndp_update_stats`]). The value of `expr` is in the column's
    /// stored units (a decimal's value times 10^scale).
    pub fn ndp_update(
        &mut self,
        table: &Arc<Table>,
        column: u16,
        expr: UpdateExpr,
        predicate: Option<&Predicate>,
        pes: u32,
    ) -> Result<u64> {
        self.ndp_update_stats(table, column, expr, predicate, pes).map(|(updated, _)| updated)
    }

    /// [`Txn::ndp_update`], also returning what the device calls did (the
    /// counting call and the update call together: counters, modelled and
    /// wall time).
    pub fn ndp_update_stats(
        &mut self,
        table: &Arc<Table>,
        column: u16,
        expr: UpdateExpr,
        predicate: Option<&Predicate>,
        pes: u32,
    ) -> Result<(u64, ScanStats)> {
        self.ndp_update_fresh(table, column, expr, predicate, pes, Freshness::Ship)
    }

    /// [`Txn::ndp_update_stats`] with the device's calls getting the delta
    /// pages as `freshness` says (Ship, Flush, or Cbm: through the mirror).
    pub fn ndp_update_fresh(
        &mut self,
        table: &Arc<Table>,
        column: u16,
        expr: UpdateExpr,
        predicate: Option<&Predicate>,
        pes: u32,
        freshness: Freshness,
    ) -> Result<(u64, ScanStats)> {
        let snapshot = self.statement_snapshot()?;
        self.note_scan(table);
        self.device_locks = true;
        lock_order::assert_none_held("the device's PEs wait for tuple locks");
        let store = self.db.store();
        let poll_limit = DEFAULT_POLL_LIMIT;
        let call = NdpUpdateCall { table, snapshot: &snapshot, column, expr, predicate, pes, poll_limit, freshness };
        let up = match store.ndp_update(&call) {
            Ok(u) => u,
            Err(e) => return self.fail(e.into()),
        };
        let (old, stale) = self.install_ndp_update(table, &up)?;
        for &(vid, head) in &old {
            if head.create_ts != self.id {
                self.undo.push((table.clone(), vid, head));
            }
        }
        self.log_ndp_update(table, &old)?;
        let mut updated = old.len() as u64;
        for t in &stale {
            updated += u64::from(self.reevaluate(table, t.vid, column, expr, predicate)?);
        }
        self.note_ssi(|g, me| {
            let vids: Vec<u64> = old.iter().map(|(v, _)| *v).collect();
            g.update_ndp(me, table.id, &vids);
        });
        Ok((updated, up.stats))
    }

    /// Points the VID map at the PEs' new versions, under the commit gate.
    /// First updater wins: a row whose locked version a later commit
    /// replaced fails the statement, except under read committed, where
    /// (as PostgreSQL does) it is returned as stale, to be re-evaluated on
    /// its newest version. Returns the installed rows' old heads.
    fn install_ndp_update(&mut self, table: &Table, up: &NdpUpdate) -> Result<Installed> {
        let store = self.db.store();
        let writing = self.db.gate_shared();
        if self.isolation == Isolation::ReadCommitted {
            return Ok(store.install_update_current(table, up, self.id));
        }
        let installed = store.install_update(table, up, self.id);
        drop(writing);
        match installed {
            Ok(Ok(old)) => Ok((old, vec![])),
            Ok(Err(_vid)) => self.fail(TxnError::Serialization("concurrent update")),
            Err(e) => self.fail(e.into()),
        }
    }

    /// Adds the installed rows to the commit's log record: the device wrote
    /// the new tuples, so they are read back.
    fn log_ndp_update(&mut self, table: &Table, old: &[(u64, Head)]) -> Result<()> {
        let store = self.db.store();
        for &(vid, _) in old {
            let new = table.head(vid).expect("installed above").rid;
            match store.read_version(table, new) {
                Ok((_, data)) => self.log_write(LogOp { kind: OpKind::Update, table: table.id, vid, data }),
                Err(e) => return self.fail(e.into()),
            }
        }
        Ok(())
    }

    /// Read committed, for a row an update-NDP statement updated from a
    /// version that a concurrent commit has since replaced: PostgreSQL's
    /// EvalPlanQual. Locks the row's newest version, checks the predicate on
    /// it again and applies the expression to it on the host (the rules of
    /// [`UpdateExpr::new_value`], as on the device). A row deleted meanwhile,
    /// or one that no longer qualifies, is left alone. Returns whether the
    /// row was updated.
    fn reevaluate(
        &mut self,
        table: &Arc<Table>,
        vid: u64,
        column: u16,
        expr: UpdateExpr,
        predicate: Option<&Predicate>,
    ) -> Result<bool> {
        self.lock(table, vid)?;
        let head = table.head(vid).unwrap_or(Head::NONE);
        if head.rid.is_none() || head.tombstone {
            return Ok(false);
        }
        let mut values = match self.db.store().read_version(table, head.rid) {
            Ok((_, data)) => match table.layout.decode(&data) {
                Ok(v) => v,
                Err(e) => return self.fail(TxnError::Store(StoreError::Corrupt(format!("VID {vid}: {e}")))),
            },
            Err(e) => return self.fail(e.into()),
        };
        let int = |v: &Value| match v {
            Value::Int(i) => Some(*i),
            _ => None,
        };
        // The predicate as the PEs and the host scans evaluate it.
        if let Some(p) = predicate
            && !p
                .eval(|t| Ok::<_, ()>(values.get(usize::from(t.column)).cloned().unwrap_or(Value::Null)))
                .unwrap_or(false)
        {
            return Ok(false);
        }
        let c = usize::from(column);
        match expr.new_value(int(&values[c]), table.columns[c].ty) {
            Ok(Some(v)) => values[c] = Value::Int(v),
            Ok(None) => {}
            Err(e) => {
                return self.fail(TxnError::InvalidInput(format!("VID {vid}: column {}: {e}", table.columns[c].name)));
            }
        }
        self.update(table, vid, &values)?;
        Ok(true)
    }
}
