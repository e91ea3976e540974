//! A decision rule written outside the crate, plugged into `Scheme`: the conformance check
//! passes for it and for every built-in scheme, and `Scheme` refuses — before the draw — a
//! rule that asks for more than it promised or reports less than it drew.

use tpl_mechanisms::test_util::{Audited, check_scheme};
use tpl_mechanisms::{
    BudgetGrid, DecisionRule, LaplaceMechanism, MechError, Mechanism, PbaPool, RecentSpend, Scheme,
    SchemeKind, Step, StepBudget, StepOutcome, StreamScheme, WEventParams, Zero, worth_publishing,
};

fn params(eps: f64, w: usize) -> WEventParams {
    WEventParams::new(eps, w, 2.0).unwrap()
}

/// Integer streams with jumps every `period` steps.
fn stream(steps: usize, period: usize) -> Vec<Vec<f64>> {
    (0..steps).map(|t| vec![((t / period) % 4) as f64 * 50.0, 7.0, (t % 3) as f64]).collect()
}

/// "Half-window": tests every step; publishes with half of what the window has left of ε/2
/// when the test says it is worth it — BD's shape, with a run-time name.
struct HalfWindow {
    name: String,
    recent: RecentSpend<1>,
}

impl HalfWindow {
    fn new(params: &WEventParams, name: &str) -> Self {
        Self { name: name.to_owned(), recent: RecentSpend::new(params.window()) }
    }

    fn pool(grid: &BudgetGrid) -> u128 {
        grid.epsilon() / 2
    }
}

impl DecisionRule for HalfWindow {
    fn name(&self) -> &str {
        &self.name
    }

    fn step<M: Mechanism>(&mut self, mut cx: Step<'_, M>) -> tpl_mechanisms::Result<StepOutcome> {
        let grid = *cx.params().grid();
        let test = if cx.t() == 1 { 0.0 } else { cx.params().share() };
        let left = Self::pool(&grid).saturating_sub(self.recent.sum(0));
        let p = grid.value(left / 2);
        let publish = cx.t() == 1 || worth_publishing(p, cx.noisy_dissimilarity()?, cx.params());
        let spent = if publish {
            StepBudget { test, publication: p, absorbed: 0.0 }
        } else {
            StepBudget { test, ..StepBudget::default() }
        };
        self.recent.push([grid.units(spent.publication)]);
        if publish { cx.publish(spent) } else { cx.repeat(spent) }
    }

    fn restore(&mut self, params: &WEventParams, _: usize, outcome: &StepOutcome) {
        self.recent.push([params.grid().units(outcome.spent.publication)]);
    }

    /// Tests take ≤ ε/2 in a window, publications ≤ ε/2 (each half of what is left).
    fn max_spend(&self, params: &WEventParams, t: usize) -> f64 {
        let grid = params.grid();
        let p = grid.value(Self::pool(grid) / 2);
        if t == 1 { p } else { StepBudget { test: params.share(), publication: p, absorbed: 0.0 }.total() }
    }
}

#[test]
fn a_custom_rule_with_a_run_time_name_conforms() {
    let p = params(1.0, 6);
    let name = format!("half-window-{}", p.window());
    let report =
        check_scheme(|m| Scheme::with_rule(p, m, HalfWindow::new(&p, &name)), &stream(200, 9), 3).unwrap();
    assert_eq!(report.steps, 200);
    assert!(report.published > 10 && report.published < 200, "{report:?}");
    assert!(report.resumable);
    let scheme = Scheme::with_rule(p, LaplaceMechanism::new(Zero), HalfWindow::new(&p, &name));
    assert_eq!(scheme.name(), "half-window-6");
}

#[test]
fn every_built_in_scheme_passes_the_conformance_check() {
    for kind in SchemeKind::ALL {
        for (eps, w, period) in [(1.0, 5, 7), (0.3, 12, 3), (2.0, 1, 2)] {
            let p = params(eps, w);
            let corr = PbaPool::Always;
            let build = |m| kind.build(p, m, corr.clone()).unwrap();
            let report = check_scheme(build, &stream(150, period), 11)
                .unwrap_or_else(|e| panic!("{} (ε = {eps}, w = {w}): {e}", kind.name()));
            assert!(report.resumable, "{}", kind.name());
        }
    }
}

/// A rule that promises a small cap but asks for the whole ε.
struct Greedy {
    claim_less: bool,
}

impl DecisionRule for Greedy {
    fn name(&self) -> &str {
        "greedy"
    }

    fn step<M: Mechanism>(&mut self, mut cx: Step<'_, M>) -> tpl_mechanisms::Result<StepOutcome> {
        if cx.t() == 1 {
            let eps = cx.params().epsilon();
            return cx.publish(StepBudget::fresh(eps / 10.0));
        }
        if self.claim_less {
            cx.noisy_dissimilarity()?;
            return cx.repeat(StepBudget::default());
        }
        let eps = cx.params().epsilon();
        cx.publish(StepBudget::fresh(eps))
    }

    fn restore(&mut self, _: &WEventParams, _: usize, _: &StepOutcome) {}

    fn max_spend(&self, params: &WEventParams, _: usize) -> f64 {
        params.epsilon() / 10.0 + params.share()
    }
}

#[test]
fn a_rule_that_overspends_or_underreports_is_refused_before_the_draw() {
    let counted = || Audited::new(LaplaceMechanism::new(Zero));
    let (mechanism, draws) = counted();
    let mut greedy = Scheme::with_rule(params(1.0, 4), mechanism, Greedy { claim_less: false });
    greedy.step(&[1.0, 2.0]).unwrap();
    let e = greedy.step(&[1.0, 2.0]).unwrap_err();
    assert!(matches!(&e, MechError::Overspent { step: 2, scheme, .. } if scheme == "greedy"), "{e}");
    assert!(e.to_string().contains("more than its largest spend"), "{e}");
    assert_eq!((draws.borrow().len(), greedy.steps()), (1, 1), "nothing drawn, nothing stepped");

    let mut sly = Scheme::with_rule(params(1.0, 4), counted().0, Greedy { claim_less: true });
    sly.step(&[1.0, 2.0]).unwrap();
    let e = sly.step(&[1.0, 2.0]).unwrap_err();
    assert!(e.to_string().contains("reports a test budget of 0, but its tests drew"), "{e}");
    assert_eq!(sly.steps(), 1);
}

/// A scheme that forwards to `bd` but answers `resumable` as told, and refuses records with
/// its own words when it says it cannot be resumed.
struct Declared<S> {
    inner: S,
    resumable: bool,
    refuses: bool,
}

impl<S: StreamScheme> StreamScheme for Declared<S> {
    fn name(&self) -> &str {
        "declared"
    }
    fn params(&self) -> &WEventParams {
        self.inner.params()
    }
    fn steps(&self) -> usize {
        self.inner.steps()
    }
    fn step(&mut self, counts: &[f64]) -> tpl_mechanisms::Result<StepOutcome> {
        self.inner.step(counts)
    }
    fn guarantee(&self) -> tpl_mechanisms::PrivacyGuarantee {
        self.inner.guarantee()
    }
    fn max_spend(&self, t: usize) -> f64 {
        self.inner.max_spend(t)
    }
    fn max_step_budget(&self) -> f64 {
        self.inner.max_step_budget()
    }
    fn resumable(&self) -> bool {
        self.resumable
    }
    fn restore(&mut self, outcome: &StepOutcome) -> tpl_mechanisms::Result<()> {
        if self.refuses {
            return Err(MechError::BadRestore {
                step: 1,
                reason: "this ledger is not ours to replay".into(),
            });
        }
        self.inner.restore(outcome)
    }
    fn resume(&mut self, steps: usize, published: (usize, &StepOutcome)) -> tpl_mechanisms::Result<()> {
        self.inner.resume(steps, published)
    }
}

#[test]
fn the_conformance_check_asks_a_scheme_whether_it_can_be_resumed() {
    let p = params(1.0, 4);
    let check = |resumable: bool, refuses: bool| {
        check_scheme(
            |m| Declared { inner: SchemeKind::Bd.build(p, m, PbaPool::Never).unwrap(), resumable, refuses },
            &stream(60, 7),
            5,
        )
    };
    // Not resumable, refusing in its own words (no "cannot be resumed" in them): accepted.
    assert!(check(false, true).is_ok());
    // Not resumable, yet restoring: a contradiction the check names.
    assert!(check(false, false).unwrap_err().contains("says it cannot be resumed"));
    // Resumable but refusing its own records: the refusal is reported.
    assert!(check(true, true).unwrap_err().contains("not ours to replay"));
    assert!(check(true, false).is_ok());
}
