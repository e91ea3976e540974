//! Custom strategies run beside the built-in ones: audited the same way, with their own
//! random stream, and a factory's failure confined to its own row.

use tpl_compare::{
    CompareError, CustomStrategy, Seed, Setup, Strategy, USERS_STREAM, compare, histogram, simulate_users,
};
use tpl_core::TransitionMatrix;
use tpl_core::test_util::both_sides;
use tpl_mechanisms::{MechError, Uniform, scheme_builder};
use tpl_postprocess::Estimator;

fn population() -> (Vec<Vec<f64>>, TransitionMatrix) {
    let chain = TransitionMatrix::smoothed_identity(3, 0.05).unwrap();
    let states =
        simulate_users(&chain, &[1.0 / 3.0; 3], 150, 30, &mut Seed::given(8).rng(USERS_STREAM, 0)).unwrap();
    (histogram(&states, 3).unwrap(), chain)
}

#[test]
fn a_custom_strategy_is_audited_as_the_built_in_it_rebuilds() {
    let (truth, chain) = population();
    let again = CustomStrategy::new(scheme_builder("uniform-again", |params, _, m| {
        Ok(Box::new(Uniform::new(params, m)))
    }));
    let failing =
        CustomStrategy::new(scheme_builder("broken", |_, _, _| Err(MechError::custom("no device"))));
    let known = both_sides(&chain);
    let setup = Setup::new(&truth, 1.0, 5)
        .correlation(&known)
        .runs(3)
        .postprocess(Some(Estimator::CausalFilter))
        .seed(Seed::given(2));
    let list = [Strategy::parse("uniform").unwrap(), Strategy::Custom(again), Strategy::Custom(failing)];
    let c = compare(&setup, &list).unwrap();
    let row = |name: &str| c.rows.iter().find(|r| r.strategy == name).unwrap_or_else(|| panic!("{name}"));
    let (built_in, custom) =
        (row("uniform").outcome.as_ref().unwrap(), row("uniform-again").outcome.as_ref().unwrap());
    // Fixed budgets: the same spend and leakage, realised and guaranteed; other noise.
    assert_eq!(built_in.max_window_budget, custom.max_window_budget);
    assert_eq!(built_in.max_tpl, custom.max_tpl);
    assert_eq!(built_in.guaranteed_max_window_leakage, custom.guaranteed_max_window_leakage);
    assert_ne!(built_in.mse.mean, custom.mse.mean, "a custom strategy draws from its own stream");
    assert!(row("uniform-again+map").outcome.is_ok());
    match &row("broken").outcome {
        Err(CompareError::Release(e)) => assert_eq!(e.to_string(), "no device"),
        other => panic!("{other:?}"),
    }
    // The same seed, the same rows.
    let again = compare(&setup, &list).unwrap();
    assert_eq!(
        row("uniform-again").outcome.as_ref().unwrap().mse.mean,
        again.rows.iter().find(|r| r.strategy == "uniform-again").unwrap().outcome.as_ref().unwrap().mse.mean
    );
}

/// A user's mechanism reaches every run of a custom strategy, through the same door as the
/// scheme, and names the row.
#[test]
fn a_custom_mechanism_is_built_for_every_run_and_names_the_row() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (truth, _) = population();
    let built = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&built);
    let counted = tpl_mechanisms::mechanism_builder("counted", move |noise| {
        counter.fetch_add(1, Ordering::Relaxed);
        Box::new(tpl_mechanisms::LaplaceMechanism::new(noise))
    });
    let uniform = scheme_builder("u", |params, _, m| Ok(Box::new(Uniform::new(params, m))));
    let strategy = CustomStrategy::new(uniform).mechanism(counted);
    assert_eq!(strategy.name(), "u+counted");
    let setup = Setup::new(&truth, 1.0, 5).runs(3).seed(Seed::given(2));
    let c = compare(&setup, &[Strategy::Custom(strategy)]).unwrap();
    assert_eq!(c.rows[0].strategy, "u+counted");
    assert!(c.rows[0].outcome.as_ref().unwrap().max_window_budget <= 1.0);
    // One build to state the scheme's caps, one per run.
    assert_eq!(built.load(Ordering::Relaxed), 4);
}
