//! Priors over time ([docs/map.md](tpl_core::guide::map) §5): the initial prior p_1 and how it
//! moves between steps (the product itself is [`crate::propagate`]).

use std::fmt;

use crate::error::Result;
use crate::validate;

/// How the prior p_1 of the first step is chosen ([docs/map.md](tpl_core::guide::map) §5 "Initial
/// prior"; DBSec 2023 §5.2.2 "frequency p-d" and "uniform p-d").
///
/// ```
/// use tpl_postprocess::{PriorPolicy, Warning};
/// let (p, w) = PriorPolicy::Frequency.initial(&[3.0, 1.0, -2.0])?;
/// assert_eq!(p, vec![0.75, 0.25, 0.0]);
/// assert_eq!(w, vec![Warning::ZeroPriorCells { cells: vec![2] }]);
/// assert!(w[0].to_string().contains("in column c2 "));
/// assert_eq!(PriorPolicy::Uniform.initial(&[3.0, 1.0])?.0, vec![0.5, 0.5]);
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum PriorPolicy {
    /// p_1 = r_1⁺ / Σ_i r_{1,i}⁺ (the default). Cells with r_{1,i} ≤ 0 get p_{1,i} = 0, hence
    /// the estimate 0 at t = 1, with a [`Warning::ZeroPriorCells`]; an all-non-positive r_1
    /// falls back to uniform with a [`Warning::UniformFallback`] (a choice of this project). Note that this prior
    /// reuses r_1, which the step-1 likelihood already counts.
    #[default]
    Frequency,
    /// p_1 = (1/n, …, 1/n).
    Uniform,
    /// A given vector: n finite non-negative values summing to 1 within 1e-9, divided by
    /// their sum before use.
    Explicit(Vec<f64>),
}

/// How the prior moves from one step to the next ([docs/map.md](tpl_core::guide::map) §5
/// "Propagation", a choice of this project).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(rename_all = "kebab-case"))]
pub enum PriorUpdate {
    /// p_t = (x̂_{t−1} / Σ_i x̂_{t−1,i})·P with the previous (unrounded) estimate of the same
    /// estimator — the authors' code, and what the CLI uses. (With N = 0 every estimate is 0
    /// and the open-loop update stands in; the prior is then irrelevant.)
    #[default]
    ClosedLoop,
    /// p_t = p_{t−1}·P = p_1 P^{t−1}, ignoring the estimates (the other reading of DBSec
    /// 2023 eq. (7)).
    OpenLoop,
}

/// Something worth telling the user that does not stop the computation
/// ([docs/map.md](tpl_core::guide::map) §5). The library never prints; the CLI writes these to
/// stderr. Cells are 1-based.
///
/// With the `serde` feature it serialises as `{"kind": "uniform-fallback"}` or
/// `{"kind": "zero-prior-cells", "cells": [..]}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind", rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Warning {
    /// The frequency prior was asked for but the first release has no positive count, so
    /// r_1⁺/Σr_1⁺ is undefined: the uniform prior was used instead (a choice of this project).
    UniformFallback,
    /// The frequency prior is 0 in these cells (their first release is ≤ 0), so they are
    /// estimated as 0 at step 1.
    ZeroPriorCells {
        /// 0-based cell indices, ascending: the column `c{i}` of a counts file (unlike the
        /// 1-based cells of the errors, a warning names the columns a user sees).
        cells: Vec<usize>,
    },
    /// A prior other than the default was given, but the estimator does not use one: `mle`
    /// never does, and `smooth` and `kalman` on up to 64 cells start from the releases
    /// themselves (the state-space model of [docs/map.md](tpl_core::guide::map) §14).
    PriorUnused {
        /// The estimator's name.
        estimator: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UniformFallback => f.write_str(
                "the first release has no positive count, so the frequency prior is undefined: using the uniform prior",
            ),
            Self::ZeroPriorCells { cells } => {
                // At most the first 20 columns, then how many more: one short line whatever n.
                let mut list: Vec<String> = cells.iter().take(20).map(|i| format!("c{i}")).collect();
                if cells.len() > 20 {
                    list.push(format!("and {} more", cells.len() - 20));
                }
                let (noun, subject) = if cells.len() == 1 { ("column", "it is") } else { ("columns", "they are") };
                write!(
                    f,
                    "the frequency prior is 0 in {noun} {} (first release ≤ 0): {subject} estimated as 0 at step 1",
                    list.join(", ")
                )
            }
            Self::PriorUnused { estimator } => {
                write!(f, "the prior given is not used: {estimator} estimates without one here (docs/map.md §14)")
            }
        }
    }
}

impl PriorPolicy {
    /// The prior p_1 for a stream whose first release is `first_release`
    /// ([docs/map.md](tpl_core::guide::map) §5), and the warnings it raises. The result sums to 1
    /// up to rounding.
    ///
    /// # Errors
    /// [`NoCells`](crate::PostprocessError::NoCells) or
    /// [`BadRelease`](crate::PostprocessError::BadRelease) for the release; for
    /// `Explicit`, [`PriorLength`](crate::PostprocessError::PriorLength),
    /// [`BadPriorEntry`](crate::PostprocessError::BadPriorEntry) or
    /// [`PriorSum`](crate::PostprocessError::PriorSum).
    pub fn initial(&self, first_release: &[f64]) -> Result<(Vec<f64>, Vec<Warning>)> {
        validate::release(first_release)?;
        self.check(first_release.len())?;
        Ok(self.initial_unchecked(first_release))
    }

    /// Checks an explicit vector against `n` cells (the other policies always fit).
    pub(crate) fn check(&self, n: usize) -> Result<()> {
        match self {
            Self::Explicit(p) => validate::prior(p, n),
            Self::Frequency | Self::Uniform => Ok(()),
        }
    }

    /// Whether the policy brings information of its own about step 1: `uniform` and an
    /// explicit prior do; `frequency` reads the prior off step 1's release, so a MAP step under
    /// it would count that release twice, and `map` starts from the release projected instead
    /// ([docs/map.md](tpl_core::guide::map) §8).
    pub fn is_informative(&self) -> bool {
        !matches!(self, Self::Frequency)
    }

    /// [`PriorPolicy::initial`] on validated input.
    pub(crate) fn initial_unchecked(&self, r: &[f64]) -> (Vec<f64>, Vec<Warning>) {
        let n = r.len();
        let uniform = || vec![1.0 / n as f64; n];
        match self {
            Self::Uniform => (uniform(), Vec::new()),
            Self::Explicit(p) => {
                let sum: f64 = p.iter().sum();
                (p.iter().map(|v| v / sum).collect(), Vec::new())
            }
            Self::Frequency => {
                // Scaled by the largest count first, so that the sum cannot overflow.
                let largest = r.iter().fold(0.0f64, |m, &v| m.max(v));
                if largest <= 0.0 {
                    return (uniform(), vec![Warning::UniformFallback]);
                }
                let scaled: Vec<f64> = r.iter().map(|&v| v.max(0.0) / largest).collect();
                let sum: f64 = scaled.iter().sum();
                let p: Vec<f64> = scaled.iter().map(|v| v / sum).collect();
                let zeros: Vec<usize> = (0..n).filter(|&i| p[i] == 0.0).collect();
                let warnings = if zeros.is_empty() {
                    Vec::new()
                } else {
                    vec![Warning::ZeroPriorCells { cells: zeros }]
                };
                (p, warnings)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequency_fallback_and_zero_cells() {
        let (p, w) = PriorPolicy::Frequency.initial(&[0.0, -1.0, 0.0]).unwrap();
        assert_eq!(p, vec![1.0 / 3.0; 3]);
        assert_eq!(w, vec![Warning::UniformFallback]);
        let (p, w) = PriorPolicy::Frequency.initial(&[0.0, 2.0, 6.0, -4.0]).unwrap();
        assert_eq!(p, vec![0.0, 0.25, 0.75, 0.0]);
        assert_eq!(w, vec![Warning::ZeroPriorCells { cells: vec![0, 3] }]);
        assert_eq!(
            w[0].to_string(),
            "the frequency prior is 0 in columns c0, c3 (first release ≤ 0): they are estimated as 0 at step 1"
        );
    }

    /// Regression: with 10^6 cells the warning named every one of them, a 2 MB line.
    #[test]
    fn the_zero_cells_warning_names_twenty_columns_at_most() {
        let w = Warning::ZeroPriorCells { cells: (0..1_000_000).collect() }.to_string();
        assert!(w.contains("c0, c1") && w.contains("c19, and 999980 more") && !w.contains("c20,"), "{w}");
        assert!(w.len() < 300, "{} bytes", w.len());
    }

    #[test]
    fn frequency_survives_huge_counts() {
        let (p, _) = PriorPolicy::Frequency.initial(&[f64::MAX, f64::MAX]).unwrap();
        assert_eq!(p, vec![0.5, 0.5]);
    }

    #[test]
    fn explicit_is_checked_and_normalised() {
        use crate::PostprocessError as E;
        let (p, _) = PriorPolicy::Explicit(vec![0.5 + 4e-10, 0.5]).initial(&[1.0, 1.0]).unwrap();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        assert_eq!(
            PriorPolicy::Explicit(vec![1.0]).initial(&[1.0, 1.0]),
            Err(E::PriorLength { len: 1, expected: 2 })
        );
        assert!(matches!(
            PriorPolicy::Explicit(vec![0.5, 0.6]).initial(&[1.0, 1.0]),
            Err(E::PriorSum { .. })
        ));
        assert!(matches!(
            PriorPolicy::Explicit(vec![f64::NAN, 1.0]).initial(&[1.0, 1.0]),
            Err(E::BadPriorEntry { cell: 1, .. })
        ));
    }
}
