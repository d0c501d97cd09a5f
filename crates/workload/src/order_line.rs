//! TPC-C ORDER_LINE rows of an initially populated database (clause 4.3.3.1).

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, RngExt};

/// Districts per warehouse (`D_ID` 1..=10).
pub const DISTRICTS_PER_WAREHOUSE: i32 = 10;
/// Orders per district at population time (`O_ID` 1..=3000).
pub const ORDERS_PER_DISTRICT: i32 = 3000;
/// The oldest undelivered order: lines of orders with `O_ID` >= 2101 (the newest
/// 900 per district) have a NULL `OL_DELIVERY_D` and a random `OL_AMOUNT`.
pub const FIRST_UNDELIVERED_O_ID: i32 = 2101;
/// Items in the catalogue (`OL_I_ID` 1..=100,000).
pub const ITEMS: i32 = 100_000;
/// Fewest lines an order has (`O_OL_CNT` lower bound).
pub const MIN_OL_CNT: i32 = 5;
/// Most lines an order has (`O_OL_CNT` upper bound).
pub const MAX_OL_CNT: i32 = 15;

/// `OL_QUANTITY` of every populated line.
const INITIAL_QUANTITY: i32 = 5;
/// `OL_AMOUNT` bounds of an undelivered line, in cents (0.01 ..= 9,999.99).
const MIN_AMOUNT_CENTS: i64 = 1;
const MAX_AMOUNT_CENTS: i64 = 999_999;
/// Length of `OL_DIST_INFO`.
const DIST_INFO_LEN: usize = 24;
/// The a-string alphabet; 62 symbols, so 6 random bits pick one with
/// probability 62/64 (the rest are rejected, keeping the choice uniform).
const ALPHANUMERIC: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Stream separator of [`crate::seeded`] for ORDER_LINE generation.
const STREAM: u64 = 0x4f52_4445_525f_4c4e; // "ORDER_LN"

/// One ORDER_LINE tuple. Its key is (`ol_w_id`, `ol_d_id`, `ol_o_id`,
/// `ol_number`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OrderLine {
    pub ol_o_id: i32,
    pub ol_d_id: i32,
    pub ol_w_id: i32,
    pub ol_number: i32,
    pub ol_i_id: i32,
    pub ol_supply_w_id: i32,
    /// Microseconds since 1970-01-01 00:00 UTC; `None` (NULL) for lines of
    /// undelivered orders.
    pub ol_delivery_d: Option<i64>,
    pub ol_quantity: i32,
    /// decimal(6,2) as a count of cents: 123456 is 1,234.56.
    pub ol_amount: i64,
    /// Random a-string of exactly 24 ASCII letters and digits.
    pub ol_dist_info: [u8; 24],
}

/// An endless, deterministic stream of ORDER_LINE tuples in TPC-C population
/// order: warehouse 1, 2, …; within a warehouse districts 1..=10; within a
/// district orders 1..=3000; within an order lines 1..=`O_OL_CNT`, with
/// `O_OL_CNT` random within [5 .. 15] per order.
///
/// The iterator does not end by itself (until `W_ID` would overflow `i32`):
/// take the rows you need, e.g. with [`OrderLineGen::take_rows`]. Taking a
/// number of rows usually cuts the last order short, i.e. its last lines are
/// missing. To load whole warehouses instead, stop at the first row whose
/// `ol_w_id` exceeds the warehouse count.
///
/// The same `seed` yields the same tuples.
#[derive(Debug, Clone)]
pub struct OrderLineGen {
    rng: Xoshiro256PlusPlus,
    load_time_us: i64,
    w_id: i32,
    d_id: i32,
    o_id: i32,
    /// `O_OL_CNT` of the current order.
    ol_cnt: i32,
    /// `OL_NUMBER` of the next row.
    next_number: i32,
}

impl OrderLineGen {
    /// A generator whose delivered lines carry `load_time_us` (microseconds
    /// since the Unix epoch, UTC) as `OL_DELIVERY_D`.
    pub fn new(seed: u64, load_time_us: i64) -> Self {
        // Positioned "after order 0 of district 1 of warehouse 1": the first
        // `next` starts order 1.
        OrderLineGen {
            rng: crate::seeded(seed, STREAM),
            load_time_us,
            w_id: 1,
            d_id: 1,
            o_id: 0,
            ol_cnt: 0,
            next_number: 1,
        }
    }

    /// Exactly the next `n` tuples (fewer only past the end described on
    /// [`OrderLineGen`], which no realistic `n` reaches). The last order is
    /// usually cut short.
    pub fn take_rows(self, n: u64) -> std::iter::Take<Self> {
        self.take(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Moves to the next order, drawing its `O_OL_CNT`. `false` once `W_ID`
    /// would overflow.
    fn start_next_order(&mut self) -> bool {
        self.o_id += 1;
        if self.o_id > ORDERS_PER_DISTRICT {
            self.o_id = 1;
            self.d_id += 1;
            if self.d_id > DISTRICTS_PER_WAREHOUSE {
                self.d_id = 1;
                match self.w_id.checked_add(1) {
                    Some(w) => self.w_id = w,
                    None => {
                        // Park past the end so every later call also stops.
                        self.o_id = ORDERS_PER_DISTRICT;
                        self.d_id = DISTRICTS_PER_WAREHOUSE;
                        return false;
                    }
                }
            }
        }
        self.ol_cnt = self.rng.random_range(MIN_OL_CNT..=MAX_OL_CNT);
        self.next_number = 1;
        true
    }

    fn dist_info(&mut self) -> [u8; DIST_INFO_LEN] {
        let mut out = [0u8; DIST_INFO_LEN];
        let mut filled = 0;
        while filled < DIST_INFO_LEN {
            let mut bits = self.rng.next_u64();
            // Ten 6-bit symbols per draw; values 62 and 63 are rejected.
            for _ in 0..10 {
                let symbol = (bits & 63) as usize;
                bits >>= 6;
                if let Some(&c) = ALPHANUMERIC.get(symbol) {
                    out[filled] = c;
                    filled += 1;
                    if filled == DIST_INFO_LEN {
                        break;
                    }
                }
            }
        }
        out
    }
}

impl Iterator for OrderLineGen {
    type Item = OrderLine;

    fn next(&mut self) -> Option<OrderLine> {
        if self.next_number > self.ol_cnt && !self.start_next_order() {
            return None;
        }
        let ol_number = self.next_number;
        self.next_number += 1;

        let delivered = self.o_id < FIRST_UNDELIVERED_O_ID;
        let ol_i_id = self.rng.random_range(1..=ITEMS);
        let ol_amount = if delivered { 0 } else { self.rng.random_range(MIN_AMOUNT_CENTS..=MAX_AMOUNT_CENTS) };
        let ol_dist_info = self.dist_info();
        Some(OrderLine {
            ol_o_id: self.o_id,
            ol_d_id: self.d_id,
            ol_w_id: self.w_id,
            ol_number,
            ol_i_id,
            ol_supply_w_id: self.w_id,
            ol_delivery_d: delivered.then_some(self.load_time_us),
            ol_quantity: INITIAL_QUANTITY,
            ol_amount,
            ol_dist_info,
        })
    }
}

impl std::iter::FusedIterator for OrderLineGen {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_instead_of_overflowing_w_id() {
        let mut g = OrderLineGen::new(1, 0);
        g.w_id = i32::MAX;
        g.d_id = DISTRICTS_PER_WAREHOUSE;
        g.o_id = ORDERS_PER_DISTRICT - 1;
        let last: Vec<OrderLine> = g.by_ref().collect();
        assert!((MIN_OL_CNT..=MAX_OL_CNT).contains(&(last.len() as i32)));
        assert!(last.iter().all(|r| r.ol_w_id == i32::MAX && r.ol_o_id == ORDERS_PER_DISTRICT));
        assert_eq!(g.next(), None);
        assert_eq!(g.next(), None);
    }
}
