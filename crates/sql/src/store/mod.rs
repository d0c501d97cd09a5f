//! The SQL engine over the MVCC store: where SQL tables, rows and
//! transactions meet `ndpdb-txn` and `ndpdb-storage`.
//!
//! ```text
//!  session ─► txn (SqlTxn: Arc<Database> + Txn, shared by scan workers)
//!             ├─ source   (TableSource: host morsels or one NDP call → Arrow)
//!             ├─ write    (INSERT/UPDATE/DELETE rows: NOT NULL, lengths, keys, index entries)
//!             ├─ index    (B+-tree indexes on a second image: entries, builds, index reads)
//!             ├─ catalog  (the SQL catalog as rows of ndpdb_catalog)
//!             └─ analyze  (ANALYZE: a sample → TableStats → catalog)
//!  mapping: SQL types/values ↔ storage columns/values ↔ Arrow arrays
//! ```
//!
//! Everything here writes in the caller's transaction: DDL, DML and
//! statistics commit or roll back with it.

pub mod analyze;
pub mod catalog;
pub mod index;
pub mod mapping;
pub mod source;
pub mod txn;
pub mod write;
pub mod zone_skip;

pub use catalog::CatalogStore;
pub use source::TxnSource;
pub use txn::SqlTxn;
