//! The guaranteed leakage ([`docs/model.md`](tpl_core::guide::model) §9) by property test: for
//! every scheme, stream, correlation and noise — seeded samplers, adversarial scripted noise and
//! noise that forces every test to publish — the guaranteed bound of `guaranteed_leakage` is ≥ the
//! realised leakage of the run (`tpl_alloc::audit` of its effective budgets) at every step and for
//! every window; for the schemes whose budgets are fixed in advance, the two are equal.

#[path = "../../tpl-mechanisms/tests/common/mod.rs"]
mod common;

use common::*;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use tpl_alloc::{GuaranteedAudit, Spending, WindowLimit, audit, guaranteed_audit};
use tpl_compare::guaranteed_leakage;
use tpl_core::test_util::{both_sides, correlation};
use tpl_core::{Budgets, Correlation, TransitionMatrix};
use tpl_mechanisms::{
    PbaPool, SchemeInputs, SchemeKind, Scripted, WEventParams, effective_budget, effective_spending,
};

/// A random n×n row-stochastic matrix from `seed`; `kind` picks the shape: identity-like
/// (L(α) = α, TKDE Theorem 7), all rows equal (L ≡ 0), smoothed identity, sparse random or
/// dense random.
fn matrix(kind: u8, n: usize, seed: u64) -> TransitionMatrix {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let rows: Vec<Vec<f64>> = match kind % 5 {
        0 => (0..n).map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect()).collect(),
        1 => {
            let row: Vec<f64> = (0..n).map(|_| rng.random_range(0.1..1.0)).collect();
            vec![row; n]
        }
        2 => return TransitionMatrix::smoothed_identity(n, rng.random_range(0.001..0.5)).unwrap(),
        3 => (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if i == j || rng.random_bool(0.3) { rng.random_range(0.0..1.0) } else { 0.0 })
                    .collect()
            })
            .collect(),
        _ => (0..n).map(|_| (0..n).map(|_| rng.random_range(0.01..1.0)).collect()).collect(),
    };
    let rows = rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let s: f64 = r.iter().sum();
            if s > 0.0 {
                r.iter().map(|v| v / s).collect()
            } else {
                (0..n).map(|j| f64::from(u8::from(i == j))).collect()
            }
        })
        .collect();
    TransitionMatrix::new(rows).unwrap()
}

/// The noise of a run: one of the common [`Noise`] choices, or every draw +1e9 (every test
/// says "publish": the most a data-dependent scheme can spend).
#[derive(Debug, Clone, Copy)]
enum RunNoise {
    Common(Noise),
    AlwaysPublish,
}

#[derive(Debug, Clone)]
struct Case {
    kind: SchemeKind,
    /// ε, w and Δ.
    params: WEventParams,
    d: usize,
    t_len: usize,
    stream: StreamKind,
    noise: RunNoise,
    seed: u64,
    pick: u8,
    sides: u8,
    matrix: u8,
    n: usize,
}

fn case() -> impl Strategy<Value = Case> {
    let kinds: Vec<SchemeKind> = SchemeKind::BUILT_IN.to_vec();
    let noise = prop_oneof![
        any::<u64>().prop_map(|s| RunNoise::Common(Noise::Discrete(s))),
        any::<u64>().prop_map(|s| RunNoise::Common(Noise::Float(s))),
        (any::<u64>(), 1.0f64..1e4)
            .prop_map(|(seed, spread)| RunNoise::Common(Noise::Adversarial { seed, spread })),
        Just(RunNoise::Common(Noise::Zero)),
        Just(RunNoise::AlwaysPublish),
    ];
    (
        (prop::sample::select(kinds), (-2.0f64..=0.7).prop_map(|x| 10f64.powf(x)), 1usize..20, 1usize..4),
        (
            1usize..120,
            prop_oneof![Just(1.0), Just(2.0), Just(5.0)],
            prop::sample::select(STREAM_KINDS.to_vec()),
        ),
        (noise, any::<u64>(), any::<u8>(), 0u8..3, any::<u8>(), 2usize..5),
    )
        .prop_map(
            |((kind, epsilon, window, d), (t_len, delta, stream), (noise, seed, pick, sides, matrix, n))| {
                let params = WEventParams::new(epsilon, window, delta).unwrap();
                Case { kind, params, d, t_len, stream, noise, seed, pick, sides, matrix, n }
            },
        )
}

/// A plan for `planned` whose windows stay within ε (random fractions of ε/w, the first > 0).
fn plan(case: &Case) -> Vec<f64> {
    let mut rng = ChaCha12Rng::seed_from_u64(case.seed ^ 0x9e37);
    let share = case.params.epsilon() / case.params.window() as f64 * (1.0 - 1e-12);
    (0..case.t_len)
        .map(|t| {
            if t == 0 {
                share
            } else if rng.random_bool(0.3) {
                0.0
            } else {
                share * rng.random_range(0.0..1.0)
            }
        })
        .collect()
}

/// Runs the case: (guaranteed, realised effective budgets, correlation).
fn run_case(case: &Case) -> (GuaranteedAudit, Vec<f64>, Correlation) {
    let p = matrix(case.matrix, case.n, case.seed);
    let q = matrix(case.matrix.wrapping_add(case.pick), case.n, case.seed.wrapping_add(1));
    let (backward, forward) = match case.sides {
        0 => (Some(&p), Some(&q)),
        1 => (Some(&p), None),
        _ => (None, Some(&p)),
    };
    let corr = correlation(backward, forward);
    let params = case.params;
    let inputs = SchemeInputs { pba_pool: pool(case.pick, case.t_len, case.seed), plan: plan(case) };
    let stream = make_stream(case.stream, case.t_len, case.d, case.seed);
    let noise = match case.noise {
        RunNoise::Common(n) => n,
        RunNoise::AlwaysPublish => Noise::Zero,
    };
    let (src, handle) = probe(source_for(noise));
    let mut scheme = case.kind.build(params, tpl_mechanisms::LaplaceMechanism::new(src), inputs).unwrap();
    if let RunNoise::AlwaysPublish = case.noise {
        handle.borrow_mut().source = Source::Script(Scripted::new(vec![1e9; case.t_len * (case.d + 1)]));
    }
    let window = case.params.window().min(case.t_len);
    let guaranteed = guaranteed_leakage(scheme.as_ref(), &corr, case.t_len, window).unwrap();
    let trace = drive(scheme.as_mut(), &handle, &stream, noise).unwrap();
    let effective: Vec<f64> =
        trace.budgets().iter().map(|&b| effective_budget(b, case.params.sensitivity())).collect();
    (guaranteed, effective, corr)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    /// Guaranteed ≥ realised, step by step and window by window; equal for fixed budgets.
    #[test]
    fn the_guaranteed_leakage_bounds_every_run(case in case()) {
        let (g, effective, corr) = run_case(&case);
        let window = case.params.window().min(case.t_len);
        let a = audit(&corr, Budgets::PerStep(effective.clone()), Some(window)).unwrap();
        let s = &a.series;
        for t in 0..case.t_len {
            prop_assert!(g.bpl[t] >= s.bpl()[t], "t = {}: BPL bound {} < {}", t + 1, g.bpl[t], s.bpl()[t]);
            prop_assert!(g.fpl[t] >= s.fpl()[t], "t = {}: FPL bound {} < {}", t + 1, g.fpl[t], s.fpl()[t]);
            prop_assert!(g.tpl[t] >= s.tpl_at(t), "t = {}: TPL bound {} < {}", t + 1, g.tpl[t], s.tpl_at(t));
        }
        prop_assert!(g.max_tpl >= a.max_tpl, "max TPL {} < realised {}", g.max_tpl, a.max_tpl);
        let (gw, aw) = (g.max_window_leakage.unwrap(), a.max_window_leakage.unwrap());
        prop_assert!(gw >= aw, "window {gw} < realised {aw}");
        let fixed = matches!(case.kind, SchemeKind::Laplace | SchemeKind::Uniform | SchemeKind::Sample | SchemeKind::Planned);
        prop_assert_eq!(g.exact, fixed);
        if fixed {
            prop_assert_eq!(g.max_tpl.to_bits(), a.max_tpl.to_bits());
            prop_assert_eq!(gw.to_bits(), aw.to_bits());
        }
    }

    /// The window-aware bound is never above the simple bound of the caps (each step at its
    /// largest spend), up to the outward margin.
    #[test]
    fn the_window_aware_bound_is_at_most_the_simple_one(case in case()) {
        let (g, _, corr) = run_case(&case);
        let params = case.params;
        let inputs = SchemeInputs { pba_pool: pool(case.pick, case.t_len, case.seed), plan: plan(&case) };
        let scheme = case.kind.build(params, tpl_mechanisms::LaplaceMechanism::new(tpl_mechanisms::Zero), inputs).unwrap();
        let caps = effective_spending(scheme.as_ref(), case.t_len).caps;
        let window = case.params.window().min(case.t_len);
        let simple = guaranteed_audit(&corr, Spending::Capped { caps: &caps, limit: None }, Some(window)).unwrap();
        let slack = 1.0 + 1e-12;
        prop_assert!(g.max_tpl <= simple.max_tpl * slack, "{} > {}", g.max_tpl, simple.max_tpl);
        let (gw, sw) = (g.max_window_leakage.unwrap(), simple.max_window_leakage.unwrap());
        prop_assert!(gw <= sw * slack, "{gw} > {sw}");
    }
}

/// Under strong correlation the window constraint matters: for bd, ba and pba the guaranteed
/// bound is well below the audit of every step at its cap, and above every realised run.
#[test]
fn the_window_constraint_tightens_the_bound_of_the_adaptive_schemes() {
    let p = TransitionMatrix::smoothed_identity(4, 0.01).unwrap();
    let corr = both_sides(&p);
    let (eps, w, horizon) = (1.0, 10, 300);
    for kind in [SchemeKind::Bd, SchemeKind::Ba, SchemeKind::Pba] {
        let params = WEventParams::new(eps, w, 2.0).unwrap();
        let scheme = kind
            .build(params, tpl_mechanisms::LaplaceMechanism::new(tpl_mechanisms::Zero), PbaPool::Always)
            .unwrap();
        let g = guaranteed_leakage(scheme.as_ref(), &corr, horizon, w).unwrap();
        let s = effective_spending(scheme.as_ref(), horizon);
        let simple = audit(&corr, Budgets::PerStep(s.caps.clone()), Some(w)).unwrap();
        assert!(g.max_tpl < 0.8 * simple.max_tpl, "{kind:?}: {} vs simple {}", g.max_tpl, simple.max_tpl);
        let limit = s.window_limit.map(|(window, limit)| WindowLimit { window, limit });
        let direct = guaranteed_audit(&corr, Spending::Capped { caps: &s.caps, limit }, Some(w)).unwrap();
        assert_eq!(direct, g);
    }
}
