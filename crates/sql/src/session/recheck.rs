//! Read committed's re-check of UPDATE and DELETE (PostgreSQL's
//! EvalPlanQual).
//!
//! An UPDATE or DELETE finds its rows in the statement's snapshot and then
//! writes them one by one. Under read committed a row may have been
//! changed by a transaction that committed after the snapshot (perhaps
//! while this statement waited for its lock). PostgreSQL then looks at the
//! newest version instead: a deleted row is skipped, and on a changed one
//! the WHERE is evaluated again and the SET computed from the new values.
//! ndpdb does the same:
//!
//! ```text
//!  row (vid, new values) from the snapshot
//!    └─► lock the tuple (Txn::lock_current) ─► newest version seen by the snapshot?
//!          yes ─► write the values the statement computed
//!          deleted since ─► skip (not counted in the command tag)
//!          changed since ─► run the statement's source plan once more, its table
//!                           scan replaced by that one newest row: no row ─► skip,
//!                           else write the row it yields
//! ```
//!
//! Repeatable read and serializable do not re-check: the write itself
//! fails with "could not serialize access due to concurrent update"
//! (first updater wins).

use std::sync::Arc;

use ndpdb_txn::Current;

use super::Session;
use super::run::batches_to_rows;
use crate::catalog::TableDef;
use crate::error::{Result, SqlError};
use crate::plan::expr::Expr;
use crate::plan::statement::IsolationLevel;
use crate::plan::{Node, Plan};
use crate::store::mapping::from_storage;
use crate::store::source::storage_table;
use crate::types::{DataType, Value};

impl Session {
    /// The source row to write for tuple `vid` (`row`: what the statement
    /// computed from its snapshot, the VID first), or None to skip it.
    pub(super) fn recheck(
        &mut self,
        def: &Arc<TableDef>,
        source: &Plan,
        vid: u64,
        row: &[Value],
    ) -> Result<Option<Vec<Value>>> {
        if self.txn.as_ref().is_none_or(|t| t.isolation != IsolationLevel::ReadCommitted) {
            return Ok(Some(row.to_vec()));
        }
        let txn = self.sql_txn()?;
        let snapshot = txn.statement_snapshot()?;
        let table = storage_table(&txn, def)?;
        let newest = match txn.with(|x| x.lock_current(&table, vid, &snapshot))? {
            Current::Seen => return Ok(Some(row.to_vec())),
            Current::Changed(None) => return Ok(None),
            Current::Changed(Some(values)) => values,
        };
        let mut literals = Vec::with_capacity(def.columns.len() + 1);
        for (v, c) in newest.iter().zip(&def.columns) {
            literals.push(Expr::Literal { value: from_storage(v, c.ty)?, ty: c.ty });
        }
        literals.push(Expr::Literal { value: Value::Int64(vid as i64), ty: DataType::Int64 });
        let mut plan = source.clone();
        if !replace_target_scan(&mut plan, literals) {
            return Err(SqlError::internal("UPDATE/DELETE source without a scan of its table"));
        }
        let (_, out) = self.execute_plan(plan)?;
        Ok(batches_to_rows(&out.batches)?.into_iter().next())
    }
}

/// Replaces the scan that yields the VIDs (UPDATE and DELETE's target; a
/// subquery's scans do not) by one literal row in the scan's schema.
fn replace_target_scan(plan: &mut Plan, row: Vec<Expr>) -> bool {
    match &mut plan.node {
        Node::Scan { emit_vid: true, columns, table, .. } if columns.len() == table.columns.len() => {
            // The binder's scan reads every column in table order, then the VID.
            debug_assert!(columns.iter().enumerate().all(|(i, &c)| i == c), "a target scan in table order");
            plan.node = Node::Values { rows: vec![row] };
            true
        }
        Node::Filter { input, .. } | Node::Project { input, .. } => replace_target_scan(input, row),
        _ => false,
    }
}
