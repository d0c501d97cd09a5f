//! Statements that run inside a transaction: queries, DML, DDL, ANALYZE,
//! COPY, EXPLAIN.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;

use super::{Session, StatementResult};
use crate::catalog::{Catalog, IndexDef, TableDef, ViewDef};
use crate::error::{Result, SqlError, SqlState};
use crate::exec::{ExecOutput, TableSource};
use crate::plan::{Plan, Statement};
use crate::store::source::TxnSource;
use crate::store::txn::SqlTxn;
use crate::types::Value;

impl Session {
    pub(super) fn execute_in_txn(&mut self, stmt: Statement) -> Result<StatementResult> {
        match stmt {
            Statement::Query(plan) => self.query(plan),
            Statement::Insert { table, source, skip_conflicts } => {
                let rows = self.rows_of(source)?;
                let (w, txn) = (self.engine.writer(), self.sql_txn()?);
                let n = match &skip_conflicts {
                    None => w.insert_many(&txn, &table, rows)?,
                    Some(arbiter) => w.insert_many_skipping_conflicts(&txn, &table, rows, arbiter.as_deref())?,
                };
                Ok(StatementResult::command(format!("INSERT 0 {n}")))
            }
            Statement::Update { table, source } => {
                let rows = self.rows_of(source.clone())?;
                let txn = self.sql_txn()?;
                let mut n = 0;
                for row in &rows {
                    let (vid, _) = split_vid(row)?;
                    // Read committed: the newest version decides (recheck.rs).
                    let Some(row) = self.recheck(&table, &source, vid, row)? else { continue };
                    let (vid, values) = split_vid(&row)?;
                    self.engine.writer().update(&txn, &table, vid, values)?;
                    n += 1;
                }
                Ok(StatementResult::command(format!("UPDATE {n}")))
            }
            Statement::Delete { table, source } => {
                let n = self.delete(&table, source)?;
                Ok(StatementResult::command(format!("DELETE {n}")))
            }
            Statement::Truncate { deletes } => {
                for d in deletes {
                    let Statement::Delete { table, source } = d else {
                        return Err(SqlError::internal("TRUNCATE holds a statement other than DELETE"));
                    };
                    self.delete(&table, source)?;
                }
                Ok(StatementResult::command("TRUNCATE TABLE"))
            }
            Statement::Explain { analyze, statement } => self.explain(analyze, *statement),
            Statement::Analyze { tables } => self.analyze(tables),
            Statement::Copy { table, columns, path, options } => {
                let n = super::copy::copy_from_file(self, &table, &columns, &path, &options)?;
                Ok(StatementResult::command(format!("COPY {n}")))
            }
            ddl => self.ddl(ddl),
        }
    }

    pub(super) fn sql_txn(&self) -> Result<SqlTxn> {
        self.txn.as_ref().map(|t| t.txn.clone()).ok_or_else(|| SqlError::internal("no transaction open"))
    }

    /// Optimizes and runs a plan in the session's transaction.
    pub(super) fn execute_plan(&mut self, plan: Plan) -> Result<(Plan, ExecOutput)> {
        let catalog = self.catalog();
        let rows = self.table_rows()?;
        let mut octx = self.optimizer_context(&*catalog);
        octx.table_rows = Some(&rows);
        let t0 = Instant::now();
        let plan = crate::optimizer::optimize(plan, &octx)?;
        let plan_time = t0.elapsed();
        self.planning_time = Some(plan_time);
        let plan_s = plan_time.as_secs_f64();
        let source: Arc<dyn TableSource> = Arc::new(self.source()?);
        let ctx = self.exec_context(source);
        let out = crate::exec::execute(&plan, &ctx)?;
        self.last_stats = Some(super::PlanStats { plan_s, device: device_totals(&out.metrics) });
        Ok((plan, out))
    }

    /// Row counts of tables without ANALYZE statistics, for the optimizer:
    /// the VIDs the store has handed out (deleted tuples included).
    pub(super) fn table_rows(&self) -> Result<impl Fn(&TableDef) -> Option<f64> + use<>> {
        let txn = self.sql_txn()?;
        Ok(move |def: &TableDef| crate::store::source::storage_table(&txn, def).ok().map(|t| t.vids() as f64))
    }

    pub(super) fn source(&self) -> Result<TxnSource> {
        let freshness = ndpdb_storage::Freshness::from_name(&self.settings.ndp_freshness)
            .ok_or_else(|| SqlError::internal("ndp_freshness holds an unknown name"))?;
        let pes = match self.settings.ndp_pes {
            0 => self.engine.profile().pe.count,
            n => n,
        };
        Ok(TxnSource::new(self.sql_txn()?, pes, freshness).with_indexes(self.engine.writer().indexes().clone()))
    }

    /// Deletes the rows whose VIDs `source` yields; returns how many.
    fn delete(&mut self, table: &Arc<TableDef>, source: Plan) -> Result<u64> {
        let rows = self.rows_of(source.clone())?;
        let txn = self.sql_txn()?;
        let mut n = 0;
        for row in &rows {
            let (vid, _) = split_vid(row)?;
            if self.recheck(table, &source, vid, row)?.is_none() {
                continue;
            }
            self.engine.writer().delete(&txn, table, vid)?;
            n += 1;
        }
        Ok(n)
    }

    /// ALTER TABLE ADD PRIMARY KEY: no NULL in the key columns (23502), the
    /// new entry, then `t_pkey` built (a repeated key is 23505).
    fn add_primary_key(&mut self, table: &TableDef, columns: &[usize]) -> Result<()> {
        let quote = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
        for &c in columns {
            let col = &table.columns[c].name;
            let sql = format!("SELECT 1 FROM {} WHERE {} IS NULL LIMIT 1", quote(&table.name), quote(col));
            let [ast] = crate::bind::parse(&sql)?.try_into().map_err(|_| SqlError::internal("one statement"))?;
            let (bound, _) = crate::bind::bind_with_params(&ast, &*self.catalog(), &Default::default())?;
            let Statement::Query(plan) = bound else { return Err(SqlError::internal("a query")) };
            if !self.rows_of(plan)?.is_empty() {
                return Err(SqlError::new(
                    SqlState("23502"),
                    format!("column \"{col}\" of relation \"{}\" contains null values", table.name),
                ));
            }
        }
        let txn = self.sql_txn()?;
        let def = self.engine.catalog_store().add_primary_key(&txn, &table.name, columns)?;
        let constraints = crate::store::index::build::constraint_indexes(&def);
        let pkey = constraints.first().ok_or_else(|| SqlError::internal("no primary key index"))?;
        self.engine.writer().create_index(&txn, &def, pkey)
    }

    fn rows_of(&mut self, plan: Plan) -> Result<Vec<Vec<Value>>> {
        let (_, out) = self.execute_plan(plan)?;
        batches_to_rows(&out.batches)
    }

    fn query(&mut self, plan: Plan) -> Result<StatementResult> {
        let columns = plan.schema.to_vec();
        let (_, out) = self.execute_plan(plan)?;
        let mut rows = batches_to_rows(&out.batches)?;
        pad_char_columns(&columns, &mut rows);
        Ok(StatementResult { tag: format!("SELECT {}", rows.len()), columns, rows, notices: vec![] })
    }

    fn analyze(&mut self, tables: Vec<Arc<TableDef>>) -> Result<StatementResult> {
        let txn = self.sql_txn()?;
        let tables = if tables.is_empty() { self.catalog().tables.values().cloned().collect() } else { tables };
        for t in &tables {
            crate::store::analyze::analyze(self.engine.catalog_store(), &txn, t)?;
        }
        self.refresh_txn_catalog()?;
        Ok(StatementResult::command("ANALYZE"))
    }

    /// DDL: catalog rows written in the transaction; the transaction then
    /// sees the new catalog.
    fn ddl(&mut self, stmt: Statement) -> Result<StatementResult> {
        let txn = self.sql_txn()?;
        let cs = self.engine.catalog_store();
        let mut notices = Vec::new();
        let mut skipped = |what: &str, name: &str, exists: bool| {
            let verb = if exists { "already exists, skipping" } else { "does not exist, skipping" };
            notices.push(format!("{what} \"{name}\" {verb}"));
        };
        let tag = match stmt {
            Statement::CreateTable { name, columns, primary_key, unique, if_not_exists } => {
                if cs.create_table(&txn, &name, columns, primary_key, unique, if_not_exists)?.is_none() {
                    skipped("relation", &name, true);
                }
                "CREATE TABLE"
            }
            Statement::DropTable { names, if_exists } => {
                for n in &names {
                    let def = self.catalog().table(n);
                    if !cs.drop_table(&txn, n, if_exists)? {
                        skipped("table", n, false);
                    } else if let Some(def) = def {
                        self.engine.writer().drop_table(&txn, &def);
                    }
                }
                "DROP TABLE"
            }
            Statement::AddPrimaryKey { table, columns } => {
                self.add_primary_key(&table, &columns)?;
                "ALTER TABLE"
            }
            Statement::CreateIndex { name, table, columns, unique, if_not_exists } => {
                let def = IndexDef { name: name.clone(), table: table.name.clone(), columns, unique };
                if !cs.create_index(&txn, &def, if_not_exists)? {
                    skipped("relation", &name, true);
                } else {
                    self.engine.writer().create_index(&txn, &table, &def)?;
                }
                "CREATE INDEX"
            }
            Statement::DropIndex { names, if_exists } => {
                for n in &names {
                    let cat = self.catalog();
                    let found = cat.index(n).and_then(|i| Some((cat.table(&i.table)?, i)));
                    if let Some((t, _)) = &found {
                        crate::store::index::build::refuse_constraint_drop(t, n)?;
                    }
                    if !cs.drop_index(&txn, n, if_exists)? {
                        skipped("index", n, false);
                    } else if let Some((t, i)) = found {
                        self.engine.writer().drop_index(&txn, &t, &i)?;
                    }
                }
                "DROP INDEX"
            }
            Statement::CreateView { name, columns, sql, or_replace } => {
                cs.create_view(&txn, &ViewDef { name, columns, sql }, or_replace)?;
                "CREATE VIEW"
            }
            Statement::DropView { names, if_exists } => {
                for n in &names {
                    if !cs.drop_view(&txn, n, if_exists)? {
                        skipped("view", n, false);
                    }
                }
                "DROP VIEW"
            }
            other => return Err(SqlError::internal(format!("statement not dispatched: {other:?}"))),
        };
        self.refresh_txn_catalog()?;
        let mut r = StatementResult::command(tag);
        r.notices = notices;
        Ok(r)
    }

    fn refresh_txn_catalog(&mut self) -> Result<()> {
        let txn = self.sql_txn()?;
        txn.begin_statement();
        let c = self.engine.catalog_store().load(&txn)?;
        if let Some(t) = &mut self.txn {
            t.catalog = Some(Arc::new(c));
        }
        Ok(())
    }
}

/// A `char(n)` result column prints blank-padded to `n` characters, as
/// PostgreSQL's bpchar output does; inside the engine its values travel
/// without the padding (`store/mapping.rs`), so the result pads them.
pub(crate) fn pad_char_columns(columns: &[crate::plan::Field], rows: &mut [Vec<Value>]) {
    for (i, c) in columns.iter().enumerate() {
        let crate::types::DataType::Char(n) = c.ty else { continue };
        for row in rows.iter_mut() {
            if let Some(Value::Text(t)) = row.get_mut(i) {
                let len = t.chars().count();
                if len < n as usize {
                    t.extend(std::iter::repeat_n(' ', n as usize - len));
                }
            }
        }
    }
}

/// The device counters of every scan in a metrics tree, summed.
fn device_totals(m: &crate::exec::OperatorMetrics) -> crate::exec::ScanCounters {
    let mut t = m.scan.unwrap_or_default();
    for c in m.children.iter().map(device_totals) {
        t.add(&c);
    }
    t
}

/// An UPDATE/DELETE source row: the VID, then the new values.
fn split_vid(row: &[Value]) -> Result<(u64, &[Value])> {
    match row.split_first() {
        Some((Value::Int64(v), rest)) if *v >= 0 => Ok((*v as u64, rest)),
        _ => Err(SqlError::new(SqlState::INTERNAL_ERROR, "UPDATE/DELETE source row without a VID")),
    }
}

/// Rows of Values from the executor's batches.
pub(crate) fn batches_to_rows(batches: &[RecordBatch]) -> Result<Vec<Vec<Value>>> {
    let mut rows = Vec::with_capacity(batches.iter().map(|b| b.num_rows()).sum());
    for b in batches {
        for r in 0..b.num_rows() {
            let row =
                b.columns().iter().map(|c| crate::types::arrow::value_at(c.as_ref(), r)).collect::<Result<Vec<_>>>()?;
            rows.push(row);
        }
    }
    Ok(rows)
}
