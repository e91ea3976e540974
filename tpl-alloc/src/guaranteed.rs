//! The guaranteed (ex-ante) audit: upper bounds on the temporal privacy leakage of *every*
//! run a release strategy could produce, from what it may spend at each step and the window
//! constraint it keeps ([`docs/model.md`](tpl_core::guide::model) §9). The realised audit
//! ([`crate::audit`]) is the leakage of one run's budgets; this is the promise a curator can make
//! before releasing.

use std::collections::VecDeque;

use tpl_core::{Budgets, CoreError, Correlation, check_epsilon, check_window, validate_budgets};

use crate::allocation::audit;
use crate::error::Result;
use crate::sides::Sides;

/// Relative outward margin of every bound on a loss value and of every reported leakage:
/// it covers the rounding of the loss evaluation (a few ulps) and the round-to-nearest of
/// the realised series, so that a guaranteed figure is above the exact leakage of every run
/// and above every realised audit as `tpl-core` computes it
/// ([`docs/model.md`](tpl_core::guide::model) §9).
const MARGIN: f64 = 1.0 / (1u64 << 44) as f64;

/// The longest window suffix m (in steps) whose m-fold loss composition the bound
/// evaluates; longer windows reuse the composition of this many steps, an upper bound
/// because L(a) ≤ a ([`docs/model.md`](tpl_core::guide::model) §9). It caps the work at this many
/// loss evaluations per step and side.
const MAX_COMPOSED: usize = 64;

/// A window constraint of a stream scheme, in effective budgets: any `window` consecutive
/// steps spend at most `limit` in total (w-event privacy,
/// [`docs/w-event.md`](tpl_core::guide::w_event) §1.7). A window that is cut by the start of the
/// stream is included.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WindowLimit {
    /// w (≥ 1).
    pub window: usize,
    /// The most any w consecutive effective budgets sum to (finite, > 0).
    pub limit: f64,
}

/// What every run of a release strategy may spend, in effective budgets ε_t·2/Δ
/// ([`docs/model.md`](tpl_core::guide::model) §1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spending<'a> {
    /// Every run spends exactly these budgets (an allocator's plan, the `planned` scheme,
    /// and the schemes whose spending depends on t alone): the guaranteed leakage is the
    /// realised one, [`crate::audit`] of these budgets, bit for bit.
    Fixed(&'a [f64]),
    /// Step t spends at most `caps[t − 1]`, and, with a `limit`, every window of
    /// `limit.window` steps at most `limit.limit` in total.
    Capped {
        /// c_t, the largest effective budget of step t over every run (finite, ≥ 0).
        caps: &'a [f64],
        /// The window constraint every run keeps, if any.
        limit: Option<WindowLimit>,
    },
}

impl<'a> Spending<'a> {
    /// The spending of a scheme stated by its per-step caps (in effective budgets): every
    /// run spends exactly `caps` when `fixed`, else at most `caps[t − 1]` at step t and, with
    /// `window_limit = Some((w, E))`, at most E over any w consecutive steps. The form a stream
    /// scheme states its spending in (`tpl_mechanisms::effective_spending`).
    ///
    /// ```
    /// use tpl_alloc::{Spending, WindowLimit};
    /// let caps = [0.5, 0.25];
    /// assert_eq!(Spending::from_caps(&caps, true, Some((2, 1.0))), Spending::Fixed(&caps));
    /// let limit = Some(WindowLimit { window: 2, limit: 1.0 });
    /// assert_eq!(Spending::from_caps(&caps, false, Some((2, 1.0))), Spending::Capped { caps: &caps, limit });
    /// ```
    #[must_use]
    pub fn from_caps(caps: &'a [f64], fixed: bool, window_limit: Option<(usize, f64)>) -> Self {
        if fixed {
            Spending::Fixed(caps)
        } else {
            Spending::Capped {
                caps,
                limit: window_limit.map(|(window, limit)| WindowLimit { window, limit }),
            }
        }
    }
}

/// Upper bounds on BPL_t, FPL_t, TPL_t and on the leakage of every window, valid for every
/// run a [`Spending`] allows ([`docs/model.md`](tpl_core::guide::model) §9): the guaranteed
/// counterpart of [`crate::Audit`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GuaranteedAudit {
    /// B_t ≥ BPL_t of every run, t = 1..T.
    pub bpl: Vec<f64>,
    /// F_t ≥ FPL_t of every run.
    pub fpl: Vec<f64>,
    /// ≥ TPL_t of every run.
    pub tpl: Vec<f64>,
    /// ≥ max_t TPL_t of every run.
    pub max_tpl: f64,
    /// The window of `max_window_leakage`, if one was asked for.
    pub window: Option<usize>,
    /// ≥ the largest leakage of that many consecutive steps (TKDE Theorem 3), every run.
    pub max_window_leakage: Option<f64>,
    /// Whether the bound is attained: [`Spending::Fixed`], where it is the realised audit.
    pub exact: bool,
}

/// The guaranteed audit of `spending` against the correlation `corr`, and, with `window`,
/// of every window of that many steps ([`docs/model.md`](tpl_core::guide::model) §9).
///
/// For [`Spending::Fixed`] it is [`crate::audit`] of the budgets. For [`Spending::Capped`]
/// it is the window-aware recurrence of [`docs/model.md`](tpl_core::guide::model) §9: BPL_t is at
/// most c_t + L_B(B_{t−1}) and, for every m up to w, at most min(limit, Σ of the last m caps) +
/// L_B^{(m)}(B_{t−m}) (L is non-decreasing and 1-Lipschitz); FPL likewise backwards; TPL and the
/// windows combine them. Every value is rounded outward.
///
/// ```
/// use tpl_alloc::{Spending, WindowLimit, audit, guaranteed_audit};
/// use tpl_core::{Budgets, Correlation, TransitionMatrix};
/// let p = TransitionMatrix::smoothed_identity(3, 0.1)?;
/// let corr = Correlation::new(Some(p.clone()), Some(p.clone()))?;
/// // Each step may spend up to 0.5, but any 4 consecutive steps at most 1.
/// let caps = [0.5; 40];
/// let limit = Some(WindowLimit { window: 4, limit: 1.0 });
/// let g = guaranteed_audit(&corr, Spending::Capped { caps: &caps, limit }, Some(4))?;
/// let simple = audit(&corr, Budgets::PerStep(caps.to_vec()), Some(4))?; // every step at its cap: not a possible run
/// assert!(g.max_tpl < simple.max_tpl);
/// // One possible run: 0.25 at every step.
/// let run = audit(&corr, Budgets::PerStep(vec![0.25; 40]), Some(4))?;
/// assert!(run.max_tpl <= g.max_tpl && run.max_window_leakage <= g.max_window_leakage);
/// # Ok::<(), tpl_alloc::AllocError>(())
/// ```
///
/// # Errors
/// Caps or budgets not finite and ≥ 0, or none ([`CoreError::BadBudget`],
/// [`CoreError::EmptyHorizon`]); a `window` outside 1..=T or a limit's window of 0
/// ([`CoreError::BadWindow`]); a limit that is not finite and > 0 ([`CoreError::BadEpsilon`]);
/// [`CoreError::Overflow`] when a bound exceeds the largest double.
pub fn guaranteed_audit(
    corr: &Correlation,
    spending: Spending<'_>,
    window: Option<usize>,
) -> Result<GuaranteedAudit> {
    let (caps, limit) = match spending {
        Spending::Fixed(budgets) => {
            let a = audit(corr, Budgets::PerStep(budgets.to_vec()), window)?;
            return Ok(GuaranteedAudit {
                bpl: a.series.bpl().to_vec(),
                fpl: a.series.fpl().to_vec(),
                tpl: (0..a.series.len()).map(|t| a.series.tpl_at(t)).collect(),
                max_tpl: a.max_tpl,
                window: a.window,
                max_window_leakage: a.max_window_leakage,
                exact: true,
            });
        }
        Spending::Capped { caps, limit } => (caps, limit),
    };
    validate_budgets(caps)?;
    let horizon = caps.len();
    if let Some(w) = window {
        check_window(w, horizon)?;
    }
    // A window longer than the stream constrains the whole stream (its cut windows).
    let limit = match limit {
        Some(l) => {
            if l.window == 0 {
                return Err(CoreError::BadWindow { window: 0, horizon }.into());
            }
            check_epsilon(l.limit)?;
            Some((l.window.min(horizon), l.limit))
        }
        None => None,
    };
    let loss_b = |a: f64| loss_up(a, |x| corr.loss_backward(x));
    let loss_f = |a: f64| loss_up(a, |x| corr.loss_forward(x));

    let sums = CapSums::new(caps);
    let bpl = chain(&loss_b, caps, &sums, limit);
    let reversed: Vec<f64> = caps.iter().rev().copied().collect();
    let mut fpl = chain(&loss_f, &reversed, &CapSums::new(&reversed), limit);
    fpl.reverse();

    // L_B(B_{t−1}) and L_F(F_{t+1}), 0 past either end (0-based t).
    let before = |t: usize| if t == 0 { 0.0 } else { loss_b(bpl[t - 1]) };
    let after = |t: usize| if t + 1 >= horizon { 0.0 } else { loss_f(fpl[t + 1]) };
    let tpl: Vec<f64> = (0..horizon)
        .map(|t| {
            // TPL_t = BPL_t + L_F(FPL_{t+1}) = L_B(BPL_{t−1}) + FPL_t.
            widen(add_up(bpl[t], after(t)).min(add_up(before(t), fpl[t])))
        })
        .collect();
    let max_tpl = tpl.iter().copied().fold(0.0, f64::max);
    let max_window_leakage = match window {
        None => None,
        Some(1) => Some(max_tpl),
        Some(w) => Some(
            (0..=horizon - w)
                .map(|t| {
                    let end = t + w - 1;
                    let spent = window_spend(&sums, t, end + 1, limit);
                    widen(add_up(add_up(before(t), after(end)), spent))
                })
                .fold(0.0, f64::max),
        ),
    };
    let out = GuaranteedAudit { bpl, fpl, tpl, max_tpl, window, max_window_leakage, exact: false };
    let overflow =
        (0..horizon).find(|&t| ![out.bpl[t], out.fpl[t], out.tpl[t]].iter().all(|v| v.is_finite()));
    match overflow {
        Some(t) => Err(CoreError::Overflow { step: t + 1 }.into()),
        None if !out.max_window_leakage.is_none_or(f64::is_finite) => {
            Err(CoreError::Overflow { step: horizon }.into())
        }
        None => Ok(out),
    }
}

/// Upper bounds B_1..B_T of the recurrence X_t = e_t + L(X_{t−1}) over every sequence with
/// 0 ≤ e_t ≤ caps[t] and, with `limit = (w, E)`, every w consecutive e_t summing to ≤ E
/// ([`docs/model.md`](tpl_core::guide::model) §9): B_t is the least of c_t + L(B_{t−1}) and, for m
/// = 1..=w, min(E, Σ of the caps of the last m steps) + L^{(m)}(B_{t−m}), where L^{(m)}(B_s) is 0
/// for s < 1 and is replaced by L^{(k)}(B_{t−m}) for m above k = [`MAX_COMPOSED`]. `loss` is an
/// outward evaluation of L; `sums` bounds the sums of `caps`.
fn chain(loss: &dyn Fn(f64) -> f64, caps: &[f64], sums: &CapSums, limit: Option<(usize, f64)>) -> Vec<f64> {
    let horizon = caps.len();
    let (window, cap) = limit.unwrap_or((1, f64::INFINITY));
    let k = window.min(MAX_COMPOSED).min(horizon);
    // composed[m − 1] = L^{(m)}(B_{i−m}) at step i (0 where i − m < 0).
    let mut composed = vec![0.0; k];
    // (s, L^{(k)}(B_s)), for the windows longer than k.
    let mut far: VecDeque<(usize, f64)> = VecDeque::new();
    let mut out: Vec<f64> = Vec::with_capacity(horizon);
    for (i, &c) in caps.iter().enumerate() {
        if let Some(&prev) = out.last() {
            for m in (1..k).rev() {
                composed[m] = loss(composed[m - 1]);
            }
            composed[0] = loss(prev);
        }
        let mut best = add_up(c, composed[0]);
        if limit.is_some() {
            for (m, &carried) in (1..=k).zip(&composed) {
                let spent = sums.up((i + 1).saturating_sub(m), i + 1).min(cap);
                best = best.min(add_up(spent, carried));
            }
            if window > k {
                // L^{(k)}(B_{i−w}), pushed at step i − w + k < i; 0 while the window reaches
                // the start.
                let carried = if i < window {
                    0.0
                } else {
                    while far.front().is_some_and(|&(s, _)| s + window < i) {
                        far.pop_front();
                    }
                    far.front().map_or(f64::INFINITY, |&(_, v)| v)
                };
                let spent = sums.up((i + 1).saturating_sub(window), i + 1).min(cap);
                best = best.min(add_up(spent, carried));
            }
        }
        out.push(best);
        if window > k && i >= k {
            far.push_back((i - k, composed[k - 1]));
        }
    }
    out
}

/// The most steps lo..hi (0-based, hi exclusive) spend: Σ over consecutive blocks of w
/// steps from lo of min(E, Σ caps of the block), or Σ caps without a limit; rounded up.
fn window_spend(sums: &CapSums, lo: usize, hi: usize, limit: Option<(usize, f64)>) -> f64 {
    match limit {
        None => sums.up(lo, hi),
        Some((w, cap)) => {
            let mut total = 0.0;
            let mut start = lo;
            while start < hi {
                let end = hi.min(start.saturating_add(w));
                total = add_up(total, sums.up(start, end).min(cap));
                start = end;
            }
            total
        }
    }
}

/// An outward evaluation of L at a ≥ 0: the computed L(a) raised by [`MARGIN`] and one ulp;
/// L(0) = 0 exactly.
fn loss_up(a: f64, loss: impl Fn(f64) -> f64) -> f64 {
    if a == 0.0 { 0.0 } else { widen(loss(a)).max(f64::from_bits(1)) }
}

/// x raised by the relative [`MARGIN`] and one ulp (0 stays 0).
fn widen(x: f64) -> f64 {
    if x > 0.0 { x.mul_add(MARGIN, x).next_up() } else { x }
}

/// a + b, never below the exact sum (a, b ≥ 0): the nearest sum raised by one ulp unless it is
/// 0 or one of the terms is.
fn add_up(a: f64, b: f64) -> f64 {
    if a == 0.0 || b == 0.0 { a + b } else { (a + b).next_up() }
}

/// Sums of consecutive caps, never below the exact sums: every cap rounded up to a multiple of
/// one power-of-two unit (2^−60 of the largest cap, or the smallest subnormal), whose prefix
/// sums are exact integers.
struct CapSums {
    unit: f64,
    prefix: Vec<u128>,
}

impl CapSums {
    fn new(caps: &[f64]) -> Self {
        let largest = caps.iter().copied().fold(0.0, f64::max);
        let unit = if largest > 0.0 {
            // 2^(e − 60) for largest ∈ [2^e, 2^(e+1)): every cap / unit < 2^61, exactly.
            let e = largest.log2().floor() as i32;
            2f64.powi((e - 60).max(-1074))
        } else {
            1.0
        };
        let mut prefix = Vec::with_capacity(caps.len() + 1);
        let mut acc: u128 = 0;
        prefix.push(acc);
        for &c in caps {
            // A multiplication by a power of two: exact (the quotient is < 2^62).
            acc += (c / unit).ceil() as u128;
            prefix.push(acc);
        }
        Self { unit, prefix }
    }

    /// Σ caps[lo..hi], rounded up.
    fn up(&self, lo: usize, hi: usize) -> f64 {
        let k = self.prefix[hi] - self.prefix[lo];
        let mut f = k as f64;
        if (f as u128) < k {
            f = f.next_up();
        }
        let mut v = f * self.unit;
        if v.is_finite() && v / self.unit < f {
            v = v.next_up();
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpl_core::TransitionMatrix;
    use tpl_core::test_util::{both_sides, correlation};

    fn corr(p: &TransitionMatrix) -> Correlation {
        both_sides(p)
    }

    #[test]
    fn cap_sums_are_never_below_the_exact_sums() {
        let caps = [0.1, 0.2, 0.3, 1e-300, 0.0, 7.0, 1e-320];
        let s = CapSums::new(&caps);
        assert!(s.up(0, 3) >= 0.6000000000000001 && s.up(0, 3) <= 0.6 * (1.0 + 1e-15));
        assert_eq!(s.up(4, 5), 0.0);
        assert!(s.up(3, 4) >= 1e-300);
        assert!(s.up(5, 7) > 7.0);
        let zeros = CapSums::new(&[0.0; 3]);
        assert_eq!(zeros.up(0, 3), 0.0);
    }

    #[test]
    fn without_a_limit_the_bound_is_the_audit_of_the_caps_raised_by_the_margin() {
        let p = TransitionMatrix::smoothed_identity(4, 0.2).unwrap();
        let c = corr(&p);
        let caps: Vec<f64> = (0..30).map(|t| 0.05 + 0.01 * (t % 7) as f64).collect();
        let g = guaranteed_audit(&c, Spending::Capped { caps: &caps, limit: None }, Some(5)).unwrap();
        let a = audit(&c, Budgets::PerStep(caps.to_vec()), Some(5)).unwrap();
        assert!(!g.exact);
        for (got, want) in
            [(g.max_tpl, a.max_tpl), (g.max_window_leakage.unwrap(), a.max_window_leakage.unwrap())]
        {
            assert!(got >= want && got <= want * (1.0 + 1e-9), "{got} vs {want}");
        }
    }

    #[test]
    fn a_limit_the_caps_never_reach_changes_nothing_but_rounding() {
        let p = TransitionMatrix::smoothed_identity(3, 0.1).unwrap();
        let c = corr(&p);
        let caps = [0.1; 50];
        let loose = Some(WindowLimit { window: 5, limit: 0.5 });
        let g = guaranteed_audit(&c, Spending::Capped { caps: &caps, limit: loose }, Some(5)).unwrap();
        let a = audit(&c, Budgets::PerStep(caps.to_vec()), Some(5)).unwrap();
        assert!(g.max_tpl >= a.max_tpl && g.max_tpl <= a.max_tpl * (1.0 + 1e-9));
    }

    #[test]
    fn identity_correlation_gives_the_window_count_times_the_limit() {
        // L(a) = a: BPL_t is the sum of every budget so far, at most ⌈t/w⌉·E.
        let p = TransitionMatrix::new(vec![vec![1.0, 0.0], vec![0.0, 1.0]]).unwrap();
        let c = correlation(Some(&p), None);
        let caps = [1.0; 20];
        let limit = Some(WindowLimit { window: 4, limit: 1.0 });
        let g = guaranteed_audit(&c, Spending::Capped { caps: &caps, limit }, None).unwrap();
        for (t, &b) in g.bpl.iter().enumerate() {
            let want = (t / 4 + 1) as f64;
            assert!(b >= want && b <= want * (1.0 + 1e-10), "t = {}: {b} vs {want}", t + 1);
        }
    }

    #[test]
    fn long_windows_use_the_truncated_composition_and_stay_valid() {
        let p = TransitionMatrix::new(vec![vec![1.0, 0.0], vec![0.0, 1.0]]).unwrap();
        let c = correlation(Some(&p), None);
        let w = MAX_COMPOSED + 36;
        let caps = vec![1.0; 3 * w];
        let limit = Some(WindowLimit { window: w, limit: 1.0 });
        let g = guaranteed_audit(&c, Spending::Capped { caps: &caps, limit }, None).unwrap();
        // A run spending 1 at the first step of every window reaches t/w + 1.
        for (t, &b) in g.bpl.iter().enumerate() {
            let want = (t / w + 1) as f64;
            assert!(b >= want && b <= want * (1.0 + 1e-9), "t = {}: {b} vs {want}", t + 1);
        }
    }

    #[test]
    fn fixed_spending_is_the_realised_audit_bit_for_bit() {
        let p = TransitionMatrix::smoothed_identity(4, 0.3).unwrap();
        let c = corr(&p);
        let budgets: Vec<f64> = (0..25).map(|t| 0.01 * (1 + t % 5) as f64).collect();
        let g = guaranteed_audit(&c, Spending::Fixed(&budgets), Some(3)).unwrap();
        let a = audit(&c, Budgets::PerStep(budgets.to_vec()), Some(3)).unwrap();
        assert!(g.exact);
        assert_eq!(g.max_tpl.to_bits(), a.max_tpl.to_bits());
        assert_eq!(g.max_window_leakage, a.max_window_leakage);
        assert_eq!(g.tpl, (0..a.series.len()).map(|t| a.series.tpl_at(t)).collect::<Vec<_>>());
    }

    #[test]
    fn bad_inputs_are_refused() {
        let p = TransitionMatrix::smoothed_identity(2, 0.3).unwrap();
        let c = corr(&p);
        let capped = |caps: &'static [f64], limit| Spending::Capped { caps, limit };
        assert!(guaranteed_audit(&c, capped(&[], None), None).is_err());
        assert!(guaranteed_audit(&c, capped(&[0.1, f64::NAN], None), None).is_err());
        assert!(guaranteed_audit(&c, capped(&[0.1, 0.1], None), Some(3)).is_err());
        let zero_window = Some(WindowLimit { window: 0, limit: 1.0 });
        assert!(guaranteed_audit(&c, capped(&[0.1], zero_window), None).is_err());
        let bad_limit = Some(WindowLimit { window: 1, limit: -1.0 });
        assert!(guaranteed_audit(&c, capped(&[0.1], bad_limit), None).is_err());
    }
}
