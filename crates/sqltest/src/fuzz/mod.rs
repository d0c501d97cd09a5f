//! The differential fuzzer: random schemas with rows, random queries over
//! them, each run on the private PostgreSQL and on ndpdb; any difference
//! is a finding, shrunk to a small query that still shows it.
//!
//! ```text
//!  seed ─► schema.rs: t0..t3, rows with NULLs, duplicates, keys
//!          │  setup SQL on both engines (a fresh PostgreSQL database each)
//!          ▼
//!  seed ─► queries.rs + exprs.rs: a query as an ast.rs tree
//!          │  text ─► PostgreSQL (wire protocol)     ─► rows | SQLSTATE
//!          │       ─► ndpdb (worker thread, SET ndp = off / auto in turn)
//!          ▼                                         ─► rows | SQLSTATE | panic | hang
//!  oracle: compare.rs (multiset or ORDER BY-aware, tolerant numerics);
//!          errors agree only when their SQLSTATEs are equal
//!          │ disagreement
//!          ▼
//!  minimize.rs: smaller trees while the same disagreement remains
//! ```
//!
//! Everything is a function of the seed: the same `--seed` generates the
//! same schemas and queries, so a finding is reproduced by running again
//! (and its query and setup SQL are printed). A statement that PostgreSQL
//! cancels by its `statement_timeout` is skipped; one that only ndpdb
//! cancels is a finding (a bad plan), as is a panic or a hang.

pub mod ast;
pub mod exprs;
pub mod minimize;
pub mod ndpdb;
pub mod queries;
pub mod schema;

use std::fmt;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;

use crate::compare::{compare, order_by_columns};
use crate::pg::{PgConnection, PgTestServer};
use crate::{EngineError, SqlEngine};
use ast::Query;
use ndpdb::{Answer, NdpdbWorker};
use schema::Schema;

/// SQLSTATE of a statement cancelled by `statement_timeout`.
const QUERY_CANCELED: &str = "57014";

/// What to run.
#[derive(Debug, Clone)]
pub struct FuzzOptions {
    pub queries: u64,
    pub seed: u64,
    /// Tables per schema (2-4 is the intended range).
    pub tables: usize,
    pub rows_max: usize,
    /// Queries before a new schema is generated.
    pub queries_per_schema: u64,
    /// `statement_timeout` on both engines; the watchdog waits twice as long.
    pub timeout: Duration,
    /// Shrink each finding's query.
    pub minimize: bool,
}

impl Default for FuzzOptions {
    fn default() -> Self {
        FuzzOptions {
            queries: 1000,
            seed: 1,
            tables: 3,
            rows_max: 20,
            queries_per_schema: 100,
            timeout: Duration::from_secs(5),
            minimize: true,
        }
    }
}

/// How the engines disagreed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// Both returned rows; not the same ones.
    Rows,
    /// One failed, the other returned rows (the failing one's SQLSTATE).
    OnlyPostgresFailed(String),
    OnlyNdpdbFailed(String),
    /// Both failed, with these SQLSTATEs (PostgreSQL's, ndpdb's).
    Codes(String, String),
    Panic,
    Hang,
}

/// One disagreement.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The statements that built the schema.
    pub setup: Vec<String>,
    /// `off` or `auto`.
    pub ndp: &'static str,
    pub query: String,
    pub mismatch: Mismatch,
    /// What each engine said, and how the rows differ.
    pub detail: String,
    /// The minimized query (None when not minimized).
    pub reduced: Option<String>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "MISMATCH ({:?}) with SET ndp = {}", self.mismatch, self.ndp)?;
        writeln!(f, "  query:   {}", self.query)?;
        if let Some(r) = &self.reduced {
            writeln!(f, "  reduced: {r}")?;
        }
        writeln!(f, "  {}", self.detail.replace('\n', "\n  "))?;
        writeln!(f, "  schema:")?;
        for s in &self.setup {
            writeln!(f, "    {s};")?;
        }
        Ok(())
    }
}

/// What a run found.
#[derive(Debug, Clone, Default)]
pub struct FuzzReport {
    pub queries: u64,
    /// Both returned the same rows.
    pub same_rows: u64,
    /// Both failed with the same SQLSTATE.
    pub same_errors: u64,
    /// PostgreSQL timed out: not compared.
    pub skipped: u64,
    pub schemas: u64,
    pub findings: Vec<Finding>,
}

/// A line of progress (printed every so many queries by the caller).
pub type Progress<'a> = &'a mut dyn FnMut(&FuzzReport, Option<&Finding>);

/// Runs the fuzzer against a started PostgreSQL.
pub fn run(pg: &mut PgTestServer, opts: &FuzzOptions, progress: Progress<'_>) -> Result<FuzzReport, EngineError> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(opts.seed);
    let mut report = FuzzReport::default();
    while report.queries < opts.queries {
        let schema = schema::generate(&mut rng, opts.tables, opts.rows_max);
        report.schemas += 1;
        let mut pair = match Pair::open(pg, &schema, opts, report.schemas.is_multiple_of(2)) {
            Ok(p) => p,
            Err(finding) => {
                progress(&report, Some(&finding));
                report.findings.push(*finding);
                continue;
            }
        };
        let n = opts.queries_per_schema.min(opts.queries - report.queries);
        for _ in 0..n {
            let query = queries::Gen::new(&mut rng, &schema).query();
            let ndp = if report.queries.is_multiple_of(2) { "off" } else { "auto" };
            report.queries += 1;
            let finding = pair.check(&query, ndp, &mut report)?;
            if let Some(mut finding) = finding {
                if opts.minimize {
                    let small = pair.minimize(&query, ndp, &finding.mismatch)?.to_string();
                    if let Verdict::Differ(_, detail) = pair.verdict(&small, ndp)? {
                        finding.detail = format!("reduced query: {detail}\noriginal query: {}", finding.detail);
                    }
                    finding.reduced = Some(small);
                }
                progress(&report, Some(&finding));
                report.findings.push(finding);
            }
            progress(&report, None);
        }
    }
    Ok(report)
}

/// One schema on both engines.
struct Pair {
    setup: Vec<String>,
    pg: PgConnection,
    ndpdb: NdpdbWorker,
    analyze: bool,
    opts: FuzzOptions,
}

/// The outcome of one query on both engines.
enum Verdict {
    Same,
    SameError,
    Skipped,
    Differ(Mismatch, String),
}

impl Pair {
    fn open(pg: &mut PgTestServer, schema: &Schema, opts: &FuzzOptions, analyze: bool) -> Result<Pair, Box<Finding>> {
        let setup = schema.setup_sql();
        let fail = |detail: String| {
            Box::new(Finding {
                setup: setup.clone(),
                ndp: "off",
                query: String::new(),
                mismatch: Mismatch::Codes(String::new(), String::new()),
                detail,
                reduced: None,
            })
        };
        let db = pg.database().map_err(|e| fail(format!("PostgreSQL: {e}")))?;
        let mut conn = PgConnection::connect(db.address()).map_err(|e| fail(format!("PostgreSQL: {e}")))?;
        let timeout = format!("SET statement_timeout = '{}ms'", opts.timeout.as_millis());
        for sql in setup.iter().chain([&timeout]) {
            conn.run(sql).map_err(|e| fail(format!("PostgreSQL rejects the schema: {sql}: {e}")))?;
        }
        let ndpdb = open_ndpdb(&setup, opts, analyze).map_err(fail)?;
        Ok(Pair { setup, pg: conn, ndpdb, analyze, opts: opts.clone() })
    }

    /// Runs `query` on both; a finding when they disagree.
    fn check(
        &mut self,
        query: &Query,
        ndp: &'static str,
        report: &mut FuzzReport,
    ) -> Result<Option<Finding>, EngineError> {
        let sql = query.to_string();
        match self.verdict(&sql, ndp)? {
            Verdict::Same => report.same_rows += 1,
            Verdict::SameError => report.same_errors += 1,
            Verdict::Skipped => report.skipped += 1,
            Verdict::Differ(mismatch, detail) => {
                return Ok(Some(Finding {
                    setup: self.setup.clone(),
                    ndp,
                    query: sql,
                    mismatch,
                    detail,
                    reduced: None,
                }));
            }
        }
        Ok(None)
    }

    fn verdict(&mut self, sql: &str, ndp: &str) -> Result<Verdict, EngineError> {
        let pg = match self.pg.run(sql) {
            Err(e) if e.sqlstate.starts_with("08") => return Err(e),
            other => other,
        };
        let nd = match self.ndpdb.run(&format!("SET ndp = {ndp}")) {
            Answer::Rows(_) => self.ndpdb.run(sql),
            other => other,
        };
        if matches!(nd, Answer::Panic(_) | Answer::Hang) {
            // The engine's state is unknown: a fresh one for what follows.
            self.ndpdb = open_ndpdb(&self.setup, &self.opts, self.analyze)
                .map_err(|m| EngineError { sqlstate: "XX000".into(), message: m })?;
        }
        Ok(judge(sql, pg, nd))
    }

    fn minimize(&mut self, query: &Query, ndp: &str, mismatch: &Mismatch) -> Result<Query, EngineError> {
        let mut lost = None;
        let mut still_fails = |q: &Query| match self.verdict(&q.to_string(), ndp) {
            Ok(Verdict::Differ(m, _)) => m == *mismatch,
            Ok(_) => false,
            Err(e) => {
                lost = Some(e);
                false
            }
        };
        let small = minimize::minimize(query, &mut still_fails);
        match lost {
            Some(e) => Err(e),
            None => Ok(small),
        }
    }
}

/// A fresh ndpdb database with the schema (and, if `analyze`, statistics).
fn open_ndpdb(setup: &[String], opts: &FuzzOptions, analyze: bool) -> Result<NdpdbWorker, String> {
    let mut w = NdpdbWorker::open(opts.timeout * 2).map_err(|e| format!("ndpdb: {e}"))?;
    let timeout = format!("SET statement_timeout = '{}ms'", opts.timeout.as_millis());
    let analyze = analyze.then(|| "ANALYZE".to_string());
    for sql in setup.iter().chain([&timeout]).chain(analyze.as_ref()) {
        match w.run(sql) {
            Answer::Rows(_) => {}
            other => return Err(format!("ndpdb rejects the schema: {sql}: {other:?}")),
        }
    }
    Ok(w)
}

/// Compares the two answers.
fn judge(sql: &str, pg: Result<crate::QueryOutput, EngineError>, nd: Answer) -> Verdict {
    let show = |a: &Answer| match a {
        Answer::Rows(o) => format!("{} rows", o.rows.len()),
        Answer::Error(e) => format!("error {e}"),
        Answer::Panic(m) => format!("panic: {m}"),
        Answer::Hang => "no answer (hang)".into(),
    };
    let pg_text = match &pg {
        Ok(o) => format!("{} rows", o.rows.len()),
        Err(e) => format!("error {e}"),
    };
    let detail = |extra: &str| format!("PostgreSQL: {pg_text}; ndpdb: {}{extra}", show(&nd));
    match (&pg, &nd) {
        (Err(e), _) if e.sqlstate == QUERY_CANCELED => Verdict::Skipped,
        (_, Answer::Panic(_)) => Verdict::Differ(Mismatch::Panic, detail("")),
        (_, Answer::Hang) => Verdict::Differ(Mismatch::Hang, detail("")),
        (Err(p), Answer::Error(n)) if p.sqlstate == n.sqlstate => Verdict::SameError,
        (Err(p), Answer::Error(n)) => {
            Verdict::Differ(Mismatch::Codes(p.sqlstate.clone(), n.sqlstate.clone()), detail(""))
        }
        (Err(p), Answer::Rows(_)) => Verdict::Differ(Mismatch::OnlyPostgresFailed(p.sqlstate.clone()), detail("")),
        (Ok(_), Answer::Error(n)) => Verdict::Differ(Mismatch::OnlyNdpdbFailed(n.sqlstate.clone()), detail("")),
        (Ok(p), Answer::Rows(n)) => {
            let names: Vec<String> = p.columns.iter().map(|c| c.name.clone()).collect();
            let widths = (p.columns.len(), n.columns.len());
            let outcome = if widths.0 != widths.1 {
                Err(format!("{} columns, PostgreSQL gave {}", widths.1, widths.0))
            } else {
                compare(&zeros(&p.rows), &zeros(&n.rows), &order_by_columns(sql, &names))
            };
            match outcome {
                Ok(()) => Verdict::Same,
                Err(why) => {
                    let answers = format!("\n{why}\nPostgreSQL:{}\nndpdb:{}", dump(&p.rows), dump(&n.rows));
                    Verdict::Differ(Mismatch::Rows, detail(&answers))
                }
            }
        }
    }
}

/// The rows with float `-0` written `0`: GROUP BY, DISTINCT and set
/// operations keep either of the equal -0 and 0 as a group's value,
/// whichever row comes first (undefined, so no finding).
fn zeros(rows: &[Vec<Option<String>>]) -> Vec<Vec<Option<String>>> {
    let fix = |c: &Option<String>| if c.as_deref() == Some("-0") { Some("0".to_string()) } else { c.clone() };
    rows.iter().map(|r| r.iter().map(fix).collect()).collect()
}

/// Up to 20 rows, one a line.
fn dump(rows: &[Vec<Option<String>>]) -> String {
    let mut out = String::new();
    for row in rows.iter().take(20) {
        let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("NULL")).collect();
        out.push_str(&format!("\n  ({})", cells.join(" | ")));
    }
    if rows.len() > 20 {
        out.push_str(&format!("\n  ... {} more", rows.len() - 20));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Column, QueryOutput};

    fn rows(values: &[&str]) -> QueryOutput {
        QueryOutput {
            columns: vec![Column { name: "x0".into(), type_oid: 23 }],
            rows: values.iter().map(|v| vec![(*v != "NULL").then(|| v.to_string())]).collect(),
            tag: format!("SELECT {}", values.len()),
        }
    }

    fn err(code: &str) -> EngineError {
        EngineError { sqlstate: code.into(), message: "m".into() }
    }

    #[test]
    fn the_oracle_compares_rows_codes_panics_and_timeouts() {
        let q = "SELECT a AS x0 FROM t ORDER BY 1";
        assert!(matches!(judge(q, Ok(rows(&["1", "2"])), Answer::Rows(rows(&["1", "2.0"]))), Verdict::Same));
        let swapped = judge(q, Ok(rows(&["1", "2"])), Answer::Rows(rows(&["2", "1"])));
        assert!(matches!(swapped, Verdict::Differ(Mismatch::Rows, _)));
        let unordered = judge("SELECT a AS x0 FROM t", Ok(rows(&["1", "2"])), Answer::Rows(rows(&["2", "1"])));
        assert!(matches!(unordered, Verdict::Same));
        // -0 and 0 are one group; which one a group shows is undefined.
        let pairs = |r: &[(&str, &str)]| QueryOutput {
            columns: vec![Column { name: "x0".into(), type_oid: 701 }, Column { name: "x1".into(), type_oid: 25 }],
            rows: r.iter().map(|(a, b)| vec![Some(a.to_string()), Some(b.to_string())]).collect(),
            tag: format!("SELECT {}", r.len()),
        };
        let grouped = "SELECT a AS x0, b AS x1 FROM t GROUP BY 1, 2";
        let zeros =
            judge(grouped, Ok(pairs(&[("-0", "a"), ("0", "b")])), Answer::Rows(pairs(&[("0", "a"), ("-0", "b")])));
        assert!(matches!(zeros, Verdict::Same));
        assert!(matches!(judge(q, Err(err("22012")), Answer::Error(err("22012"))), Verdict::SameError));
        let codes = judge(q, Err(err("22012")), Answer::Error(err("22003")));
        assert!(matches!(codes, Verdict::Differ(Mismatch::Codes(..), _)));
        let only = judge(q, Ok(rows(&[])), Answer::Error(err("0A000")));
        assert!(matches!(only, Verdict::Differ(Mismatch::OnlyNdpdbFailed(c), _) if c == "0A000"));
        assert!(matches!(judge(q, Err(err(QUERY_CANCELED)), Answer::Hang), Verdict::Skipped));
        assert!(matches!(judge(q, Ok(rows(&[])), Answer::Panic("p".into())), Verdict::Differ(Mismatch::Panic, _)));
        assert!(matches!(judge(q, Ok(rows(&[])), Answer::Hang), Verdict::Differ(Mismatch::Hang, _)));
    }
}
