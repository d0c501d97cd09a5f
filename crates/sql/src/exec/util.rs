//! Small conversions the operators share: plan schemas to Arrow schemas,
//! arrays to the plan's declared types, single values out of arrays, and
//! row keys (arrow-row) for hashing and ordering.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, new_null_array};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{Field as ArrowField, Schema as ArrowSchema, SchemaRef};

use crate::error::{Result, SqlError};
use crate::plan::Schema;
use crate::types::DataType;

/// The Arrow schema of a plan node's output. Every field is nullable:
/// nullability is the binder's promise, not something the kernels check.
pub fn arrow_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<ArrowField> = schema
        .iter()
        .enumerate()
        .map(|(i, f)| ArrowField::new(format!("{}#{i}", f.name), f.ty.arrow(), true))
        .collect();
    Arc::new(ArrowSchema::new(fields))
}

pub fn arrow_err(e: arrow_schema::ArrowError) -> SqlError {
    SqlError::internal(format!("arrow: {e}"))
}

/// `array` as an array of `ty` (a cast where the evaluator's type differs,
/// e.g. an untyped NULL).
pub fn conform(array: ArrayRef, ty: &DataType) -> Result<ArrayRef> {
    let want = ty.arrow();
    if array.data_type() == &want {
        return Ok(array);
    }
    if array.null_count() == array.len() {
        return Ok(new_null_array(&want, array.len()));
    }
    arrow_cast::cast(&array, &want).map_err(arrow_err)
}

/// A batch of `columns` under `schema`, each conformed to its field's type.
pub fn make_batch(schema: &Schema, columns: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
    if columns.len() != schema.len() {
        return Err(SqlError::internal(format!("{} columns for a schema of {}", columns.len(), schema.len())));
    }
    let columns = columns.into_iter().zip(schema.iter()).map(|(c, f)| conform(c, &f.ty)).collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(arrow_schema(schema), columns, &options).map_err(arrow_err)
}

/// A batch of `rows` rows and no columns (input of `VALUES` expressions).
pub fn empty_rows_batch(rows: usize) -> RecordBatch {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::new(ArrowSchema::empty()), vec![], &options)
        .expect("a batch without columns is always valid")
}

/// Converts key columns to arrow-row rows: equal keys give equal bytes,
/// NULL equal to NULL (set operations and DISTINCT want that; joins drop
/// NULL keys first).
pub struct KeyEncoder {
    converter: RowConverter,
}

impl KeyEncoder {
    pub fn new(types: &[arrow_schema::DataType]) -> Result<KeyEncoder> {
        let fields = types.iter().map(|t| SortField::new(t.clone())).collect();
        Ok(KeyEncoder { converter: RowConverter::new(fields).map_err(arrow_err)? })
    }

    pub fn with_fields(fields: Vec<SortField>) -> Result<KeyEncoder> {
        Ok(KeyEncoder { converter: RowConverter::new(fields).map_err(arrow_err)? })
    }

    pub fn encode(&self, columns: &[ArrayRef]) -> Result<Rows> {
        if columns.iter().any(|c| c.data_type() == &arrow_schema::DataType::Float64) {
            let columns: Vec<ArrayRef> = columns.iter().map(positive_zero).collect();
            return self.converter.convert_columns(&columns).map_err(arrow_err);
        }
        self.converter.convert_columns(columns).map_err(arrow_err)
    }

    /// Arrays back from encoded keys.
    pub fn decode<'a>(&self, rows: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<ArrayRef>> {
        let parser = self.converter.parser();
        let rows: Vec<_> = rows.into_iter().map(|b| parser.parse(b)).collect();
        self.converter.convert_rows(rows).map_err(arrow_err)
    }
}

/// A float column with -0 read as 0: they are equal (`-0 = 0` is true in
/// PostgreSQL), so they must group, join and deduplicate as one key, and
/// arrow-row encodes them apart.
fn positive_zero(column: &ArrayRef) -> ArrayRef {
    match column.as_any().downcast_ref::<arrow_array::Float64Array>() {
        Some(f) if f.values().iter().any(|v| *v == 0.0 && v.is_sign_negative()) => {
            Arc::new(f.unary::<_, arrow_array::types::Float64Type>(|v| if v == 0.0 { 0.0 } else { v }))
        }
        _ => column.clone(),
    }
}

/// Which rows have a NULL in any of `columns`.
pub fn any_null(columns: &[ArrayRef], rows: usize) -> Vec<bool> {
    let mut out = vec![false; rows];
    for c in columns {
        if c.null_count() > 0 {
            for (i, o) in out.iter_mut().enumerate() {
                *o |= c.is_null(i);
            }
        }
    }
    out
}

/// The bytes of `batch`'s rows (its slices of the buffers): what a copy
/// of it takes. A batch read from a spill file shares one buffer among its
/// columns, which `get_array_memory_size` counts once per column.
pub fn slice_bytes(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| c.to_data().get_slice_memory_size().unwrap_or_else(|_| c.get_array_memory_size()))
        .sum()
}

/// Takes `indices` of every column of `batch`.
pub fn take_columns(batch: &RecordBatch, indices: &arrow_array::UInt32Array) -> Result<Vec<ArrayRef>> {
    batch.columns().iter().map(|c| arrow_select::take::take(c.as_ref(), indices, None).map_err(arrow_err)).collect()
}

/// Concatenates batches of one schema (an empty batch for none).
pub fn concat(schema: &Schema, batches: &[RecordBatch]) -> Result<RecordBatch> {
    let arrow = arrow_schema(schema);
    if batches.is_empty() {
        return Ok(RecordBatch::new_empty(arrow));
    }
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut columns = Vec::with_capacity(schema.len());
    for i in 0..schema.len() {
        let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
        columns.push(arrow_select::concat::concat(&arrays).map_err(arrow_err)?);
    }
    make_batch(schema, columns, rows)
}

/// Splits `batch` into slices of at most [`super::BATCH_ROWS`] rows.
pub fn rechunk(batch: &RecordBatch) -> Vec<RecordBatch> {
    let n = batch.num_rows();
    (0..n).step_by(super::BATCH_ROWS).map(|s| batch.slice(s, super::BATCH_ROWS.min(n - s))).collect()
}
