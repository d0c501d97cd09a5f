//! Which rows an update or delete step touches: uniform or zipfian indices.

use std::collections::HashSet;

use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus;

use crate::WorkloadError;

/// YCSB's default zipfian constant.
pub const DEFAULT_THETA: f64 = 0.99;

/// Stream separator of [`crate::seeded`] for key picking.
const STREAM: u64 = 0x4b45_595f_5049_434b; // "KEY_PICK"

/// Below this many items zeta(n, θ) is summed term by term; above, the first
/// `ZETA_EXACT_TERMS - 1` terms are summed and the tail is the Euler–Maclaurin
/// expansion, exact to double precision at this cut-off.
const ZETA_EXACT_TERMS: u64 = 1024;

/// How keys are drawn from `0..n`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyChoice {
    /// Every index equally likely.
    Uniform,
    /// Index i (rank i) has probability proportional to 1 / (i + 1)^theta:
    /// index 0 is the hottest, the hot rows are the first ones loaded.
    /// `theta` must be within [0, 1); YCSB uses 0.99.
    Zipfian { theta: f64 },
    /// The zipfian rank hashed (64-bit FNV-1a of its 8 little-endian bytes)
    /// modulo n, as YCSB's `ScrambledZipfianGenerator`: the same skew, but the
    /// hot indices are spread over the table. Distinct ranks can hash to the
    /// same index, so some indices are never chosen and a few collect more than
    /// one rank's share.
    ScrambledZipfian { theta: f64 },
}

impl KeyChoice {
    /// Zipfian with YCSB's θ = 0.99.
    pub const fn zipfian_default() -> Self {
        KeyChoice::Zipfian { theta: DEFAULT_THETA }
    }

    /// Scrambled zipfian with YCSB's θ = 0.99.
    pub const fn scrambled_zipfian_default() -> Self {
        KeyChoice::ScrambledZipfian { theta: DEFAULT_THETA }
    }
}

/// Picks indices in `0..n` by a [`KeyChoice`]; deterministic per seed.
///
/// Zipfian indices follow Gray et al., "Quickly generating billion-record
/// synthetic databases" (SIGMOD 1994), as YCSB's `ZipfianGenerator` does:
/// zeta(n, θ) is computed once in [`KeyPicker::new`], then each sample costs
/// one uniform draw and one `powf`. The method is exact for ranks 0 and 1 and
/// approximates the rest (at θ = 0.99 and n = 10^6, ranks 2 and 3 come up about
/// 19 % and 13 % more often than an exact zipfian's, ranks from 10 on within
/// a few percent). Beyond 1024 items zeta(n, θ) is not summed term by term
/// (YCSB does) but by its Euler–Maclaurin expansion, so `new` is O(1) even for
/// billions of keys.
#[derive(Debug, Clone)]
pub struct KeyPicker {
    n: u64,
    choice: KeyChoice,
    rng: Xoshiro256PlusPlus,
    zipf: Zipf,
}

/// Constants of Gray et al.'s method for n items and exponent θ.
#[derive(Debug, Clone, Copy)]
struct Zipf {
    n: f64,
    zeta_n: f64,
    /// 1 + 0.5^θ: u·zeta(n) below it (and at least 1) means rank 1.
    rank1_bound: f64,
    alpha: f64,
    eta: f64,
}

impl Zipf {
    fn new(n: u64, theta: f64) -> Self {
        let zeta_n = zeta(n, theta);
        let zeta_2 = zeta(2, theta);
        let nf = n as f64;
        // For n <= 2 every sample is rank 0 or 1 and eta is never used (its
        // formula would divide by zero at n = 2).
        let eta = if n > 2 { (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n) } else { 0.0 };
        Zipf { n: nf, zeta_n, rank1_bound: 1.0 + 0.5f64.powf(theta), alpha: 1.0 / (1.0 - theta), eta }
    }

    /// A rank in `0..n`; `u` is uniform in [0, 1).
    fn rank(&self, u: f64, n: u64) -> u64 {
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.rank1_bound {
            return 1;
        }
        // `as` saturates (and maps NaN to 0); the `min` guards u near 1, where
        // the formula reaches n itself.
        let r = (self.n * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(n - 1)
    }
}

impl KeyPicker {
    /// A picker over `0..n`. Errors if `n` is 0 or a zipfian `theta` is not
    /// within [0, 1). Zipfian pickers precompute zeta(n, θ) here, summing at
    /// most 1024 terms.
    pub fn new(n: u64, choice: KeyChoice, seed: u64) -> Result<Self, WorkloadError> {
        if n == 0 {
            return Err(WorkloadError::EmptyKeySpace);
        }
        let theta = match choice {
            KeyChoice::Uniform => 0.0,
            KeyChoice::Zipfian { theta } | KeyChoice::ScrambledZipfian { theta } => theta,
        };
        if !(theta.is_finite() && (0.0..1.0).contains(&theta)) {
            return Err(WorkloadError::InvalidTheta(theta));
        }
        let zipf = match choice {
            // Unused for uniform picking; θ = 0 keeps it well defined and O(1).
            KeyChoice::Uniform => Zipf::new(n.min(2), 0.0),
            _ => Zipf::new(n, theta),
        };
        Ok(KeyPicker { n, choice, rng: crate::seeded(seed, STREAM), zipf })
    }

    /// The size of the key space: every index is below it.
    pub fn n(&self) -> u64 {
        self.n
    }

    pub fn choice(&self) -> KeyChoice {
        self.choice
    }

    /// The next index, in `0..n`.
    #[allow(clippy::should_implement_trait)] // Infallible: an `Option` would only be noise.
    pub fn next(&mut self) -> u64 {
        match self.choice {
            KeyChoice::Uniform => self.rng.random_range(0..self.n),
            KeyChoice::Zipfian { .. } => self.zipf.rank(self.rng.random(), self.n),
            KeyChoice::ScrambledZipfian { .. } => fnv1a64(self.zipf.rank(self.rng.random(), self.n)) % self.n,
        }
    }

    /// `k` distinct indices in `0..n`, in the order they were drawn (for
    /// "update k tuples" steps). Errors if `k > n`.
    ///
    /// Indices are drawn with [`KeyPicker::next`], skipping repeats. Once
    /// repeats stall progress (fewer than 1 in 16 draws gives a new index, over
    /// a window of 1024 draws: a skewed choice with `k` a large share of `n`),
    /// the remaining indices are picked uniformly among those not yet chosen.
    /// For [`KeyChoice::Uniform`] the result is therefore always a uniform
    /// random k-subset; for zipfian choices it favours the hot indices, and is
    /// uniform in the cold tail when the fallback kicks in.
    pub fn distinct(&mut self, k: u64) -> Result<Vec<u64>, WorkloadError> {
        const WINDOW: u32 = 1024;
        const MIN_NEW_PER_WINDOW: u32 = WINDOW / 16;
        if k > self.n {
            return Err(WorkloadError::TooManyDistinct { requested: k, n: self.n });
        }
        // k <= n, and k indices are about to be held in memory.
        let k_len = usize::try_from(k).expect("k distinct u64 indices must fit in memory");
        let mut seen = Seen::new(self.n, k_len);
        let mut out = Vec::with_capacity(k_len);
        let (mut draws, mut new) = (0u32, 0u32);
        while out.len() < k_len {
            let x = self.next();
            if seen.insert(x) {
                out.push(x);
                new += 1;
            }
            draws += 1;
            if draws == WINDOW {
                if new < MIN_NEW_PER_WINDOW {
                    self.fill_uniform(k_len, &mut seen, &mut out);
                    break;
                }
                (draws, new) = (0, 0);
            }
        }
        Ok(out)
    }

    /// Tops `out` up to `k` indices chosen uniformly among those not `seen`.
    fn fill_uniform(&mut self, k: usize, seen: &mut Seen, out: &mut Vec<u64>) {
        if k as u64 <= self.n / 2 {
            // At least half the indices stay free: rejection needs < 2 draws each.
            while out.len() < k {
                let x = self.rng.random_range(0..self.n);
                if seen.insert(x) {
                    out.push(x);
                }
            }
        } else {
            // A partial Fisher–Yates shuffle of the free indices.
            let mut free: Vec<u64> = (0..self.n).filter(|&x| !seen.contains(x)).collect();
            for i in 0..k - out.len() {
                let j = self.rng.random_range(i..free.len());
                free.swap(i, j);
                out.push(free[i]);
            }
        }
    }
}

/// The indices [`KeyPicker::distinct`] has chosen: a bitmap over `0..n` when
/// that is not much larger than the k indices themselves, else a hash set.
enum Seen {
    Bits(Vec<u64>),
    Set(HashSet<u64>),
}

impl Seen {
    fn new(n: u64, k: usize) -> Self {
        let words = n.div_ceil(64);
        if words <= 4 * k as u64 + 1024 {
            Seen::Bits(vec![0; words as usize])
        } else {
            Seen::Set(HashSet::with_capacity(k))
        }
    }

    /// Adds `x`; `true` if it was not there yet.
    fn insert(&mut self, x: u64) -> bool {
        match self {
            Seen::Bits(bits) => {
                let (word, bit) = (&mut bits[(x / 64) as usize], 1u64 << (x % 64));
                let new = *word & bit == 0;
                *word |= bit;
                new
            }
            Seen::Set(set) => set.insert(x),
        }
    }

    fn contains(&self, x: u64) -> bool {
        match self {
            Seen::Bits(bits) => bits[(x / 64) as usize] & (1u64 << (x % 64)) != 0,
            Seen::Set(set) => set.contains(&x),
        }
    }
}

/// 64-bit FNV-1a of `x`'s little-endian bytes (YCSB's `Utils.fnvhash64`,
/// without its final `abs` of the signed value).
fn fnv1a64(x: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    x.to_le_bytes().iter().fold(OFFSET_BASIS, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// zeta(n, θ) = Σ_{i=1..n} 1 / i^θ, for 0 <= θ < 1.
fn zeta(n: u64, theta: f64) -> f64 {
    if n <= ZETA_EXACT_TERMS {
        return zeta_direct(n, theta);
    }
    // Σ_{i=1}^{m-1} f(i) plus the Euler–Maclaurin expansion of Σ_{i=m}^{n} f(i)
    // with f(x) = x^-θ, up to the B6 term; the remainder is below 1e-25 at m = 1024.
    let m = ZETA_EXACT_TERMS as f64;
    let nf = n as f64;
    let s = 1.0 - theta;
    let f = |x: f64| x.powf(-theta);
    // The odd derivatives f', f''' and f^(5).
    let c1 = -theta;
    let c3 = c1 * (theta + 1.0) * (theta + 2.0);
    let c5 = c3 * (theta + 3.0) * (theta + 4.0);
    let d = |c: f64, order: f64, x: f64| c * x.powf(-theta - order);
    // ∫_m^n x^-θ dx = (n^s - m^s) / s, written to stay accurate for θ near 1.
    let integral = m.powf(s) * (s * (nf / m).ln()).exp_m1() / s;
    zeta_direct(ZETA_EXACT_TERMS - 1, theta) + integral + (f(m) + f(nf)) / 2.0 + (d(c1, 1.0, nf) - d(c1, 1.0, m)) / 12.0
        - (d(c3, 3.0, nf) - d(c3, 3.0, m)) / 720.0
        + (d(c5, 5.0, nf) - d(c5, 5.0, m)) / 30240.0
}

fn zeta_direct(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| (i as f64).powf(-theta)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeta_expansion_matches_direct_sum() {
        for theta in [0.0, 0.2, 0.5, 0.8, 0.99, 0.999] {
            for n in [ZETA_EXACT_TERMS + 1, 5000, 123_457, 2_000_000] {
                let (fast, slow) = (zeta(n, theta), zeta_direct(n, theta));
                let rel = ((fast - slow) / slow).abs();
                assert!(rel < 1e-12, "theta {theta}, n {n}: {fast} vs {slow} (rel {rel:e})");
            }
        }
    }

    #[test]
    fn zeta_matches_known_values() {
        // YCSB's ScrambledZipfianGenerator constant: zeta(10^10, 0.99).
        let z = zeta(10_000_000_000, 0.99);
        assert!((z - 26.469_028_201_783_02).abs() < 1e-6, "{z}");
        assert_eq!(zeta(1, 0.99), 1.0);
        assert_eq!(zeta(3000, 0.0), 3000.0);
    }

    #[test]
    fn fnv1a64_known_value() {
        // FNV-1a 64 of eight zero bytes.
        assert_eq!(fnv1a64(0), 0xa8c7_f832_281a_39c5);
    }
}
