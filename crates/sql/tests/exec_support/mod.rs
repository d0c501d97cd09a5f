//! Fixtures of the executor tests: random tables with NULLs and
//! duplicates in a `MemorySource`, plan builders, and the conversion of
//! results back to rows of `Value`s for the row-at-a-time references.
#![allow(dead_code)]

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use ndpdb_sql::catalog::{ColumnDef, TableDef};
use ndpdb_sql::exec::memory::MemorySource;
use ndpdb_sql::exec::{ExecContext, execute};
use ndpdb_sql::plan::{Access, BinaryOp, Expr, Field, JoinAlgorithm, JoinKind, Node, Plan, Schema, UnaryOp};
use ndpdb_sql::types::{DataType, Value};
use ndpdb_sql::{Result, SqlError};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

pub type Row = Vec<Value>;

/// A table (a int, b text, c bigint): `a` in 0..8 and `b` in {x, y, z},
/// both NULL one time in six; `c` in -50..50.
pub fn random_table(id: u32, name: &str, rows: usize, seed: u64) -> (Arc<TableDef>, RecordBatch, Vec<Row>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rows {
        a.push((rng.random_range(0..6) != 0).then(|| rng.random_range(0..8)));
        b.push((rng.random_range(0..6) != 0).then(|| ["x", "y", "z"][rng.random_range(0..3)].to_string()));
        c.push(rng.random_range(-50i64..50));
    }
    let columns: Vec<ArrayRef> =
        vec![Arc::new(Int32Array::from(a)), Arc::new(StringArray::from(b)), Arc::new(Int64Array::from(c))];
    let batch = RecordBatch::try_from_iter(["a", "b", "c"].into_iter().zip(columns)).unwrap();
    let rows = batch_rows(&batch);
    (table_def(id, name, &[("a", DataType::Int32), ("b", DataType::Text), ("c", DataType::Int64)]), batch, rows)
}

pub fn table_def(id: u32, name: &str, columns: &[(&str, DataType)]) -> Arc<TableDef> {
    Arc::new(TableDef {
        id,
        name: name.into(),
        columns: columns
            .iter()
            .map(|(n, ty)| ColumnDef { name: (*n).into(), ty: *ty, not_null: false, default: None })
            .collect(),
        primary_key: None,
        unique: vec![],
        indexes: vec![],
        stats: None,
    })
}

pub fn schema(types: &[DataType]) -> Schema {
    Arc::new(
        types
            .iter()
            .enumerate()
            .map(|(i, ty)| Field { name: format!("c{i}"), qualifier: None, ty: *ty, nullable: true })
            .collect(),
    )
}

pub fn types(plan: &Plan) -> Vec<DataType> {
    plan.schema.iter().map(|f| f.ty).collect()
}

pub fn scan(table: &Arc<TableDef>) -> Plan {
    let tys: Vec<DataType> = table.columns.iter().map(|c| c.ty).collect();
    Plan::new(
        Node::Scan {
            table: table.clone(),
            columns: (0..tys.len()).collect(),
            filter: None,
            emit_vid: false,
            access: Access::Host,
        },
        schema(&tys),
    )
}

pub fn filter(input: Plan, predicate: Expr) -> Plan {
    let s = input.schema.clone();
    Plan::new(Node::Filter { input: Box::new(input), predicate }, s)
}

pub fn project(input: Plan, exprs: Vec<Expr>) -> Plan {
    let s = schema(&exprs.iter().map(|e| e.ty()).collect::<Vec<_>>());
    Plan::new(Node::Project { input: Box::new(input), exprs }, s)
}

pub fn join(left: Plan, right: Plan, kind: JoinKind, on: Option<Expr>, algorithm: JoinAlgorithm) -> Plan {
    let mut tys = types(&left);
    match kind {
        JoinKind::Semi | JoinKind::Anti => {}
        JoinKind::Mark => tys.push(DataType::Bool),
        _ => tys.extend(types(&right)),
    }
    Plan::new(Node::Join { left: Box::new(left), right: Box::new(right), kind, on, algorithm }, schema(&tys))
}

pub fn col(index: usize, ty: DataType) -> Expr {
    Expr::column(index, ty)
}

pub fn int(v: i32) -> Expr {
    Expr::literal(Value::Int32(v))
}

pub fn cmp(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    Expr::binary(op, l, r, DataType::Bool)
}

pub fn is_null(e: Expr) -> Expr {
    Expr::Unary { op: UnaryOp::IsNull, expr: Box::new(e), ty: DataType::Bool }
}

pub fn ctx(source: Arc<MemorySource>, workers: usize) -> ExecContext {
    ExecContext { workers, ..ExecContext::new(source) }
}

/// Runs `plan` and returns its rows.
pub fn run(plan: &Plan, ctx: &ExecContext) -> Result<Vec<Row>> {
    let out = execute(plan, ctx)?;
    for b in &out.batches {
        assert_eq!(b.num_columns(), plan.schema.len(), "batch width");
    }
    Ok(out.batches.iter().flat_map(batch_rows).collect())
}

pub fn run_err(plan: &Plan, ctx: &ExecContext) -> SqlError {
    run(plan, ctx).expect_err("the plan should fail")
}

pub fn batch_rows(batch: &RecordBatch) -> Vec<Row> {
    (0..batch.num_rows()).map(|i| batch.columns().iter().map(|c| value(c, i)).collect()).collect()
}

pub fn value(array: &ArrayRef, i: usize) -> Value {
    use arrow_schema::DataType as A;
    if array.is_null(i) {
        return Value::Null;
    }
    match array.data_type() {
        A::Boolean => Value::Bool(array.as_boolean().value(i)),
        A::Int32 => Value::Int32(array.as_primitive::<Int32Type>().value(i)),
        A::Int64 => Value::Int64(array.as_primitive::<Int64Type>().value(i)),
        A::Float64 => Value::Float64(array.as_primitive::<Float64Type>().value(i)),
        A::Decimal128(_, s) => {
            Value::Numeric { value: array.as_primitive::<Decimal128Type>().value(i), scale: *s as u8 }
        }
        A::Utf8 => Value::Text(array.as_string::<i32>().value(i).to_string()),
        other => panic!("test reads no {other}"),
    }
}

/// Rows in a canonical order, for comparing multisets.
pub fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by_cached_key(|r| format!("{r:?}"));
    rows
}

/// Three-valued AND.
pub fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// SQL `=` on two values.
pub fn eq3(a: &Value, b: &Value) -> Option<bool> {
    if a.is_null() || b.is_null() { None } else { Some(a == b) }
}

/// SQL `<` on two bigint values.
pub fn lt3(a: &Value, b: &Value) -> Option<bool> {
    match (a, b) {
        (Value::Int64(x), Value::Int64(y)) => Some(x < y),
        _ => None,
    }
}
