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

/// The smallest k in [0, `max_k`] with `ok(k)`, for a predicate that fails below some k* and
/// holds from it on (monotone), by galloping k = 0, 1, 2, 4, … and then bisecting: about
/// 2·log₂ k* evaluations, one when `ok(0)`. `None` when even `ok(max_k)` fails.
pub(crate) fn smallest_where(max_k: u64, mut ok: impl FnMut(u64) -> bool) -> Option<u64> {
    if ok(0) {
        return Some(0);
    }
    let (mut bad, mut good) = (0u64, 1u64.min(max_k));
    loop {
        if good > bad && ok(good) {
            break;
        }
        if good >= max_k {
            return None;
        }
        bad = good;
        good = good.saturating_mul(2).min(max_k);
    }
    while good - bad > 1 {
        let mid = bad + (good - bad) / 2;
        if ok(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// `x ≥ 0` lowered by `k` ulps (0 once k reaches its bit pattern).
pub(crate) fn ulps_below(x: f64, k: u64) -> f64 {
    f64::from_bits(x.to_bits().saturating_sub(k))
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

    #[test]
    fn smallest_where_gallops_then_bisects() {
        assert_eq!(smallest_where(100, |_| true), Some(0));
        assert_eq!(smallest_where(100, |k| k >= 37), Some(37));
        assert_eq!(smallest_where(100, |k| k >= 100), Some(100));
        assert_eq!(smallest_where(100, |_| false), None);
        assert_eq!(smallest_where(u64::MAX, |k| k >= 1 << 60), Some(1 << 60));
        assert_eq!(ulps_below(1.0, 1), 1.0f64.next_down());
        assert_eq!(ulps_below(1e-300, u64::MAX), 0.0);
    }
}
