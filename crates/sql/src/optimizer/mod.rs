//! The query optimizer.
//!
//! ```text
//!  logical plan ─► rules.rs ─────────────► physical.rs (one bottom-up pass) ─► plan
//!                  constant folding          per maximal inner-join tree:
//!                  decorrelation               reorder.rs → join_order (DPhyp / GOO)
//!                  predicate pushdown        per Scan: Access (host | NDP | index) by cost.rs
//!                  cross → inner joins       per Join: JoinAlgorithm (hash | NL | index NL)
//!                  projection pushdown       every node: est.rows (cardinality.rs), est.cost
//! ```
//!
//! Every node the optimizer produces carries its estimated rows and a
//! [`Cost`](crate::plan::Cost) with separate host and device seconds: the
//! hybridNDP split (a later issue) cuts the plan between device and host by
//! those two parts, so they are never folded into one number before the
//! objective (their sum).
//!
//! The rules are a fixed, ordered list (`rules.rs`, each position with its
//! reason); the physical pass needs estimates of a join tree's inputs before
//! it orders the tree, so ordering, choosing and estimating are one
//! bottom-up walk. Subqueries that decorrelation could not turn into joins
//! stay in their expressions and are optimized on their own (the executor's
//! `SubqueryRunner` runs them per outer row). `docs/optimizer.md` describes
//! the rules, the estimates, the cost formulas and what is not built.

pub mod aggreduce;
pub mod cardinality;
pub mod cost;
mod decorrelate;
mod fold;
pub mod join_order;
mod orfactor;
mod pattern;
mod physical;
mod prune;
mod pushdown;
mod reorder;
pub mod rules;
mod semipush;
pub mod util;

use crate::catalog::{Catalog, TableDef};
use crate::error::Result;
use crate::plan::Plan;

pub use cost::CostParams;
pub use join_order::JoinOrderOptions;

/// `SET ndp`: how scans choose between the host and the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NdpMode {
    /// Every sequential scan is an NDP call.
    On,
    /// Every scan runs on the host.
    #[default]
    Off,
    /// The cheaper by the cost model.
    Auto,
}

/// Row count of a table from the store, for tables without `ANALYZE`
/// statistics.
pub type TableRows<'a> = &'a dyn Fn(&TableDef) -> Option<f64>;

/// What the optimizer reads besides the plan.
#[derive(Clone, Copy)]
pub struct OptimizerContext<'a> {
    pub catalog: &'a dyn Catalog,
    pub ndp: NdpMode,
    pub cost: CostParams,
    /// Rows of a table without statistics (the store's count); None: the
    /// default of [`cardinality::DEFAULT_TABLE_ROWS`].
    pub table_rows: Option<TableRows<'a>>,
    pub join_order: JoinOrderOptions,
}

impl<'a> OptimizerContext<'a> {
    /// NDP off, the default profile's costs, no row-count callback.
    pub fn new(catalog: &'a dyn Catalog) -> OptimizerContext<'a> {
        OptimizerContext {
            catalog,
            ndp: NdpMode::Off,
            cost: CostParams::default(),
            table_rows: None,
            join_order: JoinOrderOptions::default(),
        }
    }
}

/// Rewrites a bound plan and makes it physical: the rules, join ordering,
/// the access path of each scan and the algorithm of each join, and an
/// estimate on every node. The output schema is the input's.
pub fn optimize(plan: Plan, ctx: &OptimizerContext<'_>) -> Result<Plan> {
    let schema = plan.schema.clone();
    let plan = rules::rewrite(plan, ctx)?;
    let plan = physical::physical(plan, ctx)?;
    if plan.schema.len() != schema.len() {
        return Err(crate::SqlError::internal(format!(
            "optimizer changed the output width from {} to {}",
            schema.len(),
            plan.schema.len()
        )));
    }
    Ok(plan)
}

/// The cost shape of a Scan node (EXPLAIN's estimated link bytes saved).
pub fn physical_scan_shape(plan: &Plan, ctx: &OptimizerContext<'_>) -> Option<cost::ScanShape> {
    physical::scan_shape(plan, ctx)
}
