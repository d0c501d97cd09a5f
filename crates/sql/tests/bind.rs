//! The binder on an in-memory catalog: plan shapes and types of
//! representative statements, PostgreSQL's errors, and every TPC-H and JOB
//! query.

#[path = "bind/tpch.rs"]
mod tpch;

use std::sync::Arc;

use ndpdb_sql::bind::{self, BindOptions};
use ndpdb_sql::catalog::{IndexDef, MemCatalog, TableDef, ViewDef};
use ndpdb_sql::plan::{AggFunc, BinaryOp, Expr, JoinKind, Node, Plan, Statement, SubqueryKind};
use ndpdb_sql::types::{DataType, Value};
use ndpdb_sql::{SqlError, SqlState};

/// A catalog holding the tables `schema` creates (bound by the binder).
fn catalog_from(schema: &str) -> MemCatalog {
    let mut cat = MemCatalog::default();
    for (id, stmt) in bind::parse(schema).expect("schema parses").iter().enumerate() {
        match bind::bind(stmt, &cat, &BindOptions::default()).expect("schema binds") {
            Statement::CreateTable { name, columns, primary_key, unique, .. } => {
                let t = TableDef {
                    id: id as u32,
                    name: name.clone(),
                    columns,
                    primary_key,
                    unique,
                    indexes: vec![],
                    stats: None,
                };
                cat.tables.insert(name, Arc::new(t));
            }
            other => panic!("not a CREATE TABLE: {other:?}"),
        }
    }
    cat
}

/// TPC-H's tables, one index and a view.
fn tpch() -> MemCatalog {
    let mut cat = catalog_from(tpch::SCHEMA);
    let nation = cat.tables.get_mut("nation").expect("nation");
    Arc::make_mut(nation).indexes.push(Arc::new(IndexDef {
        name: "nation_name".into(),
        table: "nation".into(),
        columns: vec![1],
        unique: true,
    }));
    let v = ViewDef {
        name: "big_orders".into(),
        columns: None,
        sql: "select o_orderkey, o_totalprice from orders where o_totalprice > 1000".into(),
    };
    cat.views.insert(v.name.clone(), Arc::new(v));
    cat
}

fn bind_one(cat: &MemCatalog, sql: &str) -> Result<Statement, SqlError> {
    let stmts = bind::parse(sql)?;
    assert_eq!(stmts.len(), 1, "{sql}");
    bind::bind(&stmts[0], cat, &BindOptions::default())
}

fn query(cat: &MemCatalog, sql: &str) -> Plan {
    match bind_one(cat, sql) {
        Ok(Statement::Query(p)) => p,
        other => panic!("{sql}: {other:?}"),
    }
}

fn error(cat: &MemCatalog, sql: &str) -> SqlError {
    match bind_one(cat, sql) {
        Err(e) => e,
        Ok(s) => panic!("{sql} bound: {s:?}"),
    }
}

fn types(p: &Plan) -> Vec<DataType> {
    p.schema.iter().map(|f| f.ty).collect()
}

fn names(p: &Plan) -> Vec<String> {
    p.schema.iter().map(|f| f.name.clone()).collect()
}

fn numeric(scale: u8) -> DataType {
    DataType::Numeric { precision: None, scale }
}

/// The node kinds from the root down the first-child chain.
fn spine(p: &Plan) -> Vec<&'static str> {
    let mut out = vec![];
    let mut cur = Some(p);
    while let Some(n) = cur {
        out.push(match &n.node {
            Node::Scan { .. } => "Scan",
            Node::Values { .. } => "Values",
            Node::Series { .. } => "Series",
            Node::Filter { .. } => "Filter",
            Node::Project { .. } => "Project",
            Node::Join { .. } => "Join",
            Node::Aggregate { .. } => "Aggregate",
            Node::Sort { .. } => "Sort",
            Node::Limit { .. } => "Limit",
            Node::Distinct { .. } => "Distinct",
            Node::SetOp { .. } => "SetOp",
        });
        cur = n.children().into_iter().next();
    }
    out
}

#[test]
fn every_tpch_query_binds_with_postgresql_types() {
    let cat = tpch();
    for (i, q) in tpch::QUERIES.iter().enumerate() {
        let p = bind_one(&cat, q).unwrap_or_else(|e| panic!("Q{}: {e} ({:?})", i + 1, e.hint));
        assert!(matches!(p, Statement::Query(_)), "Q{}", i + 1);
    }
    let q1 = query(&cat, tpch::QUERIES[0]);
    assert_eq!(names(&q1)[..3], ["l_returnflag", "l_linestatus", "sum_qty"]);
    assert_eq!(
        types(&q1),
        vec![
            DataType::Char(1),
            DataType::Char(1),
            numeric(2),
            numeric(2),
            numeric(4),
            numeric(6),
            numeric(16),
            numeric(16),
            numeric(16),
            DataType::Int64
        ]
    );
    assert_eq!(spine(&q1), ["Sort", "Project", "Aggregate", "Filter", "Scan"]);
    // Q14: 100.00 * sum(..) / sum(..): scale 2 + 4, then the division's 16.
    assert_eq!(types(&query(&cat, tpch::QUERIES[13])), vec![numeric(16)]);
    // Q7's extract(year ..) is numeric, Q22's substring text.
    assert_eq!(types(&query(&cat, tpch::QUERIES[6]))[2], numeric(0));
    assert_eq!(types(&query(&cat, tpch::QUERIES[21]))[0], DataType::Text);
}

#[test]
fn every_job_query_binds() {
    let dir = ndpdb_workload::job::default_job_dir().expect("shared/workloads/job is there");
    let schema = std::fs::read_to_string(dir.join("schema.sql")).expect("schema.sql");
    let cat = catalog_from(&schema);
    let mut files: Vec<_> =
        std::fs::read_dir(dir.join("queries")).expect("queries").flatten().map(|e| e.path()).collect();
    files.sort();
    let mut bound = 0;
    for f in &files {
        let sql = std::fs::read_to_string(f).expect("query");
        match bind_one(&cat, &sql) {
            Ok(Statement::Query(p)) => {
                assert!(!p.schema.is_empty());
                bound += 1;
            }
            other => panic!("{}: {other:?}", f.display()),
        }
    }
    assert_eq!(bound, 113);
}

/// The first node of `kind` in a pre-order walk.
fn find<'a>(p: &'a Plan, pred: &dyn Fn(&Node) -> bool) -> Option<&'a Plan> {
    if pred(&p.node) {
        return Some(p);
    }
    p.children().into_iter().find_map(|c| find(c, pred))
}

#[test]
fn select_shapes_and_types() {
    let cat = tpch();
    let p = query(&cat, "select n_name, n_regionkey + 1 as k from nation where n_nationkey > 3");
    assert_eq!(spine(&p), ["Project", "Filter", "Scan"]);
    assert_eq!(names(&p), ["n_name", "k"]);
    let Some(Plan { node: Node::Scan { columns, emit_vid, .. }, .. }) = find(&p, &|n| matches!(n, Node::Scan { .. }))
    else {
        panic!("no scan")
    };
    assert_eq!((columns.len(), *emit_vid), (4, false));
    // Literal typing: int4, int8, numeric with its scale; unknown → text.
    let p = query(&cat, "select 1, 3000000000, 1.50, 'x', 1 + 2.5, 2 * 1.25, 7 / 2, 7.0 / 2, 1e3");
    assert_eq!(
        types(&p),
        vec![
            DataType::Int32,
            DataType::Int64,
            numeric(2),
            DataType::Text,
            numeric(1),
            numeric(2),
            DataType::Int32,
            numeric(16),
            numeric(0)
        ]
    );
    assert_eq!(names(&p)[0], "?column?");
    // Date arithmetic.
    let p = query(
        &cat,
        "select o_orderdate + 1, o_orderdate - o_orderdate, o_orderdate + interval '3 month', \
         date '1998-12-01' - interval '90' day, o_orderdate - 7 from orders",
    );
    assert_eq!(
        types(&p),
        vec![DataType::Date, DataType::Int32, DataType::Timestamp, DataType::Timestamp, DataType::Date]
    );
    // The date literal is parsed; the interval too.
    let Node::Project { exprs, .. } = &p.node else { panic!() };
    let Expr::Binary { left, right, .. } = &exprs[3] else { panic!("{:?}", exprs[3]) };
    assert_eq!(**left, Expr::literal(Value::Date(10561)));
    assert!(matches!(&**right, Expr::Literal { value: Value::Interval(iv), .. } if iv.days == 90));
}

#[test]
fn comparisons_cast_operands_to_one_type() {
    let cat = tpch();
    let p = query(
        &cat,
        "select * from lineitem where l_quantity < 24 and l_shipdate >= '1994-01-01' and l_returnflag = 'R'",
    );
    let Some(Plan { node: Node::Filter { predicate, .. }, .. }) = find(&p, &|n| matches!(n, Node::Filter { .. }))
    else {
        panic!()
    };
    let mut cmps = vec![];
    collect_comparisons(predicate, &mut cmps);
    for (l, r) in &cmps {
        match (l.ty(), r.ty()) {
            (DataType::Numeric { .. }, DataType::Numeric { .. }) => {}
            (a, b) => assert_eq!(a, b, "{l:?} vs {r:?}"),
        }
    }
    assert_eq!(cmps.len(), 3);
    assert_eq!(cmps[1].1.ty(), DataType::Date);
}

fn collect_comparisons(e: &Expr, out: &mut Vec<(Expr, Expr)>) {
    if let Expr::Binary { op, left, right, .. } = e {
        if op.is_comparison() {
            out.push(((**left).clone(), (**right).clone()));
        } else {
            collect_comparisons(left, out);
            collect_comparisons(right, out);
        }
    }
}

#[test]
fn joins_using_natural_and_star() {
    let cat = catalog_from(
        "create table a (k int, x text); create table b (k int, y date); create table c (k bigint, x text, z int)",
    );
    let p = query(&cat, "select * from a join b using (k)");
    assert_eq!(names(&p), ["k", "x", "y"]);
    let p = query(&cat, "select * from a natural full join c");
    assert_eq!(names(&p), ["k", "x", "z"]);
    assert_eq!(types(&p)[0], DataType::Int64);
    let p = query(&cat, "select a.k, c.k, k from a join c using (k, x)");
    assert_eq!(types(&p), vec![DataType::Int32, DataType::Int64, DataType::Int64]);
    let p = query(&cat, "select b.*, a.* from a left join b on a.k = b.k cross join c");
    assert_eq!(names(&p), ["k", "y", "k", "x"]);
    let j = find(&p, &|n| matches!(n, Node::Join { kind: JoinKind::Left, .. })).expect("left join");
    assert!(j.schema[3].nullable, "right side of a LEFT JOIN is nullable");
    let p = query(&cat, "select s.v from (select k + 1 from a) s (v), b as bb where s.v = bb.k");
    assert_eq!(types(&p), vec![DataType::Int32]);
    for (sql, code, msg) in [
        ("select k from a, b", SqlState::AMBIGUOUS_COLUMN, "column reference \"k\" is ambiguous"),
        (
            "select * from a join b using (x)",
            SqlState::UNDEFINED_COLUMN,
            "column \"x\" specified in USING clause does not exist in right table",
        ),
        ("select q.k from a", SqlState::UNDEFINED_TABLE, "missing FROM-clause entry for table \"q\""),
    ] {
        let e = error(&cat, sql);
        assert_eq!((e.code, e.message.as_str()), (code, msg), "{sql}");
    }
}

#[test]
fn aggregates_group_by_having_order_by() {
    let cat = tpch();
    let p = query(
        &cat,
        "select n_regionkey as r, count(*), sum(n_nationkey), avg(n_nationkey), min(n_name), \
         count(distinct n_name) filter (where n_nationkey > 2) from nation group by 1 having max(n_nationkey) > 3 order by r",
    );
    assert_eq!(spine(&p), ["Sort", "Project", "Filter", "Aggregate", "Scan"]);
    assert_eq!(
        types(&p),
        vec![DataType::Int32, DataType::Int64, DataType::Int64, numeric(16), DataType::Char(25), DataType::Int64]
    );
    let agg = find(&p, &|n| matches!(n, Node::Aggregate { .. })).expect("aggregate");
    let Node::Aggregate { group_by, aggregates, .. } = &agg.node else { panic!() };
    assert_eq!(group_by.len(), 1);
    assert_eq!(aggregates.len(), 6, "HAVING's max joins the select list's aggregates");
    assert_eq!(aggregates[0].func, AggFunc::CountStar);
    assert!(aggregates[4].distinct && aggregates[4].filter.is_some());
    // sum(bigint) and sum(numeric) are numeric; expressions of group keys work.
    let p =
        query(&cat, "select o_orderkey + 1, sum(o_orderkey), sum(o_totalprice) from orders group by o_orderkey + 1");
    assert_eq!(types(&p), vec![DataType::Int64, numeric(0), numeric(2)]);
    // GROUP BY an output alias; ORDER BY an expression not selected.
    let p = query(&cat, "select n_regionkey * 2 as r2 from nation group by r2 order by count(*) desc nulls last");
    assert_eq!(spine(&p), ["Project", "Sort", "Project", "Aggregate", "Scan"]);
    let Node::Project { .. } = &p.node else { panic!() };
    assert_eq!(p.schema.len(), 1);
    let e = error(&cat, "select n_name, count(*) from nation");
    assert_eq!(e.code, SqlState::GROUPING_ERROR);
    assert_eq!(
        e.message,
        "column \"nation.n_name\" must appear in the GROUP BY clause or be used in an aggregate function"
    );
    let e = error(&cat, "select n_name from nation where count(*) > 1");
    assert_eq!(
        (e.code, e.message.as_str()),
        (SqlState::GROUPING_ERROR, "aggregate functions are not allowed in WHERE")
    );
}

#[test]
fn subqueries_and_correlation_depth() {
    let cat = tpch();
    let p = query(
        &cat,
        "select n_name from nation n where exists (select 1 from region r where r.r_regionkey = n.n_regionkey \
         and exists (select 1 from supplier where s_nationkey = n.n_nationkey and s_suppkey = r.r_regionkey))",
    );
    let mut outer = vec![];
    collect_outer(&p, &mut outer);
    // n.n_regionkey from one level in; n.n_nationkey from two; r.r_regionkey from one.
    outer.sort();
    assert_eq!(outer, vec![(1, 0), (1, 2), (2, 0)]);
    let p = query(
        &cat,
        "select (select max(r_name) from region), n_nationkey in (select s_nationkey from supplier) from nation",
    );
    assert_eq!(types(&p), vec![DataType::Char(25), DataType::Bool]);
    let p = query(&cat, "select * from nation where n_nationkey > all (select s_suppkey from supplier)");
    let f = find(&p, &|n| matches!(n, Node::Filter { .. })).expect("filter");
    let Node::Filter {
        predicate: Expr::Subquery { kind: SubqueryKind::Quantified { op: BinaryOp::Gt, all: true, .. }, .. },
        ..
    } = &f.node
    else {
        panic!("{:?}", f.node)
    };
    let e = error(&cat, "select (select r_regionkey, r_name from region) from nation");
    assert_eq!(e.code, SqlState::SYNTAX_ERROR);
}

/// (depth, index) of every Outer reference in a plan's expressions.
fn collect_outer(p: &Plan, out: &mut Vec<(usize, usize)>) {
    let mut visit = |e: &Expr| collect_outer_expr(e, out);
    match &p.node {
        Node::Filter { predicate, .. } => visit(predicate),
        Node::Project { exprs, .. } => exprs.iter().for_each(&mut visit),
        Node::Join { on: Some(on), .. } => visit(on),
        _ => {}
    }
    for c in p.children() {
        collect_outer(c, out);
    }
}

fn collect_outer_expr(e: &Expr, out: &mut Vec<(usize, usize)>) {
    match e {
        Expr::Outer { depth, index, .. } => out.push((*depth, *index)),
        Expr::Binary { left, right, .. } => {
            collect_outer_expr(left, out);
            collect_outer_expr(right, out);
        }
        Expr::Subquery { plan, .. } => collect_outer(plan, out),
        _ => {}
    }
}

#[test]
fn set_operations_values_ctes_and_views() {
    let cat = tpch();
    let p = query(&cat, "select n_nationkey from nation union all select 1.5 order by 1 limit 3 offset 1");
    assert_eq!(spine(&p)[..3], ["Limit", "Sort", "SetOp"]);
    assert_eq!(types(&p), vec![numeric(1)]);
    let Node::Limit { limit: Some(3), offset: 1, .. } = &p.node else { panic!("{:?}", p.node) };
    let p = query(&cat, "values (1, 'a'), (2.5, null)");
    assert_eq!(names(&p), ["column1", "column2"]);
    assert_eq!(types(&p), vec![numeric(1), DataType::Text]);
    let p = query(&cat, "with a (x) as (select 1), b as (select x + 1 as y from a) select y from b, a");
    assert_eq!(names(&p), ["y"]);
    let p = query(&cat, "select o_totalprice from big_orders where o_orderkey = 1");
    assert_eq!(types(&p), vec![DataType::Numeric { precision: Some(15), scale: 2 }]);
    let p = query(&cat, "select distinct n_regionkey from nation order by n_regionkey");
    assert_eq!(spine(&p), ["Sort", "Distinct", "Project", "Scan"]);
    let e = error(&cat, "select 1 union select 'a'::text");
    assert_eq!(
        (e.code, e.message.as_str()),
        (SqlState::DATATYPE_MISMATCH, "UNION types integer and text cannot be matched")
    );
    let e = error(&cat, "select 1, 2 intersect select 1");
    assert_eq!(e.message, "each INTERSECT query must have the same number of columns");
    let e = error(&cat, "select distinct n_name from nation order by n_comment");
    assert_eq!(e.code, SqlState::INVALID_COLUMN_REFERENCE);
}

#[test]
fn expressions_functions_and_case() {
    let cat = tpch();
    let p = query(
        &cat,
        "select coalesce(p_size, 1.5), nullif(p_name, 'x'), greatest(1, p_size, 3000000000), \
         case when p_size > 3 then 1 else 2.5 end, case p_size when 1 then 'one' end, \
         length(p_name), upper(p_name), substring(p_name from 2 for 3), substr(p_name, 2), position('a' in p_name), \
         trim(both 'x' from p_name), replace(p_name, 'a', 'b'), concat(p_name, 1), p_name || p_size, left(p_name, 2), \
         lpad(p_name, 5, '*'), starts_with(p_name, 'a'), extract(year from date '2000-01-01'), \
         date_part('month', date '2000-01-01'), date_trunc('month', date '2000-01-01'), now(), current_date, \
         abs(-p_size), round(p_retailprice, 1), round(p_size), floor(p_retailprice), sqrt(p_size), power(2, 3), \
         p_size between 1 and 5, p_name not like 'a!%%' escape '!', p_name ilike 'A%', p_size is not null, \
         (p_size > 1) is true, p_size is distinct from 3, cast(p_size as numeric(10,2)), p_size::text, -p_retailprice, \
         p_size % 3, p_size in (1, 2.5) from part",
    );
    let t = types(&p);
    let expected = [
        numeric(1),
        DataType::Varchar(Some(55)),
        DataType::Int64,
        numeric(1),
        DataType::Text,
        DataType::Int32,
        DataType::Text,
        DataType::Text,
        DataType::Text,
        DataType::Int32,
        DataType::Text,
        DataType::Text,
        DataType::Text,
        DataType::Text,
        DataType::Text,
        DataType::Text,
        DataType::Bool,
        numeric(0),
        DataType::Float64,
        DataType::Timestamp,
        DataType::Timestamp,
        DataType::Date,
        DataType::Int32,
        numeric(1),
        DataType::Float64,
        numeric(0),
        DataType::Float64,
        DataType::Float64,
    ];
    assert_eq!(t[..expected.len()], expected);
    assert!(t[expected.len()..expected.len() + 6].iter().all(|t| *t == DataType::Bool));
    assert_eq!(
        t[expected.len() + 6..],
        [
            DataType::Numeric { precision: Some(10), scale: 2 },
            DataType::Text,
            numeric(2),
            DataType::Int32,
            DataType::Bool
        ]
    );
    let Node::Project { exprs, .. } = &p.node else { panic!() };
    assert!(matches!(&exprs[29], Expr::Like { escape: Some('!'), negated: true, .. }), "{:?}", exprs[29]);
    let between = &exprs[28];
    assert!(matches!(between, Expr::Binary { op: BinaryOp::And, .. }), "BETWEEN is >= AND <=: {between:?}");
}

#[test]
fn parameters_take_declared_or_inferred_types() {
    let cat = tpch();
    let stmts = bind::parse(
        "select n_name from nation where n_nationkey = $1 and n_name like $2 and $3::date > date '2000-01-01'",
    )
    .unwrap();
    let (s, params) = bind::bind_with_params(&stmts[0], &cat, &BindOptions::default()).unwrap();
    assert!(matches!(s, Statement::Query(_)));
    assert_eq!(params, vec![DataType::Int32, DataType::Text, DataType::Date]);
    let opts = BindOptions { param_types: vec![DataType::Int64] };
    let (_, params) = bind::bind_with_params(&stmts[0], &cat, &opts).unwrap();
    assert_eq!(params[0], DataType::Int64);
}

#[test]
fn dml_sources() {
    let cat =
        catalog_from("create table t (a int not null, b numeric(10,2) default 1.5, c text default 'x' || 'y', d date)");
    let Statement::Insert { source, .. } =
        bind_one(&cat, "insert into t (d, a) values ('2020-01-02', 1), (null, 2)").unwrap()
    else {
        panic!()
    };
    let Node::Values { rows } = &source.node else { panic!("{:?}", source.node) };
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0].iter().map(Expr::ty).collect::<Vec<_>>(),
        [DataType::Int32, DataType::Numeric { precision: Some(10), scale: 2 }, DataType::Text, DataType::Date]
    );
    assert!(matches!(&rows[1][3], Expr::Literal { value: Value::Null, ty: DataType::Date }));
    let Statement::Insert { source, .. } =
        bind_one(&cat, "insert into t select a + 1, b, c, d from t where a > 1").unwrap()
    else {
        panic!()
    };
    assert_eq!(spine(&source)[0], "Project");
    assert_eq!(source.schema.len(), 4);
    let Statement::Insert { source, .. } =
        bind_one(&cat, "insert into t values (1, default, default, default)").unwrap()
    else {
        panic!()
    };
    let Node::Values { rows } = &source.node else { panic!() };
    assert!(
        matches!(&rows[0][2], Expr::Binary { op: BinaryOp::Concat, .. }),
        "DEFAULT's text is bound: {:?}",
        rows[0][2]
    );
    let Statement::Update { source, .. } = bind_one(&cat, "update t set b = b * 2, d = default where a = 3").unwrap()
    else {
        panic!()
    };
    assert_eq!(spine(&source), ["Project", "Filter", "Scan"]);
    assert_eq!(
        types(&source),
        vec![
            DataType::Int64,
            DataType::Int32,
            DataType::Numeric { precision: Some(10), scale: 2 },
            DataType::Text,
            DataType::Date
        ]
    );
    let Node::Project { exprs, .. } = &source.node else { panic!() };
    assert_eq!(exprs[0], Expr::column(4, DataType::Int64), "the VID comes from the scan's last column");
    let Statement::Delete { source, .. } = bind_one(&cat, "delete from t where d < current_date").unwrap() else {
        panic!()
    };
    assert_eq!(types(&source), vec![DataType::Int64]);
    let Some(Plan { node: Node::Scan { emit_vid: true, .. }, .. }) = find(&source, &|n| matches!(n, Node::Scan { .. }))
    else {
        panic!()
    };
    for (sql, code, msg) in [
        ("insert into t (a, a) values (1, 2)", SqlState::DUPLICATE_COLUMN, "column \"a\" specified more than once"),
        ("insert into t (a) values (1, 2)", SqlState::SYNTAX_ERROR, "INSERT has more expressions than target columns"),
        ("insert into t (zz) values (1)", SqlState::UNDEFINED_COLUMN, "column \"zz\" of relation \"t\" does not exist"),
        (
            "insert into t (a) values (true)",
            SqlState::DATATYPE_MISMATCH,
            "column \"a\" is of type integer but expression is of type boolean",
        ),
        ("update t set a = 1, a = 2", SqlState::SYNTAX_ERROR, "multiple assignments to same column \"a\""),
        ("delete from nope", SqlState::UNDEFINED_TABLE, "relation \"nope\" does not exist"),
    ] {
        let e = error(&cat, sql);
        assert_eq!((e.code, e.message.as_str()), (code, msg), "{sql}");
    }
}

#[test]
fn ddl_and_utility_statements() {
    let cat = tpch();
    let Statement::CreateTable { columns, primary_key, unique, .. } = bind_one(
        &cat,
        "create table if not exists x (a smallint primary key, b varchar(10) unique not null, c double precision default 0, \
         d timestamp, e boolean, f char(2), g bigint, h numeric(5), unique (c, d))",
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(primary_key, Some(vec![0]));
    assert_eq!(unique, vec![vec![1], vec![2, 3]]);
    assert!(columns[0].not_null && columns[1].not_null && !columns[2].not_null);
    assert_eq!(columns[7].ty, DataType::Numeric { precision: Some(5), scale: 0 });
    assert_eq!(columns[2].default.as_deref(), Some("0"));
    let Statement::CreateIndex { columns, unique: true, .. } =
        bind_one(&cat, "create unique index i on nation (n_regionkey, n_name)").unwrap()
    else {
        panic!()
    };
    assert_eq!(columns, vec![2, 1]);
    assert!(matches!(
        bind_one(&cat, "create or replace view v (k) as select n_nationkey from nation").unwrap(),
        Statement::CreateView { or_replace: true, .. }
    ));
    assert!(matches!(bind_one(&cat, "drop index if exists nope, nation_name").unwrap(), Statement::DropIndex { .. }));
    assert!(matches!(bind_one(&cat, "drop view big_orders").unwrap(), Statement::DropView { .. }));
    assert!(matches!(
        bind_one(&cat, "begin isolation level repeatable read").unwrap(),
        Statement::Begin { isolation: Some(_) }
    ));
    for (sql, expected) in [
        ("start transaction", Statement::Begin { isolation: None }),
        ("commit", Statement::Commit),
        ("end", Statement::Commit),
        ("rollback", Statement::Rollback),
        ("set ndp = on", Statement::Set { name: "ndp".into(), value: Some("on".into()) }),
        (
            "set statement_timeout to '5s'",
            Statement::Set { name: "statement_timeout".into(), value: Some("5s".into()) },
        ),
        ("set ndp to default", Statement::Set { name: "ndp".into(), value: None }),
        ("reset ndp", Statement::Set { name: "ndp".into(), value: None }),
        ("show ndp", Statement::Show { name: "ndp".into() }),
        ("analyze", Statement::Analyze { tables: vec![] }),
    ] {
        assert_eq!(bind_one(&cat, sql).unwrap(), expected, "{sql}");
    }
    assert!(matches!(
        bind_one(&cat, "set transaction isolation level serializable").unwrap(),
        Statement::SetTransaction { .. }
    ));
    assert!(matches!(bind_one(&cat, "analyze nation").unwrap(), Statement::Analyze { tables } if tables.len() == 1));
    assert!(matches!(bind_one(&cat, "explain analyze select 1").unwrap(), Statement::Explain { analyze: true, .. }));
    let Statement::Copy { columns, options, path, .. } = bind_one(
        &cat,
        "copy nation (n_name, n_nationkey) from '/tmp/n.csv' with (format csv, header, delimiter '|', null 'NULL')",
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!((columns, path.as_str()), (vec![1, 0], "/tmp/n.csv"));
    assert!(options.header && options.delimiter == '|' && options.null == "NULL");
    let Statement::Copy { options, .. } = bind_one(&cat, "copy nation from '/tmp/n.csv' csv header").unwrap() else {
        panic!()
    };
    assert!(options.header);
    for (sql, code, msg) in [
        ("create table nation (a int)", SqlState::DUPLICATE_TABLE, "relation \"nation\" already exists"),
        ("create table y (a int, a text)", SqlState::DUPLICATE_COLUMN, "column \"a\" specified more than once"),
        (
            "create index nation_name on part (p_size)",
            SqlState::DUPLICATE_TABLE,
            "relation \"nation_name\" already exists",
        ),
        ("drop table nope", SqlState::UNDEFINED_TABLE, "table \"nope\" does not exist"),
        ("drop index nope", SqlState::UNDEFINED_OBJECT, "index \"nope\" does not exist"),
        ("drop table big_orders", SqlState::WRONG_OBJECT_TYPE, "\"big_orders\" is not a table"),
        ("create view big_orders as select 1", SqlState::DUPLICATE_TABLE, "relation \"big_orders\" already exists"),
        (
            "create table z (a numeric(40))",
            SqlState::INVALID_PARAMETER_VALUE,
            "NUMERIC precision 40 must be between 1 and 38",
        ),
    ] {
        let e = error(&cat, sql);
        assert_eq!((e.code, e.message.as_str()), (code, msg), "{sql}");
    }
}

#[test]
fn errors_have_postgresql_codes_and_words() {
    let cat = tpch();
    for (sql, code, msg) in [
        ("selec 1", SqlState::SYNTAX_ERROR, "syntax error at or near \"selec\""),
        ("select (1", SqlState::SYNTAX_ERROR, "syntax error at end of input"),
        ("select * from nosuch", SqlState::UNDEFINED_TABLE, "relation \"nosuch\" does not exist"),
        ("select x from nation", SqlState::UNDEFINED_COLUMN, "column \"x\" does not exist"),
        ("select nation.x from nation", SqlState::UNDEFINED_COLUMN, "column nation.x does not exist"),
        (
            "select n_name from nation a, nation b",
            SqlState::AMBIGUOUS_COLUMN,
            "column reference \"n_name\" is ambiguous",
        ),
        (
            "select n_name, count(*) from nation group by n_regionkey",
            SqlState::GROUPING_ERROR,
            "column \"nation.n_name\" must appear in the GROUP BY clause or be used in an aggregate function",
        ),
        ("select 1 + 'a'::text", SqlState::UNDEFINED_FUNCTION, "operator does not exist: integer + text"),
        ("select foo(1)", SqlState::UNDEFINED_FUNCTION, "function foo(integer) does not exist"),
        ("select sum(n_name) from nation", SqlState::UNDEFINED_FUNCTION, "function sum(character) does not exist"),
        (
            "select case when true then 'a'::text else 1 end",
            SqlState::DATATYPE_MISMATCH,
            "CASE types integer and text cannot be matched",
        ),
        ("select true::date", SqlState("42846"), "cannot cast type boolean to date"),
        ("select 1 order by 5", SqlState::INVALID_COLUMN_REFERENCE, "ORDER BY position 5 is not in select list"),
        (
            "select n_name from nation group by 3",
            SqlState::INVALID_COLUMN_REFERENCE,
            "GROUP BY position 3 is not in select list",
        ),
        (
            "select * from nation where n_name",
            SqlState::DATATYPE_MISMATCH,
            "argument of WHERE must be type boolean, not type character",
        ),
        ("select count(count(*)) from nation", SqlState::GROUPING_ERROR, "aggregate function calls cannot be nested"),
        ("select date 'x'", SqlState::INVALID_DATETIME_FORMAT, "invalid input syntax for type date: \"x\""),
        (
            "with recursive r as (select 1) select * from r",
            SqlState::FEATURE_NOT_SUPPORTED,
            "WITH RECURSIVE is not supported yet",
        ),
        ("select * from nation n, region n", SqlState("42712"), "table name \"n\" specified more than once"),
        (
            "select * from nation join nation on true",
            SqlState("42712"),
            "table name \"nation\" specified more than once",
        ),
        ("select date '2000-01-01' + '1 day'", SqlState("42725"), "operator is not unique: date + unknown"),
        ("select 1 limit -1", SqlState("2201W"), "LIMIT must not be negative"),
        (
            "select * from nation where n_nationkey in (select 1, 2)",
            SqlState::SYNTAX_ERROR,
            "subquery has too many columns",
        ),
        (
            "select row_number() over () from nation",
            SqlState::FEATURE_NOT_SUPPORTED,
            "window functions are not supported yet",
        ),
    ] {
        let e = error(&cat, sql);
        assert_eq!((e.code, e.message.as_str()), (code, msg), "{sql}");
    }
    let e = error(&cat, "select 1 + 'a'::text");
    assert_eq!(
        e.hint.as_deref(),
        Some("No operator matches the given name and argument types. You might need to add explicit type casts.")
    );
}

#[test]
fn output_column_names_are_postgresql_s() {
    let cat = tpch();
    let p = query(
        &cat,
        "select (select 1), exists(select 1), interval '1 day', date '2000-01-01', trim(' a '), trim(leading 'a' from 'ab'), \
         position('a' in 'b'), substring('abc' from 1 for 1), extract(year from date '2000-01-01'), ceil(1.5), 1::int, \
         n_name::text, current_date, now() is not null, cast(1 as numeric(5,2)), 'x'::char(2), 'x'::varchar, numeric '1.5', \
         coalesce(1,2), timestamp '2000-01-01' from nation",
    );
    let expected = "?column? exists interval date btrim ltrim position substring extract ceil int4 n_name current_date \
                    ?column? numeric bpchar varchar numeric coalesce timestamp";
    assert_eq!(names(&p).join(" "), expected.split_whitespace().collect::<Vec<_>>().join(" "));
}

#[test]
fn subqueries_in_an_aggregated_select_list_see_group_keys() {
    let cat = tpch();
    let p = query(
        &cat,
        "select n_regionkey, (select count(*) from region where r_regionkey = n_regionkey) from nation group by n_regionkey",
    );
    let mut outer = vec![];
    collect_outer(&p, &mut outer);
    // The key's column in the Aggregate's output, not in the scan's.
    assert_eq!(outer, vec![(1, 0)]);
    assert_eq!(types(&p), vec![DataType::Int32, DataType::Int64]);
    let e = error(&cat, "select (select n_name from region limit 1) from nation group by n_regionkey");
    assert_eq!(
        (e.code, e.message.as_str()),
        (SqlState::GROUPING_ERROR, "subquery uses ungrouped column \"nation.n_name\" from outer query")
    );
}
