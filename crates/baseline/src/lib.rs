//! Baselines that ndpdb's experiments compare against. Kept out of the engine
//! crates so that ordinary builds of the engine do not carry them.

pub mod pglocks;
pub mod postgres;
pub mod require;
