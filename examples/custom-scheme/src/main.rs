//! A custom mechanism and a custom w-event scheme, written against the public API only:
//! checked with the conformance check our own schemes pass, compared beside the built-in
//! strategies, and published through a durable stream by two separate processes.
//!
//! Run: `cargo run --release -p custom-scheme-example` (a few seconds).

use std::process::Command;
use std::sync::Arc;

use tpl_compare::{CustomStrategy, Seed, Setup, Strategy, USERS_STREAM, compare, histogram, simulate_users};
use tpl_core::TransitionMatrix;
use tpl_mechanisms::test_util::check_scheme;
use tpl_mechanisms::{
    DecisionRule, DiscreteLaplace, LaplaceMechanism, MechError, Mechanism, RecentSpend, Scheme, Step,
    StepBudget, StepOutcome, WEventParams, worth_publishing,
};
use tpl_stream::{DurableStream, NamedFactory, SchemeChoice, StreamConfig, default_key_path, scheme_factory};

/// Laplace noise, then negative values clamped to 0 (post-processing: the same privacy map).
struct Clamped<M>(M);

impl<M: Mechanism> Mechanism for Clamped<M> {
    fn name(&self) -> &str {
        "clamped-laplace"
    }
    fn validate(&self, answer: &[f64]) -> Result<(), MechError> {
        self.0.validate(answer)
    }
    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> Result<f64, MechError> {
        self.0.privacy_map(d_in, sensitivity, budget)
    }
    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>, MechError> {
        Ok(self.0.sample(answer, sensitivity, budget)?.into_iter().map(|v| v.max(0.0)).collect())
    }
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
        let grid = *cx.params.grid();
        let p = grid.value((grid.epsilon() / 2).saturating_sub(self.recent.sum(0)) / 3);
        let test = if cx.t() == 1 { 0.0 } else { cx.params.share() };
        let publish = cx.t() == 1 || worth_publishing(p, cx.noisy_dissimilarity()?, cx.params);
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

/// What rebuilds the scheme of a durable stream in any process.
fn factory() -> Arc<NamedFactory> {
    Arc::new(scheme_factory("thirds", |params, _, mechanism| Ok(Box::new(thirds(params, mechanism)))))
}

/// The child process: pushes `steps` steps of a stream into `db`, keys `from`, `from + 1`, ….
fn push(db: &str, from: i64, steps: i64) -> Result<(), Box<dyn std::error::Error>> {
    let path = std::path::Path::new(db);
    let mut stream = DurableStream::open_custom(path, &default_key_path(path), factory())?;
    for key in from..from + steps {
        let counts = [(key % 5 * 30) as f64, 12.0, (key % 2) as f64];
        let step = stream.push(Some(key), &counts)?.record;
        println!("  process {}: step {} published {}", std::process::id(), step.t, step.published);
    }
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
    // 1. The conformance check of the built-in schemes, on the custom scheme.
    let stream: Vec<Vec<f64>> =
        (0..300).map(|t| vec![(t / 7 % 4 * 25) as f64, 9.0, (t % 3) as f64]).collect();
    let seen = check_scheme(|m| thirds(params, m), &stream, 1)?;
    println!("conformance: {} steps, {} published, resumable {}", seen.steps, seen.published, seen.resumable);
    // 2. Compared beside built-in strategies, with the custom mechanism.
    let chain = TransitionMatrix::smoothed_identity(3, 0.05)?;
    let people = simulate_users(&chain, &[1.0 / 3.0; 3], 500, 60, &mut Seed::given(4).rng(USERS_STREAM, 0))?;
    let truth = histogram(&people, 3)?;
    let custom = CustomStrategy::new("thirds+clamped", |p, _, rng| {
        Ok(Box::new(thirds(p, Clamped(LaplaceMechanism::new(DiscreteLaplace::new(rng))))))
    });
    let setup = Setup::new(&truth, 1.0, 10).backward(Some(&chain)).forward(Some(&chain)).seed(Seed::given(2));
    let strategies = [Strategy::parse("bd")?, Strategy::parse("uniform")?, Strategy::Custom(custom)];
    for row in compare(&setup, &strategies, &|| {})?.rows {
        let s = row.outcome?;
        println!("{:>16}: MAE {:6.2}, max TPL {:.3}", row.strategy, s.mae.mean, s.max_tpl);
    }
    // 3. A durable stream of the custom scheme, pushed to by two processes in turn.
    let dir = std::env::temp_dir().join(format!("tpl-custom-scheme-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("thirds.db");
    let config = StreamConfig::new(SchemeChoice::Custom("thirds".into()), 1.0, 4);
    DurableStream::create_custom(&db, &config, &default_key_path(&db), &*factory())?;
    for (from, steps) in [(1, 5), (6, 4)] {
        let status = Command::new(std::env::current_exe()?)
            .args(["push", &db.to_string_lossy(), &from.to_string(), &steps.to_string()])
            .status()?;
        if !status.success() {
            return Err(format!("the process pushing from key {from} failed").into());
        }
    }
    let mut stream = DurableStream::open_custom(&db, &default_key_path(&db), factory())?;
    let status = stream.status()?;
    println!("stream: {} steps, largest window spend {}", status.budgets.len(), status.max_window_spend);
    std::fs::remove_dir_all(&dir)?;
    if status.budgets.len() != 9 || status.max_window_spend > 1.0 {
        return Err("the stream does not hold what the two processes pushed".into());
    }
    Ok(())
}
