//! `ndp.snapshot`: in-situ snapshot computation (neoDBMS, ICDE'22, Fig. 4),
//! and the entry of `ndp.update` (`ndp_update.rs`), which shares its setup.
//!
//! Each PE takes an equal share of the table's VIDs, walks each one's chain
//! to the version the call's snapshot sees (`chain.rs`), checks the
//! predicate on it (`columns.rs`), and aggregates it or emits its row.
//!
//! Ranges (`ndpdb_format::ndp`): 0 call block, 1 layout descriptor,
//! 2 delta-buffer pages (in the call's order), 3 output: one 72-byte partial
//! aggregate per PE (`Partial`), or for a rows call an equal share per PE of
//! rows (`RowsWriter`: `u64 bytes_used, u64 rows`, then per row `u64 vid`
//! and per projected column `0` (NULL), `1 i64` or `2 u16 len bytes`).
//! Parameter `[0]` (optional, default 0): 1 reads the delta-buffer pages
//! through the mirror of the host's delta frames instead of range 2 (CBM
//! freshness, `chain.rs`, `docs/cbm.md`).

use ndpdb_format::ndp::{Aggregate, Operation, PARTIAL_BYTES, Partial, RANGE_OUTPUT, RowsWriter};

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
        Operation::Aggregate { func, column } => scan.aggregate(first, end, func, column),
        Operation::Rows { projection } => scan.rows(first, end, &projection),
        Operation::Update { column, expr } => scan.update(first, end, column, expr),
    }
}

impl Scan<'_, '_> {
    /// This PE's partial aggregate of VIDs `first..end`, at its slot of
    /// range 3.
    fn aggregate(&mut self, first: u64, end: u64, func: Aggregate, column: u16) -> Result<(), DeviceError> {
        let mut part = Partial::default();
        let value = (func != Aggregate::CountStar).then(|| self.numeric_column(column));
        part.visited = self.each_qualifying(first, end, |scan, _, rec| {
            let v = match value {
                None => None,
                Some(c) => scan.numeric(rec, c)?,
            };
            part.add_row(v);
            Ok(())
        })?;
        part.extra_bytes = self.extra_bytes;
        part.dram_visits = self.dram_visits;
        debug_assert!(part.values <= part.rows && part.rows <= end - first);
        let pe = u64::from(self.ctx.pe());
        self.ctx.range_write(RANGE_OUTPUT, pe * PARTIAL_BYTES as u64, &part.encode())
    }

    /// The rows of VIDs `first..end`, projected, in this PE's share of
    /// range 3.
    fn rows(&mut self, first: u64, end: u64, projection: &[u16]) -> Result<(), DeviceError> {
        let (pe, pes) = (u64::from(self.ctx.pe()), u64::from(self.ctx.pes()));
        let share = self.ctx.range_len(RANGE_OUTPUT)? / pes / 8 * 8;
        let mut out = RowsWriter::new(projection.len());
        self.each_qualifying(first, end, |scan, vid, rec| {
            out.row(vid);
            for &c in projection {
                out.value(&scan.column_value(rec, c)?);
            }
            scan.fits_share(out.bytes_used(), share)
        })?;
        self.ctx.range_write(RANGE_OUTPUT, pe * share, &out.finish())
    }
}
