//! The plugin point: a differentially private mechanism for one release of a query answer.

use crate::error::{MechError, Result};
use crate::noise::NoiseSource;

/// One ε-DP release of a query answer a ∈ ℝ^m with L1 sensitivity δ under budget p.
///
/// Implement it for your own mechanism (it owns its randomness, injected at construction)
/// and every stream scheme of this crate runs it: the scheme decides *when* to publish and
/// with which budget, the mechanism decides *how*. The guarantee a scheme states (w-event
/// ε-DP) holds as long as `release` is p-DP for answers at L1 distance ≤ δ.
///
/// A worked example (a geometric mechanism) is `examples/custom_mechanism.rs`.
pub trait Mechanism {
    /// A short name for reports.
    fn name(&self) -> &str;

    /// Releases `answer` with budget `budget` for L1 sensitivity `sensitivity`.
    ///
    /// # Errors
    /// A mechanism-specific error for inputs it cannot release (e.g. non-integers for an
    /// integer mechanism); then no randomness may have been consumed.
    fn release(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>>;

    /// Checks, without drawing, that `answer` is something `release` accepts (e.g. integers
    /// for an integer mechanism). Stream schemes call it on c_t before any draw (w-event
    /// spec §2), so that a rejected step changes nothing. Default: everything is accepted.
    ///
    /// # Errors
    /// The error `release` would return for `answer`.
    fn validate(&self, answer: &[f64]) -> Result<()> {
        let _ = answer;
        Ok(())
    }
}

/// The Laplace mechanism: a + (X_1, …, X_m), X_j ~ Lap(δ/p) independent, drawn in order from
/// its noise source (w-event spec §2). With [`crate::DiscreteLaplace`] the noise is exact
/// integer noise, and integer answers are required.
///
/// ```
/// use tpl_mechanisms::{LaplaceMechanism, Mechanism, Scripted};
/// let mut m = LaplaceMechanism::new(Scripted::new([0.5, -1.0]));
/// assert_eq!(m.release(&[10.0, 20.0], 2.0, 1.0)?, vec![10.5, 19.0]);
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
#[derive(Debug, Clone)]
pub struct LaplaceMechanism<N> {
    noise: N,
}

impl<N: NoiseSource> LaplaceMechanism<N> {
    /// The mechanism drawing from `noise`.
    pub fn new(noise: N) -> Self {
        Self { noise }
    }

    /// The noise source (e.g. to read a [`crate::Recording`]).
    pub fn noise(&self) -> &N {
        &self.noise
    }
}

impl<N: NoiseSource> Mechanism for LaplaceMechanism<N> {
    fn name(&self) -> &str {
        "laplace"
    }

    fn release(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>> {
        if !(budget.is_finite() && budget > 0.0) {
            return Err(MechError::BadEpsilon(budget));
        }
        self.validate(answer)?;
        // b ≥ δ/p exactly: a division that rounded down is bumped one ulp (fma's sign is exact).
        let mut scale = sensitivity / budget;
        if scale.mul_add(budget, -sensitivity) < 0.0 {
            scale = scale.next_up();
        }
        answer.iter().map(|&a| Ok(a + self.noise.laplace(scale)?)).collect()
    }

    /// With integer noise ([`crate::DiscreteLaplace`]) the answer must be integer-valued.
    fn validate(&self, answer: &[f64]) -> Result<()> {
        match answer.iter().find(|v| v.fract() != 0.0) {
            Some(&v) if self.noise.integer_valued() => Err(MechError::NotInteger { value: v }),
            _ => Ok(()),
        }
    }
}
