//! One answer per matrix (docs/model.md §8): the allocators give the same budgets, bit for
//! bit, for a matrix given densely and for the same matrix given sparsely (normalised and
//! smoothed in its own form), so that budgets allocated from either form keep α when
//! audited with the other — with no slack, as the f64 values compare.

use proptest::prelude::*;
use tpl_alloc::{AllocatorKind, audit};
use tpl_core::test_util::correlation;
use tpl_core::test_util::{log_uniform, twins};
use tpl_core::{Correlation, TransitionMatrix};

/// One matrix as (dense, sparse).
type Twins = (TransitionMatrix, TransitionMatrix);

/// Backward and forward matrices over the same states, each in both forms:
/// ((dense P_B, sparse P_B), (dense P_F, sparse P_F)). Smoothed (mostly; s = 0 one time in
/// eight, where most matrices are unbounded and the allocators must fail alike), from 2 to 23
/// states or from 64 to 80, where rows of few entries are read by their structure.
fn sides() -> impl Strategy<Value = (Twins, Twins)> {
    let smoothing = || prop_oneof![1 => Just(0.0), 3 => Just(0.001), 4 => log_uniform(-6.0, 0.5)];
    prop_oneof![4 => 2usize..24, 1 => 64usize..81]
        .prop_flat_map(move |n| (twins(Just(n), smoothing()), twins(Just(n), smoothing())))
}

/// The bits of a budget sequence.
fn bits(budgets: &tpl_core::Budgets) -> Vec<u64> {
    budgets.to_vec().into_iter().map(f64::to_bits).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    /// Upper-bound, quantified and window: the same budgets (or the same error) from both
    /// forms, and the audit of each form's budgets with the other form's matrices keeps the
    /// promise: max TPL ≤ α (window: the largest window leakage ≤ α), exactly.
    #[test]
    fn budgets_from_either_form_keep_alpha_audited_with_the_other(
        ((pb_dense, pb_sparse), (pf_dense, pf_sparse)) in sides(),
        alpha in prop_oneof![Just(1.0), log_uniform(-2.0, 1.0)],
        horizon in prop_oneof![1usize..4, 4usize..300],
        window in 1usize..8,
    ) {
        let dense = correlation(Some(&pb_dense), Some(&pf_dense));
        let sparse = correlation(Some(&pb_sparse), Some(&pf_sparse));
        let window = window.min(horizon);
        for kind in AllocatorKind::ALL {
            let w = (kind == AllocatorKind::Window).then_some(window);
            let run = |corr: &Correlation| kind.allocate_with_progress(corr, alpha, horizon, w, &|_, _| {});
            let (from_dense, from_sparse) = match (run(&dense), run(&sparse)) {
                (Ok(a), Ok(b)) => (a, b),
                (a, b) => {
                    prop_assert_eq!(format!("{:?}", a.err()), format!("{:?}", b.err()), "{}", kind.name());
                    continue;
                }
            };
            prop_assert_eq!(bits(from_dense.budgets()), bits(from_sparse.budgets()), "{}", kind.name());
            for (allocation, other) in [(&from_dense, &sparse), (&from_sparse, &dense)] {
                let cross = audit(other, allocation.budgets().clone(), w).unwrap();
                prop_assert_eq!(&cross, &allocation.audit, "{}", kind.name());
                prop_assert!(allocation.guarantee.holds(&cross), "{}: {:?}", kind.name(), allocation.guarantee);
                let audited = match kind {
                    AllocatorKind::Window => cross.max_window_leakage.unwrap(),
                    _ => cross.max_tpl,
                };
                prop_assert!(audited <= alpha, "{}: audited {} > α {}", kind.name(), audited, alpha);
            }
        }
    }
}
