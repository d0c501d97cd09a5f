//! `generate_series(start, stop [, step])` in FROM: the one set-returning
//! function, integer forms only (PostgreSQL's `integer` and `bigint`
//! overloads). It binds to a [`Node::Series`] leaf whose three arguments
//! are expressions over no columns of its own FROM (constants, parameters
//! or an outer query's columns), evaluated once per execution.
//!
//! Names follow PostgreSQL: the output column is called after the alias
//! (`FROM generate_series(1, 3) g` gives `g.g`), after the alias's column
//! list when there is one (`g(x)`), else `generate_series`.

use sqlparser::ast;

use super::expr::ExprCtx;
use super::from::Bound;
use super::scope::{Scope, ScopeEntry};
use super::{Binder, ident};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Expr, Node, Plan};
use crate::types::{DataType, Value};

impl Binder<'_> {
    /// A function in FROM: `generate_series`, or a clear refusal.
    pub(super) fn table_function(
        &mut self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
    ) -> Result<Bound> {
        if name != "generate_series" {
            return Err(SqlError::unsupported(format!(
                "function {name}() in FROM is not supported; the only set-returning function is generate_series"
            )));
        }
        let mut bound = Vec::with_capacity(args.len());
        for a in args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                return Err(SqlError::unsupported(format!("function argument {a} is not supported")));
            };
            let empty = Scope::default();
            let mut ctx = ExprCtx::new(&empty, "FROM function arguments");
            bound.push(self.expr(e, &mut ctx).map_err(lateral_hint)?);
        }
        let ty = series_type(&bound)?;
        let mut it = bound.into_iter().map(|e| self.coerce(e, ty));
        let (start, stop) = (it.next().expect("2 or 3 arguments")?, it.next().expect("2 or 3 arguments")?);
        let step = it.next().transpose()?.unwrap_or_else(|| Expr::literal(Value::Int64(1)));
        let step = self.coerce(step, ty)?;
        let (qualifier, column) = names(alias)?;
        let scope = Scope {
            entries: vec![ScopeEntry {
                name: column,
                qualifier: Some(qualifier),
                ty,
                nullable: false,
                hidden: false,
                ungrouped: false,
            }],
        };
        Ok(Bound { plan: Plan::new(Node::Series { start, stop, step }, scope.schema()), scope })
    }
}

/// A column the arguments name that is not an outer query's: perhaps of
/// another FROM item, which PostgreSQL allows (an implicit LATERAL).
fn lateral_hint(e: SqlError) -> SqlError {
    if matches!(e.code.0, "42703" | "42P01") && e.hint.is_none() {
        e.with_hint("generate_series in FROM cannot refer to other items of the same FROM (LATERAL) yet.")
    } else {
        e
    }
}

/// The overload `args` select: `bigint` when any is, else `integer` when
/// any is (smallint and untyped literals alone are ambiguous, 42725).
fn series_type(args: &[Expr]) -> Result<DataType> {
    let types: Vec<DataType> = args.iter().map(Expr::ty).collect();
    let listed = types.iter().map(|t| t.pg_name()).collect::<Vec<_>>().join(", ");
    let cast_hint = "You might need to add explicit type casts.";
    if let Some(t) = types.iter().find(|t| matches!(t, DataType::Numeric { .. } | DataType::Timestamp)) {
        return Err(SqlError::unsupported(format!(
            "generate_series over {} is not supported yet; give integer or bigint arguments",
            t.pg_name()
        )));
    }
    let integers = types.iter().all(|t| t.is_integer() || *t == DataType::Unknown);
    if !(2..=3).contains(&args.len()) || !integers {
        return Err(SqlError::new(
            SqlState::UNDEFINED_FUNCTION,
            format!("function generate_series({listed}) does not exist"),
        )
        .with_hint(format!("No function matches the given name and argument types. {cast_hint}")));
    }
    // PostgreSQL's overload resolution: the candidate with the most exact
    // matches; without an integer or bigint argument, none wins.
    if types.contains(&DataType::Int64) {
        Ok(DataType::Int64)
    } else if types.contains(&DataType::Int32) {
        Ok(DataType::Int32)
    } else {
        Err(SqlError::new(SqlState("42725"), format!("function generate_series({listed}) is not unique"))
            .with_hint(format!("Could not choose a best candidate function. {cast_hint}")))
    }
}

/// The relation's and the column's names.
fn names(alias: Option<&ast::TableAlias>) -> Result<(String, String)> {
    let Some(a) = alias else { return Ok(("generate_series".into(), "generate_series".into())) };
    let qualifier = ident(&a.name);
    match a.columns.as_slice() {
        [] => Ok((qualifier.clone(), qualifier)),
        [c] => Ok((qualifier, ident(&c.name))),
        more => Err(SqlError::new(
            SqlState::INVALID_COLUMN_REFERENCE,
            format!("table \"{qualifier}\" has 1 columns available but {} columns specified", more.len()),
        )),
    }
}
