//! Costs: separate host and device seconds on every plan node, and the
//! `CostModel` interface with the default hash-join model.
//!
//! A node's [`Cost`] is the cost of its whole subtree, kept as two parts:
//! seconds of host work and seconds of device work (PE compute, medium
//! reads, link transfers). hybridNDP (`../shared/papers/hybridndp-edbt25.txt`,
//! section 3) costs an operator on either side with its own hardware model
//! and then cuts the plan where the sum of device and host parts is lowest;
//! keeping the parts apart from the start is what lets that split be a pure
//! function of a costed plan. The orderer compares plans by
//! [`CostModel::objective`] (default: host + device, i.e. no overlap).
//!
//! The default [`HashJoinCostModel`] joins on the host: per-row seconds for
//! building the hash table, probing it, and emitting output rows. The build
//! side is whichever input makes the join cheaper (the orderer tries both);
//! with `build_row_s > probe_row_s` that is the smaller input. Its constants
//! are placeholders until the hardware profile and the profiler supply
//! measured ones (`docs/optimizer.md`); base relations cost what the caller
//! says (a host scan or an NDP call).

use std::ops::Add;

use super::graph::Relation;
use super::relset::RelSet;

/// Seconds of host work and seconds of device work.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cost {
    /// Host CPU seconds.
    pub host: f64,
    /// Device seconds (PEs, medium, link).
    pub device: f64,
}

impl Cost {
    /// No work.
    pub const ZERO: Cost = Cost { host: 0.0, device: 0.0 };

    /// `host` seconds on the host only.
    pub const fn host(host: f64) -> Cost {
        Cost { host, device: 0.0 }
    }

    /// `device` seconds on the device only.
    pub const fn device(device: f64) -> Cost {
        Cost { host: 0.0, device }
    }

    /// Both parts finite and non-negative.
    pub fn is_valid(&self) -> bool {
        self.host.is_finite() && self.host >= 0.0 && self.device.is_finite() && self.device >= 0.0
    }
}

impl Add for Cost {
    type Output = Cost;

    fn add(self, other: Cost) -> Cost {
        Cost { host: self.host + other.host, device: self.device + other.device }
    }
}

/// One input of a join, as the cost model sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JoinInput {
    /// The relations under the input.
    pub relations: RelSet,
    /// Its estimated rows.
    pub rows: f64,
    /// Its subtree's cost.
    pub cost: Cost,
}

/// A join the orderer considers: `probe ⋈ build` producing `rows`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JoinStep {
    /// The input streamed through the join (the tree's left child).
    pub probe: JoinInput,
    /// The input the join holds (hash table; the tree's right child).
    pub build: JoinInput,
    /// Estimated output rows.
    pub rows: f64,
    /// True when no predicate connects the inputs (a cross product between
    /// components of the query graph).
    pub cross: bool,
}

/// How plans are costed and compared.
///
/// The dynamic program keeps one plan per set of relations, the one with the
/// lowest [`objective`](CostModel::objective); that is optimal when a join's
/// objective never falls as an input's objective rises (true for the default
/// sum over additive costs). A model whose objective overlaps host and device
/// work (e.g. a maximum) breaks that and needs Pareto sets, which is the
/// split's business, not this orderer's.
pub trait CostModel {
    /// Cost of scanning a base relation; by default what the caller gave.
    fn scan(&self, relation: &Relation) -> Cost {
        relation.scan
    }

    /// Cost of the subtree `step.probe ⋈ step.build`, including both inputs.
    /// Must be finite and non-negative.
    fn join(&self, step: &JoinStep) -> Cost;

    /// The number plans are compared by (lower is better).
    fn objective(&self, cost: Cost) -> f64 {
        cost.host + cost.device
    }
}

/// A host hash join: build the `build` input into a hash table, stream
/// `probe` through it, emit the output.
///
/// ```text
/// host(join) = host(probe) + host(build)
///            + build_row_s * rows(build) + probe_row_s * rows(probe)
///            + output_row_s * rows(out)
/// device(join) = device(probe) + device(build)
/// ```
///
/// A cross product costs the same formula (every probe row matches every
/// build row, so the output term dominates).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HashJoinCostModel {
    /// Host seconds to insert one row into the hash table.
    pub build_row_s: f64,
    /// Host seconds to look up one probe row.
    pub probe_row_s: f64,
    /// Host seconds to emit one output row.
    pub output_row_s: f64,
}

impl Default for HashJoinCostModel {
    /// Placeholder constants of the right order for one core of this
    /// machine's class (tens of nanoseconds a row); the hardware profile
    /// replaces them once the profiler measures them.
    fn default() -> Self {
        HashJoinCostModel { build_row_s: 40e-9, probe_row_s: 15e-9, output_row_s: 10e-9 }
    }
}

impl CostModel for HashJoinCostModel {
    fn join(&self, step: &JoinStep) -> Cost {
        let own =
            self.build_row_s * step.build.rows + self.probe_row_s * step.probe.rows + self.output_row_s * step.rows;
        step.probe.cost + step.build.cost + Cost::host(own)
    }
}
