//! The release strategies a comparison runs: the w-event schemes of `tpl-mechanisms` and
//! the TPL allocators of `tpl-alloc`.

use std::fmt;
use std::str::FromStr;

use tpl_mechanisms::SchemeKind;

use crate::error::{CompareError, Result};

/// A release strategy: a w-event scheme, or a TPL allocator whose budgets drive a Laplace
/// release at every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    pub fn name(self) -> &'static str {
        match self {
            Self::Scheme(k) => k.name(),
            Self::UpperBound => "upper-bound",
            Self::Quantified => "quantified",
            Self::Window => "window",
        }
    }

    /// The names of [`Strategy::ALL`], in order.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|s| s.name()).collect()
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
            assert_eq!(Strategy::parse(s.name()), Ok(s));
            assert_eq!(s.to_string().parse::<Strategy>(), Ok(s));
        }
        let err = Strategy::parse("magic").unwrap_err().to_string();
        assert!(err.contains("\"magic\"") && err.contains("upper-bound"), "{err}");
    }
}
