//! Errors of the join orderer: all are the caller's mistakes in building the
//! query graph, and each says what to change.

use thiserror::Error;

/// Why a query graph was refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum JoinOrderError {
    /// The graph has no relations.
    #[error("the query graph has no relations: give the join orderer at least one relation")]
    NoRelations,
    /// More relations than a [`RelSet`](super::RelSet) holds.
    #[error(
        "the query graph has {count} relations but the join orderer handles at most {max}: \
         split the query (e.g. plan subqueries or views separately) so each join block has at most {max}"
    )]
    TooManyRelations {
        /// Relations given.
        count: usize,
        /// The limit ([`RelSet::CAPACITY`](super::RelSet::CAPACITY)).
        max: usize,
    },
    /// A relation's estimated row count is negative, NaN or infinite.
    #[error("relation {relation} has estimated rows {rows}: give a finite, non-negative row count")]
    BadRows {
        /// Index of the relation.
        relation: usize,
        /// The value given.
        rows: f64,
    },
    /// A relation's scan cost is negative, NaN or infinite.
    #[error("relation {relation} has scan cost {cost}: give finite, non-negative host and device seconds")]
    BadScanCost {
        /// Index of the relation.
        relation: usize,
        /// The value given, as text.
        cost: String,
    },
    /// An edge has a side without relations.
    #[error("join edge {edge} has an empty side: each side of a join predicate names at least one relation")]
    EmptyEdgeSide {
        /// Index of the edge.
        edge: usize,
    },
    /// An edge names a relation the graph does not have.
    #[error("join edge {edge} names relation {relation}, but the graph has only {count} relations (0..{count})")]
    EdgeRelationOutOfRange {
        /// Index of the edge.
        edge: usize,
        /// The relation named.
        relation: usize,
        /// Relations in the graph.
        count: usize,
    },
    /// Both sides of an edge name the same relation.
    #[error(
        "join edge {edge} has relation {relation} on both sides: a predicate over one relation is a \
         filter, fold it into that relation's rows instead"
    )]
    EdgeSidesOverlap {
        /// Index of the edge.
        edge: usize,
        /// A relation on both sides.
        relation: usize,
    },
    /// A selectivity outside (0, 1].
    #[error(
        "join edge {edge} has selectivity {selectivity}: give a value in (0, 1] (clamp an estimate of 0 to 1/rows)"
    )]
    BadSelectivity {
        /// Index of the edge.
        edge: usize,
        /// The value given.
        selectivity: f64,
    },
    /// The orderer's budget option is unusable.
    #[error("the DP pair budget is 0: give at least 1 (or a large number to always use DPhyp)")]
    ZeroBudget,
}
