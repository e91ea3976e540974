//! The estimators by name ([`Estimator`]): what `--estimator` chooses, and the two defaults.

use std::fmt;
use std::str::FromStr;

use crate::error::{PostprocessError, Result};

/// Which estimator of the true counts a stream uses ([docs/map.md](tpl_core::guide::map) §2–4, §6,
/// §8 and §9); its [`name`](Estimator::name) is the `--estimator` value of `tpl postprocess`.
///
/// ```
/// use tpl_postprocess::Estimator;
/// assert_eq!("map-integer".parse::<Estimator>()?, Estimator::MapInteger);
/// assert_eq!(Estimator::Mle.to_string(), "mle");
/// assert_eq!(Estimator::default(), Estimator::ONLINE_DEFAULT);
/// assert_eq!(Estimator::OFFLINE_DEFAULT, Estimator::Smooth);
/// assert!(!Estimator::Smooth.is_filter() && Estimator::MapDbsec.is_filter());
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Estimator {
    /// `map`, the causal filter and the online default ([docs/map.md](tpl_core::guide::map) §8):
    /// on up to 64 cells the state-space filter of [docs/map.md](tpl_core::guide::map) §14 in its
    /// guarded family, refitted to the releases seen so far; beyond, continuous MAP with a
    /// calibrated prior (the strength of the movement model's prior, and how many people it
    /// moves, learned from how well it predicted the earlier releases; step 1 the DBSec paper's).
    /// Either way step t is estimated from the releases up to t, with a guard that hands out the
    /// releases where the model predicts them worse.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "map"))]
    CausalFilter,
    /// Continuous MAP with the DBSec paper's prior at full strength, [`crate::map_step`]
    /// at every step ([docs/map.md](tpl_core::guide::map) §5).
    MapDbsec,
    /// Integer MAP with the DBSec paper's prior, [`crate::map_integer_step`]; estimates are
    /// integers.
    MapInteger,
    /// Least-squares MLE, [`crate::mle_step`]; ignores budgets, prior and correlation.
    Mle,
    /// Whole-sequence smoothing ([docs/map.md](tpl_core::guide::map) §9): every step from all
    /// releases, past and future — on up to 64 cells the RTS smoother of
    /// [docs/map.md](tpl_core::guide::map) §14 in its guarded family (nobody moving as the null a
    /// move weight must beat), beyond them calibrated forward and backward predictions pooled per
    /// step ([`crate::pooled_map_step`]). A recorded stream only ([`crate::filter`]).
    Smooth,
    /// The classical baseline ([docs/map.md](tpl_core::guide::map) §14): Kalman filter and RTS
    /// smoother on the counts, move weight and process noise fitted by maximum likelihood
    /// ([`crate::kalman_smooth`]). A recorded stream only ([`crate::filter`]).
    Kalman,
}

impl Estimator {
    /// Every estimator, in the order the command line lists them.
    pub const ALL: [Self; 6] =
        [Self::CausalFilter, Self::MapDbsec, Self::MapInteger, Self::Mle, Self::Smooth, Self::Kalman];

    /// The default where the whole release is at hand (`tpl postprocess`, `tpl compare
    /// --postprocess`, `tpl demo`, Python's `postprocess`): `smooth`, which estimates every
    /// step from all releases, past and future ([docs/map.md](tpl_core::guide::map) §8).
    pub const OFFLINE_DEFAULT: Self = Self::Smooth;

    /// The default where only the past exists (a stream's stored estimates, a causal request):
    /// the causal filter `map`, step t from the releases up to t; also [`Estimator::default`]
    /// and [`FilterConfig::new`](crate::FilterConfig::new)'s, since a [`Filter`](crate::Filter) runs one release at a time.
    pub const ONLINE_DEFAULT: Self = Self::CausalFilter;

    /// The name used on the command line and in JSON output: `map`, `map-dbsec`,
    /// `map-integer`, `mle`, `smooth`, `kalman` (also its `serde` form).
    pub fn name(self) -> &'static str {
        match self {
            Self::CausalFilter => "map",
            Self::MapDbsec => "map-dbsec",
            Self::MapInteger => "map-integer",
            Self::Mle => "mle",
            Self::Smooth => "smooth",
            Self::Kalman => "kalman",
        }
    }

    /// Whether the estimator uses the prior (and so the forward matrix when T > 1).
    pub fn uses_prior(self) -> bool {
        !matches!(self, Self::Mle)
    }

    /// Whether step t is estimated from the releases up to t only, so that a [`Filter`](crate::Filter) can
    /// run it one release at a time (every estimator but `smooth` and `kalman`).
    pub fn is_filter(self) -> bool {
        !matches!(self, Self::Smooth | Self::Kalman)
    }
}

impl fmt::Display for Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Estimator {
    type Err = PostprocessError;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| PostprocessError::UnknownEstimator(s.to_owned()))
    }
}
