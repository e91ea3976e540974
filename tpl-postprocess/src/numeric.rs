//! Small log-space helpers for the solvers of [docs/map.md](tpl_core::guide::map) §3–4: never form
//! e^a, no silent NaN.

use crate::widest::at_widest;

/// ln of a non-negative number, with ln 0 = −∞ spelled out (the caller relies on it).
pub(crate) fn ln_or_neg_inf(v: f64) -> f64 {
    if v > 0.0 { v.ln() } else { f64::NEG_INFINITY }
}

/// median(r, lo, hi) for lo ≤ hi, i.e. r clamped to [lo, hi]. `hi` may be +∞ (never NaN).
#[inline]
pub(crate) fn clamp_between(r: f64, lo: f64, hi: f64) -> f64 {
    // Not f64::clamp: that panics when lo > hi, which rounding could make happen by an ulp.
    if r < lo {
        lo
    } else if r > hi {
        hi
    } else {
        r
    }
}

/// Sum with four independent accumulators: the probes of the breakpoint search are
/// latency-bound on one serial chain of additions otherwise. Same accuracy class as a plain
/// sum (every term is non-negative where it matters).
#[inline]
pub(crate) fn sum4(values: impl Iterator<Item = f64>) -> f64 {
    let mut acc = [0.0f64; 4];
    for (k, v) in values.enumerate() {
        acc[k & 3] += v;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// ln(k!) for an integer k ≥ 0 (= lgamma(k + 1), which std does not offer on stable).
///
/// Exact factorials (as f64) up to 20!, then Stirling's series with four correction terms,
/// whose truncation error at k = 21 is below 1e-15 absolute (2e-17 relative).
pub(crate) fn ln_factorial(k: u64) -> f64 {
    const SMALL: u64 = 20;
    if k <= SMALL {
        let mut f: u64 = 1;
        for i in 2..=k {
            f *= i;
        }
        return (f as f64).ln();
    }
    let x = k as f64;
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    // ln Γ(x + 1) = x ln x − x + ½ ln(2πx) + 1/(12x) − 1/(360x³) + 1/(1260x⁵) − 1/(1680x⁷) + …
    let series = inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 / 1680.0)));
    x * x.ln() - x + 0.5 * (std::f64::consts::TAU * x).ln() + series
}

/// Maps an f64 to an i64 with the same order (−0 just below +0): bisection over floats in
/// at most 64 halvings, whatever the magnitudes.
pub(crate) fn ordered(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    if b < 0 { b ^ i64::MAX } else { b }
}

/// Sorts `items` by their keys, stably (items with equal keys keep their order): a
/// least-significant-digit radix sort on the 22 highest bits in which the keys differ (two
/// passes of 11 bits), then one pass of insertion sort for the items that agree on those
/// bits (the library's stable sort when they are many). O(n) unless many keys agree on
/// their 22 highest varying bits; a plain stable sort below 64 items (and from 2³² on).
pub(crate) fn sort_by_key_stable(items: &mut Vec<(u64, u32)>) {
    const SMALL: usize = 64;
    const DIGITS: u32 = 2;
    const BITS: u32 = 11;
    let n = items.len();
    if n < SMALL || u32::try_from(n).is_err() {
        items.sort_by_key(|e| e.0);
        return;
    }
    let first = items[0].0;
    let varying = items.iter().fold(0, |d, e| d | (e.0 ^ first));
    if varying == 0 {
        return;
    }
    let low = (63 - varying.leading_zeros()).saturating_sub(DIGITS * BITS - 1);
    let digit = |key: u64, d: u32| ((key >> (low + BITS * d)) & ((1 << BITS) - 1)) as usize;
    // Counts fit in u32 (n < 2³²).
    let mut counts = [[0u32; 1 << BITS]; DIGITS as usize];
    for e in items.iter() {
        for (d, c) in (0..DIGITS).zip(counts.iter_mut()) {
            c[digit(e.0, d)] += 1;
        }
    }
    let mut scratch = vec![(0u64, 0u32); n];
    for (d, c) in (0..DIGITS).zip(counts.iter_mut()) {
        let mut start = 0;
        for v in c.iter_mut() {
            let count = *v;
            *v = start;
            start += count;
        }
        for &e in items.iter() {
            let slot = &mut c[digit(e.0, d)];
            scratch[*slot as usize] = e;
            *slot += 1;
        }
        std::mem::swap(items, &mut scratch);
    }
    // Only items that agree on the sorted bits can be out of order now: one pass of
    // insertion sort finishes, unless they are many (then the library's stable sort, which
    // is quick on the nearly sorted array).
    let mut budget = 4 * n;
    for k in 1..n {
        let item = items[k];
        let mut j = k;
        while j > 0 && items[j - 1].0 > item.0 {
            items[j] = items[j - 1];
            j -= 1;
        }
        items[j] = item;
        budget = budget.saturating_sub(k - j);
        if budget == 0 {
            items.sort_by_key(|e| e.0);
            return;
        }
    }
}

/// Inverse of [`ordered`].
pub(crate) fn from_ordered(i: i64) -> f64 {
    let b = if i < 0 { i ^ i64::MAX } else { i };
    f64::from_bits(b as u64)
}

/// v = 2^k·m with m ∈ [√½, √2), for a positive normal v (the exponent split of fdlibm's
/// log): (k, m).
#[inline(always)]
pub(crate) fn exponent_split(v: f64) -> (i64, f64) {
    let (biased, m) = biased_exponent_split(v);
    (biased as i64 - 1023, m)
}

/// [`exponent_split`] with k + 1023 in place of k (for sums of exponents that subtract the
/// bias once).
#[inline(always)]
pub(crate) fn biased_exponent_split(v: f64) -> (u64, f64) {
    const SQRT_HALF: u64 = 0x3fe6_a09e_667f_3bcd;
    const ONE: u64 = 0x3ff0_0000_0000_0000;
    let shifted = v.to_bits().wrapping_add(ONE - SQRT_HALF);
    let m = f64::from_bits((shifted & 0x000f_ffff_ffff_ffff) + SQRT_HALF);
    (shifted >> 52, m)
}

/// ln 2 in two parts: the high one has 32 bits, so that k·`LN2_HI` is exact for |k| < 2²⁰.
const LN2_HI: f64 = 0.6931471803691238;
/// ln 2 − [`LN2_HI`].
const LN2_LO: f64 = 1.9082149292705877e-10;

/// ln v for v ≥ 0 (ln 0 = −∞) without a branch that stops a loop from vectorising, within
/// 2 ulps of the correctly rounded value (tested against the library's): fdlibm's log —
/// the exponent split v = 2^k·m, s = (m − 1)/(m + 1) and its polynomial of degree 14 in s —
/// with subnormal v scaled by 2⁵⁴ first. For the pooled priors of
/// [docs/map.md](tpl_core::guide::map) §9, where the library's call costs more than the rest of the
/// pooling.
#[inline(always)]
pub(crate) fn ln_vectorised(v: f64) -> f64 {
    const LG: [f64; 7] = [
        0.6666666666666735,
        0.3999999999940942,
        0.2857142874366239,
        0.22222198432149784,
        0.1818357216161805,
        0.15313837699209373,
        0.14798198605116586,
    ];
    let tiny = v < f64::MIN_POSITIVE;
    let scaled = if tiny { v * 18_014_398_509_481_984.0 } else { v };
    let (k, m) = exponent_split(scaled);
    let k = (k - if tiny { 54 } else { 0 }) as f64;
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
    let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
    let hfsq = 0.5 * f * f;
    let ln = k * LN2_HI - ((hfsq - (s * (hfsq + (t1 + t2)) + k * LN2_LO)) - f);
    if v > 0.0 { ln } else { f64::NEG_INFINITY }
}

/// e^x for x ≤ 0 (e^−∞ = 0) without a branch that stops a loop from vectorising, within
/// 2 ulps of the correctly rounded value (tested against the library's; subnormal results
/// rounded once): fdlibm's exp — x = k·ln 2 + r with |r| ≤ ln 2/2, e^r by its rational
/// approximation, then 2^k in two factors so that no intermediate leaves the normal range.
#[inline(always)]
pub(crate) fn exp_vectorised(x: f64) -> f64 {
    const P: [f64; 5] = [
        0.16666666666666602,
        -0.0027777777777015593,
        6.613756321437934e-05,
        -1.6533902205465252e-06,
        4.1381367970572385e-08,
    ];
    const INV_LN2: f64 = std::f64::consts::LOG2_E;
    // Adding and subtracting 1.5·2⁵² rounds to the nearest integer (|x/ln 2| < 2⁵¹).
    const ROUNDER: f64 = 6_755_399_441_055_744.0;
    // Below about −745.13 the result rounds to 0.
    let clamped = if x < -746.0 { -746.0 } else { x };
    let shifted = clamped * INV_LN2 + ROUNDER;
    let kf = shifted - ROUNDER;
    let k = (shifted.to_bits() as i64 - ROUNDER.to_bits() as i64) as i32;
    let hi = clamped - kf * LN2_HI;
    let lo = kf * LN2_LO;
    let r = hi - lo;
    let rr = r * r;
    let c = r - rr * (P[0] + rr * (P[1] + rr * (P[2] + rr * (P[3] + rr * P[4]))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    // k ∈ [−1077, 0]: both halves of 2^k are normal.
    let half = k >> 1;
    let first = f64::from_bits(((half + 1023) as u64) << 52);
    let second = f64::from_bits(((k - half + 1023) as u64) << 52);
    let e = (y * first) * second;
    if x < -746.0 { 0.0 } else { e }
}

at_widest! {
    /// out_i = values_i/divisor (`out` as long as `values`), at the widest vector width
    /// ([`crate::widest`]; a division is correctly rounded at any width, so the bits are
    /// those of the plain loop).
    pub(crate) fn divide(values: &[f64], divisor: f64, out: &mut [f64]) = divide_portable;
}

/// The loop of [`divide`].
#[inline(always)]
fn divide_portable(values: &[f64], divisor: f64, out: &mut [f64]) {
    out.iter_mut().zip(values).for_each(|(o, &v)| *o = v / divisor);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ulps between two positive doubles (or 0 when both are the same infinity or 0).
    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn vectorised_logarithm_is_the_library_one_within_two_ulps() {
        assert_eq!(ln_vectorised(0.0), f64::NEG_INFINITY);
        assert_eq!(ln_vectorised(1.0), 0.0);
        let mut v = 4.9e-324;
        while v < f64::MAX / 2.0 {
            // Steps of about 1.3 %, and at least one ulp among the subnormals.
            let next = (v * 1.013).max(f64::from_bits(v.to_bits() + 1));
            for x in
                [v, v * 1.234_567_890_123, v * std::f64::consts::SQRT_2, v * 1.999_999_999, v * 1.000_000_001]
            {
                let (got, want) = (ln_vectorised(x), x.ln());
                // Both within an ulp of the true value: within 2 of each other.
                assert!(
                    ulps(got.abs(), want.abs()) <= 2 && got.signum() == want.signum(),
                    "ln {x:e}: {got} vs {want}"
                );
            }
            v = next;
        }
    }

    #[test]
    fn vectorised_exponential_is_the_library_one_within_two_ulps() {
        assert_eq!(exp_vectorised(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp_vectorised(0.0), 1.0);
        assert_eq!(exp_vectorised(-0.0), 1.0);
        let mut x = 0.0f64;
        while x > -800.0 {
            for y in [x, x - 1e-3, x - 0.123_456_789, x * 1.000_000_1] {
                let (got, want) = (exp_vectorised(y), y.exp());
                assert!(ulps(got, want) <= 2, "exp {y}: {got:e} vs {want:e}");
            }
            x = x * 1.01 - 1e-9;
        }
    }

    #[test]
    fn ln_factorial_matches_sum_of_logs() {
        let mut acc = 0.0f64;
        for k in 1..=2000u64 {
            acc += (k as f64).ln();
            let got = ln_factorial(k);
            assert!((got - acc).abs() <= 1e-13 * acc.max(1.0), "k = {k}: {got} vs {acc}");
        }
        assert_eq!(ln_factorial(0), 0.0);
        assert_eq!(ln_factorial(1), 0.0);
    }

    #[test]
    fn radix_sort_is_a_stable_sort_by_key() {
        let mut next = tpl_core::test_util::xorshift(0x9e37_79b9_7f4a_7c15);
        // Keys spread over all bits, over few bits (many ties), and keys that agree on their
        // 22 highest varying bits but differ below (the insertion pass gives up).
        let kinds: [&dyn Fn(u64) -> u64; 4] =
            [&|x| x, &|x| (x % 0xffff).wrapping_mul(0x0100_0000_0001), &|x| x % 3, &|x| {
                ((x & 1) << 40) | (x >> 44)
            }];
        for n in [0, 1, 5, 63, 64, 65, 300, 2000] {
            for (kind, key) in kinds.iter().enumerate() {
                let mut items: Vec<(u64, u32)> = (0..n as u32).map(|i| (key(next()), i)).collect();
                let mut want = items.clone();
                want.sort();
                sort_by_key_stable(&mut items);
                assert_eq!(items, want, "n = {n}, keys of kind {kind}");
            }
        }
    }

    #[test]
    fn ordered_is_monotone_and_invertible() {
        let xs = [f64::NEG_INFINITY, -1e300, -1.0, -1e-310, -0.0, 0.0, 1e-310, 1.0, 1e300, f64::INFINITY];
        for w in xs.windows(2) {
            assert!(ordered(w[0]) < ordered(w[1]), "{} vs {}", w[0], w[1]);
        }
        for x in xs {
            assert_eq!(from_ordered(ordered(x)).to_bits(), x.to_bits());
        }
        assert_eq!(ordered(0.0) - ordered(-0.0), 1);
    }
}
