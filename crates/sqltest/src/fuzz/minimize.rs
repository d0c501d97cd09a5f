//! The minimizer: given a query on which the engines disagree, try smaller
//! queries (one reduction at a time, greedily) and keep each that still
//! disagrees in the same way, until none of the reductions does.
//!
//! Reductions, biggest first: drop ORDER BY, LIMIT, OFFSET; replace a set
//! operation by one side; per SELECT block drop WHERE, HAVING, DISTINCT, a
//! GROUP BY key, a select item, a FROM item, turn an outer join inner;
//! then per expression node: replace it by one of its children or by
//! `true`. A reduction that breaks the query (a dangling alias, a wrong
//! type) makes both engines fail alike, which is no longer the same
//! disagreement, so it is dropped without special care.

use super::ast::{Body, Expr, JoinKind, Query, Select};

/// Checks at most this many candidates per minimization.
pub const CHECKS_MAX: usize = 400;

/// Shrinks `query` while `still_fails` holds; returns the smallest found.
pub fn minimize(query: &Query, still_fails: &mut dyn FnMut(&Query) -> bool) -> Query {
    let mut best = query.clone();
    let mut checks = 0;
    'outer: while checks < CHECKS_MAX {
        for candidate in candidates(&best) {
            if checks >= CHECKS_MAX {
                break 'outer;
            }
            if candidate == best {
                continue;
            }
            checks += 1;
            if still_fails(&candidate) {
                best = candidate;
                continue 'outer;
            }
        }
        break;
    }
    best
}

/// Every one-step reduction of `q`.
pub fn candidates(q: &Query) -> Vec<Query> {
    let mut out = Vec::new();
    let edit = |f: &dyn Fn(&mut Query)| {
        let mut c = q.clone();
        f(&mut c);
        c
    };
    if !q.order_by.is_empty() {
        out.push(edit(&|c| c.order_by.clear()));
    }
    if q.limit.is_some() {
        out.push(edit(&|c| c.limit = None));
    }
    if q.offset.is_some() {
        out.push(edit(&|c| c.offset = None));
    }
    if let Body::SetOp(l, _, _, r) = &q.body {
        out.push(Query { body: (**l).clone(), ..q.clone() });
        out.push(Query { body: (**r).clone(), ..q.clone() });
    }
    let mut blocks = 0;
    q.clone().visit_selects(&mut |_| blocks += 1);
    for b in 0..blocks {
        let mut n_edits = 0;
        nth_select(&mut q.clone(), b, &mut |s| n_edits = select_edits(s));
        for e in 0..n_edits {
            let mut c = q.clone();
            let mut removed_item = None;
            nth_select(&mut c, b, &mut |s| removed_item = apply_select_edit(s, e));
            if let (Some(i), Body::Select(_)) = (removed_item, &q.body) {
                // The top-level block lost an item: renumber ORDER BY.
                if b + 1 == blocks {
                    c.order_by.retain(|k| k.position != i + 1);
                    c.order_by.iter_mut().filter(|k| k.position > i + 1).for_each(|k| k.position -= 1);
                }
            }
            out.push(c);
        }
    }
    out.extend(expression_edits(q));
    out
}

fn nth_select(q: &mut Query, n: usize, f: &mut dyn FnMut(&mut Select)) {
    let mut i = 0;
    q.visit_selects(&mut |s| {
        if i == n {
            f(s);
        }
        i += 1;
    });
}

/// How many edits `apply_select_edit` knows for this block.
fn select_edits(s: &Select) -> usize {
    4 + s.group_by.len() + s.items.len() + s.from.len() * 2
}

/// Applies edit `e`; returns the index of a removed select item.
fn apply_select_edit(s: &mut Select, e: usize) -> Option<usize> {
    match e {
        0 => s.filter = None,
        1 => s.having = None,
        2 => s.distinct = false,
        3 => {
            s.group_by.clear();
            s.having = None;
        }
        e if e < 4 + s.group_by.len() => {
            let key = s.group_by.remove(e - 4);
            if let Some(i) = s.items.iter().position(|x| *x == key)
                && s.items.len() > 1
            {
                s.items.remove(i);
                return Some(i);
            }
        }
        e if e < 4 + s.group_by.len() + s.items.len() => {
            let i = e - 4 - s.group_by.len();
            if s.items.len() > 1 {
                s.items.remove(i);
                return Some(i);
            }
        }
        e => {
            let j = e - 4 - s.group_by.len() - s.items.len();
            let (item, drop) = (j / 2, j.is_multiple_of(2));
            if drop && s.from.len() > 1 {
                s.from.remove(item);
                s.from[0].join = JoinKind::Comma;
                s.from[0].on = None;
            } else if !drop && matches!(s.from[item].join, JoinKind::Left | JoinKind::Right | JoinKind::Full) {
                s.from[item].join = JoinKind::Inner;
            }
        }
    }
    None
}

/// Replace each expression node by each of its children, or by `true`.
fn expression_edits(q: &Query) -> Vec<Query> {
    let mut slots: Vec<Expr> = Vec::new();
    q.clone().visit_exprs(&mut |e| {
        slots.push(e.clone());
        true
    });
    let mut out = Vec::new();
    for (k, node) in slots.iter().enumerate() {
        let mut replacements: Vec<Expr> = node.children().into_iter().cloned().collect();
        if !matches!(node, Expr::Lit(_) | Expr::Col(..)) {
            replacements.push(Expr::Lit("true".into()));
        }
        for r in replacements {
            let mut c = q.clone();
            let mut i = 0;
            c.visit_exprs(&mut |e| {
                let here = i == k;
                i += 1;
                if here {
                    *e = r.clone();
                }
                !here
            });
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::ast::{FromItem, Source};

    fn query() -> Query {
        let col = |c: &str| Expr::Col("a1".into(), c.into());
        let filter = Expr::bin(
            Expr::bin(col("c0"), ">", Expr::Lit("3".into())),
            "AND",
            Expr::bin(col("c1"), "LIKE", Expr::Lit("'a%'".into())),
        );
        Query::select(Select {
            distinct: true,
            items: vec![col("c0"), col("c1"), Expr::func("upper", vec![col("c1")])],
            from: vec![FromItem {
                join: JoinKind::Comma,
                source: Source::Table("t0".into()),
                alias: "a1".into(),
                on: None,
            }],
            filter: Some(filter),
            group_by: vec![],
            having: None,
        })
    }

    #[test]
    fn shrinks_to_what_the_failure_needs() {
        // The "failure": the query mentions upper() and c0 > 3.
        let mut fails = |q: &Query| {
            let s = q.to_string();
            s.contains("upper(") && s.contains("(a1.c0 > 3)")
        };
        let small = minimize(&query(), &mut fails);
        assert_eq!(small.to_string(), "SELECT upper(a1.c1) AS x0 FROM t0 AS a1 WHERE (a1.c0 > 3)");
    }

    #[test]
    fn every_candidate_is_smaller_or_equal_in_text() {
        let q = query();
        let n = q.to_string().len();
        for c in candidates(&q) {
            assert!(c.to_string().len() <= n, "{c}");
        }
    }
}
