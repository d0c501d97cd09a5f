//! Choosing column values that make one alias's filters true.
//!
//! Each filter is put in disjunctive normal form ([`Pred::dnf`]); a choice of
//! one conjunction per filter is a set of atoms, grouped by column. A column
//! is solved by trying candidates and keeping the first for which every atom
//! on it is true (by the same three-valued evaluation the checks use):
//!
//! ```text
//!   =, IN            the literals themselves
//!   LIKE 'a%b'       instantiations: "a b", "ab", "<word> a <word> b ..."
//!                    (other LIKEs' fixed parts as filler, so that several
//!                    LIKEs on one column can hold at once)
//!   <, >, BETWEEN    base values of the column first (realistic ones),
//!                    then values built from the bounds
//!   NOT LIKE, <>,    base values of the column
//!   IS NOT NULL
//!   IS NULL          NULL
//! ```
//!
//! Choices are tried from a random starting point (so k witnesses differ),
//! at most [`MAX_CHOICES`] of them; when none works the alias is unsatisfiable
//! and the error names the conjunct that fails on its own, if one does.

use std::collections::BTreeMap;

use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus as Rng;
use rand::seq::SliceRandom;

use super::pred::{Atom, CmpOp, LikeToken, Pred, Value, like_tokens};
use super::schema::{ColType, Table};
use super::values::base_value;
use super::vocab::TITLE_WORDS;

/// Most DNF conjunctions one filter may expand to.
const MAX_DNF: usize = 64;
/// Most combinations of conjunctions tried for one alias.
const MAX_CHOICES: usize = 4096;
/// Base values drawn per column before building values from bounds.
const BASE_SAMPLES: usize = 64;

/// Why an alias's filters cannot be met: the conjunct and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsatisfiable {
    pub conjunct: String,
    pub reason: String,
}

/// Values for the filtered columns of a new row of `table` (`None`: not
/// constrained) that make every filter in `preds` true.
pub fn solve(table: &Table, preds: &[Pred], rng: &mut Rng) -> Result<Vec<Option<Value>>, Unsatisfiable> {
    let mut dnfs = Vec::with_capacity(preds.len());
    for p in preds {
        let d = p.dnf(MAX_DNF).ok_or_else(|| Unsatisfiable {
            conjunct: p.to_string(),
            reason: format!("more than {MAX_DNF} OR branches"),
        })?;
        dnfs.push(d);
    }
    if let Some(row) = try_choices(table, &dnfs, rng) {
        return Ok(row);
    }
    // Name the culprit: a filter that fails on its own, else all of them.
    for (p, d) in preds.iter().zip(&dnfs) {
        if try_choices(table, std::slice::from_ref(d), rng).is_none() {
            return Err(Unsatisfiable {
                conjunct: p.to_string(),
                reason: format!("no value of {}'s columns satisfies it", table.name),
            });
        }
    }
    let all: Vec<String> = preds.iter().map(|p| p.to_string()).collect();
    Err(Unsatisfiable { conjunct: all.join(" AND "), reason: "these filters cannot hold at once".into() })
}

type Dnf<'a> = Vec<Vec<(&'a str, &'a Atom)>>;

fn try_choices(table: &Table, dnfs: &[Dnf<'_>], rng: &mut Rng) -> Option<Vec<Option<Value>>> {
    let total = dnfs.iter().try_fold(1usize, |acc, d| acc.checked_mul(d.len())).unwrap_or(usize::MAX);
    let offsets: Vec<usize> = dnfs.iter().map(|d| rng.random_range(0..d.len().max(1))).collect();
    'choice: for n in 0..total.min(MAX_CHOICES) {
        let mut by_column: BTreeMap<usize, Vec<&Atom>> = BTreeMap::new();
        let mut rest = n;
        for (d, off) in dnfs.iter().zip(&offsets) {
            let pick = (rest % d.len() + off) % d.len();
            rest /= d.len();
            for (column, atom) in &d[pick] {
                let c = table.column(column)?;
                by_column.entry(c).or_default().push(atom);
            }
        }
        let mut row = vec![None; table.columns.len()];
        for (c, atoms) in by_column {
            match solve_column(table, c, &atoms, rng) {
                Some(v) => row[c] = Some(v),
                None => continue 'choice,
            }
        }
        return Some(row);
    }
    None
}

/// The first candidate for which every atom holds, if any.
fn solve_column(table: &Table, col: usize, atoms: &[&Atom], rng: &mut Rng) -> Option<Value> {
    let c = &table.columns[col];
    let holds = |v: &Value| fits(v, c.ty) && atoms.iter().all(|a| a.eval(v) == Some(true));
    let mut direct = Vec::new();
    let mut bounds = Vec::new();
    let likes: Vec<&str> = atoms
        .iter()
        .filter_map(|a| match a {
            Atom::Like { pattern, negated: false } => Some(pattern.as_str()),
            _ => None,
        })
        .collect();
    for a in atoms {
        match a {
            Atom::Cmp(CmpOp::Eq, v) => direct.push(v.clone()),
            Atom::In { list, negated: false } => {
                let mut l = list.clone();
                l.shuffle(rng);
                direct.extend(l);
            }
            Atom::Like { pattern, negated: false } => direct.extend(like_candidates(pattern, &likes, rng)),
            Atom::Cmp(op, v) => bounds.extend(bound_candidates(*op, v, rng)),
            Atom::Between { low, high, negated: false } => {
                bounds.extend(bound_candidates(CmpOp::Ge, low, rng));
                bounds.extend(bound_candidates(CmpOp::Le, high, rng));
                if let (Value::Int(l), Value::Int(h)) = (low, high)
                    && l <= h
                {
                    direct.push(Value::Int(rng.random_range(*l..=*h)));
                }
            }
            _ => {}
        }
    }
    if let Some(v) = direct.into_iter().find(|v| holds(v)) {
        return Some(v);
    }
    for _ in 0..BASE_SAMPLES {
        let v = base_value(table, col, &[], rng);
        if holds(&v) {
            return Some(v);
        }
    }
    bounds.into_iter().chain([Value::Null]).find(|v| holds(v))
}

fn fits(v: &Value, ty: ColType) -> bool {
    match (v, ty) {
        (Value::Null, _) => true,
        (Value::Int(i), ColType::Int) => i32::try_from(*i).is_ok(),
        (Value::Text(s), ColType::Text { max_chars }) => max_chars.is_none_or(|n| s.chars().count() <= n),
        _ => false,
    }
}

/// Strings matching `pattern`: with plain fillers, with words, and with the
/// fixed parts of the column's other LIKE patterns as fillers.
fn like_candidates(pattern: &str, all: &[&str], rng: &mut Rng) -> Vec<Value> {
    let others: String = all.iter().filter(|p| **p != pattern).map(|p| fixed_part(p)).collect::<Vec<_>>().join(" ");
    let word = |rng: &mut Rng| TITLE_WORDS[rng.random_range(0..TITLE_WORDS.len())].to_string();
    let mut out = Vec::new();
    for variant in 0..4 {
        let tokens = like_tokens(pattern);
        let last = tokens.len().saturating_sub(1);
        let mut s = String::new();
        for (i, t) in tokens.iter().enumerate() {
            match t {
                LikeToken::Char(c) => s.push(*c),
                LikeToken::One => s.push('x'),
                LikeToken::Any => {
                    let fill = match variant {
                        0 if i == 0 || i == last => String::new(),
                        0 => " ".into(),
                        1 => String::new(),
                        2 if i == 0 => format!("{} ", word(rng)),
                        2 if i == last => format!(" {}", word(rng)),
                        2 => format!(" {} ", word(rng)),
                        _ if i == last || i == 0 => format!(" {others} "),
                        _ => " ".into(),
                    };
                    s.push_str(&fill);
                }
            }
        }
        out.push(Value::Text(s));
    }
    out
}

/// A LIKE pattern's characters with its wildcards removed.
fn fixed_part(pattern: &str) -> String {
    like_tokens(pattern)
        .into_iter()
        .filter_map(|t| match t {
            LikeToken::Char(c) => Some(c),
            LikeToken::One => Some('x'),
            LikeToken::Any => None,
        })
        .collect()
}

/// Values on the right side of `op v`, built from the bound.
fn bound_candidates(op: CmpOp, v: &Value, rng: &mut Rng) -> Vec<Value> {
    match v {
        Value::Int(b) => {
            let b = *b;
            let range = match op {
                CmpOp::Gt => b.saturating_add(1)..=b.saturating_add(10),
                CmpOp::Ge => b..=b.saturating_add(10),
                CmpOp::Lt => b.saturating_sub(10)..=b.saturating_sub(1),
                CmpOp::Le => b.saturating_sub(10)..=b,
                CmpOp::Eq | CmpOp::Ne => return vec![Value::Int(b.saturating_add(1))],
            };
            vec![Value::Int(rng.random_range(range.clone())), Value::Int(*range.start()), Value::Int(*range.end())]
        }
        Value::Text(s) => {
            let mut out = Vec::new();
            match op {
                CmpOp::Gt | CmpOp::Ge | CmpOp::Ne => {
                    out.push(format!("{s}5"));
                    out.push(bump(s, 1));
                    out.push(s.clone());
                }
                CmpOp::Lt | CmpOp::Le => {
                    out.push(bump_first(s));
                    out.push(bump(s, -1));
                    out.extend(["0".to_string(), String::new()]);
                }
                CmpOp::Eq => out.push(s.clone()),
            }
            out.into_iter().map(Value::Text).collect()
        }
        Value::Null => Vec::new(),
    }
}

/// `s` with its last character moved by `delta` (ASCII only).
fn bump(s: &str, delta: i8) -> String {
    let mut b = s.as_bytes().to_vec();
    if let Some(last) = b.last_mut()
        && last.is_ascii_alphanumeric()
    {
        *last = last.wrapping_add_signed(delta);
    }
    String::from_utf8(b).unwrap_or_default()
}

/// `s` with its first character one lower (`'3.5'` -> `'2.5'`).
fn bump_first(s: &str) -> String {
    let mut b = s.as_bytes().to_vec();
    if let Some(first) = b.first_mut()
        && first.is_ascii_alphanumeric()
        && *first > b'0'
    {
        *first -= 1;
    }
    String::from_utf8(b).unwrap_or_default()
}
