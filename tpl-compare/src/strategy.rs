//! The release strategies a comparison runs: the w-event schemes of `tpl-mechanisms`, the
//! TPL allocators of `tpl-alloc`, and schemes from outside code ([`CustomStrategy`]).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use rand_chacha::ChaCha20Rng;
use tpl_mechanisms::{MechError, SchemeInputs, SchemeKind, StreamScheme, WEventParams};

use crate::error::{CompareError, Result};

/// The generator a comparison hands each run ([`crate::Seed::rng`]): ChaCha20, keyed by the
/// base seed, the strategy's name and the run.
pub type CompareRng = ChaCha20Rng;

/// What builds a custom strategy's scheme for one run: the comparison's parameters
/// (ε, w, Δ), its inputs (PBA's correlation predicate from the adversary's matrices) and the
/// run's generator, from which the scheme's mechanism draws.
pub type SchemeFactory = dyn Fn(WEventParams, &SchemeInputs, CompareRng) -> std::result::Result<Box<dyn StreamScheme>, MechError>
    + Send
    + Sync;

/// A stream scheme from outside code, run by [`crate::compare`] beside the built-in
/// strategies: a custom decision rule, a custom mechanism, or both. Each run builds a fresh
/// scheme with the run's generator; the scheme is audited as the built-in schemes are, from
/// what it spent (realised) and from its caps (guaranteed).
///
/// ```
/// use tpl_compare::{CustomStrategy, Seed, Setup, Strategy, compare};
/// use tpl_mechanisms::{Bd, DiscreteLaplace, LaplaceMechanism};
/// let bd_again = CustomStrategy::new("my-bd", |params, _, rng| {
///     Ok(Box::new(Bd::new(params, LaplaceMechanism::new(DiscreteLaplace::new(rng)))))
/// });
/// let truth = vec![vec![3.0, 7.0]; 20];
/// let setup = Setup::new(&truth, 1.0, 5).seed(Seed::given(1)).runs(2);
/// let table = compare(&setup, &[Strategy::parse("bd")?, Strategy::Custom(bd_again)], &|| {})?;
/// assert_eq!(table.rows[1].strategy, "my-bd");
/// // The same scheme with the same stream of randomness scores the same.
/// let mae = |i: usize| table.rows[i].outcome.as_ref().map(|s| s.mae.mean).ok();
/// assert!(mae(1).is_some());
/// # Ok::<(), tpl_compare::CompareError>(())
/// ```
#[derive(Clone)]
pub struct CustomStrategy {
    name: Arc<str>,
    factory: Arc<SchemeFactory>,
}

impl CustomStrategy {
    /// A strategy called `name` (its row's label, and the name of its random stream)
    /// whose runs build their scheme with `factory`.
    pub fn new(
        name: impl Into<String>,
        factory: impl Fn(
            WEventParams,
            &SchemeInputs,
            CompareRng,
        ) -> std::result::Result<Box<dyn StreamScheme>, MechError>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self { name: Arc::from(name.into()), factory: Arc::new(factory) }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Builds the scheme of one run.
    ///
    /// # Errors
    /// The factory's error.
    pub fn build(
        &self,
        params: WEventParams,
        inputs: &SchemeInputs,
        rng: CompareRng,
    ) -> std::result::Result<Box<dyn StreamScheme>, MechError> {
        (self.factory)(params, inputs, rng)
    }
}

impl fmt::Debug for CustomStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomStrategy").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Custom strategies are told apart by name (a comparison's rows are).
impl PartialEq for CustomStrategy {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for CustomStrategy {}

/// A release strategy: a w-event scheme, a TPL allocator whose budgets drive a Laplace
/// release at every step, or a scheme from outside code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Strategy {
    /// One of the six schemes of `tpl-mechanisms` (Kellaris et al., "Differentially private
    /// event sequences over infinite streams"; Hemkumar et al. for PBA).
    Scheme(SchemeKind),
    /// TKDE Algorithm 7: TPL_t ≤ α for a stream of any length.
    UpperBound,
    /// TKDE Algorithm 8: TPL_t = α at every step of T.
    Quantified,
    /// Every window of w steps leaks ≤ α (TKDE Theorem 3).
    Window,
    /// A scheme built by outside code for every run.
    Custom(CustomStrategy),
}

impl Strategy {
    /// Every strategy, in the order of the comparison table.
    pub const ALL: [Strategy; 9] = [
        Self::Scheme(SchemeKind::Laplace),
        Self::Scheme(SchemeKind::Uniform),
        Self::Scheme(SchemeKind::Sample),
        Self::Scheme(SchemeKind::Bd),
        Self::Scheme(SchemeKind::Ba),
        Self::Scheme(SchemeKind::Pba),
        Self::UpperBound,
        Self::Quantified,
        Self::Window,
    ];

    /// The name on the command line and in reports (`bd`, `upper-bound`, …); it also names
    /// the strategy's random stream ([`crate::Seed::rng`]).
    pub fn name(&self) -> &str {
        match self {
            Self::Scheme(k) => k.name(),
            Self::UpperBound => "upper-bound",
            Self::Quantified => "quantified",
            Self::Window => "window",
            Self::Custom(c) => c.name(),
        }
    }

    /// The names of [`Strategy::ALL`], in order.
    pub fn names() -> Vec<&'static str> {
        static BUILT_IN: [Strategy; 9] = Strategy::ALL;
        BUILT_IN.iter().map(Strategy::name).collect()
    }

    /// The strategy called `name`.
    ///
    /// # Errors
    /// [`CompareError::UnknownStrategy`] for any other name.
    ///
    /// ```
    /// use tpl_compare::Strategy;
    /// assert_eq!(Strategy::parse("window")?, Strategy::Window);
    /// assert!(Strategy::parse("magic").is_err());
    /// # Ok::<(), tpl_compare::CompareError>(())
    /// ```
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| CompareError::UnknownStrategy { name: name.to_owned() })
    }
}

impl FromStr for Strategy {
    type Err = CompareError;

    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Strategy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back() {
        for s in Strategy::ALL {
            assert_eq!(Strategy::parse(s.name()), Ok(s.clone()));
            assert_eq!(s.to_string().parse::<Strategy>(), Ok(s));
        }
        let err = Strategy::parse("magic").unwrap_err().to_string();
        assert!(err.contains("\"magic\"") && err.contains("upper-bound"), "{err}");
    }
}
