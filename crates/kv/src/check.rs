//! The integrity check: every node checks (`Node::check`), each level is a
//! chain of right links whose fences meet (a node's high key is its right
//! sibling's low fence), and every child's fences are the separators around
//! it in its parent. Run on a quiet store (no writes in progress).

use ndpdb_format::btree::{NONE, Node, Pid};

use crate::error::KvError;
use crate::store::KvStore;

/// What the check walked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeShape {
    /// Levels, the root's first: nodes on each.
    pub nodes_per_level: Vec<u64>,
    pub entries: u64,
}

type Fences = (Option<Vec<u8>>, Option<Vec<u8>>);

impl KvStore {
    /// Checks the whole tree; an error names the first page that is wrong.
    pub fn check(&self) -> Result<TreeShape, KvError> {
        let mut shape = TreeShape::default();
        let mut first = self.root;
        let mut level: Option<u16> = None;
        loop {
            let (nodes, next, at) = self.check_level(first, level, &mut shape)?;
            shape.nodes_per_level.push(nodes);
            match next {
                Some(child) => (first, level) = (child, Some(at - 1)),
                None => return Ok(shape),
            }
        }
    }

    /// One level, left to right: (nodes, the leftmost child, the level).
    fn check_level(
        &self,
        first: Pid,
        want: Option<u16>,
        shape: &mut TreeShape,
    ) -> Result<(u64, Option<Pid>, u16), KvError> {
        let (mut pid, mut nodes, mut prev_high): (Pid, u64, Option<Vec<u8>>) = (first, 0, None);
        let mut leftmost_child = None;
        let mut level = want;
        while pid != NONE {
            let g = self.pool.fix_shared(pid)?;
            let node = Node::parse(g.bytes(), pid)?;
            node.check()?;
            let bad = |what: String| {
                KvError::Corrupt(ndpdb_format::FormatError::InvalidField {
                    structure: "B+-tree",
                    field: "links",
                    reason: format!("page {pid}: {what}"),
                })
            };
            if level.is_some_and(|l| l != node.level()) {
                return Err(bad(format!("level {} in a chain of level {level:?}", node.level())));
            }
            level = Some(node.level());
            if node.low_fence()?.map(<[u8]>::to_vec) != prev_high {
                return Err(bad("its low fence is not its left sibling's high key".into()));
            }
            if !node.is_leaf() {
                leftmost_child.get_or_insert(node.lower());
                self.check_children(&node)?;
            }
            shape.entries += if node.is_leaf() { node.count() as u64 } else { 0 };
            prev_high = node.high_key()?.map(<[u8]>::to_vec);
            nodes += 1;
            pid = node.right();
        }
        Ok((nodes, leftmost_child, level.unwrap_or(0)))
    }

    /// Each child's fences are the separators around it.
    fn check_children(&self, node: &Node<'_>) -> Result<(), KvError> {
        let own: Fences = (node.low_fence()?.map(<[u8]>::to_vec), node.high_key()?.map(<[u8]>::to_vec));
        let keys: Vec<Vec<u8>> =
            (0..node.count()).map(|i| Ok(node.key(i)?.to_vec())).collect::<Result<_, KvError>>()?;
        let children: Vec<Pid> = std::iter::once(Ok(node.lower()))
            .chain((0..node.count()).map(|i| node.child(i)))
            .collect::<Result<_, _>>()?;
        for (i, &child) in children.iter().enumerate() {
            let low = if i == 0 { own.0.clone() } else { Some(keys[i - 1].clone()) };
            let high = keys.get(i).cloned().or_else(|| own.1.clone());
            let g = self.pool.fix_shared(child)?;
            let c = Node::parse(g.bytes(), child)?;
            let got: Fences = (c.low_fence()?.map(<[u8]>::to_vec), c.high_key()?.map(<[u8]>::to_vec));
            if got != (low, high) || c.level() + 1 != node.level() {
                return Err(KvError::Corrupt(ndpdb_format::FormatError::InvalidField {
                    structure: "B+-tree",
                    field: "children",
                    reason: format!("page {child}: fences or level differ from what parent page {} says", node.pid()),
                }));
            }
        }
        Ok(())
    }
}
