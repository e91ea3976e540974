//! The stream driver ([docs/map.md](tpl_core::guide::map) §5, §11, §12 "Filter"): prior
//! propagation, zero budgets, the frequency fallback, a three-step hand computation, and every
//! input error.

use approx::{abs_diff_eq, assert_abs_diff_eq};
use tpl_core::test_util::{correlation, forward_only};
use tpl_core::{CoreError, TransitionMatrix};
use tpl_postprocess::{
    Estimator, Filter, FilterConfig, PostprocessError, PriorPolicy, PriorUpdate, Source, Warning, filter,
    map_step, mle_step,
};

const UPDATES: [PriorUpdate; 2] = [PriorUpdate::ClosedLoop, PriorUpdate::OpenLoop];

fn times(v: &[f64], m: &TransitionMatrix) -> Vec<f64> {
    let n = v.len();
    (0..n).map(|j| (0..n).map(|i| v[i] * m.row(i)[j]).sum()).collect()
}

fn normalized(v: &[f64]) -> Vec<f64> {
    let s: f64 = v.iter().sum();
    v.iter().map(|x| x / s).collect()
}

fn releases() -> Vec<Vec<f64>> {
    vec![
        vec![20.0, 5.0, 0.0],
        vec![13.0, 9.0, 4.5],
        vec![-3.0, 30.0, 2.0],
        vec![8.0, 8.0, 8.0],
        vec![0.0, 0.0, 41.0],
    ]
}

fn hand_matrix() -> TransitionMatrix {
    TransitionMatrix::new(vec![vec![0.8, 0.1, 0.1], vec![0.2, 0.7, 0.1], vec![0.25, 0.25, 0.5]]).unwrap()
}

#[test]
fn equal_rows_fix_the_prior_from_step_two() {
    let u = vec![0.1, 0.6, 0.3];
    let m = TransitionMatrix::new(vec![u.clone(); 3]).unwrap();
    for estimator in [Estimator::MapDbsec, Estimator::MapInteger] {
        for update in UPDATES {
            let config =
                FilterConfig { correlation: &forward_only(&m), estimator, update, ..FilterConfig::new(25) };
            let mut f = Filter::new(3, config).unwrap();
            for (t, r) in releases().iter().enumerate() {
                let step = f.step(r, 0.7).unwrap();
                if t > 0 {
                    let prior = step.prior.unwrap();
                    assert!(
                        abs_diff_eq!(prior[..], u[..], epsilon = 1e-15),
                        "{estimator} {update:?} t={}: {prior:?}",
                        t + 1
                    );
                }
            }
        }
    }
}

#[test]
fn zero_budgets_give_the_open_loop_prior_mean() {
    // The DBSec filter follows its prior through the matrix; the default `map`, which no
    // release can inform here, keeps the first estimate (nobody moves).
    let m = hand_matrix();
    let total = 40u64;
    let rs = releases();
    let held =
        filter(&rs, &[0.0; 5], FilterConfig { correlation: &forward_only(&m), ..FilterConfig::new(total) })
            .unwrap();
    for x in &held.estimates {
        assert_abs_diff_eq!(x[..], held.estimates[0][..], epsilon = 1e-12 * total as f64);
    }
    for update in UPDATES {
        let config = FilterConfig {
            correlation: &forward_only(&m),
            update,
            estimator: Estimator::MapDbsec,
            ..FilterConfig::new(total)
        };
        let out = filter(&rs, &[0.0; 5], config).unwrap();
        let mut p = normalized(&rs[0]); // frequency prior: r_1 has no negative entry
        for (t, x) in out.estimates.iter().enumerate() {
            let want: Vec<f64> = p.iter().map(|v| total as f64 * v).collect();
            assert!(
                abs_diff_eq!(x[..], want[..], epsilon = 1e-12 * total as f64),
                "{update:?} t={}: {x:?}",
                t + 1
            );
            p = times(&p, &m);
        }
    }
}

#[test]
fn a_zero_budget_step_returns_n_times_its_prior() {
    let m = hand_matrix();
    for update in UPDATES {
        let config = FilterConfig { correlation: &forward_only(&m), update, ..FilterConfig::new(30) };
        let mut f = Filter::new(3, config).unwrap();
        let mut last: Vec<f64> = Vec::new();
        for (t, (r, eps)) in releases().iter().zip([1.0, 1.0, 0.0, 2.0, 0.0]).enumerate() {
            let step = f.step(r, eps).unwrap();
            if step.source == Some(Source::Held) {
                // The guard kept the last estimate instead of the model's prediction.
                assert_eq!(step.estimate, last, "{update:?} t={}", t + 1);
            } else if eps == 0.0 {
                let want: Vec<f64> = step.prior.unwrap().iter().map(|v| 30.0 * v).collect();
                let x = &step.estimate;
                assert!(
                    abs_diff_eq!(x[..], want[..], epsilon = 1e-12 * 30.0),
                    "{update:?} t={}: {x:?}",
                    t + 1
                );
            }
            last = step.estimate;
        }
    }
}

#[test]
fn frequency_prior_falls_back_to_uniform_on_an_empty_first_release() {
    let m = hand_matrix();
    let config = FilterConfig {
        correlation: &forward_only(&m),
        estimator: Estimator::MapDbsec,
        ..FilterConfig::new(9)
    };
    let rs = vec![vec![0.0, -2.0, 0.0], vec![5.0, 3.0, 1.0]];
    let out = filter(&rs, &[1.0, 1.0], config.clone()).unwrap();
    assert_eq!(out.warnings, vec![Warning::UniformFallback]);
    assert_abs_diff_eq!(out.estimates[0][..], [3.0, 3.0, 3.0][..], epsilon = 1e-12 * 9.0);
    // Zero cells of the frequency prior are named (1-based) and estimated as 0.
    let rs = vec![vec![4.0, 0.0, 6.0], vec![5.0, 3.0, 1.0]];
    let out = filter(&rs, &[1.0, 1.0], config.clone()).unwrap();
    assert_eq!(out.warnings, vec![Warning::ZeroPriorCells { cells: vec![1] }]);
    assert_eq!(out.estimates[0][1], 0.0);
    // No warnings for the other policies, nor for mle.
    for (prior, estimator) in [
        (PriorPolicy::Uniform, Estimator::CausalFilter),
        (PriorPolicy::Frequency, Estimator::Mle),
        (PriorPolicy::Frequency, Estimator::CausalFilter),
    ] {
        let out = filter(&rs, &[1.0, 1.0], FilterConfig { prior, estimator, ..config.clone() }).unwrap();
        assert!(out.warnings.is_empty());
    }
}

#[test]
fn three_steps_by_hand() {
    // p_2 and p_3 from the unrounded x̂_1, x̂_2: p_t = (x̂_{t−1}/Σx̂_{t−1})·P.
    let m = hand_matrix();
    let p1 = vec![0.5, 0.3, 0.2];
    let rs = vec![vec![30.0, 12.0, 1.0], vec![22.0, 19.0, 4.0], vec![17.0, 15.0, 20.0]];
    let eps = [1.0, 0.6, 0.2];
    let (total, delta) = (50u64, 2.0);
    let config = FilterConfig {
        sensitivity: delta,
        prior: PriorPolicy::Explicit(p1.clone()),
        correlation: &forward_only(&m),
        estimator: Estimator::MapDbsec,
        ..FilterConfig::new(total)
    };
    let out = filter(&rs, &eps, config.clone()).unwrap();
    let n = total as f64;
    let x1 = map_step(&rs[0], &p1, n, eps[0] / delta).unwrap().x;
    let p2 = times(&normalized(&x1), &m);
    let x2 = map_step(&rs[1], &p2, n, eps[1] / delta).unwrap().x;
    let p3 = times(&normalized(&x2), &m);
    let x3 = map_step(&rs[2], &p3, n, eps[2] / delta).unwrap().x;
    // Spelled out for the record: p_2 = (x̂_1/50)·P.
    let q: Vec<f64> = x1.iter().map(|v| v / 50.0).collect();
    let p2_by_hand = [
        q[0] * 0.8 + q[1] * 0.2 + q[2] * 0.25,
        q[0] * 0.1 + q[1] * 0.7 + q[2] * 0.25,
        q[0] * 0.1 + q[1] * 0.1 + q[2] * 0.5,
    ];
    assert_abs_diff_eq!(p2[..], p2_by_hand[..], epsilon = 1e-15);
    for (t, want) in [x1, x2, x3].iter().enumerate() {
        let x = &out.estimates[t];
        assert!(abs_diff_eq!(x[..], want[..], epsilon = 1e-12 * n), "t={}: {x:?} vs {want:?}", t + 1);
    }
    // The open loop uses p_1 P^{t−1} instead, and differs here.
    let open = filter(&rs, &eps, FilterConfig { update: PriorUpdate::OpenLoop, ..config }).unwrap();
    let open3 = map_step(&rs[2], &times(&times(&p1, &m), &m), n, eps[2] / delta).unwrap().x;
    assert_abs_diff_eq!(open.estimates[2][..], open3[..], epsilon = 1e-12 * n);
    let gap = open.estimates[2].iter().zip(&out.estimates[2]).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(gap > 1e-6, "open and closed loop agree at t = 3: {:?}", out.estimates[2]);
}

#[test]
fn map_integer_and_mle_streams() {
    let m = hand_matrix();
    let rs = releases();
    let budgets = [0.5, 1.0, 1.5, 0.0, 3.0];
    let config = FilterConfig {
        prior: PriorPolicy::Uniform,
        correlation: &forward_only(&m),
        estimator: Estimator::MapInteger,
        ..FilterConfig::new(33)
    };
    let out = filter(&rs, &budgets, config).unwrap();
    let ints = out.integers().unwrap();
    assert!(ints.iter().all(|x| x.iter().sum::<u64>() == 33));
    assert!(out.estimates.iter().flatten().all(|v| v.fract() == 0.0));
    // mle ignores budgets, prior and matrix (and needs no matrix for T > 1).
    let config =
        FilterConfig { prior: PriorPolicy::Uniform, estimator: Estimator::Mle, ..FilterConfig::new(33) };
    let out = filter(&rs, &budgets, config).unwrap();
    assert_eq!(out.integers(), None);
    for (x, r) in out.estimates.iter().zip(&rs) {
        assert_eq!(x, &mle_step(r, 33.0).unwrap());
    }
}

#[test]
fn empty_population_gives_zeros() {
    let m = hand_matrix();
    for estimator in Estimator::ALL {
        for update in UPDATES {
            let config =
                FilterConfig { correlation: &forward_only(&m), estimator, update, ..FilterConfig::new(0) };
            let out = filter(&releases(), &[1.0; 5], config).unwrap();
            assert!(out.estimates.iter().flatten().all(|&v| v == 0.0), "{estimator} {update:?}");
        }
    }
}

#[test]
fn a_failed_step_changes_nothing() {
    let m = hand_matrix();
    let public = forward_only(&m);
    let mut f = Filter::new(3, FilterConfig { correlation: &public, ..FilterConfig::new(10) }).unwrap();
    let err = f.step(&[1.0, f64::NAN, 2.0], 1.0).unwrap_err();
    assert_eq!(err.to_string(), "step 1: release value in cell 2 is NaN: releases must be finite");
    assert_eq!(f.steps(), 0);
    let first = f.step(&[1.0, 4.0, 2.0], 1.0).unwrap();
    // `map` under the frequency prior starts from the release projected onto Σx = 10.
    assert_eq!((first.prior, first.estimate), (None, vec![2.0, 5.0, 3.0]));
    assert_eq!(f.steps(), 1);
}

#[test]
fn map_starts_from_the_release_under_the_frequency_prior_and_from_the_dbsec_step_otherwise() {
    // The frequency prior is read off r_1: a MAP step under it counts r_1 twice. On an
    // OUT-shaped release with noise in the empty cells that pulls people out of the full cell.
    let m = TransitionMatrix::smoothed_identity(4, 0.01).unwrap();
    let r = [940.0, 25.0, -18.0, 31.0];
    let config = FilterConfig { correlation: &forward_only(&m), ..FilterConfig::new(1000) };
    let step = Filter::new(4, config.clone()).unwrap().step(&r, 0.25).unwrap();
    // The `mle` estimate: r⁺ = [940, 25, 0, 31] projected onto Σx = 1000, each cell up by 1
    // (the guard hands out the release until the model has predicted better).
    assert_eq!(step.estimate, mle_step(&r, 1000.0).unwrap());
    assert_eq!(step.estimate, [941.0, 26.0, 1.0, 32.0]);
    assert_eq!((step.prior, step.calibration, step.source), (None, None, Some(Source::Release)));
    let uniform = FilterConfig { prior: PriorPolicy::Uniform, ..config };
    let step = Filter::new(4, uniform).unwrap().step(&r, 0.25).unwrap();
    let dbsec = map_step(&r, &[0.25; 4], 1000.0, 0.125).unwrap();
    assert_abs_diff_eq!(step.estimate[..], dbsec.x[..], epsilon = 1e-9);
    assert_eq!(step.prior, Some(vec![0.25; 4]));
}

#[test]
fn a_failed_step_of_the_state_space_filter_changes_nothing() {
    // `map` on few cells: a refused release between good ones leaves the estimates those of
    // the good ones alone.
    let m = hand_matrix();
    let config = FilterConfig { correlation: &forward_only(&m), ..FilterConfig::new(10) };
    let good = [[3.0, 4.0, 3.0], [2.0, 5.0, 3.0], [4.0, 4.0, 2.0], [3.0, 3.0, 4.0]];
    let mut clean = Filter::new(3, config.clone()).unwrap();
    let mut interrupted = Filter::new(3, config).unwrap();
    for (t, r) in good.iter().enumerate() {
        if t == 2 {
            assert!(interrupted.step(&[1.0, f64::NAN, 2.0], 1.0).is_err());
            assert_eq!(interrupted.steps(), 2);
        }
        let a = clean.step(r, 1.0).unwrap();
        let b = interrupted.step(r, 1.0).unwrap();
        assert_eq!(a, b, "step {}", t + 1);
        assert!(a.fit.is_some() == (t >= 1));
        if t == 0 {
            assert_eq!(a.prior, None, "the frequency prior is not used");
            continue;
        }
        let prior = a.prior.unwrap_or_default();
        assert!(
            (prior.iter().sum::<f64>() - 1.0).abs() < 1e-12 && prior.iter().all(|&p| p >= 0.0),
            "{prior:?}"
        );
    }
}

#[test]
fn errors_name_the_step_cell_and_value() {
    let m = hand_matrix();
    let rs = releases();
    let run = |rs: &[Vec<f64>],
               budgets: &[f64],
               sensitivity: f64,
               total: u64,
               prior: &PriorPolicy,
               forward: Option<&TransitionMatrix>,
               estimator: Estimator| {
        let config = FilterConfig {
            sensitivity,
            prior: prior.clone(),
            correlation: &correlation(None, forward),
            estimator,
            ..FilterConfig::new(total)
        };
        filter(rs, budgets, config)
    };
    let freq = PriorPolicy::Frequency;
    let five = [1.0; 5];
    assert_eq!(
        run(&[], &[], 2.0, 5, &freq, Some(&m), Estimator::CausalFilter),
        Err(PostprocessError::NoSteps)
    );
    assert_eq!(
        run(&[vec![]], &[1.0], 2.0, 5, &freq, None, Estimator::CausalFilter),
        Err(PostprocessError::NoCells)
    );
    assert_eq!(
        run(&rs, &[1.0; 4], 2.0, 5, &freq, Some(&m), Estimator::CausalFilter),
        Err(PostprocessError::BudgetCount { len: 4, expected: 5 })
    );
    let e = run(&rs, &five, 2.0, 5, &freq, None, Estimator::MapInteger).unwrap_err();
    assert_eq!(e, PostprocessError::MissingForward { estimator: "map-integer", horizon: 5 });
    assert!(e.to_string().contains("map-integer needs a forward transition matrix"), "{e}");
    assert!(
        run(&rs[..1], &[1.0], 2.0, 5, &freq, None, Estimator::CausalFilter).is_ok(),
        "T = 1 needs no matrix"
    );
    let big = TransitionMatrix::identity(4);
    assert_eq!(
        run(&rs, &five, 2.0, 5, &freq, Some(&big), Estimator::Mle),
        Err(PostprocessError::MatrixSize { size: 4, cells: 3 })
    );
    assert_eq!(
        run(&rs, &five, 2.0, 5, &PriorPolicy::Explicit(vec![0.5, 0.5]), Some(&m), Estimator::CausalFilter),
        Err(PostprocessError::PriorLength { len: 2, expected: 3 })
    );
    assert_eq!(
        run(&rs, &five, 0.0, 5, &freq, Some(&m), Estimator::CausalFilter),
        Err(PostprocessError::Core(CoreError::BadSensitivity(0.0)))
    );
    assert!(matches!(
        run(&rs, &five, f64::NAN, 5, &freq, Some(&m), Estimator::CausalFilter),
        Err(PostprocessError::Core(CoreError::BadSensitivity(_)))
    ));
    assert_eq!(
        run(&rs, &five, 2.0, u64::MAX, &freq, Some(&m), Estimator::CausalFilter),
        Err(PostprocessError::TotalTooLarge(u64::MAX))
    );
    // Per-step errors carry the step.
    let e =
        run(&rs, &[1.0, 1.0, -1.0, 1.0, 1.0], 2.0, 5, &freq, Some(&m), Estimator::CausalFilter).unwrap_err();
    assert_eq!(e.to_string(), "step 3: budget ε = -1 must be finite and ≥ 0");
    let mut ragged = rs.clone();
    ragged[1].push(1.0);
    let e = run(&ragged, &five, 2.0, 5, &freq, Some(&m), Estimator::CausalFilter).unwrap_err();
    assert_eq!(e.to_string(), "step 2: release has 4 cells, expected 3");
    let mut bad = rs.clone();
    bad[3][2] = f64::INFINITY;
    let e = run(&bad, &five, 2.0, 5, &freq, Some(&m), Estimator::Mle).unwrap_err();
    assert_eq!(e.to_string(), "step 4: release value in cell 3 is inf: releases must be finite");
    let e = run(&rs, &[1e308; 5], 1e-10, 5, &freq, Some(&m), Estimator::CausalFilter).unwrap_err();
    assert!(
        matches!(e, PostprocessError::AtStep { step: 1, ref source } if matches!(**source, PostprocessError::WeightOverflow { .. }))
    );
}

#[test]
fn estimator_names() {
    for e in Estimator::ALL {
        assert_eq!(e.name().parse::<Estimator>().unwrap(), e);
        assert_eq!(e.to_string(), e.name());
    }
    assert_eq!(
        "map-smooth".parse::<Estimator>().unwrap_err().to_string(),
        "unknown estimator \"map-smooth\": expected map, smooth, kalman, map-dbsec, map-integer or mle"
    );
}

#[test]
fn constant_budgets_need_a_positive_epsilon() {
    use tpl_postprocess::constant_budgets;
    assert_eq!(constant_budgets(0.25, 2).unwrap(), vec![0.25, 0.25]);
    assert_eq!(constant_budgets(0.0, 2), Err(PostprocessError::Core(CoreError::BadEpsilon(0.0))));
    assert_eq!(constant_budgets(-1.0, 2), Err(PostprocessError::Core(CoreError::BadEpsilon(-1.0))));
    assert!(matches!(constant_budgets(f64::NAN, 2), Err(PostprocessError::Core(CoreError::BadEpsilon(_)))));
    assert_eq!(constant_budgets(1.0, 0), Err(PostprocessError::Core(CoreError::EmptyHorizon)));
}

#[test]
fn an_unscored_matrix_does_not_move_the_default_estimate() {
    // One release, then nine repeats (ε = 0) as `sample` publishes: no release has yet
    // tested the matrix, which claims that everyone swaps cells at every step. The default
    // `map` keeps the estimate where the release put it instead of following the matrix
    // (before the fix, steps 2..10 alternated between the two cells).
    let swap = TransitionMatrix::new(vec![vec![0.0, 1.0], vec![1.0, 0.0]]).unwrap();
    let mut releases = vec![vec![900.0, 100.0]];
    releases.extend(std::iter::repeat_n(vec![900.0, 100.0], 9));
    let mut budgets = vec![1.0];
    budgets.extend([0.0; 9]);
    let config = FilterConfig { correlation: &forward_only(&swap), ..FilterConfig::new(1000) };
    let out = filter(&releases, &budgets, config).unwrap();
    for (t, x) in out.estimates.iter().enumerate() {
        assert!((x[0] - 900.0).abs() < 1.0, "step {}: {x:?}", t + 1);
    }
}
