//! [`MemorySource`]: tables held as Arrow record batches in memory. A real
//! table source (tests of the executor and the optimizer run plans on it),
//! not a mock: it projects, numbers rows (the VID is the row's position in
//! the table), and cuts its output into morsels of [`BATCH_ROWS`].
//! It does not apply pushed-down filters (`remaining` is the whole filter), so
//! the executor's own filter runs; index access is refused (0A000).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use parking_lot::{Mutex, RwLock};

use super::pipeline::Morsel;
use super::util::rechunk;
use super::{Access, BATCH_ROWS, ScanCounters, ScanOutput, ScanSpec, TableSource};
use crate::error::{Result, SqlError, SqlState};

#[derive(Debug, Default)]
pub struct MemorySource {
    /// Table id → its rows, every column in table order.
    tables: RwLock<HashMap<u32, Arc<Vec<RecordBatch>>>>,
}

impl MemorySource {
    pub fn new() -> MemorySource {
        MemorySource::default()
    }

    /// Sets the rows of table `table_id` (all its columns, table order).
    pub fn insert(&self, table_id: u32, batches: Vec<RecordBatch>) {
        let batches = batches.iter().flat_map(rechunk).collect();
        self.tables.write().insert(table_id, Arc::new(batches));
    }
}

impl TableSource for MemorySource {
    fn scan(&self, spec: &ScanSpec<'_>) -> Result<ScanOutput> {
        if let Access::Index { index, .. } = spec.access {
            return Err(SqlError::unsupported(format!("MemorySource has no index \"{}\"", index.name))
                .with_hint("Scan the table without an index."));
        }
        let Some(batches) = self.tables.read().get(&spec.table.id).cloned() else {
            return Err(SqlError::new(
                SqlState::UNDEFINED_TABLE,
                format!("relation \"{}\" has no rows in this MemorySource", spec.table.name),
            ));
        };
        let columns = spec.columns.to_vec();
        if let Some(&bad) = columns.iter().find(|&&c| batches.first().is_some_and(|b| c >= b.num_columns())) {
            return Err(SqlError::internal(format!("column {bad} of table \"{}\" is not stored", spec.table.name)));
        }
        let counters = Arc::new(Mutex::new(ScanCounters::default()));
        let emit_vid = spec.emit_vid;
        let shared = counters.clone();
        let mut vid = 0i64;
        let iter = (0..batches.len()).map(move |i| {
            let batch = &batches[i];
            let mut out: Vec<ArrayRef> = columns.iter().map(|&c| batch.column(c).clone()).collect();
            let n = batch.num_rows();
            if emit_vid {
                out.push(Arc::new(Int64Array::from_iter_values(vid..vid + n as i64)));
            }
            vid += n as i64;
            shared.lock().rows_examined += n as u64;
            debug_assert!(n <= BATCH_ROWS);
            let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(n));
            RecordBatch::try_new_with_options(
                Arc::new(arrow_schema::Schema::new(
                    out.iter()
                        .enumerate()
                        .map(|(i, a)| arrow_schema::Field::new(format!("c{i}"), a.data_type().clone(), true))
                        .collect::<Vec<_>>(),
                )),
                out,
                &options,
            )
            .map_err(super::util::arrow_err)
            .map(Morsel::Ready)
        });
        Ok(ScanOutput { batches: Box::new(iter), remaining: spec.filter.cloned(), counters })
    }
}
