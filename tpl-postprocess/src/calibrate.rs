//! The calibrated prior of the default estimator `map` and of `smooth`
//! ([docs/map.md](tpl_core::guide::map) §8): how far the movement model is trusted is learned from
//! the releases themselves, by scoring each release against the prediction that was made before it
//! was seen.
//!
//! The prediction for step t from the previous count estimate x̂_{t−1} (q = x̂_{t−1}/N) is
//! the family
//!
//!   p_t(γ) = (1 − γ)·q + γ·q·P,   prior strength 1/φ,
//!
//! indexed by the **move weight** γ ∈ [0, 1] (the share of people assumed to move by P, the
//! rest staying where they were) and the **dispersion** φ > 0 (the prior's variance relative
//! to the multinomial of the DBSec paper: its log-density is divided by φ, so φ = 1 is that
//! prior and φ → ∞ discards it). When step t is estimated, every member (γ, φ) on a fixed
//! grid is scored by the log-likelihood of the releases r_2..r_t under its one-step
//! predictions, r_{s,i} ~ Normal(m_i, φ·m_i + 2/a_s²) with m = N·p_s(γ) (the prior's variance
//! plus the Laplace noise's); the best-scoring member sets step t's prior (type-II maximum
//! likelihood) once it beats the member that holds (γ = 0, φ = 2¹²: the last estimate kept,
//! each release trusted almost alone) by a likelihood-ratio test; until then that member is
//! used, so a matrix no release has tested cannot move the estimate
//! ([docs/map.md](tpl_core::guide::map) §8). Releases with ε_s = 0 carry no information and are not
//! scored.

use crate::numeric::{biased_exponent_split, divide, exponent_split, sum4};
use crate::propagate::Mover;
use crate::widest::at_widest;

/// The prior a calibrated step t used ([docs/map.md](tpl_core::guide::map) §8): the member of the
/// family of predictions that scored best on the releases r_2..r_t, each scored against its
/// prediction from the estimate of the step before.
///
/// ```
/// use tpl_postprocess::Calibration;
/// // The DBSec paper's prior: everyone moves by P, multinomial strength.
/// assert_eq!(Calibration::DBSEC, Calibration { move_weight: 1.0, dispersion: 1.0 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Calibration {
    /// γ ∈ [0, 1]: the prior is (1 − γ)·q + γ·q·P for the previous estimate's distribution
    /// q, so γ = 1 moves everyone by the matrix and γ = 0 assumes nobody moves.
    pub move_weight: f64,
    /// φ > 0: the prior's variance relative to the multinomial (its log-density is divided
    /// by φ); 1 is the DBSec paper's prior, larger values trust it less.
    pub dispersion: f64,
}

impl Calibration {
    /// The DBSec paper's prior (γ = 1, φ = 1): what step 1 uses (it has no previous
    /// estimate to hold).
    pub const DBSEC: Self = Self { move_weight: 1.0, dispersion: 1.0 };

    /// The member that hands the estimate over to the releases (γ = 0, φ = 2¹²): nobody
    /// moves and the prior is 4096 times weaker than the multinomial, so a step with a
    /// release is estimated almost from the release alone, and a step without one keeps the
    /// last estimate. Used before any release was scored and whenever no member beats it by
    /// 3 nats (a likelihood-ratio test at level 5 % of two parameters) — a matrix must earn its
    /// trust ([docs/map.md](tpl_core::guide::map) §8).
    pub const HOLD: Self = Self { move_weight: 0.0, dispersion: 4096.0 };
}

/// The index of [`Calibration::HOLD`] in the grid's scores: γ = 0 is the last move weight,
/// φ = 2¹² the 13th dispersion.
const HOLD_INDEX: usize = (MOVE_WEIGHTS.len() - 1) * DISPERSIONS + 12;

/// The move weights γ of the grid: 1, 2^−k for k = 1..=8, and 0; the DBSec value first (it
/// wins ties). Log-spaced because a matrix estimated from another period is often right
/// about where people go but wrong about how many move.
const MOVE_WEIGHTS: [f64; 10] =
    [1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625, 0.0];

/// The number of dispersions φ of the grid.
const DISPERSIONS: usize = 19;

/// One value for each dispersion φ_k of the grid.
type PerDispersion = [f64; DISPERSIONS];

/// The dispersions φ of the grid: 2^k for k = −6..=12, the DBSec value first.
fn dispersions() -> PerDispersion {
    let mut d = [0.0; DISPERSIONS];
    for (j, k) in (0..=12).chain(-6..0).enumerate() {
        d[j] = 2f64.powi(k);
    }
    d
}

/// At most this many cells are scored per step (a multiple of [`LANES`]; rotating, so that over ⌈n/64⌉ steps every
/// cell is scored once): two parameters need far fewer residuals than n·T, and the score then
/// costs O(grid) per step instead of O(grid·n).
const SCORED_CELLS: usize = 64;

/// How many nats of log-likelihood another member must gain over the member that holds
/// ([`Calibration::HOLD`]) before it replaces it: 3, half the 95 % quantile of χ² with two
/// degrees of freedom (a likelihood-ratio test at level 5 % of the two parameters). The null
/// hypothesis is the one that cannot be led astray: a matrix that no release has tested, or
/// one the releases cannot tell from holding, does not move the estimate
/// ([docs/map.md](tpl_core::guide::map) §8).
const EVIDENCE: f64 = 3.0;

/// Smallest predictive variance: the spread of rounding a count to an integer (1/12), so
/// that a release exactly at a prediction of variance 0 cannot score +∞.
const MIN_VARIANCE: f64 = 1.0 / 12.0;

/// The running scores of the grid ([docs/map.md](tpl_core::guide::map) §8).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Calibrator {
    dispersions: PerDispersion,
    /// scores[g·19 + k]: the predictive log-likelihood of the scored releases under
    /// (MOVE_WEIGHTS[g], dispersions[k]).
    scores: Vec<f64>,
    /// Releases scored so far.
    scored: usize,
    /// Scratch: the Binomial(k, γ) weights of one member across a gap.
    mix: Vec<f64>,
}

impl Calibrator {
    pub(crate) fn new() -> Self {
        let dispersions = dispersions();
        Self {
            dispersions,
            scores: vec![0.0; MOVE_WEIGHTS.len() * dispersions.len()],
            scored: 0,
            mix: Vec::new(),
        }
    }

    /// The best-scoring member if it beats the member that holds by more than [`EVIDENCE`]
    /// nats; otherwise [`Calibration::HOLD`] — also before any release was scored.
    pub(crate) fn choice(&self) -> Calibration {
        if self.scored == 0 {
            return Calibration::HOLD;
        }
        let hold = HOLD_INDEX;
        let mut best = hold;
        for (k, &s) in self.scores.iter().enumerate() {
            if s > self.scores[best] {
                best = k;
            }
        }
        if self.scores[best] - self.scores[hold] <= EVIDENCE {
            return Calibration::HOLD;
        }
        let d = self.dispersions.len();
        Calibration { move_weight: MOVE_WEIGHTS[best / d], dispersion: self.dispersions[best % d] }
    }

    /// Adds the log-likelihood of release `r` (weight a > 0) under every member's prediction
    /// for population N, made from the last estimate that used a release
    /// ([docs/map.md](tpl_core::guide::map) §8): `chain` holds that estimate's distribution q_a
    /// moved 0..=k steps by P, on the scored cells, and member γ predicts N·Σ_j Binomial(j; k,
    /// γ)·(q_a·P^j) — k steps of (1 − γ)·I + γ·P, which for k = 1 is (1 − γ)·q + γ·q·P.
    ///
    /// For each move weight, the predictions m and squared residuals e² of the scored cells
    /// are gathered once; each dispersion's term Σ_i (ln v_i + e_i²/v_i) is then one sum over
    /// them in [`LANES`] running sums ([docs/map.md](tpl_core::guide::map) §13).
    pub(crate) fn score(&mut self, r: &[f64], chain: &Chain, total: f64, a: f64) {
        let noise = 2.0 / (a * a);
        let steps = chain.steps();
        if !(a > 0.0 && noise.is_finite()) || steps == 0 {
            return;
        }
        // Every variance of this step is at most φ_max·N + noise: below 2¹⁰²⁰ (any budget
        // above about 1e-153) a member's term takes one division per cell, otherwise three.
        let largest = self.dispersions.iter().fold(0.0f64, |m, &v| m.max(v)) * total + noise;
        let one_division = largest < LARGEST_ONE_DIVISION;
        let d = self.dispersions.len();
        // The scored cells' release and the chain's first two rows, q and u, gathered once (at
        // most SCORED_CELLS cells).
        let len = chain.cells.len();
        let (mut rs, mut qs, mut us) = ([0.0; SCORED_CELLS], [0.0; SCORED_CELLS], [0.0; SCORED_CELLS]);
        for (k, &i) in chain.cells.iter().enumerate() {
            rs[k] = r[i];
        }
        qs[..len].copy_from_slice(chain.power(0));
        us[..len].copy_from_slice(chain.power(1));
        let (mut all_m, mut all_e2) = ([0.0; SCORED_CELLS], [0.0; SCORED_CELLS]);
        let mut sums = [0.0; DISPERSIONS];
        for (g, &gamma) in MOVE_WEIGHTS.iter().enumerate() {
            // Each scored cell's share of the member's prediction.
            let mut shares = [0.0; SCORED_CELLS];
            if steps == 1 {
                for k in 0..SCORED_CELLS {
                    shares[k] = (1.0 - gamma) * qs[k] + gamma * us[k];
                }
            } else {
                binomial_weights(steps, gamma, &mut self.mix);
                for (j, &w) in self.mix.iter().enumerate() {
                    for (share, &v) in shares.iter_mut().zip(chain.power(j)) {
                        *share += w * v;
                    }
                }
            }
            for k in 0..SCORED_CELLS {
                let mi = total * shares[k];
                let e = rs[k] - mi;
                all_m[k] = mi;
                all_e2[k] = e * e;
            }
            let (mut m, mut e2) = (&all_m[..len], &all_e2[..len]);
            // A residual beyond 1e154 (a release near the largest double) would make every
            // score −∞ for good: it says nothing about the members, so skip it.
            let (mut kept_m, mut kept_e2) = ([0.0; SCORED_CELLS], [0.0; SCORED_CELLS]);
            if !e2.iter().all(|v| v.is_finite()) {
                let mut kept = 0;
                for (&mi, &ei) in m.iter().zip(e2).filter(|(_, ei)| ei.is_finite()) {
                    (kept_m[kept], kept_e2[kept]) = (mi, ei);
                    kept += 1;
                }
                (m, e2) = (&kept_m[..kept], &kept_e2[..kept]);
            }
            if one_division {
                member_terms(m, e2, &self.dispersions, noise, &mut sums);
            } else {
                for (sum, &phi) in sums.iter_mut().zip(&self.dispersions) {
                    *sum = m
                        .iter()
                        .zip(e2)
                        .map(|(&mi, &ei)| {
                            let v = (phi * mi + noise).max(MIN_VARIANCE);
                            ln_positive(v) + ei / v
                        })
                        .sum();
                }
            }
            for (s, sum) in self.scores[g * d..(g + 1) * d].iter_mut().zip(sums) {
                *s -= 0.5 * sum;
            }
        }
        self.scored += 1;
    }
}

/// The Binomial(k, γ) probabilities of j = 0..=k into `out`: the share of people who made
/// j of k moves when each step moves a person with probability γ. Exact at γ = 0 and
/// γ = 1; otherwise from logarithms (ln C(k, j) summed term by term), so no power
/// underflows before its share is negligible.
fn binomial_weights(k: usize, gamma: f64, out: &mut Vec<f64>) {
    out.clear();
    out.resize(k + 1, 0.0);
    if gamma <= 0.0 {
        out[0] = 1.0;
        return;
    }
    if gamma >= 1.0 {
        out[k] = 1.0;
        return;
    }
    let (ln_move, ln_stay) = (gamma.ln(), (-gamma).ln_1p());
    let mut ln_choose = 0.0;
    for (j, w) in out.iter_mut().enumerate() {
        if j > 0 {
            ln_choose += ((k - j + 1) as f64).ln() - (j as f64).ln();
        }
        *w = (ln_choose + j as f64 * ln_move + (k - j) as f64 * ln_stay).exp();
    }
}

/// The scored cells of the next calibrated release and, on them, the distribution q_a of the
/// last estimate that used a release moved j = 0, 1, … steps by P
/// ([docs/map.md](tpl_core::guide::map) §8): what [`Calibrator::score`] mixes into every member's
/// prediction. Its buffers are reused from one chain to the next.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Chain {
    /// The scored cells: every ⌈n/64⌉-th from a rotating offset.
    cells: Vec<usize>,
    /// (q_a·P^j) at cells[c] for j = 0, 1, …: row j is values[j·cells.len()..][..cells.len()].
    values: Vec<f64>,
}

impl Chain {
    /// Starts a chain at q (and q·P = u) on the rotating subset of cells number `index`.
    fn anchor(&mut self, q: &[f64], u: &[f64], index: usize) {
        let n = q.len();
        let stride = n.div_ceil(SCORED_CELLS);
        self.cells.clear();
        self.cells.extend((index % stride..n).step_by(stride));
        self.values.clear();
        for v in [q, u] {
            self.values.extend(self.cells.iter().map(|&i| v[i]));
        }
    }

    /// Appends the next power, q_a·P^(j+1) = `moved`.
    fn extend(&mut self, moved: &[f64]) {
        self.values.extend(self.cells.iter().map(|&i| moved[i]));
    }

    /// k: the number of steps by P the chain holds (0 when empty).
    fn steps(&self) -> usize {
        (self.values.len() / self.cells.len().max(1)).saturating_sub(1)
    }

    /// Row j: (q_a·P^j) on the scored cells.
    fn power(&self, j: usize) -> &[f64] {
        let width = self.cells.len();
        &self.values[j * width..(j + 1) * width]
    }

    fn clear(&mut self) {
        self.cells.clear();
        self.values.clear();
    }
}

/// The longest gap between two releases that carry information over which members are
/// scored by their own k-step predictions; after a longer gap the chain restarts at the
/// estimate the filter made (a member is then scored on the last [`LONGEST_CHAIN`] steps
/// only). Bounds the chain's memory at 256·64 doubles.
const LONGEST_CHAIN: usize = 256;

/// Running sums of a member's terms, one per lane (fixed, so that the sums do not depend on
/// the processor: every vector width adds in the same order).
const LANES: usize = 8;

at_widest! {
    /// For every dispersion φ_k: sums[k] = Σ_i (ln v_i + e_i²/v_i) with
    /// v_i = max(φ_k·m_i + noise, 1/12) < 2¹⁰²⁰, over at most [`SCORED_CELLS`] cells: see
    /// [`lane_sums`]. At the widest vector width ([`crate::widest`]; every width gives the
    /// same bits).
    fn member_terms(m: &[f64], e2: &[f64], dispersions: &PerDispersion, noise: f64, sums: &mut PerDispersion) = lane_sums;
}

/// The sums of [`member_terms`] in [`LANES`] running sums: for each dispersion, cell i's
/// term goes to lane i mod [`LANES`] (fixed-length blocks of [`LANES`] cells without a
/// carried dependence between lanes, which vectorise at any width; the last block padded
/// with v = 1 and e² = 0, whose term is exactly 0), the binary exponents k_i of the v_i
/// summed as integers (exact, the bias subtracted once) and multiplied by ln 2 once, the
/// rest of each term by [`mantissa_ln_and_ratio`]'s one division; then the lanes are added
/// pairwise. Where the noise alone reaches the smallest variance 1/12 the clamp to it is
/// skipped (it changes nothing there).
#[inline(always)]
fn lane_sums(m: &[f64], e2: &[f64], dispersions: &PerDispersion, noise: f64, sums: &mut PerDispersion) {
    let len = m.len().min(SCORED_CELLS);
    let (mut cells, mut squares) = ([0.0f64; SCORED_CELLS], [0.0f64; SCORED_CELLS]);
    cells[..len].copy_from_slice(&m[..len]);
    squares[..len].copy_from_slice(&e2[..len]);
    let blocks = len.div_ceil(LANES);
    if blocks == 0 {
        // No cell: every sum is empty.
        sums.fill(0.0);
        return;
    }
    // The variances of the last block's padding: v = 1 wherever the block has no cell.
    let mut padding = [0.0f64; LANES];
    let mut live = [1.0f64; LANES];
    for l in len - (blocks - 1) * LANES..LANES {
        padding[l] = 1.0;
        live[l] = 0.0;
    }
    let clamp = noise < MIN_VARIANCE;
    for (sum, &phi) in sums.iter_mut().zip(dispersions) {
        let mut acc = [0.0f64; LANES];
        let mut exponents = [0u64; LANES];
        for (b, (c, e)) in cells.chunks_exact(LANES).zip(squares.chunks_exact(LANES)).take(blocks).enumerate()
        {
            let last = b + 1 == blocks;
            for l in 0..LANES {
                let mut v = phi * c[l] + noise;
                if clamp {
                    v = v.max(MIN_VARIANCE);
                }
                if last {
                    // Exactly v on a cell (times 1, plus 0), exactly 1 on the padding.
                    v = v * live[l] + padding[l];
                }
                let (k, mantissa) = biased_exponent_split(v);
                exponents[l] += k;
                acc[l] += mantissa_ln_and_ratio(v, mantissa, e[l]);
            }
        }
        let k = exponents.iter().sum::<u64>() as i64 - 1023 * (blocks * LANES) as i64;
        let quads = [(acc[0] + acc[1]) + (acc[2] + acc[3]), (acc[4] + acc[5]) + (acc[6] + acc[7])];
        *sum = k as f64 * std::f64::consts::LN_2 + (quads[0] + quads[1]);
    }
}

/// 2¹⁰²⁰: for v below it, (m + 1)·v of [`mantissa_ln_and_ratio`] (m < √2) is below 2¹⁰²²,
/// a normal double with a normal reciprocal.
const LARGEST_ONE_DIVISION: f64 = 1.123_558_209_288_947_4e307;

/// ln(v/2^k) + e²/v for 1/12 ≤ v < 2¹⁰²⁰, v = 2^k·m, and a finite e² ≥ 0: the series of
/// [`ln_positive`] and the quotient with one division instead of three —
/// d = 1/((m + 1)·v) gives both t = (m − 1)·v·d and 1/v = (m + 1)·d, and t²/9 is t²·(1/9).
/// Each quotient is within a few ulps of the divided one ([docs/map.md](tpl_core::guide::map) §13).
#[inline(always)]
fn mantissa_ln_and_ratio(v: f64, m: f64, e2: f64) -> f64 {
    let d = 1.0 / ((m + 1.0) * v);
    let t = (m - 1.0) * (v * d);
    let t2 = t * t;
    let series = 1.0 + t2 * (1.0 / 3.0 + t2 * (1.0 / 5.0 + t2 * (1.0 / 7.0 + t2 * (1.0 / 9.0))));
    (t + t) * series + e2 * ((m + 1.0) * d)
}

/// ln v for a finite v ≥ 2⁻¹⁰²² (a positive normal double), within 1e-9 absolute: the
/// scores compare log-likelihoods and never show them, and a branch-free logarithm lets the
/// loop over the grid vectorise. v = 2^k·m with m ∈ [√½, √2) (the exponent split of
/// fdlibm's log), ln m = 2·atanh(t) with t = (m − 1)/(m + 1), |t| ≤ 0.172, summed to t⁹
/// (the next term is below 1e-9).
#[inline]
fn ln_positive(v: f64) -> f64 {
    let (k, m) = exponent_split(v);
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let series = 1.0 + t2 * (1.0 / 3.0 + t2 * (1.0 / 5.0 + t2 * (1.0 / 7.0 + t2 / 9.0)));
    k as f64 * std::f64::consts::LN_2 + 2.0 * t * series
}

at_widest! {
    /// out_i = (1 − γ)·q_i + γ·u_i, the prior of move weight γ; at the widest vector width
    /// ([`crate::widest`]; the same bits at any width).
    fn mix(q: &[f64], u: &[f64], gamma: f64, out: &mut [f64]) = mix_portable;
}

/// The loop of [`mix`].
#[inline(always)]
fn mix_portable(q: &[f64], u: &[f64], gamma: f64, out: &mut [f64]) {
    for ((o, &q), &u) in out.iter_mut().zip(q).zip(u) {
        *o = (1.0 - gamma) * q + gamma * u;
    }
}

/// One direction of a calibrated stream ([docs/map.md](tpl_core::guide::map) §8): the previous
/// estimate, how it moves, and the scores of the family of predictions.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Pass {
    calibrator: Calibrator,
    /// q = x̂_{t−1}/N and u = q·P of the pending prediction (empty before a step).
    q: Vec<f64>,
    u: Vec<f64>,
    /// The last estimate that used a release, moved by P up to the pending step, on the
    /// scored cells.
    chain: Chain,
    /// The full vector q_a·P^k at the end of the chain once k ≥ 2 (empty at k = 1, when it is
    /// `u`), moved on at every step without information.
    head: Vec<f64>,
    /// Whether the step being estimated had a release with weight a > 0 (or is the first).
    informative: bool,
    steps: usize,
}

/// A calibrated prediction: the prior of the step and the member that made it.
pub(crate) struct Prediction {
    pub(crate) prior: Vec<f64>,
    pub(crate) calibration: Calibration,
}

impl Pass {
    pub(crate) fn new() -> Self {
        Self {
            calibrator: Calibrator::new(),
            q: Vec::new(),
            u: Vec::new(),
            chain: Chain::default(),
            head: Vec::new(),
            informative: true,
            steps: 0,
        }
    }

    /// The calibrated prior of the step whose release is `r` (weight a): the release is first
    /// scored against every member's prediction from the last estimate that used a release,
    /// then the best member over all releases scored so far makes the prior from the
    /// previous estimate ([docs/map.md](tpl_core::guide::map) §8). `None` before the first step.
    pub(crate) fn predict(&mut self, r: &[f64], a: f64, total: f64) -> Option<Prediction> {
        let mut prior = Vec::new();
        let calibration = self.predict_onto(r, a, total, &mut prior)?;
        Some(Prediction { prior, calibration })
    }

    /// [`Pass::predict`] with the prior appended to `out` (nothing appended before the
    /// first step), so that a caller storing many priors allocates no vector per step.
    pub(crate) fn predict_onto(
        &mut self,
        r: &[f64],
        a: f64,
        total: f64,
        out: &mut Vec<f64>,
    ) -> Option<Calibration> {
        if self.q.is_empty() {
            self.informative = true;
            return None;
        }
        self.informative = a > 0.0;
        if total > 0.0 {
            self.calibrator.score(r, &self.chain, total, a);
        }
        let calibration = self.calibrator.choice();
        let g = calibration.move_weight;
        let at = out.len();
        out.resize(at + self.q.len(), 0.0);
        mix(&self.q, &self.u, g, &mut out[at..]);
        Some(calibration)
    }

    /// Takes the step's estimate x̂ and moves it one step on by `mover` for the next
    /// prediction (nothing to move without a matrix, or when x̂ is 0). An estimate that used
    /// a release starts the chain the next release is scored from; an estimate without one
    /// only moves the chain's end on by P.
    pub(crate) fn observe(&mut self, estimate: &[f64], mover: Option<&Mover<'_>>) {
        self.steps += 1;
        // Four running sums: one chain of n additions would be the step's longest.
        let sum = sum4(estimate.iter().copied());
        if let (Some(mover), true) = (mover, sum > 0.0) {
            let restart = self.extend_chain(mover);
            self.q.resize(estimate.len(), 0.0);
            divide(estimate, sum, &mut self.q);
            self.u = mover.apply(&self.q);
            if restart {
                self.restart_chain();
            }
        } else {
            self.clear();
        }
    }

    /// The former [`Pass::observe`], kept for the tests that compare against it: x̂
    /// normalised, then normalised again and moved by [`Mover::step`].
    #[cfg(test)]
    pub(crate) fn observe_former(&mut self, estimate: &[f64], mover: Option<&Mover<'_>>) {
        self.steps += 1;
        let sum: f64 = estimate.iter().sum();
        if let (Some(mover), true) = (mover, sum > 0.0) {
            let restart = self.extend_chain(mover);
            self.q = estimate.iter().map(|v| v / sum).collect();
            self.u = mover.step(&self.q);
            if restart {
                self.restart_chain();
            }
        } else {
            self.clear();
        }
    }

    /// Before q and u move on to a new estimate: whether the chain restarts at it (the step
    /// used a release, or the chain is empty or [`LONGEST_CHAIN`] long); if not, the chain's
    /// end moves one step on by P.
    fn extend_chain(&mut self, mover: &Mover<'_>) -> bool {
        let restart = self.informative || self.chain.steps() == 0 || self.chain.steps() >= LONGEST_CHAIN;
        if !restart {
            // q_a·P^(k+1): from q_a·P, still in `u` at the chain's first move.
            let end = if self.head.is_empty() { &self.u } else { &self.head };
            self.head = mover.apply(end);
            self.chain.extend(&self.head);
        }
        restart
    }

    /// Starts the chain at the new q and u.
    fn restart_chain(&mut self) {
        self.chain.anchor(&self.q, &self.u, self.steps);
        self.head.clear();
    }

    /// Nothing to predict from (no matrix, or an estimate of 0).
    fn clear(&mut self) {
        self.q.clear();
        self.u.clear();
        self.chain.clear();
        self.head.clear();
    }
}

#[cfg(test)]
mod tests;
