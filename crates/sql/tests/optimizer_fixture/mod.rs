//! Fixtures of the optimizer tests: a catalog with statistics, plan
//! builders, and a row-at-a-time reference interpreter of plans.
//!
//! The interpreter is deliberately naive (nested loops, subqueries run per
//! row, SQL's three-valued logic on `Value`s) so that it can judge whether a
//! rewrite kept a plan's result: the original plan (subqueries and all) and
//! the optimized one must return the same multiset of rows. It honours the
//! physical choices (hash keys plus the residual condition) and every join
//! kind, so a wrong key split or a lost condition shows up.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;

use ndpdb_sql::catalog::{ColumnDef, ColumnStats, IndexDef, MemCatalog, TableDef, TableStats};
use ndpdb_sql::plan::{
    AggFunc, BinaryOp, Expr, Field, Function, JoinAlgorithm, JoinKind, Node, Plan, SubqueryKind, UnaryOp,
};
use ndpdb_sql::types::{DataType, Value};

pub const I: DataType = DataType::Int64;

/// A deterministic generator (xorshift64*), so the tests need no seed
/// plumbing.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A table of Int64 columns; `nullable[i]` says whether column i may be NULL.
pub fn table(id: u32, name: &str, cols: &[&str], not_null: &[bool]) -> TableDef {
    TableDef {
        id,
        name: name.into(),
        columns: cols
            .iter()
            .enumerate()
            .map(|(i, c)| ColumnDef {
                name: (*c).into(),
                ty: I,
                not_null: not_null.get(i).copied().unwrap_or(false),
                default: None,
            })
            .collect(),
        primary_key: None,
        unique: vec![],
        indexes: vec![],
        stats: None,
    }
}

pub fn with_stats(mut t: TableDef, rows: f64, distinct: &[f64]) -> TableDef {
    let columns = distinct
        .iter()
        .map(|&d| ColumnStats { distinct: d, null_frac: 0.0, mcv: vec![], histogram: vec![], avg_width: 8.0 })
        .collect();
    t.stats = Some(Arc::new(TableStats { rows, columns }));
    t
}

pub fn with_index(mut t: TableDef, name: &str, cols: &[usize], unique: bool) -> TableDef {
    t.indexes.push(Arc::new(IndexDef { name: name.into(), table: t.name.clone(), columns: cols.to_vec(), unique }));
    t
}

pub fn catalog(tables: Vec<TableDef>) -> MemCatalog {
    let mut c = MemCatalog::default();
    for t in tables {
        c.tables.insert(t.name.clone(), Arc::new(t));
    }
    c
}

/// A scan of every column of `name`, as the binder builds it.
pub fn scan(cat: &MemCatalog, name: &str) -> Plan {
    let t = cat.tables[name].clone();
    let fields: Vec<Field> = t
        .columns
        .iter()
        .map(|c| Field { name: c.name.clone(), qualifier: Some(name.into()), ty: c.ty, nullable: !c.not_null })
        .collect();
    let columns = (0..t.columns.len()).collect();
    Plan::new(
        Node::Scan { table: t, columns, filter: None, emit_vid: false, access: ndpdb_sql::plan::Access::Unchosen },
        Arc::new(fields),
    )
}

pub fn col(i: usize) -> Expr {
    Expr::column(i, I)
}

pub fn outer(i: usize) -> Expr {
    Expr::Outer { depth: 1, index: i, ty: I }
}

pub fn int(v: i64) -> Expr {
    Expr::literal(Value::Int64(v))
}

pub fn bin(op: BinaryOp, a: Expr, b: Expr) -> Expr {
    let ty = if op.is_comparison() || matches!(op, BinaryOp::And | BinaryOp::Or) { DataType::Bool } else { I };
    Expr::binary(op, a, b, ty)
}

pub fn eq(a: Expr, b: Expr) -> Expr {
    bin(BinaryOp::Eq, a, b)
}

pub fn and(parts: Vec<Expr>) -> Expr {
    parts.into_iter().reduce(Expr::and).expect("at least one conjunct")
}

pub fn filter(input: Plan, predicate: Expr) -> Plan {
    let schema = input.schema.clone();
    Plan::new(Node::Filter { input: Box::new(input), predicate }, schema)
}

pub fn join(left: Plan, right: Plan, kind: JoinKind, on: Option<Expr>) -> Plan {
    let null_left = matches!(kind, JoinKind::Right | JoinKind::Full);
    let null_right = matches!(kind, JoinKind::Left | JoinKind::Full | JoinKind::Single);
    let mut fields: Vec<Field> =
        left.schema.iter().map(|f| Field { nullable: f.nullable || null_left, ..f.clone() }).collect();
    match kind {
        JoinKind::Semi | JoinKind::Anti => {}
        JoinKind::Mark => {
            fields.push(Field { name: "mark".into(), qualifier: None, ty: DataType::Bool, nullable: true })
        }
        _ => fields.extend(right.schema.iter().map(|f| Field { nullable: f.nullable || null_right, ..f.clone() })),
    }
    let node =
        Node::Join { left: Box::new(left), right: Box::new(right), kind, on, algorithm: JoinAlgorithm::Unchosen };
    Plan::new(node, Arc::new(fields))
}

/// Project of columns and expressions, named `c0..`.
pub fn project(input: Plan, exprs: Vec<Expr>) -> Plan {
    let fields = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| match e {
            Expr::Column { index, .. } => input.schema[*index].clone(),
            _ => Field { name: format!("c{i}"), qualifier: None, ty: e.ty(), nullable: true },
        })
        .collect();
    Plan::new(Node::Project { input: Box::new(input), exprs }, Arc::new(fields))
}

pub fn aggregate(input: Plan, group_by: Vec<Expr>, aggs: Vec<(AggFunc, Option<Expr>)>) -> Plan {
    let mut fields: Vec<Field> = group_by
        .iter()
        .enumerate()
        .map(|(i, e)| Field { name: format!("g{i}"), qualifier: None, ty: e.ty(), nullable: true })
        .collect();
    let aggregates: Vec<ndpdb_sql::plan::AggregateExpr> = aggs
        .into_iter()
        .map(|(func, arg)| ndpdb_sql::plan::AggregateExpr { func, arg, distinct: false, filter: None, ty: I })
        .collect();
    fields.extend(aggregates.iter().enumerate().map(|(i, _)| Field {
        name: format!("a{i}"),
        qualifier: None,
        ty: I,
        nullable: true,
    }));
    Plan::new(Node::Aggregate { input: Box::new(input), group_by, aggregates }, Arc::new(fields))
}

pub fn subquery(kind: SubqueryKind, plan: Plan) -> Expr {
    let ty = if matches!(kind, SubqueryKind::Scalar) { plan.schema[0].ty } else { DataType::Bool };
    Expr::Subquery { kind, plan: Box::new(plan), ty }
}

/// Every node of a plan, pre-order.
pub fn nodes(plan: &Plan) -> Vec<&Plan> {
    let mut out = vec![plan];
    for c in plan.children() {
        out.extend(nodes(c));
    }
    out
}

/// Random rows for `tables`: values in `0..domain`, about one in `null_one_in` NULL
/// where the column allows it; a column named `id` numbers the rows (a key).
pub fn random_data(cat: &MemCatalog, rows: usize, domain: u64, null_one_in: u64, rng: &mut Rng) -> Data {
    let mut data = HashMap::new();
    for t in cat.tables.values() {
        let rows: Vec<Vec<Value>> = (0..rows)
            .map(|row| {
                t.columns
                    .iter()
                    .map(|c| {
                        if c.name == "id" {
                            Value::Int64(row as i64)
                        } else if !c.not_null && rng.below(null_one_in) == 0 {
                            Value::Null
                        } else {
                            Value::Int64(rng.below(domain) as i64)
                        }
                    })
                    .collect()
            })
            .collect();
        data.insert(t.name.clone(), rows);
    }
    data
}

pub type Data = HashMap<String, Vec<Vec<Value>>>;
pub type Row = Vec<Value>;

/// Runs `plan` on `data`; rows sorted (a multiset to compare).
pub fn run_sorted(plan: &Plan, data: &Data) -> Vec<Row> {
    let mut rows = run(plan, data, &[]);
    rows.sort_by_key(|r| format!("{r:?}"));
    rows
}

/// `generate_series` by its definition (no zero step in these plans).
fn series(plan: &Plan, args: [Value; 3]) -> Vec<Row> {
    let int = |v: &Value| match v {
        Value::Int16(x) => Some(i128::from(*x)),
        Value::Int32(x) => Some(i128::from(*x)),
        Value::Int64(x) => Some(i128::from(*x)),
        _ => None,
    };
    let (Some(a), Some(b), Some(s)) = (int(&args[0]), int(&args[1]), int(&args[2])) else { return vec![] };
    let wide = plan.schema[0].ty == DataType::Int64;
    let mut out = Vec::new();
    let mut v = a;
    while (s > 0 && v <= b) || (s < 0 && v >= b) {
        out.push(vec![if wide { Value::Int64(v as i64) } else { Value::Int32(v as i32) }]);
        v += s;
    }
    out
}

pub fn run(plan: &Plan, data: &Data, outer: &[Row]) -> Vec<Row> {
    let ev = |e: &Expr, row: &Row| eval(e, row, data, outer);
    match &plan.node {
        Node::Scan { table, columns, filter, .. } => data[&table.name]
            .iter()
            .map(|r| columns.iter().map(|&c| r[c].clone()).collect::<Row>())
            .filter(|r| filter.as_ref().is_none_or(|f| truth(&ev(f, r)) == Some(true)))
            .collect(),
        Node::Values { rows } => rows.iter().map(|r| r.iter().map(|e| ev(e, &vec![])).collect()).collect(),
        Node::Series { start, stop, step } => series(plan, [start, stop, step].map(|e| ev(e, &vec![]))),
        Node::Filter { input, predicate } => {
            run(input, data, outer).into_iter().filter(|r| truth(&ev(predicate, r)) == Some(true)).collect()
        }
        Node::Project { input, exprs } => {
            run(input, data, outer).iter().map(|r| exprs.iter().map(|e| ev(e, r)).collect()).collect()
        }
        Node::Join { left, right, kind, on, algorithm } => {
            let (l, r) = (run(left, data, outer), run(right, data, outer));
            join_rows(&l, &r, *kind, on.as_ref(), algorithm, right.schema.len(), data, outer)
        }
        Node::Aggregate { input, group_by, aggregates } => {
            let rows = run(input, data, outer);
            let mut groups: Vec<(Row, Vec<Row>)> = Vec::new();
            for r in rows {
                let key: Row = group_by.iter().map(|e| ev(e, &r)).collect();
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, members)) => members.push(r),
                    None => groups.push((key, vec![r])),
                }
            }
            if group_by.is_empty() && groups.is_empty() {
                groups.push((vec![], vec![]));
            }
            groups
                .into_iter()
                .map(|(mut key, members)| {
                    for a in aggregates {
                        let vals: Vec<Value> = members
                            .iter()
                            .map(|m| a.arg.as_ref().map_or(Value::Int64(1), |e| ev(e, m)))
                            .filter(|v| !v.is_null())
                            .collect();
                        key.push(agg(a.func, &vals));
                    }
                    key
                })
                .collect()
        }
        Node::Distinct { input } => {
            let mut seen: Vec<Row> = Vec::new();
            for r in run(input, data, outer) {
                if !seen.contains(&r) {
                    seen.push(r);
                }
            }
            seen
        }
        Node::Sort { input, .. } | Node::Limit { input, .. } => run(input, data, outer),
        Node::SetOp { left, right, .. } => {
            let mut l = run(left, data, outer);
            l.extend(run(right, data, outer));
            l
        }
    }
}

fn agg(func: AggFunc, vals: &[Value]) -> Value {
    let ints: Vec<i64> = vals.iter().filter_map(|v| if let Value::Int64(x) = v { Some(*x) } else { None }).collect();
    match func {
        AggFunc::CountStar | AggFunc::Count => Value::Int64(vals.len() as i64),
        _ if ints.is_empty() => Value::Null,
        AggFunc::Sum => Value::Int64(ints.iter().sum()),
        AggFunc::Min => Value::Int64(*ints.iter().min().unwrap_or(&0)),
        AggFunc::Max => Value::Int64(*ints.iter().max().unwrap_or(&0)),
        AggFunc::Avg => Value::Int64(ints.iter().sum::<i64>() / ints.len() as i64),
        AggFunc::BoolAnd | AggFunc::BoolOr => Value::Null,
    }
}

#[allow(clippy::too_many_arguments)]
fn join_rows(
    l: &[Row],
    r: &[Row],
    kind: JoinKind,
    on: Option<&Expr>,
    algorithm: &JoinAlgorithm,
    right_width: usize,
    data: &Data,
    outer: &[Row],
) -> Vec<Row> {
    let matches = |a: &Row, b: &Row| -> Option<bool> {
        let pair: Row = a.iter().chain(b.iter()).cloned().collect();
        let mut result = Some(true);
        if let JoinAlgorithm::Hash { left_keys, right_keys, .. } = algorithm {
            for (x, y) in left_keys.iter().zip(right_keys) {
                let (x, y) = (eval(x, a, data, outer), eval(y, b, data, outer));
                if x.is_null() || y.is_null() || x != y {
                    return Some(false);
                }
            }
        }
        if let Some(on) = on {
            result = truth(&eval(on, &pair, data, outer));
        }
        result
    };
    let nulls = |n: usize| vec![Value::Null; n];
    let mut out = Vec::new();
    let mut right_matched = vec![false; r.len()];
    for a in l {
        let mut any = false;
        let mut unknown = false;
        let mut matched_rows = 0;
        for (j, b) in r.iter().enumerate() {
            match matches(a, b) {
                Some(true) => {
                    any = true;
                    right_matched[j] = true;
                    matched_rows += 1;
                    if matches!(
                        kind,
                        JoinKind::Inner | JoinKind::Left | JoinKind::Right | JoinKind::Full | JoinKind::Single
                    ) {
                        out.push(a.iter().chain(b.iter()).cloned().collect());
                    }
                }
                Some(false) => {}
                None => unknown = true,
            }
        }
        assert!(
            kind != JoinKind::Single || matched_rows <= 1,
            "more than one row returned by a subquery used as an expression"
        );
        match kind {
            JoinKind::Left | JoinKind::Full | JoinKind::Single if !any => {
                out.push(a.iter().cloned().chain(nulls(right_width)).collect())
            }
            JoinKind::Semi if any => out.push(a.clone()),
            JoinKind::Anti if !any => out.push(a.clone()),
            JoinKind::Mark => {
                let m = if any {
                    Value::Bool(true)
                } else if unknown {
                    Value::Null
                } else {
                    Value::Bool(false)
                };
                out.push(a.iter().cloned().chain([m]).collect());
            }
            _ => {}
        }
    }
    if matches!(kind, JoinKind::Right | JoinKind::Full) {
        let lw = l.first().map_or(0, |x| x.len());
        let _ = lw;
        for (j, b) in r.iter().enumerate() {
            if !right_matched[j] {
                let width = l.first().map_or(0, Vec::len);
                out.push(nulls(width).into_iter().chain(b.iter().cloned()).collect());
            }
        }
    }
    out
}

fn truth(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int64(x) => Some(*x),
        Value::Int32(x) => Some(i64::from(*x)),
        _ => None,
    }
}

pub fn eval(e: &Expr, row: &Row, data: &Data, outer: &[Row]) -> Value {
    let ev = |x: &Expr| eval(x, row, data, outer);
    match e {
        Expr::Column { index, .. } => row[*index].clone(),
        Expr::Outer { depth, index, .. } => outer[outer.len() - depth][*index].clone(),
        Expr::Literal { value, .. } => value.clone(),
        Expr::Param { .. } => Value::Null,
        Expr::Cast { expr, .. } => ev(expr),
        Expr::Unary { op, expr, .. } => {
            let v = ev(expr);
            match op {
                UnaryOp::Not => truth(&v).map_or(Value::Null, |b| Value::Bool(!b)),
                UnaryOp::IsNull => Value::Bool(v.is_null()),
                UnaryOp::IsNotNull => Value::Bool(!v.is_null()),
                UnaryOp::IsFalse => Value::Bool(truth(&v) == Some(false)),
                UnaryOp::IsTrue => Value::Bool(truth(&v) == Some(true)),
                UnaryOp::IsNotTrue => Value::Bool(truth(&v) != Some(true)),
                UnaryOp::IsNotFalse => Value::Bool(truth(&v) != Some(false)),
                UnaryOp::Neg => int_of(&v).map_or(Value::Null, |x| Value::Int64(-x)),
            }
        }
        Expr::Binary { op: BinaryOp::And, left, right, .. } => match (truth(&ev(left)), truth(&ev(right))) {
            (Some(false), _) | (_, Some(false)) => Value::Bool(false),
            (Some(true), Some(true)) => Value::Bool(true),
            _ => Value::Null,
        },
        Expr::Binary { op: BinaryOp::Or, left, right, .. } => match (truth(&ev(left)), truth(&ev(right))) {
            (Some(true), _) | (_, Some(true)) => Value::Bool(true),
            (Some(false), Some(false)) => Value::Bool(false),
            _ => Value::Null,
        },
        Expr::Binary { op, left, right, .. } => {
            let (Some(a), Some(b)) = (int_of(&ev(left)), int_of(&ev(right))) else { return Value::Null };
            match op {
                BinaryOp::Add => Value::Int64(a + b),
                BinaryOp::Sub => Value::Int64(a - b),
                BinaryOp::Mul => Value::Int64(a * b),
                BinaryOp::Eq => Value::Bool(a == b),
                BinaryOp::NotEq => Value::Bool(a != b),
                BinaryOp::Lt => Value::Bool(a < b),
                BinaryOp::LtEq => Value::Bool(a <= b),
                BinaryOp::Gt => Value::Bool(a > b),
                BinaryOp::GtEq => Value::Bool(a >= b),
                _ => Value::Null,
            }
        }
        Expr::Function { func: Function::Coalesce, args, .. } => {
            args.iter().map(ev).find(|v| !v.is_null()).unwrap_or(Value::Null)
        }
        Expr::Subquery { kind, plan, .. } => {
            let mut stack = outer.to_vec();
            stack.push(row.clone());
            let rows = run(plan, data, &stack);
            match kind {
                SubqueryKind::Exists { negated } => Value::Bool(rows.is_empty() == *negated),
                SubqueryKind::Array => unreachable!("the fixture's queries have no ARRAY(subquery)"),
                SubqueryKind::Scalar => {
                    assert!(rows.len() <= 1, "more than one row returned by a subquery used as an expression");
                    rows.first().map_or(Value::Null, |r| r[0].clone())
                }
                SubqueryKind::In { expr, negated } => {
                    let x = ev(expr);
                    let cmp = Expr::binary(BinaryOp::Eq, Expr::literal(x), Expr::column(0, I), DataType::Bool);
                    let v = any_of(&rows, &cmp, data);
                    if *negated { truth(&v).map_or(Value::Null, |b| Value::Bool(!b)) } else { v }
                }
                SubqueryKind::Quantified { expr, op, all } => {
                    let x = ev(expr);
                    let cmp = Expr::binary(*op, Expr::literal(x), Expr::column(0, I), DataType::Bool);
                    if *all {
                        let not = Expr::Unary { op: UnaryOp::Not, expr: Box::new(cmp), ty: DataType::Bool };
                        truth(&any_of(&rows, &not, data)).map_or(Value::Null, |b| Value::Bool(!b))
                    } else {
                        any_of(&rows, &cmp, data)
                    }
                }
            }
        }
        other => panic!("the reference interpreter does not evaluate {other:?}"),
    }
}

/// OR over the rows of `cmp` (SQL's ANY).
fn any_of(rows: &[Row], cmp: &Expr, data: &Data) -> Value {
    let mut unknown = false;
    for r in rows {
        match truth(&eval(cmp, r, data, &[])) {
            Some(true) => return Value::Bool(true),
            None => unknown = true,
            Some(false) => {}
        }
    }
    if unknown { Value::Null } else { Value::Bool(false) }
}
