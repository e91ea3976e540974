//! Monotone searches over doubles that stop at machine precision.
//!
//! For non-negative doubles the bit pattern is ordered like the value, so bisecting the
//! integer `to_bits` range reaches two adjacent doubles after at most 64 halvings, whatever
//! the scale of the bracket (a value bisection would need over 1000 steps to separate
//! subnormals).

/// The largest x in [lo, hi] with `ok(x)`, for a predicate that holds on [lo, x*] and fails
/// beyond (monotone). Requires 0 ≤ lo ≤ hi and `ok(lo)`; returns `hi` when `ok(hi)`.
pub(crate) fn largest_where(lo: f64, hi: f64, ok: impl Fn(f64) -> bool) -> f64 {
    debug_assert!(0.0 <= lo && lo <= hi);
    if ok(hi) {
        return hi;
    }
    let (mut good, mut bad) = (lo.to_bits(), hi.to_bits());
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if ok(f64::from_bits(mid)) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    f64::from_bits(good)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_last_double_before_the_threshold() {
        let x = largest_where(0.0, 10.0, |v| v * v <= 2.0);
        assert!(x * x <= 2.0 && x.next_up() * x.next_up() > 2.0);
        assert_eq!(largest_where(0.0, 1.0, |v| v <= 5.0), 1.0);
        let tiny = largest_where(0.0, 1.0, |v| v <= 1e-300);
        assert_eq!(tiny, 1e-300);
    }
}
