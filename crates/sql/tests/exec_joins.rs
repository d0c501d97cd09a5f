//! Joins of every kind and algorithm against a row-at-a-time reference
//! (nested loops with three-valued logic), on random tables with NULL and
//! duplicate keys; one and two workers.

mod exec_support;

use std::sync::Arc;

use exec_support::*;
use ndpdb_sql::SqlState;
use ndpdb_sql::exec::memory::MemorySource;
use ndpdb_sql::plan::{BinaryOp, Expr, HashBuild, JoinAlgorithm, JoinKind};
use ndpdb_sql::types::{DataType, Value};

const W: usize = 3; // columns per table

struct Case {
    left: Vec<Row>,
    right: Vec<Row>,
    /// Join on `a` alone, or on (`a`, `b`).
    two_keys: bool,
    /// Also `left.c < right.c`.
    residual: bool,
}

impl Case {
    fn cond(&self, l: &Row, r: &Row) -> Option<bool> {
        let mut v = eq3(&l[0], &r[0]);
        if self.two_keys {
            v = and3(v, eq3(&l[1], &r[1]));
        }
        if self.residual {
            v = and3(v, lt3(&l[2], &r[2]));
        }
        v
    }

    fn reference(&self, kind: JoinKind) -> Vec<Row> {
        let nulls = vec![Value::Null; W];
        let mut out = Vec::new();
        let mut right_matched = vec![false; self.right.len()];
        for l in &self.left {
            let verdicts: Vec<Option<bool>> = self.right.iter().map(|r| self.cond(l, r)).collect();
            let matches: Vec<usize> = (0..verdicts.len()).filter(|&j| verdicts[j] == Some(true)).collect();
            for &j in &matches {
                right_matched[j] = true;
            }
            let cat = |r: &Row| l.iter().chain(r).cloned().collect::<Row>();
            match kind {
                JoinKind::Inner | JoinKind::Right => out.extend(matches.iter().map(|&j| cat(&self.right[j]))),
                JoinKind::Left | JoinKind::Full | JoinKind::Single => {
                    out.extend(matches.iter().map(|&j| cat(&self.right[j])));
                    if matches.is_empty() {
                        out.push(cat(&nulls));
                    }
                }
                JoinKind::Semi if !matches.is_empty() => out.push(l.clone()),
                JoinKind::Anti if matches.is_empty() => out.push(l.clone()),
                JoinKind::Semi | JoinKind::Anti => {}
                JoinKind::Mark => {
                    let mark = if !matches.is_empty() {
                        Value::Bool(true)
                    } else if verdicts.contains(&None) {
                        Value::Null
                    } else {
                        Value::Bool(false)
                    };
                    out.push(l.iter().cloned().chain([mark]).collect());
                }
            }
        }
        if matches!(kind, JoinKind::Right | JoinKind::Full) {
            for (j, r) in self.right.iter().enumerate() {
                if !right_matched[j] {
                    out.push(nulls.iter().chain(r).cloned().collect());
                }
            }
        }
        out
    }

    /// `on` over left ++ right columns, and the same split into hash keys.
    fn condition(&self) -> (Expr, Vec<Expr>, Vec<Expr>, Option<Expr>) {
        let (int, text, big) = (DataType::Int32, DataType::Text, DataType::Int64);
        let mut lk = vec![col(0, int)];
        let mut rk = vec![col(0, int)];
        let mut on = cmp(BinaryOp::Eq, col(0, int), col(W, int));
        if self.two_keys {
            lk.push(col(1, text));
            rk.push(col(1, text));
            // Written right = left, to exercise the key extraction's swap.
            on = Expr::and(on, cmp(BinaryOp::Eq, col(W + 1, text), col(1, text)));
        }
        let residual = self.residual.then(|| cmp(BinaryOp::Lt, col(2, big), col(W + 2, big)));
        if let Some(r) = &residual {
            on = Expr::and(on, r.clone());
        }
        (on, lk, rk, residual)
    }
}

fn hash(lk: &[Expr], rk: &[Expr], build: HashBuild) -> JoinAlgorithm {
    JoinAlgorithm::Hash { left_keys: lk.to_vec(), right_keys: rk.to_vec(), build }
}

const KINDS: [JoinKind; 7] =
    [JoinKind::Inner, JoinKind::Left, JoinKind::Right, JoinKind::Full, JoinKind::Semi, JoinKind::Anti, JoinKind::Mark];

fn check_all(left_rows: usize, right_rows: usize, seed: u64, shapes: &[(bool, bool)]) {
    let (lt, lb, left) = random_table(1, "l", left_rows, seed);
    let (rt, rb, right) = random_table(2, "r", right_rows, seed + 1);
    let source = Arc::new(MemorySource::new());
    source.insert(1, vec![lb]);
    source.insert(2, vec![rb]);
    for &(two_keys, residual) in shapes {
        let case = Case { left: left.clone(), right: right.clone(), two_keys, residual };
        let (on, lk, rk, res) = case.condition();
        for kind in KINDS {
            let want = sorted(case.reference(kind));
            let mut algorithms = vec![
                (Some(on.clone()), JoinAlgorithm::NestedLoop),
                (Some(on.clone()), JoinAlgorithm::Unchosen),
                (res.clone(), hash(&lk, &rk, HashBuild::Right)),
            ];
            if matches!(kind, JoinKind::Semi | JoinKind::Anti) {
                algorithms.push((res.clone(), hash(&lk, &rk, HashBuild::Left)));
            }
            for (on, algorithm) in algorithms {
                let plan = join(scan(&lt), scan(&rt), kind, on, algorithm.clone());
                for workers in [1, 2] {
                    let got = sorted(run(&plan, &ctx(source.clone(), workers)).unwrap());
                    assert_eq!(
                        got.len(),
                        want.len(),
                        "{kind:?} {algorithm:?} keys2={two_keys} residual={residual} workers={workers}"
                    );
                    assert!(got == want, "{kind:?} {algorithm:?} keys2={two_keys} residual={residual}");
                }
            }
        }
    }
}

#[test]
fn every_kind_matches_the_reference_on_small_tables() {
    for seed in [1, 2, 3] {
        check_all(40, 25, seed * 10, &[(false, false), (false, true), (true, false), (true, true)]);
    }
}

#[test]
fn every_kind_matches_the_reference_across_morsels() {
    // Left spans three morsels, so two workers really share it.
    check_all(4200, 20, 77, &[(false, true), (true, false)]);
}

#[test]
fn empty_sides() {
    let (lt, lb, left) = random_table(1, "l", 30, 5);
    let (rt, rb, _) = random_table(2, "r", 0, 6);
    let source = Arc::new(MemorySource::new());
    source.insert(1, vec![lb]);
    source.insert(2, vec![rb]);
    let case = Case { left, right: vec![], two_keys: false, residual: false };
    let (on, lk, rk, _) = case.condition();
    for kind in KINDS {
        let mut algorithms = vec![JoinAlgorithm::NestedLoop, hash(&lk, &rk, HashBuild::Right)];
        if matches!(kind, JoinKind::Semi | JoinKind::Anti) {
            algorithms.push(hash(&lk, &rk, HashBuild::Left));
        }
        for algorithm in algorithms {
            let on = if algorithm == JoinAlgorithm::NestedLoop { Some(on.clone()) } else { None };
            let plan = join(scan(&lt), scan(&rt), kind, on, algorithm);
            let got = sorted(run(&plan, &ctx(source.clone(), 2)).unwrap());
            assert_eq!(got, sorted(case.reference(kind)), "{kind:?}");
        }
    }
}

#[test]
fn single_join_pads_and_rejects_a_second_match() {
    // Right side: c is unique, so joining on c gives at most one match.
    let (lt, lb, left) = random_table(1, "l", 200, 8);
    let (rt, rb, right) = random_table(2, "r", 100, 9);
    let source = Arc::new(MemorySource::new());
    source.insert(1, vec![lb]);
    let unique: Vec<usize> = {
        let mut seen = std::collections::HashSet::new();
        (0..right.len()).filter(|&i| seen.insert(format!("{:?}", right[i][2]))).collect()
    };
    let idx = arrow_array::UInt32Array::from(unique.iter().map(|&i| i as u32).collect::<Vec<_>>());
    let columns = rb.columns().iter().map(|c| arrow_select::take::take(c, &idx, None).unwrap()).collect::<Vec<_>>();
    source.insert(2, vec![arrow_array::RecordBatch::try_new(rb.schema(), columns).unwrap()]);
    let big = DataType::Int64;
    let keys = hash(&[col(2, big)], &[col(2, big)], HashBuild::Right);
    let plan = join(scan(&lt), scan(&rt), JoinKind::Single, None, keys.clone());
    let right_unique: Vec<Row> = unique.iter().map(|&i| right[i].clone()).collect();
    let want: Vec<Row> = left
        .iter()
        .map(|l| {
            let m = right_unique.iter().find(|r| r[2] == l[2]);
            l.iter()
                .chain(m.map(|r| r.as_slice()).unwrap_or(&[Value::Null, Value::Null, Value::Null]))
                .cloned()
                .collect()
        })
        .collect();
    assert_eq!(sorted(run(&plan, &ctx(source.clone(), 2)).unwrap()), sorted(want));
    // On `a` (duplicates on the right): 21000.
    let int = DataType::Int32;
    source.insert(2, vec![rb]);
    let dup = hash(&[col(0, int)], &[col(0, int)], HashBuild::Right);
    let plan = join(scan(&lt), scan(&rt), JoinKind::Single, None, dup);
    let err = run_err(&plan, &ctx(source, 1));
    assert_eq!(err.code, SqlState::CARDINALITY_VIOLATION);
    assert_eq!(err.message, "more than one row returned by a subquery used as an expression");
}

#[test]
fn index_nested_loop_is_refused_with_0a000() {
    let (lt, lb, _) = random_table(1, "l", 10, 1);
    let source = Arc::new(MemorySource::new());
    source.insert(1, vec![lb]);
    let index = Arc::new(ndpdb_sql::catalog::IndexDef {
        name: "l_a".into(),
        table: "l".into(),
        columns: vec![0],
        unique: false,
    });
    let algorithm = JoinAlgorithm::IndexNestedLoop { index, keys: vec![col(0, DataType::Int32)] };
    let plan = join(scan(&lt), scan(&lt), JoinKind::Inner, None, algorithm);
    let err = run_err(&plan, &ctx(source, 1));
    assert_eq!(err.code, SqlState::FEATURE_NOT_SUPPORTED);
    assert!(err.message.contains("l_a"), "{}", err.message);
}
