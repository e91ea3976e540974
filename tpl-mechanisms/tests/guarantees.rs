//! What a scheme and a mechanism state before any data are seen
//! ([`docs/w-event.md`](tpl_core::guide::w_event) §6): the guarantee, the largest spend of every
//! step (the table of §6, and that it is attained), the planned scheme, and the mechanism's privacy
//! map and validation order.

mod common;

use std::cell::Cell;
use std::rc::Rc;

use common::*;
use tpl_core::CoreError;
use tpl_mechanisms::{
    Bd, DiscreteLaplace, LaplaceMechanism, MechError, Mechanism, PbaPool, Planned, PrivacyGuarantee,
    SchemeInputs, SchemeKind, Scripted, StreamScheme, WEventParams, Zero, effective_budget, laplace_scale,
    run,
};

fn params(eps: f64, w: usize, delta: f64) -> WEventParams {
    WEventParams::new(eps, w, delta).unwrap()
}

fn scheme(kind: SchemeKind, p: WEventParams, corr: PbaPool) -> Box<dyn StreamScheme> {
    kind.build(p, LaplaceMechanism::new(Zero), corr).unwrap()
}

#[test]
fn guarantees_are_w_event_except_for_laplace() {
    let p = params(0.8, 5, 2.0);
    for kind in SchemeKind::ALL {
        let want = if kind == SchemeKind::Laplace {
            PrivacyGuarantee::EventLevel { epsilon: 0.8 }
        } else {
            PrivacyGuarantee::WEvent { epsilon: 0.8, window: 5 }
        };
        assert_eq!(scheme(kind, p, PbaPool::Always).guarantee(), want, "{}", kind.name());
    }
    let planned = Planned::new(p, LaplaceMechanism::new(Zero), vec![0.1, 0.2]).unwrap();
    assert_eq!(planned.guarantee(), PrivacyGuarantee::WEvent { epsilon: 0.8, window: 5 });
}

/// ε = 1, w = 3 (s = 1/6): the table of [`docs/w-event.md`](tpl_core::guide::w_event) §6, step by
/// step.
#[test]
fn largest_spends_follow_the_table() {
    let p = params(1.0, 3, 1.0);
    let s = 1.0 / 6.0;
    let cases: [(SchemeKind, PbaPool, [f64; 5]); 8] = [
        (SchemeKind::Laplace, PbaPool::Never, [1.0; 5]),
        (SchemeKind::Uniform, PbaPool::Never, [1.0 / 3.0; 5]),
        (SchemeKind::Sample, PbaPool::Never, [1.0, 0.0, 0.0, 1.0, 0.0]),
        (SchemeKind::Bd, PbaPool::Never, [0.25, s + 0.125, s + 0.125, s + 0.25, s + 0.25]),
        (SchemeKind::Ba, PbaPool::Never, [s, 2.0 * s, 3.0 * s, 4.0 * s, 4.0 * s]),
        (SchemeKind::Pba, PbaPool::Always, [0.125, s + 0.125, s + 0.125, s + 0.25, s + 0.25]),
        (SchemeKind::Pba, PbaPool::Never, [0.125, s + 0.0625, s + 0.0625, s + 0.125, s + 0.125]),
        (
            SchemeKind::Pba,
            PbaPool::Schedule(vec![false, false, true, false, false]),
            [0.125, s + 0.0625, s + 0.125, s + 0.125, s + 0.125],
        ),
    ];
    for (kind, corr, want) in cases {
        let sc = scheme(kind, p, corr.clone());
        for (t, w) in (1..=5).zip(want) {
            assert_close(sc.max_spend(t), w, &format!("{} {corr:?}, step {t}", kind.name()));
        }
        let largest = want.into_iter().fold(0.0, f64::max);
        assert_close(sc.max_step_budget(), largest, &format!("{} {corr:?}: largest", kind.name()));
    }
    // A schedule's correlation counts where it is: at t = 5 > w it doubles the late regime.
    let sc = scheme(SchemeKind::Pba, p, PbaPool::Schedule(vec![false, false, false, false, true]));
    assert_close(sc.max_step_budget(), s + 0.25, "pba schedule: largest");
}

/// The bounds are attained: BD forced to skip t = 2 … w and publish at t = w + 1 spends
/// exactly its stated maximum there, and BA publishing after w skips absorbs w shares.
#[test]
fn largest_spends_are_attained() {
    let p = params(1.0, 3, 1.0);
    let stream = vec![vec![10.0]; 5];
    for kind in [SchemeKind::Bd, SchemeKind::Ba, SchemeKind::Pba] {
        let (src, _rc) = shared(Scripted::new(script("F S S P P", 1, 1e9, -1e9, 0.0)));
        let mut sc = kind.build(p, LaplaceMechanism::new(src), PbaPool::Always).unwrap();
        let r = run(sc.as_mut(), &stream).unwrap();
        assert_eq!(r.budgets()[0], sc.max_spend(1), "{}", kind.name());
        assert_eq!(r.budgets()[3], sc.max_spend(4), "{}", kind.name());
    }
}

#[test]
fn planned_spends_its_plan_and_refuses_steps_past_it() {
    let p = params(1.0, 2, 2.0);
    let plan = vec![0.5, 0.0, 0.5, 0.25];
    let (src, rc) = shared(Scripted::new([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    let mut s = Planned::new(p, LaplaceMechanism::new(src), plan.clone()).unwrap();
    assert_eq!(s.name(), "planned");
    assert_eq!(s.budgets(), plan);
    assert_eq!(s.max_step_budget(), 0.5);
    assert_eq!((1..=5).map(|t| s.max_spend(t)).collect::<Vec<_>>(), [0.5, 0.0, 0.5, 0.25, 0.0]);
    let stream: Vec<Vec<f64>> = (0..4).map(|t| vec![10.0 * t as f64, 5.0]).collect();
    let r = run(&mut s, &stream).unwrap();
    assert_eq!(r.published, [true, false, true, true]);
    assert_eq!(r.budgets(), plan);
    assert_eq!(r.releases[1], r.releases[0]);
    assert_eq!(r.releases[0], [1.0, 7.0]);
    assert_eq!(rc.borrow().remaining(), 0);
    // Past the horizon: refused before anything is drawn, and nothing changes.
    assert_eq!(s.step(&[1.0, 2.0]), Err(MechError::PastHorizon { step: 5, horizon: 4 }));
    assert_eq!(s.steps(), 4);
    // Through `SchemeKind`, with the plan in the inputs.
    let inputs = SchemeInputs { pba_pool: PbaPool::Never, plan: plan.clone() };
    let mut k =
        SchemeKind::from_name("planned").unwrap().build(p, LaplaceMechanism::new(Zero), inputs).unwrap();
    assert_eq!(run(k.as_mut(), &stream).unwrap().budgets(), plan);
}

#[test]
fn plans_that_cannot_be_spent_are_refused() {
    let p = params(1.0, 2, 2.0);
    let bad = |plan: Vec<f64>| Planned::new(p, LaplaceMechanism::new(Zero), plan).err();
    for (plan, step) in [
        (vec![0.5, f64::NAN], 2),
        (vec![0.5, -0.1], 2),
        (vec![0.5, f64::INFINITY], 2),
        (vec![0.0, 0.5], 1),
        (vec![0.5, 0.25, 0.5, 0.5000000000000001], 4),
        (vec![0.7, 0.2, 0.9], 3),
    ] {
        match bad(plan.clone()) {
            Some(MechError::BadPlan { step: s, .. }) => assert_eq!(s, step, "{plan:?}"),
            other => panic!("{plan:?}: {other:?}"),
        }
    }
    // 0.1 + 0.2 + 0.4 is above 0.7 in real arithmetic (though 0.7 in f64): refused, exactly.
    let p3 = params(0.7, 3, 2.0);
    assert!(matches!(
        Planned::new(p3, LaplaceMechanism::new(Zero), vec![0.1, 0.2, 0.4]),
        Err(MechError::BadPlan { step: 3, .. })
    ));
    assert!(Planned::new(p3, LaplaceMechanism::new(Zero), vec![0.35, 0.25, 0.0625]).is_ok());
    // The planned kind without a plan builds nothing.
    assert!(SchemeKind::Planned.build(p, LaplaceMechanism::new(Zero), PbaPool::Never).is_ok());
}

/// The Laplace mechanism's privacy map: d_in/b rounded up, b the scale it draws at
/// ([`laplace_scale`], b·p ≥ Δ): never above the budget at d_in = Δ — so the check every
/// release runs never refuses it — never above [`effective_budget`] at d_in = 2, and never
/// below the real loss d_in/b.
#[test]
fn laplace_privacy_map_is_the_loss_at_the_drawn_scale() {
    let m = LaplaceMechanism::new(DiscreteLaplace::seeded(1));
    assert_eq!(m.privacy_map(2.0, 2.0, 0.3), Ok(0.3));
    assert_eq!(m.privacy_map(1.0, 1.0, 0.3), Ok(0.3));
    assert_eq!(m.privacy_map(0.0, 1.0, 0.3), Ok(0.0));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20_000 {
        let budget =
            f64::from_bits(next() % (0x4010_0000_0000_0000 - 0x3c00_0000_0000_0000) + 0x3c00_0000_0000_0000);
        let delta = [1.0, 2.0, 3.0, 0.7, 5.5, 1e-3][(next() % 6) as usize];
        let b = laplace_scale(delta, budget);
        let at_delta = m.privacy_map(delta, delta, budget).unwrap();
        assert!(at_delta <= budget, "Δ = {delta}, p = {budget}: map {at_delta}");
        assert!(at_delta.mul_add(b, -delta) >= 0.0, "below the real loss Δ/b");
        let at_two = m.privacy_map(2.0, delta, budget).unwrap();
        assert!(at_two <= effective_budget(budget, delta) && at_two.mul_add(b, -2.0) >= 0.0);
    }
    assert_eq!(m.privacy_map(-1.0, 1.0, 1.0), Err(MechError::BadDistance(-1.0)));
    assert_eq!(m.privacy_map(1.0, 0.0, 1.0), Err(MechError::Core(CoreError::BadSensitivity(0.0))));
    assert!(matches!(m.privacy_map(1.0, 1.0, f64::NAN), Err(MechError::Core(CoreError::BadEpsilon(_)))));
}

/// A mechanism that counts its draws and accepts only integers.
struct Counting {
    draws: Rc<Cell<usize>>,
}

impl Mechanism for Counting {
    fn name(&self) -> &str {
        "counting"
    }

    fn validate(&self, answer: &[f64]) -> tpl_mechanisms::Result<()> {
        match answer.iter().find(|v| v.fract() != 0.0) {
            Some(&value) => Err(MechError::custom(format!("counting: {value} is not an integer"))),
            None => Ok(()),
        }
    }

    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<f64> {
        Ok(d_in * budget / sensitivity)
    }

    fn sample(&mut self, answer: &[f64], _: f64, _: f64) -> tpl_mechanisms::Result<Vec<f64>> {
        self.draws.set(self.draws.get() + answer.len());
        Ok(answer.to_vec())
    }
}

/// Regression: validation could be forgotten (it defaulted to "accept everything"), so BD
/// drew its test noise for a custom mechanism before the mechanism refused the counts. Now
/// `validate` is required and `release` runs it before `sample`: a refused answer draws
/// nothing, directly or through a scheme, and the mechanism's own error comes back.
#[test]
fn a_refused_answer_draws_nothing() {
    let draws = Rc::new(Cell::new(0));
    let mut m = Counting { draws: Rc::clone(&draws) };
    let e = m.release(&[1.0, 2.5], 2.0, 1.0).unwrap_err();
    assert!(matches!(e, MechError::Custom(_)));
    assert_eq!(e.to_string(), "counting: 2.5 is not an integer");
    assert_eq!(draws.get(), 0);
    assert_eq!(m.release(&[1.0], 2.0, 0.0), Err(MechError::Core(CoreError::BadEpsilon(0.0))));
    let mut bd = Bd::new(params(1.0, 3, 2.0), Counting { draws: Rc::clone(&draws) });
    bd.step(&[1.0, 2.0]).unwrap();
    let before = draws.get();
    assert!(matches!(bd.step(&[1.0, 2.5]), Err(MechError::Custom(_))));
    assert_eq!(draws.get(), before, "BD drew before the mechanism refused the counts");
    assert_eq!(bd.steps(), 1);
}

/// A mechanism whose privacy map exceeds the budget it is given (it is calibrated to half
/// the sensitivity it is told) is refused before any draw, as OpenDP's `check` refuses a
/// measurement: directly, and at every draw of a scheme.
#[test]
fn a_mechanism_whose_map_exceeds_its_budget_draws_nothing() {
    struct Loose(Counting);
    impl Mechanism for Loose {
        fn name(&self) -> &str {
            "loose"
        }
        fn validate(&self, answer: &[f64]) -> tpl_mechanisms::Result<()> {
            self.0.validate(answer)
        }
        fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<f64> {
            Ok(2.0 * d_in * budget / sensitivity)
        }
        fn sample(&mut self, answer: &[f64], delta: f64, budget: f64) -> tpl_mechanisms::Result<Vec<f64>> {
            self.0.sample(answer, delta, budget)
        }
    }
    let draws = Rc::new(Cell::new(0));
    let mut m = Loose(Counting { draws: Rc::clone(&draws) });
    let e = m.release(&[1.0], 2.0, 0.5).unwrap_err();
    assert_eq!(
        e,
        MechError::PrivacyMap { mechanism: "loose".into(), sensitivity: 2.0, budget: 0.5, loss: 1.0 }
    );
    assert!(e.to_string().contains("loss of 1 for a release with budget 0.5"), "{e}");
    let mut bd = Bd::new(params(1.0, 3, 2.0), Loose(Counting { draws: Rc::clone(&draws) }));
    assert!(matches!(bd.step(&[1.0, 2.0]), Err(MechError::PrivacyMap { .. })));
    assert_eq!((draws.get(), bd.steps()), (0, 0));
}

#[test]
fn custom_errors_keep_their_source_and_compare_by_identity() {
    #[derive(Debug)]
    struct Offline;
    impl std::fmt::Display for Offline {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("device offline")
        }
    }
    impl std::error::Error for Offline {}
    let e = MechError::custom(Offline);
    assert_eq!(e.to_string(), "device offline");
    assert_eq!(e.clone(), e);
    assert_ne!(MechError::custom(Offline), e);
    match &e {
        MechError::Custom(c) => assert!(c.get().downcast_ref::<Offline>().is_some()),
        other => panic!("{other:?}"),
    }
}

/// A mechanism that counts its draws and cannot draw below a budget `floor` (the way the
/// exact sampler cannot draw beyond its largest scale).
struct Floored {
    draws: Rc<Cell<usize>>,
    floor: f64,
}

impl Mechanism for Floored {
    fn name(&self) -> &str {
        "floored"
    }

    fn validate(&self, _: &[f64]) -> tpl_mechanisms::Result<()> {
        Ok(())
    }

    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<f64> {
        Ok(d_in * budget / sensitivity)
    }

    fn check_budget(&self, _: f64, budget: f64) -> tpl_mechanisms::Result<()> {
        if budget < self.floor {
            return Err(MechError::custom(format!("floored: budget {budget} below {}", self.floor)));
        }
        Ok(())
    }

    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<Vec<f64>> {
        self.check_budget(sensitivity, budget)?;
        self.draws.set(self.draws.get() + 1);
        Ok(answer.to_vec())
    }
}

/// Regression: bd and pba drew the dissimilarity test before the publication's budget was
/// checked against the sampler's limit, then failed the step — a draw nobody recorded, and
/// a retry drew again. Back-to-back publications halve the budget until it is below what
/// the sampler can draw: from then on the schemes repeat without testing, and no step fails.
#[test]
fn no_test_is_drawn_for_a_publication_the_sampler_could_not_draw() {
    for kind in [SchemeKind::Bd, SchemeKind::Pba, SchemeKind::Ba] {
        let draws = Rc::new(Cell::new(0));
        let m = Floored { draws: Rc::clone(&draws), floor: 1e-3 };
        let mut s = kind.build(params(1.0, 60, 2.0), m, PbaPool::Always).unwrap();
        let mut skipped = 0;
        for t in 1..=200usize {
            let before = draws.get();
            let counts = [if t % 2 == 0 { 0.0 } else { 4e15 }];
            let out = s.step(&counts).unwrap_or_else(|e| panic!("{} step {t}: {e}", kind.name()));
            if out.spent.total() == 0.0 {
                assert_eq!(draws.get(), before, "{} step {t} drew but spent nothing", kind.name());
                skipped += 1;
            }
            assert!(out.spent.publication == 0.0 || out.spent.publication >= 1e-3);
        }
        if kind != SchemeKind::Ba {
            assert!(skipped > 0, "{}: the budget never fell below the floor", kind.name());
        }
    }
}
