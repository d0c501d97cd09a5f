//! New column values written by update steps.

use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus;

/// Stream separator of [`crate::seeded`] for update values.
const STREAM: u64 = 0x5641_4c55_455f_4745; // "VALUE_GE"

/// Deterministic new values for updated ORDER_LINE rows.
#[derive(Debug, Clone)]
pub struct ValueGen {
    rng: Xoshiro256PlusPlus,
}

impl ValueGen {
    pub fn new(seed: u64) -> Self {
        ValueGen { rng: crate::seeded(seed, STREAM) }
    }

    /// A new `OL_AMOUNT` in cents, uniform in [1, 999999] (0.01 ..= 9,999.99).
    pub fn new_amount(&mut self) -> i64 {
        self.rng.random_range(1..=999_999)
    }

    /// A new `OL_QUANTITY`, uniform in [1, 10].
    pub fn new_quantity(&mut self) -> i32 {
        self.rng.random_range(1..=10)
    }
}
