//! Plugging your own mechanism into a w-event stream scheme, then auditing what the run spent.
//!
//! The scheme (here BD, [`docs/w-event.md`](tpl_core::guide::w_event) §3.4) decides *when* to
//! publish and with which budget; the [`Mechanism`] decides *how* a count vector is released under
//! that budget. Any type that implements the trait can be used: it states what it accepts
//! (`validate`, checked before any draw), what one release costs (`privacy_map`) and how it draws
//! (`sample`). This example writes a geometric mechanism from scratch, runs BD with it over a
//! synthetic stream of people moving between cells, and audits the budgets the run actually spent —
//! and the most BD could have spent — with `tpl-core`: the w-event guarantee (every window of w
//! steps spends ≤ ε) holds, but an adversary who knows how people move (a Markov chain) can learn
//! more than ε about one person — the temporal privacy leakage (TPL) of Cao et al.
//!
//! Everything here is seeded (the people's moves by [`Seed`], the mechanism's draws by
//! ChaCha12), so the output is the same on every run: an experiment, not a release.
//!
//! Run: `cargo run --release -p tpl-compare --example custom_mechanism` (no arguments,
//! well under a second).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use tpl_compare::{Seed, USERS_STREAM, histogram, simulate_users};
use tpl_core::{Correlation, LeakageSeries, TransitionMatrix};
use tpl_mechanisms::{Bd, MAX_EXACT_COUNT, MechError, Mechanism, StreamScheme, WEventParams, run};

/// The geometric mechanism (Ghosh, Roughgarden, Sundararajan 2009): releases an integer answer
/// a ∈ ℤ^m as a + (Z_1, …, Z_m), each Z_j = G − G′ the difference of two independent geometric
/// variables with Pr[G = k] = (1 − α)·α^k, k ≥ 0, α = exp(−p/δ) for budget p and L1
/// sensitivity δ.
///
/// # Privacy
/// G − G′ is two-sided geometric: Pr[Z = z] = (1 − α)/(1 + α)·α^{|z|}. For answers a, a′ with
/// ‖a − a′‖₁ ≤ δ, the output densities at any o ∈ ℤ^m differ by the factor
/// α^{Σ_j (|o_j − a_j| − |o_j − a′_j|)} ≤ α^{−‖a − a′‖₁} ≤ exp(p): the release is p-DP — the
/// integer analogue of the Laplace mechanism, which is what the stream schemes need. Answers
/// must be integers (then so are releases, and the noise carries no information beyond its
/// integer value) within ±2^52 (so that a + Z stays exact); anything else is refused by
/// `validate`, which the trait runs before any randomness is drawn.
///
/// # Not release-grade
/// The geometric draws below use floating-point inversion, G = ⌊ln U / ln α⌋, which is only
/// approximately geometric (rounding of ln, 53-bit U). For real releases use the crate's exact
/// [`tpl_mechanisms::DiscreteLaplace`] (integer arithmetic only, the same distribution); this
/// type exists to show the plugin point.
#[derive(Debug)]
struct GeometricMechanism {
    rng: ChaCha12Rng,
}

impl GeometricMechanism {
    /// Seeded: reproducible, hence for experiments only.
    fn seeded(seed: u64) -> Self {
        Self { rng: ChaCha12Rng::seed_from_u64(seed) }
    }

    /// Pr[G ≥ k] = Pr[U ≤ α^k] = α^k for U uniform in (0, 1]: G is geometric with ratio α.
    fn geometric(&mut self, ln_alpha: f64) -> f64 {
        let u = 1.0 - self.rng.random::<f64>(); // in (0, 1]
        (u.ln() / ln_alpha).floor()
    }
}

/// The mechanism's own failure: a value too large to take integer noise exactly.
#[derive(Debug)]
struct TooLarge(f64);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "geometric mechanism: |{}| exceeds 2^52", self.0)
    }
}

impl std::error::Error for TooLarge {}

impl Mechanism for GeometricMechanism {
    fn name(&self) -> &str {
        "geometric"
    }

    /// Integers within ±2^52 only. BD calls this on c_t before it draws its test noise.
    fn validate(&self, answer: &[f64]) -> Result<(), MechError> {
        if let Some(&value) = answer.iter().find(|v| v.fract() != 0.0) {
            return Err(MechError::NotInteger { value });
        }
        match answer.iter().find(|v| v.abs() > MAX_EXACT_COUNT) {
            Some(&value) => Err(MechError::custom(TooLarge(value))),
            None => Ok(()),
        }
    }

    /// α = exp(−p/δ): answers at L1 distance d_in are e^{d_in·p/δ}-indistinguishable.
    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> Result<f64, MechError> {
        if !(d_in.is_finite() && d_in >= 0.0) {
            return Err(MechError::BadDistance(d_in));
        }
        // d_in times the rate the draws use, rounded up: never understated, and at most p at
        // d_in = δ (the rate is p/δ rounded down), which every release checks.
        let rate = rate(sensitivity, budget);
        let loss = d_in * rate;
        Ok(if d_in.mul_add(rate, -loss) > 0.0 { loss.next_up() } else { loss })
    }

    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>, MechError> {
        let ln_alpha = -rate(sensitivity, budget); // ln α = −p/δ, rounded towards less privacy loss
        Ok(answer.iter().map(|&a| a + self.geometric(ln_alpha) - self.geometric(ln_alpha)).collect())
    }
}

/// p/δ rounded down, so that δ·rate ≤ p exactly: the rate of the geometric draws.
fn rate(sensitivity: f64, budget: f64) -> f64 {
    let r = budget / sensitivity;
    if r.mul_add(sensitivity, -budget) > 0.0 { r.next_down() } else { r }
}

/// A synthetic stream: `people` people, spread uniformly over the cells at step 1, then each
/// moving along the rows of `chain` ([`simulate_users`], so the audit below knows the true
/// correlation); c_t[j] counts the people in cell j ([`histogram`]). The population is
/// fixed, so one person changing cell moves two counts by one: L1 sensitivity Δ = 2
/// (substitution, the default of [`docs/w-event.md`](tpl_core::guide::w_event) §1.2).
fn synthetic_stream(
    chain: &TransitionMatrix,
    people: usize,
    steps: usize,
    seed: u64,
) -> Result<Vec<Vec<f64>>, Box<dyn std::error::Error>> {
    let cells = chain.n();
    let mut rng = Seed::given(seed).rng(USERS_STREAM, 0);
    let states = simulate_users(chain, &vec![1.0 / cells as f64; cells], people, steps, &mut rng)?;
    Ok(histogram(&states, cells)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (cells, people, steps) = (6, 600, 400);
    let (epsilon, window, sensitivity) = (1.0, 10, 2.0);

    // The adversary's (and here also the simulation's) knowledge: people mostly stay put.
    let chain = TransitionMatrix::smoothed_identity(cells, 0.05)?;
    let stream = synthetic_stream(&chain, people, steps, 2024)?;

    let params = WEventParams::new(epsilon, window, sensitivity)?;
    let mut bd = Bd::new(params, GeometricMechanism::seeded(7));
    // Non-integer counts are refused before any noise is drawn (the trait runs `validate`).
    assert!(matches!(bd.step(&[0.5; 6]), Err(MechError::NotInteger { .. })) && bd.steps() == 0);
    let result = run(&mut bd, &stream)?;

    let published = result.published.iter().filter(|&&p| p).count();
    println!(
        "BD with a custom geometric mechanism: T = {steps} steps, d = {cells} cells, ε = {epsilon}, w = {window}"
    );
    println!("published {published} of {steps} steps ({:.1} %)", 100.0 * published as f64 / steps as f64);
    println!(
        "max window budget (every w = {window} consecutive steps): {:.6} ≤ ε = {epsilon}: {}",
        result.max_window_budget,
        result.max_window_budget <= epsilon * (1.0 + 1e-12)
    );
    let mae = result
        .releases
        .iter()
        .zip(&stream)
        .flat_map(|(r, c)| r.iter().zip(c).map(|(r, c)| (r - c).abs()))
        .sum::<f64>()
        / (steps * cells) as f64;
    println!("mean absolute error per cell: {mae:.2} people (cells hold ~{} each)", people / cells);

    // Audit (`docs/w-event.md` §6): the spent budgets through the TPL machinery of tpl-core,
    // against an adversary who knows the chain backward and forward. The Markov model's
    // neighbours (one person changes cell) are at L1 distance 2: the mechanism's privacy map
    // at d_in = 2 gives each step's loss against them (ε_t itself at Δ = 2).
    let loss = |e: f64| if e > 0.0 { bd.mechanism().privacy_map(2.0, sensitivity, e) } else { Ok(0.0) };
    let known = Correlation::new(Some(chain.clone()), Some(chain.clone()))?;
    let audit = |budgets: &[f64]| -> Result<(f64, f64), Box<dyn std::error::Error>> {
        let losses = budgets.iter().map(|&e| loss(e)).collect::<Result<Vec<_>, _>>()?;
        let series = LeakageSeries::new(&known, &losses)?;
        Ok((series.max_tpl(), series.window_leakage(window)?.into_iter().fold(0.0, f64::max)))
    };
    let (max_tpl, max_window_leakage) = audit(&result.budgets())?;
    // The most BD could have spent at each step, over every stream and noise outcome.
    let worst: Vec<f64> = (1..=steps).map(|t| bd.max_spend(t)).collect();
    let (guaranteed_tpl, guaranteed_window) = audit(&worst)?;
    println!("guarantee: {:?}; largest step spend {:.6}", bd.guarantee(), bd.max_step_budget());
    println!("audit under P_B = P_F = smoothed identity (s = 0.05):");
    println!(
        "  max TPL (event level, one step)      = {max_tpl:.4}  (any run: ≤ {guaranteed_tpl:.4})  vs ε = {epsilon}"
    );
    println!(
        "  max leakage of a window of w = {window} steps = {max_window_leakage:.4}  (any run: ≤ {guaranteed_window:.4})  vs ε = {epsilon}"
    );
    if max_window_leakage > epsilon {
        println!(
            "  → (W) holds for the budgets, yet a correlation-aware adversary learns {:.2}× ε about one person's w steps",
            max_window_leakage / epsilon
        );
    }
    Ok(())
}
