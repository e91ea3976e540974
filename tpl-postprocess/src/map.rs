//! The continuous MAP estimator `map` and its exact breakpoint solver
//! ([docs/map.md](tpl_core::guide::map) §2–3).
//!
//! The per-step problem is
//!
//!   minimise F(x) = a Σ_i |x_i − r_i| + Σ_i (x_i ln(x_i/p_i) − x_i)  s.t. Σ_i x_i = N, x ≥ 0,
//!
//! whose unique minimiser is x_i(λ*) = median(r_i, p_i e^{λ*−a}, p_i e^{λ*+a}) for the λ* with
//! Σ_i x_i(λ*) = N. S(λ) = Σ_i x_i(λ) is piecewise of the form
//! e^{λ−a}P_above + e^{λ+a}P_below + R_at between the 2m breakpoints g_i ± a
//! (g_i = ln(r_i/p_i)), so ordering the breakpoints and a binary search for the piece that
//! holds N leave one closed-form equation.

use std::cell::Cell;

use tpl_core::log_add_exp;

use crate::error::Result;
use crate::numeric::{clamp_between, from_ordered, ln_or_neg_inf, ordered, sort_by_key_stable, sum4};
use crate::renormalise::renormalise_to;
use crate::validate;
use crate::widest::at_widest;

/// The solution of one step of the continuous MAP problem ([docs/map.md](tpl_core::guide::map) §3).
///
/// # Proof definition
/// `x` is the unique minimiser of F over {x ≥ 0, Σx = N} (x_i = 0 wherever p_i = 0), and
/// every x_i equals median(r_i, p_i e^{λ−a}, p_i e^{λ+a}) for `lambda = Some(λ)`, the
/// multiplier of the sum constraint. `lambda` is `None` exactly when it is not unique: when
/// N = 0 (x = 0; the multiplier is −∞) and when every cell of positive prior sits at its
/// release (x = r; any λ of an interval fits).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct MapStep {
    /// The estimate x̂ (length n, non-negative, summing to N).
    pub x: Vec<f64>,
    /// The multiplier λ* of Σx = N, when unique.
    pub lambda: Option<f64>,
}

/// One step of the continuous MAP estimator `map` ([docs/map.md](tpl_core::guide::map) §2–3; DBSec
/// 2023 §5 with the first-order Stirling form, a choice explained in
/// [docs/map.md](tpl_core::guide::map) §2): the minimiser of F(x) = a Σ|x_i − r_i| + Σ(x_i
/// ln(x_i/p_i) − x_i) over real x ≥ 0 with Σx = N.
///
/// - `r`: the release (any finite reals; a negative r_i acts like r_i = 0),
/// - `p`: the prior probability vector p_t (finite, ≥ 0, summing to 1 within 1e-9; used as
///   given, not rescaled),
/// - `total`: the population N ≥ 0,
/// - `a`: the likelihood weight a = ε_t/Δ ≥ 0 (a = 0 gives x = N p).
///
/// # Proof definition
/// Returns the unique minimiser and its multiplier as described at [`MapStep`]. Accuracy
/// ([docs/map.md](tpl_core::guide::map) §3): per cell within about 1e-15·N of the exact minimiser
/// for a ≤ 10³; no NaN or infinity for any finite input. A cell with p_i = 0 gets x_i = 0 whatever
/// r_i.
///
/// # Errors
/// [`NoCells`](crate::PostprocessError::NoCells) for an empty release;
/// [`BadRelease`](crate::PostprocessError::BadRelease) for a non-finite r_i;
/// [`PriorLength`](crate::PostprocessError::PriorLength),
/// [`BadPriorEntry`](crate::PostprocessError::BadPriorEntry) or
/// [`PriorSum`](crate::PostprocessError::PriorSum) for a prior that is not a probability
/// vector over the n cells; [`BadTotal`](crate::PostprocessError::BadTotal) for N < 0 or
/// non-finite; [`BadWeight`](crate::PostprocessError::BadWeight) for a < 0 or non-finite.
///
/// # Runtime
/// O(n) passes: a radix sort of the m ≤ n ratios r_i/p_i (O(m) unless many agree on their
/// 22 highest varying bits, then O(m log m)), rank sums, binary searches of O(log² m) with
/// a logarithm for each breakpoint they visit, and O(n) for the piece
/// ([docs/map.md](tpl_core::guide::map) §13).
///
/// # Citations
/// [docs/map.md](tpl_core::guide::map) §3 (breakpoint algorithm); X. Cao, Y. Cao, Yoshikawa,
/// Nakamura, DBSec 2023, §5.3 (the nonlinear program this relaxes).
///
/// ```
/// use tpl_postprocess::map_step;
/// // A hand case: x = (8, 2), λ = ln 8.
/// let s = map_step(&[10.0, 0.0], &[0.5, 0.5], 10.0, 2f64.ln())?;
/// assert!((s.x[0] - 8.0).abs() < 1e-12 && (s.x[1] - 2.0).abs() < 1e-12);
/// assert!((s.lambda.unwrap() - 8f64.ln()).abs() < 1e-12);
/// // Every cell at its release: x = r and the multiplier is not unique.
/// let s = map_step(&[6.0, 4.0], &[0.5, 0.5], 10.0, 1.0)?;
/// assert_eq!((s.x, s.lambda), (vec![6.0, 4.0], None));
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
pub fn map_step(r: &[f64], p: &[f64], total: f64, a: f64) -> Result<MapStep> {
    validate::step(r, p, a)?;
    validate::real_total(total)?;
    let mut step = solve(r, p, total, a);
    renormalise_to(total, r, &mut step.x);
    Ok(step)
}

/// The MAP objective F(x) = a Σ|x_i − r_i| + Σ(x_i ln(x_i/p_i) − x_i) of
/// [docs/map.md](tpl_core::guide::map) §2, natural logarithms, no constant dropped (the convention
/// of the reference cases in `testdata/map_cases.json`, field `map.objective`), with 0 ln 0 = 0.
/// Infeasible points (x_i > 0 where p_i = 0) give +∞. The sum constraint is not checked: F is
/// defined for any x ≥ 0.
///
/// # Errors
/// As [`map_step`] for `r`, `p` and `a`; [`EstimateLength`](crate::PostprocessError::EstimateLength)
/// or [`BadEstimate`](crate::PostprocessError::BadEstimate) for an `x` of the wrong length
/// or with a negative or non-finite entry.
///
/// ```
/// use tpl_postprocess::map_objective;
/// let f = map_objective(&[10.0, 0.0], &[0.5, 0.5], 2f64.ln(), &[8.0, 2.0])?;
/// assert!((f - (40.0 * 2f64.ln() - 10.0)).abs() < 1e-12);
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
pub fn map_objective(r: &[f64], p: &[f64], a: f64, x: &[f64]) -> Result<f64> {
    validate::step(r, p, a)?;
    validate::estimate(x, r.len())?;
    Ok(r.iter()
        .zip(p)
        .zip(x)
        .map(|((&ri, &pi), &xi)| {
            let entropy = match (xi > 0.0, pi > 0.0) {
                (false, _) => 0.0,
                (true, true) => xi * (xi.ln() - pi.ln()) - xi,
                (true, false) => f64::INFINITY,
            };
            a * (xi - ri).abs() + entropy
        })
        .sum())
}

/// How to form p_i·e^c for all cells at once: with one scalar exponential when e^c is
/// finite (the common case, vectorisable and more accurate than e^{ln p_i + c}), with two
/// when e^c overflows but e^{c/2} does not (p_i ≤ 1 keeps (p_i e^{c/2}) e^{c/2} finite or a
/// true overflow), per cell in log space beyond that. Never 0·∞.
#[derive(Clone, Copy)]
enum Scale {
    One(f64),
    Two(f64),
    Log(f64),
}

impl Scale {
    fn new(c: f64) -> Self {
        let e = c.exp();
        if e.is_finite() {
            // Includes underflow to a subnormal or 0: then p_i e^c < 2.3e-308 and the
            // absolute error is below that, negligible next to any N of interest.
            return Self::One(e);
        }
        let h = (0.5 * c).exp();
        if h.is_finite() { Self::Two(h) } else { Self::Log(c) }
    }

    #[inline]
    fn apply(self, p: f64) -> f64 {
        match self {
            Self::One(e) => p * e,
            Self::Two(h) => (p * h) * h,
            Self::Log(c) => {
                if p > 0.0 {
                    (p.ln() + c).exp()
                } else {
                    0.0
                }
            }
        }
    }
}

/// x_i(λ) = median(r_i, p_i e^{lo}, p_i e^{hi}) with (lo, hi) = (λ − a, λ + a), written into
/// `out` (or summed, see [`sum_at`]). Cells with p_i = 0 give 0.
fn fill_at(r: &[f64], p: &[f64], lo: f64, hi: f64, out: &mut [f64]) {
    let (sl, sh) = (Scale::new(lo), Scale::new(hi));
    for i in 0..r.len() {
        out[i] = clamp_between(r[i], sl.apply(p[i]), sh.apply(p[i]));
    }
}

/// S(λ) = Σ_i x_i(λ) at the pair (lo, hi) = (λ − a, λ + a), from its definition: the
/// probes of the breakpoint search when p_i·e^{λ±a} needs more than one exponential.
fn sum_at(r: &[f64], p: &[f64], lo: f64, hi: f64) -> f64 {
    let (sl, sh) = (Scale::new(lo), Scale::new(hi));
    sum4(r.iter().zip(p).map(|(&ri, &pi)| clamp_between(ri, sl.apply(pi), sh.apply(pi))))
}

/// The number of k in 0..len for which `below(k)` holds, for a predicate that holds on a
/// prefix of 0..len (a bisection).
fn partition_point(len: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// x + d for a log-quantity x that may be −∞ (keeps −∞ even when d = +∞, instead of NaN).
#[inline]
fn shift(x: f64, d: f64) -> f64 {
    if x == f64::NEG_INFINITY { x } else { x + d }
}

/// The breakpoint algorithm of [docs/map.md](tpl_core::guide::map) §3 on validated input: steps 1–3
/// here, the rest in the helpers below, one per step.
pub(crate) fn solve(r: &[f64], p: &[f64], total: f64, a: f64) -> MapStep {
    // Below this many cells the search is cheaper than the iteration's buffers.
    const ITERATE_FROM: usize = 32;
    let found = if r.len() >= ITERATE_FROM { settled(r, p, total, a) } else { Settled::Unsettled };
    match found {
        Settled::Unsettled => finish(r, p, total, searched(r, p, total, a)),
        found => finish(r, p, total, found),
    }
}

/// The estimate from the root found (step 1 for N = 0 here).
fn finish(r: &[f64], p: &[f64], total: f64, found: Settled) -> MapStep {
    let mut x = vec![0.0; r.len()];
    if total == 0.0 {
        return MapStep { x, lambda: None };
    }
    let (lo, hi, lambda) = match found {
        Settled::Root(lo, hi, lambda) => (lo, hi, lambda),
        Settled::AtRelease | Settled::Unsettled => {
            for ((xi, &ri), &pi) in x.iter_mut().zip(r).zip(p) {
                if pi > 0.0 {
                    *xi = ri;
                }
            }
            return MapStep { x, lambda: None };
        }
    };
    fill_at(r, p, lo, hi, &mut x);
    if p.iter().filter(|&&v| v > 0.0).count() == 1 {
        // The only feasible point; exact rather than e^{ln N} (docs/map.md §3: one cell of
        // positive prior gets N).
        x.iter_mut().zip(p).for_each(|(v, &pi)| *v = if pi > 0.0 { total } else { 0.0 });
    }
    MapStep { x, lambda: Some(lambda) }
}

/// Steps 2–8 by the breakpoint search: [`Settled::AtRelease`] or the root.
fn searched(r: &[f64], p: &[f64], total: f64, a: f64) -> Settled {
    let centres = Centres::new(r, p);
    let in_a = p.iter().filter(|&&v| v > 0.0).count();
    if all_at_release(r, p, total, a, &centres, in_a) {
        return Settled::AtRelease;
    }
    let breakpoints = Breakpoints { centres: &centres, a, two_a: 2.0 * a };
    let sums = RankSums::new(r, p, &centres);
    let before = first_breakpoint_reaching(r, p, total, &breakpoints, &sums);
    let (lo, hi, lambda) = Piece::classify(&sums, before).root(total, a, &breakpoints);
    Settled::Root(lo, hi, lambda)
}

/// Step 2: the cells of A = {p_i > 0} with r_i > 0 sorted by g_i = ln(r_i/p_i) (ln r_i − ln p_i
/// where the ratio overflows), ties by index so that the result does not depend on how the
/// sort treats them. Since ln is monotone, the cells are sorted by the ratios r_i/p_i
/// themselves, and g_i is computed only for the O(log² m) breakpoints the search visits; a
/// tie in g between distinct ratios puts breakpoints with the same exact pair in another
/// order, which changes no sum but its order. Only when a ratio overflows are all g_i
/// computed first and sorted.
struct Centres {
    /// The cell of each rank.
    cells: Vec<usize>,
    /// r_i/p_i by rank, when every ratio is finite (otherwise empty).
    ratios: Vec<f64>,
    /// g_i by rank, when some ratio overflows (otherwise empty).
    logs: Vec<f64>,
    /// ln of `ratios` where already computed, NaN elsewhere.
    known: Vec<Cell<f64>>,
    /// Σ p over the cells with p_i > 0 and r_i ≤ 0 (above their release for every λ), in
    /// index order.
    p_never_at: f64,
}

impl Centres {
    /// A stable radix sort of the order-keeping integer images of the ratios (or of the
    /// g_i), in index order.
    fn new(r: &[f64], p: &[f64]) -> Self {
        let mut keyed: Vec<(u64, u32)> = Vec::with_capacity(r.len());
        let mut overflow = false;
        let mut p_never_at = 0.0;
        for (i, (&ri, &pi)) in r.iter().zip(p).enumerate() {
            if pi > 0.0 {
                if ri > 0.0 {
                    let ratio = ri / pi;
                    overflow |= !ratio.is_finite();
                    // A release has fewer than 2³² cells (n values of 8 bytes each).
                    keyed.push((sort_key(ratio), i as u32));
                } else {
                    p_never_at += pi;
                }
            }
        }
        if overflow {
            for item in &mut keyed {
                let i = item.1 as usize;
                let ratio = r[i] / p[i];
                let g = if ratio.is_finite() { ratio.ln() } else { r[i].ln() - p[i].ln() };
                item.0 = sort_key(g);
            }
        }
        sort_by_key_stable(&mut keyed);
        let cells = keyed.iter().map(|&(_, i)| i as usize).collect();
        let values = keyed.into_iter().map(|(key, _)| from_sort_key(key)).collect();
        if overflow {
            Self { cells, ratios: Vec::new(), logs: values, known: Vec::new(), p_never_at }
        } else {
            let known = vec![Cell::new(f64::NAN); values.len()];
            Self { cells, ratios: values, logs: Vec::new(), known, p_never_at }
        }
    }

    fn len(&self) -> usize {
        self.cells.len()
    }

    fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// g of the cell of rank `k` (each logarithm computed once: the searches come back to
    /// the same ranks).
    fn g(&self, k: usize) -> f64 {
        if !self.logs.is_empty() {
            return self.logs[k];
        }
        let known = self.known[k].get();
        if !known.is_nan() {
            return known;
        }
        let g = self.ratios[k].ln();
        self.known[k].set(g);
        g
    }
}

/// The unsigned integer with the order of `total_cmp` on f64.
fn sort_key(g: f64) -> u64 {
    (ordered(g) as u64) ^ (1 << 63)
}

/// Inverse of [`sort_key`].
fn from_sort_key(key: u64) -> f64 {
    from_ordered((key ^ (1 << 63)) as i64)
}

/// Step 3: whether every cell of A (`in_a` cells) can sit at its release: all have r_i > 0,
/// those releases sum to N exactly, and the spread of the g_i is below 2a.
fn all_at_release(r: &[f64], p: &[f64], total: f64, a: f64, centres: &Centres, in_a: usize) -> bool {
    let m = centres.len();
    if m == 0 || m != in_a {
        return false;
    }
    let sum_r: f64 = (0..r.len()).filter(|&i| p[i] > 0.0).map(|i| r[i]).sum();
    let spread = centres.g(m - 1) - centres.g(0);
    sum_r == total && spread < 2.0 * a
}

/// One breakpoint of S(λ) ([docs/map.md](tpl_core::guide::map) §3 step 4): the lower breakpoint g_i
/// − a or the upper one g_i + a of the cell of rank `rank` among the sorted centres.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Breakpoint {
    Lower(usize),
    Upper(usize),
}

/// Step 4: the 2m breakpoints in the order of merging the lower ones g_i − a (sorted, since
/// rounding is monotone) with the upper ones g_i + a, a tie putting the lower one first
/// (which keeps every cell's lower breakpoint before its upper one even when a is below an
/// ulp of g_i). The merged list is not formed: the position of a breakpoint is its rank
/// plus the number of breakpoints of the other kind before it, found by bisection.
struct Breakpoints<'c> {
    centres: &'c Centres,
    a: f64,
    two_a: f64,
}

impl Breakpoints<'_> {
    /// The exact pair (β − a, β + a) of a breakpoint β, computed from g_i — (g_i − 2a, g_i)
    /// or (g_i, g_i + 2a) — not from β, which would cost a·2⁻⁵² of accuracy.
    fn pair(&self, b: Breakpoint) -> (f64, f64) {
        match b {
            Breakpoint::Lower(l) => {
                let g = self.centres.g(l);
                (g - self.two_a, g)
            }
            Breakpoint::Upper(u) => {
                let g = self.centres.g(u);
                (g, g + self.two_a)
            }
        }
    }

    /// β itself.
    fn value(&self, b: Breakpoint) -> f64 {
        match b {
            Breakpoint::Lower(l) => self.centres.g(l) - self.a,
            Breakpoint::Upper(u) => self.centres.g(u) + self.a,
        }
    }

    /// How many breakpoints of each kind precede `b` in the merged order: (lower, upper).
    fn before(&self, b: Breakpoint) -> (usize, usize) {
        match b {
            Breakpoint::Lower(l) => {
                let v = self.value(b);
                (l, partition_point(self.centres.len(), |k| self.centres.g(k) + self.a < v))
            }
            Breakpoint::Upper(u) => {
                let v = self.value(b);
                (partition_point(self.centres.len(), |k| self.centres.g(k) - self.a <= v), u)
            }
        }
    }

    /// Its position in the merged order.
    fn position(&self, b: Breakpoint) -> usize {
        let (lowers, uppers) = self.before(b);
        lowers + uppers
    }
}

/// Sums over the sorted centres by rank, so that S at a breakpoint costs O(log m) in the
/// search of step 5: prefix sums of p and r, suffix sums of p (no prior mass is formed by
/// subtracting two others), and the prior mass of the cells of A whose release is ≤ 0.
struct RankSums {
    /// Σ p over ranks < k.
    p_before: Vec<f64>,
    /// Σ p over ranks ≥ k.
    p_from: Vec<f64>,
    /// Σ r over ranks < k.
    r_before: Vec<f64>,
    /// r by rank.
    rs: Vec<f64>,
    /// Σ p over the cells with p_i > 0 and r_i ≤ 0 (above their release for every λ).
    p_never_at: f64,
}

impl RankSums {
    fn new(r: &[f64], p: &[f64], centres: &Centres) -> Self {
        let m = centres.len();
        let ps: Vec<f64> = centres.cells.iter().map(|&i| p[i]).collect();
        let rs: Vec<f64> = centres.cells.iter().map(|&i| r[i]).collect();
        let (mut p_before, mut r_before, mut p_from) = (vec![0.0; m + 1], vec![0.0; m + 1], vec![0.0; m + 1]);
        // Three independent running sums in one loop, so that their additions overlap.
        let (mut sp, mut sr, mut sf) = (0.0, 0.0, 0.0);
        for (k, (&pk, &rk)) in ps.iter().zip(&rs).enumerate() {
            sp += pk;
            sr += rk;
            sf += ps[m - 1 - k];
            p_before[k + 1] = sp;
            r_before[k + 1] = sr;
            p_from[m - 1 - k] = sf;
        }
        Self { p_before, p_from, r_before, rs, p_never_at: centres.p_never_at }
    }

    /// S(β) = e^{β−a}·P_above + e^{β+a}·P_below + R_at at the breakpoint β = `b`, when
    /// both exponentials are finite (`None` otherwise). At β the cells whose upper
    /// breakpoint precedes β are above, those whose lower breakpoint follows β below, the
    /// rest (the cell of β itself included, which sits at its release there) at.
    fn sum_at(&self, breakpoints: &Breakpoints<'_>, b: Breakpoint) -> Option<f64> {
        let (lo, hi) = breakpoints.pair(b);
        let (Scale::One(el), Scale::One(eh)) = (Scale::new(lo), Scale::new(hi)) else {
            return None;
        };
        let (lowers, above) = breakpoints.before(b);
        let below_from = lowers + usize::from(matches!(b, Breakpoint::Lower(_)));
        let p_above = self.p_never_at + self.p_before[above];
        let r_at = self.r_before[below_from] - self.r_before[above];
        Some(el * p_above + eh * self.p_from[below_from] + r_at)
    }
}

/// Step 5: the first breakpoint β_k (in the merged order) with S(β_k) ≥ N, as the counts of
/// lower and upper breakpoints before it ((m, m): none). S is non-decreasing along each kind,
/// so a hand-written bisection finds the first lower and the first upper breakpoint that
/// reach N (S(β) < N holds for the probes actually made before them, even if rounding breaks
/// the monotonicity of S by an ulp), and the earlier of the two is β_k. S comes from the rank
/// sums, and from its definition when an exponential overflows.
fn first_breakpoint_reaching(
    r: &[f64],
    p: &[f64],
    total: f64,
    breakpoints: &Breakpoints<'_>,
    sums: &RankSums,
) -> (usize, usize) {
    let m = breakpoints.centres.len();
    let reaches = |b: Breakpoint| {
        let s = sums.sum_at(breakpoints, b).unwrap_or_else(|| {
            let (lo, hi) = breakpoints.pair(b);
            sum_at(r, p, lo, hi)
        });
        s >= total
    };
    let first = |kind: fn(usize) -> Breakpoint| {
        let (mut lo_k, mut hi_k) = (0, m);
        while lo_k < hi_k {
            let mid = lo_k + (hi_k - lo_k) / 2;
            if reaches(kind(mid)) {
                hi_k = mid;
            } else {
                lo_k = mid + 1;
            }
        }
        (lo_k < m).then(|| kind(lo_k))
    };
    let candidates = [first(Breakpoint::Lower), first(Breakpoint::Upper)];
    candidates
        .into_iter()
        .flatten()
        .min_by_key(|&b| breakpoints.position(b))
        .map_or((m, m), |b| breakpoints.before(b))
}

/// The sums that make S(λ) = e^{λ−a}·P_above + e^{λ+a}·P_below + R_at on one piece.
struct Piece {
    p_above: f64,
    p_below: f64,
    r_at: f64,
    /// The breakpoints before the piece's right end: (lower, upper).
    before: (usize, usize),
}

impl Piece {
    /// Step 6: classify the cells on the piece (β_{k−1}, β_k], given the counts of lower and
    /// upper breakpoints before position k: since both kinds come in the order of g, the
    /// cells of rank < uppers are above, of rank ≥ lowers below, the rest at their release.
    /// (Counting positions rather than comparing β values keeps the classification
    /// consistent when distinct g_i ± a round to the same double.) Direct sums, no carrying:
    /// the prior masses are the rank sums' prefix and suffix, R_at is summed afresh.
    fn classify(sums: &RankSums, before: (usize, usize)) -> Self {
        let (lowers, uppers) = before;
        let p_above = sums.p_never_at + sums.p_before[uppers];
        let p_below = sums.p_from[lowers];
        let r_at: f64 = sums.rs[uppers..lowers].iter().sum();
        Self { p_above, p_below, r_at, before }
    }

    /// Steps 7–8: the root as the pair (λ* − a, λ* + a) and λ* itself. With no breakpoint
    /// at all, every cell of A is above and the closed form applies (the test on
    /// `is_empty` only spells out that the fallback never indexes an empty list).
    fn root(&self, total: f64, a: f64, breakpoints: &Breakpoints<'_>) -> (f64, f64, f64) {
        let rest = total - self.r_at;
        if breakpoints.centres.is_empty() || (rest > 0.0 && (self.p_above > 0.0 || self.p_below > 0.0)) {
            closed_form(rest, self.p_above, self.p_below, a)
        } else {
            // S met N at the piece's left end up to rounding: λ* = β_{k−1}, the later of the
            // last lower and the last upper breakpoint before position k. (k = 0 cannot get
            // here: on the first piece R_at = 0 and P_above + P_below = Σ_A p > 0.)
            let (lowers, uppers) = self.before;
            let last_lower = lowers.checked_sub(1).map(Breakpoint::Lower);
            let last_upper = uppers.checked_sub(1).map(Breakpoint::Upper);
            let b = [last_lower, last_upper]
                .into_iter()
                .flatten()
                .max_by_key(|&b| breakpoints.position(b))
                .unwrap_or(Breakpoint::Lower(0));
            let (lo, hi) = breakpoints.pair(b);
            (lo, hi, breakpoints.value(b))
        }
    }
}

/// Step 7: the root of S(λ) = e^{λ−a}·P_above + e^{λ+a}·P_below + R_at = N on one piece,
/// with M = N − R_at, as the pair (λ* − a, λ* + a) and λ* itself, in log space (never e^a).
fn closed_form(rest: f64, p_above: f64, p_below: f64, a: f64) -> (f64, f64, f64) {
    let two_a = 2.0 * a;
    let ln_rest = rest.ln();
    let (ln_above, ln_below) = (ln_or_neg_inf(p_above), ln_or_neg_inf(p_below));
    let lo = ln_rest - log_add_exp(ln_above, shift(ln_below, two_a));
    let hi = ln_rest - log_add_exp(shift(ln_above, -two_a), ln_below);
    let lambda = ln_rest - log_add_exp(shift(ln_above, -a), shift(ln_below, a));
    (lo, hi, lambda)
}

/// What the iteration of [`settled`] (or the search of [`searched`]) found.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Settled {
    /// Every cell of positive prior sits at its release (step 3).
    AtRelease,
    /// The root (λ* − a, λ* + a, λ*).
    Root(f64, f64, f64),
    /// No piece settled within the rounds allowed: the breakpoint search decides.
    Unsettled,
}

/// Steps 2–6 without ordering the breakpoints, when it settles ([docs/map.md](tpl_core::guide::map)
/// §3, "The piece by iteration"): from the multiplier of a = 0, classify every cell at the current
/// (λ − a, λ + a) by the median formula itself (above: p_i·e^{λ−a} > r_i, below: p_i·e^{λ+a} < r_i,
/// at otherwise), solve that piece's equation (step 7), and repeat until the root of a
/// classification classifies the cells the same way: then it is on its own piece, S(λ*) = N there,
/// and it is the root. A classification that does not repeat within eight rounds, an exponential
/// that overflows, a ratio r_i/p_i that overflows, and a piece whose equation has no root (step 8)
/// are left to the breakpoint search.
fn settled(r: &[f64], p: &[f64], total: f64, a: f64) -> Settled {
    const ROUNDS: usize = 12;
    if total == 0.0 {
        return Settled::AtRelease;
    }
    // Step 3 first, from the extreme ratios (g_max − g_min = ln of their quotient's logs).
    let (mut in_a, mut positive, mut sum_r) = (0usize, 0usize, 0.0);
    let (mut least, mut most) = (f64::INFINITY, 0.0f64);
    for (&ri, &pi) in r.iter().zip(p) {
        if pi > 0.0 {
            in_a += 1;
            sum_r += ri;
            if ri > 0.0 {
                positive += 1;
                let ratio = ri / pi;
                least = least.min(ratio);
                most = most.max(ratio);
            }
        }
    }
    if !most.is_finite() {
        return Settled::Unsettled;
    }
    if positive > 0 && positive == in_a && sum_r == total && most.ln() - least.ln() < 2.0 * a {
        return Settled::AtRelease;
    }
    let mut classes = vec![0u8; r.len()];
    let mut previous = vec![0u8; r.len()];
    // λ brackets the root: S(below) < N ≤ S(above), from the probes made.
    let (mut below, mut above) = (f64::NEG_INFINITY, f64::INFINITY);
    let mut step = 1.0f64.max(2.0 * a);
    let lambda = total.ln();
    let mut probe = (lambda - a, lambda + a, lambda);
    // Whether `probe` is the root of the classification in `previous`.
    let mut from_root = false;
    for _ in 0..ROUNDS {
        let (Scale::One(el), Scale::One(eh)) = (Scale::new(probe.0), Scale::new(probe.1)) else {
            return Settled::Unsettled;
        };
        let [p_above, p_below, r_at] = class_sums(r, p, el, eh, &mut classes);
        if from_root && classes == previous {
            return Settled::Root(probe.0, probe.1, probe.2);
        }
        if el * p_above + eh * p_below + r_at < total {
            below = below.max(probe.2);
        } else {
            above = above.min(probe.2);
        }
        let rest = total - r_at;
        let root =
            (rest > 0.0 && (p_above > 0.0 || p_below > 0.0)).then(|| closed_form(rest, p_above, p_below, a));
        (probe, from_root) = match root {
            Some(root) if below < root.2 && root.2 < above => (root, true),
            // The piece's root lies outside what the probes allow: bisect, or step out.
            _ => {
                let lambda = if below.is_finite() && above.is_finite() {
                    below + 0.5 * (above - below)
                } else if below.is_finite() {
                    below + step
                } else {
                    above - step
                };
                step *= 2.0;
                ((lambda - a, lambda + a, lambda), false)
            }
        };
        std::mem::swap(&mut classes, &mut previous);
    }
    Settled::Unsettled
}

/// Lanes of the running sums of [`class_sums`]: fixed, so that the sums do not depend on the
/// processor's vector width.
const LANES: usize = 8;

at_widest! {
    /// The class of every cell at (e^{λ−a}, e^{λ+a}) = (`el`, `eh`) into `classes` (1 above,
    /// 2 below, 0 at) and [P_above, P_below, R_at], each summed in [`LANES`] running sums
    /// added pairwise; at the widest vector width ([`crate::widest`]; every width gives the
    /// same bits).
    fn class_sums(r: &[f64], p: &[f64], el: f64, eh: f64, classes: &mut [u8]) -> [f64; 3] = class_sums_portable;
}

/// The loop of [`class_sums`]: cell i goes to lane i mod [`LANES`]; every value added is
/// ≥ 0 (a cell at its release has r_i ≥ p_i·e^{λ−a} ≥ 0). The cells' contributions are
/// formed block by block first (a loop without a running sum, which vectorises), then added
/// to the lanes in cell order.
#[inline(always)]
fn class_sums_portable(r: &[f64], p: &[f64], el: f64, eh: f64, classes: &mut [u8]) -> [f64; 3] {
    const BLOCK: usize = 8 * LANES;
    let mut sums = [[0.0f64; LANES]; 3];
    for ((rb, pb), cb) in r.chunks(BLOCK).zip(p.chunks(BLOCK)).zip(classes.chunks_mut(BLOCK)) {
        let mut parts = [[0.0f64; BLOCK]; 3];
        for (i, ((&ri, &pi), c)) in rb.iter().zip(pb).zip(cb.iter_mut()).enumerate() {
            let (above, below) = (pi * el > ri, pi * eh < ri);
            parts[0][i] = if above { pi } else { 0.0 };
            parts[1][i] = if below { pi } else { 0.0 };
            parts[2][i] = if above || below { 0.0 } else { ri };
            *c = u8::from(above) | (u8::from(below) << 1);
        }
        for (sum, part) in sums.iter_mut().zip(&parts) {
            let part = &part[..rb.len()];
            let (full, tail) = part.split_at(part.len() - part.len() % LANES);
            for group in full.chunks_exact(LANES) {
                for (s, &v) in sum.iter_mut().zip(group) {
                    *s += v;
                }
            }
            for (s, &v) in sum.iter_mut().zip(tail) {
                *s += v;
            }
        }
    }
    sums.map(|s| ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::{abs_diff_eq, assert_abs_diff_eq};
    use tpl_core::test_util::log_uniform;

    proptest::proptest! {
        /// The piece found by iteration is the piece of the breakpoint search: the same
        /// estimate and multiplier up to rounding, whenever the iteration settles.
        #[test]
        fn iteration_and_search_agree(
            cells in proptest::collection::vec((0.0f64..200.0, 0.0f64..1.0, proptest::bool::weighted(0.1)), 1..60),
            total in 1.0f64..1e4,
            a in proptest::prop_oneof![proptest::strategy::Just(0.0), log_uniform(-4.0, 2.0)],
        ) {
            let r: Vec<f64> = cells.iter().map(|c| c.0.round() - 3.0).collect();
            let w: Vec<f64> = cells.iter().map(|c| if c.2 { 0.0 } else { c.1 }).collect();
            let sum: f64 = w.iter().sum();
            proptest::prop_assume!(sum > 0.0);
            let p: Vec<f64> = w.iter().map(|v| v / sum).collect();
            let (fast, search) = (settled(&r, &p, total, a), searched(&r, &p, total, a));
            if fast != Settled::Unsettled {
                let (x, y) = (finish(&r, &p, total, fast), finish(&r, &p, total, search));
                for (xi, yi) in x.x.iter().zip(&y.x) {
                    proptest::prop_assert!((xi - yi).abs() <= 1e-12 * total, "{:?} vs {:?}", x, y);
                }
                match (x.lambda, y.lambda) {
                    (Some(l), Some(m)) => proptest::prop_assert!((l - m).abs() <= 1e-12 * (1.0 + l.abs())),
                    (l, m) => proptest::prop_assert_eq!(l, m),
                }
            }
        }
    }

    #[test]
    fn hand_case_half_half() {
        let s = map_step(&[10.0, 0.0], &[0.5, 0.5], 10.0, 2f64.ln()).unwrap();
        assert_abs_diff_eq!(s.x[..], [8.0, 2.0][..], epsilon = 1e-12);
        assert!((s.lambda.unwrap() - 8f64.ln()).abs() < 1e-12);
        let f = map_objective(&[10.0, 0.0], &[0.5, 0.5], 2f64.ln(), &s.x).unwrap();
        assert!((f - (40.0 * 2f64.ln() - 10.0)).abs() < 1e-12);
    }

    #[test]
    fn all_at_release() {
        let s = map_step(&[6.0, 4.0], &[0.5, 0.5], 10.0, 1.0).unwrap();
        assert_eq!(s.x, vec![6.0, 4.0]);
        assert_eq!(s.lambda, None);
    }

    #[test]
    fn zero_release_and_zero_weight_give_prior_mean() {
        let p = [0.2, 0.3, 0.5];
        for a in [0.0, 1e-6, 1.0, 1e3] {
            let s = map_step(&[0.0; 3], &p, 7.0, a).unwrap();
            assert!(abs_diff_eq!(s.x[..], [1.4, 2.1, 3.5][..], epsilon = 1e-12 * 7.0), "a = {a}: {:?}", s.x);
        }
        let s = map_step(&[5.0, -3.0, 2.5], &p, 7.0, 0.0).unwrap();
        assert_abs_diff_eq!(s.x[..], [1.4, 2.1, 3.5][..], epsilon = 1e-12 * 7.0);
    }

    #[test]
    fn single_cell_and_empty_population() {
        assert_eq!(map_step(&[3.0], &[1.0], 5.0, 0.7).unwrap().x, vec![5.0]);
        let s = map_step(&[3.0, 1.0], &[0.5, 0.5], 0.0, 0.7).unwrap();
        assert_eq!((s.x, s.lambda), (vec![0.0, 0.0], None));
    }

    #[test]
    fn huge_weight_does_not_overflow() {
        let s = map_step(&[3.0, 1.0, 0.0], &[0.2, 0.3, 0.5], 4.0, 1000.0).unwrap();
        assert_abs_diff_eq!(s.x[..], [3.0, 1.0, 0.0][..], epsilon = 1e-12 * 4.0);
        for a in [1e6, 1e300, f64::MAX] {
            let s = map_step(&[3.0, 1.0, 0.0, 2.0], &[0.2, 0.3, 0.4, 0.1], 5.0, a).unwrap();
            assert!(s.x.iter().all(|v| v.is_finite()), "a = {a}: {:?}", s.x);
            assert!((s.x.iter().sum::<f64>() - 5.0).abs() <= 1e-9 * 5.0, "a = {a}: {:?}", s.x);
        }
    }

    #[test]
    fn zero_prior_with_positive_release_is_zero_not_nan() {
        let s = map_step(&[50.0, 3.0, 0.0], &[0.0, 0.6, 0.4], 10.0, 1.0).unwrap();
        assert_eq!(s.x[0], 0.0);
        assert!((s.x.iter().sum::<f64>() - 10.0).abs() < 1e-12);
        assert!(s.x.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn tiny_prior_entries_stay_finite() {
        let p = [1e-300, 1.0 - 1e-300, 0.0];
        let s = map_step(&[1e9, 2.0, 7.0], &p, 1e9, 3.0).unwrap();
        assert!(s.x.iter().all(|v| v.is_finite()));
        assert!((s.x.iter().sum::<f64>() - 1e9).abs() <= 1e-9 * 1e9);
    }

    #[test]
    fn rejects_bad_input() {
        use crate::PostprocessError as E;
        assert_eq!(map_step(&[], &[], 1.0, 1.0), Err(E::NoCells));
        assert_eq!(
            map_step(&[1.0, f64::NAN], &[0.5, 0.5], 1.0, 1.0).unwrap_err().to_string(),
            "release value in cell 2 is NaN: releases must be finite"
        );
        assert!(matches!(
            map_step(&[1.0, f64::INFINITY], &[0.5, 0.5], 1.0, 1.0),
            Err(E::BadRelease { cell: 2, .. })
        ));
        assert_eq!(map_step(&[1.0], &[0.5, 0.5], 1.0, 1.0), Err(E::PriorLength { len: 2, expected: 1 }));
        assert_eq!(
            map_step(&[1.0, 1.0], &[1.5, -0.5], 1.0, 1.0),
            Err(E::BadPriorEntry { cell: 2, value: -0.5 })
        );
        assert!(matches!(map_step(&[1.0, 1.0], &[0.5, 0.6], 1.0, 1.0), Err(E::PriorSum { .. })));
        assert_eq!(map_step(&[1.0], &[1.0], -1.0, 1.0), Err(E::BadTotal(-1.0)));
        assert!(matches!(map_step(&[1.0], &[1.0], f64::NAN, 1.0), Err(E::BadTotal(_))));
        assert_eq!(map_step(&[1.0], &[1.0], 1.0, -0.5), Err(E::BadWeight(-0.5)));
        assert!(matches!(map_step(&[1.0], &[1.0], 1.0, f64::INFINITY), Err(E::BadWeight(_))));
        assert!(matches!(map_objective(&[1.0], &[1.0], 1.0, &[-1.0]), Err(E::BadEstimate { cell: 1, .. })));
        assert!(matches!(map_objective(&[1.0], &[1.0], 1.0, &[1.0, 2.0]), Err(E::EstimateLength { .. })));
    }
}
