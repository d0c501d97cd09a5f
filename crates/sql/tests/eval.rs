//! The evaluator on batches of columns: NULLs, laziness of CASE / AND /
//! COALESCE, IN lists, parameters, outer references, subqueries through a
//! runner, casts with lengths, errors with their SQLSTATE.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};
use ndpdb_sql::exec::expr::{EvalContext, cast_array, evaluate, evaluate_with};
use ndpdb_sql::exec::{ExecContext, ScanOutput, ScanSpec, SubqueryRunner, TableSource};
use ndpdb_sql::plan::{BinaryOp, Expr, Function, Node, Plan, SubqueryKind, UnaryOp};
use ndpdb_sql::types::arrow::{array_from_values, value_at};
use ndpdb_sql::types::ops::CastMode;
use ndpdb_sql::types::{DataType, Interval, Value, pg_text};
use ndpdb_sql::{SqlError, SqlState};

struct NoTables;

impl TableSource for NoTables {
    fn scan(&self, _: &ScanSpec<'_>) -> ndpdb_sql::Result<ScanOutput> {
        Err(SqlError::internal("no tables in this test"))
    }
}

fn ctx_with(params: Vec<Value>, runner: Option<Arc<dyn SubqueryRunner>>) -> ExecContext {
    ExecContext {
        params: Arc::new(params),
        work_mem: 1 << 20,
        subqueries: runner,
        ..ExecContext::new(Arc::new(NoTables))
    }
}

fn ctx() -> ExecContext {
    ctx_with(vec![], None)
}

const I: DataType = DataType::Int32;

fn batch(cols: Vec<ArrayRef>) -> RecordBatch {
    let fields: Vec<Field> =
        cols.iter().enumerate().map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true)).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

fn ints(v: &[Option<i32>]) -> ArrayRef {
    Arc::new(Int32Array::from(v.to_vec()))
}

fn lit(v: Value) -> Expr {
    Expr::literal(v)
}

fn int(i: i32) -> Expr {
    lit(Value::Int32(i))
}

fn col(i: usize) -> Expr {
    Expr::column(i, I)
}

/// Evaluates and prints each row as PostgreSQL would (NULL as `NULL`).
fn rows(e: &Expr, b: &RecordBatch, c: &ExecContext) -> Result<Vec<String>, SqlError> {
    let a = evaluate(e, b, c)?;
    assert_eq!(a.len(), b.num_rows());
    Ok((0..a.len())
        .map(|i| match value_at(a.as_ref(), i).unwrap() {
            Value::Null => "NULL".to_string(),
            v => pg_text(&v),
        })
        .collect())
}

fn ok(e: &Expr, b: &RecordBatch) -> Vec<String> {
    rows(e, b, &ctx()).unwrap_or_else(|err| panic!("{e:?}: {err}"))
}

fn fails(e: &Expr, b: &RecordBatch) -> (SqlState, String) {
    let err = rows(e, b, &ctx()).expect_err("should fail");
    (err.code, err.message)
}

#[test]
fn arithmetic_propagates_nulls_and_checks_overflow() {
    let b = batch(vec![ints(&[Some(1), None, Some(3)])]);
    let e = Expr::binary(BinaryOp::Add, col(0), int(1), I);
    assert_eq!(ok(&e, &b), ["2", "NULL", "4"]);
    let b = batch(vec![ints(&[Some(1), None, Some(i32::MAX)])]);
    assert_eq!(fails(&e, &b), (SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range".into()));
    let e = Expr::binary(BinaryOp::Div, int(1), col(0), I);
    let b = batch(vec![ints(&[Some(1), Some(0)])]);
    assert_eq!(fails(&e, &b), (SqlState::DIVISION_BY_ZERO, "division by zero".into()));
    let e = Expr::binary(BinaryOp::Mod, col(0), int(-1), I);
    let b = batch(vec![ints(&[Some(i32::MIN), Some(7)])]);
    assert_eq!(ok(&e, &b), ["0", "0"]);
    let s = Expr::binary(BinaryOp::Mul, lit(Value::Int16(300)), lit(Value::Int16(300)), DataType::Int16);
    assert_eq!(fails(&s, &batch(vec![ints(&[Some(1)])])).1, "smallint out of range");
    let l = Expr::binary(BinaryOp::Add, lit(Value::Int64(i64::MAX)), lit(Value::Int64(1)), DataType::Int64);
    assert_eq!(fails(&l, &batch(vec![ints(&[Some(1)])])).1, "bigint out of range");
}

#[test]
fn case_evaluates_only_the_branches_rows_take() {
    let b = batch(vec![ints(&[Some(0), Some(5), None, Some(-2)])]);
    let e = Expr::Case {
        operand: None,
        whens: vec![(Expr::binary(BinaryOp::Eq, col(0), int(0), DataType::Bool), int(0))],
        else_: Some(Box::new(Expr::binary(BinaryOp::Div, int(10), col(0), I))),
        ty: I,
    };
    // The NULL row takes ELSE: 10 / NULL = NULL, no division by zero anywhere.
    assert_eq!(ok(&e, &b), ["0", "2", "NULL", "-5"]);
    let simple = Expr::Case {
        operand: Some(Box::new(col(0))),
        whens: vec![(int(5), lit(Value::Text("five".into()))), (int(0), lit(Value::Text("zero".into())))],
        else_: None,
        ty: DataType::Text,
    };
    assert_eq!(ok(&simple, &b), ["zero", "five", "NULL", "NULL"]);
}

#[test]
fn and_or_are_kleene_and_lazy() {
    let b = batch(vec![ints(&[Some(0), Some(5), None])]);
    let nonzero = Expr::binary(BinaryOp::NotEq, col(0), int(0), DataType::Bool);
    let big = Expr::binary(BinaryOp::Gt, Expr::binary(BinaryOp::Div, int(10), col(0), I), int(1), DataType::Bool);
    assert_eq!(ok(&Expr::and(nonzero.clone(), big.clone()), &b), ["f", "t", "NULL"]);
    let zero = Expr::binary(BinaryOp::Eq, col(0), int(0), DataType::Bool);
    assert_eq!(ok(&Expr::binary(BinaryOp::Or, zero, big, DataType::Bool), &b), ["t", "t", "NULL"]);
    let null_bool = Expr::Literal { value: Value::Null, ty: DataType::Bool };
    let f = lit(Value::Bool(false));
    assert_eq!(ok(&Expr::and(null_bool.clone(), f), &b), ["f", "f", "f"]);
    let t = lit(Value::Bool(true));
    assert_eq!(ok(&Expr::binary(BinaryOp::Or, null_bool, t, DataType::Bool), &b), ["t", "t", "t"]);
}

#[test]
fn in_lists_follow_sql_null_rules() {
    let b = batch(vec![ints(&[Some(1), Some(2), None])]);
    let null = Expr::Literal { value: Value::Null, ty: I };
    let e = Expr::InList { expr: Box::new(col(0)), list: vec![int(1), null.clone()], negated: false };
    assert_eq!(ok(&e, &b), ["t", "NULL", "NULL"]);
    let e = Expr::InList { expr: Box::new(col(0)), list: vec![int(1), null], negated: true };
    assert_eq!(ok(&e, &b), ["f", "NULL", "NULL"]);
    let e = Expr::InList { expr: Box::new(col(0)), list: vec![int(2), int(3)], negated: true };
    assert_eq!(ok(&e, &b), ["t", "f", "NULL"]);
}

#[test]
fn coalesce_is_lazy_and_nullif_greatest_skip_nulls() {
    let b = batch(vec![ints(&[Some(1), None])]);
    let boom = Expr::binary(BinaryOp::Div, int(1), Expr::binary(BinaryOp::Sub, col(0), col(0), I), I);
    let e = Expr::Function { func: Function::Coalesce, args: vec![col(0), int(7), boom], ty: I };
    assert_eq!(ok(&e, &b), ["1", "7"]);
    let e = Expr::Function { func: Function::NullIf, args: vec![col(0), int(1)], ty: I };
    assert_eq!(ok(&e, &b), ["NULL", "NULL"]);
    let e = Expr::Function { func: Function::Greatest, args: vec![col(0), int(0)], ty: I };
    assert_eq!(ok(&e, &b), ["1", "0"]);
}

#[test]
fn is_predicates_and_distinctness_never_return_null() {
    let b = batch(vec![ints(&[Some(1), None])]);
    let e = Expr::binary(BinaryOp::IsDistinctFrom, col(0), int(1), DataType::Bool);
    assert_eq!(ok(&e, &b), ["f", "t"]);
    let e =
        Expr::binary(BinaryOp::IsNotDistinctFrom, col(0), Expr::Literal { value: Value::Null, ty: I }, DataType::Bool);
    assert_eq!(ok(&e, &b), ["f", "t"]);
    let cmp = Expr::binary(BinaryOp::Eq, col(0), int(1), DataType::Bool);
    let e = Expr::Unary { op: UnaryOp::IsNotTrue, expr: Box::new(cmp), ty: DataType::Bool };
    assert_eq!(ok(&e, &b), ["f", "t"]);
}

#[test]
fn params_and_outer_references() {
    let b = batch(vec![ints(&[Some(1), Some(2)])]);
    let p = Expr::Param { index: 0, ty: I };
    let e = Expr::binary(BinaryOp::Add, col(0), p.clone(), I);
    assert_eq!(rows(&e, &b, &ctx_with(vec![Value::Int32(10)], None)).unwrap(), ["11", "12"]);
    // A parameter sent as text (type OID 0) is read with the type's input rules.
    assert_eq!(rows(&e, &b, &ctx_with(vec![Value::Text("5".into())], None)).unwrap(), ["6", "7"]);
    let err = rows(&e, &b, &ctx()).unwrap_err();
    assert_eq!(err.message, "there is no parameter $1");
    let o = Expr::Outer { depth: 2, index: 1, ty: I };
    let e = Expr::binary(BinaryOp::Mul, col(0), o, I);
    let outer = vec![vec![Value::Int32(0)], vec![Value::Null, Value::Int32(3)]];
    let c = ctx();
    let a = evaluate_with(&e, &b, &EvalContext { exec: &c, outer: &outer }).unwrap();
    assert_eq!(value_at(a.as_ref(), 1).unwrap(), Value::Int32(6));
    assert!(evaluate(&e, &b, &c).is_err(), "an outer reference without outer rows is an error, not a panic");
}

/// Answers a subquery with the rows `1..=k` where k is the outer row's
/// first value (so the test sees which outer row the plan ran with), and
/// counts its runs.
struct Upto(std::sync::Mutex<usize>);

impl SubqueryRunner for Upto {
    fn run(&self, _plan: &Plan, outer: &[Vec<Value>], _ctx: &ExecContext) -> ndpdb_sql::Result<Vec<RecordBatch>> {
        *self.0.lock().unwrap() += 1;
        let k = match outer.first().and_then(|r| r.first()) {
            Some(Value::Int32(k)) => *k,
            _ => 0,
        };
        let vals: Vec<Option<i32>> = (1..=k).map(Some).chain((k < 0).then_some(None)).collect();
        Ok(vec![batch(vec![ints(&vals)])])
    }
}

fn correlated_plan() -> Plan {
    let schema = Arc::new(vec![]);
    let row = vec![Expr::Outer { depth: 1, index: 0, ty: I }];
    Plan::new(Node::Values { rows: vec![row] }, schema)
}

#[test]
fn subqueries_run_per_distinct_outer_row() {
    let runner = Arc::new(Upto(std::sync::Mutex::new(0)));
    let c = ctx_with(vec![], Some(runner.clone()));
    let b = batch(vec![ints(&[Some(1), Some(1), Some(0), Some(3), Some(-1)])]);
    let plan = Box::new(correlated_plan());
    let scalar = Expr::Subquery { kind: SubqueryKind::Scalar, plan: plan.clone(), ty: I };
    let a = evaluate(&scalar, &batch(vec![ints(&[Some(1), Some(0), Some(1)])]), &c).unwrap();
    assert_eq!(
        (0..3).map(|i| value_at(a.as_ref(), i).unwrap()).collect::<Vec<_>>(),
        [Value::Int32(1), Value::Null, Value::Int32(1)]
    );
    assert_eq!(*runner.0.lock().unwrap(), 2, "one run per distinct outer row");
    let err = rows(&scalar, &b, &c).unwrap_err();
    assert_eq!(err.code, SqlState::CARDINALITY_VIOLATION);
    let exists =
        Expr::Subquery { kind: SubqueryKind::Exists { negated: false }, plan: plan.clone(), ty: DataType::Bool };
    assert_eq!(rows(&exists, &b, &c).unwrap(), ["t", "t", "f", "t", "t"]);
    // 2 IN (1..k): k = -1 gives {NULL}: NULL; k = 0 gives {}: FALSE.
    let kind = SubqueryKind::In { expr: Box::new(int(2)), negated: true };
    let not_in = Expr::Subquery { kind, plan: plan.clone(), ty: DataType::Bool };
    assert_eq!(rows(&not_in, &b, &c).unwrap(), ["t", "t", "t", "f", "NULL"]);
    let kind = SubqueryKind::Quantified { expr: Box::new(int(1)), op: BinaryOp::GtEq, all: true };
    let all = Expr::Subquery { kind, plan, ty: DataType::Bool };
    assert_eq!(rows(&all, &b, &c).unwrap(), ["t", "t", "t", "f", "NULL"]);
    let err = rows(&all, &b, &ctx()).unwrap_err();
    assert_eq!(err.code, SqlState::FEATURE_NOT_SUPPORTED);
}

#[test]
fn casts_check_lengths_on_assignment_and_cut_when_explicit() {
    let a: ArrayRef = Arc::new(StringArray::from(vec![Some("abcd"), Some("ab  "), None]));
    let v3 = DataType::Varchar(Some(3));
    let err = cast_array(&a, &DataType::Text, &v3, CastMode::Assignment).unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (SqlState::STRING_DATA_RIGHT_TRUNCATION, "value too long for type character varying(3)")
    );
    let cut = cast_array(&a, &DataType::Text, &v3, CastMode::Explicit).unwrap();
    assert_eq!(value_at(cut.as_ref(), 0).unwrap(), Value::Text("abc".into()));
    let padded = cast_array(&a, &DataType::Text, &DataType::Char(5), CastMode::Explicit).unwrap();
    assert_eq!(value_at(padded.as_ref(), 1).unwrap(), Value::Text("ab   ".into()));
    // char(n) compares without its padding, also against another length.
    let e = Expr::binary(
        BinaryOp::Eq,
        Expr::Cast { expr: Box::new(lit(Value::Text("ab".into()))), ty: DataType::Char(3) },
        Expr::Cast { expr: Box::new(lit(Value::Text("ab".into()))), ty: DataType::Char(5) },
        DataType::Bool,
    );
    assert_eq!(ok(&e, &batch(vec![ints(&[Some(1)])])), ["t"]);
}

#[test]
fn numeric_columns_keep_their_scales() {
    let n2 = DataType::Numeric { precision: Some(15), scale: 2 };
    let prices = array_from_values(
        &[Value::Numeric { value: 1999, scale: 2 }, Value::Null, Value::Numeric { value: -5, scale: 2 }],
        &n2,
    )
    .unwrap();
    let b = batch(vec![prices]);
    let c = Expr::column(0, n2);
    let one = lit(Value::Numeric { value: 1, scale: 0 });
    let disc = lit(Value::Numeric { value: 5, scale: 2 });
    let minus = Expr::binary(BinaryOp::Sub, one, disc, DataType::Numeric { precision: None, scale: 2 });
    let e = Expr::binary(BinaryOp::Mul, c.clone(), minus, DataType::Numeric { precision: None, scale: 4 });
    assert_eq!(ok(&e, &b), ["18.9905", "NULL", "-0.0475"]);
    let q = Expr::binary(BinaryOp::Div, c, lit(Value::Int32(3)), DataType::Numeric { precision: None, scale: 16 });
    assert_eq!(ok(&q, &b)[0], "6.6633333333333333");
    assert_eq!(ok(&q, &b)[2], "-0.0166666666666667");
}

#[test]
fn floats_compare_as_postgresql() {
    let f = |x: f64| lit(Value::Float64(x));
    let b = batch(vec![ints(&[Some(1)])]);
    let eq = |a, b2| Expr::binary(BinaryOp::Eq, a, b2, DataType::Bool);
    assert_eq!(ok(&eq(f(-0.0), f(0.0)), &b), ["t"]);
    assert_eq!(ok(&eq(f(f64::NAN), f(f64::NAN)), &b), ["t"]);
    let gt = Expr::binary(BinaryOp::Gt, f(f64::NAN), f(f64::INFINITY), DataType::Bool);
    assert_eq!(ok(&gt, &b), ["t"]);
    let over = Expr::binary(BinaryOp::Mul, f(1e308), f(10.0), DataType::Float64);
    assert_eq!(fails(&over, &b), (SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow".into()));
    let to_int = Expr::Cast { expr: Box::new(f(2.5)), ty: I };
    assert_eq!(ok(&to_int, &b), ["2"]);
}

#[test]
fn dates_and_intervals() {
    let b = batch(vec![ints(&[Some(1)])]);
    let d = |s: &str| Expr::Cast { expr: Box::new(lit(Value::Text(s.into()))), ty: DataType::Date };
    let iv = |m, dd, us| lit(Value::Interval(Interval { months: m, days: dd, micros: us }));
    let e = Expr::binary(BinaryOp::Add, d("2000-01-31"), iv(1, 0, 0), DataType::Timestamp);
    assert_eq!(ok(&e, &b), ["2000-02-29 00:00:00"]);
    let e = Expr::binary(BinaryOp::Sub, d("1998-12-01"), iv(0, 90, 0), DataType::Timestamp);
    assert_eq!(ok(&e, &b), ["1998-09-02 00:00:00"]);
    let e = Expr::binary(BinaryOp::Sub, d("2000-03-01"), d("2000-02-01"), I);
    assert_eq!(ok(&e, &b), ["29"]);
    let e = Expr::binary(BinaryOp::Add, d("0001-01-01"), int(-1), DataType::Date);
    assert_eq!(ok(&e, &b), ["0001-12-31 BC"]);
    let lt = Expr::binary(BinaryOp::Lt, iv(1, 0, 0), iv(0, 31, 0), DataType::Bool);
    assert_eq!(ok(&lt, &b), ["t"]);
    let eq = Expr::binary(BinaryOp::Eq, iv(1, 0, 0), iv(0, 30, 0), DataType::Bool);
    assert_eq!(ok(&eq, &b), ["t"]);
    let bad = Expr::Cast { expr: Box::new(lit(Value::Text("2020-13-01".into()))), ty: DataType::Date };
    assert_eq!(fails(&bad, &b).0, SqlState::DATETIME_FIELD_OVERFLOW);
    let field = |f: &str| lit(Value::Text(f.into()));
    let ts = Expr::Cast { expr: Box::new(lit(Value::Text("2000-03-04 10:20:05.5".into()))), ty: DataType::Timestamp };
    let ex = Expr::Function { func: Function::Extract, args: vec![field("second"), ts.clone()], ty: DataType::Float64 };
    assert_eq!(ok(&ex, &b), ["5.5"]);
    let bad = Expr::Function { func: Function::Extract, args: vec![field("foo"), ts], ty: DataType::Float64 };
    assert_eq!(
        fails(&bad, &b),
        (SqlState::INVALID_PARAMETER_VALUE, "unit \"foo\" not recognized for type timestamp without time zone".into())
    );
}

#[test]
fn like_with_escapes_and_char_padding() {
    let b = batch(vec![Arc::new(StringArray::from(vec![Some("a%"), Some("ab"), None])) as ArrayRef]);
    let like = |p: &str, escape| Expr::Like {
        expr: Box::new(Expr::column(0, DataType::Text)),
        pattern: Box::new(lit(Value::Text(p.into()))),
        negated: false,
        case_insensitive: false,
        escape,
    };
    assert_eq!(ok(&like("a#%", Some('#')), &b), ["t", "f", "NULL"]);
    assert_eq!(ok(&like("a\\%", None), &b), ["t", "f", "NULL"]);
    assert_eq!(ok(&like("a_", None), &b), ["t", "t", "NULL"]);
    let padded = Expr::Like {
        expr: Box::new(Expr::Cast { expr: Box::new(lit(Value::Text("ab".into()))), ty: DataType::Char(4) }),
        pattern: Box::new(lit(Value::Text("ab".into()))),
        negated: false,
        case_insensitive: false,
        escape: None,
    };
    assert_eq!(ok(&padded, &b), ["t", "t", "t"]);
}

#[test]
fn string_functions_errors() {
    let b = batch(vec![ints(&[Some(1)])]);
    let s = lit(Value::Text("hello".into()));
    let e = Expr::Function { func: Function::Substring, args: vec![s.clone(), int(1), int(-1)], ty: DataType::Text };
    assert_eq!(fails(&e, &b), (SqlState("22011"), "negative substring length not allowed".into()));
    let e = Expr::Function { func: Function::Sqrt, args: vec![lit(Value::Float64(-1.0))], ty: DataType::Float64 };
    assert_eq!(fails(&e, &b), (SqlState("2201F"), "cannot take square root of a negative number".into()));
    let e = Expr::Function { func: Function::Position, args: vec![lit(Value::Text("l".into())), s], ty: I };
    assert_eq!(ok(&e, &b), ["3"]);
}
