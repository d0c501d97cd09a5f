//! Scopes: the columns a name can resolve to, in plan-column order.
//!
//! Entry `i` of a scope is column `i` of the plan node it describes. An
//! entry `hidden` is reachable only with its qualifier and never expanded by
//! `*` (the original columns behind a USING join's merged ones).

use std::sync::Arc;

use super::Binder;
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{Expr, Field, Schema};
use crate::types::DataType;

#[derive(Debug, Clone, PartialEq)]
pub struct ScopeEntry {
    pub name: String,
    pub qualifier: Option<String>,
    pub ty: DataType,
    pub nullable: bool,
    pub hidden: bool,
    /// A FROM column of an aggregated query that is not a group key: a
    /// subquery naming it is 42803.
    pub ungrouped: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scope {
    pub entries: Vec<ScopeEntry>,
}

/// Where a name resolved: this scope's column or an outer one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resolved {
    Local(usize),
    Outer { depth: usize, index: usize },
}

impl Scope {
    pub fn from_schema(schema: &Schema) -> Scope {
        let entries = schema
            .iter()
            .map(|f| ScopeEntry {
                name: f.name.clone(),
                qualifier: f.qualifier.clone(),
                ty: f.ty,
                nullable: f.nullable,
                hidden: false,
                ungrouped: false,
            })
            .collect();
        Scope { entries }
    }

    /// The plan schema this scope describes.
    pub fn schema(&self) -> Schema {
        Arc::new(
            self.entries
                .iter()
                .map(|e| Field { name: e.name.clone(), qualifier: e.qualifier.clone(), ty: e.ty, nullable: e.nullable })
                .collect(),
        )
    }

    /// Every entry re-qualified by `alias` (a FROM item's alias), with
    /// column aliases replacing the first names.
    pub fn requalify(mut self, alias: &str, columns: &[String]) -> Result<Scope> {
        if columns.len() > self.entries.len() {
            return Err(SqlError::new(
                SqlState::INVALID_COLUMN_REFERENCE,
                format!(
                    "table \"{alias}\" has {} columns available but {} columns specified",
                    self.entries.len(),
                    columns.len()
                ),
            ));
        }
        for (i, e) in self.entries.iter_mut().enumerate() {
            e.qualifier = Some(alias.to_string());
            if let Some(c) = columns.get(i) {
                e.name = c.clone();
            }
        }
        Ok(self)
    }

    /// Does any entry carry `qualifier`?
    pub fn has_qualifier(&self, qualifier: &str) -> bool {
        self.entries.iter().any(|e| e.qualifier.as_deref() == Some(qualifier))
    }

    /// Entry positions `name` (optionally `qualifier.name`) matches.
    fn matches(&self, qualifier: Option<&str>, name: &str) -> Vec<usize> {
        let hits = self.entries.iter().enumerate().filter(|(_, e)| e.name == name);
        match qualifier {
            Some(q) => hits.filter(|(_, e)| e.qualifier.as_deref() == Some(q)).map(|(i, _)| i).collect(),
            None => hits.filter(|(_, e)| !e.hidden).map(|(i, _)| i).collect(),
        }
    }

    /// Position of `[qualifier.]name` here: None if absent, 42702 if
    /// ambiguous.
    pub fn find(&self, qualifier: Option<&str>, name: &str) -> Result<Option<usize>> {
        match self.matches(qualifier, name).as_slice() {
            [] => Ok(None),
            [i] => Ok(Some(*i)),
            _ => {
                let shown = match qualifier {
                    Some(q) => format!("{q}.{name}"),
                    None => name.to_string(),
                };
                Err(SqlError::new(SqlState::AMBIGUOUS_COLUMN, format!("column reference \"{shown}\" is ambiguous")))
            }
        }
    }

    /// The name PostgreSQL's messages give entry `i` (`t.x`, or `x`).
    pub fn display_name(&self, i: usize) -> String {
        let e = &self.entries[i];
        match &e.qualifier {
            Some(q) => format!("{q}.{}", e.name),
            None => e.name.clone(),
        }
    }
}

impl Binder<'_> {
    /// Resolves a column name in `scope`, then in the enclosing queries.
    pub fn resolve(&self, scope: &Scope, qualifier: Option<&str>, name: &str) -> Result<(Resolved, DataType)> {
        if let Some(i) = scope.find(qualifier, name)? {
            return Ok((Resolved::Local(i), scope.entries[i].ty));
        }
        for (depth, outer) in self.outer.iter().rev().enumerate() {
            if let Some(i) = outer.find(qualifier, name)? {
                if outer.entries[i].ungrouped {
                    return Err(SqlError::new(
                        SqlState::GROUPING_ERROR,
                        format!("subquery uses ungrouped column \"{}\" from outer query", outer.display_name(i)),
                    ));
                }
                return Ok((Resolved::Outer { depth: depth + 1, index: i }, outer.entries[i].ty));
            }
        }
        Err(self.unresolved(scope, qualifier, name))
    }

    fn unresolved(&self, scope: &Scope, qualifier: Option<&str>, name: &str) -> SqlError {
        match qualifier {
            Some(q) if !scope.has_qualifier(q) && !self.outer.iter().any(|s| s.has_qualifier(q)) => {
                SqlError::new(SqlState::UNDEFINED_TABLE, format!("missing FROM-clause entry for table \"{q}\""))
            }
            Some(q) => SqlError::new(SqlState::UNDEFINED_COLUMN, format!("column {q}.{name} does not exist")),
            None => SqlError::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist")),
        }
    }

    /// The bound expression of a resolved name.
    pub fn column_expr(&self, resolved: Resolved, ty: DataType) -> Expr {
        match resolved {
            Resolved::Local(index) => Expr::Column { index, ty },
            Resolved::Outer { depth, index } => Expr::Outer { depth, index, ty },
        }
    }
}
