//! Deterministic obligations of [`docs/w-event.md`](tpl_core::guide::w_event) §7 for the stream
//! schemes: structure, approximation, zero noise, the fixed-noise table, the scripted decisions
//! (BD, BA, PBA's Fig. 3), sensitivity scaling and draw order (reproducibility, input errors and
//! the runner are in `scheme_inputs.rs`).
//!
//! Documented deviation (`src/schemes/mod.rs`): the test runs on the sum d·dis with noise
//! scale 2wΔ/ε, so a scripted test draw x shifts dis~ by x/d and a recording source sees the
//! test scale 2wΔ/ε.

mod common;

use common::*;
use tpl_mechanisms::{
    EventLaplace, FloatLaplace, LaplaceMechanism, PbaPool, Recording, Run, Sample, SchemeKind, Scripted,
    StreamScheme, Uniform, WEventParams, WindowLedger, Zero, run,
};

fn params(eps: f64, w: usize, delta: f64) -> WEventParams {
    WEventParams::new(eps, w, delta).unwrap()
}

/// Runs `kind` at ε = 1, w = 3, Δ = 1 over `make_stream(stream)` (kind, steps, cells, seed)
/// with the scripted queue of `pattern` whose tests publish and skip without doubt.
fn scripted_pattern(
    kind: SchemeKind,
    corr: PbaPool,
    pattern: &str,
    (stream, steps, cells, seed): (StreamKind, usize, usize, u64),
) -> Run {
    let stream = make_stream(stream, steps, cells, seed);
    scripted_run(kind, params(1.0, 3, 1.0), corr, &stream, script(pattern, cells, 1e9, -1e9, 0.0))
}

/// Runs `kind` with a `Scripted` queue built from `pattern` and checks the queue is used up.
fn scripted_run(
    kind: SchemeKind,
    p: WEventParams,
    corr: PbaPool,
    stream: &[Vec<f64>],
    queue: Vec<f64>,
) -> Run {
    let (src, rc) = shared(Scripted::new(queue));
    let mut scheme = kind.build(p, LaplaceMechanism::new(src), corr).expect("builds");
    let r = run(scheme.as_mut(), stream).unwrap();
    assert_eq!(rc.borrow().remaining(), 0, "{}: script not used up", kind.name());
    r
}

fn pattern_published(pattern: &str) -> Vec<bool> {
    pattern.chars().filter(|c| *c != ' ').map(|c| matches!(c, 'F' | 'P' | 'U')).collect()
}

fn pattern_tests(pattern: &str) -> Vec<bool> {
    pattern.chars().filter(|c| *c != ' ').map(|c| matches!(c, 'P' | 'S')).collect()
}

fn window_sums(w: usize, budgets: &[f64]) -> Vec<f64> {
    let mut l = WindowLedger::new(w);
    budgets.iter().map(|&e| l.push(e)).collect()
}

// ---------------------------------------------------------------------------------------------
// Structure and approximation.

/// The noise sources every scheme is checked with: the exact sampler, the float one, and
/// adversarial scripted noise.
const NOISES: [Noise; 3] =
    [Noise::Discrete(7), Noise::Float(8), Noise::Adversarial { seed: 9, spread: 30.0 }];

/// Every scheme on every kind of stream, every noise source: the trace agrees with
/// [`docs/w-event.md`](tpl_core::guide::w_event) step by step (budgets, decision rule, draw order
/// and counts, approximation, BA nullification, PBA absorption) and published[0] = true.
#[test]
fn structure_of_every_scheme() {
    let mut runs = Vec::new();
    for (eps, w, delta) in [(1.0, 1, 2.0), (1.0, 3, 1.0), (0.5, 10, 2.0), (4.0, 7, 5.0), (0.05, 30, 2.0)] {
        let p = params(eps, w, delta);
        for (si, sk) in STREAM_KINDS.into_iter().enumerate() {
            let stream = make_stream(sk, 150, 3, 100 + si as u64);
            for kind in SchemeKind::ALL {
                // The correlation matters for PBA only; every scheme meets every noise source.
                let corrs = if kind == SchemeKind::Pba {
                    vec![PbaPool::Always, PbaPool::Never, pool(4, 150, 9)]
                } else {
                    vec![PbaPool::Never]
                };
                for corr in corrs {
                    for noise in NOISES {
                        let (mut scheme, h) = build(kind, p, corr.clone(), noise);
                        let trace = drive(scheme.as_mut(), &h, &stream, noise).unwrap();
                        assert!(trace.outcomes[0].published);
                        check_trace(kind, &p, &corr, &stream, &trace).unwrap_or_else(|e| {
                            panic!("{} ε={eps} w={w} Δ={delta} {sk:?} {noise:?}: {e}", kind.name())
                        });
                        runs.push((kind, noise));
                    }
                }
            }
        }
    }
    // Every scheme ran with every noise source (an early `break` once skipped the float and
    // adversarial runs of five of the six schemes).
    for kind in SchemeKind::ALL {
        for noise in NOISES {
            let n =
                runs.iter().filter(|(k, r)| *k == kind && format!("{r:?}") == format!("{noise:?}")).count();
            assert!(n >= 5 * STREAM_KINDS.len(), "{} with {noise:?} ran {n} times", kind.name());
        }
    }
}

/// Regression: `uniform` at ε = 0.7, w = 50 spent 0.7000000000000005 per window (50 times the
/// f64 nearest to 0.014, which is above 0.014). The share is now rounded down: every window's
/// exact real sum is ≤ ε, and so is the f64 sum in any order.
#[test]
fn uniform_share_is_rounded_down_so_windows_stay_within_epsilon_exactly() {
    for (eps, w) in [(0.7, 50), (1.0, 10), (0.1, 3), (1e-6, 7), (1e3, 199), (0.3, 1)] {
        let p = params(eps, w, 2.0);
        let stream = vec![vec![5.0, 7.0]; 3 * w];
        let r = run(&mut Uniform::new(p, LaplaceMechanism::new(Zero)), &stream).unwrap();
        let b = r.budgets();
        assert!(b[0] <= eps / w as f64 && b.iter().all(|&x| x == b[0]));
        let steps: Vec<Vec<f64>> = b.iter().map(|&x| vec![x]).collect();
        exact_windows_within(w, &steps, eps, Some(r.max_window_budget))
            .unwrap_or_else(|e| panic!("ε = {eps}, w = {w}: {e}"));
        let f64_sum: f64 = b[..w].iter().sum();
        assert!(f64_sum <= eps, "ε = {eps}, w = {w}: f64 sum {f64_sum}");
        assert!(r.max_window_budget <= eps);
        assert_close(r.max_window_budget, eps, "max window budget");
    }
}

/// uniform: ε_t = ε/w, all published; sample: published iff (t−1) mod w = 0, ε_t ∈ {0, ε};
/// laplace: ε_t = ε, window sum min(t, w)·ε.
#[test]
fn uniform_sample_laplace_budgets() {
    let (eps, w) = (0.7, 4);
    let p = params(eps, w, 2.0);
    let stream = make_stream(StreamKind::Random, 23, 2, 1);
    let noise = || LaplaceMechanism::new(FloatLaplace::seeded(3));
    let u = run(&mut Uniform::new(p, noise()), &stream).unwrap();
    assert!(u.published.iter().all(|&b| b));
    u.budgets().iter().for_each(|&e| assert_close(e, eps / w as f64, "uniform ε_t"));
    assert_close(u.max_window_budget, eps, "uniform window");

    let s = run(&mut Sample::new(p, noise()), &stream).unwrap();
    for (i, (&publ, &e)) in s.published.iter().zip(&s.budgets()).enumerate() {
        assert_eq!(publ, i % w == 0, "sample t = {}", i + 1);
        assert_eq!(e, if publ { eps } else { 0.0 });
    }
    assert_eq!(s.max_window_budget, eps);

    let l = run(&mut EventLaplace::new(p, noise()), &stream).unwrap();
    assert!(l.published.iter().all(|&b| b));
    assert!(l.budgets().iter().all(|&e| e == eps));
    let sums = window_sums(w, &l.budgets());
    for (i, s) in sums.iter().enumerate() {
        assert_close(*s, (i + 1).min(w) as f64 * eps, "laplace window sum");
    }
    assert_close(l.max_window_budget, w as f64 * eps, "laplace reports the excess");
}

/// Zero noise: a constant stream publishes only at t = 1 for bd, ba and pba, and every
/// release equals c_1 bit for bit.
#[test]
fn zero_noise_constant_stream_publishes_once() {
    let c1 = vec![3.0, 0.0, 17.0, 250.0];
    let stream = vec![c1.clone(); 60];
    for (eps, w, delta) in [(1.0, 1, 2.0), (1.0, 5, 2.0), (0.1, 20, 1.0)] {
        let p = params(eps, w, delta);
        for (kind, corr) in [
            (SchemeKind::Bd, PbaPool::Never),
            (SchemeKind::Ba, PbaPool::Never),
            (SchemeKind::Pba, PbaPool::Always),
            (SchemeKind::Pba, PbaPool::Never),
        ] {
            let mut scheme = kind.build(p, LaplaceMechanism::new(Zero), corr).expect("builds");
            let r = run(scheme.as_mut(), &stream).unwrap();
            assert!(r.published[0]);
            assert!(r.published[1..].iter().all(|&b| !b), "{}", kind.name());
            for rel in &r.releases {
                assert!(rel.iter().zip(&c1).all(|(a, b)| a.to_bits() == b.to_bits()));
            }
            assert!(r.max_window_budget <= eps * (1.0 + 1e-12));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The fixed-noise table (ε = 1, w = 3, Δ = 1, constant stream, cell draws +5, test draws 0).

#[test]
fn fixed_noise_table() {
    let p = params(1.0, 3, 1.0);
    let c = vec![10.0, 20.0];
    let stream = vec![c.clone(); 12];
    let cases: [(SchemeKind, PbaPool, &str, Vec<f64>); 4] = [
        (SchemeKind::Bd, PbaPool::Never, "F S S P S S P S S P S S", vec![0.25; 4]),
        (SchemeKind::Pba, PbaPool::Always, "F S S P S S P S S P S S", vec![0.125, 0.25, 0.25, 0.25]),
        (SchemeKind::Pba, PbaPool::Never, "F S S S S S S S S S S S", vec![0.125]),
        (
            SchemeKind::Ba,
            PbaPool::Never,
            "F S P N S P N S P N S P",
            vec![1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0],
        ),
    ];
    for (kind, corr, pattern, pubs) in cases {
        let r = scripted_run(kind, p, corr.clone(), &stream, script(pattern, 2, 0.0, 0.0, 5.0));
        let name = format!("{} {corr:?}", kind.name());
        assert_eq!(r.published, pattern_published(pattern), "{name}");
        let got: Vec<f64> =
            r.spent.iter().zip(&r.published).filter(|(_, p)| **p).map(|(s, _)| s.publication).collect();
        assert_eq!(got.len(), pubs.len(), "{name}");
        for (g, e) in got.iter().zip(&pubs) {
            assert_close(*g, *e, &name);
        }
        for (t, (sp, tests)) in r.spent.iter().zip(pattern_tests(pattern)).enumerate() {
            assert_close(
                sp.test,
                if tests { 1.0 / 6.0 } else { 0.0 },
                &format!("{name} test at t = {}", t + 1),
            );
        }
        for rel in &r.releases {
            assert_eq!(rel, &vec![15.0, 25.0], "{name}: every release is c + 5");
        }
        assert!(r.max_window_budget <= 1.0 + 1e-12);
    }
}

// ---------------------------------------------------------------------------------------------
// Scripted decisions (ε = 1, w = 3; test draw +1e9 publishes, −1e9 skips; cell draws 0).

#[test]
fn scripted_bd_publishing_every_step() {
    let stream = (StreamKind::RandomWalk, 8, 2, 5);
    let r = scripted_pattern(SchemeKind::Bd, PbaPool::Never, "F P P P P P P P", stream);
    let data = make_stream(stream.0, stream.1, stream.2, stream.3);
    assert!(r.published.iter().all(|&b| b));
    let want_p =
        [1.0 / 4.0, 1.0 / 8.0, 1.0 / 16.0, 5.0 / 32.0, 9.0 / 64.0, 13.0 / 128.0, 33.0 / 256.0, 69.0 / 512.0];
    let want_w = [
        1.0 / 4.0,
        13.0 / 24.0,
        37.0 / 48.0,
        27.0 / 32.0,
        55.0 / 64.0,
        115.0 / 128.0,
        223.0 / 256.0,
        443.0 / 512.0,
    ];
    let sums = window_sums(3, &r.budgets());
    for t in 0..8 {
        assert_close(r.spent[t].publication, want_p[t], &format!("P_{}", t + 1));
        assert_close(sums[t], want_w[t], &format!("window sum at t = {}", t + 1));
        assert_eq!(r.releases[t], data[t], "cell draws are 0");
    }
    assert_close(r.max_window_budget, 115.0 / 128.0, "max window (at t = 6)");
}

#[test]
fn scripted_ba_publish_at_4_7_9() {
    let pattern = "F S S P N N P S P N S";
    let r = scripted_pattern(SchemeKind::Ba, PbaPool::Never, pattern, (StreamKind::Random, 11, 2, 6));
    assert_eq!(r.published, pattern_published(pattern));
    let s = 1.0 / 6.0;
    let m = [Some(1), None, None, Some(3), None, None, Some(1), None, Some(2), None, None];
    let totals = [s, s, s, 2.0 / 3.0, 0.0, 0.0, 1.0 / 3.0, s, 0.5, 0.0, s];
    for t in 0..11 {
        let sp = r.spent[t];
        assert_close(sp.total(), totals[t], &format!("ε_{}", t + 1));
        match m[t] {
            Some(m) => {
                assert_close(sp.publication, m as f64 * s, "m·s");
                assert_close(sp.absorbed, (m - 1) as f64 * s, "(m−1)·s absorbed");
            }
            None => assert_eq!(sp.publication, 0.0),
        }
        if !r.published[t] {
            assert_eq!(r.releases[t], r.releases[t - 1]);
        }
    }
    // Nullified steps 5, 6, 10 spend nothing at all.
    for t in [5, 6, 10] {
        assert_eq!(r.spent[t - 1].total(), 0.0);
    }
    let sums = window_sums(3, &r.budgets());
    assert_close(sums[3], 1.0, "window sum at t = 4 is exactly ε in rationals");
    assert!(sums[3] <= 1.0 * (1.0 + 1e-12));
    assert!(r.max_window_budget <= 1.0 * (1.0 + 1e-12));
}

/// Exactly min(m − 1, steps left) nullified steps follow a BA publication: one that
/// absorbs w shares at the second-to-last step leaves a single nullified step.
#[test]
fn ba_nullification_is_cut_by_the_horizon() {
    let pattern = "F S S P N";
    let r = scripted_pattern(SchemeKind::Ba, PbaPool::Never, pattern, (StreamKind::Random, 5, 1, 2));
    assert_eq!(r.published, pattern_published(pattern));
    assert_close(r.spent[3].publication, 0.5, "m = 3");
    assert_eq!(r.spent[4].total(), 0.0);
}

#[test]
fn scripted_pba_paper_figure_3() {
    let pattern = "F S P P P";
    let r = scripted_pattern(
        SchemeKind::Pba,
        PbaPool::Schedule(vec![false, false, false, true, true]),
        pattern,
        (StreamKind::RandomWalk, 5, 3, 7),
    );
    assert_eq!(r.published, vec![true, false, true, true, true]);
    let base = [1.0 / 8.0, 0.0, 1.0 / 16.0, 3.0 / 32.0, 3.0 / 64.0];
    let absorbed = [0.0, 0.0, 0.0, 3.0 / 32.0, 3.0 / 64.0];
    let totals = [1.0 / 8.0, 1.0 / 6.0, 11.0 / 48.0, 17.0 / 48.0, 25.0 / 96.0];
    for t in 0..5 {
        let sp = r.spent[t];
        assert_close(sp.publication - sp.absorbed, base[t], &format!("base at t = {}", t + 1));
        assert_close(sp.absorbed, absorbed[t], &format!("absorbed at t = {}", t + 1));
        assert_close(sp.total(), totals[t], &format!("total at t = {}", t + 1));
    }
}

/// PBA absorbs only when correlated and publishing; the cap never binds; base and absorbed
/// window sums each ≤ ε/4 — under forced publication at every step (the most demanding).
#[test]
fn pba_pools_stay_within_a_quarter() {
    for w in [1, 2, 3, 5, 12] {
        let p = params(1.0, w, 2.0);
        let t_len = 60;
        let stream = make_stream(StreamKind::Random, t_len, 2, w as u64);
        let pattern: String = std::iter::once('F').chain(std::iter::repeat_n('P', t_len - 1)).collect();
        let r =
            scripted_run(SchemeKind::Pba, p, PbaPool::Always, &stream, script(&pattern, 2, 1e9, -1e9, 0.0));
        assert!(r.published.iter().all(|&b| b));
        let base: Vec<f64> = r.spent.iter().map(|s| s.publication - s.absorbed).collect();
        let abs: Vec<f64> = r.spent.iter().map(|s| s.absorbed).collect();
        for t in 1..t_len {
            assert_close(abs[t], base[t], "absorbed = base when correlated");
        }
        assert!(ledger_max(w, &base) <= 0.25 * (1.0 + 1e-12));
        assert!(ledger_max(w, &abs) <= 0.25 * (1.0 + 1e-12));
        assert!(r.max_window_budget <= 1.0 + 1e-12);
        // check_trace asserts the cap ε/4 − A_t ≥ e at every step.
        let corr = PbaPool::Always;
        let noise = Noise::Adversarial { seed: w as u64, spread: 5.0 };
        let (mut s, h) = build(SchemeKind::Pba, p, corr.clone(), noise);
        let trace = drive(s.as_mut(), &h, &stream, noise).unwrap();
        check_trace(SchemeKind::Pba, &p, &corr, &stream, &trace).unwrap();
    }
}

/// pba with `Always` and bd under the same scripted decisions: equal publication budgets at
/// every t ≥ 2 (deterministic companion of the proptest in window_invariant.rs).
#[test]
fn pba_always_equals_bd_for_t_ge_2() {
    let p = params(1.0, 4, 2.0);
    let pattern = "F P S P P P S S P P P P S P S S S P P P";
    let stream = make_stream(StreamKind::Spikes, 20, 3, 4);
    let q = script(pattern, 3, 1e9, -1e9, 0.0);
    let bd = scripted_run(SchemeKind::Bd, p, PbaPool::Never, &stream, q.clone());
    let pba = scripted_run(SchemeKind::Pba, p, PbaPool::Always, &stream, q);
    assert_eq!(bd.published, pattern_published(pattern));
    assert_eq!(pba.published, bd.published);
    assert_close(bd.spent[0].publication, 0.25, "bd t = 1");
    assert_close(pba.spent[0].publication, 0.125, "pba t = 1");
    for t in 1..20 {
        assert_close(pba.spent[t].publication, bd.spent[t].publication, &format!("t = {}", t + 1));
    }
}

// ---------------------------------------------------------------------------------------------
// Sensitivity scaling and draw order (§2) with a recording source.

#[test]
fn sensitivity_scaling_and_draw_order() {
    let (eps, w, d) = (1.0, 3, 2);
    let stream = make_stream(StreamKind::Random, 11, d, 11);
    let cases: [(SchemeKind, PbaPool, &str); 6] = [
        (SchemeKind::Laplace, PbaPool::Never, "F U U U U U U U U U U"),
        (SchemeKind::Uniform, PbaPool::Never, "F U U U U U U U U U U"),
        (SchemeKind::Sample, PbaPool::Never, "F R R U R R U R R U R"),
        (SchemeKind::Bd, PbaPool::Never, "F P S P P S S P S P P"),
        (SchemeKind::Pba, PbaPool::Always, "F P S P P S S P S P P"),
        (SchemeKind::Ba, PbaPool::Never, "F S S P N N P S P N S"),
    ];
    for (kind, corr, pattern) in cases {
        let mut budgets_by_delta: Vec<Vec<f64>> = Vec::new();
        for delta in [1.0, 2.0, 5.0] {
            let p = params(eps, w, delta);
            let (src, rc) = shared(Recording::new(Scripted::new(script(pattern, d, 1e9, -1e9, 0.5))));
            let mut scheme = kind.build(p, LaplaceMechanism::new(src), corr.clone()).expect("builds");
            let chars: Vec<char> = pattern.chars().filter(|c| *c != ' ').collect();
            let mut pubs = Vec::new();
            for (i, c) in stream.iter().enumerate() {
                let mark = rc.borrow().scales.len();
                let o = scheme.step(c).unwrap();
                let scales = rc.borrow().scales[mark..].to_vec();
                let name = format!("{} Δ = {delta} t = {}", kind.name(), i + 1);
                let tests = matches!(chars[i], 'P' | 'S');
                assert_eq!(o.published, matches!(chars[i], 'F' | 'P' | 'U'), "{name}");
                // (expected scale, the budget it must honour: scale·budget ≥ Δ exactly)
                let mut want = Vec::new();
                if tests {
                    want.push((2.0 * w as f64 * delta / eps, p.share())); // documented deviation: Δ/s
                }
                if o.published {
                    want.extend(std::iter::repeat_n((delta / o.spent.publication, o.spent.publication), d));
                    // Cells drew the values after the test draw (0.5 each): test first, then cells.
                    assert!(o.release.iter().zip(c).all(|(r, c)| *r == c + 0.5), "{name}: cell draws");
                }
                assert_eq!(scales.len(), want.len(), "{name}: draw count");
                for (g, (e, budget)) in scales.iter().zip(&want) {
                    assert_close(*g, *e, &format!("{name}: scale"));
                    assert!(g.mul_add(*budget, -delta) >= 0.0, "{name}: scale {g:e} below Δ/budget");
                }
                pubs.push(o.spent.publication);
            }
            assert_eq!(rc.borrow().scales.len(), script(pattern, d, 0.0, 0.0, 0.0).len());
            budgets_by_delta.push(pubs);
        }
        // The budgets do not depend on Δ; only the scales do.
        assert_eq!(budgets_by_delta[0], budgets_by_delta[1], "{}", kind.name());
        assert_eq!(budgets_by_delta[0], budgets_by_delta[2], "{}", kind.name());
    }
}

// ---------------------------------------------------------------------------------------------
// Reproducibility.
