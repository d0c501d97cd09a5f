//! Prepared statements: parse and bind once, run many times with `$n`
//! values, the optimized plan of a query cached between runs.
//!
//! ```text
//!  prepare(sql) ─► parse ─► bind (parameter types) ─► Prepared
//!  execute(p, values) ─► same catalog as the cached plan? ─yes─► run the plan with values
//!                                                       └─no──► bind, optimize, cache, run
//! ```
//!
//! A cached plan is generic: its parameters stay `$n` (index bounds and
//! filters read them at run time), so one plan serves every value, as
//! PostgreSQL's generic plans do. It is made again when the catalog the
//! session sees is another one (DDL or ANALYZE committed, or DDL in the
//! session's own transaction). Row counts of tables without statistics are
//! those of the first run. Statements other than queries are bound at
//! every run (their parameters are passed all the same).
//!
//! A cached plan that reads rows by the whole key of an index (a primary
//! key lookup) also caches its [`PointPlan`] and storage table, and runs
//! without the executor (`store/index/point.rs`): the same rows, without
//! an operator tree and Arrow batches built for one row.

use std::sync::Arc;

use super::{Session, StatementResult};
use crate::catalog::MemCatalog;
use crate::error::{Result, SqlError, SqlState};
use crate::exec::TableSource;
use crate::plan::{Plan, Statement};
use crate::store::index::point::PointPlan;
use crate::types::{DataType, Value};

/// A statement parsed once; run it with [`Session::execute_prepared`].
pub struct Prepared {
    ast: sqlparser::ast::Statement,
    /// The types of `$1..$n`.
    pub param_types: Vec<DataType>,
    /// The columns a query returns (empty for other statements): what a
    /// server's Describe reports before the statement runs.
    pub columns: Vec<crate::plan::Field>,
    /// A query's optimized plan and the catalog it was made for.
    cached: Option<Cached>,
}

impl Prepared {
    /// Whether the plan cached at the last execution runs as a point
    /// lookup, without the executor (tests and benchmarks).
    pub fn is_point(&self) -> bool {
        self.cached.as_ref().is_some_and(|c| c.point.is_some())
    }
}

struct Cached {
    catalog: Arc<MemCatalog>,
    plan: Plan,
    /// The plan as a point lookup, with its storage table, when it is one.
    point: Option<(PointPlan, Arc<ndpdb_storage::Table>)>,
}

impl Session {
    /// Parses and binds one statement with `$n` parameters.
    pub fn prepare(&mut self, sql: &str) -> Result<Prepared> {
        let mut stmts = crate::bind::parse(sql)?;
        if stmts.len() != 1 {
            return Err(SqlError::syntax(format!("a prepared statement is one statement, not {}", stmts.len()))
                .with_hint("Prepare each statement on its own."));
        }
        let ast = stmts.remove(0);
        let catalog = self.catalog();
        let (bound, param_types) =
            crate::bind::bind_with_params(&ast, &self.bind_catalog(&catalog), &crate::bind::BindOptions::default())?;
        let columns = result_columns(&bound);
        Ok(Prepared { ast, param_types, columns, cached: None })
    }

    /// Runs `p` with `params` as `$1..$n` (in an implicit transaction
    /// unless one is open, as [`Session::run`]).
    pub fn execute_prepared(&mut self, p: &mut Prepared, params: &[Value]) -> Result<StatementResult> {
        // A cancel that came while no statement ran cancels nothing (as `run_one`).
        self.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        if params.len() != p.param_types.len() {
            return Err(SqlError::new(
                SqlState("08P01"),
                format!("the statement has {} parameters, {} values were given", p.param_types.len(), params.len()),
            )
            .with_hint("Give one value per $n."));
        }
        if self.txn.as_ref().is_some_and(|t| t.failed) {
            return Err(SqlError::new(
                SqlState::IN_FAILED_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        let params = Arc::new(params.to_vec());
        let is_query = matches!(&p.ast, sqlparser::ast::Statement::Query(_));
        let r = if is_query { self.run_cached(p, params) } else { self.run_bound(p, params) };
        if r.is_err() {
            self.note_error();
        }
        r
    }

    fn run_bound(&mut self, p: &Prepared, params: Arc<Vec<Value>>) -> Result<StatementResult> {
        let catalog = self.catalog();
        let bound = crate::bind::bind_with_params(&p.ast, &self.bind_catalog(&catalog), &Default::default());
        let (stmt, _) = bound?;
        self.params = params;
        let r = self.dispatch(stmt);
        self.params = Arc::default();
        r
    }

    fn run_cached(&mut self, p: &mut Prepared, params: Arc<Vec<Value>>) -> Result<StatementResult> {
        self.statement_in_txn(|s| s.query_cached(p, params))
    }

    fn query_cached(&mut self, p: &mut Prepared, params: Arc<Vec<Value>>) -> Result<StatementResult> {
        let catalog = self.catalog();
        let fresh = !matches!(&p.cached, Some(c) if Arc::ptr_eq(&c.catalog, &catalog));
        if fresh {
            p.cached = Some(self.plan_cached(p, catalog)?);
        }
        let Some(cached) = &p.cached else { return Err(SqlError::internal("no cached plan")) };
        let columns = cached.plan.schema.to_vec();
        let mut rows = match self.point_rows(cached, &params)? {
            Some(rows) => rows,
            None => {
                let source: Arc<dyn TableSource> = Arc::new(self.source()?);
                let ctx = crate::exec::ExecContext { params, ..self.exec_context(source) };
                let out = crate::exec::execute(&cached.plan, &ctx)?;
                super::run::batches_to_rows(&out.batches)?
            }
        };
        super::run::pad_char_columns(&columns, &mut rows);
        Ok(StatementResult { tag: format!("SELECT {}", rows.len()), columns, rows, notices: vec![] })
    }

    /// Binds and optimizes `p` for `catalog`, and recognises a point plan.
    fn plan_cached(&self, p: &Prepared, catalog: Arc<MemCatalog>) -> Result<Cached> {
        let opts = crate::bind::BindOptions::default();
        let (stmt, _) = crate::bind::bind_with_params(&p.ast, &self.bind_catalog(&catalog), &opts)?;
        let Statement::Query(plan) = stmt else {
            return Err(SqlError::internal("a query bound to another statement"));
        };
        let rows = self.table_rows()?;
        let mut octx = self.optimizer_context(&*catalog);
        octx.table_rows = Some(&rows);
        let plan = crate::optimizer::optimize(plan, &octx)?;
        let point = match PointPlan::of(&plan) {
            Some(pp) => {
                let table = crate::store::source::storage_table(&self.sql_txn()?, pp.table())?;
                Some((pp, table))
            }
            None => None,
        };
        Ok(Cached { catalog, plan, point })
    }

    /// The rows of a point plan; None when the plan is none or these
    /// parameters need the general path.
    fn point_rows(&self, cached: &Cached, params: &[Value]) -> Result<Option<Vec<Vec<Value>>>> {
        let Some((pp, table)) = &cached.point else { return Ok(None) };
        let Some(key) = pp.key(params) else { return Ok(None) };
        let Some(key) = key else { return Ok(Some(vec![])) };
        let txn = self.sql_txn()?;
        pp.rows(&txn, self.engine.writer().indexes(), table, &key).map(Some)
    }
}

/// The columns `stmt` returns, known before it runs (a server's Describe).
fn result_columns(stmt: &Statement) -> Vec<crate::plan::Field> {
    let text = |n: &str| crate::plan::Field { name: n.into(), qualifier: None, ty: DataType::Text, nullable: false };
    match stmt {
        Statement::Query(plan) => plan.schema.to_vec(),
        Statement::Explain { .. } => vec![text("QUERY PLAN")],
        Statement::Show { name } if name.eq_ignore_ascii_case("all") => vec![text("name"), text("setting")],
        Statement::Show { name } => vec![text(name)],
        _ => Vec::new(),
    }
}
