//! OR factoring: conjuncts that every arm of an OR shares move out of it,
//! as PostgreSQL's `find_duplicate_ors` (prepqual.c) does.
//!
//! ```text
//!  (A AND B) OR (A AND C) OR (A AND D)  →  A AND (B OR C OR D)
//!  (A AND B) OR A                       →  A            (an arm left empty is TRUE)
//! ```
//!
//! Why: TPC-H Q19 is an OR of three conjunctions, each holding the join
//! condition `p_partkey = l_partkey`. Left inside the OR the condition is
//! no conjunct of the WHERE clause, so pushdown cannot make it a join key
//! and the plan is a cross product of part and lineitem. Factored, it is a
//! hash-join key and the OR a residual filter.
//!
//! Both rewrites hold in SQL's three-valued logic (AND distributes over
//! OR, and absorption `A OR (A AND B) = A`, in Kleene's logic), so NULLs
//! give the same answer. Conjuncts are compared structurally (same
//! columns, operators, literals and types).

use super::util::{bool_lit, children_mut, conjoin, conjuncts, node_exprs_mut, plan_children_mut};
use crate::plan::{BinaryOp, Expr, Plan};

/// Factors every OR in `plan`, its children and its subqueries.
pub fn factor_plan(mut plan: Plan) -> Plan {
    factor_in_place(&mut plan);
    plan
}

fn factor_in_place(plan: &mut Plan) {
    for c in plan_children_mut(plan) {
        factor_in_place(c);
    }
    for e in node_exprs_mut(&mut plan.node) {
        factor_expr(e);
    }
}

/// Bottom-up: inner ORs first, so an outer OR sees its arms factored.
fn factor_expr(e: &mut Expr) {
    if let Expr::Subquery { plan, .. } = e {
        factor_in_place(plan);
    }
    for c in children_mut(e) {
        factor_expr(c);
    }
    if matches!(e, Expr::Binary { op: BinaryOp::Or, .. }) {
        let or = std::mem::replace(e, bool_lit(None));
        *e = factor_or(or);
    }
}

fn disjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary { op: BinaryOp::Or, left, right, .. } => {
            disjuncts(*left, out);
            disjuncts(*right, out);
        }
        other => out.push(other),
    }
}

fn disjoin(parts: Vec<Expr>) -> Option<Expr> {
    parts.into_iter().reduce(|l, r| Expr::binary(BinaryOp::Or, l, r, crate::types::DataType::Bool))
}

/// One OR tree, its shared conjuncts moved out.
fn factor_or(or: Expr) -> Expr {
    let mut flat = Vec::new();
    disjuncts(or, &mut flat);
    let arms: Vec<Vec<Expr>> = flat.into_iter().map(conjuncts).collect();
    let mut common: Vec<Expr> = Vec::new();
    for c in &arms[0] {
        if !common.contains(c) && arms[1..].iter().all(|a| a.contains(c)) {
            common.push(c.clone());
        }
    }
    let rebuild = |arms: Vec<Vec<Expr>>| disjoin(arms.into_iter().filter_map(conjoin).collect());
    if common.is_empty() {
        return rebuild(arms).unwrap_or_else(|| bool_lit(Some(false)));
    }
    let rest: Vec<Vec<Expr>> =
        arms.into_iter().map(|a| a.into_iter().filter(|c| !common.contains(c)).collect()).collect();
    // An arm with nothing left is TRUE, and so is the OR.
    let or = if rest.iter().any(Vec::is_empty) { None } else { rebuild(rest) };
    conjoin(common.into_iter().chain(or).collect()).unwrap_or_else(|| bool_lit(Some(true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{DataType, Value};

    fn col(i: usize) -> Expr {
        Expr::column(i, DataType::Int32)
    }
    fn eq(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinaryOp::Eq, a, b, DataType::Bool)
    }
    fn lit(v: i32) -> Expr {
        Expr::literal(Value::Int32(v))
    }
    fn or(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinaryOp::Or, a, b, DataType::Bool)
    }

    #[test]
    fn shared_conjuncts_move_out_of_every_arm() {
        // (c0 = c1 AND c2 = 1) OR (c2 = 2 AND c0 = c1) OR (c0 = c1 AND c3 = 3)
        let join = eq(col(0), col(1));
        let e = or(
            or(Expr::and(join.clone(), eq(col(2), lit(1))), Expr::and(eq(col(2), lit(2)), join.clone())),
            Expr::and(join.clone(), eq(col(3), lit(3))),
        );
        let mut got = e;
        factor_expr(&mut got);
        let want = Expr::and(join, or(or(eq(col(2), lit(1)), eq(col(2), lit(2))), eq(col(3), lit(3))));
        assert_eq!(got, want);
    }

    #[test]
    fn an_arm_left_empty_makes_the_or_true() {
        let a = eq(col(0), lit(1));
        let mut got = or(Expr::and(a.clone(), eq(col(1), lit(2))), a.clone());
        factor_expr(&mut got);
        assert_eq!(got, a);
    }

    #[test]
    fn ors_without_shared_conjuncts_stay() {
        let e = or(Expr::and(eq(col(0), lit(1)), eq(col(1), lit(1))), eq(col(0), lit(2)));
        let mut got = e.clone();
        factor_expr(&mut got);
        assert_eq!(got, e);
    }
}
