//! `ndp.snapshot`: in-situ snapshot computation (neoDBMS, ICDE'22, Fig. 4),
//! and the entry of `ndp.update` (`ndp_update.rs`), which shares its setup.
//!
//! Each PE takes an equal share of the table's VIDs, walks each one's chain
//! to the version the call's snapshot sees (`chain.rs`), checks the
//! predicate on it (`columns.rs`), and aggregates it or emits its row.
//!
//! Ranges (`ndpdb_format::ndp`): 0 call block, 1 layout descriptor,
//! 2 delta-buffer pages (in the call's order), 3 output: 72-byte partial
//! aggregates (`Partial`), one per aggregate of the call per PE, or for a rows call an equal share per PE of
//! rows (`RowsWriter`: `u64 bytes_used, u64 rows`, then per row `u64 vid`
//! and per projected column `0` (NULL), `1 i64` or `2 u16 len bytes`).
//! Parameter `[0]` (optional, default 0): 1 reads the delta-buffer pages
//! through the mirror of the host's delta frames instead of range 2 (CBM
//! freshness, `chain.rs`, `docs/cbm.md`).

use ndpdb_format::ndp::{Aggregate, Operation, PARTIAL_BYTES, Partial, RANGE_OUTPUT, RowsWriter};
use ndpdb_format::schema::Value;

use crate::chain::Scan;
use crate::error::DeviceError;
use crate::pe::PeCtx;

/// The program `ndp.snapshot`.
pub(crate) fn run(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    run_op(ctx, false)
}

/// The program `ndp.update` (`ndp_update.rs`): the same walk, for calls
/// with an update.
pub(crate) fn run_update(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    run_op(ctx, true)
}

fn run_op(ctx: &mut PeCtx<'_>, update: bool) -> Result<(), DeviceError> {
    let mut scan = Scan::open(ctx, update)?;
    let (first, end) = scan.share();
    match scan.call.op.clone() {
        Operation::Aggregate { aggregates } => scan.aggregate(first, end, &aggregates),
        Operation::Rows { projection } => scan.rows(first, end, &projection),
        Operation::Update { column, expr } => scan.update(first, end, column, expr),
    }
}

impl Scan<'_, '_> {
    /// This PE's partial aggregates of VIDs `first..end`, one per
    /// aggregate of the call, at its slots of range 3 (PE `p`'s `k`-th at
    /// `(p·K + k)·72`); the first carries the walk's counters, the others 0.
    fn aggregate(&mut self, first: u64, end: u64, aggregates: &[(Aggregate, u16)]) -> Result<(), DeviceError> {
        let mut parts = vec![Partial::default(); aggregates.len()];
        let columns: Vec<_> =
            aggregates.iter().map(|&(f, c)| (f != Aggregate::CountStar).then(|| self.numeric_column(c))).collect();
        let visited = self.each_qualifying(first, end, |scan, _, rec| {
            for (part, column) in parts.iter_mut().zip(&columns) {
                let v = match column {
                    None => None,
                    Some(c) => scan.numeric(rec, *c)?,
                };
                part.add_row(v);
            }
            Ok(())
        })?;
        parts[0].visited = visited;
        parts[0].extra_bytes = self.extra_bytes;
        parts[0].dram_visits = self.dram_visits;
        let k = aggregates.len() as u64;
        let at = u64::from(self.ctx.pe()) * k * PARTIAL_BYTES as u64;
        let out: Vec<u8> = parts.iter().flat_map(|p| p.encode()).collect();
        self.ctx.range_write(RANGE_OUTPUT, at, &out)
    }

    /// The rows of VIDs `first..end`, projected, in this PE's share of
    /// range 3.
    fn rows(&mut self, first: u64, end: u64, projection: &[u16]) -> Result<(), DeviceError> {
        let (pe, pes) = (u64::from(self.ctx.pe()), u64::from(self.ctx.pes()));
        let share = self.ctx.range_len(RANGE_OUTPUT)? / pes / 8 * 8;
        let mut out = RowsWriter::new(projection.len());
        let readers: Vec<_> = projection.iter().map(|&c| (c, self.numeric_reader(c))).collect();
        self.each_qualifying(first, end, |scan, vid, rec| {
            out.row(vid);
            for &(c, numeric) in &readers {
                match numeric {
                    Some(n) => out.value(&scan.numeric(rec, n)?.map_or(Value::Null, Value::Int)),
                    None => out.value(&scan.column_value(rec, c)?),
                }
            }
            scan.fits_share(out.bytes_used(), share)
        })?;
        self.ctx.range_write(RANGE_OUTPUT, pe * share, &out.finish())
    }
}
