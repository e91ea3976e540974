//! A custom mechanism and a custom w-event scheme, written against the public API only and
//! brought in through the one plugin point (`SchemeBuilder`, `MechanismBuilder`,
//! docs/plugins.md): checked with the conformance check our own schemes pass, released as
//! `tpl release` releases, compared beside the built-in strategies, and published through a
//! durable stream by two separate processes — whose ledger records exactly what the custom
//! mechanism drew. A builder whose scheme draws elsewhere is refused with its own error.
//!
//! Run: `cargo run --release -p custom-scheme-example` (a few seconds).

use std::process::Command;
use std::sync::{Arc, Mutex};

use tpl_compare::{CustomStrategy, Seed, Setup, Strategy, USERS_STREAM, compare, histogram, simulate_users};
use tpl_core::{Correlation, TransitionMatrix};
use tpl_mechanisms::test_util::check_scheme;
use tpl_mechanisms::{
    DecisionRule, DiscreteLaplace, LaplaceMechanism, MechError, Mechanism, MechanismBuilder, NoiseSource,
    RecentSpend, Scheme, SchemeBuilder, SchemeInputs, Step, StepBudget, StepOutcome, WEventParams,
    mechanism_builder, scheme_builder, worth_publishing,
};
use tpl_stream::{StreamConfig, StreamError, StreamOptions};

/// Laplace noise, then negative values clamped to 0 (post-processing: the same privacy map).
/// It adds every budget it draws at to `drawn`, so that a test can hold the stream's ledger
/// against it.
struct Clamped<M> {
    inner: M,
    drawn: Arc<Mutex<f64>>,
}

impl<M: Mechanism> Mechanism for Clamped<M> {
    fn name(&self) -> &str {
        "clamped-laplace"
    }
    fn validate(&self, answer: &[f64]) -> Result<(), MechError> {
        self.inner.validate(answer)
    }
    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> Result<f64, MechError> {
        self.inner.privacy_map(d_in, sensitivity, budget)
    }
    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>, MechError> {
        let released = self.inner.sample(answer, sensitivity, budget)?;
        *self.drawn.lock().map_err(|_| MechError::custom("the draw log is poisoned"))? += budget;
        Ok(released.into_iter().map(|v| v.max(0.0)).collect())
    }
}

/// The builder of the clamped mechanism over whatever noise the caller hands it (the
/// operating system's in a stream, the run's seeded generator in a comparison).
fn clamped(drawn: Arc<Mutex<f64>>) -> impl MechanismBuilder {
    mechanism_builder("clamped-laplace", move |noise: Box<dyn NoiseSource + Send>| {
        Box::new(Clamped { inner: LaplaceMechanism::new(noise), drawn: Arc::clone(&drawn) })
    })
}

/// "Thirds": tests every step (s = ε/(2w)); publishes with a third of what the window has
/// left of ε/2 when the noisy staleness exceeds the fresh noise (tests and publications
/// each ≤ ε/2 in every window).
struct Thirds {
    recent: RecentSpend<1>,
}

impl DecisionRule for Thirds {
    fn name(&self) -> &str {
        "thirds"
    }
    fn step<M: Mechanism>(&mut self, mut cx: Step<'_, M>) -> Result<StepOutcome, MechError> {
        let grid = *cx.params().grid();
        let p = grid.value((grid.epsilon() / 2).saturating_sub(self.recent.sum(0)) / 3);
        let test = if cx.t() == 1 { 0.0 } else { cx.params().share() };
        let publish = cx.t() == 1 || worth_publishing(p, cx.noisy_dissimilarity()?, cx.params());
        let publication = if publish { p } else { 0.0 };
        self.recent.push([grid.units(publication)]);
        let spent = StepBudget { test, publication, absorbed: 0.0 };
        if publish { cx.publish(spent) } else { cx.repeat(spent) }
    }
    fn restore(&mut self, params: &WEventParams, _: usize, outcome: &StepOutcome) {
        self.recent.push([params.grid().units(outcome.spent.publication)]);
    }
    fn max_spend(&self, params: &WEventParams, t: usize) -> f64 {
        let grid = params.grid();
        let p = grid.value(grid.epsilon() / 2 / 3);
        if t == 1 { p } else { StepBudget { test: params.share(), publication: p, absorbed: 0.0 }.total() }
    }
}

fn thirds<M: Mechanism>(params: WEventParams, mechanism: M) -> Scheme<Thirds, M> {
    Scheme::with_rule(params, mechanism, Thirds { recent: RecentSpend::new(params.window()) })
}

/// The one builder of the scheme, for every place that runs it; its name is given here only.
fn thirds_builder() -> impl SchemeBuilder {
    scheme_builder("thirds", |params, _, mechanism| Ok(Box::new(thirds(params, mechanism))))
}

/// The options every process opens the stream with: the same scheme and mechanism.
fn options(drawn: &Arc<Mutex<f64>>) -> StreamOptions {
    StreamOptions::new().scheme(thirds_builder()).mechanism(clamped(Arc::clone(drawn)))
}

fn total(drawn: &Arc<Mutex<f64>>) -> Result<f64, Box<dyn std::error::Error>> {
    Ok(*drawn.lock().map_err(|_| "the draw log is poisoned")?)
}

/// The child process: pushes `steps` steps of a stream into `db`, keys `from`, `from + 1`, …,
/// and prints the budget its mechanism drew, which must be what its steps recorded.
fn push(db: &str, from: i64, steps: i64) -> Result<(), Box<dyn std::error::Error>> {
    let drawn = Arc::new(Mutex::new(0.0));
    let mut stream = options(&drawn).open(std::path::Path::new(db))?;
    let mut recorded = 0.0;
    for key in from..from + steps {
        let counts = [(key % 5 * 30) as f64, 12.0, (key % 2) as f64];
        let step = stream.push(Some(key), &counts)?.record;
        recorded += step.spent.total();
        if step.published && step.release.iter().any(|&v| v < 0.0) {
            return Err("a release of the clamped mechanism is negative".into());
        }
    }
    let drawn = total(&drawn)?;
    if drawn != recorded {
        return Err(format!("the mechanism drew {drawn}, the ledger recorded {recorded}").into());
    }
    println!("drawn {drawn}");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, cmd, db, from, steps] = args.as_slice()
        && cmd == "push"
    {
        return push(db, from.parse()?, steps.parse()?);
    }
    let params = WEventParams::new(1.0, 10, 2.0)?;
    let stream: Vec<Vec<f64>> =
        (0..300).map(|t| vec![(t / 7 % 4 * 25) as f64, 9.0, (t % 3) as f64]).collect();
    // 1. The conformance check of the built-in schemes, on the custom scheme.
    let seen = check_scheme(|m| thirds(params, m), &stream, 1)?;
    println!("conformance: {} steps, {} published, resumable {}", seen.steps, seen.published, seen.resumable);
    // 2. A release as `tpl release` makes one: the builders over the operating system's noise.
    let drawn = Arc::new(Mutex::new(0.0));
    let mechanism = clamped(Arc::clone(&drawn)).build(Box::new(DiscreteLaplace::from_os_rng()));
    let inputs = SchemeInputs::from(tpl_mechanisms::PbaPool::Never);
    let mut scheme = thirds_builder().build(params, &inputs, mechanism)?;
    let released = tpl_mechanisms::run(scheme.as_mut(), &stream)?;
    let spent: f64 = released.budgets().iter().sum();
    println!(
        "release: {} published, max window spend {}",
        released.published.iter().filter(|&&p| p).count(),
        released.max_window_budget
    );
    if released.max_window_budget > 1.0 || (spent - total(&drawn)?).abs() > 1e-9 {
        return Err("the release broke its window or spent other than its draws".into());
    }
    // 3. Compared beside built-in strategies, with the custom mechanism.
    let chain = TransitionMatrix::smoothed_identity(3, 0.05)?;
    let people = simulate_users(&chain, &[1.0 / 3.0; 3], 500, 60, &mut Seed::given(4).rng(USERS_STREAM, 0))?;
    let truth = histogram(&people, 3)?;
    let custom = CustomStrategy::new(thirds_builder()).mechanism(clamped(Arc::new(Mutex::new(0.0))));
    let known = Correlation::new(Some(chain.clone()), Some(chain))?;
    let setup = Setup::new(&truth, 1.0, 10).correlation(&known).seed(Seed::given(2));
    let strategies = [Strategy::parse("bd")?, Strategy::parse("uniform")?, Strategy::Custom(custom)];
    for row in compare(&setup, &strategies)?.rows {
        let s = row.outcome?;
        println!("{:>24}: MAE {:6.2}, max TPL {:.3}", row.strategy, s.mae.mean, s.max_tpl);
    }
    // 4. A durable stream of the custom scheme and mechanism, pushed to by two processes.
    let dir = std::env::temp_dir().join(format!("tpl-custom-scheme-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("thirds.db");
    let unused = Arc::new(Mutex::new(0.0));
    options(&unused).create(&db, &StreamConfig::new(&thirds_builder(), 1.0, 4))?;
    let mut drawn_by_children = 0.0;
    for (from, steps) in [(1, 5), (6, 4)] {
        let out = Command::new(std::env::current_exe()?)
            .args(["push", &db.to_string_lossy(), &from.to_string(), &steps.to_string()])
            .output()?;
        let said = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!(
                "the process pushing from key {from} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        let drawn: f64 = said.trim().strip_prefix("drawn ").ok_or("the child said nothing")?.parse()?;
        println!("  process {from}..{}: its mechanism drew {drawn}", from + steps - 1);
        drawn_by_children += drawn;
    }
    let mut stream = options(&unused).open(&db)?;
    let status = stream.status()?;
    let recorded: f64 = status.budgets.iter().sum();
    println!(
        "stream: {} steps, mechanism {:?}, ledger {recorded}, largest window spend {}",
        status.budgets.len(),
        status.config.mechanism.as_deref().unwrap_or("laplace"),
        status.max_window_spend
    );
    if status.budgets.len() != 9
        || status.max_window_spend > 1.0
        || (recorded - drawn_by_children).abs() > 1e-12
    {
        return Err("the stream does not hold what the two processes drew and pushed".into());
    }
    // 5. A builder whose scheme ignores the mechanism it is handed (and draws from its own) is
    //    refused when the stream is created: its reports are not what the stream's guard saw.
    let liar = scheme_builder("thirds-own-noise", |params, _, _handed| {
        Ok(Box::new(thirds(params, LaplaceMechanism::new(DiscreteLaplace::from_os_rng()))))
    });
    let config = StreamConfig::new(&liar, 1.0, 4);
    let refused = StreamOptions::new().scheme(liar).create(&dir.join("liar.db"), &config);
    std::fs::remove_dir_all(&dir)?;
    match refused {
        Err(e @ StreamError::SchemeSpend { .. }) => println!("refused: {e}"),
        other => return Err(format!("a scheme drawing elsewhere was not refused as such: {other:?}").into()),
    }
    Ok(())
}
