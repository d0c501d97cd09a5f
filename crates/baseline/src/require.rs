//! Whether a test may skip its PostgreSQL half.
//!
//! Tests that compare against PostgreSQL run it when it is installed. On a
//! developer's machine without it they print a skip note and pass; with
//! `NDPDB_REQUIRE_POSTGRES=1` (which `.ci/run` sets) a missing PostgreSQL,
//! or a missing piece of it such as the server headers, fails the test, so
//! a CI run can never pass by skipping the comparison.

/// The variable that makes the PostgreSQL baseline mandatory in tests.
pub const REQUIRE_VAR: &str = "NDPDB_REQUIRE_POSTGRES";

/// `true` when `NDPDB_REQUIRE_POSTGRES=1`.
pub fn postgres_required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// For a test whose PostgreSQL half cannot run: prints a skip note naming
/// the test and the reason, or panics with them when PostgreSQL is required.
pub fn skip_postgres(test: &str, why: &dyn std::fmt::Display) {
    assert!(!postgres_required(), "{test}: {REQUIRE_VAR}=1 but the PostgreSQL check cannot run: {why}");
    eprintln!("SKIPPED the PostgreSQL part of {test}: {why} (set {REQUIRE_VAR}=1 to make this an error)");
}
