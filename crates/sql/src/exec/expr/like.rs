//! `[NOT] LIKE / ILIKE` with arrow-string's kernels.
//!
//! arrow-string implements `%`, `_` and the backslash escape, PostgreSQL's
//! default. A pattern with another `ESCAPE` character is rewritten to
//! backslash escapes first (a literal backslash doubled). `char(n)` input
//! is compared without its padding, as PostgreSQL casts `bpchar` to text
//! for LIKE. ILIKE folds case as Unicode's simple lowercase, which equals
//! PostgreSQL's with the C collation for ASCII.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StringArray};

use super::cast_array;
use crate::error::{Result, SqlError};
use crate::types::DataType;
use crate::types::ops::CastMode;

#[allow(clippy::too_many_arguments)]
pub(super) fn like(
    s: &ArrayRef,
    st: &DataType,
    p: &ArrayRef,
    pt: &DataType,
    negated: bool,
    case_insensitive: bool,
    escape: Option<char>,
) -> Result<ArrayRef> {
    let n = s.len();
    if s.data_type().is_null() || p.data_type().is_null() {
        return Ok(super::bools(n, None));
    }
    let s = as_text(s, st)?;
    let p = as_text(p, pt)?;
    let p = match escape {
        None | Some('\\') => p,
        Some(e) => rewrite_escape(&p, e)?,
    };
    let out = match (negated, case_insensitive) {
        (false, false) => arrow_string::like::like(&s, &p),
        (true, false) => arrow_string::like::nlike(&s, &p),
        (false, true) => arrow_string::like::ilike(&s, &p),
        (true, true) => arrow_string::like::nilike(&s, &p),
    };
    out.map(|a| Arc::new(a) as ArrayRef).map_err(super::arrow_err)
}

fn as_text(a: &ArrayRef, t: &DataType) -> Result<ArrayRef> {
    match t {
        DataType::Char(_) => cast_array(a, t, &DataType::Text, CastMode::Explicit),
        t if t.is_text() => Ok(a.clone()),
        other => cast_array(a, other, &DataType::Text, CastMode::Explicit),
    }
}

/// Rewrites patterns escaped with `esc` to backslash escapes.
fn rewrite_escape(p: &ArrayRef, esc: char) -> Result<ArrayRef> {
    let p = p
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| SqlError::internal("LIKE pattern is not a Utf8 array"))?;
    let mut out = Vec::with_capacity(p.len());
    for i in 0..p.len() {
        if p.is_null(i) {
            out.push(None);
            continue;
        }
        let mut s = String::new();
        let mut chars = p.value(i).chars();
        while let Some(c) = chars.next() {
            if c == esc {
                match chars.next() {
                    Some(next) => {
                        s.push('\\');
                        s.push(next);
                    }
                    // PostgreSQL matches nothing against a dangling escape.
                    None => s.push('\\'),
                }
            } else if c == '\\' {
                s.push_str("\\\\");
            } else {
                s.push(c);
            }
        }
        out.push(Some(s));
    }
    Ok(Arc::new(StringArray::from(out)))
}
