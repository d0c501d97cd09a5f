//! Greedy operator ordering (GOO; Fegaras, DEXA 1998): the fallback when the
//! dynamic program would cost too much.
//!
//! Start with one tree per relation; repeatedly join the two trees that an
//! edge connects whose join has the fewest estimated rows (ties: the lower
//! objective), until one tree is left. It builds bushy trees, needs
//! O(n³) estimates for n relations (memoised per set), and never adds a
//! cross product while a connected pair exists. Only when none exists (a
//! component connected through a hyperedge whose sides are not connected
//! themselves) does it join the pair with the fewest rows as a cross product.

use super::context::{Context, input};
use super::plan::JoinTree;
use super::relset::RelSet;

/// Orders one connected component greedily.
pub(super) fn goo(ctx: &mut Context<'_>, component: RelSet) -> JoinTree {
    let mut trees: Vec<JoinTree> = component.iter().map(|i| ctx.scan(i)).collect();
    while trees.len() > 1 {
        let (i, j, cross) = match best_pair(ctx, &trees, true) {
            Some((i, j)) => (i, j, false),
            None => {
                let (i, j) = best_pair(ctx, &trees, false).unwrap_or((0, 1));
                (i, j, true)
            }
        };
        // j > i: remove j first so i's index stays valid.
        let b = trees.swap_remove(j);
        let a = trees.swap_remove(i);
        trees.push(ctx.join_trees(a, b, cross));
    }
    trees.pop().unwrap_or_else(|| ctx.scan(0))
}

/// The pair `(i, j)`, `i < j`, whose join has the fewest rows, then the
/// lowest objective; only pairs an edge connects when `connected_only`.
fn best_pair(ctx: &mut Context<'_>, trees: &[JoinTree], connected_only: bool) -> Option<(usize, usize)> {
    let mut best: Option<(f64, f64, usize, usize)> = None;
    for i in 0..trees.len() {
        for j in i + 1..trees.len() {
            let (a, b) = (trees[i].relations(), trees[j].relations());
            if connected_only && !ctx.graph.connects(a, b) {
                continue;
            }
            let rows = ctx.rows(a.union(b));
            if best.is_some_and(|(r, _, _, _)| rows > r) {
                continue;
            }
            let objective = ctx.join(input(&trees[i]), input(&trees[j]), rows, !connected_only).objective;
            let better = match best {
                None => true,
                Some((r, o, _, _)) => rows < r || objective < o,
            };
            if better {
                best = Some((rows, objective, i, j));
            }
        }
    }
    best.map(|(_, _, i, j)| (i, j))
}
