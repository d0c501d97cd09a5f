//! The query optimizer.
//!
//! ```text
//!  logical plan ─► rewrite rules ─► join ordering ─► physical choices ─► plan
//!                  (not built)      (join_order)      (not built)
//! ```
//!
//! Every node the optimizer produces carries its estimated rows and a
//! [`join_order::Cost`] with separate host and device seconds: the hybridNDP
//! split (a later issue) cuts the plan between device and host by those two
//! parts, so they are never folded into one number before the objective.
//!
//! Built so far: [`join_order`] (DPhyp under a work budget, greedy beyond).
//! `docs/optimizer.md` describes the algorithms, the budget and the interfaces.

pub mod join_order;
