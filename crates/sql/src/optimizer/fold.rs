//! Constant folding: literal-only subtrees become literals, AND/OR with a
//! constant side shrink, and filters that are always TRUE disappear while
//! those that are always FALSE (or NULL) become an empty relation.
//!
//! A constant subtree is evaluated by the executor's own evaluator
//! ([`crate::exec::expr::evaluate`]) on a one-row batch without columns, so
//! folding and execution agree on every operator's semantics. When the
//! evaluator fails (division by zero, overflow, an operator it does not
//! know) the subtree stays as it is and the error surfaces at execution,
//! where the statement would have raised it.
//!
//! ```text
//!  x AND FALSE → FALSE     x AND TRUE → x     NULL AND FALSE → FALSE
//!  x OR  TRUE  → TRUE      x OR FALSE → x     Filter(FALSE | NULL) → Values []
//! ```

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, cast::AsArray, types as at};
use arrow_schema::{DataType as A, Schema as ArrowSchema, TimeUnit};

use super::util::{as_bool_lit, bool_lit, children_mut, is_constant, node_exprs_mut, plan_children_mut};
use crate::error::{Result, SqlError};
use crate::exec::{ExecContext, ScanOutput, ScanSpec, TableSource};
use crate::plan::{BinaryOp, Expr, JoinKind, Node, Plan};
use crate::types::{DataType, Value};

/// The table source of constant folding: constants read no table.
struct NoTables;

impl TableSource for NoTables {
    fn scan(&self, spec: &ScanSpec<'_>) -> Result<ScanOutput> {
        Err(SqlError::internal(format!("constant folding tried to scan table {}", spec.table.name)))
    }
}

fn fold_context() -> ExecContext {
    ExecContext { work_mem: 1 << 20, ..ExecContext::new(Arc::new(NoTables)) }
}

/// Folds every expression of `plan` (and of its subqueries) and drops or
/// empties constant filters.
pub fn fold_plan(mut plan: Plan) -> Plan {
    let ctx = fold_context();
    fold_in_place(&mut plan, &ctx);
    simplify_node(plan)
}

fn fold_in_place(plan: &mut Plan, ctx: &ExecContext) {
    for c in plan_children_mut(plan) {
        let taken = super::util::take_plan(c);
        *c = {
            let mut t = taken;
            fold_in_place(&mut t, ctx);
            simplify_node(t)
        };
    }
    for e in node_exprs_mut(&mut plan.node) {
        *e = fold_expr(std::mem::replace(e, bool_lit(None)), ctx);
    }
}

/// Drops a TRUE filter, empties a FALSE one.
fn simplify_node(mut plan: Plan) -> Plan {
    match &mut plan.node {
        Node::Filter { predicate, input } => match as_bool_lit(predicate) {
            Some(Some(true)) => return std::mem::replace(input.as_mut(), super::util::empty(plan.schema.clone())),
            Some(_) => return super::util::empty(plan.schema),
            None => {}
        },
        Node::Scan { filter, .. } => match filter.as_ref().and_then(as_bool_lit) {
            Some(Some(true)) => *filter = None,
            Some(_) => return super::util::empty(plan.schema),
            None => {}
        },
        Node::Join { on, kind, .. } => match on.as_ref().and_then(as_bool_lit) {
            Some(Some(true)) => *on = None,
            Some(_) if *kind == JoinKind::Inner || *kind == JoinKind::Semi => {
                return super::util::empty(plan.schema);
            }
            _ => {}
        },
        _ => {}
    }
    plan
}

/// Folds one expression bottom-up. Subquery plans inside are folded too.
pub fn fold_expr(mut e: Expr, ctx: &ExecContext) -> Expr {
    for c in children_mut(&mut e) {
        *c = fold_expr(std::mem::replace(c, bool_lit(None)), ctx);
    }
    if let Expr::Subquery { plan, .. } = &mut e {
        let p = super::util::take_plan(plan.as_mut());
        **plan = fold_plan(p);
    }
    if let Some(simpler) = simplify_and_or(&e).or_else(|| unwrap_date_cast(&e)) {
        return simpler;
    }
    if matches!(e, Expr::Literal { .. }) || !is_constant(&e) {
        return e;
    }
    match evaluate_constant(&e, ctx) {
        Some(value) => Expr::Literal { value, ty: e.ty() },
        None => e,
    }
}

/// AND/OR with a constant side (Kleene logic).
fn simplify_and_or(e: &Expr) -> Option<Expr> {
    let Expr::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), left, right, .. } = e else {
        return None;
    };
    let (absorbing, neutral) = if *op == BinaryOp::And { (false, true) } else { (true, false) };
    let (l, r) = (as_bool_lit(left), as_bool_lit(right));
    if l == Some(Some(absorbing)) || r == Some(Some(absorbing)) {
        return Some(bool_lit(Some(absorbing)));
    }
    if l == Some(Some(neutral)) {
        return Some(right.as_ref().clone());
    }
    if r == Some(Some(neutral)) {
        return Some(left.as_ref().clone());
    }
    if l == Some(None) && r == Some(None) {
        return Some(bool_lit(None));
    }
    None
}

/// `date_expr::timestamp op T`, T a midnight, is `date_expr op date(T)`
/// for every comparison (the cast is exact and keeps order), and so is
/// the mirrored form. `o_orderdate < date '1993-07-01' + interval '3'
/// month` (a timestamp) becomes a comparison of the column itself, which
/// the statistics, index bounds and the device's predicate terms see.
fn unwrap_date_cast(e: &Expr) -> Option<Expr> {
    const DAY_US: i64 = 86_400_000_000;
    let Expr::Binary { op, left, right, ty } = e else { return None };
    if !op.is_comparison() {
        return None;
    }
    let date_of = |cast: &Expr, lit: &Expr| -> Option<(Expr, Expr)> {
        let Expr::Cast { expr, ty: DataType::Timestamp } = cast else { return None };
        let Expr::Literal { value: Value::Timestamp(us), .. } = lit else { return None };
        if expr.ty() != DataType::Date || us % DAY_US != 0 {
            return None;
        }
        let days = i32::try_from(us.div_euclid(DAY_US)).ok()?;
        Some((expr.as_ref().clone(), Expr::Literal { value: Value::Date(days), ty: DataType::Date }))
    };
    let binary = |op: BinaryOp, (left, right): (Expr, Expr)| Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
        ty: *ty,
    };
    if let Some(pair) = date_of(left, right) {
        return Some(binary(*op, pair));
    }
    date_of(right, left).map(|(column, date)| binary(*op, (date, column)))
}

/// Evaluates a constant expression on a one-row batch with no columns.
fn evaluate_constant(e: &Expr, ctx: &ExecContext) -> Option<Value> {
    let options = RecordBatchOptions::new().with_row_count(Some(1));
    let batch = RecordBatch::try_new_with_options(Arc::new(ArrowSchema::empty()), vec![], &options).ok()?;
    let array = crate::exec::expr::evaluate(e, &batch, ctx).ok()?;
    if array.len() != 1 {
        return None;
    }
    value_at(&array, 0, e.ty())
}

/// The value at `row` of `array`, as a [`Value`] of type `ty`; None for
/// array types this module does not convert (the subtree is then kept).
pub fn value_at(array: &ArrayRef, row: usize, ty: DataType) -> Option<Value> {
    if array.is_null(row) {
        return Some(Value::Null);
    }
    Some(match array.data_type() {
        A::Boolean => Value::Bool(array.as_boolean().value(row)),
        A::Int16 => Value::Int16(array.as_primitive::<at::Int16Type>().value(row)),
        A::Int32 => Value::Int32(array.as_primitive::<at::Int32Type>().value(row)),
        A::Int64 => Value::Int64(array.as_primitive::<at::Int64Type>().value(row)),
        A::Float64 => Value::Float64(array.as_primitive::<at::Float64Type>().value(row)),
        A::Date32 => Value::Date(array.as_primitive::<at::Date32Type>().value(row)),
        A::Timestamp(TimeUnit::Microsecond, None) => {
            Value::Timestamp(array.as_primitive::<at::TimestampMicrosecondType>().value(row))
        }
        A::Decimal128(_, s) => {
            let DataType::Numeric { scale, .. } = ty else { return None };
            if i16::from(scale) != i16::from(*s) {
                return None;
            }
            Value::Numeric { value: array.as_primitive::<at::Decimal128Type>().value(row), scale }
        }
        A::Utf8 => Value::Text(array.as_string::<i32>().value(row).to_owned()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(op: BinaryOp, left: Expr, right: Expr) -> Expr {
        Expr::Binary { op, left: Box::new(left), right: Box::new(right), ty: DataType::Bool }
    }

    fn date_column_as_timestamp() -> Expr {
        let column = Expr::Column { index: 0, ty: DataType::Date };
        Expr::Cast { expr: Box::new(column), ty: DataType::Timestamp }
    }

    fn timestamp(us: i64) -> Expr {
        Expr::Literal { value: Value::Timestamp(us), ty: DataType::Timestamp }
    }

    #[test]
    fn a_date_cast_compared_with_a_midnight_compares_the_date() {
        let ctx = fold_context();
        let column = Expr::Column { index: 0, ty: DataType::Date };
        let day = |d: i32| Expr::Literal { value: Value::Date(d), ty: DataType::Date };
        let midnight = 19_000 * 86_400_000_000;
        let e = fold_expr(cmp(BinaryOp::Lt, date_column_as_timestamp(), timestamp(midnight)), &ctx);
        assert_eq!(e, cmp(BinaryOp::Lt, column.clone(), day(19_000)));
        // Mirrored, and before 1970 (floor division).
        let e = fold_expr(cmp(BinaryOp::GtEq, timestamp(-86_400_000_000), date_column_as_timestamp()), &ctx);
        assert_eq!(e, cmp(BinaryOp::GtEq, day(-1), column));
    }

    #[test]
    fn a_date_cast_compared_with_a_time_of_day_stays() {
        let ctx = fold_context();
        let noon = 19_000 * 86_400_000_000 + 43_200_000_000;
        let e = cmp(BinaryOp::Lt, date_column_as_timestamp(), timestamp(noon));
        assert_eq!(fold_expr(e.clone(), &ctx), e);
    }
}
