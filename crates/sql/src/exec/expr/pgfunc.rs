//! The functions of PostgreSQL's catalog that clients call:
//! `format_type`, `pg_encoding_to_char`, `pg_size_pretty`,
//! `array_to_string` and the POSIX regular-expression match `~`.
//!
//! ```text
//!  format_type(oid, typmod)            typmod may be NULL
//!  regex_match(s, pattern, flags)      flags: "" (~) or "i" (~*)
//!  array_to_string(array, sep [, null_string])
//!  pg_size_pretty(bytes)  pg_encoding_to_char(code)
//!  array_contains(x as text, array)     x = ANY(array)
//! ```
//!
//! Arrays are text in PostgreSQL's output form (`{a,b,"c d",NULL}`, or
//! `1 2` for int2vector): the system catalogs' array columns hold that form
//! (`catalog/system`).
//!
//! Regular expressions are the `regex` crate's, which is PostgreSQL's ARE
//! syntax for what psql and drivers send (anchors, classes, alternation,
//! bracket expressions, `*?`); it has no back-references or look-around
//! (an error 2201B names the pattern), and `\m`/`\M` (word start/end) are
//! not PostgreSQL's there. Compiled patterns are kept in a small per-thread
//! cache, as the pattern is nearly always a literal.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::catalog::system::oids;
use crate::error::{Result, SqlError, SqlState};
use crate::plan::Function;
use crate::types::Value;

/// The most compiled patterns a thread keeps.
const REGEX_CACHE_MAX: usize = 64;

thread_local! {
    static REGEX_CACHE: RefCell<HashMap<String, regex::Regex>> = RefCell::new(HashMap::new());
}

/// One call; `vals` are the evaluated arguments of one row.
pub(super) fn call(func: Function, vals: &[Value]) -> Result<Value> {
    use Function as F;
    match func {
        F::ArrayContains => {
            if vals.iter().any(Value::is_null) {
                return Ok(Value::Null);
            }
            let wanted = text(&vals[0]);
            let items = array_items(&text(&vals[1]));
            Ok(if items.iter().any(|i| i.as_deref() == Some(wanted.as_str())) {
                Value::Bool(true)
            } else if items.iter().any(Option::is_none) {
                Value::Null
            } else {
                Value::Bool(false)
            })
        }
        F::FormatType => {
            let Some(oid) = int(&vals[0]) else { return Ok(Value::Null) };
            Ok(Value::Text(oids::format_type(oid, vals.get(1).and_then(int))))
        }
        _ if vals.iter().any(Value::is_null) => Ok(Value::Null),
        F::PgEncodingToChar => Ok(Value::Text(oids::encoding_name(int(&vals[0]).unwrap_or(-1)).into())),
        F::PgSizePretty => Ok(Value::Text(size_pretty(int(&vals[0]).unwrap_or(0)))),
        F::ArrayToString => {
            let null = vals.get(2).map(text);
            let items: Vec<String> =
                array_items(&text(&vals[0])).into_iter().filter_map(|item| item.or_else(|| null.clone())).collect();
            Ok(Value::Text(items.join(&text(&vals[1]))))
        }
        F::RegexMatch => regex_match(&text(&vals[0]), &text(&vals[1]), &text(&vals[2])).map(Value::Bool),
        other => Err(SqlError::internal(format!("{other:?} is not a catalog function"))),
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int16(x) => Some(*x as i64),
        Value::Int32(x) => Some(*x as i64),
        Value::Int64(x) => Some(*x),
        Value::Numeric { value, scale } => i64::try_from(*value / 10i128.pow(*scale as u32)).ok(),
        _ => None,
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        other => crate::types::format::pg_text(other),
    }
}

/// `s ~ pattern` (flags "i": `~*`).
pub fn regex_match(s: &str, pattern: &str, flags: &str) -> Result<bool> {
    let key = format!("{flags}/{pattern}");
    REGEX_CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.contains_key(&key) {
            let re = regex::RegexBuilder::new(pattern)
                .case_insensitive(flags.contains('i'))
                .size_limit(1 << 20)
                .build()
                .map_err(|e| {
                    SqlError::new(SqlState("2201B"), format!("invalid regular expression: {pattern}"))
                        .with_hint(e.to_string())
                })?;
            if cache.len() >= REGEX_CACHE_MAX {
                cache.clear();
            }
            cache.insert(key.clone(), re);
        }
        Ok(cache[&key].is_match(s))
    })
}

/// The elements of an array's text form; None for NULL elements.
pub fn array_items(s: &str) -> Vec<Option<String>> {
    let s = s.trim();
    let Some(inner) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}')) else {
        // int2vector / oidvector: space separated.
        return s.split_whitespace().map(|x| Some(x.to_string())).collect();
    };
    let mut items = Vec::new();
    let mut chars = inner.chars().peekable();
    while chars.peek().is_some() {
        let mut item = String::new();
        let (mut quoted, mut had_quotes) = (false, false);
        while let Some(c) = chars.next() {
            match c {
                '"' => {
                    quoted = !quoted;
                    had_quotes = true;
                }
                '\\' => item.extend(chars.next()),
                ',' if !quoted => break,
                c => item.push(c),
            }
        }
        items.push(if item == "NULL" && !had_quotes { None } else { Some(item) });
    }
    items
}

/// `pg_size_pretty(bigint)`, PostgreSQL 15's rounding: bytes below 10 kB,
/// then the largest unit that keeps the number below 20480 halves.
pub fn size_pretty(bytes: i64) -> String {
    const LIMIT: i64 = 10 * 1024;
    const LIMIT2: i64 = LIMIT * 2 - 1;
    if bytes.abs() < LIMIT {
        return format!("{bytes} bytes");
    }
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    let mut size = bytes >> 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < LIMIT2 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} PB", half_rounded(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_as_postgresql() {
        // From PostgreSQL 15: select pg_size_pretty(x).
        assert_eq!(size_pretty(10239), "10239 bytes");
        assert_eq!(size_pretty(10240), "10 kB");
        assert_eq!(size_pretty(1_000_000), "977 kB");
        assert_eq!(size_pretty(10_485_760), "10 MB");
        assert_eq!(size_pretty(-10240), "-10 kB");
        assert_eq!(size_pretty(1i64 << 50), "1024 TB");
        assert_eq!(size_pretty(20i64 << 50), "20 PB");
    }

    #[test]
    fn array_text_forms() {
        assert_eq!(array_items("{a,b}"), vec![Some("a".into()), Some("b".into())]);
        assert_eq!(array_items("{\"c d\",NULL}"), vec![Some("c d".into()), None]);
        assert_eq!(array_items("{\"NULL\"}"), vec![Some("NULL".into())]);
        assert_eq!(array_items("1 2"), vec![Some("1".into()), Some("2".into())]);
        assert_eq!(array_items("{}"), Vec::<Option<String>>::new());
    }

    #[test]
    fn regex_anchored_and_invalid() {
        assert!(regex_match("t", "^(t)$", "").unwrap());
        assert!(!regex_match("tt", "^(t)$", "").unwrap());
        assert!(regex_match("T", "^(t)$", "i").unwrap());
        assert_eq!(regex_match("a", "(", "").unwrap_err().code, SqlState("2201B"));
    }
}
