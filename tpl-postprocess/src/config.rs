//! What an estimator is told about a stream besides its releases ([`FilterConfig`]), and the
//! checks of a stream's shape, matrices and steps that every estimator runs first.

use tpl_core::Correlation;

use crate::error::{PostprocessError, Result};
use crate::estimator::Estimator;
use crate::prior::{PriorPolicy, PriorUpdate};
use crate::validate;

/// The correlation of [`FilterConfig::new`]: no matrix.
static UNKNOWN: Correlation = Correlation::none();

/// Everything about a stream except its releases and budgets ([docs/map.md](tpl_core::guide::map)
/// §11): the configuration of a [`Filter`](crate::Filter) and of [`filter`](crate::filter).
///
/// Only the population N is required ([`FilterConfig::new`]); the other fields are plain
/// public fields with the documented defaults, set with struct-update syntax.
///
/// ```
/// use tpl_core::{Correlation, TransitionMatrix};
/// use tpl_postprocess::{Estimator, FilterConfig, PriorPolicy, PriorUpdate};
/// let c = FilterConfig::new(100);
/// assert_eq!((c.sensitivity, c.estimator, c.prior), (2.0, Estimator::CausalFilter, PriorPolicy::Frequency));
/// assert_eq!((c.correlation, c.update), (&Correlation::none(), PriorUpdate::ClosedLoop));
/// let p = TransitionMatrix::smoothed_identity(4, 0.1)?;
/// let public = Correlation::new(None, Some(p))?;
/// let c = FilterConfig { correlation: &public, estimator: Estimator::MapInteger, ..FilterConfig::new(100) };
/// assert_eq!(c.total, 100);
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FilterConfig<'a> {
    /// The population N (public and exact; [docs/map.md](tpl_core::guide::map) §1), at most 2⁵³.
    /// Required.
    pub total: u64,
    /// The L1 sensitivity Δ > 0 of one step's histogram; a_t = ε_t/Δ
    /// ([docs/map.md](tpl_core::guide::map) §1). Default 2 (one person changing cell moves two
    /// counts by one).
    pub sensitivity: f64,
    /// How p_1 is chosen. Default [`PriorPolicy::Frequency`].
    pub prior: PriorPolicy,
    /// The public correlation. Its forward matrix P (row i: next cell of a user now in i)
    /// is needed by the map estimators from step 2 on; its backward matrix (row j: previous
    /// cell of a user now in j) is used by `smooth` to carry estimates backwards in time,
    /// which without it reverses the forward matrix ([docs/map.md](tpl_core::guide::map) §9).
    /// Each is validated against n whenever given. Default [`Correlation::none`].
    pub correlation: &'a Correlation,
    /// The per-step estimator. Default [`Estimator::CausalFilter`].
    pub estimator: Estimator,
    /// How the prior of `map-dbsec` and `map-integer` moves between steps (`map` and `smooth`
    /// always use the closed loop). Default [`PriorUpdate::ClosedLoop`].
    pub update: PriorUpdate,
}

impl<'a> FilterConfig<'a> {
    /// The defaults of [docs/map.md](tpl_core::guide::map) for a population `total`: Δ = 2,
    /// frequency prior, no matrix, `map`, closed loop (what `tpl postprocess` uses unless
    /// told).
    pub fn new(total: u64) -> Self {
        Self {
            total,
            sensitivity: 2.0,
            prior: PriorPolicy::Frequency,
            correlation: &UNKNOWN,
            estimator: Estimator::CausalFilter,
            update: PriorUpdate::ClosedLoop,
        }
    }
}

/// (T, n) of a recorded stream: at least one release, the cells of the first, one budget
/// per release ([`NoSteps`](PostprocessError::NoSteps),
/// [`BudgetCount`](PostprocessError::BudgetCount)).
pub(crate) fn stream_shape<R: AsRef<[f64]>>(releases: &[R], budgets: &[f64]) -> Result<(usize, usize)> {
    let horizon = releases.len();
    let Some(first) = releases.first() else {
        return Err(PostprocessError::NoSteps);
    };
    if budgets.len() != horizon {
        return Err(PostprocessError::BudgetCount { len: budgets.len(), expected: horizon });
    }
    Ok((horizon, first.as_ref().len()))
}

/// ε_1 = … = ε_T = `epsilon`: the budgets of `tpl postprocess --epsilon E_t`, where the
/// per-step budget must be strictly positive.
///
/// # Errors
/// [`Core`](PostprocessError::Core): [`tpl_core::check_epsilon`] unless ε is finite and > 0,
/// [`tpl_core::check_horizon`] for a horizon of 0.
///
/// ```
/// assert_eq!(tpl_postprocess::constant_budgets(0.5, 3)?, vec![0.5; 3]);
/// assert!(tpl_postprocess::constant_budgets(0.0, 3).is_err());
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
pub fn constant_budgets(epsilon: f64, horizon: usize) -> Result<Vec<f64>> {
    let epsilon = tpl_core::check_epsilon(epsilon)?;
    Ok(vec![epsilon; tpl_core::check_horizon(horizon)?])
}

/// The weight a·φ of a step whose prior's log-density is divided by φ
/// ([docs/map.md](tpl_core::guide::map) §8): dividing the whole objective by 1/φ leaves the MAP
/// problem of §2 with weight a·φ. Capped at the largest double (the solver handles any finite
/// weight).
pub(crate) fn tempered_weight(a: f64, dispersion: f64) -> f64 {
    (a * dispersion).min(f64::MAX)
}

/// The matrices of `config` against `cells` cells.
pub(crate) fn check_matrices(config: &FilterConfig<'_>, cells: usize) -> Result<()> {
    for m in [config.correlation.forward(), config.correlation.backward()].into_iter().flatten() {
        if m.n() != cells {
            return Err(PostprocessError::MatrixSize { size: m.n(), cells });
        }
    }
    Ok(())
}

/// Checks one step's release (length `cells`, finite) and budget; returns a = ε_t/Δ.
pub(crate) fn check_step(release: &[f64], epsilon: f64, cells: usize, sensitivity: f64) -> Result<f64> {
    if release.len() != cells {
        return Err(PostprocessError::ReleaseLength { len: release.len(), expected: cells });
    }
    validate::release(release)?;
    validate::budget(epsilon)?;
    let a = epsilon / sensitivity;
    if !a.is_finite() {
        return Err(PostprocessError::WeightOverflow { epsilon, sensitivity });
    }
    Ok(a)
}
