//! Semi- and anti-joins moved into an inner-join tree, when that is cheaper.
//!
//! Decorrelation puts a WHERE `IN`/`EXISTS` (a Semi join) or `NOT EXISTS`
//! (an Anti join) above the whole FROM list, and the join orderer treats
//! it as a leaf of nothing: every inner join runs before it. When its
//! condition reads the columns of one input of that inner-join tree only,
//! the Semi or Anti join may run on that input instead:
//!
//! ```text
//!  Semi(Inner(A, B), R) on a.x = r.y   ==   Inner(Semi(A, R) on a.x = r.y, B)
//! ```
//!
//! (a pair of A×B is kept when its A row has / has no partner in R, which
//! does not depend on B; likewise through a Project that passes the
//! condition's columns through and through a Filter.) Either can be
//! cheaper: TPC-H Q18's `o_orderkey IN (orders with sum(l_quantity) > 300)`
//! keeps 5 of 150,000 orders and should filter orders before they meet
//! 600,000 lineitems; Q21's semi and anti joins on `l1` should wait until
//! the inner joins have cut `l1` to one nation's suppliers. So the physical
//! pass plans both (`physical::physical`) and keeps the cheaper estimate.
//! The join is moved as deep as the condition allows (one alternative, not
//! one per level).

use super::util::{columns_used, has_subquery, mk_join, remap};
use crate::plan::{Expr, JoinAlgorithm, JoinKind, Node, Plan};

/// `plan` with its top Semi/Anti join moved into the inner-join tree of
/// its left input, or None when it cannot move below any inner join.
pub fn pushed(plan: &Plan) -> Option<Plan> {
    let Node::Join { left, right, kind, on: Some(on), algorithm: JoinAlgorithm::Unchosen } = &plan.node else {
        return None;
    };
    if !matches!(kind, JoinKind::Semi | JoinKind::Anti) || has_subquery(on) {
        return None;
    }
    sink(left, right, *kind, on)
}

/// `left` with `Join(left', right, kind, on)` placed on the deepest input
/// `left'` of its inner-join tree that holds every left column `on` reads;
/// None when that is `left` itself. `on` reads `left`'s columns then
/// `right`'s.
fn sink(left: &Plan, right: &Plan, kind: JoinKind, on: &Expr) -> Option<Plan> {
    let lw = left.schema.len();
    let lcols: Vec<usize> = columns_used(on).into_iter().filter(|&c| c < lw).collect();
    if lcols.is_empty() {
        return None;
    }
    // `on` over (new left input of width `w`, right): left columns by `f`.
    let renumber = |w: usize, f: &dyn Fn(usize) -> usize| {
        let mut e = on.clone();
        remap(&mut e, &|i| if i < lw { f(i) } else { i - lw + w });
        e
    };
    let rebuilt = |node: Node| Some(Plan::new(node, left.schema.clone()));
    match &left.node {
        Node::Project { input, exprs } => {
            let mut map = vec![usize::MAX; lw];
            for &c in &lcols {
                match exprs.get(c) {
                    Some(Expr::Column { index, .. }) => map[c] = *index,
                    _ => return None,
                }
            }
            let on = renumber(input.schema.len(), &|i| map[i]);
            let inner = sink(input, right, kind, &on)?;
            rebuilt(Node::Project { input: Box::new(inner), exprs: exprs.clone() })
        }
        Node::Filter { input, predicate } => {
            let inner = sink(input, right, kind, on)?;
            rebuilt(Node::Filter { input: Box::new(inner), predicate: predicate.clone() })
        }
        Node::Join { left: a, right: b, kind: JoinKind::Inner, on: join_on, algorithm: JoinAlgorithm::Unchosen } => {
            let aw = a.schema.len();
            let place = |side: &Plan, on: Expr| {
                sink(side, right, kind, &on).unwrap_or_else(|| mk_join(side.clone(), right.clone(), kind, Some(on)))
            };
            let (a, b) = if lcols.iter().all(|&c| c < aw) {
                (place(a, renumber(aw, &|i| i)), b.as_ref().clone())
            } else if lcols.iter().all(|&c| c >= aw) {
                let bw = b.schema.len();
                (a.as_ref().clone(), place(b, renumber(bw, &|i| i - aw)))
            } else {
                return None;
            };
            let mut joined = mk_join(a, b, JoinKind::Inner, join_on.clone());
            joined.schema = left.schema.clone();
            Some(joined)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::optimizer::util::{empty, mk_select};
    use crate::plan::{BinaryOp, Field};
    use crate::types::DataType;

    fn input(width: usize) -> Plan {
        let field = |i: usize| Field { name: format!("c{i}"), qualifier: None, ty: DataType::Int32, nullable: true };
        empty(Arc::new((0..width).map(field).collect()))
    }
    fn eq(a: usize, b: usize) -> Expr {
        Expr::binary(BinaryOp::Eq, Expr::column(a, DataType::Int32), Expr::column(b, DataType::Int32), DataType::Bool)
    }

    #[test]
    fn a_semi_join_on_one_input_moves_onto_it_through_a_project() {
        // Semi(Project[c3, c0](Inner(A(2), B(2))), R(1)) on out.c0 (= B.c1) = r.c0
        let inner = mk_join(input(2), input(2), JoinKind::Inner, Some(eq(1, 2)));
        let project = mk_select(inner, &[3, 0]);
        let semi = mk_join(project, input(1), JoinKind::Semi, Some(eq(0, 2)));
        let got = pushed(&semi).expect("moves");
        let Node::Project { input: join, exprs } = &got.node else { panic!("{got:?}") };
        assert_eq!(exprs.len(), 2);
        assert_eq!(got.schema, semi.schema);
        let Node::Join { left: a, right: b, kind: JoinKind::Inner, .. } = &join.node else { panic!("{join:?}") };
        assert!(matches!(a.node, Node::Values { .. }));
        // On B: B's column 1 against R's column 0 (after B's two columns).
        let Node::Join { kind: JoinKind::Semi, on: Some(on), .. } = &b.node else { panic!("{b:?}") };
        assert_eq!(on, &eq(1, 2));
    }

    #[test]
    fn a_condition_over_both_inputs_or_a_leaf_stays() {
        let inner = mk_join(input(2), input(2), JoinKind::Inner, None);
        let both = Expr::and(eq(0, 4), eq(2, 4));
        assert!(pushed(&mk_join(inner, input(1), JoinKind::Anti, Some(both))).is_none());
        assert!(pushed(&mk_join(input(2), input(1), JoinKind::Semi, Some(eq(0, 2)))).is_none());
    }
}
