//! Property-based tests of the leakage series (proptest), over the random matrices of
//! `tpl_core::test_util::weight_rows` (n = 1..=8, sparse, duplicate, equal and near-equal
//! rows, entries spanning 300 orders of magnitude) and budget sequences with zeros.
//!
//! Where each property comes from (theorem numbers of the TKDE paper, as in
//! [`docs/model.md`](tpl_core::guide::model) §3–5; properties 1–5 and 9 of L(α) are in
//! `loss_properties.rs`):
//! 6. `bpl_increases_to_supremum` and `bpl_converges_to_supremum` — under a constant ε,
//!    BPL_t (eq. 13) increases to the supremum of Theorem 11 (Algorithm 6).
//! 7. `tpl_and_window_identities` — TPL_t = BPL_t + FPL_t − ε_t (eq. 11) and Theorem 3:
//!    a window of one step leaks TPL_t, the whole horizon leaks Σ ε_t, and any window leaks
//!    at least the TPL of each of its steps.
//! 8. `accountant_matches_batch_series` — the streaming `LeakageAccountant` (its incremental
//!    maxima of TPL and of the window leakage included, bit for bit) is the batch
//!    `LeakageSeries` computed online (same evaluator, same arithmetic: bit-identical);
//!    `accountant_extends_as_it_pushes` — recording many steps at once
//!    (`LeakageAccountant::extend`, one pass) gives the state of pushing them one by one.
//! - `smoothing_is_stochastic_for_every_s` — Laplacian smoothing (eq. 28) is row-stochastic
//!   for every finite s.
//!
//! `tests/series_properties.proptest-regressions` keeps proptest's seeds of the failures.

use approx::relative_eq;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use tpl_core::test_util::correlation;
use tpl_core::test_util::{SUBNORMAL_FLOOR, budgets, matrix_pair, normalize, weight_rows};
use tpl_core::{
    Budgets, CompactSeries, LeakageAccountant, LeakageSeries, LossEvaluator, PiecewiseLoss, Supremum,
    TransitionMatrix,
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Property 6: under constant ε, BPL_t is non-decreasing and bounded by the Theorem 11
    /// supremum whenever that is finite (any matrix, sparse ones included).
    #[test]
    fn bpl_increases_to_supremum(rows in weight_rows(1..=8), eps in 0.001f64..3.0, t in 1usize..2000) {
        let m = normalize(rows)?;
        let s = LeakageSeries::new(&correlation(Some(&m), None), &vec![eps; t]).unwrap();
        for k in 1..t {
            // Exactly non-decreasing in real numbers (L is, and BPL_2 = L(ε) + ε ≥ ε); once
            // the fixed point is reached in floating point, successive values may differ by
            // the rounding of one evaluation of L.
            prop_assert!(
                s.bpl()[k] + 8.0 * f64::EPSILON * s.bpl()[k] >= s.bpl()[k - 1],
                "BPL_{} = {} < BPL_{} = {}", k + 1, s.bpl()[k], k, s.bpl()[k - 1]
            );
        }
        if let Supremum::Bounded(sup) = PiecewiseLoss::new(&m).supremum(eps).unwrap() {
            let top = s.bpl()[t - 1];
            prop_assert!(top <= sup * (1.0 + 1e-12), "BPL_{t} = {top} > supremum {sup}");
        }
    }

    /// Property 6, continued: for Laplacian-smoothed matrices (s ≥ 0.05, eq. 28; every entry
    /// is then ≥ 0.05/1.4, L′ stays below ~0.93 and the recursion contracts fast) the supremum
    /// is bounded and BPL_T at T = 20000 has reached it.
    #[test]
    fn bpl_converges_to_supremum(rows in weight_rows(1..=8), s in 0.05f64..5.0, eps in 0.01f64..3.0) {
        let m = normalize(rows)?.smoothed(s).unwrap();
        let t = 20_000;
        let series = LeakageSeries::new(&correlation(Some(&m), None), &vec![eps; t]).unwrap();
        let sup = PiecewiseLoss::new(&m).supremum(eps).unwrap();
        let Supremum::Bounded(sup) = sup else {
            return Err(TestCaseError::fail(format!("smoothed matrix has unbounded supremum: {m:?}")));
        };
        let last = series.bpl()[t - 1];
        prop_assert!(relative_eq!(last, sup, epsilon = SUBNORMAL_FLOOR, max_relative = 1e-9), "BPL_{t} = {last}, supremum {sup}");
    }

    /// Laplacian smoothing (eq. 28) gives a row-stochastic matrix for every finite s ≥ 0,
    /// from 1e-300 to the largest double: no row sum overflows (s = 1e308 once gave rows of
    /// zeros), each row equals (p + s)/Σ(p + s) (computed naively where that cannot
    /// overflow), and a huge s gives the uniform matrix.
    #[test]
    fn smoothing_is_stochastic_for_every_s(rows in weight_rows(1..=8), log_s in -300.0f64..308.25) {
        let m = normalize(rows)?;
        let s = 10f64.powf(log_s).min(f64::MAX);
        let smoothed = m.smoothed(s).unwrap();
        let n = m.n();
        prop_assert!(TransitionMatrix::new(smoothed.to_rows()).is_ok(), "s = {s:e}: {smoothed:?}");
        for (row, out) in m.rows().zip(smoothed.rows()) {
            if s < 1e300 {
                let total: f64 = row.iter().map(|p| p + s).sum();
                for (p, q) in row.iter().zip(out) {
                    prop_assert!(relative_eq!(*q, (p + s) / total, max_relative = 1e-12), "s = {s:e}: {q} vs {}", (p + s) / total);
                }
            }
            if s > 1e20 {
                prop_assert!(out.iter().all(|q| relative_eq!(*q, 1.0 / n as f64, max_relative = 1e-12)), "s = {s:e}: {out:?}");
            }
        }
    }

    /// Property 7: TPL_t = BPL_t + FPL_t − ε_t (eq. 11) and Theorem 3's windows, for random
    /// budget sequences with zeros and random (or no) backward / forward knowledge.
    #[test]
    fn tpl_and_window_identities(
        (pb, pf) in matrix_pair(),
        eps in budgets(200),
        w_pick in any::<prop::sample::Index>(),
    ) {
        let pb = pb.map(normalize).transpose()?;
        let pf = pf.map(normalize).transpose()?;
        let s = LeakageSeries::new(&correlation(pb.as_ref(), pf.as_ref()), &eps).unwrap();
        let t_len = eps.len();
        for t in 0..t_len {
            // Equal up to the order of the two floating-point operations (the crate may add
            // BPL to FPL − ε, or BPL + FPL then subtract ε): two roundings, each at most half
            // an ulp of a value no larger than BPL + FPL.
            let (b, f, e) = (s.bpl()[t], s.fpl()[t], s.epsilon()[t]);
            prop_assert!(
                (s.tpl()[t] - (b + f - e)).abs() <= 2.0 * f64::EPSILON * (b + f),
                "TPL_{} = {} but BPL + FPL − ε = {}", t + 1, s.tpl()[t], b + f - e
            );
            prop_assert!(s.tpl()[t] >= 0.0 && s.tpl()[t] >= s.bpl()[t].max(s.fpl()[t]) * (1.0 - 2.0 * f64::EPSILON));
        }
        prop_assert_eq!(&s.window_leakage(1).unwrap(), &s.tpl());

        // A bound computed by the recursion BPL_t = L(BPL_{t−1}) + ε_t carries one rounding
        // per step, whereas window sums are compensated: allow T ulps of relative slack.
        let slack = |v: f64| v * (t_len as f64 + 4.0) * f64::EPSILON;
        let total: f64 = eps.iter().sum();
        let whole = s.window_leakage(t_len).unwrap();
        prop_assert_eq!(whole.len(), 1);
        prop_assert!(whole[0] + slack(total) >= total, "horizon leakage {} < Σε = {total}", whole[0]);
        // Window leakage is rounded outward by one ulp (window.rs), so even an all-zero
        // window reports the smallest subnormal rather than 0.
        prop_assert!(
            whole[0] <= (total + slack(total)).next_up(),
            "horizon leakage {} > Σε = {total}", whole[0]
        );

        // Every window leaks at least the TPL of each of its steps.
        for w in [t_len, w_pick.index(t_len) + 1] {
            let windows = s.window_leakage(w).unwrap();
            prop_assert_eq!(windows.len(), t_len - w + 1);
            for (start, &v) in windows.iter().enumerate() {
                for k in start..start + w {
                    prop_assert!(
                        v + slack(v) >= s.tpl()[k],
                        "window {w} at {}: {v} < TPL_{} = {}", start + 1, k + 1, s.tpl()[k]
                    );
                }
            }
        }
    }

    /// Property 8: the streaming accountant reproduces the batch series bit for bit when both
    /// use the piecewise evaluator, at every prefix of the stream.
    #[test]
    fn accountant_matches_batch_series(
        (pb, pf) in matrix_pair(),
        eps in budgets(300),
    ) {
        let pb = pb.map(normalize).transpose()?;
        let pf = pf.map(normalize).transpose()?;
        let lb = pb.as_ref().map(PiecewiseLoss::new);
        let lf = pf.as_ref().map(PiecewiseLoss::new);
        let batch = |budgets: &[f64]| {
            CompactSeries::compute(
                lb.as_ref().map(|l| l as &dyn LossEvaluator),
                lf.as_ref().map(|l| l as &dyn LossEvaluator),
                Budgets::PerStep(budgets.to_vec()),
            )
            .map(LeakageSeries::from)
            .unwrap()
        };
        let full = batch(&eps);
        let w = 1 + eps.len() % 13;
        let mut acc = LeakageAccountant::new(&correlation(pb.as_ref(), pf.as_ref())).with_window(w).unwrap();
        prop_assert!(acc.series().is_none());
        for (t, &e) in eps.iter().enumerate() {
            let would = acc.max_tpl_with(e).unwrap();
            prop_assert_eq!(acc.push(e).unwrap(), full.bpl()[t]);
            // The incremental maxima are the batch audit's, bit for bit, at every step.
            let prefix = batch(&eps[..=t]);
            prop_assert_eq!(would.to_bits(), prefix.max_tpl().to_bits());
            prop_assert_eq!(acc.max_tpl().unwrap().to_bits(), prefix.max_tpl().to_bits());
            let window = prefix.max_window_leakage(w.min(t + 1)).unwrap();
            prop_assert_eq!(acc.max_window_leakage().unwrap().unwrap().to_bits(), window.to_bits());
            if t % 37 == 0 {
                prop_assert_eq!(acc.series().unwrap(), prefix);
            }
        }
        prop_assert_eq!(acc.bpl(), full.bpl());
        prop_assert_eq!(acc.series().unwrap(), full.clone());
        // The evaluator `LeakageSeries::new` picks agrees to rounding (it may be Algorithm 1).
        let picked = LeakageSeries::new(&correlation(pb.as_ref(), pf.as_ref()), &eps).unwrap();
        for t in 0..eps.len() {
            prop_assert!(relative_eq!(picked.tpl()[t], full.tpl()[t], epsilon = SUBNORMAL_FLOOR, max_relative = 1e-12), "TPL_{}: {} vs {}", t + 1, picked.tpl()[t], full.tpl()[t]);
        }
    }

    /// Property 8, continued: `extend` over chunks of any sizes (none, one step, many, all)
    /// leaves the accountant, every kept series included, bit for bit where pushing each
    /// step leaves it, for every window length around the horizon.
    #[test]
    fn accountant_extends_as_it_pushes(
        (pb, pf) in matrix_pair(),
        eps in budgets(300),
        cuts in proptest::collection::vec(0usize..300, 0..6),
        w in 1usize..40,
    ) {
        let pb = pb.map(normalize).transpose()?;
        let pf = pf.map(normalize).transpose()?;
        let fresh = || LeakageAccountant::new(&correlation(pb.as_ref(), pf.as_ref()));
        for w in [None, Some(w), Some(eps.len()), Some(eps.len() + 1)] {
            let make = || match w {
                Some(w) => fresh().with_window(w).unwrap(),
                None => fresh(),
            };
            let mut pushed = make();
            let mut extended = make();
            let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(eps.len())).collect();
            cuts.push(eps.len());
            cuts.sort_unstable();
            let mut start = 0;
            for &cut in &cuts {
                extended.extend(&eps[start..cut]).unwrap();
                for &e in &eps[start..cut] {
                    pushed.push(e).unwrap();
                }
                start = cut;
                prop_assert_eq!(extended.history(), pushed.history(), "window {:?}, {} steps", w, cut);
                prop_assert_eq!(
                    extended.max_window_leakage().unwrap().map(f64::to_bits),
                    pushed.max_window_leakage().unwrap().map(f64::to_bits)
                );
            }
        }
    }
}
