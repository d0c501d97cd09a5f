//! CREATE/DROP TABLE, INDEX and VIEW: checked against the catalog, with
//! PostgreSQL's errors (42P07 exists, 42P01/42704 missing, 42701 duplicate
//! column, 42809 wrong kind of object). Executing them is the session's.

use sqlparser::ast;

use super::scope::Scope;
use super::{Binder, ident, object_name};
use crate::catalog::ColumnDef;
use crate::error::{Result, SqlError, SqlState};
use crate::plan::Statement;

impl Binder<'_> {
    pub(crate) fn ddl(&mut self, stmt: &ast::Statement) -> Result<Statement> {
        match stmt {
            ast::Statement::CreateTable(t) => self.create_table(t),
            ast::Statement::CreateIndex(i) => self.create_index(i),
            ast::Statement::CreateView(v) => self.create_view(v),
            ast::Statement::Drop { object_type, if_exists, names, .. } => self.drop(*object_type, *if_exists, names),
            ast::Statement::Truncate(t) => self.truncate(t),
            ast::Statement::AlterTable(a) => self.alter_table(a),
            other => Err(SqlError::internal(format!("not DDL: {other}"))),
        }
    }

    fn relation_exists(&self, name: &str) -> bool {
        self.catalog.table(name).is_some() || self.catalog.view(name).is_some() || self.catalog.index(name).is_some()
    }

    fn create_table(&mut self, t: &ast::CreateTable) -> Result<Statement> {
        if t.query.is_some() || t.like.is_some() || t.clone.is_some() {
            return Err(SqlError::unsupported("CREATE TABLE AS, LIKE and CLONE are not supported yet"));
        }
        let name = object_name(&t.name)?;
        if !t.if_not_exists && self.relation_exists(&name) {
            return Err(SqlError::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
        }
        let mut columns: Vec<ColumnDef> = Vec::with_capacity(t.columns.len());
        let mut primary_key: Option<Vec<usize>> = None;
        let mut unique = Vec::new();
        for (i, c) in t.columns.iter().enumerate() {
            let col = self.column_def(c)?;
            if columns.iter().any(|x| x.name == col.name) {
                return Err(SqlError::new(
                    SqlState::DUPLICATE_COLUMN,
                    format!("column \"{}\" specified more than once", col.name),
                ));
            }
            for o in &c.options {
                match &o.option {
                    ast::ColumnOption::PrimaryKey(_) => set_primary_key(&mut primary_key, vec![i], &name)?,
                    ast::ColumnOption::Unique(_) => unique.push(vec![i]),
                    _ => {}
                }
            }
            columns.push(col);
        }
        for c in &t.constraints {
            match c {
                ast::TableConstraint::PrimaryKey(pk) => {
                    let cols = key_columns(&pk.columns, &columns)?;
                    set_primary_key(&mut primary_key, cols, &name)?;
                }
                ast::TableConstraint::Unique(u) => unique.push(key_columns(&u.columns, &columns)?),
                other => return Err(SqlError::unsupported(format!("constraint {other} is not supported yet"))),
            }
        }
        for &k in primary_key.iter().flatten() {
            columns[k].not_null = true;
        }
        Ok(Statement::CreateTable { name, columns, primary_key, unique, if_not_exists: t.if_not_exists })
    }

    /// TRUNCATE: `DELETE FROM t` for each table, bound as such (the same
    /// checks: a table, not a view). Unlike PostgreSQL's, it is MVCC-safe:
    /// a snapshot taken before it still sees the rows.
    fn truncate(&mut self, t: &ast::Truncate) -> Result<Statement> {
        if t.partitions.is_some() || matches!(t.cascade, Some(ast::CascadeOption::Cascade)) {
            return Err(SqlError::unsupported("TRUNCATE with PARTITION or CASCADE is not supported"));
        }
        let mut deletes = Vec::with_capacity(t.table_names.len());
        for target in &t.table_names {
            let text = format!("DELETE FROM {}", target.name);
            let parsed = super::parse(&text)?;
            let [ast::Statement::Delete(d)] = parsed.as_slice() else {
                return Err(SqlError::internal(format!("TRUNCATE of {} did not make one DELETE", target.name)));
            };
            deletes.push(self.dml(&ast::Statement::Delete(d.clone()))?);
        }
        Ok(Statement::Truncate { deletes })
    }

    /// ALTER TABLE: only `ADD PRIMARY KEY (columns)` (pgbench's `-i` adds
    /// its keys so).
    fn alter_table(&mut self, a: &ast::AlterTable) -> Result<Statement> {
        let name = object_name(&a.name)?;
        let [ast::AlterTableOperation::AddConstraint { constraint: ast::TableConstraint::PrimaryKey(pk), .. }] =
            a.operations.as_slice()
        else {
            return Err(SqlError::unsupported("ALTER TABLE supports only ADD PRIMARY KEY (columns) yet"));
        };
        let table = self
            .catalog
            .table(&name)
            .ok_or_else(|| SqlError::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist")))?;
        if table.primary_key.is_some() {
            return Err(SqlError::new(
                SqlState("42P16"),
                format!("multiple primary keys for table \"{name}\" are not allowed"),
            ));
        }
        let columns = key_columns(&pk.columns, &table.columns)?;
        Ok(Statement::AddPrimaryKey { table, columns })
    }

    fn column_def(&mut self, c: &ast::ColumnDef) -> Result<ColumnDef> {
        let ty = super::types::data_type(&c.data_type)?;
        let mut col = ColumnDef { name: ident(&c.name), ty, not_null: false, default: None };
        for o in &c.options {
            match &o.option {
                ast::ColumnOption::NotNull => col.not_null = true,
                ast::ColumnOption::Null => col.not_null = false,
                ast::ColumnOption::Default(e) => col.default = Some(e.to_string()),
                ast::ColumnOption::PrimaryKey(_) | ast::ColumnOption::Unique(_) => {}
                other => return Err(SqlError::unsupported(format!("column option {other} is not supported yet"))),
            }
        }
        // The DEFAULT must bind (no columns, a type assignable to the column).
        if col.default.is_some() {
            self.default_value(&col)?;
        }
        Ok(col)
    }

    fn create_index(&mut self, i: &ast::CreateIndex) -> Result<Statement> {
        if i.predicate.is_some() || i.using.is_some() || !i.include.is_empty() {
            return Err(SqlError::unsupported("partial indexes, USING and INCLUDE are not supported yet"));
        }
        let table_name = object_name(&i.table_name)?;
        let table = self.catalog.table(&table_name).ok_or_else(|| {
            SqlError::new(SqlState::UNDEFINED_TABLE, format!("relation \"{table_name}\" does not exist"))
        })?;
        let columns = key_columns(&i.columns, &table.columns).map_err(index_column_error)?;
        let name = match &i.name {
            Some(n) => object_name(n)?,
            None => {
                let cols: Vec<&str> = columns.iter().map(|c| table.columns[*c].name.as_str()).collect();
                format!("{table_name}_{}_idx", cols.join("_"))
            }
        };
        if !i.if_not_exists && self.relation_exists(&name) {
            return Err(SqlError::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
        }
        Ok(Statement::CreateIndex { name, table, columns, unique: i.unique, if_not_exists: i.if_not_exists })
    }

    fn create_view(&mut self, v: &ast::CreateView) -> Result<Statement> {
        if v.materialized {
            return Err(SqlError::unsupported("materialized views are not supported yet"));
        }
        let name = object_name(&v.name)?;
        if self.catalog.table(&name).is_some() || self.catalog.index(&name).is_some() {
            return Err(SqlError::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a view")));
        }
        if !v.or_replace && self.catalog.view(&name).is_some() {
            return Err(SqlError::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
        }
        // Bound once now so that a broken view is refused at CREATE.
        let saved = std::mem::take(&mut self.outer);
        let bound = self.query(&v.query);
        self.outer = saved;
        let bound = bound?;
        let columns: Option<Vec<String>> =
            if v.columns.is_empty() { None } else { Some(v.columns.iter().map(|c| ident(&c.name)).collect()) };
        if let Some(cols) = &columns {
            Scope::clone(&bound.scope).requalify(&name, cols)?;
        }
        Ok(Statement::CreateView { name, columns, sql: v.query.to_string(), or_replace: v.or_replace })
    }

    fn drop(&mut self, kind: ast::ObjectType, if_exists: bool, names: &[ast::ObjectName]) -> Result<Statement> {
        let names = names.iter().map(object_name).collect::<Result<Vec<_>>>()?;
        for n in &names {
            self.check_drop(kind, if_exists, n)?;
        }
        match kind {
            ast::ObjectType::Table => Ok(Statement::DropTable { names, if_exists }),
            ast::ObjectType::Index => Ok(Statement::DropIndex { names, if_exists }),
            ast::ObjectType::View => Ok(Statement::DropView { names, if_exists }),
            other => Err(SqlError::unsupported(format!("DROP {other} is not supported"))),
        }
    }

    fn check_drop(&self, kind: ast::ObjectType, if_exists: bool, name: &str) -> Result<()> {
        let (exists, wrong, word, hint, missing) = match kind {
            ast::ObjectType::Table => (
                self.catalog.table(name).is_some(),
                self.catalog.view(name).is_some(),
                "table",
                "Use DROP VIEW to remove a view.",
                SqlState::UNDEFINED_TABLE,
            ),
            ast::ObjectType::View => (
                self.catalog.view(name).is_some(),
                self.catalog.table(name).is_some(),
                "view",
                "Use DROP TABLE to remove a table.",
                SqlState::UNDEFINED_TABLE,
            ),
            ast::ObjectType::Index => (
                self.catalog.index(name).is_some(),
                self.catalog.table(name).is_some(),
                "index",
                "Use DROP TABLE to remove a table.",
                SqlState::UNDEFINED_OBJECT,
            ),
            _ => return Ok(()),
        };
        if wrong {
            return Err(SqlError::new(
                SqlState::WRONG_OBJECT_TYPE,
                format!("\"{name}\" is not a{} {word}", if word == "index" { "n" } else { "" }),
            )
            .with_hint(hint));
        }
        if !exists && !if_exists {
            return Err(SqlError::new(missing, format!("{word} \"{name}\" does not exist")));
        }
        Ok(())
    }
}

fn set_primary_key(pk: &mut Option<Vec<usize>>, cols: Vec<usize>, table: &str) -> Result<()> {
    if pk.is_some() {
        return Err(SqlError::new(
            SqlState("42P16"),
            format!("multiple primary keys for table \"{table}\" are not allowed"),
        ));
    }
    *pk = Some(cols);
    Ok(())
}

/// CREATE INDEX says a missing column "does not exist" (a constraint's
/// key "named in key does not exist"), as PostgreSQL does.
fn index_column_error(e: SqlError) -> SqlError {
    match e.message.strip_suffix(" named in key does not exist") {
        Some(column) if e.code == SqlState::UNDEFINED_COLUMN => {
            SqlError::new(SqlState::UNDEFINED_COLUMN, format!("{column} does not exist"))
        }
        _ => e,
    }
}

/// Positions of an index's or constraint's key columns (plain names only).
fn key_columns(cols: &[ast::IndexColumn], table: &[ColumnDef]) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(cols.len());
    for c in cols {
        let ast::Expr::Identifier(id) = &c.column.expr else {
            return Err(SqlError::unsupported("index keys other than column names are not supported yet"));
        };
        let name = ident(id);
        let i = table.iter().position(|x| x.name == name).ok_or_else(|| {
            SqlError::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" named in key does not exist"))
        })?;
        if out.contains(&i) {
            return Err(SqlError::new(
                SqlState::DUPLICATE_COLUMN,
                format!("column \"{name}\" appears twice in primary key constraint"),
            ));
        }
        out.push(i);
    }
    Ok(out)
}
