//! The text forms of the NDP operations in [`crate::ndp`], as users write
//! them: aggregate names (`sum`, `count-star`), predicates
//! (`ol_quantity >= 5`) and update expressions
//! (`ol_amount = ol_amount + 1.50`), parsed over a table's columns.
//!
//! One parser for every place that reads them (`ndpdb db aggregate` and
//! `update-ndp`, the composer's `[query]`, `ndpdb bench snapshot --op`), so
//! that they accept the same texts and say the same about bad ones.
//!
//! Values are written as the column shows them, and parsed into the column's
//! stored units: an integer; a `numeric(p,s)` value with at most `s`
//! decimals, stored times 10^s ([`parse_scaled`]); a timestamp as PostgreSQL
//! prints one, optionally in single quotes (`'2023-11-14 22:13:20'`).
//!
//! Error messages name the clause as users see it: `where` (the composer's
//! key, and what `--where` holds) and `--set` (update-NDP's expression).

use crate::ndp::{Aggregate, CmpOp, Predicate, UpdateExpr};
use crate::schema::{Column, ColumnType, parse_timestamp};

/// The aggregate names, each [`Aggregate`]'s canonical one
/// ([`aggregate_name`]); `count(*)` is accepted for `count-star` too.
pub const AGGREGATE_NAMES: [&str; 6] = ["count-star", "count", "sum", "min", "max", "avg"];

/// The forms of an update expression, for messages.
const SET_FORMS: &str = "COLUMN = VALUE, COLUMN = COLUMN + VALUE, COLUMN = COLUMN - VALUE or COLUMN = COLUMN * INTEGER";

/// The comparison operators of a predicate. Where one is a prefix of
/// another (`<` of `<=`), the longer one is listed first: at one position
/// the longest operator wins.
const CMP_OPS: [(&str, CmpOp); 6] =
    [("<>", CmpOp::Ne), ("<=", CmpOp::Le), (">=", CmpOp::Ge), ("=", CmpOp::Eq), ("<", CmpOp::Lt), (">", CmpOp::Gt)];

const WHERE: &str = "where";
const SET: &str = "--set";

/// A text that is not an aggregate name, predicate or update expression of
/// the table; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("unknown aggregate `{0}`: use count-star, count, sum, min, max or avg")]
    UnknownAggregate(String),
    #[error("where {0:?}: expected COLUMN OP VALUE with OP one of = <> < <= > >=")]
    NoOperator(String),
    #[error("{clause}: table {table} has no column {column}")]
    NoColumn { clause: &'static str, table: String, column: String },
    #[error("{clause}: `{text}` is not a number with at most {scale} decimals")]
    NotANumber { clause: &'static str, text: String, scale: u32 },
    #[error("where: `{0}` is not a timestamp; write YYYY-MM-DD or YYYY-MM-DD HH:MM:SS[.ffffff]")]
    NotATimestamp(String),
    #[error("--set {0:?}: expected {forms}", forms = SET_FORMS)]
    NoAssignment(String),
    #[error("--set {0:?}: no column before `=`; expected {forms}", forms = SET_FORMS)]
    NoTarget(String),
    #[error("--set: column {column} is {sql_type}; update-NDP updates integer and decimal columns")]
    NotUpdatable { column: String, sql_type: String },
    #[error("--set: the value is out of range")]
    OutOfRange,
    #[error(
        "--set: `{text}` is not an integer (a decimal column is stored scaled, so only integer factors are exact): \
         {reason}"
    )]
    NotAnInteger { text: String, reason: String },
}

/// An aggregate by name: one of [`AGGREGATE_NAMES`], or `count(*)`.
pub fn parse_aggregate(name: &str) -> Result<Aggregate, TextError> {
    Ok(match name {
        "count-star" | "count(*)" => Aggregate::CountStar,
        "count" => Aggregate::Count,
        "sum" => Aggregate::Sum,
        "min" => Aggregate::Min,
        "max" => Aggregate::Max,
        "avg" => Aggregate::Avg,
        other => return Err(TextError::UnknownAggregate(other.to_string())),
    })
}

/// The canonical name of an aggregate, which [`parse_aggregate`] reads back.
pub fn aggregate_name(func: Aggregate) -> &'static str {
    match func {
        Aggregate::CountStar => AGGREGATE_NAMES[0],
        Aggregate::Count => AGGREGATE_NAMES[1],
        Aggregate::Sum => AGGREGATE_NAMES[2],
        Aggregate::Min => AGGREGATE_NAMES[3],
        Aggregate::Max => AGGREGATE_NAMES[4],
        Aggregate::Avg => AGGREGATE_NAMES[5],
    }
}

/// `COLUMN OP VALUE` on a column of table `table` (named in messages), with
/// OP one of `= <> < <= > >=` (the first operator in the text; at one
/// position the longest) and VALUE in the column's text form.
pub fn parse_predicate(table: &str, columns: &[Column], text: &str) -> Result<Predicate, TextError> {
    let (at, sym, op) = CMP_OPS
        .iter()
        .filter_map(|(sym, op)| text.find(sym).map(|i| (i, *sym, *op)))
        .min_by_key(|(i, sym, _)| (*i, usize::MAX - sym.len()))
        .ok_or_else(|| TextError::NoOperator(text.to_string()))?;
    let col = column_index(WHERE, table, columns, text[..at].trim())?;
    let literal = text[at + sym.len()..].trim();
    let ty = columns[col].ty;
    let value = if ty == ColumnType::Timestamp {
        parse_timestamp(literal.trim_matches('\'')).ok_or_else(|| TextError::NotATimestamp(literal.to_string()))?
    } else {
        let scale = decimal_scale(ty);
        parse_scaled(literal, scale).ok_or_else(|| TextError::NotANumber {
            clause: WHERE,
            text: literal.to_string(),
            scale,
        })?
    };
    Ok(Predicate::int(col as u16, op, value))
}

/// `COLUMN = VALUE`, `COLUMN = COLUMN + VALUE`, `COLUMN = COLUMN - VALUE` or
/// `COLUMN = COLUMN * INTEGER` on an integer or decimal column of `table`:
/// the column's index and the expression, its value in the column's stored
/// units (a factor stays a plain integer: scaling it would scale the result
/// twice).
pub fn parse_update(table: &str, columns: &[Column], text: &str) -> Result<(u16, UpdateExpr), TextError> {
    let (lhs, rhs) = text.split_once('=').ok_or_else(|| TextError::NoAssignment(text.to_string()))?;
    let name = lhs.trim();
    if name.is_empty() {
        return Err(TextError::NoTarget(text.to_string()));
    }
    let col = column_index(SET, table, columns, name)?;
    let ty = columns[col].ty;
    if !matches!(ty, ColumnType::Int32 | ColumnType::Int64 | ColumnType::Decimal { .. }) {
        return Err(TextError::NotUpdatable { column: name.to_string(), sql_type: ty.sql_name() });
    }
    let scale = decimal_scale(ty);
    let value = |text: &str| {
        let text = text.trim();
        parse_scaled(text, scale).ok_or_else(|| TextError::NotANumber { clause: SET, text: text.to_string(), scale })
    };
    let rhs = rhs.trim();
    let Some(rest) = rhs.strip_prefix(name).map(str::trim_start).filter(|r| r.starts_with(['+', '-', '*'])) else {
        return Ok((col as u16, UpdateExpr::Set(value(rhs)?)));
    };
    let (op, operand) = rest.split_at(1);
    let expr = match op {
        "+" => UpdateExpr::Add(value(operand)?),
        "-" => UpdateExpr::Add(value(operand)?.checked_neg().ok_or(TextError::OutOfRange)?),
        _ => {
            let operand = operand.trim();
            UpdateExpr::Mul(
                operand
                    .parse::<i64>()
                    .map_err(|e| TextError::NotAnInteger { text: operand.to_string(), reason: e.to_string() })?,
            )
        }
    };
    Ok((col as u16, expr))
}

fn column_index(clause: &'static str, table: &str, columns: &[Column], name: &str) -> Result<usize, TextError> {
    columns.iter().position(|c| c.name == name).ok_or_else(|| TextError::NoColumn {
        clause,
        table: table.to_string(),
        column: name.to_string(),
    })
}

/// Decimals of a column's text form: a `numeric(p,s)`'s `s`, else 0.
pub fn decimal_scale(ty: ColumnType) -> u32 {
    match ty {
        ColumnType::Decimal { scale, .. } => u32::from(scale),
        _ => 0,
    }
}

/// A number with at most `scale` decimals (`-12.5`), times 10^scale; None
/// when it is not one or the result leaves an i64.
pub fn parse_scaled(text: &str, scale: u32) -> Option<i64> {
    let (neg, digits) = text.strip_prefix('-').map_or((false, text), |d| (true, d));
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > scale as usize || int.is_empty() && frac.is_empty() {
        return None;
    }
    let v = int.parse::<i64>().ok()?.checked_mul(10i64.checked_pow(scale)?)?;
    let f = if frac.is_empty() { 0 } else { frac.parse::<i64>().ok()? * 10i64.pow(scale - frac.len() as u32) };
    let v = v.checked_add(f)?;
    Some(if neg { -v } else { v })
}

/// `v` divided by 10^scale, with exactly `scale` decimals (`-0.05`).
pub fn format_scaled(v: i128, scale: u32) -> String {
    if scale == 0 {
        return v.to_string();
    }
    let d = 10u128.pow(scale);
    format!("{}{}.{:0w$}", if v < 0 { "-" } else { "" }, v.unsigned_abs() / d, v.unsigned_abs() % d, w = scale as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn columns() -> Vec<Column> {
        vec![
            Column::new("q", ColumnType::Int32, false),
            Column::new("amount", ColumnType::Decimal { precision: 6, scale: 2 }, false),
            Column::new("at", ColumnType::Timestamp, true),
            Column::new("info", ColumnType::Text(24), false),
        ]
    }

    fn predicate(text: &str) -> Result<Predicate, String> {
        parse_predicate("t", &columns(), text).map_err(|e| e.to_string())
    }

    fn update(text: &str) -> Result<(u16, UpdateExpr), String> {
        parse_update("t", &columns(), text).map_err(|e| e.to_string())
    }

    #[test]
    fn aggregate_names_read_back_and_count_star_has_two() {
        for name in AGGREGATE_NAMES {
            assert_eq!(aggregate_name(parse_aggregate(name).unwrap()), name);
        }
        assert_eq!(parse_aggregate("count(*)"), Ok(Aggregate::CountStar));
        assert_eq!(
            parse_aggregate("median").unwrap_err().to_string(),
            "unknown aggregate `median`: use count-star, count, sum, min, max or avg"
        );
        assert!(parse_aggregate("SUM").is_err(), "names are lower case");
    }

    #[test]
    fn predicates_take_the_first_and_longest_operator() {
        let p = |column, op, value| Ok(Predicate::int(column, op, value));
        assert_eq!(predicate("q>=5"), p(0, CmpOp::Ge, 5));
        assert_eq!(predicate(" q <> -3 "), p(0, CmpOp::Ne, -3));
        assert_eq!(predicate("q<=5"), p(0, CmpOp::Le, 5));
        assert_eq!(predicate("q=5"), p(0, CmpOp::Eq, 5));
        assert_eq!(predicate("q < 5"), p(0, CmpOp::Lt, 5));
        assert_eq!(predicate("q>5"), p(0, CmpOp::Gt, 5));
        assert_eq!(predicate("amount >= 5000.5"), p(1, CmpOp::Ge, 500_050));
        assert_eq!(predicate("at >= '2023-11-14 22:13:20.000001'"), p(2, CmpOp::Ge, 1_700_000_000_000_001));
        assert_eq!(predicate("at < 1970-01-02"), p(2, CmpOp::Lt, 86_400_000_000));
    }

    #[test]
    fn bad_predicates_say_what_is_wrong() {
        let e = |text| predicate(text).unwrap_err();
        assert_eq!(e("q 5"), "where \"q 5\": expected COLUMN OP VALUE with OP one of = <> < <= > >=");
        assert_eq!(e("x>1"), "where: table t has no column x");
        assert_eq!(e("q>>1"), "where: `>1` is not a number with at most 0 decimals");
        assert_eq!(e("amount>1.234"), "where: `1.234` is not a number with at most 2 decimals");
        assert_eq!(e("at > 5"), "where: `5` is not a timestamp; write YYYY-MM-DD or YYYY-MM-DD HH:MM:SS[.ffffff]");
    }

    #[test]
    fn update_expressions_in_stored_units() {
        assert_eq!(update("amount = amount + 1.50"), Ok((1, UpdateExpr::Add(150))));
        assert_eq!(update("amount=amount-1"), Ok((1, UpdateExpr::Add(-100))));
        assert_eq!(update("q = q * 3"), Ok((0, UpdateExpr::Mul(3))));
        assert_eq!(update("q = 7"), Ok((0, UpdateExpr::Set(7))));
        assert_eq!(update("q = -7"), Ok((0, UpdateExpr::Set(-7))));
    }

    #[test]
    fn bad_update_expressions_say_what_is_wrong() {
        let forms = "COLUMN = VALUE, COLUMN = COLUMN + VALUE, COLUMN = COLUMN - VALUE or COLUMN = COLUMN * INTEGER";
        let e = |text| update(text).unwrap_err();
        assert_eq!(e("q 3"), format!("--set \"q 3\": expected {forms}"));
        assert_eq!(e("= 3"), format!("--set \"= 3\": no column before `=`; expected {forms}"));
        assert_eq!(e("nope = 1"), "--set: table t has no column nope");
        assert_eq!(e("info = 1"), "--set: column info is char(24); update-NDP updates integer and decimal columns");
        assert_eq!(e("at = 1"), "--set: column at is timestamp; update-NDP updates integer and decimal columns");
        assert_eq!(
            e("amount = amount * 1.5"),
            "--set: `1.5` is not an integer (a decimal column is stored scaled, so only integer factors are exact): \
             invalid digit found in string"
        );
        assert_eq!(e("amount = 1.234"), "--set: `1.234` is not a number with at most 2 decimals");
    }

    #[test]
    fn scaled_numbers() {
        assert_eq!(parse_scaled("-1.5", 2), Some(-150));
        assert_eq!(parse_scaled("12", 2), Some(1200));
        assert_eq!(parse_scaled("0.05", 2), Some(5));
        assert_eq!(parse_scaled("1.234", 2), None);
        assert_eq!(parse_scaled("", 2), None);
        assert_eq!(parse_scaled(".", 2), None);
        assert_eq!(parse_scaled("1", 19), None, "10^19 leaves an i64");
        assert_eq!(parse_scaled("92233720368547758.08", 2), None);
        assert_eq!(format_scaled(-5, 2), "-0.05");
        assert_eq!(format_scaled(123_456, 2), "1234.56");
        assert_eq!(format_scaled(-7, 0), "-7");
    }

    proptest! {
        #[test]
        fn scaled_numbers_read_back(v in any::<i64>(), scale in 0u32..=6) {
            let text = format_scaled(v.into(), scale);
            let back = parse_scaled(&text, scale);
            // A text whose value times 10^scale fits an i64 always does,
            // except the one value whose magnitude does not (i64::MIN).
            if v != i64::MIN {
                prop_assert_eq!(back, Some(v), "{}", text);
            }
        }

        #[test]
        fn parsers_never_panic(text in ".{0,40}") {
            let _ = parse_aggregate(&text);
            let _ = parse_predicate("t", &columns(), &text);
            let _ = parse_update("t", &columns(), &text);
            let _ = parse_scaled(&text, 2);
        }

        #[test]
        fn near_misses_never_panic(
            column in "(q|amount|at|info|x| )",
            op in "(=|<>|<|<=|>|>=|\\+|-|\\*| )",
            value in "[-+0-9.' :a-z]{0,24}",
        ) {
            let _ = parse_predicate("t", &columns(), &format!("{column}{op}{value}"));
            let _ = parse_update("t", &columns(), &format!("{column} = {column} {op} {value}"));
            let _ = parse_update("t", &columns(), &format!("{column} = {value}"));
        }
    }
}
