//! # YCSB's core workload, as the CBM paper runs it
//!
//! The cooperative-buffer-manager experiment (`ndpdb bench cbm`,
//! `docs/cbm-bench.md`) loads N pairs and then runs reads and updates on
//! keys drawn uniformly or from YCSB's scrambled zipfian. Everything here is
//! YCSB's own definition (`core/.../CoreWorkload.java`,
//! `generator/ZipfianGenerator.java`, `ScrambledZipfianGenerator.java`,
//! `Utils.fnvhash64`), so that "zipfian θ = 0.99" means what it means in
//! the paper:
//!
//! ```text
//!  key number i (0..N) ──fnvhash64──► "user" + 20 digits, zero-padded = 24 bytes
//!
//!  uniform:   i = uniform(0..N)
//!  zipfian:   r = ZipfianGenerator(0..=10^10, θ = 0.99, ζ = 26.469…)   (Gray et al.)
//!             i = fnvhash64(r) mod N                                     (the scrambling)
//! ```
//!
//! YCSB's scrambled generator always draws ranks over 10^10 + 1 items with
//! the precomputed ζ(10^10, 0.99) and folds them onto the N keys by the hash,
//! so the hottest key gets a bit more than ζ's first share (several ranks
//! may hash to it) and the hot keys are spread over the key space instead of
//! being the first ones loaded. `rand_distr::Zipf` samples exact ranks by
//! rejection, a different generator with different ranks 2+ (YCSB's is
//! exact for ranks 0 and 1 only): it is not used.
//!
//! Values: an update's value carries the update's sequence number in its
//! first 8 bytes (the freshness checker tells versions apart by it) and a
//! filler derived from it; YCSB's own values are random field strings of the
//! same sizes.

use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus;

use crate::WorkloadError;

/// Bytes of a key: "user" and 20 digits.
pub const KEY_BYTES: usize = 24;
/// YCSB's zipfian constant.
pub const ZIPFIAN_THETA: f64 = 0.99;
/// Ranks YCSB's scrambled generator draws from (`ITEM_COUNT`; the generator
/// is built over `0..=ITEM_COUNT`).
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// ζ(10^10 + 1, 0.99) as YCSB hard-codes it (`ScrambledZipfianGenerator.ZETAN`).
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// Stream separator of [`crate::seeded`] for YCSB operations.
const STREAM: u64 = 0x5943_5342_5f4f_5053; // "YCSB_OPS"

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes, then
/// `Math.abs` of the signed result (the one value whose `abs` overflows,
/// `Long.MIN_VALUE`, is taken as 2^63).
pub fn fnvhash64(x: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let h = x.to_le_bytes().iter().fold(OFFSET_BASIS, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    (h as i64).unsigned_abs()
}

/// The key of key number `i`: YCSB's `buildKeyName` with hashed (not
/// ordered) inserts and a zero padding of 20 digits.
pub fn key(i: u64) -> [u8; KEY_BYTES] {
    let mut out = [b'0'; KEY_BYTES];
    out[..4].copy_from_slice(b"user");
    let digits = fnvhash64(i).to_string();
    out[KEY_BYTES - digits.len()..].copy_from_slice(digits.as_bytes());
    out
}

/// A value of `bytes` bytes for the write numbered `seq` of key number `i`:
/// `seq` in the first 8 bytes (little-endian, when there is room), then
/// filler bytes that depend on both.
pub fn value(i: u64, seq: u64, bytes: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(bytes);
    v.extend_from_slice(&seq.to_le_bytes()[..bytes.min(8)]);
    let mut x = fnvhash64(i ^ seq.rotate_left(32)) | 1;
    while v.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b'a' + (x % 26) as u8);
    }
    v
}

/// YCSB's `ZipfianGenerator` (Gray et al., SIGMOD 1994) over `0..items`:
/// rank r with probability about 1 / ((r + 1)^θ ζ(items, θ)); exact for
/// ranks 0 and 1.
#[derive(Debug, Clone, Copy)]
pub struct Zipfian {
    items: f64,
    zetan: f64,
    theta: f64,
    alpha: f64,
    eta: f64,
}

impl Zipfian {
    /// Over `0..items` with exponent `theta` in (0, 1) and `zetan` =
    /// ζ(items, θ) (summed here when `None`: O(items)).
    pub fn new(items: u64, theta: f64, zetan: Option<f64>) -> Result<Zipfian, WorkloadError> {
        if items < 3 {
            return Err(WorkloadError::EmptyKeySpace);
        }
        if !(theta.is_finite() && theta > 0.0 && theta < 1.0) {
            return Err(WorkloadError::InvalidTheta(theta));
        }
        let zeta = |n: u64| (1..=n).map(|i| (i as f64).powf(-theta)).sum::<f64>();
        let zetan = zetan.unwrap_or_else(|| zeta(items));
        let n = items as f64;
        let eta = (1.0 - (2.0 / n).powf(1.0 - theta)) / (1.0 - zeta(2) / zetan);
        Ok(Zipfian { items: n, zetan, theta, alpha: 1.0 / (1.0 - theta), eta })
    }

    /// The rank for a uniform draw `u` in [0, 1) (`nextLong` of YCSB).
    pub fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = (self.items * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items as u64 - 1)
    }
}

/// How the operations' keys are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Distribution {
    Uniform,
    /// YCSB's scrambled zipfian, θ = 0.99.
    Zipfian,
}

impl Distribution {
    pub const ALL: [Distribution; 2] = [Distribution::Uniform, Distribution::Zipfian];

    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Zipfian => "zipfian",
        }
    }

    pub fn parse(s: &str) -> Option<Distribution> {
        Distribution::ALL.into_iter().find(|d| d.name() == s)
    }
}

/// The OLTP thread's read/update mix (the paper's four workloads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mix {
    ReadOnly,
    /// 70% reads, 30% updates.
    ReadHeavy,
    /// 30% reads, 70% updates.
    UpdateHeavy,
    UpdateOnly,
}

impl Mix {
    pub const ALL: [Mix; 4] = [Mix::ReadOnly, Mix::ReadHeavy, Mix::UpdateHeavy, Mix::UpdateOnly];

    pub fn name(self) -> &'static str {
        match self {
            Mix::ReadOnly => "read-only",
            Mix::ReadHeavy => "read-heavy",
            Mix::UpdateHeavy => "update-heavy",
            Mix::UpdateOnly => "update-only",
        }
    }

    pub fn parse(s: &str) -> Option<Mix> {
        Mix::ALL.into_iter().find(|m| m.name() == s)
    }

    /// Updates per 100 operations.
    pub fn update_pct(self) -> u32 {
        match self {
            Mix::ReadOnly => 0,
            Mix::ReadHeavy => 30,
            Mix::UpdateHeavy => 70,
            Mix::UpdateOnly => 100,
        }
    }
}

/// One operation of the run phase, on key number `.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read(u64),
    Update(u64),
}

/// Key numbers in `0..n` by a [`Distribution`]; deterministic per seed.
#[derive(Debug, Clone)]
pub struct KeyChooser {
    n: u64,
    zipf: Option<Zipfian>,
    rng: Xoshiro256PlusPlus,
}

impl KeyChooser {
    pub fn new(n: u64, dist: Distribution, seed: u64) -> Result<KeyChooser, WorkloadError> {
        if n == 0 {
            return Err(WorkloadError::EmptyKeySpace);
        }
        let zipf = match dist {
            Distribution::Uniform => None,
            Distribution::Zipfian => {
                Some(Zipfian::new(SCRAMBLED_ITEM_COUNT + 1, ZIPFIAN_THETA, Some(SCRAMBLED_ZETAN))?)
            }
        };
        Ok(KeyChooser { n, zipf, rng: crate::seeded(seed, STREAM) })
    }

    /// The next key number.
    pub fn next_key(&mut self) -> u64 {
        match &self.zipf {
            None => self.rng.random_range(0..self.n),
            Some(z) => fnvhash64(z.rank(self.rng.random())) % self.n,
        }
    }

    /// A uniform draw in `0..100` (the mix's coin), from the same stream.
    fn percent(&mut self) -> u32 {
        self.rng.random_range(0..100)
    }
}

/// The run phase's operations: a mix over a key chooser.
#[derive(Debug, Clone)]
pub struct Operations {
    mix: Mix,
    keys: KeyChooser,
}

impl Operations {
    pub fn new(n: u64, mix: Mix, dist: Distribution, seed: u64) -> Result<Operations, WorkloadError> {
        Ok(Operations { mix, keys: KeyChooser::new(n, dist, seed)? })
    }

    pub fn next_op(&mut self) -> Op {
        let update = self.keys.percent() < self.mix.update_pct();
        let k = self.keys.next_key();
        if update { Op::Update(k) } else { Op::Read(k) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_ycsb_user_names_of_24_bytes() {
        // FNV-1a 64 of eight zero bytes is 0xa8c7f832281a39c5; as a signed
        // long it is negative, so YCSB takes its absolute value.
        let h0 = (0xa8c7_f832_281a_39c5u64 as i64).unsigned_abs();
        assert_eq!(fnvhash64(0), h0);
        let k = key(0);
        assert_eq!(&k[..], format!("user{h0:020}").as_bytes());
        assert!((0..1000).all(|i| key(i).len() == 24 && key(i).starts_with(b"user")));
        let distinct: std::collections::HashSet<_> = (0..10_000).map(key).collect();
        assert_eq!(distinct.len(), 10_000);
    }

    #[test]
    fn values_carry_their_sequence_number_and_differ() {
        let v = value(7, 42, 500);
        assert_eq!(v.len(), 500);
        assert_eq!(u64::from_le_bytes(v[..8].try_into().unwrap()), 42);
        assert_ne!(value(7, 43, 500), v);
        assert_eq!(value(7, 42, 500), v);
        assert_eq!(value(7, 42, 4).len(), 4);
    }

    /// The generator against the exact zipfian probabilities over 1000
    /// items: ranks 0 and 1 exact, the head within a few percent, and the
    /// tail mass right (Gray et al.'s approximation over-weights ranks 2-3).
    #[test]
    fn zipfian_follows_the_zipf_law() {
        let n = 1000u64;
        let theta = 0.99;
        let z = Zipfian::new(n, theta, None).unwrap();
        let zeta: f64 = (1..=n).map(|i| (i as f64).powf(-theta)).sum();
        let p = |r: u64| ((r + 1) as f64).powf(-theta) / zeta;
        let mut rng: Xoshiro256PlusPlus = crate::seeded(1, STREAM);
        let samples = 1_000_000u64;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..samples {
            counts[z.rank(rng.random()) as usize] += 1;
        }
        let freq = |r: usize| counts[r] as f64 / samples as f64;
        for r in [0, 1] {
            let rel = (freq(r) - p(r as u64)).abs() / p(r as u64);
            assert!(rel < 0.01, "rank {r}: {} vs {} ({rel})", freq(r), p(r as u64));
        }
        for r in [10, 50] {
            let rel = (freq(r) - p(r as u64)).abs() / p(r as u64);
            assert!(rel < 0.15, "rank {r}: {} vs {} ({rel})", freq(r), p(r as u64));
        }
        let tail: f64 = (100..n as usize).map(freq).sum();
        let want: f64 = (100..n).map(p).sum();
        assert!((tail - want).abs() < 0.02, "tail {tail} vs {want}");
    }

    #[test]
    fn the_scrambled_zipfian_is_skewed_but_spread() {
        let n = 10_000;
        let mut c = KeyChooser::new(n, Distribution::Zipfian, 3).unwrap();
        let mut counts = vec![0u64; n as usize];
        let samples = 200_000;
        for _ in 0..samples {
            counts[c.next_key() as usize] += 1;
        }
        // YCSB's hottest key: rank 0 (1/ζ(10^10) ≈ 3.8%) hashed onto the keys.
        let hottest = fnvhash64(0) % n;
        let share = counts[hottest as usize] as f64 / samples as f64;
        assert!((0.035..0.045).contains(&share), "hottest share {share}");
        // Spread: the ten hottest keys are not the first ten.
        let mut order: Vec<usize> = (0..n as usize).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
        assert!(order[..10].iter().any(|&i| i >= 10), "{:?}", &order[..10]);
        let uniform = KeyChooser::new(n, Distribution::Uniform, 3).unwrap();
        let mut u = uniform.clone();
        let max = (0..samples).map(|_| u.next_key()).fold(0, u64::max);
        assert!(max < n);
    }

    #[test]
    fn mixes_give_their_update_share() {
        for mix in Mix::ALL {
            let mut ops = Operations::new(1000, mix, Distribution::Uniform, 5).unwrap();
            let updates = (0..10_000).filter(|_| matches!(ops.next_op(), Op::Update(_))).count();
            let want = mix.update_pct() as usize * 100;
            assert!(updates.abs_diff(want) < 300, "{}: {updates} updates of 10000", mix.name());
            assert_eq!(Mix::parse(mix.name()), Some(mix));
        }
        assert_eq!(Distribution::parse("zipfian"), Some(Distribution::Zipfian));
        assert!(Zipfian::new(1000, 1.0, None).is_err());
    }
}
