//! Planting witnesses: for each query, k joined tuples that pass its WHERE.
//!
//! ```text
//!   1a:  ct.kind = 'production companies'      it.info = 'top 250 rank'
//!        ct.id = mc.company_type_id            it.id = mi_idx.info_type_id
//!        t.id = mc.movie_id = mi_idx.movie_id
//!
//!   join classes        {ct.id, mc.company_type_id}  {it.id, mi_idx.info_type_id}
//!                       {t.id, mc.movie_id, mi_idx.movie_id}
//!   dimension aliases   ct -> company_type row 2, it -> info_type row 112 (IMDB's)
//!   planted rows        t (title), mc (movie_companies), mi_idx (movie_info_idx),
//!                       each column a filter reads solved (solve.rs)
//!   references          mc.movie_id = mi_idx.movie_id -> Planted(t),
//!                       mc.company_type_id -> Fixed(2), mi_idx.info_type_id -> Fixed(112)
//! ```
//!
//! The join equalities are merged into classes of alias columns. A class
//! that holds an alias's `id` takes that alias's row; one that holds only
//! foreign keys (`mc.movie_id = mi_idx.movie_id` without `t`) gets an
//! implicit row of the referenced table. Dimension tables (kind_type,
//! info_type, ...) are never planted: their alias takes an IMDB row that
//! satisfies its filters. Rows of tables without foreign keys (keyword,
//! company_name, char_name, name) are shared when an earlier planted row
//! already satisfies the alias's filters, so `keyword = 'sequel'` is one row.
//!
//! A planted row's `id` and unconstrained columns are filled when the
//! tables are written (write.rs); its filters are checked again then.
//! A query that cannot be planted (a filter no value satisfies, a join the
//! planter does not understand) is a [`WitnessFailure`]; all of them are
//! reported together.

use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus as Rng;

use super::pred::{Atom, Pred, Value};
use super::query::{AliasColumn, QuerySpec};
use super::schema::Schema;
use super::solve::solve;
use super::vocab::dimension;

/// `id` or a foreign key: values the layout decides, not the filters.
fn is_key(table: &super::schema::Table, c: usize) -> bool {
    table.columns[c].name == "id" || table.columns[c].references.is_some()
}

/// A row whose id is known now (a dimension row) or when the tables are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowRef {
    Planted(usize),
    Fixed(i64),
}

/// A planted row's column: a value, or the id of another row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Value(Value),
    Ref(RowRef),
}

#[derive(Debug, Clone)]
pub struct PlantedRow {
    pub table: usize,
    /// `None`: a base value, made when the table is written.
    pub cells: Vec<Option<Cell>>,
    /// Filters the finished row must satisfy, with the query they come from.
    pub checks: Vec<(usize, Pred)>,
}

/// A query the generator could not plant, with the conjunct to blame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessFailure {
    pub query: String,
    pub conjunct: String,
    pub reason: String,
}

/// Every planted row of every query.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub rows: Vec<PlantedRow>,
}

/// Plants `k` witnesses for each query.
pub fn plant(schema: &Schema, queries: &[QuerySpec], k: usize, rng: &mut Rng) -> Result<Plan, Vec<WitnessFailure>> {
    let mut plan = Plan::default();
    let mut failures = Vec::new();
    for (qi, q) in queries.iter().enumerate() {
        for _ in 0..k {
            let mut planter = Planter { schema, q, qi, plan: &mut plan, rng };
            if let Err(f) = planter.witness() {
                failures.push(f);
                break;
            }
        }
    }
    if failures.is_empty() { Ok(plan) } else { Err(failures) }
}

struct Planter<'a> {
    schema: &'a Schema,
    q: &'a QuerySpec,
    qi: usize,
    plan: &'a mut Plan,
    rng: &'a mut Rng,
}

impl Planter<'_> {
    fn fail(&self, conjunct: String, reason: impl Into<String>) -> WitnessFailure {
        WitnessFailure { query: self.q.name.clone(), conjunct, reason: reason.into() }
    }

    fn column_name(&self, (a, c): AliasColumn) -> String {
        let alias = &self.q.aliases[a];
        format!("{}.{}", alias.name, self.schema.tables[alias.table].columns[c].name)
    }

    /// One joined witness tuple.
    fn witness(&mut self) -> Result<(), WitnessFailure> {
        let classes = self.classes();
        let mut refs = Vec::with_capacity(self.q.aliases.len());
        for a in 0..self.q.aliases.len() {
            let r = self.alias_row(a, &classes)?;
            refs.push(r);
        }
        for class in &classes {
            let value = self.class_value(class, &refs)?;
            for &(a, c) in class {
                if self.is_id((a, c)) {
                    continue;
                }
                match refs[a] {
                    RowRef::Planted(i) => self.plan.rows[i].cells[c] = Some(Cell::Ref(value)),
                    RowRef::Fixed(_) => {
                        return Err(self
                            .fail(self.column_name((a, c)), "joins a column of a dimension table other than its id"));
                    }
                }
            }
        }
        Ok(())
    }

    fn is_id(&self, (a, c): AliasColumn) -> bool {
        self.schema.tables[self.q.aliases[a].table].columns[c].name == "id"
    }

    /// The join equalities merged into classes (union-find over alias columns).
    fn classes(&self) -> Vec<Vec<AliasColumn>> {
        let mut nodes: Vec<AliasColumn> = Vec::new();
        let mut parent: Vec<usize> = Vec::new();
        let index = |n: AliasColumn, nodes: &mut Vec<AliasColumn>, parent: &mut Vec<usize>| {
            nodes.iter().position(|x| *x == n).unwrap_or_else(|| {
                nodes.push(n);
                parent.push(parent.len());
                nodes.len() - 1
            })
        };
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        for &(l, r) in &self.q.joins {
            let (li, ri) = (index(l, &mut nodes, &mut parent), index(r, &mut nodes, &mut parent));
            let (lr, rr) = (root(&mut parent, li), root(&mut parent, ri));
            parent[lr] = rr;
        }
        let mut classes: Vec<(usize, Vec<AliasColumn>)> = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            let r = root(&mut parent, i);
            match classes.iter_mut().find(|(root, _)| *root == r) {
                Some((_, members)) => members.push(*node),
                None => classes.push((r, vec![*node])),
            }
        }
        classes.into_iter().map(|(_, m)| m).collect()
    }

    /// The alias's filters plus `IS NOT NULL` on each column its SELECT reads.
    fn preds(&self, a: usize) -> Vec<Pred> {
        let mut preds = self.q.filters[a].clone();
        for &(oa, c) in &self.q.outputs {
            if oa == a {
                let column = self.schema.tables[self.q.aliases[a].table].columns[c].name.clone();
                let text = format!("{} IS NOT NULL (read by the SELECT list)", self.column_name((a, c)));
                preds.push(Pred::Atom { column, atom: Atom::IsNull { negated: true }, text });
            }
        }
        preds
    }

    /// The row alias `a` stands for: a dimension row, a shared row, or a new one.
    fn alias_row(&mut self, a: usize, classes: &[Vec<AliasColumn>]) -> Result<RowRef, WitnessFailure> {
        let t = self.q.aliases[a].table;
        let table = &self.schema.tables[t];
        let preds = self.preds(a);
        let all = || preds.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(" AND ");
        if let Some(dim) = dimension(&table.name) {
            let fits: Vec<i64> = (1..=dim.rows.len() as i64)
                .filter(|id| {
                    let lookup = |c: &str| match c {
                        "id" => Value::Int(*id),
                        c if c == dim.column => Value::Text(dim.rows[*id as usize - 1].to_string()),
                        _ => Value::Null,
                    };
                    preds.iter().all(|p| p.eval(&lookup) == Some(true))
                })
                .collect();
            if fits.is_empty() {
                return Err(self.fail(all(), format!("no row of IMDB's {} satisfies it", table.name)));
            }
            return Ok(RowRef::Fixed(fits[self.rng.random_range(0..fits.len())]));
        }
        let mut read = Vec::new();
        preds.iter().for_each(|p| p.columns(&mut read));
        if let Some(key) = read.iter().find(|c| table.column(c).is_some_and(|i| is_key(table, i))) {
            return Err(self.fail(
                all(),
                format!("filters the key column {}.{key}; ids are laid out later", self.q.aliases[a].name),
            ));
        }
        for class in classes {
            for &(ca, c) in class {
                if ca == a && read.contains(&table.columns[c].name.as_str()) {
                    return Err(
                        self.fail(all(), format!("filters {}, which a join also binds", self.column_name((ca, c))))
                    );
                }
            }
        }
        let values = solve(table, &preds, self.rng).map_err(|u| self.fail(u.conjunct, u.reason))?;
        let checks: Vec<(usize, Pred)> = preds.into_iter().map(|p| (self.qi, p)).collect();
        let shareable = table.columns.iter().all(|c| c.references.is_none());
        if shareable && let Some(i) = self.shared_row(t, &checks) {
            self.plan.rows[i].checks.extend(checks);
            return Ok(RowRef::Planted(i));
        }
        let cells = values.into_iter().map(|v| v.map(Cell::Value)).collect();
        self.plan.rows.push(PlantedRow { table: t, cells, checks });
        Ok(RowRef::Planted(self.plan.rows.len() - 1))
    }

    /// An earlier planted row of `t` whose set columns already pass `checks`.
    fn shared_row(&self, t: usize, checks: &[(usize, Pred)]) -> Option<usize> {
        let table = &self.schema.tables[t];
        self.plan.rows.iter().position(|r| {
            r.table == t
                && !r.checks.is_empty()
                && checks.iter().all(|(_, p)| {
                    let mut read = Vec::new();
                    p.columns(&mut read);
                    let set = |c: &str| table.column(c).and_then(|i| r.cells[i].as_ref());
                    read.iter().all(|c| matches!(set(c), Some(Cell::Value(_))))
                        && p.eval(&|c: &str| match set(c) {
                            Some(Cell::Value(v)) => v.clone(),
                            _ => Value::Null,
                        }) == Some(true)
                })
        })
    }

    /// The row a join class's columns all name.
    fn class_value(&mut self, class: &[AliasColumn], refs: &[RowRef]) -> Result<RowRef, WitnessFailure> {
        let names = || class.iter().map(|m| self.column_name(*m)).collect::<Vec<_>>().join(" = ");
        let ids: Vec<usize> = class.iter().filter(|m| self.is_id(**m)).map(|m| m.0).collect();
        match ids.as_slice() {
            [a] => return Ok(refs[*a]),
            [] => {}
            _ => return Err(self.fail(names(), "joins the keys of two rows; the planter cannot make them equal")),
        }
        let mut target = None;
        for &(a, c) in class {
            let r = self.schema.tables[self.q.aliases[a].table].columns[c].references;
            if r.is_none() || (target.is_some() && target != r) {
                return Err(self.fail(names(), "joins columns that are not foreign keys to one table"));
            }
            target = r;
        }
        let t = target.unwrap_or_default();
        if let Some(dim) = dimension(&self.schema.tables[t].name) {
            return Ok(RowRef::Fixed(self.rng.random_range(1..=dim.rows.len() as i64)));
        }
        let n = self.schema.tables[t].columns.len();
        self.plan.rows.push(PlantedRow { table: t, cells: vec![None; n], checks: Vec::new() });
        Ok(RowRef::Planted(self.plan.rows.len() - 1))
    }
}
