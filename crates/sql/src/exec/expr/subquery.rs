//! Subqueries left in expressions: run through [`SubqueryRunner`] once per
//! distinct outer row.
//!
//! The row of this batch becomes `outer[0]` for the subquery (its
//! [`Expr::Outer`](crate::plan::Expr::Outer) depth 1), the rows this
//! evaluation already had move one level out. A subquery whose plan has no outer reference at all is run
//! once per evaluation. Results per outer row are cached by the row's
//! values, so a batch with many equal correlation values runs the plan once
//! per value.
//!
//! ```text
//!  scalar       one column, ≤ 1 row (21000 otherwise), NULL when empty
//!  ARRAY(q)     q's column as an array's text form, `{}` when empty
//!  EXISTS       any row
//!  x IN (q)     TRUE on a match; NULL when no match and x or a q value is
//!               NULL; FALSE otherwise (NOT IN: the negation)
//!  x op ANY/ALL Kleene OR / AND of x op v over q's values
//! ```
//!
//! [`SubqueryRunner`]: crate::exec::SubqueryRunner

use std::collections::HashMap;

use arrow_array::{ArrayRef, RecordBatch};

use super::{EvalContext, evaluate_with};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{BinaryOp, Plan, SubqueryKind};
use crate::types::arrow::{array_from_values, value_at};
use crate::types::ops::compare_op;
use crate::types::{DataType, Value};

pub(super) fn evaluate(
    kind: &SubqueryKind,
    plan: &Plan,
    ty: &DataType,
    batch: &RecordBatch,
    ev: &EvalContext<'_>,
) -> Result<ArrayRef> {
    let runner = ev.exec.subqueries.clone().ok_or_else(|| {
        SqlError::unsupported(
            "a subquery cannot be evaluated here (no subquery runner: constant folding or a device predicate)",
        )
    })?;
    let n = batch.num_rows();
    let probe = match kind {
        SubqueryKind::In { expr, .. } | SubqueryKind::Quantified { expr, .. } => Some(evaluate_with(expr, batch, ev)?),
        _ => None,
    };
    let correlated = plan_has_outer(plan);
    let mut cache: HashMap<String, Vec<Value>> = HashMap::new();
    let mut out = Vec::with_capacity(n);
    for row in 0..n {
        let values: Vec<Value> = if correlated {
            batch.columns().iter().map(|c| value_at(c.as_ref(), row)).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let key = format!("{values:?}");
        if !cache.contains_key(&key) {
            let mut outer = Vec::with_capacity(ev.outer.len() + 1);
            outer.push(values);
            outer.extend(ev.outer.iter().cloned());
            let batches = runner.run(plan, &outer, ev.exec)?;
            let mut col = Vec::new();
            for b in &batches {
                if b.num_columns() == 0 {
                    col.extend(std::iter::repeat_n(Value::Null, b.num_rows()));
                    continue;
                }
                for i in 0..b.num_rows() {
                    col.push(value_at(b.column(0).as_ref(), i)?);
                }
            }
            cache.insert(key.clone(), col);
        }
        let col = &cache[&key];
        let x = match &probe {
            Some(p) => value_at(p.as_ref(), row)?,
            None => Value::Null,
        };
        out.push(result(kind, col, &x)?);
    }
    array_from_values(&out, ty)
}

fn result(kind: &SubqueryKind, col: &[Value], x: &Value) -> Result<Value> {
    Ok(match kind {
        SubqueryKind::Scalar => match col {
            [] => Value::Null,
            [v] => v.clone(),
            _ => {
                return Err(SqlError::new(
                    SqlState::CARDINALITY_VIOLATION,
                    "more than one row returned by a subquery used as an expression",
                ));
            }
        },
        SubqueryKind::Array => Value::Text(array_text(col)),
        SubqueryKind::Exists { negated } => Value::Bool(col.is_empty() == *negated),
        SubqueryKind::In { negated, .. } => {
            let any = quantified(BinaryOp::Eq, false, col, x)?;
            match (any, negated) {
                (Value::Bool(b), true) => Value::Bool(!b),
                (v, _) => v,
            }
        }
        SubqueryKind::Quantified { op, all, .. } => quantified(*op, *all, col, x)?,
    })
}

/// `col` as PostgreSQL's array output: `{a,b}`, an element quoted (`"`
/// and `\` escaped) when it is empty, is `NULL` in any case, or holds a
/// brace, comma, quote, backslash or white space; NULL as `NULL`.
fn array_text(col: &[Value]) -> String {
    let items: Vec<String> = col
        .iter()
        .map(|v| {
            if v.is_null() {
                return "NULL".into();
            }
            let s = crate::types::format::pg_text(v);
            let special = |c: char| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace();
            if s.is_empty() || s.eq_ignore_ascii_case("null") || s.chars().any(special) {
                format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                s
            }
        })
        .collect();
    format!("{{{}}}", items.join(","))
}

/// `x op ANY (col)` (Kleene OR) or `x op ALL (col)` (Kleene AND).
fn quantified(op: BinaryOp, all: bool, col: &[Value], x: &Value) -> Result<Value> {
    let mut saw_null = false;
    for v in col {
        match compare_op(op, x, v)? {
            Value::Bool(b) if b != all => return Ok(Value::Bool(b)),
            Value::Null => saw_null = true,
            _ => {}
        }
    }
    Ok(if saw_null { Value::Null } else { Value::Bool(all) })
}

/// Whether any expression of `plan` (or of a plan nested in it) is an
/// outer reference: conservative (a nested subquery's own correlation
/// counts too), which only costs re-running.
/// Whether the subquery reads an outer row (every expression of every
/// node: a hash join's keys and an index scan's bounds hold outer
/// references once the join condition is split into them).
fn plan_has_outer(plan: &Plan) -> bool {
    crate::exec::subquery::plan_reads_outer(plan)
}
