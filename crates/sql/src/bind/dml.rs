//! INSERT, UPDATE, DELETE: the source plans `plan::Statement` describes.
//!
//! ```text
//!  INSERT: Values | query ─ Project(every column in table order, cast to
//!          its type; omitted ones DEFAULT or NULL)
//!  UPDATE: Scan(emit_vid) ─ Filter(WHERE) ─ Project(vid, new row)
//!  DELETE: Scan(emit_vid) ─ Filter(WHERE) ─ Project(vid)
//! ```

use std::sync::Arc;

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::expr::ExprCtx;
use super::scope::{Scope, ScopeEntry};
use super::types::assignable;
use super::{Binder, ident, object_name};
use crate::catalog::{ColumnDef, IndexDef, TableDef};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Access, Expr, Node, Plan, Statement};
use crate::types::{DataType, Value};

impl Binder<'_> {
    pub(crate) fn dml(&mut self, stmt: &ast::Statement) -> Result<Statement> {
        match stmt {
            ast::Statement::Insert(i) => self.insert(i),
            ast::Statement::Update(u) => self.update(u),
            ast::Statement::Delete(d) => self.delete(d),
            other => Err(SqlError::internal(format!("not DML: {other}"))),
        }
    }

    /// The table a DML statement writes (views cannot be written yet).
    pub(crate) fn target_table(&self, name: &str) -> Result<Arc<TableDef>> {
        if self.catalog.view(name).is_some() {
            return Err(SqlError::unsupported(format!("cannot write to view \"{name}\"")));
        }
        self.catalog
            .table(name)
            .ok_or_else(|| SqlError::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist")))
    }

    fn insert(&mut self, i: &ast::Insert) -> Result<Statement> {
        if i.returning.is_some() || !i.assignments.is_empty() {
            return Err(SqlError::unsupported("INSERT with RETURNING or SET is not supported yet"));
        }
        let ast::TableObject::TableName(name) = &i.table else {
            return Err(SqlError::unsupported("INSERT INTO a table function"));
        };
        let table = self.target_table(&object_name(name)?)?;
        let skip_conflicts = match &i.on {
            None => None,
            Some(ast::OnInsert::OnConflict(c)) if c.action == ast::OnConflictAction::DoNothing => {
                Some(conflict_arbiter(&table, c.conflict_target.as_ref())?)
            }
            Some(_) => return Err(SqlError::unsupported("INSERT .. ON CONFLICT DO UPDATE is not supported yet")),
        };
        let targets = self.target_columns(&table, &i.columns)?;
        let source = i.source.as_ref().ok_or_else(|| SqlError::unsupported("INSERT ... DEFAULT VALUES"))?;
        let plan = match source.body.as_ref() {
            ast::SetExpr::Values(v) if source.order_by.is_none() && source.limit_clause.is_none() => {
                self.insert_values(&table, &targets, v)?
            }
            _ => self.insert_query(&table, &targets, source)?,
        };
        Ok(Statement::Insert { table, source: plan, skip_conflicts })
    }

    /// Positions of the named columns (all, in order, when none named).
    fn target_columns(&self, table: &TableDef, names: &[ast::ObjectName]) -> Result<Vec<usize>> {
        if names.is_empty() {
            return Ok((0..table.columns.len()).collect());
        }
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            let name = object_name(n)?;
            let i = table.column_index(&name).ok_or_else(|| no_column(&name, &table.name))?;
            if out.contains(&i) {
                return Err(SqlError::new(
                    SqlState::DUPLICATE_COLUMN,
                    format!("column \"{name}\" specified more than once"),
                ));
            }
            out.push(i);
        }
        Ok(out)
    }

    fn insert_values(&mut self, table: &TableDef, targets: &[usize], v: &ast::Values) -> Result<Plan> {
        let empty = Scope::default();
        let mut rows = Vec::with_capacity(v.rows.len());
        for row in &v.rows {
            let given = &row.content;
            if given.len() > targets.len() {
                return Err(SqlError::syntax("INSERT has more expressions than target columns"));
            }
            if given.len() < targets.len() {
                return Err(SqlError::syntax("INSERT has more target columns than expressions"));
            }
            let mut out = Vec::with_capacity(table.columns.len());
            for (c, col) in table.columns.iter().enumerate() {
                let e = match targets.iter().position(|t| *t == c) {
                    Some(p) if is_default(&given[p]) => self.default_value(col)?,
                    Some(p) => {
                        let e = self.expr(&given[p], &mut ExprCtx::new(&empty, "VALUES"))?;
                        self.assign(e, col)?
                    }
                    None => self.default_value(col)?,
                };
                out.push(e);
            }
            rows.push(out);
        }
        Ok(Plan::new(Node::Values { rows }, table_schema(table)))
    }

    fn insert_query(&mut self, table: &TableDef, targets: &[usize], q: &ast::Query) -> Result<Plan> {
        let b = self.query(q)?;
        let width = b.scope.entries.len();
        if width > targets.len() {
            return Err(SqlError::syntax("INSERT has more expressions than target columns"));
        }
        if width < targets.len() {
            return Err(SqlError::syntax("INSERT has more target columns than expressions"));
        }
        let mut exprs = Vec::with_capacity(table.columns.len());
        for (c, col) in table.columns.iter().enumerate() {
            exprs.push(match targets.iter().position(|t| *t == c) {
                Some(p) => self.assign(Expr::column(p, b.scope.entries[p].ty), col)?,
                None => self.default_value(col)?,
            });
        }
        Ok(Plan::new(Node::Project { input: Box::new(b.plan), exprs }, table_schema(table)))
    }

    /// A value written to `col`: assignment-cast to its type (42804 when
    /// no such cast exists).
    pub(crate) fn assign(&mut self, e: Expr, col: &ColumnDef) -> Result<Expr> {
        if !assignable(e.ty(), col.ty) {
            return Err(SqlError::new(
                SqlState::DATATYPE_MISMATCH,
                format!(
                    "column \"{}\" is of type {} but expression is of type {}",
                    col.name,
                    super::types::base_name(col.ty),
                    super::types::base_name(e.ty())
                ),
            )
            .with_hint("You will need to rewrite or cast the expression."));
        }
        // An explicit cast to char(n)/varchar(n) cuts the text; an
        // assignment must fail with 22001 instead (PostgreSQL's assignment
        // cast). The writer checks the length against the column, so the
        // value travels as unbounded text.
        let to = match col.ty {
            DataType::Char(_) | DataType::Varchar(Some(_)) if e.ty().is_text() || e.ty() == DataType::Unknown => {
                DataType::Text
            }
            t => t,
        };
        self.coerce(e, to)
    }

    /// The column's DEFAULT (its text bound now), or a typed NULL.
    pub(crate) fn default_value(&mut self, col: &ColumnDef) -> Result<Expr> {
        match &col.default {
            None => Ok(Expr::Literal { value: Value::Null, ty: col.ty }),
            Some(text) => {
                let ast =
                    Parser::new(&PostgreSqlDialect {}).try_with_sql(text).and_then(|mut p| p.parse_expr()).map_err(
                        |e| SqlError::internal(format!("DEFAULT of column \"{}\" does not parse: {e}", col.name)),
                    )?;
                let e = self.expr(&ast, &mut ExprCtx::new(&Scope::default(), "DEFAULT expressions"))?;
                self.assign(e, col)
            }
        }
    }

    fn update(&mut self, u: &ast::Update) -> Result<Statement> {
        if u.from.is_some() || u.returning.is_some() || !u.table.joins.is_empty() {
            return Err(SqlError::unsupported("UPDATE with FROM, RETURNING or joins is not supported yet"));
        }
        let (table, scope, scan) = self.vid_scan(&u.table.relation)?;
        let input = self.where_filter(scan, &scope, u.selection.as_ref())?;
        let mut new: Vec<Option<Expr>> = vec![None; table.columns.len()];
        for a in &u.assignments {
            let ast::AssignmentTarget::ColumnName(n) = &a.target else {
                return Err(SqlError::unsupported("UPDATE SET (a, b) = ..."));
            };
            let name = object_name(n)?;
            let c = table.column_index(&name).ok_or_else(|| no_column(&name, &table.name))?;
            if new[c].is_some() {
                return Err(SqlError::syntax(format!("multiple assignments to same column \"{name}\"")));
            }
            let col = &table.columns[c];
            new[c] = Some(if is_default(&a.value) {
                self.default_value(col)?
            } else {
                let e = self.expr(&a.value, &mut ExprCtx::new(&scope, "UPDATE"))?;
                self.assign(e, col)?
            });
        }
        let vid = Expr::column(table.columns.len(), DataType::Int64);
        let mut exprs = vec![vid];
        for (c, e) in new.into_iter().enumerate() {
            exprs.push(e.unwrap_or(Expr::column(c, table.columns[c].ty)));
        }
        let mut fields = vec![vid_field()];
        fields.extend(table_schema(&table).iter().cloned());
        let source = Plan::new(Node::Project { input: Box::new(input), exprs }, Arc::new(fields));
        Ok(Statement::Update { table, source })
    }

    fn delete(&mut self, d: &ast::Delete) -> Result<Statement> {
        let items = match &d.from {
            ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
        };
        let [item] = items.as_slice() else {
            return Err(SqlError::unsupported("DELETE from several tables"));
        };
        if d.using.is_some() || d.returning.is_some() || !item.joins.is_empty() || !d.tables.is_empty() {
            return Err(SqlError::unsupported("DELETE with USING, RETURNING or joins is not supported yet"));
        }
        let (table, scope, scan) = self.vid_scan(&item.relation)?;
        let input = self.where_filter(scan, &scope, d.selection.as_ref())?;
        let vid = Expr::column(table.columns.len(), DataType::Int64);
        let source = Plan::new(Node::Project { input: Box::new(input), exprs: vec![vid] }, Arc::new(vec![vid_field()]));
        Ok(Statement::Delete { table, source })
    }

    /// A scan of every column and the VID, with the scope naming them.
    fn vid_scan(&mut self, tf: &ast::TableFactor) -> Result<(Arc<TableDef>, Scope, Plan)> {
        let ast::TableFactor::Table { name, alias, args: None, .. } = tf else {
            return Err(SqlError::unsupported("UPDATE/DELETE of anything but a table"));
        };
        let name = object_name(name)?;
        let table = self.target_table(&name)?;
        let qualifier = alias.as_ref().map(|a| ident(&a.name)).unwrap_or(name);
        let mut entries: Vec<ScopeEntry> = table
            .columns
            .iter()
            .map(|c| ScopeEntry {
                name: c.name.clone(),
                qualifier: Some(qualifier.clone()),
                ty: c.ty,
                nullable: !c.not_null,
                hidden: false,
                ungrouped: false,
            })
            .collect();
        entries.push(ScopeEntry {
            name: String::new(),
            qualifier: None,
            ty: DataType::Int64,
            nullable: false,
            hidden: true,
            ungrouped: false,
        });
        let scope = Scope { entries };
        let columns = (0..table.columns.len()).collect();
        let node = Node::Scan { table: table.clone(), columns, filter: None, emit_vid: true, access: Access::Unchosen };
        let plan = Plan::new(node, scope.schema());
        Ok((table, scope, plan))
    }

    fn where_filter(&mut self, input: Plan, scope: &Scope, cond: Option<&ast::Expr>) -> Result<Plan> {
        let Some(cond) = cond else { return Ok(input) };
        let predicate = self.condition(cond, &mut ExprCtx::new(scope, "WHERE"))?;
        let schema = input.schema.clone();
        Ok(Plan::new(Node::Filter { input: Box::new(input), predicate }, schema))
    }
}

fn is_default(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

fn no_column(name: &str, table: &str) -> SqlError {
    SqlError::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" of relation \"{table}\" does not exist"))
}

fn vid_field() -> crate::plan::Field {
    crate::plan::Field { name: "vid".into(), qualifier: None, ty: DataType::Int64, nullable: false }
}

/// The table's columns as a plan schema.
pub fn table_schema(table: &TableDef) -> crate::plan::Schema {
    Arc::new(
        table
            .columns
            .iter()
            .map(|c| crate::plan::Field {
                name: c.name.clone(),
                qualifier: Some(table.name.clone()),
                ty: c.ty,
                nullable: !c.not_null,
            })
            .collect(),
    )
}

/// The arbiter of `ON CONFLICT [target] DO NOTHING`: None (any unique
/// index) without a target; else the columns of the unique index the
/// target names, inferred as PostgreSQL does (the same set of columns),
/// or 42P10 / 42704 as PostgreSQL answers when there is none.
fn conflict_arbiter(table: &TableDef, target: Option<&ast::ConflictTarget>) -> Result<Option<Vec<usize>>> {
    let unique = || table.indexes.iter().filter(|i| i.unique);
    match target {
        None => Ok(None),
        Some(ast::ConflictTarget::Columns { columns, predicate: None }) => {
            let mut want = Vec::with_capacity(columns.len());
            for c in columns {
                let name = ident(c);
                want.push(table.column_index(&name).ok_or_else(|| no_column(&name, &table.name))?);
            }
            want.sort_unstable();
            want.dedup();
            let found = unique().find(|i| {
                let mut have = i.columns.clone();
                have.sort_unstable();
                have == want
            });
            found.map(|i| Some(i.columns.clone())).ok_or_else(|| {
                SqlError::new(
                    SqlState("42P10"),
                    "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                )
            })
        }
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let name = name.0.iter().filter_map(|p| p.as_ident()).map(ident).next_back().unwrap_or_default();
            let constraint = |i: &&Arc<IndexDef>| crate::catalog::system::constraint_type(table, i).is_some();
            unique().filter(constraint).find(|i| i.name == name).map(|i| Some(i.columns.clone())).ok_or_else(|| {
                SqlError::new(
                    SqlState("42704"),
                    format!("constraint \"{name}\" for table \"{}\" does not exist", table.name),
                )
            })
        }
        Some(_) => Err(SqlError::unsupported("ON CONFLICT with an index predicate is not supported yet")),
    }
}
