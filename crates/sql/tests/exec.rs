//! Operators other than joins on hand-built plans over `MemorySource`,
//! each against a row-at-a-time reference on random data with NULLs and
//! duplicates (fixed seeds); parallel = serial; work_mem, timeout and
//! cancellation.

mod exec_support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use exec_support::*;
use ndpdb_sql::SqlState;
use ndpdb_sql::exec::memory::MemorySource;
use ndpdb_sql::exec::{ExecContext, ExecSubqueryRunner, SubqueryRunner, execute};
use ndpdb_sql::plan::{
    AggFunc, AggregateExpr, BinaryOp, Expr, HashBuild, JoinAlgorithm, JoinKind, Node, Plan, SetOpKind, SortKey,
};
use ndpdb_sql::types::{DataType, Value};

const INT: DataType = DataType::Int32;
const TEXT: DataType = DataType::Text;
const BIG: DataType = DataType::Int64;

fn fixture(rows: usize, seed: u64) -> (Arc<ndpdb_sql::catalog::TableDef>, Vec<Row>, Arc<MemorySource>) {
    let (t, batch, data) = random_table(1, "t", rows, seed);
    let source = Arc::new(MemorySource::new());
    source.insert(1, vec![batch]);
    (t, data, source)
}

#[test]
fn scan_filter_project() {
    let (t, data, source) = fixture(5000, 1);
    // SELECT c, a FROM t WHERE a > 3 OR b IS NULL
    let pred =
        Expr::binary(BinaryOp::Or, cmp(BinaryOp::Gt, col(0, INT), int(3)), is_null(col(1, TEXT)), DataType::Bool);
    let plan = project(filter(scan(&t), pred), vec![col(2, BIG), col(0, INT)]);
    let want: Vec<Row> = data
        .iter()
        .filter(|r| matches!(r[0], Value::Int32(a) if a > 3) || r[1].is_null())
        .map(|r| vec![r[2].clone(), r[0].clone()])
        .collect();
    for workers in [1, 2] {
        assert_eq!(run(&plan, &ctx(source.clone(), workers)).unwrap(), want, "order kept, workers={workers}");
    }
    // The scan's own filter, which MemorySource leaves to the executor.
    let mut pushed = scan(&t);
    if let Node::Scan { filter, columns, .. } = &mut pushed.node {
        *filter = Some(is_null(col(0, TEXT)));
        *columns = vec![1, 2];
    }
    pushed.schema = schema(&[TEXT, BIG]);
    let got = run(&pushed, &ctx(source, 2)).unwrap();
    let want: Vec<Row> = data.iter().filter(|r| r[1].is_null()).map(|r| r[1..].to_vec()).collect();
    assert_eq!(got, want);
}

#[test]
fn scan_emits_vids() {
    let (t, data, source) = fixture(3000, 2);
    let mut plan = scan(&t);
    if let Node::Scan { emit_vid, columns, .. } = &mut plan.node {
        *emit_vid = true;
        *columns = vec![2];
    }
    plan.schema = schema(&[BIG, BIG]);
    let got = run(&plan, &ctx(source, 2)).unwrap();
    let want: Vec<Row> = data.iter().enumerate().map(|(i, r)| vec![r[2].clone(), Value::Int64(i as i64)]).collect();
    assert_eq!(got, want);
}

#[test]
fn values_rows() {
    let rows = vec![
        vec![int(1), Expr::literal(Value::Text("a".into()))],
        vec![Expr::Literal { value: Value::Null, ty: INT }, Expr::literal(Value::Null)],
    ];
    let plan = Plan::new(Node::Values { rows }, schema(&[INT, TEXT]));
    let got = run(&plan, &ctx(Arc::new(MemorySource::new()), 1)).unwrap();
    assert_eq!(got, vec![vec![Value::Int32(1), Value::Text("a".into())], vec![Value::Null, Value::Null]]);
}

fn agg(func: AggFunc, arg: Option<Expr>, distinct: bool, filter: Option<Expr>, ty: DataType) -> AggregateExpr {
    AggregateExpr { func, arg, distinct, filter, ty }
}

fn aggregate(input: Plan, group_by: Vec<Expr>, aggregates: Vec<AggregateExpr>) -> Plan {
    let tys: Vec<DataType> = group_by.iter().map(|e| e.ty()).chain(aggregates.iter().map(|a| a.ty)).collect();
    Plan::new(Node::Aggregate { input: Box::new(input), group_by, aggregates }, schema(&tys))
}

const AVG_SCALE: u8 = 16;

fn numeric(scale: u8) -> DataType {
    DataType::Numeric { precision: None, scale }
}

/// The aggregates of the test, over rows of (a, b, c).
fn aggregates() -> Vec<AggregateExpr> {
    vec![
        agg(AggFunc::CountStar, None, false, None, BIG),
        agg(AggFunc::Count, Some(col(0, INT)), false, None, BIG),
        agg(AggFunc::Sum, Some(col(0, INT)), false, None, BIG),
        agg(AggFunc::Sum, Some(col(2, BIG)), false, None, numeric(0)),
        agg(AggFunc::Avg, Some(col(0, INT)), false, None, numeric(AVG_SCALE)),
        agg(AggFunc::Min, Some(col(1, TEXT)), false, None, TEXT),
        agg(AggFunc::Max, Some(col(2, BIG)), false, None, BIG),
        agg(AggFunc::Count, Some(col(0, INT)), true, None, BIG),
        agg(AggFunc::Sum, Some(col(0, INT)), true, Some(cmp(BinaryOp::Gt, col(0, INT), int(2))), BIG),
        agg(AggFunc::BoolOr, Some(cmp(BinaryOp::Gt, col(0, INT), int(6))), false, None, DataType::Bool),
        agg(AggFunc::BoolAnd, Some(cmp(BinaryOp::Gt, col(0, INT), int(0))), false, None, DataType::Bool),
    ]
}

fn int_of(v: &Value) -> Option<i128> {
    match v {
        Value::Int32(x) => Some(*x as i128),
        Value::Int64(x) => Some(*x as i128),
        _ => None,
    }
}

/// The aggregates of one group, row at a time.
fn reference_aggregates(rows: &[&Row]) -> Row {
    let a: Vec<i128> = rows.iter().filter_map(|r| int_of(&r[0])).collect();
    let c: Vec<i128> = rows.iter().filter_map(|r| int_of(&r[2])).collect();
    let opt = |v: Option<Value>| v.unwrap_or(Value::Null);
    let mut distinct: Vec<i128> = a.clone();
    distinct.sort();
    distinct.dedup();
    let avg = (!a.is_empty()).then(|| {
        let (n, d) = (a.iter().sum::<i128>() * 10i128.pow(AVG_SCALE as u32), a.len() as i128);
        let (q, r) = (n / d, n % d);
        Value::Numeric { value: if 2 * r.abs() >= d { q + n.signum() } else { q }, scale: AVG_SCALE }
    });
    let filtered: Vec<i128> = distinct.iter().copied().filter(|&x| x > 2).collect();
    vec![
        Value::Int64(rows.len() as i64),
        Value::Int64(a.len() as i64),
        opt((!a.is_empty()).then(|| Value::Int64(a.iter().sum::<i128>() as i64))),
        opt((!c.is_empty()).then(|| Value::Numeric { value: c.iter().sum(), scale: 0 })),
        opt(avg),
        opt(rows.iter().filter(|r| !r[1].is_null()).map(|r| r[1].clone()).min_by_key(|v| format!("{v:?}"))),
        opt(c.iter().max().map(|&m| Value::Int64(m as i64))),
        Value::Int64(distinct.len() as i64),
        opt((!filtered.is_empty()).then(|| Value::Int64(filtered.iter().sum::<i128>() as i64))),
        opt((!a.is_empty()).then(|| Value::Bool(a.iter().any(|&x| x > 6)))),
        opt((!a.is_empty()).then(|| Value::Bool(a.iter().all(|&x| x > 0)))),
    ]
}

#[test]
fn hash_aggregate_with_distinct_and_filter() {
    let (t, data, source) = fixture(6000, 3);
    let plan = aggregate(scan(&t), vec![col(1, TEXT)], aggregates());
    let mut groups: HashMap<String, (Value, Vec<&Row>)> = HashMap::new();
    for r in &data {
        groups.entry(format!("{:?}", r[1])).or_insert_with(|| (r[1].clone(), vec![])).1.push(r);
    }
    let want: Vec<Row> = groups
        .values()
        .map(|(k, rows)| std::iter::once(k.clone()).chain(reference_aggregates(rows)).collect())
        .collect();
    let serial = run(&plan, &ctx(source.clone(), 1)).unwrap();
    assert_eq!(sorted(serial.clone()), sorted(want));
    assert_eq!(run(&plan, &ctx(source, 2)).unwrap(), serial, "groups in first-seen order with any workers");
}

#[test]
fn aggregate_without_groups_gives_one_row_even_on_empty_input() {
    let (t, data, source) = fixture(2500, 4);
    let all = aggregate(scan(&t), vec![], aggregates());
    let refs: Vec<&Row> = data.iter().collect();
    assert_eq!(run(&all, &ctx(source.clone(), 2)).unwrap(), vec![reference_aggregates(&refs)]);
    let none = aggregate(filter(scan(&t), cmp(BinaryOp::Gt, col(0, INT), int(100))), vec![], aggregates());
    assert_eq!(run(&none, &ctx(source.clone(), 2)).unwrap(), vec![reference_aggregates(&[])]);
    // With a GROUP BY, an empty input has no groups.
    let grouped = aggregate(filter(scan(&t), cmp(BinaryOp::Gt, col(0, INT), int(100))), vec![col(0, INT)], vec![]);
    assert!(run(&grouped, &ctx(source, 1)).unwrap().is_empty());
}

#[test]
fn sum_overflow_is_22003() {
    let t = table_def(1, "big", &[("x", BIG)]);
    let source = Arc::new(MemorySource::new());
    let values = arrow_array::Int64Array::from(vec![i64::MAX, 1]);
    source.insert(1, vec![arrow_array::RecordBatch::try_from_iter([("x", Arc::new(values) as _)]).unwrap()]);
    let as_bigint = aggregate(scan(&t), vec![], vec![agg(AggFunc::Sum, Some(col(0, BIG)), false, None, BIG)]);
    let err = run_err(&as_bigint, &ctx(source.clone(), 1));
    assert_eq!((err.code, err.message.as_str()), (SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "bigint out of range"));
    // PostgreSQL's sum(bigint) is numeric: exact past bigint.
    let exact = aggregate(scan(&t), vec![], vec![agg(AggFunc::Sum, Some(col(0, BIG)), false, None, numeric(0))]);
    let got = run(&exact, &ctx(source, 1)).unwrap();
    assert_eq!(got, vec![vec![Value::Numeric { value: i64::MAX as i128 + 1, scale: 0 }]]);
}

fn sort(input: Plan, keys: Vec<SortKey>) -> Plan {
    let s = input.schema.clone();
    Plan::new(Node::Sort { input: Box::new(input), keys }, s)
}

/// Reference order of one key: NULLs by `nulls_first`, values by `asc`.
fn key_order(a: &Value, b: &Value, asc: bool, nulls_first: bool) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (a.is_null(), b.is_null()) {
        (true, true) => Equal,
        (true, false) => {
            if nulls_first {
                Less
            } else {
                Greater
            }
        }
        (false, true) => {
            if nulls_first {
                Greater
            } else {
                Less
            }
        }
        _ => {
            let o = match (a, b) {
                (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
                _ => int_of(a).cmp(&int_of(b)),
            };
            if asc { o } else { o.reverse() }
        }
    }
}

#[test]
fn sort_is_stable_with_every_direction_and_null_placement() {
    let (t, data, source) = fixture(5000, 5);
    for (asc, nulls_first) in [(true, false), (false, true), (true, true), (false, false)] {
        let keys = vec![
            SortKey { expr: col(1, TEXT), asc, nulls_first },
            SortKey { expr: col(0, INT), asc: !asc, nulls_first: !nulls_first },
        ];
        let plan = sort(scan(&t), keys);
        let mut want = data.clone();
        want.sort_by(|x, y| {
            key_order(&x[1], &y[1], asc, nulls_first).then(key_order(&x[0], &y[0], !asc, !nulls_first))
        });
        for workers in [1, 2] {
            assert_eq!(run(&plan, &ctx(source.clone(), workers)).unwrap(), want, "{asc} {nulls_first} {workers}");
        }
    }
}

fn limit(input: Plan, limit: Option<u64>, offset: u64) -> Plan {
    let s = input.schema.clone();
    Plan::new(Node::Limit { input: Box::new(input), limit, offset }, s)
}

#[test]
fn limit_and_offset_stop_pulling_early() {
    let (t, data, source) = fixture(40_000, 6);
    for (l, o) in [(Some(5), 0), (Some(3000), 2047), (None, 39_990), (Some(0), 0), (Some(10), 50_000)] {
        let plan = limit(filter(scan(&t), cmp(BinaryOp::Gt, col(2, BIG), Expr::literal(Value::Int64(-30)))), l, o);
        let kept: Vec<Row> = data.iter().filter(|r| matches!(r[2], Value::Int64(c) if c > -30)).cloned().collect();
        let want: Vec<Row> = kept.into_iter().skip(o as usize).take(l.unwrap_or(u64::MAX) as usize).collect();
        for workers in [1, 2] {
            assert_eq!(run(&plan, &ctx(source.clone(), workers)).unwrap(), want, "{l:?} {o} {workers}");
        }
    }
    let plan = limit(scan(&t), Some(5), 0);
    let out = execute(&plan, &ctx(source, 2)).unwrap();
    let examined = out.metrics.children[0].scan.unwrap().rows_examined;
    assert!(examined < 20_000, "LIMIT 5 read {examined} of 40000 rows");
}

fn set_op(op: SetOpKind, all: bool, left: Plan, right: Plan) -> Plan {
    let s = left.schema.clone();
    Plan::new(Node::SetOp { op, all, left: Box::new(left), right: Box::new(right) }, s)
}

/// PostgreSQL's multiset rules, by counting.
fn set_reference(op: SetOpKind, all: bool, l: &[Row], r: &[Row]) -> Vec<Row> {
    let count = |rows: &[Row]| {
        let mut m: HashMap<String, (Row, usize)> = HashMap::new();
        for row in rows {
            m.entry(format!("{row:?}")).or_insert_with(|| (row.clone(), 0)).1 += 1;
        }
        m
    };
    let (lc, rc) = (count(l), count(r));
    let mut keys: Vec<&String> = lc.keys().chain(rc.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for k in keys {
        let (nl, nr) = (lc.get(k).map_or(0, |x| x.1), rc.get(k).map_or(0, |x| x.1));
        let row = lc.get(k).or(rc.get(k)).unwrap().0.clone();
        let n = match (op, all) {
            (SetOpKind::Union, true) => nl + nr,
            (SetOpKind::Union, false) => 1,
            (SetOpKind::Intersect, true) => nl.min(nr),
            (SetOpKind::Intersect, false) => (nl > 0 && nr > 0) as usize,
            (SetOpKind::Except, true) => nl.saturating_sub(nr),
            (SetOpKind::Except, false) => (nl > 0 && nr == 0) as usize,
        };
        out.extend(std::iter::repeat_n(row, n));
    }
    out
}

#[test]
fn set_operations_and_distinct_follow_postgresql_duplicates() {
    let (t, data, source) = fixture(3000, 7);
    // Two overlapping projections with NULLs and many duplicates.
    let left_plan = project(
        filter(scan(&t), cmp(BinaryOp::Lt, col(2, BIG), Expr::literal(Value::Int64(20)))),
        vec![col(0, INT), col(1, TEXT)],
    );
    let right_plan = project(
        filter(scan(&t), cmp(BinaryOp::Gt, col(2, BIG), Expr::literal(Value::Int64(-10)))),
        vec![col(0, INT), col(1, TEXT)],
    );
    let pick = |pred: &dyn Fn(i64) -> bool| -> Vec<Row> {
        data.iter().filter(|r| matches!(r[2], Value::Int64(c) if pred(c))).map(|r| r[..2].to_vec()).collect()
    };
    let (l, r) = (pick(&|c| c < 20), pick(&|c| c > -10));
    for op in [SetOpKind::Union, SetOpKind::Intersect, SetOpKind::Except] {
        for all in [true, false] {
            let plan = set_op(op, all, left_plan.clone(), right_plan.clone());
            let want = sorted(set_reference(op, all, &l, &r));
            for workers in [1, 2] {
                assert_eq!(sorted(run(&plan, &ctx(source.clone(), workers)).unwrap()), want, "{op:?} all={all}");
            }
        }
    }
    let distinct = Plan::new(Node::Distinct { input: Box::new(left_plan.clone()) }, left_plan.schema.clone());
    assert_eq!(
        sorted(run(&distinct, &ctx(source, 2)).unwrap()),
        sorted(set_reference(SetOpKind::Union, false, &l, &[]))
    );
}

/// A plan with every pipeline shape: scan → filter → probe → project,
/// then aggregate and sort.
fn big_plan(t: &Arc<ndpdb_sql::catalog::TableDef>, u: &Arc<ndpdb_sql::catalog::TableDef>) -> Plan {
    let keys =
        JoinAlgorithm::Hash { left_keys: vec![col(0, INT)], right_keys: vec![col(0, INT)], build: HashBuild::Right };
    let j = join(
        filter(scan(t), cmp(BinaryOp::NotEq, col(1, TEXT), Expr::literal(Value::Text("y".into())))),
        scan(u),
        JoinKind::Left,
        None,
        keys,
    );
    let p = project(j, vec![col(1, TEXT), col(5, BIG), col(2, BIG)]);
    let a = aggregate(
        p,
        vec![col(0, TEXT), col(2, BIG)],
        vec![agg(AggFunc::Sum, Some(col(1, BIG)), false, None, numeric(0))],
    );
    sort(a, vec![SortKey { expr: col(0, TEXT), asc: true, nulls_first: false }])
}

#[test]
fn parallel_equals_serial_batch_for_batch() {
    let (t, tb, _) = random_table(1, "t", 9000, 8);
    let (u, ub, _) = random_table(2, "u", 300, 9);
    let source = Arc::new(MemorySource::new());
    source.insert(1, vec![tb]);
    source.insert(2, vec![ub]);
    let plan = big_plan(&t, &u);
    let serial = execute(&plan, &ctx(source.clone(), 1)).unwrap();
    for workers in [2, 3] {
        let parallel = execute(&plan, &ctx(source.clone(), workers)).unwrap();
        assert_eq!(parallel.batches, serial.batches, "workers={workers}");
        assert_eq!(parallel.metrics.rows_out, serial.metrics.rows_out);
    }
    // The metrics tree mirrors the plan.
    let m = &serial.metrics;
    assert_eq!(m.name, "Sort");
    assert_eq!(m.children[0].name, "HashAggregate");
    let join = &m.children[0].children[0].children[0];
    assert_eq!(join.name, "HashJoin Left");
    assert_eq!(join.children[1].scan.unwrap().rows_examined, 300);
    assert_eq!(join.children[0].children[0].rows_out, join.children[0].children[0].scan.unwrap().rows_examined);
}

/// Whether some operator of the run spilled.
fn spilled(plan: &Plan, ctx: &ndpdb_sql::exec::ExecContext) -> bool {
    fn any(m: &ndpdb_sql::exec::OperatorMetrics) -> bool {
        m.spill.is_some_and(|s| s.files > 0) || m.children.iter().any(any)
    }
    any(&execute(plan, ctx).expect("runs").metrics)
}

/// Over `work_mem` (16 KiB here), hash joins of every kind but Mark (also
/// those planned to build on their left input), sorts and hash
/// aggregations spill, and give the rows they give in memory: the
/// same rows, in the same order where the operator decides it (a stable
/// sort). `c` (100 values) keys the joins, so no key alone is over the limit.
#[test]
fn over_work_mem_joins_sorts_and_aggregates_spill_and_give_the_same_rows() {
    let (t, tb, _) = random_table(1, "t", 9000, 9);
    let (u, ub, _) = random_table(2, "u", 3000, 10);
    let source = Arc::new(MemorySource::new());
    source.insert(1, vec![tb]);
    source.insert(2, vec![ub]);
    let keys =
        || JoinAlgorithm::Hash { left_keys: vec![col(2, BIG)], right_keys: vec![col(2, BIG)], build: HashBuild::Right };
    let residual = || Some(cmp(BinaryOp::Lt, col(0, INT), col(3, INT)));
    let mut plans = Vec::new();
    for kind in [JoinKind::Inner, JoinKind::Left, JoinKind::Right, JoinKind::Full, JoinKind::Semi, JoinKind::Anti] {
        plans.push((join(scan(&t), scan(&u), kind, None, keys()), false));
        plans.push((join(scan(&u), scan(&t), kind, residual(), keys()), false));
    }
    // Semi and Anti joins meant to build on their left input, which is over.
    for kind in [JoinKind::Semi, JoinKind::Anti] {
        let left =
            JoinAlgorithm::Hash { left_keys: vec![col(2, BIG)], right_keys: vec![col(2, BIG)], build: HashBuild::Left };
        plans.push((join(scan(&t), scan(&u), kind, residual(), left), false));
    }
    let by = |i, ty, asc, nulls_first| SortKey { expr: col(i, ty), asc, nulls_first };
    plans.push((sort(scan(&t), vec![by(1, TEXT, true, true), by(2, BIG, false, false)]), true));
    plans.push((sort(scan(&t), vec![by(0, INT, false, true)]), true));
    plans.push((aggregate(scan(&t), vec![col(2, BIG), col(0, INT)], aggregates()), false));
    let float_sum = agg(
        AggFunc::Sum,
        Some(Expr::Cast { expr: Box::new(col(2, BIG)), ty: DataType::Float64 }),
        false,
        None,
        DataType::Float64,
    );
    plans.push((aggregate(scan(&t), vec![col(2, BIG), col(1, TEXT)], vec![float_sum]), false));
    for (i, (plan, ordered)) in plans.iter().enumerate() {
        let want = run(plan, &ctx(source.clone(), 2)).unwrap();
        for workers in [1, 2] {
            let small = ExecContext { work_mem: 16 * 1024, ..ctx(source.clone(), workers) };
            assert!(spilled(plan, &small), "plan {i} did not spill");
            let got = run(plan, &small).unwrap_or_else(|e| panic!("plan {i}, {workers} workers: {e:?}"));
            if *ordered {
                assert_eq!(got, want, "plan {i}, {workers} workers");
            } else {
                assert_eq!(sorted(got), sorted(want.clone()), "plan {i}, {workers} workers");
            }
        }
    }
}

/// What cannot spill fails with 53200, naming `work_mem`: HashDistinct,
/// a Mark join, and a join whose one key has more build rows than the
/// limit (`a` has 8 values: no split makes a partition smaller).
#[test]
fn over_work_mem_what_cannot_spill_fails_with_53200() {
    let (t, tb, _) = random_table(1, "t", 9000, 9);
    let source = Arc::new(MemorySource::new());
    source.insert(1, vec![tb]);
    let small = ExecContext { work_mem: 16 * 1024, ..ctx(source.clone(), 2) };
    let on_a =
        || JoinAlgorithm::Hash { left_keys: vec![col(0, INT)], right_keys: vec![col(0, INT)], build: HashBuild::Right };
    let mark = join(scan(&t), scan(&t), JoinKind::Mark, None, on_a());
    let plans = [
        join(scan(&t), scan(&t), JoinKind::Inner, None, on_a()),
        mark,
        Plan::new(Node::Distinct { input: Box::new(scan(&t)) }, scan(&t).schema),
    ];
    for plan in &plans {
        let err = run_err(plan, &small);
        assert_eq!(err.code, SqlState::OUT_OF_MEMORY, "{err:?}");
        assert_eq!(err.message, "out of memory");
        assert!(err.hint.as_deref().unwrap().contains("work_mem"));
        assert!(run(plan, &ctx(source.clone(), 2)).is_ok(), "fits in the default work_mem");
    }
}

#[test]
fn timeout_and_cancel_stop_a_statement() {
    let (t, tb, _) = random_table(1, "t", 5000, 11);
    let source = Arc::new(MemorySource::new());
    source.insert(1, vec![tb]);
    // A nested loop of 25M pairs: far longer than the deadline.
    let plan = join(
        scan(&t),
        scan(&t),
        JoinKind::Inner,
        Some(cmp(BinaryOp::Lt, col(2, BIG), col(5, BIG))),
        JoinAlgorithm::NestedLoop,
    );
    let mut timed = ctx(source.clone(), 2);
    timed.deadline = Some(Instant::now() + Duration::from_millis(50));
    let err = run_err(&plan, &timed);
    assert_eq!(
        (err.code, err.message.as_str()),
        (SqlState::QUERY_CANCELED, "canceling statement due to statement timeout")
    );
    let cancelled = ctx(source, 2);
    let flag = cancelled.cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        flag.store(true, Ordering::Relaxed);
    });
    let err = run_err(&plan, &cancelled);
    canceller.join().unwrap();
    assert_eq!((err.code, err.message.as_str()), (SqlState::QUERY_CANCELED, "canceling statement due to user request"));
}

#[test]
fn subquery_runner_binds_outer_references() {
    let (t, data, source) = fixture(500, 12);
    // SELECT c FROM t WHERE a = outer.x, for outer row x = 3.
    let outer = Expr::Outer { depth: 1, index: 0, ty: INT };
    let plan = project(filter(scan(&t), cmp(BinaryOp::Eq, col(0, INT), outer)), vec![col(2, BIG)]);
    let batches = ExecSubqueryRunner.run(&plan, &[vec![Value::Int32(3)]], &ctx(source, 2)).unwrap();
    let got: Vec<Row> = batches.iter().flat_map(batch_rows).collect();
    let want: Vec<Row> = data.iter().filter(|r| r[0] == Value::Int32(3)).map(|r| vec![r[2].clone()]).collect();
    assert_eq!(got, want);
}

#[test]
fn numeric_avg_rounds_half_away_from_zero() {
    let ty = DataType::Numeric { precision: Some(10), scale: 2 };
    let t = table_def(1, "n", &[("g", INT), ("x", ty)]);
    let source = Arc::new(MemorySource::new());
    // Group 0: 0.05 → 0.1; group 1: -0.15 → -0.2; group 2: 0.01, 0.02 → 0.0 (0.015 → 0.0 at scale 1).
    let g = arrow_array::Int32Array::from(vec![0, 1, 2, 2]);
    let x = arrow_array::Decimal128Array::from(vec![5, -15, 1, 2]).with_precision_and_scale(38, 2).unwrap();
    source.insert(
        1,
        vec![arrow_array::RecordBatch::try_from_iter([("g", Arc::new(g) as _), ("x", Arc::new(x) as _)]).unwrap()],
    );
    let plan =
        aggregate(scan(&t), vec![col(0, INT)], vec![agg(AggFunc::Avg, Some(col(1, ty)), false, None, numeric(1))]);
    let got = run(&plan, &ctx(source, 1)).unwrap();
    let n = |value| Value::Numeric { value, scale: 1 };
    assert_eq!(got, vec![vec![Value::Int32(0), n(1)], vec![Value::Int32(1), n(-2)], vec![Value::Int32(2), n(0)]]);
}
