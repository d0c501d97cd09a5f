//! The rewrite rules, in one ordered list.
//!
//! Each rule is a function from plan to plan that keeps the output schema
//! and the result. They run once each, in the order of [`RULES`]; the
//! reason for each position is next to it. The list is data so that tests
//! and EXPLAIN can run a prefix of it and show what each rule did.

use super::OptimizerContext;
use crate::error::Result;
use crate::plan::Plan;

/// One rewrite rule.
pub struct Rule {
    pub name: &'static str,
    pub apply: fn(Plan) -> Plan,
}

/// The rules in the order they run.
pub const RULES: &[Rule] = &[
    // 1. First, so that every later rule sees literals instead of constant
    //    subtrees (pushdown then moves fewer, simpler conjuncts, and a
    //    `WHERE 1 = 0` empties the plan before anything is costed).
    Rule { name: "constant folding", apply: super::fold::fold_plan },
    // 1b. Before decorrelation and pushdown: a conjunct shared by every arm
    //    of an OR (TPC-H Q19's join condition) becomes a conjunct of its own,
    //    which pushdown can make a join key and decorrelation a correlation
    //    equality; after folding, so that arms are compared without constant
    //    subtrees.
    Rule { name: "OR factoring", apply: super::orfactor::factor_plan },
    // 2. Before pushdown: decorrelation turns WHERE subqueries into joins
    //    whose conditions pushdown can then move into the join inputs, and it
    //    needs to see the subquery's Filters whole (not yet pushed into its
    //    scans) to find the correlated conjuncts.
    Rule { name: "subquery decorrelation", apply: super::decorrelate::decorrelate },
    // 3. After decorrelation (its joins' conditions and the remaining
    //    WHERE conjuncts move down) and before pruning (conjuncts must be in
    //    their final place to know which columns each node reads). Moving a
    //    WHERE equality into a cross join is what makes it an inner join.
    Rule { name: "predicate pushdown (cross joins to inner joins)", apply: super::pushdown::pushdown },
    // 4. Folding again: decorrelation adds COALESCE(count, 0) and pushdown
    //    may leave constant conjuncts next to each other.
    Rule { name: "constant folding (again)", apply: super::fold::fold_plan },
    // 5. Last: every other rule may add or move column references, so the
    //    columns each scan must read are known only now.
    Rule { name: "projection pushdown", apply: super::prune::prune_plan },
];

/// Runs every rule of [`RULES`] in order.
pub fn rewrite(plan: Plan, ctx: &OptimizerContext<'_>) -> Result<Plan> {
    rewrite_prefix(plan, ctx, RULES.len())
}

/// Runs the first `count` rules (tests and EXPLAIN of a stage).
pub fn rewrite_prefix(mut plan: Plan, _ctx: &OptimizerContext<'_>, count: usize) -> Result<Plan> {
    let width = plan.schema.len();
    for rule in RULES.iter().take(count) {
        plan = (rule.apply)(plan);
        if plan.schema.len() != width {
            return Err(crate::SqlError::internal(format!(
                "rule {} changed the output width from {width} to {}",
                rule.name,
                plan.schema.len()
            )));
        }
    }
    Ok(plan)
}
