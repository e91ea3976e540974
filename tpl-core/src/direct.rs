//! Algorithm 1 of the TKDE paper: L(α) at one α, straight from the matrix, with no
//! precomputation.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::candidate::Candidate;
use crate::par;
use crate::structure::{Bulk, PairBuf, PairClasses, PairList, RowStructure, Rows};
use crate::support::{inflation, margin, support_rows};

/// Above this value of the loss, e^L is not formed and ratios are compared as logarithms.
const LN_RATIO_MAX: f64 = 700.0;

/// Rows q scanned together against each row d (each d is read once for all of them).
const TILE: usize = 8;

/// Tiles per round: the tiles of a round run in parallel, and progress is reported after
/// each round.
const ROUND_TILES: usize = 4;

/// L(α) by Algorithm 1, for one α ≥ 0. O(n³) time, O(n) memory per thread.
///
/// For each ordered pair (q, d) the paper starts from S = {i : q_i > d_i} (Corollary 2) and
/// drops every state whose ratio q_i/d_i does not exceed the current value
/// λ = (1 + x q_S)/(1 + x d_S) until no state is dropped (Theorem 5). We run the same
/// iteration but start each pair from S = {i : q_i > λ* d_i}, where λ* is the best value of
/// the pairs seen so far: S_λ maximises (1 + x q_S) − λ(1 + x d_S), so a pair can beat λ*
/// only if that S already does, and most pairs are settled by one pass over their states.
/// Each iteration raises λ (Dinkelbach's method), so it ends after at most n of them.
///
/// Before that pass, a pair meets a cheaper test: the pair cannot reach log λ* if
/// x·h(λ* − 1) ≤ λ* − 1, h being its support function ([`docs/model.md`](crate::guide::model) §8).
/// It is computed for eight rows q against one row d at a time, branch-free and vectorised, with λ*
/// lowered by a relative margin of 10⁻⁹ so that rounding cannot hide a pair that the full pass
/// would have kept. The pairs run in parallel (feature `parallel`) and share λ*; since the
/// iteration reaches a pair's own optimum from any level below it, the maximum over pairs does not
/// depend on their order.
///
/// **Ties in floating point.** λ is a weighted mediant of the ratios in S, and when one
/// heavy state dominates it, that state's ratio can sit within 1e−160 of λ: no double decides
/// whether it belongs, yet the choice can change the value by 10 % (seen with rows that agree
/// to 1e−10 and α = 800). States whose ratio is within [`TIE`] of λ are therefore tried both
/// in and out of S.
///
/// **Rows with few distinct entries.** When `rows` are structured (a [`RowStructure`]), a
/// pair is its k explicit states and its bulk ([`crate::structure`]), and every step above
/// costs O(k) instead of O(n); the rows q then run one at a time in parallel.
///
/// Calls `progress(a, n)` after the pairs of each of the n rows a, in order.
pub(crate) fn loss_direct(rows: Rows<'_>, alpha: f64, progress: &dyn Fn(usize, usize)) -> f64 {
    let n = rows.n();
    let scan = Scan { alpha, best: AtomicU64::new(0.0f64.to_bits()), identity: AtomicBool::new(false) };
    let identity = match rows {
        Rows::Structured(structure, classes) => {
            let own = if classes.is_none() { PairClasses::new(structure) } else { None };
            let list = Rows::Structured(structure, classes.or(own.as_ref())).pairs();
            scan.structured(structure, &list, progress)
        }
        Rows::Dense { data, .. } => scan.dense(data, n, progress),
    };
    if identity { alpha } else { scan.best().min(alpha) }
}

/// Pairs per round of the structured scan (progress is reported after each round).
const STRUCTURED_ROUND: usize = 1 << 16;

/// Pairs per parallel work item of the structured scan.
const STRUCTURED_ITEM: usize = 1024;

/// About the work of one structured pair, in row entries (for [`par::map`]).
const STRUCTURED_PAIR_WORK: usize = 16;

/// The state shared by the threads of one evaluation.
struct Scan {
    alpha: f64,
    /// log λ*, the best value found so far, as the bits of a non-negative f64 (whose order
    /// is that of the integers).
    best: AtomicU64,
    /// Set when two rows with disjoint supports were found (L(α) = α).
    identity: AtomicBool,
}

impl Scan {
    fn best(&self) -> f64 {
        f64::from_bits(self.best.load(Ordering::Relaxed))
    }

    /// All pairs (q, d) with q among the rows a0..a0 + TILE of the n×n entries `data`.
    fn tile(&self, data: &[f64], n: usize, a0: usize) {
        let row = |j: usize| &data[j * n..(j + 1) * n];
        let rows: [usize; TILE] = std::array::from_fn(|k| (a0 + k).min(n - 1));
        let q = rows.map(row);
        let mut sel = Selection::default();
        for b in 0..n {
            if self.identity.load(Ordering::Relaxed) {
                return;
            }
            let d = row(b);
            let cleared = self.cleared(q, d);
            for k in 0..TILE {
                let duplicate = k > 0 && rows[k] == rows[k - 1]; // the last tile, padded
                if cleared[k] || rows[k] == b || duplicate {
                    continue;
                }
                if !self.settle(q[k], d, Bulk::NONE, &mut sel) {
                    return;
                }
            }
        }
    }

    /// The dense scan: tiles of rows q in parallel, in rounds of [`ROUND_TILES`] tiles, with
    /// `progress` after each round. True when two rows with disjoint supports were found.
    fn dense(&self, data: &[f64], n: usize, progress: &dyn Fn(usize, usize)) -> bool {
        let mut next = 0;
        while next < n {
            let end = (next + ROUND_TILES * TILE).min(n);
            let tiles = next.div_ceil(TILE)..end.div_ceil(TILE);
            par::map(tiles, (end - next) * n * n, |t| self.tile(data, n, t * TILE));
            if self.identity.load(Ordering::Relaxed) {
                return true;
            }
            (next..end).for_each(|a| progress(a + 1, n));
            next = end;
        }
        false
    }

    /// The structured scan over the pairs of `list` (each as its explicit states and its
    /// bulk), in parallel, in rounds of [`STRUCTURED_ROUND`] pairs, with `progress` after each
    /// round for the rows all of whose pairs are behind. True when two rows with disjoint
    /// supports were found.
    fn structured(&self, rows: &RowStructure, list: &PairList, progress: &dyn Fn(usize, usize)) -> bool {
        let n = rows.n();
        let (mut next, mut reported) = (0, 0);
        while next < list.len() {
            let end = (next + STRUCTURED_ROUND).min(list.len());
            let items = (end - next).div_ceil(STRUCTURED_ITEM);
            par::map(0..items, (end - next) * STRUCTURED_PAIR_WORK, |k| {
                let from = next + k * STRUCTURED_ITEM;
                self.structured_pairs(rows, (from..(from + STRUCTURED_ITEM).min(end)).map(|k| list.get(k)));
            });
            if self.identity.load(Ordering::Relaxed) {
                return true;
            }
            next = end;
            let done = if next < list.len() { list.get(next) / n } else { n };
            while reported < done {
                reported += 1;
                progress(reported, n);
            }
        }
        false
    }

    /// The pairs a·n + b of `pairs` (q = row a, d = row b), each as its explicit states and its
    /// bulk.
    fn structured_pairs(&self, rows: &RowStructure, pairs: impl Iterator<Item = usize>) {
        let n = rows.n();
        let (mut buf, mut sel) = (PairBuf::default(), Selection::default());
        let mut bar = Bar::new(self.best(), n, self.alpha);
        for (a, b) in pairs.map(|p| (p / n, p % n)).filter(|(a, b)| a != b) {
            if self.identity.load(Ordering::Relaxed) {
                return;
            }
            if bar.level != self.best() {
                bar = Bar::new(self.best(), n, self.alpha);
            }
            let (q, d, bulk) = rows.pair(a, b, &mut buf);
            if bar.clears(support_rows([q], d, bar.mu)[0] + bulk.support(bar.mu)) {
                continue;
            }
            if !self.settle(q, d, bulk, &mut sel) {
                return;
            }
        }
    }

    /// Runs the full pass on one pair and records what it found; false once two rows with
    /// disjoint supports were found (the scan stops).
    fn settle(&self, q: &[f64], d: &[f64], bulk: Bulk, sel: &mut Selection) -> bool {
        match pair_level(q, d, bulk, self.best(), self.alpha, sel) {
            Pair::Settled => true,
            Pair::Better(v) => {
                self.best.fetch_max(v.to_bits(), Ordering::Relaxed);
                true
            }
            Pair::Disjoint => {
                self.identity.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    /// Which of the pairs (q[k], d) provably cannot exceed the best value so far.
    fn cleared(&self, q: [&[f64]; TILE], d: &[f64]) -> [bool; TILE] {
        below_level(q, d, self.best(), self.alpha)
    }
}

/// Which of the pairs (q[k], d) provably have no candidate worth more than `level` at `alpha`,
/// by their support function at λ − 1 for λ = e^{(1 − margin)·level}
/// ([`docs/model.md`](crate::guide::model) §8): every S then has x(δ_S − (λ − 1) d_S) ≤ λ − 1,
/// x = e^α − 1, i.e. a value below (1 − margin)·level, which no rounding of the full pass lifts
/// above `level`. None for level > 700, where λ is not a double.
fn below_level<const T: usize>(q: [&[f64]; T], d: &[f64], level: f64, alpha: f64) -> [bool; T] {
    let bar = Bar::new(level, d.len(), alpha);
    if level > LN_RATIO_MAX {
        return [false; T];
    }
    support_rows(q, d, bar.mu).map(|h| bar.clears(h))
}

/// The support test of [`below_level`] at one level, for pairs of n states: what it
/// compares a pair's support with, computed once.
struct Bar {
    /// The level, log λ.
    level: f64,
    /// μ = e^{(1 − margin)·level} − 1 (level capped at 700), the slope at which a pair's
    /// support is read.
    mu: f64,
    /// The inflation of a sum of n terms.
    c: f64,
    /// x = e^α − 1 (∞ above α ≈ 709.78).
    x: f64,
    /// α.
    alpha: f64,
}

impl Bar {
    fn new(level: f64, n: usize, alpha: f64) -> Self {
        let mu = (level.min(LN_RATIO_MAX) * (1.0 - margin(n))).exp_m1();
        Self { level, mu, c: inflation(n), x: alpha.exp_m1(), alpha }
    }

    /// Whether a pair whose support at μ is `h` provably stays at or below the level.
    ///
    /// While x is a finite double the test is x·h·c ≤ μ(1 − 8ε) as written. Above α ≈ 709.78,
    /// where e^α overflows, the same inequality is compared in logarithms, ln h + ln c + ln x
    /// against ln μ + ln(1 − 8ε), with ln x = α + ln(1 − e^{−α}) and the sides kept apart by
    /// the rounding of the four logarithms and their sum (4ε of each one's size): large α
    /// prunes as much as α = 700 does. Nothing is cleared above level 700, where λ is not a
    /// double.
    fn clears(&self, h: f64) -> bool {
        if self.level > LN_RATIO_MAX {
            return false;
        }
        if h == 0.0 {
            return true;
        }
        if self.x.is_finite() {
            return h * self.c * self.x <= self.mu * (1.0 - 8.0 * f64::EPSILON);
        }
        let ln_x = self.alpha + (-(-self.alpha).exp()).ln_1p();
        let (ln_h, ln_c, ln_mu) = (h.ln(), self.c.ln(), self.mu.ln());
        let rounding = 4.0 * f64::EPSILON * (ln_h.abs() + ln_c.abs() + ln_x.abs() + ln_mu.abs());
        ln_h + ln_c + ln_x + rounding <= ln_mu + (-8.0 * f64::EPSILON).ln_1p()
    }
}

/// What the full pass over one pair found.
enum Pair {
    /// The pair does not beat the level it started from.
    Settled,
    /// The pair's own optimum, above that level.
    Better(f64),
    /// Disjoint supports: L(α) = α.
    Disjoint,
}

/// Dinkelbach's iteration for one pair (q, d) from `best`: its optimum if that is higher.
fn pair_level(q: &[f64], d: &[f64], bulk: Bulk, best: f64, alpha: f64, sel: &mut Selection) -> Pair {
    if best <= LN_RATIO_MAX && settled_at(q, d, bulk, best, alpha) {
        return Pair::Settled;
    }
    let mut level = best;
    loop {
        sel.select(q, d, bulk, level);
        let mut improved = None;
        for c in sel.variants(q, d, bulk) {
            if c.d == 0.0 && disjoint(q, d, bulk) {
                return Pair::Disjoint;
            }
            let value = c.log_ratio(alpha);
            if value > level && improved.is_none_or(|v| value > v) {
                improved = Some(value);
            }
        }
        match improved {
            Some(v) => level = v,
            None => break,
        }
    }
    if level > best { Pair::Better(level) } else { Pair::Settled }
}

/// The common case in one fused pass: S_λ* of this pair does not beat the best value so far
/// and no state is tied with λ*, so (by the Dinkelbach argument above) the pair cannot beat
/// it. Returns false when the full iteration is needed.
fn settled_at(q: &[f64], d: &[f64], bulk: Bulk, level: f64, alpha: f64) -> bool {
    let (lambda, tie) = (level.exp(), tie_width(level));
    // Whether a state is in S_λ*, and whether its ratio is tied with λ*.
    let classify = |qi: f64, di: f64| {
        let t = lambda * di;
        (qi > di && qi > t, qi > di && (qi - t).abs() <= tie * t)
    };
    let (mut ds, mut gap, mut tied, mut zero_d) = (0.0, 0.0, false, false);
    for (&qi, &di) in q.iter().zip(d) {
        let (inside, tie_here) = classify(qi, di);
        ds += if inside { di } else { 0.0 };
        gap += if inside { qi - di } else { 0.0 };
        tied |= tie_here;
        zero_d |= inside && di == 0.0;
    }
    if bulk.count > 0.0 {
        let (inside, tie_here) = classify(bulk.q, bulk.d);
        if inside {
            let (bulk_d, bulk_gap) = bulk.masses();
            ds += bulk_d;
            gap += bulk_gap;
        }
        tied |= tie_here;
        zero_d |= inside && bulk.d == 0.0;
    }
    if tied || zero_d {
        return false; // ties, and d_S = 0 (Theorem 7 check), take the careful path
    }
    gap <= 0.0 || Candidate { d: ds, delta: gap }.log_ratio(alpha) <= level
}

/// Relative distance between a state's ratio and λ below which membership is ambiguous, per
/// unit of level (see [`tie_width`]).
const TIE: f64 = 1e-14;

/// The relative tie width at `level` = log λ. The level carries a few ulps of rounding from
/// the logarithms, an absolute error of about ε·level, which e^level turns into a relative
/// error of λ of the same size: about 3e-14 at level 300, more than a fixed 1e-14.
fn tie_width(level: f64) -> f64 {
    TIE * level.max(1.0)
}

/// S_λ = {i : q_i/d_i > λ} of one pair at one level, with its ambiguous states. The pair's
/// bulk, when it has one, is state number `q.len()`.
#[derive(Default)]
struct Selection {
    members: Vec<usize>,
    tied_in: Vec<usize>,
    tied_out: Vec<usize>,
}

impl Selection {
    fn select(&mut self, q: &[f64], d: &[f64], bulk: Bulk, level: f64) {
        self.members.clear();
        self.tied_in.clear();
        self.tied_out.clear();
        let (lambda, tie) = (level.exp(), tie_width(level));
        let bulk_state = (bulk.count > 0.0).then_some((bulk.q, bulk.d));
        let states = q.iter().copied().zip(d.iter().copied()).chain(bulk_state);
        for (i, (qi, di)) in states.enumerate() {
            if qi <= di {
                continue;
            }
            // margin = log(q_i/d_i) − level, in relative terms; compared in logs once e^level
            // stops being a finite double.
            let (above, tied) = if di == 0.0 {
                (true, false)
            } else if level <= LN_RATIO_MAX {
                let t = lambda * di;
                (qi > t, (qi - t).abs() <= tie * t)
            } else {
                let margin = qi.ln() - di.ln() - level;
                (margin > 0.0, margin.abs() <= tie)
            };
            if above {
                self.members.push(i);
                if tied {
                    self.tied_in.push(i);
                }
            } else if tied {
                self.tied_out.push(i);
            }
        }
    }

    /// S itself, S without its tied states and S with the tied states outside it.
    fn variants<'s>(
        &'s self,
        q: &'s [f64],
        d: &'s [f64],
        bulk: Bulk,
    ) -> impl Iterator<Item = Candidate> + 's {
        let sums = move |members: &mut dyn Iterator<Item = usize>| sums(q, d, bulk, members);
        let all = sums(&mut self.members.iter().copied());
        let without = (!self.tied_in.is_empty())
            .then(|| sums(&mut self.members.iter().copied().filter(|i| !self.tied_in.contains(i))))
            .flatten();
        let with = (!self.tied_out.is_empty())
            .then(|| sums(&mut self.members.iter().chain(&self.tied_out).copied()))
            .flatten();
        all.into_iter().chain(without).chain(with)
    }
}

/// Whether q and d have disjoint supports (Theorem 7: q_S = 1 and d_S = 0 for S = supp q).
fn disjoint(q: &[f64], d: &[f64], bulk: Bulk) -> bool {
    let apart = |qi: f64, di: f64| qi == 0.0 || di == 0.0;
    q.iter().zip(d).all(|(&qi, &di)| apart(qi, di)) && (bulk.count == 0.0 || apart(bulk.q, bulk.d))
}

/// (d_S, q_S − d_S) of the states `members` (the bulk being state `q.len()`); None for S = ∅.
fn sums(q: &[f64], d: &[f64], bulk: Bulk, members: &mut dyn Iterator<Item = usize>) -> Option<Candidate> {
    let (mut ds, mut gap, mut any) = (0.0, 0.0, false);
    for i in members {
        let (di, gi) = if i < q.len() { (d[i], q[i] - d[i]) } else { bulk.masses() };
        ds += di;
        gap += gi;
        any = true;
    }
    any.then_some(Candidate { d: ds, delta: gap })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{SUBNORMAL_FLOOR, WeightMix, alpha, few_entries, log_uniform, weight_with};
    use crate::{LossEvaluator, PiecewiseLoss, TransitionMatrix};
    use proptest::prelude::*;

    /// The rows of a dense matrix as the scan reads them.
    fn dense_rows(m: &TransitionMatrix) -> Rows<'_> {
        Rows::Dense { data: m.dense_entries().expect("a dense matrix"), n: m.n() }
    }

    /// A pair's best candidate at α from its full chain (Theorem 8), by brute force.
    fn pair_optimum(q: &[f64], d: &[f64], alpha: f64) -> f64 {
        crate::chains::pair_chain(q, d, Bulk::NONE, &mut Vec::new())
            .iter()
            .map(|c| c.log_ratio(alpha))
            .fold(0.0, f64::max)
    }

    /// A probability row of n entries from weights that are zero, uniform or 10^−u, u < 300.
    fn row(n: usize) -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(weight_with(WeightMix { zero: 2, one: 0, ..WeightMix::default() }), n)
            .prop_filter_map("all zero", |w| {
                let s: f64 = w.iter().sum();
                (s > 0.0).then(|| w.iter().map(|v| v / s).collect())
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The support test clears a pair only when its best candidate is at most the level,
        /// also for levels within a hair of the pair's own optimum and for q ≈ d.
        #[test]
        fn support_test_clears_only_pairs_below_the_level(
            (q, d, near) in (1usize..40).prop_flat_map(|n| (row(n), row(n), prop::collection::vec(-1.0f64..1.0, n))),
            alpha in prop_oneof![0.0f64..50.0, log_uniform(-12.0, -1.0), 50.0f64..700.0, 700.0f64..720.0, 720.0f64..1e7],
            shift in prop_oneof![Just(0.0), -1e-6f64..1e-6, -1.0f64..1.0],
            close in any::<bool>(),
        ) {
            // Rows that agree to 1e-10, or independent ones.
            let q: Vec<f64> = if close { d.iter().zip(&near).map(|(v, e)| v * (1.0 + 1e-10 * e)).collect() } else { q };
            let best = pair_optimum(&q, &d, alpha);
            for level in [best * (1.0 + shift), best * (1.0 - 2e-9), best * (1.0 + 2e-9), best] {
                let level = level.max(0.0);
                let [cleared] = below_level([&q], &d, level, alpha);
                prop_assert!(!cleared || best <= level, "cleared at {level} but the pair reaches {best}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// The structured scan (each pair as its explicit states and a bulk) finds the value
        /// of the dense scan over all n states.
        #[test]
        fn the_structured_scan_finds_the_dense_value(m in few_entries(2..24), alpha in alpha()) {
            let dense = loss_direct(dense_rows(&m), alpha, &|_, _| {});
            let structured = loss_direct(Rows::Structured(&RowStructure::of(&m), None), alpha, &|_, _| {});
            prop_assert!(
                (dense - structured).abs() <= 1e-12 * dense.max(structured) + SUBNORMAL_FLOOR,
                "dense {dense}, structured {structured}"
            );
        }
    }

    #[test]
    fn the_support_test_prunes_above_the_overflow_of_e_to_the_alpha() {
        // L of this pair never exceeds log 1.25 ≈ 0.223: at level 0.5 it is cleared at every α,
        // also where e^α − 1 is no longer a double (before, nothing was cleared past α = 700).
        let (q, d) = ([0.5, 0.5], [0.4, 0.6]);
        for alpha in [1.0, 700.0, 709.0, 709.8, 710.0, 1000.0, 1e6, 1e300] {
            assert_eq!(below_level([&q], &d, 0.5, alpha), [true], "α = {alpha}");
            if alpha >= 700.0 {
                // There L is log 1.25 to within e^−700: a level under it is never cleared.
                assert_eq!(
                    below_level([&q], &d, 0.2, alpha),
                    [false],
                    "α = {alpha}: 0.2 is below the optimum"
                );
            }
        }
    }

    #[test]
    fn ambiguous_ties_are_tried_both_ways() {
        // Regression: rows agreeing to 1e−10 with a 1e−157 column; at α = 800 the optimum is
        // that column alone, but λ of the two-state set sat within 1e−160 of the heavy
        // state's ratio and the iteration kept it (10 % too low).
        let rows = vec![
            vec![0.5571380353465039, 0.027881664134923625, 6.920267096081282e-158],
            vec![0.5571380353724581, 0.02788166413341594, 6.920267096081282e-158],
            vec![0.5571380354145611, 0.027881664135293374, 6.920267096081282e-158],
        ];
        let m = TransitionMatrix::normalized(rows).unwrap();
        let want = PiecewiseLoss::new(&m).loss(800.0);
        let got = loss_direct(dense_rows(&m), 800.0, &|_, _| {});
        assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
    }
}
