//! The filters of one JOB query on one table alias, in a form small enough
//! to evaluate and to solve: atoms on one column (`=`, `<>`, `<`, `<=`, `>`,
//! `>=`, `BETWEEN`, `IN`, `LIKE`, `IS [NOT] NULL`, each possibly negated)
//! under AND and OR.
//!
//! Evaluation follows SQL's three-valued logic, as PostgreSQL does: a
//! comparison with NULL is unknown (`None`), `NOT LIKE` on NULL too, AND is
//! false if any part is false, OR true if any part is true. Text compares
//! byte by byte (PostgreSQL's C collation, which the baseline server uses).
//! `LIKE` knows `%`, `_` and the default escape character `\`.

use std::cmp::Ordering;
use std::fmt;

/// One column value of a generated row.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    Null,
    Int(i64),
    Text(String),
}

impl Value {
    /// SQL's comparison: `None` when either side is NULL or the types differ.
    fn compare(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (Value::Text(a), Value::Text(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Text(s) => write!(f, "'{}'", s.replace('\'', "''")),
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    fn holds(self, ord: Ordering) -> bool {
        match self {
            CmpOp::Eq => ord == Ordering::Equal,
            CmpOp::Ne => ord != Ordering::Equal,
            CmpOp::Lt => ord == Ordering::Less,
            CmpOp::Le => ord != Ordering::Greater,
            CmpOp::Gt => ord == Ordering::Greater,
            CmpOp::Ge => ord != Ordering::Less,
        }
    }
}

/// A test on one column's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Atom {
    Cmp(CmpOp, Value),
    Between { low: Value, high: Value, negated: bool },
    In { list: Vec<Value>, negated: bool },
    Like { pattern: String, negated: bool },
    IsNull { negated: bool },
}

impl Atom {
    /// Three-valued: `None` is SQL's unknown.
    pub fn eval(&self, v: &Value) -> Option<bool> {
        match self {
            Atom::IsNull { negated } => Some((*v == Value::Null) != *negated),
            _ if *v == Value::Null => None,
            Atom::Cmp(op, lit) => v.compare(lit).map(|o| op.holds(o)),
            Atom::Between { low, high, negated } => {
                let inside = v.compare(low)? != Ordering::Less && v.compare(high)? != Ordering::Greater;
                Some(inside != *negated)
            }
            Atom::In { list, negated } => {
                let mut unknown = false;
                for item in list {
                    match v.compare(item) {
                        Some(Ordering::Equal) => return Some(!*negated),
                        Some(_) => {}
                        None => unknown = true,
                    }
                }
                if unknown { None } else { Some(*negated) }
            }
            Atom::Like { pattern, negated } => match v {
                Value::Text(s) => Some(like_match(s, pattern) != *negated),
                _ => None,
            },
        }
    }
}

/// A filter over one alias's columns. `text` keeps the SQL it came from, to
/// name it in errors.
#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    Atom { column: String, atom: Atom, text: String },
    And(Vec<Pred>),
    Or(Vec<Pred>),
}

impl Pred {
    /// Three-valued evaluation against a row given as a column lookup.
    pub fn eval(&self, row: &dyn Fn(&str) -> Value) -> Option<bool> {
        match self {
            Pred::Atom { column, atom, .. } => atom.eval(&row(column)),
            Pred::And(parts) => {
                let mut result = Some(true);
                for p in parts {
                    match p.eval(row) {
                        Some(false) => return Some(false),
                        None => result = None,
                        Some(true) => {}
                    }
                }
                result
            }
            Pred::Or(parts) => {
                let mut result = Some(false);
                for p in parts {
                    match p.eval(row) {
                        Some(true) => return Some(true),
                        None => result = None,
                        Some(false) => {}
                    }
                }
                result
            }
        }
    }

    /// Every column the filter reads.
    pub fn columns<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Pred::Atom { column, .. } => out.push(column),
            Pred::And(parts) | Pred::Or(parts) => parts.iter().for_each(|p| p.columns(out)),
        }
    }

    /// The filter as disjunctive normal form: each inner list is a
    /// conjunction of atoms, and the filter holds when any of them holds.
    /// `None` when it would exceed `limit` conjunctions.
    pub fn dnf(&self, limit: usize) -> Option<Vec<Vec<(&str, &Atom)>>> {
        match self {
            Pred::Atom { column, atom, .. } => Some(vec![vec![(column.as_str(), atom)]]),
            Pred::Or(parts) => {
                let mut out = Vec::new();
                for p in parts {
                    out.extend(p.dnf(limit)?);
                    if out.len() > limit {
                        return None;
                    }
                }
                Some(out)
            }
            Pred::And(parts) => {
                let mut out = vec![Vec::new()];
                for p in parts {
                    let alternatives = p.dnf(limit)?;
                    if out.len() * alternatives.len() > limit {
                        return None;
                    }
                    out = out
                        .iter()
                        .flat_map(|prefix| {
                            alternatives.iter().map(move |alt| prefix.iter().chain(alt).cloned().collect())
                        })
                        .collect();
                }
                Some(out)
            }
        }
    }
}

impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pred::Atom { text, .. } => f.write_str(text),
            Pred::And(parts) | Pred::Or(parts) => {
                let sep = if matches!(self, Pred::And(_)) { " AND " } else { " OR " };
                f.write_str("(")?;
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(sep)?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// One element of a LIKE pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LikeToken {
    /// `%`: any run of characters, also none.
    Any,
    /// `_`: exactly one character.
    One,
    /// A character that must be there (escaped or not special).
    Char(char),
}

/// The pattern's tokens; `\` escapes the next character (PostgreSQL's
/// default), a trailing lone `\` stands for itself.
pub fn like_tokens(pattern: &str) -> Vec<LikeToken> {
    let mut out = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            '%' => LikeToken::Any,
            '_' => LikeToken::One,
            '\\' => LikeToken::Char(chars.next().unwrap_or('\\')),
            c => LikeToken::Char(c),
        });
    }
    out
}

/// Whether `s` matches the LIKE pattern (case-sensitive, as PostgreSQL's LIKE).
pub fn like_match(s: &str, pattern: &str) -> bool {
    let tokens = like_tokens(pattern);
    let text: Vec<char> = s.chars().collect();
    // Greedy matching with backtracking to the last `%`: linear in practice,
    // O(n·m) at worst, no recursion.
    let (mut t, mut p) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match tokens.get(p) {
            Some(LikeToken::Any) => {
                star = Some((p, t));
                p += 1;
            }
            Some(LikeToken::One) => {
                t += 1;
                p += 1;
            }
            Some(LikeToken::Char(c)) if *c == text[t] => {
                t += 1;
                p += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    tokens[p..].iter().all(|tok| *tok == LikeToken::Any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches_as_postgresql() {
        assert!(like_match("Downey Jr., Robert", "%Downey%Robert%"));
        assert!(!like_match("Robert Downey", "%Downey%Robert%"));
        assert!(like_match("USA: 2005", "USA:% 200%"));
        assert!(like_match("", "%"));
        assert!(!like_match("", "_"));
        assert!(like_match("a%b", "a\\%b"));
        assert!(!like_match("axb", "a\\%b"));
        assert!(like_match("Saw", "Saw%"));
        assert!(!like_match("saw", "Saw%"));
    }

    #[test]
    fn three_valued_logic() {
        let not_like = Atom::Like { pattern: "%x%".into(), negated: true };
        assert_eq!(not_like.eval(&Value::Null), None);
        let in_list = Atom::In { list: vec![Value::Text("a".into())], negated: false };
        assert_eq!(in_list.eval(&Value::Text("b".into())), Some(false));
        assert_eq!(Atom::IsNull { negated: true }.eval(&Value::Null), Some(false));
    }
}
