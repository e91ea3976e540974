//! Invariant (W) by property test ([`docs/w-event.md`](tpl_core::guide::w_event) §1, §7): every
//! scheme but `laplace`, every stream and every noise realisation — a seeded sampler and
//! adversarial scripted noise — keeps every window of w steps within ε exactly — the real sum of
//! the printed f64 budgets — checked by the independent `WindowLedger` and by exact expansion sums
//! in the test itself. The same runs are checked step by step against
//! [`docs/w-event.md`](tpl_core::guide::w_event) (`check_trace`).
//!
//! Also the overspend regression of §3.8/§7: a BA that never updates (l, m_l) fails the very
//! same property.

mod common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestError, TestRunner};
use tpl_mechanisms::{
    Ba, LaplaceMechanism, Mechanism, PbaPool, Planned, PrivacyGuarantee, Result as MechResult, SchemeKind,
    Scripted, StepBudget, StepOutcome, StreamScheme, WEventParams, WindowLedger,
};

/// One generated case.
#[derive(Debug, Clone)]
struct Case {
    epsilon: f64,
    window: usize,
    d: usize,
    t_len: usize,
    delta: f64,
    stream: StreamKind,
    seed: u64,
    corr: u8,
}

impl Case {
    fn params(&self) -> WEventParams {
        WEventParams::new(self.epsilon, self.window, self.delta).unwrap()
    }

    fn stream(&self) -> Vec<Vec<f64>> {
        make_stream(self.stream, self.t_len, self.d, self.seed)
    }
}

fn case() -> impl Strategy<Value = Case> {
    // ε over [0.01, 10]: uniform, and log-uniform so that small ε is well represented.
    let epsilon = prop_oneof![
        0.01f64..=10.0,
        (-2.0f64..=1.0).prop_map(|x| 10f64.powf(x).clamp(0.01, 10.0)),
        Just(0.01),
        Just(10.0),
    ];
    cases(epsilon, 1usize..50, 1usize..8, 1usize..300)
}

/// Cases of the given ranges of ε, w, d and T; Δ ∈ {1, 2, 5}, any stream kind, seed and
/// correlation pick.
fn cases(
    epsilon: impl Strategy<Value = f64>,
    window: impl Strategy<Value = usize>,
    d: std::ops::Range<usize>,
    t_len: std::ops::Range<usize>,
) -> impl Strategy<Value = Case> {
    (
        epsilon,
        window,
        d,
        t_len,
        prop_oneof![Just(1.0), Just(2.0), Just(5.0)],
        prop::sample::select(STREAM_KINDS.to_vec()),
        any::<u64>(),
        any::<u8>(),
    )
        .prop_map(|(epsilon, window, d, t_len, delta, stream, seed, corr)| Case {
            epsilon,
            window,
            d,
            t_len,
            delta,
            stream,
            seed,
            corr,
        })
}

const SCHEMES: [SchemeKind; 5] =
    [SchemeKind::Uniform, SchemeKind::Sample, SchemeKind::Bd, SchemeKind::Ba, SchemeKind::Pba];

/// (W) with the WindowLedger only, for any scheme factory; and no step spends more than the
/// scheme states it can ([`StreamScheme::max_spend`] ≤ [`StreamScheme::max_step_budget`]).
fn w_property(
    case: &Case,
    noise: Noise,
    make: impl Fn(WEventParams, LaplaceMechanism<Shared<Probe>>) -> Box<dyn StreamScheme>,
) -> Result<(), TestCaseError> {
    let params = case.params();
    let stream = case.stream();
    let (src, handle) = probe(source_for(noise));
    let mut scheme = make(params, LaplaceMechanism::new(src));
    let trace =
        drive(scheme.as_mut(), &handle, &stream, noise).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut ledger = WindowLedger::new(case.window);
    for b in trace.budgets() {
        ledger.push(b);
    }
    prop_assert!(
        ledger.max_window_budget() <= case.epsilon,
        "{}: max window budget {:e} > ε = {:e}",
        scheme.name(),
        ledger.max_window_budget(),
        case.epsilon
    );
    trace_exactly_within(case.window, &trace, case.epsilon)
        .map_err(|e| TestCaseError::fail(format!("{}: {e}", scheme.name())))?;
    within_stated_maxima(scheme.as_ref(), &trace)
}

/// Every step's ε_t ≤ the scheme's stated maximum for that step ≤ its largest step budget.
fn within_stated_maxima(scheme: &dyn StreamScheme, trace: &Trace) -> Result<(), TestCaseError> {
    let cap = scheme.max_step_budget();
    for (i, o) in trace.outcomes.iter().enumerate() {
        let (t, spent, max) = (i + 1, o.spent.total(), scheme.max_spend(i + 1));
        prop_assert!(
            spent <= max && max <= cap,
            "{}: step {} spent {:e}, stated maximum {:e}, largest step budget {:e}",
            scheme.name(),
            t,
            spent,
            max,
            cap
        );
    }
    Ok(())
}

/// The ranges of the exact-sum property: ε ∈ [1e−6, 1e3] (log-uniform, and uniform) and
/// w ∈ [1, 200], wider than those of [`docs/w-event.md`](tpl_core::guide::w_event).
fn wide_case() -> impl Strategy<Value = Case> {
    let epsilon = prop_oneof![
        (-6.0f64..=3.0).prop_map(|x| 10f64.powf(x).clamp(1e-6, 1e3)),
        1e-6f64..=1e3,
        Just(1e-6),
        Just(0.7),
        Just(1e3),
    ];
    cases(epsilon, prop_oneof![1usize..=200, Just(1usize), Just(200usize)], 1usize..4, 1usize..400)
}

/// (W) and the full step-by-step check for every scheme but laplace.
fn all_schemes(case: &Case, noise: Noise) -> Result<(), TestCaseError> {
    let params = case.params();
    let stream = case.stream();
    for kind in SCHEMES {
        let corr = pool(case.corr, case.t_len, case.seed ^ 0x5eed);
        let c2 = corr.clone();
        w_property(case, noise, move |p, m| kind.build(p, m, c2.clone()).expect("builds"))?;
        let (mut scheme, handle) = build(kind, params, corr.clone(), noise);
        let trace = drive(scheme.as_mut(), &handle, &stream, noise)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_trace(kind, &params, &corr, &stream, &trace)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", kind.name())))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Seeded sampler: the exact discrete Laplace (counts are integers) or the float one.
    #[test]
    fn w_holds_with_seeded_noise(case in case(), noise_seed in any::<u64>(), discrete in any::<bool>()) {
        let noise = if discrete { Noise::Discrete(noise_seed) } else { Noise::Float(noise_seed) };
        all_schemes(&case, noise)?;
    }

    /// Adversarial scripted noise: test draws ±1e9 at random (forcing publish or skip), cell
    /// draws random.
    #[test]
    fn w_holds_with_adversarial_noise(case in case(), noise_seed in any::<u64>(), spread in 0.5f64..1e4) {
        all_schemes(&case, Noise::Adversarial { seed: noise_seed, spread })?;
    }

    /// Every window's **exact** real sum of the printed f64 budgets ε_t (and of the parts test
    /// and publication) is ≤ ε, for every scheme but laplace, over ε ∈ [1e−6, 1e3],
    /// w ∈ [1, 200], and every kind of noise. Before budgets were rounded down, `uniform` at
    /// ε = 0.7, w = 50 already spent 0.7000000000000005 in f64 (and more in reals).
    #[test]
    fn every_window_sums_to_at_most_epsilon_exactly(case in wide_case(), noise_seed in any::<u64>(), pick in 0u8..3) {
        let noise = match pick {
            0 => Noise::Discrete(noise_seed),
            1 => Noise::Float(noise_seed),
            _ => Noise::Adversarial { seed: noise_seed, spread: 50.0 },
        };
        for kind in SCHEMES {
            let corr = pool(case.corr, case.t_len, case.seed ^ 0x5eed);
            w_property(&case, noise, move |p, m| kind.build(p, m, corr.clone()).expect("builds"))?;
        }
    }

    /// `laplace` (outside (W)) and `planned` also spend at most their stated maxima, with
    /// seeded and adversarial noise; a plan is drawn at random within ε per window.
    #[test]
    fn laplace_and_planned_spend_at_most_their_stated_maxima(
        case in case(), noise_seed in any::<u64>(), adversarial in any::<bool>(), plan in prop::collection::vec(0.0f64..0.99, 300)
    ) {
        let params = case.params();
        let stream = case.stream();
        let noise = if adversarial { Noise::Adversarial { seed: noise_seed, spread: 10.0 } } else { Noise::Float(noise_seed) };
        let share = case.epsilon / case.window as f64;
        let mut budgets: Vec<f64> = plan[..case.t_len].iter().map(|u| if *u < 0.3 { 0.0 } else { u * share }).collect();
        budgets[0] = share / 2.0;
        let (src, handle) = probe(source_for(noise));
        let mut planned: Box<dyn StreamScheme> =
            Box::new(Planned::new(params, LaplaceMechanism::new(src), budgets.clone()).unwrap());
        let trace = drive(planned.as_mut(), &handle, &stream, noise).unwrap();
        within_stated_maxima(planned.as_ref(), &trace)?;
        prop_assert_eq!(trace.budgets(), budgets);
        let (mut laplace, handle) = build(SchemeKind::Laplace, params, PbaPool::Never, noise);
        let trace = drive(laplace.as_mut(), &handle, &stream, noise).unwrap();
        within_stated_maxima(laplace.as_ref(), &trace)?;
    }

    /// PBA with `Always` and BD under the same scripted decisions: equal publication budgets
    /// at every t ≥ 2 ([`docs/w-event.md`](tpl_core::guide::w_event) §3.6); only t = 1 differs (ε/8
    /// against ε/4). Both are integers on the grid of ulp(ε) and halve at different places (BD the
    /// remainder, PBA the base remainder), so they agree to a few units of ulp(ε): 1e−12 relative
    /// to ε.
    #[test]
    fn pba_always_matches_bd(case in case(), noise_seed in any::<u64>()) {
        let params = case.params();
        let stream = case.stream();
        let noise = Noise::Adversarial { seed: noise_seed, spread: 10.0 };
        let (mut bd, hb) = build(SchemeKind::Bd, params, PbaPool::Never, noise);
        let (mut pba, hp) = build(SchemeKind::Pba, params, PbaPool::Always, noise);
        let tb = drive(bd.as_mut(), &hb, &stream, noise).unwrap();
        let tp = drive(pba.as_mut(), &hp, &stream, noise).unwrap();
        prop_assert_eq!(tb.published(), tp.published());
        prop_assert!(close(tb.outcomes[0].spent.publication, case.epsilon / 4.0));
        prop_assert!(close(tp.outcomes[0].spent.publication, case.epsilon / 8.0));
        for t in 2..=case.t_len {
            let (a, b) = (tb.outcomes[t - 1].spent, tp.outcomes[t - 1].spent);
            let tol = TOL * case.epsilon;
            prop_assert!((a.publication - b.publication).abs() <= tol, "t = {}: bd {:e}, pba {:e}", t, a.publication, b.publication);
            prop_assert!((a.total() - b.total()).abs() <= tol);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Overspend regression (`docs/w-event.md` §3.8, §7): a BA that never updates (l, m_l).

/// BA as in [`docs/w-event.md`](tpl_core::guide::w_event) §3.5, except that a publication does
/// **not** record (l, m_l): the bug of one public implementation. Every publication then absorbs
/// min(t, w) shares and nothing is ever nullified.
struct BrokenBa<M> {
    params: WEventParams,
    mechanism: M,
    t: usize,
    last_release: Vec<f64>,
    l: usize,
    m_l: usize,
}

impl<M: Mechanism> BrokenBa<M> {
    fn new(params: WEventParams, mechanism: M) -> Self {
        Self { params, mechanism, t: 0, last_release: Vec::new(), l: 0, m_l: 1 }
    }

    fn outcome(&mut self, release: Option<Vec<f64>>, spent: StepBudget) -> StepOutcome {
        self.t += 1;
        let published = release.is_some();
        if let Some(r) = release {
            self.last_release = r;
        }
        StepOutcome { release: self.last_release.clone(), published, spent }
    }
}

impl<M: Mechanism> StreamScheme for BrokenBa<M> {
    fn name(&self) -> &'static str {
        "ba-broken"
    }

    fn params(&self) -> &WEventParams {
        &self.params
    }

    fn steps(&self) -> usize {
        self.t
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::WEvent { epsilon: self.params.epsilon(), window: self.params.window() }
    }

    /// s + w·s ≤ ε bounds every step even of the broken BA: the claim that fails is (W).
    fn max_spend(&self, _: usize) -> f64 {
        self.params.epsilon()
    }

    fn max_step_budget(&self) -> f64 {
        self.params.epsilon()
    }

    fn step(&mut self, counts: &[f64]) -> MechResult<StepOutcome> {
        let t = self.t + 1;
        let (s, delta, w) = (self.params.share(), self.params.sensitivity(), self.params.window());
        let nullified = self.m_l - 1;
        if self.l >= 1 && t - self.l <= nullified {
            return Ok(self.outcome(None, StepBudget::default()));
        }
        if t == 1 {
            let r = self.mechanism.release(counts, delta, s)?;
            // BUG (deliberate): (l, m_l) not updated.
            return Ok(self.outcome(Some(r), StepBudget { test: 0.0, publication: s, absorbed: 0.0 }));
        }
        let m = (t - (self.l + nullified)).min(w);
        let p = m as f64 * s;
        let sum: f64 = counts.iter().zip(&self.last_release).map(|(c, r)| (c - r).abs()).sum();
        let dis = self.mechanism.release(&[sum], delta, s)?[0] / counts.len() as f64;
        if p > 0.0 && dis > delta / p {
            let r = self.mechanism.release(counts, delta, p)?;
            // BUG (deliberate): (l, m_l) not updated.
            let spent = StepBudget { test: s, publication: p, absorbed: (m - 1) as f64 * s };
            Ok(self.outcome(Some(r), spent))
        } else {
            Ok(self.outcome(None, StepBudget { test: s, publication: 0.0, absorbed: 0.0 }))
        }
    }
}

/// Hand-written negative case: ε = 1, w = 3, the test asks to publish at every step. The
/// broken BA spends 1/6, 1/2, 2/3 (window sum 4/3 > 1); the real BA stays within ε.
#[test]
fn broken_ba_overspends_and_the_ledger_catches_it() {
    let params = WEventParams::new(1.0, 3, 1.0).unwrap();
    let stream = vec![vec![10.0]; 6];
    let (src, rc) = shared(Scripted::new(script("F P P P P P", 1, 1e9, -1e9, 0.0)));
    let mut broken = BrokenBa::new(params, LaplaceMechanism::new(src));
    let mut ledger = WindowLedger::new(3);
    let (mut totals, mut windows) = (Vec::new(), Vec::new());
    for c in &stream {
        let o = broken.step(c).unwrap();
        assert!(o.published);
        totals.push(o.spent.total());
        windows.push(ledger.push(o.spent.total()));
    }
    assert_eq!(rc.borrow().remaining(), 0);
    let sixth = 1.0 / 6.0;
    for (t, want) in
        [sixth, 3.0 * sixth, 4.0 * sixth, 4.0 * sixth, 4.0 * sixth, 4.0 * sixth].into_iter().enumerate()
    {
        assert_close(totals[t], want, &format!("total at t = {}", t + 1));
    }
    for (t, want) in
        [sixth, 4.0 * sixth, 8.0 * sixth, 11.0 * sixth, 12.0 * sixth, 12.0 * sixth].into_iter().enumerate()
    {
        assert_close(windows[t], want, &format!("window sum at t = {}", t + 1));
    }
    assert!(!ledger.within(1.0), "the WindowLedger must flag the overspend");

    // The real BA asked to publish at every step: publishes at t = 1, 2 (m = 1), 3 (m = 1)…
    // and stays within ε whatever it does.
    let (src, _rc) = shared(Scripted::new(vec![1e9; 64]));
    let mut ba = Ba::new(params, LaplaceMechanism::new(src));
    let mut ledger = WindowLedger::new(3);
    for c in &stream {
        ledger.push(ba.step(c).unwrap().spent.total());
    }
    assert!(ledger.within(1.0));
}

/// The (W) property of the proptests above, run on the broken BA, fails (mutation test): with
/// adversarial noise and with the seeded sampler.
#[test]
fn w_property_rejects_broken_ba() {
    for adversarial in [true, false] {
        let mut runner =
            TestRunner::new(Config { cases: 256, failure_persistence: None, ..Config::default() });
        let result = runner.run(&(case(), any::<u64>()), |(case, seed)| {
            let noise =
                if adversarial { Noise::Adversarial { seed, spread: 10.0 } } else { Noise::Discrete(seed) };
            w_property(&case, noise, |p, m| Box::new(BrokenBa::new(p, m)))
        });
        match result {
            Err(TestError::Fail(why, (case, _))) => {
                assert!(why.message().contains("max window budget"), "{why}");
                assert!(case.window >= 2, "w = 1 cannot overspend: {case:?}");
            }
            other => panic!(
                "the (W) property did not catch the broken BA (adversarial = {adversarial}): {other:?}"
            ),
        }
    }
    // The correct BA passes the same property on the same number of cases.
    let mut runner = TestRunner::new(Config { cases: 64, failure_persistence: None, ..Config::default() });
    runner
        .run(&(case(), any::<u64>()), |(case, seed)| {
            w_property(&case, Noise::Adversarial { seed, spread: 10.0 }, |p, m| Box::new(Ba::new(p, m)))
        })
        .unwrap();
}
