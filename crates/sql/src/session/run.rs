//! Statements that run inside a transaction: queries, DML, DDL, ANALYZE,
//! COPY, EXPLAIN.

use std::sync::Arc;

use arrow_array::RecordBatch;

use super::{Session, StatementResult};
use crate::catalog::TableDef;
use crate::error::{Result, SqlError};
use crate::exec::{ExecOutput, TableSource};
use crate::plan::{Plan, Statement};
use crate::store::catalog::CatalogStore;
use crate::store::source::TxnSource;
use crate::store::txn::SharedTxn;
use crate::types::Value;

impl Session {
    pub(super) fn execute_in_txn(&mut self, stmt: Statement) -> Result<StatementResult> {
        match stmt {
            Statement::Query(plan) => self.query(plan),
            Statement::Insert { table, source } => {
                let rows = self.rows_of(source)?;
                let n = crate::store::write::insert_rows(&self.shared_txn()?, &table, rows)?;
                Ok(StatementResult::command(format!("INSERT 0 {n}")))
            }
            Statement::Update { table, source } => {
                let rows = self.rows_of(source)?;
                let n = crate::store::write::update_rows(&self.shared_txn()?, &table, rows)?;
                Ok(StatementResult::command(format!("UPDATE {n}")))
            }
            Statement::Delete { table, source } => {
                let rows = self.rows_of(source)?;
                let n = crate::store::write::delete_rows(&self.shared_txn()?, &table, rows)?;
                Ok(StatementResult::command(format!("DELETE {n}")))
            }
            Statement::Explain { analyze, statement } => self.explain(analyze, *statement),
            Statement::Analyze { tables } => self.analyze(tables),
            Statement::Copy { table, columns, path, options } => {
                let n = crate::store::copy::copy_from_file(&self.shared_txn()?, &table, &columns, &path, &options)?;
                Ok(StatementResult::command(format!("COPY {n}")))
            }
            ddl => self.ddl(ddl),
        }
    }

    pub(super) fn shared_txn(&self) -> Result<SharedTxn> {
        self.txn.as_ref().map(|t| t.txn.clone()).ok_or_else(|| SqlError::internal("no transaction open"))
    }

    /// Optimizes and runs a plan in the session's transaction.
    pub(super) fn execute_plan(&mut self, plan: Plan) -> Result<(Plan, ExecOutput)> {
        let catalog = self.catalog();
        let plan = crate::optimizer::optimize(plan, &self.optimizer_context(&*catalog))?;
        let source: Arc<dyn TableSource> = Arc::new(TxnSource::new(self.shared_txn()?, self.scan_options()));
        let ctx = self.exec_context(source);
        let out = crate::exec::execute(&plan, &ctx)?;
        Ok((plan, out))
    }

    fn rows_of(&mut self, plan: Plan) -> Result<Vec<Vec<Value>>> {
        let (_, out) = self.execute_plan(plan)?;
        batches_to_rows(&out.batches)
    }

    fn query(&mut self, plan: Plan) -> Result<StatementResult> {
        let columns = plan.schema.to_vec();
        let (_, out) = self.execute_plan(plan)?;
        let rows = batches_to_rows(&out.batches)?;
        Ok(StatementResult { tag: format!("SELECT {}", rows.len()), columns, rows, notices: vec![] })
    }

    fn analyze(&mut self, tables: Vec<Arc<TableDef>>) -> Result<StatementResult> {
        let txn = self.shared_txn()?;
        let tables = if tables.is_empty() { self.catalog().tables.values().cloned().collect() } else { tables };
        for t in &tables {
            let stats = crate::store::analyze::analyze(&txn, t)?;
            CatalogStore::save_stats(&txn, t, &stats)?;
        }
        self.refresh_txn_catalog()?;
        Ok(StatementResult::command("ANALYZE"))
    }

    /// DDL: catalog rows written in the transaction; the transaction then
    /// sees the new catalog.
    fn ddl(&mut self, stmt: Statement) -> Result<StatementResult> {
        let txn = self.shared_txn()?;
        let tag = CatalogStore::execute_ddl(&txn, &*self.catalog(), stmt)?;
        self.refresh_txn_catalog()?;
        Ok(StatementResult::command(tag))
    }

    fn refresh_txn_catalog(&mut self) -> Result<()> {
        let txn = self.shared_txn()?;
        let c = CatalogStore::load(&txn)?;
        if let Some(t) = &mut self.txn {
            t.catalog = Some(Arc::new(c));
        }
        Ok(())
    }
}

/// Rows of Values from the executor's batches.
pub(crate) fn batches_to_rows(batches: &[RecordBatch]) -> Result<Vec<Vec<Value>>> {
    let mut rows = Vec::with_capacity(batches.iter().map(|b| b.num_rows()).sum());
    for b in batches {
        for r in 0..b.num_rows() {
            let row = b.columns().iter().map(|c| crate::types::arrow::value_at(c.as_ref(), r)).collect::<Result<Vec<_>>>()?;
            rows.push(row);
        }
    }
    Ok(rows)
}
