//! The point lookup that host and device share: it reads one node at a time
//! through `fetch` and holds nothing between nodes, so it is correct against
//! concurrent splits only because of the B-link rule (move right while the
//! key is at or above the high key). The device's PE program calls it with a
//! `fetch` that reads through its mirror of the host pool.
//!
//! It trusts no node: besides each node's own checks, a child must be one
//! level below its parent, a right sibling on the same level, and a lookup
//! that visits more than [`MAX_LOOKUP_NODES`] nodes (a cycle in corrupt
//! links) fails.

use std::ops::Range;

use super::node::Node;
use super::{NONE, Pid, corrupt};
use crate::FormatError;

/// The most nodes one lookup visits before it calls the tree corrupt.
pub const MAX_LOOKUP_NODES: usize = 4096;

/// A found entry: the leaf page that holds it and where its value lies.
#[derive(Debug)]
pub struct Found<P> {
    pub pid: Pid,
    pub page: P,
    pub value: Range<usize>,
}

impl<P: AsRef<[u8]>> Found<P> {
    pub fn value(&self) -> &[u8] {
        &self.page.as_ref()[self.value.clone()]
    }
}

/// Why a lookup failed.
#[derive(Debug, thiserror::Error)]
pub enum LookupError<E> {
    /// `fetch` failed for this page.
    #[error("reading B+-tree page {pid}: {source}")]
    Fetch { pid: Pid, source: E },
    /// A node is corrupt, or the links between nodes are.
    #[error("the B+-tree is corrupt: {0}")]
    Corrupt(#[from] FormatError),
}

/// Looks `key` up in the tree whose root is `root`, reading each node with
/// `fetch` (a page as the pool holds it: pool words and node). `Ok(None)`:
/// the key is not in the tree.
pub fn lookup<P, E>(
    root: Pid,
    key: &[u8],
    mut fetch: impl FnMut(Pid) -> Result<P, E>,
) -> Result<Option<Found<P>>, LookupError<E>>
where
    P: AsRef<[u8]>,
{
    let mut pid = root;
    let mut want_level: Option<u16> = None;
    for _ in 0..MAX_LOOKUP_NODES {
        let page = fetch(pid).map_err(|source| LookupError::Fetch { pid, source })?;
        let node = Node::parse(page.as_ref(), pid)?;
        if want_level.is_some_and(|l| l != node.level()) {
            return Err(
                corrupt(pid, "level", format!("level {}, its link expects {want_level:?}", node.level())).into()
            );
        }
        if node.key_is_right(key)? {
            (pid, want_level) = (node.right(), Some(node.level()));
            continue;
        }
        if node.is_leaf() {
            let (i, found) = node.lower_bound(key)?;
            if !found {
                return Ok(None);
            }
            let value = node.value_range(i)?;
            return Ok(Some(Found { pid, page, value }));
        }
        let (child, _) = node.child_for(key)?;
        if child == NONE {
            return Err(corrupt(pid, "child", "a child link is NONE").into());
        }
        (pid, want_level) = (child, Some(node.level() - 1));
    }
    Err(corrupt(root, "links", format!("a lookup visited more than {MAX_LOOKUP_NODES} nodes (a cycle)")).into())
}
