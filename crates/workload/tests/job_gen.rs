//! The JOB generator without PostgreSQL: every query gets witnesses,
//! output is deterministic per seed, CSV follows PostgreSQL's conventions,
//! and filters it cannot plant are reported with their query and conjunct.

use std::path::{Path, PathBuf};

use ndpdb_workload::job::{JobConfig, JobData, JobError, Value, csv_line, default_job_dir};

fn job_dir() -> PathBuf {
    default_job_dir().expect("the JOB directory (../shared/workloads/job or NDPDB_JOB_DIR) must exist for this test")
}

fn config(scale: f64, seed: u64) -> JobConfig {
    JobConfig { scale, seed, dir: job_dir() }
}

fn write_all(data: &JobData, out: &Path) -> Vec<(String, Vec<u8>)> {
    let files = data.write(out, &mut |_| {}).expect("write");
    files.into_iter().map(|f| (f.table, std::fs::read(&f.path).expect("read back"))).collect()
}

#[test]
fn every_query_is_planted_and_all_tables_written() {
    let data = JobData::prepare(config(0.01, 7)).expect("prepare");
    assert_eq!(data.queries().len(), 113);
    let rows = data.table_rows();
    assert_eq!(rows.len(), 21);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seen = 0u64;
    let files = data.write(dir.path(), &mut |n| seen += n).expect("write");
    assert_eq!(seen, data.total_rows());
    for (f, (table, n)) in files.iter().zip(&rows) {
        assert_eq!(&f.table, table);
        assert_eq!(f.rows, *n);
        let text = std::fs::read_to_string(&f.path).expect("read");
        assert_eq!(text.lines().count() as u64, *n, "{table}");
    }
    let rows_of = |t: &str| rows.iter().find(|(n, _)| n == t).map(|(_, n)| *n).unwrap_or(0);
    assert_eq!(rows_of("info_type"), 113);
    assert_eq!(rows_of("kind_type"), 7);
    assert!(rows_of("cast_info") > rows_of("title"), "cast_info is the largest table, as in IMDB");
    let kinds = std::fs::read_to_string(dir.path().join("kind_type.csv")).unwrap();
    assert!(kinds.starts_with("1,movie\n2,tv series\n") && kinds.ends_with("7,episode\n"), "{kinds}");
    let infos = std::fs::read_to_string(dir.path().join("info_type.csv")).unwrap();
    assert!(infos.contains("\n101,rating\n") && infos.ends_with("113,bottom 10 rank\n"), "IMDB's info_type ids");
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let (a, b, c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = write_all(&JobData::prepare(config(0.01, 1)).unwrap(), a.path());
    let again = write_all(&JobData::prepare(config(0.01, 1)).unwrap(), b.path());
    let other = write_all(&JobData::prepare(config(0.01, 2)).unwrap(), c.path());
    assert_eq!(first, again);
    assert_ne!(first, other);
}

#[test]
fn csv_follows_postgresql_conventions() {
    let mut out = Vec::new();
    csv_line(
        &[
            Value::Int(1),
            Value::Null,
            Value::Text(String::new()),
            Value::Text("a,\"b\"".into()),
            Value::Text("x".into()),
        ],
        &mut out,
    );
    assert_eq!(String::from_utf8(out).unwrap(), "1,,\"\",\"a,\"\"b\"\"\",x\n");
}

/// A JOB directory with the real schema and one made-up query.
fn dir_with_query(sql: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(job_dir().join("schema.sql"), d.path().join("schema.sql")).unwrap();
    std::fs::create_dir(d.path().join("queries")).unwrap();
    std::fs::write(d.path().join("queries/1a.sql"), sql).unwrap();
    d
}

#[test]
fn a_filter_no_value_satisfies_is_reported_with_query_and_conjunct() {
    let d = dir_with_query(
        "SELECT MIN(t.title) FROM title AS t, kind_type AS kt \
         WHERE t.production_year > 2000 AND t.production_year < 1990 AND kt.id = t.kind_id;",
    );
    let err = JobData::prepare(JobConfig { scale: 0.01, seed: 1, dir: d.path().to_path_buf() }).unwrap_err();
    assert!(matches!(err, JobError::Witnesses(_)), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("query 1a") && msg.contains("t.production_year > 2000"), "{msg}");
}

#[test]
fn a_dimension_value_imdb_lacks_is_reported() {
    let d = dir_with_query(
        "SELECT MIN(t.title) FROM title AS t, kind_type AS kt WHERE kt.kind = 'opera' AND kt.id = t.kind_id;",
    );
    let msg =
        JobData::prepare(JobConfig { scale: 0.01, seed: 1, dir: d.path().to_path_buf() }).unwrap_err().to_string();
    assert!(msg.contains("kt.kind = 'opera'") && msg.contains("kind_type"), "{msg}");
}

#[test]
fn an_unsupported_condition_is_refused_not_skipped() {
    let d = dir_with_query(
        "SELECT MIN(t.title) FROM title AS t, movie_info AS mi WHERE t.id = mi.movie_id AND t.production_year < mi.movie_id;",
    );
    let err = JobData::prepare(JobConfig { scale: 0.01, seed: 1, dir: d.path().to_path_buf() }).unwrap_err();
    assert!(matches!(err, JobError::Unsupported { .. }), "{err}");
}

#[test]
fn a_filter_on_a_key_column_is_reported() {
    for filter in ["t.id < 100", "mc.company_id = 5"] {
        let d = dir_with_query(&format!(
            "SELECT MIN(t.title) FROM title AS t, movie_companies AS mc WHERE t.id = mc.movie_id AND {filter};"
        ));
        let msg =
            JobData::prepare(JobConfig { scale: 0.01, seed: 1, dir: d.path().to_path_buf() }).unwrap_err().to_string();
        assert!(msg.contains(filter) && msg.contains("key column"), "{msg}");
    }
}

#[test]
fn scale_out_of_range_is_refused() {
    for s in [0.0, -1.0, f64::NAN, 1000.0] {
        assert!(matches!(JobData::prepare(config(s, 1)), Err(JobError::Scale(_))), "{s}");
    }
}
