//! Intervals of post-processed estimates: the parametric bootstrap of `tpl-postprocess`
//! with replicate releases drawn by the Laplace mechanism of `tpl-mechanisms`, as
//! `tpl postprocess --interval` and the Python package compute them
//! ([`docs/intervals.md`](tpl_core::guide::intervals) §2).

use tpl_mechanisms::{Intervals, LaplaceMechanism, Mechanism, SamplerKind};
use tpl_postprocess::{Bootstrap, FilterConfig, PostprocessError, bootstrap_intervals, filter};

/// Most bootstrap errors held at once (B·T·n values of 8 bytes): 1 GiB.
pub const MAX_BOOTSTRAP_VALUES: usize = 1 << 27;

/// Per-cell `settings.level` intervals of `estimates`, the estimates of `releases` under
/// `config` ([`filter`]): replicate releases of the estimates drawn with the Laplace
/// mechanism (`sampler`, from `seed` or the operating system) at each step's budget and the
/// sensitivity of `config`, estimated again with `config`, and the basic bootstrap of
/// [`bootstrap_intervals`] on their errors (the drift between publications grown as for a
/// filter or a smoother, as `config.estimator` is one).
///
/// # Errors
/// [`PostprocessError::Bootstrap`] when B·T·n exceeds [`MAX_BOOTSTRAP_VALUES`], and those of
/// [`bootstrap_intervals`].
pub fn bootstrap_estimates(
    releases: &[Vec<f64>],
    estimates: &[Vec<f64>],
    budgets: &[f64],
    config: FilterConfig<'_>,
    settings: Bootstrap,
    sampler: SamplerKind,
    seed: Option<u64>,
) -> Result<Intervals, PostprocessError> {
    let cells = estimates.len().saturating_mul(estimates.first().map_or(0, Vec::len));
    check_bootstrap_size(settings.replicates, cells)?;
    let mut mechanism = LaplaceMechanism::new(sampler.source(seed));
    let sensitivity = config.sensitivity;
    let filter_kind = config.estimator.is_filter();
    let mut release = |c: &[f64], eps: f64| mechanism.release(c, sensitivity, eps).map_err(|e| e.to_string());
    let mut estimator = |r: &[Vec<f64>]| filter(r, budgets, config.clone()).map(|e| e.estimates);
    let (lower, upper) = bootstrap_intervals(
        releases,
        estimates,
        budgets,
        settings,
        filter_kind,
        &mut release,
        &mut estimator,
    )?;
    Ok(Intervals { level: settings.level, lower, upper })
}

/// Refuses a bootstrap of `replicates` × `cells` errors beyond [`MAX_BOOTSTRAP_VALUES`]
/// (`cells`: T·n), before anything is computed.
///
/// # Errors
/// [`PostprocessError::Bootstrap`] naming the largest number of replicates allowed.
pub fn check_bootstrap_size(replicates: usize, cells: usize) -> Result<(), PostprocessError> {
    if replicates.saturating_mul(cells) <= MAX_BOOTSTRAP_VALUES {
        return Ok(());
    }
    Err(PostprocessError::Bootstrap(format!(
        "{replicates} replicates × {cells} estimates exceed the {MAX_BOOTSTRAP_VALUES} values (1 GiB) the \
         bootstrap holds; use at most {} replicates",
        MAX_BOOTSTRAP_VALUES / cells.max(1)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpl_core::TransitionMatrix;
    use tpl_core::test_util::forward_only;

    #[test]
    fn seeded_intervals_hold_their_estimates_and_repeat() {
        let p = TransitionMatrix::smoothed_identity(2, 0.1).unwrap();
        let releases = vec![vec![10.0, 5.0], vec![12.0, 3.0], vec![9.0, 6.0]];
        let budgets = [0.5; 3];
        let config = FilterConfig { correlation: &forward_only(&p), ..FilterConfig::new(15) };
        let estimates = filter(&releases, &budgets, config.clone()).unwrap().estimates;
        let settings = Bootstrap { level: 0.9, replicates: 20 };
        let run = || {
            bootstrap_estimates(
                &releases,
                &estimates,
                &budgets,
                config.clone(),
                settings,
                SamplerKind::Discrete,
                Some(4),
            )
            .unwrap()
        };
        let (a, b) = (run(), run());
        assert_eq!(a, b);
        for (t, row) in estimates.iter().enumerate() {
            for (j, x) in row.iter().enumerate() {
                assert!(a.lower[t][j] <= *x && *x <= a.upper[t][j]);
            }
        }
    }

    #[test]
    fn a_bootstrap_beyond_a_gibibyte_is_refused_before_any_work() {
        assert!(check_bootstrap_size(100, MAX_BOOTSTRAP_VALUES / 100).is_ok());
        let e = check_bootstrap_size(100, MAX_BOOTSTRAP_VALUES).unwrap_err().to_string();
        assert!(e.contains("use at most 1 replicates"), "{e}");
    }
}
