//! `RelSet`: a set of relations of one query graph as a 64-bit mask.
//!
//! Relation `i` of a [`QueryGraph`](super::QueryGraph) is bit `i`. Every
//! set operation the enumerators need (union, subset test, lowest member,
//! "all relations numbered at most `i`") is one or two machine instructions,
//! which is what makes enumerating hundreds of thousands of subsets cheap.
//! A graph has at most [`RelSet::CAPACITY`] relations; building a graph with
//! more is an error ([`JoinOrderError::TooManyRelations`](super::JoinOrderError)),
//! so the orderer never shifts past bit 63.

use std::fmt;

/// A set of relation indices `0..64`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RelSet(u64);

impl RelSet {
    /// The most relations one set (and so one query graph) can hold.
    pub const CAPACITY: usize = 64;

    /// The empty set.
    pub const EMPTY: RelSet = RelSet(0);

    /// The set whose members are the one bits of `bits`.
    pub const fn from_bits(bits: u64) -> RelSet {
        RelSet(bits)
    }

    /// The set `{index}`, or `None` when `index` is not below [`Self::CAPACITY`].
    pub fn try_single(index: usize) -> Option<RelSet> {
        (index < Self::CAPACITY).then(|| RelSet(1 << index))
    }

    /// The set `{index}`. `index` must be below [`Self::CAPACITY`] (graphs
    /// check this when they are built).
    pub fn single(index: usize) -> RelSet {
        assert!(index < Self::CAPACITY, "relation index {index} out of range");
        RelSet(1 << index)
    }

    /// The set `{0, 1, ..., n-1}`; `n` at most [`Self::CAPACITY`].
    pub fn first(n: usize) -> RelSet {
        assert!(n <= Self::CAPACITY, "{n} relations exceed the set's capacity");
        if n == Self::CAPACITY { RelSet(u64::MAX) } else { RelSet((1 << n) - 1) }
    }

    /// Every index at most `index` (the paper's B_i).
    pub fn up_to(index: usize) -> RelSet {
        assert!(index < Self::CAPACITY, "relation index {index} out of range");
        RelSet(u64::MAX >> (Self::CAPACITY - 1 - index))
    }

    /// The raw mask.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Number of members.
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// True when the set has no members.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// True when `index` is a member.
    pub fn contains(self, index: usize) -> bool {
        index < Self::CAPACITY && self.0 & (1 << index) != 0
    }

    /// True when every member of `self` is in `other`.
    pub const fn is_subset_of(self, other: RelSet) -> bool {
        self.0 & !other.0 == 0
    }

    /// True when the sets share a member.
    pub const fn intersects(self, other: RelSet) -> bool {
        self.0 & other.0 != 0
    }

    /// `self ∪ other`.
    pub const fn union(self, other: RelSet) -> RelSet {
        RelSet(self.0 | other.0)
    }

    /// `self ∩ other`.
    pub const fn intersection(self, other: RelSet) -> RelSet {
        RelSet(self.0 & other.0)
    }

    /// `self \ other`.
    pub const fn minus(self, other: RelSet) -> RelSet {
        RelSet(self.0 & !other.0)
    }

    /// The lowest member, if any.
    pub fn min(self) -> Option<usize> {
        (self.0 != 0).then(|| self.0.trailing_zeros() as usize)
    }

    /// The set holding only the lowest member (empty for the empty set).
    pub const fn lowest(self) -> RelSet {
        RelSet(self.0 & self.0.wrapping_neg())
    }

    /// Members in increasing order (`.rev()` for decreasing).
    pub fn iter(self) -> Members {
        Members(self.0)
    }

    /// Every non-empty subset, in increasing order of the mask.
    pub fn subsets(self) -> Subsets {
        Subsets { all: self.0, next: self.0 & self.0.wrapping_neg(), done: self.0 == 0 }
    }
}

/// Iterator over the members of a set (see [`RelSet::iter`]); one step per
/// member, not per bit.
#[derive(Clone, Debug)]
pub struct Members(u64);

impl Iterator for Members {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.0.count_ones() as usize;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Members {
    fn next_back(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = 63 - self.0.leading_zeros() as usize;
        self.0 &= !(1 << i);
        Some(i)
    }
}

impl ExactSizeIterator for Members {}

/// Iterator over the non-empty subsets of a set (see [`RelSet::subsets`]).
#[derive(Clone, Debug)]
pub struct Subsets {
    all: u64,
    next: u64,
    done: bool,
}

impl Iterator for Subsets {
    type Item = RelSet;

    fn next(&mut self) -> Option<RelSet> {
        if self.done {
            return None;
        }
        let current = self.next;
        if current == self.all {
            self.done = true;
        } else {
            // The next larger mask with bits only in `all` (Knuth's trick).
            self.next = current.wrapping_sub(self.all) & self.all;
        }
        Some(RelSet(current))
    }
}

impl fmt::Debug for RelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for RelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (n, i) in self.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "{i}")?;
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::RelSet;

    #[test]
    fn subsets_enumerate_each_nonempty_subset_once() {
        let set = RelSet::from_bits(0b1011_0100);
        let subsets: Vec<RelSet> = set.subsets().collect();
        assert_eq!(subsets.len(), (1 << set.len()) - 1);
        assert!(subsets.windows(2).all(|w| w[0].bits() < w[1].bits()));
        assert!(subsets.iter().all(|s| !s.is_empty() && s.is_subset_of(set)));
        assert_eq!(RelSet::EMPTY.subsets().count(), 0);
        assert_eq!(RelSet::first(64).lowest(), RelSet::single(0));
        let members = RelSet::from_bits(1 << 63 | 0b1010);
        assert_eq!(members.iter().collect::<Vec<_>>(), [1, 3, 63]);
        assert_eq!(members.iter().rev().collect::<Vec<_>>(), [63, 3, 1]);
    }

    #[test]
    fn bounds_at_bit_63() {
        assert_eq!(RelSet::up_to(63), RelSet::first(64));
        assert_eq!(RelSet::up_to(0), RelSet::single(0));
        assert_eq!(RelSet::single(63).min(), Some(63));
        assert_eq!(RelSet::try_single(64), None);
        assert!(!RelSet::first(64).contains(64));
        assert_eq!(RelSet::from_bits(0b101).to_string(), "{0,2}");
    }
}
