//! A streaming leakage accountant for open-ended releases: feed ε_t as each step is
//! published and read the leakage so far — the same numbers as an audit of all the budgets
//! from scratch, at the cost of the steps whose FPL the new step changes
//! ([`docs/model.md`](crate::guide::model) §8).

use crate::check::{check_window, is_budget};
use crate::correlation::Correlation;
use crate::error::{CoreError, Result};
use crate::loss::{LossEvaluator, PiecewiseLoss};

use crate::series::LeakageSeries;
use crate::window::{Neumaier, inner_sum, window_value};

/// Tracks BPL, FPL and TPL of every step so far, treating the latest step as the last one
/// (its FPL is then its own ε), and — with a window w — the largest leakage of a window of
/// min(w, t) steps (Theorem 3 of the TKDE paper).
///
/// A new step ε_{T+1} changes FPL_t only from the end backwards (FPL_t = L_F(FPL_{t+1}) + ε_t,
/// TKDE eq. (15)), and once one FPL_t comes out bit-identical to its previous value every
/// earlier one does too. So [`LeakageAccountant::push`] recomputes only that changed suffix
/// (a few steps when L_F contracts, all of them only when the leakage grows without bound),
/// and the maxima of TPL and of the window leakage are kept as prefix maxima. Every value is
/// bit-identical to [`crate::CompactSeries`] over the same budgets with the same evaluators.
/// Memory: 32 bytes a step, 56 with a window.
///
/// ```
/// use tpl_core::{Correlation, LeakageAccountant, TransitionMatrix};
/// let p = TransitionMatrix::smoothed_identity(4, 0.1)?;
/// let mut acc = LeakageAccountant::new(&Correlation::new(Some(p.clone()), Some(p))?).with_window(3)?;
/// let b1 = acc.push(0.5)?;
/// let b2 = acc.push(0.5)?;
/// assert_eq!(b1, 0.5);
/// assert!(b2 > 0.5);
/// let would = acc.max_tpl_with(0.5)?; // nothing recorded
/// acc.push(0.5)?;
/// assert_eq!(acc.max_tpl(), Some(would));
/// assert_eq!(acc.series().unwrap().tpl().len(), 3);
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone)]
pub struct LeakageAccountant {
    backward: Option<PiecewiseLoss>,
    forward: Option<PiecewiseLoss>,
    window: Option<usize>,
    epsilon: Vec<f64>,
    bpl: Vec<f64>,
    /// FPL_t with the latest step as the last.
    fpl: Vec<f64>,
    /// max_{s ≤ t} TPL_s, with the latest step as the last.
    tpl_max: Vec<f64>,
    /// Neumaier sums of ε_1..ε_t (kept with a window).
    prefix: Vec<Neumaier>,
    /// The largest leakage of a full window of w steps ending at or before t (0 before the
    /// first full window; kept with a window).
    window_max: Vec<f64>,
}

/// The first bytes of [`LeakageAccountant::history`] (its format's name and version).
const HISTORY_MAGIC: &[u8; 8] = b"tplacc01";

/// What recording ε_{T+1}..ε_N changes: computed first, written only when every value is
/// finite.
struct Update {
    /// BPL of the new steps.
    bpl: Vec<f64>,
    /// The first step (0-based) whose FPL changes; `fpl[k]` is the new FPL of step from + k.
    from: usize,
    fpl: Vec<f64>,
    /// The new prefix maxima of TPL from `from` on.
    tpl_max: Vec<f64>,
    /// Neumaier sums of the budgets through each new step (with a window).
    prefix: Vec<Neumaier>,
    /// The new prefix maxima of the full windows ending at steps from `from` on.
    window_max: Vec<f64>,
}

impl LeakageAccountant {
    /// An accountant for an adversary who knows `correlation`, with its piecewise loss
    /// functions (the TKDE paper's Algorithms 2 and 4; computed now unless the correlation
    /// already holds them, so that an allocator's audit of the same correlation computes
    /// bit-identical values).
    pub fn new(correlation: &Correlation) -> Self {
        let (backward, forward) = (correlation.backward_loss().cloned(), correlation.forward_loss().cloned());
        Self {
            backward,
            forward,
            window: None,
            epsilon: Vec::new(),
            bpl: Vec::new(),
            fpl: Vec::new(),
            tpl_max: Vec::new(),
            prefix: Vec::new(),
            window_max: Vec::new(),
        }
    }

    /// Also tracks the largest leakage of a window of min(w, t) steps
    /// ([`LeakageAccountant::max_window_leakage`]); set before the first step.
    ///
    /// # Errors
    /// [`CoreError::BadWindow`] for w = 0, or once steps are recorded.
    pub fn with_window(mut self, w: usize) -> Result<Self> {
        if w == 0 || !self.epsilon.is_empty() {
            return Err(CoreError::BadWindow { window: w, horizon: self.epsilon.len() });
        }
        self.window = Some(w);
        Ok(self)
    }

    /// Records a step that spent ε_t and returns its BPL_t.
    ///
    /// # Errors
    /// [`CoreError::BadBudget`] for a negative or non-finite ε_t, [`CoreError::Overflow`]
    /// when a leakage exceeds the largest double (nothing is recorded then).
    pub fn push(&mut self, eps: f64) -> Result<f64> {
        let u = self.update(&[eps])?;
        self.apply(&[eps], u);
        Ok(self.bpl[self.bpl.len() - 1])
    }

    /// Records the steps that spent `budgets`, in order: the same values, bit for bit, as
    /// [`LeakageAccountant::push`] of each in turn, in the time of one pass over the new steps
    /// and the recorded ones whose FPL they change — O(N + S) evaluations of L for N new steps
    /// and S recorded ones changed, where pushing them one by one walks back over the changed
    /// suffix at every step (hundreds of steps each when L_F contracts slowly;
    /// [`docs/model.md`](crate::guide::model) §8). A stream read from its file records all its
    /// steps with one call.
    ///
    /// ```
    /// use tpl_core::{Correlation, LeakageAccountant, TransitionMatrix};
    /// let p = TransitionMatrix::smoothed_identity(3, 0.2)?;
    /// let eps = [0.3, 0.0, 0.1, 0.25, 0.05];
    /// let known = Correlation::new(Some(p.clone()), Some(p))?;
    /// let mut one_by_one = LeakageAccountant::new(&known).with_window(2)?;
    /// for &e in &eps {
    ///     one_by_one.push(e)?;
    /// }
    /// let mut at_once = LeakageAccountant::new(&known).with_window(2)?;
    /// at_once.extend(&eps[..2])?;
    /// at_once.extend(&eps[2..])?;
    /// assert_eq!(at_once.history(), one_by_one.history());
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// As [`LeakageAccountant::push`] at the first step that fails; the steps before it are
    /// recorded.
    pub fn extend(&mut self, budgets: &[f64]) -> Result<()> {
        if budgets.is_empty() {
            return Ok(());
        }
        // A budget that is not one: the steps before it, then its push's error.
        if let Some(i) = budgets.iter().position(|&e| !is_budget(e)) {
            self.extend(&budgets[..i])?;
            return self.push(budgets[i]).map(drop);
        }
        match self.update(budgets) {
            Ok(u) => {
                self.apply(budgets, u);
                Ok(())
            }
            // Step by step, so that the steps before the one that fails are recorded and the
            // error is the one its push gives.
            Err(_) if budgets.len() > 1 => budgets.iter().try_for_each(|&e| self.push(e).map(drop)),
            Err(e) => Err(e),
        }
    }

    /// Writes what [`LeakageAccountant::update`] computed for `new`.
    fn apply(&mut self, new: &[f64], u: Update) {
        self.epsilon.extend_from_slice(new);
        self.bpl.extend_from_slice(&u.bpl);
        self.fpl.truncate(u.from);
        self.fpl.extend_from_slice(&u.fpl);
        self.tpl_max.truncate(u.from);
        self.tpl_max.extend_from_slice(&u.tpl_max);
        if self.window.is_some() {
            self.prefix.extend_from_slice(&u.prefix);
            self.window_max.truncate(u.from);
            self.window_max.extend_from_slice(&u.window_max);
        }
        debug_assert_eq!(self.tpl_max.len(), self.epsilon.len());
        debug_assert_eq!(self.fpl.len(), self.epsilon.len());
    }

    /// The steps recorded so far, as bytes that [`LeakageAccountant::restored`] reads back
    /// into an accountant of the same evaluators and window: every series it keeps (O(T)
    /// doubles), so that a process can go on from them instead of recording every step again.
    pub fn history(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + 8 * (7 * self.epsilon.len() + 8));
        out.extend_from_slice(HISTORY_MAGIC);
        out.extend_from_slice(&(self.window.unwrap_or(0) as u64).to_le_bytes());
        let sums: Vec<f64> = self.prefix.iter().map(|n| n.sum).collect();
        let comps: Vec<f64> = self.prefix.iter().map(|n| n.comp).collect();
        for series in [&self.epsilon, &self.bpl, &self.fpl, &self.tpl_max, &sums, &comps, &self.window_max] {
            out.extend_from_slice(&(series.len() as u64).to_le_bytes());
            series.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
        out
    }

    /// This accountant (which has recorded no step) with the steps of `history`
    /// ([`LeakageAccountant::history`] of an accountant of the same evaluators and window):
    /// recording on from it gives, bit for bit, what the accountant that wrote it would have.
    /// `None` for bytes that are not such a history (this one's window, series of consistent
    /// lengths, finite values), or when this one has steps.
    pub fn restored(&self, history: &[u8]) -> Option<Self> {
        if !self.epsilon.is_empty() {
            return None;
        }
        let rest = history.strip_prefix(HISTORY_MAGIC.as_slice())?;
        let (window, mut rest) = rest.split_first_chunk::<8>()?;
        if u64::from_le_bytes(*window) != self.window.unwrap_or(0) as u64 {
            return None;
        }
        let mut series = Vec::with_capacity(7);
        for _ in 0..7 {
            let (len, tail) = rest.split_first_chunk::<8>()?;
            let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
            let bytes = tail.get(..len.checked_mul(8)?)?;
            series.push(
                bytes
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect::<Vec<f64>>(),
            );
            rest = &tail[len * 8..];
        }
        let [epsilon, bpl, fpl, tpl_max, sums, comps, window_max]: [Vec<f64>; 7] = series.try_into().ok()?;
        let t = epsilon.len();
        let windowed = self.window.is_some();
        let fits = rest.is_empty()
            && [&bpl, &fpl, &tpl_max].iter().all(|s| s.len() == t)
            && sums.len() == comps.len()
            && sums.len() == if windowed { t } else { 0 }
            && window_max.len() <= if windowed { t } else { 0 }
            && [&epsilon, &bpl, &fpl, &tpl_max, &sums, &comps, &window_max]
                .iter()
                .all(|s| s.iter().all(|v| v.is_finite()));
        fits.then(|| Self {
            epsilon,
            bpl,
            fpl,
            tpl_max,
            prefix: sums.into_iter().zip(comps).map(|(sum, comp)| Neumaier { sum, comp }).collect(),
            window_max,
            ..self.clone()
        })
    }

    /// The largest TPL over steps 1..T+1 if step T + 1 spent `eps`; nothing is recorded.
    ///
    /// # Errors
    /// As [`LeakageAccountant::push`].
    pub fn max_tpl_with(&self, eps: f64) -> Result<f64> {
        Ok(self.update(&[eps])?.tpl_max.last().copied().unwrap_or(0.0))
    }

    /// What recording the non-empty `new` would change, checked finite.
    fn update(&self, new: &[f64]) -> Result<Update> {
        let old = self.epsilon.len();
        let len = old + new.len();
        if let Some(i) = new.iter().position(|&e| !is_budget(e)) {
            return Err(CoreError::BadBudget { step: old + i + 1, value: new[i] });
        }
        let Some(&last) = new.last() else {
            return Err(CoreError::BadBudget { step: old + 1, value: f64::NAN });
        };
        let overflow = |t: usize| CoreError::Overflow { step: t + 1 };
        let mut bpl = Vec::with_capacity(new.len());
        let mut prev = self.bpl.last().copied();
        for (i, &e) in new.iter().enumerate() {
            let value = match (&self.backward, prev) {
                (Some(l), Some(p)) => l.loss(p) + e,
                _ => e,
            };
            if !value.is_finite() {
                return Err(overflow(old + i));
            }
            bpl.push(value);
            prev = Some(value);
        }
        let mut prefix = Vec::new();
        if self.window.is_some() {
            let mut sum = self.prefix.last().copied().unwrap_or_default();
            prefix = new
                .iter()
                .map(|&e| {
                    sum.add(e);
                    sum
                })
                .collect();
        }
        let view = View { acc: self, new, bpl: &bpl, prefix: &prefix };
        // FPL backwards from the new last step, through the new steps and into the recorded
        // ones until a value repeats bit for bit.
        let mut fpl = vec![last];
        let mut next = last;
        for t in (0..len - 1).rev() {
            let value = match &self.forward {
                Some(l) => l.loss(next) + view.eps(t),
                None => view.eps(t),
            };
            if t < old && value.to_bits() == self.fpl[t].to_bits() {
                break;
            }
            if !value.is_finite() {
                return Err(overflow(t));
            }
            fpl.push(value);
            next = value;
        }
        fpl.reverse();
        let from = len - fpl.len();
        let mut tpl_max = Vec::with_capacity(fpl.len());
        let mut max = if from > 0 { self.tpl_max[from - 1] } else { 0.0 };
        for t in from..len {
            let tpl = view.bpl(t) + (fpl[t - from] - view.eps(t));
            if !tpl.is_finite() {
                return Err(overflow(t));
            }
            max = max.max(tpl);
            tpl_max.push(max);
        }
        let window_max = match self.window {
            None => Vec::new(),
            Some(w) => view.windows(w, from, &fpl)?,
        };
        Ok(Update { bpl, from, fpl, tpl_max, prefix, window_max })
    }

    /// Steps recorded so far.
    pub fn len(&self) -> usize {
        self.epsilon.len()
    }

    /// True before the first step.
    pub fn is_empty(&self) -> bool {
        self.epsilon.is_empty()
    }

    /// ε_t of every step so far.
    pub fn budgets(&self) -> &[f64] {
        &self.epsilon
    }

    /// BPL_t of every step so far (final values).
    pub fn bpl(&self) -> &[f64] {
        &self.bpl
    }

    /// max_t TPL_t over the steps so far, or `None` before any step.
    pub fn max_tpl(&self) -> Option<f64> {
        self.tpl_max.last().copied()
    }

    /// With a window w: the largest leakage of a window of min(w, T) steps over the steps
    /// so far (as [`crate::CompactSeries::max_window_leakage`]); `None` without a window or
    /// before any step.
    ///
    /// # Errors
    /// [`CoreError::Overflow`] when the one window of fewer than w steps overflows.
    pub fn max_window_leakage(&self) -> Result<Option<f64>> {
        let (Some(w), Some(&max)) = (self.window, self.window_max.last()) else { return Ok(None) };
        if self.len() >= w {
            return Ok(Some(max));
        }
        // Fewer steps than w: the one window of all of them (recomputed: O(1)).
        let t = self.len() - 1;
        if t == 0 {
            return Ok(Some(self.bpl[0] + (self.fpl[0] - self.epsilon[0])));
        }
        let direct = || inner_sum(1..t, |k| self.epsilon[k]);
        let v = window_value(self.bpl[0], self.fpl[t], &self.prefix[0], &self.prefix[t - 1], direct);
        if v.is_finite() { Ok(Some(v)) } else { Err(CoreError::Overflow { step: 1 }) }
    }

    /// The full series as if the latest step were the last, or `None` before any step.
    pub fn series(&self) -> Option<LeakageSeries> {
        if self.epsilon.is_empty() {
            return None;
        }
        Some(LeakageSeries::assemble(self.epsilon.clone(), self.bpl.clone(), self.fpl.clone()))
    }
}

/// The recorded steps and the new ones of an update, as one series (0-based steps).
struct View<'a> {
    acc: &'a LeakageAccountant,
    new: &'a [f64],
    /// BPL and Neumaier prefix sums (with a window) of the new steps.
    bpl: &'a [f64],
    prefix: &'a [Neumaier],
}

impl View<'_> {
    fn old(&self) -> usize {
        self.acc.epsilon.len()
    }

    fn eps(&self, t: usize) -> f64 {
        if t < self.old() { self.acc.epsilon[t] } else { self.new[t - self.old()] }
    }

    fn bpl(&self, t: usize) -> f64 {
        if t < self.old() { self.acc.bpl[t] } else { self.bpl[t - self.old()] }
    }

    /// Sum of the budgets through step t.
    fn prefix(&self, t: usize) -> Neumaier {
        if t < self.old() { self.acc.prefix[t] } else { self.prefix[t - self.old()] }
    }

    /// The leakage of the window of `size` steps ending at `end`, whose FPL is `fpl_end`, as
    /// `CompactSeries` computes it.
    fn value(&self, end: usize, size: usize, fpl_end: f64) -> Result<f64> {
        let v = if size == 1 {
            self.bpl(end) + (fpl_end - self.eps(end))
        } else {
            let first = end + 1 - size;
            let direct = || inner_sum(first + 1..end, |k| self.eps(k));
            window_value(self.bpl(first), fpl_end, &self.prefix(first), &self.prefix(end - 1), direct)
        };
        if v.is_finite() { Ok(v) } else { Err(CoreError::Overflow { step: end + 2 - size }) }
    }

    /// Prefix maxima of the full windows of `w` steps ending at `from`.. (0 before the first
    /// full window), each step's one window of all steps checked while there are fewer than
    /// `w` — as recording the new steps one by one computes them. `fpl` holds the new FPL of
    /// steps `from`.. (every later value of the update).
    fn windows(&self, w: usize, from: usize, fpl: &[f64]) -> Result<Vec<f64>> {
        let len = self.old() + self.new.len();
        // While fewer than w steps: the window of all of them, the latest having FPL = its ε.
        for last in self.old()..len.min(w - 1) {
            self.value(last, last + 1, self.eps(last))?;
        }
        if len < w {
            return Ok(vec![0.0; len - from]);
        }
        check_window(w, len)?;
        let mut out = Vec::with_capacity(len - from);
        let mut max = if from > 0 { self.acc.window_max[from - 1] } else { 0.0 };
        for end in from..len {
            if end + 1 >= w {
                max = max.max(self.value(end, w, fpl[end - from])?);
            }
            out.push(max);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{both_sides, forward_only};
    use crate::{Budgets, CompactSeries, Correlation, TransitionMatrix};

    /// The batch series of the same budgets with the same (piecewise) evaluators.
    fn batch(p: &TransitionMatrix, eps: &[f64]) -> CompactSeries {
        let l = PiecewiseLoss::new(p);
        CompactSeries::compute(Some(&l), Some(&l), Budgets::PerStep(eps.to_vec())).unwrap()
    }

    #[test]
    fn an_accountant_restored_from_its_history_goes_on_bit_for_bit() {
        let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]]).unwrap();
        let eps: Vec<f64> =
            (0..50).map(|t| [0.1, 0.0, 0.35, 0.2, 0.05][t % 5] * (1.0 + t as f64 / 9.0)).collect();
        for w in [None, Some(1), Some(4), Some(70)] {
            let fresh = || {
                let a = LeakageAccountant::new(&both_sides(&p));
                w.map_or(a.clone(), |w| a.with_window(w).unwrap())
            };
            let mut whole = fresh();
            for &e in &eps {
                whole.push(e).unwrap();
            }
            for cut in [0, 1, 3, 17, 49] {
                let mut first = fresh();
                for &e in &eps[..cut] {
                    first.push(e).unwrap();
                }
                let mut resumed = fresh().restored(&first.history()).unwrap();
                for &e in &eps[cut..] {
                    resumed.push(e).unwrap();
                }
                assert_eq!(resumed.history(), whole.history(), "w {w:?} cut {cut}");
                assert_eq!(resumed.max_tpl().map(f64::to_bits), whole.max_tpl().map(f64::to_bits));
            }
        }
        // Another window (or none), a truncated or altered history, or an accountant with steps:
        // refused.
        let mut four = LeakageAccountant::new(&both_sides(&p)).with_window(4).unwrap();
        for &e in &eps[..10] {
            four.push(e).unwrap();
        }
        let h = four.history();
        assert!(LeakageAccountant::new(&both_sides(&p)).restored(&h).is_none());
        assert!(LeakageAccountant::new(&both_sides(&p)).with_window(5).unwrap().restored(&h).is_none());
        assert!(four.restored(&h).is_none());
        let fresh4 = LeakageAccountant::new(&both_sides(&p)).with_window(4).unwrap();
        assert!(fresh4.restored(&h[..h.len() - 8]).is_none());
        let mut bad = h.clone();
        bad[24..32].copy_from_slice(&f64::NAN.to_le_bytes());
        assert!(fresh4.restored(&bad).is_none());
        assert!(fresh4.restored(b"not a history").is_none());
    }

    #[test]
    fn every_prefix_matches_the_batch_audit_bit_for_bit() {
        let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]]).unwrap();
        let eps: Vec<f64> =
            (0..60).map(|t| [0.1, 0.0, 0.35, 0.2, 0.05][t % 5] * (1.0 + t as f64 / 7.0)).collect();
        for w in [1, 2, 4, 9, 100] {
            let mut acc = LeakageAccountant::new(&both_sides(&p)).with_window(w).unwrap();
            for t in 0..eps.len() {
                let would = acc.max_tpl_with(eps[t]).unwrap();
                acc.push(eps[t]).unwrap();
                let s = batch(&p, &eps[..=t]);
                assert_eq!(acc.max_tpl().unwrap().to_bits(), s.max_tpl().to_bits(), "w {w} t {t}");
                assert_eq!(would.to_bits(), s.max_tpl().to_bits());
                let wl = s.max_window_leakage(w.min(t + 1)).unwrap();
                assert_eq!(acc.max_window_leakage().unwrap().unwrap().to_bits(), wl.to_bits(), "w {w} t {t}");
            }
        }
    }

    #[test]
    fn a_contracting_forward_loss_recomputes_only_a_short_suffix() {
        let p = TransitionMatrix::smoothed_identity(3, 1.0).unwrap();
        let mut acc = LeakageAccountant::new(&forward_only(&p));
        for _ in 0..5000 {
            acc.push(0.1).unwrap();
        }
        let u = acc.update(&[0.1]).unwrap();
        assert!(u.fpl.len() < 200, "{} steps recomputed", u.fpl.len());
    }

    #[test]
    fn extend_records_the_steps_before_a_bad_budget_and_names_it() {
        let p = TransitionMatrix::smoothed_identity(3, 0.3).unwrap();
        let mut acc = LeakageAccountant::new(&both_sides(&p)).with_window(3).unwrap();
        let mut pushed = acc.clone();
        acc.push(0.2).unwrap();
        let err = acc.extend(&[0.1, 0.4, f64::NAN, 0.3]).unwrap_err();
        assert!(matches!(err, CoreError::BadBudget { step: 4, .. }), "{err}");
        for e in [0.2, 0.1, 0.4] {
            pushed.push(e).unwrap();
        }
        assert_eq!(acc.history(), pushed.history());
        acc.extend(&[]).unwrap();
        assert_eq!(acc.len(), 3);
    }

    #[test]
    fn a_bad_budget_or_window_is_refused_and_nothing_is_recorded() {
        let mut acc = LeakageAccountant::new(&Correlation::none()).with_window(2).unwrap();
        assert!(matches!(acc.push(-1.0), Err(CoreError::BadBudget { step: 1, .. })));
        assert!(acc.is_empty());
        acc.push(0.5).unwrap();
        assert!(acc.clone().with_window(3).is_err());
        assert!(LeakageAccountant::new(&Correlation::none()).with_window(0).is_err());
    }
}
