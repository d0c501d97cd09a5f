//! `ndp.update`'s own byte formats: the pages the host gives the PEs for new
//! versions (range 4), and what the PEs report (range 3).
//!
//! **Range 4**, written by the host, read by every PE (each reads only the
//! count, its two bounds and its own pages):
//!
//! ```text
//! offset          size         field
//!      0          8            count: u64, pages in the list
//!      8          16 · count   (lpn u64, ppn u64) pairs
//! 8 + 16 · count  8 · (P + 1)  first[0..=P], u64: PE p fills pages first[p]..first[p + 1],
//!                              in that order; first[p] <= first[p + 1] <= count
//! ```
//!
//! **Output (range 3)**, `P` equal shares as for a rows call (`rows.rs`),
//! each written by its PE with [`UpdateWriter`] and read by the host with
//! [`UpdateOutput::decode`]:
//!
//! ```text
//! offset in share  size          field
//!               0  8             entries: u64
//!               8  8             pages_written: u64, this PE's first pages_written pages of range 4
//!              16  24 · entries  u64 vid, u64 base RecordId (the version locked and updated),
//!                                u64 new RecordId (the version written), in VID order
//! ```

use crate::FormatError;
use crate::page::RecordId;

/// Bytes of a PE's output header.
pub const UPDATE_HEADER_BYTES: usize = 16;
/// Bytes per output entry.
pub const UPDATE_ENTRY_BYTES: usize = 24;
const OUTPUT: &str = "update output";
const PAGES: &str = "update pages (range 4)";

/// One tuple the device updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdatedTuple {
    pub vid: u64,
    /// The version it locked and updated.
    pub base: RecordId,
    /// The version it wrote.
    pub new: RecordId,
}

/// Builds one PE's share of `ndp.update`'s output.
#[derive(Debug)]
pub struct UpdateWriter {
    out: Vec<u8>,
    entries: u64,
}

impl Default for UpdateWriter {
    fn default() -> Self {
        UpdateWriter { out: vec![0; UPDATE_HEADER_BYTES], entries: 0 }
    }
}

impl UpdateWriter {
    /// Appends an entry; entries come in VID order.
    pub fn push(&mut self, t: &UpdatedTuple) {
        debug_assert!(self.entries == 0 || self.last_vid() < t.vid, "entries are in VID order, one per tuple");
        self.out.extend_from_slice(&t.vid.to_le_bytes());
        self.out.extend_from_slice(&t.base.0.to_le_bytes());
        self.out.extend_from_slice(&t.new.0.to_le_bytes());
        self.entries += 1;
    }

    fn last_vid(&self) -> u64 {
        let at = self.out.len() - UPDATE_ENTRY_BYTES;
        u64::from_le_bytes(self.out[at..at + 8].try_into().expect("8 bytes"))
    }

    /// Bytes of the share in use so far.
    pub fn bytes_used(&self) -> usize {
        self.out.len()
    }

    /// The share's bytes, header filled in: the PE programmed its first
    /// `pages_written` pages.
    pub fn finish(mut self, pages_written: u64) -> Vec<u8> {
        self.out[0..8].copy_from_slice(&self.entries.to_le_bytes());
        self.out[8..16].copy_from_slice(&pages_written.to_le_bytes());
        self.out
    }
}

/// One PE's output as the host reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateOutput {
    pub tuples: Vec<UpdatedTuple>,
    pub pages_written: u64,
}

impl UpdateOutput {
    /// Bytes of a share with room for `entries` entries, rounded up to 8.
    pub fn share_bytes(entries: u64) -> u64 {
        (UPDATE_HEADER_BYTES as u64 + UPDATE_ENTRY_BYTES as u64 * entries).div_ceil(8) * 8
    }

    /// Decodes one PE's share; checks that its entries fit the share.
    pub fn decode(share: &[u8]) -> Result<UpdateOutput, FormatError> {
        let truncated = |needed| FormatError::Truncated { structure: OUTPUT, needed, found: share.len() };
        if share.len() < UPDATE_HEADER_BYTES {
            return Err(truncated(UPDATE_HEADER_BYTES));
        }
        let word = |at: usize| u64::from_le_bytes(share[at..at + 8].try_into().expect("8 bytes"));
        let (entries, pages_written) = (word(0), word(8));
        let needed = usize::try_from(entries)
            .ok()
            .and_then(|n| n.checked_mul(UPDATE_ENTRY_BYTES))
            .and_then(|n| n.checked_add(UPDATE_HEADER_BYTES))
            .unwrap_or(usize::MAX);
        if needed > share.len() {
            return Err(truncated(needed));
        }
        let tuples = share[UPDATE_HEADER_BYTES..needed]
            .chunks_exact(UPDATE_ENTRY_BYTES)
            .map(|e| {
                let w = |i: usize| u64::from_le_bytes(e[8 * i..8 * i + 8].try_into().expect("8 bytes"));
                UpdatedTuple { vid: w(0), base: RecordId(w(1)), new: RecordId(w(2)) }
            })
            .collect();
        Ok(UpdateOutput { tuples, pages_written })
    }
}

/// Range 4 for `pages` (lpn, ppn), of which PE `p` gets the next `runs[p]`.
pub fn encode_page_runs(pages: &[(u64, u64)], runs: &[u64]) -> Vec<u8> {
    debug_assert_eq!(runs.iter().sum::<u64>(), pages.len() as u64, "the runs share out the pages");
    let mut b = Vec::with_capacity(8 + 16 * pages.len() + 8 * (runs.len() + 1));
    b.extend_from_slice(&(pages.len() as u64).to_le_bytes());
    for &(lpn, ppn) in pages {
        b.extend_from_slice(&lpn.to_le_bytes());
        b.extend_from_slice(&ppn.to_le_bytes());
    }
    let mut first = 0u64;
    b.extend_from_slice(&first.to_le_bytes());
    for &n in runs {
        first += n;
        b.extend_from_slice(&first.to_le_bytes());
    }
    b
}

/// PE `pe`'s pages (lpn, ppn) from a range 4 of `len` bytes, read through
/// `read(offset, buf)`: the count, the PE's two bounds, then its pairs,
/// nothing else. The outer error is `read`'s, the inner one says how the
/// range is malformed.
pub fn read_page_run<E>(
    len: u64,
    pe: u64,
    pes: u64,
    mut read: impl FnMut(u64, &mut [u8]) -> Result<(), E>,
) -> Result<Result<Vec<(u64, u64)>, FormatError>, E> {
    debug_assert!(pe < pes);
    let truncated = |needed: Option<u64>| FormatError::Truncated {
        structure: PAGES,
        needed: needed.and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX),
        found: usize::try_from(len).unwrap_or(usize::MAX),
    };
    let mut word = [0u8; 8];
    if len < 8 {
        return Ok(Err(truncated(Some(8))));
    }
    read(0, &mut word)?;
    let count = u64::from_le_bytes(word);
    let runs_at = count.checked_mul(16).and_then(|b| b.checked_add(8));
    let needed = runs_at.and_then(|b| b.checked_add(pes.checked_add(1)?.checked_mul(8)?));
    let (Some(runs_at), Some(needed)) = (runs_at, needed) else { return Ok(Err(truncated(None))) };
    if needed > len {
        return Ok(Err(truncated(Some(needed))));
    }
    let mut bounds = [0u64; 2];
    for (i, b) in bounds.iter_mut().enumerate() {
        read(runs_at + 8 * (pe + i as u64), &mut word)?;
        *b = u64::from_le_bytes(word);
    }
    let [first, end] = bounds;
    if first > end || end > count {
        return Ok(Err(FormatError::InvalidField {
            structure: PAGES,
            field: "first",
            reason: format!("PE {pe}'s pages {first}..{end} are not a run of the {count} pages"),
        }));
    }
    let mut bytes = vec![0u8; ((end - first) * 16) as usize];
    read(8 + 16 * first, &mut bytes)?;
    Ok(Ok(bytes
        .chunks_exact(16)
        .map(|c| {
            let w = |i: usize| u64::from_le_bytes(c[i..i + 8].try_into().expect("8 bytes"));
            (w(0), w(8))
        })
        .collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `read_page_run` over a byte slice.
    fn run_of(b: &[u8], pe: u64, pes: u64) -> Result<Vec<(u64, u64)>, FormatError> {
        read_page_run(b.len() as u64, pe, pes, |at, buf: &mut [u8]| -> Result<(), ()> {
            let at = at as usize;
            buf.copy_from_slice(&b[at..at + buf.len()]);
            Ok(())
        })
        .expect("reads stay inside the range")
    }

    #[test]
    fn page_runs_follow_the_spec() {
        let b = encode_page_runs(&[(5, 50), (6, 60), (7, 70)], &[2, 0, 1]);
        let words: Vec<u64> = b.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(words, [3, 5, 50, 6, 60, 7, 70, 0, 2, 2, 3]);
        assert_eq!(run_of(&b, 0, 3).unwrap(), [(5, 50), (6, 60)]);
        assert_eq!(run_of(&b, 1, 3).unwrap(), []);
        assert!(run_of(&b, 1, 4).is_err(), "too short for four PEs' bounds");
        let mut bad = b.clone();
        bad[8 * 9] = 9;
        assert!(run_of(&bad, 1, 3).unwrap_err().to_string().contains("PE 1's pages 2..9 are not a run of the 3 pages"));
    }

    #[test]
    fn output_follows_the_spec() {
        let mut w = UpdateWriter::default();
        let t = UpdatedTuple { vid: 3, base: RecordId::new(1, 2), new: RecordId::new(9, 0) };
        w.push(&t);
        assert_eq!(w.bytes_used(), 40);
        let mut b = w.finish(1);
        assert_eq!(&b[..16], &[1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[16..24], &3u64.to_le_bytes());
        assert_eq!(&b[24..32], &((1u64 << 16) | 2).to_le_bytes());
        assert_eq!(UpdateOutput::share_bytes(1), 40);
        b.resize(64, 0);
        assert_eq!(UpdateOutput::decode(&b).unwrap(), UpdateOutput { tuples: vec![t], pages_written: 1 });
        b[0] = 3;
        assert!(UpdateOutput::decode(&b).is_err(), "three entries do not fit 64 bytes");
    }

    proptest! {
        #[test]
        fn output_roundtrips(vids in proptest::collection::btree_set(any::<u64>(), 0..30), pages in any::<u64>(), slack in 0usize..30) {
            let tuples: Vec<UpdatedTuple> = vids
                .into_iter()
                .map(|vid| UpdatedTuple { vid, base: RecordId(vid ^ 0x5555), new: RecordId(vid.wrapping_mul(3)) })
                .collect();
            let mut w = UpdateWriter::default();
            tuples.iter().for_each(|t| w.push(t));
            let mut b = w.finish(pages);
            b.resize(b.len() + slack, 0);
            prop_assert_eq!(UpdateOutput::decode(&b).unwrap(), UpdateOutput { tuples, pages_written: pages });
        }

        #[test]
        fn page_runs_roundtrip(runs in proptest::collection::vec(0u64..5, 1..9)) {
            let n: u64 = runs.iter().sum();
            let pages: Vec<(u64, u64)> = (0..n).map(|i| (i + 100, i * 7)).collect();
            let b = encode_page_runs(&pages, &runs);
            let mut at = 0usize;
            for (pe, &r) in runs.iter().enumerate() {
                let mine = run_of(&b, pe as u64, runs.len() as u64).unwrap();
                prop_assert_eq!(&mine[..], &pages[at..at + r as usize]);
                at += r as usize;
            }
        }

        #[test]
        fn decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200), pes in 1u64..9, pe in 0u64..9, at in 0usize..200, x in any::<u8>()) {
            let _ = UpdateOutput::decode(&b);
            let _ = run_of(&b, pe % pes, pes);
            let mut good = encode_page_runs(&[(1, 2), (3, 4), (5, 6)], &[1, 2]);
            let i = at % good.len();
            good[i] ^= x;
            let _ = run_of(&good, pe % 2, 2);
        }
    }
}
