//! The schemes' inputs and bookkeeping ([`docs/w-event.md`](tpl_core::guide::w_event) §7):
//! reproducibility of seeded runs, parameter validation, refused steps that change nothing, the
//! discrete sampler's integer check before any draw, the runner, names and accessors.

mod common;

use common::*;
use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use tpl_core::CoreError;
use tpl_mechanisms::{
    Ba, Bd, DEFAULT_SENSITIVITY, DiscreteLaplace, EventLaplace, FloatLaplace, LaplaceMechanism, MechError,
    Pba, PbaPool, Run, Sample, SchemeKind, StreamScheme, Uniform, WEventParams, Zero, run,
};

fn params(eps: f64, w: usize, delta: f64) -> WEventParams {
    WEventParams::new(eps, w, delta).unwrap()
}

fn seeded_run(kind: SchemeKind, seed: u64, discrete: bool, stream: &[Vec<f64>]) -> Run {
    let p = params(1.0, 10, 2.0);
    let rng = ChaCha12Rng::seed_from_u64(seed);
    let mut scheme = if discrete {
        kind.build(p, LaplaceMechanism::new(DiscreteLaplace::new(rng)), PbaPool::Always).expect("builds")
    } else {
        kind.build(p, LaplaceMechanism::new(FloatLaplace::new(rng)), PbaPool::Always).expect("builds")
    };
    run(scheme.as_mut(), stream).unwrap()
}

fn bits(r: &Run) -> Vec<u64> {
    r.releases.iter().flatten().map(|v| v.to_bits()).chain(r.budgets().iter().map(|b| b.to_bits())).collect()
}

#[test]
fn same_seed_same_run_different_seed_different_releases() {
    let stream = make_stream(StreamKind::RandomWalk, 200, 4, 12);
    for kind in SchemeKind::ALL {
        for discrete in [true, false] {
            let a = seeded_run(kind, 42, discrete, &stream);
            let b = seeded_run(kind, 42, discrete, &stream);
            assert_eq!(a, b, "{}", kind.name());
            assert_eq!(bits(&a), bits(&b), "{}", kind.name());
            let c = seeded_run(kind, 43, discrete, &stream);
            assert_ne!(a.releases, c.releases, "{}: different seeds, same releases", kind.name());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Input errors.

#[test]
fn params_are_validated() {
    for eps in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0] {
        assert!(
            matches!(WEventParams::new(eps, 3, 2.0), Err(MechError::Core(CoreError::BadEpsilon(_)))),
            "ε = {eps}"
        );
    }
    assert_eq!(WEventParams::new(1.0, 0, 2.0), Err(MechError::BadWindow(0)));
    for delta in [0.0, -2.0, f64::NAN, f64::INFINITY, -0.0] {
        assert!(
            matches!(WEventParams::new(1.0, 3, delta), Err(MechError::Core(CoreError::BadSensitivity(_)))),
            "Δ = {delta}"
        );
    }
    let p = WEventParams::new(0.01, 1, 1e-3).unwrap();
    assert_eq!((p.epsilon(), p.window(), p.sensitivity()), (0.01, 1, 1e-3));
    assert_eq!(DEFAULT_SENSITIVITY, 2.0);
    assert_close(params(1.0, 10, 2.0).share(), 0.05, "s = ε/(2w)");
}

/// Wrong length, no cells and non-finite counts are rejected with no state change and no
/// draw: a scheme fed bad steps in between behaves exactly like one that never saw them.
#[test]
fn bad_steps_change_nothing() {
    let d = 3;
    let stream = make_stream(StreamKind::RandomWalk, 40, d, 13);
    let bad: Vec<(Vec<f64>, &str)> = vec![
        (vec![1.0; d + 1], "long"),
        (vec![1.0; d - 1], "short"),
        (vec![], "empty"),
        (vec![1.0, f64::NAN, 2.0], "nan"),
        (vec![f64::INFINITY, 1.0, 2.0], "inf"),
        (vec![1.0, 2.0, f64::NEG_INFINITY], "-inf"),
    ];
    for kind in SchemeKind::ALL {
        let p = params(1.0, 5, 2.0);
        let noise = Noise::Float(21);
        let reference = drive_fresh(kind, p, &stream, noise);
        let (mut dirty, hd) = build(kind, p, PbaPool::Always, noise);
        for (i, c) in stream.iter().enumerate() {
            let step = i + 1;
            if i % 4 == 0 {
                // At t = 1 any length is accepted (the first step fixes d): length errors from t = 2.
                for (b, what) in bad.iter().filter(|(_, w)| i > 0 || !matches!(*w, "long" | "short")) {
                    let draws = hd.borrow().log.len();
                    let err = dirty.step(b).unwrap_err();
                    match (*what, &err) {
                        ("long" | "short", MechError::WrongLength { step: s, expected, got }) if i > 0 => {
                            assert_eq!((*s, *expected, *got), (step, d, b.len()));
                        }
                        ("empty", MechError::NoCells { step: s }) => assert_eq!(*s, step),
                        ("nan" | "inf" | "-inf", MechError::NonFinite { step: s, .. }) => {
                            assert_eq!(*s, step)
                        }
                        _ => panic!("{}: {what} at t = {step}: unexpected {err:?}", kind.name()),
                    }
                    assert_eq!(dirty.steps(), i, "{}: steps() changed by an error", kind.name());
                    assert_eq!(hd.borrow().log.len(), draws, "{}: an error drew noise", kind.name());
                }
            }
            let o = dirty.step(c).unwrap();
            assert_eq!(o, reference.outcomes[i], "{} t = {step}", kind.name());
        }
        assert_eq!(dirty.steps(), stream.len());
    }
}

/// At t = 1 the cell count is not fixed yet: empty and non-finite vectors are rejected; the
/// first accepted step fixes d.
#[test]
fn first_step_errors_fix_nothing() {
    for kind in SchemeKind::ALL {
        let (mut s, h) = build(kind, params(1.0, 3, 2.0), PbaPool::Always, Noise::Float(1));
        assert_eq!(s.step(&[]).unwrap_err(), MechError::NoCells { step: 1 });
        assert!(matches!(s.step(&[1.0, f64::NAN]), Err(MechError::NonFinite { step: 1, cell: 1, .. })));
        assert_eq!(s.steps(), 0);
        assert!(h.borrow().log.is_empty());
        s.step(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.step(&[1.0, 2.0]).unwrap_err(), MechError::WrongLength { step: 2, expected: 3, got: 2 });
        assert_eq!(s.steps(), 1);
        s.step(&[1.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.steps(), 2);
    }
}

/// With the release-grade sampler, non-integer counts are rejected (NotInteger) before any
/// draw, at every step — also when the fractional parts cancel in the test statistic
/// Σ|c − r| (d = 2, c = r + 0.5) or the step would not publish. Regression test: before the
/// fix, the test drew noise on such a step and the error (or silent acceptance) came after.
#[test]
fn discrete_sampler_rejects_non_integers_before_any_draw() {
    for kind in SchemeKind::ALL {
        let (mut s, h) = build(kind, params(1.0, 3, 2.0), PbaPool::Always, Noise::Discrete(5));
        let name = kind.name();
        assert_eq!(s.step(&[0.5, 3.0]).unwrap_err(), MechError::NotInteger { value: 0.5 }, "{name}");
        assert!(h.borrow().log.is_empty(), "{name}");
        assert_eq!(s.steps(), 0);
        let r1 = s.step(&[3.0, 4.0]).unwrap().release;
        assert!(r1.iter().all(|v| v.fract() == 0.0));
        let draws = h.borrow().log.len();
        for c in [vec![r1[0] + 0.5, r1[1] + 0.5], vec![r1[0] - 0.25, r1[1] + 0.25], vec![3.0, 4.5]] {
            let err = s.step(&c).unwrap_err();
            assert!(matches!(err, MechError::NotInteger { .. }), "{name}: {c:?} gave {err:?}");
            assert_eq!(h.borrow().log.len(), draws, "{name}: {c:?} drew noise before the error");
            assert_eq!(s.steps(), 1, "{name}");
        }
        let o = s.step(&[5.0, 7.0]).unwrap();
        assert!(o.release.iter().all(|v| v.fract() == 0.0));
        assert_eq!(s.steps(), 2);
    }
}

/// Regression: the test's sum beyond ±2^52 was reported as the count of a cell
/// ("cell 0: value …"); it is the dissimilarity sum of the step.
#[test]
fn a_dissimilarity_sum_beyond_two_to_52_is_named_as_the_sum_of_its_step() {
    const EDGE: f64 = 4_503_599_627_370_496.0;
    for kind in [SchemeKind::Bd, SchemeKind::Ba, SchemeKind::Pba] {
        let (mut s, _) = build(kind, params(1.0, 3, 2.0), PbaPool::Always, Noise::Discrete(5));
        s.step(&[0.0, 0.0]).unwrap();
        let e = s.step(&[EDGE, EDGE]).unwrap_err();
        let name = kind.name();
        assert!(
            matches!(e, MechError::DissimilarityTooLarge { step: 2, value } if value > EDGE),
            "{name}: {e:?}"
        );
        let message = e.to_string();
        assert!(
            message.starts_with("step 2: the dissimilarity sum Σ_j |c_t[j] − r_{t−1}[j]| = "),
            "{message}"
        );
        assert!(!message.contains("cell"), "{message}");
    }
}

// ---------------------------------------------------------------------------------------------
// The runner.

#[test]
fn runner_collects_every_step() {
    let stream = make_stream(StreamKind::Spikes, 50, 2, 14);
    for kind in SchemeKind::ALL {
        let p = params(1.0, 6, 2.0);
        let noise = Noise::Float(2);
        let manual = drive_fresh(kind, p, &stream, noise);
        let (mut b, _hb) = build(kind, p, PbaPool::Always, noise);
        let r = run(b.as_mut(), &stream).unwrap();
        assert_eq!(r.published, manual.published());
        assert_eq!(r.releases, manual.outcomes.iter().map(|o| o.release.clone()).collect::<Vec<_>>());
        assert_eq!(r.spent, manual.outcomes.iter().map(|o| o.spent).collect::<Vec<_>>());
        assert_eq!(r.max_window_budget, ledger_max(6, &r.budgets()));
        assert_eq!(b.steps(), 50);
    }
    // The first failing step's error, naming the step.
    let mut bad = stream.clone();
    bad[9][1] = f64::NAN;
    let mut s = Bd::new(params(1.0, 6, 2.0), LaplaceMechanism::new(Zero));
    assert!(matches!(run(&mut s, &bad), Err(MechError::NonFinite { step: 10, cell: 1, .. })));
    assert_eq!(s.steps(), 9);
}

/// Accessors of the concrete types and names.
#[test]
fn names_and_accessors() {
    let p = params(2.0, 4, 1.0);
    let z = || LaplaceMechanism::new(Zero);
    let schemes: Vec<Box<dyn StreamScheme>> = vec![
        Box::new(EventLaplace::new(p, z())),
        Box::new(Uniform::new(p, z())),
        Box::new(Sample::new(p, z())),
        Box::new(Bd::new(p, z())),
        Box::new(Ba::new(p, z())),
        Box::new(Pba::new(p, z(), PbaPool::Never)),
    ];
    for (s, k) in schemes.iter().zip(SchemeKind::ALL) {
        assert_eq!(s.name(), k.name());
        assert_eq!(s.params(), &p);
        assert_eq!(s.steps(), 0);
    }
}
