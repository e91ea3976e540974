//! Validated parameters: budgets and the w-event parameters of
//! [`docs/w-event.md`](tpl_core::guide::w_event) §2.

use crate::budget::BudgetGrid;
use crate::error::{MechError, Result};

/// A privacy budget ε: finite and > 0.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Epsilon(f64);

impl Epsilon {
    /// Checks ε.
    ///
    /// # Errors
    /// [`MechError::Core`] ([`tpl_core::CoreError::BadEpsilon`]) unless ε is finite and > 0
    /// ([`tpl_core::check_epsilon`]).
    pub fn new(eps: f64) -> Result<Self> {
        Ok(Self(tpl_core::check_epsilon(eps)?))
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

/// The sensitivity of one step's count vector under substitution (one user changes cell):
/// 2, the default of [`docs/w-event.md`](tpl_core::guide::w_event) §1.
pub const DEFAULT_SENSITIVITY: f64 = 2.0;

/// Parameters of every w-event stream scheme: ε per window of `window` steps, and the L1
/// sensitivity Δ of one step's count vector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WEventParams {
    epsilon: Epsilon,
    window: usize,
    sensitivity: f64,
    grid: BudgetGrid,
    share: f64,
}

impl WEventParams {
    /// Checks the parameters.
    ///
    /// ```
    /// use tpl_mechanisms::WEventParams;
    /// let p = WEventParams::new(1.0, 10, 2.0)?;
    /// // s = ε/(2w), rounded down so that w·s ≤ ε/2 holds exactly (0.05 as an f64 is above 1/20).
    /// assert!(p.share() < 0.05 && 0.05 - p.share() < 1e-15);
    /// assert!(WEventParams::new(1.0, 0, 2.0).is_err());
    /// // A window longer than any stream costs nothing: no state is sized by w.
    /// assert!(WEventParams::new(1.0, usize::MAX, 2.0)?.share() > 0.0);
    /// # Ok::<(), tpl_mechanisms::MechError>(())
    /// ```
    ///
    /// # Errors
    /// [`MechError::Core`] for a bad ε or Δ ([`tpl_core::check_epsilon`],
    /// [`tpl_core::check_sensitivity`]), [`MechError::BadWindow`] (w = 0), or [`MechError::ShareUnderflow`] when ε is so small
    /// (subnormal) that ε/(2w) has no positive f64 below it.
    pub fn new(epsilon: f64, window: usize, sensitivity: f64) -> Result<Self> {
        let epsilon = Epsilon::new(epsilon)?;
        if window == 0 {
            return Err(MechError::BadWindow(window));
        }
        let sensitivity = tpl_core::check_sensitivity(sensitivity)?;
        let grid = BudgetGrid::new(epsilon.get(), window);
        let share = grid.share(grid.epsilon() / 2, window);
        if share <= 0.0 {
            return Err(MechError::ShareUnderflow { epsilon: epsilon.get(), window });
        }
        Ok(Self { epsilon, window, sensitivity, grid, share })
    }

    /// ε, the budget of every window of w steps.
    pub fn epsilon(&self) -> f64 {
        self.epsilon.get()
    }

    /// w.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Δ.
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    /// s = ε/(2w): one step's share of a half budget (Kellaris et al., "Differentially private
    /// event sequences over infinite streams", PVLDB 2014), rounded *down* so that w·s ≤ ε/2
    /// holds for the f64 value exactly. While w < 2^21 it lies on the grid of ulp(ε) (so that
    /// test + publication is an exact f64), hence below the real quotient by less than
    /// 2w·2^−52 relative (4·10^−15 at w = 10, 2·10^−11 at w = 5·10^4); never by more than
    /// 2^−30 ≈ 10^−9 for any w.
    pub fn share(&self) -> f64 {
        self.share
    }

    /// The integer grid every budget of a scheme with these parameters lies on.
    pub fn grid(&self) -> &BudgetGrid {
        &self.grid
    }
}
