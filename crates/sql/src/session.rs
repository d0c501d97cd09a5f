//! Sessions: where SQL text becomes results, one statement at a time, inside
//! transactions.
//!
//! An [`Engine`] is one open database: the MVCC store with its transaction
//! manager, the committed catalog, the hardware profile. A [`Session`] is
//! one user of it (the shell, a test, or one connection of the server):
//! its [`Settings`], and its transaction, which lives across statements
//! between BEGIN and COMMIT and otherwise only for one statement (implicit
//! transactions, autocommit as PostgreSQL).
//!
//! ```text
//!  run(sql) ─► parse ─► for each statement:
//!               bind (against the transaction's catalog)
//!               ├─ BEGIN/COMMIT/ROLLBACK/SET/SHOW: session state
//!               ├─ DDL: catalog rows written in the transaction
//!               └─ query/DML: optimize ─► execute (TxnSource) ─► writes
//! ```
//!
//! Transaction states follow PostgreSQL's: after an error inside BEGIN ..
//! COMMIT every statement but ROLLBACK/COMMIT fails with 25P02, and COMMIT
//! of a failed block rolls back. DDL is transactional: a transaction that
//! changed the catalog sees its own catalog (re-read from the system table
//! after each DDL statement), and the engine's committed catalog is re-read
//! when it commits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::catalog::MemCatalog;
use crate::error::{Result, SqlError, SqlState};
use crate::exec::ExecContext;
use crate::plan::statement::IsolationLevel;
use crate::plan::{Field, Statement};
use crate::settings::Settings;
use crate::store::txn::SqlTxn;
use crate::types::Value;

mod activity;
mod copy;
mod engine;
mod explain;
mod prepared;
mod recheck;
mod run;

pub use copy::CopyIn;
pub use engine::{Engine, EngineOptions};
pub use explain::ExplainTree;
pub use prepared::Prepared;

/// What one statement returned: the command tag (`SELECT 3`, `INSERT 0
/// 1`, `CREATE TABLE`, ...), the columns and rows of a query (empty
/// otherwise), and notices.
#[derive(Debug, Clone, PartialEq)]
pub struct StatementResult {
    pub tag: String,
    pub columns: Vec<Field>,
    pub rows: Vec<Vec<Value>>,
    pub notices: Vec<String>,
}

impl StatementResult {
    fn command(tag: impl Into<String>) -> StatementResult {
        StatementResult { tag: tag.into(), columns: Vec::new(), rows: Vec::new(), notices: Vec::new() }
    }
}

/// Where the session is with respect to transactions (psql's prompt and
/// the server's ReadyForQuery status byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    /// No explicit transaction.
    Idle,
    /// Inside BEGIN .. COMMIT.
    InBlock,
    /// Inside a block that failed: only ROLLBACK/COMMIT end it.
    Failed,
}

/// An open transaction of a session.
struct OpenTxn {
    txn: SqlTxn,
    isolation: IsolationLevel,
    /// Statements run in it so far (SET TRANSACTION must come first).
    statements: u64,
    /// BEGIN was given (else it is the statement's implicit transaction).
    explicit: bool,
    failed: bool,
    /// The catalog this transaction sees, when its DDL changed it.
    catalog: Option<Arc<MemCatalog>>,
}

pub struct Session {
    engine: Arc<Engine>,
    settings: Settings,
    txn: Option<OpenTxn>,
    cancel: Arc<AtomicBool>,
    /// How long the optimizer took on the last statement it planned.
    planning_time: Option<Duration>,
    /// The id of the transaction last opened (0: none yet), for [`WaitProbe`].
    txn_id: Arc<AtomicU64>,
    /// What the last optimized plan cost to find and to run (benchmarks).
    last_stats: Option<PlanStats>,
    /// `$n` values of the prepared statement running (`prepared.rs`).
    params: Arc<Vec<Value>>,
    /// This session's `pg_stat_activity` row and the list of all (`activity.rs`).
    activity: activity::Activity,
    /// The last EXPLAIN's plan as a tree (`explain.rs`).
    last_explain: Option<ExplainTree>,
}

/// Tells, from another thread, whether a session's running statement waits
/// for a tuple lock another transaction holds: the deadlock detector's
/// waits-for graph has an edge from the session's transaction. Exact, not a
/// guess from time (the isolation scripts' runner reports such a statement
/// as blocked; a server could show it as pg_locks does).
#[derive(Clone)]
pub struct WaitProbe {
    engine: Arc<Engine>,
    txn_id: Arc<AtomicU64>,
}

impl WaitProbe {
    /// Whether the session's transaction waits for a tuple lock now.
    pub fn is_waiting(&self) -> bool {
        match self.txn_id() {
            Some(id) => self.engine.database().is_waiting(id),
            None => false,
        }
    }

    /// The id of the session's current (or last) transaction.
    pub fn txn_id(&self) -> Option<u64> {
        Some(self.txn_id.load(Ordering::Acquire)).filter(|&id| id != 0)
    }
}

/// Measurements of the last plan the session optimized and ran: the
/// optimizer's time and the device counters of its scans, summed (what
/// `EXPLAIN ANALYZE`'s `Device:` line shows), for the benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PlanStats {
    /// Seconds `optimize` took (rewrites, join order, physical choices).
    pub plan_s: f64,
    pub device: crate::exec::ScanCounters,
}

impl Session {
    pub(crate) fn new(engine: Arc<Engine>) -> Session {
        Session {
            engine,
            settings: Settings::default(),
            txn: None,
            cancel: Arc::new(AtomicBool::new(false)),
            planning_time: None,
            txn_id: Arc::new(AtomicU64::new(0)),
            last_stats: None,
            params: Arc::default(),
            activity: activity::Activity::new(),
            last_explain: None,
        }
    }

    /// A probe that tells from another thread whether this session's
    /// statement waits for a tuple lock.
    pub fn wait_probe(&self) -> WaitProbe {
        WaitProbe { engine: self.engine.clone(), txn_id: self.txn_id.clone() }
    }

    /// Wall time of the optimizer (rewrites, join ordering, physical
    /// choices; not parsing or binding) on the last query, DML source or
    /// EXPLAIN this session planned: EXPLAIN's "Planning Time" and the
    /// benchmarks' `plan_ms`. None before the first.
    pub fn last_planning_time(&self) -> Option<Duration> {
        self.planning_time
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// A flag that cancels the running statement when set (the server's
    /// cancel request); cleared at the start of each statement.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    /// The plan of the last EXPLAIN [ANALYZE] this session ran, as a tree
    /// (the text form's content, for a caller that draws it: `ndpdb web`).
    pub fn last_explain(&self) -> Option<&ExplainTree> {
        self.last_explain.as_ref()
    }

    /// The last plan's [`PlanStats`] (None before the first query or DML).
    pub fn last_stats(&self) -> Option<PlanStats> {
        self.last_stats
    }

    pub fn txn_status(&self) -> TxnStatus {
        match &self.txn {
            Some(t) if t.explicit && t.failed => TxnStatus::Failed,
            Some(t) if t.explicit => TxnStatus::InBlock,
            _ => TxnStatus::Idle,
        }
    }

    /// The catalog statements of this session see now.
    pub fn catalog(&self) -> Arc<MemCatalog> {
        match self.txn.as_ref().and_then(|t| t.catalog.clone()) {
            Some(c) => c,
            None => self.engine.catalog(),
        }
    }

    /// Runs every statement of `sql` in order, up to and including the
    /// first that fails (as PostgreSQL's simple query protocol does).
    pub fn run(&mut self, sql: &str) -> Vec<Result<StatementResult>> {
        self.statement_started(sql);
        let out = self.run_statements(sql);
        self.statement_finished();
        out
    }

    fn run_statements(&mut self, sql: &str) -> Vec<Result<StatementResult>> {
        let stmts = match crate::bind::parse(sql) {
            Ok(s) => s,
            Err(e) => {
                self.note_error();
                return vec![Err(e)];
            }
        };
        let mut out = Vec::with_capacity(stmts.len());
        for ast in &stmts {
            let r = self.run_one(ast);
            let failed = r.is_err();
            out.push(r);
            if failed {
                break;
            }
        }
        out
    }

    /// Runs one parsed statement.
    pub fn run_one(&mut self, ast: &sqlparser::ast::Statement) -> Result<StatementResult> {
        self.cancel.store(false, Ordering::Relaxed);
        if let Some(t) = &self.txn
            && t.failed
            && !is_txn_end(ast)
        {
            return Err(SqlError::new(
                SqlState::IN_FAILED_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        let catalog = self.catalog();
        let bound = crate::bind::bind(ast, &self.bind_catalog(&catalog), &crate::bind::BindOptions::default());
        let r = bound.and_then(|stmt| self.dispatch(stmt));
        if r.is_err() {
            self.note_error();
        }
        r
    }

    /// Tells the session a statement run outside it (a server's cursor
    /// statement) failed: as after any failed statement, an implicit
    /// transaction rolls back and an explicit one is marked failed.
    pub fn statement_failed(&mut self) {
        self.note_error();
    }

    /// After an error: an implicit transaction is rolled back; an explicit
    /// one is marked failed.
    fn note_error(&mut self) {
        match &mut self.txn {
            Some(t) if t.explicit => t.failed = true,
            Some(_) => {
                if let Some(t) = self.txn.take() {
                    let _ = t.txn.abort();
                }
            }
            None => {}
        }
    }

    fn dispatch(&mut self, stmt: Statement) -> Result<StatementResult> {
        match stmt {
            Statement::Begin { isolation } => self.begin(isolation),
            Statement::Commit => self.commit(),
            Statement::Rollback => self.rollback(),
            Statement::SetTransaction { isolation } => self.set_transaction(isolation),
            Statement::Set { name, value } => {
                self.settings.set(&name, value.as_deref())?;
                Ok(StatementResult::command("SET"))
            }
            Statement::Show { name } => self.show(&name),
            Statement::Empty => Ok(StatementResult::command("")),
            other => self.in_transaction(other),
        }
    }

    /// Runs a statement inside the session's transaction, or inside an
    /// implicit one that commits when the statement succeeds.
    fn in_transaction(&mut self, stmt: Statement) -> Result<StatementResult> {
        self.statement_in_txn(|s| s.execute_in_txn(stmt))
    }

    /// Runs `f` as one statement of the session's transaction, or of an
    /// implicit one that commits when `f` succeeds (prepared statements too).
    fn statement_in_txn(&mut self, f: impl FnOnce(&mut Session) -> Result<StatementResult>) -> Result<StatementResult> {
        let implicit = self.txn.is_none();
        if implicit {
            self.txn = Some(self.open_txn(false, self.settings.default_isolation)?);
        }
        if let Some(t) = &mut self.txn {
            t.txn.begin_statement();
            t.statements += 1;
        }
        let r = f(self);
        if implicit && r.is_ok() {
            self.commit()?;
        }
        r
    }

    fn open_txn(&self, explicit: bool, isolation: IsolationLevel) -> Result<OpenTxn> {
        let txn = self.begin_sql_txn(isolation);
        Ok(OpenTxn { txn, isolation, statements: 0, explicit, failed: false, catalog: None })
    }

    /// Begins a storage transaction and publishes its id to the wait probe.
    fn begin_sql_txn(&self, isolation: IsolationLevel) -> SqlTxn {
        let txn = SqlTxn::begin(self.engine.database().clone(), storage_isolation(isolation));
        self.txn_id.store(txn.id().unwrap_or(0), Ordering::Release);
        txn
    }

    fn begin(&mut self, isolation: Option<IsolationLevel>) -> Result<StatementResult> {
        if self.txn.as_ref().is_some_and(|t| t.explicit) {
            let mut r = StatementResult::command("BEGIN");
            r.notices.push("there is already a transaction in progress".into());
            return Ok(r);
        }
        let iso = isolation.unwrap_or(self.settings.default_isolation);
        self.txn = Some(self.open_txn(true, iso)?);
        Ok(StatementResult::command("BEGIN"))
    }

    fn commit(&mut self) -> Result<StatementResult> {
        let Some(t) = self.txn.take() else {
            let mut r = StatementResult::command("COMMIT");
            r.notices.push("there is no transaction in progress".into());
            return Ok(r);
        };
        if t.failed {
            t.txn.abort()?;
            return Ok(StatementResult::command("ROLLBACK"));
        }
        let ddl = t.catalog.is_some();
        t.txn.commit()?;
        if ddl {
            self.engine.reload_catalog()?;
        }
        Ok(StatementResult::command("COMMIT"))
    }

    fn rollback(&mut self) -> Result<StatementResult> {
        match self.txn.take() {
            Some(t) => {
                t.txn.abort()?;
                Ok(StatementResult::command("ROLLBACK"))
            }
            None => {
                let mut r = StatementResult::command("ROLLBACK");
                r.notices.push("there is no transaction in progress".into());
                Ok(r)
            }
        }
    }

    fn set_transaction(&mut self, isolation: IsolationLevel) -> Result<StatementResult> {
        match &mut self.txn {
            Some(t) if t.explicit => {
                if t.statements > 0 {
                    return Err(SqlError::new(
                        SqlState::ACTIVE_TRANSACTION,
                        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                    ));
                }
                let _ = t.txn.abort();
                t.txn = SqlTxn::begin(self.engine.database().clone(), storage_isolation(isolation));
                self.txn_id.store(t.txn.id().unwrap_or(0), Ordering::Release);
                t.isolation = isolation;
                Ok(StatementResult::command("SET"))
            }
            _ => {
                let mut r = StatementResult::command("SET");
                r.notices.push("SET TRANSACTION can only be used in transaction blocks".into());
                Ok(r)
            }
        }
    }

    fn show(&self, name: &str) -> Result<StatementResult> {
        let text =
            |n: &str| Field { name: n.into(), qualifier: None, ty: crate::types::DataType::Text, nullable: false };
        if name.eq_ignore_ascii_case("all") {
            let rows = self.settings.all().into_iter().map(|(n, v)| vec![Value::Text(n), Value::Text(v)]).collect();
            return Ok(StatementResult {
                tag: "SHOW".into(),
                columns: vec![text("name"), text("setting")],
                rows,
                notices: vec![],
            });
        }
        let v = if name.eq_ignore_ascii_case("transaction_isolation") {
            match &self.txn {
                Some(t) => crate::settings::isolation_name(t.isolation).to_string(),
                None => self.settings.show(name)?,
            }
        } else {
            self.settings.show(name)?
        };
        Ok(StatementResult {
            tag: "SHOW".into(),
            columns: vec![text(&name.to_ascii_lowercase())],
            rows: vec![vec![Value::Text(v)]],
            notices: vec![],
        })
    }

    /// What the optimizer needs from the session: catalog, `ndp`, costs
    /// from the engine's profile, row counts from the store.
    fn optimizer_context<'a>(
        &self,
        catalog: &'a dyn crate::catalog::Catalog,
    ) -> crate::optimizer::OptimizerContext<'a> {
        let mut ctx = crate::optimizer::OptimizerContext::new(catalog);
        ctx.ndp = self.settings.ndp;
        ctx.cost = *self.engine.cost_params();
        ctx
    }

    /// The context the executor runs a plan of this statement with.
    fn exec_context(&self, source: Arc<dyn crate::exec::TableSource>) -> ExecContext {
        let now_us = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64);
        ExecContext {
            statement_start_us: now_us,
            cancel: self.cancel.clone(),
            deadline: self.settings.statement_timeout.map(|d| Instant::now() + d),
            work_mem: self.settings.work_mem,
            workers: self.settings.workers,
            params: self.params.clone(),
            spill: self.engine.spill_dir().clone(),
            ..ExecContext::new(source)
        }
    }
}

fn storage_isolation(i: IsolationLevel) -> ndpdb_txn::Isolation {
    match i {
        IsolationLevel::ReadCommitted => ndpdb_txn::Isolation::ReadCommitted,
        IsolationLevel::RepeatableRead => ndpdb_txn::Isolation::RepeatableRead,
        IsolationLevel::Serializable => ndpdb_txn::Isolation::Serializable,
    }
}

fn is_txn_end(ast: &sqlparser::ast::Statement) -> bool {
    use sqlparser::ast::Statement as S;
    matches!(ast, S::Commit { .. } | S::Rollback { .. })
}
