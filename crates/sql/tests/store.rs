//! The storage glue on a real database in a temporary directory: every
//! SQL type through insert and both scan paths, the catalog across reopen
//! and crash, transactional DDL, constraint errors, ANALYZE and streaming.

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_sql::SqlState;
use ndpdb_sql::catalog::{ColumnDef, IndexDef, TableDef, ViewDef};
use ndpdb_sql::exec::{ScanSpec, TableSource};
use ndpdb_sql::plan::{Access, BinaryOp, Expr};
use ndpdb_sql::store::write::Writer;
use ndpdb_sql::store::{CatalogStore, SqlTxn, TxnSource, analyze};
use ndpdb_sql::types::{DataType, Value};
use ndpdb_storage::{Freshness, Store, StoreOptions};
use ndpdb_txn::{Database, Isolation};

fn device(dir: &Path, create: bool) -> Device {
    let p = Profile::load("cosmos-plus").unwrap();
    let o = DeviceOptions::with_clock(ClockKind::Virtual);
    if create { Device::create(dir, p, Some(64 << 20), o).unwrap() } else { Device::open(dir, p, o).unwrap() }
}

fn create(dir: &Path) -> Arc<Database> {
    Arc::new(Database::create(Store::new(device(dir, true), StoreOptions::default()).unwrap()).unwrap())
}

fn reopen(dir: &Path) -> Arc<Database> {
    let (store, meta) = Store::open(device(dir, false), StoreOptions::default()).unwrap();
    Arc::new(Database::open(store, meta))
}

/// A writer with the database's index image in `dir`.
fn writer(dir: &Path) -> Writer {
    let profile = Profile::load(ndpdb_device::profile::DEFAULT_PROFILE).unwrap();
    let (ix, _) = ndpdb_sql::store::index::IndexStore::open(dir, &profile, ClockKind::Virtual, 16 << 20).unwrap();
    Writer::new(Arc::new(ix))
}

fn col(name: &str, ty: DataType, not_null: bool) -> ColumnDef {
    ColumnDef { name: name.into(), ty, not_null, default: None }
}

fn begin(db: &Arc<Database>) -> SqlTxn {
    SqlTxn::begin(db.clone(), Isolation::RepeatableRead)
}

fn all_types() -> Vec<ColumnDef> {
    vec![
        col("k", DataType::Int32, true),
        col("s", DataType::Int16, false),
        col("b", DataType::Int64, false),
        col("n", DataType::Numeric { precision: Some(10), scale: 2 }, false),
        col("f", DataType::Float64, false),
        col("t", DataType::Bool, false),
        col("d", DataType::Date, false),
        col("ts", DataType::Timestamp, false),
        col("c", DataType::Char(4), false),
        col("v", DataType::Varchar(Some(10)), false),
        col("x", DataType::Text, false),
    ]
}

fn row(k: i32) -> Vec<Value> {
    if k % 7 == 3 {
        let mut r = vec![Value::Null; 11];
        r[0] = Value::Int32(k);
        return r;
    }
    vec![
        Value::Int32(k),
        Value::Int16(-(k as i16)),
        Value::Int64(i64::from(k) << 33),
        Value::Numeric { value: i128::from(k) * 101, scale: 2 },
        Value::Float64(f64::from(k) / 3.0),
        Value::Bool(k % 2 == 0),
        Value::Date(k - 10_000),
        Value::Timestamp(i64::from(k) * 1_000_000_007),
        Value::Text(format!("c{}", k % 100)),
        Value::Text(format!("v{k}")),
        Value::Text("ä".repeat(k as usize % 5)),
    ]
}

/// A new database in `dir` with table `all_types` (primary key c0) holding
/// `rows(0..rows)`, committed; its writer for further changes.
fn all_types_table(dir: &Path, rows: i32) -> (Arc<Database>, Writer, Arc<TableDef>) {
    let db = create(dir);
    let cat = CatalogStore::open(db.clone()).unwrap();
    let w = writer(dir);
    let txn = begin(&db);
    let def = cat.create_table(&txn, "all_types", all_types(), Some(vec![0]), vec![], false).unwrap().unwrap();
    for k in 0..rows {
        w.insert(&txn, &def, &row(k)).unwrap();
    }
    txn.commit().unwrap();
    (db, w, def)
}

fn scan(
    txn: &SqlTxn,
    def: &TableDef,
    columns: &[usize],
    filter: Option<&Expr>,
    access: Access,
) -> (Vec<RecordBatch>, Option<Expr>) {
    let source = TxnSource::new(txn.clone(), 1, Freshness::Ship);
    let spec = ScanSpec { table: def, columns, filter, emit_vid: true, access: &access, key_filter: None };
    let out = source.scan(&spec).unwrap();
    // A host scan's morsels are deferred work, some without rows.
    let batches = out.batches.map(|m| m.and_then(|m| m.run())).collect::<Result<Vec<_>, _>>().unwrap();
    (batches.into_iter().filter(|b| b.num_rows() > 0).collect(), out.remaining)
}

fn rows_of(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

/// Batches joined into one, for comparing two scans' results.
fn concat(batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(&batches[0].schema(), batches).unwrap()
}

#[test]
fn every_type_round_trips_through_both_scan_paths() {
    let dir = tempfile::tempdir().unwrap();
    let (db, w, def) = all_types_table(dir.path(), 3000);

    // Another transaction's uncommitted writes: scans walk past them.
    let writer = begin(&db);
    for k in 0..2048 {
        w.update(&writer, &def, k, &row(k as i32 + 5000)).unwrap();
    }
    w.delete(&writer, &def, 2999).unwrap();
    let txn = begin(&db);
    let cols: Vec<usize> = (0..11).collect();
    let (host, applied) = scan(&txn, &def, &cols, None, Access::Host);
    assert!(applied.is_none());
    let (ndp, _) = scan(&txn, &def, &cols, None, Access::Ndp);
    assert_eq!(rows_of(&host), 3000);
    assert_eq!(host.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), [3000], "one morsel: up to 8,192 VIDs");
    let (host, ndp) = (concat(&host), concat(&ndp));
    assert_eq!(host, ndp, "host and NDP scans agree");
    // Every value comes back as it went in.
    for k in [0usize, 3, 4, 2999] {
        let expect = row(k as i32);
        for (c, v) in expect.iter().enumerate() {
            let a = host.column(c);
            assert_eq!(a.is_null(k), v.is_null(), "row {k} column {c}");
        }
    }
    let f = host.column(4).as_any().downcast_ref::<arrow_array::Float64Array>().unwrap();
    assert_eq!(f.value(4), 4.0 / 3.0);
    let n = host.column(3).as_any().downcast_ref::<arrow_array::Decimal128Array>().unwrap();
    assert_eq!(n.value(4), 404);
    let x = host.column(10).as_any().downcast_ref::<arrow_array::StringArray>().unwrap();
    assert_eq!(x.value(4), "ääää");
    let c = host.column(8).as_any().downcast_ref::<arrow_array::StringArray>().unwrap();
    assert_eq!(c.value(4), "c4");
    let vid = host.column(11).as_any().downcast_ref::<arrow_array::Int64Array>().unwrap();
    assert_eq!(vid.value(2999), 2999);

    // A pushed-down comparison: the whole filter, applied by the store.
    let gt =
        Expr::binary(BinaryOp::Gt, Expr::column(0, DataType::Int32), Expr::literal(Value::Int32(2500)), DataType::Bool);
    let (h, applied) = scan(&txn, &def, &cols, Some(&gt), Access::Host);
    let (n, _) = scan(&txn, &def, &cols, Some(&gt), Access::Ndp);
    assert!(applied.is_none());
    assert_eq!((rows_of(&h), rows_of(&n)), (499, 499));
    // On a date column (column 6 of the table, 1 of the scan), in a conjunction.
    let date = Expr::binary(
        BinaryOp::LtEq,
        Expr::literal(Value::Date(-9_990)),
        Expr::column(1, DataType::Date),
        DataType::Bool,
    );
    let and = Expr::and(
        date,
        Expr::binary(BinaryOp::Eq, Expr::column(0, DataType::Int32), Expr::literal(Value::Int32(1)), DataType::Bool),
    );
    let (h, applied) = scan(&txn, &def, &[0, 6], Some(&and), Access::Ndp);
    assert!(applied.is_none(), "both conjuncts are pushed");
    // The date holds for k >= 10 only, so with k = 1 nothing qualifies.
    assert_eq!(rows_of(&h), 0, "both conjuncts applied on the device");
    let (h, applied) = scan(&txn, &def, &[0, 6], Some(&and), Access::Host);
    assert!(applied.is_none());
    assert_eq!(rows_of(&h), 0, "and on the host");
    // A float comparison stays on the host.
    let fl = Expr::binary(
        BinaryOp::Gt,
        Expr::column(0, DataType::Float64),
        Expr::literal(Value::Float64(1.0)),
        DataType::Bool,
    );
    let (h, applied) = scan(&txn, &def, &[4], Some(&fl), Access::Ndp);
    assert_eq!(applied.as_ref(), Some(&fl));
    assert_eq!(rows_of(&h), 3000);
    // A conjunction of both: the executor is left the float comparison
    // only (the store applied the other).
    let fl1 = Expr::binary(
        BinaryOp::Gt,
        Expr::column(1, DataType::Float64),
        Expr::literal(Value::Float64(1.0)),
        DataType::Bool,
    );
    let both = Expr::and(gt.clone(), fl1.clone());
    for access in [Access::Host, Access::Ndp] {
        let (h, rest) = scan(&txn, &def, &[0, 4], Some(&both), access.clone());
        assert_eq!(rest.as_ref(), Some(&fl1), "{access:?}");
        assert_eq!(rows_of(&h), 499, "{access:?}: the store applied k > 2500");
    }
    txn.commit().unwrap();
    writer.commit().unwrap();
    let txn = begin(&db);
    let (h, _) = scan(&txn, &def, &[0], None, Access::Host);
    let (n, _) = scan(&txn, &def, &[0], None, Access::Ndp);
    assert_eq!((rows_of(&h), concat(&h)), (2999, concat(&n)), "and see them once committed");
}

#[test]
fn catalog_survives_reopen_and_crash() {
    let dir = tempfile::tempdir().unwrap();
    let expect;
    {
        let db = create(dir.path());
        let cat = CatalogStore::open(db.clone()).unwrap();
        let txn = begin(&db);
        let def = cat.create_table(&txn, "t", all_types(), Some(vec![0]), vec![vec![9]], false).unwrap().unwrap();
        let index = IndexDef { name: "t_v".into(), table: "t".into(), columns: vec![9], unique: false };
        assert!(cat.create_index(&txn, &index, false).unwrap());
        let view = ViewDef { name: "v".into(), columns: Some(vec!["a".into()]), sql: "select k from t".repeat(500) };
        cat.create_view(&txn, &view, false).unwrap();
        let w = writer(dir.path());
        for k in 0..50 {
            w.insert(&txn, &def, &row(k)).unwrap();
        }
        analyze::analyze(&cat, &txn, &def).unwrap();
        txn.commit().unwrap();
        let txn = begin(&db);
        expect = cat.load(&txn).unwrap();
        txn.commit().unwrap();
        // The constraints' indexes (t_pkey, t_<col>_key), then t_v.
        assert_eq!(expect.tables["t"].indexes.len(), 3);
        assert_eq!(expect.tables["t"].indexes[0].name, "t_pkey");
        assert_eq!(expect.tables["t"].indexes[2].name, "t_v");
        assert!(expect.tables["t"].stats.is_some());
        // Dropped without a checkpoint or a close: a crash.
    }
    let db = reopen(dir.path());
    let cat = CatalogStore::open(db.clone()).unwrap();
    let txn = begin(&db);
    let got = cat.load(&txn).unwrap();
    assert_eq!(got.tables, expect.tables);
    assert_eq!(got.views, expect.views);
    let (b, _) = scan(&txn, &got.tables["t"], &[0], None, Access::Host);
    assert_eq!(rows_of(&b), 50);
    txn.commit().unwrap();
    db.checkpoint().unwrap();
    drop((txn, cat, db));
    let db = reopen(dir.path());
    let cat = CatalogStore::open(db.clone()).unwrap();
    let txn = begin(&db);
    assert_eq!(cat.load(&txn).unwrap().tables, expect.tables, "after a checkpoint too");
}

#[test]
fn ddl_rolled_back_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let db = create(dir.path());
    let cat = CatalogStore::open(db.clone()).unwrap();
    let txn = begin(&db);
    cat.create_table(&txn, "t", vec![col("a", DataType::Int32, false)], None, vec![], false).unwrap();
    assert!(cat.load(&txn).unwrap().tables.contains_key("t"), "its own DDL is visible to it");
    let other = begin(&db);
    assert!(cat.load(&other).unwrap().tables.is_empty(), "not to others before it commits");
    other.commit().unwrap();
    txn.abort().unwrap();
    let txn = begin(&db);
    assert!(cat.load(&txn).unwrap().tables.is_empty());
    let def = cat.create_table(&txn, "t", vec![col("b", DataType::Text, false)], None, vec![], false).unwrap().unwrap();
    assert_eq!(def.columns[0].name, "b");
    let e = cat.create_table(&txn, "t", vec![col("a", DataType::Int32, false)], None, vec![], false).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (SqlState::DUPLICATE_TABLE, "relation \"t\" already exists"));
    assert!(cat.create_table(&txn, "t", vec![col("a", DataType::Int32, false)], None, vec![], true).unwrap().is_none());
    writer(dir.path()).insert(&txn, &def, &[Value::Text("x".into())]).unwrap();
    assert!(cat.drop_table(&txn, "t", false).unwrap());
    assert_eq!(cat.drop_table(&txn, "t", false).unwrap_err().code, SqlState::UNDEFINED_TABLE);
    // DROP then CREATE of one name: a new, empty storage table.
    let again =
        cat.create_table(&txn, "t", vec![col("b", DataType::Text, false)], None, vec![], false).unwrap().unwrap();
    assert_ne!(again.id, def.id);
    let (b, _) = scan(&txn, &again, &[0], None, Access::Host);
    assert_eq!(rows_of(&b), 0);
    txn.commit().unwrap();
}

#[test]
fn constraint_errors_have_postgresql_codes_and_messages() {
    let dir = tempfile::tempdir().unwrap();
    let db = create(dir.path());
    let cat = CatalogStore::open(db.clone()).unwrap();
    let w = writer(dir.path());
    let txn = begin(&db);
    let cols = vec![col("id", DataType::Int32, false), col("name", DataType::Varchar(Some(3)), false)];
    let def = cat.create_table(&txn, "t", cols, Some(vec![0]), vec![vec![1]], false).unwrap().unwrap();
    assert!(def.columns[0].not_null, "primary key columns are NOT NULL");
    let v1 = w.insert(&txn, &def, &[Value::Int32(1), Value::Text("a".into())]).unwrap();
    txn.commit().unwrap();

    let txn = begin(&db);
    let e = w.insert(&txn, &def, &[Value::Null, Value::Null]).unwrap_err();
    assert_eq!(e.code, SqlState::NOT_NULL_VIOLATION);
    assert_eq!(e.message, "null value in column \"id\" of relation \"t\" violates not-null constraint");
    assert_eq!(e.detail.as_deref(), Some("Failing row contains (null, null)."));
    let e = w.insert(&txn, &def, &[Value::Int32(2), Value::Text("abcd".into())]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (SqlState::STRING_DATA_RIGHT_TRUNCATION, "value too long for type character varying(3)")
    );
    let e = w.insert(&txn, &def, &[Value::Int32(1), Value::Null]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (SqlState::UNIQUE_VIOLATION, "duplicate key value violates unique constraint \"t_pkey\"")
    );
    assert_eq!(e.detail.as_deref(), Some("Key (id)=(1) already exists."));
    txn.abort().unwrap();

    // A key inserted by an aborted transaction is free again.
    let txn = begin(&db);
    w.insert(&txn, &def, &[Value::Int32(5), Value::Text("e".into())]).unwrap();
    txn.abort().unwrap();
    let txn = begin(&db);
    w.insert(&txn, &def, &[Value::Int32(5), Value::Text("e".into())]).unwrap();
    let e = w.insert(&txn, &def, &[Value::Int32(6), Value::Text("e".into())]).unwrap_err();
    assert_eq!(e.message, "duplicate key value violates unique constraint \"t_name_key\"");
    // Delete then insert of one key in one transaction.
    w.delete(&txn, &def, v1).unwrap();
    w.insert(&txn, &def, &[Value::Int32(1), Value::Text("a".into())]).unwrap();
    txn.commit().unwrap();

    // A fresh writer (a reopened database) rebuilds the sets from the rows.
    let w2 = Writer::new(w.indexes().clone());
    let txn = begin(&db);
    assert_eq!(w2.insert(&txn, &def, &[Value::Int32(5), Value::Null]).unwrap_err().code, SqlState::UNIQUE_VIOLATION);
    txn.abort().unwrap();
    // An update that changes the key frees the old one at commit.
    let txn = begin(&db);
    let (b, _) = scan(&txn, &def, &[0], None, Access::Host);
    let b = concat(&b);
    let vids = b.column(1).as_any().downcast_ref::<arrow_array::Int64Array>().unwrap();
    let ids = b.column(0).as_any().downcast_ref::<arrow_array::Int32Array>().unwrap();
    let at5 = (0..b.num_rows()).find(|&i| ids.value(i) == 5).unwrap();
    w2.update(&txn, &def, vids.value(at5) as u64, &[Value::Int32(7), Value::Text("e".into())]).unwrap();
    txn.commit().unwrap();
    let txn = begin(&db);
    w2.insert(&txn, &def, &[Value::Int32(5), Value::Null]).unwrap();
    assert_eq!(w2.insert(&txn, &def, &[Value::Int32(7), Value::Null]).unwrap_err().code, SqlState::UNIQUE_VIOLATION);
}

#[test]
fn analyze_figures_on_known_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = create(dir.path());
    let cat = CatalogStore::open(db.clone()).unwrap();
    let w = writer(dir.path());
    let txn = begin(&db);
    let cols = vec![
        col("ten", DataType::Int32, false),
        col("half_null", DataType::Int64, false),
        col("uniq", DataType::Int32, false),
        col("word", DataType::Text, false),
    ];
    let def = cat.create_table(&txn, "t", cols, None, vec![], false).unwrap().unwrap();
    let rows = (0..1000).map(|i| {
        vec![
            Value::Int32(i % 10),
            if i % 2 == 0 { Value::Null } else { Value::Int64(1) },
            Value::Int32(i),
            Value::Text(if i < 900 { "abcd".into() } else { format!("w{i}") }),
        ]
    });
    assert_eq!(w.insert_many(&txn, &def, rows).unwrap(), 1000);
    let stats = analyze::analyze(&cat, &txn, &def).unwrap();
    assert_eq!(stats.rows, 1000.0);
    let [ten, half, uniq, word] = &stats.columns[..] else { panic!() };
    assert_eq!((ten.distinct, ten.null_frac, ten.mcv.len()), (10.0, 0.0, 10));
    assert!(ten.mcv.iter().all(|(_, f)| (*f - 0.1).abs() < 1e-9));
    assert!(ten.histogram.is_empty(), "every value is common");
    assert_eq!((half.null_frac, half.distinct), (0.5, 1.0));
    assert_eq!(half.mcv, vec![(Value::Int64(1), 0.5)]);
    assert_eq!((uniq.distinct, uniq.mcv.len()), (1000.0, 0));
    assert_eq!(uniq.histogram.len(), 101);
    assert_eq!((uniq.histogram[0].clone(), uniq.histogram[100].clone()), (Value::Int32(0), Value::Int32(999)));
    assert_eq!(uniq.histogram[50], Value::Int32(499));
    assert_eq!(word.mcv, vec![(Value::Text("abcd".into()), 0.9)]);
    assert_eq!(word.distinct, 101.0);
    assert!((word.avg_width - (900.0 * 4.0 + 100.0 * 4.0) / 1000.0).abs() < 1e-9);
    let loaded = cat.load(&txn).unwrap();
    assert_eq!(loaded.tables["t"].stats.as_deref(), Some(&stats), "saved in the catalog");
    txn.commit().unwrap();
}

/// A host scan's counters are the same whether its morsels run on one
/// thread or on two at once: the store measures a morsel's device work as
/// the device's change across the call, so two morsels read at the same
/// time must not count each other's pages (TPC-H SF 1 Q1 once reported
/// twice its link bytes).
#[test]
fn a_host_scan_counts_its_pages_once_when_morsels_run_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _, def) = all_types_table(dir.path(), 16_000);
    let cols: Vec<usize> = (0..11).collect();
    let counted = |threads: usize| {
        let txn = begin(&db);
        let source = TxnSource::new(txn.clone(), 1, Freshness::Ship);
        let access = Access::Host;
        let spec =
            ScanSpec { table: &def, columns: &cols, filter: None, emit_vid: true, access: &access, key_filter: None };
        let out = source.scan(&spec).unwrap();
        let morsels: Vec<_> = out.batches.map(Result::unwrap).collect();
        let mut shares: Vec<Vec<_>> = (0..threads).map(|_| Vec::new()).collect();
        for (i, m) in morsels.into_iter().enumerate() {
            shares[i % threads].push(m);
        }
        let rows: usize = std::thread::scope(|s| {
            let handles: Vec<_> = shares
                .into_iter()
                .map(|share| s.spawn(move || share.into_iter().map(|m| m.run().unwrap().num_rows()).sum::<usize>()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(rows, 16_000);
        let c = *out.counters.lock();
        (c.link_bytes_to_host, c.medium_bytes_read, c.rows_examined)
    };
    let serial = counted(1);
    assert!(serial.0 > 0, "{serial:?}");
    for _ in 0..3 {
        assert_eq!(counted(2), serial, "two threads count what one does");
    }
}
