//! `StreamScheme::restore`: a scheme fed the recorded outcomes of steps 1..k decides every
//! later step exactly as the scheme that stepped them (same noise, same outcomes), for every
//! built-in scheme — also when `resume` skips all but the last steps; and records no scheme
//! could have produced are refused, changing nothing.

use proptest::prelude::*;
use tpl_mechanisms::{
    LaplaceMechanism, MechError, PbaPool, SchemeInputs, SchemeKind, Scripted, StepBudget, StepOutcome,
    StreamScheme, WEventParams,
};

/// Noise that makes every decision go either way: large and small, both signs.
fn noise(seed: u64, n: usize) -> Vec<f64> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = ((x >> 33) % 41) as f64 - 20.0;
            if (x >> 20) & 3 == 0 { v * 10.0 } else { v }
        })
        .collect()
}

fn build(kind: SchemeKind, params: WEventParams, values: Vec<f64>) -> Box<dyn StreamScheme> {
    let plan: Vec<f64> = (0..200)
        .map(|t| if t % 3 == 0 { params.epsilon() / (2 * params.window()) as f64 } else { 0.0 })
        .collect();
    let inputs = SchemeInputs { pba_pool: PbaPool::Always, plan };
    kind.build(params, LaplaceMechanism::new(Scripted::new(values)), inputs).unwrap()
}

/// An uninterrupted run of `steps` steps: its stream, its noise script and its outcomes.
struct Run {
    stream: Vec<Vec<f64>>,
    values: Vec<f64>,
    outcomes: Vec<StepOutcome>,
}

fn run(kind: SchemeKind, params: WEventParams, steps: usize, seed: u64) -> Run {
    let stream: Vec<Vec<f64>> =
        (0..steps).map(|t| vec![(t * 7 % 13) as f64 * 10.0, (t % 5) as f64]).collect();
    let values = noise(seed, 4 * steps);
    let mut whole = build(kind, params, values.clone());
    let outcomes = stream.iter().map(|c| whole.step(c).unwrap()).collect();
    Run { stream, values, outcomes }
}

impl Run {
    /// A fresh scheme whose script continues where steps 1..cut left it.
    fn fresh_after(&self, kind: SchemeKind, params: WEventParams, cut: usize) -> Box<dyn StreamScheme> {
        let used = draws(kind, params, &self.values, &self.stream[..cut]);
        build(kind, params, self.values[used..].to_vec())
    }

    /// Steps `resumed` (at step cut + 1) to the end; the outcomes must be the run's.
    fn continues(&self, mut resumed: Box<dyn StreamScheme>, cut: usize) -> Result<(), TestCaseError> {
        prop_assert_eq!(resumed.steps(), cut);
        for (t, c) in self.stream.iter().enumerate().skip(cut) {
            let got = resumed.step(c).unwrap();
            prop_assert_eq!(&got, &self.outcomes[t], "step {}", t + 1);
        }
        Ok(())
    }
}

/// Every scheme kind, planned included, with a window of 1..8 steps and one of four ε.
fn scheme_settings() -> impl Strategy<Value = (SchemeKind, usize, f64)> {
    let kinds: Vec<SchemeKind> = SchemeKind::BUILT_IN.to_vec();
    (prop::sample::select(kinds), 1usize..8, prop::sample::select(vec![0.1, 1.0, 0.7, 3.0]))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn restored_scheme_continues_as_the_uninterrupted_one(
        (kind, window, epsilon) in scheme_settings(),
        steps in 2usize..60,
        cut in 1usize..60,
        seed in any::<u64>(),
    ) {
        let cut = cut.min(steps - 1);
        let params = WEventParams::new(epsilon, window, 2.0).unwrap();
        let run = run(kind, params, steps, seed);
        let mut resumed = run.fresh_after(kind, params, cut);
        for o in &run.outcomes[..cut] {
            resumed.restore(o).unwrap();
        }
        run.continues(resumed, cut)?;
    }

    /// `resume` past a prefix, given only its last publication, then `restore` of at least
    /// the last [`StreamScheme::memory`] steps: the same continuation as restoring every step.
    #[test]
    fn scheme_resumed_past_a_prefix_continues_as_the_uninterrupted_one(
        (kind, window, epsilon) in scheme_settings(),
        steps in 2usize..60,
        cut in 1usize..60,
        extra in 0usize..4,
        seed in any::<u64>(),
    ) {
        let cut = cut.min(steps - 1);
        let params = WEventParams::new(epsilon, window, 2.0).unwrap();
        let run = run(kind, params, steps, seed);
        let mut resumed = run.fresh_after(kind, params, cut);
        // A scheme without a bounded memory (dsat) is restored from its first step.
        let skip = resumed.memory().map_or(0, |m| cut.saturating_sub(m + extra));
        if skip > 0 {
            let p = (1..=skip).rev().find(|&p| run.outcomes[p - 1].published).unwrap();
            resumed.resume(skip, (p, &run.outcomes[p - 1])).unwrap();
        }
        for o in &run.outcomes[skip..cut] {
            resumed.restore(o).unwrap();
        }
        run.continues(resumed, cut)?;
    }
}

/// How many noise values the scheme draws over `stream`.
fn draws(kind: SchemeKind, params: WEventParams, values: &[f64], stream: &[Vec<f64>]) -> usize {
    // A run on a script of exactly n values succeeds iff it needs at most n.
    (0..=values.len())
        .find(|&n| {
            let mut s = build(kind, params, values[..n].to_vec());
            stream.iter().all(|c| s.step(c).is_ok())
        })
        .unwrap()
}

#[test]
fn records_no_scheme_could_produce_are_refused_and_change_nothing() {
    let params = WEventParams::new(1.0, 4, 2.0).unwrap();
    let mut bd = build(SchemeKind::Bd, params, vec![0.0; 8]);
    let repeat = StepOutcome { release: vec![1.0], published: false, spent: StepBudget::default() };
    assert!(matches!(bd.restore(&repeat), Err(MechError::BadRestore { step: 1, .. })));
    let greedy = StepOutcome { release: vec![1.0], published: true, spent: StepBudget::fresh(1.0) };
    assert!(matches!(bd.restore(&greedy), Err(MechError::BadRestore { step: 1, .. })));
    let nan = StepOutcome { release: vec![f64::NAN], published: true, spent: StepBudget::fresh(0.25) };
    assert!(bd.restore(&nan).is_err());
    assert_eq!(bd.steps(), 0);
    let first = StepOutcome { release: vec![1.0], published: true, spent: StepBudget::fresh(0.25) };
    bd.restore(&first).unwrap();
    let other = StepOutcome { release: vec![2.0], published: false, spent: StepBudget::default() };
    assert!(bd.restore(&other).is_err(), "a repeat must repeat the last release");
    let wrong_len = StepOutcome { release: vec![1.0, 2.0], published: true, spent: StepBudget::fresh(0.1) };
    assert!(bd.restore(&wrong_len).is_err());
    assert_eq!(bd.steps(), 1);
    // A plan's horizon holds for restored steps too.
    let mut planned = SchemeKind::Planned
        .build(
            params,
            LaplaceMechanism::new(Scripted::new([])),
            SchemeInputs { pba_pool: PbaPool::Never, plan: vec![0.5] },
        )
        .unwrap();
    let ok = StepOutcome { release: vec![1.0], published: true, spent: StepBudget::fresh(0.5) };
    planned.restore(&ok).unwrap();
    let again = StepOutcome { release: vec![1.0], published: false, spent: StepBudget::default() };
    assert!(planned.restore(&again).is_err());
}

#[test]
fn resume_refuses_a_started_scheme_and_a_summary_no_scheme_could_produce() {
    let params = WEventParams::new(1.0, 4, 2.0).unwrap();
    let fresh = || build(SchemeKind::Bd, params, vec![0.0; 8]);
    let first = StepOutcome { release: vec![1.0], published: true, spent: StepBudget::fresh(0.25) };
    let repeat = StepOutcome { release: vec![1.0], published: false, spent: StepBudget::default() };
    let greedy = StepOutcome { release: vec![1.0], published: true, spent: StepBudget::fresh(1.0) };
    for (steps, p, o) in [(5, 6, &first), (5, 0, &first), (5, 3, &repeat), (5, 1, &greedy)] {
        let mut s = fresh();
        assert!(matches!(s.resume(steps, (p, o)), Err(MechError::BadRestore { .. })), "{steps} {p}");
        assert_eq!(s.steps(), 0);
    }
    let mut s = fresh();
    s.restore(&first).unwrap();
    assert!(s.resume(5, (1, &first)).is_err(), "a scheme that processed steps cannot skip");
    let mut s = fresh();
    s.resume(5, (1, &first)).unwrap();
    assert_eq!(s.steps(), 5);
}

/// BA right after a publication that absorbed shares: resuming at that publication (the
/// nullified steps after it restored) must carry its step and share count, or the next
/// step absorbs shares that do not exist.
#[test]
fn ba_resumed_at_an_absorbing_publication_keeps_its_share_count() {
    let (window, steps) = (4, 40);
    let params = WEventParams::new(1.0, window, 2.0).unwrap();
    let mut checked = 0;
    for seed in 0..300 {
        let run = run(SchemeKind::Ba, params, steps, seed);
        let o = &run.outcomes;
        let Some(skip) = (2..steps - window).find(|&t| o[t - 1].published && o[t - 1].spent.absorbed > 0.0)
        else {
            continue;
        };
        let cut = skip + window - 1;
        let mut resumed = run.fresh_after(SchemeKind::Ba, params, cut);
        resumed.resume(skip, (skip, &o[skip - 1])).unwrap();
        for r in &o[skip..cut] {
            resumed.restore(r).unwrap();
        }
        run.continues(resumed, cut).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} runs absorbed shares");
}
