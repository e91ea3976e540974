//! Validated parameters: budgets and the w-event parameters of `specs/w-event.md` §2.

use crate::error::{MechError, Result};

/// A privacy budget ε: finite and > 0.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Epsilon(f64);

impl Epsilon {
    /// Checks ε.
    ///
    /// # Errors
    /// [`MechError::BadEpsilon`] unless ε is finite and > 0.
    pub fn new(eps: f64) -> Result<Self> {
        if eps.is_finite() && eps > 0.0 { Ok(Self(eps)) } else { Err(MechError::BadEpsilon(eps)) }
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

/// The sensitivity of one step's count vector under substitution (one user changes cell):
/// 2, the default of `specs/w-event.md` §1.
pub const DEFAULT_SENSITIVITY: f64 = 2.0;

/// Parameters of every w-event stream scheme: ε per window of `window` steps, and the L1
/// sensitivity Δ of one step's count vector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WEventParams {
    epsilon: Epsilon,
    window: usize,
    sensitivity: f64,
}

impl WEventParams {
    /// Checks the parameters.
    ///
    /// ```
    /// use tpl_mechanisms::WEventParams;
    /// let p = WEventParams::new(1.0, 10, 2.0)?;
    /// assert_eq!(p.share(), 0.05); // s = ε/(2w)
    /// assert!(WEventParams::new(1.0, 0, 2.0).is_err());
    /// # Ok::<(), tpl_mechanisms::MechError>(())
    /// ```
    ///
    /// # Errors
    /// [`MechError::BadEpsilon`], [`MechError::BadWindow`] (w = 0) or
    /// [`MechError::BadSensitivity`].
    pub fn new(epsilon: f64, window: usize, sensitivity: f64) -> Result<Self> {
        let epsilon = Epsilon::new(epsilon)?;
        if window == 0 {
            return Err(MechError::BadWindow(window));
        }
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(MechError::BadSensitivity(sensitivity));
        }
        Ok(Self { epsilon, window, sensitivity })
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

    /// s = ε/(2w): one step's share of a half budget (w-event spec §3).
    pub fn share(&self) -> f64 {
        self.epsilon() / (2.0 * self.window as f64)
    }
}
