//! ndpdb's experiments. Each experiment is a function from a configuration to
//! rows; `output` turns rows into a terminal table, JSON lines and plots in a
//! results directory. Baselines and plotting live here, away from the engine,
//! so ordinary builds of the engine stay small.

pub mod compose;
pub mod crash;
pub mod device_scaling;
pub mod locks;
pub mod machine;
pub mod orderline;
pub mod output;
pub mod recovery;
pub mod snapshot;
