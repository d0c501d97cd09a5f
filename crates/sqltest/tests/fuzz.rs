//! The differential fuzzer in CI: a fixed seed, a few hundred queries over
//! a few random schemas, every answer compared with PostgreSQL's
//! (`docs/testing-sql.md`, "The differential fuzzer"). Any mismatch fails
//! the test and prints the query, both answers and a reduced query.
//! Skipped when PostgreSQL is not installed, unless NDPDB_REQUIRE_POSTGRES=1.

use std::time::Duration;

use ndpdb_sqltest::fuzz::{FuzzOptions, run};
use ndpdb_sqltest::start_postgres;

#[test]
fn fuzzer_finds_no_mismatch_with_postgresql() {
    let Some(mut pg) = start_postgres().expect("starting PostgreSQL") else {
        eprintln!("PostgreSQL is not installed: skipping (set NDPDB_REQUIRE_POSTGRES=1 to fail instead)");
        return;
    };
    let opts = FuzzOptions {
        queries: 400,
        seed: 17,
        tables: 3,
        rows_max: 15,
        queries_per_schema: 100,
        timeout: Duration::from_secs(10),
        minimize: true,
    };
    let mut shown = Vec::new();
    let report = run(&mut pg, &opts, &mut |_, finding| shown.extend(finding.map(|f| f.to_string()))).expect("fuzzing");
    assert_eq!(report.queries, 400);
    assert!(report.schemas >= 4, "expected a new schema every 100 queries, got {}", report.schemas);
    // Most generated queries must run: a generator that only produces
    // errors would compare nothing.
    assert!(report.same_rows >= 300, "only {} of 400 queries returned rows on both engines", report.same_rows);
    assert!(report.findings.is_empty(), "{} mismatches with PostgreSQL:\n{}", report.findings.len(), shown.join("\n"));
}
