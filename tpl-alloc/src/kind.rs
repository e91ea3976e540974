//! The allocators by name, for callers that choose one at run time (`tpl allocate`, the
//! Python package `temporal_privacy`).

use tpl_core::{Correlation, check_window};

use crate::allocation::{Allocation, Allocator};
use crate::error::{AllocError, Result};
use crate::{Quantified, UpperBound, WindowAllocator};

/// One of the three allocators of this crate, chosen at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllocatorKind {
    /// [`UpperBound`]: TKDE Algorithm 7.
    UpperBound,
    /// [`Quantified`]: TKDE Algorithm 8.
    Quantified,
    /// [`WindowAllocator`]: every window of w steps leaks ≤ α (TKDE Theorem 3).
    Window,
}

impl AllocatorKind {
    /// Every allocator, in the order of [`docs/model.md`](tpl_core::guide::model) §6.
    pub const ALL: [AllocatorKind; 3] = [Self::UpperBound, Self::Quantified, Self::Window];

    /// The name on the command line and in [`Allocation::strategy`].
    pub fn name(self) -> &'static str {
        match self {
            Self::UpperBound => "upper-bound",
            Self::Quantified => "quantified",
            Self::Window => "window",
        }
    }

    /// The allocator called `name`, if any.
    ///
    /// ```
    /// use tpl_alloc::AllocatorKind;
    /// assert_eq!(AllocatorKind::from_name("window"), Some(AllocatorKind::Window));
    /// assert_eq!(AllocatorKind::from_name("magic"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Allocates `horizon` steps for the target `alpha` against `corr` with this allocator
    /// ([`Allocator::allocate_with_progress`]); `window` is the window length of
    /// [`AllocatorKind::Window`] and is not used by the others (their audit of a window is
    /// [`Allocation::window_audit`]).
    ///
    /// # Errors
    /// [`AllocError::WindowRequired`] for the window allocator without a window; otherwise
    /// those of the allocator.
    pub fn allocate_with_progress(
        self,
        corr: &Correlation,
        alpha: f64,
        horizon: usize,
        window: Option<usize>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<Allocation> {
        match self {
            Self::UpperBound => UpperBound::new(corr, alpha).allocate_with_progress(horizon, progress),
            Self::Quantified => Quantified::new(corr, alpha).allocate_with_progress(horizon, progress),
            Self::Window => {
                let w = window.ok_or(AllocError::WindowRequired)?;
                WindowAllocator::new(corr, alpha, w).allocate_with_progress(horizon, progress)
            }
        }
    }
}

impl Allocation {
    /// The window audit to report with this allocation: the window the allocator itself
    /// bounded (the window allocator), else the largest leakage of `window` consecutive
    /// steps of the audited series, else `None`. As (w, largest window leakage).
    ///
    /// # Errors
    /// [`tpl_core::CoreError::BadWindow`] unless 1 ≤ `window` ≤ T; an overflowing window sum.
    pub fn window_audit(&self, window: Option<usize>) -> Result<Option<(usize, f64)>> {
        if let (Some(w), Some(m)) = (self.audit.window, self.audit.max_window_leakage) {
            return Ok(Some((w, m)));
        }
        let Some(w) = window else { return Ok(None) };
        check_window(w, self.audit.series.len())?;
        Ok(Some((w, self.audit.series.max_window_leakage(w)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpl_core::TransitionMatrix;
    use tpl_core::test_util::both_sides;

    #[test]
    fn each_kind_allocates_as_its_allocator_under_its_name() {
        let p = TransitionMatrix::smoothed_identity(3, 0.2).unwrap();
        let corr = both_sides(&p);
        let none = &|_, _| {};
        for kind in AllocatorKind::ALL {
            assert_eq!(AllocatorKind::from_name(kind.name()), Some(kind));
            let a = kind.allocate_with_progress(&corr, 1.0, 20, Some(5), none).unwrap();
            assert_eq!(a.strategy, kind.name());
            let direct = match kind {
                AllocatorKind::UpperBound => UpperBound::new(&corr, 1.0).allocate(20),
                AllocatorKind::Quantified => Quantified::new(&corr, 1.0).allocate(20),
                AllocatorKind::Window => WindowAllocator::new(&corr, 1.0, 5).allocate(20),
            }
            .unwrap();
            assert_eq!(a.audit, direct.audit);
        }
        let missing = AllocatorKind::Window.allocate_with_progress(&corr, 1.0, 20, None, none);
        assert_eq!(missing.unwrap_err(), AllocError::WindowRequired);
    }

    #[test]
    fn the_window_audit_is_the_allocators_own_or_the_one_asked_for() {
        let p = TransitionMatrix::smoothed_identity(3, 0.2).unwrap();
        let corr = both_sides(&p);
        let none = &|_, _| {};
        let w = AllocatorKind::Window.allocate_with_progress(&corr, 1.0, 20, Some(5), none).unwrap();
        assert_eq!(w.window_audit(Some(3)).unwrap(), Some((5, w.audit.max_window_leakage.unwrap())));
        let ub = AllocatorKind::UpperBound.allocate_with_progress(&corr, 1.0, 20, None, none).unwrap();
        assert_eq!(ub.window_audit(None).unwrap(), None);
        let (w3, m3) = ub.window_audit(Some(3)).unwrap().unwrap();
        assert_eq!((w3, m3), (3, ub.audit.series.max_window_leakage(3).unwrap()));
        assert!(ub.window_audit(Some(21)).is_err() && ub.window_audit(Some(0)).is_err());
    }
}
