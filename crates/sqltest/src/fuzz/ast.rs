//! The generated queries as a small syntax tree: the generator builds it,
//! `Display` prints it as PostgreSQL text, and the minimizer shrinks it
//! node by node (which a string could not).
//!
//! Output columns are always named `x0, x1, ...` and ORDER BY refers to
//! them by position, so that `compare::order_by_columns` resolves every
//! sort key. Derived tables and aliases are named `d<n>` / `a<n>`, unique
//! within one query, so a reference can never be captured by another scope.

use std::fmt;

/// An expression (printed fully parenthesised: precedence is never a
/// question).
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `alias.column`.
    Col(String, String),
    /// Literal text as written (`3`, `'ab'`, `DATE '2024-01-02'`, `NULL`).
    Lit(String),
    /// `(a op b)`; op is an operator or `AND`/`OR`/`||`.
    Bin(Box<Expr>, &'static str, Box<Expr>),
    /// `(op a)`: `NOT`, `-`.
    Unary(&'static str, Box<Expr>),
    /// `(a IS [NOT] NULL)`.
    IsNull(Box<Expr>, bool),
    /// `name(args)`.
    Func(&'static str, Vec<Expr>),
    /// `CASE WHEN .. THEN .. [ELSE ..] END`.
    Case(Vec<(Expr, Expr)>, Option<Box<Expr>>),
    /// `CAST(a AS type)`.
    Cast(Box<Expr>, &'static str),
    /// `(a [NOT] BETWEEN lo AND hi)`.
    Between(Box<Expr>, Box<Expr>, Box<Expr>, bool),
    /// `(a [NOT] IN (list))`.
    InList(Box<Expr>, Vec<Expr>, bool),
    /// `(a [NOT] LIKE 'pattern')`.
    Like(Box<Expr>, String, bool),
    /// `func([DISTINCT] arg)`, `count(*)` when arg is None.
    Agg(&'static str, bool, Option<Box<Expr>>),
    /// `(SELECT ...)`: a scalar subquery.
    Scalar(Box<Query>),
    /// `(a [NOT] IN (SELECT ...))`.
    InSub(Box<Expr>, Box<Query>, bool),
    /// `([NOT] EXISTS (SELECT ...))`.
    Exists(Box<Query>, bool),
    /// `(a op ANY|ALL (SELECT ...))`.
    Quantified(Box<Expr>, &'static str, &'static str, Box<Query>),
}

impl Expr {
    pub fn bin(a: Expr, op: &'static str, b: Expr) -> Expr {
        Expr::Bin(Box::new(a), op, Box::new(b))
    }

    pub fn func(name: &'static str, args: Vec<Expr>) -> Expr {
        Expr::Func(name, args)
    }

    /// The direct sub-expressions (not those inside subqueries).
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Col(..) | Expr::Lit(_) | Expr::Scalar(_) | Expr::Exists(..) => vec![],
            Expr::Bin(a, _, b) => vec![a, b],
            Expr::Unary(_, a) | Expr::IsNull(a, _) | Expr::Cast(a, _) | Expr::Like(a, ..) => vec![a],
            Expr::Func(_, args) => args.iter().collect(),
            Expr::Case(whens, e) => whens.iter().flat_map(|(w, t)| [w, t]).chain(e.as_deref()).collect(),
            Expr::Between(a, b, c, _) => vec![a, b, c],
            Expr::InList(a, list, _) => std::iter::once(&**a).chain(list).collect(),
            Expr::Agg(_, _, a) => a.as_deref().into_iter().collect(),
            Expr::InSub(a, ..) | Expr::Quantified(a, ..) => vec![a],
        }
    }

    /// Visits every expression slot below and including this one, pre-order,
    /// descending into subqueries.
    pub fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Expr) -> bool) {
        if !f(self) {
            return;
        }
        match self {
            Expr::Col(..) | Expr::Lit(_) => {}
            Expr::Bin(a, _, b) => {
                a.visit_mut(f);
                b.visit_mut(f);
            }
            Expr::Unary(_, a) | Expr::IsNull(a, _) | Expr::Cast(a, _) | Expr::Like(a, ..) => a.visit_mut(f),
            Expr::Func(_, args) => args.iter_mut().for_each(|a| a.visit_mut(f)),
            Expr::Case(whens, e) => {
                for (w, t) in whens {
                    w.visit_mut(f);
                    t.visit_mut(f);
                }
                if let Some(e) = e {
                    e.visit_mut(f);
                }
            }
            Expr::Between(a, b, c, _) => [a, b, c].into_iter().for_each(|x| x.visit_mut(f)),
            Expr::InList(a, list, _) => {
                a.visit_mut(f);
                list.iter_mut().for_each(|x| x.visit_mut(f));
            }
            Expr::Agg(_, _, a) => {
                if let Some(a) = a {
                    a.visit_mut(f);
                }
            }
            Expr::Scalar(q) | Expr::Exists(q, _) => q.visit_exprs(f),
            Expr::InSub(a, q, _) | Expr::Quantified(a, _, _, q) => {
                a.visit_mut(f);
                q.visit_exprs(f);
            }
        }
    }

    /// The subqueries directly inside this expression (for the minimizer).
    pub fn subqueries_mut(&mut self) -> Vec<&mut Query> {
        match self {
            Expr::Scalar(q) | Expr::Exists(q, _) | Expr::InSub(_, q, _) | Expr::Quantified(_, _, _, q) => {
                vec![&mut **q]
            }
            _ => vec![],
        }
    }
}

fn list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T], sep: &str) -> fmt::Result {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{x}")?;
    }
    Ok(())
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let not = |n: bool| if n { "NOT " } else { "" };
        match self {
            Expr::Col(a, c) => write!(f, "{a}.{c}"),
            Expr::Lit(s) => f.write_str(s),
            Expr::Bin(a, op, b) => write!(f, "({a} {op} {b})"),
            Expr::Unary(op, a) => write!(f, "({op} {a})"),
            Expr::IsNull(a, n) => write!(f, "({a} IS {}NULL)", not(*n)),
            Expr::Func(name, args) => {
                write!(f, "{name}(")?;
                list(f, args, ", ")?;
                f.write_str(")")
            }
            Expr::Case(whens, e) => {
                f.write_str("CASE")?;
                for (w, t) in whens {
                    write!(f, " WHEN {w} THEN {t}")?;
                }
                if let Some(e) = e {
                    write!(f, " ELSE {e}")?;
                }
                f.write_str(" END")
            }
            Expr::Cast(a, ty) => write!(f, "CAST({a} AS {ty})"),
            Expr::Between(a, lo, hi, n) => write!(f, "({a} {}BETWEEN {lo} AND {hi})", not(*n)),
            Expr::InList(a, items, n) => {
                write!(f, "({a} {}IN (", not(*n))?;
                list(f, items, ", ")?;
                f.write_str("))")
            }
            Expr::Like(a, p, n) => write!(f, "({a} {}LIKE {})", not(*n), super::schema::quote(p)),
            Expr::Agg(name, distinct, arg) => match arg {
                None => write!(f, "{name}(*)"),
                Some(a) => write!(f, "{name}({}{a})", if *distinct { "DISTINCT " } else { "" }),
            },
            Expr::Scalar(q) => write!(f, "({q})"),
            Expr::InSub(a, q, n) => write!(f, "({a} {}IN ({q}))", not(*n)),
            Expr::Exists(q, n) => write!(f, "({}EXISTS ({q}))", not(*n)),
            Expr::Quantified(a, op, quant, q) => write!(f, "({a} {op} {quant} ({q}))"),
        }
    }
}

/// How a FROM item joins the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// The first item, or `, item` (an implicit cross join).
    Comma,
    Cross,
    Inner,
    Left,
    Right,
    Full,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Table(String),
    Derived(Box<Query>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct FromItem {
    pub join: JoinKind,
    pub source: Source,
    pub alias: String,
    /// The ON predicate of inner and outer joins.
    pub on: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub distinct: bool,
    /// Printed as `item AS x<i>`.
    pub items: Vec<Expr>,
    pub from: Vec<FromItem>,
    pub filter: Option<Expr>,
    pub group_by: Vec<Expr>,
    pub having: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Select(Select),
    /// `left op [ALL] right`.
    SetOp(Box<Body>, &'static str, bool, Box<Body>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderKey {
    /// 1-based output position.
    pub position: usize,
    pub desc: bool,
    /// Some(true) = NULLS FIRST, Some(false) = NULLS LAST.
    pub nulls_first: Option<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub body: Body,
    pub order_by: Vec<OrderKey>,
    pub limit: Option<u32>,
    pub offset: Option<u32>,
}

impl Query {
    pub fn select(s: Select) -> Query {
        Query { body: Body::Select(s), order_by: Vec::new(), limit: None, offset: None }
    }

    /// Visits every expression slot of the query, subqueries included.
    pub fn visit_exprs(&mut self, f: &mut dyn FnMut(&mut Expr) -> bool) {
        self.visit_selects(&mut |s| {
            for e in s.items.iter_mut().chain(s.filter.as_mut()).chain(&mut s.group_by).chain(s.having.as_mut()) {
                e.visit_mut(f);
            }
            for item in &mut s.from {
                if let Some(on) = &mut item.on {
                    on.visit_mut(f);
                }
            }
        });
    }

    /// Visits the SELECT blocks of this query's body and derived tables
    /// (not those inside expressions: `visit_exprs` reaches those).
    pub fn visit_selects(&mut self, f: &mut dyn FnMut(&mut Select)) {
        fn body(b: &mut Body, f: &mut dyn FnMut(&mut Select)) {
            match b {
                Body::Select(s) => {
                    for item in &mut s.from {
                        if let Source::Derived(q) = &mut item.source {
                            q.visit_selects(f);
                        }
                    }
                    f(s);
                }
                Body::SetOp(l, _, _, r) => {
                    body(l, f);
                    body(r, f);
                }
            }
        }
        body(&mut self.body, f);
    }
}

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.distinct { "SELECT DISTINCT " } else { "SELECT " })?;
        for (i, e) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{e} AS x{i}")?;
        }
        for (i, item) in self.from.iter().enumerate() {
            let source = match &item.source {
                Source::Table(t) => t.clone(),
                Source::Derived(q) => format!("({q})"),
            };
            let join = match (i, item.join) {
                (0, _) => " FROM ",
                (_, JoinKind::Comma) => ", ",
                (_, JoinKind::Cross) => " CROSS JOIN ",
                (_, JoinKind::Inner) => " JOIN ",
                (_, JoinKind::Left) => " LEFT JOIN ",
                (_, JoinKind::Right) => " RIGHT JOIN ",
                (_, JoinKind::Full) => " FULL JOIN ",
            };
            write!(f, "{join}{source} AS {}", item.alias)?;
            if i > 0 && !matches!(item.join, JoinKind::Comma | JoinKind::Cross) {
                write!(f, " ON {}", item.on.as_ref().unwrap_or(&Expr::Lit("true".into())))?;
            }
        }
        if let Some(w) = &self.filter {
            write!(f, " WHERE {w}")?;
        }
        if !self.group_by.is_empty() {
            f.write_str(" GROUP BY ")?;
            list(f, &self.group_by, ", ")?;
        }
        if let Some(h) = &self.having {
            write!(f, " HAVING {h}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Body::Select(s) => write!(f, "{s}"),
            Body::SetOp(l, op, all, r) => {
                let side = |b: &Body| if matches!(b, Body::SetOp(..)) { format!("({b})") } else { b.to_string() };
                write!(f, "{} {op}{} {}", side(l), if *all { " ALL" } else { "" }, side(r))
            }
        }
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.body)?;
        for (i, k) in self.order_by.iter().enumerate() {
            f.write_str(if i == 0 { " ORDER BY " } else { ", " })?;
            write!(f, "{}{}", k.position, if k.desc { " DESC" } else { "" })?;
            match k.nulls_first {
                Some(true) => f.write_str(" NULLS FIRST")?,
                Some(false) => f.write_str(" NULLS LAST")?,
                None => {}
            }
        }
        if let Some(n) = self.limit {
            write!(f, " LIMIT {n}")?;
        }
        if let Some(n) = self.offset {
            write!(f, " OFFSET {n}")?;
        }
        Ok(())
    }
}
