//! `CompactSeries` (BPL and FPL stored, ε once, TPL on demand) against `LeakageSeries`:
//! every value and every window leakage bit-identical; and the matrix-size check shared by
//! both constructors.

use proptest::prelude::*;
use tpl_core::test_util::{both_sides, correlation, forward_only};
use tpl_core::{Budgets, CompactSeries, CoreError, Correlation, LeakageSeries, TransitionMatrix};

/// A row-stochastic n × n matrix from positive weights (some rows made deterministic).
fn matrix(n: usize) -> impl Strategy<Value = TransitionMatrix> {
    prop::collection::vec(prop::collection::vec(0.0f64..1.0, n), n).prop_map(|rows| {
        let rows = rows
            .into_iter()
            .enumerate()
            .map(
                |(i, r)| {
                    if r[0] < 0.1 { (0..r.len()).map(|j| f64::from(u8::from(i == j))).collect() } else { r }
                },
            )
            .collect();
        TransitionMatrix::normalized(rows).unwrap()
    })
}

fn assert_same(c: &CompactSeries, s: &LeakageSeries) {
    assert_eq!(c.len(), s.len());
    for t in 0..s.len() {
        assert_eq!(c.budgets().get(t).to_bits(), s.epsilon()[t].to_bits(), "ε at {t}");
        assert_eq!(c.bpl()[t].to_bits(), s.bpl()[t].to_bits(), "BPL at {t}");
        assert_eq!(c.fpl()[t].to_bits(), s.fpl()[t].to_bits(), "FPL at {t}");
        assert_eq!(c.tpl_at(t).to_bits(), s.tpl()[t].to_bits(), "TPL at {t}");
    }
    assert_eq!(&LeakageSeries::from(c.clone()), s, "materialised");
    assert_eq!(c.max_tpl().to_bits(), s.max_tpl().to_bits());
    assert_eq!(c.horizon_leakage().to_bits(), s.horizon_leakage().to_bits());
    for w in 1..=s.len() {
        let expected = s.window_leakage(w).unwrap();
        let streamed: Vec<f64> = c.window_leakage(w).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(
            streamed.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "windows of {w}"
        );
        let max = expected.iter().copied().fold(0.0, f64::max);
        assert_eq!(c.max_window_leakage(w).unwrap(), max);
        assert_eq!(s.max_window_leakage(w).unwrap(), max);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn compact_series_is_bit_identical(
        (pb, pf) in (1usize..5).prop_flat_map(|n| (matrix(n), matrix(n))),
        budgets in prop::collection::vec(prop_oneof![Just(0.0), 1e-6f64..3.0, 1e3f64..1e5], 1..40),
        constant in 1e-9f64..50.0,
        steps in 1usize..40,
        sides in 0u8..4,
    ) {
        let pb = (sides & 1 == 1).then_some(&pb);
        let pf = (sides & 2 == 2).then_some(&pf);
        let s = LeakageSeries::new(&correlation(pb, pf), &budgets).unwrap();
        let c = CompactSeries::new(&correlation(pb, pf), Budgets::PerStep(budgets.clone())).unwrap();
        assert_same(&c, &s);
        let s = LeakageSeries::new(&correlation(pb, pf), &vec![constant; steps]).unwrap();
        let c = CompactSeries::new(&correlation(pb, pf), Budgets::Constant { epsilon: constant, steps }).unwrap();
        assert_same(&c, &s);
    }
}

#[test]
fn matrices_of_different_sizes_make_no_correlation() {
    let two = TransitionMatrix::new(vec![vec![0.9, 0.1], vec![0.2, 0.8]]).unwrap();
    let three = TransitionMatrix::smoothed_identity(3, 0.1).unwrap();
    let expected = CoreError::MatrixSizes { backward: 2, forward: 3 };
    assert_eq!(Correlation::new(Some(two.clone()), Some(three.clone())), Err(expected.clone()));
    let message = expected.to_string();
    assert!(message.contains("2×2") && message.contains("3×3"), "{message}");
    // One side alone, or the same size on both sides, is fine.
    assert!(LeakageSeries::new(&correlation(Some(&two), None), &[0.1; 4]).is_ok());
    assert!(LeakageSeries::new(&forward_only(&three), &[0.1; 4]).is_ok());
}

#[test]
fn constant_budgets_are_validated() {
    let none = |b| CompactSeries::new(&Correlation::none(), b);
    assert_eq!(none(Budgets::Constant { epsilon: 0.1, steps: 0 }), Err(CoreError::EmptyHorizon));
    assert_eq!(
        none(Budgets::Constant { epsilon: f64::NAN, steps: 2 }).map(|_| ()).unwrap_err().to_string(),
        CoreError::BadBudget { step: 1, value: f64::NAN }.to_string()
    );
    assert_eq!(none(Budgets::PerStep(vec![])), Err(CoreError::EmptyHorizon));
    let identity = TransitionMatrix::smoothed_identity(2, 0.0).unwrap();
    assert_eq!(
        CompactSeries::new(
            &correlation(Some(&identity), None),
            Budgets::Constant { epsilon: 1e308, steps: 3 }
        )
        .map(|_| ()),
        Err(CoreError::Overflow { step: 2 })
    );
}

proptest! {
    /// Budgets that differ only at both ends (an allocator's Algorithm 8 shape) give the
    /// series of the same budgets listed per step, bit for bit, for every horizon from 1.
    #[test]
    fn ends_budgets_are_the_per_step_series(
        p in matrix(3),
        first in 0.0f64..2.0,
        middle in 0.0f64..2.0,
        last in 0.0f64..2.0,
        steps in 1usize..12,
    ) {
        let ends = Budgets::Ends { first, middle, last, steps };
        let listed = ends.to_vec();
        prop_assert_eq!(listed.len(), steps);
        prop_assert_eq!(listed[0], first);
        if steps > 1 {
            prop_assert_eq!(listed[steps - 1], last);
        }
        prop_assert!(listed[1..steps.saturating_sub(1).max(1)].iter().all(|&e| e == middle));
        let c = CompactSeries::new(&both_sides(&p), ends).unwrap();
        let s = LeakageSeries::new(&both_sides(&p), &listed).unwrap();
        assert_same(&c, &s);
    }
}

#[test]
fn ends_budgets_are_validated_at_the_step_they_sit() {
    let bad = |b: Budgets| CompactSeries::new(&Correlation::none(), b).unwrap_err();
    let e = Budgets::Ends { first: 0.1, middle: -1.0, last: 0.1, steps: 5 };
    assert_eq!(bad(e), CoreError::BadBudget { step: 2, value: -1.0 });
    let e = Budgets::Ends { first: 0.1, middle: 0.1, last: f64::NAN, steps: 5 };
    assert!(matches!(bad(e), CoreError::BadBudget { step: 5, .. }));
    // Unused values are not checked: T = 1 spends only `first`, T = 2 has no middle.
    assert!(
        CompactSeries::new(
            &Correlation::none(),
            Budgets::Ends { first: 0.1, middle: -1.0, last: -1.0, steps: 1 }
        )
        .is_ok()
    );
    assert!(
        CompactSeries::new(
            &Correlation::none(),
            Budgets::Ends { first: 0.1, middle: -1.0, last: 0.2, steps: 2 }
        )
        .is_ok()
    );
    assert_eq!(bad(Budgets::Ends { first: 0.1, middle: 0.1, last: 0.1, steps: 0 }), CoreError::EmptyHorizon);
}

#[test]
fn progress_counts_both_passes_to_the_end_and_changes_nothing() {
    let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]]).unwrap();
    let steps = 200_000;
    let calls = std::cell::RefCell::new(Vec::new());
    let budgets = Budgets::Constant { epsilon: 0.1, steps };
    let with = CompactSeries::new_with_progress(&both_sides(&p), budgets.clone(), &|done, total| {
        calls.borrow_mut().push((done, total))
    })
    .unwrap();
    assert_eq!(with, CompactSeries::new(&both_sides(&p), budgets).unwrap());
    let calls = calls.into_inner();
    assert!(calls.len() >= 4, "{calls:?}");
    assert!(calls.iter().all(|&(done, total)| total == 2 * steps && done <= total));
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0), "non-decreasing: {calls:?}");
    assert_eq!(calls.last(), Some(&(2 * steps, 2 * steps)));
}
