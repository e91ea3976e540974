//! The release strategies a comparison runs: the w-event schemes of `tpl-mechanisms`, the
//! TPL allocators of `tpl-alloc`, and schemes from outside code ([`CustomStrategy`]).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use rand_chacha::ChaCha20Rng;
use tpl_mechanisms::{
    Laplace, MechError, MechanismBuilder, NoiseSource, SchemeBuilder, SchemeInputs, SchemeKind, StreamScheme,
    WEventParams,
};

use crate::error::{CompareError, Result};

/// The generator a comparison hands each run ([`crate::Seed::rng`]): ChaCha20, keyed by the
/// base seed, the strategy's name and the run.
pub type CompareRng = ChaCha20Rng;

/// A stream scheme from outside code, run by [`crate::compare`] beside the built-in
/// strategies: a user's [`SchemeBuilder`] (the trait the built-in schemes implement too), and
/// optionally a user's [`MechanismBuilder`] in place of the Laplace mechanism. Each run builds
/// a fresh scheme over the run's exact discrete Laplace noise ([`CompareRng`]); the scheme is
/// audited as the built-in schemes are, from what it spent (realised) and from its caps
/// (guaranteed).
///
/// ```
/// use tpl_compare::{CustomStrategy, Seed, Setup, Strategy, compare};
/// use tpl_mechanisms::{Bd, scheme_builder};
/// let bd_again = CustomStrategy::new(scheme_builder("my-bd", |params, _, mechanism| Ok(Box::new(Bd::new(params, mechanism)))));
/// let truth = vec![vec![3.0, 7.0]; 20];
/// let setup = Setup::new(&truth, 1.0, 5).seed(Seed::given(1)).runs(2);
/// let table = compare(&setup, &[Strategy::parse("bd")?, Strategy::Custom(bd_again)])?;
/// assert_eq!(table.rows[1].strategy, "my-bd");
/// assert!(table.rows[1].outcome.is_ok());
/// # Ok::<(), tpl_compare::CompareError>(())
/// ```
#[derive(Clone)]
pub struct CustomStrategy {
    name: Arc<str>,
    scheme: Arc<dyn SchemeBuilder>,
    mechanism: Option<Arc<dyn MechanismBuilder>>,
}

impl CustomStrategy {
    /// The strategy of `scheme` (an `Arc` of one too), named as the scheme is (its row's
    /// label, and the name of its random stream).
    pub fn new(scheme: impl SchemeBuilder + 'static) -> Self {
        Self { name: Arc::from(scheme.name()), scheme: Arc::new(scheme), mechanism: None }
    }

    /// The same scheme releasing through `mechanism`: named `<scheme>+<mechanism>`.
    #[must_use]
    pub fn mechanism(self, mechanism: impl MechanismBuilder + 'static) -> Self {
        let name = Arc::from(format!("{}+{}", self.scheme.name(), mechanism.name()));
        Self { name, mechanism: Some(Arc::new(mechanism)), ..self }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Builds the scheme of one run over `noise`.
    ///
    /// # Errors
    /// The builder's error.
    pub fn build(
        &self,
        params: WEventParams,
        inputs: &SchemeInputs,
        noise: Box<dyn NoiseSource + Send>,
    ) -> std::result::Result<Box<dyn StreamScheme + Send>, MechError> {
        let mechanism = match &self.mechanism {
            Some(m) => m.build(noise),
            None => Laplace.build(noise),
        };
        self.scheme.build(params, inputs, mechanism)
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
    /// A built-in scheme of `tpl-mechanisms` (Kellaris et al., "Differentially private event
    /// sequences over infinite streams"; Hemkumar et al. for PBA; Li et al. for DSAT; Fan and
    /// Xiong for FAST).
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

    /// The built-in strategies a comparison runs when named, beyond its default set
    /// [`Strategy::ALL`]: the schemes of the field's benchmark set that `tpl` adds
    /// ([`docs/w-event.md`](tpl_core::guide::w_event) §3.10 on).
    pub const MORE: [Strategy; 2] = [Self::Scheme(SchemeKind::Dsat), Self::Scheme(SchemeKind::Fast)];

    /// The strategies of the suite called `name`: `standard`, the field's standard comparison
    /// ([`docs/w-event.md`](tpl_core::guide::w_event) §3.12: the w-event schemes of the
    /// benchmark set of Schäler et al., PVLDB 2023, that `tpl` implements, with `pba` and the
    /// event-level reference `laplace` — the schemes of [`Strategy::ALL`], then
    /// [`Strategy::MORE`]), or `default` ([`Strategy::ALL`], what a comparison runs when none
    /// is named).
    ///
    /// # Errors
    /// [`CompareError::UnknownSuite`] for any other name.
    ///
    /// ```
    /// use tpl_compare::Strategy;
    /// assert_eq!(Strategy::suite("standard")?.len(), 8);
    /// assert!(Strategy::suite("everything").is_err());
    /// # Ok::<(), tpl_compare::CompareError>(())
    /// ```
    pub fn suite(name: &str) -> Result<Vec<Strategy>> {
        match name {
            "standard" => {
                let schemes = Self::ALL.into_iter().filter(|s| matches!(s, Self::Scheme(_)));
                Ok(schemes.chain(Self::MORE).collect())
            }
            "default" => Ok(Self::ALL.to_vec()),
            _ => Err(CompareError::UnknownSuite { name: name.to_owned() }),
        }
    }

    /// The names of [`Strategy::ALL`], then of [`Strategy::MORE`], in order.
    pub fn names() -> Vec<&'static str> {
        static BUILT_IN: [Strategy; 11] = {
            let [a, b, c, d, e, f, g, h, i] = Strategy::ALL;
            let [j, k] = Strategy::MORE;
            [a, b, c, d, e, f, g, h, i, j, k]
        };
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
            .chain(Self::MORE)
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
        for s in Strategy::ALL.into_iter().chain(Strategy::MORE) {
            assert_eq!(Strategy::parse(s.name()), Ok(s.clone()));
            assert_eq!(s.to_string().parse::<Strategy>(), Ok(s));
        }
        let err = Strategy::parse("magic").unwrap_err().to_string();
        assert!(err.contains("\"magic\"") && err.contains("upper-bound"), "{err}");
    }

    #[test]
    fn the_suites_are_the_standard_set_and_the_default_one() {
        let names = |s: Vec<Strategy>| s.iter().map(|s| s.name().to_owned()).collect::<Vec<_>>();
        let standard = names(Strategy::suite("standard").unwrap());
        assert_eq!(standard, ["laplace", "uniform", "sample", "bd", "ba", "pba", "dsat", "fast"]);
        assert_eq!(Strategy::suite("default").unwrap(), Strategy::ALL.to_vec());
        let err = Strategy::suite("all").unwrap_err().to_string();
        assert!(err.contains("\"all\"") && err.contains("standard"), "{err}");
    }
}
