//! One candidate of the loss function: the pair of sums (q_S, d_S) of two rows q, d over a
//! subset S of states, and the function it contributes to L(α).
//!
//! For rows q ≠ d and a subset S, the linear-fractional program (19)–(21) of the TKDE paper
//! has the value (1 + x·q_S)/(1 + x·d_S) with x = e^α − 1 (Theorem 5), so
//! L(α) = max over candidates of log((1 + x·q_S)/(1 + x·d_S)) (eq. 24). We store a candidate
//! as (d, δ) = (d_S, q_S − d_S): the gap δ is summed from the positive differences q_i − d_i,
//! which keeps it exact to a few ulps even when q_S and d_S nearly cancel.
//!
//! Geometrically, (1 + x q)/(1 + x d) = 1 + δ/(d + 1/x) is one plus the slope from the point
//! (−1/x, 0) to (d, δ): the loss at α is the steepest such slope over all candidates. The
//! envelope code in [`crate::envelope`] rests on this picture.

/// Above this α, e^α − 1 is no longer formed explicitly (e^709.8 overflows a double).
const ALPHA_DIRECT_MAX: f64 = 700.0;

/// A candidate (d_S, q_S − d_S) with q_S − d_S > 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// d_S: the sum of the denominator row over S.
    pub d: f64,
    /// δ = q_S − d_S > 0.
    pub delta: f64,
}

impl Candidate {
    /// q_S = d_S + δ.
    pub fn q(&self) -> f64 {
        self.d + self.delta
    }

    /// log((1 + x q_S)/(1 + x d_S)) with x = e^α − 1, for α ≥ 0 (eq. 24 for one candidate).
    ///
    /// Stable for all α: below α = 700 it is log1p(x δ/(1 + x d)), which keeps full relative
    /// precision for small α and for q_S ≈ d_S. Above, with 1/x = e^{−α}/(1 − e^{−α}), it is
    /// log1p(δ/(d + 1/x)) when d > 0, with 1/x taken relative to d so that neither a
    /// subnormal e^{−α} nor a subnormal d loses digits, and log x + log(q + 1/x) with
    /// log x = α + log(1 − e^{−α}) when d = 0, so α = 10⁴ or more neither overflows nor
    /// cancels.
    pub fn log_ratio(&self, alpha: f64) -> f64 {
        if alpha <= ALPHA_DIRECT_MAX {
            let x = alpha.exp_m1();
            return (x * self.delta / (1.0 + x * self.d)).ln_1p();
        }
        if self.d > 0.0 {
            // δ/(d + 1/x) = (δ/d)/(1 + ρ) with ρ = 1/(x d) = e^{−α − ln d}/(1 − e^{−α}), which
            // never forms the subnormal e^{−α} (ρ < e^45 since α > 700 and d ≥ 2^−1074).
            let rho = (-alpha - self.d.ln()).exp() / -(-alpha).exp_m1();
            let ratio = self.delta / self.d;
            // δ/d overflows only for a subnormal d: then log(1 + r) = log r to 1e-289.
            return if ratio.is_finite() {
                (ratio / (1.0 + rho)).ln_1p()
            } else {
                self.delta.ln() - self.d.ln() - rho.ln_1p()
            };
        }
        // d = 0: 1 + x q = x (q + 1/x).
        let ln_x = alpha + (-(-alpha).exp()).ln_1p();
        ln_x + log_add_exp(self.q().ln(), -ln_x)
    }

    /// The fixed point a = log((1 + x q)/(1 + x d)) + ε, x = e^a − 1, of this candidate alone
    /// (Theorem 11 of the TKDE paper), or `None` when the recursion diverges
    /// (d = 0 and q e^ε ≥ 1; the paper lists q e^ε = 1 on the bounded side, but there the
    /// fixed point is at infinity).
    ///
    /// With y = e^a the fixed point solves d y² + (1 − d − q e^ε) y − e^ε (1 − q) = 0. That
    /// form cancels for small ε (y → 1) and overflows for large ε or tiny d, so the root is
    /// taken from one of two rescaled forms, each without cancellation and returned as a
    /// logarithm (finite for every finite ε > 0 and every d ≥ 0, subnormal included):
    /// - ε ≤ 1: u = e^a − 1 and e = e^ε − 1 give d u² + (1 − δ − q e) u − e = 0, so that
    ///   a = log1p(u) keeps full relative precision as ε → 0, where a ≈ ε/(1 − δ);
    /// - ε > 1: z = e^{a−ε} and w = e^{−ε} give d z² + ((1 − d) w − q) z − (1 − q) w = 0,
    ///   whose coefficients stay in [−1, 1], and a = ε + log z; once w is subnormal, the
    ///   equation is divided by q so that a subnormal q keeps its digits.
    ///
    /// For d = 0 the equation is linear: u = e/(1 − q e^ε) with 1 − q e^ε = −expm1(ε + ln q).
    pub fn fixed_point(&self, eps: f64) -> Option<f64> {
        let (d, q) = (self.d, self.q());
        let one_minus_q = (1.0 - q).max(0.0);
        if d == 0.0 {
            let t = eps + q.ln();
            if t >= 0.0 {
                return None;
            }
            let gap = -t.exp_m1(); // 1 − q e^ε > 0
            let u = eps.exp_m1() / gap;
            let a = if u.is_finite() { u.ln_1p() } else { eps + (-q).ln_1p() - gap.ln() };
            return Some(a.max(eps));
        }
        let a = if eps <= SMALL_EPS_MAX {
            let e = eps.exp_m1();
            let b = 1.0 - self.delta - q * e;
            let root = b.hypot(2.0 * d.sqrt() * e.sqrt());
            if b >= 0.0 {
                (2.0 * e / (b + root)).ln_1p()
            } else {
                let num = root - b;
                let u = num / (2.0 * d);
                if u.is_finite() { u.ln_1p() } else { num.ln() - (2.0 * d).ln() }
            }
        } else if (-eps).exp() < f64::MIN_POSITIVE {
            // e^{−ε} is subnormal (ε > 708.4): divide the w-form by q, with ω = w/q taken as
            // e^{−ε − ln q} (< e^37 since q ≥ 2^−1074), and never form d/q.
            let omega = (-eps - q.ln()).exp();
            let b = (1.0 - d) * omega - 1.0;
            let c = one_minus_q * omega;
            let root = b.hypot(2.0 * (d.sqrt() / q.sqrt()) * c.sqrt());
            if b >= 0.0 {
                std::f64::consts::LN_2 + (-q).ln_1p() - q.ln() - (b + root).ln()
            } else {
                eps + (root - b).ln() - (2.0 * d).ln() + q.ln()
            }
        } else {
            let w = (-eps).exp();
            let b = (1.0 - d) * w - q;
            let c = one_minus_q * w;
            let root = b.hypot(2.0 * d.sqrt() * c.sqrt());
            if b >= 0.0 {
                // z = 2c/(b + root) and c = (1 − q) w: ε cancels from a = ε + log z.
                std::f64::consts::LN_2 + (-q).ln_1p() - (b + root).ln()
            } else {
                eps + (root - b).ln() - (2.0 * d).ln()
            }
        };
        Some(a.max(eps))
    }
}

/// Up to this ε the fixed point is solved in terms of e^ε − 1, above it in terms of e^{−ε}.
const SMALL_EPS_MAX: f64 = 1.0;

/// ln(eᵃ + eᵇ) without overflow: −∞ is the identity and +∞ absorbs, so the result is never
/// NaN for arguments that are not NaN (including ∞ + ∞ and −∞ + −∞). The one log-space sum of
/// the workspace (the TKDE loss in logarithmic form here, the MAP recursion of
/// [`docs/map.md`](crate::guide::map)).
///
/// ```
/// use tpl_core::log_add_exp;
/// assert_eq!(log_add_exp(f64::NEG_INFINITY, 3.0), 3.0);
/// assert_eq!(log_add_exp(f64::INFINITY, f64::INFINITY), f64::INFINITY);
/// assert!((log_add_exp(1000.0, 1000.0) - (1000.0 + std::f64::consts::LN_2)).abs() < 1e-12);
/// ```
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY || hi == f64::INFINITY {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn log_add_exp_limits() {
        assert_eq!(log_add_exp(f64::NEG_INFINITY, 3.0), 3.0);
        assert_eq!(log_add_exp(3.0, f64::NEG_INFINITY), 3.0);
        assert_eq!(log_add_exp(f64::NEG_INFINITY, f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(log_add_exp(f64::INFINITY, f64::INFINITY), f64::INFINITY);
        assert!((log_add_exp(0.0, 0.0) - std::f64::consts::LN_2).abs() < 1e-16);
        assert!((log_add_exp(1000.0, 1000.0) - (1000.0 + std::f64::consts::LN_2)).abs() < 1e-12);
    }

    /// The textbook formula, fine where e^α is small.
    fn naive(c: &Candidate, alpha: f64) -> f64 {
        let x = alpha.exp() - 1.0;
        ((1.0 + x * c.q()) / (1.0 + x * c.d)).ln()
    }

    #[test]
    fn matches_naive_formula_for_moderate_alpha() {
        let c = Candidate { d: 0.2, delta: 0.5 };
        for alpha in [0.01, 0.5, 1.0, 5.0, 20.0] {
            // 1e-13: the naive formula itself loses a few digits to cancellation.
            assert_relative_eq!(c.log_ratio(alpha), naive(&c, alpha), max_relative = 1e-13);
        }
        assert_eq!(c.log_ratio(0.0), 0.0);
    }

    #[test]
    fn large_alpha_limits() {
        // d = 0: log(1 + x q) → α + log q.
        let c = Candidate { d: 0.0, delta: 0.4 };
        for alpha in [40.0, 699.0, 701.0, 1e4] {
            assert_relative_eq!(c.log_ratio(alpha), alpha + 0.4f64.ln(), max_relative = 1e-15);
        }
        // d > 0: → log(q/d).
        let c = Candidate { d: 0.1, delta: 0.6 };
        for alpha in [60.0, 699.0, 701.0, 1e4] {
            assert_relative_eq!(c.log_ratio(alpha), 7.0f64.ln(), max_relative = 1e-14);
        }
        // Continuity across the switch of formulas at α = 700.
        let c = Candidate { d: 1e-300, delta: 0.3 };
        assert_relative_eq!(c.log_ratio(700.0), c.log_ratio(700.0 + 1e-9), max_relative = 1e-12);
    }

    #[test]
    fn nearly_equal_sums_do_not_cancel_at_large_alpha() {
        // Regression: above α = 700 the value was log(q + 1/x) − log(d + 1/x), which cancels
        // when q ≈ d; log1p(δ/(d + 1/x)) is exact.
        let c = Candidate { d: 0.5, delta: 1e-12 };
        for alpha in [701.0, 800.0, 5000.0] {
            assert_relative_eq!(c.log_ratio(alpha), 2e-12f64.ln_1p(), max_relative = 1e-14);
        }
    }

    #[test]
    fn fixed_point_solves_its_equation() {
        for c in [
            Candidate { d: 0.2, delta: 0.5 },
            Candidate { d: 0.0, delta: 0.3 },
            Candidate { d: 0.5, delta: 0.5 },
        ] {
            for eps in [0.01, 0.1, 1.0] {
                let a = c.fixed_point(eps).unwrap();
                assert_relative_eq!(a, c.log_ratio(a) + eps, max_relative = 1e-13);
            }
        }
    }

    #[test]
    fn fixed_point_boundary_is_unbounded() {
        let c = Candidate { d: 0.0, delta: 0.5 };
        assert_eq!(c.fixed_point(2f64.ln()), None);
        assert!(c.fixed_point(2f64.ln() * (1.0 - 1e-12)).is_some());
        assert_eq!(Candidate { d: 0.0, delta: 1.0 }.fixed_point(1e-9), None);
    }
}
