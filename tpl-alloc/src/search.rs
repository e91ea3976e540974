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

/// The largest x in [lo, hi] with g(x) ≤ `target`, for g continuous and non-decreasing,
/// given `g_lo` = g(lo) ≤ target; returns `hi` when g(hi) ≤ target. Like [`largest_where`]
/// it ends at two adjacent doubles (the last that passes and the first that fails, both
/// evaluated), but it steps by regula falsi (the Illinois variant, which halves the value
/// kept at an end chosen twice in a row) as long as that halves the bracket of bit patterns
/// at least every fifth step, and bisects that range otherwise: a few evaluations for a
/// smooth g instead of about 60, never more than five times as many as bisection.
pub(crate) fn largest_at_most(
    lo: f64,
    g_lo: f64,
    hi: f64,
    target: f64,
    mut g: impl FnMut(f64) -> f64,
) -> f64 {
    debug_assert!(0.0 <= lo && lo <= hi && g_lo <= target);
    let g_hi = g(hi);
    if g_hi <= target {
        return hi;
    }
    // (x, g(x) − target): good ≤ 0 < bad (bad may be +∞ or NaN: then bisect).
    let (mut good, mut bad) = ((lo, g_lo - target), (hi, g_hi - target));
    let mut last_kept_bad = None;
    let mut width_mark = hi.to_bits() - lo.to_bits();
    let mut slow_steps = 0;
    while bad.0.to_bits() - good.0.to_bits() > 1 {
        let (gb, bb) = (good.0.to_bits(), bad.0.to_bits());
        let interpolated = good.0 + (bad.0 - good.0) * (-good.1 / (bad.1 - good.1));
        let x = if slow_steps >= 4 || !interpolated.is_finite() {
            f64::from_bits(gb + (bb - gb) / 2)
        } else {
            f64::from_bits(interpolated.to_bits().clamp(gb + 1, bb - 1))
        };
        let f = g(x) - target;
        if f <= 0.0 {
            good = (x, f);
            if last_kept_bad == Some(true) {
                bad.1 /= 2.0;
            }
            last_kept_bad = Some(true);
        } else {
            bad = (x, if f.is_nan() { f64::INFINITY } else { f });
            if last_kept_bad == Some(false) {
                good.1 /= 2.0;
            }
            last_kept_bad = Some(false);
        }
        let width = bad.0.to_bits() - good.0.to_bits();
        if width <= width_mark / 2 {
            width_mark = width;
            slow_steps = 0;
        } else {
            slow_steps += 1;
        }
    }
    good.0
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
    fn largest_at_most_ends_at_adjacent_doubles_in_few_steps() {
        let calls = std::cell::Cell::new(0);
        let g = |x: f64| {
            calls.set(calls.get() + 1);
            x * x * x + x
        };
        let x = largest_at_most(0.0, 0.0, 10.0, 2.0, g);
        assert!(
            x * x * x + x <= 2.0 && {
                let y = x.next_up();
                y * y * y + y > 2.0
            }
        );
        assert!(calls.get() < 20, "{} evaluations", calls.get());
        // A step function (worst case for interpolation) still ends at the threshold.
        let step = largest_at_most(0.0, 0.0, 1.0, 0.5, |x| if x <= 0.3 { 0.0 } else { 1.0 });
        assert_eq!(step, 0.3);
        // Non-finite values above the root are bisected, never interpolated.
        let inf = largest_at_most(0.0, 0.0, 1e300, 1.0, |x| if x <= 1.0 { x } else { f64::INFINITY });
        assert_eq!(inf, 1.0);
        assert_eq!(largest_at_most(0.0, 0.0, 1.0, 5.0, |x| x), 1.0);
        let tiny = largest_at_most(0.0, 0.0, 1.0, 1e-300, |x| x);
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
