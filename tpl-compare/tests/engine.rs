//! The comparison engine: per-strategy seeding, validation of the setup, strategies that
//! cannot run, and the serialised form of its rows.

use tpl_compare::{
    CompareError, Comparison, MAX_RUNS, Row, Seed, Setup, Strategy, USERS_STREAM, compare, histogram,
    simulate_users,
};
use tpl_core::test_util::{both_sides, correlation, forward_only};
use tpl_core::{Correlation, TransitionMatrix};
use tpl_postprocess::Estimator;

/// 120 Markov users among 3 places for 40 steps, and the chain they moved by.
fn population() -> (Vec<Vec<f64>>, TransitionMatrix) {
    let chain = TransitionMatrix::smoothed_identity(3, 0.05).unwrap();
    let states =
        simulate_users(&chain, &[1.0 / 3.0; 3], 120, 40, &mut Seed::given(5).rng(USERS_STREAM, 0)).unwrap();
    (histogram(&states, 3).unwrap(), chain)
}

fn strategies(names: &[&str]) -> Vec<Strategy> {
    names.iter().map(|n| Strategy::parse(n).unwrap()).collect()
}

/// ε = 1, w = 5, the adversary knowing `known`, `runs` runs scored raw and after MAP,
/// seeded with `seed`.
fn correlated<'a>(truth: &'a [Vec<f64>], known: &'a Correlation, runs: usize, seed: u64) -> Setup<'a> {
    Setup::new(truth, 1.0, 5)
        .correlation(known)
        .runs(runs)
        .postprocess(Some(Estimator::CausalFilter))
        .seed(Seed::given(seed))
}

fn run(truth: &[Vec<f64>], chain: &TransitionMatrix, names: &[&str], seed: u64) -> Comparison {
    compare(&correlated(truth, &both_sides(chain), 3, seed), &strategies(names)).unwrap()
}

fn row<'a>(c: &'a Comparison, name: &str) -> &'a Row {
    c.rows.iter().find(|r| r.strategy == name).unwrap_or_else(|| panic!("no row {name}"))
}

/// Regression: run r of the i-th strategy drew its noise from task i·R + r, so a strategy's
/// rows changed with its position in the list. The noise now depends on the seed, the
/// strategy's name and the run only.
#[test]
fn a_strategys_rows_do_not_depend_on_its_position_or_company() {
    let (truth, chain) = population();
    let ab = run(&truth, &chain, &["bd", "uniform"], 11);
    let ba = run(&truth, &chain, &["uniform", "bd"], 11);
    let more = run(&truth, &chain, &["laplace", "window", "bd"], 11);
    for name in ["bd", "bd+map", "uniform", "uniform+map"] {
        assert_eq!(row(&ab, name), row(&ba, name), "{name}");
    }
    assert_eq!(row(&ab, "bd"), row(&more, "bd"));
    assert_eq!(row(&ab, "bd+map"), row(&more, "bd+map"));
    // And a different seed gives different noise.
    let other = run(&truth, &chain, &["bd", "uniform"], 12);
    assert_ne!(row(&ab, "uniform"), row(&other, "uniform"));
}

#[test]
fn the_same_seed_gives_the_same_comparison() {
    let (truth, chain) = population();
    let all: Vec<&str> = Strategy::names();
    let a = run(&truth, &chain, &all, 3);
    assert_eq!(a, run(&truth, &chain, &all, 3));
    assert!(a.seeded && a.seed == 3);
    // Each strategy, its +map row and the +kalman baseline row, then the prior mean.
    assert_eq!(a.rows.len(), 3 * all.len() + 1);
    assert_eq!(a.rows[2].strategy, format!("{}+kalman", all[0]));
    assert_eq!(a.rows.last().map(|r| r.strategy.as_str()), Some("prior-mean"));
}

#[test]
fn progress_ticks_once_per_run() {
    let (truth, chain) = population();
    let ticks = std::sync::atomic::AtomicUsize::new(0);
    let tick = || {
        ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    let known = correlation(Some(&chain), None);
    let setup = Setup::new(&truth, 1.0, 5).correlation(&known).runs(4).seed(Seed::given(1)).observer(&tick);
    let names = strategies(&["bd", "sample", "quantified"]);
    compare(&setup, &names).unwrap();
    assert_eq!(setup.total_runs(&names), 12);
    assert_eq!(ticks.load(std::sync::atomic::Ordering::Relaxed), 12);
}

#[test]
fn an_invalid_setup_is_refused_with_the_parameter_named() {
    let (truth, chain) = population();
    let bd = strategies(&["bd"]);
    let refused = |setup: Setup<'_>| compare(&setup, &bd).unwrap_err();
    let name_of = |e: CompareError| match e {
        CompareError::InvalidParameter { name, .. } => name,
        other => panic!("{other:?}"),
    };
    assert_eq!(name_of(refused(Setup::new(&truth, 0.0, 5))), "epsilon");
    assert_eq!(name_of(refused(Setup::new(&truth, f64::NAN, 5))), "epsilon");
    assert_eq!(name_of(refused(Setup::new(&truth, 1.0, 0))), "window");
    assert_eq!(name_of(refused(Setup::new(&truth, 1.0, 41))), "window");
    assert_eq!(name_of(refused(Setup::new(&truth, 1.0, 5).alpha(Some(-1.0)))), "alpha");
    assert_eq!(name_of(refused(Setup::new(&truth, 1.0, 5).sensitivity(f64::INFINITY))), "sensitivity");
    assert_eq!(name_of(refused(Setup::new(&truth, 1.0, 5).runs(0))), "runs");
    assert_eq!(name_of(refused(Setup::new(&truth, 1.0, 5).runs(MAX_RUNS + 1))), "runs");
    let e = refused(Setup::new(&truth, 1.0, 41));
    assert_eq!(e.to_string(), "window 41: must be between 1 and the number of steps 40");
    let empty: Vec<Vec<f64>> = Vec::new();
    assert_eq!(refused(Setup::new(&empty, 1.0, 1)), CompareError::EmptyStream { steps: 0, cells: 0 });
    let ragged = vec![vec![1.0, 2.0], vec![3.0]];
    assert_eq!(
        refused(Setup::new(&ragged, 1.0, 1)),
        CompareError::RaggedStream { step: 2, found: 1, expected: 2 }
    );
    let two = TransitionMatrix::identity(2);
    assert_eq!(
        refused(Setup::new(&truth, 1.0, 5).correlation(&forward_only(&two))),
        CompareError::MatrixSize { side: "forward", n: 2, cells: 3 }
    );
    let _ = chain;
}

#[test]
fn strategies_that_cannot_run_say_why_and_the_others_run() {
    let (truth, _) = population();
    let setup =
        Setup::new(&truth, 1.0, 5).runs(2).postprocess(Some(Estimator::CausalFilter)).seed(Seed::given(2));
    let c = compare(&setup, &strategies(&["pba", "bd"])).unwrap();
    assert_eq!(row(&c, "pba").outcome, Err(CompareError::PbaNeedsCorrelation));
    assert_eq!(row(&c, "bd+map").outcome, Err(CompareError::MapNeedsForward));
    assert_eq!(row(&c, "prior-mean").outcome, Err(CompareError::MapNeedsForward));
    let bd = row(&c, "bd").outcome.as_ref().unwrap();
    assert!(bd.max_window_budget <= 1.0 + 1e-12);
    // Without correlation the audit is the plain sum: a window leaks what it spends.
    assert!((bd.max_window_leakage - bd.max_window_budget).abs() <= 1e-9);
    // A population that changes size cannot be post-processed.
    let (mut truth, chain) = population();
    truth[7][0] += 1.0;
    let known = forward_only(&chain);
    let setup = Setup::new(&truth, 1.0, 5)
        .correlation(&known)
        .runs(1)
        .postprocess(Some(Estimator::CausalFilter))
        .seed(Seed::given(2));
    let c = compare(&setup, &strategies(&["bd"])).unwrap();
    assert_eq!(row(&c, "bd+map").outcome, Err(CompareError::MapNeedsFixedPopulation));
    assert!(row(&c, "bd").outcome.is_ok());
}

/// The serialised row: `strategy`, the score columns in the order of the `tpl compare`
/// JSON contract, then `error`; scores null when the strategy could not run.
#[cfg(feature = "serde")]
#[test]
fn rows_serialise_flat_in_the_contract_order() {
    let (truth, _) = population();
    let setup = Setup::new(&truth, 1.0, 5).runs(2).seed(Seed::given(2));
    let c = compare(&setup, &strategies(&["bd", "pba"])).unwrap();
    let v = serde_json::to_value(&c).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "rows",
            "epsilon",
            "window",
            "alpha",
            "sensitivity",
            "runs",
            "seed",
            "seeded",
            "horizon",
            "cells",
            "postprocess"
        ]
    );
    assert!(v["postprocess"].is_null());
    // The fields of a row, in the order of the JSON contract.
    let want: Vec<&str> = "strategy mae mse mre max_window_budget max_tpl max_window_leakage \
                           guaranteed_max_tpl guaranteed_max_window_leakage published_fraction mae_std mse_std \
                           mre_std error"
        .split_whitespace()
        .collect();
    for r in v["rows"].as_array().unwrap() {
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, want);
    }
    assert!(v["rows"][0]["mse"].is_number() && v["rows"][0]["error"].is_null());
    assert!(v["rows"][1]["mse"].is_null());
    assert_eq!(v["rows"][1]["error"], CompareError::PbaNeedsCorrelation.to_string());
}

/// A strategy's runs drawn one at a time are the releases `compare` scores: the same raw
/// and post-processed errors, run by run.
#[test]
fn a_releaser_draws_the_runs_compare_scores() {
    let (truth, chain) = population();
    let known = both_sides(&chain);
    for name in ["bd", "window"] {
        let setup = correlated(&truth, &known, 1, 21);
        let compared = compare(&setup, &strategies(&[name])).unwrap();
        let releaser = tpl_compare::Releaser::new(&setup, Strategy::parse(name).unwrap()).unwrap();
        let run = releaser.run(0).unwrap();
        assert_eq!(run, releaser.run(0).unwrap());
        assert_ne!(run.releases, releaser.run(1).unwrap().releases);
        let raw = row(&compared, name).outcome.as_ref().unwrap();
        assert_eq!(tpl_compare::mse(&run.releases, &truth).unwrap(), raw.mse.mean, "{name}");
        assert_eq!(tpl_compare::mre(&run.releases, &truth).unwrap(), raw.mre.mean, "{name}");
        assert!(run.published.iter().zip(&run.fresh).all(|(&p, &e)| p == (e > 0.0)));
        let config =
            tpl_postprocess::FilterConfig { correlation: &known, ..tpl_postprocess::FilterConfig::new(120) };
        let est = tpl_postprocess::filter(&run.releases, &run.fresh, config).unwrap().estimates;
        let map = row(&compared, &format!("{name}+map")).outcome.as_ref().unwrap();
        assert_eq!(tpl_compare::mse(&est, &truth).unwrap(), map.mse.mean, "{name}+map");
        assert_eq!(tpl_compare::mre(&est, &truth).unwrap(), map.mre.mean, "{name}+map");
    }
    // A strategy that cannot run says why, as its row would.
    let setup = Setup::new(&truth, 1.0, 5).seed(Seed::given(1));
    assert!(matches!(
        tpl_compare::Releaser::new(&setup, Strategy::parse("pba").unwrap()),
        Err(CompareError::PbaNeedsCorrelation)
    ));
}
