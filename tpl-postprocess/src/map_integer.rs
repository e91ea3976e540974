//! The exact integer MAP estimator `map-integer` ([docs/map.md](tpl_core::guide::map) §4).
//!
//! G(x) = a Σ|x_i − r_i| + Σ(ln x_i! − x_i ln p_i) over x ∈ ℕⁿ with Σx = N is separable with
//! strictly increasing marginal costs δ_i(k) = ln k − ln p_i + a·σ_i(k), so the N cheapest
//! units overall are an optimum. Two selections of those units, which return the same
//! vector bit for bit: a binary heap (O(N log n), the reference algorithm) and, for
//! large N, a bisection on the cost threshold (O(n) per probe, typically 10–20 probes)
//! followed by a sort of the few units left undecided.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::error::Result;
use crate::numeric::{clamp_between, from_ordered, ln_factorial, ln_or_neg_inf, ordered};
use crate::validate;

/// One step of the integer MAP estimator `map-integer` ([docs/map.md](tpl_core::guide::map) §4):
/// the integer point x ∈ ℕⁿ with Σx = N that minimises the exact negative log-posterior G(x) = a
/// Σ|x_i − r_i| + Σ(ln x_i! − x_i ln p_i) (no Stirling approximation).
///
/// Arguments as in [`crate::map_step`], with an integer population N.
///
/// # Proof definition
/// Returns the N cheapest units by marginal cost δ_i(k) = ln k − ln p_i + a σ_i(k), where
/// σ_i(k) = −1 if k ≤ r_i, +1 if k − 1 ≥ r_i, 2(k − r_i) − 1 otherwise. This is a minimiser
/// of G; among several minimisers (units of equal cost, compared as computed f64) it is the
/// one the tie rule of [docs/map.md](tpl_core::guide::map) §4 picks: **lower cell index first**.
/// Cells with p_i = 0 get 0.
///
/// # Errors
/// As [`crate::map_step`] for `r`, `p` and `a`;
/// [`TotalTooLarge`](crate::PostprocessError::TotalTooLarge) for N > 2⁵³.
///
/// # Runtime
/// O((n + N) log n) with the heap for N up to a few dozen units per cell; beyond that a
/// bisection on the threshold cost ([docs/map.md](tpl_core::guide::map) §4, "Large N"): O(n) per
/// probe, about log₂(N/n) + 5 probes (at most 124 whatever N), then a sort of O(n) units.
///
/// # Citations
/// [docs/map.md](tpl_core::guide::map) §4; DBSec 2023 eq. (8) (the multinomial prior).
///
/// ```
/// use tpl_postprocess::map_integer_step;
/// // The tie case of [docs/map.md](tpl_core::guide::map) §4: equal marginal costs go to the lower cell first.
/// assert_eq!(map_integer_step(&[0.0; 3], &[1.0 / 3.0; 3], 4, 0.5)?, vec![2, 1, 1]);
/// assert_eq!(map_integer_step(&[10.0, 0.0], &[0.5, 0.5], 10, 2f64.ln())?, vec![8, 2]);
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
pub fn map_integer_step(r: &[f64], p: &[f64], total: u64, a: f64) -> Result<Vec<u64>> {
    validate::step(r, p, a)?;
    validate::integer_total(total)?;
    Ok(solve(r, p, total, a))
}

/// The objective G(x) = a Σ|x_i − r_i| + Σ(ln x_i! − x_i ln p_i) of
/// [docs/map.md](tpl_core::guide::map) §4, natural logarithms, ln x! = lgamma(x + 1), x_i ln p_i =
/// 0 when x_i = 0, no constant dropped (the convention of the reference cases in
/// `testdata/map_cases.json`, field `map_integer.objective`). Infeasible points (x_i > 0 where p_i
/// = 0) give +∞. The sum constraint is not checked.
///
/// # Errors
/// As [`map_integer_step`] for `r`, `p` and `a`;
/// [`EstimateLength`](crate::PostprocessError::EstimateLength) when `x` has the wrong length.
///
/// ```
/// use tpl_postprocess::map_integer_objective;
/// let g = map_integer_objective(&[2.0], &[1.0], 1.0, &[3])?;
/// assert!((g - (1.0 + 6f64.ln())).abs() < 1e-15);
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
pub fn map_integer_objective(r: &[f64], p: &[f64], a: f64, x: &[u64]) -> Result<f64> {
    validate::step(r, p, a)?;
    if x.len() != r.len() {
        return Err(crate::PostprocessError::EstimateLength { len: x.len(), expected: r.len() });
    }
    Ok(r.iter()
        .zip(p)
        .zip(x)
        .map(|((&ri, &pi), &xi)| {
            let xf = xi as f64;
            let prior = match (xi > 0, pi > 0.0) {
                (false, _) => 0.0,
                (true, true) => ln_factorial(xi) - xf * pi.ln(),
                (true, false) => f64::INFINITY,
            };
            a * (xf - ri).abs() + prior
        })
        .sum())
}

/// Cost δ_i(k) − `shift` of the k-th unit (k ≥ 1) of a cell with release `r` and ln p =
/// `ln_p` ([docs/map.md](tpl_core::guide::map) §4). The single formula both selections evaluate, so
/// that they see the same f64 values; it is non-decreasing in k as computed (ln is monotone,
/// rounding is monotone). A uniform shift leaves the order of the exact costs as it is; `shift` =
/// a·σ₀ ([`shift_of`]) makes the units of the class σ = σ₀ cost their prior term exactly, so that
/// however large a is, the prior still orders the units among which the choice is made.
#[inline]
fn unit_cost(k: u64, r: f64, ln_p: f64, a: f64, shift: f64) -> f64 {
    let kf = k as f64;
    let sigma = if kf <= r {
        -1.0
    } else if kf - 1.0 >= r {
        1.0
    } else {
        2.0 * (kf - r) - 1.0
    };
    // + 0.0 turns a −0 into +0, so that the heap's total order is f64 equality's.
    (kf.ln() - ln_p) + (a * sigma - shift) + 0.0
}

/// The shift a·σ₀ of [`unit_cost`]: σ₀ = −1 (the units at or below the release) when the N
/// units fit among those, else +1 (all of those are taken when a is large, and the choice is
/// among the units above the release). With a of 10^15 and more, a·σ + (ln k − ln p) keeps
/// only a few bits of the prior term, so the prior stopped breaking the ties of the L1 term;
/// shifted, the class the choice is made in costs its prior term exactly.
fn shift_of(r: &[f64], p: &[f64], total: u64, a: f64) -> f64 {
    let below = r.iter().zip(p).filter(|&(_, &pi)| pi > 0.0).fold(0u64, |acc, (&ri, _)| {
        // `as` saturates: a release beyond 2^64 counts as that many units.
        acc.saturating_add(ri.max(0.0).floor() as u64)
    });
    if total <= below { -a } else { a }
}

/// The heap serves N ≤ `HEAP_PER_CELL`·n + `HEAP_EXTRA` units; the threshold bisection the
/// rest. Measured crossover (release build): about 16–30 units per cell at n ≤ 10, about 8
/// at n ≥ 100 (the heap costs ~20–60 ns per unit, a threshold probe ~20 ns per cell).
const HEAP_PER_CELL: u64 = 8;
const HEAP_EXTRA: u64 = 48;

/// Selection on validated input.
pub(crate) fn solve(r: &[f64], p: &[f64], total: u64, a: f64) -> Vec<u64> {
    let active = p.iter().filter(|&&v| v > 0.0).count() as u64;
    if total <= HEAP_PER_CELL * active + HEAP_EXTRA {
        by_heap(r, p, total, a)
    } else {
        by_threshold(r, p, total, a)
    }
}

/// A heap entry: the next unit of `cell` costs `cost`. Ordered so that `BinaryHeap` (a
/// max-heap) pops the smallest cost first and, among equal costs, the lowest cell.
#[derive(PartialEq)]
struct Next {
    cost: f64,
    cell: usize,
}

impl Eq for Next {}

impl Ord for Next {
    fn cmp(&self, other: &Self) -> Ordering {
        other.cost.total_cmp(&self.cost).then(other.cell.cmp(&self.cell))
    }
}

impl PartialOrd for Next {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The reference algorithm of [docs/map.md](tpl_core::guide::map) §4: assign N units one at a time
/// to the cell whose next unit is cheapest (ties: lower cell index).
pub(crate) fn by_heap(r: &[f64], p: &[f64], total: u64, a: f64) -> Vec<u64> {
    let n = r.len();
    let mut x = vec![0u64; n];
    let ln_p: Vec<f64> = p.iter().map(|&v| ln_or_neg_inf(v)).collect();
    let shift = shift_of(r, p, total, a);
    let mut heap: BinaryHeap<Next> = (0..n)
        .filter(|&i| p[i] > 0.0)
        .map(|i| Next { cost: unit_cost(1, r[i], ln_p[i], a, shift), cell: i })
        .collect();
    for _ in 0..total {
        // The prior sums to 1, so some cell is active and the heap never runs dry.
        let Some(Next { cell, .. }) = heap.pop() else { break };
        x[cell] += 1;
        heap.push(Next { cost: unit_cost(x[cell] + 1, r[cell], ln_p[cell], a, shift), cell });
    }
    x
}

/// Number of units k ∈ 1..=cap of one cell with δ(k) − shift ≤ θ.
///
/// Starts from the closed form median(r⁺, p e^{θ+shift−a}, p e^{θ+shift+a})
/// ([docs/map.md](tpl_core::guide::map) §4: the count in exact arithmetic, up to floors) and
/// corrects it with the exact δ by a galloping search, so the answer is the count for the computed
/// δ, as the heap sees it.
fn count_cell(r: f64, ln_p: f64, (a, shift): (f64, f64), theta: f64, cap: u64) -> u64 {
    let ok = |k: u64| unit_cost(k, r, ln_p, a, shift) <= theta;
    let guess =
        clamp_between(r.max(0.0), (ln_p + theta + (shift - a)).exp(), (ln_p + theta + (shift + a)).exp());
    // `as` saturates (and maps NaN to 0): any value is a valid starting point.
    let m = (guess.floor() as u64).min(cap);
    if m > 0 && !ok(m) {
        // Too many: gallop down to a k with ok(k) (k = 0 counts as ok), then bisect.
        let (good, bad) = gallop(m, |x, step| x.saturating_sub(step), |k| k == 0 || ok(k));
        bisect(good, bad, ok)
    } else {
        // ok(m): gallop up to a k with !ok(k) (cap + 1 counts as not ok), then bisect.
        let (bad, good) = gallop(m, |x, step| x.saturating_add(step).min(cap + 1), |k| k > cap || !ok(k));
        bisect(good, bad, ok)
    }
}

/// From `start`, moves by `advance(x, step)` with steps 1, 2, 4, … until `reached` holds:
/// returns (the first point where it holds, the point before it, where it did not).
fn gallop(start: u64, advance: impl Fn(u64, u64) -> u64, reached: impl Fn(u64) -> bool) -> (u64, u64) {
    let (mut last, mut step) = (start, 1u64);
    loop {
        let k = advance(last, step);
        if reached(k) {
            return (k, last);
        }
        last = k;
        step = step.saturating_mul(2);
    }
}

/// The largest k with `ok(k)` between `good` (ok) and `bad` (not ok), by bisection; `ok` is
/// monotone (true, then false) on that range.
fn bisect(mut good: u64, mut bad: u64, ok: impl Fn(u64) -> bool) -> u64 {
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if ok(mid) { good = mid } else { bad = mid }
    }
    good
}

/// The large-N variant of [docs/map.md](tpl_core::guide::map) §4. Bisects on the cost θ, keeping
/// count(≤ lo) < N ≤ count(≤ hi), until few units cost between lo and hi; every unit costing
/// at most lo is taken, and the rest are chosen among the units in (lo, hi] by sorting them
/// on (cost, cell, k) — the order in which the heap pops them, so the result is the heap's.
/// When lo and hi become adjacent doubles first, every unit in (lo, hi] costs exactly hi and
/// the heap takes them cell by cell.
pub(crate) fn by_threshold(r: &[f64], p: &[f64], total: u64, a: f64) -> Vec<u64> {
    let n = r.len();
    let mut x = vec![0u64; n];
    if total == 0 {
        return x;
    }
    let ln_p: Vec<f64> = p.iter().map(|&v| ln_or_neg_inf(v)).collect();
    let active: Vec<usize> = (0..n).filter(|&i| p[i] > 0.0).collect();
    let Some(&richest) = active.iter().max_by(|&&i, &&j| p[i].total_cmp(&p[j])) else {
        return x;
    };
    let units = Units { r, ln_p: &ln_p, active: &active, a, shift: shift_of(r, p, total, a), cap: total };
    // Enough candidates to make the final sort cheap, few enough to stop bisecting early.
    let few = 2 * active.len() as u64 + 64;
    let bracket = units.bracket(total, ln_p[richest], few);
    units.take(&bracket, total, few, &mut x);
    x
}

/// The units of the active cells (p_i > 0) of one problem, each cell capped at N units.
struct Units<'a> {
    r: &'a [f64],
    ln_p: &'a [f64],
    active: &'a [usize],
    a: f64,
    /// The shift of [`unit_cost`].
    shift: f64,
    cap: u64,
}

/// Costs lo < hi with count(≤ lo) = `below_lo` < N ≤ `below_hi` = count(≤ hi).
struct Bracket {
    lo: f64,
    hi: f64,
    below_lo: u64,
    below_hi: u64,
}

impl Units<'_> {
    /// Units of all cells with δ ≤ θ, each cell capped at N, saturating.
    fn count(&self, theta: f64) -> u64 {
        self.active.iter().fold(0u64, |acc, &i| acc.saturating_add(self.count_in(i, theta)))
    }

    /// Units of cell i with δ ≤ θ.
    fn count_in(&self, i: usize, theta: f64) -> u64 {
        count_cell(self.r[i], self.ln_p[i], (self.a, self.shift), theta, self.cap)
    }

    /// The bisection on the cost θ: from a bracket that holds every unit, narrows it until
    /// at most `few` units cost between its ends, or its ends are adjacent doubles.
    /// `ln_p_richest` is ln p of a cell of largest prior.
    fn bracket(&self, total: u64, ln_p_richest: f64, few: u64) -> Bracket {
        let min_neg_ln_p = self.active.iter().map(|&i| -self.ln_p[i]).fold(f64::INFINITY, f64::min);
        // Every computed cost is ≥ fl(−ln p_i + fl(−a − shift)) (ln k ≥ 0, σ ≥ −1, rounding is
        // monotone), so the double just below that bound is below every unit, even when a
        // swamps ln p.
        let mut lo = from_ordered(ordered(min_neg_ln_p + (-self.a - self.shift)) - 1);
        let mut below_lo = 0u64;
        // The first N units of the richest cell all cost at most δ(N) with σ = +1, and that
        // is how `hi` is computed, so count(≤ hi) ≥ N holds for the computed costs.
        let mut hi = ((total as f64).ln() - ln_p_richest) + (self.a * 1.0 - self.shift) + 0.0;
        let mut below_hi = self.count(hi);
        let mut halvings = 0;
        while below_hi - below_lo > few {
            // Halve the θ-interval (fast while it is wide), then, from the 60th halving on,
            // the number of doubles in it (at most 64 more steps, whatever the magnitudes).
            let mid = if halvings < 60 {
                0.5 * lo + 0.5 * hi
            } else {
                let (l, h) = (i128::from(ordered(lo)), i128::from(ordered(hi)));
                // Between two i64 values, so it fits.
                from_ordered((l + (h - l) / 2) as i64)
            };
            halvings += 1;
            if !(mid > lo && mid < hi) {
                break; // adjacent doubles
            }
            let c = self.count(mid);
            if c >= total {
                (hi, below_hi) = (mid, c);
            } else {
                (lo, below_lo) = (mid, c);
            }
        }
        Bracket { lo, hi, below_lo, below_hi }
    }

    /// Takes every unit costing at most `lo`, then the cheapest of those in (lo, hi] in the
    /// heap's order until N units are taken, writing the counts into `x`.
    fn take(&self, bracket: &Bracket, total: u64, few: u64, x: &mut [u64]) {
        let Bracket { lo, hi, below_lo, below_hi } = *bracket;
        // Saturating throughout: the counts are consistent (same δ, monotone in θ), so these
        // never clip; they only rule out a wrap-around if that assumption ever failed.
        let mut left = total.saturating_sub(below_lo);
        let mut tops = Vec::with_capacity(self.active.len());
        for &i in self.active {
            x[i] = self.count_in(i, lo);
            tops.push(self.count_in(i, hi));
        }
        if below_hi - below_lo <= few {
            let mut candidates: Vec<(f64, usize)> = Vec::with_capacity((below_hi - below_lo) as usize);
            for (&i, &top) in self.active.iter().zip(&tops) {
                candidates.extend(
                    (x[i] + 1..=top).map(|k| (unit_cost(k, self.r[i], self.ln_p[i], self.a, self.shift), i)),
                );
            }
            // Within a cell, costs rise with k and the sort is stable: (cost, cell) suffices.
            candidates.sort_by(|u, v| u.0.total_cmp(&v.0).then(u.1.cmp(&v.1)));
            for &(_, i) in candidates.iter().take(left as usize) {
                x[i] += 1;
            }
        } else {
            for (&i, &top) in self.active.iter().zip(&tops) {
                let take = top.saturating_sub(x[i]).min(left);
                x[i] += take;
                left -= take;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tie_rule() {
        assert_eq!(map_integer_step(&[0.0; 3], &[1.0 / 3.0; 3], 4, 0.5).unwrap(), vec![2, 1, 1]);
        assert_eq!(by_threshold(&[0.0; 3], &[1.0 / 3.0; 3], 4, 0.5), vec![2, 1, 1]);
    }

    /// Regression: with a ≥ 10^15 the L1 term swamped the prior term in the computed cost
    /// (ulp(10^16) = 2), so ties of the L1 term went to the lower cell instead of the likelier
    /// one. The prior still decides among the units at or below the release, and among the
    /// units above it, whatever a is — in both selections.
    #[test]
    fn the_prior_breaks_the_ties_of_the_l1_term_at_any_weight() {
        for a in [1.0, 1e14, 1e16, 1e300] {
            assert_eq!(map_integer_step(&[5.0, 5.0], &[0.1, 0.9], 6, a).unwrap(), vec![1, 5], "a = {a}");
            assert_eq!(by_threshold(&[5.0, 5.0], &[0.1, 0.9], 6, a), vec![1, 5], "a = {a}");
            assert_eq!(map_integer_step(&[0.0, 0.0], &[0.1, 0.9], 4, a).unwrap(), vec![0, 4], "a = {a}");
            assert_eq!(by_threshold(&[0.0, 0.0], &[0.1, 0.9], 4, a), vec![0, 4], "a = {a}");
            assert_eq!(
                by_heap(&[300.0, 300.0], &[0.1, 0.9], 400, a),
                by_threshold(&[300.0, 300.0], &[0.1, 0.9], 400, a)
            );
        }
    }

    #[test]
    fn zero_prior_cells_get_nothing() {
        let x = map_integer_step(&[100.0, 3.0, 0.0], &[0.0, 0.5, 0.5], 10, 1.0).unwrap();
        assert_eq!(x[0], 0);
        assert_eq!(x.iter().sum::<u64>(), 10);
        assert_eq!(by_threshold(&[100.0, 3.0, 0.0], &[0.0, 0.5, 0.5], 10, 1.0), x);
    }

    #[test]
    fn heap_and_threshold_agree_on_a_grid() {
        let ps: [&[f64]; 4] =
            [&[0.2, 0.3, 0.5], &[1.0 / 3.0; 3], &[0.5, 0.0, 0.5], &[1e-4, 0.9999 - 1e-4, 1e-4]];
        let rs: [&[f64]; 5] =
            [&[0.0; 3], &[3.0, 1.0, 0.0], &[2.5, -1.0, 40.0], &[100.0, 100.0, 100.0], &[7.0, 0.5, 1e6]];
        for p in ps {
            for r in rs {
                for a in [0.0, 1e-3, 0.5, 2.0, 50.0, 1e20] {
                    for total in [0, 1, 2, 3, 4, 5, 17, 100, 301, 1000, 12345] {
                        assert_eq!(
                            by_heap(r, p, total, a),
                            by_threshold(r, p, total, a),
                            "r={r:?} p={p:?} a={a} N={total}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn large_population_is_fast_and_consistent() {
        let r = [4e8, 3e8 + 0.5, 2e8, 1e8 - 7.0];
        let p = [0.1, 0.2, 0.3, 0.4];
        let total = 1_000_000_000u64;
        let x = map_integer_step(&r, &p, total, 0.01).unwrap();
        assert_eq!(x.iter().sum::<u64>(), total);
        // Local optimality: no single unit move lowers G.
        let g = map_integer_objective(&r, &p, 0.01, &x).unwrap();
        for i in 0..4 {
            for j in 0..4 {
                if i != j && x[i] > 0 {
                    let mut y = x.clone();
                    y[i] -= 1;
                    y[j] += 1;
                    let gy = map_integer_objective(&r, &p, 0.01, &y).unwrap();
                    // Both sides are ~1e10: compare the marginal costs instead of G's rounding.
                    let d = unit_cost(y[j], r[j], p[j].ln(), 0.01, 0.0)
                        - unit_cost(x[i], r[i], p[i].ln(), 0.01, 0.0);
                    assert!(d >= 0.0, "move {i}->{j} lowers G by {}: {g} vs {gy}", -d);
                }
            }
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// [docs/map.md](tpl_core::guide::map) §4: the threshold selection equals the heap — bit
        /// for bit, ties included (uniform priors with integer releases give exactly equal costs).
        #[test]
        fn threshold_equals_heap(
            (r, p) in (1usize..30).prop_flat_map(|n| (
                prop::collection::vec(prop_oneof![
                    2 => (0u32..200).prop_map(f64::from),
                    1 => -10.0f64..300.0,
                    1 => Just(0.0),
                ], n),
                prop_oneof![
                    1 => Just(vec![1.0 / n as f64; n]),
                    3 => prop::collection::vec(prop_oneof![1 => Just(0.0), 4 => 0.0001f64..1.0], n),
                ],
            )),
            total in prop_oneof![0u64..50, 0u64..3000],
            a in prop_oneof![Just(0.0), Just(0.5), Just(1e20), 0.0f64..20.0],
        ) {
            let s: f64 = p.iter().sum();
            let p: Vec<f64> = if s > 0.0 { p.iter().map(|v| v / s).collect() } else { vec![1.0 / r.len() as f64; r.len()] };
            let heap = by_heap(&r, &p, total, a);
            prop_assert_eq!(heap.iter().sum::<u64>(), total);
            prop_assert_eq!(by_threshold(&r, &p, total, a), heap);
        }
    }

    #[test]
    fn rejects_bad_input() {
        use crate::PostprocessError as E;
        assert_eq!(
            map_integer_step(&[1.0], &[1.0], (1 << 53) + 1, 1.0),
            Err(E::TotalTooLarge((1 << 53) + 1))
        );
        assert!(map_integer_step(&[1.0], &[1.0], 1 << 53, 1.0).is_ok());
        assert_eq!(map_integer_step(&[1.0], &[1.0], 1, -1.0), Err(E::BadWeight(-1.0)));
        assert!(matches!(map_integer_step(&[1.0, 2.0], &[0.3, 0.3], 1, 1.0), Err(E::PriorSum { .. })));
    }
}
