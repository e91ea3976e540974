//! The exact discrete Laplace sampler (release-grade).

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;

use super::{NoiseSource, check_scale};
use crate::error::{MechError, Result};

/// The exact discrete Laplace (two-sided geometric) distribution Pr[k] ∝ exp(−|k|/b) on
/// the integers — release-grade. Integer arithmetic only (Canonne, Kamath, Steinke 2020,
/// "The Discrete Gaussian for Differential Privacy", Algorithms 1 and 2).
///
/// The scale b is represented exactly as t/s with integers t and s (s a power of two), rounded
/// up when b needs more than 64 fractional bits: more noise, never less. Scales from 2^74 on
/// are refused ([`MechError::BadScale`]).
///
/// Draws are exact integers, returned as f64 (exact for |k| ≤ 2^53). Added to counts by
/// [`crate::LaplaceMechanism`], counts are limited to ±[`crate::MAX_EXACT_COUNT`] (2^52),
/// scales to [`crate::MAX_EXACT_SCALE`] (2^46) and draws to ±2^52, so that count + noise is
/// exact in f64.
///
/// # Proof definition
/// `laplace(b)` returns Y with Pr[Y = k] = (1 − e^{−1/b'})/(1 + e^{−1/b'})·e^{−|k|/b'} exactly,
/// b' = t/s ≥ b as above, given uniform bits from `rng`: every random choice is an integer
/// comparison against a uniform integer or a uniform fraction, never a float.
///
/// # Runtime
/// Expected O(1) work: for b ≥ 1 about five 32-bit words from the RNG per draw (about two
/// more when t ≥ 2^32, e.g. for a b with a long mantissa, whose uniform U below t takes a
/// 64-bit word), and up to twice as many for b → 0 (the zero rejection of Algorithm 2). Exactness-preserving speed-ups over a
/// literal transcription: uniform integers by Lemire's method in the narrowest word, the first
/// two Bernoulli trials of the acceptance test from one draw, Bernoulli(num/d) with d ≥ 2^32
/// by a lazy comparison of 32-bit words, buffered bits for fair coins, and the scale's t/s
/// cached between calls.
///
/// Not `Clone`: a copy would repeat the same noise.
///
/// ```
/// use tpl_mechanisms::{DiscreteLaplace, NoiseSource};
/// let mut noise = DiscreteLaplace::from_os_rng();
/// let x = noise.laplace(2.5)?;
/// assert_eq!(x, x.round()); // an exact integer
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
#[derive(Debug)]
pub struct DiscreteLaplace<R> {
    rng: R,
    /// Unused random bits for fair coins: the low `coin_count` bits of `coin_bits`.
    coin_bits: u32,
    coin_count: u32,
    /// The last scale asked for (its bits) with its exact form t/s: a release asks for the
    /// same scale once per cell.
    last: Option<(u64, u128, u128)>,
}

impl DiscreteLaplace<ChaCha12Rng> {
    /// The release-grade sampler: ChaCha12 seeded from the operating system's randomness.
    pub fn from_os_rng() -> Self {
        Self::new(ChaCha12Rng::from_os_rng())
    }

    /// A **reproducible** sampler: ChaCha12 keyed by `seed` (the same draws for the same seed,
    /// on every platform and version of this crate). For tests and experiments: anyone who
    /// knows the seed can subtract the noise, so a seeded release is not private.
    pub fn seeded(seed: u64) -> Self {
        Self::new(ChaCha12Rng::seed_from_u64(seed))
    }
}

impl<R: RngCore> DiscreteLaplace<R> {
    /// A sampler drawing from `rng` (a cryptographically secure generator for releases).
    pub fn new(rng: R) -> Self {
        Self { rng, coin_bits: 0, coin_count: 0, last: None }
    }

    /// One draw with scale t/s (CKS20 Algorithm 2). s = 2^k, so X/s rounded down is X >> k.
    fn sample(&mut self, t: u128, s: u128) -> i128 {
        let shift = s.trailing_zeros();
        if let Ok(t) = u64::try_from(t)
            && shift < 64
        {
            return self.sample_u64(t, shift);
        }
        loop {
            // U uniform in [0, t), kept with probability exp(−U/t).
            let u = below(&mut self.rng, t);
            if !bernoulli_exp(&mut self.rng, u, t) {
                continue;
            }
            // V ~ Geometric(exp(−1)): X = U + t·V is geometric with ratio exp(−1/t).
            let mut v: u128 = 0;
            while self.bernoulli_exp_minus_one() {
                v += 1;
            }
            // t < 2^74 (dyadic_at_least), so t·V overflows only for V ≥ 2^54, an event of
            // probability exp(−2^54); saturation keeps even that defined.
            let x = u.saturating_add(t.saturating_mul(v));
            let y = i128::try_from(x >> shift).unwrap_or(i128::MAX);
            let negative = self.coin();
            if negative && y == 0 {
                continue;
            }
            return if negative { -y } else { y };
        }
    }

    /// [`Self::sample`] for t < 2^64 and s < 2^64 (every scale in [2^−11, 2^64), and smaller
    /// ones whose reduced denominator is below 2^64) in 64-bit arithmetic: the same steps,
    /// with the acceptance test's first two trials from one draw ([`bernoulli_exp64`]).
    fn sample_u64(&mut self, t: u64, shift: u32) -> i128 {
        loop {
            let u = below64(&mut self.rng, t);
            if !bernoulli_exp64(&mut self.rng, u, t) {
                continue;
            }
            let mut v: u64 = 0;
            while self.bernoulli_exp_minus_one() {
                v += 1;
            }
            // < 2^127 unless V ≥ 2^63, which has probability exp(−2^63).
            let x = u128::from(u) + u128::from(t) * u128::from(v);
            let y = i128::try_from(x >> shift).unwrap_or(i128::MAX);
            let negative = self.coin();
            if negative && y == 0 {
                continue;
            }
            return if negative { -y } else { y };
        }
    }

    /// A fair coin: one bit of a buffered 32-bit word (32 coins per draw from the RNG).
    #[inline]
    fn coin(&mut self) -> bool {
        if self.coin_count == 0 {
            self.coin_bits = self.rng.next_u32();
            self.coin_count = 32;
        }
        let bit = self.coin_bits & 1 == 1;
        self.coin_bits >>= 1;
        self.coin_count -= 1;
        bit
    }

    /// Bernoulli(exp(−1)): [`bernoulli_exp`] with γ = 1, whose first trial Bernoulli(1/1) is
    /// certain and whose second, Bernoulli(1/2), is a [`Self::coin`].
    #[inline]
    fn bernoulli_exp_minus_one(&mut self) -> bool {
        if !self.coin() {
            return false; // K = 2
        }
        let mut k: u32 = 3;
        // Reaching k has probability 1/(k − 1)!: k cannot come near u32::MAX.
        while below_u32(|| self.rng.next_u32(), k) == 0 {
            k += 1;
        }
        k % 2 == 1
    }
}

impl<R: RngCore> NoiseSource for DiscreteLaplace<R> {
    fn laplace(&mut self, scale: f64) -> Result<f64> {
        check_scale(scale)?;
        let (t, s) = match self.last {
            Some((bits, t, s)) if bits == scale.to_bits() => (t, s),
            _ => {
                let (t, s) = dyadic_at_least(scale).ok_or(MechError::BadScale(scale))?;
                self.last = Some((scale.to_bits(), t, s));
                (t, s)
            }
        };
        let y = self.sample(t, s);
        // Exact for |y| ≤ 2^53. An i64 converts in one instruction, an i128 through a
        // library call (kept out of line so that the compiler does not merge the two).
        Ok(match i64::try_from(y) {
            Ok(y) => y as f64,
            Err(_) => wide_to_f64(y),
        })
    }

    fn integer_valued(&self) -> bool {
        true
    }
}

/// `y as f64` for the rare |y| ≥ 2^63 (rounded to nearest; only scales ≳ 2^57 get there).
#[inline(never)]
fn wide_to_f64(y: i128) -> f64 {
    y as f64
}

/// Integers (t, s), s = 2^k with k ≤ 64, such that t/s ≥ x with equality when x has at most
/// 64 fractional bits, and t < 2^74; `None` when x ≥ 2^74 (such a scale would let t·V and the
/// output overflow the sampler's 128-bit integers).
pub(crate) fn dyadic_at_least(x: f64) -> Option<(u128, u128)> {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let (mant, e) = if exp == 0 {
        (bits & ((1 << 52) - 1), -1074)
    } else {
        ((bits & ((1 << 52) - 1)) | (1 << 52), exp - 1075)
    };
    // x = mant·2^e with 2^52 ≤ mant < 2^53 (x normal): x < 2^74 ⇔ e ≤ 21.
    let (t, s): (u128, u128) = if e >= 0 {
        if e > 21 {
            return None;
        }
        ((mant as u128) << e, 1)
    } else if e >= -64 {
        (mant as u128, 1u128 << (-e))
    } else {
        // Too many fractional bits: round up to a multiple of 2^−64.
        let shift = (-e - 64) as u32;
        let t = if shift >= 64 { 1 } else { (mant as u128).div_ceil(1u128 << shift) };
        (t.max(1), 1u128 << 64)
    };
    // Reduce t/s: strip the common factors of two (s is a power of two, t ≥ 1).
    let common = t.trailing_zeros().min(s.trailing_zeros());
    Some((t >> common, s >> common))
}

/// Uniform in {0, …, n − 1} by Lemire's multiply-and-reject method ("Fast random integer
/// generation in an interval", ACM TOMACS 2019): the high word of x·n for a uniform W-bit
/// word x, rejecting the 2^W mod n values of x whose low word falls below 2^W mod n, so that
/// every output keeps exactly ⌊2^W/n⌋ preimages. Exact, unlike rand 0.9's `random_range`,
/// which without rand's `unbiased` feature uses a method with a small bias. `n ≥ 1`.
macro_rules! lemire {
    ($name:ident, $word:ty, $wide:ty) => {
        fn $name(mut next: impl FnMut() -> $word, n: $word) -> $word {
            let mut m = <$wide>::from(next()) * <$wide>::from(n);
            if (m as $word) < n {
                // 2^W mod n, computed in W bits as (2^W − n) mod n.
                let threshold = n.wrapping_neg() % n;
                while (m as $word) < threshold {
                    m = <$wide>::from(next()) * <$wide>::from(n);
                }
            }
            (m >> <$word>::BITS) as $word
        }
    };
}

lemire!(below_u32, u32, u64);
lemire!(below_u64, u64, u128);

/// Uniform in {0, …, n − 1}, n ≥ 1, exactly: the narrowest word that holds n (a 32-bit draw
/// costs half a 64-bit one), no draw at all for n = 1, and plain rejection below the next
/// power of two for n > 2^64.
#[inline(always)]
fn below<R: RngCore>(rng: &mut R, n: u128) -> u128 {
    if n <= u128::from(u32::MAX) {
        if n <= 1 { 0 } else { u128::from(below_u32(|| rng.next_u32(), n as u32)) }
    } else {
        below_wide(rng, n)
    }
}

/// [`below`] for n < 2^64, with the same draws.
#[inline(always)]
fn below64<R: RngCore>(rng: &mut R, n: u64) -> u64 {
    if n <= u64::from(u32::MAX) {
        if n <= 1 { 0 } else { u64::from(below_u32(|| rng.next_u32(), n as u32)) }
    } else {
        below_u64(|| rng.next_u64(), n)
    }
}

/// [`below`] for n > 2^32.
#[inline(never)]
fn below_wide<R: RngCore>(rng: &mut R, n: u128) -> u128 {
    if n <= u128::from(u64::MAX) {
        u128::from(below_u64(|| rng.next_u64(), n as u64))
    } else {
        let mask = u128::MAX >> (n - 1).leading_zeros();
        loop {
            let x = ((u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64())) & mask;
            if x < n {
                return x;
            }
        }
    }
}

/// Bernoulli(exp(−num/den)) for 0 ≤ num ≤ den (CKS20 Algorithm 1): the first K with
/// Bernoulli(γ/K) = 0 is odd with probability exp(−γ).
#[inline]
fn bernoulli_exp<R: RngCore>(rng: &mut R, num: u128, den: u128) -> bool {
    let mut k: u128 = 1;
    loop {
        // Bernoulli(num/(den·k)); num = den·k (γ = 1 at k = 1) is certain and needs no draw.
        let hit = match den.checked_mul(k) {
            Some(d) => num >= d || below(rng, d) < num,
            // Exact without the product: Bernoulli(num/den) and Bernoulli(1/k).
            None => below(rng, den) < num && below(rng, k) == 0,
        };
        if !hit {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// The largest den for which 2·den² fits in a u64.
const FUSED_MAX_DEN: u64 = 3_037_000_499;

/// [`bernoulli_exp`] for 64-bit num and den, its first two trials decided by one draw: for W
/// uniform in [0, 2·den²), trial 1 (Bernoulli(γ)) fails iff W ≥ 2·num·den, and trials 1 and 2
/// (Bernoulli(γ/2)) both succeed iff W < num², so K = 1, K = 2 and K > 2 have exactly the
/// probabilities 1 − γ, γ − γ²/2 and γ²/2 of two independent trials. Later trials are fresh
/// draws, independent of W.
#[inline]
fn bernoulli_exp64<R: RngCore>(rng: &mut R, num: u64, den: u64) -> bool {
    let mut k: u64 = 1;
    if den <= FUSED_MAX_DEN {
        if num == 0 {
            return true; // Bernoulli(0) fails at once: K = 1
        }
        if let Some(result) = first_two_trials(below64(rng, 2 * den * den), num, den) {
            return result;
        }
        k = 3;
    }
    loop {
        let hit = match den.checked_mul(k) {
            Some(d) if d <= u64::from(u32::MAX) => num >= d || below64(rng, d) < num,
            Some(d) => bernoulli_ratio(rng, num, d),
            None => below(rng, u128::from(den)) < u128::from(num) && below(rng, u128::from(k)) == 0,
        };
        if !hit {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// The outcome of [`bernoulli_exp64`] decided by its first two trials, from W uniform in
/// [0, 2·den²): `Some(true)` for K = 1 (W ≥ 2·num·den), `Some(false)` for K = 2
/// (num² ≤ W < 2·num·den), `None` for K > 2 (W < num²). Needs num ≤ den ≤ [`FUSED_MAX_DEN`].
#[inline(always)]
fn first_two_trials(w: u64, num: u64, den: u64) -> Option<bool> {
    if w >= num * num { Some(w >= 2 * num * den) } else { None }
}

/// Bernoulli(num/d), num ≤ d < 2^64, as "F < num/d" for F uniform in [0, 1) whose bits are
/// drawn 32 at a time, only as far as needed: with the next word w, F ∈ [w, w + 1)/2^32
/// decides unless num·2^32 falls strictly inside (w·d, (w + 1)·d), which happens with
/// probability < 2^−32 and leaves the same question about the remaining bits with numerator
/// num·2^32 − w·d < d. Exact, and one 32-bit word where a uniform integer below d would need
/// a 64-bit one.
#[inline]
fn bernoulli_ratio<R: RngCore>(rng: &mut R, num: u64, d: u64) -> bool {
    let d = u128::from(d);
    let mut r = u128::from(num);
    loop {
        let lhs = u128::from(rng.next_u32()) * d;
        let rhs = r << 32;
        if lhs + d <= rhs {
            return true;
        }
        if lhs >= rhs {
            return false;
        }
        r = rhs - lhs;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    #[test]
    fn dyadic_representation_is_exact_or_above() {
        assert_eq!(dyadic_at_least(20.0), Some((20, 1)));
        assert_eq!(dyadic_at_least(2.5), Some((5, 2)));
        let (t, s) = dyadic_at_least(0.1).unwrap();
        assert_eq!(t as f64 / s as f64, 0.1);
        let tiny = 1e-30;
        let (t, s) = dyadic_at_least(tiny).unwrap();
        assert!(t as f64 / s as f64 >= tiny);
        let two_74 = 2f64.powi(74);
        assert_eq!(dyadic_at_least(two_74.next_down()), Some(((1u128 << 74) - (1 << 21), 1)));
        assert_eq!(dyadic_at_least(two_74), None);
        assert_eq!(dyadic_at_least(1e30), None);
        assert_eq!(dyadic_at_least(1e40), None);
    }

    lemire!(below_u8, u8, u16);

    /// Lemire's method, exhaustively on 8-bit words (the same code as the 32- and 64-bit
    /// instances): for every n, the accepted words map onto 0..n exactly ⌊256/n⌋ times each
    /// and exactly 256 mod n words are rejected.
    #[test]
    fn lemire_is_exact_on_every_8_bit_range() {
        for n in 1..=255u8 {
            let mut hits = vec![0u32; usize::from(n)];
            let mut rejected = 0u32;
            for x in 0..=255u8 {
                let mut calls = 0;
                // 255 is accepted for every n, so a rejected x ends the loop on the second draw.
                let out = below_u8(
                    || {
                        calls += 1;
                        if calls == 1 { x } else { 255 }
                    },
                    n,
                );
                if calls == 1 {
                    hits[usize::from(out)] += 1;
                } else {
                    rejected += 1;
                }
            }
            assert_eq!(rejected, 256 % u32::from(n), "n = {n}");
            assert!(hits.iter().all(|&h| h == 256 / u32::from(n)), "n = {n}: {hits:?}");
        }
    }

    /// The fused first two trials, exhaustively for small den: each outcome is hit by exactly
    /// as many W as its probability requires (1 − γ, γ − γ²/2, γ²/2 of 2·den² values).
    #[test]
    fn first_two_trials_have_exact_probabilities() {
        for den in 1..=12u64 {
            for num in 0..=den {
                let (mut one, mut two, mut more) = (0, 0, 0);
                for w in 0..2 * den * den {
                    match first_two_trials(w, num, den) {
                        Some(true) => one += 1,
                        Some(false) => two += 1,
                        None => more += 1,
                    }
                }
                assert_eq!(one, 2 * den * den - 2 * num * den, "K = 1, {num}/{den}");
                assert_eq!(two, 2 * num * den - num * num, "K = 2, {num}/{den}");
                assert_eq!(more, num * num, "K > 2, {num}/{den}");
            }
        }
        assert!((2 * FUSED_MAX_DEN).checked_mul(FUSED_MAX_DEN).is_some());
        assert!((2 * (FUSED_MAX_DEN + 1)).checked_mul(FUSED_MAX_DEN + 1).is_none());
    }

    /// The lazy comparison: a first word that leaves the question open draws a second one,
    /// which then decides on the remaining numerator.
    #[test]
    fn bernoulli_ratio_refines_ambiguous_words() {
        let d = (1u64 << 32) + 1; // 1/d lies inside [0, 1)/2^32: the word 0 is ambiguous
        let mut rng = Words(VecDeque::from([0, 0]));
        assert!(bernoulli_ratio(&mut rng, 1, d)); // F < 2^-64 < 1/d
        assert!(rng.0.is_empty());
        // Word 2^32 − 1 leaves the remaining numerator 1 open again; word 1 then says no.
        let mut rng = Words(VecDeque::from([0, u64::from(u32::MAX), 1]));
        assert!(!bernoulli_ratio(&mut rng, 1, d));
        assert!(rng.0.is_empty());
        let mut rng = Words(VecDeque::from([1]));
        assert!(!bernoulli_ratio(&mut rng, 1, d)); // F ≥ 2^-32 > 1/d: decided by one word
        let mut rng = Words(VecDeque::from([u64::from(u32::MAX)]));
        assert!(bernoulli_ratio(&mut rng, d, d)); // num = d: certain
    }

    /// A source of scripted 32/64-bit words.
    struct Words(VecDeque<u64>);

    impl RngCore for Words {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0.pop_front().expect("script long enough")
        }
        fn fill_bytes(&mut self, _: &mut [u8]) {
            unimplemented!("not used by the samplers")
        }
    }

    /// Regression: the word 0 is the one 32-bit word that `below(3)` must reject
    /// (2^32 mod 3 = 1). rand 0.9's default `random_range` returns 0 for it instead, a bias.
    #[test]
    fn below_rejects_the_biased_word() {
        let mut rng = Words(VecDeque::from([0, u64::from(u32::MAX)]));
        assert_eq!(below(&mut rng, 3), 2);
        assert!(rng.0.is_empty(), "the biased word was not rejected");
        // 64-bit range: 2^64 mod (2^33 + 1) = 3·2^31 + 1, so the word 0 is rejected again.
        let mut rng = Words(VecDeque::from([0, u64::MAX]));
        assert_eq!(below(&mut rng, (1 << 33) + 1), 1 << 33);
        assert!(rng.0.is_empty());
        // n = 1 needs no randomness.
        let mut rng = Words(VecDeque::new());
        assert_eq!(below(&mut rng, 1), 0);
        // Above 2^64: masked rejection, two words per try.
        let n = (1u128 << 64) + 5;
        let mut rng = Words(VecDeque::from([u64::MAX, u64::MAX, 1, 4]));
        assert_eq!(below(&mut rng, n), (1 << 64) + 4);
    }
}
