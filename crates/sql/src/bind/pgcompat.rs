//! PostgreSQL's catalog as clients see it: system tables in FROM, the
//! catalog functions, `::regclass`-style casts, `~` and `COLLATE`.
//!
//! ```text
//!  FROM pg_catalog.pg_class c   ──► system_relation: Values of the rows of
//!  FROM pg_class / information_schema.tables          catalog::system, built
//!                                                     from this binder's catalog
//!  pg_get_indexdef(i.indexrelid)──► CASE i.indexrelid WHEN <oid> THEN '<def>' ... END
//!  'public.t'::regclass          ──► the OID, a literal (42P01 if no such relation)
//!  c.oid::regclass               ──► CASE c.oid WHEN <oid> THEN '<name>' ... END
//!  format_type(..), ~, array_to_string(..) ──► plan::Function (exec/expr/pgfunc.rs)
//! ```
//!
//! Functions that read the catalog (`pg_get_indexdef`, `pg_get_constraintdef`,
//! `pg_get_viewdef`, `pg_table_is_visible`, `::regclass` of an OID) are bound
//! to a CASE over the catalog this statement binds against: the answer is
//! the transaction's view, as the system tables' rows are, and the executor
//! needs no catalog access. Name resolution: `pg_catalog` is searched before
//! `public` (PostgreSQL's implicit search path), so an unqualified
//! `pg_class` is the system table; `information_schema` is not on the path.
//! A CTE of the same name still wins, as in PostgreSQL.

use std::cell::Cell;

use sqlparser::ast;

use super::expr::ExprCtx;
use super::from::Bound;
use super::scope::{Scope, ScopeEntry};
use super::{BindOptions, Binder, ident};
use crate::catalog::system::{self, Column, OWNER, RelKind, Relations, oids};
use crate::catalog::{Catalog, ViewDef};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{BinaryOp, Expr, Function, Node, Plan};
use crate::types::{DataType, Value};

thread_local! {
    /// Set while a view is bound for its columns (a view over pg_class
    /// would otherwise list itself forever).
    static LISTING_VIEWS: Cell<bool> = const { Cell::new(false) };
}

/// Is `name` one of the functions [`Binder::pg_function`] binds?
pub fn handles(name: &str) -> bool {
    matches!(
        name,
        "pg_table_is_visible"
            | "pg_type_is_visible"
            | "pg_get_userbyid"
            | "format_type"
            | "pg_get_indexdef"
            | "pg_get_constraintdef"
            | "pg_get_viewdef"
            | "pg_get_expr"
            | "pg_encoding_to_char"
            | "obj_description"
            | "col_description"
            | "shobj_description"
            | "array_to_string"
            | "current_schemas"
            | "current_user"
            | "session_user"
            | "user"
            | "current_role"
            | "pg_size_pretty"
            | "has_table_privilege"
            | "has_schema_privilege"
            | "has_database_privilege"
            | "has_column_privilege"
            | "pg_has_role"
            | "pg_relation_is_publishable"
            | "pg_get_statisticsobjdef_columns"
            | "to_regclass"
            | "to_regtype"
            | "to_regnamespace"
    )
}

/// The columns of a view: its query bound for its scope.
fn view_columns(catalog: &dyn Catalog, v: &ViewDef) -> Vec<Column> {
    if LISTING_VIEWS.with(Cell::get) {
        return vec![];
    }
    LISTING_VIEWS.with(|f| f.set(true));
    let bound = super::parse(&v.sql).ok().and_then(|stmts| match stmts.as_slice() {
        [ast::Statement::Query(q)] => Binder::new(catalog, &BindOptions::default()).query(q).ok(),
        _ => None,
    });
    LISTING_VIEWS.with(|f| f.set(false));
    let Some(b) = bound else { return vec![] };
    let names = v.columns.clone().unwrap_or_default();
    b.scope
        .entries
        .iter()
        .filter(|e| !e.hidden)
        .enumerate()
        .map(|(i, e)| Column {
            name: names.get(i).cloned().unwrap_or_else(|| e.name.clone()),
            ty: if e.ty == DataType::Unknown { DataType::Text } else { e.ty },
            not_null: false,
            default: None,
        })
        .collect()
}

fn null(ty: DataType) -> Expr {
    Expr::Literal { value: Value::Null, ty }
}

fn text(s: &str) -> Expr {
    Expr::Literal { value: Value::Text(s.to_string()), ty: DataType::Text }
}

fn func(f: Function, args: Vec<Expr>, ty: DataType) -> Expr {
    Expr::Function { func: f, args, ty }
}

/// The identifiers of an object name, folded as PostgreSQL folds them.
fn name_parts(name: &ast::ObjectName) -> Vec<String> {
    name.0.iter().map(|p| p.as_ident().map(ident).unwrap_or_default()).collect()
}

impl Binder<'_> {
    /// Every relation this statement's catalog has, with OIDs.
    pub(crate) fn relations(&self) -> Relations {
        let catalog = self.catalog;
        Relations::new(catalog, &mut |v| view_columns(catalog, v))
    }

    /// A system table named in FROM, or None for the caller's lookup.
    pub(crate) fn system_relation(&mut self, name: &ast::ObjectName) -> Result<Option<Bound>> {
        let parts = name_parts(name);
        let table = match parts.as_slice() {
            [name] if !self.ctes.iter().any(|(n, _, _)| n == name) => system::lookup(None, name),
            [schema, name] | [_, schema, name] if schema == "pg_catalog" || schema == "information_schema" => {
                let found = system::lookup(Some(schema), name);
                if found.is_none() {
                    return Err(SqlError::new(
                        SqlState::UNDEFINED_TABLE,
                        format!("relation \"{schema}.{name}\" does not exist"),
                    ));
                }
                found
            }
            _ => None,
        };
        let Some(table) = table else { return Ok(None) };
        let rows = table.rows(&self.relations());
        let rows = rows
            .into_iter()
            .map(|row| {
                row.into_iter().zip(table.columns).map(|(value, (_, ty))| Expr::Literal { value, ty: *ty }).collect()
            })
            .collect();
        let scope = Scope {
            entries: table
                .columns
                .iter()
                .map(|(n, ty)| ScopeEntry {
                    name: n.to_string(),
                    qualifier: Some(table.name.to_string()),
                    ty: *ty,
                    nullable: true,
                    hidden: false,
                    ungrouped: false,
                })
                .collect(),
        };
        Ok(Some(Bound { plan: Plan::new(Node::Values { rows }, scope.schema()), scope }))
    }

    /// `CASE key WHEN k THEN v ... ELSE else_ END` over OIDs.
    fn lookup(&mut self, key: Expr, pairs: Vec<(i64, String)>, else_: Option<Expr>) -> Result<Expr> {
        let key = self.coerce(key, DataType::Int64)?;
        let whens: Vec<(Expr, Expr)> = pairs
            .into_iter()
            .map(|(k, v)| {
                let eq = Expr::binary(BinaryOp::Eq, key.clone(), Expr::literal(Value::Int64(k)), DataType::Bool);
                (eq, text(&v))
            })
            .collect();
        if whens.is_empty() {
            return Ok(else_.unwrap_or_else(|| null(DataType::Text)));
        }
        Ok(Expr::Case { operand: None, whens, else_: else_.map(Box::new), ty: DataType::Text })
    }

    /// One of the functions [`handles`] names.
    pub(crate) fn pg_function(&mut self, name: &str, mut args: Vec<Expr>) -> Result<Expr> {
        let types: Vec<DataType> = args.iter().map(Expr::ty).collect();
        let n = args.len();
        let wrong = || super::functions::no_function(name, &types);
        let arg0 = if args.is_empty() { None } else { Some(args.remove(0)) };
        match (name, n, arg0) {
            ("current_user" | "session_user" | "user" | "current_role", 0, _) => Ok(text(OWNER)),
            ("has_table_privilege" | "has_schema_privilege" | "has_database_privilege", 2 | 3, _)
            | ("has_column_privilege", 3 | 4, _)
            | ("pg_has_role", 2 | 3, _) => Ok(Expr::literal(Value::Bool(true))),
            ("pg_relation_is_publishable", 1, _) => Ok(Expr::literal(Value::Bool(false))),
            ("obj_description" | "shobj_description", 1 | 2, _)
            | ("col_description", 2, _)
            | ("pg_get_statisticsobjdef_columns", 1, _) => Ok(null(DataType::Text)),
            ("pg_get_expr", 2 | 3, Some(a)) => self.coerce(a, DataType::Text),
            // psycopg's TypeInfo.fetch: the OID, or NULL for an unknown name.
            ("to_regclass" | "to_regtype" | "to_regnamespace", 1, Some(a)) => {
                let arg = self.coerce(a, DataType::Text)?;
                self.reg_cast(arg, &name[3..], false)
            }
            ("format_type", 2, Some(a)) => {
                let oid = self.coerce(a, DataType::Int64)?;
                let typmod = self.coerce(args.remove(0), DataType::Int64)?;
                Ok(func(Function::FormatType, vec![oid, typmod], DataType::Text))
            }
            ("pg_encoding_to_char", 1, Some(a)) => {
                Ok(func(Function::PgEncodingToChar, vec![self.coerce(a, DataType::Int64)?], DataType::Text))
            }
            ("pg_size_pretty", 1, Some(a)) => {
                Ok(func(Function::PgSizePretty, vec![self.coerce(a, DataType::Int64)?], DataType::Text))
            }
            ("array_to_string", 2 | 3, Some(a)) => {
                let mut all = vec![self.coerce(a, DataType::Text)?];
                for x in args {
                    all.push(self.coerce(x, DataType::Text)?);
                }
                Ok(func(Function::ArrayToString, all, DataType::Text))
            }
            ("current_schemas", 1, Some(a)) => {
                let implicit = super::expr::to_bool(self.coerce(a, DataType::Bool)?, "current_schemas")?;
                let whens = vec![(implicit, text("{pg_catalog,public}"))];
                Ok(Expr::Case { operand: None, whens, else_: Some(Box::new(text("{public}"))), ty: DataType::Text })
            }
            ("pg_get_userbyid", 1, Some(a)) => {
                let key = self.coerce(a, DataType::Int64)?;
                let unknown = func(
                    Function::Concat,
                    vec![text("unknown (OID="), self.coerce(key.clone(), DataType::Text)?, text(")")],
                    DataType::Text,
                );
                self.lookup(key, vec![(oids::OWNER_OID, OWNER.to_string())], Some(unknown))
            }
            ("pg_table_is_visible" | "pg_type_is_visible", 1, Some(a)) => {
                let key = self.coerce(a, DataType::Int64)?;
                let oids: Vec<i64> = if name == "pg_type_is_visible" {
                    oids::TYPES.iter().map(|t| t.0).collect()
                } else {
                    self.relations().all.iter().map(|r| r.oid).collect()
                };
                let list = oids.into_iter().map(|o| Expr::literal(Value::Int64(o))).collect();
                let known = Expr::InList { expr: Box::new(key), list, negated: false };
                let whens = vec![(known, Expr::literal(Value::Bool(true)))];
                Ok(Expr::Case { operand: None, whens, else_: None, ty: DataType::Bool })
            }
            ("pg_get_indexdef", 1 | 3, Some(a)) => self.index_def(a, args),
            ("pg_get_constraintdef", 1 | 2, Some(a)) => {
                let defs = self.constraint_defs();
                self.lookup(a, defs, None)
            }
            ("pg_get_viewdef", 1 | 2, Some(a)) => {
                let defs = self
                    .relations()
                    .all
                    .iter()
                    .filter_map(|r| match &r.kind {
                        RelKind::View(v) => Some((r.oid, format!(" {};", v.sql.trim().trim_end_matches(';')))),
                        _ => None,
                    })
                    .collect();
                self.lookup(a, defs, None)
            }
            _ => Err(wrong()),
        }
    }

    /// `pg_get_indexdef(oid)` and `pg_get_indexdef(oid, column, pretty)`
    /// (column 0: the whole CREATE INDEX; k: the k-th key column's name).
    fn index_def(&mut self, oid: Expr, mut rest: Vec<Expr>) -> Result<Expr> {
        const COLUMNS_MAX: i64 = 4096;
        let mut pairs = Vec::new();
        for r in &self.relations().all {
            let RelKind::Index(ix, table) = &r.kind else { continue };
            let cols: Vec<&str> =
                ix.columns.iter().filter_map(|&c| table.columns.get(c)).map(|c| c.name.as_str()).collect();
            let unique = if ix.unique { "UNIQUE " } else { "" };
            let def = format!("CREATE {unique}INDEX {} ON {} USING btree ({})", ix.name, table.name, cols.join(", "));
            pairs.push((r.oid * COLUMNS_MAX, def));
            for (k, c) in cols.iter().enumerate() {
                pairs.push((r.oid * COLUMNS_MAX + k as i64 + 1, c.to_string()));
            }
        }
        let oid = self.coerce(oid, DataType::Int64)?;
        let column = if rest.is_empty() {
            Expr::literal(Value::Int64(0))
        } else {
            self.coerce(rest.remove(0), DataType::Int64)?
        };
        let scaled = Expr::binary(BinaryOp::Mul, oid, Expr::literal(Value::Int64(COLUMNS_MAX)), DataType::Int64);
        let key = Expr::binary(BinaryOp::Add, scaled, column, DataType::Int64);
        self.lookup(key, pairs, None)
    }

    /// `pg_get_constraintdef` of each PRIMARY KEY and UNIQUE constraint.
    fn constraint_defs(&self) -> Vec<(i64, String)> {
        let mut out = Vec::new();
        for t in self.catalog.tables() {
            for ix in &t.indexes {
                let Some(kind) = system::constraint_type(&t, ix) else { continue };
                let cols: Vec<&str> =
                    ix.columns.iter().filter_map(|&c| t.columns.get(c)).map(|c| c.name.as_str()).collect();
                let what = if kind == "p" { "PRIMARY KEY" } else { "UNIQUE" };
                out.push((oids::constraint_oid(&ix.name), format!("{what} ({})", cols.join(", "))));
            }
        }
        out
    }

    /// Casts to PostgreSQL's catalog types (`regclass`, `regtype`,
    /// `regnamespace`, `oid`, `name`, `"char"`) and to `pg_catalog.`-
    /// qualified type names; None for every other cast.
    pub(crate) fn pg_cast(&mut self, x: &ast::Expr, to: &ast::DataType, ctx: &mut ExprCtx) -> Result<Option<Expr>> {
        let base = match to {
            ast::DataType::Regclass => "regclass".to_string(),
            ast::DataType::Custom(name, mods) if mods.is_empty() => match name_parts(name).as_slice() {
                [b] => b.clone(),
                [s, b] if s == "pg_catalog" => b.clone(),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let plain = match base.as_str() {
            "oid" | "regproc" | "regrole" => Some(DataType::Int64),
            "name" | "char" | "text" | "bpchar" | "varchar" => Some(DataType::Text),
            "int2" | "smallint" => Some(DataType::Int16),
            "int4" | "integer" => Some(DataType::Int32),
            "int8" | "bigint" => Some(DataType::Int64),
            "bool" | "boolean" => Some(DataType::Bool),
            "float8" => Some(DataType::Float64),
            "regclass" | "regtype" | "regnamespace" => None,
            _ => return Ok(None),
        };
        let e = self.expr(x, ctx)?;
        if let Some(ty) = plain {
            return self.coerce(e, ty).map(Some);
        }
        self.reg_cast(e, &base, true).map(Some)
    }

    /// `x::regclass` and friends: a name literal becomes its OID; an OID
    /// becomes its name (PostgreSQL's output form), or the number if none.
    /// Not `strict` (`to_regclass(name)`): an unknown name is NULL.
    fn reg_cast(&mut self, e: Expr, kind: &str, strict: bool) -> Result<Expr> {
        let mut named: Vec<(i64, String)> = match kind {
            "regclass" => self.relations().all.iter().map(|r| (r.oid, r.name.clone())).collect(),
            "regtype" => oids::TYPES.iter().map(|t| (t.0, oids::format_type(t.0, None))).collect(),
            _ => oids::NAMESPACES.iter().map(|(o, n)| (*o, n.to_string())).collect(),
        };
        // OID 0 (InvalidOid) prints as "-".
        named.push((0, "-".into()));
        if let Expr::Literal { value: Value::Text(s), ty: DataType::Unknown | DataType::Text } = &e
            && strict
        {
            let wanted = s.rsplit('.').next().unwrap_or(s).trim_matches('"');
            let wanted = if s.contains('"') { wanted.to_string() } else { wanted.to_lowercase() };
            if let Ok(n) = wanted.parse::<i64>() {
                return Ok(Expr::literal(Value::Int64(n)));
            }
            let alias = oids::TYPES.iter().find(|t| t.1 == wanted).map(|t| t.0);
            return match named
                .iter()
                .find(|(_, n)| *n == wanted)
                .map(|(o, _)| *o)
                .or(alias.filter(|_| kind == "regtype"))
            {
                Some(oid) => Ok(Expr::literal(Value::Int64(oid))),
                None if kind == "regclass" => {
                    Err(SqlError::new(SqlState::UNDEFINED_TABLE, format!("relation \"{s}\" does not exist")))
                }
                None if kind == "regtype" => {
                    Err(SqlError::new(SqlState::UNDEFINED_OBJECT, format!("type \"{s}\" does not exist")))
                }
                None => Err(SqlError::new(SqlState("3F000"), format!("schema \"{s}\" does not exist"))),
            };
        }
        if e.ty().is_text() || matches!(e, Expr::Param { ty: DataType::Unknown, .. }) {
            // A name known only at run time (psycopg's `%s::regtype`):
            // CASE over the names; NULL where PostgreSQL raises 42P01/42704.
            let key = self.coerce(e, DataType::Text)?;
            let mut names: Vec<(String, i64)> = named.iter().map(|(o, n)| (n.clone(), *o)).collect();
            if kind == "regtype" {
                names.extend(oids::TYPES.iter().map(|t| (t.1.to_string(), t.0)));
            }
            let whens = names
                .into_iter()
                .map(|(n, o)| {
                    let eq = Expr::binary(BinaryOp::Eq, key.clone(), text(&n), DataType::Bool);
                    (eq, Expr::literal(Value::Int64(o)))
                })
                .collect();
            return Ok(Expr::Case { operand: None, whens, else_: None, ty: DataType::Int64 });
        }
        let key = self.coerce(e, DataType::Int64)?;
        let number = self.coerce(key.clone(), DataType::Text)?;
        self.lookup(key, named, Some(number))
    }

    /// `~`, `~*`, `!~`, `!~*` and `OPERATOR(pg_catalog.op)`.
    pub(crate) fn pg_operator(&mut self, op: &ast::BinaryOperator, l: Expr, r: Expr) -> Result<Expr> {
        use ast::BinaryOperator as B;
        let symbol = match op {
            B::PGRegexMatch => "~".to_string(),
            B::PGRegexIMatch => "~*".into(),
            B::PGRegexNotMatch => "!~".into(),
            B::PGRegexNotIMatch => "!~*".into(),
            B::PGCustomBinaryOperator(parts) => match parts.as_slice() {
                [s, o] if s.eq_ignore_ascii_case("pg_catalog") => o.clone(),
                [o] => o.clone(),
                _ => return Err(SqlError::unsupported(format!("operator {op} is not supported"))),
            },
            other => return Err(SqlError::unsupported(format!("operator {other} is not supported"))),
        };
        let plain = match symbol.as_str() {
            "=" => Some(B::Eq),
            "<>" | "!=" => Some(B::NotEq),
            "<" => Some(B::Lt),
            "<=" => Some(B::LtEq),
            ">" => Some(B::Gt),
            ">=" => Some(B::GtEq),
            "+" => Some(B::Plus),
            "-" => Some(B::Minus),
            "||" => Some(B::StringConcat),
            _ => None,
        };
        if let Some(b) = plain {
            return self.binary(&b, l, r);
        }
        let (negated, flags) = match symbol.as_str() {
            "~" => (false, ""),
            "~*" => (false, "i"),
            "!~" => (true, ""),
            "!~*" => (true, "i"),
            _ => return Err(SqlError::unsupported(format!("operator {op} is not supported"))),
        };
        let (lt, rt) = (l.ty(), r.ty());
        let as_text = |t: DataType| t.is_text() || t == DataType::Unknown;
        if !as_text(lt) || !as_text(rt) {
            return Err(super::types::no_operator(&symbol, lt, rt));
        }
        let args = vec![self.coerce(l, DataType::Text)?, self.coerce(r, DataType::Text)?, text(flags)];
        let m = func(Function::RegexMatch, args, DataType::Bool);
        Ok(if negated {
            Expr::Unary { op: crate::plan::UnaryOp::Not, expr: Box::new(m), ty: DataType::Bool }
        } else {
            m
        })
    }

    /// `x COLLATE c`: ndpdb compares text bytewise, which is the `C`
    /// collation and the database's default; other collations are 0A000.
    pub(crate) fn collate(&mut self, x: &ast::Expr, collation: &ast::ObjectName, ctx: &mut ExprCtx) -> Result<Expr> {
        let parts = name_parts(collation);
        let name = parts.last().map(String::as_str).unwrap_or("");
        let known = matches!(name, "default" | "C" | "POSIX" | "c" | "posix" | "ucs_basic");
        if !known || (parts.len() == 2 && parts[0] != "pg_catalog") || parts.len() > 2 {
            return Err(SqlError::unsupported(format!(
                "collation \"{collation}\" is not supported: ndpdb compares text bytewise (COLLATE \"C\")"
            )));
        }
        let e = self.expr(x, ctx)?;
        if e.ty() == DataType::Unknown { self.coerce(e, DataType::Text) } else { Ok(e) }
    }
}

impl Binder<'_> {
    /// `x = ANY(array)` and `x <> ALL(array)` over an array's text form
    /// (the catalogs' array columns, `'{a,b}'` literals): elements are
    /// compared to x's text form, as equal values print alike.
    pub(crate) fn quantified_array(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        all: bool,
        ctx: &mut ExprCtx,
    ) -> Result<Expr> {
        let negated = match (op, all) {
            (ast::BinaryOperator::Eq, false) => false,
            (ast::BinaryOperator::NotEq, true) => true,
            _ => {
                return Err(SqlError::unsupported(format!(
                    "{op} {} over an array is not supported",
                    if all { "ALL" } else { "ANY" }
                )));
            }
        };
        let x = self.expr(left, ctx)?;
        let array = self.expr(right, ctx)?;
        if !(array.ty().is_text() || array.ty() == DataType::Unknown) {
            return Err(SqlError::new(
                SqlState::DATATYPE_MISMATCH,
                format!("op ANY/ALL (array) requires array on right side, not {}", array.ty().pg_name()),
            ));
        }
        let x = if x.ty() == DataType::Unknown { self.coerce(x, DataType::Text)? } else { x };
        let args = vec![self.coerce(x, DataType::Text)?, self.coerce(array, DataType::Text)?];
        let m = func(Function::ArrayContains, args, DataType::Bool);
        Ok(if negated {
            Expr::Unary { op: crate::plan::UnaryOp::Not, expr: Box::new(m), ty: DataType::Bool }
        } else {
            m
        })
    }
}
