//! ndpdb's SQL engine.
//!
//! This crate will turn SQL text into answers: parse (sqlparser, PostgreSQL
//! dialect), bind names and types against the catalog, build a logical plan,
//! optimise it (rewrite rules, join ordering, physical choices) and execute it
//! over the MVCC store, on the host or as NDP calls on the device. The design
//! is `docs/sql.md`; the optimizer's is `docs/optimizer.md`.
//!
//! Built so far: only [`optimizer::join_order`], the cost-based join orderer,
//! as a self-contained module that the planner will plug into. Every plan node
//! it produces carries an estimated cardinality and separate host and device
//! costs, so that the hybridNDP split can later cut the plan by cost.

pub mod optimizer;
