//! Point queries: a prepared plan that reads rows by the whole key of an
//! index, run without the executor.
//!
//! ```text
//!  prepare ─► optimize ─► PointPlan::of(plan)      once per cached plan
//!     [Project of columns] ─► Index Scan, Index Cond: every key column = $n or literal,
//!                             filter: nothing but those equalities
//!  execute ─► key of the bounds ─► IndexStore::vids_into (entries in place)
//!          ─► per VID: the version the snapshot sees (read.rs)
//!          ─► its key = the key looked up? (the re-check, mod.rs "MVCC")
//!          ─► the output columns as Values (no Arrow batch, no pipeline)
//! ```
//!
//! The general path builds an operator tree, Arrow arrays for one row, a
//! batch, a filter and a projection per execution; for a lookup of one row
//! those cost several times the B+-tree descent and the version read. A
//! [`PointPlan`] is what the executor would do for such a plan, with the
//! work that does not change between executions done once: the index's key
//! layout, the output columns, the storage table.
//!
//! **Equal results.** The scan's filter is exactly the equalities the
//! index bounds express (checked when the plan is recognised), and on the
//! key types allowed here SQL `=` is equality of the encoded keys (integers,
//! numeric, date, timestamp, boolean, text and varchar in byte order; not
//! double, where `0 = -0`, nor char(n), whose padding the key trims), so
//! comparing the visible version's key with the key looked up is the
//! filter. A NULL bound matches nothing (`id = NULL` is not true). A
//! parameter value whose type is not the parameter's own (an integer for a
//! bigint `$1`, a value for a numeric `$1`) would need the executor's cast: [`PointPlan::key`] gives
//! None and the caller runs the general path.

use std::sync::Arc;

use ndpdb_storage::Table;

use super::IndexStore;
use super::keys::{IndexKeys, KeyRange, key_column};
use super::read::{note_key_read, note_read, visible};
use crate::catalog::TableDef;
use crate::error::Result;
use crate::plan::{Access, BinaryOp, Expr, Node, Plan};
use crate::store::mapping::from_storage;
use crate::store::txn::SqlTxn;
use crate::types::{DataType, Value};

/// A plan that reads rows by the whole key of one index (module doc).
#[derive(Debug, Clone)]
pub struct PointPlan {
    table: Arc<TableDef>,
    keys: IndexKeys,
    /// One per key column: a literal or a parameter.
    bounds: Vec<Expr>,
    /// The table columns of the output, in output order.
    output: Vec<usize>,
    /// The index is unique (serializable reads mark tuples, `read.rs`).
    unique: bool,
}

impl PointPlan {
    /// The point plan of `plan`, if it is one: a scan (under a projection
    /// of its columns) whose index bounds fix every key column and whose
    /// filter is nothing else.
    pub fn of(plan: &Plan) -> Option<PointPlan> {
        let (scan, picks) = match &plan.node {
            Node::Project { input, exprs } => {
                let picks = exprs
                    .iter()
                    .map(|e| match e {
                        Expr::Column { index, .. } => Some(*index),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                (input.as_ref(), Some(picks))
            }
            _ => (plan, None),
        };
        let Node::Scan { table, columns, filter, emit_vid: false, access } = &scan.node else { return None };
        let Access::Index { index, lower, upper, lower_inclusive: true, upper_inclusive: true } = access else {
            return None;
        };
        if lower != upper || lower.len() != index.columns.len() || !lower.iter().all(is_bound) {
            return None;
        }
        let keys = IndexKeys::of(table, index).ok()?;
        if !keys.types.iter().all(|&t| key_equality_is_sql_equality(t)) {
            return None;
        }
        if let Some(f) = filter
            && !filter_is_the_key(f, columns, &index.columns, lower)
        {
            return None;
        }
        let output = match picks {
            Some(p) => p.iter().map(|&i| columns.get(i).copied()).collect::<Option<Vec<_>>>()?,
            None => columns.clone(),
        };
        Some(PointPlan { table: table.clone(), keys, bounds: lower.clone(), output, unique: index.unique })
    }

    /// The key (prefix ‖ key columns) the bounds make with `params`;
    /// `Some(None)`: a bound is NULL or not representable, no row matches;
    /// None: a parameter's value is not of its type (run the general path).
    pub fn key(&self, params: &[Value]) -> Option<Option<Vec<u8>>> {
        let mut values = Vec::with_capacity(self.bounds.len());
        for b in &self.bounds {
            let v = match b {
                Expr::Literal { value, .. } => value,
                Expr::Param { index, ty } => {
                    let v = params.get(*index)?;
                    if !v.is_null() && !same_type(&v.data_type(), ty) {
                        return None;
                    }
                    v
                }
                _ => return None,
            };
            if v.is_null() {
                return Some(None);
            }
            values.push(v);
        }
        self.keys.key_of(&values).ok()
    }

    /// The table the plan reads.
    pub fn table(&self) -> &Arc<TableDef> {
        &self.table
    }

    /// The rows whose key is `key`, as `txn`'s statement snapshot sees
    /// them, projected to the output columns.
    pub fn rows(&self, txn: &SqlTxn, ix: &IndexStore, table: &Arc<Table>, key: &[u8]) -> Result<Vec<Vec<Value>>> {
        let snapshot = txn.statement_snapshot()?;
        let mut vids = Vec::new();
        ix.vids_into(&KeyRange::exact(key), &mut vids)?;
        if self.unique {
            note_key_read(txn, table, &vids, key, |row| Ok(self.keys.stored_key(&self.table, row)?.0))?;
        } else {
            note_read(txn, table)?;
        }
        let db = txn.database();
        let mut out = Vec::new();
        for (n, &vid) in vids.iter().enumerate() {
            if vids[..n].contains(&vid) {
                continue;
            }
            let Some(values) = visible(db, table, &snapshot, vid)? else { continue };
            if self.keys.stored_key(&self.table, &values)?.0 != key {
                continue;
            }
            let row = self
                .output
                .iter()
                .map(|&c| {
                    let ty = self.table.columns.get(c).map_or(DataType::Unknown, |d| d.ty);
                    from_storage(values.get(c).unwrap_or(&ndpdb_format::schema::Value::Null), ty)
                })
                .collect::<Result<Vec<_>>>()?;
            out.push(row);
        }
        Ok(out)
    }
}

fn is_bound(e: &Expr) -> bool {
    matches!(e, Expr::Literal { .. } | Expr::Param { .. })
}

/// Whether SQL `=` on a column of type `ty` is equality of its index keys.
fn key_equality_is_sql_equality(ty: DataType) -> bool {
    key_column(ty).is_some()
        && matches!(
            ty,
            DataType::Bool
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::Numeric { .. }
                | DataType::Date
                | DataType::Timestamp
                | DataType::Varchar(_)
                | DataType::Text
        )
}

/// Whether a parameter value of type `a` needs no cast to the
/// parameter's type `b`.
fn same_type(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        // A cast to numeric(p, s) or varchar(n) may round or cut: the
        // executor's business.
        (_, DataType::Numeric { .. } | DataType::Varchar(Some(_))) => false,
        (DataType::Varchar(_) | DataType::Text, DataType::Varchar(None) | DataType::Text) => true,
        _ => a == b,
    }
}

/// Whether `filter` (over the scan's `columns`) is the conjunction of
/// `key column = its bound` for some of the index's key columns, nothing
/// else.
fn filter_is_the_key(filter: &Expr, columns: &[usize], key: &[usize], bounds: &[Expr]) -> bool {
    match filter {
        Expr::Binary { op: BinaryOp::And, left, right, .. } => {
            filter_is_the_key(left, columns, key, bounds) && filter_is_the_key(right, columns, key, bounds)
        }
        Expr::Binary { op: BinaryOp::Eq, left, right, .. } => {
            let (col, other) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column { index, .. }, o) | (o, Expr::Column { index, .. }) => (*index, o),
                _ => return false,
            };
            let Some(&table_col) = columns.get(col) else { return false };
            key.iter().zip(bounds).any(|(&k, b)| k == table_col && b == other)
        }
        _ => false,
    }
}
