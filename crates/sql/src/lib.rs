//! ndpdb's SQL engine.
//!
//! SQL text becomes answers in stages, one module each (`docs/sql.md`):
//!
//! ```text
//!  parse (sqlparser) ─► bind (catalog, types) ─► plan ─► optimizer ─► exec
//! ```
//!
//! - [`types`]: SQL types and values, PostgreSQL's semantics;
//! - [`catalog`]: tables, columns, indexes, views, statistics;
//! - [`plan`]: the plan tree every stage passes on, and bound statements;
//! - [`optimizer`]: rewrite rules, join ordering, physical choices;
//! - [`exec`]: vectorized execution over Arrow batches;
//! - [`store`]: tables, transactions, catalog and statistics in the MVCC store;
//! - [`session`]: sessions and transactions over an open database, SQL text in, results out;
//! - [`settings`]: `SET`/`SHOW` parameters;
//! - [`error`]: errors with PostgreSQL's SQLSTATE.
//!
//! Every plan node carries an estimated cardinality and separate host and
//! device costs, so that the hybridNDP split can later cut the plan by cost.

pub mod bind;
pub mod catalog;
pub mod error;
pub mod exec;
pub mod optimizer;
pub mod plan;
pub mod session;
pub mod settings;
pub mod store;
pub mod types;

pub use error::{Result, SqlError, SqlState};
