//! The tuple lock key: what host transactions and `ndp.update` both lock,
//! in the lock table the device reaches through coherent memory
//! (`docs/format/locktable.md`).
//!
//! A lock-table key is two u64 words. A tuple's key is (VID word, version):
//!
//! ```text
//! VID word  bits 63..48  table id (16 bits)
//!           bits 47..0   VID
//! version                id of the transaction that created the locked version
//! ```
//!
//! The lock table's crate builds the key from these words; this crate does
//! not depend on it.

/// Bits of the VID word below the table id.
pub const TABLE_SHIFT: u32 = 48;
/// VIDs a table may have: the VID takes the word's low 48 bits.
pub const VID_MAX: u64 = (1 << TABLE_SHIFT) - 1;
/// Largest table id the VID word holds.
pub const TABLE_MAX: u32 = u16::MAX as u32;

/// The VID word of tuple `vid` of table `table`.
#[inline]
pub fn tuple_key_word(table: u32, vid: u64) -> u64 {
    debug_assert!(table <= TABLE_MAX, "table id {table} does not fit the VID word's 16 bits");
    debug_assert!(vid <= VID_MAX, "VID {vid} does not fit the VID word's 48 bits");
    u64::from(table) << TABLE_SHIFT | (vid & VID_MAX)
}

/// The (table, VID) a VID word names.
#[inline]
pub fn tuple_key_parts(word: u64) -> (u32, u64) {
    ((word >> TABLE_SHIFT) as u32, word & VID_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_table_is_in_the_top_16_bits() {
        assert_eq!(tuple_key_word(3, 5), 3 << 48 | 5);
        assert_eq!(tuple_key_word(TABLE_MAX, VID_MAX), u64::MAX);
    }

    proptest! {
        #[test]
        fn roundtrips(table in 0..=TABLE_MAX, vid in 0..=VID_MAX) {
            prop_assert_eq!(tuple_key_parts(tuple_key_word(table, vid)), (table, vid));
        }

        #[test]
        fn any_word_names_one_tuple(word in any::<u64>()) {
            let (table, vid) = tuple_key_parts(word);
            prop_assert_eq!(tuple_key_word(table, vid), word);
        }
    }
}
