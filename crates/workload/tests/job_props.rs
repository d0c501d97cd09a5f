//! Properties of the JOB generator's pieces: its LIKE matcher agrees with a
//! plain recursive definition, and for random one-table filters the planter
//! either plants a witness that the written row satisfies (the writer checks
//! every planted row against its filters and fails otherwise) or reports
//! the filter; it never panics, whatever the query text.

use proptest::prelude::*;

use ndpdb_workload::job::{JobConfig, JobData, JobError, default_job_dir, like_match};

/// LIKE by its definition: `%` any run, `_` one character, `\` escapes.
fn like_reference(s: &[char], p: &[char]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some(('%', rest)) => (0..=s.len()).any(|i| like_reference(&s[i..], rest)),
        Some(('_', rest)) => !s.is_empty() && like_reference(&s[1..], rest),
        Some(('\\', rest)) if !rest.is_empty() => s.first() == Some(&rest[0]) && like_reference(&s[1..], &rest[1..]),
        Some((c, rest)) => s.first() == Some(c) && like_reference(&s[1..], rest),
    }
}

fn prepare(query: &str) -> Result<JobData, JobError> {
    let dir = default_job_dir().expect("the JOB directory must exist");
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(dir.join("schema.sql"), d.path().join("schema.sql")).unwrap();
    std::fs::create_dir(d.path().join("queries")).unwrap();
    std::fs::write(d.path().join("queries/1a.sql"), query).unwrap();
    JobData::prepare(JobConfig { scale: 0.001, seed: 3, dir: d.path().to_path_buf() })
}

/// A random filter on title's text and year columns.
fn filter() -> impl Strategy<Value = String> {
    let pattern = "[ab%_]{0,5}";
    let word = "[ab]{0,3}";
    prop_oneof![
        (pattern, any::<bool>()).prop_map(|(p, not)| format!("t.title {}LIKE '{p}'", if not { "NOT " } else { "" })),
        (word, 0..4usize).prop_map(|(w, op)| format!("t.title {} '{w}'", ["=", "<>", "<", ">"][op])),
        (1880..2030i64, 0..4usize).prop_map(|(y, op)| format!("t.production_year {} {y}", ["=", "<>", "<", ">="][op])),
        (1880..2030i64, 0..30i64).prop_map(|(y, d)| format!("t.production_year BETWEEN {y} AND {}", y + d - 10)),
        Just("t.series_years IS NULL".to_string()),
        (word, word).prop_map(|(a, b)| format!("(t.title = '{a}' OR t.title LIKE '{b}%')")),
        (word, word).prop_map(|(a, b)| format!("t.phonetic_code IN ('{a}', '{b}')")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn like_agrees_with_its_definition(s in "[ab%_\\\\]{0,8}", p in "[ab%_\\\\]{0,6}") {
        let (sc, pc): (Vec<char>, Vec<char>) = (s.chars().collect(), p.chars().collect());
        prop_assert_eq!(like_match(&s, &p), like_reference(&sc, &pc), "{:?} LIKE {:?}", s, p);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn planted_or_reported(filters in prop::collection::vec(filter(), 1..4)) {
        let sql = format!(
            "SELECT MIN(t.title) FROM title AS t, kind_type AS kt WHERE kt.id = t.kind_id AND {};",
            filters.join(" AND ")
        );
        match prepare(&sql) {
            Ok(data) => {
                let out = tempfile::tempdir().unwrap();
                // The writer re-checks the planted row against every filter.
                data.write(out.path(), &mut |_| {}).map_err(|e| TestCaseError::fail(format!("{sql}: {e}")))?;
            }
            Err(JobError::Witnesses(f)) => prop_assert_eq!(f[0].query.as_str(), "1a"),
            Err(e) => return Err(TestCaseError::fail(format!("{sql}: unexpected {e}"))),
        }
    }

    #[test]
    fn any_query_text_is_an_error_not_a_panic(text in "[a-z. =<>'%()0-9,]{0,60}") {
        let _ = prepare(&format!("SELECT MIN(t.title) FROM title AS t WHERE {text}"));
    }
}
