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
//!
//! **Restrictions implied by an OR** (PostgreSQL's
//! `extract_restriction_or_clauses`, orclauses.c). A WHERE conjunct that is
//! an OR over several join inputs also filters each input whose columns
//! every arm restricts: from `(A1 AND B1) OR (A2 AND B2)`, with `A1`, `A2`
//! over input `a` only, the Filter gains `A1 OR A2`, which pushdown moves
//! into `a`'s scan. The OR itself stays (the new conjunct is implied by
//! it, so the result is the same: where the OR is TRUE some arm is TRUE,
//! and so is that arm's part). TPC-H Q19 filters part and lineitem before
//! joining them, and Q7 its two nations (`n1.n_name = 'FRANCE' AND
//! n2.n_name = 'GERMANY' OR ...`), instead of joining everything first.
//! The inputs are the leaves of the inner-join tree right below the Filter
//! (before pushdown, the FROM list), as ranges of its columns.

use std::ops::Range;

use super::util::{
    bool_lit, children_mut, columns_used, conjoin, conjuncts, has_subquery, node_exprs_mut, plan_children_mut,
};
use crate::plan::{BinaryOp, Expr, JoinKind, Node, Plan};

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
    if let Node::Filter { input, predicate } = &mut plan.node {
        let mut leaves = Vec::new();
        join_leaves(input, 0, &mut leaves);
        if leaves.len() > 1 {
            let implied = implied_restrictions(predicate, &leaves);
            if let Some(all) = conjoin(std::iter::once(predicate.clone()).chain(implied).collect()) {
                *predicate = all;
            }
        }
    }
}

/// The column ranges of the inputs of the inner-join tree at `plan`.
fn join_leaves(plan: &Plan, start: usize, out: &mut Vec<Range<usize>>) {
    match &plan.node {
        Node::Join { left, right, kind: JoinKind::Inner, .. } => {
            join_leaves(left, start, out);
            join_leaves(right, start + left.schema.len(), out);
        }
        _ => out.push(start..start + plan.schema.len()),
    }
}

/// For each OR conjunct of `predicate` and each leaf whose columns every
/// arm restricts, the OR of those restrictions (see the module doc).
fn implied_restrictions(predicate: &Expr, leaves: &[Range<usize>]) -> Vec<Expr> {
    let mut out = Vec::new();
    for c in conjuncts(predicate.clone()) {
        for leaf in leaves {
            if let Some(implied) = implied_restriction(&c, leaf).filter(|i| !out.contains(i)) {
                out.push(implied);
            }
        }
    }
    out
}

/// The restriction the OR `c` implies on the input whose columns are
/// `leaf`, when every arm restricts it (and it is not `c` itself); None
/// for anything but an OR without subqueries. The join orderer divides the
/// OR's selectivity by the restriction's (`reorder.rs`), as PostgreSQL's
/// `orclause_selectivity` adjustment does: the restriction already
/// filtered the input.
pub fn implied_restriction(c: &Expr, leaf: &Range<usize>) -> Option<Expr> {
    if !matches!(c, Expr::Binary { op: BinaryOp::Or, .. }) || has_subquery(c) {
        return None;
    }
    let mut flat = Vec::new();
    disjuncts(c.clone(), &mut flat);
    let within = |e: &Expr| {
        let cols = columns_used(e);
        !cols.is_empty() && cols.iter().all(|i| leaf.contains(i))
    };
    let parts: Option<Vec<Expr>> =
        flat.into_iter().map(|arm| conjoin(conjuncts(arm).into_iter().filter(|e| within(e)).collect())).collect();
    let implied = factor_or(disjoin(parts?).unwrap_or_else(|| bool_lit(None)));
    (implied != *c).then_some(implied)
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

    fn scan(width: usize) -> Plan {
        let field = |i: usize| crate::plan::Field {
            name: format!("c{i}"),
            qualifier: None,
            ty: DataType::Int32,
            nullable: true,
        };
        crate::optimizer::util::empty(std::sync::Arc::new((0..width).map(field).collect()))
    }

    #[test]
    fn an_or_over_two_inputs_restricts_each_input_every_arm_restricts() {
        // Inputs a (c0, c1) and b (c2, c3); WHERE (c0 = 1 AND c2 = 2 AND c1 = c3) OR (c0 = 3 AND c3 = 4)
        let join = crate::optimizer::util::mk_join(scan(2), scan(2), JoinKind::Inner, None);
        let arm1 = Expr::and(Expr::and(eq(col(0), lit(1)), eq(col(2), lit(2))), eq(col(1), col(3)));
        let arm2 = Expr::and(eq(col(0), lit(3)), eq(col(3), lit(4)));
        let where_ = or(arm1, arm2);
        let plan = crate::optimizer::util::mk_filter(join, where_.clone());
        let got = factor_plan(plan);
        let Node::Filter { predicate, .. } = &got.node else { panic!("not a filter") };
        let want = conjoin(vec![
            where_,
            or(eq(col(0), lit(1)), eq(col(0), lit(3))),
            or(eq(col(2), lit(2)), eq(col(3), lit(4))),
        ]);
        assert_eq!(Some(predicate.clone()), want);
    }

    #[test]
    fn ors_without_shared_conjuncts_stay() {
        let e = or(Expr::and(eq(col(0), lit(1)), eq(col(1), lit(1))), eq(col(0), lit(2)));
        let mut got = e.clone();
        factor_expr(&mut got);
        assert_eq!(got, e);
    }
}
