//! Deterministic workload data for ndpdb's database experiments: TPC-C
//! ORDER_LINE tuples, the table they go into ([`order_line_columns`]), and the
//! choice of which tuples an update or delete step touches.
//!
//! # ORDER_LINE population (TPC-C v5.11, clause 4.3.3.1)
//!
//! [`OrderLineGen`] yields the ORDER_LINE rows of an initially populated TPC-C
//! database, in the order the clause describes them: warehouse 1, 2, …; for
//! each warehouse, districts 1..=10; for each district, orders 1..=3000; for
//! each order, `O_OL_CNT` lines. Per row:
//!
//! | column | rule |
//! |---|---|
//! | `OL_O_ID`, `OL_D_ID`, `OL_W_ID` | the order's key |
//! | `OL_NUMBER` | 1..=`O_OL_CNT`, where `O_OL_CNT` is random within [5 .. 15] per order |
//! | `OL_I_ID` | random within [1 .. 100,000] |
//! | `OL_SUPPLY_W_ID` | `W_ID` |
//! | `OL_DELIVERY_D` | `O_ENTRY_D` (the load time) if `OL_O_ID` < 2,101, NULL otherwise |
//! | `OL_QUANTITY` | 5 |
//! | `OL_AMOUNT` | 0.00 if `OL_O_ID` < 2,101, random within [0.01 .. 9,999.99] otherwise |
//! | `OL_DIST_INFO` | random a-string of 24 characters |
//!
//! "Random within [x .. y]" is the specification's notation (clause 4.3.2) for a
//! value drawn uniformly and independently from x..=y. A warehouse holds
//! 10 × 3000 orders of 10 lines on average, i.e. about 300,000 ORDER_LINE rows.
//!
//! ## What is simplified
//!
//! * Only ORDER_LINE is generated. `O_OL_CNT` is drawn here and not stored
//!   anywhere; no ORDER, NEW-ORDER or other table is produced, so nothing can
//!   be joined against.
//! * Orders per district are the clause's fixed population: exactly 3000
//!   (`O_ID` 1..=3000) with `O_OL_CNT` uniform in 5..=15, about 30,000 lines per
//!   district; the only scale is the number of warehouses (or of rows taken).
//!   The orders' own columns (the `O_C_ID` permutation, `O_CARRIER_ID`, …) are
//!   not generated.
//! * The newest 900 orders per district (`O_ID` 2101..=3000, the ones the
//!   clause also puts in NEW-ORDER) are "undelivered": their lines get a NULL
//!   `OL_DELIVERY_D` and a random amount. Every delivered line gets the same
//!   timestamp, the `load_time_us` the caller passes (the clause's
//!   `O_ENTRY_D` is "current date/time given by the operating system", which
//!   is one instant for a fast load).
//! * `OL_DIST_INFO` draws each character uniformly from the 62 ASCII letters
//!   and digits `0-9A-Za-z`. The specification's a-string is "random
//!   alphanumeric" over the database's character set, which may be wider; an
//!   ASCII alphabet keeps the column exactly 24 bytes.
//! * The generator has no end: it moves on to the next warehouse forever. Take
//!   as many rows as needed ([`OrderLineGen::take_rows`]); the last order is
//!   then usually cut short, i.e. it has fewer lines than its `O_OL_CNT`.
//!
//! # Update and delete choices
//!
//! [`KeyPicker`] picks indices in `0..n` of the loaded rows (in load order) by
//! a [`KeyChoice`]: uniform, or zipfian the YCSB way (Gray et al., "Quickly
//! generating billion-record synthetic databases", SIGMOD 1994), optionally
//! scrambled so that the hot indices are spread over the table instead of
//! being its first rows. [`KeyPicker::distinct`] gives k distinct indices for
//! "update k tuples" steps. [`ValueGen`] gives the new `OL_AMOUNT` and
//! `OL_QUANTITY` values such steps write.
//!
//! # Determinism
//!
//! Every generator is seeded with a `u64` and is a pure function of it (and of
//! its other arguments): the same seed gives the same sequence for a given
//! version of this crate and of `rand`. ORDER_LINE tuples, update values and
//! uniform picks use integer arithmetic only and are the same on every
//! platform; zipfian picks go through `f64::powf`, whose last bits may differ
//! between platforms' math libraries, so a rare pick can differ across
//! platforms. The generators use separate streams, so passing the same seed to
//! an [`OrderLineGen`], a [`KeyPicker`] and a [`ValueGen`] does not correlate
//! them.

pub mod job;
mod keys;
mod order_line;
mod schema;
pub mod tpch;
mod values;
pub mod ycsb;

pub use keys::{DEFAULT_THETA, KeyChoice, KeyPicker};
pub use order_line::{
    DISTRICTS_PER_WAREHOUSE, FIRST_UNDELIVERED_O_ID, ITEMS, MAX_OL_CNT, MIN_OL_CNT, ORDERS_PER_DISTRICT, OrderLine,
    OrderLineGen,
};
pub use schema::{OL_AMOUNT, OL_I_ID, ORDER_LINE, order_line_columns};
pub use values::ValueGen;

/// A workload parameter the generators cannot honour.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    #[error("cannot pick {requested} distinct keys out of {n}: at most {n} exist")]
    TooManyDistinct { requested: u64, n: u64 },
    #[error("cannot pick keys out of an empty key space (n = 0)")]
    EmptyKeySpace,
    #[error("zipfian theta must be finite and within [0, 1), got {0}")]
    InvalidTheta(f64),
}

/// Seeds a generator's stream. `stream` separates the generators, so that one
/// user seed given to several of them yields unrelated sequences.
pub(crate) fn seeded(seed: u64, stream: u64) -> rand::rngs::Xoshiro256PlusPlus {
    rand::SeedableRng::seed_from_u64(seed ^ stream)
}
