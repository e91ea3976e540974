//! The largest inputs the binary accepts, and the checks that enforce them before anything
//! is allocated: no size typed by a user reaches an allocation unchecked.

use tpl_core::CoreError;

use crate::error::{CliError, Result};

/// The longest horizon a command accepts: at 10⁸ steps a leakage series alone is 1.6 GB.
pub const MAX_HORIZON: usize = 100_000_000;

/// The largest number of cells (matrix rows) a command builds from a stream.
pub use tpl_io::MAX_CELLS;

/// Checks `--horizon T`: 1 ≤ T ≤ [`MAX_HORIZON`].
pub fn check_horizon(t: usize) -> Result<()> {
    if t == 0 {
        return Err(CliError::flag("--horizon", CoreError::EmptyHorizon));
    }
    if t > MAX_HORIZON {
        return Err(CliError::Usage(format!("--horizon {t}: at most {MAX_HORIZON} steps are supported")));
    }
    Ok(())
}

/// Checks `--window W` against the horizon T, when given: 1 ≤ W ≤ T.
pub fn check_window(window: Option<usize>, horizon: usize) -> Result<()> {
    match window {
        Some(w) if w == 0 || w > horizon => {
            Err(CliError::flag("--window", CoreError::BadWindow { window: w, horizon }))
        }
        _ => Ok(()),
    }
}

/// Checks `--cells n`: n ≤ [`MAX_CELLS`].
pub fn check_cells(n: usize) -> Result<()> {
    check_cells_up_to(n, MAX_CELLS)
}

/// Checks `--cells n`: n ≤ `limit`.
pub fn check_cells_up_to(n: usize, limit: usize) -> Result<()> {
    if n > limit {
        return Err(CliError::Usage(format!("--cells {n}: at most {limit} cells are supported")));
    }
    Ok(())
}
