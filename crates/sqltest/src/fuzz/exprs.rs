//! Random typed expressions over a scope of columns: every expression the
//! generator asks for has a [`Kind`], and is built only from operators
//! and functions that take and give that kind on both engines, so most
//! queries bind and the interesting differences are in their results.
//!
//! What is left out, and why (each a difference by design or an
//! evaluation-order question, not a bug):
//! * division by a possible zero: written `a / NULLIF(b, 0)`; whether a
//!   row that a filter drops is evaluated first is not defined by SQL, so
//!   an error there is no finding;
//! * numeric division inside expressions (the per-value scale,
//!   `docs/sql.md`); `avg` is kept, compared with tolerance;
//! * multiplication by more than small constants (overflow on one engine
//!   that the other's filter order avoids);
//! * numeric cast to text (prints the expression's one scale);
//! * float division, `sqrt`, `power` (inexact results, then summed in
//!   different orders).

use super::ast::Expr;
use super::queries::{Gen, ScopeCol};
use super::schema::{Kind, PATTERNS, SqlType, VOCABULARY, literal, quote};

const KINDS: &[Kind] = &[Kind::Int, Kind::Int, Kind::Num, Kind::Float, Kind::Bool, Kind::Date, Kind::Text, Kind::Text];
const COMPARISONS: &[&str] = &["=", "<>", "<", "<=", ">", ">="];

/// The SQL type name a NULL of this kind is cast to.
pub fn null_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Int => "integer",
        Kind::Num => "numeric",
        Kind::Float => "double precision",
        Kind::Bool => "boolean",
        Kind::Date => "date",
        Kind::Text => "text",
    }
}

impl Gen<'_> {
    pub fn any_kind(&mut self) -> Kind {
        KINDS[self.below(KINDS.len())]
    }

    /// A literal of this kind (sometimes a typed NULL).
    pub fn lit(&mut self, kind: Kind) -> Expr {
        if self.chance(1, 15) {
            return Expr::Lit(format!("CAST(NULL AS {})", null_type(kind)));
        }
        Expr::Lit(match kind {
            Kind::Int => literal(self.rng, SqlType::Int),
            Kind::Num => literal(self.rng, SqlType::Numeric(8, 2)),
            Kind::Float => format!("CAST({} AS double precision)", literal(self.rng, SqlType::Float)),
            Kind::Bool => literal(self.rng, SqlType::Bool),
            Kind::Date => format!("DATE {}", literal(self.rng, SqlType::Date)),
            Kind::Text => literal(self.rng, SqlType::Text),
        })
    }

    /// A column of this kind from the scope, if it has one (inner columns,
    /// those first in the scope, more often than outer ones).
    pub fn column(&mut self, kind: Kind, scope: &[ScopeCol]) -> Option<Expr> {
        let matching: Vec<&ScopeCol> = scope.iter().filter(|c| c.kind == kind).collect();
        if matching.is_empty() {
            return None;
        }
        let inner = matching.iter().filter(|c| !c.outer).count();
        let i = if inner > 0 && !self.chance(1, 5) { self.below(inner) } else { self.below(matching.len()) };
        let c = matching[i];
        Some(Expr::Col(c.alias.clone(), c.name.clone()))
    }

    pub fn leaf(&mut self, kind: Kind, scope: &[ScopeCol]) -> Expr {
        if !self.chance(1, 4)
            && let Some(c) = self.column(kind, scope)
        {
            return c;
        }
        self.lit(kind)
    }

    /// An expression of `kind` with at most `depth` levels of operators.
    pub fn expr(&mut self, kind: Kind, scope: &[ScopeCol], depth: u32) -> Expr {
        if depth == 0 || self.chance(2, 5) {
            return self.leaf(kind, scope);
        }
        let d = depth - 1;
        if self.chance(1, 10) {
            return self.conditional(kind, scope, d);
        }
        match kind {
            Kind::Int => self.int_expr(scope, d),
            Kind::Num => self.num_expr(scope, d),
            Kind::Float => self.float_expr(scope, d),
            Kind::Bool => self.predicate(scope, depth),
            Kind::Date => self.date_expr(scope, d),
            Kind::Text => self.text_expr(scope, d),
        }
    }

    /// CASE, COALESCE, NULLIF, GREATEST/LEAST: any kind.
    fn conditional(&mut self, kind: Kind, scope: &[ScopeCol], d: u32) -> Expr {
        match self.below(4) {
            0 => {
                let whens = (0..1 + self.below(2))
                    .map(|_| (self.predicate(scope, d.min(1)), self.expr(kind, scope, d)))
                    .collect();
                let other = self.chance(2, 3).then(|| Box::new(self.expr(kind, scope, d)));
                Expr::Case(whens, other)
            }
            1 => Expr::func("coalesce", vec![self.expr(kind, scope, d), self.expr(kind, scope, d)]),
            2 => Expr::func("nullif", vec![self.expr(kind, scope, d), self.leaf(kind, scope)]),
            _ if kind == Kind::Bool => Expr::func("coalesce", vec![self.expr(kind, scope, d), self.lit(kind)]),
            _ => {
                let f = if self.chance(1, 2) { "greatest" } else { "least" };
                Expr::func(f, vec![self.expr(kind, scope, d), self.expr(kind, scope, d)])
            }
        }
    }

    fn small_int(&mut self) -> Expr {
        Expr::Lit((self.below(5) as i32 - 1).to_string())
    }

    fn int_expr(&mut self, scope: &[ScopeCol], d: u32) -> Expr {
        match self.below(12) {
            0 => Expr::bin(self.expr(Kind::Int, scope, d), "+", self.expr(Kind::Int, scope, d)),
            1 => Expr::bin(self.expr(Kind::Int, scope, d), "-", self.expr(Kind::Int, scope, d)),
            2 => Expr::bin(self.leaf(Kind::Int, scope), "*", self.small_int()),
            3 => Expr::Unary("-", Box::new(self.expr(Kind::Int, scope, d))),
            4 => Expr::func("abs", vec![self.expr(Kind::Int, scope, d)]),
            5 => Expr::func("length", vec![self.expr(Kind::Text, scope, d)]),
            6 => {
                let op = if self.chance(1, 2) { "/" } else { "%" };
                let divisor = Expr::func("nullif", vec![self.expr(Kind::Int, scope, d), Expr::Lit("0".into())]);
                Expr::bin(self.expr(Kind::Int, scope, d), op, divisor)
            }
            7 => Expr::Cast(Box::new(self.expr(Kind::Num, scope, d)), "integer"),
            8 => Expr::Cast(Box::new(self.expr(Kind::Float, scope, d)), "bigint"),
            9 => Expr::bin(self.expr(Kind::Date, scope, d), "-", self.expr(Kind::Date, scope, d)),
            10 => Expr::Cast(Box::new(self.expr(Kind::Bool, scope, d.min(1))), "integer"),
            _ => Expr::func("strpos", vec![self.expr(Kind::Text, scope, d), self.text_lit()]),
        }
    }

    fn num_expr(&mut self, scope: &[ScopeCol], d: u32) -> Expr {
        match self.below(9) {
            0 => Expr::bin(self.expr(Kind::Num, scope, d), "+", self.expr(Kind::Num, scope, d)),
            1 => Expr::bin(self.expr(Kind::Num, scope, d), "-", self.expr(Kind::Int, scope, d)),
            2 => Expr::bin(self.leaf(Kind::Num, scope), "*", self.leaf(Kind::Num, scope)),
            3 => Expr::func("round", vec![self.expr(Kind::Num, scope, d), Expr::Lit(self.below(3).to_string())]),
            4 => Expr::func("abs", vec![self.expr(Kind::Num, scope, d)]),
            5 => Expr::Cast(Box::new(self.expr(Kind::Int, scope, d)), "numeric(10,2)"),
            6 => Expr::Cast(Box::new(self.expr(Kind::Float, scope, d)), "numeric(12,2)"),
            7 => Expr::func(if self.chance(1, 2) { "floor" } else { "ceil" }, vec![self.expr(Kind::Num, scope, d)]),
            _ => Expr::Unary("-", Box::new(self.expr(Kind::Num, scope, d))),
        }
    }

    fn float_expr(&mut self, scope: &[ScopeCol], d: u32) -> Expr {
        match self.below(7) {
            0 => Expr::bin(self.expr(Kind::Float, scope, d), "+", self.expr(Kind::Float, scope, d)),
            1 => Expr::bin(self.expr(Kind::Float, scope, d), "-", self.expr(Kind::Int, scope, d)),
            2 => Expr::bin(self.leaf(Kind::Float, scope), "*", self.small_int()),
            3 => Expr::Cast(Box::new(self.expr(Kind::Int, scope, d)), "double precision"),
            4 => Expr::Cast(Box::new(self.expr(Kind::Num, scope, d)), "double precision"),
            5 => Expr::func("abs", vec![self.expr(Kind::Float, scope, d)]),
            _ => Expr::func(if self.chance(1, 2) { "floor" } else { "ceil" }, vec![self.expr(Kind::Float, scope, d)]),
        }
    }

    fn date_expr(&mut self, scope: &[ScopeCol], d: u32) -> Expr {
        let days = Expr::Lit(self.below(40).to_string());
        let op = if self.chance(1, 2) { "+" } else { "-" };
        Expr::bin(self.expr(Kind::Date, scope, d), op, days)
    }

    fn text_lit(&mut self) -> Expr {
        Expr::Lit(quote(VOCABULARY[self.below(VOCABULARY.len())]))
    }

    fn text_expr(&mut self, scope: &[ScopeCol], d: u32) -> Expr {
        let t = self.expr(Kind::Text, scope, d);
        match self.below(14) {
            0 => Expr::func("upper", vec![t]),
            1 => Expr::func("lower", vec![t]),
            2 => Expr::func("substr", vec![t, Expr::Lit((1 + self.below(3)).to_string())]),
            3 => Expr::func(
                "substr",
                vec![t, Expr::Lit(self.below(3).to_string()), Expr::Lit(self.below(4).to_string())],
            ),
            4 => Expr::bin(t, "||", self.expr(Kind::Text, scope, d)),
            5 => Expr::func("concat", vec![t, self.expr(Kind::Text, scope, d)]),
            6 => Expr::func("replace", vec![t, Expr::Lit("'a'".into()), Expr::Lit("'xy'".into())]),
            7 => Expr::func(["btrim", "ltrim", "rtrim"][self.below(3)], vec![t]),
            8 => Expr::func(
                if self.chance(1, 2) { "left" } else { "right" },
                vec![t, Expr::Lit(self.below(4).to_string())],
            ),
            9 => Expr::func("lpad", vec![t, Expr::Lit(self.below(6).to_string()), Expr::Lit("'*'".into())]),
            10 => Expr::Cast(Box::new(self.expr(Kind::Int, scope, d)), "text"),
            11 => Expr::Cast(Box::new(self.expr(Kind::Date, scope, d)), "text"),
            12 => Expr::Cast(Box::new(t), "varchar(2)"),
            _ => Expr::Cast(Box::new(self.expr(Kind::Bool, scope, d.min(1))), "text"),
        }
    }

    /// A comparison of two expressions of one kind (numbers mix).
    pub fn comparison(&mut self, scope: &[ScopeCol], d: u32) -> Expr {
        let kind = self.any_kind();
        let other = if kind.is_number() && self.chance(1, 3) {
            [Kind::Int, Kind::Num, Kind::Float][self.below(3)]
        } else {
            kind
        };
        let op = if self.chance(1, 10) {
            if self.chance(1, 2) { "IS DISTINCT FROM" } else { "IS NOT DISTINCT FROM" }
        } else {
            COMPARISONS[self.below(COMPARISONS.len())]
        };
        Expr::bin(self.expr(kind, scope, d), op, self.expr(other, scope, d))
    }

    /// A boolean expression; subqueries where the generator allows them.
    pub fn predicate(&mut self, scope: &[ScopeCol], depth: u32) -> Expr {
        let d = depth.saturating_sub(1);
        if depth == 0 {
            return if self.chance(1, 3) { self.leaf(Kind::Bool, scope) } else { self.comparison(scope, 0) };
        }
        match self.below(12) {
            0 | 1 => {
                let op = if self.chance(1, 2) { "AND" } else { "OR" };
                Expr::bin(self.predicate(scope, d), op, self.predicate(scope, d))
            }
            2 => Expr::Unary("NOT", Box::new(self.predicate(scope, d))),
            3 => {
                let kind = self.any_kind();
                Expr::IsNull(Box::new(self.expr(kind, scope, d)), self.chance(1, 2))
            }
            4 => {
                let kind = [Kind::Int, Kind::Num, Kind::Date, Kind::Text][self.below(4)];
                let (lo, hi) = (self.expr(kind, scope, 0), self.expr(kind, scope, 0));
                Expr::Between(Box::new(self.expr(kind, scope, d)), Box::new(lo), Box::new(hi), self.chance(1, 3))
            }
            5 => {
                let kind = self.any_kind();
                let mut items: Vec<Expr> = (0..1 + self.below(4)).map(|_| self.lit(kind)).collect();
                // An untyped NULL in the list: NOT IN is then never TRUE.
                if self.chance(1, 4) {
                    items.insert(self.below(items.len() + 1), Expr::Lit("NULL".into()));
                }
                Expr::InList(Box::new(self.expr(kind, scope, d)), items, self.chance(1, 3))
            }
            6 => {
                let pattern = PATTERNS[self.below(PATTERNS.len())].to_string();
                let text = self.expr(Kind::Text, scope, d);
                if self.chance(1, 5) {
                    let op = if self.chance(1, 3) { "NOT ILIKE" } else { "ILIKE" };
                    return Expr::bin(text, op, Expr::Lit(quote(&pattern)));
                }
                Expr::Like(Box::new(text), pattern, self.chance(1, 3))
            }
            7 | 8 if self.subqueries_allowed() => self.subquery_predicate(scope),
            _ => self.comparison(scope, d),
        }
    }
}
