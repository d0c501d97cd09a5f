//! Issue 18's "the TPC-H and JOB queries run from psql with the same
//! results as embedded": TPC-H at SF 0.01 and the generated JOB data (the
//! JOB test's scale, with its foreign-key indexes) are loaded into one
//! database; every TPC-H query and every JOB query runs on the embedded
//! engine (`Session::run`, values in PostgreSQL's text output), then, over
//! the same database, through one psql process against `ndpdb serve`
//! (`-At -F'|'`: unaligned, tuples only). Each query's rows must be equal,
//! line for line and in the same order: the server adds nothing and loses
//! nothing between the engine and the client (value formatting, NULLs,
//! float digits, row order, views made and dropped by Q15).

mod serve_child;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ndpdb_sql::session::{Engine, EngineOptions, Session};
use ndpdb_sqltest::ndpdb::{NdpdbSession, run_on};
use ndpdb_workload::job::{JobConfig, JobData, default_job_dir};
use ndpdb_workload::tpch;
use serve_child::{Serve, have, psql};

const TPCH_SCALE: f64 = 0.01;
/// The JOB test's scale (`crates/sqltest/tests/job.rs`).
const JOB_SCALE: f64 = 0.02;

/// One query of the comparison: statements before, the query, after.
struct Query {
    name: String,
    setup: Vec<String>,
    sql: String,
    teardown: Vec<String>,
}

fn queries(job: &JobData) -> Vec<Query> {
    let mut all: Vec<Query> = tpch::all_queries(TPCH_SCALE)
        .into_iter()
        .map(|q| Query { name: format!("Q{}", q.number), setup: q.setup, sql: q.query, teardown: q.teardown })
        .collect();
    all.extend(job.queries().iter().map(|q| Query {
        name: format!("JOB {}", q.name),
        setup: vec![],
        sql: q.sql.trim().trim_end_matches(';').to_string(),
        teardown: vec![],
    }));
    all
}

/// Runs `sql` on the embedded session; panics naming the query on an error.
fn must(session: &mut Session, name: &str, sql: &str) -> Vec<String> {
    let out = run_on(session, sql).unwrap_or_else(|e| panic!("{name} embedded: {e}\n{sql}"));
    // psql's unaligned output: cells joined by `|`, NULL empty (no value here holds a line break).
    out.rows.iter().map(|r| r.iter().map(|v| v.clone().unwrap_or_default()).collect::<Vec<_>>().join("|")).collect()
}

fn load(engine: &Arc<Engine>, csv: &Path, job_dir: &Path, job: &JobData) {
    let mut s = engine.session();
    let files = tpch::generate(TPCH_SCALE, &csv.join("tpch"), &mut |_| {}).unwrap();
    for create in tpch::create_statements() {
        must(&mut s, "CREATE", create);
    }
    for f in &files {
        must(&mut s, "COPY", &tpch::copy_statement(f.table, &f.path));
    }
    let job_files = job.write(&csv.join("job"), &mut |_| {}).unwrap();
    ndpdb_sqltest::job::load_job(&mut NdpdbSession(s), job_dir, &job_files, true).unwrap();
}

/// Sections of psql's output: the lines after each `@@name` marker.
fn sections(out: &str) -> Vec<(String, Vec<String>)> {
    let mut all: Vec<(String, Vec<String>)> = Vec::new();
    for line in out.lines() {
        match (line.strip_prefix("@@"), all.last_mut()) {
            (Some(name), _) => all.push((name.to_string(), vec![])),
            (None, Some((_, lines))) => lines.push(line.to_string()),
            (None, None) => panic!("psql printed {line:?} before the first marker"),
        }
    }
    all
}

#[test]
fn tpch_and_job_answer_the_same_through_psql_as_embedded() {
    if !have("psql") {
        return;
    }
    let started = Instant::now();
    let job_dir = default_job_dir().expect("the JOB directory (../shared/workloads/job or NDPDB_JOB_DIR)");
    let job = JobData::prepare(JobConfig { scale: JOB_SCALE, seed: 17, dir: job_dir.clone() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let opts =
        EngineOptions { dir: db.clone(), create_if_missing: true, capacity_mib: Some(512), ..EngineOptions::default() };
    let engine = Engine::open(&opts).unwrap();
    load(&engine, dir.path(), &job_dir, &job);
    let loaded = started.elapsed();

    let queries = queries(&job);
    let mut embedded = Vec::new();
    let mut s = engine.session();
    for q in &queries {
        q.setup.iter().for_each(|sql| drop(must(&mut s, &q.name, sql)));
        embedded.push(must(&mut s, &q.name, &q.sql));
        q.teardown.iter().for_each(|sql| drop(must(&mut s, &q.name, sql)));
    }
    drop(s);
    engine.close().unwrap();
    drop(engine);
    let embedded_done = started.elapsed();

    let mut script = String::new();
    for q in &queries {
        script.push_str(&format!("\\echo @@{}\n", q.name));
        for sql in q.setup.iter().chain([&q.sql]).chain(&q.teardown) {
            script.push_str(&format!("{sql};\n"));
        }
    }
    let serve = Serve::start(&db, &dir.path().join("serve.log"));
    let (out, err, ok) = psql(&serve, &["-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1"], &script);
    assert!(ok && err.is_empty(), "psql failed: {err}\nserver log:\n{}", serve.log_text());
    let got = sections(&out);
    assert_eq!(got.len(), queries.len(), "one section per query");
    let mut differ = Vec::new();
    for ((q, want), (name, lines)) in queries.iter().zip(&embedded).zip(&got) {
        assert_eq!(&q.name, name);
        assert!(!want.is_empty() || q.name.starts_with("JOB"), "{} returned no rows", q.name);
        if want != lines {
            let first = want.iter().zip(lines).position(|(a, b)| a != b).unwrap_or(want.len().min(lines.len()));
            differ.push(format!(
                "{name}: {} rows embedded, {} through psql; first difference at row {first}: {:?} vs {:?}",
                want.len(),
                lines.len(),
                want.get(first),
                lines.get(first)
            ));
        }
    }
    assert!(serve.stop().success(), "ndpdb serve did not stop cleanly");
    eprintln!(
        "{} queries (22 TPC-H, {} JOB): loaded at {loaded:.1?}, embedded done at {embedded_done:.1?}, psql done at {:.1?}",
        queries.len(),
        queries.len() - 22,
        started.elapsed()
    );
    assert!(differ.is_empty(), "{} queries differ:\n{}", differ.len(), differ.join("\n"));
}
