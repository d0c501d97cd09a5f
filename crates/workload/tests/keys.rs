//! Update/delete key choice: ranges, skew, distinctness and errors.

use ndpdb_workload::{KeyChoice, KeyPicker, WorkloadError};
use proptest::prelude::*;

const SAMPLES: usize = 100_000;

fn counts(picker: &mut KeyPicker) -> Vec<u32> {
    let mut counts = vec![0u32; picker.n() as usize];
    for _ in 0..SAMPLES {
        let k = picker.next();
        assert!(k < picker.n(), "{k} out of 0..{}", picker.n());
        counts[k as usize] += 1;
    }
    counts
}

fn median(counts: &[u32]) -> u32 {
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

fn fnv1a64(x: u64) -> u64 {
    x.to_le_bytes().iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

#[test]
fn zipfian_is_skewed_towards_low_indices() {
    let n = 10_000u64;
    let mut picker = KeyPicker::new(n, KeyChoice::zipfian_default(), 1).unwrap();
    let c = counts(&mut picker);
    let top = *c.iter().max().unwrap();
    assert_eq!(top, c[0], "index 0 must be the hottest");
    assert!(top > 100 * median(&c).max(1), "top {top}, median {}", median(&c));
    assert!(c[0] > c[1] && c[1] > c[10] && c[10] > c[1000], "{} {} {} {}", c[0], c[1], c[10], c[1000]);

    // Gray et al.'s method is exact for ranks 0 and 1: p(i) = (i+1)^-θ / zeta(n, θ).
    let zeta: f64 = (1..=n).map(|i| (i as f64).powf(-0.99)).sum();
    for rank in [0usize, 1] {
        let expected = SAMPLES as f64 * ((rank + 1) as f64).powf(-0.99) / zeta;
        let got = f64::from(c[rank]);
        assert!((got - expected).abs() < 0.05 * expected, "rank {rank}: {got} hits, expected {expected:.0}");
    }
}

#[test]
fn scrambled_zipfian_spreads_the_hot_keys() {
    let n = 10_000u64;
    let mut picker = KeyPicker::new(n, KeyChoice::scrambled_zipfian_default(), 1).unwrap();
    let c = counts(&mut picker);
    let hottest = (0..c.len()).max_by_key(|&i| c[i]).unwrap() as u64;
    assert_eq!(hottest, fnv1a64(0) % n, "the hottest index is rank 0's hash");
    assert_ne!(hottest, 0);
    let top = c[hottest as usize];
    assert!(top > 100 * median(&c).max(1), "top {top}, median {}", median(&c));
}

#[test]
fn uniform_covers_the_range_evenly() {
    let mut picker = KeyPicker::new(100, KeyChoice::Uniform, 9).unwrap();
    let c = counts(&mut picker);
    // 1000 expected per index, standard deviation about 31.
    assert!(c.iter().all(|&x| (800..=1200).contains(&x)), "{c:?}");
}

#[test]
fn same_seed_same_keys() {
    for choice in [KeyChoice::Uniform, KeyChoice::zipfian_default(), KeyChoice::scrambled_zipfian_default()] {
        let mut a = KeyPicker::new(1_000_000, choice, 77).unwrap();
        let mut b = KeyPicker::new(1_000_000, choice, 77).unwrap();
        let xs: Vec<u64> = (0..1000).map(|_| a.next()).collect();
        let ys: Vec<u64> = (0..1000).map(|_| b.next()).collect();
        assert_eq!(xs, ys, "{choice:?}");
        assert_eq!(a.distinct(500).unwrap(), b.distinct(500).unwrap(), "{choice:?}");
    }
}

#[test]
fn distinct_gives_distinct_indices() {
    for choice in [KeyChoice::Uniform, KeyChoice::zipfian_default(), KeyChoice::scrambled_zipfian_default()] {
        let n = 1000;
        let mut picker = KeyPicker::new(n, choice, 5).unwrap();
        for k in [0u64, 1, 10, 500, 999, 1000] {
            let keys = picker.distinct(k).unwrap();
            assert_eq!(keys.len() as u64, k, "{choice:?}");
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len() as u64, k, "{choice:?}, k {k}: repeats");
            assert!(keys.iter().all(|&x| x < n), "{choice:?}");
        }
    }
    // Zipfian updates hit the hot rows.
    let mut picker = KeyPicker::new(1_000_000, KeyChoice::zipfian_default(), 5).unwrap();
    let keys = picker.distinct(10_000).unwrap();
    assert!(keys.contains(&0) && keys.contains(&1));
}

#[test]
fn distinct_rejects_more_than_n() {
    let mut picker = KeyPicker::new(1000, KeyChoice::Uniform, 5).unwrap();
    let err = picker.distinct(1001).unwrap_err();
    assert_eq!(err, WorkloadError::TooManyDistinct { requested: 1001, n: 1000 });
    assert_eq!(err.to_string(), "cannot pick 1001 distinct keys out of 1000: at most 1000 exist");
}

#[test]
fn invalid_parameters_are_errors() {
    assert_eq!(KeyPicker::new(0, KeyChoice::Uniform, 1).unwrap_err(), WorkloadError::EmptyKeySpace);
    for theta in [1.0, 1.5, -0.1, f64::INFINITY] {
        for choice in [KeyChoice::Zipfian { theta }, KeyChoice::ScrambledZipfian { theta }] {
            assert_eq!(KeyPicker::new(10, choice, 1).unwrap_err(), WorkloadError::InvalidTheta(theta));
        }
    }
    assert!(matches!(
        KeyPicker::new(10, KeyChoice::Zipfian { theta: f64::NAN }, 1),
        Err(WorkloadError::InvalidTheta(t)) if t.is_nan()
    ));
}

#[test]
fn tiny_and_huge_key_spaces() {
    for choice in [KeyChoice::Uniform, KeyChoice::zipfian_default(), KeyChoice::scrambled_zipfian_default()] {
        for n in [1u64, 2, 3, u64::MAX] {
            let mut picker = KeyPicker::new(n, choice, 3).unwrap();
            for _ in 0..10_000 {
                assert!(picker.next() < n, "{choice:?}, n {n}");
            }
        }
        let mut one = KeyPicker::new(1, choice, 3).unwrap();
        assert_eq!(one.distinct(1).unwrap(), vec![0]);
        let mut two = KeyPicker::new(2, choice, 3).unwrap();
        let mut both = two.distinct(2).unwrap();
        both.sort_unstable();
        assert_eq!(both, vec![0, 1]);
    }
}

fn any_choice() -> impl Strategy<Value = KeyChoice> {
    prop_oneof![
        Just(KeyChoice::Uniform),
        (0.0..1.0f64).prop_map(|theta| KeyChoice::Zipfian { theta }),
        (0.0..1.0f64).prop_map(|theta| KeyChoice::ScrambledZipfian { theta }),
    ]
}

proptest! {
    #[test]
    fn next_is_always_below_n(n in 1u64..10_000_000, choice in any_choice(), seed in any::<u64>()) {
        let mut picker = KeyPicker::new(n, choice, seed).unwrap();
        for _ in 0..1000 {
            let k = picker.next();
            prop_assert!(k < n, "{} out of 0..{} ({:?})", k, n, choice);
        }
    }
}
