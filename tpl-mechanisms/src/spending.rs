//! What every run of a stream scheme may spend, in the effective budgets of the leakage audit
//! ([`docs/w-event.md`](tpl_core::guide::w_event) §6, guaranteed leakage;
//! [`docs/model.md`](tpl_core::guide::model) §9): the input of an auditor that bounds the leakage
//! of every run before any data are seen.

use crate::mechanism::effective_budget;
use crate::scheme::{PrivacyGuarantee, StreamScheme};

/// The per-step caps and the window constraint of a scheme over a horizon, in effective
/// budgets ε_t·2/Δ ([`effective_budget`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveSpending {
    /// c_t = [`effective_budget`]`(`[`StreamScheme::max_spend`]`(t), Δ)` for t = 1..=T: the
    /// largest effective budget of step t over every run.
    pub caps: Vec<f64>,
    /// `(w, E)`: any w consecutive effective budgets of a run sum to at most E, for a scheme
    /// that guarantees w-event ε-DP; `None` for an event-level scheme (`laplace`).
    pub window_limit: Option<(usize, f64)>,
    /// Whether every run spends exactly `caps`: the schemes whose spending is a function of
    /// t alone (`laplace`, `uniform`, `sample`: [`docs/w-event.md`](tpl_core::guide::w_event)
    /// §3.1–3.3) and `planned`.
    pub fixed: bool,
}

/// The caps and window constraint of `scheme` over `horizon` steps (its parameters, not its
/// state: every run from step 1).
///
/// The window constraint of a w-event scheme holds for its mechanism budgets: every w
/// consecutive ε_t sum to at most ε exactly ([`docs/w-event.md`](tpl_core::guide::w_event) §1.7).
/// Each effective budget is 2ε_t/Δ rounded up, by at most a relative 2^−51 and, for a subnormal,
/// 2^−1073; so any w consecutive effective budgets sum to at most E = (1 +
/// 2^−51)·[`effective_budget`]`(ε, Δ)` plus w·2^−1073, rounded up: the E reported here, never below
/// the true sum of any run's effective window.
///
/// ```
/// use tpl_mechanisms::{LaplaceMechanism, SchemeKind, PbaPool, WEventParams, Zero, effective_spending};
/// let params = WEventParams::new(1.0, 4, 2.0)?;
/// let bd = SchemeKind::Bd.build(params, LaplaceMechanism::new(Zero), PbaPool::Never)?;
/// let s = effective_spending(bd.as_ref(), 6);
/// assert_eq!(s.caps[0], 0.25); // ε/4 at t = 1
/// let (w, e) = s.window_limit.unwrap();
/// assert!(w == 4 && e >= 1.0 && e < 1.0 + 1e-15);
/// assert!(!s.fixed);
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
pub fn effective_spending(scheme: &dyn StreamScheme, horizon: usize) -> EffectiveSpending {
    let delta = scheme.params().sensitivity();
    let caps = (1..=horizon).map(|t| effective_budget(scheme.max_spend(t), delta)).collect();
    let window_limit = match scheme.guarantee() {
        PrivacyGuarantee::WEvent { epsilon, window } => Some((window, window_limit(epsilon, window, delta))),
        PrivacyGuarantee::EventLevel { .. } => None,
    };
    EffectiveSpending { caps, window_limit, fixed: scheme.spends_its_caps() }
}

/// E of [`effective_spending`]: (1 + 2^−51)·effective_budget(ε, Δ) + w·2^−1073, rounded up.
fn window_limit(epsilon: f64, window: usize, delta: f64) -> f64 {
    let e = effective_budget(epsilon, delta);
    let relative = e.mul_add(2f64.powi(-51), e).next_up();
    // w·2^−1073 ≥ the subnormal bumps of w steps (exact for w < 2^53, rounded up above).
    let subnormal = (window as f64).next_up() * f64::from_bits(2);
    (relative + subnormal).next_up()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemes::SchemeKind;
    use crate::{LaplaceMechanism, PbaPool, WEventParams, Zero};

    fn spending(kind: SchemeKind, eps: f64, w: usize, delta: f64, horizon: usize) -> EffectiveSpending {
        let params = WEventParams::new(eps, w, delta).unwrap();
        let scheme = kind.build(params, LaplaceMechanism::new(Zero), PbaPool::Always).unwrap();
        effective_spending(scheme.as_ref(), horizon)
    }

    #[test]
    fn caps_are_the_effective_max_spend_and_fixedness_follows_the_scheme() {
        let u = spending(SchemeKind::Uniform, 1.0, 5, 1.0, 8);
        assert!(u.fixed && u.caps.iter().all(|&c| c == u.caps[0] && c <= 0.4 && c > 0.4 * (1.0 - 1e-9)));
        let l = spending(SchemeKind::Laplace, 0.5, 3, 2.0, 4);
        assert!(l.fixed && l.window_limit.is_none() && l.caps == [0.5; 4]);
        let s = spending(SchemeKind::Sample, 1.0, 3, 2.0, 7);
        let z = effective_budget(0.0, 2.0); // the audit's value of a step that spends nothing
        assert!(s.fixed && s.caps == [1.0, z, z, 1.0, z, z, 1.0]);
        for kind in [SchemeKind::Bd, SchemeKind::Ba, SchemeKind::Pba] {
            assert!(!spending(kind, 1.0, 3, 2.0, 5).fixed, "{kind:?}");
        }
    }

    #[test]
    fn the_window_limit_covers_the_rounding_of_every_effective_budget() {
        // Δ = 3: each effective budget rounds up; w of them must stay within E.
        for (eps, w) in [(1.0, 7), (0.3, 13), (1e-310, 5), (2.5, 1)] {
            let delta = 3.0;
            let (_, e) = spending(SchemeKind::Uniform, eps, w, delta, 1).window_limit.unwrap();
            let params = WEventParams::new(eps, w, delta).unwrap();
            let share = effective_budget(params.epsilon() / w as f64, delta);
            let total: f64 = (0..w).map(|_| share).sum::<f64>();
            assert!(total <= e, "ε = {eps}, w = {w}: {total} > {e}");
            assert!(e <= effective_budget(eps, delta) * (1.0 + 1e-14) + 1e-300, "{e}");
        }
    }
}
