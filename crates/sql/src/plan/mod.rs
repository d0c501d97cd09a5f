//! Query plans: one tree type from the binder to the executor.
//!
//! The binder builds a [`Plan`] of logical operators; the optimizer's rules
//! rewrite it, the join orderer reorders its inner joins, and the physical
//! pass fills in the choices the executor needs ([`Access`] of each scan,
//! [`JoinAlgorithm`] of each join). One type for both stages keeps every
//! rewrite a tree-to-tree function and lets EXPLAIN print any stage.
//!
//! Every node carries its output [`Schema`] and an [`Estimate`] (rows and
//! [`Cost`] with separate host and device seconds). hybridNDP (the next
//! issue) splits a plan between device and host by those estimates, so
//! every node has them from the start; the binder sets them unknown and
//! the optimizer fills them.
//!
//! ```text
//!  Plan { node, schema, est }
//!   node: Scan | Values | Filter | Project | Join | Aggregate | Sort
//!         | Limit | Distinct | SetOp
//! ```

pub mod explain;
pub mod expr;
pub mod statement;

use std::sync::Arc;

pub use expr::{AggFunc, AggregateExpr, BinaryOp, Expr, Function, SortKey, SubqueryKind, UnaryOp};
pub use statement::Statement;

use crate::catalog::{IndexDef, TableDef};
pub use crate::optimizer::join_order::Cost;
use crate::types::DataType;

/// One output column of a plan node.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    /// The table name or alias the column can be qualified with.
    pub qualifier: Option<String>,
    pub ty: DataType,
    pub nullable: bool,
}

pub type Schema = Arc<Vec<Field>>;

/// The optimizer's estimate for a node (its whole subtree's cost).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    /// Estimated output rows; negative = not estimated yet.
    pub rows: f64,
    pub cost: Cost,
}

impl Estimate {
    pub const UNKNOWN: Estimate = Estimate { rows: -1.0, cost: Cost::ZERO };
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub node: Node,
    pub schema: Schema,
    pub est: Estimate,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Read `columns` (positions in the table) of a table, in that order,
    /// with the VID as one more Int64 column at the end when `emit_vid`
    /// (UPDATE and DELETE need it). `filter` is over the scan's output and
    /// may be evaluated by the access path (on the device for NDP).
    Scan {
        table: Arc<TableDef>,
        columns: Vec<usize>,
        filter: Option<Expr>,
        emit_vid: bool,
        access: Access,
    },
    /// Literal rows (`VALUES`, and `SELECT` without FROM as one row).
    Values {
        rows: Vec<Vec<Expr>>,
    },
    /// `generate_series(start, stop, step)`: one integer column, the
    /// arguments evaluated once per execution (`bind/series.rs`).
    Series {
        start: Expr,
        stop: Expr,
        step: Expr,
    },
    Filter {
        input: Box<Plan>,
        predicate: Expr,
    },
    Project {
        input: Box<Plan>,
        exprs: Vec<Expr>,
    },
    /// Output: the left's columns, then the right's (Semi and Anti: the
    /// left's only; Mark: the left's and one boolean).
    Join {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        on: Option<Expr>,
        algorithm: JoinAlgorithm,
    },
    /// Output: the group-by expressions, then the aggregates.
    Aggregate {
        input: Box<Plan>,
        group_by: Vec<Expr>,
        aggregates: Vec<AggregateExpr>,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<SortKey>,
    },
    Limit {
        input: Box<Plan>,
        limit: Option<u64>,
        offset: u64,
    },
    Distinct {
        input: Box<Plan>,
    },
    SetOp {
        op: SetOpKind,
        all: bool,
        left: Box<Plan>,
        right: Box<Plan>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    /// Left rows with a match (EXISTS, IN).
    Semi,
    /// Left rows without a match (NOT EXISTS; NOT IN when the right side
    /// has no NULLs in the compared column).
    Anti,
    /// Left join where a left row may match at most one right row (a
    /// decorrelated scalar subquery; more is error 21000).
    Single,
    /// Every left row plus a boolean: matched (TRUE), not matched (FALSE),
    /// or NULL when no match but a comparison was NULL (NOT IN semantics).
    Mark,
}

#[derive(Debug, Clone, PartialEq)]
pub enum JoinAlgorithm {
    /// Not chosen yet (logical plan).
    Unchosen,
    /// Equi-join: build a hash table on one input's keys (`build`), probe
    /// with the other's; `on` (if any) is checked on each matching pair.
    Hash { left_keys: Vec<Expr>, right_keys: Vec<Expr>, build: HashBuild },
    /// Every pair is checked against `on`.
    NestedLoop,
    /// For each left row, look `keys` (over the left input) up in an index
    /// of the right input, which must be a Scan of the index's table.
    IndexNestedLoop { index: Arc<IndexDef>, keys: Vec<Expr> },
}

/// The input a hash join's table is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashBuild {
    /// The right (inner) input: every join kind.
    Right,
    /// The left (outer) input, probed by the right: Semi and Anti joins
    /// only, when the outer side is the smaller (EXISTS over a big table).
    /// Matched build rows are flagged; the output comes once the probe is
    /// done (`exec/semi_build.rs`).
    Left,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Not chosen yet: the physical pass decides (by `SET ndp`).
    Unchosen,
    /// The host reads pages through the block stack and walks the chains.
    Host,
    /// The device's PEs scan (NDP call), checking visibility and the
    /// pushed-down predicate on the device.
    Ndp,
    /// A B+-tree range of `index`: `lower`/`upper` bounds on its key
    /// prefix (literals or parameters), inclusive flags.
    Index { index: Arc<IndexDef>, lower: Vec<Expr>, upper: Vec<Expr>, lower_inclusive: bool, upper_inclusive: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetOpKind {
    Union,
    Intersect,
    Except,
}

impl Plan {
    /// A node with an unknown estimate.
    pub fn new(node: Node, schema: Schema) -> Plan {
        Plan { node, schema, est: Estimate::UNKNOWN }
    }

    /// The inputs of this node.
    pub fn children(&self) -> Vec<&Plan> {
        match &self.node {
            Node::Scan { .. } | Node::Values { .. } | Node::Series { .. } => vec![],
            Node::Filter { input, .. }
            | Node::Project { input, .. }
            | Node::Aggregate { input, .. }
            | Node::Sort { input, .. }
            | Node::Limit { input, .. }
            | Node::Distinct { input } => vec![input],
            Node::Join { left, right, .. } | Node::SetOp { left, right, .. } => vec![left, right],
        }
    }
}
