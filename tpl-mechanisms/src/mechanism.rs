//! The plugin point: a differentially private mechanism for one release of a query answer.

use crate::error::{MechError, Result};
use crate::noise::NoiseSource;
use crate::params::DEFAULT_SENSITIVITY;

/// The largest |count| an exact integer release accepts: 2^52 = 4 503 599 627 370 496.
///
/// With |c| ≤ 2^52 and integer noise |Y| ≤ 2^52 the sum c + Y has |c + Y| ≤ 2^53, and every
/// integer of that size is an f64, so the released value is exactly c + Y: no rounding can
/// make an output possible for one count and impossible for its neighbour. Larger counts
/// are refused ([`MechError::CountTooLarge`]) rather than rounded; a count read from text
/// that is not exactly an f64 (9 007 199 254 740 993 parses as …992) is above this bound too.
/// The same bound applies to every answer released with integer noise, including the
/// dissimilarity sum Σ_j |c_j − r_j| that `bd`, `ba` and `pba` test (which can exceed it only
/// when counts are of order 2^52 divided by the number of cells): such a step is refused
/// ([`MechError::DissimilarityTooLarge`]).
pub const MAX_EXACT_COUNT: f64 = 4_503_599_627_370_496.0;

/// The largest noise scale b an exact integer release accepts: 2^46 ≈ 7.04·10^13, that is
/// [`MAX_EXACT_COUNT`]/64.
///
/// A draw with |Y| > 2^52 is refused after the fact ([`MechError::NoiseOutOfRange`]), since
/// c + Y might then not be exact. For the discrete Laplace, Pr[|Y| > k] < e^{−k/b}, so at
/// b ≤ 2^46 this happens with probability below e^{−64} ≈ 1.6·10^−28 per draw, whatever the
/// data: the refusal depends on the noise alone and reveals nothing about the counts.
/// A larger scale (a budget below Δ/2^46) is refused before any draw
/// ([`MechError::ScaleTooLarge`]).
pub const MAX_EXACT_SCALE: f64 = 70_368_744_177_664.0;

/// The budget a Laplace release with budget `budget`, calibrated to L1 sensitivity
/// `sensitivity` (noise scale Δ/ε_t), spends against the neighbours of the temporal-leakage
/// model: ε_t·2/Δ, rounded up, so an audit built on it never understates the leakage.
///
/// The model of "Quantifying Differential Privacy in Continuous Data Release under Temporal
/// Correlations" (Cao, Yoshikawa, Xiao, Xiong, TKDE 2018) calls two databases neighbours when
/// one person's value differs; in a histogram of counts that moves one unit out of a cell
/// and into another, an L1 change of 2 ([`DEFAULT_SENSITIVITY`]). Laplace noise of scale b
/// makes two answers at L1 distance k indistinguishable up to e^{k/b}, so a release at scale
/// Δ/ε_t has privacy loss 2ε_t/Δ against those neighbours: ε_t when Δ = 2, twice ε_t when a
/// release was calibrated to Δ = 1 (half the noise). This is the per-step loss PL0 that every
/// leakage audit (Theorem 3 of the paper) must start from.
///
/// ```
/// use tpl_mechanisms::effective_budget;
/// assert_eq!(effective_budget(0.1, 2.0), 0.1);
/// assert_eq!(effective_budget(0.1, 1.0), 0.2);
/// assert!(effective_budget(0.7, 3.0) * 3.0 >= 1.4);
/// assert_eq!(effective_budget(0.0, 3.0), 0.0); // a step that spends nothing
/// ```
pub fn effective_budget(budget: f64, sensitivity: f64) -> f64 {
    laplace_loss(DEFAULT_SENSITIVITY, sensitivity, budget)
}

/// [`effective_budget`] for an audit: a finite budget ε_t ≥ 0 whose loss 2·ε_t/Δ overflows (a
/// sensitivity far below the budget, 1e-320 against 1) is refused naming both, rather than
/// handed on as an infinite budget that the audit would then blame on ε_t itself.
///
/// ```
/// use tpl_mechanisms::{MechError, checked_effective_budget};
/// assert_eq!(checked_effective_budget(0.1, 1.0), Ok(0.2));
/// assert!(matches!(checked_effective_budget(1.0, 1e-320), Err(MechError::LossOverflow { .. })));
/// ```
///
/// # Errors
/// [`MechError::LossOverflow`] when the loss is not finite though the budget is.
pub fn checked_effective_budget(budget: f64, sensitivity: f64) -> Result<f64> {
    let loss = effective_budget(budget, sensitivity);
    if loss.is_finite() || !budget.is_finite() {
        Ok(loss)
    } else {
        Err(MechError::LossOverflow { budget, sensitivity })
    }
}

/// d_in·budget/sensitivity rounded up: the loss of a Laplace release at scale
/// sensitivity/budget (rounded up itself) between answers at L1 distance d_in (finite, ≥ 0).
fn laplace_loss(d_in: f64, sensitivity: f64, budget: f64) -> f64 {
    let q = budget / sensitivity;
    // q ≥ ε_t/Δ exactly: a quotient that rounded down is bumped one ulp (fma's sign is exact;
    // a subnormal quotient is bumped regardless).
    // A step that spends nothing loses nothing: an exact 0 stays 0.
    let q = if q.is_finite()
        && budget > 0.0
        && (q < f64::MIN_POSITIVE || q.mul_add(sensitivity, -budget) < 0.0)
    {
        q.next_up()
    } else {
        q
    };
    // The same for the product (exact, hence unchanged, for d_in = 2: a doubling).
    let loss = d_in * q;
    let below = loss < f64::MIN_POSITIVE && d_in > 0.0 && q > 0.0;
    if loss.is_finite() && (below || d_in.mul_add(q, -loss) > 0.0) { loss.next_up() } else { loss }
}

/// a/b rounded up (a ≥ 0 finite, b > 0): never below the real quotient (the sign of the
/// fused multiply-add is exact; a subnormal or zero quotient of a > 0 is bumped regardless).
fn quotient_up(a: f64, b: f64) -> f64 {
    let q = a / b;
    let low = q.is_finite() && a > 0.0 && (q < f64::MIN_POSITIVE || q.mul_add(b, -a) < 0.0);
    if low { q.next_up() } else { q }
}

/// Whether `v` is a count an exact release accepts: an integer (−0 included) with
/// |v| ≤ [`MAX_EXACT_COUNT`], the same as `v.fract() == 0.0 && v.abs() <= MAX_EXACT_COUNT`
/// but branch-free and without the libm call `fract` makes on targets without a rounding
/// instruction, so that a pass over a count vector vectorises: for 0 ≤ a ≤ 2^52, a + 2^52
/// rounds a to the nearest integer (doubles from 2^52 to 2^53 are the integers) and
/// subtracting 2^52 again is exact, so the round trip returns a exactly when a is an integer.
fn is_exact_count(v: f64) -> bool {
    let a = v.abs();
    (a <= MAX_EXACT_COUNT) & ((a + MAX_EXACT_COUNT) - MAX_EXACT_COUNT == a)
}

/// Checks a release's calibration: budget and sensitivity finite and > 0.
fn check_calibration(sensitivity: f64, budget: f64) -> Result<()> {
    tpl_core::check_epsilon(budget)?;
    tpl_core::check_sensitivity(sensitivity)?;
    Ok(())
}

/// The budget to give a release calibrated to L1 sensitivity `sensitivity` so that it spends
/// at most `effective` against the model's neighbours ([`effective_budget`] of the result is
/// ≤ `effective`, as computed in f64): effective·Δ/2, rounded down by as many ulps as that
/// takes. It executes a plan of per-step leakage budgets (the TPL allocators') whatever Δ is.
///
/// ```
/// use tpl_mechanisms::{budget_for_effective, effective_budget};
/// let b = budget_for_effective(0.3, 1.0);
/// assert!(effective_budget(b, 1.0) <= 0.3 && b > 0.149_999);
/// assert_eq!(budget_for_effective(0.3, 2.0), 0.3);
/// ```
pub fn budget_for_effective(effective: f64, sensitivity: f64) -> f64 {
    let mut b = (effective * (sensitivity / DEFAULT_SENSITIVITY)).min(f64::MAX);
    // One rounding in the product and one in the check: a few steps down always suffice
    // (the bound only makes termination obvious; 0 is the fallback that spends nothing).
    for _ in 0..16 {
        if effective_budget(b, sensitivity) <= effective {
            return b;
        }
        b = b.next_down();
    }
    if effective_budget(b, sensitivity) <= effective { b } else { 0.0 }
}

/// One ε-DP release of a query answer a ∈ ℝ^m with L1 sensitivity δ under budget p — a
/// measurement in the sense of OpenDP: a release together with its privacy map.
///
/// Implement it for your own mechanism (it owns its randomness, injected at construction)
/// and every stream scheme of this crate runs it: the scheme decides *when* to publish and
/// with which budget, the mechanism decides *how*. The guarantee a scheme states (w-event
/// ε-DP, [`crate::StreamScheme::guarantee`]) holds as long as `release` is p-DP for answers
/// at L1 distance ≤ δ, that is as long as [`Mechanism::privacy_map`]`(δ, δ, p)` ≤ p.
///
/// Four methods are required ([`Mechanism::name`], [`Mechanism::validate`],
/// [`Mechanism::privacy_map`], [`Mechanism::sample`]) and two are provided
/// ([`Mechanism::check_budget`], [`Mechanism::release`]): `release` checks the budget and the
/// privacy map, runs [`Mechanism::validate`] and only then [`Mechanism::sample`], so no
/// randomness is drawn for an answer the mechanism refuses; stream schemes call `validate`
/// on c_t before their first draw of a step ([`docs/w-event.md`](tpl_core::guide::w_event) §2.1).
/// Override `release` only to keep that order.
///
/// A worked example (a geometric mechanism, run through BD and audited) is
/// `tpl-compare/examples/custom_mechanism.rs`.
pub trait Mechanism {
    /// A short name for reports.
    fn name(&self) -> &str;

    /// Checks, without drawing, that `answer` is something the mechanism can release (e.g.
    /// integers for an integer mechanism). There is no default: a mechanism states what it
    /// accepts.
    ///
    /// # Errors
    /// The reason `answer` cannot be released (a [`MechError::Custom`] for a mechanism's own
    /// reasons).
    fn validate(&self, answer: &[f64]) -> Result<()>;

    /// The privacy map: an upper bound on the privacy loss ε of one release with budget
    /// `budget` calibrated to L1 sensitivity `sensitivity`, between two answers at L1
    /// distance `d_in`. For a mechanism calibrated as promised it is d_in·budget/sensitivity
    /// (the budget itself at d_in = sensitivity); an auditor asks it for the loss against the
    /// neighbours of its own model (e.g. d_in = 2 for one person changing cell).
    ///
    /// # Errors
    /// Parameters the mechanism cannot release with (as for [`Mechanism::release`]), or a
    /// distance that is not finite and ≥ 0 ([`MechError::BadDistance`]).
    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> Result<f64>;

    /// Checks, without drawing, that a release with budget `budget` for L1 sensitivity
    /// `sensitivity` can be drawn at all: both finite and > 0, and whatever limit the
    /// mechanism's sampler has (e.g. the largest noise scale of an exact integer release).
    /// A stream scheme asks it for a step's publication before the step's first draw, so
    /// that no test is drawn for a publication that could not follow
    /// ([`docs/w-event.md`](tpl_core::guide::w_event) §2.1). The default checks the calibration
    /// only.
    ///
    /// # Errors
    /// [`MechError::Core`] (a bad budget or sensitivity) or the mechanism's own limit.
    fn check_budget(&self, sensitivity: f64, budget: f64) -> Result<()> {
        check_calibration(sensitivity, budget)
    }

    /// The raw draw: releases `answer`, which [`Mechanism::validate`] accepted, with budget
    /// `budget` for L1 sensitivity `sensitivity` (both finite and > 0). Called by
    /// [`Mechanism::release`]; call that instead.
    ///
    /// # Errors
    /// A failure of the draw itself (e.g. a sampler's range).
    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>>;

    /// Releases `answer` with budget `budget` for L1 sensitivity `sensitivity`: checks both
    /// parameters, then [`Mechanism::validate`], then draws with [`Mechanism::sample`].
    ///
    /// # Errors
    /// [`MechError::Core`] (a bad budget or sensitivity) or the error of
    /// [`Mechanism::check_budget`] or `validate` (then no randomness was consumed), or of
    /// `sample`.
    fn release(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>> {
        self.check_budget(sensitivity, budget)?;
        check_privacy_map(&*self, sensitivity, budget)?;
        self.validate(answer)?;
        self.sample(answer, sensitivity, budget)
    }
}

/// Checks a measurement as OpenDP's `check` does: the loss [`Mechanism::privacy_map`] states
/// for answers at the calibrated distance (d_in = Δ) is at most the budget the release was
/// given. [`Mechanism::release`] and every draw of a stream scheme run it before drawing.
///
/// # Errors
/// [`MechError::PrivacyMap`] when the map exceeds the budget (or is NaN), or the map's own
/// error.
pub fn check_privacy_map<M: Mechanism + ?Sized>(mechanism: &M, sensitivity: f64, budget: f64) -> Result<()> {
    let loss = mechanism.privacy_map(sensitivity, sensitivity, budget)?;
    if loss <= budget {
        return Ok(());
    }
    Err(MechError::PrivacyMap { mechanism: mechanism.name().to_owned(), sensitivity, budget, loss })
}

impl<M: Mechanism + ?Sized> Mechanism for Box<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn validate(&self, answer: &[f64]) -> Result<()> {
        (**self).validate(answer)
    }

    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> Result<f64> {
        (**self).privacy_map(d_in, sensitivity, budget)
    }

    fn check_budget(&self, sensitivity: f64, budget: f64) -> Result<()> {
        (**self).check_budget(sensitivity, budget)
    }

    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>> {
        (**self).sample(answer, sensitivity, budget)
    }

    fn release(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>> {
        (**self).release(answer, sensitivity, budget)
    }
}

/// The noise scale b of a Laplace release with budget p for sensitivity δ: δ/p, rounded up
/// so that b·p ≥ δ exactly (a division that rounded down is bumped one ulp; the sign of the
/// fused multiply-add is exact). The scale [`LaplaceMechanism`] draws at.
///
/// ```
/// assert_eq!(tpl_mechanisms::laplace_scale(2.0, 0.5), 4.0);
/// assert!(tpl_mechanisms::laplace_scale(1.0, 3.0) * 3.0 >= 1.0);
/// ```
pub fn laplace_scale(sensitivity: f64, budget: f64) -> f64 {
    let scale = sensitivity / budget;
    if scale.mul_add(budget, -sensitivity) < 0.0 { scale.next_up() } else { scale }
}

/// The Laplace mechanism: a + (X_1, …, X_m), X_j ~ Lap(δ/p) independent, drawn in order from
/// its noise source ([`docs/w-event.md`](tpl_core::guide::w_event) §1.3, §2.2). With
/// [`crate::DiscreteLaplace`] the noise is exact integer noise, and integer answers are required.
///
/// With integer noise the release is exact integer arithmetic end to end: answers must be
/// integers with |a| ≤ [`MAX_EXACT_COUNT`] = 2^52, the scale δ/p at most
/// [`MAX_EXACT_SCALE`] = 2^46, and a draw beyond ±2^52 (probability < e^{−64}) fails the
/// release instead of being rounded. Anything else is refused, never released inexactly.
///
/// ```
/// use tpl_mechanisms::{LaplaceMechanism, Mechanism, Scripted};
/// let mut m = LaplaceMechanism::new(Scripted::new([0.5, -1.0]));
/// assert_eq!(m.release(&[10.0, 20.0], 2.0, 1.0)?, vec![10.5, 19.0]);
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
///
/// Not `Clone` (its noise source is not): a copy would repeat the same noise.
#[derive(Debug)]
pub struct LaplaceMechanism<N> {
    noise: N,
}

impl<N: NoiseSource> LaplaceMechanism<N> {
    /// The mechanism drawing from `noise`.
    pub fn new(noise: N) -> Self {
        Self { noise }
    }

    /// The noise source (e.g. to read what a test double recorded).
    pub fn noise(&self) -> &N {
        &self.noise
    }
}

impl<N: NoiseSource> Mechanism for LaplaceMechanism<N> {
    fn name(&self) -> &str {
        "laplace"
    }

    /// Noise of the scale b = [`laplace_scale`]`(δ, p)` it draws at (b·p ≥ δ exactly) makes
    /// answers at L1 distance d_in indistinguishable up to e^{d_in/b}: the loss is d_in/b,
    /// rounded up — at most d_in·p/δ, and at most p for d_in = δ, exactly in f64.
    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> Result<f64> {
        check_calibration(sensitivity, budget)?;
        if !(d_in.is_finite() && d_in >= 0.0) {
            return Err(MechError::BadDistance(d_in));
        }
        Ok(quotient_up(d_in, laplace_scale(sensitivity, budget)))
    }

    /// Scales above [`MAX_EXACT_SCALE`] with integer noise, or that overflow, are refused.
    fn check_budget(&self, sensitivity: f64, budget: f64) -> Result<()> {
        check_calibration(sensitivity, budget)?;
        let scale = laplace_scale(sensitivity, budget);
        let max = if self.noise.integer_valued() { MAX_EXACT_SCALE } else { f64::MAX };
        if scale.is_nan() || scale > max {
            return Err(MechError::ScaleTooLarge { sensitivity, budget, scale, max });
        }
        Ok(())
    }

    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>> {
        self.check_budget(sensitivity, budget)?;
        let scale = laplace_scale(sensitivity, budget);
        let exact = self.noise.integer_valued();
        let mut out = vec![0.0; answer.len()];
        self.noise.fill_laplace(scale, &mut out)?;
        // |a| ≤ 2^52 (validated) and |noise| ≤ 2^52: a + noise is exact. One pass without
        // early exit (it vectorises); a draw out of range (or NaN) fails the whole release.
        let mut in_range = true;
        for (x, &a) in out.iter_mut().zip(answer) {
            in_range &= x.abs() <= MAX_EXACT_COUNT;
            *x += a;
        }
        if exact && !in_range {
            return Err(MechError::NoiseOutOfRange);
        }
        Ok(out)
    }

    /// With integer noise ([`crate::DiscreteLaplace`]) the answer must be integer-valued, and
    /// within ±[`MAX_EXACT_COUNT`].
    fn validate(&self, answer: &[f64]) -> Result<()> {
        if !self.noise.integer_valued() {
            return Ok(());
        }
        // One pass without early exit (it vectorises); the offending cell only for an error.
        if answer.iter().fold(true, |ok, &v| ok & is_exact_count(v)) {
            return Ok(());
        }
        if let Some(&value) = answer.iter().find(|v| v.fract() != 0.0) {
            return Err(MechError::NotInteger { value });
        }
        match answer.iter().position(|v| v.abs() > MAX_EXACT_COUNT) {
            Some(cell) => Err(MechError::CountTooLarge { cell, value: answer[cell] }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
