//! The temporal privacy loss function L(α) of TKDE eq. (24), its three evaluators, and the
//! entry point [`Loss`] that picks one for a workload.
//!
//! L(α) is the largest increase of leakage one step of correlation can cause: with
//! BPL_{t−1} = α, BPL_t = L_B(α) + ε_t. It is the maximum, over ordered pairs of distinct
//! rows (q, d) and subsets S of states, of log((1 + x q_S)/(1 + x d_S)), x = e^α − 1.
//! Properties used throughout: 0 ≤ L(α) ≤ α, L is non-decreasing, L ≡ 0 when all rows are
//! equal (Theorem 6) and L(α) = α when two rows have disjoint supports (Theorem 7).

use crate::candidate::Candidate;
use crate::chains::{self, Candidates};
use crate::direct::loss_direct;
use crate::envelope::Envelope;
use crate::error::{CoreError, Result};
use crate::matrix::{Form, TransitionMatrix};
use crate::structure::Rows;

/// Something that evaluates L(α).
///
/// Implementations take α as a finite number ≥ 0 (what leakage values are) and return
/// L(α) ∈ [0, α]; they do not validate, so that series loops stay cheap. Use
/// [`Loss::evaluate`] for a checked call.
pub trait LossEvaluator {
    /// L(α) for a finite α ≥ 0.
    fn loss(&self, alpha: f64) -> f64;
}

/// Algorithm 1 of the TKDE paper: every evaluation solves all n(n−1) pair problems anew.
/// No setup beyond noting whether the rows have few distinct entries; O(n³) per α, O(n²·k)
/// for rows of k entries besides a common value ([`docs/model.md`](crate::guide::model) §3).
/// Best for one or two evaluations.
#[derive(Debug, Clone)]
pub struct DirectLoss {
    /// The matrix's rows, dense or as bases and exceptions.
    form: Form<'static>,
}

impl DirectLoss {
    /// Wraps a matrix; only its row structure is looked for (O(n²)).
    pub fn new(matrix: &TransitionMatrix) -> Self {
        Self { form: matrix.form().into_owned() }
    }
}

impl DirectLoss {
    /// L(α) for a finite α ≥ 0 (as [`LossEvaluator::loss`]), calling `progress(done, n)`
    /// after the pairs of each of the n rows: an O(n³) evaluation at n = 3000 takes minutes.
    pub fn loss_with_progress(&self, alpha: f64, progress: &dyn Fn(usize, usize)) -> f64 {
        loss_direct(Rows::new(&self.form, None), alpha, progress)
    }
}

impl LossEvaluator for DirectLoss {
    fn loss(&self, alpha: f64) -> f64 {
        loss_direct(Rows::new(&self.form, None), alpha, &no_progress)
    }
}

/// The progress hook that reports nothing.
fn no_progress(_done: usize, _total: usize) {}

/// Algorithms 2–3 of the TKDE paper: the prefix chain of every ordered pair of rows is
/// precomputed with its transition points (Theorem 8); an evaluation finds each pair's
/// segment by binary search and takes the maximum over pairs. Pairs whose chain provably
/// lies under the hull of other pairs' candidates are not stored
/// ([`docs/model.md`](crate::guide::model) §3, "How `tpl` evaluates it"). Setup O(n³ + n² n log n)
/// in the worst case; O(k log n) per α for k kept pairs.
#[derive(Debug, Clone)]
pub struct PairTableLoss {
    identity: bool,
    chains: Vec<Envelope>,
}

impl PairTableLoss {
    /// Precomputes the pair chains of `matrix` as [`PairTableLoss::new`] does, calling
    /// `progress(done, n)` once the pairs of row `done` are scanned.
    pub fn with_progress(matrix: &TransitionMatrix, progress: &dyn Fn(usize, usize)) -> Self {
        match chains::candidates(matrix, true, progress) {
            Candidates::Identity => Self { identity: true, chains: Vec::new() },
            Candidates::Found { chains, .. } => {
                Self { identity: false, chains: chains.into_iter().map(Envelope::from_points).collect() }
            }
        }
    }

    /// Precomputes the pair chains of `matrix`, keeping those not pruned.
    pub fn new(matrix: &TransitionMatrix) -> Self {
        Self::with_progress(matrix, &no_progress)
    }

    /// Number of pair chains kept after pruning.
    pub fn kept_pairs(&self) -> usize {
        self.chains.len()
    }
}

impl LossEvaluator for PairTableLoss {
    fn loss(&self, alpha: f64) -> f64 {
        if self.identity {
            return alpha;
        }
        self.chains.iter().map(|c| c.eval(alpha)).fold(0.0, f64::max).min(alpha)
    }
}

/// Algorithms 4–5 of the TKDE paper: L as an explicit piecewise function on [0, ∞).
/// Setup as [`PairTableLoss`] plus one hull; O(log m) per α for m pieces, well under a
/// microsecond. Also answers the supremum question of Theorem 11
/// ([`PiecewiseLoss::supremum`]).
///
/// ```
/// use tpl_core::{LossEvaluator, PiecewiseLoss, TransitionMatrix};
/// // The matrix of Example 4 / Fig. 4 of the TKDE paper.
/// let p = TransitionMatrix::new(vec![
///     vec![0.1, 0.2, 0.7],
///     vec![0.3, 0.3, 0.4],
///     vec![0.5, 0.3, 0.2],
/// ])?;
/// let l = PiecewiseLoss::new(&p);
/// assert!((l.loss(1.0) - 0.4943335144572836).abs() < 1e-12);
/// // For large α it tends to the largest log(q_i/d_i) over pairs: log(0.5/0.1) = log 5.
/// assert!((l.loss(1000.0) - 5f64.ln()).abs() < 1e-12);
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PiecewiseLoss {
    identity: bool,
    envelope: Envelope,
}

/// One piece of L: on [`alpha_from`, `alpha_to`], L(α) = log((1 + x q)/(1 + x d)).
///
/// [`alpha_from`]: Segment::alpha_from
/// [`alpha_to`]: Segment::alpha_to
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Left end of the piece.
    pub alpha_from: f64,
    /// Right end of the piece.
    pub alpha_to: f64,
    /// q_S of the optimal candidate on the piece.
    pub q: f64,
    /// d_S of the optimal candidate on the piece.
    pub d: f64,
}

impl PiecewiseLoss {
    /// Builds the piecewise form of L for `matrix`.
    pub fn new(matrix: &TransitionMatrix) -> Self {
        Self::with_progress(matrix, &no_progress)
    }

    /// As [`PiecewiseLoss::new`], calling `progress(done, n)` after the pairs of each of the
    /// n rows have been scanned (the O(n³) part of the setup: minutes at n = 3000).
    ///
    /// ```
    /// use std::cell::Cell;
    /// use tpl_core::{PiecewiseLoss, TransitionMatrix};
    /// let p = TransitionMatrix::smoothed_identity(4, 0.5)?;
    /// let rows = Cell::new(0);
    /// let l = PiecewiseLoss::with_progress(&p, &|done, total| { assert!(done <= total); rows.set(done) });
    /// assert_eq!(rows.get(), 4);
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    pub fn with_progress(matrix: &TransitionMatrix, progress: &dyn Fn(usize, usize)) -> Self {
        match chains::candidates(matrix, false, progress) {
            Candidates::Identity => Self { identity: true, envelope: Envelope::default() },
            Candidates::Found { envelope, .. } => Self { identity: false, envelope },
        }
    }

    /// The piecewise function whose [`PiecewiseLoss::candidates`] and
    /// [`PiecewiseLoss::is_identity`] are these: the set-up of a matrix kept from an earlier
    /// run (a durable stream stores it), rebuilt in O(m log m) for m candidates instead of the
    /// O(n³) scan. The values are bit for bit those of the function the candidates came from.
    ///
    /// # Errors
    /// [`CoreError::BadCandidate`] for a candidate that is not finite with d ≥ 0 and δ > 0, or
    /// for candidates given with `identity` (L(α) = α has none).
    ///
    /// ```
    /// use tpl_core::{LossEvaluator, PiecewiseLoss, TransitionMatrix};
    /// let p = TransitionMatrix::smoothed_identity(5, 0.1)?;
    /// let l = PiecewiseLoss::new(&p);
    /// let kept = PiecewiseLoss::from_candidates(l.is_identity(), l.candidates().to_vec())?;
    /// assert_eq!(kept.loss(0.7), l.loss(0.7));
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    pub fn from_candidates(identity: bool, candidates: Vec<Candidate>) -> Result<Self> {
        if let Some(k) = candidates.iter().position(|c| {
            !(c.d.is_finite() && c.delta.is_finite() && c.d >= 0.0 && c.delta > 0.0) || identity
        }) {
            return Err(CoreError::BadCandidate {
                index: k + 1,
                d: candidates[k].d,
                delta: candidates[k].delta,
            });
        }
        Ok(Self { identity, envelope: Envelope::from_points(candidates) })
    }

    /// True when L(α) = α (Theorem 7: two rows with disjoint supports).
    pub fn is_identity(&self) -> bool {
        self.identity
    }

    /// True when L ≡ 0 (Theorem 6: all rows equal).
    pub fn is_zero(&self) -> bool {
        !self.identity && self.envelope.is_empty()
    }

    /// The candidates (q_S − d_S, d_S) that are optimal somewhere on [0, ∞), in the order in
    /// which they take over as α grows. Empty for L ≡ 0 and for L(α) = α.
    pub fn candidates(&self) -> &[Candidate] {
        self.envelope.vertices()
    }

    /// The pieces of L on [0, `alpha_max`], left to right. Pieces narrower than 1e-9 are
    /// absorbed by their left neighbour (near α = 0, a pair and its reverse have equal slope
    /// and rounding can let either win on an interval of width ~1e-15). For L(α) = α the
    /// single piece has q = 1, d = 0; for L ≡ 0 it has q = d = 0.
    pub fn segments(&self, alpha_max: f64) -> Vec<Segment> {
        let piece =
            |from: f64, to: f64, c: Candidate| Segment { alpha_from: from, alpha_to: to, q: c.q(), d: c.d };
        if self.identity {
            return vec![piece(0.0, alpha_max, Candidate { d: 0.0, delta: 1.0 })];
        }
        let verts = self.envelope.vertices();
        if verts.is_empty() {
            return vec![piece(0.0, alpha_max, Candidate { d: 0.0, delta: 0.0 })];
        }
        let mut out: Vec<Segment> = Vec::new();
        let (mut from, mut carried) = (0.0, None);
        for (k, &v) in verts.iter().enumerate() {
            let to = self.envelope.breaks().get(k).copied().unwrap_or(f64::INFINITY).min(alpha_max);
            if to - from < 1e-9 && to < alpha_max {
                // Too narrow: the left neighbour absorbs it, or the right one if it is first.
                match out.last_mut() {
                    Some(last) => last.alpha_to = to,
                    None => carried = carried.or(Some(from)),
                }
            } else {
                out.push(piece(carried.take().unwrap_or(from), to, v));
            }
            from = to;
            if to >= alpha_max {
                break;
            }
        }
        out
    }

    /// The evaluation behind [`LossEvaluator::loss`].
    fn value(&self, alpha: f64) -> f64 {
        if self.identity {
            return alpha;
        }
        self.envelope.eval(alpha).min(alpha)
    }
}

impl LossEvaluator for PiecewiseLoss {
    fn loss(&self, alpha: f64) -> f64 {
        self.value(alpha)
    }
}

/// The evaluator [`Loss::new`] picked.
#[derive(Debug, Clone)]
pub enum Loss {
    /// Few evaluations: [`DirectLoss`].
    Direct(DirectLoss),
    /// Many evaluations: [`PiecewiseLoss`].
    Piecewise(PiecewiseLoss),
}

/// Up to this many evaluations, each α is solved directly. A direct solve costs about a
/// seventh of the piecewise set-up (n = 200, `loss/cold-*` benches), so a few more would be
/// cheaper solved directly too; the threshold stays where it was so that a workload keeps
/// getting the same values (the evaluators agree to 1e-12, not bit for bit).
pub(crate) const DIRECT_MAX_EVALUATIONS: usize = 2;

impl Loss {
    /// The cheapest evaluator for about `evaluations` calls: Algorithm 1 for one or two α,
    /// the piecewise function (Algorithms 4–5) for a series.
    ///
    /// ```
    /// use tpl_core::{Loss, TransitionMatrix};
    /// let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]])?;
    /// let once = Loss::new(&p, 1);
    /// let many = Loss::new(&p, 1000);
    /// assert!((once.evaluate(1.0)? - many.evaluate(1.0)?).abs() < 1e-15);
    /// assert!(once.evaluate(-1.0).is_err());
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    pub fn new(matrix: &TransitionMatrix, evaluations: usize) -> Self {
        Self::with_progress(matrix, evaluations, &no_progress)
    }

    /// As [`Loss::new`], calling `progress(done, n)` per row scanned while the piecewise
    /// function is built (nothing is built for the direct evaluator; see
    /// [`Loss::loss_with_progress`] for its evaluations).
    pub fn with_progress(
        matrix: &TransitionMatrix,
        evaluations: usize,
        progress: &dyn Fn(usize, usize),
    ) -> Self {
        if evaluations <= DIRECT_MAX_EVALUATIONS {
            Self::Direct(DirectLoss::new(matrix))
        } else {
            Self::Piecewise(PiecewiseLoss::with_progress(matrix, progress))
        }
    }

    /// L(α) for a finite α ≥ 0 (as [`LossEvaluator::loss`]); the direct evaluator calls
    /// `progress(done, n)` per row of pairs ([`DirectLoss::loss_with_progress`]), the
    /// piecewise one answers at once and does not call it.
    pub fn loss_with_progress(&self, alpha: f64, progress: &dyn Fn(usize, usize)) -> f64 {
        match self {
            Self::Direct(l) => l.loss_with_progress(alpha, progress),
            Self::Piecewise(l) => l.loss(alpha),
        }
    }

    /// L(α), checked: α must be finite and ≥ 0.
    ///
    /// # Errors
    /// [`CoreError::BadLossArgument`] for a negative, NaN or infinite α.
    pub fn evaluate(&self, alpha: f64) -> Result<f64> {
        if !(alpha.is_finite() && alpha >= 0.0) {
            return Err(CoreError::BadLossArgument(alpha));
        }
        Ok(self.loss(alpha))
    }
}

impl LossEvaluator for Loss {
    fn loss(&self, alpha: f64) -> f64 {
        match self {
            Self::Direct(l) => l.loss(alpha),
            Self::Piecewise(l) => l.loss(alpha),
        }
    }
}

impl<T: LossEvaluator + ?Sized> LossEvaluator for &T {
    fn loss(&self, alpha: f64) -> f64 {
        (**self).loss(alpha)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A dense n×n matrix from a fixed linear congruential sequence.
    #[cfg(feature = "parallel")]
    fn dense(n: usize) -> TransitionMatrix {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let rows = (0..n)
            .map(|_| {
                (0..n)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1_442_695_040_888_963_407);
                        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
                    })
                    .collect()
            })
            .collect();
        TransitionMatrix::normalized(rows).unwrap()
    }

    /// The pairs run in parallel in whatever order the threads take them; every value is the
    /// same bit for bit on one thread and on several (n = 120 is enough work for the scans to
    /// spread).
    #[cfg(feature = "parallel")]
    #[test]
    fn results_do_not_depend_on_the_number_of_threads() {
        let m = dense(120);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let direct: Vec<u64> =
                    [0.01, 0.1, 1.0, 20.0].map(|a| DirectLoss::new(&m).loss(a).to_bits()).to_vec();
                let piecewise = PiecewiseLoss::new(&m);
                let table = PairTableLoss::new(&m);
                (
                    direct,
                    piecewise.candidates().to_vec(),
                    table.loss(0.3).to_bits(),
                    piecewise.loss(0.3).to_bits(),
                )
            })
        };
        let one = run(1);
        for threads in [2, 3, 8] {
            assert_eq!(run(threads), one, "{threads} threads");
        }
    }

    #[test]
    fn progress_hooks_report_every_row_once_and_change_nothing() {
        let m = TransitionMatrix::smoothed_identity(7, 0.3).unwrap();
        let seen = RefCell::new(Vec::new());
        let hook = |done: usize, total: usize| seen.borrow_mut().push((done, total));
        let rows: Vec<(usize, usize)> = (1..=7).map(|a| (a, 7)).collect();

        let piecewise = PiecewiseLoss::with_progress(&m, &hook);
        assert_eq!(seen.replace(Vec::new()), rows);
        let table = PairTableLoss::with_progress(&m, &hook);
        assert_eq!(seen.replace(Vec::new()), rows);
        let direct = DirectLoss::new(&m);
        let value = direct.loss_with_progress(0.7, &hook);
        assert_eq!(seen.replace(Vec::new()), rows);

        assert_eq!(piecewise.loss(0.7), PiecewiseLoss::new(&m).loss(0.7));
        assert_eq!(table.loss(0.7), PairTableLoss::new(&m).loss(0.7));
        assert_eq!(value, direct.loss(0.7));
        let once = Loss::with_progress(&m, 1, &hook);
        assert!(seen.borrow().is_empty(), "nothing is built for the direct evaluator");
        assert_eq!(once.loss_with_progress(0.7, &hook), value);
        assert_eq!(seen.replace(Vec::new()), rows);
        let many = Loss::with_progress(&m, 100, &hook);
        assert_eq!(seen.replace(Vec::new()), rows);
        assert_eq!(many.loss_with_progress(0.7, &hook), piecewise.loss(0.7));
        assert!(seen.borrow().is_empty(), "the piecewise evaluator answers at once");
    }
}
