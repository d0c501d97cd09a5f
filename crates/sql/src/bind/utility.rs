//! Transaction control, SET/RESET/SHOW, ANALYZE, EXPLAIN and COPY.

use sqlparser::ast;

use super::{Binder, ident, object_name};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::Statement;
use crate::plan::statement::{CopyOptions, IsolationLevel};

impl Binder<'_> {
    pub(crate) fn utility(&mut self, stmt: &ast::Statement) -> Result<Statement> {
        use ast::Statement as S;
        match stmt {
            S::StartTransaction { modes, .. } => Ok(Statement::Begin { isolation: isolation(modes)? }),
            S::Commit { chain: false, .. } => Ok(Statement::Commit),
            S::Rollback { chain: false, savepoint: None } => Ok(Statement::Rollback),
            S::Set(set) => self.set(set),
            S::Reset(r) => match &r.reset {
                ast::Reset::ConfigurationParameter(n) => Ok(Statement::Set { name: name_text(n), value: None }),
                ast::Reset::ALL => Ok(Statement::Set { name: "all".into(), value: None }),
                ast::Reset::SessionAuthorization => Err(SqlError::unsupported("RESET SESSION AUTHORIZATION")),
            },
            S::ShowVariable { variable } => {
                let name: Vec<String> = variable.iter().map(ident).collect();
                Ok(Statement::Show { name: name.join(" ") })
            }
            S::Analyze(a) => {
                let tables = match &a.table_name {
                    None => vec![],
                    Some(n) => vec![self.target_table(&object_name(n)?)?],
                };
                Ok(Statement::Analyze { tables })
            }
            S::Explain { analyze, statement, .. } => {
                let inner = self.statement(statement)?;
                Ok(Statement::Explain { analyze: *analyze, statement: Box::new(inner) })
            }
            S::Copy {
                source, to: false, target: ast::CopyTarget::File { filename }, options, legacy_options, ..
            } => self.copy(source, filename, options, legacy_options),
            S::Copy { .. } => {
                Err(SqlError::unsupported("COPY TO, COPY FROM STDIN and COPY of a query are not supported yet"))
            }
            other => {
                let text = other.to_string();
                let word = text.split_whitespace().next().unwrap_or("").to_uppercase();
                Err(SqlError::unsupported(format!("{word} is not supported")))
            }
        }
    }

    fn set(&mut self, set: &ast::Set) -> Result<Statement> {
        match set {
            // SET SESSION CHARACTERISTICS AS TRANSACTION ...: the session's default.
            ast::Set::SetTransaction { modes, snapshot: None, session: true } => match isolation(modes)? {
                Some(level) => Ok(Statement::Set {
                    name: "default_transaction_isolation".into(),
                    value: Some(crate::settings::isolation_name(level).into()),
                }),
                None => Ok(Statement::Empty),
            },
            ast::Set::SetTransaction { modes, snapshot: None, .. } => match isolation(modes)? {
                Some(level) => Ok(Statement::SetTransaction { isolation: level }),
                None => Ok(Statement::Empty),
            },
            ast::Set::SingleAssignment { variable, values, .. } => {
                let name = name_text(variable);
                let value = match values.as_slice() {
                    [ast::Expr::Identifier(id)]
                        if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default") =>
                    {
                        None
                    }
                    vals => Some(vals.iter().map(set_value).collect::<Vec<_>>().join(", ")),
                };
                Ok(Statement::Set { name, value })
            }
            ast::Set::SetTimeZone { value, .. } => {
                Ok(Statement::Set { name: "timezone".into(), value: Some(set_value(value)) })
            }
            ast::Set::SetNames { charset_name, .. } => {
                Ok(Statement::Set { name: "client_encoding".into(), value: Some(charset_name.value.clone()) })
            }
            other => Err(SqlError::unsupported(format!("{other} is not supported"))),
        }
    }

    fn copy(
        &mut self,
        source: &ast::CopySource,
        filename: &str,
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
    ) -> Result<Statement> {
        let ast::CopySource::Table { table_name, columns } = source else {
            return Err(SqlError::unsupported("COPY (query) is not supported yet"));
        };
        let table = self.target_table(&object_name(table_name)?)?;
        let mut cols = Vec::with_capacity(columns.len());
        for c in columns {
            let name = ident(c);
            let i = table.column_index(&name).ok_or_else(|| {
                SqlError::new(
                    SqlState::UNDEFINED_COLUMN,
                    format!("column \"{name}\" of relation \"{}\" does not exist", table.name),
                )
            })?;
            cols.push(i);
        }
        if cols.is_empty() {
            cols = (0..table.columns.len()).collect();
        }
        let (csv, opts) = copy_options(options, legacy)?;
        if !csv {
            return Err(SqlError::unsupported("COPY in text format is not supported yet: add WITH (FORMAT csv)"));
        }
        Ok(Statement::Copy { table, columns: cols, path: filename.to_string(), options: opts })
    }
}

/// The COPY options (new and old syntax) with the defaults of the format
/// (FROM a file or FROM STDIN), and whether the format is CSV
/// (text: tab and `\N`; CSV: comma and the empty string). FREEZE is
/// accepted and has no effect: a load is one transaction either way.
pub(crate) fn copy_options(
    options: &[ast::CopyOption],
    legacy: &[ast::CopyLegacyOption],
) -> Result<(bool, CopyOptions)> {
    let mut csv = false;
    let (mut header, mut delimiter, mut null, mut quote) = (false, None, None, '"');
    for opt in options {
        match opt {
            ast::CopyOption::Format(f) if f.value.eq_ignore_ascii_case("csv") => csv = true,
            ast::CopyOption::Format(f) if f.value.eq_ignore_ascii_case("text") => csv = false,
            ast::CopyOption::Format(f) => {
                return Err(SqlError::unsupported(format!("COPY format \"{}\" is not supported", f.value))
                    .with_hint("use FORMAT text or FORMAT csv"));
            }
            ast::CopyOption::Freeze(_) => {}
            ast::CopyOption::Header(h) => header = *h,
            ast::CopyOption::Delimiter(d) => delimiter = Some(*d),
            ast::CopyOption::Null(n) => null = Some(n.clone()),
            ast::CopyOption::Quote(q) => quote = *q,
            other => return Err(SqlError::unsupported(format!("COPY option {other} is not supported"))),
        }
    }
    for opt in legacy {
        match opt {
            ast::CopyLegacyOption::Csv(sub) => {
                csv = true;
                for s in sub {
                    match s {
                        ast::CopyLegacyCsvOption::Header => header = true,
                        ast::CopyLegacyCsvOption::Quote(q) => quote = *q,
                        other => return Err(SqlError::unsupported(format!("COPY option {other} is not supported"))),
                    }
                }
            }
            ast::CopyLegacyOption::Header => header = true,
            ast::CopyLegacyOption::Delimiter(d) => delimiter = Some(*d),
            ast::CopyLegacyOption::Null(n) => null = Some(n.clone()),
            other => return Err(SqlError::unsupported(format!("COPY option {other} is not supported"))),
        }
    }
    let delimiter = delimiter.unwrap_or(if csv { ',' } else { '\t' });
    let null = null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
    Ok((csv, CopyOptions { header, delimiter, null, quote }))
}

fn isolation(modes: &[ast::TransactionMode]) -> Result<Option<IsolationLevel>> {
    let mut level = None;
    for m in modes {
        if let ast::TransactionMode::IsolationLevel(l) = m {
            level = Some(match l {
                // PostgreSQL runs READ UNCOMMITTED as READ COMMITTED.
                ast::TransactionIsolationLevel::ReadUncommitted | ast::TransactionIsolationLevel::ReadCommitted => {
                    IsolationLevel::ReadCommitted
                }
                ast::TransactionIsolationLevel::RepeatableRead => IsolationLevel::RepeatableRead,
                ast::TransactionIsolationLevel::Serializable => IsolationLevel::Serializable,
                ast::TransactionIsolationLevel::Snapshot => {
                    return Err(SqlError::unsupported("isolation level SNAPSHOT"));
                }
            });
        }
    }
    Ok(level)
}

fn name_text(n: &ast::ObjectName) -> String {
    n.0.iter().filter_map(|p| p.as_ident()).map(ident).collect::<Vec<_>>().join(".")
}

/// A SET value as text: identifiers and strings by their content.
fn set_value(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(id) => id.value.clone(),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}
