//! Outputs of the device's built-in benchmark programs
//! (`crates/device/src/programs.rs`), which the profiler and the
//! benchmarks read back.
//!
//! ```text
//! PE pair (micro-benchmarks, ndp.table1), at 16 * pe in range 0:
//!   0  u64  count   what the PE did (transfers, iterations, ...)
//!   8  u64  value   a result that keeps the work from being optimised away
//!
//! lock latencies (ndp.lock_latency), at 8 * (pe * requests + i) in range 0:
//!   0  u64  ps      the modelled latency of the PE's i-th lock+unlock pair
//! ```
//!
//! All integers little-endian.

use crate::{FormatError, u64_at};

/// Bytes of one PE's pair.
pub const PE_PAIR_BYTES: usize = 16;

/// One PE's pair, as the program writes it.
pub fn encode_pe_pair(count: u64, value: u64) -> [u8; PE_PAIR_BYTES] {
    let mut b = [0u8; PE_PAIR_BYTES];
    b[..8].copy_from_slice(&count.to_le_bytes());
    b[8..].copy_from_slice(&value.to_le_bytes());
    b
}

/// The `(count, value)` pairs of `pes` PEs.
pub fn decode_pe_pairs(b: &[u8], pes: usize) -> Result<Vec<(u64, u64)>, FormatError> {
    let needed = pes.saturating_mul(PE_PAIR_BYTES);
    if b.len() < needed {
        return Err(FormatError::Truncated { structure: "PE pairs", needed, found: b.len() });
    }
    Ok((0..pes).map(|pe| (u64_at(b, pe * PE_PAIR_BYTES), u64_at(b, pe * PE_PAIR_BYTES + 8))).collect())
}

/// Latencies in ps, as `ndp.lock_latency` writes them.
pub fn encode_latencies(ps: &[u64]) -> Vec<u8> {
    ps.iter().flat_map(|p| p.to_le_bytes()).collect()
}

/// `n` latencies in ps.
pub fn decode_latencies(b: &[u8], n: usize) -> Result<Vec<u64>, FormatError> {
    let needed = n.saturating_mul(8);
    if b.len() < needed {
        return Err(FormatError::Truncated { structure: "lock latencies", needed, found: b.len() });
    }
    Ok((0..n).map(|i| u64_at(b, 8 * i)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_pair_is_count_then_value() {
        assert_eq!(encode_pe_pair(1, 2), [1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
        assert!(decode_pe_pairs(&[0; 31], 2).is_err());
        assert!(decode_latencies(&[0; 15], 2).is_err());
    }

    proptest! {
        #[test]
        fn pairs_roundtrip(pairs in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..20)) {
            let b: Vec<u8> = pairs.iter().flat_map(|&(c, v)| encode_pe_pair(c, v)).collect();
            prop_assert_eq!(decode_pe_pairs(&b, pairs.len()).unwrap(), pairs);
        }

        #[test]
        fn latencies_roundtrip(ps in proptest::collection::vec(any::<u64>(), 0..50)) {
            prop_assert_eq!(decode_latencies(&encode_latencies(&ps), ps.len()).unwrap(), ps);
        }

        #[test]
        fn decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..100), n in any::<usize>()) {
            let _ = decode_pe_pairs(&b, n);
            let _ = decode_latencies(&b, n);
        }
    }
}
