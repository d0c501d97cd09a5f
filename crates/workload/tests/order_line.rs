//! ORDER_LINE population rules (TPC-C v5.11 clause 4.3.3.1) and determinism.

use ndpdb_workload::{
    DISTRICTS_PER_WAREHOUSE, FIRST_UNDELIVERED_O_ID, ITEMS, MAX_OL_CNT, MIN_OL_CNT, ORDERS_PER_DISTRICT, OrderLine,
    OrderLineGen, ValueGen,
};

/// 2024-01-01 00:00:00 UTC in microseconds.
const LOAD_TIME_US: i64 = 1_704_067_200_000_000;

#[test]
fn same_seed_same_tuples() {
    let a: Vec<OrderLine> = OrderLineGen::new(42, LOAD_TIME_US).take_rows(1000).collect();
    let b: Vec<OrderLine> = OrderLineGen::new(42, LOAD_TIME_US).take_rows(1000).collect();
    assert_eq!(a.len(), 1000);
    assert_eq!(a, b);
    let c: Vec<OrderLine> = OrderLineGen::new(43, LOAD_TIME_US).take_rows(1000).collect();
    assert_ne!(a, c, "a different seed must give different tuples");
}

#[test]
fn take_rows_gives_exactly_n_and_cuts_the_last_order() {
    for n in [0u64, 1, 7, 16, 1000] {
        assert_eq!(OrderLineGen::new(5, LOAD_TIME_US).take_rows(n).count() as u64, n);
    }
    // Every order has at least 5 lines, so 7 rows end inside order 2.
    let rows: Vec<OrderLine> = OrderLineGen::new(5, LOAD_TIME_US).take_rows(7).collect();
    let last = rows.last().unwrap();
    assert_eq!(last.ol_o_id, 2);
    assert_eq!(last.ol_number, 7 - rows.iter().filter(|r| r.ol_o_id == 1).count() as i32);
}

/// Walks more than two warehouses' worth of rows and checks every rule.
#[test]
fn population_rules() {
    // A warehouse averages 300,000 rows: 700,000 reach into warehouse 3.
    let rows: Vec<OrderLine> = OrderLineGen::new(7, LOAD_TIME_US).take_rows(700_000).collect();
    assert_eq!(rows.len(), 700_000);

    let mut ol_cnt_seen = [0u32; MAX_OL_CNT as usize + 1];
    let mut orders = 0u32;
    let mut undelivered_rows = 0u32;
    let mut amount_sum = 0i64;
    let (mut min_item, mut max_item) = (i32::MAX, i32::MIN);

    let mut prev: Option<&OrderLine> = None;
    let mut lines_in_order = 0;
    for r in &rows {
        // Position: the next line of the same order, or line 1 of the next order.
        match prev {
            None => assert_eq!((r.ol_w_id, r.ol_d_id, r.ol_o_id, r.ol_number), (1, 1, 1, 1)),
            Some(p) if r.ol_number > 1 => {
                assert_eq!((r.ol_w_id, r.ol_d_id, r.ol_o_id), (p.ol_w_id, p.ol_d_id, p.ol_o_id));
                assert_eq!(r.ol_number, p.ol_number + 1);
            }
            Some(p) => {
                assert_eq!(r.ol_number, 1);
                let expected = if p.ol_o_id < ORDERS_PER_DISTRICT {
                    (p.ol_w_id, p.ol_d_id, p.ol_o_id + 1)
                } else if p.ol_d_id < DISTRICTS_PER_WAREHOUSE {
                    (p.ol_w_id, p.ol_d_id + 1, 1)
                } else {
                    (p.ol_w_id + 1, 1, 1)
                };
                assert_eq!((r.ol_w_id, r.ol_d_id, r.ol_o_id), expected);
                ol_cnt_seen[lines_in_order as usize] += 1;
                orders += 1;
            }
        }
        lines_in_order = r.ol_number;
        assert!((1..=MAX_OL_CNT).contains(&r.ol_number), "{r:?}");

        assert!((1..=DISTRICTS_PER_WAREHOUSE).contains(&r.ol_d_id), "{r:?}");
        assert!((1..=ORDERS_PER_DISTRICT).contains(&r.ol_o_id), "{r:?}");
        assert!((1..=ITEMS).contains(&r.ol_i_id), "{r:?}");
        min_item = min_item.min(r.ol_i_id);
        max_item = max_item.max(r.ol_i_id);
        assert_eq!(r.ol_supply_w_id, r.ol_w_id);
        assert_eq!(r.ol_quantity, 5);
        if r.ol_o_id < FIRST_UNDELIVERED_O_ID {
            assert_eq!(r.ol_delivery_d, Some(LOAD_TIME_US), "{r:?}");
            assert_eq!(r.ol_amount, 0, "{r:?}");
        } else {
            assert_eq!(r.ol_delivery_d, None, "{r:?}");
            assert!((1..=999_999).contains(&r.ol_amount), "{r:?}");
            undelivered_rows += 1;
            amount_sum += r.ol_amount;
        }
        assert_eq!(r.ol_dist_info.len(), 24);
        assert!(r.ol_dist_info.iter().all(u8::is_ascii_alphanumeric), "{r:?}");
        prev = Some(r);
    }

    // Whole orders (all but the last, possibly cut short) have 5..=15 lines,
    // each count about equally often (1/11 of the orders each).
    assert!(ol_cnt_seen[..MIN_OL_CNT as usize].iter().all(|&c| c == 0), "{ol_cnt_seen:?}");
    let expected = f64::from(orders) / 11.0;
    for (cnt, &seen) in ol_cnt_seen.iter().enumerate().skip(MIN_OL_CNT as usize) {
        assert!((f64::from(seen) - expected).abs() < expected * 0.1, "O_OL_CNT {cnt}: {seen} of {orders} orders");
    }
    // Two full warehouses were passed.
    assert_eq!(rows.last().unwrap().ol_w_id, 3);
    // Items span the whole range; amounts average (0.01 + 9,999.99) / 2.
    assert!(min_item <= 10 && max_item > ITEMS - 10, "items {min_item}..={max_item}");
    let mean = amount_sum as f64 / f64::from(undelivered_rows);
    assert!((mean - 500_000.0).abs() < 5_000.0, "mean amount {mean} cents");
}

#[test]
fn dist_info_uses_letters_and_digits() {
    let mut seen = [false; 128];
    for r in OrderLineGen::new(11, LOAD_TIME_US).take_rows(10_000) {
        for &c in &r.ol_dist_info {
            seen[c as usize] = true;
        }
    }
    let alphabet: Vec<u8> = (b'0'..=b'9').chain(b'A'..=b'Z').chain(b'a'..=b'z').collect();
    for c in 0..128u8 {
        assert_eq!(seen[c as usize], alphabet.contains(&c), "character {:?}", c as char);
    }
}

#[test]
fn update_values_in_range_and_deterministic() {
    let mut a = ValueGen::new(3);
    let mut b = ValueGen::new(3);
    let (mut amount_lo, mut amount_hi, mut qty) = (i64::MAX, i64::MIN, [0u32; 11]);
    for _ in 0..100_000 {
        let amount = a.new_amount();
        assert_eq!(amount, b.new_amount());
        assert!((1..=999_999).contains(&amount));
        amount_lo = amount_lo.min(amount);
        amount_hi = amount_hi.max(amount);
        let q = a.new_quantity();
        assert_eq!(q, b.new_quantity());
        assert!((1..=10).contains(&q));
        qty[q as usize] += 1;
    }
    assert!(amount_lo < 100 && amount_hi > 999_900, "{amount_lo}..={amount_hi}");
    assert!(qty[1..].iter().all(|&c| c > 9_000), "{qty:?}");
}
