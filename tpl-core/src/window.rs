//! Leakage of a window of consecutive releases (Theorem 3 of the TKDE paper): the basis of
//! w-event privacy under temporal correlation.

use crate::check::check_window;
use crate::error::{CoreError, Result};

/// Step-by-step read access to a leakage series (0-based steps), so that one window
/// computation serves every representation of a series.
pub(crate) trait Steps {
    /// The horizon T.
    fn len(&self) -> usize;
    /// ε at step t.
    fn epsilon(&self, t: usize) -> f64;
    /// BPL at step t.
    fn bpl(&self, t: usize) -> f64;
    /// FPL at step t.
    fn fpl(&self, t: usize) -> f64;
    /// TPL at step t.
    fn tpl(&self, t: usize) -> f64;
}

/// For every window start t = 1..T−w+1, the leakage of steps t..t+w−1 (Theorem 3,
/// [`docs/model.md`](crate::guide::model) §4): BPL_t + FPL_{t+w−1} + Σ_{k=t+1}^{t+w−2} ε_k for w ≥
/// 2, and TPL_t for w = 1, one at a time; an item is [`CoreError::Overflow`] when its value exceeds
/// the largest double.
///
/// The inner sums come from compensated prefix sums, so a window's value carries one
/// rounding of its own regardless of T; they are then rounded up by one ulp, so that the
/// reported leakage is never below the exact one.
///
/// # Errors
/// [`CoreError::BadWindow`] unless 1 ≤ w ≤ T.
pub(crate) fn checked_windows<S: Steps>(
    series: &S,
    w: usize,
) -> Result<impl Iterator<Item = Result<f64>> + '_> {
    Ok(windows(series, w)?
        .enumerate()
        .map(|(t, v)| if v.is_finite() { Ok(v) } else { Err(CoreError::Overflow { step: t + 1 }) }))
}

/// The largest of [`checked_windows`].
///
/// # Errors
/// As [`checked_windows`], at the first window that overflows.
pub(crate) fn max_window<S: Steps>(series: &S, w: usize) -> Result<f64> {
    checked_windows(series, w)?.try_fold(0.0f64, |max, v| Ok(max.max(v?)))
}

/// The window leakages of [`checked_windows`], unchecked, in O(1) memory:
/// the two compensated prefix sums a window needs (up to its second step and up to its
/// last-but-one) are carried along as the window slides.
fn windows<S: Steps>(series: &S, w: usize) -> Result<impl Iterator<Item = f64> + '_> {
    let t_len = series.len();
    check_window(w, t_len)?;
    // lo: prefix of the first t+1 values; hi: prefix of the first t+w−1 values.
    let mut lo = Neumaier::default();
    let mut hi = Neumaier::default();
    if w >= 2 {
        lo.add(series.epsilon(0));
        for k in 0..w - 1 {
            hi.add(series.epsilon(k));
        }
    }
    Ok((0..=t_len - w).map(move |t| {
        if w == 1 {
            return series.tpl(t);
        }
        let end = t + w - 1;
        let value = window_value(series.bpl(t), series.fpl(end), &lo, &hi, || {
            inner_sum(t + 1..end, |k| series.epsilon(k))
        });
        if end + 1 < t_len {
            lo.add(series.epsilon(t + 1));
            hi.add(series.epsilon(end));
        }
        value
    }))
}

/// Σ of `len` values `value(k)` ≥ 0, compensated and rounded up by one ulp (a leakage bound
/// must not round down); +∞ past the largest double.
pub(crate) fn outward_sum(len: usize, value: impl Fn(usize) -> f64) -> f64 {
    round_up(inner_sum(0..len, value))
}

/// Σ of `value(k)` ≥ 0 for k in `steps`, compensated (one rounding); +∞ past the largest
/// double, where the compensation of an infinite sum would be NaN.
pub(crate) fn inner_sum(steps: std::ops::Range<usize>, value: impl Fn(usize) -> f64) -> f64 {
    let mut acc = Neumaier::default();
    for k in steps {
        acc.add(value(k));
    }
    if acc.is_finite() { acc.sum + acc.comp } else { f64::INFINITY }
}

/// The leakage of a window of w ≥ 2 steps from its first step's BPL, its last step's FPL
/// and the Neumaier prefix sums of ε through its first step (`lo`) and through its
/// last-but-one (`hi`): BPL + (FPL + Σ of the steps strictly inside), rounded up by one ulp.
/// Once a prefix sum has passed the largest double the difference of two of them means
/// nothing (∞ − ∞), so the steps inside are then summed directly by `direct` (O(w), only
/// after such an overflow): a window after a few enormous budgets keeps its exact value.
pub(crate) fn window_value(
    bpl_first: f64,
    fpl_last: f64,
    lo: &Neumaier,
    hi: &Neumaier,
    direct: impl FnOnce() -> f64,
) -> f64 {
    // Σ ε_k for k strictly between the first and the last step.
    let inner = if lo.is_finite() && hi.is_finite() {
        ((hi.sum - lo.sum) + (hi.comp - lo.comp)).max(0.0)
    } else {
        direct()
    };
    round_up(bpl_first + (fpl_last + inner))
}

/// One ulp up for a positive sum that carries rounding; an exact 0 stays 0.
fn round_up(x: f64) -> f64 {
    if x > 0.0 { x.next_up() } else { x }
}

/// A Neumaier running sum: (sum, compensation) of the values added so far.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Neumaier {
    pub(crate) sum: f64,
    pub(crate) comp: f64,
}

impl Neumaier {
    /// Whether the sum and its compensation are finite (a prefix that passed the largest
    /// double is not).
    pub(crate) fn is_finite(&self) -> bool {
        self.sum.is_finite() && self.comp.is_finite()
    }

    pub(crate) fn add(&mut self, v: f64) {
        let t = self.sum + v;
        self.comp += if self.sum.abs() >= v.abs() { (self.sum - t) + v } else { (v - t) + self.sum };
        self.sum = t;
    }
}
