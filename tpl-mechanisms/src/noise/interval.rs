//! Confidence intervals of a Laplace release: the central interval of the noise that a
//! release at scale b carries, for each sampler ([`docs/map.md`](tpl_core::guide::map), intervals).

use super::SamplerKind;
use crate::error::{MechError, Result};

impl SamplerKind {
    /// The shortest interval [lo, hi] of this sampler's noise Z at scale `scale` with
    /// Pr[lo ≤ Z ≤ hi] ≥ `level`: a fresh release r = c + Z then covers its true count c
    /// with [r − hi, r − lo] with at least that probability.
    ///
    /// - discrete Laplace (Pr[Z = k] = (1 − p)/(1 + p)·p^{|k|}, p = e^{−1/b}): the shorter, in
    ///   lattice points, of the symmetric [−q, q] (tail 2·p^{q+1}/(1 + p)) and the interval
    ///   with one point more above, [−(m − 1), m] (tail p^m), each with the smallest q or m
    ///   whose tail is ≤ 1 − `level`. No interval of the lattice with fewer points covers
    ///   `level` (the mass is unimodal and symmetric, so the best interval of each length is
    ///   one of these two). The coverage is at least `level`, exactly `level` only by chance;
    /// - float Laplace: [−q, q] with q = b·ln(1/(1 − level)), coverage exactly `level`.
    ///
    /// Computed in log space and rounded outwards (b one ulp up: the exact sampler rounds
    /// its scale up by less than that), so the stated coverage holds in floating point.
    ///
    /// ```
    /// use tpl_mechanisms::SamplerKind;
    /// // Δ = 2, ε_t = 0.5: b = 4; 90 % of discrete draws lie in −9..=9 (90.8 % exactly).
    /// assert_eq!(SamplerKind::Discrete.noise_interval(4.0, 0.9)?, (-9.0, 9.0));
    /// // b = 2: −4..=5 covers 91.8 % with 10 points (the symmetric −5..=5 needs 11).
    /// assert_eq!(SamplerKind::Discrete.noise_interval(2.0, 0.9)?, (-4.0, 5.0));
    /// let (lo, hi) = SamplerKind::Float.noise_interval(4.0, 0.9)?;
    /// assert!(lo == -hi && (hi - 4.0 * 10f64.ln()).abs() < 1e-12);
    /// # Ok::<(), tpl_mechanisms::MechError>(())
    /// ```
    ///
    /// # Errors
    /// [`MechError::BadScale`] for a scale that is not finite and positive;
    /// [`MechError::BadLevel`] for a level outside (0, 1).
    pub fn noise_interval(self, scale: f64, level: f64) -> Result<(f64, f64)> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(MechError::BadScale(scale));
        }
        if !(level > 0.0 && level < 1.0) {
            return Err(MechError::BadLevel(level));
        }
        let b = scale.next_up();
        // ln(1 − level), the log of the tail mass allowed.
        let log_tail = (-level).ln_1p();
        match self {
            #[cfg(feature = "float-not-release-grade")]
            Self::Float => {
                let q = (-log_tail * b).next_up();
                Ok((-q, q))
            }
            Self::Discrete => {
                let log_p = -1.0 / b;
                // Symmetric: ln Pr[|Z| > q] = ln 2 + (q + 1)·ln p − ln(1 + p).
                let symmetric = |q: f64| std::f64::consts::LN_2 + (q + 1.0) * log_p - log_p.exp().ln_1p();
                let q = smallest(
                    symmetric,
                    log_tail,
                    b * (std::f64::consts::LN_2 - log_p.exp().ln_1p() - log_tail) - 1.0,
                );
                // One point more above: ln Pr[Z ∉ [−(m − 1), m]] = m·ln p.
                let m = smallest(|m: f64| m * log_p, log_tail, -b * log_tail).max(1.0);
                // 2m points against 2q + 1.
                Ok(if m <= q { (-(m - 1.0), m) } else { (-q, q) })
            }
        }
    }
}

/// The smallest whole x ≥ 0 with `log_tail_at(x)` ≤ `log_tail` (a decreasing function),
/// from a real estimate `guess` that carries rounding.
fn smallest(log_tail_at: impl Fn(f64) -> f64, log_tail: f64, guess: f64) -> f64 {
    let mut x = guess.ceil().max(0.0);
    while log_tail_at(x) > log_tail {
        x += 1.0;
    }
    while x > 0.0 && log_tail_at(x - 1.0) <= log_tail {
        x -= 1.0;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pr[lo ≤ Z ≤ hi] of the discrete Laplace at scale b, summed term by term.
    fn discrete_coverage(b: f64, lo: i64, hi: i64) -> f64 {
        let p = (-1.0 / b).exp();
        let norm = (1.0 - p) / (1.0 + p);
        (lo..=hi).map(|k| norm * p.powi(k.unsigned_abs() as i32)).sum()
    }

    #[test]
    fn the_discrete_interval_is_the_shortest_that_covers() {
        for b in [0.05, 0.3, 1.0, 2.0, 4.0, 17.5, 100.0] {
            for level in [0.5, 0.8, 0.9, 0.95, 0.99] {
                let (lo, hi) = SamplerKind::Discrete.noise_interval(b, level).unwrap();
                assert!(
                    lo == lo.round() && hi == hi.round() && lo <= 0.0 && hi >= 0.0,
                    "b {b} level {level}"
                );
                let (lo, hi) = (lo as i64, hi as i64);
                assert!(discrete_coverage(b, lo, hi) >= level - 1e-12, "b {b} level {level} [{lo}, {hi}]");
                // No interval of the lattice with one point fewer covers the level (the best
                // of each length lies around 0: brute force over where it starts).
                let points = hi - lo + 1;
                if points > 1 {
                    let best = (-points..=1)
                        .map(|start| discrete_coverage(b, start, start + points - 2))
                        .fold(0.0, f64::max);
                    assert!(best < level + 1e-12, "b {b} level {level}: {} points cover {best}", points - 1);
                }
            }
        }
    }

    #[test]
    fn the_interval_with_one_point_more_above_is_taken_where_it_is_shorter() {
        // b = 2, 90 %: −5..=5 covers 93.5 % with 11 points, −4..=5 covers 91.8 % with 10.
        assert_eq!(SamplerKind::Discrete.noise_interval(2.0, 0.9).unwrap(), (-4.0, 5.0));
        assert!((discrete_coverage(2.0, -4, 5) - (1.0 - (-2.5f64).exp())).abs() < 1e-12);
        // Tiny scales: {0} alone covers.
        assert_eq!(SamplerKind::Discrete.noise_interval(0.05, 0.9).unwrap(), (0.0, 0.0));
    }

    #[test]
    fn the_float_interval_covers_exactly_its_level() {
        let (lo, q) = SamplerKind::Float.noise_interval(3.0, 0.95).unwrap();
        assert_eq!(lo, -q);
        assert!((1.0 - (-q / 3.0).exp() - 0.95).abs() < 1e-12);
    }

    #[test]
    fn bad_scales_and_levels_are_refused() {
        for (b, level) in [(0.0, 0.9), (f64::INFINITY, 0.9), (1.0, 0.0), (1.0, 1.0), (1.0, f64::NAN)] {
            assert!(SamplerKind::Discrete.noise_interval(b, level).is_err(), "{b} {level}");
        }
    }
}
