//! The binder: sqlparser's AST to bound statements and logical plans.
//!
//! Binding resolves every name against the catalog, gives every expression
//! its SQL type by PostgreSQL's rules, inserts the implicit casts those rules
//! call for, expands views, CTEs and `*`, and reports the user's mistakes
//! with PostgreSQL's SQLSTATE and wording. Its output is the logical plan of
//! `plan/`: scans read every column the query needs (pushdown is the
//! optimizer's job), joins carry their `on`, nothing is chosen yet.
//!
//! ## Scopes and name resolution
//!
//! A [`scope::Scope`] lists the columns an expression may name: one entry
//! per column of the plan node the expression will be evaluated over, in the
//! same order, so the position of the entry a name resolves to *is* the
//! `Expr::Column` index. Each entry carries the qualifier it can be named
//! with (the table name or alias). `FROM a JOIN b` builds its scope as a's
//! entries then b's, like the join's output. `USING`/`NATURAL` joins add a
//! projection whose first columns are the merged ones (COALESCE for FULL);
//! the original columns stay behind it, reachable only with a qualifier.
//!
//! ```text
//!  SELECT x FROM t JOIN u USING (k) WHERE (SELECT max(y) FROM v WHERE v.z = t.w) > 1
//!                                          └ scope [v.*]    outer stack: [t.*, u.*] ┘
//!  t.w inside the subquery: not in [v.*], found one level out →
//!  Expr::Outer { depth: 1, index: position of t.w in [k, t.., u..] }
//! ```
//!
//! ## Correlation depth
//!
//! Binding a subquery pushes the enclosing scope onto the binder's outer
//! stack; a name not found in the current scope is looked up in the stack
//! from the innermost enclosing query outwards, and the number of levels
//! crossed is the `depth` of the resulting `Expr::Outer` (1 = the query the
//! subquery appears in). Depth counts query levels, not plan nodes: the
//! executor evaluates an outer reference against the row of the enclosing
//! query's node that holds the subquery expression.
//!
//! ## Aggregation
//!
//! When a query groups or aggregates, the select list, HAVING and ORDER BY
//! are bound in *aggregate mode* ([`select::AggContext`]): an aggregate call
//! binds its argument over the FROM scope and becomes a column of the
//! Aggregate node's output (group keys first, then aggregates); any other
//! expression that equals a bound GROUP BY key becomes that key's column;
//! a bare column that is neither is error 42803. An aggregate whose
//! arguments read only enclosing queries' columns belongs to the nearest
//! of those queries (SQL's rule, [`aggregate::Level`]): it is added to
//! that query's Aggregate and the subquery reads it as an outer reference.
//!
//! ## Types
//!
//! [`types`] holds PostgreSQL's rules in small: literals are int4, int8 or
//! numeric by size, `1.5` is numeric with its scale, quoted strings and
//! `$n` parameters without a declared type are `unknown` and take the type
//! their context asks for (the other operand, the column, the CAST). Numeric
//! operands are promoted along int2 < int4 < int8 < numeric < float8;
//! comparison and arithmetic operands are cast to one type (numeric operands
//! may differ in scale: the result type says the scale). Unions, CASE,
//! COALESCE and IN lists use PostgreSQL's `select_common_type`.

pub mod aggregate;
pub mod ddl;
pub mod dml;
pub mod expr;
pub mod from;
pub mod functions;
pub mod pgcompat;
pub mod scope;
pub mod select;
pub mod series;
pub mod types;
pub mod utility;

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError};
use crate::plan::Statement;
use crate::types::DataType;

/// What the client told about the statement.
#[derive(Debug, Clone, Default)]
pub struct BindOptions {
    /// Types of `$1`, `$2`, ... the client declared (Unknown = infer).
    pub param_types: Vec<DataType>,
}

/// Parses SQL text into statements (PostgreSQL dialect).
pub fn parse(sql: &str) -> Result<Vec<ast::Statement>> {
    match rewrite_between_symmetric(sql) {
        Some(rewritten) => Parser::parse_sql(&PostgreSqlDialect {}, &rewritten).map_err(parse_error),
        None => Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(parse_error),
    }
}

/// The function name that marks a SYMMETRIC BETWEEN's low bound
/// ([`rewrite_between_symmetric`]).
pub const SYMMETRIC_MARKER: &str = "__ndpdb_symmetric";

/// sqlparser does not know `BETWEEN SYMMETRIC` (nor `ASYMMETRIC`). Before
/// parsing, `x BETWEEN SYMMETRIC a AND b` becomes
/// `x BETWEEN __ndpdb_symmetric(a) AND b`, which [`Binder::between`]
/// expands as PostgreSQL does: `(x >= a AND x <= b) OR (x >= b AND x <= a)`.
/// The low bound ends at the first `AND` at its own parenthesis depth (a
/// BETWEEN bound cannot contain a top-level AND). Works on tokens, so
/// strings and comments are untouched; the text is returned unchanged when
/// it has no such BETWEEN or does not tokenize (the parser reports that).
fn rewrite_between_symmetric(sql: &str) -> Option<String> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    if !sql.as_bytes().windows(9).any(|w| w.eq_ignore_ascii_case(b"symmetric")) {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().ok()?;
    let offset = byte_offsets(sql);
    let at = |i: usize| offset(tokens[i].span.start.line, tokens[i].span.start.column);
    let is_kw =
        |i: usize, k: Keyword| matches!(&tokens[i].token, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    // Edits as (byte range to replace, replacement), in text order.
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let next = (i + 1..tokens.len()).find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)));
        let Some(j) = next.filter(|_| is_kw(i, Keyword::BETWEEN)) else {
            i += 1;
            continue;
        };
        let symmetric = is_kw(j, Keyword::SYMMETRIC);
        if !symmetric && !is_kw(j, Keyword::ASYMMETRIC) {
            i += 1;
            continue;
        }
        let end_of_word = at(j) + tokens[j].token.to_string().len();
        if !symmetric {
            edits.push((at(j)..end_of_word, String::new()));
            i = j + 1;
            continue;
        }
        edits.push((at(j)..end_of_word, format!("{SYMMETRIC_MARKER}(")));
        let mut depth = 0i32;
        let mut k = j + 1;
        while k < tokens.len() {
            match &tokens[k].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ if depth == 0 && is_kw(k, Keyword::AND) => break,
                _ => {}
            }
            k += 1;
        }
        let close = if k < tokens.len() { at(k) } else { sql.len() };
        edits.push((close..close, ") ".into()));
        i = k;
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 32);
    let mut pos = 0;
    for (range, text) in edits {
        out.push_str(&sql[pos..range.start]);
        out.push_str(&text);
        pos = range.end;
    }
    out.push_str(&sql[pos..]);
    Some(out)
}

/// Maps the tokenizer's (line, column) locations, 1-based with columns in
/// characters, to byte offsets of `sql`.
fn byte_offsets(sql: &str) -> impl Fn(u64, u64) -> usize + '_ {
    let line_starts: Vec<usize> = std::iter::once(0).chain(sql.match_indices('\n').map(|(i, _)| i + 1)).collect();
    move |line, column| {
        let start = line_starts.get((line.max(1) - 1) as usize).copied().unwrap_or(sql.len());
        sql[start..].char_indices().nth((column.max(1) - 1) as usize).map_or(sql.len(), |(b, _)| start + b)
    }
}

/// sqlparser's error in PostgreSQL's words where the token is known:
/// `syntax error at or near "FROM"`.
fn parse_error(e: ParserError) -> SqlError {
    let text = match &e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m.clone(),
        ParserError::RecursionLimitExceeded => "statement too deeply nested".into(),
    };
    let message = match text.split_once(", found: ") {
        Some((_, rest)) => {
            let token = rest.split(" at Line").next().unwrap_or(rest).trim();
            if token == "EOF" {
                "syntax error at end of input".to_string()
            } else {
                format!("syntax error at or near \"{token}\"")
            }
        }
        None => text,
    };
    SqlError::syntax(message).with_hint(e.to_string())
}

/// Binds one statement; see [`bind_with_params`] for the parameter types.
pub fn bind(stmt: &ast::Statement, catalog: &dyn Catalog, opts: &BindOptions) -> Result<Statement> {
    bind_with_params(stmt, catalog, opts).map(|(s, _)| s)
}

/// Binds one statement and returns the types of its `$n` parameters: the
/// declared ones, and for the others the type their context gave them (text
/// where nothing did, as PostgreSQL's clients expect of `unknown`).
pub fn bind_with_params(
    stmt: &ast::Statement,
    catalog: &dyn Catalog,
    opts: &BindOptions,
) -> Result<(Statement, Vec<DataType>)> {
    let mut binder = Binder::new(catalog, opts);
    let bound = binder.statement(stmt)?;
    let params = binder.params.iter().map(|t| if *t == DataType::Unknown { DataType::Text } else { *t }).collect();
    Ok((bound, params))
}

/// The state of one statement's binding.
pub struct Binder<'a> {
    pub(crate) catalog: &'a dyn Catalog,
    /// Types of `$1..`; Unknown until declared or inferred.
    pub(crate) params: Vec<DataType>,
    /// Scopes of the enclosing queries, innermost last.
    pub(crate) outer: Vec<scope::Scope>,
    /// What the enclosing queries were binding when they entered a
    /// subquery (their aggregate state and clause), innermost last.
    pub(crate) levels: Vec<aggregate::Level>,
    /// Set with the 42803 of an outer-level aggregate found in a query
    /// that is not aggregated (yet): the query at this level retries in
    /// aggregate mode, as PostgreSQL makes it aggregated.
    pub(crate) needs_agg: Option<usize>,
    /// CTEs visible here, innermost last (name, query, column aliases).
    pub(crate) ctes: Vec<(String, ast::Query, Vec<String>)>,
    /// Views being expanded (guards against a view that names itself).
    pub(crate) view_depth: usize,
}

impl<'a> Binder<'a> {
    pub fn new(catalog: &'a dyn Catalog, opts: &BindOptions) -> Binder<'a> {
        Binder {
            catalog,
            params: opts.param_types.clone(),
            outer: vec![],
            levels: vec![],
            needs_agg: None,
            ctes: vec![],
            view_depth: 0,
        }
    }

    /// Binds any statement.
    pub fn statement(&mut self, stmt: &ast::Statement) -> Result<Statement> {
        use ast::Statement as S;
        match stmt {
            S::Query(q) => Ok(Statement::Query(self.query(q)?.plan)),
            S::Insert(_) | S::Update(_) | S::Delete(_) => self.dml(stmt),
            S::CreateTable(_)
            | S::CreateIndex(_)
            | S::CreateView(_)
            | S::Drop { .. }
            | S::Truncate(_)
            | S::AlterTable(_) => self.ddl(stmt),
            _ => self.utility(stmt),
        }
    }
}

/// An identifier as PostgreSQL folds it: unquoted ones to lower case.
pub(crate) fn ident(id: &ast::Ident) -> String {
    if id.quote_style.is_some() { id.value.clone() } else { id.value.to_lowercase() }
}

/// The last part of a possibly schema-qualified name (`public.t` → `t`).
pub(crate) fn object_name(name: &ast::ObjectName) -> Result<String> {
    match name.0.last().and_then(|p| p.as_ident()) {
        Some(id) => Ok(ident(id)),
        None => Err(SqlError::syntax(format!("syntax error at or near \"{name}\""))),
    }
}
