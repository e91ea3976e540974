//! Confidence intervals of a Laplace release: the central interval of the noise that a
//! release at scale b carries, for each sampler (`docs/map.md`, intervals).

use super::SamplerKind;
use crate::error::{MechError, Result};

impl SamplerKind {
    /// The half-width q of the central interval of this sampler's noise at scale `scale`:
    /// Pr[|Z| ≤ q] ≥ `level`, so that r ± q covers the true count of a fresh release r
    /// with at least that probability. The smallest such q:
    ///
    /// - discrete Laplace (Pr[Z = k] ∝ e^{−|k|/b}): the smallest integer q with
    ///   Pr[|Z| > q] = 2·p^{q+1}/(1 + p) ≤ 1 − level, p = e^{−1/b} — the coverage is then
    ///   at least `level` (the lattice makes it exactly `level` only by chance);
    /// - float Laplace: q = b·ln(1/(1 − level)), coverage exactly `level`.
    ///
    /// Computed in log space and rounded outwards (b one ulp up: the exact sampler rounds
    /// its scale up by less than that), so the stated coverage holds in floating point.
    ///
    /// ```
    /// use tpl_mechanisms::SamplerKind;
    /// // Δ = 2, ε_t = 0.5: b = 4; 90 % of discrete draws lie in −9..=9 (90.8 % exactly).
    /// assert_eq!(SamplerKind::Discrete.half_width(4.0, 0.9)?, 9.0);
    /// let q = SamplerKind::Float.half_width(4.0, 0.9)?;
    /// assert!((q - 4.0 * 10f64.ln()).abs() < 1e-12);
    /// # Ok::<(), tpl_mechanisms::MechError>(())
    /// ```
    ///
    /// # Errors
    /// [`MechError::BadScale`] for a scale that is not finite and positive;
    /// [`MechError::BadLevel`] for a level outside (0, 1).
    pub fn half_width(self, scale: f64, level: f64) -> Result<f64> {
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
            Self::Float => Ok((-log_tail * b).next_up()),
            Self::Discrete => {
                // Tail(q) ≤ 1 − level ⟺ (q + 1)/b ≥ ln 2 − ln(1 + p) − ln(1 − level).
                let log_p = -1.0 / b;
                let tail = |q: f64| std::f64::consts::LN_2 + (q + 1.0) * log_p - log_p.exp().ln_1p();
                let guess = (b * (std::f64::consts::LN_2 - log_p.exp().ln_1p() - log_tail)).ceil() - 1.0;
                let mut q = guess.max(0.0);
                // The guess carries rounding: step to the smallest q that passes.
                while tail(q) > log_tail {
                    q += 1.0;
                }
                while q > 0.0 && tail(q - 1.0) <= log_tail {
                    q -= 1.0;
                }
                Ok(q)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pr[|Z| ≤ q] of the discrete Laplace at scale b, summed term by term.
    fn discrete_coverage(b: f64, q: i64) -> f64 {
        let p = (-1.0 / b).exp();
        let norm = (1.0 - p) / (1.0 + p);
        (-q..=q).map(|k| norm * p.powi(k.unsigned_abs() as i32)).sum()
    }

    #[test]
    fn the_discrete_half_width_is_the_smallest_that_covers() {
        for b in [0.05, 0.3, 1.0, 2.0, 4.0, 17.5, 100.0] {
            for level in [0.5, 0.8, 0.9, 0.95, 0.99] {
                let q = SamplerKind::Discrete.half_width(b, level).unwrap();
                assert_eq!(q, q.round());
                assert!(discrete_coverage(b, q as i64) >= level - 1e-12, "b {b} level {level} q {q}");
                if q > 0.0 {
                    assert!(discrete_coverage(b, q as i64 - 1) < level + 1e-12, "b {b} level {level} q {q}");
                }
            }
        }
    }

    #[test]
    fn the_float_half_width_covers_exactly_its_level() {
        let q = SamplerKind::Float.half_width(3.0, 0.95).unwrap();
        assert!((1.0 - (-q / 3.0).exp() - 0.95).abs() < 1e-12);
    }

    #[test]
    fn bad_scales_and_levels_are_refused() {
        for (b, level) in [(0.0, 0.9), (f64::INFINITY, 0.9), (1.0, 0.0), (1.0, 1.0), (1.0, f64::NAN)] {
            assert!(SamplerKind::Discrete.half_width(b, level).is_err(), "{b} {level}");
        }
    }
}
