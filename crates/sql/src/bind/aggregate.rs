//! Aggregate mode: expressions over an Aggregate node's output.
//!
//! ```text
//!  SELECT a, sum(b) + 1 FROM t GROUP BY a HAVING count(*) > 2
//!  Aggregate output: [a (key 0), sum(b) (agg 0), count(*) (agg 1)]
//!  select list: Column 0, Column 1 + 1;   HAVING: Column 2 > 2
//! ```
//!
//! [`Binder::agg_expr`] maps a whole AST expression onto an aggregate call
//! or a group key when it can; otherwise the structural binder recurses and
//! asks again for each child. A bare column that reaches neither is 42803.

use sqlparser::ast;

use super::expr::ExprCtx;
use super::functions::is_aggregate;
use super::scope::{Scope, ScopeEntry};
use super::{Binder, object_name};
use crate::error::{Result, SqlError, SqlState};
use crate::optimizer::util::{self as plan_util, has_subquery, node_exprs_mut, plan_children_mut};
use crate::plan::{AggregateExpr, Expr, Plan};
use crate::types::DataType;

/// The state of aggregate mode.
#[derive(Debug, Clone, Default)]
pub struct AggContext {
    /// The FROM (and WHERE) scope the keys and arguments are bound over.
    pub input: Scope,
    /// Group keys, bound over `input`.
    pub groups: Vec<Expr>,
    /// Aggregates found so far.
    pub aggregates: Vec<AggregateExpr>,
}

impl AggContext {
    /// The scope a subquery in the select list sees: the group keys that
    /// are plain columns, by their names; nothing else can be named.
    pub fn output_scope(&self) -> Scope {
        let entries = self
            .groups
            .iter()
            .map(|g| match g {
                Expr::Column { index, .. } => self.input.entries[*index].clone(),
                other => ScopeEntry {
                    name: String::new(),
                    qualifier: None,
                    ty: other.ty(),
                    nullable: true,
                    hidden: true,
                    ungrouped: false,
                },
            })
            .collect::<Vec<_>>();
        let mut scope = Scope { entries };
        let grouped: Vec<usize> = self
            .groups
            .iter()
            .filter_map(|g| if let Expr::Column { index, .. } = g { Some(*index) } else { None })
            .collect();
        for (i, e) in self.input.entries.iter().enumerate() {
            if !grouped.contains(&i) {
                scope.entries.push(ScopeEntry { ungrouped: true, ..e.clone() });
            }
        }
        scope
    }
}

/// An enclosing query as a subquery inside it sees it: what it was
/// binding when it entered the subquery.
///
/// ```text
///  SELECT a, (SELECT sum(t.b) FROM u LIMIT 1) FROM t GROUP BY a
///             └ sum(t.b) reads only t (level 0): it is t's aggregate,
///               agg j of t's Aggregate; the subquery reads Outer{1, keys + j}
/// ```
///
/// The aggregate is taken out of the enclosing query's [`AggContext`]
/// while the subquery binds, and put back with what the subquery added.
/// In a query that is not aggregated, it makes the query aggregated
/// (select list, ORDER BY: the binder retries, `Binder::needs_agg`) or is
/// 42803 (WHERE, ON, GROUP BY), as in PostgreSQL.
#[derive(Debug)]
pub struct Level {
    /// Its position in `Binder::outer`.
    pub at: usize,
    pub agg: Option<AggContext>,
    pub clause: &'static str,
}

impl Binder<'_> {
    /// Makes `ctx` the innermost enclosing query of a subquery.
    pub(crate) fn enter_subquery(&mut self, ctx: &mut ExprCtx) {
        let agg = ctx.agg.as_deref_mut().map(std::mem::take);
        self.levels.push(Level { at: self.outer.len(), agg, clause: ctx.clause });
        self.outer.push(ctx.scope.clone());
    }

    /// Undoes [`Binder::enter_subquery`], keeping the aggregates the
    /// subquery gave the enclosing query.
    pub(crate) fn leave_subquery(&mut self, ctx: &mut ExprCtx) {
        self.outer.pop();
        if let Some(level) = self.levels.pop()
            && let (Some(slot), Some(agg)) = (ctx.agg.as_deref_mut(), level.agg)
        {
            *slot = agg;
        }
    }

    /// How many query levels out the nearest column `e` names is (0: this
    /// one), not looking into subqueries; None without columns.
    fn nearest_level(&self, scope: &Scope, e: &ast::Expr) -> Option<usize> {
        let mut nearest: Option<usize> = None;
        let mut visit = |x: &ast::Expr| {
            let (q, name) = match x {
                ast::Expr::Identifier(id) => (None, super::ident(id)),
                ast::Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                    (Some(super::ident(&parts[parts.len() - 2])), super::ident(&parts[parts.len() - 1]))
                }
                _ => return,
            };
            let found = |s: &Scope| s.find(q.as_deref(), &name).ok().flatten().is_some();
            let d = if found(scope) { 0 } else { self.outer.iter().rev().position(found).map_or(0, |d| d + 1) };
            nearest = Some(nearest.map_or(d, |n| n.min(d)));
        };
        visit_ast(e, &mut visit);
        nearest
    }

    /// An aggregate call whose arguments (and FILTER) read only enclosing
    /// queries' columns, bound as its nearest such query's aggregate
    /// ([`Level`]); None when it is this query's.
    pub(crate) fn outer_aggregate(&mut self, f: &ast::Function, scope: &Scope) -> Result<Option<Expr>> {
        if self.outer.is_empty() {
            return Ok(None);
        }
        let args = super::functions::call_args(f)?;
        let parts: Vec<&ast::Expr> = args.into_iter().flatten().chain(f.filter.as_deref()).collect();
        let levels: Vec<Option<usize>> = parts.iter().map(|e| self.nearest_level(scope, e)).collect();
        let Some(depth) = levels.iter().flatten().copied().min() else { return Ok(None) };
        if depth == 0 {
            return Ok(None);
        }
        let at = self.outer.len() - depth;
        let Some(pos) = self.levels.iter().rposition(|l| l.at == at) else { return Ok(None) };
        let clause = self.levels[pos].clause;
        let Some(mut agg) = self.levels[pos].agg.take() else {
            if matches!(clause, "SELECT" | "ORDER BY") {
                self.needs_agg = Some(at);
            }
            return Err(SqlError::new(
                SqlState::GROUPING_ERROR,
                format!("aggregate functions are not allowed in {clause}"),
            ));
        };
        // Bound where it belongs: over that query's input, seeing only the
        // queries around that one.
        let inner_outer = self.outer.split_off(at);
        let inner_levels = self.levels.split_off(pos);
        let bound = self.aggregate(f, &agg.input);
        self.outer.extend(inner_outer);
        self.levels.extend(inner_levels);
        let a = match bound {
            Ok(a) => a,
            Err(e) => {
                self.levels[pos].agg = Some(agg);
                return Err(e);
            }
        };
        let ty = a.ty;
        let j = match agg.aggregates.iter().position(|x| *x == a) {
            Some(j) => j,
            None => {
                agg.aggregates.push(a);
                agg.aggregates.len() - 1
            }
        };
        let index = agg.groups.len() + j;
        self.levels[pos].agg = Some(agg);
        Ok(Some(Expr::Outer { depth, index, ty }))
    }

    /// In aggregate mode: `e` as an aggregate or group-key column, a
    /// constant, or None (bind structurally).
    pub(crate) fn agg_expr(&mut self, e: &ast::Expr, ctx: &mut ExprCtx) -> Result<Option<Expr>> {
        let Some(agg) = ctx.agg.as_deref() else { return Ok(None) };
        let input = agg.input.clone();
        if let ast::Expr::Function(f) = e
            && f.over.is_none()
            && is_aggregate(&object_name(&f.name)?)
        {
            if let Some(outer) = self.outer_aggregate(f, &input)? {
                return Ok(Some(outer));
            }
            let a = self.aggregate(f, &input)?;
            let Some(agg) = ctx.agg.as_deref_mut() else { return Ok(None) };
            let ty = a.ty;
            let j = match agg.aggregates.iter().position(|x| *x == a) {
                Some(j) => j,
                None => {
                    agg.aggregates.push(a);
                    agg.aggregates.len() - 1
                }
            };
            return Ok(Some(Expr::Column { index: agg.groups.len() + j, ty }));
        }
        if contains(e, &is_aggregate_call) {
            return Ok(None);
        }
        if contains(e, &is_subquery) {
            return Ok(self.subquery_key(e, &input, ctx));
        }
        let plain = self.expr(e, &mut ExprCtx::new(&input, ctx.clause))?;
        let Some(agg) = ctx.agg.as_deref() else { return Ok(None) };
        if let Some(k) = agg.groups.iter().position(|g| *g == plain) {
            return Ok(Some(Expr::Column { index: k, ty: plain.ty() }));
        }
        if let Expr::Column { index, .. } = plain {
            return Err(SqlError::new(
                SqlState::GROUPING_ERROR,
                format!(
                    "column \"{}\" must appear in the GROUP BY clause or be used in an aggregate function",
                    input.display_name(index)
                ),
            ));
        }
        if !has_column(&plain) {
            return Ok(Some(plain));
        }
        Ok(None)
    }
}

impl Binder<'_> {
    /// A group key holding a subquery (`GROUP BY (SELECT ..)`, or an
    /// expression with one): the expression bound over the input as the
    /// key was, and matched with the keys; None binds it structurally
    /// (a bare column in it is then 42803).
    fn subquery_key(&mut self, e: &ast::Expr, input: &Scope, ctx: &ExprCtx) -> Option<Expr> {
        let saved = self.needs_agg;
        let plain = self.expr(e, &mut ExprCtx::new(input, ctx.clause));
        self.needs_agg = saved;
        let plain = plain.ok()?;
        let k = ctx.agg.as_deref()?.groups.iter().position(|g| *g == plain)?;
        Some(Expr::Column { index: k, ty: plain.ty() })
    }
}

fn is_aggregate_call(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Function(f) if f.over.is_none()
        && object_name(&f.name).map(|n| is_aggregate(&n)).unwrap_or(false))
}

fn is_subquery(e: &ast::Expr) -> bool {
    matches!(
        e,
        ast::Expr::Subquery(_)
            | ast::Expr::Exists { .. }
            | ast::Expr::In { target: ast::InTarget::Subquery(_), .. }
            | ast::Expr::AnyOp { .. }
            | ast::Expr::AllOp { .. }
    )
}

/// Does `e` contain an aggregate call (not looking into subqueries)?
pub fn contains_aggregate(e: &ast::Expr) -> bool {
    contains(e, &is_aggregate_call)
}

/// Visits `e` and the expressions under it (not inside subqueries).
fn visit_ast(e: &ast::Expr, f: &mut dyn FnMut(&ast::Expr)) {
    f(e);
    for c in children(e) {
        visit_ast(c, f);
    }
}

/// Does `e` or an expression under it (not inside subqueries) satisfy `p`?
pub fn contains(e: &ast::Expr, p: &dyn Fn(&ast::Expr) -> bool) -> bool {
    p(e) || children(e).into_iter().any(|c| contains(c, p))
}

/// The direct sub-expressions of an AST expression (subqueries excluded).
fn children(e: &ast::Expr) -> Vec<&ast::Expr> {
    use ast::Expr as A;
    match e {
        A::IsFalse(x) | A::IsNotFalse(x) | A::IsTrue(x) | A::IsNotTrue(x) | A::IsNull(x) | A::IsNotNull(x) => {
            vec![x]
        }
        A::IsUnknown(x) | A::IsNotUnknown(x) | A::Nested(x) => vec![x],
        A::IsDistinctFrom(a, b) | A::IsNotDistinctFrom(a, b) => vec![a, b],
        A::In { expr, target, .. } => {
            let mut v = vec![expr.as_ref()];
            if let ast::InTarget::List(l) = target {
                v.extend(l.iter());
            }
            v
        }
        A::Between { expr, low, high, .. } => vec![expr, low, high],
        A::BinaryOp { left, right, .. } => vec![left, right],
        A::Like { expr, pattern, .. } | A::ILike { expr, pattern, .. } => vec![expr, pattern],
        A::AnyOp { left, .. } | A::AllOp { left, .. } => vec![left],
        A::UnaryOp { expr, .. } | A::Cast { expr, .. } | A::Extract { expr, .. } => vec![expr],
        A::Ceil { expr, .. } | A::Floor { expr, .. } | A::Collate { expr, .. } => vec![expr],
        A::Position { expr, r#in } => vec![expr, r#in],
        A::Substring { expr, substring_from, substring_for, .. } => {
            let mut v = vec![expr.as_ref()];
            v.extend(substring_from.as_deref());
            v.extend(substring_for.as_deref());
            v
        }
        A::Trim { expr, trim_what, .. } => {
            let mut v = vec![expr.as_ref()];
            v.extend(trim_what.as_deref());
            v
        }
        A::Case { operand, conditions, else_result, .. } => {
            let mut v: Vec<&ast::Expr> = operand.iter().map(|b| b.as_ref()).collect();
            for c in conditions {
                v.push(&c.condition);
                v.push(&c.result);
            }
            v.extend(else_result.as_deref());
            v
        }
        A::Function(f) => {
            let mut v: Vec<&ast::Expr> =
                super::functions::call_args(f).unwrap_or_default().into_iter().flatten().collect();
            v.extend(f.filter.as_deref());
            v
        }
        A::Tuple(items) => items.iter().collect(),
        _ => vec![],
    }
}

/// Does a bound expression read a column of its own input (not counting
/// subqueries' plans)?
pub fn has_column(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| found |= matches!(x, Expr::Column { .. }));
    found
}

/// Visits `e` and every expression under it (not inside subquery plans,
/// but including an IN/ANY subquery's left operand).
pub fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match e {
        Expr::Unary { expr, .. } | Expr::Cast { expr, .. } => walk(expr, f),
        Expr::Binary { left, right, .. } => {
            walk(left, f);
            walk(right, f);
        }
        Expr::Case { operand, whens, else_, .. } => {
            operand.iter().for_each(|o| walk(o, f));
            for (c, r) in whens {
                walk(c, f);
                walk(r, f);
            }
            else_.iter().for_each(|x| walk(x, f));
        }
        Expr::Like { expr, pattern, .. } => {
            walk(expr, f);
            walk(pattern, f);
        }
        Expr::InList { expr, list, .. } => {
            walk(expr, f);
            list.iter().for_each(|x| walk(x, f));
        }
        Expr::Function { args, .. } => args.iter().for_each(|x| walk(x, f)),
        Expr::Subquery { kind, .. } => match kind {
            crate::plan::SubqueryKind::In { expr, .. } | crate::plan::SubqueryKind::Quantified { expr, .. } => {
                walk(expr, f)
            }
            _ => {}
        },
        Expr::Column { .. } | Expr::Outer { .. } | Expr::Param { .. } | Expr::Literal { .. } => {}
    }
}

/// Is this type allowed as a group key / DISTINCT column?
pub fn groupable(ty: DataType) -> bool {
    ty != DataType::Unknown
}

/// Refuses an aggregate bound as this query's whose arguments read no
/// column of this query but read an enclosing query's inside a subquery
/// (`count(NOT EXISTS (SELECT .. WHERE u.x = t.a))` in a subquery of the
/// query over `t`). SQL makes it the enclosing query's aggregate;
/// [`Binder::outer_aggregate`] finds the level only from columns outside
/// subqueries, so binding it here would count the wrong rows: a clear
/// 0A000 instead of a wrong answer.
pub(crate) fn check_level_of_subquery_args<'a>(parts: impl IntoIterator<Item = Option<&'a Expr>>) -> Result<()> {
    let parts: Vec<&Expr> = parts.into_iter().flatten().collect();
    if !parts.iter().any(|e| has_subquery(e)) {
        return Ok(());
    }
    let mut level = None;
    for e in parts {
        levels_read(e, 0, &mut level);
    }
    match level {
        Some(d) if d > 0 => Err(SqlError::unsupported(
            "an aggregate whose arguments read columns of an enclosing query only inside a subquery is not \
             supported yet (it belongs to the enclosing query): move the aggregate into the enclosing query",
        )),
        _ => Ok(()),
    }
}

/// The nearest query level `e` reads, relative to the query holding it
/// (0: its own input), `nesting` subquery levels down; into `min`.
fn levels_read(e: &Expr, nesting: usize, min: &mut Option<usize>) {
    let level = match e {
        Expr::Column { .. } if nesting == 0 => Some(0),
        Expr::Outer { depth, .. } if *depth >= nesting => Some(depth - nesting),
        _ => None,
    };
    if let Some(l) = level {
        *min = Some(min.map_or(l, |m| m.min(l)));
    }
    for c in plan_util::children(e) {
        levels_read(c, nesting, min);
    }
    if let Expr::Subquery { plan, .. } = e {
        plan_levels_read(&mut plan.as_ref().clone(), nesting + 1, min);
    }
}

fn plan_levels_read(plan: &mut Plan, nesting: usize, min: &mut Option<usize>) {
    for e in node_exprs_mut(&mut plan.node) {
        levels_read(e, nesting, min);
    }
    for c in plan_children_mut(plan) {
        plan_levels_read(c, nesting, min);
    }
}
