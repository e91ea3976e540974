//! Small log-space helpers for the solvers of docs/map.md §3–4: never form e^a, no silent NaN.

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

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
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
