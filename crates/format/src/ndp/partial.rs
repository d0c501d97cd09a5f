//! The output of an aggregate call (range 3): one partial aggregate per PE,
//! which the host merges.

use super::Aggregate;
use crate::{FormatError, u64_at};

/// One PE's partial aggregate (the device writes one per PE), 72 bytes.
///
/// ```text
/// 0  8 rows      qualifying visible tuples
/// 8  8 values    non-NULL values among them
/// 16 16 sum      i128 LE
/// 32 8 min       i64 (i64::MAX when values = 0)
/// 40 8 max       i64 (i64::MIN when values = 0)
/// 48 8 visited   versions visited (chain steps)
/// 56 8 extra_bytes medium bytes read for VID-map entries, L2P entries, column values and null
///             bitmaps (NVM: whole transfers; flash: the bytes used from cached pages)
/// 64 8 dram_visits versions visited in shipped delta-buffer pages (device DRAM, not the medium)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partial {
    pub rows: u64,
    pub values: u64,
    pub sum: i128,
    pub min: i64,
    pub max: i64,
    pub visited: u64,
    pub extra_bytes: u64,
    pub dram_visits: u64,
}

pub const PARTIAL_BYTES: usize = 72;

impl Default for Partial {
    fn default() -> Self {
        Partial { rows: 0, values: 0, sum: 0, min: i64::MAX, max: i64::MIN, visited: 0, extra_bytes: 0, dram_visits: 0 }
    }
}

impl Partial {
    pub fn add_row(&mut self, value: Option<i64>) {
        self.rows += 1;
        if let Some(v) = value {
            self.values += 1;
            self.sum += i128::from(v);
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
    }

    pub fn merge(&mut self, o: &Partial) {
        self.rows += o.rows;
        self.values += o.values;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.visited += o.visited;
        self.extra_bytes += o.extra_bytes;
        self.dram_visits += o.dram_visits;
    }

    pub fn encode(&self) -> [u8; PARTIAL_BYTES] {
        debug_assert!(self.values <= self.rows, "values are counted among the rows");
        let mut b = [0u8; PARTIAL_BYTES];
        b[0..8].copy_from_slice(&self.rows.to_le_bytes());
        b[8..16].copy_from_slice(&self.values.to_le_bytes());
        b[16..32].copy_from_slice(&self.sum.to_le_bytes());
        b[32..40].copy_from_slice(&self.min.to_le_bytes());
        b[40..48].copy_from_slice(&self.max.to_le_bytes());
        b[48..56].copy_from_slice(&self.visited.to_le_bytes());
        b[56..64].copy_from_slice(&self.extra_bytes.to_le_bytes());
        b[64..72].copy_from_slice(&self.dram_visits.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<Partial, FormatError> {
        if b.len() < PARTIAL_BYTES {
            return Err(FormatError::Truncated {
                structure: "partial aggregate",
                needed: PARTIAL_BYTES,
                found: b.len(),
            });
        }
        let p = Partial {
            rows: u64_at(b, 0),
            values: u64_at(b, 8),
            sum: i128::from_le_bytes(b[16..32].try_into().expect("16 bytes")),
            min: u64_at(b, 32) as i64,
            max: u64_at(b, 40) as i64,
            visited: u64_at(b, 48),
            extra_bytes: u64_at(b, 56),
            dram_visits: u64_at(b, 64),
        };
        if p.values > p.rows {
            return Err(FormatError::InvalidField {
                structure: "partial aggregate",
                field: "values",
                reason: format!("{} values in {} rows", p.values, p.rows),
            });
        }
        Ok(p)
    }

    /// The aggregate's SQL result: None is SQL NULL (no values). AVG is
    /// returned as the exact quotient rounded toward zero in the column's
    /// units; callers format it.
    pub fn result(&self, func: Aggregate) -> Option<i128> {
        match func {
            Aggregate::CountStar => Some(i128::from(self.rows)),
            Aggregate::Count => Some(i128::from(self.values)),
            _ if self.values == 0 => None,
            Aggregate::Sum => Some(self.sum),
            Aggregate::Min => Some(i128::from(self.min)),
            Aggregate::Max => Some(i128::from(self.max)),
            Aggregate::Avg => Some(self.sum / i128::from(self.values)),
        }
    }
}
