//! FROM: tables, views, CTEs, subqueries and joins, each a plan with the
//! scope describing its output.
//!
//! ```text
//!  FROM a JOIN b USING (k)
//!  Join output:     [a.k a.x b.k b.y]
//!  Project output:  [k  a.x b.y | a.k b.k]   (k = a.k; COALESCE for FULL)
//!                                 └ hidden: only `a.k`/`b.k` reach them
//! ```

use std::sync::Arc;

use sqlparser::ast;

use super::expr::ExprCtx;
use super::scope::{Scope, ScopeEntry};
use super::{Binder, ident, object_name};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Access, BinaryOp, Expr, Function, JoinAlgorithm, JoinKind, Node, Plan};
use crate::types::DataType;

/// A bound FROM item (or query): its plan and the scope of its output.
#[derive(Debug, Clone)]
pub struct Bound {
    pub plan: Plan,
    pub scope: Scope,
}

impl Binder<'_> {
    /// The FROM list: items cross-joined left to right; no FROM is one
    /// empty row.
    pub fn from(&mut self, items: &[ast::TableWithJoins]) -> Result<Bound> {
        let mut acc: Option<Bound> = None;
        for item in items {
            let b = self.table_with_joins(item)?;
            if let Some(left) = &acc {
                check_names(&left.scope, &b.scope)?;
            }
            acc = Some(match acc {
                None => b,
                Some(left) => join_plan(left, b, JoinKind::Inner, None),
            });
        }
        Ok(acc.unwrap_or_else(|| Bound {
            plan: Plan::new(Node::Values { rows: vec![vec![]] }, Arc::new(vec![])),
            scope: Scope::default(),
        }))
    }

    fn table_with_joins(&mut self, twj: &ast::TableWithJoins) -> Result<Bound> {
        let mut left = self.table_factor(&twj.relation)?;
        for j in &twj.joins {
            let right = self.table_factor(&j.relation)?;
            left = self.join(left, right, &j.join_operator)?;
        }
        Ok(left)
    }

    fn table_factor(&mut self, tf: &ast::TableFactor) -> Result<Bound> {
        match tf {
            ast::TableFactor::Table { name: qualified, alias, args: None, .. } => {
                let name = object_name(qualified)?;
                let b = match self.system_relation(qualified)? {
                    Some(b) => b,
                    None => self.relation(&name)?,
                };
                let (qual, cols) = alias_parts(alias.as_ref(), &name);
                Ok(Bound { plan: b.plan, scope: b.scope.requalify(&qual, &cols)? })
            }
            ast::TableFactor::Table { name, alias, args: Some(args), with_ordinality: false, .. } => {
                self.table_function(&object_name(name)?, &args.args, alias.as_ref())
            }
            ast::TableFactor::Derived { lateral: false, subquery, alias, .. } => {
                self.outer.push(Scope::default());
                let b = self.query(subquery);
                self.outer.pop();
                let b = b?;
                match alias {
                    Some(a) => {
                        let (qual, cols) = alias_parts(Some(a), "");
                        Ok(Bound { plan: b.plan, scope: b.scope.requalify(&qual, &cols)? })
                    }
                    None => Ok(b),
                }
            }
            ast::TableFactor::NestedJoin { table_with_joins, alias } => {
                let b = self.table_with_joins(table_with_joins)?;
                match alias {
                    Some(a) => {
                        let (qual, cols) = alias_parts(Some(a), "");
                        Ok(Bound { plan: b.plan, scope: b.scope.requalify(&qual, &cols)? })
                    }
                    None => Ok(b),
                }
            }
            other => Err(SqlError::unsupported(format!("FROM item {other} is not supported"))),
        }
    }

    /// A named relation: a CTE, a view or a table (in that order).
    fn relation(&mut self, name: &str) -> Result<Bound> {
        if let Some(pos) = self.ctes.iter().rposition(|(n, _, _)| n == name) {
            let (_, query, cols) = self.ctes[pos].clone();
            let saved = self.ctes.split_off(pos);
            self.outer.push(Scope::default());
            let b = self.query(&query);
            self.outer.pop();
            self.ctes.extend(saved);
            let b = b?;
            return Ok(Bound { plan: b.plan, scope: b.scope.requalify(name, &cols)? });
        }
        if let Some(view) = self.catalog.view(name) {
            return self.view(&view);
        }
        let table = self
            .catalog
            .table(name)
            .ok_or_else(|| SqlError::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist")))?;
        let scope = Scope {
            entries: table
                .columns
                .iter()
                .map(|c| ScopeEntry {
                    name: c.name.clone(),
                    qualifier: Some(name.to_string()),
                    ty: c.ty,
                    nullable: !c.not_null,
                    hidden: false,
                    ungrouped: false,
                })
                .collect(),
        };
        let columns = (0..table.columns.len()).collect();
        let node = Node::Scan { table, columns, filter: None, emit_vid: false, access: Access::Unchosen };
        Ok(Bound { plan: Plan::new(node, scope.schema()), scope })
    }

    /// A view: its SQL bound afresh (no CTEs or outer scopes of the query
    /// that names it).
    fn view(&mut self, view: &crate::catalog::ViewDef) -> Result<Bound> {
        if self.view_depth >= 32 {
            return Err(SqlError::new(
                SqlState("42P17"),
                format!("infinite recursion detected in rules for relation \"{}\"", view.name),
            ));
        }
        let stmts = super::parse(&view.sql)?;
        let [ast::Statement::Query(q)] = stmts.as_slice() else {
            return Err(SqlError::internal(format!("view \"{}\" does not hold one query", view.name)));
        };
        let outer = std::mem::take(&mut self.outer);
        let ctes = std::mem::take(&mut self.ctes);
        self.view_depth += 1;
        let b = self.query(q);
        self.view_depth -= 1;
        self.outer = outer;
        self.ctes = ctes;
        let b = b?;
        let cols = view.columns.clone().unwrap_or_default();
        Ok(Bound { plan: b.plan, scope: b.scope.requalify(&view.name, &cols)? })
    }

    fn join(&mut self, left: Bound, right: Bound, op: &ast::JoinOperator) -> Result<Bound> {
        use ast::JoinOperator as J;
        check_names(&left.scope, &right.scope)?;
        let (kind, constraint) = match op {
            J::Join(c) | J::Inner(c) => (JoinKind::Inner, c),
            J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
            J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
            J::FullOuter(c) => (JoinKind::Full, c),
            J::CrossJoin(c) => (JoinKind::Inner, c),
            other => return Err(SqlError::unsupported(format!("join {other:?} is not supported"))),
        };
        match constraint {
            ast::JoinConstraint::None => Ok(join_plan(left, right, kind, None)),
            ast::JoinConstraint::On(cond) => {
                let mut scope = left.scope.clone();
                scope.entries.extend(right.scope.entries.iter().cloned());
                let on = self.condition(cond, &mut ExprCtx::new(&scope, "JOIN conditions"))?;
                Ok(join_plan(left, right, kind, Some(on)))
            }
            ast::JoinConstraint::Using(cols) => {
                let names = cols.iter().map(object_name).collect::<Result<Vec<_>>>()?;
                self.using_join(left, right, kind, &names)
            }
            ast::JoinConstraint::Natural => {
                let names: Vec<String> = visible_names(&left.scope)
                    .into_iter()
                    .filter(|n| visible_names(&right.scope).contains(n))
                    .collect();
                self.using_join(left, right, kind, &names)
            }
            ast::JoinConstraint::UsingAlias(..) => Err(SqlError::unsupported("USING (...) AS alias")),
        }
    }

    /// A USING/NATURAL join: equality on each named pair, then the merged
    /// columns first (see the module doc).
    fn using_join(&mut self, left: Bound, right: Bound, kind: JoinKind, names: &[String]) -> Result<Bound> {
        let mut pairs = Vec::with_capacity(names.len());
        for n in names {
            let side = |s: &Scope, which: &str| -> Result<usize> {
                s.find(None, n)?.ok_or_else(|| {
                    SqlError::new(
                        SqlState::UNDEFINED_COLUMN,
                        format!("column \"{n}\" specified in USING clause does not exist in {which} table"),
                    )
                })
            };
            pairs.push((side(&left.scope, "left")?, side(&right.scope, "right")?));
        }
        let nl = left.scope.entries.len();
        let mut on: Option<Expr> = None;
        for &(l, r) in &pairs {
            let le = Expr::column(l, left.scope.entries[l].ty);
            let re = Expr::column(nl + r, right.scope.entries[r].ty);
            let eq = self.comparison(BinaryOp::Eq, le, re)?;
            on = Some(match on {
                None => eq,
                Some(prev) => Expr::and(prev, eq),
            });
        }
        let joined = join_plan(left, right, kind, on);
        self.merge_using(joined, &pairs, nl, names, kind)
    }

    fn merge_using(
        &mut self,
        joined: Bound,
        pairs: &[(usize, usize)],
        nl: usize,
        names: &[String],
        kind: JoinKind,
    ) -> Result<Bound> {
        let entries = &joined.scope.entries;
        let mut exprs = Vec::new();
        let mut scope = Scope::default();
        for (&(l, r), name) in pairs.iter().zip(names) {
            let (le, re) = (&entries[l], &entries[nl + r]);
            let ty = super::types::common_pair(le.ty, re.ty).unwrap_or(le.ty);
            let lx = self.coerce(Expr::column(l, le.ty), ty)?;
            let rx = self.coerce(Expr::column(nl + r, re.ty), ty)?;
            let e = match kind {
                JoinKind::Right => rx,
                JoinKind::Full => Expr::Function { func: Function::Coalesce, args: vec![lx, rx], ty },
                _ => lx,
            };
            let nullable = if kind == JoinKind::Full { le.nullable && re.nullable } else { le.nullable };
            exprs.push(e);
            scope.entries.push(ScopeEntry {
                name: name.clone(),
                qualifier: None,
                ty,
                nullable,
                hidden: false,
                ungrouped: false,
            });
        }
        let merged: Vec<usize> = pairs.iter().flat_map(|&(l, r)| [l, nl + r]).collect();
        for hidden_pass in [false, true] {
            for (i, e) in entries.iter().enumerate() {
                if merged.contains(&i) == hidden_pass {
                    exprs.push(Expr::column(i, e.ty));
                    scope.entries.push(ScopeEntry { hidden: hidden_pass || e.hidden, ..e.clone() });
                }
            }
        }
        let plan = Plan::new(Node::Project { input: Box::new(joined.plan), exprs }, scope.schema());
        Ok(Bound { plan, scope })
    }
}

/// 42712 when both sides of a join have a FROM item of the same name.
fn check_names(left: &Scope, right: &Scope) -> Result<()> {
    for q in right.entries.iter().filter_map(|e| e.qualifier.as_deref()) {
        if left.has_qualifier(q) {
            return Err(SqlError::new(SqlState("42712"), format!("table name \"{q}\" specified more than once")));
        }
    }
    Ok(())
}

/// A join of two bound items; outer joins make the other side nullable.
pub fn join_plan(left: Bound, right: Bound, kind: JoinKind, on: Option<Expr>) -> Bound {
    let mut scope = left.scope;
    let nl = scope.entries.len();
    scope.entries.extend(right.scope.entries);
    for (i, e) in scope.entries.iter_mut().enumerate() {
        let right_side = i >= nl;
        if matches!((kind, right_side), (JoinKind::Left, true) | (JoinKind::Right, false) | (JoinKind::Full, _)) {
            e.nullable = true;
        }
    }
    let node = Node::Join {
        left: Box::new(left.plan),
        right: Box::new(right.plan),
        kind,
        on,
        algorithm: JoinAlgorithm::Unchosen,
    };
    Bound { plan: Plan::new(node, scope.schema()), scope }
}

fn visible_names(scope: &Scope) -> Vec<String> {
    scope.entries.iter().filter(|e| !e.hidden).map(|e| e.name.clone()).collect()
}

/// An alias's name (or `default`) and column aliases.
fn alias_parts(alias: Option<&ast::TableAlias>, default: &str) -> (String, Vec<String>) {
    match alias {
        Some(a) => (ident(&a.name), a.columns.iter().map(|c| ident(&c.name)).collect()),
        None => (default.to_string(), vec![]),
    }
}

/// A subquery's single column (scalar, IN, ANY): 42601 otherwise.
pub fn single_column(b: &Bound) -> Result<DataType> {
    match b.scope.entries.as_slice() {
        [e] => Ok(e.ty),
        _ => Err(SqlError::syntax("subquery must return only one column")),
    }
}
