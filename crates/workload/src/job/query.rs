//! A JOB query as the planter needs it: its table aliases, its join
//! equalities, its filters grouped by alias, and the columns its SELECT list
//! reads (which must not be NULL in a witness, or `MIN(...)` is NULL).
//!
//! The WHERE clause is split at its top-level ANDs. A conjunct `a.x = b.y`
//! between two aliases is a join; a conjunct that reads one alias is a
//! filter of that alias (an atom, or AND/OR of atoms); anything else (a
//! comparison across aliases other than `=`, a subquery, a function) is
//! refused with an error naming the query and the conjunct.

use std::path::Path;

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, InTarget, SelectItem, SetExpr, Statement,
    TableFactor, UnaryOperator, Value as SqlValue,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::JobError;
use super::pred::{Atom, CmpOp, Pred, Value};
use super::schema::{ColType, Schema};

/// One `table AS alias` of the FROM list.
#[derive(Debug, Clone)]
pub struct Alias {
    pub name: String,
    pub table: usize,
}

/// A column of an alias: (alias index, column index).
pub type AliasColumn = (usize, usize);

#[derive(Debug, Clone)]
pub struct QuerySpec {
    /// The file's stem (`1a`, `33c`).
    pub name: String,
    pub sql: String,
    pub aliases: Vec<Alias>,
    pub joins: Vec<(AliasColumn, AliasColumn)>,
    /// Per alias, the conjuncts that filter it.
    pub filters: Vec<Vec<Pred>>,
    /// Columns read by the SELECT list.
    pub outputs: Vec<AliasColumn>,
}

/// Reads every `*.sql` of `dir`, in JOB's order (1a, 1b, ..., 2a, ..., 33c).
pub fn load_queries(dir: &Path, schema: &Schema) -> Result<Vec<QuerySpec>, JobError> {
    let io = |e: std::io::Error| JobError::Io { path: dir.to_path_buf(), cause: e };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort_by_key(|p| query_order(&p.file_stem().unwrap_or_default().to_string_lossy()));
    if files.is_empty() {
        return Err(JobError::NoQueries { dir: dir.to_path_buf() });
    }
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let sql = std::fs::read_to_string(&f).map_err(|e| JobError::Io { path: f.clone(), cause: e })?;
        let name = f.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        out.push(parse_query(&name, &sql, schema)?);
    }
    Ok(out)
}

/// `10a` sorts after `9d`: by the leading number, then the rest.
fn query_order(stem: &str) -> (u32, String) {
    let digits: String = stem.chars().take_while(|c| c.is_ascii_digit()).collect();
    (digits.parse().unwrap_or(u32::MAX), stem[digits.len()..].to_string())
}

/// Parses one query (a single SELECT over a comma-separated FROM list).
pub fn parse_query(name: &str, sql: &str, schema: &Schema) -> Result<QuerySpec, JobError> {
    let parse_err = |detail: String| JobError::QueryParse { query: name.to_string(), detail };
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| parse_err(e.to_string()))?;
    if statements.len() != 1 {
        return Err(parse_err(format!("expected one statement, found {}", statements.len())));
    }
    let Statement::Query(query) = statements.remove(0) else {
        return Err(parse_err("not a SELECT".into()));
    };
    let SetExpr::Select(select) = *query.body else {
        return Err(parse_err("not a plain SELECT".into()));
    };
    let mut q = QuerySpec {
        name: name.to_string(),
        sql: sql.to_string(),
        aliases: Vec::new(),
        joins: Vec::new(),
        filters: Vec::new(),
        outputs: Vec::new(),
    };
    for from in &select.from {
        if !from.joins.is_empty() {
            return Err(parse_err("explicit JOIN syntax is not supported (JOB lists tables in FROM)".into()));
        }
        let TableFactor::Table { name: table, alias, .. } = &from.relation else {
            return Err(parse_err(format!("unsupported FROM item `{}`", from.relation)));
        };
        let table_name = table.to_string();
        let t = schema.table(&table_name).ok_or_else(|| parse_err(format!("no table {table_name} in the schema")))?;
        let alias_name = alias.as_ref().map_or(table_name.clone(), |a| a.name.value.clone());
        q.aliases.push(Alias { name: alias_name, table: t });
        q.filters.push(Vec::new());
    }
    let aliases = q.aliases.clone();
    let r = Resolver { query: name, schema, aliases: &aliases };
    for item in &select.projection {
        let expr = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            other => return Err(parse_err(format!("unsupported SELECT item `{other}`"))),
        };
        r.collect_columns(expr, &mut q.outputs)?;
    }
    let mut conjuncts = Vec::new();
    if let Some(w) = &select.selection {
        split_and(w, &mut conjuncts);
    }
    for c in conjuncts {
        r.classify(c, &mut q)?;
    }
    Ok(q)
}

fn split_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            split_and(left, out);
            split_and(right, out);
        }
        Expr::Nested(inner) if matches!(**inner, Expr::BinaryOp { op: BinaryOperator::And, .. }) => {
            split_and(inner, out)
        }
        e => out.push(e),
    }
}

/// Resolves column names of one query against its aliases.
struct Resolver<'a> {
    query: &'a str,
    schema: &'a Schema,
    aliases: &'a [Alias],
}

impl Resolver<'_> {
    fn unsupported(&self, conjunct: &Expr, reason: &str) -> JobError {
        JobError::Unsupported { query: self.query.to_string(), conjunct: conjunct.to_string(), reason: reason.into() }
    }

    /// The alias column an identifier names, `None` if `e` is no column.
    fn column(&self, e: &Expr) -> Result<Option<AliasColumn>, JobError> {
        let (alias, column) = match e {
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => (Some(&parts[0].value), &parts[1].value),
            Expr::Identifier(id) => (None, &id.value),
            Expr::Nested(inner) => return self.column(inner),
            _ => return Ok(None),
        };
        let candidates: Vec<AliasColumn> = self
            .aliases
            .iter()
            .enumerate()
            .filter(|(_, a)| alias.is_none_or(|n| *n == a.name))
            .filter_map(|(i, a)| self.schema.tables[a.table].column(column).map(|c| (i, c)))
            .collect();
        match candidates.as_slice() {
            [one] => Ok(Some(*one)),
            [] => Err(self.unsupported(e, "no such column among the query's tables")),
            _ => Err(self.unsupported(e, "ambiguous column name")),
        }
    }

    fn collect_columns(&self, e: &Expr, out: &mut Vec<AliasColumn>) -> Result<(), JobError> {
        if let Some(c) = self.column(e)? {
            out.push(c);
            return Ok(());
        }
        if let Expr::Function(f) = e
            && let FunctionArguments::List(list) = &f.args
        {
            for a in &list.args {
                if let FunctionArg::Unnamed(FunctionArgExpr::Expr(arg)) = a {
                    self.collect_columns(arg, out)?;
                }
            }
            return Ok(());
        }
        Err(self.unsupported(e, "the SELECT list may hold columns and aggregates of columns only"))
    }

    /// Files one WHERE conjunct as a join or as a filter of one alias.
    fn classify(&self, c: &Expr, q: &mut QuerySpec) -> Result<(), JobError> {
        if let Expr::BinaryOp { left, op, right } = c
            && let (Some(l), Some(r)) = (self.column(left)?, self.column(right)?)
        {
            if *op != BinaryOperator::Eq || l.0 == r.0 {
                return Err(self.unsupported(c, "only equality joins between two aliases are supported"));
            }
            q.joins.push((l, r));
            return Ok(());
        }
        let mut alias = None;
        let pred = self.pred(c, c, &mut alias)?;
        let alias = alias.ok_or_else(|| self.unsupported(c, "the condition reads no column"))?;
        q.filters[alias].push(pred);
        Ok(())
    }

    /// Converts a filter expression; every column must belong to one alias.
    fn pred(&self, e: &Expr, conjunct: &Expr, alias: &mut Option<usize>) -> Result<Pred, JobError> {
        let mut col = |x: &Expr| -> Result<(usize, String, ColType), JobError> {
            let (a, c) = self.column(x)?.ok_or_else(|| self.unsupported(conjunct, "expected a column on the left"))?;
            if alias.is_some_and(|prev| prev != a) {
                return Err(self.unsupported(conjunct, "a filter may read one alias only"));
            }
            *alias = Some(a);
            let column = &self.schema.tables[self.aliases[a].table].columns[c];
            Ok((a, column.name.clone(), column.ty))
        };
        let atom = |column: String, atom: Atom| Pred::Atom { column, atom, text: e.to_string() };
        Ok(match e {
            Expr::Nested(inner) => self.pred(inner, conjunct, alias)?,
            Expr::BinaryOp { left, op: op @ (BinaryOperator::And | BinaryOperator::Or), right } => {
                let parts = vec![self.pred(left, conjunct, alias)?, self.pred(right, conjunct, alias)?];
                if *op == BinaryOperator::And { Pred::And(parts) } else { Pred::Or(parts) }
            }
            Expr::BinaryOp { left, op, right } => {
                let (_, name, ty) = col(left)?;
                let op = cmp_op(op).ok_or_else(|| self.unsupported(conjunct, "unsupported operator"))?;
                atom(name, Atom::Cmp(op, self.literal(right, ty, conjunct)?))
            }
            Expr::IsNull(x) | Expr::IsNotNull(x) => {
                let (_, name, _) = col(x)?;
                atom(name, Atom::IsNull { negated: matches!(e, Expr::IsNotNull(_)) })
            }
            Expr::Between { expr, negated, low, high } => {
                let (_, name, ty) = col(expr)?;
                let (low, high) = (self.literal(low, ty, conjunct)?, self.literal(high, ty, conjunct)?);
                atom(name, Atom::Between { low, high, negated: *negated })
            }
            Expr::In { expr, target: InTarget::List(list), negated, .. } => {
                let (_, name, ty) = col(expr)?;
                let list = list.iter().map(|v| self.literal(v, ty, conjunct)).collect::<Result<_, _>>()?;
                atom(name, Atom::In { list, negated: *negated })
            }
            Expr::Like { negated, any: false, expr, pattern, escape_char: None } => {
                let (_, name, ty) = col(expr)?;
                let Value::Text(pattern) = self.literal(pattern, ty, conjunct)? else {
                    return Err(self.unsupported(conjunct, "LIKE on a non-text column"));
                };
                atom(name, Atom::Like { pattern, negated: *negated })
            }
            _ => return Err(self.unsupported(conjunct, "unsupported kind of condition")),
        })
    }

    /// A literal of the column's type.
    fn literal(&self, e: &Expr, ty: ColType, conjunct: &Expr) -> Result<Value, JobError> {
        let (negative, inner) = match e {
            Expr::UnaryOp { op: UnaryOperator::Minus, expr } => (true, &**expr),
            e => (false, e),
        };
        let Expr::Value(v) = inner else {
            return Err(self.unsupported(conjunct, "the right side must be a literal"));
        };
        match (&v.value, ty) {
            (SqlValue::Number(n, _), ColType::Int) => {
                let n: i64 = n.parse().map_err(|_| self.unsupported(conjunct, "not an integer literal"))?;
                Ok(Value::Int(if negative { -n } else { n }))
            }
            (SqlValue::SingleQuotedString(s), ColType::Text { .. }) if !negative => Ok(Value::Text(s.clone())),
            _ => Err(self.unsupported(conjunct, "the literal's type does not match the column's")),
        }
    }
}

fn cmp_op(op: &BinaryOperator) -> Option<CmpOp> {
    Some(match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::Ne,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::Le,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::Ge,
        _ => return None,
    })
}
