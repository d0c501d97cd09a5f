//! Conjunctions of terms (integers, byte strings) and several aggregates
//! per call: the device's PEs and the host's scans return the same rows and
//! aggregates, and both agree with a model written apart from
//! `Predicate::eval` (plain comparisons of decoded values).

mod common;

use common::{insert, new_store, snapshot, write};
use ndpdb_format::ndp::{Aggregate, CmpOp, MAX_TERMS, Operand, Partial, Predicate, Term};
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, NdpScan, Store, StoreError, Table};

/// A fixed-seed generator (xorshift), so every run checks the same cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: [&str; 6] = ["", "AIR", "AIR REG", "MAIL", "air", "\u{e9}t\u{e9}"];

/// `k int32 not null, v int64 null, s varchar(12) null, c char(8) null`.
fn table(store: &Store) -> std::sync::Arc<Table> {
    store
        .create_table(
            "t",
            vec![
                Column::new("k", ColumnType::Int32, false),
                Column::new("v", ColumnType::Int64, true),
                Column::new("s", ColumnType::Varchar(12), true),
                Column::new("c", ColumnType::Text(8), true),
            ],
        )
        .unwrap()
}

fn random_row(rng: &mut Rng, k: u64) -> Vec<Value> {
    let text = |rng: &mut Rng| match rng.below(7) {
        6 => Value::Null,
        i => Value::Text(WORDS[i as usize].as_bytes().to_vec()),
    };
    let v = if rng.below(9) == 0 { Value::Null } else { Value::Int(rng.below(200) as i64 - 100) };
    vec![Value::Int(k as i64), v, text(rng), text(rng)]
}

fn random_term(rng: &mut Rng) -> Term {
    let op = [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge][rng.below(6) as usize];
    let (column, value) = match rng.below(4) {
        0 => (0, Operand::Int(rng.below(1200) as i64)),
        1 => (1, Operand::Int(rng.below(200) as i64 - 100)),
        c => (c as u16, Operand::Bytes(WORDS[rng.below(6) as usize].as_bytes().to_vec())),
    };
    Term { column, op, value }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

/// The model: SQL's comparison of two decoded values, NULL never true.
fn model_term(t: &Term, row: &[Value]) -> bool {
    let ord = match (&row[usize::from(t.column)], &t.value) {
        (Value::Int(a), Operand::Int(b)) => a.cmp(b),
        (Value::Text(a), Operand::Bytes(b)) => a.as_slice().cmp(b.as_slice()),
        _ => return false,
    };
    match t.op {
        CmpOp::Eq => ord.is_eq(),
        CmpOp::Ne => ord.is_ne(),
        CmpOp::Lt => ord.is_lt(),
        CmpOp::Le => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        CmpOp::Ge => ord.is_ge(),
    }
}

#[test]
fn device_and_host_evaluate_conjunctions_as_the_model_does() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 16);
    let t = table(&store);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut rows: Vec<(u64, Vec<Value>)> = Vec::new();
    for k in 0..1200 {
        let r = random_row(&mut rng, k);
        rows.push((insert(&store, &t, 1, &r), r));
    }
    // Transaction 2 rewrites every fourth row: chains of two versions.
    for (vid, r) in rows.iter_mut().step_by(4) {
        *r = random_row(&mut rng, int(&r[0]).unwrap() as u64);
        write(&store, &t, *vid, 2, Some(r));
    }
    let snap = snapshot(3, &[]);
    let aggregates = [(Aggregate::CountStar, 0), (Aggregate::Sum, 1), (Aggregate::Min, 1), (Aggregate::Count, 1)];
    for case in 0..40 {
        let n = 1 + rng.below(4) as usize;
        let predicate = Predicate { terms: (0..n).map(|_| random_term(&mut rng)).collect() };
        let want: Vec<(u64, Vec<Value>)> = rows
            .iter()
            .filter(|(_, r)| predicate.terms.iter().all(|term| model_term(term, r)))
            .map(|(vid, r)| (*vid, vec![r[2].clone(), r[0].clone()]))
            .collect();
        let scan =
            NdpScan { table: &t, snapshot: &snap, predicate: Some(&predicate), pes: 4, freshness: Freshness::Ship };
        let ndp = store.ndp_rows(&scan, &[2, 0]).unwrap();
        let host = store.host_rows(&t, &snap, &[2, 0], Some(&predicate), 2).unwrap();
        assert_eq!(ndp.rows, want, "case {case}: NDP rows where {predicate:?}");
        assert_eq!(host.rows, want, "case {case}: host rows where {predicate:?}");
        let results = store.ndp_aggregates(&scan, &aggregates).unwrap();
        for (&(func, column), got) in aggregates.iter().zip(&results) {
            let mut p = Partial::default();
            for (_, r) in rows.iter().filter(|(_, r)| predicate.terms.iter().all(|term| model_term(term, r))) {
                p.add_row(int(&r[usize::from(column)]));
            }
            assert_eq!(got.value, p.result(func), "case {case}: NDP {func:?} where {predicate:?}");
            let host = store.host_aggregate(&t, &snap, func, column, Some(&predicate), 2).unwrap();
            assert_eq!(host.value, p.result(func), "case {case}: host {func:?} where {predicate:?}");
        }
        // The snapshot sees every newest version: one step per chain.
        assert_eq!(results[0].partial.visited, 1200, "every chain is walked once per call");
    }
}

#[test]
fn bad_terms_are_refused_before_anything_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 16);
    let t = table(&store);
    insert(&store, &t, 1, &[Value::Int(1), Value::Null, Value::Null, Value::Null]);
    let snap = snapshot(2, &[]);
    let refused = |p: Predicate| {
        let scan = NdpScan { table: &t, snapshot: &snap, predicate: Some(&p), pes: 2, freshness: Freshness::Ship };
        let e = store.ndp_rows(&scan, &[0]).unwrap_err();
        assert!(matches!(e, StoreError::InvalidInput(_)), "{e}");
        let h = store.host_rows(&t, &snap, &[0], Some(&p), 1).unwrap_err();
        assert!(matches!(h, StoreError::InvalidInput(_)), "{h}");
        e.to_string()
    };
    let bytes_on_int =
        Predicate { terms: vec![Term { column: 0, op: CmpOp::Eq, value: Operand::Bytes(b"1".to_vec()) }] };
    assert!(refused(bytes_on_int).contains("needs a char, varchar or text column"));
    assert!(refused(Predicate::int(2, CmpOp::Eq, 1)).contains("not numeric"));
    let many = Predicate { terms: vec![Predicate::int(0, CmpOp::Ge, 0).terms[0].clone(); MAX_TERMS + 1] };
    assert!(refused(many).contains("at most 16"));
    let sixteen = Predicate { terms: vec![Predicate::int(0, CmpOp::Ge, 0).terms[0].clone(); MAX_TERMS] };
    let scan = NdpScan { table: &t, snapshot: &snap, predicate: Some(&sixteen), pes: 2, freshness: Freshness::Ship };
    assert_eq!(store.ndp_rows(&scan, &[0]).unwrap().rows.len(), 1, "16 terms fit one call");
}
