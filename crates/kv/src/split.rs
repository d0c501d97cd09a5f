//! Splits. A change that does not fit its leaf splits the leaf, and a
//! separator that does not fit the parent splits the parent, up to the
//! root, which grows the tree by a level (its entries move to two new
//! nodes; the root keeps its pid).
//!
//! The cascade is planned first, purely, from the nodes the pessimistic
//! descent still holds: each level's entries with its new entry, where it
//! splits (`btree::choose_split`), and the separator the level above gets.
//! Then every page the plan needs is allocated, and only then is anything
//! written, so a full pool or device fails the write with nothing changed.
//!
//! ```text
//!   before                      after (B-link: left.right = new, left.high = sep)
//!   parent [.. k ..]            parent [.. k, sep ..]
//!            │                            │     └──────────┐
//!   node  [e0 e1 e2 e3] ─► r    node [e0 e1] ─► new [e2 e3] ─► r
//! ```

use ndpdb_format::btree::{self, CHILD_BYTES, MAX_LEVEL, NONE, NodeKind, NodeSpec, Pid, SLOT_BYTES, Split};

use crate::error::KvError;
use crate::store::{KvStore, bump};
use crate::tracked::Tracked;
use crate::write::{Change, Step};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;
/// Entries borrowed, as `write_node` takes them.
type Refs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// One level of the cascade.
struct Plan {
    /// Index of the node in the path.
    at: usize,
    kind: NodeKind,
    level: u16,
    lower: Pid,
    right: Pid,
    low: Option<Vec<u8>>,
    high: Option<Vec<u8>>,
    /// The node's entries with the new one among them.
    entries: Entries,
    /// Which entry is the pointer to the split child below (its pid is
    /// known only once that child's new page is allocated).
    placeholder: Option<usize>,
    split: Split,
    root: bool,
}

impl KvStore {
    /// Splits the held path so that `change` lands in the leaf; returns the
    /// pages allocated for it (the path's pages are changed in place).
    pub(crate) fn split_for<'p>(
        &'p self,
        path: &mut [Step<'p>],
        key: &[u8],
        change: Change<'_>,
    ) -> Result<Vec<Tracked<'p>>, KvError> {
        let plans = self.plan(path, key, change)?;
        let wanted = plans.len() + usize::from(plans.last().is_some_and(|p| p.root));
        let mut fresh = Vec::with_capacity(wanted);
        for _ in 0..wanted {
            fresh.push(Tracked::new_page(self.pool.allocate()?));
        }
        let mut fresh = fresh.into_iter();
        let mut done = Vec::with_capacity(wanted);
        let mut below: Option<(Vec<u8>, Pid)> = None;
        for mut plan in plans {
            if let (Some(i), Some((_, pid))) = (plan.placeholder, &below) {
                plan.entries[i].1 = pid.to_le_bytes().to_vec();
            }
            let node = &mut path[plan.at].page;
            let mut right = fresh.next().expect("allocated per plan");
            if plan.root {
                let left = fresh.next().expect("a root split takes two");
                self.grow_root(node, left, &mut right, &plan, &mut done)?;
                bump(&self.counters.root_splits, 1);
            } else {
                split_node(node, &mut right, &plan)?;
            }
            bump(&self.counters.splits, 1);
            below = Some((plan.split.separator.clone(), right.pid()));
            let top = plan.at;
            done.push(right);
            if !plan.root
                && top > 0
                && path[top - 1].page.node()?.free_total() >= SLOT_BYTES + plan.split.separator.len() + CHILD_BYTES
            {
                let (sep, pid) = below.take().expect("just set");
                let parent = &mut path[top - 1];
                let ppid = parent.page.pid();
                if !btree::insert(&mut parent.page, ppid, parent.pos, &sep, &pid.to_le_bytes())? {
                    return Err(KvError::Internal(format!(
                        "page {ppid}: no room for a separator the plan made room for"
                    )));
                }
            }
        }
        Ok(done)
    }

    /// Plans the cascade bottom-up: the leaf, then each parent that has no
    /// room for the separator from below.
    fn plan(&self, path: &[Step<'_>], key: &[u8], change: Change<'_>) -> Result<Vec<Plan>, KvError> {
        let mut at = path.len() - 1;
        let (mut entries, mut placeholder) = (leaf_entries(&path[at].page, key, change)?, None);
        let mut plans: Vec<Plan> = Vec::new();
        loop {
            let node = path[at].page.node()?;
            let high = node.high_key()?.map(<[u8]>::to_vec);
            let low = node.low_fence()?.map(<[u8]>::to_vec);
            let refs: Vec<(&[u8], &[u8])> = entries.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            let appended = match placeholder {
                None => entries.last().is_some_and(|(k, _)| k == key),
                Some(i) => i + 1 == entries.len(),
            };
            let (kind, page) = (node.kind(), self.page_bytes);
            let split = (appended && node.right() == NONE)
                .then(|| append_split(page, kind, &refs, low.as_deref()))
                .flatten()
                .or_else(|| btree::choose_split(page, kind, &refs, low.as_deref(), high.as_deref()));
            let split = split.ok_or_else(|| {
                KvError::Corrupt(ndpdb_format::FormatError::InvalidField {
                    structure: "B+-tree node",
                    field: "entries",
                    reason: format!(
                        "page {}: no split of its {} entries fits a page (keys out of order?)",
                        node.pid(),
                        entries.len()
                    ),
                })
            })?;
            let root = node.pid() == self.root;
            let (kind, level, lower, right) = (node.kind(), node.level(), node.lower(), node.right());
            let sep_len = split.separator.len();
            plans.push(Plan { at, kind, level, lower, right, low, high, entries, placeholder, split, root });
            if root {
                break;
            }
            let parent = path.get(at.wrapping_sub(1)).ok_or_else(|| {
                KvError::Internal(format!("page {}: its parent was released before the split", node.pid()))
            })?;
            let pnode = parent.page.node()?;
            if pnode.free_total() >= SLOT_BYTES + sep_len + CHILD_BYTES {
                break;
            }
            let sep = plans.last().expect("pushed").split.separator.clone();
            entries = node_entries(&pnode)?;
            entries.insert(parent.pos, (sep, NONE.to_le_bytes().to_vec()));
            placeholder = Some(parent.pos);
            at -= 1;
        }
        Ok(plans)
    }

    /// The root's entries move to `left` and `right`; the root becomes their
    /// parent one level up.
    fn grow_root<'p>(
        &self,
        root: &mut Tracked<'p>,
        mut left: Tracked<'p>,
        right: &mut Tracked<'p>,
        plan: &Plan,
        done: &mut Vec<Tracked<'p>>,
    ) -> Result<(), KvError> {
        if plan.level >= MAX_LEVEL {
            return Err(KvError::Internal(format!("the tree would grow past {MAX_LEVEL} levels")));
        }
        let (l, r, right_lower) = halves(plan);
        let sep = &plan.split.separator[..];
        let (lpid, rpid) = (left.pid(), right.pid());
        let spec = |lower, right, low, high| NodeSpec { kind: plan.kind, level: plan.level, lower, right, low, high };
        btree::write_node(&mut left, lpid, &spec(plan.lower, rpid, None, Some(sep)), &l)?;
        btree::write_node(right, rpid, &spec(right_lower, NONE, Some(sep), None), &r)?;
        let up =
            NodeSpec { kind: NodeKind::Inner, level: plan.level + 1, lower: lpid, right: NONE, low: None, high: None };
        let pid = root.pid();
        btree::write_node(root, pid, &up, &[(sep, &rpid.to_le_bytes())])?;
        self.levels.fetch_max(u64::from(plan.level) + 2, std::sync::atomic::Ordering::Relaxed);
        done.push(left);
        Ok(())
    }
}

/// How full a split leaves the left node when the rightmost node of its
/// level splits under an append (the new entry is its last): sequential
/// inserts (a sorted bulk load) then leave nodes this full rather than half
/// full, about what random inserts leave (ln 2).
const APPEND_FILL: f64 = 0.7;

/// The split of a rightmost node (no high fence) whose left node is the
/// fullest within [`APPEND_FILL`] of the page; None if no such split fits
/// (then the balanced one is taken).
fn append_split(page_bytes: usize, kind: NodeKind, entries: &[(&[u8], &[u8])], low: Option<&[u8]>) -> Option<Split> {
    let target = (page_bytes as f64 * APPEND_FILL) as usize;
    let low_bytes = low.map_or(0, <[u8]>::len);
    let n = entries.len();
    (1..n).rev().find_map(|m| {
        let (sep, right) = match kind {
            NodeKind::Leaf => (btree::separator(entries[m - 1].0, entries[m].0), &entries[m..]),
            NodeKind::Inner if m + 1 < n => (entries[m].0, &entries[m + 1..]),
            NodeKind::Inner => return None,
        };
        let left_bytes = btree::node_bytes(entries[..m].iter().copied(), low_bytes + sep.len());
        let right_bytes = btree::node_bytes(right.iter().copied(), sep.len());
        (left_bytes <= target && right_bytes <= page_bytes).then(|| Split { at: m, separator: sep.to_vec() })
    })
}

/// A non-root node keeps the lower half; `right` (new) takes the upper.
fn split_node(node: &mut Tracked<'_>, right: &mut Tracked<'_>, plan: &Plan) -> Result<(), KvError> {
    let (l, r, right_lower) = halves(plan);
    let (pid, rpid) = (node.pid(), right.pid());
    let sep = Some(&plan.split.separator[..]);
    let spec = |lower, right, low, high| NodeSpec { kind: plan.kind, level: plan.level, lower, right, low, high };
    btree::write_node(right, rpid, &spec(right_lower, plan.right, sep, plan.high.as_deref()), &r)?;
    btree::write_node(node, pid, &spec(plan.lower, rpid, plan.low.as_deref(), sep), &l)?;
    Ok(())
}

/// The two halves' entries and the right half's `lower` (inner nodes: the
/// child of the entry whose key moves up).
fn halves(plan: &Plan) -> (Refs<'_>, Refs<'_>, Pid) {
    let refs: Refs<'_> = plan.entries.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let at = plan.split.at;
    match plan.kind {
        NodeKind::Leaf => (refs[..at].to_vec(), refs[at..].to_vec(), NONE),
        NodeKind::Inner => {
            let lower = u64::from_le_bytes(refs[at].1.try_into().expect("inner values are pids"));
            (refs[..at].to_vec(), refs[at + 1..].to_vec(), lower)
        }
    }
}

fn node_entries(node: &btree::Node<'_>) -> Result<Entries, KvError> {
    (0..node.count()).map(|i| Ok((node.key(i)?.to_vec(), node.value(i)?.to_vec()))).collect()
}

/// The leaf's entries with `change` applied (a put or an update that did
/// not fit).
fn leaf_entries(leaf: &Tracked<'_>, key: &[u8], change: Change<'_>) -> Result<Entries, KvError> {
    let node = leaf.node()?;
    let mut entries = node_entries(&node)?;
    let (i, found) = node.lower_bound(key)?;
    let value = match change {
        Change::Put(v) | Change::Update(v) => v.to_vec(),
        Change::Delete => unreachable!("a delete always fits"),
    };
    if found {
        entries[i].1 = value;
    } else {
        entries.insert(i, (key.to_vec(), value));
    }
    Ok(entries)
}
