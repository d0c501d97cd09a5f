//! Random queries over a [`Schema`]: the statement shapes of issue 17 from
//! a small grammar, each part typed so that the query binds.
//!
//! ```text
//!  query   := body [ORDER BY positions [LIMIT n [OFFSET m]]]
//!  body    := select | body (UNION|INTERSECT|EXCEPT) [ALL] select   (same kinds, ≤ 3 arms)
//!  select  := SELECT [DISTINCT] items FROM from [WHERE pred]
//!           | SELECT keys, aggs FROM from [WHERE pred] [GROUP BY keys] [HAVING pred]
//!  from    := item ((, | CROSS JOIN | [LEFT|RIGHT|FULL] JOIN item ON eq [AND pred]))*
//!  item    := table | (select) AS d<n>                    (derived, uncorrelated)
//!  items   := expr | (SELECT agg FROM .. [WHERE ..])            (scalar subquery items)
//!  having  := agg op (key | lit) [AND|OR (count(*) > n | key IS [NOT] NULL)]
//!  pred    := ... | [NOT] EXISTS (sub) | x [NOT] IN (sub | sub set-op sub) | x op ANY|ALL (sub)
//!           | x op (SELECT agg FROM .. WHERE corr)        (sub: correlated or not)
//! ```
//!
//! Determinism: a query's answer must be the same on every correct
//! engine. Hence LIMIT only after ORDER BY (compare.rs allows any of the
//! rows tying at the cut), OFFSET only when the ORDER BY covers every
//! output column, no LIMIT inside subqueries, scalar subqueries always an
//! aggregate without GROUP BY (exactly one row), FULL JOIN only on
//! equalities (PostgreSQL's merge/hash-joinable restriction).

use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus;

use super::ast::{Body, Expr, FromItem, JoinKind, OrderKey, Query, Select, Source};
use super::schema::{Kind, Schema};

/// A column visible to an expression.
#[derive(Debug, Clone)]
pub struct ScopeCol {
    pub alias: String,
    pub name: String,
    pub kind: Kind,
    /// From an enclosing query (a correlated reference).
    pub outer: bool,
}

/// The generator's state for one query.
pub struct Gen<'a> {
    pub(super) rng: &'a mut Xoshiro256PlusPlus,
    schema: &'a Schema,
    aliases: usize,
    /// How many subqueries enclose the expression being generated.
    nesting: u32,
    /// An item may fail (division by zero): no LIMIT then.
    unguarded: bool,
}

/// Subqueries nest at most this deep.
const NESTING_MAX: u32 = 2;
/// Expression depth at the top level.
const DEPTH: u32 = 3;

impl<'a> Gen<'a> {
    pub fn new(rng: &'a mut Xoshiro256PlusPlus, schema: &'a Schema) -> Gen<'a> {
        Gen { rng, schema, aliases: 0, nesting: 0, unguarded: false }
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n.max(1))
    }

    pub fn chance(&mut self, k: u32, n: u32) -> bool {
        self.rng.random_ratio(k, n)
    }

    pub fn subqueries_allowed(&self) -> bool {
        self.nesting < NESTING_MAX
    }

    fn alias(&mut self, prefix: &str) -> String {
        self.aliases += 1;
        format!("{prefix}{}", self.aliases)
    }

    /// One random query.
    pub fn query(&mut self) -> Query {
        let (body, kinds) = match self.below(10) {
            0 | 1 => self.set_operation(),
            2..=4 => {
                let (s, kinds) = self.aggregate_select(&[]);
                (Body::Select(s), kinds)
            }
            _ => {
                let (s, kinds) = self.plain_select(&[], None);
                (Body::Select(s), kinds)
            }
        };
        let mut q = Query { body, order_by: Vec::new(), limit: None, offset: None };
        if self.chance(1, 2) {
            self.order(&mut q, kinds.len());
        }
        q
    }

    fn order(&mut self, q: &mut Query, columns: usize) {
        let mut positions: Vec<usize> = (1..=columns).collect();
        let total = self.chance(1, 2);
        let keys = if total { columns } else { 1 + self.below(columns) };
        for _ in 0..keys {
            let p = positions.remove(self.below(positions.len()));
            let nulls_first = [None, None, Some(true), Some(false)][self.below(4)];
            q.order_by.push(OrderKey { position: p, desc: self.chance(1, 2), nulls_first });
        }
        if self.chance(1, 2) && !self.unguarded {
            q.limit = Some(self.below(8) as u32);
            if total && self.chance(1, 2) {
                q.offset = Some(self.below(4) as u32);
            }
        }
    }

    fn set_operation(&mut self) -> (Body, Vec<Kind>) {
        let (left, kinds) = self.plain_select(&[], None);
        let (right, _) = self.plain_select(&[], Some(&kinds));
        let op = ["UNION", "INTERSECT", "EXCEPT"][self.below(3)];
        let mut body = Body::SetOp(Box::new(Body::Select(left)), op, self.chance(1, 2), Box::new(Body::Select(right)));
        // Now and then a third arm: `(a op b) op c`.
        if self.chance(1, 3) {
            let (third, _) = self.plain_select(&[], Some(&kinds));
            let op = ["UNION", "INTERSECT", "EXCEPT"][self.below(3)];
            body = Body::SetOp(Box::new(body), op, self.chance(1, 2), Box::new(Body::Select(third)));
        }
        (body, kinds)
    }

    /// SELECT [DISTINCT] items FROM .. WHERE ..; `kinds` fixes the items'.
    pub fn plain_select(&mut self, outer: &[ScopeCol], kinds: Option<&[Kind]>) -> (Select, Vec<Kind>) {
        let (from, scope) = self.from(outer);
        let kinds: Vec<Kind> = match kinds {
            Some(k) => k.to_vec(),
            None => (0..1 + self.below(4)).map(|_| self.any_kind()).collect(),
        };
        let mut items: Vec<Expr> = kinds.iter().map(|&k| self.item(k, &scope)).collect();
        // Errors must agree too: now and then a top-level item divides
        // without NULLIF (22012 when a divisor is 0). Only as a whole item
        // of the outermost query, and then no LIMIT: both engines evaluate
        // it on exactly the output rows.
        // The divisor is a column of a table: PostgreSQL folds `x / 0`
        // while planning and fails even when no row is output, also when a
        // derived table's column is a constant it pulls up.
        let tables: Vec<ScopeCol> = scope.iter().filter(|c| c.alias.starts_with('a')).cloned().collect();
        if self.nesting == 0
            && let Some(i) = kinds.iter().position(|k| *k == Kind::Int)
            && self.chance(1, 12)
            && let Some(divisor) = self.column(Kind::Int, &tables)
        {
            items[i] = Expr::bin(self.expr(Kind::Int, &scope, 1), "/", divisor);
            self.unguarded = true;
        }
        let filter = self.chance(3, 4).then(|| self.predicate(&scope, DEPTH));
        let distinct = self.chance(1, 6);
        (Select { distinct, items, from, filter, group_by: Vec::new(), having: None }, kinds)
    }

    /// A select item: an expression, or now and then a scalar subquery
    /// (correlated or not: run per row, through the executor's memo).
    fn item(&mut self, kind: Kind, scope: &[ScopeCol]) -> Expr {
        if kind != Kind::Bool && self.subqueries_allowed() && self.chance(1, 10) {
            self.nesting += 1;
            let e = self.scalar_subquery(kind, scope, true);
            self.nesting -= 1;
            return e;
        }
        self.expr(kind, scope, DEPTH - 1)
    }

    /// SELECT keys, aggregates FROM .. [WHERE] [GROUP BY keys] [HAVING].
    pub fn aggregate_select(&mut self, outer: &[ScopeCol]) -> (Select, Vec<Kind>) {
        let (from, scope) = self.from(outer);
        let filter = self.chance(1, 2).then(|| self.predicate(&scope, DEPTH - 1));
        let mut items = Vec::new();
        let mut kinds = Vec::new();
        let mut group_by = Vec::new();
        // PostgreSQL reads a constant GROUP BY key as a position (integers)
        // or rejects it: keys always mention one of this block's columns.
        let inner: Vec<ScopeCol> = scope.iter().filter(|c| !c.outer).cloned().collect();
        for _ in 0..self.below(3) {
            let kind = self.any_kind();
            let key = self.expr(kind, &inner, 1);
            if mentions_column(&key) && !group_by.iter().any(|(k, _)| *k == key) {
                group_by.push((key.clone(), kind));
                items.push(key);
                kinds.push(kind);
            }
        }
        for _ in 0..1 + self.below(3) {
            let kind = self.any_kind();
            items.push(self.aggregate(kind, &scope));
            kinds.push(kind);
        }
        let having = self.chance(1, 3).then(|| self.having(&scope, &group_by));
        let group_by = group_by.into_iter().map(|(k, _)| k).collect();
        (Select { distinct: self.chance(1, 8), items, from, filter, group_by, having }, kinds)
    }

    /// An aggregate whose result is of `kind`; its argument may read outer
    /// columns, even only outer ones (then it belongs to the outer query,
    /// SQL's rule).
    pub fn aggregate(&mut self, kind: Kind, scope: &[ScopeCol]) -> Expr {
        let distinct = self.chance(1, 5);
        // No subquery inside an argument: left out for an ndpdb limit. An
        // aggregate whose argument reads outer columns only inside a
        // subquery (`count(NOT EXISTS (.. outer.x ..))`) belongs to the
        // enclosing query; ndpdb's binder (`bind/aggregate.rs`,
        // `nearest_level`) does not look into the subquery for the level,
        // and refuses such an aggregate with 0A000
        // (`check_level_of_subquery_args`) rather than bind it here.
        let arg = |g: &mut Gen, k: Kind| {
            let nesting = std::mem::replace(&mut g.nesting, NESTING_MAX);
            let e = g.expr(k, scope, 1);
            g.nesting = nesting;
            Some(Box::new(e))
        };
        match kind {
            Kind::Int => match self.below(4) {
                0 => Expr::Agg("count", false, None),
                1 => {
                    let k = self.any_kind();
                    Expr::Agg("count", distinct, arg(self, k))
                }
                2 => Expr::Agg("sum", distinct, arg(self, Kind::Int)),
                _ => Expr::Agg(if self.chance(1, 2) { "min" } else { "max" }, false, arg(self, Kind::Int)),
            },
            Kind::Num | Kind::Float => match self.below(3) {
                0 => Expr::Agg("sum", distinct, arg(self, kind)),
                1 => {
                    let k = if kind == Kind::Num && self.chance(1, 2) { Kind::Int } else { kind };
                    Expr::Agg("avg", distinct, arg(self, k))
                }
                _ => Expr::Agg(if self.chance(1, 2) { "min" } else { "max" }, false, arg(self, kind)),
            },
            Kind::Bool => Expr::Agg(if self.chance(1, 2) { "bool_and" } else { "bool_or" }, false, arg(self, kind)),
            Kind::Date | Kind::Text => {
                Expr::Agg(if self.chance(1, 2) { "min" } else { "max" }, distinct, arg(self, kind))
            }
        }
    }

    fn having(&mut self, scope: &[ScopeCol], keys: &[(Expr, Kind)]) -> Expr {
        let kind = [Kind::Int, Kind::Int, Kind::Num, Kind::Text][self.below(4)];
        let agg = self.aggregate(kind, scope);
        let op = ["=", "<>", "<", "<=", ">", ">="][self.below(6)];
        let same: Vec<&Expr> = keys.iter().filter(|(_, k)| *k == kind).map(|(e, _)| e).collect();
        let other =
            if !same.is_empty() && self.chance(1, 2) { same[self.below(same.len())].clone() } else { self.lit(kind) };
        let cmp = Expr::bin(agg, op, other);
        // A condition on a key alone (no aggregate in it).
        if !keys.is_empty() && self.chance(1, 4) {
            let (key, _) = keys[self.below(keys.len())].clone();
            let on_key = Expr::IsNull(Box::new(key), self.chance(1, 2));
            return Expr::bin(cmp, if self.chance(1, 2) { "AND" } else { "OR" }, on_key);
        }
        if self.chance(1, 4) {
            let more = Expr::bin(Expr::Agg("count", false, None), ">", Expr::Lit(self.below(3).to_string()));
            Expr::bin(cmp, if self.chance(1, 2) { "AND" } else { "OR" }, more)
        } else {
            cmp
        }
    }

    fn table_item(&mut self) -> (Source, String, Vec<ScopeCol>) {
        let t = &self.schema.tables[self.below(self.schema.tables.len())];
        let alias = self.alias("a");
        let cols = t
            .columns
            .iter()
            .map(|c| ScopeCol { alias: alias.clone(), name: c.name.clone(), kind: c.ty.kind(), outer: false })
            .collect();
        (Source::Table(t.name.clone()), alias, cols)
    }

    fn derived_item(&mut self) -> (Source, String, Vec<ScopeCol>) {
        self.nesting += 1;
        let (s, kinds) = if self.chance(1, 2) { self.plain_select(&[], None) } else { self.aggregate_select(&[]) };
        self.nesting -= 1;
        let alias = self.alias("d");
        let cols = kinds
            .iter()
            .enumerate()
            .map(|(i, &kind)| ScopeCol { alias: alias.clone(), name: format!("x{i}"), kind, outer: false })
            .collect();
        (Source::Derived(Box::new(Query::select(s))), alias, cols)
    }

    /// The FROM list and the scope it gives (then the outer columns).
    fn from(&mut self, outer: &[ScopeCol]) -> (Vec<FromItem>, Vec<ScopeCol>) {
        let n = 1 + self.below(if self.nesting == 0 { 3 } else { 2 });
        let mut items = Vec::new();
        let mut scope: Vec<ScopeCol> = Vec::new();
        // JOIN binds tighter than a comma: ON sees the items since the last one.
        let mut segment = 0;
        for i in 0..n {
            let (source, alias, cols) =
                if self.nesting < NESTING_MAX && self.chance(1, 8) { self.derived_item() } else { self.table_item() };
            let join = if i == 0 { JoinKind::Comma } else { self.join_kind() };
            if join == JoinKind::Comma {
                segment = scope.len();
            }
            let on = match join {
                JoinKind::Comma | JoinKind::Cross => None,
                _ => self.join_condition(join, &scope[segment..], &cols, outer),
            };
            // No equality to join on: a cross join keeps the query valid.
            let join = if on.is_none() && i > 0 && join != JoinKind::Comma { JoinKind::Cross } else { join };
            items.push(FromItem { join, source, alias, on });
            scope.extend(cols);
        }
        // The enclosing blocks' columns, of every level out.
        let outer_cols = outer.iter().map(|c| ScopeCol { outer: true, ..c.clone() });
        scope.extend(outer_cols);
        (items, scope)
    }

    fn join_kind(&mut self) -> JoinKind {
        [
            JoinKind::Comma,
            JoinKind::Cross,
            JoinKind::Inner,
            JoinKind::Inner,
            JoinKind::Left,
            JoinKind::Right,
            JoinKind::Full,
        ][self.below(7)]
    }

    /// `left.x = right.y [AND ...]`; None when no kinds match.
    fn join_condition(
        &mut self,
        join: JoinKind,
        left: &[ScopeCol],
        right: &[ScopeCol],
        outer: &[ScopeCol],
    ) -> Option<Expr> {
        let pairs: Vec<(&ScopeCol, &ScopeCol)> =
            left.iter().flat_map(|l| right.iter().filter(move |r| r.kind == l.kind).map(move |r| (l, r))).collect();
        if pairs.is_empty() {
            return None;
        }
        let (l, r) = pairs[self.below(pairs.len())];
        let eq = Expr::bin(Expr::Col(l.alias.clone(), l.name.clone()), "=", Expr::Col(r.alias.clone(), r.name.clone()));
        if join == JoinKind::Full || self.chance(1, 2) {
            return Some(eq);
        }
        let both: Vec<ScopeCol> = left.iter().chain(right).cloned().chain(outer.iter().cloned()).collect();
        let extra = self.predicate(&both, 1);
        Some(Expr::bin(eq, "AND", extra))
    }

    /// EXISTS, IN, ANY/ALL or a compared scalar aggregate over a subquery
    /// that sees `scope` as its outer columns.
    pub fn subquery_predicate(&mut self, scope: &[ScopeCol]) -> Expr {
        self.nesting += 1;
        let e = match self.below(4) {
            0 => {
                let (mut s, _) = self.plain_select(scope, Some(&[Kind::Int]));
                s.items = vec![Expr::Lit("1".into())];
                Expr::Exists(Box::new(Query::select(s)), self.chance(1, 3))
            }
            1 => {
                let kind = self.any_kind();
                let (s, _) = self.plain_select(scope, Some(&[kind]));
                let mut q = Query::select(s);
                // A set operation as the subquery (each arm may be correlated).
                if self.chance(1, 5) {
                    let (right, _) = self.plain_select(scope, Some(&[kind]));
                    let op = ["UNION", "INTERSECT", "EXCEPT"][self.below(3)];
                    q.body = Body::SetOp(Box::new(q.body), op, self.chance(1, 2), Box::new(Body::Select(right)));
                }
                let x = self.expr(kind, scope, 1);
                Expr::InSub(Box::new(x), Box::new(q), self.chance(1, 3))
            }
            2 => {
                let kind = [Kind::Int, Kind::Num, Kind::Text, Kind::Date][self.below(4)];
                let (s, _) = self.plain_select(scope, Some(&[kind]));
                let x = self.expr(kind, scope, 1);
                let op = ["=", "<>", "<", ">="][self.below(4)];
                let quant = if self.chance(1, 2) { "ANY" } else { "ALL" };
                Expr::Quantified(Box::new(x), op, quant, Box::new(Query::select(s)))
            }
            _ => {
                let kind = [Kind::Int, Kind::Num, Kind::Text, Kind::Date, Kind::Float][self.below(5)];
                let scalar = self.scalar_subquery(kind, scope, false);
                let op = ["=", "<>", "<", "<=", ">", ">="][self.below(6)];
                Expr::bin(self.expr(kind, scope, 1), op, scalar)
            }
        };
        self.nesting -= 1;
        e
    }

    /// `(SELECT agg(..) FROM .. [WHERE ..])`: always exactly one row. With
    /// `own`, the aggregate reads no outer column: one over only outer
    /// columns is the enclosing query's (SQL's rule), and the subquery then
    /// returns a row per row of its FROM, an error (21000) that depends on
    /// whether an engine evaluates it at all (PostgreSQL skips a derived
    /// table's unused column, a LIMIT 0, the rest of an ALL once FALSE).
    fn scalar_subquery(&mut self, kind: Kind, outer: &[ScopeCol], own: bool) -> Expr {
        let (from, scope) = self.from(outer);
        let filter = self.chance(3, 4).then(|| self.predicate(&scope, 1));
        let inner: Vec<ScopeCol> = scope.iter().filter(|c| !own || !c.outer).cloned().collect();
        let item = self.aggregate(kind, &inner);
        let s = Select { distinct: false, items: vec![item], from, filter, group_by: Vec::new(), having: None };
        Expr::Scalar(Box::new(Query::select(s)))
    }
}

/// Whether a column occurs in `e` (outside subqueries).
fn mentions_column(e: &Expr) -> bool {
    matches!(e, Expr::Col(..)) || e.children().into_iter().any(mentions_column)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn queries_are_deterministic_and_varied() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let schema = super::super::schema::generate(&mut rng, 3, 10);
        let gen_all = |seed| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            (0..200).map(|_| Gen::new(&mut rng, &schema).query().to_string()).collect::<Vec<_>>()
        };
        let a = gen_all(11);
        assert_eq!(a, gen_all(11));
        for needle in [
            "JOIN",
            "GROUP BY",
            "EXISTS",
            " IN (SELECT",
            "UNION",
            "ORDER BY",
            "LIKE",
            "CASE",
            "HAVING",
            "ILIKE",
            "DISTINCT FROM",
        ] {
            assert!(a.iter().any(|q| q.contains(needle)), "no query with {needle}");
        }
    }
}
