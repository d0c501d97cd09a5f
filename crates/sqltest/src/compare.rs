//! Result checks for benchmarks and fuzzers: does ndpdb's answer equal
//! PostgreSQL's?
//!
//! The `.slt` files compare text exactly; a benchmark query cannot, because
//! the engines may legitimately differ in three ways that are not wrong
//! answers:
//!
//! * **row order** where the query does not decide it: without `ORDER BY`
//!   any order is right; with it, rows that tie on every sort key may come
//!   in any order among themselves;
//! * **ties at a `LIMIT`**: of the rows that tie on the sort keys at the
//!   cut, either engine may keep any;
//! * **numeric scale**: ndpdb gives a numeric expression one scale for all
//!   its values (`docs/sql.md`), PostgreSQL chooses it per value, so
//!   `avg` prints `2.5000000000000000` on one and `2.5000000000000000000`
//!   on the other. Two cells that both read as numbers are equal when they
//!   agree to a relative 1e-9 (see [`cells_equal`]); anything else must be
//!   byte-equal.
//!
//! [`compare`] checks the multiset of rows (sorted canonically, then cell by
//! cell with that tolerance) and, for an ordered query, that every position
//! holds the same sort-key values in both answers. [`order_by_columns`]
//! finds the sort keys' output positions from the SQL text. Every mismatch
//! names the first differing row, so a failing benchmark says what to look at.

use std::cmp::Ordering;

use sqlparser::ast::{Expr, OrderByKind, SelectItem, SetExpr, Statement, Value};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// One answer: rows of text cells (PostgreSQL's text output), None = NULL.
pub type Rows = [Vec<Option<String>>];

/// How the query orders its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowOrder {
    /// No ORDER BY: any order is right.
    Unordered,
    /// ORDER BY on these output columns (0-based), in this order; `limited`
    /// when a LIMIT cuts the result, so the last tie group may differ.
    Keys { columns: Vec<usize>, limited: bool },
    /// ORDER BY that does not name output columns: rows must come in the
    /// same order exactly (strict, may report ties as a mismatch).
    Exact,
}

/// Relative tolerance for cells that both read as numbers.
pub const NUMERIC_TOLERANCE: f64 = 1e-9;

/// Whether two cells are the same value (see the module docs).
pub fn cells_equal(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) if a == b => true,
        (Some(a), Some(b)) => match (number(a), number(b)) {
            (Some(x), Some(y)) => {
                let scale = x.abs().max(y.abs()).max(1.0);
                (x - y).abs() <= NUMERIC_TOLERANCE * scale
            }
            _ => false,
        },
        _ => false,
    }
}

fn number(s: &str) -> Option<f64> {
    let t = s.trim();
    let looks_numeric = !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c));
    if looks_numeric { t.parse::<f64>().ok().filter(|v| v.is_finite()) } else { None }
}

fn rows_equal(a: &[Option<String>], b: &[Option<String>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| cells_equal(x.as_deref(), y.as_deref()))
}

fn keys_equal(a: &[Option<String>], b: &[Option<String>], keys: &[usize]) -> bool {
    keys.iter().all(|&k| cells_equal(a.get(k).and_then(|c| c.as_deref()), b.get(k).and_then(|c| c.as_deref())))
}

/// The canonical sort key of a cell: numbers by value (so tolerant-equal
/// numbers sort together), then text, NULL last.
fn cell_order(a: &Option<String>, b: &Option<String>) -> Ordering {
    match (a.as_deref(), b.as_deref()) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => match (number(x), number(y)) {
            (Some(p), Some(q)) => p.total_cmp(&q),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => x.cmp(y),
        },
    }
}

fn canonical(rows: &Rows) -> Vec<&Vec<Option<String>>> {
    let mut sorted: Vec<&Vec<Option<String>>> = rows.iter().collect();
    sorted.sort_by(|a, b| {
        a.iter().zip(b.iter()).map(|(x, y)| cell_order(x, y)).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
    });
    sorted
}

fn show(row: &[Option<String>]) -> String {
    let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("NULL")).collect();
    format!("({})", cells.join(" | "))
}

/// Compares `actual` (ndpdb) with `expected` (PostgreSQL). `Err` says how
/// they differ, naming the first differing row of each.
pub fn compare(expected: &Rows, actual: &Rows, order: &RowOrder) -> Result<(), String> {
    if expected.len() != actual.len() {
        return Err(format!("{} rows, PostgreSQL gave {}", actual.len(), expected.len()));
    }
    match order {
        RowOrder::Exact => in_order(expected, actual, None),
        RowOrder::Unordered => as_multiset(expected, actual),
        RowOrder::Keys { columns, limited } => {
            in_order(expected, actual, Some(columns))?;
            // Rows tying with the last row at a LIMIT may be any of the ties.
            let cut = if *limited { last_tie_group(expected, columns) } else { expected.len() };
            as_multiset(&expected[..cut], &actual[..cut])
        }
    }
}

fn in_order(expected: &Rows, actual: &Rows, keys: Option<&Vec<usize>>) -> Result<(), String> {
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        let same = match keys {
            Some(k) => keys_equal(e, a, k),
            None => rows_equal(e, a),
        };
        if !same {
            return Err(format!("row {} differs: ndpdb {}, PostgreSQL {}", i + 1, show(a), show(e)));
        }
    }
    Ok(())
}

fn as_multiset(expected: &Rows, actual: &Rows) -> Result<(), String> {
    let (e, a) = (canonical(expected), canonical(actual));
    match e.iter().zip(&a).find(|(x, y)| !rows_equal(x, y)) {
        None => Ok(()),
        Some((x, y)) => Err(format!("rows differ (compared sorted): ndpdb {}, PostgreSQL {}", show(y), show(x))),
    }
}

/// Where the group of rows tying with the last row on `keys` begins.
fn last_tie_group(rows: &Rows, keys: &[usize]) -> usize {
    let Some(last) = rows.last() else { return 0 };
    let mut start = rows.len() - 1;
    while start > 0 && keys_equal(&rows[start - 1], last, keys) {
        start -= 1;
    }
    start
}

/// The row order a query's text asks for, given its result's column names.
/// ORDER BY items resolve as PostgreSQL resolves them: a position (`2`), an
/// output column name or alias, or an expression written exactly as a
/// select item. If one does not resolve, the answer is [`RowOrder::Exact`].
pub fn order_by_columns(sql: &str, column_names: &[String]) -> RowOrder {
    let Ok(statements) = Parser::parse_sql(&PostgreSqlDialect {}, sql) else { return RowOrder::Exact };
    let Some(Statement::Query(query)) = statements.last() else { return RowOrder::Unordered };
    let limited = query.limit_clause.is_some() || query.fetch.is_some();
    let Some(order_by) = &query.order_by else { return RowOrder::Unordered };
    let OrderByKind::Expressions(items) = &order_by.kind else { return RowOrder::Exact };
    let select_items: Vec<String> = match query.body.as_ref() {
        SetExpr::Select(select) => select.projection.iter().map(item_text).collect(),
        _ => Vec::new(),
    };
    let mut columns = Vec::with_capacity(items.len());
    for item in items {
        match resolve(&item.expr, column_names, &select_items) {
            Some(c) => columns.push(c),
            None => return RowOrder::Exact,
        }
    }
    RowOrder::Keys { columns, limited }
}

fn item_text(item: &SelectItem) -> String {
    match item {
        SelectItem::UnnamedExpr(e) => e.to_string(),
        SelectItem::ExprWithAlias { expr, .. } => expr.to_string(),
        other => other.to_string(),
    }
}

fn resolve(expr: &Expr, names: &[String], select_items: &[String]) -> Option<usize> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse::<usize>().ok().filter(|p| (1..=names.len()).contains(p)).map(|p| p - 1),
            _ => None,
        },
        Expr::Identifier(ident) => names.iter().position(|n| n.eq_ignore_ascii_case(&ident.value)),
        Expr::CompoundIdentifier(parts) => {
            let last = parts.last()?;
            names.iter().position(|n| n.eq_ignore_ascii_case(&last.value))
        }
        other => {
            let text = other.to_string();
            select_items.iter().position(|s| *s == text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(data: &[&[&str]]) -> Vec<Vec<Option<String>>> {
        data.iter().map(|r| r.iter().map(|c| (*c != "NULL").then(|| c.to_string())).collect()).collect()
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn numbers_compare_with_tolerance_text_exactly() {
        assert!(cells_equal(Some("2.5000000000000000"), Some("2.5000000000000000000")));
        assert!(cells_equal(Some("1"), Some("1.0")));
        assert!(!cells_equal(Some("1.0001"), Some("1")));
        assert!(!cells_equal(Some("abc"), Some("abc ")));
        assert!(!cells_equal(Some("1996-01-01"), Some("1996-01-02")));
        assert!(!cells_equal(None, Some("")));
    }

    #[test]
    fn unordered_answers_compare_as_multisets() {
        let e = rows(&[&["a", "1"], &["b", "2"], &["a", "1"]]);
        let a = rows(&[&["b", "2.0"], &["a", "1"], &["a", "1"]]);
        assert_eq!(compare(&e, &a, &RowOrder::Unordered), Ok(()));
        let wrong = rows(&[&["b", "2"], &["b", "2"], &["a", "1"]]);
        assert!(compare(&e, &wrong, &RowOrder::Unordered).is_err());
        assert!(compare(&e, &a[..2], &RowOrder::Unordered).is_err());
    }

    #[test]
    fn ordered_answers_may_permute_ties_only() {
        let order = RowOrder::Keys { columns: vec![1], limited: false };
        let e = rows(&[&["x", "1"], &["y", "1"], &["z", "2"]]);
        let ties_swapped = rows(&[&["y", "1"], &["x", "1"], &["z", "2"]]);
        assert_eq!(compare(&e, &ties_swapped, &order), Ok(()));
        let misordered = rows(&[&["z", "2"], &["x", "1"], &["y", "1"]]);
        assert!(compare(&e, &misordered, &order).is_err());
        assert!(compare(&e, &ties_swapped, &RowOrder::Exact).is_err());
    }

    #[test]
    fn ties_at_a_limit_may_differ() {
        let e = rows(&[&["a", "3"], &["b", "1"], &["c", "1"]]);
        let other_tie = rows(&[&["a", "3"], &["d", "1"], &["c", "1"]]);
        assert_eq!(compare(&e, &other_tie, &RowOrder::Keys { columns: vec![1], limited: true }), Ok(()));
        assert!(compare(&e, &other_tie, &RowOrder::Keys { columns: vec![1], limited: false }).is_err());
        let wrong_head = rows(&[&["q", "3"], &["b", "1"], &["c", "1"]]);
        assert!(compare(&e, &wrong_head, &RowOrder::Keys { columns: vec![1], limited: true }).is_err());
    }

    #[test]
    fn order_by_resolves_names_positions_and_expressions() {
        let cols = names(&["l_returnflag", "sum_qty", "revenue"]);
        let q = "SELECT l_returnflag, sum(l_quantity) AS sum_qty, sum(x*y) AS revenue FROM t GROUP BY 1 ORDER BY revenue DESC, 1";
        assert_eq!(order_by_columns(q, &cols), RowOrder::Keys { columns: vec![2, 0], limited: false });
        let q = "SELECT a, count(*) FROM t GROUP BY a ORDER BY count(*) DESC LIMIT 10";
        assert_eq!(order_by_columns(q, &names(&["a", "count"])), RowOrder::Keys { columns: vec![1], limited: true });
        assert_eq!(order_by_columns("SELECT a FROM t", &names(&["a"])), RowOrder::Unordered);
        assert_eq!(order_by_columns("SELECT a FROM t ORDER BY b", &names(&["a"])), RowOrder::Exact);
        assert_eq!(
            order_by_columns("CREATE VIEW v AS SELECT 1; SELECT a FROM v ORDER BY t.a", &names(&["a"])),
            RowOrder::Keys { columns: vec![0], limited: false }
        );
    }
}
