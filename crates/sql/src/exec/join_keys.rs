//! Equi-join keys out of a join condition, for joins the physical pass
//! left `Unchosen`: the conjuncts `l = r` with `l` over only the left
//! input's columns and `r` over only the right's become hash keys (the
//! right one renumbered to the right input alone); the rest stays the
//! residual condition checked on each matching pair.

use crate::plan::{BinaryOp, Expr};

/// The AND-ed parts of `expr`.
pub fn conjuncts(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::Binary { op: BinaryOp::And, left, right, .. } => {
            conjuncts(*left, out);
            conjuncts(*right, out);
        }
        other => out.push(other),
    }
}

/// The expressions directly inside `expr`; None for a subquery (its plan
/// may refer to this level's columns through `Outer`, which renumbering
/// would have to follow).
fn children_mut(expr: &mut Expr) -> Option<Vec<&mut Expr>> {
    Some(match expr {
        Expr::Column { .. } | Expr::Outer { .. } | Expr::Param { .. } | Expr::Literal { .. } => vec![],
        Expr::Unary { expr, .. } | Expr::Cast { expr, .. } => vec![expr.as_mut()],
        Expr::Binary { left, right, .. } => vec![left.as_mut(), right.as_mut()],
        Expr::Case { operand, whens, else_, .. } => {
            let mut v: Vec<&mut Expr> = operand.iter_mut().map(|b| b.as_mut()).collect();
            for (w, t) in whens.iter_mut() {
                v.push(w);
                v.push(t);
            }
            v.extend(else_.iter_mut().map(|b| b.as_mut()));
            v
        }
        Expr::Like { expr, pattern, .. } => vec![expr.as_mut(), pattern.as_mut()],
        Expr::InList { expr, list, .. } => {
            let mut v = vec![expr.as_mut()];
            v.extend(list.iter_mut());
            v
        }
        Expr::Function { args, .. } => args.iter_mut().collect(),
        Expr::Subquery { .. } => return None,
    })
}

/// Which side's columns `expr` reads: (reads left, reads right), None if
/// it cannot be renumbered.
fn sides(expr: &mut Expr, left_width: usize) -> Option<(bool, bool)> {
    if let Expr::Column { index, .. } = expr {
        return Some((*index < left_width, *index >= left_width));
    }
    let mut acc = (false, false);
    for child in children_mut(expr)? {
        let (l, r) = sides(child, left_width)?;
        acc = (acc.0 || l, acc.1 || r);
    }
    Some(acc)
}

fn shift_down(expr: &mut Expr, by: usize) {
    if let Expr::Column { index, .. } = expr {
        *index -= by;
        return;
    }
    for child in children_mut(expr).unwrap_or_default() {
        shift_down(child, by);
    }
}

/// Splits `on` into (left keys, right keys, residual).
pub fn extract(on: Option<&Expr>, left_width: usize) -> (Vec<Expr>, Vec<Expr>, Option<Expr>) {
    let mut parts = Vec::new();
    if let Some(on) = on {
        conjuncts(on.clone(), &mut parts);
    }
    let (mut lk, mut rk, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for part in parts {
        match part {
            Expr::Binary { op: BinaryOp::Eq, mut left, mut right, ty } => {
                let ls = sides(&mut left, left_width);
                let rs = sides(&mut right, left_width);
                match (ls, rs) {
                    (Some((true, false)), Some((false, true))) => {}
                    (Some((false, true)), Some((true, false))) => std::mem::swap(&mut left, &mut right),
                    _ => {
                        rest.push(Expr::Binary { op: BinaryOp::Eq, left, right, ty });
                        continue;
                    }
                }
                shift_down(&mut right, left_width);
                lk.push(*left);
                rk.push(*right);
            }
            other => rest.push(other),
        }
    }
    let residual = rest.into_iter().reduce(Expr::and);
    (lk, rk, residual)
}
