//! Queries: WITH, SELECT, set operations, VALUES, ORDER BY, LIMIT.
//!
//! One SELECT becomes, bottom up:
//!
//! ```text
//!  FROM plan ─ Filter(WHERE) ─ [Aggregate(keys, aggs) ─ Filter(HAVING)]
//!   ─ Project(select list + ORDER BY extras) ─ [Distinct] ─ [Sort]
//!   ─ [Project(select list), when extras were added] ─ [Limit]
//! ```
//!
//! ORDER BY names output columns first (positions, aliases), then binds
//! an expression over the FROM scope (or in aggregate mode); one equal to a
//! select-list expression sorts on that column, any other is carried as an
//! extra column and projected away after the sort.

use std::sync::Arc;

use sqlparser::ast;

pub use super::aggregate::AggContext;
use super::aggregate::{contains_aggregate, groupable};
use super::expr::ExprCtx;
use super::from::{Bound, single_column};
use super::scope::{Scope, ScopeEntry};
use super::types::common_type;
use super::{Binder, ident};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Expr, Node, Plan, SetOpKind, SortKey, SubqueryKind};
use crate::types::{DataType, Value};

impl Binder<'_> {
    /// A whole query: WITH, body, ORDER BY, LIMIT/OFFSET.
    pub fn query(&mut self, q: &ast::Query) -> Result<Bound> {
        let depth = self.ctes.len();
        let out = self.query_inner(q);
        self.ctes.truncate(depth);
        out
    }

    fn query_inner(&mut self, q: &ast::Query) -> Result<Bound> {
        if let Some(with) = &q.with {
            if with.recursive {
                return Err(SqlError::unsupported("WITH RECURSIVE is not supported yet"));
            }
            for cte in &with.cte_tables {
                let cols = cte.alias.columns.iter().map(|c| ident(&c.name)).collect();
                self.ctes.push((ident(&cte.alias.name), (*cte.query).clone(), cols));
            }
        }
        if q.fetch.is_some() || !q.locks.is_empty() {
            return Err(SqlError::unsupported("FETCH and FOR UPDATE/SHARE are not supported yet"));
        }
        let order_by: &[ast::OrderByExpr] = match &q.order_by {
            Some(ast::OrderBy { kind: ast::OrderByKind::Expressions(e), .. }) => e,
            Some(_) => return Err(SqlError::unsupported("ORDER BY ALL is not supported")),
            None => &[],
        };
        let mut bound = match q.body.as_ref() {
            ast::SetExpr::Select(s) => self.select(s, order_by)?,
            body => {
                let b = self.set_expr(body)?;
                self.order_output(b, order_by)?
            }
        };
        if let Some(limit) = &q.limit_clause {
            bound = limit_plan(bound, limit)?;
        }
        Ok(bound)
    }

    fn set_expr(&mut self, body: &ast::SetExpr) -> Result<Bound> {
        match body {
            ast::SetExpr::Select(s) => self.select(s, &[]),
            ast::SetExpr::Query(q) => self.query(q),
            ast::SetExpr::Values(v) => self.values(v),
            ast::SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let l = self.set_expr(left)?;
                let r = self.set_expr(right)?;
                self.set_operation(l, r, op, set_quantifier)
            }
            other => Err(SqlError::unsupported(format!("query body {other} is not supported"))),
        }
    }

    fn set_operation(
        &mut self,
        l: Bound,
        r: Bound,
        op: &ast::SetOperator,
        quantifier: &ast::SetQuantifier,
    ) -> Result<Bound> {
        let (kind, name) = match op {
            ast::SetOperator::Union => (SetOpKind::Union, "UNION"),
            ast::SetOperator::Intersect => (SetOpKind::Intersect, "INTERSECT"),
            ast::SetOperator::Except | ast::SetOperator::Minus => (SetOpKind::Except, "EXCEPT"),
        };
        let all = match quantifier {
            ast::SetQuantifier::All => true,
            ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
            other => return Err(SqlError::unsupported(format!("{name} {other} is not supported"))),
        };
        if l.scope.entries.len() != r.scope.entries.len() {
            return Err(SqlError::syntax(format!("each {name} query must have the same number of columns")));
        }
        let types = l
            .scope
            .entries
            .iter()
            .zip(&r.scope.entries)
            .map(|(a, b)| common_type(&[a.ty, b.ty], name))
            .collect::<Result<Vec<_>>>()?;
        let l = self.cast_columns(l, &types)?;
        let r = self.cast_columns(r, &types)?;
        let mut scope = l.scope.clone();
        for (e, re) in scope.entries.iter_mut().zip(&r.scope.entries) {
            e.nullable |= re.nullable;
            e.qualifier = None;
        }
        let node = Node::SetOp { op: kind, all, left: Box::new(l.plan), right: Box::new(r.plan) };
        Ok(Bound { plan: Plan::new(node, scope.schema()), scope })
    }

    /// Projects `b` so that its columns have `types` (no-op when they do).
    pub fn cast_columns(&mut self, b: Bound, types: &[DataType]) -> Result<Bound> {
        if b.scope.entries.iter().zip(types).all(|(e, t)| e.ty == *t) {
            return Ok(b);
        }
        if let Node::Values { rows } = b.plan.node {
            let rows = rows
                .into_iter()
                .map(|row| row.into_iter().zip(types).map(|(e, t)| self.coerce(e, *t)).collect())
                .collect::<Result<Vec<Vec<Expr>>>>()?;
            let mut scope = b.scope;
            scope.entries.iter_mut().zip(types).for_each(|(e, t)| e.ty = *t);
            return Ok(Bound { plan: Plan::new(Node::Values { rows }, scope.schema()), scope });
        }
        let mut scope = b.scope.clone();
        let mut exprs = Vec::with_capacity(types.len());
        for (i, (e, t)) in b.scope.entries.iter().zip(types).enumerate() {
            exprs.push(self.coerce(Expr::column(i, e.ty), *t)?);
            scope.entries[i].ty = *t;
        }
        Ok(Bound { plan: Plan::new(Node::Project { input: Box::new(b.plan), exprs }, scope.schema()), scope })
    }

    /// `VALUES (..), (..)`: columns `column1..`, typed by their common type.
    fn values(&mut self, v: &ast::Values) -> Result<Bound> {
        let empty = Scope::default();
        let mut rows = Vec::with_capacity(v.rows.len());
        for row in &v.rows {
            let mut ctx = ExprCtx::new(&empty, "VALUES");
            rows.push(row.content.iter().map(|e| self.expr(e, &mut ctx)).collect::<Result<Vec<_>>>()?);
        }
        let width = rows.first().map_or(0, Vec::len);
        if rows.iter().any(|r| r.len() != width) {
            return Err(SqlError::syntax("VALUES lists must all be the same length"));
        }
        let mut scope = Scope::default();
        for c in 0..width {
            let types: Vec<DataType> = rows.iter().map(|r| r[c].ty()).collect();
            let ty = common_type(&types, "VALUES")?;
            for r in rows.iter_mut() {
                let e = std::mem::replace(&mut r[c], Expr::literal(Value::Null));
                r[c] = self.coerce(e, ty)?;
            }
            let nullable = rows.iter().any(|r| !matches!(&r[c], Expr::Literal { value, .. } if !value.is_null()));
            scope.entries.push(ScopeEntry {
                name: format!("column{}", c + 1),
                qualifier: None,
                ty,
                nullable,
                hidden: false,
                ungrouped: false,
            });
        }
        Ok(Bound { plan: Plan::new(Node::Values { rows }, scope.schema()), scope })
    }

    /// ORDER BY over a set operation or VALUES: output columns only.
    fn order_output(&mut self, b: Bound, order_by: &[ast::OrderByExpr]) -> Result<Bound> {
        if order_by.is_empty() {
            return Ok(b);
        }
        let mut keys = Vec::with_capacity(order_by.len());
        for o in order_by {
            let expr = match output_ref(&o.expr, &b.scope, "ORDER BY")? {
                Some(i) => Expr::column(i, b.scope.entries[i].ty),
                None => self.expr(&o.expr, &mut ExprCtx::new(&b.scope, "ORDER BY"))?,
            };
            keys.push(sort_key(expr, &o.options));
        }
        let node = Node::Sort { input: Box::new(b.plan), keys };
        Ok(Bound { plan: Plan::new(node, b.scope.schema()), scope: b.scope })
    }

    /// A SELECT with the ORDER BY of its query.
    fn select(&mut self, s: &ast::Select, order_by: &[ast::OrderByExpr]) -> Result<Bound> {
        check_select_clauses(s)?;
        let mut input = self.from(&s.from)?;
        if let Some(w) = &s.selection {
            let pred = self.condition(w, &mut ExprCtx::new(&input.scope, "WHERE"))?;
            input.plan = Plan::new(Node::Filter { input: Box::new(input.plan), predicate: pred }, input.scope.schema());
        }
        let group_by: &[ast::Expr] = match &s.group_by {
            ast::GroupByExpr::Expressions(e, mods) if mods.is_empty() => e,
            _ => {
                return Err(SqlError::unsupported(
                    "GROUP BY ALL, ROLLUP, CUBE and GROUPING SETS are not supported yet",
                ));
            }
        };
        let aggregated = !group_by.is_empty()
            || s.having.is_some()
            || s.projection.iter().any(|p| select_item_expr(p).is_some_and(contains_aggregate))
            || order_by.iter().any(|o| contains_aggregate(&o.expr));
        if aggregated {
            let groups = self.group_keys(group_by, &s.projection, &input.scope)?;
            let mut agg = AggContext { input: input.scope.clone(), groups, aggregates: vec![] };
            let out_scope = agg.output_scope();
            let list = self.select_list_agg(s, order_by, &mut agg, &out_scope)?;
            // Every aggregate it names belonged to an enclosing query: this
            // one is not aggregated after all (one row per input row).
            let outer_only = agg.aggregates.is_empty() && agg.groups.is_empty() && s.having.is_none();
            if !(outer_only && group_by.is_empty()) {
                let plan = aggregate_plan(input.plan, &agg);
                return self.finish_select(plan, list, s);
            }
        }
        let level = self.outer.len();
        let mut ctx = ExprCtx::new(&input.scope, "SELECT");
        match self.select_list(s, order_by, &mut ctx) {
            Ok(list) => self.finish_select(input.plan, list, s),
            // A subquery's aggregate over this query's columns only: this
            // query is aggregated (one group).
            Err(_) if self.needs_agg == Some(level) && !aggregated => {
                self.needs_agg = None;
                let mut agg = AggContext { input: input.scope.clone(), groups: vec![], aggregates: vec![] };
                let out_scope = agg.output_scope();
                let list = self.select_list_agg(s, order_by, &mut agg, &out_scope)?;
                let plan = aggregate_plan(input.plan, &agg);
                self.finish_select(plan, list, s)
            }
            Err(e) => Err(e),
        }
    }

    fn select_list_agg(
        &mut self,
        s: &ast::Select,
        order_by: &[ast::OrderByExpr],
        agg: &mut AggContext,
        out_scope: &Scope,
    ) -> Result<SelectList> {
        let mut ctx = ExprCtx { scope: out_scope, agg: Some(agg), clause: "SELECT" };
        let mut list = self.select_list(s, order_by, &mut ctx)?;
        if let Some(h) = &s.having {
            ctx.clause = "HAVING";
            list.having = Some(self.condition(h, &mut ctx)?);
        }
        Ok(list)
    }

    /// GROUP BY keys over the FROM scope: positions and output names (when
    /// no input column has the name) refer to the select list.
    fn group_keys(&mut self, group_by: &[ast::Expr], items: &[ast::SelectItem], scope: &Scope) -> Result<Vec<Expr>> {
        let mut keys = Vec::with_capacity(group_by.len());
        for g in group_by {
            let target = match g {
                _ if constant_item(g).is_some() => {
                    let n = position(g, items.len(), "GROUP BY")?;
                    select_item_expr(&items[n]).ok_or_else(|| SqlError::unsupported("GROUP BY position of a *"))?
                }
                ast::Expr::Identifier(id) if scope.find(None, &ident(id))?.is_none() => items
                    .iter()
                    .find(|i| item_alias(i).as_deref() == Some(ident(id).as_str()))
                    .and_then(select_item_expr)
                    .unwrap_or(g),
                _ => g,
            };
            let key = self.expr(target, &mut ExprCtx::new(scope, "GROUP BY"))?;
            let key = if key.ty() == DataType::Unknown { self.coerce(key, DataType::Text)? } else { key };
            if !groupable(key.ty()) {
                return Err(SqlError::unsupported("GROUP BY of an untyped expression"));
            }
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        Ok(keys)
    }

    /// The select list and ORDER BY keys in `ctx`.
    fn select_list(&mut self, s: &ast::Select, order_by: &[ast::OrderByExpr], ctx: &mut ExprCtx) -> Result<SelectList> {
        let mut list = SelectList::default();
        for item in &s.projection {
            self.select_item(item, ctx, &mut list)?;
        }
        let distinct = matches!(s.distinct, Some(ast::Distinct::Distinct));
        for o in order_by {
            let out = SelectList::output_scope(&list);
            let expr = match output_ref(&o.expr, &out, "ORDER BY")? {
                // An untyped literal item becomes text (below): sort it as text.
                Some(i) if list.exprs[i].ty() == DataType::Unknown => Expr::column(i, DataType::Text),
                Some(i) => Expr::column(i, list.exprs[i].ty()),
                None => {
                    ctx.clause = "ORDER BY";
                    let e = self.expr(&o.expr, ctx)?;
                    let i = match list.exprs.iter().position(|x| *x == e) {
                        Some(i) => i,
                        None if distinct => {
                            return Err(SqlError::new(
                                SqlState::INVALID_COLUMN_REFERENCE,
                                "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                            ));
                        }
                        None => {
                            list.extras.push(e.clone());
                            list.exprs.len() + list.extras.len() - 1
                        }
                    };
                    Expr::column(i, e.ty())
                }
            };
            list.keys.push(sort_key(expr, &o.options));
        }
        Ok(list)
    }

    fn select_item(&mut self, item: &ast::SelectItem, ctx: &mut ExprCtx, list: &mut SelectList) -> Result<()> {
        let star = |q: Option<&str>, scope: &Scope| -> Vec<usize> {
            let hits = scope.entries.iter().enumerate().filter(|(_, e)| match q {
                Some(q) => e.qualifier.as_deref() == Some(q),
                None => !e.hidden,
            });
            hits.map(|(i, _)| i).collect()
        };
        match item {
            ast::SelectItem::UnnamedExpr(e) => {
                let bound = self.expr(e, ctx)?;
                list.push(output_name(e), bound);
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                let bound = self.expr(expr, ctx)?;
                list.push(ident(alias), bound);
            }
            ast::SelectItem::ExprWithAliases { .. } => {
                return Err(SqlError::unsupported("several aliases for one expression"));
            }
            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                let qualifier = match item {
                    ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                        Some(super::object_name(n)?)
                    }
                    ast::SelectItem::QualifiedWildcard(..) => return Err(SqlError::unsupported("expr.*")),
                    _ => None,
                };
                let input = match ctx.agg.as_deref() {
                    Some(agg) => agg.input.clone(),
                    None => ctx.scope.clone(),
                };
                let cols = star(qualifier.as_deref(), &input);
                if let Some(q) = &qualifier
                    && cols.is_empty()
                {
                    return Err(SqlError::new(
                        SqlState::UNDEFINED_TABLE,
                        format!("missing FROM-clause entry for table \"{q}\""),
                    ));
                }
                for i in cols {
                    let e = &input.entries[i];
                    let ast = match &e.qualifier {
                        Some(q) => ast::Expr::CompoundIdentifier(vec![quoted(q), quoted(&e.name)]),
                        None => ast::Expr::Identifier(quoted(&e.name)),
                    };
                    let bound = match ctx.agg.is_some() {
                        true => self.expr(&ast, ctx)?,
                        false => Expr::column(i, e.ty),
                    };
                    list.push(e.name.clone(), bound);
                }
            }
        }
        Ok(())
    }

    /// The plan above FROM/WHERE/Aggregate: HAVING, projection, DISTINCT,
    /// ORDER BY.
    fn finish_select(&mut self, mut plan: Plan, list: SelectList, s: &ast::Select) -> Result<Bound> {
        if let Some(h) = list.having.clone() {
            let schema = plan.schema.clone();
            plan = Plan::new(Node::Filter { input: Box::new(plan), predicate: h }, schema);
        }
        let scope = list.scope(&plan);
        let n = list.exprs.len();
        let mut exprs = list.exprs;
        let mut wide = scope.clone();
        for (i, e) in list.extras.into_iter().enumerate() {
            wide.entries.push(ScopeEntry {
                name: format!("?sort{i}?"),
                qualifier: None,
                ty: e.ty(),
                nullable: true,
                hidden: true,
                ungrouped: false,
            });
            exprs.push(e);
        }
        // Untyped select-list literals are text, as in PostgreSQL.
        let exprs = exprs
            .into_iter()
            .map(|e| if e.ty() == DataType::Unknown { self.coerce(e, DataType::Text) } else { Ok(e) })
            .collect::<Result<Vec<_>>>()?;
        for (e, x) in wide.entries.iter_mut().zip(&exprs) {
            e.ty = x.ty();
        }
        plan = Plan::new(Node::Project { input: Box::new(plan), exprs }, wide.schema());
        match &s.distinct {
            None | Some(ast::Distinct::All) => {}
            Some(ast::Distinct::Distinct) => {
                let schema = plan.schema.clone();
                plan = Plan::new(Node::Distinct { input: Box::new(plan) }, schema);
            }
            Some(_) => return Err(SqlError::unsupported("DISTINCT ON is not supported yet")),
        }
        if !list.keys.is_empty() {
            let schema = plan.schema.clone();
            plan = Plan::new(Node::Sort { input: Box::new(plan), keys: list.keys }, schema);
        }
        let mut scope = wide;
        if scope.entries.len() > n {
            scope.entries.truncate(n);
            let exprs = scope.entries.iter().enumerate().map(|(i, e)| Expr::column(i, e.ty)).collect();
            plan = Plan::new(Node::Project { input: Box::new(plan), exprs }, scope.schema());
        }
        Ok(Bound { plan, scope })
    }

    /// A subquery in an expression; the enclosing scope is pushed so its
    /// names resolve as outer references.
    pub fn subquery(&mut self, q: &ast::Query, kind: SubqueryKind, ctx: &mut ExprCtx) -> Result<Expr> {
        self.enter_subquery(ctx);
        let b = self.query(q);
        self.leave_subquery(ctx);
        let b = b?;
        let ty = match kind {
            SubqueryKind::Scalar => single_column(&b)?,
            SubqueryKind::Array => {
                single_column(&b)?;
                DataType::Text
            }
            _ => DataType::Bool,
        };
        Ok(Expr::Subquery { kind, plan: Box::new(b.plan), ty })
    }

    /// `e [NOT] IN (SELECT ..)`: the subquery's column and `e` cast to one
    /// type.
    pub fn in_subquery(&mut self, e: Expr, q: &ast::Query, negated: bool, ctx: &mut ExprCtx) -> Result<Expr> {
        self.compared_subquery(e, q, ctx, |expr| SubqueryKind::In { expr: Box::new(expr), negated })
    }

    /// `e op ANY/ALL (SELECT ..)`.
    pub fn quantified(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        all: bool,
        ctx: &mut ExprCtx,
    ) -> Result<Expr> {
        let q = match right {
            ast::Expr::Subquery(q) => q,
            ast::Expr::Nested(inner) => match inner.as_ref() {
                ast::Expr::Subquery(q) => q,
                _ => return self.quantified_array(left, op, right, all, ctx),
            },
            _ => return self.quantified_array(left, op, right, all, ctx),
        };
        let e = self.expr(left, ctx)?;
        let probe = self.binary(op, Expr::literal(Value::Null), Expr::literal(Value::Null))?;
        let Expr::Binary { op: bop, .. } = probe else { return Err(SqlError::internal("comparison")) };
        if !bop.is_comparison() {
            return Err(SqlError::unsupported(format!("{op} ANY/ALL is not supported")));
        }
        self.compared_subquery(e, q, ctx, |expr| SubqueryKind::Quantified { expr: Box::new(expr), op: bop, all })
    }

    fn compared_subquery(
        &mut self,
        e: Expr,
        q: &ast::Query,
        ctx: &mut ExprCtx,
        kind: impl FnOnce(Expr) -> SubqueryKind,
    ) -> Result<Expr> {
        self.enter_subquery(ctx);
        let b = self.query(q);
        self.leave_subquery(ctx);
        let b = b?;
        if b.scope.entries.len() > 1 {
            return Err(SqlError::syntax("subquery has too many columns"));
        }
        let col = single_column(&b)?;
        let ty = super::types::common_pair(e.ty(), col).ok_or_else(|| super::types::no_operator("=", e.ty(), col))?;
        let ty = if ty == DataType::Unknown { DataType::Text } else { ty };
        let e = self.coerce(e, ty)?;
        let b = self.cast_columns(b, &[ty])?;
        Ok(Expr::Subquery { kind: kind(e), plan: Box::new(b.plan), ty: DataType::Bool })
    }
}

/// The bound select list, HAVING and sort keys of one SELECT.
#[derive(Debug, Default)]
struct SelectList {
    names: Vec<String>,
    exprs: Vec<Expr>,
    /// ORDER BY expressions not in the select list.
    extras: Vec<Expr>,
    keys: Vec<SortKey>,
    having: Option<Expr>,
}

impl SelectList {
    fn push(&mut self, name: String, e: Expr) {
        self.names.push(name);
        self.exprs.push(e);
    }

    /// Output names (for ORDER BY's name lookup).
    fn output_scope(list: &SelectList) -> Scope {
        let entries = list
            .names
            .iter()
            .zip(&list.exprs)
            .map(|(n, e)| ScopeEntry {
                name: n.clone(),
                qualifier: None,
                ty: e.ty(),
                nullable: true,
                hidden: false,
                ungrouped: false,
            })
            .collect();
        Scope { entries }
    }

    /// The output scope, with nullability from the input where known.
    fn scope(&self, input: &Plan) -> Scope {
        let entries = self
            .names
            .iter()
            .zip(&self.exprs)
            .map(|(n, e)| {
                let nullable = match e {
                    Expr::Column { index, .. } => input.schema.get(*index).is_none_or(|f| f.nullable),
                    Expr::Literal { value, .. } => value.is_null(),
                    _ => true,
                };
                ScopeEntry { name: n.clone(), qualifier: None, ty: e.ty(), nullable, hidden: false, ungrouped: false }
            })
            .collect();
        Scope { entries }
    }
}

fn aggregate_plan(input: Plan, agg: &AggContext) -> Plan {
    let mut fields = Vec::with_capacity(agg.groups.len() + agg.aggregates.len());
    for (i, g) in agg.groups.iter().enumerate() {
        let (name, qualifier, nullable) = match g {
            Expr::Column { index, .. } => {
                let f = &input.schema[*index];
                (f.name.clone(), f.qualifier.clone(), f.nullable)
            }
            _ => (format!("group{i}"), None, true),
        };
        fields.push(crate::plan::Field { name, qualifier, ty: g.ty(), nullable });
    }
    for (j, a) in agg.aggregates.iter().enumerate() {
        let nullable = !matches!(a.func, crate::plan::AggFunc::Count | crate::plan::AggFunc::CountStar);
        fields.push(crate::plan::Field { name: format!("agg{j}"), qualifier: None, ty: a.ty, nullable });
    }
    let node =
        Node::Aggregate { input: Box::new(input), group_by: agg.groups.clone(), aggregates: agg.aggregates.clone() };
    Plan::new(node, Arc::new(fields))
}

fn check_select_clauses(s: &ast::Select) -> Result<()> {
    if s.into.is_some() || s.top.is_some() || !s.lateral_views.is_empty() || s.qualify.is_some() {
        return Err(SqlError::unsupported("SELECT INTO, TOP, LATERAL VIEW and QUALIFY are not supported"));
    }
    if !s.named_window.is_empty() {
        return Err(SqlError::unsupported("window functions are not supported yet"));
    }
    Ok(())
}

fn select_item_expr(item: &ast::SelectItem) -> Option<&ast::Expr> {
    match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        _ => None,
    }
}

fn item_alias(item: &ast::SelectItem) -> Option<String> {
    match item {
        ast::SelectItem::ExprWithAlias { alias, .. } => Some(ident(alias)),
        ast::SelectItem::UnnamedExpr(e) => Some(output_name(e)),
        _ => None,
    }
}

/// A constant GROUP BY / ORDER BY item as PostgreSQL's parser sees it
/// (signs and parentheses folded into number constants).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Constant {
    Integer(i64),
    /// A number that is not an integer.
    Number,
    /// A string, boolean or NULL constant.
    Other,
}

fn constant_item(e: &ast::Expr) -> Option<Constant> {
    match e {
        ast::Expr::Nested(inner) => constant_item(inner),
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => match constant_item(expr)? {
            Constant::Integer(n) => Some(Constant::Integer(n.checked_neg()?)),
            Constant::Number => Some(Constant::Number),
            Constant::Other => None,
        },
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(t, _) => Some(t.parse::<i64>().map_or(Constant::Number, Constant::Integer)),
            ast::Value::SingleQuotedString(_) | ast::Value::Boolean(_) | ast::Value::Null => Some(Constant::Other),
            _ => None,
        },
        _ => None,
    }
}

/// A 1-based position constant of GROUP BY / ORDER BY as an index; any
/// other constant is PostgreSQL's syntax error.
fn position(e: &ast::Expr, len: usize, clause: &str) -> Result<usize> {
    match constant_item(e) {
        Some(Constant::Integer(n)) if n >= 1 && (n as u64) <= len as u64 => Ok(n as usize - 1),
        Some(Constant::Integer(n)) => Err(SqlError::new(
            SqlState::INVALID_COLUMN_REFERENCE,
            format!("{clause} position {n} is not in select list"),
        )),
        _ => Err(SqlError::new(SqlState::SYNTAX_ERROR, format!("non-integer constant in {clause}"))),
    }
}

/// ORDER BY's reference to an output column: a position, or a bare name
/// equal to one output column's name.
fn output_ref(e: &ast::Expr, out: &Scope, clause: &str) -> Result<Option<usize>> {
    match e {
        _ if constant_item(e).is_some() => Ok(Some(position(e, out.entries.len(), clause)?)),
        ast::Expr::Identifier(id) => {
            let name = ident(id);
            let hits: Vec<usize> =
                out.entries.iter().enumerate().filter(|(_, x)| x.name == name).map(|(i, _)| i).collect();
            match hits.as_slice() {
                [] => Ok(None),
                [i] => Ok(Some(*i)),
                _ => Err(SqlError::new(SqlState::AMBIGUOUS_COLUMN, format!("{clause} \"{name}\" is ambiguous"))),
            }
        }
        _ => Ok(None),
    }
}

fn sort_key(expr: Expr, o: &ast::OrderByOptions) -> SortKey {
    let asc = !matches!(o.sort, Some(ast::OrderBySort::Desc));
    SortKey { expr, asc, nulls_first: o.nulls_first.unwrap_or(!asc) }
}

/// LIMIT/OFFSET with integer constants (NULL or ALL = no limit).
fn limit_plan(b: Bound, clause: &ast::LimitClause) -> Result<Bound> {
    let (limit, offset) = match clause {
        ast::LimitClause::LimitOffset { limit, offset, limit_by } if limit_by.is_empty() => {
            (limit.as_ref(), offset.as_ref().map(|o| &o.value))
        }
        _ => return Err(SqlError::unsupported("this LIMIT syntax is not supported")),
    };
    let limit = limit.map(|e| constant_count(e, "LIMIT")).transpose()?.flatten();
    let offset = offset.map(|e| constant_count(e, "OFFSET")).transpose()?.flatten().unwrap_or(0);
    let schema = b.plan.schema.clone();
    let plan = Plan::new(Node::Limit { input: Box::new(b.plan), limit, offset }, schema);
    Ok(Bound { plan, scope: b.scope })
}

fn constant_count(e: &ast::Expr, clause: &str) -> Result<Option<u64>> {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Null => Ok(None),
            ast::Value::Number(t, _) => match t.parse::<i64>() {
                Ok(n) if n >= 0 => Ok(Some(n as u64)),
                Ok(_) => Err(SqlError::new(SqlState("2201W"), format!("{clause} must not be negative"))),
                Err(_) => {
                    Err(SqlError::new(SqlState::INVALID_TEXT_REPRESENTATION, format!("invalid {clause} \"{t}\"")))
                }
            },
            _ => Err(SqlError::unsupported(format!("{clause} must be an integer constant"))),
        },
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, .. } => {
            Err(SqlError::new(SqlState("2201W"), format!("{clause} must not be negative")))
        }
        _ => Err(SqlError::unsupported(format!("{clause} must be an integer constant"))),
    }
}

/// The column name PostgreSQL gives an unaliased select-list expression.
pub fn output_name(e: &ast::Expr) -> String {
    use ast::Expr as A;
    match e {
        A::Identifier(id) => ident(id),
        A::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        A::Function(f) => super::object_name(&f.name).unwrap_or_else(|_| "?column?".into()),
        A::Nested(inner) => output_name(inner),
        A::Cast { expr, data_type, .. } => match expr.as_ref() {
            A::Value(_) => cast_type_name(data_type),
            inner => output_name(inner),
        },
        A::TypedString(ts) => cast_type_name(&ts.data_type),
        A::Extract { .. } => "extract".into(),
        A::Substring { .. } => "substring".into(),
        A::Position { .. } => "position".into(),
        A::Trim { trim_where: Some(ast::TrimWhereField::Leading), .. } => "ltrim".into(),
        A::Trim { trim_where: Some(ast::TrimWhereField::Trailing), .. } => "rtrim".into(),
        A::Trim { .. } => "btrim".into(),
        A::Ceil { .. } => "ceil".into(),
        A::Floor { .. } => "floor".into(),
        A::Case { .. } => "case".into(),
        A::Exists { .. } => "exists".into(),
        A::Interval(_) => "interval".into(),
        _ => "?column?".into(),
    }
}

fn cast_type_name(ty: &ast::DataType) -> String {
    match super::types::data_type(ty) {
        Ok(DataType::Int16) => "int2".into(),
        Ok(DataType::Int32) => "int4".into(),
        Ok(DataType::Int64) => "int8".into(),
        Ok(DataType::Float64) => "float8".into(),
        Ok(DataType::Bool) => "bool".into(),
        Ok(DataType::Char(_)) => "bpchar".into(),
        Ok(DataType::Varchar(_)) => "varchar".into(),
        Ok(DataType::Timestamp) => "timestamp".into(),
        Ok(t) => super::types::base_name(t).into(),
        Err(_) => "?column?".into(),
    }
}

fn quoted(s: &str) -> ast::Ident {
    ast::Ident::with_quote('"', s)
}
