//! Cardinality estimation: selectivities of predicates and rows of nodes,
//! from `ANALYZE` statistics when the catalog has them and PostgreSQL's
//! defaults when not.
//!
//! ```text
//!  col = c      c in MCV: its frequency; else (1 - Σmcv - null_frac) / (ndistinct - |mcv|)
//!               no stats: 1 / rows for a unique column, else 0.005
//!  col < c      Σ mcv frequencies satisfying it + histogram fraction below c
//!               (linear inside a bucket) × (1 - Σmcv - null_frac); no stats: 1/3
//!  col IS NULL  null_frac; no stats: 0.005
//!  LIKE         no wildcard: as `=`; else the pattern matched against the MCVs and
//!               histogram bounds (`pattern.rs`, PostgreSQL's histogram_selectivity);
//!               no stats: 0.005 (PostgreSQL's DEFAULT_MATCH_SEL)
//!  a = b        1 / max(ndv(a), ndv(b)) × (1 - nf(a)) × (1 - nf(b)); ndv clamped
//!               to the input's rows; no stats: ndv = rows for unique columns, else 200
//!  AND, OR, NOT independence: s1·s2, s1 + s2 - s1·s2, 1 - s; except a lower and an
//!               upper bound on one column: s_lo + s_hi - 1 + null_frac (a range)
//! ```
//!
//! A column is traced to its base table through Projects, Filters and joins
//! ([`origin`]); an expression that is not a column reference has no
//! statistics and gets the defaults.

use std::cmp::Ordering;
use std::sync::Arc;

use super::OptimizerContext;
use crate::catalog::{ColumnStats, TableDef};
use crate::plan::{BinaryOp, Expr, JoinAlgorithm, JoinKind, Node, Plan, SetOpKind, SubqueryKind, UnaryOp};
use crate::types::{DataType, Value};

/// Rows of a table with neither statistics nor a count from the store.
pub const DEFAULT_TABLE_ROWS: f64 = 1000.0;
/// PostgreSQL's DEFAULT_EQ_SEL.
pub const DEFAULT_EQ_SEL: f64 = 0.005;
/// PostgreSQL's DEFAULT_INEQ_SEL.
pub const DEFAULT_INEQ_SEL: f64 = 1.0 / 3.0;
/// PostgreSQL's DEFAULT_MATCH_SEL (LIKE with wildcards).
pub const DEFAULT_MATCH_SEL: f64 = 0.005;
/// PostgreSQL's DEFAULT_NUM_DISTINCT.
pub const DEFAULT_NUM_DISTINCT: f64 = 200.0;
/// IS NULL without statistics (PostgreSQL's DEFAULT_UNK_SEL).
pub const DEFAULT_NULL_SEL: f64 = 0.005;
/// A boolean of unknown distribution (EXISTS, a boolean column).
pub const DEFAULT_BOOL_SEL: f64 = 0.5;

/// What is known of one column of a node's output.
#[derive(Debug, Clone, Default)]
pub struct ColumnInfo {
    pub stats: Option<ColumnStats>,
    /// Distinct non-NULL values, clamped to the node's rows.
    pub ndv: f64,
    pub null_frac: f64,
    /// Rows of the base table.
    pub table_rows: f64,
}

/// The base table and column position output column `col` of `plan` reads
/// unchanged, if any.
pub fn origin(plan: &Plan, col: usize) -> Option<(Arc<TableDef>, usize)> {
    match &plan.node {
        Node::Scan { table, columns, .. } => columns.get(col).map(|&c| (table.clone(), c)),
        Node::Filter { input, .. }
        | Node::Sort { input, .. }
        | Node::Limit { input, .. }
        | Node::Distinct { input } => origin(input, col),
        Node::Project { input, exprs } => match strip_cast(exprs.get(col)?) {
            Expr::Column { index, .. } => origin(input, *index),
            _ => None,
        },
        Node::Aggregate { input, group_by, .. } => match strip_cast(group_by.get(col)?) {
            Expr::Column { index, .. } => origin(input, *index),
            _ => None,
        },
        Node::Join { left, right, kind, .. } => {
            let l = left.schema.len();
            if col < l {
                origin(left, col)
            } else if matches!(kind, JoinKind::Semi | JoinKind::Anti | JoinKind::Mark) {
                None
            } else {
                origin(right, col - l)
            }
        }
        Node::Values { .. } | Node::Series { .. } | Node::SetOp { .. } => None,
    }
}

fn strip_cast(e: &Expr) -> &Expr {
    match e {
        Expr::Cast { expr, .. } => strip_cast(expr),
        other => other,
    }
}

/// Rows of `table`: statistics, then the store's count, then the default.
pub fn table_rows(table: &TableDef, ctx: &OptimizerContext<'_>) -> f64 {
    if let Some(s) = &table.stats {
        return s.rows.max(0.0);
    }
    ctx.table_rows.and_then(|f| f(table)).filter(|r| r.is_finite() && *r >= 0.0).unwrap_or(DEFAULT_TABLE_ROWS)
}

fn is_unique(table: &TableDef, pos: usize) -> bool {
    let single = |cols: &Vec<usize>| cols.len() == 1 && cols[0] == pos;
    table.primary_key.as_ref().is_some_and(single)
        || table.unique.iter().any(single)
        || table.indexes.iter().any(|i| i.unique && single(&i.columns))
}

/// What is known of output column `col` of `plan` (whose `est.rows` may be
/// unknown: then no clamp).
pub fn column_info(plan: &Plan, col: usize, ctx: &OptimizerContext<'_>) -> ColumnInfo {
    let rows_here = if plan.est.rows >= 0.0 { plan.est.rows } else { f64::INFINITY };
    let Some((table, pos)) = origin(plan, col) else {
        return ColumnInfo {
            stats: None,
            ndv: DEFAULT_NUM_DISTINCT.min(rows_here),
            null_frac: 0.0,
            table_rows: rows_here,
        };
    };
    let rows = table_rows(&table, ctx);
    let stats = table.stats.as_ref().and_then(|s| s.columns.get(pos)).cloned();
    let ndv = match &stats {
        Some(s) if s.distinct > 0.0 => s.distinct,
        _ if is_unique(&table, pos) => rows,
        _ => DEFAULT_NUM_DISTINCT.min(rows),
    };
    let null_frac = stats.as_ref().map_or(0.0, |s| s.null_frac.clamp(0.0, 1.0));
    ColumnInfo { stats, ndv: ndv.min(rows_here).max(1.0), null_frac, table_rows: rows }
}

/// Column infos of a node's input, by position (a join's: left then right).
pub type Columns<'a> = &'a dyn Fn(usize) -> ColumnInfo;

/// Selectivity of `pred` over rows whose columns `cols` describes.
pub fn selectivity(pred: &Expr, cols: Columns<'_>) -> f64 {
    sel(pred, cols).clamp(0.0, 1.0)
}

fn sel(e: &Expr, cols: Columns<'_>) -> f64 {
    match e {
        Expr::Binary { op: BinaryOp::And, .. } => and_sel(e, cols),
        Expr::Binary { op: BinaryOp::Or, left, right, .. } => {
            let (a, b) = (selectivity(left, cols), selectivity(right, cols));
            a + b - a * b
        }
        Expr::Binary { op, left, right, .. } if op.is_comparison() => comparison(*op, left, right, cols),
        Expr::Unary { op: UnaryOp::Not, expr, .. } => 1.0 - selectivity(expr, cols),
        Expr::Unary { op: UnaryOp::IsNull, expr, .. } => column_of(expr).map_or(DEFAULT_NULL_SEL, |c| {
            let i = cols(c);
            if i.stats.is_some() { i.null_frac } else { DEFAULT_NULL_SEL }
        }),
        Expr::Unary { op: UnaryOp::IsNotNull, expr, .. } => column_of(expr).map_or(1.0 - DEFAULT_NULL_SEL, |c| {
            let i = cols(c);
            if i.stats.is_some() { 1.0 - i.null_frac } else { 1.0 - DEFAULT_NULL_SEL }
        }),
        Expr::Like { expr, pattern, negated, case_insensitive, escape } => {
            let s = match (column_of(expr), pattern.as_ref()) {
                (Some(c), Expr::Literal { value: Value::Text(p), .. })
                    if !p.contains(['%', '_', '\\']) && !*case_insensitive && escape.is_none() =>
                {
                    eq_sel(&cols(c), Some(&Value::Text(p.clone())))
                }
                (Some(c), Expr::Literal { value: Value::Text(p), .. }) if matches!(escape, None | Some('\\')) => {
                    let kind = super::pattern::PatternKind {
                        case_insensitive: *case_insensitive,
                        padded: matches!(strip_cast(expr).ty(), crate::types::DataType::Char(_)),
                    };
                    super::pattern::like_selectivity(&cols(c), p, kind).unwrap_or(DEFAULT_MATCH_SEL)
                }
                _ => DEFAULT_MATCH_SEL,
            };
            if *negated { 1.0 - s } else { s }
        }
        Expr::InList { expr, list, negated } => {
            let info = column_of(expr).map(cols);
            let s: f64 = list
                .iter()
                .map(|v| match info.as_ref() {
                    Some(i) => eq_sel(i, const_of(v).flatten()),
                    None => DEFAULT_EQ_SEL,
                })
                .sum::<f64>()
                .min(1.0);
            if *negated { 1.0 - s - info.map_or(0.0, |i| i.null_frac) } else { s }
        }
        Expr::Literal { value: Value::Bool(b), .. } => f64::from(u8::from(*b)),
        Expr::Literal { value: Value::Null, .. } => 0.0,
        Expr::Column { index, .. } => {
            let i = cols(*index);
            i.stats
                .as_ref()
                .and_then(|s| s.mcv.iter().find(|(v, _)| *v == Value::Bool(true)).map(|(_, f)| *f))
                .unwrap_or(DEFAULT_BOOL_SEL)
        }
        Expr::Subquery { kind: SubqueryKind::Exists { .. } | SubqueryKind::In { .. }, .. } => DEFAULT_BOOL_SEL,
        _ => DEFAULT_BOOL_SEL,
    }
}

/// A conjunction: the product of its conjuncts' selectivities, except
/// that a lower and an upper bound on one column (`a >= x AND a < y`)
/// count as one range, `P(a >= x) + P(a < y) - 1` (PostgreSQL's
/// `clauselist_selectivity`): the product would treat the two bounds as
/// independent and put a quarter's orders at a fifth of the table.
fn and_sel(e: &Expr, cols: Columns<'_>) -> f64 {
    let mut product = 1.0;
    // Column → (most selective lower bound, most selective upper bound).
    let mut ranges: Vec<(usize, Option<f64>, Option<f64>)> = Vec::new();
    for c in super::util::conjuncts(e.clone()) {
        let Some((col, lower, s)) = bound(&c, cols) else {
            product *= selectivity(&c, cols);
            continue;
        };
        let at = match ranges.iter().position(|r| r.0 == col) {
            Some(at) => at,
            None => {
                ranges.push((col, None, None));
                ranges.len() - 1
            }
        };
        let slot = if lower { &mut ranges[at].1 } else { &mut ranges[at].2 };
        *slot = Some(slot.map_or(s, |t: f64| t.min(s)));
    }
    for (col, lo, hi) in ranges {
        product *= match (lo, hi) {
            (Some(lo), Some(hi)) => {
                // Zero or below: contradictory bounds, or rounding.
                (lo + hi - 1.0 + cols(col).null_frac).max(1e-10)
            }
            (Some(s), None) | (None, Some(s)) => s,
            (None, None) => 1.0,
        };
    }
    product
}

/// `column op constant` with `<`, `<=`, `>`, `>=` (either way round) on a
/// column with statistics and a known constant: the column, whether it is
/// a lower bound, and its selectivity.
fn bound(c: &Expr, cols: Columns<'_>) -> Option<(usize, bool, f64)> {
    let Expr::Binary { op, left, right, .. } = c else { return None };
    let (col, column_op) = match (column_of(left), column_of(right), const_of(left), const_of(right)) {
        (Some(a), None, _, Some(Some(_))) => (a, *op),
        (None, Some(b), Some(Some(_)), _) => (b, op.commuted()),
        _ => return None,
    };
    let lower = match column_op {
        BinaryOp::Gt | BinaryOp::GtEq => true,
        BinaryOp::Lt | BinaryOp::LtEq => false,
        _ => return None,
    };
    cols(col).stats.as_ref()?;
    Some((col, lower, comparison(*op, left, right, cols)))
}

/// The input column `e` is (through casts).
pub fn column_of(e: &Expr) -> Option<usize> {
    match strip_cast(e) {
        Expr::Column { index, .. } => Some(*index),
        _ => None,
    }
}

/// `Some(Some(v))` for a literal, `Some(None)` for a parameter (a constant
/// of unknown value).
pub fn const_of(e: &Expr) -> Option<Option<&Value>> {
    match strip_cast(e) {
        Expr::Literal { value, .. } => Some(Some(value)),
        Expr::Param { .. } => Some(None),
        _ => None,
    }
}

fn comparison(op: BinaryOp, left: &Expr, right: &Expr, cols: Columns<'_>) -> f64 {
    let (col, value, op) = match (column_of(left), column_of(right), const_of(left), const_of(right)) {
        (Some(a), Some(b), _, _) => {
            let (x, y) = (cols(a), cols(b));
            let eq = (1.0 - x.null_frac) * (1.0 - y.null_frac) / x.ndv.max(y.ndv).max(1.0);
            return match op {
                BinaryOp::Eq | BinaryOp::IsNotDistinctFrom => eq,
                BinaryOp::NotEq | BinaryOp::IsDistinctFrom => 1.0 - eq,
                _ => DEFAULT_INEQ_SEL,
            };
        }
        (Some(a), None, _, Some(v)) => (a, v, op),
        (None, Some(b), Some(v), _) => (b, v, op.commuted()),
        _ => {
            return match op {
                BinaryOp::Eq | BinaryOp::IsNotDistinctFrom => DEFAULT_EQ_SEL,
                BinaryOp::NotEq | BinaryOp::IsDistinctFrom => 1.0 - DEFAULT_EQ_SEL,
                _ => DEFAULT_INEQ_SEL,
            };
        }
    };
    let info = cols(col);
    if value.is_some_and(Value::is_null) && !matches!(op, BinaryOp::IsDistinctFrom | BinaryOp::IsNotDistinctFrom) {
        return 0.0;
    }
    match op {
        BinaryOp::Eq | BinaryOp::IsNotDistinctFrom => eq_sel(&info, value),
        BinaryOp::NotEq | BinaryOp::IsDistinctFrom => 1.0 - eq_sel(&info, value) - info.null_frac,
        _ => range_sel(&info, op, value),
    }
}

/// Selectivity of `col = value` (`None`: a parameter).
pub fn eq_sel(info: &ColumnInfo, value: Option<&Value>) -> f64 {
    let Some(s) = &info.stats else {
        return if info.ndv >= info.table_rows && info.table_rows.is_finite() && info.table_rows > 0.0 {
            1.0 / info.table_rows
        } else {
            DEFAULT_EQ_SEL
        };
    };
    if let Some(v) = value
        && let Some((_, f)) = s.mcv.iter().find(|(m, _)| cmp_values(m, v) == Some(Ordering::Equal))
    {
        return *f;
    }
    let mcv_total: f64 = s.mcv.iter().map(|(_, f)| f).sum();
    let rest = (s.distinct - s.mcv.len() as f64).max(1.0);
    ((1.0 - mcv_total - s.null_frac) / rest).clamp(0.0, 1.0)
}

/// Selectivity of `col op value` for `<`, `<=`, `>`, `>=`.
pub fn range_sel(info: &ColumnInfo, op: BinaryOp, value: Option<&Value>) -> f64 {
    let (Some(s), Some(v)) = (&info.stats, value) else { return DEFAULT_INEQ_SEL };
    let holds = |m: &Value| match cmp_values(m, v) {
        Some(o) => match op {
            BinaryOp::Lt => o == Ordering::Less,
            BinaryOp::LtEq => o != Ordering::Greater,
            BinaryOp::Gt => o == Ordering::Greater,
            _ => o != Ordering::Less,
        },
        None => false,
    };
    let mcv_part: f64 = s.mcv.iter().filter(|(m, _)| holds(m)).map(|(_, f)| f).sum();
    let mcv_total: f64 = s.mcv.iter().map(|(_, f)| f).sum();
    let rest = (1.0 - mcv_total - s.null_frac).max(0.0);
    let below = match histogram_fraction(&s.histogram, v) {
        Some(f) => f,
        None => return mcv_part + rest * DEFAULT_INEQ_SEL,
    };
    let frac = if matches!(op, BinaryOp::Lt | BinaryOp::LtEq) { below } else { 1.0 - below };
    mcv_part + rest * frac
}

/// Fraction of the histogram's values below `v` (linear inside a bucket
/// for numbers and dates, half a bucket for text). None without a usable
/// histogram.
pub fn histogram_fraction(hist: &[Value], v: &Value) -> Option<f64> {
    if hist.len() < 2 {
        return None;
    }
    let buckets = (hist.len() - 1) as f64;
    if cmp_values(v, &hist[0])? != Ordering::Greater {
        return Some(0.0);
    }
    if cmp_values(v, &hist[hist.len() - 1])? != Ordering::Less {
        return Some(1.0);
    }
    let i = hist.windows(2).position(|w| cmp_values(v, &w[1]) == Some(Ordering::Less))?;
    let inside = match (number(&hist[i]), number(&hist[i + 1]), number(v)) {
        (Some(lo), Some(hi), Some(x)) if hi > lo => ((x - lo) / (hi - lo)).clamp(0.0, 1.0),
        _ => 0.5,
    };
    Some((i as f64 + inside) / buckets)
}

/// A value's position on its kind's number line (same kind only).
fn number(v: &Value) -> Option<f64> {
    Some(match v {
        Value::Int16(x) => f64::from(*x),
        Value::Int32(x) => f64::from(*x),
        Value::Int64(x) => *x as f64,
        Value::Numeric { value, scale } => *value as f64 / 10f64.powi(i32::from(*scale)),
        Value::Float64(x) => *x,
        Value::Date(d) => f64::from(*d),
        Value::Timestamp(t) => *t as f64,
        _ => return None,
    })
}

fn kind(v: &Value) -> u8 {
    match v {
        Value::Int16(_) | Value::Int32(_) | Value::Int64(_) | Value::Numeric { .. } | Value::Float64(_) => 1,
        Value::Date(_) => 2,
        Value::Timestamp(_) => 3,
        Value::Text(_) => 4,
        Value::Bool(_) => 5,
        _ => 0,
    }
}

/// Orders two values of the same kind (numbers of any width together).
/// Text compares without trailing spaces: a `char(n)` literal arrives
/// padded (`'MAIL      '`) while ANALYZE's values may not be, and
/// PostgreSQL's bpchar ignores the padding too; comparing them as written
/// found no MCV and estimated TPC-H Q12's and Q19's `l_shipmode IN (...)`
/// at one row.
pub fn cmp_values(a: &Value, b: &Value) -> Option<Ordering> {
    if kind(a) != kind(b) || kind(a) == 0 {
        return None;
    }
    match (a, b) {
        (Value::Text(x), Value::Text(y)) => Some(x.trim_end_matches(' ').cmp(y.trim_end_matches(' '))),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => number(a)?.partial_cmp(&number(b)?),
    }
}

/// Rows of `generate_series`: exact over literal arguments, else
/// PostgreSQL's default for a set-returning function (1,000).
fn series_rows(start: &Expr, stop: &Expr, step: &Expr) -> f64 {
    let int = |e: &Expr| match e {
        Expr::Literal { value: Value::Int16(v), .. } => Some(f64::from(*v)),
        Expr::Literal { value: Value::Int32(v), .. } => Some(f64::from(*v)),
        Expr::Literal { value: Value::Int64(v), .. } => Some(*v as f64),
        _ => None,
    };
    match (int(start), int(stop), int(step)) {
        (Some(a), Some(b), Some(s)) if s != 0.0 => (((b - a) / s).floor() + 1.0).max(0.0),
        _ => 1000.0,
    }
}

/// Estimated rows of `plan`'s own node, its children's `est.rows` known.
pub fn node_rows(plan: &Plan, ctx: &OptimizerContext<'_>) -> f64 {
    let rows = |p: &Plan| p.est.rows.max(0.0);
    match &plan.node {
        Node::Scan { table, filter, .. } => {
            let base = table_rows(table, ctx);
            let s = filter.as_ref().map_or(1.0, |f| selectivity(f, &|c| column_info_base(plan, c, ctx)));
            (base * s).max(1.0_f64.min(base))
        }
        Node::Values { rows } => rows.len() as f64,
        Node::Series { start, stop, step } => series_rows(start, stop, step),
        Node::Filter { input, predicate } => {
            (rows(input) * selectivity(predicate, &|c| column_info(input, c, ctx))).max(1.0_f64.min(rows(input)))
        }
        Node::Project { input, .. } | Node::Sort { input, .. } => rows(input),
        Node::Limit { input, limit, offset } => {
            let after = (rows(input) - *offset as f64).max(0.0);
            limit.map_or(after, |l| after.min(l as f64))
        }
        Node::Distinct { input } => groups(input, &(0..input.schema.len()).collect::<Vec<_>>(), ctx),
        Node::Aggregate { input, group_by, .. } => {
            if group_by.is_empty() {
                return 1.0;
            }
            let cols: Vec<Option<usize>> = group_by.iter().map(column_of).collect();
            let ndv: f64 =
                cols.iter().map(|c| c.map_or(DEFAULT_NUM_DISTINCT, |c| column_info(input, c, ctx).ndv)).product();
            ndv.min(rows(input)).max(1.0_f64.min(rows(input)))
        }
        Node::Join { left, right, kind, on, algorithm } => {
            let condition = full_condition(left.schema.len(), on.as_ref(), algorithm);
            join_rows(left, right, *kind, condition.as_ref(), ctx)
        }
        Node::SetOp { op, all, left, right } => match op {
            SetOpKind::Union if *all => rows(left) + rows(right),
            SetOpKind::Union => rows(left).max(rows(right)),
            SetOpKind::Intersect => rows(left).min(rows(right)),
            SetOpKind::Except => rows(left),
        },
    }
}

/// A scan's filter reads the scan's output before the scan's own
/// estimate exists: no clamp.
fn column_info_base(plan: &Plan, col: usize, ctx: &OptimizerContext<'_>) -> ColumnInfo {
    let unclamped = Plan { est: crate::plan::Estimate::UNKNOWN, ..plan.clone() };
    column_info(&unclamped, col, ctx)
}

fn groups(input: &Plan, cols: &[usize], ctx: &OptimizerContext<'_>) -> f64 {
    let n = input.est.rows.max(0.0);
    let ndv: f64 = cols.iter().map(|&c| column_info(input, c, ctx).ndv).product();
    ndv.min(n).max(1.0_f64.min(n))
}

/// Column infos over a join's input (left, then right).
pub fn join_columns<'p>(
    left: &'p Plan,
    right: &'p Plan,
    ctx: &'p OptimizerContext<'_>,
) -> impl Fn(usize) -> ColumnInfo + 'p {
    let l = left.schema.len();
    move |c| if c < l { column_info(left, c, ctx) } else { column_info(right, c - l, ctx) }
}

/// A join's whole condition: a hash join keeps only the residual in `on`
/// and its key equalities in the algorithm; both count for the estimate.
fn full_condition(left_width: usize, on: Option<&Expr>, algorithm: &JoinAlgorithm) -> Option<Expr> {
    let JoinAlgorithm::Hash { left_keys, right_keys, .. } = algorithm else { return on.cloned() };
    let mut parts: Vec<Expr> = left_keys
        .iter()
        .zip(right_keys)
        .map(|(l, r)| {
            let mut r = r.clone();
            super::util::remap(&mut r, &|i| i + left_width);
            Expr::Binary { op: BinaryOp::Eq, left: Box::new(l.clone()), right: Box::new(r), ty: DataType::Bool }
        })
        .collect();
    parts.extend(on.cloned());
    super::util::conjoin(parts)
}

fn join_rows(left: &Plan, right: &Plan, kind: JoinKind, on: Option<&Expr>, ctx: &OptimizerContext<'_>) -> f64 {
    let (l, r) = (left.est.rows.max(0.0), right.est.rows.max(0.0));
    let cols = join_columns(left, right, ctx);
    let s = on.map_or(1.0, |p| selectivity(p, &cols));
    let inner = l * r * s;
    match kind {
        JoinKind::Inner => inner,
        JoinKind::Left => inner.max(l),
        JoinKind::Right => inner.max(r),
        JoinKind::Full => inner.max(l).max(r),
        JoinKind::Single | JoinKind::Mark => l,
        JoinKind::Semi => l * semi_fraction(left, r, on, &cols),
        JoinKind::Anti => l * (1.0 - semi_fraction(left, r, on, &cols)),
    }
}

/// Fraction of left rows with a match (PostgreSQL's eqjoinsel_semi without
/// MCVs): `(1 - nf(a)) · min(1, ndv(b) / ndv(a))` for the first equality
/// `a = b`, where `ndv(b)` is at most the right input's `right_rows` (a
/// filtered inner side cannot hold more keys than rows: `NOT IN (SELECT
/// s_suppkey … WHERE s_comment LIKE …)` keeps almost every row, not none);
/// 0.5 without one.
fn semi_fraction(left: &Plan, right_rows: f64, on: Option<&Expr>, cols: Columns<'_>) -> f64 {
    let l = left.schema.len();
    let Some(on) = on else { return 1.0 };
    for c in super::util::conjuncts(on.clone()) {
        if let Expr::Binary { op: BinaryOp::Eq, left: a, right: b, .. } = &c
            && let (Some(x), Some(y)) = (column_of(a), column_of(b))
        {
            let (outer, inner) = if x < l && y >= l {
                (x, y)
            } else if y < l && x >= l {
                (y, x)
            } else {
                continue;
            };
            let (o, i) = (cols(outer), cols(inner));
            let inner_ndv = i.ndv.min(right_rows.max(1.0));
            return ((1.0 - o.null_frac) * (inner_ndv / o.ndv.max(1.0)).min(1.0)).clamp(0.0, 1.0);
        }
    }
    DEFAULT_BOOL_SEL
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipmodes() -> ColumnInfo {
        let text = |s: &str| Value::Text(s.into());
        let stats = ColumnStats {
            distinct: 2.0,
            null_frac: 0.0,
            mcv: vec![(text("MAIL"), 0.6), (text("SHIP"), 0.4)],
            histogram: vec![],
            avg_width: 4.0,
        };
        ColumnInfo { stats: Some(stats), ndv: 2.0, null_frac: 0.0, table_rows: 100.0 }
    }

    #[test]
    fn padded_char_literals_find_their_mcv() {
        let info = shipmodes();
        assert_eq!(eq_sel(&info, Some(&Value::Text("MAIL      ".into()))), 0.6);
        assert_eq!(eq_sel(&info, Some(&Value::Text("SHIP".into()))), 0.4);
        let lt = range_sel(&info, BinaryOp::Lt, Some(&Value::Text("SHIP      ".into())));
        assert!((lt - 0.6).abs() < 1e-12, "{lt}");
    }

    /// A column of 0..=100, uniform (histogram bounds every 10).
    fn uniform() -> ColumnInfo {
        let stats = ColumnStats {
            distinct: 101.0,
            null_frac: 0.0,
            mcv: vec![],
            histogram: (0..=10).map(|i| Value::Int32(i * 10)).collect(),
            avg_width: 4.0,
        };
        ColumnInfo { stats: Some(stats), ndv: 101.0, null_frac: 0.0, table_rows: 1000.0 }
    }

    fn cmp(op: BinaryOp, left: Expr, right: Expr) -> Expr {
        Expr::Binary { op, left: Box::new(left), right: Box::new(right), ty: crate::types::DataType::Bool }
    }

    #[test]
    fn two_bounds_on_one_column_are_a_range() {
        let info = uniform();
        let cols = |_: usize| info.clone();
        let a = || Expr::Column { index: 0, ty: crate::types::DataType::Int32 };
        let lit = |v: i32| Expr::Literal { value: Value::Int32(v), ty: crate::types::DataType::Int32 };
        let range = cmp(
            BinaryOp::And,
            cmp(BinaryOp::GtEq, a(), lit(20)),
            cmp(BinaryOp::Gt, lit(30), a()), // 30 > a, mirrored
        );
        let s = selectivity(&range, &cols);
        assert!((s - 0.1).abs() < 1e-9, "{s}");
        // Contradictory bounds: next to nothing, not 0.3 × 0.2.
        let empty = cmp(BinaryOp::And, cmp(BinaryOp::GtEq, a(), lit(70)), cmp(BinaryOp::Lt, a(), lit(20)));
        assert!(selectivity(&empty, &cols) < 1e-6);
        // Bounds on different columns stay independent.
        let b = Expr::Column { index: 1, ty: crate::types::DataType::Int32 };
        let two = cmp(BinaryOp::And, cmp(BinaryOp::GtEq, a(), lit(20)), cmp(BinaryOp::Lt, b, lit(30)));
        assert!((selectivity(&two, &cols) - 0.8 * 0.3).abs() < 1e-9);
    }
}
