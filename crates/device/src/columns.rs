//! Reading a visible version's columns during the chain walk: the
//! predicate's, an aggregate's, a projection's, the updated one. Every read
//! is checked to lie inside the record, and charged like the walk's own
//! reads (`chain.rs`): whole transfers on NVM, bytes of the kept page on
//! flash. The layout descriptor says where each column is (`schema.rs`).
//!
//! The predicate is a conjunction of terms, evaluated in the call's order:
//! a term reads its column (a numeric column's slot, or a text column's
//! tuple) and compares; the first term that fails ends the row. Each term
//! evaluated charges [`TERM_CYCLES`] PE cycles, plus one cycle per 8 bytes
//! of a byte constant (`docs/device-model.md`). The call's terms are
//! compiled once per PE into [`Check`]s (the column's read plan, the
//! constant, the charge in picoseconds), so the per-row loop neither
//! matches on the layout nor converts cycles; a check decides exactly as
//! `Term::matches`, which the host's scans use (`Predicate::eval`), so both
//! paths return the same rows.

use ndpdb_format::ndp::{Aggregate, CmpOp, Operand, Operation};
use ndpdb_format::record::HEADER_BYTES;
use ndpdb_format::schema::{ColumnType, Value};

use crate::chain::{Found, Loc, Scan};
use crate::error::DeviceError;

/// PE cycles to compare one term's column value with its constant (load,
/// compare, branch), besides the reads.
pub(crate) const TERM_CYCLES: u64 = 4;

/// How to read a numeric column of a record's data.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NumericColumn {
    /// Byte of the value in the data (4-aligned).
    at: usize,
    /// Two words (Int64, Decimal, Timestamp, Float64's bits) or one (Int32,
    /// Date, Bool; sign-extended).
    wide: bool,
    /// If nullable: the 4-aligned data byte of the null-bitmap word holding
    /// the column's bit, and the bit.
    null: Option<(usize, u32)>,
}

impl Scan<'_, '_> {
    /// Checks the call's columns against the layout: every column must
    /// exist; the aggregates', the updated one and an integer term's must be
    /// numeric (not double precision); a byte term's must be char, varchar
    /// or text.
    pub(crate) fn check_columns(&self) -> Result<(), DeviceError> {
        let n = self.layout.slots.len();
        // (column, must be numeric: Some(true); must be text: Some(false)).
        let mut cols: Vec<(u16, Option<bool>)> = vec![];
        match &self.call.op {
            Operation::Aggregate { aggregates } => cols
                .extend(aggregates.iter().filter(|(f, _)| *f != Aggregate::CountStar).map(|&(_, c)| (c, Some(true)))),
            Operation::Rows { projection } => cols.extend(projection.iter().map(|&c| (c, None))),
            Operation::Update { column, .. } => cols.push((*column, Some(true))),
        }
        for t in self.call.predicate.iter().flat_map(|p| &p.terms) {
            cols.push((t.column, Some(matches!(t.value, Operand::Int(_)))));
        }
        for (c, kind) in cols {
            let slot = self.layout.slots.get(usize::from(c)).ok_or_else(|| self.fail(format!("column {c} of {n}")))?;
            let text = matches!(slot.ty, ColumnType::Text(_) | ColumnType::Varchar(_));
            match kind {
                Some(true) if !slot.ty.is_numeric() || slot.ty == ColumnType::Float64 => {
                    return Err(
                        self.fail(format!("column {c} is {}, not an integer-valued column", slot.ty.sql_name()))
                    );
                }
                Some(false) if !text => {
                    return Err(
                        self.fail(format!("column {c} is {}: a byte constant needs a text column", slot.ty.sql_name()))
                    );
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Reads bytes `at..at + buf.len()` of a record's data.
    pub(crate) fn field(&mut self, rec: &Found, at: usize, buf: &mut [u8]) -> Result<(), DeviceError> {
        if HEADER_BYTES + at + buf.len() > rec.len {
            return Err(self.fail(format!("record of {} bytes has no bytes {at}..{}", rec.len, at + buf.len())));
        }
        let off = rec.off + (HEADER_BYTES + at) as u64;
        if let Loc::Medium(_) = rec.loc {
            self.extra_bytes += self.medium_bytes(off, buf.len() as u64);
        }
        self.read(rec.loc, rec.lpn, off, buf)
    }

    /// Reads the 4-aligned data words at `at` of a record.
    #[inline(always)]
    pub(crate) fn field_words(&mut self, rec: &Found, at: usize, out: &mut [u32]) -> Result<(), DeviceError> {
        let bytes = 4 * out.len();
        if HEADER_BYTES + at + bytes > rec.len {
            return Err(self.fail(format!("record of {} bytes has no bytes {at}..{}", rec.len, at + bytes)));
        }
        let off = rec.off + (HEADER_BYTES + at) as u64;
        if let Loc::Medium(_) = rec.loc {
            self.extra_bytes += self.medium_bytes(off, bytes as u64);
        }
        self.read_words(rec.loc, rec.lpn, off, out)
    }

    /// How to read numeric `column` (checked by `check_columns`).
    #[inline]
    pub(crate) fn numeric_column(&self, column: u16) -> NumericColumn {
        let slot = self.layout.slots[usize::from(column)];
        // The bitmap starts 4-aligned and fills whole words, so the word
        // holding the column's bit is one transfer, as the byte would be.
        let null_at = usize::from(self.layout.null_bitmap_offset) + usize::from(column) / 8;
        NumericColumn {
            at: usize::from(slot.offset),
            wide: slot.ty.is_wide(),
            null: slot.nullable.then_some((null_at & !3, 1u32 << (8 * (null_at & 3) + usize::from(column) % 8))),
        }
    }

    #[inline(always)]
    pub(crate) fn is_null(&mut self, rec: &Found, column: u16) -> Result<bool, DeviceError> {
        let Some((at, bit)) = self.numeric_column(column).null else { return Ok(false) };
        let mut w = [0u32; 1];
        self.field_words(rec, at, &mut w)?;
        Ok(w[0] & bit != 0)
    }

    #[inline(always)]
    pub(crate) fn int_column(&mut self, rec: &Found, column: u16) -> Result<Option<i64>, DeviceError> {
        let c = self.numeric_column(column);
        self.numeric(rec, c)
    }

    /// The value of a numeric column of a record, None if NULL.
    #[inline(always)]
    pub(crate) fn numeric(&mut self, rec: &Found, c: NumericColumn) -> Result<Option<i64>, DeviceError> {
        if let Some((at, bit)) = c.null {
            let mut w = [0u32; 1];
            self.field_words(rec, at, &mut w)?;
            if w[0] & bit != 0 {
                return Ok(None);
            }
        }
        Ok(Some(if c.wide {
            let mut w = [0u32; 2];
            self.field_words(rec, c.at, &mut w)?;
            (u64::from(w[0]) | u64::from(w[1]) << 32) as i64
        } else {
            let mut w = [0u32; 1];
            self.field_words(rec, c.at, &mut w)?;
            i64::from(w[0] as i32)
        }))
    }

    /// The call's predicate as [`Check`]s, in its order (after
    /// `check_columns`: an integer term's column is numeric, a byte term's
    /// is text).
    pub(crate) fn compile_checks(&self) -> Vec<Check> {
        let terms = self.call.predicate.iter().flat_map(|p| p.terms.iter().enumerate());
        terms
            .map(|(term, t)| match &t.value {
                Operand::Int(value) => Check {
                    kind: CheckKind::Int { column: self.numeric_column(t.column), value: *value },
                    op: t.op,
                    ps: self.ctx.cycles_ps(TERM_CYCLES),
                },
                Operand::Bytes(b) => Check {
                    kind: CheckKind::Bytes { term },
                    op: t.op,
                    ps: self.ctx.cycles_ps(TERM_CYCLES + b.len().div_ceil(8) as u64),
                },
            })
            .collect()
    }

    /// Whether the record meets every term of the call's predicate, in
    /// order; the first that fails ends the evaluation. NULL never
    /// qualifies.
    #[inline(always)]
    pub(crate) fn qualifies(&mut self, rec: &Found) -> Result<bool, DeviceError> {
        for k in 0..self.checks.len() {
            let check = self.checks[k];
            self.ctx.charge_ps(check.ps);
            let holds = match check.kind {
                CheckKind::Int { column, value } => self.numeric(rec, column)?.is_some_and(|v| check.op.eval(v, value)),
                CheckKind::Bytes { term } => self.bytes_term(rec, term)?,
            };
            if !holds {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether the record meets byte term `term` of the call's predicate.
    #[inline(never)]
    fn bytes_term(&mut self, rec: &Found, term: usize) -> Result<bool, DeviceError> {
        let Some(p) = self.call.predicate.take() else { return Ok(true) };
        let value = self.column_value(rec, p.terms[term].column);
        let holds = value.map(|v| p.terms[term].matches(&v));
        self.call.predicate = Some(p);
        holds
    }

    /// How a projection reads `column`: by its numeric read plan, or (None)
    /// through `column_value` for a text column.
    pub(crate) fn numeric_reader(&self, column: u16) -> Option<NumericColumn> {
        let slot = self.layout.slots[usize::from(column)];
        (!matches!(slot.ty, ColumnType::Text(_) | ColumnType::Varchar(_))).then(|| self.numeric_column(column))
    }

    pub(crate) fn column_value(&mut self, rec: &Found, column: u16) -> Result<Value, DeviceError> {
        let slot = self.layout.slots[usize::from(column)];
        // Fixed-width values (a float64's bit pattern too) in one or two words.
        if !matches!(slot.ty, ColumnType::Text(_) | ColumnType::Varchar(_)) {
            return Ok(self.int_column(rec, column)?.map_or(Value::Null, Value::Int));
        }
        if self.is_null(rec, column)? {
            return Ok(Value::Null);
        }
        let mut data = vec![0u8; rec.len - HEADER_BYTES];
        self.field(rec, 0, &mut data)?;
        self.layout.column(&data, usize::from(column)).map_err(|e| self.fail(format!("{e}")))
    }
}

/// One term of the call's predicate, compiled for the per-row loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Check {
    kind: CheckKind,
    op: CmpOp,
    /// PE picoseconds one evaluation is charged.
    ps: u64,
}

#[derive(Debug, Clone, Copy)]
enum CheckKind {
    /// A numeric column compared with an integer constant.
    Int { column: NumericColumn, value: i64 },
    /// A text column compared with term `term`'s bytes.
    Bytes { term: usize },
}
