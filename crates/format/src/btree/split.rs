//! Where a full node splits: a pure function over the entries it would hold
//! (the new entry already among them), so it is tested without pages.
//!
//! ```text
//! leaf   [e0 … e(m-1)] | [em … e(n-1)]      separator: the shortest prefix of
//!        left: old low,     right: low = sep,        key(m) above key(m-1)
//!        high = sep         high = old high
//! inner  [e0 … e(m-1)]   key(m) ↑   lower = child(m), [e(m+1) … e(n-1)]
//!        left: old low,             right: low = key(m),
//!        high = key(m)              high = old high
//! ```

use super::node::NodeKind;
use super::{edit::node_bytes, separator};

/// A split of `entries` at `at`, with the key the parent gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Leaves: entries `..at` stay, `at..` move. Inner: `..at` stay, `at`'s
    /// key goes up and its child becomes the right node's `lower`, `at+1..`
    /// move.
    pub at: usize,
    /// The separator: the left node's new high key and the parent's new key.
    pub separator: Vec<u8>,
}

/// The most balanced split (by bytes) where both halves fit `page_bytes`
/// with their fences (the node's `low` and `high`, and the separator);
/// `None` if no split fits (the entry limits of [`super::max_entry_bytes`]
/// and [`super::max_key_bytes`] rule that out for a valid node) or the
/// keys are not in ascending order (a corrupt node).
pub fn choose_split(
    page_bytes: usize,
    kind: NodeKind,
    entries: &[(&[u8], &[u8])],
    low: Option<&[u8]>,
    high: Option<&[u8]>,
) -> Option<Split> {
    let n = entries.len();
    if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
        return None;
    }
    let size = |(k, v): &(&[u8], &[u8])| super::SLOT_BYTES + k.len() + v.len();
    let total: usize = entries.iter().map(size).sum();
    let mut left = 0usize;
    let mut best: Option<(usize, Split)> = None;
    for m in 1..n {
        left += size(&entries[m - 1]);
        let (sep, right) = match kind {
            NodeKind::Leaf => (separator(entries[m - 1].0, entries[m].0), total - left),
            NodeKind::Inner if m + 1 < n => (entries[m].0, total - left - size(&entries[m])),
            NodeKind::Inner => continue,
        };
        let fixed = node_bytes(std::iter::empty(), 0);
        let left_fits = fixed + left + low.map_or(0, <[u8]>::len) + sep.len() <= page_bytes;
        let right_fits = fixed + right + sep.len() + high.map_or(0, <[u8]>::len) <= page_bytes;
        if !left_fits || !right_fits {
            continue;
        }
        let imbalance = left.abs_diff(right);
        if best.as_ref().is_none_or(|(b, _)| imbalance < *b) {
            best = Some((imbalance, Split { at: m, separator: sep.to_vec() }));
        }
    }
    best.map(|(_, s)| s)
}
